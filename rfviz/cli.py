"""Command-line interface, the headless face of rfviz: ``python -m rfviz COMMAND ...``.

Commands register themselves with ``@command``; modules that add commands are listed in ``COMMAND_MODULES``.
Bad input prints one line on stderr and exits with code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .params import ParameterError
from .textio import UsageError, jsonable, parse_assignments, parse_vector  # noqa: F401  (re-exported)

Configure = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[str, Configure, Run]] = {}

# Modules whose import registers further commands (one line each).
COMMAND_MODULES: list[str] = [
    "rfviz.cli_figure",
    "rfviz.cli_lab",
    "rfviz.cli_psi",
    "rfviz.cli_coupling",
    "rfviz.cli_gram",
]


def command(name: str, help: str) -> Callable[[Configure], Configure]:
    """Register ``configure(parser)``; the configured parser must set ``func`` via ``set_defaults``."""

    def deco(configure: Configure) -> Configure:
        COMMANDS[name] = (help, configure, lambda args: args.func(args))
        return configure

    return deco


def emit(obj: dict[str, Any], as_json: bool) -> None:
    """Print a result as JSON or as aligned ``key: value`` lines."""
    obj = jsonable(obj)
    if as_json:
        print(json.dumps(obj, indent=2))
        return
    for key, value in obj.items():
        print(f"{key:>14}: {json.dumps(value) if isinstance(value, dict | list) else value}")


def build_parser() -> argparse.ArgumentParser:
    for mod in COMMAND_MODULES:
        importlib.import_module(mod)
    parser = argparse.ArgumentParser(prog="python -m rfviz", description="rfviz: random-feature kernel estimators")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, configure, _run) in COMMANDS.items():
        configure(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse prints its own one-line usage error
        return int(exc.code or 0)
    try:
        return int(args.func(args) or 0)
    except (ParameterError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except NotImplementedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


from . import cli_core  # noqa: E402,F401  (registers the core commands)
