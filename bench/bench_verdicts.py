"""False-disagreement rate of correct built-ins under rfviz.verdicts, measured on the explorer's default Monte-Carlo
grid (7 × 7 over r ≤ R_MAX default, θ ∈ [0, π], d and trials at the app's defaults) at fixed seeds.

Prints one row per estimator: points sampled, how many were exact at round-off, unreliable, tested, the grids
(seeds) with at least one disagreement (Holm at 1 % family-wise per grid: the family-wise error rate that the rule
promises ≤ 1 %), and the disagreeing points. Run: ``python bench/bench_verdicts.py [seeds] [names...]``; a name may
carry parameters after a colon, ``NAME:key=value,...`` (e.g. ``positive:coupling=simplex``: a coupled estimator).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from rfviz.compute import explorer as ex
from rfviz.params import D_PARAM, R_MAX_PARAM, TRIALS_PARAM

DEFAULT_NAMES = ("trig", "positive", "positive_antithetic", "hybrid_angular", "hybrid_gaussian", "trig_phase")


def parse_name(spec: str) -> tuple[str, dict[str, str]]:
    """``NAME`` or ``NAME:key=value,...`` → (name, params as text; the estimator's Params check them)."""
    name, _, rest = spec.partition(":")
    params = dict(item.split("=", 1) for item in rest.split(",") if item)
    return name, params


def grid_outcomes(spec: str, seed: int) -> dict[str, int]:
    """The verdict counts of one default grid (rfviz.compute.explorer.Sampled.outcomes)."""
    name, params = parse_name(spec)
    r, th = ex.make_axes(R_MAX_PARAM.default, 7, 7)
    s = ex.sampled_surface(name, params, "softmax", D_PARAM.default, r, th, TRIALS_PARAM.default, seed,
                           device="cpu")
    return s.outcomes()


def main(argv: list[str]) -> None:
    seeds = range(int(argv[0])) if argv else range(10)
    names = argv[1:] or DEFAULT_NAMES
    print(f"explorer default grid 7 x 7, d = {D_PARAM.default}, r_max = {R_MAX_PARAM.default}, "
          f"{TRIALS_PARAM.default} trials, seeds {seeds.start}..{seeds.stop - 1}")
    width = max(22, *(len(n) + 2 for n in names))
    print(f"{'estimator':<{width}}{'points':>7}{'exact':>7}{'unrel.':>7}{'tested':>7}{'grids w/ disagr.':>18}"
          f"{'disagr. pts':>12}{'s':>7}")
    all_grids = bad_grids = 0
    for name in names:
        t0 = time.perf_counter()
        tot = {"agrees": 0, "disagrees": 0, "unreliable": 0, "exact": 0, "untested": 0}
        grids_bad = 0
        for seed in seeds:
            c = grid_outcomes(name, seed)
            for k, v in c.items():
                tot[k] += v
            grids_bad += c["disagrees"] > 0
        all_grids += len(seeds)
        bad_grids += grids_bad
        points = sum(tot.values())
        tested = tot["agrees"] + tot["disagrees"]
        print(f"{name:<{width}}{points:>7}{tot['exact']:>7}{tot['unreliable']:>7}{tested:>7}"
              f"{f'{grids_bad} of {len(seeds)}':>18}{tot['disagrees']:>12}{time.perf_counter() - t0:>7.1f}")
    print(f"family-wise false-disagreement rate: {bad_grids} of {all_grids} grids = "
          f"{bad_grids / max(all_grids, 1):.1%} (the rule promises ≤ 1 % per grid; "
          f"95 % upper bound {upper95(bad_grids, all_grids):.1%})")


def upper95(k: int, n: int) -> float:
    """One-sided 95 % Clopper-Pearson upper bound on a rate from k of n."""
    from scipy.stats import beta

    return 1.0 if k >= n else float(beta.ppf(0.95, k + 1, n - k))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main(sys.argv[1:])
