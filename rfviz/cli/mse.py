"""``python -m rfviz mse``: closed-form MSE of one estimator at one input pair, and optionally its Monte-Carlo twin."""

from __future__ import annotations

import argparse
import math

from ..api import mse_report
from ..params import CLI_TRIALS_PARAM, MAX_TRIALS, ParameterError, check
from ..textio import parse_assignments
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


def run(args: argparse.Namespace) -> int:
    check(args.trials, CLI_TRIALS_PARAM)
    if args.trials == 1:
        raise ParameterError("trials must be 0 (no Monte Carlo) or at least 2, got 1")
    if args.max_seconds is not None and not (math.isfinite(args.max_seconds) and args.max_seconds > 0):
        raise ParameterError(f"--max-seconds must be a number of seconds in (0, inf), got {args.max_seconds}")
    emit(mse_report(args.name, parse_assignments(args.params), args.trials, args.seed, args.device,
                    args.max_seconds), args.json)
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
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--json", action="store_true", help="print JSON")
