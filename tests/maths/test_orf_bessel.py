"""Fixed-norm orthogonal random features ([DK]): the exact mean (a Bessel kernel) and variance of their trig
estimator, against Monte Carlo of Haar frames (rfviz.sampling.random_frame) and mpmath.

Expected values: 100 000 sampled trials per setting (|z| < 4 from standard errors, fixed seeds) and 40-digit mpmath
₀F₁; the Gaussian kernel e^{−|Δ|²/2} only to show that these features are biased for it.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch

from rfviz.maths import orf_bessel as B
from rfviz.sampling import random_frame

Z_TOL = 4.0


def _sample(d: int, m: int, delta: float, trials: int, seed: int) -> np.ndarray:
    """K̂ = (1/m) Σ cos(√d u_i·Δ) with Δ = |Δ|e₁: the first coordinates of the rows of ⌈m/d⌉ independent Haar
    matrices per trial."""
    blocks = -(-m // d)
    frame = random_frame(trials * blocks, d, 1, torch.Generator().manual_seed(seed), torch.device("cpu"),
                         torch.float64)  # (T·B, 1, d): the first coordinate of each of d orthonormal directions
    first = frame[:, 0, :].reshape(trials, blocks * d)[:, :m].numpy()
    return np.cos(math.sqrt(d) * delta * first).mean(-1)


@pytest.mark.parametrize(("d", "m", "delta"), [(4, 4, 0.5), (4, 6, 1.0), (8, 8, 1.5), (16, 16, 0.3), (16, 40, 2.0),
                                               (3, 2, 1.2), (32, 32, 1.0)])
def test_mean_and_variance_match_monte_carlo(d, m, delta):
    n = 100_000
    k_hat = _sample(d, m, delta, n, seed=d * 100 + m)
    mean, var = B.fixed_norm_orf_trig_moments(delta, d, m)
    z_mean = (k_hat.mean() - float(mean)) / (k_hat.std(ddof=1) / math.sqrt(n))
    sq = (k_hat - float(mean)) ** 2
    z_var = (sq.mean() - float(var)) / (sq.std(ddof=1) / math.sqrt(n))
    assert abs(z_mean) < Z_TOL and abs(z_var) < Z_TOL, (z_mean, z_var)
    err = (k_hat - math.exp(-0.5 * delta * delta)) ** 2  # the MSE against the Gaussian kernel, bias included
    mse = float(B.fixed_norm_orf_trig_mse(delta, d, m))
    assert abs(err.mean() - mse) < Z_TOL * err.std(ddof=1) / math.sqrt(n)


def test_the_features_estimate_a_bessel_kernel_not_the_gaussian():
    """At d = 4, |Δ| = 1.5 the sampled mean is many standard errors from e^{−|Δ|²/2} and within 4 of Ω_4(3)."""
    n = 100_000
    k_hat = _sample(4, 4, 1.5, n, seed=3)
    se = k_hat.std(ddof=1) / math.sqrt(n)
    assert abs(k_hat.mean() - math.exp(-1.125)) > 10 * se
    assert abs(k_hat.mean() - float(B.bessel_kernel(2 * 1.5, 4))) < Z_TOL * se


@pytest.mark.parametrize(("d", "t"), [(1, 2.0), (3, math.pi), (2, 5.0), (64, 8.0), (64, 160.0), (200, 56.0),
                                      (1024, 48.0), (4096, 192.0), (4096, 0.64), (10, 1e-8)])
def test_bessel_kernel_against_mpmath(d, t):
    mpmath.mp.dps = 40
    exact = float(mpmath.hyp0f1(mpmath.mpf(d) / 2, -mpmath.mpf(t) ** 2 / 4))
    assert float(B.bessel_kernel(t, d)) == pytest.approx(exact, rel=1e-12, abs=1e-15)


def test_edge_cases():
    assert B.block_sizes(10, 4) == [4, 4, 2]
    mean, var = B.fixed_norm_orf_trig_moments(np.array([0.0, 0.2]), 5, 5)
    assert mean[0] == 1.0 and var[0] == 0.0 and 0 < var[1]
    with pytest.raises(Exception, match=r"d must be an integer in \[1, inf\)"):
        B.bessel_kernel(1.0, 0)
