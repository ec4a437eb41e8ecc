"""``python -m rfviz density``: the law of w_ij = ‖ω_i + ω_j‖ under a coupling (SimRF Lemmas 4.1, 4.2; Fig. 5),
and, with ``v=``, the RF-conformity ρ(v) and the MSE ratios against iid (Def. 3.1, Thm 4.3; Fig. 6)."""

from __future__ import annotations

import argparse
import math
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
from ..params import Param, ParameterError, validate_params
from ..registries import COUPLINGS_WITH_DENSITY, IID, SIMPLEX
from ..textio import parse_assignments, parse_vector
from ._output import emit

NAME = "density"
HELP = "density of w_ij = |ω_i + ω_j| under a coupling (SimRF Fig. 5), conformity and MSE ratios"

SPECS: dict[str, Param] = {
    "coupling": Param("coupling", SIMPLEX, "choice", "coupling of the pair", choices=COUPLINGS_WITH_DENSITY),
    "d": Param("d", 6, "int", "dimension", low=1, high=100_000),
    "m": Param("m", 0, "int", "features for the MSE ratios (0: m = d, one full block)", low=0, high=10_000_000),
}


def density_report(assignments: dict[str, str]) -> dict[str, Any]:
    """The JSON object of ``python -m rfviz density``: p(w), log10 p(w), P(w_ij ≤ w) at each w, E[w_ij²], the pair
    cosine, and (with ``v=``) log10 ρ(v) and MSE_coupling/MSE_iid for positive, antithetic and trig features
    (for trig the same numbers are read as z = |x − y|)."""
    known = (*SPECS, "w", "v")
    unknown = set(assignments) - set(known)
    if unknown:
        raise ParameterError(f"density has no parameter {sorted(unknown)[0]!r}; its parameters are: "
                             + ", ".join(known))
    values = validate_params(tuple(SPECS.values()), {k: v for k, v in assignments.items() if k in SPECS}, "density")
    coupling, d = values["coupling"], values["d"]
    check_coupling_dimension(coupling, d)
    if "w" in assignments:
        w = parse_vector("w", assignments["w"])
        if np.any(w < 0):
            raise ParameterError(f"w must be numbers in [0, inf), got {assignments['w']!r}")
    else:
        w = np.linspace(0.0, 2.0 * math.sqrt(2.0 * d) + 6.0, 121)
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
    if "v" in assignments:
        v = parse_vector("v", assignments["v"])
        if np.any(v < 0):
            raise ParameterError(f"v must be numbers in [0, inf), got {assignments['v']!r}")
        m = values["m"] or d
        report["v"] = v
        report["m"] = m
        report["coupled_pairs"] = pairs_within_blocks(m, d) if coupling != IID else 0
        report["log10_conformity"] = log_conformity(v, d, coupling) / LOG10
        report["mse_ratio_vs_iid"] = {
            features: mse_ratio_vs_iid(features, v * v, d, m, coupling)
            for features in ("positive", "positive_antithetic")}
        report["mse_ratio_vs_iid"]["trig"] = mse_ratio_vs_iid("trig", v * v, d, m, coupling)
    return report


def run(args: argparse.Namespace) -> int:
    emit(density_report(parse_assignments(args.params)), args.json)
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", nargs="*",
                   help=f"key=value: coupling={'|'.join(COUPLINGS_WITH_DENSITY)}, d=6, w=0.5,1,1.5 (default: a grid), "
                        "v=0.5,1 (conformity and MSE ratios), m (default d)")
    p.add_argument("--json", action="store_true", help="print JSON")
