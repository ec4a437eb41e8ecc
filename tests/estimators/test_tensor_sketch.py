"""TensorSketch (Pham & Pagh 2013): the derived exact variance against Monte Carlo (our sampler) and against
scikit-learn's PolynomialCountSketch, an independent implementation of the same estimator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mc_helpers import Z_TOL, assert_mc_matches_closed_form

from rfviz.estimators import create
from rfviz.maths import dp

RNG = np.random.default_rng(7)
# Points: generic correlated pairs, an orthogonal pair (t = 0, Var from S and N only), odd and even m, p = 1..4.
POINTS = [
    (1, 7, RNG.normal(size=5), None),
    (2, 8, RNG.normal(size=4), None),
    (3, 5, RNG.normal(size=6), None),
    (4, 16, RNG.normal(size=3), None),
    (2, 9, np.array([1.0, 0.0, 0.5]), np.array([0.0, 1.0, 0.2])),
]


def _pair(x: np.ndarray, y: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    if y is None:
        y = 0.6 * x + 0.5 * np.random.default_rng(len(x)).normal(size=x.shape)
    return x, y


@pytest.mark.slow
@pytest.mark.parametrize(("p", "m", "x", "y"), POINTS)
def test_exact_variance_matches_monte_carlo(p: int, m: int, x: np.ndarray, y: np.ndarray | None) -> None:
    x, y = _pair(x, y)
    assert_mc_matches_closed_form(create("tensor_sketch", p=p, m=m), x, y, trials=20000, seed=p + m)


def test_p1_is_the_countsketch_variance_and_parallel_axis_pairs_are_exact() -> None:
    x, y = RNG.normal(size=6), RNG.normal(size=6)
    n, t, s = (x @ x) * (y @ y), x @ y, np.sum(x * x * y * y)
    for m in (4, 5):
        got = math.exp(float(dp.log_var_tensor_sketch(dp.DotStats.from_pairs(x, y), 1, m)))
        assert got == pytest.approx((n + t * t - 2 * s) / m, rel=1e-12)
    e1 = np.eye(4)[0]
    assert dp.log_var_tensor_sketch(dp.DotStats.from_pairs(2 * e1, 3 * e1), 3, 8) == -math.inf


def test_variance_exceeds_the_naive_countsketch_formula_at_p2() -> None:
    # The [DP] authors' code uses a formula exact at p = 1 only; the exact variance is larger at p ≥ 2 here.
    x, y = _pair(RNG.normal(size=8), None)
    st = dp.DotStats.from_pairs(x, y)
    m = 16
    n, t, s = (x @ x) * (y @ y), x @ y, np.sum(x * x * y * y)
    naive = (n**2 + t**4 - 2 * s**2) / m
    exact = math.exp(float(dp.log_var_tensor_sketch(st, 2, m)))
    assert exact > naive


@pytest.mark.slow
@pytest.mark.parametrize(("p", "m"), [(2, 8), (3, 7)])
def test_matches_scikit_learn_polynomial_count_sketch(p: int, m: int) -> None:
    kernel_approximation = pytest.importorskip("sklearn.kernel_approximation")
    x, y = _pair(RNG.normal(size=5), None)
    data = np.stack([x, y])
    trials = 1500
    est = np.empty(trials)
    for i in range(trials):
        sk = kernel_approximation.PolynomialCountSketch(gamma=1.0, degree=p, coef0=0.0, n_components=m,
                                                        random_state=i)
        z = sk.fit_transform(data)
        est[i] = z[0] @ z[1]
    target = float(x @ y) ** p
    err2 = (est - target) ** 2
    var = math.exp(float(dp.log_var_tensor_sketch(dp.DotStats.from_pairs(x, y), p, m)))
    se = err2.std(ddof=1) / math.sqrt(trials)
    assert abs(err2.mean() - var) < Z_TOL * se, (err2.mean(), var, se)
    assert abs(est.mean() - target) < Z_TOL * est.std(ddof=1) / math.sqrt(trials)
