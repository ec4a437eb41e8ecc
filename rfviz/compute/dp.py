"""Dot-product page ([DP]), the computing half: closed-form MSEs of the polynomial sketches along q, p, d and D
(through the registered estimators or rfviz.maths.dp), Algorithm 3's Maclaurin allocation, and Monte-Carlo MSEs
of the compared sketches through rfviz.engine. Each public function returns the finished figure by handing its
numbers to the matching drawing function of rfviz.figures.dp.

Every figure states the quantity it shows (E|k̂−k|² or E(Re k̂ − k)²) and the S-convention
(embedding) in its title.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..engine import monte_carlo
from ..estimators import create
from ..figures import dp as draw
from ..maths import dp
from ..numerics import LOG10
from ..params import Cost, ParameterError, require_cost

__all__ = ["maclaurin_allocation", "real_complex_ratio_map", "tsrht_vs_rademacher", "variance_vs_d", "variance_vs_m",
           "variance_vs_p", "variance_vs_q"]
"""The figure builders of the dot-product page (every one runs with its defaults); the Monte-Carlo points of
``sketches_vs_m`` come from ``sketches_vs_m_mc``."""


def _mse(name: str, r: float, theta: float, d: int, embedding: str, **params) -> float:
    """Closed-form MSE of one estimator at (r, θ) in the named embedding (linear scale, inf on overflow)."""
    with np.errstate(over="ignore"):
        return float(10.0 ** create(name, **params).log10_mse_grid(r, theta, d, embedding))


def variance_vs_q(r: float = 1.0, theta: float = math.pi / 6, d: int = 8, p: int = 3, m: int = 16,
                  embedding: str = "flat", num: int = 101) -> go.Figure:
    """MSE against q for |z| = 1 sketches (E|k̂−k|² and Re part), the q-Gaussian sketch and TensorSRHT (m features).

    Symmetric about q = ½ (only (2q−1)² matters); q = ½ is best iff (x·y)² > S (Theorem 2, §3.3).
    """
    q = np.linspace(0.0, 1.0, num)
    curves = {
        "Rademacher-type, E|k̂−k|²": [_mse("poly_sketch", r, theta, d, embedding, p=p, q=v, m=m) for v in q],
        "Rademacher-type, E(Re k̂−k)²": [_mse("poly_sketch", r, theta, d, embedding, p=p, q=v, m=m,
                                              variance="real_part") for v in q],
        "q-Gaussian, E|k̂−k|²": [_mse("poly_sketch", r, theta, d, embedding, p=p, q=v, m=m, basis="gaussian")
                                for v in q],
        "TensorSRHT, E|k̂−k|²": [_mse("tensor_srht", r, theta, d, embedding, p=p, q=v, m=m) for v in q],
    }
    return draw.variance_vs_q_figure(q, {k: np.asarray(v) for k, v in curves.items()}, p, m,
                                     draw.where(r, theta, d, embedding))


def variance_vs_p(r: float = 1.0, theta: float = math.pi / 3, d: int = 8, m: int = 1024, p_max: int = 9,
                  embedding: str = "rotation_average", variance: str = "complex") -> go.Figure:
    """MSE against the degree p for real/complex Gaussian and Rademacher sketches, with the complex/real ratio
    below (Fig. 2 analogue; the paper averages over data pairs, here one (r, θ) in the chosen embedding)."""
    ps = np.arange(1, p_max + 1)
    series = {}
    for basis in ("gaussian", "rademacher"):
        real = np.array([_mse("poly_sketch", r, theta, d, embedding, p=int(k), q=1.0, m=m, basis=basis,
                              variance=variance) for k in ps])
        cplx = np.array([_mse("poly_sketch", r, theta, d, embedding, p=int(k), q=0.5, m=m, basis=basis,
                              variance=variance) for k in ps])
        series[basis] = (real, cplx)
    return draw.variance_vs_p_figure(ps, series, m, variance, draw.where(r, theta, d, embedding))


def variance_vs_d(r: float = 1.0, theta: float = math.pi / 4, p: int = 3, m: int = 16, embedding: str = "flat",
                  d_values: Sequence[int] = (2, 4, 8, 16, 32, 64), variance: str = "complex") -> go.Figure:
    """MSE against the input dimension d: |z| = 1 sketches and TensorSRHT depend on d through S (and c(D, d)),
    Gaussian sketches do not."""
    ds = np.asarray(d_values)
    curves = {}
    for q, label in ((1.0, "real"), (0.5, "complex")):
        curves[f"Rademacher {label}"] = [_mse("poly_sketch", r, theta, int(d), embedding, p=p, q=q, m=m,
                                              variance=variance) for d in ds]
        curves[f"TensorSRHT {label}"] = [_mse("tensor_srht", r, theta, int(d), embedding, p=p, q=q, m=m,
                                              variance=variance) for d in ds]
        curves[f"Gaussian {label}"] = [_mse("poly_sketch", r, theta, int(d), embedding, p=p, q=q, m=m,
                                            basis="gaussian", variance=variance) for d in ds]
    return draw.variance_vs_d_figure(ds, {k: np.asarray(v) for k, v in curves.items()}, p, m, variance,
                                     f"r = {r:g}, θ = {theta:.3g}, embedding = {embedding}")


def variance_vs_m(r: float = 1.0, theta: float = math.pi / 4, d: int = 4, p: int = 2, m_max: int | None = None,
                  embedding: str = "flat", q_values: Sequence[float] = (1.0, 0.5)) -> go.Figure:
    """TensorSRHT's sawtooth in the number of features D ([DP] Theorem 10) against the unstructured 1/D sketch,
    with the convex surrogate (Eq. 72) dotted (Fig. 12 analogue)."""
    d_pad = dp.padded_dim(d)
    m_axis = np.arange(1, (m_max or 4 * d_pad) + 1)
    st = dp.grid_stats(r, theta, d, embedding)
    curves, dash = {}, {}
    for q in q_values:
        tag = "real" if q == 1.0 else f"q = {q:g}"
        scale = np.exp(p * st.log_nn)[..., None]
        ts = dp.var_tsrht_normalised(_expand(st), p, q, m_axis) * scale
        sur = dp.surrogate_tsrht_normalised(_expand(st), p, q, m_axis) * scale
        rad = dp.var_poly_normalised(_expand(st), p, q, 1.0, m_axis) * scale
        curves[f"TensorSRHT {tag}"] = _average(ts, embedding)
        curves[f"surrogate {tag}"] = _average(sur, embedding)
        curves[f"Rademacher {tag}"] = _average(rad, embedding)
        dash[f"surrogate {tag}"] = "dot"
        dash[f"Rademacher {tag}"] = "dash"
    return draw.variance_vs_m_figure(m_axis, curves, dash, p, d_pad, draw.where(r, theta, d, embedding))


def _expand(st: dp.DotStats) -> dp.DotStats:
    """Add a trailing axis so that closed forms broadcast against a vector of D."""
    f = {k: np.asarray(getattr(st, k))[..., None] for k in ("log_nn", "tau", "w", "s", "sign_t", "sum_sq")}
    return dp.DotStats(**f, d=st.d, delta_value=np.asarray(st.delta)[..., None],
                       rest_value=np.asarray(st.rest)[..., None])


def _average(values: np.ndarray, embedding: str) -> np.ndarray:
    """Mean over the orientations of an averaging embedding (axis −2 after _expand), else the values."""
    return values.mean(axis=-2) if embedding in dp.AVERAGED_EMBEDDINGS else values


def real_complex_ratio_map(p: int = 3, m: int = 16, r: float = 1.0, d_values: Sequence[int] = (2, 4, 8, 16, 32, 64),
                           num_theta: int = 91, basis: str = "rademacher", variance: str = "complex") -> go.Figure:
    """log₂ of MSE(complex, q = ½) / MSE(real, q = 1) over (θ, d) in the flat embedding, with the crossover
    cos²θ* = 1/d (complex wins iff (x·y)² > S, §4)."""
    theta = np.linspace(0.0, math.pi, num_theta)
    ds = np.asarray(d_values)
    ratio = np.empty((len(ds), len(theta)))
    for i, d in enumerate(ds):
        c = create("poly_sketch", p=p, q=0.5, m=m, basis=basis, variance=variance).log10_mse_grid(r, theta, int(d),
                                                                                                   "flat")
        re = create("poly_sketch", p=p, q=1.0, m=m, basis=basis, variance=variance).log10_mse_grid(r, theta, int(d),
                                                                                                    "flat")
        with np.errstate(invalid="ignore"):
            ratio[i] = (c - re) * LOG10 / math.log(2.0)
    return draw.real_complex_ratio_figure(theta, ds, ratio, p, m, r, basis, variance)


def tsrht_vs_rademacher(r: float = 1.0, theta: float = math.pi / 4, d: int = 8, q: float = 0.5,
                        p_values: Sequence[int] = (1, 2, 3, 4), m_max: int | None = None,
                        embedding: str = "flat") -> go.Figure:
    """Ratio TensorSRHT / unstructured |z| = 1 sketch (same q, same D) against D: below 1 for odd p
    (Corollaries 7/11); even p can lose, e.g. for x ⟂ y."""
    d_pad = dp.padded_dim(d)
    m_axis = np.arange(1, (m_max or 4 * d_pad) + 1)
    st = _expand(dp.grid_stats(r, theta, d, embedding))
    curves = {}
    for p in p_values:
        scale = np.exp(p * st.log_nn)
        ts = _average(dp.var_tsrht_normalised(st, p, q, m_axis) * scale, embedding)
        rad = _average(dp.var_poly_normalised(st, p, q, 1.0, m_axis) * scale, embedding)
        with np.errstate(divide="ignore", invalid="ignore"):
            curves[f"p = {p}"] = ts / rad
    return draw.tsrht_vs_rademacher_figure(m_axis, curves, q, draw.where(r, theta, d, embedding))


MACLAURIN_SKETCHES = (("poly", "rademacher", 1.0), ("poly", "rademacher", 0.5), ("tensor_srht", "rademacher", 1.0),
                      ("tensor_srht", "rademacher", 0.5))
"""The sketches whose Maclaurin allocations are compared: (sketch, basis, q)."""


def maclaurin_allocation_cost(m: int, p_max: int = 10, n_sketches: int = len(MACLAURIN_SKETCHES)) -> Cost:
    """Cost of ``maclaurin_allocation``: one Algorithm 3 (``rfviz.maths.dp.optimize_maclaurin_cost``) per sketch;
    the tables of one sketch are freed before the next.

    Parameters
    ----------
    m : int
        Total number of features allocated.
    p_max : int
        Largest degree scanned.
    n_sketches : int
        Number of sketches optimised.

    Returns
    -------
    Cost
        Peak memory (bytes) and time (seconds, one core).

    Examples
    --------
    >>> maclaurin_allocation_cost(10_000_000).seconds > 1000
    True
    """
    one = dp.optimize_maclaurin_cost(m, p_max)
    return Cost(one.nbytes, n_sketches * one.seconds)


def maclaurin_allocation(kernel: str = "exponential", m: int = 32, p_max: int = 10, d: int = 8, r: float = 1.0,
                         variance: str = "complex",
                         sketches: Sequence[tuple[str, str, float]] = MACLAURIN_SKETCHES,
                         ) -> go.Figure:
    """Algorithm 3's allocation m_n over degrees (bars) for several sketches, optimised on the 64 fixed pairs of
    uniform vectors of norm r in R^d (Fig. 18/19 analogue; Gaussian kernel with the Eq. 55 weights). Refused up
    front (ParameterError) over the memory/time budget (``maclaurin_allocation_cost``)."""
    require_cost(f"the Maclaurin allocation at m = {m}", maclaurin_allocation_cost(m, p_max, len(sketches)),
                 "lower m")
    x, y = dp.reference_unit_vectors(d)
    st = dp.DotStats.from_pairs(r * x, r * y)
    series = {}
    top = 1
    names = {"poly": "polynomial sketch", "tensor_srht": "TensorSRHT"}
    for sketch, basis, q in sketches:
        plan = dp.optimize_maclaurin(st, kernel=kernel, total=m, p_min=1, p_max=p_max, sketch=sketch, q=q,
                                     mu4=dp.fourth_moment(basis, q), variance=variance)
        label = f"{names.get(sketch, sketch)}, {basis}, q = {q:g}: p* = {plan.p}, g = {plan.objective:.3g}"
        series[label] = list(plan.alloc)
        top = max(top, plan.p)
    series = {k: v + [0] * (top - len(v)) for k, v in series.items()}
    return draw.maclaurin_allocation_figure(series, top, kernel, m, r, d)


# ----------------------------------------------------------------------------- sketches vs m, with TensorSketch
SKETCH_SET = {  # label → (estimator, params): the compared sketches of (x·y)^p
    "Rademacher real": ("poly_sketch", {"q": 1.0}),
    "Rademacher complex": ("poly_sketch", {"q": 0.5}),
    "TensorSRHT real": ("tensor_srht", {"q": 1.0}),
    "TensorSRHT complex": ("tensor_srht", {"q": 0.5}),
    "TensorSketch": ("tensor_sketch", {}),
}


def sketches_vs_m(r: float = 1.0, theta: float = math.pi / 4, d: int = 8, p: int = 3, m_max: int = 64,
                  embedding: str = "flat", points: dict | None = None) -> go.Figure:
    """Closed-form E|k̂ − (x·y)^p|² against m for Rademacher (real/complex), TensorSRHT (real/complex, Thm 10) and
    TensorSketch (exact variance, rfviz.maths.dp), with optional sampled ``points`` (``sketches_vs_m_mc``)."""
    m_axis = np.unique(np.round(np.geomspace(1, m_max, 24)).astype(int))
    curves = {label: np.array([_mse(name, r, theta, d, embedding, p=p, m=int(m), **kw) for m in m_axis])
              for label, (name, kw) in SKETCH_SET.items()}
    return draw.sketches_vs_m_figure(m_axis, curves, p, draw.where(r, theta, d, embedding), points)


def sketches_vs_m_mc(r: float = 1.0, theta: float = math.pi / 4, d: int = 8, p: int = 3,
                     m_values: Sequence[int] = (4, 16, 64), embedding: str = "flat", trials: int = 2000,
                     seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Monte-Carlo MSE (engine) of every compared sketch at ``m_values``: label → (m, MSE, standard error), for
    ``lines(points=...)`` (±2 SE bars). Embeddings averaged over rotations are refused (one pair per point)."""
    if embedding in dp.AVERAGED_EMBEDDINGS:
        raise ParameterError(f"embedding must be one of canonical, flat for Monte Carlo, got {embedding!r}")
    out = {}
    for label, (name, kw) in SKETCH_SET.items():
        ms, mse, se = [], [], []
        for m in m_values:
            est = create(name, p=p, m=int(m), **kw)
            x, y = est.grid_pairs(r, theta, d, embedding)
            res = monte_carlo(est, np.atleast_2d(x), np.atleast_2d(y), trials=trials, seed=seed, device="cpu")
            ms.append(int(m))
            mse.append(float(res.mse.ravel()[0]))
            se.append(float(res.mse_stderr.ravel()[0]))
        out[label] = (np.array(ms), np.array(mse), np.array(se))
    return out
