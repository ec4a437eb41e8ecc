"""A classroom on one server, measured without browsers: K scripted WebSocket sessions speak Streamlit's own
protocol (what a browser sends: a first run of the page, then a rerun with one slider moved) to a running rfviz
server, all at the same moment.

Each session connects to ``/_stcore/stream``, runs the page once (``rerun_script``), reads the slider's widget id
from the elements the server sends, and, for each round, asks for a rerun with the slider at a new value. Its
latency is the time from that request to the server's ``script_finished`` message: what the server makes a student
wait, without the student's own browser redraw (which a real classroom pays on each laptop, not on the server).

Modes: ``same`` (every session moves to the same new value: shared caches serve all but one), ``each`` (every
session to its own value: nothing is shared). Every value is new to the server (finer than the slider's step, never
asked for before in the run), so each round costs what a class moving to values nobody chose before costs.
Pages: ``hybrid`` (the r slider of "MSE vs base estimators"),
``learn`` (lesson 2's r control, after answering its question) and ``class`` (the teacher's page /teach open and
rerunning its fragment every second, K students answering lesson 2's question, their pages polling the class every
2 s as a browser's fragment timer does, then each moving the r control to values of their own; also printed: the
seconds from the last answer until the teacher's "answered" reads K). Printed per (page, mode, K): median and p90
latency over all sessions and rounds, and the server's CPU seconds and resident memory per round (/proc, summed
over the server's processes when ``--url`` names a proxy in front of several).

Usage::

    python bench/bench_classroom.py [--ks 1,8,32,64,100] [--rounds 3] [--pages hybrid,learn] [--modes same,each]
    python bench/bench_classroom.py --processes 2     # ./run classroom's app processes behind nginx
    python bench/bench_classroom.py --processes 2 --pages class --ks 100 --rounds 3   # with the teacher's page
    python bench/bench_classroom.py --url http://127.0.0.1:8501 --pids 1234,1235   # a server already running

Not a test: it prints a table (bench/README.md holds the measured numbers).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_browser import free_port, start_server  # noqa: E402

from rfviz.server.processes import spawn, start_allowance, stop_groups, wait_for_text  # noqa: E402
from rfviz.server.room import STUDENT_POLL_SECONDS, TEACHER_REFRESH_SECONDS  # noqa: E402

PAGES = {
    # page: (query string, slider label, first value, step, answer (radio label, choice) to give first)
    "hybrid": ("view=mse-vs-base", "r (input length)", 1.0, 0.05, None),
    "learn": ("lesson=trig-vs-positive&step=1", "r (input length)", 1.5, 0.01,
              ("Your prediction", "trigonometric features (cos, sin)")),
}


RERUN_S = 300.0
"""The most one scripted rerun may take before the bench (or a test using it) fails."""


@dataclass
class Session:
    """One scripted browser tab: its WebSocket, the widget states it sends, the ids of the widgets it needs, the
    values of the metrics it was last sent (by label), and its fragments' ids (what a browser reruns on its own
    timer for ``st.fragment(run_every=…)``)."""

    ws: object
    page: str
    states: dict = field(default_factory=dict)
    ids: dict = field(default_factory=dict)
    query: str | None = None
    """The URL's query string (default: the page's in PAGES)."""
    metrics: dict = field(default_factory=dict)
    fragments: list = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """One request at a time on the WebSocket (a slider move waits for a fragment's timer run, as in a browser)."""
    received: list | None = None
    """Every message the server sent, as bytes, when a list (the tests read what reached a student)."""


def _rerun(session: Session, fragment: str = ""):
    from streamlit.proto.BackMsg_pb2 import BackMsg

    query = PAGES[session.page][0] if session.query is None else session.query
    msg = BackMsg()
    state = msg.rerun_script
    state.query_string = query
    state.page_name = session.page
    if fragment:  # a fragment's own rerun (st.fragment(run_every=…): the browser's timer)
        state.fragment_id = fragment
        state.is_auto_rerun = True
    for widget_id, (kind, value) in session.states.items():
        w = state.widget_states.widgets.add()
        w.id = widget_id
        if kind == "double_array_value":
            w.double_array_value.data.extend([value])
        else:
            setattr(w, kind, value)
    return msg.SerializeToString()


async def _run(session: Session, fragment: str = "") -> float:
    """Send a rerun (of the page, or of one of its fragments); return the seconds until the server says the script
    finished (elements' ids, metric values and fragment ids recorded)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    async with session.lock:
        if not fragment:  # a fragment's id depends on where the page calls it: the ids of this run only
            session.fragments = []
        t0 = time.perf_counter()
        await session.ws.send(_rerun(session, fragment))
        while True:
            left = t0 + RERUN_S - time.perf_counter()
            try:
                raw = await asyncio.wait_for(session.ws.recv(), timeout=max(0.01, left))
            except TimeoutError:
                raise RuntimeError(f"no script_finished from the server within {RERUN_S:.0f} s") from None
            msg = ForwardMsg()
            msg.ParseFromString(raw)
            if session.received is not None:
                session.received.append(raw)
            kind = msg.WhichOneof("type")
            if kind == "delta" and msg.delta.fragment_id and msg.delta.fragment_id not in session.fragments:
                session.fragments.append(msg.delta.fragment_id)
            if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                _note(session, msg.delta.new_element)
            elif kind == "script_finished":
                return time.perf_counter() - t0


def _note(session: Session, element) -> None:
    """Record a widget's id (sliders, radios) or a metric's value from an element the server sent."""
    widget = element.WhichOneof("type")
    if widget in ("slider", "radio"):
        proto = getattr(element, widget)
        session.ids[(widget, proto.label)] = proto.id
    elif widget == "metric":
        session.metrics[element.metric.label] = element.metric.body


async def poll(session: Session, seconds: float, until: asyncio.Event) -> None:
    """What a browser does for a page with ``st.fragment(run_every=seconds)``: rerun the fragment on a timer (until
    ``until`` is set)."""
    while not until.is_set():
        if session.fragments:
            await _run(session, session.fragments[0])
        try:
            await asyncio.wait_for(until.wait(), seconds)
        except TimeoutError:
            pass


def _cookie(url: str) -> str:
    """The cookies a browser would hold after opening the page (with ``./run classroom``, nginx's ``rfviz_server``,
    which pins the browser to one app process); "" from a single server."""
    import urllib.request

    with urllib.request.urlopen(url + "/", timeout=60) as r:
        return "; ".join(c.split(";", 1)[0] for c in r.headers.get_all("Set-Cookie") or [])


async def _connect(url: str, page: str, query: str | None = None, cookie: str | None = None,
                   keep: bool = False) -> Session:
    """A scripted tab on ``page`` (``query``: its URL's query string; ``cookie``: the cookies to send, default those
    a browser gets on opening the site; ``keep``: hold every message received in ``Session.received``), its first
    run done (and the page's question answered where PAGES gives one)."""
    import websockets

    cookie = await asyncio.to_thread(_cookie, url) if cookie is None else cookie
    ws = await websockets.connect(url.replace("http", "ws", 1) + "/_stcore/stream", subprotocols=["streamlit"],
                                  max_size=None, open_timeout=120,
                                  additional_headers={"Cookie": cookie} if cookie else None)
    session = Session(ws, page, query=query, received=[] if keep else None)
    await _run(session)
    answer = PAGES[page][4] if page in PAGES else None
    if answer is not None:  # the lesson's control appears once the question is answered
        session.states[session.ids[("radio", answer[0])]] = ("string_value", answer[1])
        await _run(session)
    return session


_ASKED = [0]
"""How many slider values this run of the bench has asked for (each value is asked for once: never a cache hit)."""


def _fresh_value(first: float, step: float) -> float:
    """A slider value no request of this bench run has used: ``first`` plus a multiple of step/64 (finer than the
    slider's own step, which a browser would send, so that every request is computed, the worst case)."""
    _ASKED[0] += 1
    return round(first + _ASKED[0] * step / 64, 6)


def _cpu_and_rss(pids: list[int]) -> tuple[float, float]:
    """CPU seconds (user + system) and resident MiB summed over ``pids`` (their threads included)."""
    ticks, rss = 0, 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
        rss += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return ticks / os.sysconf("SC_CLK_TCK"), rss / 2**20


async def _round(sessions: list[Session], values: list[float]) -> list[float]:
    label = PAGES[sessions[0].page][1]
    for s, v in zip(sessions, values, strict=True):
        s.states[s.ids[("slider", label)]] = ("double_array_value", v)
    return list(await asyncio.gather(*(_run(s) for s in sessions)))


async def measure(url: str, pids: list[int], page: str, mode: str, k: int, rounds: int) -> dict:
    """Median/p90 latency and per-round server CPU and RSS for K sessions on ``page`` in ``mode``."""
    _, _, first, step, _ = PAGES[page]
    sessions = [await _connect(url, page) for _ in range(k)]
    latencies, cpu, rss = [], [], []
    try:
        for _ in range(rounds):
            shared = _fresh_value(first, step)
            values = [_fresh_value(first, step) for _ in range(k)] if mode == "each" else [shared] * k
            c0, _ = _cpu_and_rss(pids)
            latencies += await _round(sessions, values)
            c1, mem = _cpu_and_rss(pids)
            cpu.append(c1 - c0)
            rss.append(mem)
    finally:
        await asyncio.gather(*(s.ws.close() for s in sessions))
    latencies.sort()
    return {"page": page, "mode": mode, "k": k, "median": statistics.median(latencies),
            "p90": latencies[min(len(latencies) - 1, int(0.9 * len(latencies)))],
            "cpu": statistics.median(cpu), "rss": max(rss)}


def start_classroom(processes: int) -> tuple[subprocess.Popen, str]:
    """``classroom.py --processes N`` on a free port (its own process group); returned once it printed its address
    and links (the teacher's key in ``TEACHER_KEY[0]``), within a start-up allowance that grows with the load
    (otherwise it is killed and RuntimeError says why)."""
    port = free_port()
    log = pathlib.Path(tempfile.mkdtemp(prefix="bench-classroom-")) / "classroom.log"
    proc = spawn([sys.executable, str(ROOT / "classroom.py"), "--processes", str(processes), "--port", str(port),
                  "--address", "127.0.0.1"], cwd=ROOT, log=log)
    wait_for_text(log, "rfviz classroom:", proc, what="classroom.py", seconds=start_allowance(180.0, 900.0))
    TEACHER_KEY[0] = teacher_key([wait_for_text(log, "  teacher:", proc, what="classroom.py", seconds=30.0)])
    return proc, f"http://127.0.0.1:{port}"


TEACHER_KEY = [""]
"""The teacher's key of the classroom this bench started (read from its printed teacher's link)."""


def teacher_key(lines: list[str]) -> str:
    """The key of the teacher's link (``…/teach?key=K``) among the launcher's printed ``lines``."""
    for line in lines:
        if "/teach?key=" in line:
            return line.split("/teach?key=", 1)[1].split()[0]
    raise RuntimeError(f"no teacher's link in {lines!r}")


LESSON = ("trig-vs-positive", 1, 3)
"""The lesson step the class answers in ``measure_class`` (the learn page's in PAGES) and its number of choices."""


async def watch_count(teacher: Session, k: int, seconds: float) -> float:
    """Poll the teacher's fragment (as the open page's timer does, every second) until its "answered" metric reads
    at least ``k``; return when (perf_counter), or raise after ``seconds``."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        if int(teacher.metrics.get("answered", "0")) >= k:
            return time.perf_counter()
        await asyncio.sleep(1.0)
        await _run(teacher, teacher.fragments[0])
    raise TimeoutError(f"the teacher's page counted {teacher.metrics.get('answered')} of {k} answers "
                       f"after {seconds:.0f} s")


async def measure_class(url: str, pids: list[int], key: str, k: int, rounds: int) -> dict:
    """The teacher's page open (its fragment rerun every ``TEACHER_REFRESH_SECONDS``), K students each answering the
    lesson's question (their pages polling the class every ``STUDENT_POLL_SECONDS``, as a browser does), then moving
    the lesson's slider to values of their own: the slider moves' median and p90 latency, and the seconds from the
    last answer until the teacher's page counts all K."""
    _, _, first, step, _ = PAGES["learn"]
    slug, step_no, _ = LESSON
    teacher = await _connect(url, "teach", f"key={key}&lesson={slug}&step={step_no}")
    if "answered" not in teacher.metrics:
        raise RuntimeError("the teacher's page shows no count: is the key right?")
    before = int(teacher.metrics["answered"])  # answers of earlier runs in this room
    students = list(await asyncio.gather(*(_connect(url, "learn") for _ in range(k))))
    answered = time.perf_counter()
    done = asyncio.Event()
    pollers = [asyncio.create_task(poll(s, STUDENT_POLL_SECONDS, done)) for s in students]
    try:
        seen = await watch_count(teacher, before + k, 30.0)
        teacher_poll = asyncio.create_task(poll(teacher, TEACHER_REFRESH_SECONDS, done))
        latencies, cpu, rss = [], [], []
        for _ in range(rounds):
            c0, _ = _cpu_and_rss(pids)
            latencies += await _round(students, [_fresh_value(first, step) for _ in students])
            c1, mem = _cpu_and_rss(pids)
            cpu.append(c1 - c0)
            rss.append(mem)
    finally:
        done.set()
        await asyncio.gather(*pollers, *([teacher_poll] if "teacher_poll" in locals() else []),
                             return_exceptions=True)
        await asyncio.gather(*(s.ws.close() for s in [teacher, *students]))
    latencies.sort()
    return {"page": "learn + teacher", "mode": "each", "k": k, "median": statistics.median(latencies),
            "p90": latencies[min(len(latencies) - 1, int(0.9 * len(latencies)))],
            "cpu": statistics.median(cpu) if pids else 0.0, "rss": max(rss) if pids else 0.0,
            "reach": seen - answered}


def _descendants(pid: int) -> list[int]:
    """The processes under ``pid`` (the app servers and nginx), from /proc."""
    parents = {}
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
    found, frontier = [], [pid]
    while frontier:
        kids = [p for p, parent in parents.items() if parent in frontier]
        found += kids
        frontier = kids
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default="1,8,32,64,100")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pages", default="hybrid,learn")
    ap.add_argument("--modes", default="same,each")
    ap.add_argument("--processes", type=int, default=1,
                    help="app processes: 1 starts one Streamlit server; more start ./run classroom's (nginx in front)")
    ap.add_argument("--url", help="a running server (default: start one on a free port)")
    ap.add_argument("--pids", help="the server's process ids with --url (comma-separated), for CPU and memory")
    ap.add_argument("--key", help="the teacher's key with --url (for --pages class)")
    args = ap.parse_args()
    proc, room = None, None
    if args.url:
        url, pids = args.url.rstrip("/"), [int(p) for p in (args.pids or "").split(",") if p]
        TEACHER_KEY[0] = args.key or ""
    elif args.processes > 1:
        proc, url = start_classroom(args.processes)
        pids = _descendants(proc.pid)
    else:
        import tempfile

        from rfviz.server.room import ENV_DB, ENV_KEY, new_key

        room = tempfile.TemporaryDirectory(prefix="rfviz-bench-room-")  # a room of one process, as ./run app's
        TEACHER_KEY[0] = os.environ[ENV_KEY] = new_key()
        os.environ[ENV_DB] = os.path.join(room.name, "room.sqlite3")
        port = free_port()
        proc = start_server(port)
        url, pids = f"http://127.0.0.1:{port}", [proc.pid]
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} · {os.cpu_count()} cores · load {os.getloadavg()[0]:.2f} · {url} · "
          f"{args.processes} app process{'es' if args.processes > 1 else ''}")
    print("| page | mode | K | median | p90 | server CPU per round | server RSS |")
    print("|---|---|---|---|---|---|---|")
    try:
        for page in args.pages.split(","):
            for mode in args.modes.split(","):
                for k in (int(v) for v in args.ks.split(",")):
                    if page == "class" and mode != args.modes.split(",")[0]:
                        continue  # the class measurement has one mode: each student to a value of their own
                    row = asyncio.run(measure_class(url, pids, TEACHER_KEY[0], k, args.rounds) if page == "class"
                                      else measure(url, pids, page, mode, k, args.rounds))
                    reach = f" · the teacher counted all {k} answers {row['reach']:.1f} s after the last" \
                        if "reach" in row else ""
                    print(f"| {row['page']} | {row['mode']} | {k} | {row['median']:.3f} s | {row['p90']:.3f} s | "
                          f"{row['cpu']:.2f} s | {row['rss']:.0f} MiB |{reach}" if pids else
                          f"| {row['page']} | {row['mode']} | {k} | {row['median']:.3f} s | {row['p90']:.3f} s | "
                          f"– | – |{reach}", flush=True)
    finally:
        if proc is not None:
            stop_groups([proc], seconds=60)
        if room is not None:
            room.cleanup()


if __name__ == "__main__":
    main()
