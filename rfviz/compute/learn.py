"""The Learn page's numbers that no other page computes: the relative error of trig features against m with its
Monte-Carlo twin, the coupling ratio at one v, dot-product sketch variances at a few q, and a heavy-tailed
Monte-Carlo run against its closed form. Lessons (rfviz.lessons) read their stated numbers from these columns;
rfviz.figures.learn draws them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..engine import monte_carlo
from ..estimators import create
from ..geometry import canonical_pair, embed_pair
from ..maths.simrf import mse_ratio_vs_iid
from ..numerics import LOG10
from ..registries import ORTHOGONAL, SIMPLEX

Columns = dict[str, np.ndarray]


def sampled_relative_error_vs_m(r: float, theta: float, d: int, ms: Sequence[int], trials: int,
                                seed: int) -> Columns:
    """log₁₀ √MSE/K of trig features against m: the closed form on a fine grid of m and Monte Carlo (rfviz.engine)
    at ``ms``, with ±1 standard error in the same units.

    Parameters
    ----------
    r, theta, d : float, float, int
        The canonical pair x = r·e1, y = r(cos θ·e1 + sin θ·e2) in ℝᵈ.
    ms : sequence of int
        Feature counts sampled.
    trials : int
        Monte-Carlo trials per m.
    seed : int
        Seed of the runs.

    Returns
    -------
    dict
        ``m``, ``log10_rel_closed_form`` (on a grid from 1 to 4·max(ms)), ``m_sampled``, ``log10_rel_sampled``,
        ``log10_rel_se``, ``reliable``.

    Examples
    --------
    >>> c = sampled_relative_error_vs_m(1.0, 1.0, 8, (4, 16), 2000, 0)
    >>> c["log10_rel_sampled"].shape
    (2,)
    """
    x, y = canonical_pair(r, theta, d)
    grid = np.unique(np.geomspace(1, 4 * max(ms), 64).round().astype(int))
    log10_k = r * r * np.cos(theta) / LOG10
    closed = np.array([create("trig", m=int(m)).log_mse(x, y) / LOG10 for m in grid]).ravel()
    sampled, se, reliable = [], [], []
    for m in ms:
        res = monte_carlo(create("trig", m=int(m)), x, y, d=d, trials=trials, seed=seed)
        sampled.append(0.5 * float(res.log10_mse[0]) - log10_k)
        se.append(0.5 * float(res.log10_mse_stderr[0]))
        reliable.append(float(bool(res.reliable[0])))
    return {"m": grid.astype(float), "log10_rel_closed_form": 0.5 * closed - log10_k,
            "m_sampled": np.asarray(ms, dtype=float), "log10_rel_sampled": np.asarray(sampled),
            "log10_rel_se": np.asarray(se), "reliable": np.asarray(reliable)}


def coupling_ratio_at(v: float, d: int, features: str = "positive") -> dict[str, float]:
    """MSE_coupling/MSE_iid at v = |x + y| for orthogonal and simplex blocks of m = d features (SimRF Thm 3.2).

    Parameters
    ----------
    v : float
        |x + y|.
    d : int
        The dimension (and the features per block).
    features : str, default "positive"
        ``positive`` or ``trig`` features.

    Returns
    -------
    dict of str to float
        The ratio by coupling (``orthogonal``, ``simplex``).

    Examples
    --------
    >>> r = coupling_ratio_at(0.1, 16)
    >>> r["simplex"] < r["orthogonal"] < 1
    True
    """
    return {c: float(mse_ratio_vs_iid(features, v * v, d, d, c)) for c in (ORTHOGONAL, SIMPLEX)}


def sketch_variance_at_q(r: float, theta: float, d: int, p: int, m: int, qs: Sequence[float],
                         embedding: str = "flat") -> dict[float, float]:
    """E|k̂ − k|² of the Rademacher-type polynomial sketch (DP Theorem 2) at each q, at the pair (r, θ) in ℝᵈ.

    Parameters
    ----------
    r : float
        The inputs' norm.
    theta : float
        The angle between them.
    d : int
        The dimension.
    p : int
        The polynomial degree.
    m : int
        Features.
    qs : sequence of float
        The realness q of the weights, each in [0, 1].
    embedding : str, default "flat"
        How the pair is placed in ℝᵈ (``rfviz.geometry.EMBEDDINGS``).

    Returns
    -------
    dict of float to float
        The variance at each q.

    Examples
    --------
    >>> v = sketch_variance_at_q(1.0, 0.79, 8, 3, 16, (0.25, 0.75))
    >>> abs(v[0.25] - v[0.75]) <= 1e-12 * v[0.25]
    True
    """
    x, y = embed_pair(r, theta, d, embedding)
    return {float(q): float(np.exp(create("poly_sketch", p=p, q=float(q), m=m).log_mse(x, y)).ravel()[0])
            for q in qs}


def heavy_tail_columns(rs: Sequence[float], m: int, trials: int, seed: int) -> Columns:
    """Positive features at x = y on S(r) in ℝ²: log₁₀ MSE in closed form (``*_curve`` on a fine grid of r, and at
    ``rs``) and sampled at ``rs`` (rfviz.engine), with the engine's reliability verdict per r (the fourth moment
    grows much faster than the MSE's square: heavy tails at large r).

    Parameters
    ----------
    rs : sequence of float
        The norms sampled.
    m : int
        Features.
    trials : int
        Monte-Carlo trials per norm.
    seed : int
        The random seed.

    Returns
    -------
    dict of str to numpy.ndarray
        The curve and the sampled points with their ``reliable`` flags (1 or 0).

    Examples
    --------
    >>> c = heavy_tail_columns((0.5, 3.0), 16, 2000, 0)
    >>> c["reliable"].tolist()
    [1.0, 0.0]
    """
    r = np.asarray(rs, dtype=float)
    x, y = canonical_pair(r, np.zeros_like(r), 2)
    est = create("positive", m=m)
    res = monte_carlo(est, x, y, d=2, trials=trials, seed=seed)
    curve = np.linspace(float(r.min()), float(r.max()), 101)
    return {"r_curve": curve, "log10_mse_curve": np.ravel(est.log_mse(*canonical_pair(curve, 0 * curve, 2))) / LOG10,
            "r": r, "log10_mse_closed_form": np.ravel(est.log_mse(x, y)) / LOG10,
            "log10_mse_sampled": np.asarray(res.log10_mse, dtype=float),
            "log10_se": np.asarray(res.log10_mse_stderr, dtype=float),
            "reliable": np.asarray(res.reliable).astype(float)}


def relative_error_vs_d(r: float, theta: float, m: int, ds: Sequence[int]) -> Columns:
    """log₁₀ √MSE/K of iid trig and positive features at the canonical pair in ℝᵈ for each d: with independent
    directions the MSE depends on the pair only through |x − y| (trig) or |x + y| and the norms (positive), never
    on d (HRF Lemma 2.2).

    Parameters
    ----------
    r : float
        The inputs' norm.
    theta : float
        The angle between them.
    m : int
        Features.
    ds : sequence of int
        The dimensions.

    Returns
    -------
    dict of str to numpy.ndarray
        ``d`` and the relative errors of each estimator.

    Examples
    --------
    >>> c = relative_error_vs_d(1.0, 1.0, 16, (2, 64))
    >>> bool(abs(c["log10_rel_trig"][0] - c["log10_rel_trig"][1]) < 1e-12)
    True
    """
    log10_k = r * r * np.cos(theta) / LOG10
    cols: Columns = {"d": np.asarray(ds, dtype=float)}
    for key, name in (("trig", "trig"), ("pos", "positive")):
        logs = [float(np.ravel(create(name, m=m).log_mse(*canonical_pair(r, theta, int(d))))[0]) for d in ds]
        cols[f"log10_rel_{key}"] = 0.5 * np.asarray(logs) / LOG10 - log10_k
    return cols
