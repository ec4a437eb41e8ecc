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


def wait_for_health(url: str, proc, what: str, seconds: float = 90) -> None:
    """Return once the Streamlit server ``proc`` answers ``url``/_stcore/health; fail the test with the end of its
    output if it exits or ``seconds`` pass first."""
    import time
    import urllib.request

    import pytest

    deadline = time.time() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            out = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"{what} did not start (exit code {proc.poll()}):\n{out[-3000:]}")
        time.sleep(0.5)


PRINT_PEAK_KIB = ("print(next(int(line.split()[1]) for line in open('/proc/self/status') "
                  "if line.startswith('VmHWM:')))")
"""A line of Python that prints the process's own peak resident memory in KiB (VmHWM). Not ``ru_maxrss``: Linux keeps
that across ``execve``, so a child forked from a large test process (a whole suite's pytest) reports the parent's
size, not its own."""
