"""rfviz.sklearn.RandomFeatures: scikit-learn's own estimator checks, the kernel its features estimate (unbiased,
with the closed-form MSE, by Monte Carlo over random_state), query/key sides, Pipeline and GridSearchCV."""

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
from rfviz.sklearn import RandomFeatures


def _failures(est: RandomFeatures) -> dict[str, str]:
    results = check_estimator(est, on_fail=None)
    assert len(results) > 30
    return {r["check_name"]: str(r["exception"]) for r in results if r["status"] == "failed"}


@pytest.mark.slow
@pytest.mark.parametrize("est", [RandomFeatures("positive", m=16, random_state=0),
                                 RandomFeatures("positive_antithetic", m=8, coupling="orthogonal", random_state=0),
                                 RandomFeatures("gerf", m=8, params={"A": -0.05}, random_state=0)],
                         ids=["positive", "positive_antithetic-orthogonal", "gerf"])
def test_scikit_learn_estimator_checks_pass(est: RandomFeatures) -> None:
    assert _failures(est) == {}


@pytest.mark.slow
def test_trig_fails_only_the_check_whose_inputs_overflow() -> None:
    """check_fit_idempotent draws inputs of mean 100: the softmax-family map computes e^{|x|²/2} before the
    Gaussian factor e^{-|x|²/2}, and transform refuses the overflow with a ValueError (never a silent inf)."""
    failures = _failures(RandomFeatures("trig", m=16, kernel="gaussian", random_state=0))
    assert set(failures) == {"check_fit_idempotent"}
    assert "overflow" in failures["check_fit_idempotent"]


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
    base = RandomFeatures(name, m=m, coupling=params.get("coupling"), params=own or None)
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
    rf = RandomFeatures("hybrid_angular", m=3, params={"n": 2}, random_state=4).fit(X)
    phi = rf.estimator_.features(rf.samples_, torch.as_tensor(X), "key")[0].numpy()
    assert np.array_equal(rf.transform(X, side="key"), phi)
    assert rf.n_output_features_ == 4 * 3 * (2 + 1) == phi.shape[1]
    assert not rf.symmetric_
    assert RandomFeatures("positive", m=4, random_state=0).fit(X).symmetric_
    assert np.array_equal(RandomFeatures("hybrid_angular", m=3, params={"n": 2}, side="key", random_state=4)
                          .fit_transform(X), phi)


def test_same_seed_same_features_and_scale_is_the_bandwidth() -> None:
    X = np.random.default_rng(1).normal(size=(6, 3))
    a = RandomFeatures("trig", m=5, kernel="gaussian", random_state=3).fit_transform(X)
    b = RandomFeatures("trig", m=5, kernel="gaussian", random_state=3).fit_transform(X)
    assert np.array_equal(a, b)
    c = RandomFeatures("trig", m=5, kernel="gaussian", scale=0.5, random_state=3).fit_transform(X)
    d = RandomFeatures("trig", m=5, kernel="gaussian", random_state=3).fit_transform(0.5 * X)
    assert np.allclose(c, d)


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
    """docs/sklearn-pipeline.md is a doctest: a GridSearchCV over a Pipeline on diabetes, within 0.1 R² of exact
    kernel ridge."""
    import doctest
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "docs" / "sklearn-pipeline.md"
    result = doctest.testfile(str(path), module_relative=False)
    assert result.attempted > 10 and result.failed == 0
