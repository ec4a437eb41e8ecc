"""Ranking benchmark (issue 31): ``rfviz.rank_estimators`` on the bundled data sets, closed forms only (no Monte
Carlo). Not a test: prints a table of wall and CPU seconds (medians over ``--repeats`` runs, after one warm-up run
that pays the imports; each run loads the data and builds its estimators afresh, module-level caches may be warm).

Target (issue 31): a ranking over all applicable estimators on a bundled data set in < 5 s on this machine.

Usage: python bench/bench_ranking.py [--repeats 3] [--queries 64] [--keys 64] [--length 256]
"""

from __future__ import annotations

import argparse
import statistics
import time

DATASETS = ("iris", "wine", "digits", "breast_cancer")
KERNELS = ("softmax", "gaussian")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--queries", type=int, default=64)
    p.add_argument("--keys", type=int, default=64)
    p.add_argument("--length", type=int, default=256)
    args = p.parse_args()
    import rfviz

    rfviz.rank_estimators("iris", kernel="softmax", length=args.length, queries=8, keys=8)  # warm-up: imports
    print(f"{'data':<15}{'kernel':<10}{'d':>5}{'estimators':>11}{'wall s':>9}{'cpu s':>8}  top three (equal length)")
    for name in DATASETS:
        for kernel in KERNELS:
            walls, cpus = [], []
            for _ in range(args.repeats):
                w0, c0 = time.perf_counter(), time.process_time()
                res = rfviz.rank_estimators(name, kernel=kernel, length=args.length, queries=args.queries,
                                            keys=args.keys, scale=0.5)
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
            top = ", ".join(r["estimator"] for r in res.ranking[:3])
            print(f"{name:<15}{kernel:<10}{res.data['d']:>5}{len(res.ranking):>11}{statistics.median(walls):>9.2f}"
                  f"{statistics.median(cpus):>8.2f}  {top}")


if __name__ == "__main__":
    main()
