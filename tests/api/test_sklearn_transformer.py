"""rfviz.sklearn.RandomFeatures: scikit-learn's own estimator checks, the kernel its features estimate (unbiased,
with the closed-form MSE, by Monte Carlo over random_state), query/key sides, Pipeline and GridSearchCV, the
hyper-parameters (gamma, n_components, numpy scalars, conflicts) and the memory budget."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import rfviz
from rfviz.params import ParameterError, memory_budget_scope
from rfviz.sklearn import RandomFeatures


def _failures(est: RandomFeatures) -> dict[str, str]:
    results = check_estimator(est, on_fail=None)
    assert len(results) > 30
    return {r["check_name"]: str(r["exception"]) for r in results if r["status"] == "failed"}


def test_scikit_learn_estimator_checks_pass_for_the_default() -> None:
    """The default (trig_phase, RBFSampler's map) passes every check; the other modes the docstring lists are in
    tests/test_sklearn_checks.py."""
    assert _failures(RandomFeatures(random_state=0)) == {}


def _pair(d: int = 4) -> tuple[np.ndarray, np.ndarray]:
    x = np.zeros((1, d))
    y = np.zeros((1, d))
    x[0, 0] = 0.6
    y[0, :2] = 0.6 * math.cos(1.0), 0.6 * math.sin(1.0)
    return x, y


@pytest.mark.slow
@pytest.mark.parametrize(("name", "params"), [("trig", {}), ("positive", {"coupling": "orthogonal"}),
                                              ("hybrid_angular", {"n": 2}), ("complex_exponential", {}),
                                              ("gerf", {"A": -0.05, "s": -1})])
def test_features_estimate_the_kernel_with_the_closed_form_mse(name: str, params: dict) -> None:
    """Over 3000 random_states, φ_query(x)·φ_key(y) has mean K (|z| < 4.5) and mean squared error the closed form
    (within 4.5 standard errors of the sampled MSE)."""
    x, y = _pair()
    m = 6
    est = rfviz.create(name, m=m, **params)
    k = float(np.exp(est.kernel_log_value(x, y)[0])[0])
    closed = float(est.mse(x, y)[0])
    own = {key: v for key, v in params.items() if key not in ("coupling",)}
    base = RandomFeatures(name, m=m, coupling=params.get("coupling"), params=own or None, kernel="softmax",
                          scale=1.0)
    values = []
    for seed in range(3000):
        rf = clone(base).set_params(random_state=seed).fit(x)
        values.append(float((rf.transform(x, side="query") @ rf.transform(y, side="key").T)[0, 0]))
    v = np.array(values)
    se_mean = v.std(ddof=1) / math.sqrt(v.size)
    assert abs(v.mean() - k) <= 4.5 * se_mean
    sq = (v - k) ** 2
    assert abs(sq.mean() - closed) <= 4.5 * sq.std(ddof=1) / math.sqrt(v.size)


def test_transform_is_the_estimators_feature_map() -> None:
    X = np.random.default_rng(0).normal(size=(7, 5)) * 0.4
    rf = RandomFeatures("hybrid_angular", m=3, params={"n": 2}, kernel="softmax", scale=1.0, random_state=4).fit(X)
    phi = rf.estimator_.features(rf.samples_, torch.as_tensor(X), "key")[0].numpy()
    assert np.array_equal(rf.transform(X, side="key"), phi)
    assert rf.n_output_features_ == 4 * 3 * (2 + 1) == phi.shape[1]
    assert not rf.symmetric_
    assert RandomFeatures("positive", m=4, random_state=0).fit(X).symmetric_
    assert np.array_equal(RandomFeatures("hybrid_angular", m=3, params={"n": 2}, kernel="softmax", scale=1.0,
                                         side="key", random_state=4).fit_transform(X), phi)


def test_same_seed_same_features_and_scale_is_the_bandwidth() -> None:
    X = np.random.default_rng(1).normal(size=(6, 3))
    a = RandomFeatures("trig", m=5, kernel="gaussian", random_state=3).fit_transform(X)
    b = RandomFeatures("trig", m=5, kernel="gaussian", random_state=3).fit_transform(X)
    assert np.array_equal(a, b)
    c = RandomFeatures("trig", m=5, kernel="gaussian", scale=0.5, random_state=3).fit_transform(X)
    d = RandomFeatures("trig", m=5, kernel="gaussian", scale=1.0, random_state=3).fit_transform(0.5 * X)
    assert np.allclose(c, d)
    e = RandomFeatures("trig", m=5, gamma=0.125, random_state=3).fit_transform(X)  # scale = √(2γ) = 0.5
    assert np.allclose(c, e)


@pytest.mark.parametrize(("kwargs", "word"), [({"estimator": "nope"}, "estimator"), ({"m": 0}, "m"),
                                              ({"coupling": "bogus"}, "coupling"),
                                              ({"estimator": "poly_sketch", "coupling": "iid"}, "coupling"),
                                              ({"params": {"zzz": 1}}, "zzz"), ({"scale": -1.0}, "scale"),
                                              ({"side": "left"}, "side"),
                                              ({"estimator": "oprf"}, "no feature map")])
def test_bad_parameters_raise_at_fit_naming_them(kwargs: dict, word: str) -> None:
    rf = RandomFeatures(**kwargs)  # scikit-learn: __init__ stores, fit validates
    with pytest.raises(ValueError, match=word):
        rf.fit(np.ones((3, 4)))


@pytest.mark.slow  # over 2 s of CPU: kept out of the one-minute unit tier
def test_pipeline_and_grid_search_on_diabetes() -> None:
    X, y = load_diabetes(return_X_y=True)
    model = make_pipeline(StandardScaler(), RandomFeatures("trig", m=100, kernel="gaussian", random_state=0),
                          Ridge(alpha=1.0))
    search = GridSearchCV(model, {"randomfeatures__scale": [0.1, 0.3], "randomfeatures__m": [50, 100],
                                  "ridge__alpha": [0.1, 1.0]}, cv=3)
    search.fit(X, y)
    assert search.best_score_ > 0.3  # R² of a kernel ridge on diabetes is ~0.45-0.5
    assert set(search.best_params_) == {"randomfeatures__scale", "randomfeatures__m", "ridge__alpha"}
    params = clone(search.best_estimator_).get_params()
    assert params["randomfeatures__estimator"] == "trig"
    grid = GridSearchCV(make_pipeline(RandomFeatures("gerf", m=32, random_state=0), Ridge()),
                        {"randomfeatures__params": [{"A": -0.05}, {"A": -0.2}]}, cv=2)
    grid.fit(StandardScaler().fit_transform(X) * 0.2, y)
    assert grid.best_params_["randomfeatures__params"] in ({"A": -0.05}, {"A": -0.2})


@pytest.mark.slow
def test_docs_how_to_runs() -> None:
    """docs/sklearn-pipeline.md is a doctest: a GridSearchCV over estimator × coupling × gamma on breast cancer, at
    least as good as RBFSampler's search, in under 60 s."""
    import doctest
    import pathlib
    import time

    path = pathlib.Path(__file__).resolve().parents[2] / "docs" / "sklearn-pipeline.md"
    start = time.process_time()  # CPU seconds: other jobs on the machine do not count
    result = doctest.testfile(str(path), module_relative=False)
    assert result.attempted > 10 and result.failed == 0
    assert time.process_time() - start < 60


@pytest.mark.parametrize(("kwargs", "word"), [({"scale": True}, "scale"), ({"gamma": True}, "gamma"),
                                              ({"n_components": True}, "n_components"),
                                              ({"m": 8, "params": {"m": 4}}, "m is given twice"),
                                              ({"coupling": "iid", "estimator": "trig", "params": {"coupling": "iid"}},
                                               "coupling is given twice"),
                                              ({"m": 8, "n_components": 16}, "not both"),
                                              ({"n_components": 16, "params": {"m": 3}}, "not both"),
                                              ({"gamma": 1.0, "scale": 0.5}, "give one")])
def test_ambiguous_or_boolean_hyper_parameters_are_refused(kwargs: dict, word: str) -> None:
    with pytest.raises(ParameterError, match=word):
        RandomFeatures(**kwargs).fit(np.ones((3, 4)))


def test_numpy_scalars_are_accepted_wherever_numbers_are() -> None:
    X = np.random.default_rng(0).normal(size=(20, 3))
    a = RandomFeatures(scale=np.float32(0.5), n_components=np.int64(10), random_state=0).fit_transform(X)
    b = RandomFeatures(scale=0.5, n_components=10, random_state=0).fit_transform(X)
    assert np.allclose(a, b, rtol=1e-7)
    rf = RandomFeatures("gerf", m=np.int32(4), params={"A": np.float64(-0.1)}, gamma=np.float16(0.5)).fit(X)
    assert rf.m_ == 4 and rf.estimator_.params["A"] == -0.1
    search = GridSearchCV(make_pipeline(RandomFeatures(random_state=0), Ridge()),
                          {"randomfeatures__gamma": np.array([0.1, 0.5]),
                           "randomfeatures__n_components": np.array([20, 40])}, cv=2)
    search.fit(X, X[:, 0])
    assert search.best_params_["randomfeatures__gamma"] in (0.1, 0.5)


def test_gamma_n_components_and_their_fitted_values() -> None:
    X = np.random.default_rng(0).normal(size=(30, 5)) * 3.0
    rf = RandomFeatures("trig", gamma="scale", n_components=64, random_state=0).fit(X)
    assert rf.gamma_ == pytest.approx(1.0 / (5 * X.var())) and rf.scale_ == pytest.approx(math.sqrt(2 * rf.gamma_))
    assert (rf.m_, rf.n_output_features_) == (32, 64)
    assert RandomFeatures("hybrid_angular", n_components=120, params={"n": 2}).fit(X).m_ == 10  # 4m(n + 1)
    assert RandomFeatures("trig", n_components=7).fit(X).n_output_features_ == 8  # rounded up to 2m
    assert RandomFeatures().fit(X).gamma_ == 1.0  # RBFSampler's default
    from scipy.sparse import csr_matrix
    from sklearn.kernel_approximation import RBFSampler

    for data in (X, csr_matrix(np.where(X > 1.0, X, 0.0))):
        theirs = RBFSampler(gamma="scale").fit(data)._gamma
        assert RandomFeatures(gamma="scale").fit(data).gamma_ == pytest.approx(theirs, rel=1e-12)


@pytest.mark.parametrize(("kwargs", "X", "word"), [
    ({"estimator": "positive", "m": 100000}, np.full((1, 20000), 1e-3), "m = 100000 at d = 20000"),
    ({"estimator": "positive", "coupling": "orthogonal", "m": 64}, np.full((1, 20000), 1e-3), "coupling orthogonal"),
    ({"estimator": "trig", "coupling": "simplex", "m": 64}, np.full((1, 20000), 1e-3), "coupling simplex"),
    ({"estimator": "trig", "coupling": "qmc_halton", "m": 1024}, np.full((1, 2048), 1e-3), "coupling qmc_halton"),
])
def test_fit_is_costed_before_it_draws(kwargs: dict, X: np.ndarray, word: str) -> None:
    """Issue 38: the draw (m × d numbers, the couplings' d × d frames) is refused up front under the budget."""
    with pytest.raises(ParameterError, match=f"{word}.*budget of 512 MiB"):
        RandomFeatures(**kwargs).fit(X)


def test_structured_couplings_fit_at_large_d_within_the_budget_and_transform_is_costed() -> None:
    X = np.full((2, 20000), 1e-3)
    rf = RandomFeatures("positive", coupling="sorf", m=100000, random_state=0).fit(X)
    assert rf.fitted_state_nbytes() < 4e6
    with memory_budget_scope(2**20), pytest.raises(ParameterError, match="transform of 2 rows into 100000"):
        rf.transform(X)
    small = RandomFeatures(n_components=10).fit(np.ones((3, 2)))
    with pytest.raises(ParameterError, match="transform of 10000000 rows"):
        small.transform(np.broadcast_to(np.ones(2), (10**7, 2)))
