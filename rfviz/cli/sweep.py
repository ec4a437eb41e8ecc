"""``python -m rfviz sweep``: Monte Carlo of one estimator over a grid of parameters and inputs, locally or on Ray.

Example: ``python -m rfviz sweep positive d=64 --grid theta=0:3.1416:32 r=0.1:2:16 m=8,16,64 --trials 1000000
--backend ray --workers 8 --out runs/positive.parquet`` (interrupt with Ctrl-C, continue with ``--resume``).
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from ..api.sweep_command import sweep
from ..estimators import get_estimator  # the package: the catalog loaded
from ..geometry import parse_real
from ..params import CLI_D_PARAM
from ..sweeps.ray_backend import RAY_PARAMS, SweepTaskError, install_sigterm_as_interrupt
from ..sweeps.store import DEFAULT_FLUSH_POINTS, DEFAULT_FLUSH_S
from ..textio import parse_assignments, parse_values

NAME = "sweep"
HELP = "Monte-Carlo MSE of one estimator over a grid (local or Ray), one row per point, resumable"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="estimator name (see `python -m rfviz estimators`)")
    p.add_argument("params", nargs="*", help="fixed key=value: estimator parameters and inputs r, theta, d, embedding")
    p.add_argument("--grid", nargs="+", default=[], metavar="AXIS",
                   help="name=start:stop:count (inclusive linspace) or name=v1,v2,... for any parameter or input")
    p.add_argument("--trials", type=int, default=100_000, help="Monte-Carlo trials per grid point")
    p.add_argument("--seed", type=int, default=0, help="sweep seed (task seeds derive from seed, point, block)")
    p.add_argument("--block-trials", type=int, default=None,
                   help="trials per task (default 4096; part of the reproducibility contract with the seed)")
    p.add_argument("--backend", default="local", choices=("local", "ray"), help="local (this process) or ray")
    p.add_argument("--address", default=None,
                   help="Ray cluster to join: HOST:PORT as printed by `ray start --head`, or auto (default: "
                        "RAY_ADDRESS, else a private local Ray for this sweep, even when a `ray start` head runs)")
    p.add_argument("--workers", type=int, default=None,
                   help="CPUs of the private local Ray (default: all cores); not with --address")
    for param in RAY_PARAMS:  # Ray-only options: validated by their Param, refused on --backend local
        p.add_argument("--" + param.name.replace("_", "-"), default=None,
                       help=f"{param.help} (default {param.default:g}; {param.range_text()})")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (auto: cuda when the backend has a GPU)")
    p.add_argument("--out", required=True, help="result file, .csv or .parquet (+ .manifest.json beside it)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted sweep of the same arguments")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing result file (only a sweep file rfviz wrote, with its manifest)")
    p.add_argument("--flush-points", type=int, default=DEFAULT_FLUSH_POINTS,
                   help=f"make rows durable (fsync) every N finished points (default {DEFAULT_FLUSH_POINTS}) ...")
    p.add_argument("--flush-seconds", type=float, default=DEFAULT_FLUSH_S,
                   help=f"... or every T seconds, whichever comes first (default {DEFAULT_FLUSH_S:g})")
    p.add_argument("--quiet", action="store_true", help="no progress line")


def fixed_values(name: str, assignments: dict[str, str]) -> dict[str, Any]:
    """The fixed ``key=value`` texts as typed values: r and θ as numbers (``pi/2`` allowed), d by its Param, the
    embedding's name, the estimator's parameters by their Params (other names passed on for the API to refuse).

    Examples
    --------
    >>> fixed_values("trig", {"d": "4", "m": "8", "theta": "pi/2"})["m"]
    8
    """
    inputs = {"r": lambda t: parse_real("r", t), "theta": lambda t: parse_real("theta", t), "d": CLI_D_PARAM.parse}
    params = parse_values(get_estimator(name).spec, {k: v for k, v in assignments.items() if k not in inputs})
    return {**{k: inputs[k](v) for k, v in assignments.items() if k in inputs}, **params}


def _note(quiet: bool) -> Any:
    """Print the run's notes on stderr: resume notes always, the backend's note unless ``--quiet``."""
    def note(text: str) -> None:
        if text.startswith("resume: ") or not quiet:
            print(text, file=sys.stderr)
    return note


def run(args: argparse.Namespace) -> int:
    ray = {p.name: p.parse(getattr(args, p.name)) for p in RAY_PARAMS if getattr(args, p.name) is not None}
    options = {"address": args.address, "workers": args.workers, **ray}
    previous = install_sigterm_as_interrupt()  # SIGTERM stops like Ctrl-C: finished points kept, Ray shut down
    try:
        result = sweep(args.name, args.out, grid=args.grid, trials=args.trials, seed=args.seed,
                       block_trials=args.block_trials, backend=args.backend, device=args.device, resume=args.resume,
                       overwrite=args.overwrite, progress=not args.quiet, flush_points=args.flush_points,
                       flush_seconds=args.flush_seconds, backend_options=options, on_note=_note(args.quiet),
                       **fixed_values(args.name, parse_assignments(args.params)))
    except SweepTaskError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: finished points are kept in {args.out}; continue with the same command and "
              f"--resume", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    s = result.stats
    rate = result.trials_this_run / result.wall_s if result.wall_s > 0 else 0.0
    print(f"sweep {result.status}: {result.points_done}/{result.points_total} points in {args.out} "
          f"({result.points_this_run} this run, {result.wall_s:.1f} s, {rate:.3g} trials/s, backend "
          f"{result.backend}, {s.batches} tasks of {s.batch_tasks} block(s), utilisation {s.utilisation:.0%})",
          file=sys.stderr)
    return 0
