"""The ``rfviz`` console script and ``python -m rfviz``: a module that imports nothing heavy, so that a Ctrl-C while
the command line is still importing (torch, scipy, every command: seconds on a loaded machine) ends in the same
one line and exit 130 as a Ctrl-C during the work, not in a traceback. During the imports a Ctrl-C ends the
process at once (nothing has been read or written yet): raised as KeyboardInterrupt there, it can land inside the
import machinery, which prints it as "Exception ignored" and goes on, and the command then ran to its end."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

INTERRUPTED_EXIT = 130
"""128 + SIGINT, as a shell reports a command ended by Ctrl-C (``rfviz.cli`` uses the same code)."""


def _interrupted_while_importing(signum: int, frame: object) -> None:
    os.write(2, b"interrupted\n")
    os._exit(INTERRUPTED_EXIT)


def console_main(argv: Sequence[str] | None = None) -> NoReturn:
    """Import ``rfviz.cli`` (a Ctrl-C meanwhile: one line, exit 130) and run its ``console_main``.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default ``sys.argv[1:]``).

    Examples
    --------
    >>> console_main(["estimators"])  # doctest: +SKIP
    """
    terminal = signal.getsignal(signal.SIGINT) is signal.default_int_handler  # not ignored (nohup, a background job)
    if terminal:
        signal.signal(signal.SIGINT, _interrupted_while_importing)
    try:
        from .cli import console_main as run
    finally:
        if terminal:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run(argv)  # its own Ctrl-C handling covers the command
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
        raise SystemExit(INTERRUPTED_EXIT) from None
