"""Command-line interface, the headless face of rfviz: ``python -m rfviz COMMAND ...``.

Commands register themselves with ``@command``; modules that add commands are listed in ``COMMAND_MODULES``.
Bad input prints one line on stderr and exits with code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .params import ParameterError

Configure = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[str, Configure, Run]] = {}

# Modules whose import registers further commands (one line each).
COMMAND_MODULES: list[str] = [
    "rfviz.cli_figure",
    "rfviz.cli_lab",
    "rfviz.cli_psi",
    "rfviz.cli_coupling",
]


class UsageError(ValueError):
    """Bad command-line input (exit code 2)."""


def command(name: str, help: str) -> Callable[[Configure], Configure]:
    """Register ``configure(parser)``; the configured parser must set ``func`` via ``set_defaults``."""

    def deco(configure: Configure) -> Configure:
        COMMANDS[name] = (help, configure, lambda args: args.func(args))
        return configure

    return deco


def parse_assignments(items: Sequence[str]) -> dict[str, str]:
    """``["m=10", "A=-0.1"]`` → ``{"m": "10", "A": "-0.1"}``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"expected key=value, got {item!r}")
        if key in out:
            raise UsageError(f"parameter {key!r} given twice")
        out[key] = value
    return out


def parse_vector(name: str, text: str) -> np.ndarray:
    """``"1,0.5,-2"`` → array; ParameterError naming the parameter otherwise."""
    try:
        v = np.array([float(t) for t in text.split(",") if t.strip()], dtype=float)
    except ValueError:
        raise ParameterError(f"{name} must be a comma-separated list of numbers, got {text!r}") from None
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ParameterError(f"{name} must be a non-empty list of finite numbers, got {text!r}")
    return v


def jsonable(value: Any) -> Any:
    """Make numpy scalars, complex numbers and non-finite floats JSON-safe (non-finite → null)."""
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, complex | np.complexfloating):
        c = complex(value)
        return f"{c.real:g}{c.imag:+g}j"
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        f = float(value)
        return f if math.isfinite(f) else None
    return value


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
