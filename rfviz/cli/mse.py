"""``python -m rfviz mse``: closed-form MSE of one estimator at one input pair, and optionally its Monte-Carlo twin."""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..api.mse_command import INPUT_KEYS, mse
from ..estimators import get_estimator  # the package: the catalog loaded
from ..geometry import parse_real
from ..params import CLI_D_PARAM, MAX_TRIALS
from ..textio import parse_assignments, parse_values, parse_vector
from ._output import emit

NAME = "mse"
HELP = "closed-form MSE of one estimator at one input pair, and optionally its Monte-Carlo twin"

def count(text: str) -> int:
    """An argparse type for counts written as ``2000`` or ``1e6`` (an integral value)."""
    try:
        value = float(text)
        if not math.isfinite(value) or value != int(value):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:40]!r}") from None
    return int(value)


def parse_inputs(assignments: dict[str, str]) -> dict[str, Any]:
    """The input assignments as typed values: r and θ as numbers (``pi/2`` read by ``geometry.parse_real``), d by
    its Param, x and y as lists of numbers, the embedding's name.

    Examples
    --------
    >>> parse_inputs({"theta": "pi/2", "d": "4"})["d"]
    4
    """
    out: dict[str, Any] = {}
    for key, text in assignments.items():
        if key in ("x", "y"):
            out[key] = parse_vector(key, text)
        elif key == "d":
            out[key] = CLI_D_PARAM.parse(text)
        elif key in ("r", "theta"):
            out[key] = parse_real(key, text)
        else:
            out[key] = text
    return out


def run(args: argparse.Namespace) -> int:
    assignments = parse_assignments(args.params)
    inputs = parse_inputs({k: v for k, v in assignments.items() if k in INPUT_KEYS})
    cls = get_estimator(args.name)
    params = parse_values(cls.spec, {k: v for k, v in assignments.items() if k not in INPUT_KEYS})
    result = mse(args.name, **inputs, trials=args.trials, seed=args.seed, device=args.device,
                 max_seconds=args.max_seconds, **params)
    emit(result.to_dict(), args.json)
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="estimator name (see `python -m rfviz estimators`)")
    p.add_argument("params", nargs="*",
                   help="key=value: r, theta (radians), d, embedding (canonical, flat, rotation_average), x=1,2,3, "
                        "y=..., and estimator parameters")
    p.add_argument("--trials", type=count, default=0,
                   help=f"Monte-Carlo trials (0: closed form only; at most {MAX_TRIALS:.0e}); progress on stderr "
                        "after 2 s, Ctrl-C stops")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="stop the Monte-Carlo run (exit 2) when it takes longer than this")
    p.add_argument("--seed", type=int, default=0, help="random seed of the Monte-Carlo run")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--json", action="store_true", help="print JSON")
