"""Coupling page (Simplex Random Features, [SimRF]), the computing half: sampled pair sums wᵢⱼ = ‖ωᵢ + ωⱼ‖ for the
density histograms (SimRF Fig. 5), Monte-Carlo MSE ratios against iid through rfviz.engine (Fig. 6), and draws of
the norms |ωᵢ| for the SimRF+ iterations (Fig. 4). rfviz.figures.simrf draws the results."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..engine import monte_carlo, spawn_seed
from ..estimators import create
from ..maths.simrf import sample_pair_sums
from ..registries import COUPLINGS_WITH_DENSITY, IID, SAMPLED_COUPLINGS

HISTOGRAM_MAX_D = 256
"""Sampled histograms use full d×d blocks (O(d³) each): above this d they are not drawn."""


SAMPLED_V: tuple[float, ...] = (0.05, 0.2, 0.5, 0.8, 1.0, 1.3)
"""Values of v where the coupling page samples the MSE ratio: beyond v ≈ 1.3 positive features are heavy-tailed and
the sample MSE is biased low."""




def sampled_ratio_columns(d: int, m: int, features: str = "positive", v: Sequence[float] = SAMPLED_V,
                          trials: int = 1000, seed: int = 7,
                          progress: Callable[[float], None] | None = None) -> dict[str, tuple[np.ndarray, ...]]:
    """Monte-Carlo MSE of each coupling divided by the iid closed form (SimRF Thm 4.3 compares against iid) at
    |x + y| = v, with x = y = (v/2)·e₁ (trig: x = −y, so that z = |x − y| = v).

    Returns {coupling: (v, ratio, standard error of the ratio, reliable)} for every coupling but iid (simplex+ and
    the structured ones have no closed form: sampling is the only way to see them). ``progress`` receives the
    completed fraction in [0, 1].

    Parameters
    ----------
    d : int
        The dimension.
    m : int
        Features.
    features : str, default "positive"
        ``positive`` or ``trig`` features.
    v : sequence of float, default SAMPLED_V
        The values of |x + y| sampled.
    trials : int, default 1000
        Monte-Carlo trials per point.
    seed : int, default 7
        The random seed.
    progress : callable, optional
        Receives the completed fraction.

    Returns
    -------
    dict of str to tuple of numpy.ndarray
        (v, ratio, standard error, reliable) by coupling.

    Examples
    --------
    >>> cols = sampled_ratio_columns(4, 4, v=(0.5,), trials=200)
    >>> {"orthogonal", "simplex", "simplex_plus"} <= set(cols) and "iid" not in cols
    True
    """
    vs = np.asarray(v, dtype=float)
    x = np.zeros((vs.size, 2))
    x[:, 0] = vs / 2
    y = -x if features == "trig" else x.copy()
    iid = create(features, m=m, coupling=IID)
    out: dict[str, tuple[np.ndarray, ...]] = {}
    for i, coupling in enumerate(SAMPLED_COUPLINGS):
        est = create(features, m=m, coupling=coupling)
        step = None if progress is None else (lambda f, i=i: progress((i + f) / len(SAMPLED_COUPLINGS)))
        res = monte_carlo(est, x, y, d=d, trials=trials, seed=seed, progress=step)
        ref = np.exp(np.reshape(iid.log_mse(x, y, d), np.shape(res.rel_mse)) - 2 * res.log_scale)
        out[coupling] = (vs, np.ravel(res.rel_mse / ref), np.ravel(res.rel_mse_stderr / ref), np.ravel(res.reliable))
    return out


def draw_norms(d: int, seed: int) -> np.ndarray:
    """One draw of the d lengths |ω_i| ~ χ_d (the input of ``simplex_plus_iterations_figure``).

    Parameters
    ----------
    d : int
        The dimension (and the number of lengths).
    seed : int
        The random seed.

    Returns
    -------
    numpy.ndarray
        Shape (d,), positive.

    Examples
    --------
    >>> draw_norms(5, 0).shape
    (5,)
    """
    return np.sqrt(np.random.default_rng(seed).chisquare(d, size=d))


def pair_sum_samples(d: int, couplings: Sequence[str] = COUPLINGS_WITH_DENSITY, samples: int = 0,
                     seed: int = 0) -> dict[str, np.ndarray]:
    """``samples`` draws of ‖ω₁ + ω₂‖ per coupling from rfviz's own sampler (seed ``spawn_seed(seed, i)`` for the
    i-th coupling), for the histograms of ``rfviz.figures.simrf.density_figure``; empty when ``samples`` is 0 or d is
    outside [2, HISTOGRAM_MAX_D] (full d×d blocks cost O(d³) each).

    Parameters
    ----------
    d : int
        The dimension.
    couplings : sequence of str, default COUPLINGS_WITH_DENSITY
        The couplings drawn.
    samples : int, default 0
        Draws per coupling.
    seed : int, default 0
        The first coupling's seed.

    Returns
    -------
    dict of str to numpy.ndarray
        The draws by coupling.

    Examples
    --------
    >>> drawn = pair_sum_samples(6, ("iid",), samples=100)
    >>> drawn["iid"].shape
    (100,)
    """
    if not samples or d < 2 or d > HISTOGRAM_MAX_D:
        return {}
    return {coupling: sample_pair_sums(coupling, d, samples, spawn_seed(seed, i))
            for i, coupling in enumerate(couplings)}
