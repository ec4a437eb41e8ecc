"""``./run classroom`` (classroom.py): app processes behind Debian's nginx, each browser pinned to one of them.

Real parts only: the launcher starts real Streamlit servers and a real nginx; a scripted WebSocket session (the
protocol bench/bench_classroom.py speaks) reruns a page through the proxy; Chromium uploads a file through it to a
session on either process (the upload is a separate HTTP request: without the sticky cookie it would reach the
other process, which does not know the session); Ctrl-C and a crashed app process stop everything and leave no
files behind.
"""

from __future__ import annotations

import asyncio
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
from proc_helpers import free_port

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from bench_classroom import LESSON, _connect, _descendants, _fresh_value, _round, teacher_key, watch_count  # noqa: E402

import classroom  # noqa: E402

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
CHROMIUM = "/usr/bin/chromium"
needs_nginx = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)")


def _start(tmp_path: pathlib.Path, processes: int) -> tuple[subprocess.Popen, str]:
    """The launcher on a free port, its temporary files under ``tmp_path``; returned once it printed its address."""
    port = free_port()
    env = {**os.environ, "TMPDIR": str(tmp_path), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "classroom.py"), "--processes", str(processes), "--port",
                             str(port), "--address", "127.0.0.1"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith(f"rfviz classroom: http://127.0.0.1:{port} "), (line, proc.stderr.read())
    links = [proc.stdout.readline(), proc.stdout.readline()]
    assert links[0].strip() == f"students: http://127.0.0.1:{port}/learn", links
    KEYS[f"http://127.0.0.1:{port}"] = teacher_key(links)
    return proc, f"http://127.0.0.1:{port}"


KEYS: dict[str, str] = {}
"""The teacher's key of each classroom started here, by its address (read from the printed teacher's link)."""


def _get(url: str, cookie: str | None = None) -> tuple[str, str]:
    """(the app process that answered, the rfviz_server cookie nginx set) for GET ``url``/."""
    request = urllib.request.Request(url + "/", headers={"Cookie": f"{classroom.COOKIE}={cookie}"} if cookie else {})
    with urllib.request.urlopen(request, timeout=30) as r:
        cookies = [c.split(";", 1)[0] for c in r.headers.get_all("Set-Cookie") or []]
        ours = [c.split("=", 1)[1] for c in cookies if c.startswith(classroom.COOKIE + "=")]
        return r.headers["X-Rfviz-Server"], ours[0]


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    proc, url = _start(tmp_path_factory.mktemp("classroom"), 2)
    try:
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


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
    assert str(tmp_path / "proxy") in conf  # nginx's temporary files in the private directory, not /var/lib/nginx


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
def test_ctrl_c_stops_every_process_and_leaves_no_files(tmp_path):
    proc, url = _start(tmp_path, 1)
    children = _descendants(proc.pid)
    assert len(children) >= 3  # the app process, nginx's master and its worker
    assert list(tmp_path.iterdir())  # the private directory exists while it runs
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert not [p for p in children if pathlib.Path(f"/proc/{p}").exists()
                and "zombie" not in pathlib.Path(f"/proc/{p}/status").read_text().lower()]
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/_stcore/health", timeout=5)


@pytest.mark.slow
@needs_nginx
def test_ctrl_c_while_starting_stops_every_process_and_leaves_no_files(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, str(ROOT / "classroom.py"), "--processes", "2", "--port",
                             str(free_port()), "--address", "127.0.0.1"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while len(_descendants(proc.pid)) < 2 and time.time() < deadline:  # both app processes started, not ready
        time.sleep(0.05)
    children = _descendants(proc.pid)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert not [p for p in children if pathlib.Path(f"/proc/{p}").exists()
                and "zombie" not in pathlib.Path(f"/proc/{p}/status").read_text().lower()]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@needs_nginx
def test_an_app_process_that_dies_stops_the_classroom_with_its_log(tmp_path):
    proc, _ = _start(tmp_path, 1)
    app = next(p for p in _descendants(proc.pid) if "streamlit" in pathlib.Path(f"/proc/{p}/cmdline").read_text())
    os.kill(app, signal.SIGKILL)
    assert proc.wait(timeout=60) == 1
    assert "classroom: the app server on port" in proc.stderr.read()
    deadline = time.time() + 10
    while list(tmp_path.iterdir()) and time.time() < deadline:
        time.sleep(0.2)
    assert list(tmp_path.iterdir()) == []


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
