"""Helpers for tests that start rfviz in a child process."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """``preexec_fn`` of a child that a test interrupts with SIGINT: the child starts with SIGINT's default
    disposition, as under a terminal's Ctrl-C. A shell that starts the test run in the background (``pytest &``,
    nohup, some CI runners) leaves SIGINT ignored, and a child inherits that: Python then installs no
    KeyboardInterrupt handler and the interrupt would be lost."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


START_BASE_S = 120.0
"""What a Streamlit server of app.py may take to answer its health check on an idle machine."""
START_CAP_S = 600.0
"""The most any start-up allowance grows to under load."""


def start_allowance(base_s: float = START_BASE_S) -> float:
    """Seconds a server started now may take to become healthy: ``base_s`` times the measured load
    (``rfviz.server.processes.load_factor``), at most ``START_CAP_S``."""
    from rfviz.server.processes import start_allowance as allowance

    return allowance(base_s, cap_s=max(base_s, START_CAP_S))


def wait_for_health(url: str, proc, what: str, seconds: float | None = None, log=None) -> None:
    """Return once the Streamlit server ``proc`` answers ``url``/_stcore/health; otherwise (it exits, or
    ``seconds`` — by default :func:`start_allowance` — pass) its process group is killed *before* its output is read
    (a pipe of a live server would never end) and the test fails in one line."""
    import pytest

    from rfviz.server.processes import StartupError
    from rfviz.server.processes import wait_for_health as wait

    try:
        wait(url, proc, what=what, seconds=start_allowance() if seconds is None else seconds, log=log)
    except StartupError as exc:
        pytest.fail(str(exc), pytrace=False)


def reap(proc, seconds: float = 30.0) -> None:
    """Kill ``proc`` (a direct child, no group of its own) if it is still running and collect it, the wait bounded:
    a test whose own wait failed leaves nothing running."""
    if proc.poll() is None:
        proc.kill()
        proc.communicate(timeout=seconds)


def stop(proc, seconds: float = 15.0) -> None:
    """SIGTERM to ``proc``'s process group (it must have one: ``start_new_session=True``), SIGKILL after
    ``seconds``; every wait bounded."""
    from rfviz.server.processes import stop_groups

    stop_groups([proc], seconds=seconds)


PRINT_PEAK_KIB = ("print(next(int(line.split()[1]) for line in open('/proc/self/status') "
                  "if line.startswith('VmHWM:')))")
"""A line of Python that prints the process's own peak resident memory in KiB (VmHWM). Not ``ru_maxrss``: Linux keeps
that across ``execve``, so a child forked from a large test process (a whole suite's pytest) reports the parent's
size, not its own."""
