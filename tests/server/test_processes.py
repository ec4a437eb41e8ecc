"""``rfviz.server.processes``: the one helper that starts a server, waits for its health and stops it, every wait
bounded (issue 38). A live process that never answers, one that floods its output, one that exits, one that ignores
SIGTERM: each ends the wait in bounded time with one line, its process group killed *before* its output is read.
The watchdog (``Reaper``) and ``PR_SET_PDEATHSIG`` clean up after a parent killed with SIGKILL.
"""

from __future__ import annotations

import doctest
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from proc_helpers import free_port, wait_for_health

from rfviz.server import processes

pytestmark = pytest.mark.integration  # subprocesses, AppTest runs or sockets: not the unit tier

ROOT = pathlib.Path(__file__).resolve().parents[2]
SILENT_SERVER = textwrap.dedent("""
    import os, socket, subprocess, sys, time
    s = socket.socket()
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen()
    child = subprocess.Popen(["sleep", "600"])  # a member of its group, which must die with it
    print("child", child.pid, flush=True)
    held = []
    while True:
        held.append(s.accept())  # accepts every connection and never answers
""")


def _alive(pid: int) -> bool:
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone_within(seconds: float, *pids: int) -> bool:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_examples_run():
    result = doctest.testmod(processes, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 10


def test_a_live_server_that_never_answers_fails_the_wait_in_bounded_time(tmp_path):
    """The CI hang of issue 38: a server alive but not answering. The wait ends at its deadline (each probe times
    out with the time left), kills the whole group — the grandchild too — and only then reads the output."""
    port = free_port()
    log = tmp_path / "server.log"
    proc = processes.spawn([sys.executable, "-c", SILENT_SERVER, str(port)], log=log)
    processes.wait_for_text(log, "child ", proc, what="silent server", seconds=60)
    child = int(processes.tail(log).split()[1])
    t0 = time.monotonic()
    with pytest.raises(processes.StartupError) as err:
        processes.wait_for_health(f"http://127.0.0.1:{port}", proc, what="silent server", seconds=1.5, log=log)
    assert time.monotonic() - t0 < 15
    message = str(err.value)
    assert "\n" not in message and message.startswith("silent server was not ready after 1.5 s")
    assert "child " in err.value.output
    assert proc.returncode == -signal.SIGKILL
    assert _gone_within(5, child)


def test_a_server_flooding_a_pipe_does_not_block_the_wait_nor_its_reading():
    """stdout a pipe nobody reads: the server blocks on it (its problem), the wait still ends at its deadline, and
    what is read afterwards is bounded (the end of the output), read without blocking."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    t0 = time.monotonic()
    try:
        with pytest.raises(processes.StartupError) as err:
            processes.wait_for_health(f"http://127.0.0.1:{free_port()}", proc, what="flood", seconds=1.0)
    finally:
        processes.kill_groups([proc])
        proc.stdout.close()
    assert time.monotonic() - t0 < 15
    assert "\n" not in str(err.value)
    assert 0 < len(err.value.output) <= processes.OUTPUT_TAIL_BYTES and set(err.value.output) == {"x"}


def test_a_server_that_exits_ends_the_wait_at_once_with_its_last_line(tmp_path):
    log = tmp_path / "out.log"
    proc = processes.spawn([sys.executable, "-c", "print('starting'); print('port 1 in use'); raise SystemExit(3)"],
                           log=log)
    t0 = time.monotonic()
    with pytest.raises(processes.StartupError, match=r"^crash exited with code 3 \(last output: port 1 in use\)$"):
        processes.wait_for_health(f"http://127.0.0.1:{free_port()}", proc, what="crash", seconds=60, log=log)
    assert time.monotonic() - t0 < 30


def test_a_healthy_server_is_waited_for_and_stopped(tmp_path):
    (tmp_path / "_stcore").mkdir()
    (tmp_path / "_stcore" / "health").write_text("ok")
    port = free_port()
    proc = processes.spawn([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(tmp_path),
                            str(port)])
    try:
        processes.wait_for_health(f"http://127.0.0.1:{port}", proc, what="http.server", seconds=60)
        assert processes.healthy(f"http://127.0.0.1:{port}")
    finally:
        processes.stop_groups([proc], seconds=10)
    assert proc.returncode is not None


def test_the_tests_helper_fails_in_one_line(tmp_path):
    proc = processes.spawn(["sleep", "600"])
    with pytest.raises(pytest.fail.Exception) as failed:
        wait_for_health(f"http://127.0.0.1:{free_port()}", proc, "sleep", seconds=0.5)
    assert "\n" not in str(failed.value) and "sleep was not ready after 0.5 s" in str(failed.value)
    assert proc.returncode == -signal.SIGKILL


def test_a_process_ignoring_sigterm_is_killed_after_the_grace():
    proc = processes.spawn([sys.executable, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, "
                            "signal.SIG_IGN)\nprint(flush=True)\ntime.sleep(600)"])
    time.sleep(0.5)
    t0 = time.monotonic()
    processes.stop_groups([proc], seconds=1.0)
    assert proc.returncode == -signal.SIGKILL and time.monotonic() - t0 < 12


def test_the_start_allowance_grows_with_the_load():
    """Busy processes beside this one (twice as many as cores, plus one): the calibration sees this process get a
    fraction of a core, so the allowance is several times its base (the 1-minute load alone would lag)."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1) + 1)]
    try:
        time.sleep(0.5)
        factor = processes.load_factor(sample_s=0.5)
    finally:
        for p in busy:
            p.kill()
        for p in busy:
            p.wait(timeout=10)
    assert factor >= 1.5
    assert processes.start_allowance(10.0, cap_s=25.0) <= 25.0


_PARENT = textwrap.dedent("""
    import pathlib, sys, time
    sys.path.insert(0, sys.argv[1])
    from rfviz.server import processes
    folder = pathlib.Path(sys.argv[2])
    reaper = processes.Reaper(folder) if sys.argv[3] == "reaper" else None
    child = processes.spawn(["sleep", "600"], die_with_parent=sys.argv[3] == "pdeathsig")
    if reaper is not None:
        reaper.watch(child)
    print(child.pid, flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("guard", ["reaper", "pdeathsig"])
def test_a_parent_killed_with_sigkill_takes_its_children_along(tmp_path, guard):
    """Each guard alone: the watchdog (kills the watched group, removes the folder), and PR_SET_PDEATHSIG (the
    child gets SIGKILL when its parent dies)."""
    folder = tmp_path / "private"
    folder.mkdir()
    (folder / "nginx.conf").write_text("x")
    log = tmp_path / "parent.log"
    parent = processes.spawn([sys.executable, "-c", _PARENT, str(ROOT), str(folder), guard], log=log)
    try:
        processes.wait_until(lambda _: processes.tail(log).strip().isdigit(), [parent], what="parent", seconds=60,
                             log=log)
        child = int(processes.tail(log))
        assert _alive(child)
        os.kill(parent.pid, signal.SIGKILL)
        assert _gone_within(5, child)
        if guard == "reaper":
            deadline = time.monotonic() + 5
            while folder.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not folder.exists()
    finally:
        processes.kill_groups([parent])
