"""Which estimator, tuned, for my data (rfviz.compute.ranking, rfviz.rank_estimators, ``rfviz rank-estimators``).

The tuned choice is checked against the closed form it minimises (no candidate beats it), the equal-length column
against the probed feature lengths, the ranking against its own numbers, and the top three against the Gram
Monte Carlo (reliability rule and Holm, rfviz.gram_engine) on three bundled data sets.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import rfviz
from rfviz import data
from rfviz.cli import main
from rfviz.compute.catalog import make_estimator
from rfviz.compute.ranking import rank_estimators
from rfviz.gram_engine import frobenius_sq_closed_form, kernel_matrix
from rfviz.params import ParameterError, time_budget_scope


def _iris() -> tuple[np.ndarray, np.ndarray]:
    ds = data.load("iris", queries=24, keys=24, steps=data.parse_preprocess("center,scale"), scale=0.5, seed=0)
    return ds.queries, ds.keys


def _rel(name: str, params: dict, m: int, kernel: str, q: np.ndarray, k: np.ndarray) -> float:
    est = make_estimator(name, {**params, "m": m}, kernel)
    return math.sqrt(frobenius_sq_closed_form(est, q, k) / float(np.sum(kernel_matrix(est, q, k) ** 2)))


def test_rows_are_sorted_and_their_numbers_are_the_closed_form() -> None:
    q, k = _iris()
    res = rank_estimators(q, k, "softmax", length=128)
    errors = [r.relative_error_equal_length for r in res.rows if r.relative_error_equal_length is not None]
    assert errors == sorted(errors) and len(errors) >= 10
    for row in res.rows[:5]:
        assert row.length_equal_length <= 128
        assert row.relative_error_equal_length == pytest.approx(
            _rel(row.estimator, row.params, row.m_equal_length, "softmax", q, k), rel=1e-12)
        assert row.relative_error_equal_m == pytest.approx(_rel(row.estimator, row.params, res.m, "softmax", q, k),
                                                           rel=1e-12)


def test_equal_length_counts_what_each_map_costs() -> None:
    q, k = _iris()
    rows = {r.estimator: r for r in rank_estimators(q, k, "gaussian", length=120,
                                                    names=["trig", "positive", "hybrid_angular"]).rows}
    assert rows["trig"].m_equal_length == 60 and rows["trig"].length_equal_length == 120  # 2m
    assert rows["positive"].m_equal_length == 120  # m
    n = rows["hybrid_angular"].params["n"]
    assert rows["hybrid_angular"].length_equal_length == 4 * rows["hybrid_angular"].m_equal_length * (n + 1)


@pytest.mark.parametrize(("name", "key", "others"), [
    ("trig", "coupling", [{"coupling": c} for c in ("iid", "orthogonal", "simplex")]),
    ("poly_sketch", "q", [{"q": v} for v in (0.5, 0.75, 1.0)]),
    ("gerf", "A", [{"A": -0.1, "s": 1}, {"A": -0.05, "s": 1}, {"A": 0.0, "s": 1}, {"A": 0.02, "s": -1}])])
def test_no_candidate_beats_the_tuned_choice(name: str, key: str, others: list[dict]) -> None:
    """The tuned parameters minimise the closed-form error among the candidates (and GERF's data-fitted A beats
    hand-picked ones)."""
    q, k = _iris()
    kernel = "dot_product" if name == "poly_sketch" else "softmax"
    row = rank_estimators(q, k, kernel, length=64, names=[name]).rows[0]
    assert key in row.tuned
    for params in others:
        assert row.relative_error_equal_length <= _rel(name, params, row.m_equal_length, kernel, q, k) * (1 + 1e-9)


def test_hybrid_split_minimises_the_error_at_the_length() -> None:
    q, k = _iris()
    row = rank_estimators(q, k, "softmax", length=200, names=["hybrid_angular"]).rows[0]
    for n in (1, 2, 4, 8):
        m = 200 // (4 * (n + 1))
        if m >= 1:
            assert row.relative_error_equal_length <= _rel("hybrid_angular", {"n": n}, m, "softmax", q, k) * (1 + 1e-9)


def test_bad_input_names_the_parameter() -> None:
    q, k = _iris()
    with pytest.raises(ParameterError, match="does not estimate the softmax"):
        rank_estimators(q, k, "softmax", names=["poly_sketch"])
    with pytest.raises(ParameterError, match="estimator must be one of"):
        rank_estimators(q, k, "softmax", names=["nope"])
    with pytest.raises(ParameterError, match="length"):
        rank_estimators(q, k, "softmax", length=0)
    with pytest.raises(ParameterError, match="kernel"):
        rfviz.rank_estimators("iris", kernel="laplace")
    with time_budget_scope(1e-6), pytest.raises(ParameterError, match="would take"):
        rank_estimators(q, k, "softmax")


def test_cli_json_is_the_api_dict(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["rank-estimators", "--data", "wine", "--kernel", "gaussian", "--length", "64", "--queries", "12",
            "--keys", "12", "--names", "trig,positive,gerf", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    api = rfviz.rank_estimators("wine", kernel="gaussian", length=64, queries=12, keys=12,
                                names=["trig", "positive", "gerf"]).to_dict()
    assert out == json.loads(json.dumps(api))
    assert main(argv[:-1]) == 0 and "tuned parameters" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--data", "iris", "--kernel", "laplace"], ["--data", "/nonexistent.npy"],
                                  ["--data", "iris", "--length", "0"], ["--data", "iris", "--repeats", "1"],
                                  ["--data", "iris", "--names", "poly_sketch"]])
def test_cli_bad_input_is_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rank-estimators", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1


@pytest.mark.slow
@pytest.mark.parametrize(("dataset", "kernel"), [
    ("iris", "softmax"), ("wine", "gaussian"),
    ("digits", "softmax")])
def test_top_three_confirmed_by_monte_carlo(dataset: str, kernel: str) -> None:
    """On three bundled data sets the top three are sampled (Gram Monte Carlo, one feature draw per repeat): every
    reliable row agrees with its closed form (Holm at 1 % over the three, z corrected for the repeats' skewness:
    without it, a right-skewed mean below its closed form was called a disagreement at 3x the stated rate, as
    complex_exponential on wine and oprf on digits were at z ≈ -2.9)."""
    res = rfviz.rank_estimators(dataset, kernel=kernel, length=128, queries=24, keys=24, scale=0.5, repeats=400,
                                preprocess="center,scale")  # the data this test was written for (the old CLI defaults)
    assert len(res.monte_carlo) == 3
    assert [c["estimator"] for c in res.monte_carlo] == [r["estimator"] for r in res.ranking[:3]]
    for c in res.monte_carlo:
        if c["reliable"]:
            assert c["agreement"] == "agrees", c  # rfviz.verdicts' word, Holm over the three
    assert sum(c["reliable"] for c in res.monte_carlo) >= 2


@pytest.mark.slow  # over 2 s of CPU: kept out of the one-minute unit tier
def test_docs_page_examples_run() -> None:
    import doctest
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "docs" / "which-estimator.md"
    result = doctest.testfile(str(path), module_relative=False)
    assert result.attempted >= 2 and result.failed == 0
