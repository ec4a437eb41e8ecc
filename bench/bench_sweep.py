"""Benchmark: sweep throughput and CPU use, local vs Ray with 1 and 2 workers, for cheap points
(20 000 points × 100 trials: driver-bound) and expensive points (64 points × 10⁵ trials: compute-bound).

Usage: python bench/bench_sweep.py [--scale 1.0] [--cases cheap,expensive] [--backends local,ray1,ray2]
Prints a Markdown table: wall time, trials/s, points/s, the CPU use of every process of the run (the driver and its
private Ray: Σ CPU seconds / (wall × cores)), the workers' busy share (Σ task compute / (wall × slots)), Ray task
sizes, and the 1-minute load average before/after each run (the machine may be shared: read the numbers with it).
Checks that every backend wrote the same rows. ``--scale 0.1`` divides the point counts by 10 (a quick look).
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import sys
import tempfile
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from rfviz import get_estimator
from rfviz.sweeps import SweepSpec, make_backend, parse_grid, run_sweep

CLK = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds (user + system) of process ``root`` (default: this one), its reaped children and every live
    descendant (a private Ray's raylet, GCS and workers), read from /proc."""
    root = root or os.getpid()
    parent: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = pathlib.Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        parent[pid] = int(fields[1])
        times[pid] = (int(fields[11]) + int(fields[12])) / CLK
        if pid == root:
            times[pid] += (int(fields[13]) + int(fields[14])) / CLK  # reaped children
    total = 0.0
    for pid in times:
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            total += times[pid]
    return total


def spec_for(case: str, scale: float) -> SweepSpec:
    est = get_estimator("positive")
    if case == "cheap":  # 20 000 points × 100 trials (one task per point, ~2 ms each)
        n_theta = max(2, round(100 * scale))
        grid = parse_grid(["r=0.2:1:200", f"theta=0:3:{n_theta}"], est, {})
        return SweepSpec("positive", {"d": "64", "m": "64"}, grid, 100, seed=1, device="cpu")
    n_theta = max(2, round(8 * scale))  # 64 points × 10⁵ trials (24 tasks of 4096+ trials per point)
    grid = parse_grid(["r=0.2:1:8", f"theta=0:3:{n_theta}"], est, {})
    return SweepSpec("positive", {"d": "64", "m": "64"}, grid, 100_000, seed=1, device="cpu")


def rows(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return [{k: v for k, v in r.items() if k not in ("backend", "seconds")} for r in csv.DictReader(f)]


def run_one(spec: SweepSpec, backend_name: str, out: str) -> dict:
    load0 = os.getloadavg()[0]
    t = time.perf_counter()
    if backend_name == "local":
        backend = make_backend("local")
    else:
        backend = make_backend("ray", workers=int(backend_name[3:]))
    startup = time.perf_counter() - t
    cpu0 = tree_cpu_seconds()
    t = time.perf_counter()
    try:
        report = run_sweep(spec, out, backend, progress=False)
    finally:
        wall = time.perf_counter() - t
        cpu = tree_cpu_seconds() - cpu0
        backend.close()
    s = report.stats
    return {"backend": backend_name, "wall": wall, "startup": startup, "cpu": cpu, "load": (load0, os.getloadavg()[0]),
            "slots": s.slots, "batches": s.batches, "batch_max": s.batch_tasks, "util": s.utilisation,
            "trials": report.trials_this_run, "points": report.points_this_run,
            "median_task_ms": 1e3 * s.extra.get("median_task_s", float("nan"))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the point counts (0.1: a quick look)")
    ap.add_argument("--cases", default="cheap,expensive")
    ap.add_argument("--backends", default="local,ray1,ray2")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cores = os.cpu_count() or 1
    tmp = tempfile.mkdtemp(prefix="bench-sweep-")
    print(f"machine: {cores} cores; load average at start {os.getloadavg()}; torch {torch.__version__}, 1 thread per "
          f"process; positive d=64 m=64, float64 CPU")
    print("| case | backend | wall (s) | Ray start (s) | trials/s | points/s | CPU use (all processes) | "
          "workers busy | Ray tasks (largest, median task ms) | load 1-min before→after |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    same = True
    for case in args.cases.split(","):
        spec = spec_for(case, args.scale)
        first = None
        for name in args.backends.split(","):
            out = f"{tmp}/{case}-{name}.csv"
            r = run_one(spec, name, out)
            first = first or out
            same &= rows(out) == rows(first)
            cpu_share = r["cpu"] / (r["wall"] * cores)
            start = f"{r['startup']:.1f}" if name != "local" else "–"
            tasks = f"{r['batches']} (≤ {r['batch_max']}, {r['median_task_ms']:.1f})" if name != "local" else "–"
            print(f"| {case}: {spec.n_points} × {spec.trials} | {name} | {r['wall']:.1f} | {start} | "
                  f"{r['trials'] / r['wall']:.3g} | {r['points'] / r['wall']:.3g} | {cpu_share:.0%} of {cores} cores "
                  f"| {r['util']:.0%} of {r['slots']} | {tasks} | {r['load'][0]:.1f}→{r['load'][1]:.1f} |", flush=True)
    print(f"identical rows on every backend: {same}")
    if not same:
        raise SystemExit("backends disagree")


if __name__ == "__main__":
    main()
