"""Shared by the sweep tests: a small spec and the deterministic columns of a sweep's CSV."""

from __future__ import annotations

import csv

from rfviz import get_estimator
from rfviz.sweeps import SweepSpec, parse_grid

NONDETERMINISTIC = ("backend", "seconds")  # who ran it and how long it took


def small_spec(**kw) -> SweepSpec:
    """4 points × 4 blocks of positive random features (light tails at small r: the closed form is checkable)."""
    est = get_estimator("positive")
    grid = parse_grid(["r=0.3:0.6:2", "m=4,8"], est, {"d": "8"})
    args = {"trials": 2048, "seed": 7, "block_trials": 512, **kw}
    return SweepSpec("positive", {"d": "8", "theta": "1.0"}, grid, device="cpu", **args)


def rows(path) -> list[dict[str, str]]:
    """The CSV's rows without the columns that differ between equal runs (``NONDETERMINISTIC``)."""
    with open(path, newline="") as f:
        return [{k: v for k, v in r.items() if k not in NONDETERMINISTIC} for r in csv.DictReader(f)]
