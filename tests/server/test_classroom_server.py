"""``./run classroom`` (classroom.py): app processes behind Debian's nginx, each browser pinned to one of them.

Real parts only: the launcher starts real Streamlit servers and a real nginx; a scripted WebSocket session (the
protocol bench/bench_classroom.py speaks) reruns a page through the proxy; Chromium uploads a file through it to a
session on either process (the upload is a separate HTTP request: without the sticky cookie it would reach the
other process, which does not know the session), and a 1 MiB upload (buffered by nginx's worker on disk) reaches its
session when the room runs as root; Ctrl-C (also when started in the background, SIGINT ignored), SIGTERM, a crashed
app process, a killed nginx master and ``kill -9`` of the launcher stop everything and leave no process and no
files behind; a restart on the same port right after a stop works. Every wait is bounded (``rfviz.server.processes``):
a launcher that does not start in its allowance is killed and the test fails in one line.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from proc_helpers import free_port, start_allowance

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from bench_classroom import LESSON, _connect, _descendants, _fresh_value, _round, teacher_key, watch_count  # noqa: E402

import classroom  # noqa: E402
from rfviz.server import processes  # noqa: E402

pytestmark = pytest.mark.integration  # subprocesses, AppTest runs or sockets: not the unit tier

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
CHROMIUM = "/usr/bin/chromium"
needs_nginx = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)")


def _start(tmp_path: pathlib.Path, processes_: int, port: int | None = None,
           shell: str = "exec") -> tuple[subprocess.Popen, str, pathlib.Path]:
    """The launcher on ``port`` (default: a free one), its private directory under ``tmp_path``/tmp (TMPDIR) and its
    output in ``tmp_path``/launcher-N.log; returned (process, URL, log) once it printed its address, within a
    start-up allowance derived from the load (else it is killed and the test fails in one line). ``shell`` is what
    the script that starts it does first (``trap '' INT; exec``: a background job's SIGINT ignored)."""
    port = port or free_port()
    (tmp_path / "tmp").mkdir(exist_ok=True)
    log = tmp_path / f"launcher-{len(list(tmp_path.glob('launcher-*.log')))}.log"
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, str(ROOT / "classroom.py"), "--processes", str(processes_), "--port", str(port),
            "--address", "127.0.0.1"]
    proc = processes.spawn(["sh", "-c", f'{shell} "$@"', "sh", *argv], cwd=ROOT, env=env, log=log)
    _LAUNCHED.append(proc)
    try:
        line = processes.wait_for_text(log, "rfviz classroom:", proc, what="classroom.py",
                                       seconds=start_allowance(START_BASE_S))
    except processes.StartupError as exc:
        pytest.fail(str(exc), pytrace=False)
    assert line.startswith(f"rfviz classroom: http://127.0.0.1:{port} (who can open it: this machine only"), line
    links = [processes.wait_for_text(log, prefix, proc, what="classroom.py", seconds=30.0)
             for prefix in ("  students:", "  teacher:")]
    assert links[0].strip() == f"students: http://127.0.0.1:{port}/learn", links
    KEYS[f"http://127.0.0.1:{port}"] = teacher_key(links)
    return proc, f"http://127.0.0.1:{port}", log


KEYS: dict[str, str] = {}
"""The teacher's key of each classroom started here, by its address (read from the printed teacher's link)."""


_LAUNCHED: list[subprocess.Popen] = []
"""Every launcher a test started: one still running when its test ends (a failed assertion) is stopped then."""


@pytest.fixture(autouse=True)
def _stop_what_the_test_started():
    """After each test, SIGTERM (then SIGKILL) the launchers it started and left running; the module's room, started
    before this fixture, is left to its own fixture."""
    before = len(_LAUNCHED)
    yield
    processes.stop_groups([p for p in _LAUNCHED[before:] if p.poll() is None], seconds=30)


def _ended(proc: subprocess.Popen, seconds: float = 60) -> int:
    """``proc``'s exit code, waited for at most ``seconds`` (then it is killed and the test fails)."""
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        processes.kill_groups([proc])
        pytest.fail(f"the launcher did not end within {seconds} s", pytrace=False)


def _alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie is not: here nothing reaps orphans, PID 1 may not either)."""
    def running(pid: int) -> bool:
        try:
            return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False
    return [p for p in pids if running(p)]


def _gone_within(seconds: float, pids: list[int], folder: pathlib.Path) -> tuple[list[int], list[pathlib.Path]]:
    """Poll until none of ``pids`` runs and ``folder`` is empty, at most ``seconds``; return what is left."""
    deadline = time.monotonic() + seconds
    while True:
        left, files = _alive(pids), list(folder.iterdir())
        if (not left and not files) or time.monotonic() > deadline:
            return left, files
        time.sleep(0.05)


START_BASE_S = 150.0
"""What the launcher may take to start one or two app servers and nginx on an idle machine."""


def _get(url: str, cookie: str | None = None) -> tuple[str, str]:
    """(the app process that answered, the rfviz_server cookie nginx set) for GET ``url``/."""
    request = urllib.request.Request(url + "/", headers={"Cookie": f"{classroom.COOKIE}={cookie}"} if cookie else {})
    with urllib.request.urlopen(request, timeout=30) as r:
        cookies = [c.split(";", 1)[0] for c in r.headers.get_all("Set-Cookie") or []]
        ours = [c.split("=", 1)[1] for c in cookies if c.startswith(classroom.COOKIE + "=")]
        return r.headers["X-Rfviz-Server"], ours[0]


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    proc, url, _ = _start(tmp_path_factory.mktemp("classroom"), 2)
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        _ended(proc)


# ------------------------------------------------------------------ refused before anything starts: one line, exit 2
@pytest.mark.parametrize("argv, words", [
    (["--processes", "0"], "--processes must be in [1, 32], got 0"),
    (["--processes", "1000"], "--processes must be in [1, 32], got 1000"),
    (["--port", "70000"], "--port must be in [1, 65535], got 70000"),
])
def test_refused_arguments_are_one_line_and_exit_2(argv, words, capsys):
    assert classroom.main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"classroom: {words}"


@pytest.mark.parametrize("argv", [["--processes", "abc"], ["--bogus"], ["--port"]])
def test_usage_errors_are_one_line_and_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        classroom.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ./run classroom: ") and err.count("\n") == 1


def test_a_port_in_use_is_refused_before_any_server_starts(capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert classroom.main(["--port", str(s.getsockname()[1]), "--address", "127.0.0.1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("classroom: cannot listen on 127.0.0.1:") and err.count("\n") == 1


def test_missing_nginx_and_too_little_memory_are_refused(monkeypatch, capsys):
    monkeypatch.setattr(classroom, "_available_memory", lambda: 2**30)
    assert classroom.main(["--processes", "4"]) == 2
    assert "choose fewer" in capsys.readouterr().err
    monkeypatch.setattr(classroom, "_available_memory", lambda: None)
    monkeypatch.setattr(classroom.shutil, "which", lambda name: None)
    monkeypatch.setattr(classroom.os, "access", lambda path, mode: False)
    assert classroom.main(["--processes", "1"]) == 2
    assert capsys.readouterr().err.startswith("classroom: nginx not found: install Debian's")


def test_nginx_configuration_pins_browsers_by_cookie(tmp_path):
    conf = classroom.nginx_conf(tmp_path, [40001, 40002], "0.0.0.0", 8501)
    assert "hash $route consistent;" in conf and "listen 0.0.0.0:8501;" in conf
    assert "server 127.0.0.1:40001" in conf and "server 127.0.0.1:40002" in conf
    assert f'add_header Set-Cookie "{classroom.COOKIE}=$route;' in conf
    assert str(tmp_path / "worker" / "proxy") in conf  # nginx's temporary files in the private directory
    assert "daemon off;" in conf and "master_process on;" in conf and "\nuser " not in conf
    as_root = classroom.nginx_conf(tmp_path, [40001], "0.0.0.0", 8501, ("nobody", "nogroup", 65534, 65534))
    assert "\nuser nobody nogroup;\n" in as_root  # the worker's user, whose own directories are tmp/worker/*


def test_the_port_probe_lets_a_restart_through_time_wait_and_still_refuses_a_listener():
    """A room stopped a moment ago leaves its closed connections in TIME_WAIT on the port: a plain bind fails then
    (what the probe did, refusing a restart for about a minute); the probe binds with SO_REUSEADDR, as nginx does,
    and passes, while a socket that listens on the port is still refused."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as nginx's listener
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        conn.close()  # the server side closes first: its socket goes to TIME_WAIT
        client.close()
    time.sleep(0.2)
    with pytest.raises(OSError), socket.socket() as plain:
        plain.bind(("127.0.0.1", port))  # the old probe: refused (this is what the test guards against)
    classroom.check_port("127.0.0.1", port)  # the probe: allowed
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen()
        with pytest.raises(classroom.Refused, match="Address already in use"):
            classroom.check_port("127.0.0.1", port)


def test_the_printed_address_is_one_a_student_can_open_and_says_who_can():
    url, who = classroom.share("127.0.0.1", 8501)
    assert url == "http://127.0.0.1:8501" and who.startswith("this machine only")
    url, who = classroom.share("0.0.0.0", 8501)
    host = url.removeprefix("http://").removesuffix(":8501")
    assert host not in ("0.0.0.0", "127.0.0.1", "localhost") and "any machine" in who
    listed = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=10).stdout.split() \
        if shutil.which("hostname") else []
    if listed:  # the host's own addresses, as the system lists them: the printed one is among them
        assert host in listed, (host, listed)
    with socket.socket() as s:  # in any case one this machine has (or its name, when it has no route)
        s.bind((socket.gethostbyname(host), 0))
    assert classroom.share("::1", 8501)[0] == "http://[::1]:8501"
    assert classroom.share("localhost", 8501) == ("http://localhost:8501", classroom.share("127.0.0.1", 8501)[1])


def test_without_a_route_the_printed_address_is_the_host_name(monkeypatch):
    class NoRoute(socket.socket):
        def connect(self, address):
            raise OSError(101, "Network is unreachable")

    monkeypatch.setattr(classroom.socket, "socket", NoRoute)
    assert classroom.lan_address() == socket.gethostname()


def test_a_later_start_removes_the_folders_of_launchers_that_are_gone(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait(timeout=10)
    gone = tmp_path / f"{classroom.FOLDER_PREFIX}gone"
    gone.mkdir()
    (gone / classroom.LAUNCHER_FILE).write_text(f"{dead.pid} 1\n")
    (gone / "nginx.conf").write_text("x")
    alive = tmp_path / f"{classroom.FOLDER_PREFIX}alive"
    alive.mkdir()
    (alive / classroom.LAUNCHER_FILE).write_text(f"{os.getpid()} {classroom._start_time(os.getpid())}\n")
    reused = tmp_path / f"{classroom.FOLDER_PREFIX}reused"  # the pid lives on, in another process (other start)
    reused.mkdir()
    (reused / classroom.LAUNCHER_FILE).write_text(f"{os.getpid()} 1\n")
    other = tmp_path / "rfviz-classroom.txt"
    other.write_text("not ours")
    assert sorted(classroom.remove_stale_folders(tmp_path)) == sorted([gone, reused])
    assert alive.exists() and other.exists() and not gone.exists() and not reused.exists()


# ------------------------------------------------------------------ the real thing


@pytest.mark.slow
@needs_nginx
def test_each_browser_stays_on_one_app_process_and_the_room_uses_both(room):
    first, cookie = _get(room)
    assert {_get(room, cookie)[0] for _ in range(10)} == {first}  # pinned: the same process every time
    seen = {_get(room, f"probe-{i}")[0] for i in range(40)}  # 40 browsers: both processes (miss: 2 × 2⁻⁴⁰)
    assert len(seen) == 2


@pytest.mark.slow
@needs_nginx
def test_scripted_sessions_rerun_a_page_through_the_proxy(room):
    async def run() -> list[float]:
        sessions = [await _connect(room, "hybrid") for _ in range(4)]
        try:
            return await _round(sessions, [_fresh_value(1.0, 0.05) for _ in sessions])
        finally:
            await asyncio.gather(*(s.ws.close() for s in sessions))

    latencies = asyncio.run(run())
    assert len(latencies) == 4 and all(0 < t < 60 for t in latencies)


@pytest.mark.slow
@needs_nginx
@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"Chromium is not installed at {CHROMIUM}")
def test_an_upload_reaches_its_session_on_either_process(room, tmp_path):
    """Chromium on the Your-data page uploads a CSV: the upload is its own HTTP request, which must reach the process
    holding the session (the cookie): checked for a browser pinned to each of the two processes."""
    from playwright.sync_api import sync_playwright

    cookies: dict[str, str] = {}
    for i in range(200):
        backend, _ = _get(room, f"browser-{i}")
        cookies.setdefault(backend, f"browser-{i}")
        if len(cookies) == 2:
            break
    assert len(cookies) == 2
    data = tmp_path / "points.csv"
    data.write_text("a,b,c\n" + "\n".join(f"{0.1 * i},{0.2 * (i % 7)},{0.05 * (i % 5)}" for i in range(40)) + "\n")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless", "--disable-gpu"])
        try:
            for backend, value in cookies.items():
                context = browser.new_context(viewport={"width": 1440, "height": 1000})
                context.add_cookies([{"name": classroom.COOKIE, "value": value, "url": room}])
                page = context.new_page()
                page.goto(room + "/data?source=upload+a+file", wait_until="domcontentloaded", timeout=120_000)
                page.wait_for_selector('[data-testid="stFileUploaderDropzoneInput"]', state="attached",
                                       timeout=120_000)
                page.set_input_files('[data-testid="stFileUploaderDropzoneInput"]', str(data))
                # the page reads the upload (one request) in the session's rerun (another, on the WebSocket)
                page.wait_for_function("() => document.body.innerText.includes('points.csv: 40 queries × 40 keys')",
                                       timeout=120_000)
                assert page.locator('[data-testid="stException"]').count() == 0, backend
                context.close()
        finally:
            browser.close()


@pytest.mark.slow
@needs_nginx
def test_a_one_mib_upload_through_nginx_reaches_its_session(room):
    """An upload over nginx's in-memory buffer (16 KiB) is written to a temporary file by nginx's worker. Started as
    root, that worker runs as nobody: it must have temporary directories it can write, or every such upload gets
    HTTP 500 from nginx. Here a scripted session (its WebSocket pinned by the cookie) PUTs 1 MiB to Streamlit's
    upload endpoint for its own session id: 204 means the file reached that session's upload manager."""
    if os.geteuid() == 0:  # the case of the issue: the worker is another user than the launcher
        workers = [p for p in pathlib.Path("/proc").glob("[0-9]*") if _cmdline(p).startswith("nginx: worker")]
        assert any(p.stat().st_uid != 0 for p in workers), "started as root, nginx's worker should not be root"
    status, body = asyncio.run(_upload(room, os.urandom(2**20)))
    assert status == 204, (status, body[:300])


def _cmdline(proc_dir: pathlib.Path) -> str:
    try:
        return (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


async def _upload(url: str, payload: bytes) -> tuple[int, str]:
    """(HTTP status, body) of a PUT of ``payload`` as a file to the upload endpoint of a new session's id."""
    import uuid

    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    jar: dict[str, str] = {}
    for path in ("/", "/_stcore/health"):  # nginx's cookie, then (from the pinned process) Streamlit's XSRF cookie
        request = urllib.request.Request(url + path, headers={"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items())})
        with urllib.request.urlopen(request, timeout=60) as r:
            jar.update(c.split(";", 1)[0].split("=", 1) for c in r.headers.get_all("Set-Cookie") or [])
    cookie = "; ".join(f"{k}={v}" for k, v in jar.items())
    async with websockets.connect(url.replace("http", "ws", 1) + "/_stcore/stream", subprotocols=["streamlit"],
                                  max_size=None, open_timeout=120, additional_headers={"Cookie": cookie}) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = "source=upload+a+file"
        msg.rerun_script.page_name = "data"
        await ws.send(msg.SerializeToString())
        session_id = ""
        async with asyncio.timeout(120):
            while not session_id:
                forward = ForwardMsg()
                forward.ParseFromString(await ws.recv())
                if forward.WhichOneof("type") == "new_session":
                    session_id = forward.new_session.initialize.session_id
        boundary = uuid.uuid4().hex
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.csv\"\r\n"
                f"Content-Type: text/csv\r\n\r\n").encode() + payload + f"\r\n--{boundary}--\r\n".encode()
        headers = {"Cookie": cookie, "Content-Type": f"multipart/form-data; boundary={boundary}"}
        if "_streamlit_xsrf" in jar:
            headers["X-Xsrftoken"] = jar["_streamlit_xsrf"]
        request = urllib.request.Request(f"{url}/_stcore/upload_file/{session_id}/{uuid.uuid4()}", data=body,
                                         headers=headers, method="PUT")

        def put() -> tuple[int, str]:
            try:
                with urllib.request.urlopen(request, timeout=60) as r:
                    return r.status, r.read(4096).decode(errors="replace")
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read(4096).decode(errors="replace")

        return await asyncio.to_thread(put)


@pytest.mark.slow
@needs_nginx
def test_ctrl_c_stops_every_process_and_leaves_no_files(tmp_path):
    proc, url, _ = _start(tmp_path, 1)
    children = _descendants(proc.pid)
    assert len(children) >= 4  # the watchdog, the app process, nginx's master and its worker
    assert list((tmp_path / "tmp").iterdir())  # the private directory exists while it runs
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the launcher's process group
    assert _ended(proc) == 130
    assert _gone_within(5, children, tmp_path / "tmp") == ([], [])
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/_stcore/health", timeout=5)


@pytest.mark.slow
@needs_nginx
def test_ctrl_c_while_starting_stops_every_process_and_leaves_no_files(tmp_path):
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    proc = processes.spawn([sys.executable, str(ROOT / "classroom.py"), "--processes", "2", "--port",
                            str(free_port()), "--address", "127.0.0.1"], cwd=ROOT, env=env, log=tmp_path / "out.log")
    _LAUNCHED.append(proc)
    deadline = time.monotonic() + start_allowance(60)
    while len(_descendants(proc.pid)) < 3 and time.monotonic() < deadline:  # the watchdog and both app processes
        time.sleep(0.05)
    children = _descendants(proc.pid)
    assert len(children) >= 3, (tmp_path / "out.log").read_text()[-2000:]
    proc.send_signal(signal.SIGINT)
    assert _ended(proc) == 130
    assert _gone_within(5, children, tmp_path / "tmp") == ([], [])


@pytest.mark.slow
@needs_nginx
def test_an_app_process_that_dies_stops_the_classroom_with_its_log(tmp_path):
    proc, _, log = _start(tmp_path, 1)
    children = _descendants(proc.pid)
    app = next(p for p in children if "streamlit" in pathlib.Path(f"/proc/{p}/cmdline").read_text())
    os.kill(app, signal.SIGKILL)
    assert _ended(proc) == 1
    assert "classroom: the app server on port" in log.read_text()
    assert _gone_within(5, children, tmp_path / "tmp") == ([], [])


@pytest.mark.slow
@needs_nginx
def test_killing_nginx_master_stops_the_room_and_leaves_no_worker(tmp_path):
    proc, _, log = _start(tmp_path, 1)
    children = _descendants(proc.pid)
    master = next(p for p in children if _cmdline(pathlib.Path(f"/proc/{p}")).startswith("nginx: master"))
    assert any(_cmdline(pathlib.Path(f"/proc/{p}")).startswith("nginx: worker") for p in children)
    os.kill(master, signal.SIGKILL)
    assert _ended(proc) == 1
    assert "classroom: the nginx stopped" in log.read_text()
    assert _gone_within(5, children, tmp_path / "tmp") == ([], [])


@pytest.mark.slow
@needs_nginx
def test_kill_9_of_the_launcher_leaves_no_process_and_no_folder_within_5_s(tmp_path):
    """An OOM kill or ``kill -9``: the launcher cannot clean up. Its children die with it (PR_SET_PDEATHSIG), the
    watchdog kills their groups (nginx's worker) and removes the private directory."""
    proc, url, _ = _start(tmp_path, 1)
    children = _descendants(proc.pid)
    launcher = next(p for p in [proc.pid, *children] if "classroom.py" in _cmdline(pathlib.Path(f"/proc/{p}")))
    assert any("nginx" in _cmdline(pathlib.Path(f"/proc/{p}")) for p in children)
    os.kill(launcher, signal.SIGKILL)
    left, files = _gone_within(5, children, tmp_path / "tmp")
    assert not left, [_cmdline(pathlib.Path(f"/proc/{p}")) for p in left]
    assert files == []
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/_stcore/health", timeout=5)
    _ended(proc, 10)


@pytest.mark.slow
@needs_nginx
def test_started_in_the_background_it_honours_sigint_and_restarts_at_once_on_the_same_port(tmp_path):
    """A script's background job starts with SIGINT ignored (``trap '' INT`` here, as ``cmd &`` in sh does): the
    launcher must still stop on SIGINT. Then a new room on the same port starts at once, although the old
    connections' sockets are in TIME_WAIT (the launcher's port probe binds with SO_REUSEADDR, as nginx does)."""
    port = free_port()
    proc, url, _ = _start(tmp_path, 1, port=port, shell="trap '' INT; exec")
    launcher = next(p for p in [proc.pid, *_descendants(proc.pid)]
                    if "classroom.py" in _cmdline(pathlib.Path(f"/proc/{p}")))
    assert signal.SIGINT not in _ignored_signals(launcher)  # it reset the disposition it was started with
    for _ in range(5):  # connections that nginx closes: TIME_WAIT on the port
        _get(url)
    os.kill(launcher, signal.SIGINT)
    assert _ended(proc) == 130
    again, url, _ = _start(tmp_path, 1, port=port)
    try:
        assert _get(url)[0].startswith("127.0.0.1:")
    finally:
        again.send_signal(signal.SIGTERM)
        assert _ended(again) == 0


def _ignored_signals(pid: int) -> set[int]:
    """The signals process ``pid`` ignores (SigIgn in /proc/PID/status)."""
    mask = int(next(line.split()[1] for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines()
                    if line.startswith("SigIgn:")), 16)
    return {sig for sig in range(1, 64) if mask >> (sig - 1) & 1}


def _listeners(port: int) -> set[str]:
    """The local addresses with a TCP socket listening on ``port`` (IPv4 and IPv6, from /proc/net)."""
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = pathlib.Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hexport = local.split(":")
            if state == "0A" and int(hexport, 16) == port and len(address) == width:
                raw = bytes.fromhex(address)
                words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # per-word host byte order
                found.add(socket.inet_ntop(socket.AF_INET if width == 8 else socket.AF_INET6, words))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads the listening sockets from /proc/net")
def test_the_app_alone_listens_on_localhost_only(tmp_path):
    """``./run app`` is ``streamlit run app.py`` with the repository's .streamlit/config.toml: started without an
    address it listens on loopback only (the README: only this machine can open it)."""
    from proc_helpers import stop, wait_for_health

    port = free_port()
    log = tmp_path / "app.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = processes.spawn([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                            "--server.port", str(port), "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env,
                           log=log)
    try:
        wait_for_health(f"http://127.0.0.1:{port}", proc, "streamlit run app.py", log=log)
        listening = _listeners(port)
        assert listening and all(ipaddress.ip_address(a).is_loopback for a in listening), listening
    finally:
        stop(proc)



# ------------------------------------------------------------------ the teacher's page
def _pinned(room: str) -> dict[str, str]:
    """A cookie pinning a browser to each of the room's two app processes, by process address."""
    cookies: dict[str, str] = {}
    for i in range(200):
        backend, _ = _get(room, f"teach-{i}")
        cookies.setdefault(backend, f"{classroom.COOKIE}=teach-{i}")
        if len(cookies) == 2:
            return cookies
    raise AssertionError("200 browsers all reached one app process")


@pytest.mark.slow
@needs_nginx
def test_answers_on_either_process_reach_the_teacher_on_either_within_3_s(room):
    """Scripted students on both app processes answer on /learn; a teacher's page open on each process counts every
    answer within 3 s (its fragment reruns every second, as the page's timer does); with no key or a wrong one, a
    teacher's page on either process shows no count; the key reaches no student."""
    key, (first, second) = KEYS[room], _pinned(room).values()
    slug, step, _ = LESSON
    query = f"lesson={slug}&step={step}"

    async def run() -> None:
        teachers = [await _connect(room, "teach", f"key={key}&{query}", cookie=c) for c in (first, second)]
        before = [int(t.metrics["answered"]) for t in teachers]
        students = [await _connect(room, "learn", cookie=(first, second)[i % 2], keep=True) for i in range(6)]
        answered = time.perf_counter()
        try:
            seen = await asyncio.gather(*(watch_count(t, b + len(students), 3.0)  # each raises after 3 s
                                          for t, b in zip(teachers, before, strict=True)))
            assert max(seen) - answered <= 3.0
            for cookie in (first, second):
                for wrong in ("", "key=", f"key={key[:-1]}", f"key={key}x"):
                    stranger = await _connect(room, "teach", f"{wrong}&{query}".lstrip("&"), cookie=cookie)
                    assert stranger.metrics == {} and not stranger.fragments, wrong
                    await stranger.ws.close()
            for s in students:
                assert not any(key.encode() in raw for raw in s.received)
        finally:
            await asyncio.gather(*(s.ws.close() for s in [*teachers, *students]))

    asyncio.run(asyncio.wait_for(run(), 240))


# ------------------------------------------------------------------ ./run's first install
def test_a_first_install_says_what_it_does_in_a_few_lines_and_how_to_run_the_cli(tmp_path):
    """./run with an environment whose pip prints 98 lines of warnings (a stand-in python: pip's run is faked, the
    rest is this interpreter): the terminal gets a few lines saying what happens and how to use the CLI, pip's
    output goes to the log, and ``./run rfviz`` runs the command line."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "activate").write_text(f'export PATH="{venv}/bin:$PATH"\n')
    fake = venv / "bin" / "python"
    fake.write_text("#!/usr/bin/env bash\n"
                    'if [ "$1 $2" = "-m pip" ]; then\n'
                    '  for i in $(seq 98); do echo "WARNING: noise $i"; done; exit 0\nfi\n'
                    f'exec {sys.executable} "$@"\n')
    fake.chmod(0o755)
    env = {**os.environ, "RFVIZ_VENV": str(venv), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(["bash", str(ROOT / "run"), "rfviz", "--help"], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    said = out.stderr.strip().splitlines()
    assert 2 <= len(said) <= 4 and "noise" not in out.stderr, said
    assert str(venv / "pip-install.log") in said[0] and "./run rfviz" in said[-1] and "activate" in said[-1]
    assert (venv / "pip-install.log").read_text().count("WARNING: noise") == 2 * 98
    assert "usage" in out.stdout.lower() and "mse" in out.stdout  # the CLI's own help
    again = subprocess.run(["bash", str(ROOT / "run"), "rfviz", "--help"], capture_output=True, text=True, env=env,
                           timeout=300)
    assert again.returncode == 0 and again.stderr == ""  # installed: nothing to say the second time
