"""``python -m rfviz sweep``: Monte Carlo of one estimator over a grid of parameters and inputs, locally or on Ray.

Example: ``python -m rfviz sweep positive d=64 --grid theta=0:3.1416:32 r=0.1:2:16 m=8,16,64 --trials 1000000
--backend ray --workers 8 --out runs/positive.parquet`` (interrupt with Ctrl-C, continue with ``--resume``).
"""

from __future__ import annotations

import argparse
import signal
import sys
from dataclasses import replace

from ..sweeps import SweepSpec, make_backend, run_sweep
from ..sweeps.ray_backend import RAY_PARAMS, SweepTaskError, install_sigterm_as_interrupt, validate_ray_options
from ..sweeps.runner import sweep_device, sweep_spec
from ..sweeps.store import DEFAULT_FLUSH_POINTS, DEFAULT_FLUSH_S, ResultStore, check_flush, sweep_lock
from ..textio import parse_assignments

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


def _print_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"resume: dropped and recomputed {note}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    spec = sweep_spec(args.name, parse_assignments(args.params), args.grid, trials=args.trials, seed=args.seed,
                      block_trials=args.block_trials, device=args.device, resume=args.resume,
                      overwrite=args.overwrite)  # validates before Ray starts
    check_flush(args.flush_points, args.flush_seconds)
    ResultStore.check_out(args.out, resume=args.resume, overwrite=args.overwrite)  # before Ray starts, writes nothing
    options = validate_ray_options({param.name: getattr(args, param.name) for param in RAY_PARAMS})
    previous = install_sigterm_as_interrupt()  # SIGTERM stops like Ctrl-C: finished points kept, Ray shut down
    try:
        with sweep_lock(args.out):  # one writer per --out, held from before Ray starts to the end
            return _run(args, spec, options)
    except KeyboardInterrupt:
        print(f"interrupted: finished points are kept in {args.out}; continue with the same command and "
              f"--resume", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace, spec: SweepSpec, options: dict) -> int:
    backend = make_backend(args.backend, address=args.address, workers=args.workers, **options)  # keeps our SIGTERM
    if getattr(backend, "note", None) and not args.quiet:
        print(backend.note, file=sys.stderr)
    try:
        spec = replace(spec, device=sweep_device(args.device, args.backend, backend))
        try:
            report = run_sweep(spec, args.out, backend, resume=args.resume, overwrite=args.overwrite,
                               progress=not args.quiet, flush_points=args.flush_points, flush_s=args.flush_seconds,
                               on_notes=_print_notes)
        except SweepTaskError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    finally:
        backend.close()
    s = report.stats
    rate = report.trials_this_run / report.wall_s if report.wall_s > 0 else 0.0
    print(f"sweep {report.status}: {report.points_done}/{report.points_total} points in {args.out} "
          f"({report.points_this_run} this run, {report.wall_s:.1f} s, {rate:.3g} trials/s, backend {report.backend}, "
          f"{s.batches} tasks of {s.batch_tasks} block(s), utilisation {s.utilisation:.0%})", file=sys.stderr)
    return 0
