"""Downstream truth (rfviz.compute.downstream): ridge on random features is kernel ridge with K̂ (checked exactly),
it approaches exact kernel ridge as the feature length grows on a synthetic set with a known function, attention
from random features approaches exact attention, and the kernel error's rank predicts the downstream error there."""

from __future__ import annotations

import numpy as np
import pytest

from rfviz.compute.catalog import make_estimator
from rfviz.compute.downstream import _features, attention_study, ridge_study
from rfviz.params import ParameterError, memory_budget_scope, time_budget_scope


def _synthetic(n: int = 160, d: int = 3, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(1.5 * X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.05 * rng.normal(size=n)  # known function, little noise
    return X[: n * 3 // 4], y[: n * 3 // 4], X[n * 3 // 4:], y[n * 3 // 4:]


@pytest.mark.slow
def test_ridge_on_features_is_kernel_ridge_with_the_sampled_gram() -> None:
    """The primal–dual identity the study relies on: Ridge(Φ) predicts exactly what kernel ridge with ΦΦᵀ does."""
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.linear_model import Ridge

    Xa, ya, Xb, _ = _synthetic()
    est = make_estimator("trig", {"m": 20}, "gaussian")
    phi, samples = _features(est, Xa * 0.5, 1)
    phi_t, _ = _features(est, Xb * 0.5, 0, samples=samples)
    primal = Ridge(alpha=0.3, fit_intercept=False).fit(phi, ya).predict(phi_t)
    dual = KernelRidge(alpha=0.3, kernel="precomputed").fit(phi @ phi.T, ya).predict(phi_t @ phi.T)
    assert np.allclose(primal, dual, rtol=1e-8, atol=1e-8)


@pytest.mark.slow
def test_ridge_study_approaches_exact_kernel_ridge() -> None:
    Xa, ya, Xb, yb = _synthetic()
    s = ridge_study(Xa, ya, Xb, yb, names=["trig", "positive"], lengths=(16, 256), repeats=6, scale=0.6,
                    alpha=0.05)
    rows = {(r.method, r.length): r for r in s.rows}
    gap_small = abs(rows[("trig", 16)].error - s.exact)
    gap_large = abs(rows[("trig", 256)].error - s.exact)
    assert gap_large + 3 * rows[("trig", 256)].stderr < gap_small  # more features, closer to the exact model
    assert all(r.stderr > 0 for r in s.rows)
    assert any(r.method == "nystroem" for r in s.rows)
    assert s.spearman is None or -1 <= s.spearman <= 1


@pytest.mark.slow
def test_attention_error_falls_with_length_and_follows_the_kernel_error() -> None:
    rng = np.random.default_rng(2)
    Q, K, V = rng.normal(size=(24, 4)) * 0.3, rng.normal(size=(24, 4)) * 0.3, rng.normal(size=(24, 3))
    s = attention_study(Q, K, V, names=["trig", "positive", "hybrid_angular"], lengths=(16, 64, 256), repeats=6,
                        nystroem=True)
    trig = [r for r in s.rows if r.method == "trig"]
    assert trig[-1].error + 3 * trig[-1].stderr < trig[0].error
    assert s.spearman is not None and s.spearman > 0.5  # lower kernel error, lower attention error
    assert {r.method for r in s.rows} >= {"trig", "positive", "hybrid_angular", "nystroem"}


def test_costed_before_it_runs() -> None:
    Xa, ya, Xb, yb = _synthetic()
    with time_budget_scope(1e-6), pytest.raises(ParameterError, match="would take"):
        ridge_study(Xa, ya, Xb, yb, repeats=3)
    with pytest.raises(ParameterError, match="repeats"):
        ridge_study(Xa, ya, Xb, yb, repeats=1)


@pytest.mark.slow
def test_your_data_page_downstream_panel() -> None:
    """The Your-data page's button fits the models: three tables (ridge on diabetes and the synthetic set, attention
    on the page's pairs), Nyström rows included, and the rank correlation stated."""
    import pathlib

    from streamlit.testing.v1 import AppTest

    page = pathlib.Path(__file__).resolve().parents[2] / "app_pages" / "data.py"
    at = AppTest.from_file(str(page), default_timeout=300).run()
    before = len(at.dataframe)
    next(b for b in at.button if b.key == "data.run_downstream").click().run()
    assert not at.exception and not at.error
    tables = at.dataframe[before:]
    assert len(tables) == 3
    for table in tables:
        assert "Nyström (scikit-learn)" in set(table.value["method"]) and (table.value["± stderr"] > 0).any()
    assert sum("Spearman" in m.value for m in at.markdown) == 3


# ------------------------------------------------------------------ the faces: rfviz.downstream and `rfviz downstream`
@pytest.mark.slow  # over a few seconds: out of the one-minute unit tier
def test_cli_json_is_the_api_result(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import rfviz
    from rfviz.cli import main

    cases = [("ridge", ["--data", "synthetic", "--names", "trig,gerf", "--lengths", "16,32", "--repeats", "2",
                        "--seed", "3"],
              {"data": "synthetic", "names": ["trig", "gerf"], "lengths": [16, 32], "repeats": 2, "seed": 3}),
             ("attention", ["--data", "iris", "--names", "positive", "--lengths", "16", "--repeats", "2",
                            "--queries", "10", "--keys", "12", "--scale", "0.5", "--seed", "1"],
              {"data": "iris", "names": "positive", "lengths": (16,), "repeats": 2, "queries": 10, "keys": 12,
               "scale": 0.5, "seed": 1})]
    for task, argv, keywords in cases:
        assert main(["downstream", "--task", task, *argv, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        api = rfviz.downstream(task, keywords.pop("data"), **keywords)
        assert out == json.loads(json.dumps(api.to_dict()))
        assert out["rows"] == [row.to_dict() for row in api.rows] and out["exact"] == api.exact and out["task"] == task
        assert {r["method"] for r in out["rows"]} == {*out["settings"]["names"], "nystroem"}
        assert main(["downstream", "--task", task, *argv]) == 0
        assert "Spearman" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["--task", "lasso", "--data", "synthetic"],
    ["--task", "ridge", "--data", "iris"],  # no regression target
    ["--task", "ridge", "--data", "diabetes", "--queries", "10"],  # attention's data option
    ["--task", "attention", "--data", "iris", "--alpha", "1"],  # ridge's option
    ["--task", "attention", "--data", "/nonexistent.npy"],
    ["--task", "ridge", "--data", "synthetic", "--names", "hybrid_angular"],  # not symmetric: no ridge model
    ["--task", "attention", "--data", "iris", "--names", "nope"],
    ["--task", "ridge", "--data", "synthetic", "--names", "trig,trig"],
    ["--task", "ridge", "--data", "synthetic", "--lengths", "0"],
    ["--task", "ridge", "--data", "synthetic", "--lengths", "1"],  # shorter than one trig feature (2 numbers)
    ["--task", "ridge", "--data", "synthetic", "--lengths", "16,x"],
    ["--task", "ridge", "--data", "synthetic", "--lengths", ","],
    ["--task", "ridge", "--data", "synthetic", "--repeats", "1"],
    ["--task", "ridge", "--data", "synthetic", "--input-scale", "-1"],
    ["--task", "ridge", "--data", "synthetic", "--lengths", "100000", "--memory-budget", "64MiB"],  # over budget
    ["--task", "attention", "--data", "iris", "--lengths", "100000000", "--memory-budget", "64MiB"],
    # the closed-form kernel error's pairwise differences: about 200 MiB measured at 400 × 400 pairs, d = 64
    ["--task", "attention", "--data", "digits", "--queries", "400", "--keys", "400", "--memory-budget", "128MiB"],
])
def test_cli_bad_input_and_refusal_are_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from rfviz.cli import main

    assert main(["downstream", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error:") and captured.err.count("\n") == 1 and captured.out == ""


def test_api_checks_are_the_clis() -> None:
    import rfviz

    with pytest.raises(ParameterError, match=r"needs about .* of memory"), memory_budget_scope(2**20):
        rfviz.downstream("ridge", "synthetic", lengths=[4096])
    with time_budget_scope(1e-3), pytest.raises(ParameterError, match="would take"):
        rfviz.downstream("attention", "iris", queries=16, keys=16)
    for keywords in [{"names": ["trig", "hybrid_angular"]}, {"lengths": [16, 16]}, {"repeats": 1}, {"alpha": 0.0},
                     {"scale": 0.5}, {"seed": -1}, {"names": 5}, {"lengths": 16}, {"lengths": b"16"},
                     {"nystroem": "no"}]:
        with pytest.raises(ParameterError):
            rfviz.downstream("ridge", "synthetic", **keywords)


def test_ridge_through_the_api_converges_to_exact_kernel_ridge() -> None:
    """The exact model is scikit-learn's KernelRidge on the same split (recomputed here), and the random-feature
    model's gap to it shrinks as the length grows, by more than three combined standard errors from length 8."""
    from sklearn.kernel_ridge import KernelRidge

    import rfviz
    from rfviz.compute.downstream import REGRESSION_SETTINGS, regression_sets

    res = rfviz.downstream("ridge", "synthetic", names="trig", lengths=[8, 64, 512], repeats=4, nystroem=False,
                           seed=1)
    Xa, ya, Xb, yb = regression_sets(1)["synthetic"]
    scale, alpha = REGRESSION_SETTINGS["synthetic"]
    pred = KernelRidge(alpha=alpha, kernel="rbf", gamma=0.5).fit(Xa * scale, ya - ya.mean()).predict(Xb * scale)
    assert res.exact == pytest.approx(float(np.sqrt(np.mean((pred + ya.mean() - yb) ** 2))), rel=1e-12)
    (g8, s8), (g64, s64), (g512, s512) = [(abs(r["error"] - res.exact), r["stderr"]) for r in res.rows]
    assert [r["length"] for r in res.rows] == [8, 64, 512]
    assert g64 + 3 * np.hypot(s8, s64) < g8 and g512 + 3 * np.hypot(s8, s512) < g8  # clearly closer
    assert g512 < g64 + 3 * np.hypot(s64, s512)  # and no farther, within the noise, once close
    kernel_errors = [r["kernel_relative_error"] for r in res.rows]
    assert kernel_errors == sorted(kernel_errors, reverse=True)  # the closed form falls as 1/√m


@pytest.mark.slow  # over 2 s of CPU: kept out of the one-minute unit tier
def test_examples_run() -> None:
    """The examples of rfviz.downstream, its module and the compute module (their docstrings) run as written."""
    import doctest

    import rfviz.api.downstream_command
    import rfviz.compute.downstream

    for module in (rfviz.api.downstream_command, rfviz.compute.downstream):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert result.attempted >= 3 and result.failed == 0, module.__name__


@pytest.mark.parametrize(("argv", "keywords"), [
    (["--task", "ridge", "--data", "iris"], {"task": "ridge", "data": "iris"}),
    (["--task", "ridge", "--data", "synthetic", "--names", "trig,hybrid_angular"],
     {"task": "ridge", "data": "synthetic", "names": ["trig", "hybrid_angular"]}),
    (["--task", "attention", "--data", "iris", "--lengths", "1"],
     {"task": "attention", "data": "iris", "lengths": [1]}),
    (["--task", "ridge", "--data", "diabetes", "--keys", "5"], {"task": "ridge", "data": "diabetes", "keys": 5}),
    (["--task", "ridge", "--data", "synthetic", "--repeats", "1"],
     {"task": "ridge", "data": "synthetic", "repeats": 1}),
])
def test_one_message_on_both_faces(argv: list[str], keywords: dict, capsys: pytest.CaptureFixture[str]) -> None:
    import rfviz
    from rfviz.cli import main

    assert main(["downstream", *argv]) == 2
    line = capsys.readouterr().err.strip()
    with pytest.raises(ParameterError) as info:
        rfviz.downstream(keywords.pop("task"), keywords.pop("data"), **keywords)
    assert line == f"error: {info.value}"
