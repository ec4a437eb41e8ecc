"""``rfviz.density`` (and ``rfviz density``): the law of w_ij = ‖ω_i + ω_j‖ under a coupling ([SimRF] Lemmas 4.1–4.2)
and, with ``v``, the RF-conformity ρ(v) and the MSE ratios against iid (Def. 3.1, Thm 4.3), from typed values."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
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
from .results import Result
from .validation import ListOf, api_function

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


# ------------------------------------------------------------------------------------------------ the API
@dataclasses.dataclass(frozen=True)
class DensityResult(Result):
    """Law of w_ij = ‖ω_i + ω_j‖ under a coupling ([SimRF] Lemmas 4.1–4.2), and with ``v`` the RF-conformity and
    the MSE ratios against iid (the fields from ``v`` on are absent without ``v``).

    Parameters
    ----------
    coupling : str
        The coupling.
    d : int
        Dimension.
    pair_cosine, mean_wij_sq : float
        cos of the angle between ω_i and ω_j in a block (None for iid), and E[w_ij²].
    w, density, log10_density, cdf : numpy.ndarray
        Where the law is evaluated, p(w), log10 p(w) and P(w_ij ≤ w) (the JSON writes non-finite values as null).
    v : numpy.ndarray or None
        ‖x + y‖ values.
    m : int or None
        Features of the MSE ratios.
    coupled_pairs : int or None
        Pairs of features within one block.
    log10_conformity : numpy.ndarray or None
        log10 ρ(v).
    mse_ratio_vs_iid : dict of numpy.ndarray or None
        MSE_coupling / MSE_iid per feature map.

    Examples
    --------
    >>> import rfviz
    >>> rfviz.density("orthogonal", d=4, w=[1.0]).to_dict()["d"]
    4
    """

    coupling: str
    d: int
    pair_cosine: float | None
    mean_wij_sq: float
    w: np.ndarray
    density: np.ndarray
    log10_density: np.ndarray
    cdf: np.ndarray
    v: np.ndarray | None = None
    m: int | None = None
    coupled_pairs: int | None = None
    log10_conformity: np.ndarray | None = None
    mse_ratio_vs_iid: dict[str, np.ndarray] | None = None

    def figure(self) -> Any:
        """The density p(w_ij) as a Plotly figure.

        Returns
        -------
        plotly.graph_objects.Figure
            One curve, against w_ij.
        """
        from ..figures.common import lines

        return lines(np.asarray(self.w), {self.coupling: np.asarray(self.density, dtype=float)},
                     xlabel="w_ij = ‖ω_i + ω_j‖", ylabel="density", title=f"d = {self.d}")


@api_function({"coupling": DENSITY_COUPLING_PARAM, "d": DENSITY_D_PARAM, "w": ListOf(W_PARAM), "v": ListOf(V_PARAM),
               "m": DENSITY_M_PARAM})
def density(coupling: str = SIMPLEX, *, d: int | None = None, w: Sequence[float] | np.ndarray | None = None,
            v: Sequence[float] | np.ndarray | None = None, m: int | None = None) -> DensityResult:
    """The density of w_ij = ‖ω_i + ω_j‖ under a coupling, its conformity and MSE ratios (``rfviz density``).

    Parameters
    ----------
    coupling : str
        ``iid``, ``orthogonal`` or ``simplex``.
    d : int, optional
        Dimension (default 6).
    w : array_like, optional
        Where to evaluate the density (default: a grid).
    v : array_like, optional
        ‖x + y‖ values for the conformity ρ(v) and the MSE ratios against iid.
    m : int, optional
        Features for the MSE ratios (default d: one full block).

    Returns
    -------
    DensityResult
        ``density``, ``cdf``, ``log10_conformity``, ``mse_ratio_vs_iid``, ...; ``figure()`` draws the density.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.density("orthogonal", d=4, w=[1.0, 2.0], v=[1.0])
    >>> bool(res.mse_ratio_vs_iid["positive"][0] < 1)
    True
    """
    return DensityResult.from_mapping(density_report(coupling, d=d, w=w, v=v, m=m))
