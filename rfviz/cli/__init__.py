"""Command-line interface, the headless face of rfviz: ``python -m rfviz COMMAND ...``.

One module per command, named after it. Each defines ``NAME``, ``HELP``, ``configure(parser)`` (adds its
arguments) and ``run(args) -> int`` (the exit code); ``COMMANDS`` below lists them, in the order of ``--help``.
To add a command, write ``rfviz/cli/NAME.py`` with those four names and add the module to ``COMMANDS``.

Bad input prints one line on stderr and exits with code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from ..params import ParameterError
from ..textio import UsageError
from . import check, density, estimators, figure, gram, mse, psi, sweep

COMMANDS: tuple[ModuleType, ...] = (estimators, mse, figure, check, psi, density, gram, sweep)


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m rfviz`` parser: one sub-parser per module in ``COMMANDS``."""
    parser = argparse.ArgumentParser(prog="python -m rfviz", description="rfviz: random-feature kernel estimators")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.configure(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (2 for bad input, with one line on stderr)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse prints its own one-line usage error
        return int(exc.code or 0)
    try:
        return int(args.run(args) or 0)
    except (ParameterError, UsageError, NotImplementedError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
