"""The ``rfviz`` console script and ``python -m rfviz``: a module that imports nothing heavy, so that a Ctrl-C while
the command line is still importing (torch, scipy, every command: seconds on a loaded machine) ends in the same
one line and exit 130 as a Ctrl-C during the work, not in a traceback."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

INTERRUPTED_EXIT = 130
"""128 + SIGINT, as a shell reports a command ended by Ctrl-C (``rfviz.cli`` uses the same code)."""


def console_main(argv: Sequence[str] | None = None) -> NoReturn:
    """Import ``rfviz.cli`` and run its ``console_main``; a KeyboardInterrupt that escapes it (during the imports) is
    one line and exit 130.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default ``sys.argv[1:]``).

    Examples
    --------
    >>> console_main(["estimators"])  # doctest: +SKIP
    """
    try:
        from .cli import console_main as run

        run(argv)  # its own Ctrl-C handling covers the command; this covers the imports before it
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
        raise SystemExit(INTERRUPTED_EXIT) from None
