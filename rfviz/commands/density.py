"""``rfviz density`` / ``rfviz.density``: the law of w_ij = ‖ω_i + ω_j‖ under a coupling ([SimRF] Lemmas 4.1–4.2)
and, with ``v``, the RF-conformity ρ(v) and the MSE ratios against iid (Def. 3.1, Thm 4.3), from typed values."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..maths.simrf import (
    cdf_wij,
    check_coupling_dimension,
    log_conformity,
    log_density_wij,
    mean_wij_sq,
    mse_ratio_vs_iid,
    pair_cosine,
    pairs_within_blocks,
)
from ..numerics import LOG10
from ..params import COUPLING_PARAM, DIM_PARAM, M_PARAM, Param, check, check_list
from ..registries import COUPLINGS_WITH_DENSITY, IID, SIMPLEX

DENSITY_COUPLING_PARAM = replace(COUPLING_PARAM, default=SIMPLEX, help="coupling of the pair",
                                 choices=COUPLINGS_WITH_DENSITY)
DENSITY_D_PARAM = replace(DIM_PARAM, default=6, help="dimension", high=100_000)
DENSITY_M_PARAM = replace(M_PARAM, default=None, help="features for the MSE ratios (default: m = d, one full block)",
                          label="")
"""m of the MSE ratios; None (the default) means m = d."""
W_PARAM = Param("w", None, "float", "where to evaluate the density of w_ij (default: a grid)", low=0.0)
V_PARAM = Param("v", None, "float", "‖x + y‖ values for the conformity and the MSE ratios", low=0.0)
DENSITY_PARAMS = (DENSITY_COUPLING_PARAM, DENSITY_D_PARAM, W_PARAM, V_PARAM, DENSITY_M_PARAM)
"""Every parameter of ``rfviz density`` (the CLI parses ``key=value`` text with them)."""


def density_report(coupling: Any = SIMPLEX, *, d: Any = None, w: Any = None, v: Any = None,
                   m: Any = None) -> dict[str, Any]:
    """The JSON object of ``rfviz density`` as typed values: p(w), log10 p(w), P(w_ij ≤ w) at each w, E[w_ij²],
    the pair cosine, and (with ``v``) log10 ρ(v) and MSE_coupling/MSE_iid for positive, antithetic and trig
    features (for trig the same numbers are read as z = |x − y|).

    Parameters
    ----------
    coupling : str
        A coupling with a closed-form density (``DENSITY_COUPLING_PARAM``).
    d : int, optional
        Dimension (default 6).
    w, v : list or array of numbers ≥ 0, optional
        Where to evaluate the density (default: a grid); the ‖x + y‖ values of the conformity and MSE ratios.
    m : int, optional
        Features for the MSE ratios (default d).

    Returns
    -------
    dict

    Examples
    --------
    >>> density_report("orthogonal", d=4, w=[1.0])["d"]
    4
    """
    coupling = check(coupling, DENSITY_COUPLING_PARAM)
    d = check(DENSITY_D_PARAM.default if d is None else d, DENSITY_D_PARAM)
    m = None if m is None else check(m, DENSITY_M_PARAM)
    w = np.linspace(0.0, 2.0 * math.sqrt(2.0 * d) + 6.0, 121) if w is None else check_list(w, W_PARAM)
    v = None if v is None else check_list(v, V_PARAM)
    check_coupling_dimension(coupling, d)
    log_p = log_density_wij(w, d, coupling)
    with np.errstate(under="ignore"):
        report: dict[str, Any] = {
            "coupling": coupling,
            "d": d,
            "pair_cosine": pair_cosine(coupling, d),
            "mean_wij_sq": mean_wij_sq(d, coupling),
            "w": w,
            "density": np.exp(log_p),
            "log10_density": log_p / LOG10,
            "cdf": cdf_wij(w, d, coupling),
        }
    if v is not None:
        m = m or d
        report["v"] = v
        report["m"] = m
        report["coupled_pairs"] = pairs_within_blocks(m, d) if coupling != IID else 0
        report["log10_conformity"] = log_conformity(v, d, coupling) / LOG10
        report["mse_ratio_vs_iid"] = {
            features: mse_ratio_vs_iid(features, v * v, d, m, coupling)
            for features in ("positive", "positive_antithetic")}
        report["mse_ratio_vs_iid"]["trig"] = mse_ratio_vs_iid("trig", v * v, d, m, coupling)
    return report
