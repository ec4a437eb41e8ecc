"""HRF paper estimators (trig_phase, complex_exponential[_diag], hybrid_angular, hybrid_gaussian) and the λ maps,
moments and relative errors of rfviz.maths.hrf, against the verified reference hybrid_random_features.md.

Golden values are copied from the reference .md (§9 and the tables of F3–F7, §4, §5), never from rfviz output.
Monte-Carlo points keep |x + y|² ≲ 2.6: beyond that the ++ part of every hybrid (and the CE estimator with
|w|² large) has such a heavy right tail that the sampled MSE converges slowly and the standard error is not
trustworthy at a few 10⁴ trials (reference §6 "Heavy tails"); those regions are left out on purpose.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from mc_helpers import Z_TOL, assert_mc_matches_closed_form

import rfviz
from rfviz.engine import monte_carlo
from rfviz.estimators.base import PairStats, Samples
from rfviz.estimators.hrf import HybridAngular
from rfviz.geometry import canonical_pair
from rfviz.maths import hrf as H
from rfviz.maths.hrf import log_mse_complex_exponential
from rfviz.params import ParameterError

PI = math.pi
LN10 = math.log(10.0)
CPU = torch.device("cpu")
NEW = ["trig_phase", "complex_exponential", "complex_exponential_diag", "hybrid_angular", "hybrid_gaussian"]

# Reference §9 / F6 inputs.
X_CE = np.array([0.5, -0.3, 0.2, 0.4])
Y_CE = np.array([0.1, 0.4, -0.5, 0.3])
A_CE = (1 + 0.5j, 0.8, 1j, 1.2 - 0.3j)


def pair(rx: float, ry: float, theta: float, d: int) -> tuple[np.ndarray, np.ndarray]:
    """x = rx·e1, y = ry(cos θ e1 + sin θ e2) in R^d (the reference's ``xy_from``)."""
    x = np.zeros(d)
    y = np.zeros(d)
    x[0] = rx
    y[0], y[1] = ry * math.cos(theta), ry * math.sin(theta)
    return x, y


def mse_tr(name: str, theta: float, r: float, **params: Any) -> float:
    x, y = canonical_pair(r, theta, 2)
    return float(np.exp(rfviz.create(name, **params).log_mse(x, y)))


def log_mse_at(est: rfviz.Estimator, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return est.log_mse(np.atleast_2d(x), np.atleast_2d(y)).ravel()


# ============================================================================================ golden values
X10, Y10 = pair(1.2, 0.5, 2.2, 6)
GOLDEN: list[tuple[str, Any, float]] = [
    ("1 MSE_trig", lambda: mse_tr("trig", PI / 2, 1.0, m=10), 0.276219569108),
    ("2 MSE_pos", lambda: mse_tr("positive_antithetic", PI / 3, 1.0, m=10), 2.46484608297),
    ("3 anghyb eq.47 corrected", lambda: mse_tr("hybrid_angular", PI / 3, 1.0, m=10, n=4), 0.484619991546),
    ("3 anghyb (hybrid.py)", lambda: math.exp(H.log_mse_angular_hybrid_tr(PI / 3, 1.0, 10, 4)), 0.484619991546),
    ("4 anghyb eq.47 corrected", lambda: mse_tr("hybrid_angular", 2.0, 1.5, m=16, n=8), 0.476086087294),
    ("5 E[lambda^2]", lambda: float(H.angular_lambda_moments(PI / 3, 4).second), 0.166666666667),
    ("6 eps_trig(pi)", lambda: math.exp(H.log_eps_trig_tr(PI, 1.0, 10)), 1.62198128337),
    ("6 W(1)/sqrt(20)", lambda: math.exp(H.log_w(1.0)) / math.sqrt(20), 1.62198128337),
    ("7 max eps_anghyb", lambda: math.exp(H.max_log_eps_angular_hybrid(1.0, 10, 1)[1]), 0.607340277378),
    ("8 gausshyb pi/2", lambda: mse_tr("hybrid_gaussian", PI / 2, 1.0, m=10, n=1, sigma=1.0), 0.443823011254),
    ("8 gausshyb (hybrid.py)", lambda: math.exp(H.log_mse_gaussian_hybrid_tr(PI / 2, 1.0, 10, 1, 1.0)),
     0.443823011254),
    ("9 gausshyb pi", lambda: mse_tr("hybrid_gaussian", PI, 1.0, m=10, n=1, sigma=1.0), 0.229467395829),
    ("10 anghyb shared eq.46", lambda: float(np.exp(rfviz.create("hybrid_angular", m=10, n=4, shared=True)
                                                    .log_mse(X10, Y10))), 0.0361396409129),
    ("11 anghyb independent eq.45", lambda: float(np.exp(rfviz.create("hybrid_angular", m=10, n=4, shared=False)
                                                         .log_mse(X10, Y10))), 0.0459024030135),
    ("12 CE plain real part", lambda: float(np.exp(rfviz.create("complex_exponential_diag", m=10, A_diag=A_CE)
                                                   .log_mse(X_CE, Y_CE))), 0.168270366031),
    ("13 CE antithetic real part", lambda: float(np.exp(rfviz.create("complex_exponential_diag", m=10, A_diag=A_CE,
                                                                     antithetic=True).log_mse(X_CE, Y_CE))),
     0.0594961791209),
    ("14 real-diagonal l_min", lambda: H.ce_loss_min_real_diagonal([1.0, -2.0, 0.5], [0.5, 1.0, 0.5]), 3.0),
    ("14 l(A) at eq.88 A", lambda: H.ce_loss(H.real_diagonal_a([1.0, -2.0, 0.5], [0.5, 1.0, 0.5]),
                                             [1.0, -2.0, 0.5], [0.5, 1.0, 0.5]), 3.0),
    ("15 log10 trig", lambda: float(H.log_mse_trig_tr(PI, 5.0, 10)) / LN10, 20.4136940995),
    ("15 log10 pos", lambda: float(H.log_mse_pos_tr(0.0, 5.0, 10)) / LN10, 63.8431422898),
    ("15 log10 anghyb", lambda: float(H.log_mse_angular_hybrid_tr(1.0, 5.0, 10, 1)) / LN10, 43.3815752266),
    ("15 log10 anghyb (estimator)", lambda: float(rfviz.create("hybrid_angular", m=10, n=1)
                                                  .log10_mse_grid(5.0, 1.0, d=3)), 43.3815752266),
]


@pytest.mark.parametrize(("label", "compute", "expected"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_values_section_9(label, compute, expected):
    assert compute() == pytest.approx(expected, rel=1e-9)


def test_reference_tables_printed_with_fewer_digits():
    """Values the reference prints with 4–8 digits (F3 Gaussian caveat, F7, eq. 47 table, Thm 3.5 limit, Fig. 2)."""
    gauss = {shared: float(np.exp(rfviz.create("hybrid_gaussian", m=10, n=2, sigma=1.0, r_norm=1.0, shared=shared)
                                  .log_mse(X10, Y10))) for shared in (True, False)}
    assert gauss[True] == pytest.approx(0.101651, abs=5e-7)  # F5 caveat: shared, with the F3 correction
    assert gauss[False] == pytest.approx(0.094158, abs=5e-7)  # without it
    assert H.oracle_lambda_tr(1.2, 0.8, 10) == pytest.approx(0.1531, abs=5e-5)  # F7
    assert math.exp(H.log_oracle_mse_tr(1.2, 0.8, 10)) == pytest.approx(0.0474006, abs=5e-8)
    for (r, th, n), corrected, printed in [((0.8, PI / 2, 1), 0.093734, 0.046867), ((0.8, 2.0, 4), 0.031861, 0.029799),
                                           ((0.6, 1.0, 2), 0.025747, 0.021957)]:
        assert math.exp(H.log_mse_angular_hybrid_tr(th, r, 10, n)) == pytest.approx(corrected, abs=5e-7)
        assert math.exp(H.log_mse_angular_hybrid_tr_as_printed(th, r, 10, n)) == pytest.approx(printed, abs=5e-7)
    assert math.exp(H.log_endpoint_slope(1.3, 10, 3)) == pytest.approx(2.1367861, abs=5e-8)  # Thm 3.5 limit
    # Fig. 2 analytic ε (reference §5): anghyb (16, 8) at θ = π/8, π/4, 3π/8, π/2; r = 1 and r = 1.5.
    th = np.array([1, 2, 3, 4]) * PI / 8
    np.testing.assert_allclose(np.exp(H.log_eps_angular_hybrid_tr(th, 1.0, 16, 8)), [0.204, 0.288, 0.311, 0.312],
                               atol=5e-4)
    np.testing.assert_allclose(np.exp(H.log_eps_angular_hybrid_tr(th, 1.5, 16, 8)), [2.295, 2.420, 1.688, 1.244],
                               atol=5e-4)
    np.testing.assert_allclose(np.exp(H.log_eps_trig_tr(th, 1.0, 128)), [0.0095, 0.0371, 0.0822, 0.1469], atol=5e-5)


def test_thm35_printed_bound_fails_and_corrected_bound_holds():
    """Reference §4 erratum: max_θ ε / [W(r)/√(2m)] vs both bounds (same normalisation as the reference table)."""
    table = {(5.0, 1): (0.16531, 0.15023, 0.33591), (6.0, 1): (0.15088, 0.12519, 0.30665),
             (8.0, 1): (0.13065, 0.09389, 0.26556), (8.0, 2): (0.09369, 0.08303, 0.19429)}
    m = 1
    for (r, n), (true_max, printed, corrected) in table.items():
        norm = float(H.log_w(r)) - 0.5 * math.log(2 * m)
        got = math.exp(H.max_log_eps_angular_hybrid(r, m, n)[1] - norm)
        assert got == pytest.approx(true_max, abs=5e-5)
        assert math.exp(H.log_bound_thm35_printed(r, m, n) - norm) == pytest.approx(printed, abs=5e-5)
        assert math.exp(H.log_bound_thm35_corrected(r, m, n) - norm) == pytest.approx(corrected, abs=5e-5)
        assert got > math.exp(H.log_bound_thm35_printed(r, m, n) - norm)  # the printed bound is violated
    for n in (1, 2, 8, 1000):
        for r in (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0):
            assert H.max_log_eps_angular_hybrid(r, 3, n)[1] <= H.log_bound_thm35_corrected(r, 3, n) + 1e-12
    assert H.log_bound_thm35_printed(1.0, 4, 3) == pytest.approx(H.log_bound_thm35_corrected(1.0, 4, 3), rel=1e-12)


def test_relative_error_forms_agree():
    """Eqs. 48–50 (h_r form, e^{r²} prefactor) = √MSE/SM from the corrected eq. 47; Lemma 3.4 = √MSE/SM."""
    th = np.linspace(0.05, PI - 0.05, 9)
    for r, m, n in [(1.0, 10, 1), (1.7, 4, 3), (2.5, 1, 16)]:
        via_mse = H.log_relative_error(H.log_mse_angular_hybrid_tr(th, r, m, n), th, r)
        np.testing.assert_allclose(H.log_eps_angular_hybrid_tr(th, r, m, n), via_mse, rtol=1e-10, atol=1e-12)
        for eps, mse in ((H.log_eps_trig_tr, H.log_mse_trig_tr), (H.log_eps_pos_tr, H.log_mse_pos_tr)):
            np.testing.assert_allclose(eps(th, r, m), H.log_relative_error(mse(th, r, m), th, r), rtol=1e-10,
                                       atol=1e-12)
    # eq. 26: the worst case of trig (θ = π) and pos (θ = 0) is W(r)/√(2m).
    assert H.log_eps_trig_tr(PI, 1.3, 7) == pytest.approx(H.log_w(1.3) - 0.5 * math.log(14), rel=1e-12)
    assert H.log_eps_pos_tr(0.0, 1.3, 7) == pytest.approx(H.log_w(1.3) - 0.5 * math.log(14), rel=1e-12)


def test_log_space_stays_finite_where_direct_forms_overflow():
    with np.errstate(over="ignore"):
        assert not np.isfinite(np.exp(8 * 30.0**2))
    th = np.linspace(0.01, PI - 0.01, 30)
    for fn in (lambda t: H.log_mse_angular_hybrid_tr(t, 30.0, 10, 2), lambda t: H.log_oracle_mse_tr(t, 30.0, 10),
               lambda t: H.log_mse_gaussian_hybrid_tr(t, 30.0, 10, 2, 0.5),
               lambda t: H.log_eps_angular_hybrid_tr(t, 30.0, 10, 2)):
        assert np.all(np.isfinite(fn(th)))


# ================================================================================== λ maps and moments
def test_angular_moment_identities_and_ends():
    th = np.linspace(0, PI, 13)
    for n in (1, 3, 8):
        mom = H.angular_lambda_moments(th, n)
        np.testing.assert_allclose(mom.second + mom.one_minus_second + 2 * mom.cross, 1.0, rtol=1e-12)
        np.testing.assert_allclose(mom.variance, mom.second - mom.mean**2, atol=1e-15)
    assert np.all(H.angular_lambda_moments(0.0, 5) == (0, 0, 0, 1, 0))
    assert np.all(H.angular_lambda_moments(PI, 5) == (1, 1, 0, 0, 0))
    assert H.angular_lambda_moments(1.0, 1).cross == 0.0  # n = 1: λ̂ ∈ {0, 1}


def test_gaussian_lambda_curve_and_moments():
    th = np.linspace(0, PI, 9)
    for r, sigma in [(0.7, 1.0), (2.0, 0.3), (1e-3, 2.0)]:
        lam = H.gaussian_lambda(th, r, sigma)
        assert lam[0] == 0.0 and lam[-1] == pytest.approx(1.0, rel=1e-12)
        np.testing.assert_allclose(H.gaussian_lambda_moments_tr(th, r, sigma, 3).mean, lam, rtol=1e-9, atol=1e-15)
    mom = H.gaussian_lambda_moments_tr(th, 1.1, 0.8, 2)
    np.testing.assert_allclose(mom.second + mom.one_minus_second + 2 * mom.cross, 1.0, rtol=1e-12)
    np.testing.assert_allclose(mom.variance, mom.second - mom.mean**2, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(H.gaussian_lambda(th, 0.0, 1.0), np.sin(th / 2) ** 2, rtol=1e-12)  # r → 0 limit


def test_angle_between_is_accurate_near_zero_and_pi():
    t = 1e-9
    x = np.array([1.0, 0.0])
    assert H.angle_between(x, np.array([math.cos(t), math.sin(t)])) == pytest.approx(t, rel=1e-6)
    assert PI - H.angle_between(x, np.array([-math.cos(t), math.sin(t)])) == pytest.approx(t, rel=1e-6)
    assert H.angle_between(x, np.zeros(2)) == pytest.approx(PI / 2)


@pytest.mark.slow
@pytest.mark.parametrize(("theta", "n"), [(0.7, 1), (2.0, 3), (1.3, 8)])
def test_angular_lambda_hat_moments_match_monte_carlo(theta, n):
    """F2 at the reference's three (θ, n): E λ̂, E λ̂², E(1 − λ̂)², E λ̂(1 − λ̂) from the estimator's own λ̂."""
    est = rfviz.create("hybrid_angular", m=1, n=n)
    x, y = pair(1.0, 0.7, theta, 2)
    s = est.sample(200_000, 5, generator=torch.Generator().manual_seed(7), device=CPU, dim=2)
    lam = est._lambda_hat(s, torch.as_tensor(x)[None], torch.as_tensor(y)[None])[:, 0].numpy()
    _assert_moments_match(lam, H.angular_lambda_moments(theta, n))


@pytest.mark.slow
@pytest.mark.parametrize(("r", "theta", "n", "sigma"), [(0.7, PI / 3, 1, 1.0), (1.0, 2.5, 4, 1.0), (0.8, 1.5, 2, 0.7)])
def test_gaussian_lambda_hat_moments_match_monte_carlo(r, theta, n, sigma):
    """F5 eqs. 72–73 at the reference's three settings."""
    est = rfviz.create("hybrid_gaussian", m=1, n=n, sigma=sigma)
    x, y = pair(r, r, theta, 2)
    s = est.sample(200_000, 4, generator=torch.Generator().manual_seed(8), device=CPU, dim=2)
    lam = est._lambda_hat(s, torch.as_tensor(x)[None], torch.as_tensor(y)[None])[:, 0].numpy()
    _assert_moments_match(lam, H.gaussian_lambda_moments_tr(theta, r, sigma, n))


def _assert_moments_match(lam: np.ndarray, mom: H.LambdaMoments) -> None:
    for sample, expected in [(lam, mom.mean), (lam**2, mom.second), ((1 - lam) ** 2, mom.one_minus_second),
                             (lam * (1 - lam), mom.cross)]:
        se = sample.std(ddof=1) / math.sqrt(sample.size)
        if se == 0:
            assert sample.mean() == pytest.approx(float(expected), abs=1e-12)
            continue
        assert abs(sample.mean() - expected) / se < Z_TOL, (sample.mean(), expected, se)


# ========================================================================================= Monte Carlo
@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["softmax", "gaussian"])
def test_trig_phase_derived_mse_matches_monte_carlo(kernel):
    """[derived] MSE = e^{|x|²+|y|²}[(1 − e^{−|x−y|²})² + 1]/(2m) at 3 points (incl. x = y, where trig is exact)."""
    x, y = canonical_pair(np.array([0.5, 0.9, 1.2]), np.array([0.0, 1.2, 2.6]), 4)
    assert_mc_matches_closed_form(rfviz.create("trig_phase", m=6, kernel=kernel), x, y, trials=20000, seed=21, d=4)


CE_CASES = [dict(A=0.8 + 0.6j), dict(A=1.3), dict(A=0.4 + 1.1j, antithetic=True),
            dict(A=0.8 + 0.6j, variance="complex"), dict(A=1.2 - 0.5j, antithetic=True, variance="complex")]


@pytest.mark.slow
@pytest.mark.parametrize("params", CE_CASES, ids=[str(c) for c in CE_CASES])
def test_complex_exponential_matches_monte_carlo(params):
    """F6 at 3 points per A: |w|² ≤ ~2.5 (larger |w|² makes e^{ω·w} heavy-tailed, left out on purpose)."""
    x, y = pair(0.6, 0.5, 1.0, 3)
    x2, y2 = pair(0.4, 0.7, 2.4, 3)
    x3, y3 = pair(0.8, 0.3, 0.3, 3)
    est = rfviz.create("complex_exponential", m=8, **params)
    assert_mc_matches_closed_form(est, np.stack([x, x2, x3]), np.stack([y, y2, y3]), trials=20000, seed=22)


@pytest.mark.slow
@pytest.mark.parametrize("antithetic", [False, True])
@pytest.mark.parametrize("variance", ["real_part", "complex"])
def test_complex_exponential_diag_matches_monte_carlo(antithetic, variance):
    """F6 with the reference's diagonal A at its (x, y) and two more pairs (full coordinates, non-isotropic)."""
    xs = np.stack([X_CE, X_CE[::-1], 0.5 * Y_CE])
    ys = np.stack([Y_CE, -Y_CE, X_CE])
    est = rfviz.create("complex_exponential_diag", m=10, A_diag=A_CE, antithetic=antithetic, variance=variance)
    assert_mc_matches_closed_form(est, xs, ys, trials=20000, seed=23)


@pytest.mark.slow
@pytest.mark.parametrize("shared", [True, False])
def test_hybrid_angular_matches_monte_carlo(shared):
    """Eqs. 45/46 at 3 points, two with |x| ≠ |y| (reference F3 settings)."""
    xs, ys = zip(pair(1.2, 0.5, 2.2, 3), pair(0.8, 0.8, PI / 3, 3), pair(1.0, 0.6, 1.2, 3), strict=True)
    est = rfviz.create("hybrid_angular", m=10, n=4, shared=shared)
    assert_mc_matches_closed_form(est, np.stack(xs), np.stack(ys), trials=20000, seed=24, d=6)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "params", "trials"), [
    ("hybrid_angular", dict(m=10, n=4), 40000),  # reference F3: 0.0361396 (shared) vs 0.0459024 (independent)
    ("hybrid_gaussian", dict(m=10, n=2, sigma=1.0, r_norm=1.0), 100000),  # F5 caveat: 0.101651 / 0.094158 (8 % apart)
])
def test_shared_projection_correction_is_needed_at_unequal_lengths(name, params, trials):
    """Variant II (eq. 23) at |x| = 1.2, |y| = 0.5, θ = 2.2: MC of each variant matches its own formula and rejects
    the other one (|z| > 4)."""
    x, y = X10, Y10
    results = {}
    for shared in (True, False):
        est = rfviz.create(name, shared=shared, **params)
        results[shared] = (monte_carlo(est, x, y, trials=trials, seed=25, device="cpu"), log_mse_at(est, x, y))
    for shared in (True, False):
        res, own = results[shared]
        other = results[not shared][1]
        assert abs(res.z_against(own)[0]) < Z_TOL
        assert abs(res.z_against(other)[0]) > Z_TOL
    angular = rfviz.create("hybrid_angular", m=10, n=4)
    x_eq, y_eq = pair(0.9, 0.9, 2.0, 3)  # same length: the correction vanishes (cos(|x|² − |y|²) = 1)
    assert log_mse_at(angular, x_eq, y_eq) == pytest.approx(
        log_mse_at(rfviz.create("hybrid_angular", m=10, n=4, shared=False), x_eq, y_eq), rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("shared", [True, False])
def test_hybrid_gaussian_matches_monte_carlo(shared):
    """Thm F.2 at the reference's three same-length settings (σ = 1, 1, 0.7 folded into one σ per call)."""
    x, y = canonical_pair(np.array([0.7, 1.0, 0.8]), np.array([PI / 3, 2.5, 1.5]), 4)
    est = rfviz.create("hybrid_gaussian", m=10, n=2, sigma=0.8, shared=shared)
    assert_mc_matches_closed_form(est, x, y, trials=20000, seed=26, d=6)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["softmax", "gaussian"])
def test_hybrid_gaussian_fixed_normaliser_matches_monte_carlo(kernel):
    """r_norm > 0: any lengths, shared projections (eq. 23 correction), both kernels."""
    xs, ys = zip(pair(1.2, 0.5, 2.2, 3), pair(0.6, 0.9, 1.0, 3), pair(0.7, 0.7, 2.8, 3), strict=True)
    est = rfviz.create("hybrid_gaussian", m=8, n=3, sigma=1.3, r_norm=0.9, kernel=kernel)
    assert_mc_matches_closed_form(est, np.stack(xs), np.stack(ys), trials=20000, seed=27)


@pytest.mark.slow
def test_eq47_corrected_matches_monte_carlo_and_printed_does_not():
    """Reference F4 erratum table (m = 10): the printed eq. 47 is off by 7–94 SE there, the corrected one is not."""
    for (r, th, n), seed in zip([(0.8, PI / 2, 1), (0.8, 2.0, 4), (0.6, 1.0, 2)], (31, 32, 33), strict=True):
        est = rfviz.create("hybrid_angular", m=10, n=n, shared=False)
        x, y = canonical_pair(r, th, 4)
        res = monte_carlo(est, x, y, trials=60000, seed=seed, device="cpu")
        corrected = H.log_mse_angular_hybrid_tr(th, r, 10, n)
        assert log_mse_at(est, x, y)[0] == pytest.approx(float(corrected), rel=1e-12)
        assert abs(res.z_against(np.atleast_1d(corrected))[0]) < Z_TOL
        assert abs(res.z_against(np.atleast_1d(H.log_mse_angular_hybrid_tr_as_printed(th, r, 10, n)))[0]) > Z_TOL


class _OracleHybrid(HybridAngular):
    """Test-only bipolar hybrid with the deterministic oracle λ* (reference F7), independent ω."""

    name = "oracle_hybrid_test"

    def _oracle(self, s: PairStats) -> np.ndarray:
        return H.oracle_lambda(self._pos._log_mse_softmax(s), self._trig._log_mse_softmax(s))

    def _lambda_hat(self, samples: Samples, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        lam = self._oracle(PairStats.of(x.numpy(), y.numpy()))
        return torch.as_tensor(lam, dtype=x.dtype)[None, :].expand(samples["tau"].shape[0], -1)

    def _moments(self, s: PairStats) -> H.LambdaMoments:
        lam = self._oracle(s)
        return H.LambdaMoments(lam, lam**2, 0 * lam, (1 - lam) ** 2, lam * (1 - lam))


@pytest.mark.slow
def test_oracle_lambda_mse_matches_monte_carlo():
    """F7 [derived]: MSE* = MSE_trig·MSE_++/(MSE_trig + MSE_++) at 3 same-length points (incl. the reference's)."""
    est = _OracleHybrid(m=10, n=1, shared=False)
    r, th = np.array([0.8, 0.6, 1.0]), np.array([1.2, 2.0, 2.6])
    x, y = canonical_pair(r, th, 2)
    np.testing.assert_allclose(est.log_mse(x, y), H.log_oracle_mse_tr(th, r, 10), rtol=1e-12)
    res = assert_mc_matches_closed_form(est, x, y, trials=20000, seed=34)
    # λ* beats θ/π (n → ∞ angular hybrid) wherever they differ.
    assert np.all(res.log_mse < H.log_mse_angular_hybrid_tr(th, r, 10, 10**9) + 4 * res.log10_mse_stderr * LN10)


# ========================================================================================== reductions
def _draw(est: rfviz.Estimator, d: int, trials: int = 64, seed: int = 0) -> Samples:
    return est.sample(trials, d, generator=torch.Generator().manual_seed(seed), device=CPU)


@pytest.mark.parametrize("antithetic", [False, True])
def test_complex_exponential_with_a_equal_i_is_trig(antithetic):
    """A = iI: w = iΔ, Re Ψ_A(x)ᵀΨ_B(y) = e^{(|x|²+|y|²)/2}(1/m)Σcos(ω·Δ) per draw; F6 = F1-trig (reference E3)."""
    x, y = canonical_pair(np.array([0.3, 1.0, 2.0]), np.array([0.4, 1.9, 3.0]), 3)
    ce = rfviz.create("complex_exponential", m=9, A=1j, antithetic=antithetic)
    trig = rfviz.create("trig", m=9)
    np.testing.assert_allclose(ce.log_mse(x, y), trig.log_mse(x, y), rtol=1e-12)
    s = _draw(ce, 3)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    torch.testing.assert_close(ce.estimate(s, xt, yt), trig.estimate({"w": s["w"]}, xt, yt), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("antithetic", "name"), [(False, "positive"), (True, "positive_antithetic")])
def test_complex_exponential_with_a_equal_one_is_positive(antithetic, name):
    """A = I plain = ``positive`` (E2′), antithetic = ``positive_antithetic`` (FAVOR+): closed form and per draw."""
    x, y = canonical_pair(np.array([0.3, 1.0, 2.0]), np.array([0.4, 1.9, 3.0]), 3)
    ce = rfviz.create("complex_exponential", m=9, A=1.0, antithetic=antithetic)
    ref = rfviz.create(name, m=9)
    np.testing.assert_allclose(ce.log_mse(x, y), ref.log_mse(x, y), rtol=1e-12)
    np.testing.assert_allclose(rfviz.create("complex_exponential", m=9, A=1.0, antithetic=antithetic,
                                            variance="complex").log_mse(x, y), ref.log_mse(x, y), rtol=1e-12)
    s = _draw(ce, 3)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    torch.testing.assert_close(ce.estimate(s, xt, yt), ref.estimate({"w": s["w"]}, xt, yt), rtol=1e-12, atol=1e-12)


def test_complex_exponential_diag_reduces_to_scalar_and_zero_loss_a_is_exact():
    x, y = pair(0.7, 0.9, 1.1, 3)
    scalar = rfviz.create("complex_exponential", A=0.6 + 0.8j, m=5)
    diag = rfviz.create("complex_exponential_diag", A_diag=(0.6 + 0.8j, 0.6 + 0.8j), m=5)  # a_3 = 1 ≠ a: only 2-D x, y
    np.testing.assert_allclose(diag.log_mse(x[:2], y[:2]), scalar.log_mse(x[:2], y[:2]), rtol=1e-12)
    # App. H eqs. 85–87: a complex diagonal A with Ax + A⁻¹y = 0 makes the estimator exact (w = 0).
    a = H.complex_diagonal_a(X_CE, Y_CE)
    assert np.linalg.norm(H.ce_w(a, X_CE, Y_CE)) < 1e-14
    exact = rfviz.create("complex_exponential_diag", A_diag=tuple(a), m=5)
    assert exact.log_mse(X_CE, Y_CE) < -60
    # eq. 88 real diagonal A: l(A) = the closed-form minimum, and F6 for real A is SM²(e^{l} − 1)/m.
    ar = H.real_diagonal_a(X_CE, Y_CE)
    loss = H.ce_loss(ar, X_CE, Y_CE)
    assert loss == pytest.approx(H.ce_loss_min_real_diagonal(X_CE, Y_CE), rel=1e-12)
    real = rfviz.create("complex_exponential_diag", A_diag=tuple(ar), m=5)
    assert real.log_mse(X_CE, Y_CE) == pytest.approx(2 * X_CE @ Y_CE + math.log(math.expm1(loss) / 5), rel=1e-12)


@pytest.mark.parametrize("shared", [True, False])
def test_hybrids_at_theta_zero_and_pi_reduce_to_base_estimators(shared):
    """θ = 0: λ̂ ≡ 0 → trig; θ = π: λ̂ ≡ 1 → positive_antithetic (unequal lengths, so the MSEs are not 0)."""
    est = rfviz.create("hybrid_angular", m=7, n=5, shared=shared)
    trig, pos = rfviz.create("trig", m=7), rfviz.create("positive_antithetic", m=7)
    s = _draw(est, 3)
    for theta, base, key in ((0.0, trig, "w_trig"), (PI, pos, "w_pos")):
        x, y = pair(1.1, 0.6, theta, 3)
        assert log_mse_at(est, x, y) == pytest.approx(log_mse_at(base, x, y), rel=1e-12)
        xt, yt = torch.as_tensor(x)[None], torch.as_tensor(y)[None]
        torch.testing.assert_close(est.estimate(s, xt, yt), base.estimate({"w": s[key]}, xt, yt), rtol=1e-13, atol=0)
    gauss = rfviz.create("hybrid_gaussian", m=7, n=5, shared=shared)
    x, y = pair(0.9, 0.9, 0.0, 3)
    xt, yt = torch.as_tensor(x)[None], torch.as_tensor(y)[None]
    g = _draw(gauss, 3)
    torch.testing.assert_close(gauss.estimate(g, xt, yt), trig.estimate({"w": g["w_trig"]}, xt, yt), rtol=1e-13,
                               atol=0)


# ======================================================================================= feature maps
# Every estimator's ⟨φ(x), φ(y)⟩ = K̂(x, y) is tests/estimators/test_common.py's; here the HRF specifics.
def test_angular_hybrid_feature_length_and_gaussian_hybrid_at_equal_norms():
    """The angular hybrid has 4m(n + 1) features (reference E6); the Gaussian hybrid at r_norm = 0 (|x| = |y|
    exactly, a zero pair included: ρ = 0 at r = 0, λ̂ := 0) keeps ⟨φ(x), φ(y)⟩ = K̂(x, y)."""
    rng = np.random.default_rng(4)
    x, y = 0.6 * rng.normal(size=(6, 3)), 0.6 * rng.normal(size=(6, 3))
    y *= np.linalg.norm(x, axis=-1, keepdims=True) / np.linalg.norm(y, axis=-1, keepdims=True)
    x[0] = y[0] = 0.0
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    for kernel in ("softmax", "gaussian"):
        angular = rfviz.create("hybrid_angular", m=5, n=3, kernel=kernel)
        assert angular.features(_draw(angular, 3, trials=4, seed=5), xt, "query").shape[-1] == 4 * 5 * (3 + 1)
        est = rfviz.create("hybrid_gaussian", m=5, kernel=kernel)
        assert est.params["r_norm"] == 0
        s = _draw(est, 3, trials=4, seed=5)
        phi_x, phi_y = est.features(s, xt, "query"), est.features(s, yt, "key")
        torch.testing.assert_close((phi_x * phi_y).sum(-1), est.estimate(s, xt, yt), rtol=1e-10, atol=1e-12)


# =================================================================================== invalid inputs
@pytest.mark.slow
def test_invalid_inputs_raise_named_errors():
    with pytest.raises(ParameterError, match=r"x and y must have the same length .*\|x\| = 1.2, \|y\| = 0.5"):
        rfviz.create("hybrid_gaussian").log_mse(X10, Y10)
    with pytest.raises(ParameterError, match="x and y must have the same length"):
        monte_carlo(rfviz.create("hybrid_gaussian"), X10, Y10, trials=10, device="cpu")
    with pytest.raises(ParameterError, match=r"d must be an integer in \[3, inf\)"):
        rfviz.create("complex_exponential_diag", A_diag=(1, 2, 3)).log_mse(np.ones(2), np.ones(2))
    with pytest.raises(ParameterError, match="theta must be in"):
        H.angular_lambda_moments(3.5, 2)
    with pytest.raises(ParameterError, match=r"n must be an integer in \[1, inf\)"):
        H.angular_lambda_moments(1.0, 0)
    with pytest.raises(ParameterError, match=r"sigma must be a number in \(0, inf\)"):
        H.gaussian_lambda(1.0, 1.0, 0.0)
    with pytest.raises(ParameterError, match=r"r must be a number in \[1, inf\) for the Theorem 3.5 bound"):
        H.log_bound_thm35_corrected(0.5, 10, 2)
    with pytest.raises(ParameterError, match="A must be an invertible complex matrix"):
        H.ce_w(np.zeros((2, 2)), np.ones(2), np.ones(2))
    with pytest.raises(ParameterError, match="variance must be one of"):
        log_mse_complex_exponential(np.ones(2), 0.0, 3, variance="pseudo")


# ================================================================================ property tests
finite_r = st.floats(0.0, 20.0)
theta_s = st.floats(0.0, PI)


@st.composite
def estimator_and_pair(draw):
    name = draw(st.sampled_from(NEW))
    params: dict[str, Any] = {"m": draw(st.integers(1, 256)), "kernel": draw(st.sampled_from(["softmax", "gaussian"]))}
    d = 3
    if name.startswith("complex_exponential"):
        params["antithetic"] = draw(st.booleans())
        params["variance"] = draw(st.sampled_from(["real_part", "complex"]))
        mods = st.floats(1.001e-3, 0.999e3)  # inside the valid range after the polar → rectangular round trip
        args = st.floats(-PI, PI)
        if name == "complex_exponential":
            params["A"] = complex(np.exp(1j * draw(args)) * draw(mods))
        else:
            k = draw(st.integers(1, 4))
            params["A_diag"] = tuple(complex(np.exp(1j * draw(args)) * draw(mods)) for _ in range(k))
            d = max(d, k)
    if name.startswith("hybrid"):
        params["n"] = draw(st.integers(1, 64))
        params["shared"] = draw(st.booleans())
    rx = draw(finite_r)
    ry = draw(finite_r)
    if name == "hybrid_gaussian":
        params["sigma"] = draw(st.floats(1e-3, 1e3))
        params["r_norm"] = draw(st.sampled_from([0.0, 0.5, 3.0]))
        if params["r_norm"] == 0:
            ry = rx
    return name, params, pair(rx, ry, draw(theta_s), d)


@settings(max_examples=150, deadline=None)
@given(estimator_and_pair())
def test_property_log_mse_never_nan_or_overflowing(case):
    """Over the declared ranges with r ≤ 20: log-MSE is never NaN or +inf (MSE ≥ 0; −inf only where exact)."""
    name, params, (x, y) = case
    est = rfviz.create(name, **params)
    out = est.log_mse(x, y)
    assert not np.isnan(out) and out < np.inf
    assert est.mse(x, y) >= 0


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["hybrid_angular", "hybrid_gaussian", "trig_phase"]), st.floats(0.05, 20.0),
       st.floats(0.01, PI - 0.01), st.integers(1, 64), st.integers(1, 64))
def test_property_hybrids_have_finite_log_mse_inside_the_open_range(name, r, theta, m, n):
    params = {"m": m} if name == "trig_phase" else {"m": m, "n": n}
    x, y = canonical_pair(r, theta, 2)
    assert np.isfinite(rfviz.create(name, **params).log_mse(x, y))


@settings(max_examples=60, deadline=None)
@given(st.floats(0.0, PI), st.integers(1, 200), st.floats(0.0, 20.0), st.floats(1e-3, 1e3))
def test_property_lambda_moments_are_consistent(theta, n, r, sigma):
    for mom in (H.angular_lambda_moments(theta, n), H.gaussian_lambda_moments_tr(theta, r, sigma, n)):
        assert np.all(np.isfinite(mom))
        assert mom.second >= 0 and mom.one_minus_second >= 0 and mom.variance >= 0
        assert mom.second + mom.one_minus_second + 2 * mom.cross == pytest.approx(1.0, rel=1e-9, abs=1e-9)
    assert 0.0 <= H.angular_lambda_moments(theta, n).mean <= 1.0
    assert -1e-12 <= H.gaussian_lambda(theta, r, sigma) <= 1.0 + 1e-12


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(NEW), st.integers(-5, 0), st.integers(-5, 0), st.floats(-1e6, 0.0))
def test_property_out_of_range_m_n_sigma_raise(name, m, n, sigma):
    with pytest.raises(ParameterError, match=r"m must be an integer in \[1, "):
        rfviz.create(name, m=m)
    if name.startswith("hybrid"):
        with pytest.raises(ParameterError, match=r"n must be an integer in \[1, inf\)"):
            rfviz.create(name, n=n)
    if name == "hybrid_gaussian":
        with pytest.raises(ParameterError, match=r"sigma must be a number in \(0, inf\)"):
            rfviz.create(name, sigma=sigma)


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.floats(0.0, 9.99e-4), st.floats(1.001e3, 1e12)), st.floats(-PI, PI))
def test_property_out_of_range_a_raises(modulus, arg):
    with pytest.raises(ParameterError, match="A must be a complex number with modulus"):
        rfviz.create("complex_exponential", A=complex(np.exp(1j * arg) * modulus))
    with pytest.raises(ParameterError, match="A_diag must be a complex number with modulus"):
        rfviz.create("complex_exponential_diag", A_diag=(1.0, complex(np.exp(1j * arg) * modulus)))
