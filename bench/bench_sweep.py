"""Benchmark: the same sweep on ``local`` (1 process, 1 thread) and ``ray`` (2 workers), plus Ray's per-task cost.

Usage: python bench/bench_sweep.py [--trials 65536] [--points 8]
Prints a Markdown table (wall time, trials/s, speed-up, tasks, per-task overhead) and checks both backends
produced identical numbers. Keep it small on a shared machine.
"""

from __future__ import annotations

import argparse
import csv
import logging
import pathlib
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
    args = ap.parse_args()
    torch.set_num_threads(1)
    est = get_estimator("positive")
    grid = parse_grid([f"r=0.2:1:{args.points}"], est, {})
    spec = SweepSpec("positive", {"d": "64", "m": "64", "theta": "1.0"}, grid, args.trials, seed=1,
                     block_trials=4096, device="cpu")
    tmp = tempfile.mkdtemp()
    results = []
    t = time.perf_counter()
    local = make_backend("local")
    rep = run_sweep(spec, f"{tmp}/local.csv", local, progress=False)
    results.append(("local (1 process)", time.perf_counter() - t, rep, 0.0))
    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    startup = time.perf_counter() - t0
    overhead = per_task_overhead(ray)
    backend = RayBackend(workers=2)
    t = time.perf_counter()
    rep_r = run_sweep(spec, f"{tmp}/ray.csv", backend, progress=False)
    results.append(("ray (2 workers)", time.perf_counter() - t, rep_r, overhead))
    ray.shutdown()
    same = rows(f"{tmp}/local.csv") == rows(f"{tmp}/ray.csv")
    base = results[0][1]
    total = spec.n_points * spec.trials
    print(f"sweep: positive d=64 m=64, {spec.n_points} points × {spec.trials} trials = {total:.3g} trials, "
          f"{spec.n_tasks} tasks of {spec.block_trials} trials; Ray start-up {startup:.1f} s (not in the table)")
    print("| backend | wall (s) | trials/s | speed-up | Ray tasks × blocks | compute per task (s) | "
          "overhead per task (ms) | overhead share |")
    print("|---|---|---|---|---|---|---|---|")
    for name, wall, rep, ovh in results:
        s = rep.stats
        per_task = s.compute_s / max(s.batches, 1)
        share = ovh / per_task if ovh else 0.0
        print(f"| {name} | {wall:.2f} | {total / wall:.3g} | {base / wall:.2f}× | {s.batches} × {s.batch_tasks} | "
              f"{per_task:.3f} | {ovh * 1e3:.2f} | {share:.2%} |")
    per_block = results[0][2].stats.compute_s / spec.n_tasks
    print(f"identical numbers on both backends: {same}; compute per block of {spec.block_trials} trials: "
          f"{per_block * 1e3:.1f} ms ({spec.block_trials / per_block:.3g} trials/s per core)")
    if not same:
        raise SystemExit("backends disagree")


if __name__ == "__main__":
    main()
