"""Benchmark: the same sweep on ``local`` (1 process, 1 thread) and ``ray`` (2 workers), plus Ray's per-task cost.

Usage: python bench/bench_sweep.py [--trials 65536] [--points 8] [--repeats 3]
Prints a Markdown table (median wall time over the repeats with its range, trials/s, speed-up, tasks, per-task
overhead, the load average during the runs) and checks both backends produced identical numbers. Keep it small on a
shared machine.
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import pathlib
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rfviz import get_estimator
from rfviz.sweep import RayBackend, SweepSpec, make_backend, parse_grid, run_sweep


def _noop(x: int) -> int:
    return x


def per_task_overhead(ray, n: int = 400) -> float:
    """Seconds of scheduling per empty Ray task (submit + run + fetch, 2 workers), after a warm-up."""
    f = ray.remote(_noop)
    ray.get([f.remote(i) for i in range(50)])
    t = time.perf_counter()
    ray.get([f.remote(i) for i in range(n)])
    return (time.perf_counter() - t) / n * 2  # 2 workers run them in parallel: cost per worker-slot


def rows(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return [{k: v for k, v in r.items() if k not in ("backend", "seconds")} for r in csv.DictReader(f)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=65536)
    ap.add_argument("--points", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    est = get_estimator("positive")
    grid = parse_grid([f"r=0.2:1:{args.points}"], est, {})
    spec = SweepSpec("positive", {"d": "64", "m": "64", "theta": "1.0"}, grid, args.trials, seed=1,
                     block_trials=4096, device="cpu")
    tmp = tempfile.mkdtemp()
    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    startup = time.perf_counter() - t0
    overhead = per_task_overhead(ray)
    walls: dict[str, list[float]] = {"local": [], "ray": []}
    reports = {}
    loads = [os.getloadavg()[0]]
    for i in range(args.repeats):  # alternate, so both backends see the same (shared-machine) load
        t = time.perf_counter()
        reports["local"] = run_sweep(spec, f"{tmp}/local{i}.csv", make_backend("local"), progress=False)
        walls["local"].append(time.perf_counter() - t)
        loads.append(os.getloadavg()[0])
        backend = RayBackend(workers=2)
        t = time.perf_counter()
        reports["ray"] = run_sweep(spec, f"{tmp}/ray{i}.csv", backend, progress=False)
        walls["ray"].append(time.perf_counter() - t)
        loads.append(os.getloadavg()[0])
    ray.shutdown()
    same = all(rows(f"{tmp}/local0.csv") == rows(f"{tmp}/{b}{i}.csv") for b in ("local", "ray")
               for i in range(args.repeats))
    results = [("local (1 process)", walls["local"], reports["local"], 0.0),
               ("ray (2 workers)", walls["ray"], reports["ray"], overhead)]
    base = statistics.median(walls["local"])
    total = spec.n_points * spec.trials
    print(f"sweep: positive d=64 m=64, {spec.n_points} points × {spec.trials} trials = {total:.3g} trials, "
          f"{spec.n_tasks} tasks of {spec.block_trials} trials; Ray start-up {startup:.1f} s (not in the table); "
          f"median of {args.repeats} alternating runs; 1-min load average {min(loads):.1f}–{max(loads):.1f} "
          f"(on {os.cpu_count()} cores)")
    print("| backend | wall (s), median [range] | trials/s | speed-up | Ray tasks × blocks | compute per task (s) | "
          "overhead per task (ms) | overhead share | utilisation |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, ws, rep, ovh in results:
        s = rep.stats
        wall = statistics.median(ws)
        per_task = s.compute_s / max(s.batches, 1)
        share = ovh / per_task if ovh else 0.0
        print(f"| {name} | {wall:.2f} [{min(ws):.2f}–{max(ws):.2f}] | {total / wall:.3g} | {base / wall:.2f}× | "
              f"{s.batches} × {s.batch_tasks} | {per_task:.3f} | {f'{ovh * 1e3:.2f}' if ovh else '–'} | "
              f"{f'{share:.2%}' if ovh else '–'} | "
              f"{s.utilisation:.0%} |")
    per_block = results[0][2].stats.compute_s / spec.n_tasks
    print(f"identical numbers on both backends: {same}; compute per block of {spec.block_trials} trials: "
          f"{per_block * 1e3:.1f} ms ({spec.block_trials / per_block:.3g} trials/s per core)")
    if not same:
        raise SystemExit("backends disagree")


if __name__ == "__main__":
    main()
