"""Gallery entry of [DERF] (FAVOR#, dense-exponential random features): the per-pair relative variance of SDERF,
ADERF and SADERF against OPRF and positive features, as the two inputs' norms grow apart."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from ..estimators import create
from ..figures.common import lines
from .registry import Columns, GalleryFigure, gallery_figure

DERF_D, DERF_THETA = 16, math.pi / 3
DERF_Q = np.geomspace(1.0 / 16.0, 16.0, 161)
"""|y|/|x| with |x||y| = 1 fixed, so x·y = cos θ and the kernel e^{x·y} is the same at every q."""
DERF_ESTIMATORS = ("positive", "oprf", "saderf", "sderf", "aderf")


def derf_pairs(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x = q^{−1/2}e₁, y = q^{1/2}(cos θ e₁ + sin θ e₂): |x||y| = 1 and |y|/|x| = q."""
    q = np.asarray(q, dtype=float)
    x = np.stack([1.0 / np.sqrt(q), np.zeros_like(q)], -1)
    y = np.stack([np.sqrt(q) * math.cos(DERF_THETA), np.sqrt(q) * math.sin(DERF_THETA)], -1)
    return x, y


def log10_relative_variance(name: str, q: np.ndarray) -> np.ndarray:
    """log₁₀(Var/K²) of one feature (m = 1) of a registered estimator at the pairs of ``derf_pairs(q)``."""
    x, y = derf_pairs(q)
    est = create(name, m=1)
    return (est.log_mse(x, y, d=DERF_D) - 2.0 * np.sum(x * y, -1)) / math.log(10.0)


def build_derf_variance() -> tuple[go.Figure, Columns]:
    curves = {create(n, m=1).label(): log10_relative_variance(n, DERF_Q) for n in DERF_ESTIMATORS}
    fig = lines(DERF_Q, curves, xlabel="|y| / |x|  (|x||y| = 1)", ylabel="log₁₀ Var/K² of one feature",
                title=f"DERFs against OPRF and positive features, d = {DERF_D}, θ = π/3 (per-pair parameters)")
    fig.update_xaxes(type="log")
    cols: Columns = {"q": DERF_Q}
    cols.update({f"log10_relvar_{n}": log10_relative_variance(n, DERF_Q) for n in DERF_ESTIMATORS})
    return fig, cols


def _keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    out = {}
    for label, q in (("q0.25", 0.25), ("q1", 1.0), ("q4", 4.0)):
        for n in ("oprf", "sderf", "saderf", "aderf"):
            out[f"{n}_{label}"] = float(log10_relative_variance(n, np.array([q]))[0])
    return out


gallery_figure(GalleryFigure(
    name="derf-variance-vs-norm-ratio",
    title="FAVOR# DERFs: relative variance against the ratio of the inputs' norms",
    paper="FAVOR#: Sharp Attention Kernel Approximations via New Classes of Positive Random Features "
          "(Likhosherstov et al., arXiv 2302.00787)",
    caption="One feature's Var/K² (log₁₀) for the softmax kernel (the same for the Gaussian kernel) with each "
            "mechanism's per-pair optimal parameters, at |x||y| = 1 and θ = π/3 (so K is fixed) while |y|/|x| "
            "varies, d = 16. OPRF (GERF's best scalar A) beats positive features; SDERF puts all of A along x + y "
            "(one direction instead of d) and beats OPRF everywhere; SADERF balances the norms (OPRF on inputs of "
            "equal norm √(|x||y|)) and is flat in |y|/|x|; ADERF does both and is lowest. At |y| = |x| the "
            "asymmetric variants coincide with their symmetric counterparts.",
    errata="Not a reproduction of a printed figure: the paper's figures use data sets and batch parameters, and its "
           "numbers were not legible from the text available here. The per-pair parameters, the variance and the "
           "optima are derived in docs/derivations/dense-exponential; the catalog holds 40-digit mpmath evaluations "
           "of that derivation (not the paper's numbers).",
    build=build_derf_variance,
    explorer_page="mse_explorer",
    explorer_params={"est": "oprf,sderf,aderf,saderf", "d": "16"},
    key_numbers=_keys,
    catalog={"oprf_q0.25": "1.53674", "sderf_q0.25": "0.280033", "saderf_q0.25": "0.959133", "aderf_q0.25": "0.118731",
             "oprf_q1": "0.959133", "sderf_q1": "0.118731", "saderf_q1": "0.959133", "aderf_q1": "0.118731",
             "oprf_q4": "1.53674", "sderf_q4": "0.280033", "saderf_q4": "0.959133", "aderf_q4": "0.118731"},
    params={"d": DERF_D, "θ": "π/3", "|x||y|": 1, "|y|/|x|": "1/16 … 16 (log)", "m": 1, "kernel": "softmax"},
    source="40-digit mpmath of docs/derivations/dense-exponential (not the paper's printed numbers)",
))
