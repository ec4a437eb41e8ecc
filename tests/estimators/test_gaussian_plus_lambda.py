"""hybrid_gaussian with its λ estimated by ++ (positive) features (HRF App. F extension, reference F5 [derived])."""

from __future__ import annotations

import numpy as np
import pytest
from mc_helpers import Z_TOL, assert_mc_matches_closed_form

from rfviz import gram_engine as gram
from rfviz.estimators import create
from rfviz.geometry import canonical_pair
from rfviz.maths import hrf as hy


def test_second_moment_matches_the_reference_golden_value() -> None:
    # reference F5: E[λ̂²] = 0.728821 at r = 0.7, θ = 0.8, n = 3, σ = 0.7 (verified there by 4·10⁶ MC replicates)
    x, y = canonical_pair(0.7, 0.8, 2)
    mom = hy.gaussian_lambda_moments(np.sum((x - y) ** 2), 0.7, 0.7, 3, np.sum((x + y) ** 2))
    assert float(mom.second) == pytest.approx(0.728821, abs=5e-7)
    trig = hy.gaussian_lambda_moments(np.sum((x - y) ** 2), 0.7, 0.7, 3)
    assert float(mom.mean) == pytest.approx(float(trig.mean)) and float(mom.variance) != float(trig.variance)


@pytest.mark.slow
@pytest.mark.parametrize(("r", "theta", "shared"), [(0.7, 0.8, True), (1.0, 2.5, False), (0.4, 0.3, True)])
def test_closed_form_matches_monte_carlo(r: float, theta: float, shared: bool) -> None:
    x, y = canonical_pair(r, theta, 2)
    est = create("hybrid_gaussian", m=8, n=3, sigma=0.7, lambda_rf="positive", shared=shared)
    assert_mc_matches_closed_form(est, x, y, trials=30000, seed=3)


@pytest.mark.slow
def test_unequal_norms_with_fixed_r_norm() -> None:
    est = create("hybrid_gaussian", m=8, n=2, sigma=0.7, lambda_rf="positive", r_norm=1.0)
    assert_mc_matches_closed_form(est, np.array([1.1, 0.2, 0.0]), np.array([0.3, -0.5, 0.4]), trials=30000, seed=4)


@pytest.mark.slow
def test_feature_map_gives_the_same_gram_error() -> None:
    rng = np.random.default_rng(0)
    q = rng.normal(size=(4, 3))
    k = rng.normal(size=(3, 3))
    q = 0.5 * q / np.linalg.norm(q, axis=1, keepdims=True)
    k = 0.5 * k / np.linalg.norm(k, axis=1, keepdims=True)
    est = create("hybrid_gaussian", m=8, n=3, sigma=0.7, lambda_rf="positive")
    res = gram.gram_error(est, q, k, repeats=1500, seed=2)
    assert abs(res.z) < Z_TOL, (res.frobenius_sq_closed_form, res.frobenius_sq_mc, res.stderr)
