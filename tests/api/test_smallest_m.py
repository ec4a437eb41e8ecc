"""features-needed is the true smallest m also where the error is not monotone in m (block couplings).

Every answer is checked against the closed form itself at every m from 1 up to the answer (brute force, one
``log_mse`` call per m, independent of the block law the solver uses)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import rfviz
from rfviz.compute.features import _Problem, data_target, features_needed, grid_target, log_relative_sq
from rfviz.compute.smallest_m import block_law, solve_search


def _brute(name: str, params: dict, target, eps: float, upto: int) -> int | None:
    """The first m in 1..upto whose closed-form relative error is ≤ eps (None: none)."""
    for m in range(1, upto + 1):
        est = rfviz.create(name, m=m, **params)
        if log_relative_sq(est, target)[0] <= 2 * math.log(eps):
            return m
    return None


def test_issue_case_is_30_not_34():
    """The issue's case: the doubling search jumped 16 → 32 and bisected (32, 64] to 34; m = 30 meets ε."""
    res = rfviz.features_needed("trig", 0.0604444, r=0.8, theta=1.2, d=6, coupling="orthogonal")
    assert res.m == 30 and res.method == "blocks"
    assert res.relative_error <= 0.0604444 < res.relative_error_below


CASES = [(name, coupling, d) for name in ("trig", "positive", "gerf") for coupling in ("orthogonal", "simplex")
         for d in (3, 6, 9)]


@pytest.mark.parametrize("name,coupling,d", CASES)
def test_block_coupled_family_is_smallest(name, coupling, d):
    """Several ε per case, two of them set just above the error at a full block's end (where the next m is worse,
    the trap of a monotone search), one a plain value; the answer is the brute-force first m."""
    params = {"coupling": coupling}
    target = grid_target(0.7, 1.1, d)
    rel = {m: math.exp(0.5 * log_relative_sq(rfviz.create(name, m=m, **params), target)[0])
           for m in (2 * d, 5 * d, 7 * d + 2)}
    for eps in (rel[2 * d] * (1 + 1e-7), rel[5 * d] * (1 + 1e-7), rel[7 * d + 2]):
        got = features_needed(name, eps, target, params)
        assert got.m is not None, got.reason
        assert got.m == _brute(name, params, target, eps, got.m), (name, coupling, d, eps, got.m)


@pytest.mark.parametrize("coupling", ["orthogonal", "simplex"])
def test_worst_and_gram_targets_are_smallest(coupling):
    """The worst pair of a region and a data set's Gram matrix: the same brute-force check."""
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(5, 4)) * 0.3, rng.normal(size=(6, 4)) * 0.3
    for target in (grid_target([0.5, 1.0], [0.2, 2.0], 4, "worst"), data_target(q, k)):
        eps = math.exp(0.5 * log_relative_sq(rfviz.create("positive", m=12, coupling=coupling), target)[0]) * 1.0000001
        got = features_needed("positive", eps, target, {"coupling": coupling})
        assert got.m == _brute("positive", {"coupling": coupling}, target, eps, got.m)


def test_sorf_has_no_closed_form_so_no_m():
    """SORF and Fastfood have no closed-form MSE in rfviz: no m is claimed (Monte Carlo is the answer)."""
    for coupling in ("sorf", "fastfood"):
        res = rfviz.features_needed("trig", 0.1, r=0.8, theta=1.2, d=8, coupling=coupling)
        assert res.m is None and "no closed-form MSE" in res.reason


def test_block_law_is_read_off_the_closed_form_not_the_name():
    """The law is checked, not assumed: Maclaurin's optimized allocation and TensorSRHT at d = 6 (blocks of the
    padded 8) do not follow m²·MSE = m·A + P(m)·B with blocks of d; the orthogonal trig features do."""
    for name in ("maclaurin", "tensor_srht"):
        assert block_law(_Problem(name, {}, grid_target(0.8, 1.2, 6, isotropic=False), 0.0), None, 10**7) is None
    assert block_law(_Problem("trig", {"coupling": "orthogonal"}, grid_target(0.8, 1.2, 6), 0.0), None, 10**7)


@pytest.mark.slow  # over a few seconds: out of the one-minute unit tier
def test_search_path_is_exhaustive_below_small_answers():
    """TensorSRHT (no block law): the search's answer checked against every m below it."""
    target = grid_target(0.8, 1.2, 6, isotropic=False)
    for eps in (0.3, 0.15):
        got = features_needed("tensor_srht", eps, target)
        assert got.method == "search" and got.m == _brute("tensor_srht", {}, target, eps, got.m)
    problem = _Problem("tensor_srht", {}, target, 2 * math.log(0.3))
    assert solve_search(problem, None, 10_000).exhaustive is False  # above EXHAUSTIVE_BELOW: said, not hidden


@pytest.mark.parametrize("coupling", ["orthogonal", "simplex"])
@pytest.mark.parametrize("over,r,theta", [("point", 2.0, 2.5), ("worst", [0.7, 2.0], [1.1, 2.5]),
                                          ("mean", [0.7, 2.0], [1.1, 2.5])])
def test_positive_and_mixed_block_covariances_are_smallest(coupling, over, r, theta):
    """B > 0 (trig at r = 2, θ = 2.5: the coupling hurts; the bisection path) and regions mixing B > 0 and B < 0
    pairs (the bracket scan): the brute-force first m."""
    params = {"coupling": coupling}
    target = grid_target(r, theta, 4, over)
    for m0 in (9, 22):
        eps = math.exp(0.5 * log_relative_sq(rfviz.create("trig", m=m0, **params), target)[0]) * (1 + 1e-7)
        got = features_needed("trig", eps, target, params)
        assert got.m == _brute("trig", params, target, eps, got.m), (over, m0, got.m)


def test_features_map_cells_are_the_exact_answer_at_their_point():
    """The explorer's map for block couplings: each cell equals features_needed at that exact (r, θ)."""
    from rfviz.compute.features import features_needed_map

    r, theta = np.array([0.8, 1.4, 2.0]), np.array([0.4, 1.2, 2.5])
    cells = 10 ** features_needed_map("trig", {"coupling": "orthogonal"}, 6, r, theta, 0.0604444)
    for i, rr in enumerate(r):
        for j, tt in enumerate(theta):
            point = rfviz.features_needed("trig", 0.0604444, r=float(rr), theta=float(tt), d=6, coupling="orthogonal")
            assert (None if np.isnan(cells[i, j]) else round(cells[i, j])) == point.m


@pytest.mark.slow
def test_maclaurin_search_is_exhaustive_below_its_answer():
    """Maclaurin's optimized allocation (Algorithm 3 at every m: about 40 s): the brute-force first m."""
    target = grid_target(0.8, 1.2, 6, isotropic=False)
    got = features_needed("maclaurin", 0.15, target)
    assert got.method == "search" and got.m == _brute("maclaurin", {}, target, 0.15, got.m)
