"""How many features (rfviz.compute.features, rfviz.features_needed, ``rfviz features-needed``).

The closed-form answers are checked against themselves where that is a real check (m meets ε, m − 1 misses it, the
c/m law the inversion relies on), and against Monte Carlo in the slow tier: at the predicted m for ε = 10 % and 1 %,
the sampled relative error is within ±10 % of ε, for five estimators (three iid with exact inversion, one coupled
found by search, one hybrid with its split chosen) × three settings (a pair, the worst pair of an (r, θ) region,
the Gram matrix of a bundled data set). The tolerance is from the standard error: the test first requires four
standard errors of the sampled relative error to fit inside ±10 % of ε (so it can fail), then the sampled value
inside that band, and within 4.5 standard errors of the closed form's prediction at m.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import rfviz
from rfviz.cli import main
from rfviz.compute.features import LADDER_RATIO, Target, data_target, features_needed, features_needed_map, grid_target
from rfviz.geometry import embed_pair
from rfviz.params import Cost, ParameterError, time_budget_scope

POINT = {"r": 0.8, "theta": 1.0, "d": 4}
REGION = {"r": [0.4, 0.7], "theta": [0.5, 1.5, 2.5], "d": 4}
DATA = {"data": "iris", "queries": 8, "keys": 8, "scale": 0.4}
ESTIMATORS = [("trig", {}), ("positive", {}), ("gerf", {}), ("positive", {"coupling": "orthogonal"}),
              ("hybrid_angular", {})]


@pytest.mark.parametrize(("name", "params"), ESTIMATORS)
@pytest.mark.parametrize("setting", [POINT, REGION, DATA], ids=["point", "region", "data"])
def test_m_meets_eps_and_m_minus_one_misses(name: str, params: dict, setting: dict) -> None:
    for eps in (0.1, 0.01):
        res = rfviz.features_needed(name, eps, **setting, **params)
        assert res.m is not None and res.reason is None
        assert res.relative_error <= eps < res.relative_error_below
        # the answer's own relative errors are the closed form's at m and m - 1
        extra = {"n": res.n} if res.n is not None else {}
        target = (data_target(*_data_pairs()) if "data" in setting else
                  grid_target(setting["r"], setting["theta"], setting["d"], res.over))
        below = features_needed(name, res.relative_error_below * (1 + 1e-9), target, {**params, **extra})
        assert below.m == res.m - 1


def _data_pairs() -> tuple[np.ndarray, np.ndarray]:
    from rfviz import data

    ds = data.load("iris", queries=8, keys=8, steps=data.DATA_DEFAULTS.preprocess, scale=0.4, seed=0)
    return ds.queries, ds.keys


@pytest.mark.parametrize(("name", "params", "exact"), [
    ("trig", {}, True), ("positive", {}, True), ("positive_antithetic", {}, True), ("gerf", {"A": -0.05}, True),
    ("complex_exponential", {}, True), ("hybrid_angular", {"n": 3}, True), ("poisson", {}, True),
    ("trig", {"coupling": "orthogonal"}, False), ("positive", {"coupling": "simplex"}, False),
    ("tensor_srht", {}, False)])
def test_inversion_only_where_mse_is_c_over_m(name: str, params: dict, exact: bool) -> None:
    """The method follows the c/m law measured directly on the closed form: m·MSE(m) constant or not."""
    est = rfviz.get_estimator(name)
    x, y = rfviz.create(name, m=1, **params).grid_pairs(0.7, 1.2, 6)
    scaled = [float(np.ravel(est(m=m, **params).log_mse(x, y, 6))[0]) + math.log(m) for m in (2, 5, 37, 900)]
    assert (max(scaled) - min(scaled) < 1e-9) == exact
    res = rfviz.features_needed(name, 0.2, r=0.7, theta=1.2, d=6, **params)
    assert (res.method == "exact") == exact and res.method in ("exact", "blocks", "search")
    assert res.relative_error <= 0.2 < res.relative_error_below


def test_exact_inversion_is_ceil_c_over_eps_squared() -> None:
    res = rfviz.features_needed("trig", 0.05, r=1.0, theta=2.0, d=3)
    c = res.to_dict()["mse_times_m_over_k2"]
    assert res.m == math.ceil(c / 0.05**2)


def test_hybrid_split_is_the_shortest_feature_vector() -> None:
    res = rfviz.features_needed("hybrid_angular", 0.1, r=0.8, theta=1.0, d=4)
    splits = res.to_dict()["splits"]
    lengths = [s["feature_length"] for s in splits if s["feature_length"] is not None]
    assert res.feature_length == min(lengths)
    assert res.feature_length == 4 * res.m * (res.n + 1)  # HRF eq. 19's feature map: 4m(n + 1) numbers
    fixed = rfviz.features_needed("hybrid_angular", 0.1, r=0.8, theta=1.0, d=4, n=8)
    assert fixed.n == 8 and fixed.to_dict().get("splits") is None
    assert fixed.feature_length >= res.feature_length


def test_feature_lengths_per_estimator() -> None:
    trig = rfviz.features_needed("trig", 0.1, **POINT)
    pos = rfviz.features_needed("positive", 0.1, **POINT)
    assert trig.feature_length == 2 * trig.m and pos.feature_length == pos.m


def test_worst_is_the_largest_point_answer() -> None:
    res = rfviz.features_needed("positive", 0.1, **REGION)
    points = [rfviz.features_needed("positive", 0.1, r=r, theta=t, d=4).m for r in REGION["r"]
              for t in REGION["theta"]]
    assert res.m == max(points)
    at = res.to_dict()["worst_at"]
    assert rfviz.features_needed("positive", 0.1, r=at["r"], theta=at["theta"], d=4).m == res.m
    mean = rfviz.features_needed("positive", 0.1, **REGION, over="mean")
    assert min(points) <= mean.m <= max(points)


def test_unreachable_has_a_reason() -> None:
    far = rfviz.features_needed("positive", 0.1, r=3.0, theta=0.0, d=8)
    assert far.m is None and "above the largest m (10000000)" in far.reason
    huge = rfviz.features_needed("gerf", 0.1, r=4.0, theta=0.0, d=4, A=0.124)
    assert huge.m is None and "e+" in huge.reason  # written from its log, beyond float64
    no_cf = rfviz.features_needed("trig", 0.1, r=1.0, theta=1.0, d=6, coupling="simplex_plus")
    assert no_cf.m is None and "no closed-form MSE" in no_cf.reason
    zero = features_needed("poly_sketch", 0.1, Target("point", np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]), 2))
    assert zero.m is None and "K = 0" in zero.reason


def test_exact_estimator_needs_one_feature() -> None:
    res = rfviz.features_needed("trig", 0.01, r=1.0, theta=0.0, d=4)  # x = y: trig is exact
    assert res.m == 1 and res.relative_error == 0.0


def test_bad_input_names_the_parameter() -> None:
    for kwargs, word in [({"eps": 0}, "eps"), ({"eps": 0.1, "m": 3}, "m is what"),
                         ({"eps": 0.1, "r": [1, 2], "over": "point"}, "over=point"),
                         ({"eps": 0.1, "over": "nope"}, "over"), ({"eps": 0.1, "data": "iris", "r": 1}, "either")]:
        with pytest.raises(ParameterError, match=word):
            rfviz.features_needed("trig", **kwargs)


def test_costed_before_it_runs() -> None:
    with time_budget_scope(1e-6), pytest.raises(ParameterError, match="would take"):
        rfviz.features_needed("trig", 0.1, **REGION)
    from rfviz.compute.features import features_needed_cost

    big = features_needed_cost("maclaurin", {}, grid_target(1.0, 1.0, 4))
    small = features_needed_cost("trig", {}, grid_target(1.0, 1.0, 4))
    assert isinstance(big, Cost) and big.seconds > 10 * small.seconds


def test_cli_json_is_the_api_dict(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["features-needed", "gerf", "eps=0.1", "r=0.5,1", "theta=0,pi/2", "d=4", "A=-0.05", "--json"])
    out = json.loads(capsys.readouterr().out)
    api = rfviz.features_needed("gerf", 0.1, r=[0.5, 1], theta=[0, math.pi / 2], d=4, A=-0.05).to_dict()
    assert code == 0 and out == json.loads(json.dumps(api))
    assert main(["features-needed", "trig", "eps=0.1", "--data", "iris", "--queries", "8", "--keys", "8"]) == 0
    assert "gram" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["trig", "r=1"], ["trig", "eps=-1"], ["trig", "eps=0.1", "m=3"],
                                  ["trig", "eps=0.1", "theta=0:3"], ["nope", "eps=0.1"],
                                  ["trig", "eps=0.1", "--data", "/nonexistent.csv"], ["trig", "eps=0.1", "d=0"]])
def test_cli_bad_input_is_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["features-needed", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1


def test_map_agrees_with_point_answers() -> None:
    r, theta = np.array([0.5, 1.0]), np.array([0.3, 2.0, 3.0])
    for name, params in [("positive", {}), ("trig", {"coupling": "orthogonal"})]:
        log10_m = features_needed_map(name, params, 4, r, theta, 0.1)
        for i, j in [(0, 0), (1, 1), (1, 2)]:
            point = rfviz.features_needed(name, 0.1, r=r[i], theta=theta[j], d=4, **params)
            cell = round(10 ** log10_m[i, j])
            if point.method == "exact":
                assert cell == point.m
            else:  # the first rung of the ladder meeting ε: at most one 9 % step above the exact answer
                assert point.m <= cell <= math.ceil(point.m * LADDER_RATIO)


# ------------------------------------------------------------------------------------------- Monte Carlo (slow)
def _trials(name: str, eps: float) -> int:
    """Trials for a standard error of the sampled relative error below ε/40. At ε = 10 % m is small and the squared
    error far from Gaussian (heavier tails), so it takes more trials (and they are 100 times cheaper than at 1 %);
    a hybrid's λ̂ at n = 1 is a Bernoulli variable, so its error stays bimodal at any m."""
    if eps >= 0.1:  # a hybrid's bimodal error: 1.5× the trials (its SE was 0.0028 > ε/40 at 8000)
        return 12000 if name.startswith("hybrid") else 8000
    return 4000 if name.startswith("hybrid") else 1500


def _sampled_relative_error(name: str, params: dict, setting: dict, res: rfviz.api.FeaturesNeededResult
                            ) -> tuple[float, float]:
    """Sampled relative error at the answer's m (and n) and its standard error (delta method: se(√v) = se(v)/2√v)."""
    from rfviz.engine import monte_carlo
    from rfviz.gram_engine import kernel_matrix, monte_carlo_gram

    own = {**params, "m": res.m, **({"n": res.n} if res.n is not None else {})}
    est = rfviz.create(name, **own)
    if "data" in setting:
        q, k = _data_pairs()
        values, _ = monte_carlo_gram(est, q, k, repeats=16000 if res.eps >= 0.1 else 1200, seed=3)
        k2 = float(np.sum(kernel_matrix(est, q, k) ** 2))
        rel_sq, se_sq = float(np.mean(values)) / k2, float(np.std(values, ddof=1) / math.sqrt(values.size)) / k2
    else:
        at = res.to_dict().get("worst_at") or {"r": setting["r"], "theta": setting["theta"]}
        x, y = embed_pair(at["r"], at["theta"], setting["d"])  # in R^d: GERF's law depends on d itself
        mc = monte_carlo(est, np.atleast_2d(x), np.atleast_2d(y), trials=_trials(name, res.eps),
                         seed=3, device="cpu")
        assert bool(mc.reliable[0]), mc.warning[0]
        # the engine's rel_mse is relative to e^{2s}, s its log_scale (not always log K): rescale to K²
        to_k = math.exp(2 * (float(mc.log_scale[0]) - float(np.ravel(est.kernel_log_value(x, y, setting["d"])[0])[0])))
        rel_sq, se_sq = float(mc.rel_mse[0]) * to_k, float(mc.rel_mse_stderr[0]) * to_k
    rel = math.sqrt(rel_sq)
    return rel, se_sq / (2 * rel)


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.1, 0.01])
@pytest.mark.parametrize(("name", "params"), ESTIMATORS)
@pytest.mark.parametrize("setting", [POINT, REGION, DATA], ids=["point", "region", "data"])
def test_monte_carlo_meets_eps_at_the_predicted_m(name: str, params: dict, setting: dict, eps: float) -> None:
    res = rfviz.features_needed(name, eps, **setting, **params)
    rel, se = _sampled_relative_error(name, params, setting, res)
    assert 4 * se <= 0.1 * eps, f"the test has no power: se {se:.3g} at ε = {eps}"
    assert abs(rel - eps) <= 0.1 * eps, f"sampled relative error {rel:.4g} ± {se:.2g} at m = {res.m}, ε = {eps}"
    assert abs(rel - res.relative_error) <= 4.5 * se


def test_docs_page_examples_run() -> None:
    import doctest
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "docs" / "how-many-features.md"
    result = doctest.testfile(str(path), module_relative=False)
    assert result.attempted >= 3 and result.failed == 0


def test_cli_text_parameters_are_typed_in_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["features-needed", "hybrid_angular", "eps=0.1", "r=1", "theta=1", "d=4", "n=4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 4 and out["params"]["n"] == 4
    assert out == rfviz.features_needed("hybrid_angular", 0.1, r=1, theta=1, d=4, n=4).to_dict()
