"""Where a data set lives on the MSE map, and which estimator wins on it (the computing half for app_pages/data.py;
drawing in rfviz.figures.data).

A pair (x_i, y_j) of the data is placed on the explorer's (r, θ) plane by its angle θ = ∠(x, y) and its
geometric-mean norm r = √(|x||y|): the explorer's surfaces are drawn for equal norms |x| = |y| = r, and for
|x| ≠ |y| the pair is summarised by the r with the same product of norms (the softmax kernel e^{x·y} depends on
|x||y| cos θ only; the estimators' MSEs also depend on |x|² + |y|², which this summary does not keep).

The data-averaged MSE E_pairs[MSE] = (1/NM) Σ_ij MSE(x_i, y_j) uses each estimator's closed form at the actual
pairs (every coordinate, not the summary), so it is exact for the data and = E‖K̂ − K‖²_F / NM ([HRF] §3 MSEs
summed as in rfviz.gram_engine).
"""


from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..data import DataSet
from ..estimators import get_estimator
from ..gram_engine import gram_error, gram_study_cost, with_family_agreement
from ..numerics import LOG10
from ..params import ParameterError, require_cost
from .catalog import make_estimator
from .explorer import analytic_surface


def pair_geometry(ds: DataSet) -> tuple[np.ndarray, np.ndarray]:
    """(r, θ) of every (query, key) pair, flattened: r = √(|x||y|) (geometric-mean norm), θ = ∠(x, y) ∈ [0, π]."""
    nq = np.linalg.norm(ds.queries, axis=1)
    nk = np.linalg.norm(ds.keys, axis=1)
    nn = nq[:, None] * nk[None, :]
    dots = ds.queries @ ds.keys.T
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(nn > 0, dots / np.where(nn > 0, nn, 1.0), 1.0)
    return np.sqrt(nn).ravel(), np.arccos(np.clip(cos, -1.0, 1.0)).ravel()


def pair_density(r: np.ndarray, theta: np.ndarray, r_axis: np.ndarray, theta_axis: np.ndarray) -> np.ndarray:
    """Empirical density of the pairs on the grid (rows r, columns θ), normalised to a maximum of 1."""
    def edges(a: np.ndarray) -> np.ndarray:
        mid = 0.5 * (a[1:] + a[:-1])
        return np.concatenate([[a[0] - (mid[0] - a[0])], mid, [a[-1] + (a[-1] - mid[-1])]])

    hist, _, _ = np.histogram2d(r, theta, bins=[edges(r_axis), edges(theta_axis)])
    top = hist.max()
    return hist / top if top > 0 else hist


def r_range(ds: DataSet, pad: float = 0.05) -> tuple[float, float]:
    """[min, max] of the pairs' geometric-mean norms, padded by ``pad`` of the span (at least a small width)."""
    r, _ = pair_geometry(ds)
    lo, hi = float(np.min(r)), float(np.max(r))
    span = max(hi - lo, 0.05 * max(hi, 1e-3))
    return max(lo - pad * span, 1e-3), hi + pad * span


@dataclass(frozen=True)
class DataMap:
    """The explorer's closed-form log10 MSE over a data set's r-range (``values``: name → (len(r), len(θ))) with the
    density of its pairs on the same grid, and the figure's title."""

    r_axis: np.ndarray
    theta_axis: np.ndarray
    values: dict[str, np.ndarray]
    density: np.ndarray
    title: str


def data_map(ds: DataSet, names: Sequence[str], params: Mapping[str, Any], kernel: str = "softmax",
             n_r: int = 40, n_theta: int = 60) -> DataMap:
    """The explorer's closed-form log10 MSE (canonical embedding, equal norms, d = the data's d) over the data's
    r-range, one panel per estimator, and the pairs' (r, θ) density (draw with rfviz.figures.data.data_map_figure).

    Examples
    --------
    >>> dm = data_map(ds, ["trig"], {"m": 8})  # doctest: +SKIP
    >>> dm.values["trig"].shape == (40, 60)  # doctest: +SKIP
    True
    """
    if not names:
        raise ParameterError("estimators must name at least one estimator")
    lo, hi = r_range(ds)
    r_axis = np.linspace(lo, hi, n_r)
    theta_axis = np.linspace(0.0, math.pi, n_theta)
    values = {n: analytic_surface(n, _params_for(n, params), kernel, ds.d, r_axis, theta_axis).log10_mse
              for n in names}  # rows r, columns θ
    r, th = pair_geometry(ds)
    title = (f"{ds.name}: where its {ds.queries.shape[0]}×{ds.keys.shape[0]} pairs lie on the MSE map (d = {ds.d}; "
             "contours: pair density)")
    return DataMap(r_axis, theta_axis, values, pair_density(r, th, r_axis, theta_axis), title)


def _params_for(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of ``params`` that estimator ``name`` declares (m everywhere, the rest where they apply)."""
    spec = {p.name for p in get_estimator(name).spec}
    return {k: v for k, v in params.items() if k in spec}


def log_mean_pair_mse(ds: DataSet, name: str, params: Mapping[str, Any], kernel: str = "softmax") -> float:
    """log E_pairs[MSE] = log (1/NM) Σ_ij MSE(x_i, y_j), the closed form at every actual pair (log space)."""
    est = make_estimator(name, _params_for(name, params), kernel)
    if not est.closed_form_available():
        return math.nan
    log_mse = np.asarray(est.log_mse(ds.queries[:, None, :], ds.keys[None, :, :]), dtype=float)
    if np.any(np.isnan(log_mse)):
        raise FloatingPointError(f"{name}: NaN in the closed-form MSE on this data")
    return float(logsumexp(log_mse) - math.log(log_mse.size))


@dataclass(frozen=True)
class PairAverages:
    """E_pairs[MSE] per estimator (rows) and m (columns), log10; NaN where there is no closed form."""

    names: tuple[str, ...]
    m: np.ndarray
    log10_mse: np.ndarray


def pair_averages(ds: DataSet, names: Sequence[str], params: Mapping[str, Any], m_values: Sequence[int],
                  kernel: str = "softmax") -> PairAverages:
    """E_pairs[MSE] of every estimator at every m (the other ``params`` fixed)."""
    ms = np.asarray(sorted({int(m) for m in m_values}), dtype=int)
    table = np.array([[log_mean_pair_mse(ds, n, {**params, "m": int(m)}, kernel) / LOG10 for m in ms]
                      for n in names])
    return PairAverages(tuple(names), ms, table)


def verdict(ds: DataSet, avg: PairAverages, m: int, titles: Mapping[str, str] | None = None) -> str:
    """One line: "on <data> at m = M, <estimator> wins, with <x>× lower MSE than <runner-up>"; estimators named by
    ``titles`` (e.g. rfviz.compute.catalog.titles) where given."""
    if int(m) not in set(avg.m.tolist()):
        raise ParameterError(f"m must be one of {', '.join(map(str, avg.m))}, got {m}")
    col = avg.log10_mse[:, list(avg.m).index(int(m))]
    ok = [(v, (titles or {}).get(n, n)) for v, n in zip(col, avg.names, strict=True) if np.isfinite(v)]
    if not ok:
        return f"on {ds.name} at m = {m}, no estimator has a closed form"
    ok.sort()
    if len(ok) == 1:
        return f"on {ds.name} at m = {m}, {ok[0][1]} is the only estimator with a closed form"
    (v0, n0), (v1, n1) = ok[0], ok[1]
    return (f"on {ds.name} at m = {m}, {n0} wins, with {10.0 ** (v1 - v0):.3g}× lower MSE than {n1} "
            f"(E_pairs[MSE] = {10.0 ** v0:.3g} vs {10.0 ** v1:.3g})")


GRAM_CLOSED_FORM_COLUMNS = ("estimator", "m", "E‖K̂−K‖²_F (closed form)", "relative Frobenius")
"""The columns of ``gram_table`` known before any sampling."""
GRAM_COLUMNS_NOTE = ("MC: the sampled E‖K̂−K‖²_F (± SE over the repeats). reliable: where the estimator has "
                     "closed-form fourth moments, theory decides (they bound the spread of the summed squared error; "
                     "the note says how many repeats guarantee ±10 %), elsewhere the repeats alone (no heavy tail, "
                     "relative SE ≤ 10 %). agreement: exact (both at float64 round-off), unreliable (not tested), "
                     "disagrees (Holm's test at 1 % over the table's reliable rows rejects) or agrees "
                     "(rfviz.verdicts).")
"""What the Monte-Carlo columns of ``gram_table`` mean (shown under the table)."""


def gram_table(ds: DataSet, names: Sequence[str], params: Mapping[str, Any], kernel: str = "softmax",
               repeats: int = 0, seed: int = 0) -> list[dict[str, Any]]:
    """One row per estimator of its Gram error on the data (rfviz.gram_engine): closed-form E‖K̂ − K‖²_F, relative
    Frobenius error and, with ``repeats`` ≥ 2, the Monte-Carlo value, its standard error, ``reliable`` (from the
    repeats alone) and agreement with the closed form (Holm at 1 % over the table's reliable rows). The Monte
    Carlo is refused up front over the memory/time budget (``rfviz.gram_engine.gram_study_cost``)."""
    ests = [make_estimator(n, _params_for(n, params), kernel) for n in names]
    for est in ests:
        est.check_dimension(ds.d)
    if repeats:
        m = int(params.get("m", 1))
        require_cost(f"the Gram-error Monte Carlo ({repeats} repeats, m = {m}, {len(ds.queries)} × {len(ds.keys)} "
                     "pairs)", gram_study_cost(ests, ds.queries, ds.keys, repeats),
                     "use fewer repeats, points or features")
    results = with_family_agreement([gram_error(est, ds.queries, ds.keys, repeats, seed, name=n)
                                     for n, est in zip(names, ests, strict=True)])  # rfviz.verdicts, over the table
    rows = []
    for n, res in zip(names, results, strict=True):
        rows.append({"estimator": n, "m": res.params.get("m"),
                     "E‖K̂−K‖²_F (closed form)": res.frobenius_sq_closed_form,
                     "relative Frobenius": res.relative_frobenius, "MC": res.frobenius_sq_mc, "± SE": res.stderr,
                     "reliable": res.reliable, "agreement (Holm, 1 %)": res.agreement,
                     "attention L1 (MC)": res.attention_l1, "note": "; ".join(x for x in (res.warning, res.note) if x)})
    return rows
