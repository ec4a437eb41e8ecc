"""False exit-1 rate of the estimator lab on correct plugins, measured over many seeds.

The lab's documented level: exit 1 ("bias detected" or "closed form disagrees") for a correct estimator with
probability ≤ α + α·CLOSED_FORM_ALPHA_FACTOR (Holm at α over the bias tests, Holm at α/100 over the closed-form
tests; α = 0.01). This runs correct plugins over ``--seeds`` seeds and prints the observed exit-1 rate with its
95 % Clopper–Pearson interval next to that level.

Settings: ``--settings fast`` (the default, to fit ~10 min on 2 cores): the lab's default grid (r = 0.5, 1, 1.5;
θ = 0, π/4, …, π), d = 8, 2000 trials, canonical pairs only; ``--settings lab`` is exactly what
``python -m rfviz check PLUGIN --seed S`` runs (4000 trials, the grid plus the random and unequal pairs). Both skip
the comparisons and the feature check, which do not decide exit 1. A closed-form rejection is re-tested on an
independent sample with 4× the trials (rfviz.lab.CONFIRM_TRIALS_FACTOR) in both.

    python bench/bench_lab_calibration.py --seeds 100
    python bench/bench_lab_calibration.py --seeds 60 --settings lab --only mixture
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]

from scipy.stats import beta  # noqa: E402

from rfviz.estimators import create  # noqa: E402
from rfviz.lab import (  # noqa: E402
    CLOSED_FORM_ALPHA_FACTOR,
    DEFAULT_ALPHA,
    DEFAULT_R,
    DEFAULT_THETA,
    check_estimator,
)

SETTINGS = {
    "fast": {"r": DEFAULT_R, "theta": DEFAULT_THETA, "d": 8, "trials": 2000, "compare": (),
             "check_feature_maps": False, "pairs": ("canonical",)},
    "lab": {"compare": (), "check_feature_maps": False},
}


def plugins() -> dict[str, object]:
    from calibration_plugins import InfiniteVarianceGerf, MixtureFavorTrig, MixtureNoTheory
    from tempered_positive import TemperedPositive

    return {
        "mixture 0.3·FAVOR+ + 0.7·trig (with 4th moment)": MixtureFavorTrig(m=8),
        "mixture, no 4th moment (sample diagnostics only)": MixtureNoTheory(m=8),
        "GERF, pair-dependent A (+∞ MSE on part of the grid)": InfiniteVarianceGerf(m=8),
        "tempered positive σ = 0.8 (heavy-tailed)": TemperedPositive(m=8, sigma=0.8),
        "built-in FAVOR+ (m = 8)": create("positive_antithetic", m=8),
    }


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial confidence interval for k successes in n trials."""
    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--settings", choices=tuple(SETTINGS), default="fast")
    ap.add_argument("--only", default="", help="run only the plugins whose label contains this text")
    args = ap.parse_args()
    settings = SETTINGS[args.settings]
    level = DEFAULT_ALPHA * (1 + CLOSED_FORM_ALPHA_FACTOR)
    print(f"documented level of a false exit 1: ≤ {level:.4f} (α = {DEFAULT_ALPHA:g}: bias Holm at α, closed form "
          f"Holm at α·{CLOSED_FORM_ALPHA_FACTOR:g}); settings {args.settings}: {settings}")
    for label, est in plugins().items():
        if args.only not in label:
            continue
        t0 = time.perf_counter()
        codes = [check_estimator(est, seed=seed, **settings).exit_code for seed in range(args.seeds)]
        k = sum(c == 1 for c in codes)
        lo, hi = clopper_pearson(k, len(codes))
        print(f"{label:<55} exit 1: {k:>3}/{len(codes)} = {k / len(codes):.3f}  95% CI [{lo:.3f}, {hi:.3f}]  "
              f"exit 3: {sum(c == 3 for c in codes)}  ({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
