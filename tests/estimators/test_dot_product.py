"""Dot-product kernel features (poly_sketch, tensor_srht, maclaurin): golden values, Monte Carlo, properties.

Golden values are the reference's (shared/reference/dot_product_features.md §9, §6, §7), typed in here; where the
reference prints only 6 digits, the 1e-9 comparison is against the reference's own closed expression or its
checks script (shared/reference/checks/dot_product_features_checks.py), loaded when available.
"""

from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst
from scipy.stats import poisson

import rfviz
import rfviz.cli
from rfviz.api.mse_command import mse_report
from rfviz.engine import monte_carlo
from rfviz.maths import dp
from rfviz.params import ParameterError

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
CHECKS = ROOT.parent / "shared" / "reference" / "checks" / "dot_product_features_checks.py"
Z_TOL = 4.0


def _unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, float)
    return a / np.linalg.norm(a)


# The reference's test pairs (§6): "pos" (Δ > 0), "mix" (Δ < 0), and a d = 6 pair with non-unit norms.
X_POS, Y_POS = _unit([0.9, 0.3, 0.5, 0.2]), _unit([0.4, 0.8, 0.1, 0.6])
X_MIX, Y_MIX = np.array([1.0, -0.8, 0.3, 0.5]), np.array([0.7, 0.9, -0.4, 0.2])
X6, Y6 = 1.3 * _unit([0.2, 1.0, 0.4, 0.7, 0.1, 0.5]), 0.8 * _unit([0.6, 0.1, 0.9, 0.3, 0.8, 0.2])
X4 = np.stack([X_POS, X_MIX, 0.9 * _unit([0.7, 0.2, 0.5, 0.4])])
Y4 = np.stack([Y_POS, Y_MIX, 1.1 * _unit([0.3, 0.6, 0.2, 0.7])])


def _stats(x: np.ndarray, y: np.ndarray) -> dp.DotStats:
    return dp.DotStats.from_pairs(x, y)


def _flat(r: float, theta: float, d: int) -> dp.DotStats:
    return _stats(*dp.flat_pair(r, theta, d))


def _reference_module():
    if not CHECKS.exists():
        pytest.skip(f"reference checks script not found at {CHECKS} (needs the shared/ folder beside the repo)")
    spec = importlib.util.spec_from_file_location("dp_reference_checks", CHECKS)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ----------------------------------------------------------------------------------------- golden values (§9)
def test_golden_values_g1_to_g9():
    c = math.cos(math.pi / 3)
    st = _stats(np.array([1.0, 0.0]), np.array([c, math.sin(math.pi / 3)]))
    assert math.exp(dp.log_var_poly(st, 3, 1.0, 3.0, 1)) == pytest.approx(3.359375, rel=1e-9)  # G1 Eq. 20
    assert math.exp(dp.log_var_poly(st, 3, 0.5, 2.0, 1)) == pytest.approx(1.9375, rel=1e-9)  # G2 Eq. 21
    flat = _flat(1.0, math.pi / 4, 4)
    assert math.exp(dp.log_var_poly(flat, 2, 1.0, 1.0, 1)) == pytest.approx(2.0, rel=1e-9)  # G3 Eq. 18
    assert math.exp(dp.log_var_poly(flat, 2, 0.5, 1.0, 1)) == pytest.approx(1.3125, rel=1e-9)  # G4 Eq. 19
    assert math.exp(dp.log_var_tsrht(flat, 2, 1.0, 4)) == pytest.approx(1 / 3, rel=1e-9)  # G5 Eq. 28
    assert math.exp(dp.log_var_tsrht(flat, 2, 0.5, 4)) == pytest.approx(0.1875, rel=1e-9)  # G6 Eq. 33
    assert math.exp(dp.log_var_poly(flat, 2, 0.5, 1.0, 1, "real_part")) == pytest.approx(0.8125, rel=1e-9)  # G7
    fig12 = _stats(np.full(2, math.sqrt(0.5)), np.full(2, math.sqrt(0.5)))
    assert math.exp(dp.log_var_tsrht(fig12, 2, 0.5, 3)) == pytest.approx(0.25, rel=1e-9)  # G8
    assert math.exp(dp.log_var_tsrht(fig12, 1, 1.0, 3)) == pytest.approx(1 / 9, rel=1e-9)  # G9


def test_golden_values_g10_g11_optimized_maclaurin():
    flat = _flat(1.0, math.pi / 4, 4)
    log_a = dp.log_maclaurin_coefficients("exponential", 10)
    g10 = dp.log_mse_optimized_maclaurin(flat, log_a, [8, 4, 2], kernel="exponential", q=0.5)
    g11 = dp.log_mse_optimized_maclaurin(flat, log_a, [8, 4, 2], kernel="exponential", q=1.0)
    assert math.exp(g10) == pytest.approx(0.2013178651, rel=1e-9)
    assert math.exp(g11) == pytest.approx(0.295284879, rel=1e-9)


def test_golden_g12_q_sweep_flat_configuration():
    r, th, d, p, m = 1.0, math.pi / 6, 8, 3, 16
    st = _flat(r, th, d)
    c2 = math.cos(th) ** 2
    printed = {0.0: (0.685547, 0.685547, 0.950195, 0.568240), 0.25: (0.326860, 0.276752, 0.428207, 0.238061),
               0.5: (0.241821, 0.188965, 0.308594, 0.164062)}
    for q, row in printed.items():
        kappa, rho2 = (2 * q - 1) ** 2 + 1, (2 * q - 1) ** 2
        # The reference's §7 closed expressions, to 1e-9:
        rad = r ** (4 * p) * ((1 + kappa * (c2 - 1 / d)) ** p - c2**p) / m
        gau = r ** (4 * p) * ((1 + kappa * c2) ** p - c2**p) / m
        mp = r**4 * (1 / d + rho2 * (1 - 1 / d) + 2 * (c2 - 1 / d))
        re = (0.5 * ((r**4 * (1 + kappa * (c2 - 1 / d))) ** p + mp**p) - r ** (4 * p) * c2**p) / m
        ours = [math.exp(dp.log_var_poly(st, p, q, 1.0, m)), math.exp(dp.log_var_poly(st, p, q, 1.0, m, "real_part")),
                math.exp(dp.log_var_poly(st, p, q, dp.fourth_moment("gaussian", q), m)),
                math.exp(dp.log_var_tsrht(st, p, q, m))]
        np.testing.assert_allclose(ours[:3], [rad, re, gau], rtol=1e-9)
        np.testing.assert_allclose(ours, row, atol=6e-7)  # the printed 6-digit table
        for q_mirror in (1 - q,):
            assert math.exp(dp.log_var_poly(st, p, q_mirror, 1.0, m)) == pytest.approx(ours[0], rel=1e-12)


def test_golden_g13_block_pairs_and_g14_poisson_collapse():
    assert [int(dp.block_pairs(D, d)) for D, d in [(6, 4), (12, 8), (3, 2), (8, 4)]] == [14, 68, 2, 24]
    # G14: E k̂(x, x) of Gaussian-kernel Maclaurin truncated at p = 9, |x|² = 4, is the Poisson(4) CDF at 9.
    x = np.array([2.0, 0.0])
    st = _stats(x, x)
    bias = math.exp(dp.log_abs_truncation_bias("exponential", st, 9) - 0.5 * st.sum_sq)  # k(x,x) = 1
    expected_mean = 1.0 - bias
    assert expected_mean == pytest.approx(poisson.cdf(9, 4.0), rel=1e-9)
    assert expected_mean == pytest.approx(0.991868, abs=5e-7)


def test_fig12_table_sawtooth_and_surrogate():
    st = _stats(np.full(2, math.sqrt(0.5)), np.full(2, math.sqrt(0.5)))
    table = {(1, 1.0): [1, 0, 1 / 9, 0, 0.04, 0], (1, 0.5): [0.5, 0, 1 / 18, 0, 0.02, 0],
             (2, 1.0): [3, 1, 7 / 9, 0.5, 0.44, 1 / 3], (2, 0.5): [1.25, 0.25, 0.25, 0.125, 0.13, 1 / 12]}
    D = np.arange(1, 7)
    for (n, q), row in table.items():
        got = np.exp(dp.log_var_tsrht(st, n, q, D))
        np.testing.assert_allclose(got, row, rtol=1e-9, atol=1e-15)
    sur = dp.surrogate_tsrht_normalised(st, 2, 1.0, D) * math.exp(2 * st.log_nn)
    np.testing.assert_allclose(sur, [3, 1, 2 / 3, 0.5, 0.4, 1 / 3], rtol=1e-9)


def test_algorithm3_reproduces_reference_allocation_table():
    """§6 "Alg. 3 on one pair" (printed to 5 digits): p*, D_n and g for four sketches at r ∈ {1, 1.5}."""
    table = {
        (1.0, "poly", 0.5): (2, (10, 6), 0.13473), (1.0, "poly", 1.0): (1, (16,), 0.16555),
        (1.0, "tensor_srht", 0.5): (2, (4, 12), 0.02067), (1.0, "tensor_srht", 1.0): (2, (4, 12), 0.03282),
        (1.5, "poly", 0.5): (2, (6, 10), 2.58045), (1.5, "poly", 1.0): (2, (6, 10), 3.23188),
        (1.5, "tensor_srht", 0.5): (2, (4, 12), 1.50714), (1.5, "tensor_srht", 1.0): (2, (4, 12), 1.81860),
    }
    for (r, sketch, q), (p, alloc, g) in table.items():
        plan = dp.optimize_maclaurin(_flat(r, math.pi / 4, 4), kernel="exponential", total=16, p_min=1, p_max=10,
                                     sketch=sketch, q=q)
        assert (plan.p, plan.alloc) == (p, alloc)
        assert plan.objective == pytest.approx(g, abs=6e-6)


def test_reference_p7_cancellation_free_form_is_off_by_delta():
    """Reference P7 prints M − t² = (|x|²|y|² − t²) + (κ−1)Δ + (μ4−1)S; Eq. 16 gives κΔ. At G3's pair
    (t² = ½, S = ¼, Δ = ¼) Eq. 16 gives M = 1.5, so M − t² = 1, whereas P7's form gives 0.75."""
    st = _flat(1.0, math.pi / 4, 4)
    q, mu4 = 1.0, 1.0
    nn, t2, s = 1.0, 0.5, 0.25
    m_eq16 = mu4 * s + nn - s + ((2 * q - 1) ** 2 + 1) * (t2 - s)
    p7 = (nn - t2) + (2 * q - 1) ** 2 * (t2 - s) + (mu4 - 1) * s
    assert m_eq16 - t2 == pytest.approx(1.0) and p7 == pytest.approx(0.75)
    assert float(dp.moment_gap(st, q, mu4)) == pytest.approx(m_eq16 - t2, rel=1e-12)


def test_closed_forms_match_reference_implementation_on_random_pairs():
    ref = _reference_module()
    rng = np.random.default_rng(4)
    for _ in range(40):
        d = int(rng.choice([2, 4, 8]))
        x, y = rng.standard_normal(d) * rng.uniform(0.3, 1.5), rng.standard_normal(d) * rng.uniform(0.3, 1.5)
        rs, st = ref.pair_stats(x, y), _stats(x, y)
        p, q, D = int(rng.integers(1, 5)), float(rng.uniform()), int(rng.integers(1, 3 * d))
        for mu4 in (1.0, 3.0, (2 * q - 1) ** 2 + 2):
            np.testing.assert_allclose(math.exp(dp.log_var_poly(st, p, q, mu4, D)), ref.var_poly(rs, p, q, mu4, D),
                                       rtol=1e-9)
            np.testing.assert_allclose(math.exp(dp.log_var_poly(st, p, q, mu4, D, "real_part")),
                                       ref.var_poly_real(rs, p, q, mu4, D), rtol=1e-9)
        scale = (rs["nx2"] * rs["ny2"]) ** p
        for ours, theirs in ((dp.var_tsrht_normalised(st, p, q, D), ref.var_tsrht(rs, p, q, D)),
                             (dp.var_tsrht_normalised(st, p, q, D, "real_part"), ref.var_tsrht_real(rs, p, q, D)),
                             (dp.surrogate_tsrht_normalised(st, p, q, D), ref.surrogate(rs, p, q, D))):
            np.testing.assert_allclose(ours * scale, max(theirs, 0.0), rtol=1e-8, atol=1e-12 * scale)


# ----------------------------------------------------------------------------------------- Monte Carlo
def _mc_check(est, x, y, trials=20000, seed=0, unbiased=True):
    res = monte_carlo(est, x, y, trials=trials, seed=seed, device="cpu")
    log_mse = est.log_mse(np.atleast_2d(x), np.atleast_2d(y)).ravel()
    z = res.z_against(log_mse)
    assert np.all(np.abs(z) < Z_TOL), f"{est}: z = {z}, closed {np.exp(log_mse)}, MC {res.mse}"
    if unbiased:
        assert np.all(np.abs(res.bias_z) < Z_TOL), f"{est}: bias z = {res.bias_z}"
    return res, z


@pytest.mark.slow
@pytest.mark.parametrize("params", [
    {"p": 2, "q": 1.0, "m": 1},
    {"p": 3, "q": 0.5, "m": 1},
    {"p": 2, "q": 0.25, "m": 3, "basis": "plus_minus_i"},
    {"p": 2, "q": 0.5, "m": 4, "basis": "gaussian"},
    {"p": 2, "q": 0.8, "m": 2, "basis": "gaussian", "variance": "real_part"},
    {"p": 3, "q": 0.5, "m": 4, "basis": "unit_circle", "variance": "real_part"},
    {"p": 2, "q": 0.3, "m": 4, "basis": "unit_circle"},
    {"p": 2, "q": 0.7, "m": 8, "variance": "real_part"},
])
def test_poly_sketch_closed_form_matches_monte_carlo(params):
    # Three pairs (Δ > 0, Δ < 0, non-unit norms); p ≤ 3 and norms ≤ 1.1 keep the fourth moment of the
    # squared error moderate (p ≥ 4 is heavy-tailed, reference P16), so 20k trials give a meaningful SE.
    _mc_check(rfviz.create("poly_sketch", **params), X4, Y4, seed=3)


@pytest.mark.slow
@pytest.mark.parametrize("params", [
    {"p": 2, "q": 1.0, "m": 4},
    {"p": 2, "q": 0.5, "m": 4},
    {"p": 3, "q": 1.0, "m": 6},
    {"p": 3, "q": 0.5, "m": 5, "basis": "plus_minus_i"},
    {"p": 2, "q": 0.3, "m": 8, "basis": "unit_circle"},
    {"p": 2, "q": 0.5, "m": 3, "variance": "real_part"},
    {"p": 3, "q": 0.5, "m": 7, "variance": "real_part", "basis": "unit_circle"},
])
def test_tensor_srht_closed_form_matches_monte_carlo(params):
    _mc_check(rfviz.create("tensor_srht", **params), X4, Y4, seed=5)


@pytest.mark.slow
def test_tensor_srht_pads_to_power_of_two():
    # d = 6 is padded to 8 (c(D, 8) and 1/(8 − 1) in Theorem 10); d = 3 to 4.
    x3, y3 = np.array([[0.6, 0.5, 0.4], [0.9, -0.3, 0.2]]), np.array([[0.2, 0.7, 0.5], [0.4, 0.6, -0.5]])
    _mc_check(rfviz.create("tensor_srht", p=2, q=0.5, m=6), x3, y3, seed=2)
    _mc_check(rfviz.create("tensor_srht", p=3, q=1.0, m=10), np.stack([X6, X6[::-1]]), np.stack([Y6, Y6]), seed=2)
    assert [dp.padded_dim(d) for d in (1, 2, 3, 6, 8, 9)] == [2, 2, 4, 8, 8, 16]


@pytest.mark.slow
def test_tensor_srht_sawtooth_in_number_of_features():
    """Fig. 12 pair (d = 2, x = y = (√½, √½)), p = 1, real: Var = 1, 0, 1/9, 0, 1/25 for D = 1..5. The sampled
    MSE is zero (to round-off) at D = 2, 4 and rises again at D = 3, 5, matching Theorem 5."""
    x = np.full((1, 2), math.sqrt(0.5))
    mse = {}
    for m in (2, 3, 4, 5):
        est = rfviz.create("tensor_srht", p=1, q=1.0, m=m)
        res = monte_carlo(est, x, x, trials=20000, seed=m, device="cpu")
        mse[m] = (float(res.mse[0]), float(res.mse_stderr[0]))
        if m % 2:  # |k̂ − k| = 1/D on every draw here, so the sampled MSE is exact (its SE is round-off)
            assert mse[m][0] == pytest.approx(math.exp(est.log_mse(x, x)[0]), rel=1e-9)
        else:
            assert est.log_mse(x, x)[0] == -np.inf and mse[m][0] < 1e-25
    assert mse[3][0] > mse[2][0] + 0.1 and mse[5][0] > mse[4][0] + 0.03
    # p = 2, complex: 0.25, 0.25, 0.125, 0.13 at D = 2..5, a rise from D = 4 to 5 (random squared error here).
    for m in (3, 5):
        _mc_check(rfviz.create("tensor_srht", p=2, q=0.5, m=m), x, x, seed=9)


@pytest.mark.slow
def test_shared_permutation_breaks_theorem_10():
    """Reference P2: sharing one permutation across degrees (literal Eq. 25) keeps K̂ unbiased but changes the
    variance (+22 % at the "pos" pair, d = 4, p = 2, real, D = 4); per-degree permutations match Theorem 5."""
    x, y = X_POS[None], Y_POS[None]
    per_degree = rfviz.create("tensor_srht", p=2, q=1.0, m=4)
    shared = rfviz.create("tensor_srht", p=2, q=1.0, m=4, permutation="shared")
    assert not shared.closed_form_available()
    _mc_check(per_degree, x, y, trials=40000, seed=7)
    res = monte_carlo(shared, x, y, trials=40000, seed=7, device="cpu")
    assert abs(float(res.bias_z[0])) < Z_TOL
    z = float(res.z_against(per_degree.log_mse(x, y))[0])
    assert z > 8, f"shared permutations should exceed Theorem 5's variance, z = {z}"
    assert float(res.mse[0]) == pytest.approx(0.52259, rel=0.05)  # the reference's MC value (300k trials)


def _expected_maclaurin(est, x, y):
    """E k̂ = a_0 + Σ_{n≤p*} a_n t^n (times the Gaussian prefactor)."""
    t = np.sum(x * y, -1)
    a = np.exp(est.log_coefficients)
    top = len(est.plan(x.shape[-1]).alloc) if est.params["method"] == "optimized" else est.top_degree
    mean = sum(a[n] * t**n for n in range(top + 1))
    if est.params["kernel"] == "gaussian":
        mean = mean * np.exp(-0.5 * (np.sum(x * x, -1) + np.sum(y * y, -1)))
    return mean


@pytest.mark.slow
@pytest.mark.parametrize("params", [
    {"q": 0.5, "m": 8, "p": 3},
    {"q": 1.0, "m": 10, "p": 4, "kernel": "gaussian", "variance": "real_part"},
    {"q": 0.5, "m": 12, "p": 3, "sketch": "tensor_srht", "kernel": "polynomial", "kernel_degree": 3, "nu": 0.5},
    {"q": 1.0, "m": 8, "p": 3, "method": "random", "kernel": "polynomial", "kernel_degree": 3},
    {"q": 0.5, "m": 8, "p": 3, "method": "random", "variance": "real_part", "basis": "gaussian"},
    {"q": 0.5, "m": 6, "p": 2, "method": "random", "kernel": "gaussian", "c": 3.0},
])
def test_maclaurin_closed_form_matches_monte_carlo(params):
    # Maclaurin features are biased by truncation (P14): check the MSE (= Var + bias²) against the closed form,
    # and the sampled mean against E k̂ = a_0 + Σ_{n≤p} a_n t^n instead of against k.
    est = rfviz.create("maclaurin", **params)
    res, _ = _mc_check(est, X4, Y4, seed=11, unbiased=False)
    se = res.ratio_sd * np.exp(res.log_scale) / math.sqrt(res.trials)
    z_mean = (res.mean - _expected_maclaurin(est, X4, Y4)) / np.where(se > 0, se, 1.0)
    assert np.all(np.abs(z_mean) < Z_TOL), z_mean


def test_random_maclaurin_variance_matches_reference_worked_example():
    """Reference F7 worked example: (x·y + ½)^5, real Rademacher, D = 16, μ ∝ 2^{−(n+1)} on 1..5: Var = 103.07."""
    x, y = 0.9 * _unit([0.7, 0.2, 0.5, 0.4]), 1.1 * _unit([0.3, 0.6, 0.2, 0.7])
    log_a = dp.log_maclaurin_coefficients("polynomial", 5, 5, 0.5)
    v = math.exp(dp.log_var_random_maclaurin(_stats(x, y), log_a, dp.kar_karnick_measure(5, 2.0), 16, q=1.0,
                                             mu4=1.0))
    assert v == pytest.approx(103.066, abs=6e-4)


# ----------------------------------------------------------------------------------------- properties
pair_strategy = hst.integers(2, 8).flatmap(lambda d: hst.tuples(
    hst.lists(hst.floats(-2, 2), min_size=d, max_size=d), hst.lists(hst.floats(-2, 2), min_size=d, max_size=d)))


@settings(max_examples=60, deadline=None)
@given(pair=pair_strategy, q=hst.floats(0, 1), p=hst.integers(1, 6), m=hst.integers(1, 20),
       basis=hst.sampled_from(dp.BASES), variance=hst.sampled_from(dp.VARIANCES))
def test_variance_depends_on_q_only_through_2q_minus_1_squared(pair, q, p, m, basis, variance):
    x, y = np.array(pair[0]), np.array(pair[1])
    for name, extra in (("poly_sketch", {"basis": basis}),
                        ("tensor_srht", {"basis": basis if basis != "gaussian" else "unit_circle"})):
        a = rfviz.create(name, p=p, q=q, m=m, variance=variance, **extra).log_mse(x, y)
        b = rfviz.create(name, p=p, q=1.0 - q, m=m, variance=variance, **extra).log_mse(x, y)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(pair=pair_strategy, p=hst.integers(1, 6), basis=hst.sampled_from(dp.UNIT_MODULUS_BASES))
def test_complex_beats_real_iff_dot_squared_exceeds_s(pair, p, basis):
    x, y = np.array(pair[0]), np.array(pair[1])
    nn, t, s = (x @ x) * (y @ y), x @ y, np.sum(x * x * y * y)
    delta = t * t - s
    if abs(delta) <= 1e-6 * nn or nn < 1e-6:  # Δ = 0 exactly: q has no effect (checked elsewhere)
        return
    complex_ = rfviz.create("poly_sketch", p=p, q=0.5, m=4, basis=basis).log_mse(x, y)
    real = rfviz.create("poly_sketch", p=p, q=1.0, m=4, basis=basis).log_mse(x, y)
    assert (complex_ < real) == (delta > 0)


def test_canonical_embedding_has_delta_zero_so_q_has_no_effect():
    est = [rfviz.create("poly_sketch", p=3, q=q) for q in (0.0, 0.3, 0.5, 1.0)]
    grids = [e.log10_mse_grid(np.array([0.5, 1.0, 2.0]), np.array([[0.2], [1.0], [2.5]]), 6) for e in est]
    for g in grids[1:]:
        np.testing.assert_allclose(g, grids[0], rtol=1e-12)


# ----------------------------------------------------------------------------------------- geometry
def test_embeddings_flat_and_rotation_average():
    x, y = dp.flat_pair(1.7, 0.8, 6)
    assert np.sum(x * x * y * y) == pytest.approx(1.7**4 / 6, rel=1e-12)
    assert x @ y == pytest.approx(1.7**2 * math.cos(0.8), rel=1e-12)
    with pytest.raises(ParameterError, match="d must be an even integer"):
        dp.flat_pair(1.0, 0.5, 5)
    # rotation_average: the fixed orientations reproduce E_rot[S] = r⁴(1 + 2cos²θ)/(d + 2) within their SE.
    for d, r, th in [(4, 1.0, 0.7), (16, 1.5, 1.2)]:
        xr, yr = dp.rotation_average_pairs(r, th, d)
        s = np.sum(xr * xr * yr * yr, -1)
        z = (s.mean() - dp.expected_rotation_s(r, th, d)) / (s.std(ddof=1) / math.sqrt(len(s)))
        assert abs(z) < Z_TOL


@pytest.mark.parametrize("name", ["poly_sketch", "tensor_srht", "maclaurin"])
@pytest.mark.parametrize("embedding", ["canonical", "flat", "rotation_average"])
def test_grid_closed_form_equals_pair_closed_form(name, embedding):
    est = rfviz.create(name)
    r, th = np.array([[0.4], [1.3]]), np.array([0.3, 1.5, 2.9])
    grid = est.log10_mse_grid(r, th, 4, embedding)
    x, y = rfviz.geometry.embed_pair(r, th, 4, embedding)
    direct = est.log_mse(x, y, d=4) / math.log(10)
    if embedding == "rotation_average":
        direct = dp.log_mean_exp(direct * math.log(10), axis=-1) / math.log(10)
    assert grid.shape == (2, 3)
    np.testing.assert_allclose(grid, direct, rtol=1e-10)


@pytest.mark.slow
def test_rotation_average_cli_matches_monte_carlo():
    rep = mse_report("poly_sketch", {"p": 2, "q": 0.5, "m": 8},
                     {"embedding": "rotation_average", "d": 8, "r": 1.0, "theta": 0.7}, trials=20000, seed=1,
                     device="cpu")
    assert rep["inputs"]["embedding"] == "rotation_average" and rep["mc"]["pairs"] == dp.ROTATIONS
    assert abs(rep["mc"]["z_vs_closed_form"]) < Z_TOL


# ----------------------------------------------------------------------------------------- protocol, numerics
@pytest.mark.slow  # closed forms on 21×13 grids in three embeddings: seconds of CPU
@pytest.mark.parametrize("name,params", [("poly_sketch", {"p": 30, "q": 0.5}), ("tensor_srht", {"p": 30}),
                                         ("maclaurin", {"p": 30}), ("maclaurin", {"kernel": "gaussian"}),
                                         ("maclaurin", {"method": "random", "p": 12})])
def test_log_mse_finite_up_to_r_20(name, params):
    est = rfviz.create(name, **params)
    r, th = np.linspace(0.0, 20, 21), np.linspace(0.0, math.pi, 13)[:, None]
    for embedding in ("canonical", "flat", "rotation_average"):
        out = est.log10_mse_grid(r, th, 8, embedding)
        assert not np.any(np.isnan(out)) and np.all(out[:, 1:] < np.inf)


def test_exact_cases_give_minus_infinity():
    x = np.array([[1.3]])
    assert rfviz.create("poly_sketch", p=4).log_mse(x, -x)[0] == -np.inf  # d = 1, |z| = 1: footnote 12
    assert rfviz.create("tensor_srht", p=1, m=8).log_mse(X_POS, Y_POS) == -np.inf  # p = 1, D ∈ dℕ
    assert rfviz.create("poly_sketch").log_mse(np.zeros(3), np.ones(3)) == -np.inf


def test_cli_mse_flat_embedding_and_errors(capsys):
    code = rfviz.cli.main(["mse", "poly_sketch", "p=3", "q=0.25", "m=16", "embedding=flat", "d=8", "r=1",
                           f"theta={math.pi / 6}", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    obj = json.loads(out.out)
    assert obj["mse"] == pytest.approx(0.326860, abs=6e-7) and obj["params"]["variance"] == "complex"
    assert obj["inputs"]["embedding"] == "flat" and obj["kernel"] == "polynomial"
    for bad in (["poly_sketch", "embedding=nope"], ["poly_sketch", "embedding=flat", "d=3"],
                ["tensor_srht", "basis=gaussian"], ["poly_sketch", "variance=imag"],
                ["poly_sketch", "x=1,2", "y=2,1", "embedding=flat"]):
        assert rfviz.cli.main(["mse", *bad]) == 2, bad
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err


# ----------------------------------------------------------------------------------------- figures
def test_figure_builders_return_labelled_figures():
    from rfviz.compute import dp as figs

    for name in figs.__all__:
        fig = getattr(figs, name)()
        assert fig.data and fig.layout.title.text, name
    # The sawtooth view reproduces the Fig. 12 row (d = 2, x = y = (√½, √½), p = 1, real): 1, 0, 1/9, 0, 1/25.
    saw = figs.variance_vs_m(r=1.0, theta=0.0, d=2, p=1, m_max=5, q_values=(1.0,))
    np.testing.assert_allclose(np.nan_to_num(np.asarray(saw.data[0].y, float)), [1, 0, 1 / 9, 0, 0.04], atol=1e-12)
    # Ratio map: complex wins (log2 ratio < 0) below the crossover cos²θ* = 1/d and loses above it.
    ratio = figs.real_complex_ratio_map(p=2, d_values=(4,), num_theta=7).data[0].z[0]  # θ = 0, π/6, …, π
    assert ratio[1] < 0 < ratio[3] and ratio[5] < 0
    alloc = figs.maclaurin_allocation(m=16, p_max=10, d=4, r=1.0)
    assert all(sum(t.y) == 16 for t in alloc.data)
