"""Command-line interface, the headless face of rfviz: ``python -m rfviz COMMAND ...``.

One module per command, named after it. Each defines ``NAME``, ``HELP``, ``configure(parser)`` (adds its
arguments) and ``run(args) -> int`` (the exit code); ``COMMANDS`` below lists them, in the order of ``--help``.
To add a command, write ``rfviz/cli/NAME.py`` with those four names and add the module to ``COMMANDS``.

Bad input prints one line on stderr and exits with code 2, never a traceback. With no command at all,
``python -m rfviz`` prints the list of commands (its ``--help``) on stdout and exits with code 2 (nothing was run).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import NoReturn

import numpy as np

from .._version import __version__
from ..params import DEFAULT_MEMORY_BUDGET, ParameterError, format_bytes, memory_budget_scope, parse_bytes
from ..textio import UsageError
from . import (
    audit,
    check,
    density,
    downstream,
    estimators,
    features_needed,
    figure,
    gram,
    mse,
    psi,
    rank_estimators,
    sweep,
)
from ._flags import cli_words

COMMANDS: tuple[ModuleType, ...] = (estimators, mse, figure, check, psi, density, gram, sweep, features_needed,
                                    rank_estimators, downstream, audit)
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
_FIT = "use smaller sizes (and a --memory-budget that fits the machine)"


class OneLineParser(argparse.ArgumentParser):
    """argparse with the CLI's error contract: a usage error is one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {' '.join(message.split())} (see --help)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def program_name(argv0: str | None = None) -> str:
    """How the user invoked rfviz, for the usage lines: ``rfviz`` (the console script) or ``python -m rfviz``.

    Examples
    --------
    >>> program_name("/home/me/.venv/bin/rfviz"), program_name("/src/rfviz/__main__.py")
    ('rfviz', 'python -m rfviz')
    """
    name = os.path.basename(sys.argv[0] if argv0 is None else argv0)
    return "rfviz" if name.removesuffix(".exe") == "rfviz" else "python -m rfviz"


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser (``prog``: the program name of the usage lines, default ``program_name()``): one
    sub-parser per module in ``COMMANDS``, each with ``--memory-budget``; ``--version`` on the top level."""
    parser = OneLineParser(prog=prog or program_name(), description="rfviz: random-feature kernel estimators")
    parser.add_argument("--version", action="version", version=f"rfviz {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for module in COMMANDS:
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.configure(p)
        p.add_argument("--memory-budget", default=None, metavar="SIZE",
                       help="largest working set, e.g. 512MiB or 4GiB (default "
                            f"{format_bytes(DEFAULT_MEMORY_BUDGET)}); larger requests are refused up front")
        p.set_defaults(run=module.run)
    return parser


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 400 else text[:397] + "..."


def _describe(exc: BaseException) -> str | None:
    """The one-line message of an anticipated failure, or None for a bug (which keeps its traceback)."""
    if isinstance(exc, ParameterError | UsageError | NotImplementedError):
        flagged = getattr(exc, "cli_text", None)  # a core message the API reworded with keyword names
        return _one_line(ValueError(flagged)) if flagged else cli_words(_one_line(exc))
    if isinstance(exc, FloatingPointError | OverflowError | ZeroDivisionError):
        return f"numeric overflow or loss of precision ({_one_line(exc)}); try less extreme inputs"
    if isinstance(exc, MemoryError):
        return f"not enough memory for this request; {_FIT}"
    if isinstance(exc, RuntimeError) and any(s in str(exc) for s in ("alloc", "out of memory", "not enough memory")):
        return f"allocation refused ({_one_line(exc)[:160]}); {_FIT}"
    if isinstance(exc, OSError):
        name = f" {exc.filename!r}" if getattr(exc, "filename", None) else ""
        reason = exc.strerror or _one_line(exc)
        if exc.errno == errno.ENOSPC:
            reason = "no space left on device"
        return f"cannot write or read{name}: {reason}"
    if isinstance(exc, ValueError):
        return _one_line(exc)
    return None


@contextlib.contextmanager
def _quiet_numerics(as_json: bool) -> Iterator[list[warnings.WarningMessage]]:
    """Numpy/torch warnings are collected, never interleaved with the output (printed after it, except in
    --json mode where stderr stays for errors and progress only)."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        yield caught


@contextlib.contextmanager
def _sigint_noted() -> Iterator[threading.Event]:
    """Note every SIGINT (Ctrl-C) in an Event, then raise KeyboardInterrupt as Python does: a layer that reports
    the interrupt as a failure of its own (an estimator guard, a worker pool) still ends the command with 130.
    Left alone where SIGINT is ignored (a background job) or off the main thread."""
    noted = threading.Event()
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) in (
            signal.SIG_IGN, None):
        yield noted
        return

    def on_sigint(signum: int, frame: object) -> None:
        noted.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code. Every anticipated failure (bad parameter, numeric overflow,
    refused allocation, unwritable output) is ONE line on stderr and exit code 2; Ctrl-C is one line and 130."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a one-line usage error (2)
        return int(exc.code or 0) if isinstance(exc.code, int | None) else EXIT_BAD_INPUT
    as_json = bool(getattr(args, "json", False))
    try:
        budget = (DEFAULT_MEMORY_BUDGET if args.memory_budget is None
                  else parse_bytes(args.memory_budget, "--memory-budget"))  # '' is refused, not the default
        with _quiet_numerics(as_json) as caught, memory_budget_scope(budget), _sigint_noted() as interrupted:
            try:
                code = int(args.run(args) or 0)
            except Exception:
                if interrupted.is_set():  # Ctrl-C reported by a layer as its own failure: still an interruption
                    raise KeyboardInterrupt from None
                raise
        if not as_json:
            for w in {str(w.message) for w in caught if not issubclass(w.category, DeprecationWarning)}:
                print(f"warning: {' '.join(w.split())[:300]}", file=sys.stderr)
        return code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        message = _describe(exc)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT


def console_main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``rfviz`` console script and ``python -m rfviz``: ``main`` then ``exit_process`` with its code.

    Parameters
    ----------
    argv : the arguments (default ``sys.argv[1:]``).

    Examples
    --------
    >>> console_main(["estimators"])  # doctest: +SKIP
    """
    exit_process(main(argv))


def exit_process(code: int) -> NoReturn:
    """Leave the process with ``code`` once everything a command owes is done, skipping only Python's teardown of
    module objects: after torch and scipy are imported it takes ~0.3 s of CPU (measured: ``import rfviz.cli`` then
    exit, 1.9 s vs 1.6 s) and frees memory the operating system reclaims anyway.

    Everything else a normal exit does still happens, in the same order: the ``atexit`` handlers (Ray's shutdown,
    logging, temporary-directory cleanup), then stdout and stderr are flushed (files rfviz writes are closed by
    their context managers before ``main`` returns). When another non-daemon thread is alive, or this Python has no
    ``atexit._run_exitfuncs``, it falls back to ``sys.exit`` (the interpreter waits for such threads).

    Parameters
    ----------
    code : the exit status.

    Examples
    --------
    >>> exit_process(0)  # doctest: +SKIP
    """
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if others or run_exit_functions is None:
        sys.exit(code)
    run_exit_functions()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or a closed stream: nothing left to say
            stream.flush()
    os._exit(code)
