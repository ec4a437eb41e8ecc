"""Closed-form fourth moments E|K̂ − K|⁴ (rfviz.maths.moments) against Monte Carlo and independent formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rfviz.estimators import create
from rfviz.geometry import PairStats, canonical_pair
from rfviz.maths import crt, hrf, moments

Z_TOL = 4.0


# ------------------------------------------------------------------------------ independent closed forms
def test_lognormal_fourth_moment_matches_hand_expansion():
    """Positive RF: Z/K lognormal, μ4/K⁴ = e^{6t} − 4e^{3t} + 6e^{t} − 3 = u²(3 + 16u + 15u² + 6u³ + u⁴), u = e^t − 1
    (expanded by hand), including tiny t where the moment sums cancel to 1e-18 (mpmath path)."""
    t = np.array([1e-9, 1e-4, 0.3, 2.0, 30.0])
    feature, gram = moments.exp_feature(t, antithetic=False)
    log_mu2, log_mu4 = moments.real_feature_moments(feature, gram, 1)
    u = np.expm1(t)
    expected = 2 * np.log(u) + np.log(3 + 16 * u + 15 * u**2 + 6 * u**3 + u**4)
    np.testing.assert_allclose(log_mu4, expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(log_mu2, np.log(u), rtol=0, atol=1e-12)


def test_small_input_limits_are_chi_square_kurtosis():
    """Near the exact point, FAVOR+ and trig errors are ∝ (G² − t)/2 (G ~ N(0, t)): μ4/μ2² → E(χ²₁ − 1)⁴/4 = 15."""
    t = np.array([1e-7, 1e-5])
    for feature, gram in (moments.exp_feature(t, antithetic=True), moments.trig_feature(t)):
        log_mu2, log_mu4 = moments.real_feature_moments(feature, gram, 1)
        np.testing.assert_allclose(np.exp(log_mu4 - 2 * log_mu2), 15.0, rtol=1e-4)


def test_trig_far_limit_is_uniform_phase():
    """Far pairs: cos(ω·Δ) has a uniform phase, μ4/μ2² → E cos⁴/(E cos²)² = (3/8)/(1/4) = 3/2."""
    feature, gram = moments.trig_feature(np.array([60.0]))
    log_mu2, log_mu4 = moments.real_feature_moments(feature, gram, 1)
    assert math.isclose(float(np.exp(log_mu4 - 2 * log_mu2)[0]), 1.5, rel_tol=1e-9)


def test_second_moments_match_the_existing_mse_closed_forms():
    """μ2 of each feature equals m·MSE of the paper's closed form (an independent derivation of the same number)."""
    x, y = canonical_pair(np.array([0.3, 0.8, 1.2]), np.array([0.4, 1.7, 2.9]), 2)
    s = PairStats.of(x, y, 5)
    for feature, gram, d, closed in (
        (*moments.exp_feature(s.z2, False), 1, hrf.log_mse_positive(s.xy, s.z2, 1) - 2 * s.xy),
        (*moments.exp_feature(s.z2, True), 1,
         hrf.log_mse_positive_antithetic(s.xx, s.yy, s.xy, s.z2, 1) - 2 * s.xy),
        (*moments.trig_feature(s.delta2), 1, hrf.log_mse_trig(s.xx, s.yy, s.delta2, 1) - 2 * s.xy),
        (*moments.gerf_feature(-0.2, 1, s.z2, s.xx, s.yy, s.xy, 5), 5, crt.gerf_log_rel_var(-0.2, 1, s.z2, 5)),
        (*moments.gerf_feature(0.03 + 0.2j, -1, s.delta2, s.xx, s.yy, s.xy, 5), 5,
         crt.gerf_log_rel_var(0.03 + 0.2j, -1, s.delta2, 5)),
    ):
        log_mu2, _ = moments.real_feature_moments(feature, gram, d)
        np.testing.assert_allclose(log_mu2, closed, rtol=0, atol=1e-9)


def test_gerf_fourth_moment_is_infinite_exactly_past_one_sixteenth():
    x, y = canonical_pair(np.array([0.5]), np.array([1.0]), 2)
    assert np.isposinf(create("gerf", A=0.0625).log_fourth_central_moment(x, y, d=3)).all()
    assert np.isfinite(create("gerf", A=0.062).log_fourth_central_moment(x, y, d=3)).all()


def test_exact_points_and_unavailable_couplings():
    x, y = canonical_pair(np.array([1.0, 1.0]), np.array([0.0, np.pi]), 2)
    assert np.isneginf(create("trig").log_fourth_central_moment(x[:1], y[:1], d=3)).all()
    assert np.isneginf(create("positive_antithetic").log_fourth_central_moment(x[1:], y[1:], d=3)).all()
    assert not create("trig", coupling="orthogonal").fourth_moment_available()
    assert not create("hybrid_gaussian").fourth_moment_available()
    with pytest.raises(NotImplementedError):
        create("hybrid_gaussian").log_fourth_central_moment(x, y, d=3)


# ------------------------------------------------------------------------------------------ Monte Carlo
def _sampled_errors(est, x: np.ndarray, y: np.ndarray, d: int, trials: int, seed: int) -> np.ndarray:
    """(trials, P) relative errors (K̂ − K)/|K| from the estimator's own sampler, in chunks."""
    s = PairStats.of(x, y, d)
    log_k, sign = est.log_abs_kernel(s)
    gen = torch.Generator().manual_seed(seed)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    out = []
    for start in range(0, trials, 50_000):
        n = min(50_000, trials - start)
        samples = est.sample(n, d, generator=gen, device=torch.device("cpu"), dim=x.shape[-1])
        est_rel = est.estimate(samples, xt, yt, torch.as_tensor(log_k))
        out.append(est_rel.numpy() - sign[None, :])
    return np.concatenate(out)


CASES = [
    ("trig", {"m": 2}, [0.5, 1.0], [0.8, 2.5]),
    ("trig_phase", {"m": 1}, [0.3, 0.7], [1.0, 2.0]),
    ("positive", {"m": 2}, [0.2, 0.3], [1.0, 0.4]),
    ("positive_antithetic", {"m": 1}, [0.3, 0.45], [1.2, 0.5]),
    ("positive_antithetic", {"m": 3, "kernel": "gaussian"}, [0.35], [0.9]),
    ("gerf", {"m": 1, "A": -0.3}, [0.4, 0.6], [0.7, 2.0]),
    ("gerf", {"m": 2, "A": 0.02 + 0.1j, "s": -1}, [0.3, 0.5], [0.9, 2.2]),
    ("gerf", {"m": 1, "A": 0.025, "s": 1}, [0.2], [1.5]),
    ("oprf", {"m": 2}, [0.5, 0.7], [0.6, 1.5]),
    ("complex_exponential", {"m": 1, "A": 0.8 + 0.4j}, [0.3, 0.4], [0.7, 1.9]),
    ("complex_exponential", {"m": 2, "A": 1j, "antithetic": True}, [0.6], [1.1]),
    ("complex_exponential", {"m": 1, "A": 0.9 + 0.3j, "variance": "complex"}, [0.3, 0.4], [0.9, 2.0]),
    ("complex_exponential", {"m": 2, "A": 1.1, "variance": "complex", "antithetic": True}, [0.35], [1.3]),
    ("hybrid_angular", {"m": 2, "n": 2, "shared": True}, [0.3, 0.5], [1.0, 2.3]),
    ("hybrid_angular", {"m": 1, "n": 3, "shared": True, "y_scale": 1.4}, [0.3, 0.4], [0.7, 2.0]),
    ("hybrid_angular", {"m": 2, "n": 1, "shared": False, "y_scale": 0.7}, [0.4], [1.6]),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "params", "radii", "thetas"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_fourth_moment_matches_monte_carlo(name, params, radii, thetas):
    """Sample mean of |K̂ − K|⁴ within 4 standard errors of the closed form (moderate inputs: E|K̂ − K|⁸ < ∞, so the
    standard error is itself meaningful), at several points, fixed seed."""
    params = dict(params)
    y_scale = params.pop("y_scale", 1.0)  # |x| ≠ |y| exercises the shared-ω cross terms of the hybrid
    est = create(name, **params)
    d = 3
    x, y = canonical_pair(np.asarray(radii), np.asarray(thetas), 2)
    y = y * y_scale
    err = _sampled_errors(est, x, y, d, trials=400_000, seed=11)
    s = PairStats.of(x, y, d)
    log_k = est.log_abs_kernel(s)[0]
    theory4 = np.exp(est.log_fourth_central_moment(x, y, d=d) - 4 * log_k)
    e4 = np.abs(err) ** 4
    z = (e4.mean(0) - theory4) / (e4.std(0, ddof=1) / math.sqrt(len(e4)))
    assert np.all(np.abs(z) < Z_TOL), f"{est}: fourth-moment z {z}, theory {theory4}, MC {e4.mean(0)}"
    theory_var = np.exp(est.log_squared_error_variance(x, y, d=d) - 4 * log_k)
    mse = np.exp(est.log_mse(x, y, d=d) - 2 * log_k)
    np.testing.assert_allclose(theory_var, theory4 - mse**2, rtol=1e-9)
