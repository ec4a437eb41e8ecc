"""Helpers for tests that start rfviz in a child process."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """``preexec_fn`` of a child that a test interrupts with SIGINT: the child starts with SIGINT's default
    disposition, as under a terminal's Ctrl-C. A shell that starts the test run in the background (``pytest &``,
    nohup, some CI runners) leaves SIGINT ignored, and a child inherits that: Python then installs no
    KeyboardInterrupt handler and the interrupt would be lost."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
