"""The lab's rotation test: do the estimates depend on the direction of x?

The (r, θ) grid lies in the e₁–e₂ plane, aligned with the coordinate axes, so a bias that lives only along some
directions shows there by luck. For an estimator that is not isotropic (the engine gives it full R^d pairs: a plain
feature map, a coordinate-dependent plugin), the whole grid is re-run under ``rotations`` Haar-random rotations
Q_k of R^d (x → Q_k x, y → Q_k y: the same |x|, |y| and θ, so the same kernel value), each an independent
Monte-Carlo run with its own child seed (``spawn_seed(seed, ROTATIONS_KEY, k)``). Per grid point the canonical and
rotated sampled biases b_k = mean(K̂/|K|) − K/|K| are independent with standard errors s_k; under rotation
invariance of E[K̂] they are equal, and Q = Σ_k (b_k − b̄)²/s_k² (b̄ the inverse-variance weighted mean) is
χ² with ``rotations`` degrees of freedom. Points heavy-tailed in any orientation (the bias test's kurtosis gate)
or exact in all are left out; Holm over the tested points at ``ROTATION_ALPHA`` (its own family). A rejection means
E[K̂] differs between directions with the same kernel value, so the estimator is biased in at least one: the report
says "the estimates depend on the direction of x". Only the mean is tested (an unbiased estimator whose variance
depends on direction, e.g. a structured coupling, passes).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import chi2

from ..engine import MCResult, spawn_seed
from ..estimators import Estimator  # the package: REGISTRY needs the catalog loaded
from ..verdicts.rules import BIAS_KURTOSIS_FRACTION, ROTATION_ALPHA
from .options import ROTATIONS_KEY, LabOptions, _Grid, _run_mc
from .stats import exact_points, holm_over, kurtosis


def haar_rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random orthogonal d × d matrix (QR of a Gaussian matrix with the signs of R's diagonal fixed).

    Parameters
    ----------
    d : int
        The dimension.
    rng : numpy.random.Generator
        The randomness.

    Returns
    -------
    numpy.ndarray
        Q, shape (d, d).

    Examples
    --------
    >>> q = haar_rotation(4, np.random.default_rng(0))
    >>> bool(np.allclose(q @ q.T, np.eye(4)))
    True
    """
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.where(np.diag(r) < 0, -1.0, 1.0)


def _bias_and_se(res: MCResult) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per pair: the sampled bias of K̂/|K|, its standard error, whether it is light-tailed enough for the mean's
    CLT (the bias test's gate) and whether it is exact (every trial equals K up to round-off)."""
    bias = np.real(np.asarray(res.mean_ratio)) - np.asarray(res.target, float)
    se = np.asarray(res.ratio_sd, float) / math.sqrt(res.trials)
    with np.errstate(invalid="ignore"):
        light = kurtosis(res) <= res.trials * BIAS_KURTOSIS_FRACTION
    return bias.ravel(), se.ravel(), light.ravel(), exact_points(res).ravel()


def rotation_test(runs: list[MCResult]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Q, p, tested) per pair over independent runs of the same pairs in different orientations (see the module
    docstring): χ² with len(runs) − 1 degrees of freedom. A point exact in every run has Q = 0, p = 1 (its
    round-off is no evidence); one exact in some runs only, or heavy-tailed in any, is not tested.

    Parameters
    ----------
    runs : list of MCResult
        Independent runs of the same pairs (the canonical first), each in its own orientation.

    Returns
    -------
    tuple of numpy.ndarray
        Q, p and tested, one entry per pair.

    Examples
    --------
    >>> rotation_test(runs)  # doctest: +SKIP
    (array([0.4, 12.9]), array([0.82, 0.0016]), array([ True,  True]))
    """
    parts = [_bias_and_se(res) for res in runs]
    b, s, light, exact = (np.stack([p[i] for p in parts]) for i in range(4))
    all_exact = exact.all(axis=0)
    random = ~exact.any(axis=0) & (s > 0).all(axis=0) & light.all(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(s > 0, 1.0 / s**2, 0.0)
        centre = np.sum(w * b, 0) / np.sum(w, 0)
        q = np.where(random, np.sum(w * (b - centre) ** 2, 0), 0.0)
    p = np.where(random, chi2.sf(q, len(runs) - 1), 1.0)
    return q, p, (random & np.isfinite(q)) | all_exact


def rotation_step(est: Estimator, grid: _Grid, res: MCResult, opts: LabOptions) -> dict[str, Any]:
    """The rotation test of the module docstring on the grid (the canonical run ``res`` and ``opts.rotations``
    rotated runs); what the report keeps under ``rotation``.

    Parameters
    ----------
    est : the candidate.
    grid : the lab's grid (full R^d pairs: only non-isotropic estimators are tested).
    res : the canonical grid's Monte Carlo.
    opts : the lab's settings (``rotations``, ``seed``, ``trials``).

    Returns
    -------
    dict
        ``ran`` (bool) and, when it ran: rotations, alpha, per grid point ``q``, ``p``, ``tested``, ``rejected``
        (flattened, r-major), the counts and ``direction_dependent``; else ``reason``.

    Examples
    --------
    >>> rotation_step(est, grid, res, opts)["direction_dependent"]  # doctest: +SKIP
    False
    """
    if est.isotropic:
        return {"ran": False, "reason": "the estimator is isotropic (K̂'s law depends on |x|, |y| and x·y only), "
                                        "so the engine samples it in span(x, y): no direction to test"}
    if opts.rotations < 1:
        return {"ran": False, "reason": "rotations = 0"}
    d = grid.x.shape[-1]
    rng = np.random.default_rng(spawn_seed(opts.seed, ROTATIONS_KEY))
    runs = [res]
    for k in range(1, opts.rotations + 1):
        q = haar_rotation(d, rng)
        runs.append(_run_mc(est, grid.x @ q.T, grid.y @ q.T, opts.d, opts.trials,
                            spawn_seed(opts.seed, ROTATIONS_KEY, k), opts.device, None))
    stat, p, tested = rotation_test(runs)
    rejected = holm_over(p, ROTATION_ALPHA, tested)
    return {"ran": True, "rotations": opts.rotations, "alpha": ROTATION_ALPHA, "trials": opts.trials,
            "q": stat, "p": p, "tested": tested, "rejected": rejected, "points": int(p.size),
            "tested_count": int(tested.sum()), "rejected_count": int(rejected.sum()),
            "direction_dependent": bool(rejected.any()),
            "method": f"per grid point: chi-square test (df = {opts.rotations}) of equal sampled bias in the "
                      f"canonical orientation and {opts.rotations} Haar-random rotations (independent runs), Holm "
                      f"over the tested points at {ROTATION_ALPHA:g}"}
