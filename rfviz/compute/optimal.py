"""Optimal importance sampling ([OS]), the computing half: the Monte-Carlo variance per sample of positive and trig
features under Ψ* and under Ω along r or σ, drawn as points by rfviz.figures.optimal.add_mc_points."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..maths.optimal import MECHANISMS, InputLaw, OptimalSampling


def variance_sweep_mc(kind: str, d: int, axis: str, values: Sequence[float], kernel: str = "softmax",
                      mechanisms: Sequence[str] = MECHANISMS, n: int = 4000, seed: int = 0, relative: bool = False,
                      **fixed: float) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Monte-Carlo variance per sample (x1, x2, ω drawn jointly; OptimalSampling.monte_carlo, reference §5) at
    ``values`` of ``axis``, under Ψ* and under Ω: label → (x, log10 V, log10 of V − 2 SE, log10 of V + 2 SE), in the
    units of ``variance_sweep_figure`` (divided by E K² when ``relative``). A lower end ≤ 0 is NaN."""
    rng = np.random.default_rng(seed)
    out = {}
    for mech in mechanisms:
        for optimal, label in ((True, f"V* ({mech}, Ψ*)"), (False, f"{mech}, plain Ψ = Ω")):
            xs, mid, lo, hi = [], [], [], []
            for v in values:
                prob = OptimalSampling(mech, InputLaw(kind=kind, d=d, **{**fixed, axis: float(v)}), kernel)
                mc = prob.monte_carlo(int(n), rng, optimal)
                base = prob.log_expected_k2() / np.log(10) if relative else 0.0
                var, se = mc["variance"], mc["variance_se"]
                with np.errstate(divide="ignore", invalid="ignore"):
                    xs.append(float(v))
                    mid.append(np.log10(var) - base if var > 0 else np.nan)
                    lo.append(np.log10(var - 2 * se) - base if var - 2 * se > 0 else np.nan)
                    hi.append(np.log10(var + 2 * se) - base)
            out[label] = (np.array(xs), np.array(mid), np.array(lo), np.array(hi))
    return out
