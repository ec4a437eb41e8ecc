"""Gram- and attention-matrix error (rfviz.gram_engine) and the ``gram`` command.

The identity E‖K̂ − K‖²_F = Σ_ij MSE(x_i, y_j) (features shared by all entries) is checked against Monte Carlo for
every registered estimator that has a closed form and a feature map, on two data sets."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from mc_helpers import Z_TOL

from rfviz import data
from rfviz import gram_engine as gram
from rfviz.cli import main
from rfviz.engine import spawn_seed
from rfviz.estimators import REGISTRY, create
from rfviz.params import ParameterError

# Small, standardised, equal-norm data (norm 0.3): the errors are light-tailed here, so 4-SE agreement is a fair test.
# Two low-dimensional sets for every estimator, and wine (d = 13) for all but the DIRFs: their MSE grows like e^{λd}
# through rare large ω (1e6·K² per entry on wine), a tail no affordable Monte Carlo reaches (the closed form is right:
# 2·10^5 single-pair trials approach it with a 50 % standard error).
SETS = ("iris", "clusters", "wine")
HEAVY_IN_HIGH_D = ("poisson", "geometric")
# Parameters an estimator needs to be defined on these data (hybrid_gaussian's r_norm=0 needs |x| = |y| exactly).
EXTRA = {"hybrid_gaussian": {"r_norm": 0.3}}


def _small(name: str) -> data.DataSet:
    options = {"d": 5, "points": 10, "same_sign": 2} if name == "clusters" else None
    return data.load(name, queries=5, keys=4, steps=("standardize", "sphere", "scale"), scale=0.3, seed=3,
                     options=options)


def _estimators() -> list[str]:
    return [n for n, cls in REGISTRY.items() if cls.has_closed_form]


@pytest.mark.slow
@pytest.mark.parametrize("data_name", SETS)
@pytest.mark.parametrize("name", _estimators())
def test_closed_form_sum_matches_shared_feature_monte_carlo(name: str, data_name: str) -> None:
    if data_name == "wine" and name in HEAVY_IN_HIGH_D:
        pytest.skip("DIRF error heavy-tailed at d = 13 (see HEAVY_IN_HIGH_D)")
    ds = _small(data_name)
    cls = REGISTRY[name]
    params = {"m": 8} if any(p.name == "m" for p in cls.spec) else {}
    est = create(name, **params, **EXTRA.get(name, {}))
    if not est.closed_form_available():
        pytest.skip(f"{name}: no closed form with default parameters")
    res = gram.gram_error(est, ds.queries, ds.keys, repeats=600, seed=11, name=name)
    if res.frobenius_sq_mc is None:
        assert "no Monte Carlo" in res.note  # no feature map (oprf with A_from=pair): said so, not silently
        pytest.skip(res.note)
    assert res.frobenius_sq_closed_form is not None and res.frobenius_sq_closed_form > 0
    assert abs(res.z) < Z_TOL, (name, data_name, res.frobenius_sq_closed_form, res.frobenius_sq_mc, res.stderr)


def test_closed_form_is_the_sum_of_pairwise_mses() -> None:
    ds = _small("iris")
    est = create("trig", m=7)
    total = sum(float(est.mse(x, y)) for x in ds.queries for y in ds.keys)
    assert math.isclose(gram.frobenius_sq_closed_form(est, ds.queries, ds.keys), total, rel_tol=1e-10)


def test_kernel_matrix_and_relative_frobenius() -> None:
    ds = _small("wine")
    est = create("positive_antithetic", m=9)
    kmat = np.exp(ds.queries @ ds.keys.T)
    np.testing.assert_allclose(gram.kernel_matrix(est, ds.queries, ds.keys), kmat, rtol=1e-12)
    gauss = create("trig", m=9, kernel="gaussian")
    sq = ((ds.queries[:, None, :] - ds.keys[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(gram.kernel_matrix(gauss, ds.queries, ds.keys), np.exp(-sq / 2), rtol=1e-12)
    res = gram.gram_error(est, ds.queries, ds.keys)
    assert res.frobenius_sq_mc is None and res.attention_l1 is None
    assert math.isclose(res.relative_frobenius, math.sqrt(res.frobenius_sq_closed_form / np.sum(kmat**2)))


@pytest.mark.slow
def test_attention_error_of_one_repeat_recomputed_from_features() -> None:
    """The attention error is mean_i ‖Â_i − A_i‖₁ with rows normalised to sum 1 (recomputed here by hand)."""
    ds = _small("iris")
    est = create("positive", m=6)
    frob, att = gram.monte_carlo_gram(est, ds.queries, ds.keys, repeats=2, seed=5)
    gen = torch.Generator().manual_seed(spawn_seed(5, 0))  # both repeats are block 0 (the engine's seed rule)
    s = est.sample(2, ds.d, generator=gen, device=torch.device("cpu"))
    q, k = torch.as_tensor(ds.queries), torch.as_tensor(ds.keys)
    khat = (est.features(s, q, "query") @ est.features(s, k, "key").transpose(-1, -2)).numpy()
    kmat = np.exp(ds.queries @ ds.keys.T)
    np.testing.assert_allclose(frob, ((khat - kmat) ** 2).sum((1, 2)), rtol=1e-10)
    a, ahat = kmat / kmat.sum(1, keepdims=True), khat / khat.sum(2, keepdims=True)
    np.testing.assert_allclose(att, np.abs(ahat - a).sum(2).mean(1), rtol=1e-10)


def test_attention_error_shrinks_with_m() -> None:
    ds = _small("wine")
    errs = [gram.gram_error(create("positive_antithetic", m=m), ds.queries, ds.keys, repeats=40, seed=1)
            for m in (2, 512)]
    assert errs[1].attention_l1 + 4 * errs[1].attention_l1_stderr < errs[0].attention_l1


def test_reliable_flags() -> None:
    assert gram.reliable(np.ones(20))
    assert not gram.reliable(np.ones(5))  # too few repeats
    spike = np.full(20, 1e-3)
    spike[0] = 1.0
    assert not gram.reliable(spike)  # one repeat carries the sum
    assert gram.assess_repeats(spike).warning


def test_reliable_does_not_depend_on_the_closed_form(monkeypatch: pytest.MonkeyPatch) -> None:
    # A wrong closed form must show as disagreement, never as an unreliable sample.
    ds = _small("iris")
    est = create("trig", m=8)
    good = gram.gram_error(est, ds.queries, ds.keys, repeats=400, seed=5)
    monkeypatch.setattr(gram, "frobenius_sq_closed_form", lambda *a, **k: 100.0 * good.frobenius_sq_closed_form)
    bad = gram.gram_error(est, ds.queries, ds.keys, repeats=400, seed=5)
    assert good.reliable and bad.reliable and good.agreement == "agrees" and bad.agreement == "disagrees"
    assert "standard errors" in bad.note and bad.to_json()["agreement"] == "disagrees"


def test_gram_reliability_from_theory_bounds_the_spread_of_the_summed_error() -> None:
    """rfviz.verdicts.gram_theory: Var(Σ e²) ≤ (Σ √E e⁴)² − (Σ MSE)² (Minkowski) bounds the sampled Gram error's
    spread; checked against the spread measured over 2000 repeats (the bound must hold, within its sampling error)."""
    ds = _small("iris")
    est = create("trig", m=8)
    values, _ = gram.monte_carlo_gram(est, ds.queries, ds.keys, 2000, seed=3)
    theory = gram._theory(est, ds.queries, ds.keys, 2000)
    measured_rse = float(np.std(values, ddof=1) / math.sqrt(values.size) / np.mean(values))
    assert theory is not None and theory.reliable
    assert measured_rse <= 1.2 * theory.rel_stderr_bound  # a bound: never (much) below what is measured


@pytest.mark.slow  # Monte Carlo with many repeats: ~2 s of CPU
def test_issue_gram_heavy_tail_is_unreliable_with_the_repeats_needed_not_a_disagreement(capsys) -> None:
    """Issue 28: positive_antithetic at m = 16 on wine (norms ≈ 1, scale 1) is heavy-tailed: theory says so (per-pair
    fourth moments), with the repeats needed in words, never 'disagrees'; trig stays tested."""
    from rfviz.cli import main as cli_main

    cli_main(["gram", "trig,positive_antithetic", "--data", "wine", "--queries", "40", "--keys", "40", "--scale", "1",
              "--m", "16,64", "--repeats", "300", "--seed", "5", "--device", "cpu", "--json"])
    rows = {(r["estimator"], r["m"]): r for r in json.loads(capsys.readouterr().out)["results"]}
    pa = rows[("positive_antithetic", 16)]
    assert pa["reliable"] is False and pa["agreement"] == "unreliable"
    assert "not informative at any practical repeat count" in pa["warning"] and pa["repeats_needed"] is None
    assert "standard errors" not in pa.get("note", "")
    assert rows[("trig", 16)]["reliable"] is True and rows[("trig", 16)]["agreement"] in ("agrees", "disagrees")


def test_gram_ten_percent_wrong_closed_form_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A closed form 10 % too small is called 'disagrees' at 3000 repeats (the sample pins the value to ~2 %)."""
    ds = _small("iris")
    est = create("trig", m=8)
    true = gram.frobenius_sq_closed_form(est, ds.queries, ds.keys)
    monkeypatch.setattr(gram, "frobenius_sq_closed_form", lambda *a, **k: 0.9 * true)
    bad = gram.with_family_agreement([gram.gram_error(est, ds.queries, ds.keys, repeats=3000, seed=seed)
                                      for seed in (1, 2)])
    assert all(b.reliable and b.agreement == "disagrees" for b in bad)


def test_overflowing_kernel_is_a_parameter_error() -> None:
    q = np.full((2, 3), 30.0)
    with pytest.raises(ParameterError, match="scale"):
        gram.kernel_matrix(create("trig"), q, q)


# ----------------------------------------------------------------------------------------------- CLI
def test_cli_gram_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["gram", "trig,positive_antithetic", "poly_sketch", "p=2", "--data", "iris", "--queries", "4",
                 "--keys", "3", "--m", "4,8", "--repeats", "20", "--seed", "2", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["data"]["queries"] == 4 and out["data"]["keys"] == 3
    rows = out["results"]
    assert [(r["estimator"], r["m"]) for r in rows] == [(n, m) for n in ("trig", "positive_antithetic",
                                                                         "poly_sketch") for m in (4, 8)]
    for r in rows:
        assert r["frobenius_sq_closed_form"] is not None and r["frobenius_sq_mc"] is not None
        assert r["stderr"] > 0 and isinstance(r["reliable"], bool) and r["relative_frobenius"] > 0
        assert (r["attention_l1"] is None) == (r["estimator"] == "poly_sketch")
    assert rows[-1]["params"]["p"] == 2


def test_cli_gram_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gram", "trig", "--data", "wine", "--queries", "3", "--keys", "3", "--m", "4",
                 "--repeats", "5"]) == 0
    out = capsys.readouterr().out
    assert "trig" in out and "Σ MSE" in out


@pytest.mark.parametrize("argv,needle", [
    (["nope", "--data", "iris"], "estimator must be one of"),
    (["trig", "--data", "mnist"], "data must be"),
    (["trig", "--data", "iris", "--m", "0"], "m must be"),
    (["trig", "--data", "iris", "--repeats", "1"], "repeats"),
    (["trig", "zz=1", "--data", "iris"], "no named estimator has a parameter 'zz'"),
    (["trig", "m=3", "--data", "iris"], "--m"),
    (["trig", "--data", "iris", "--queries", "1000"], "queries"),
    (["trig", "--data", "iris", "--preprocess", "whiten"], "preprocess"),
    (["trig", "--data", "clusters", "--data-param", "rho=1"], "clusters has no parameter"),
])
def test_cli_gram_bad_input(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gram", *argv, *([] if "--repeats" in argv else ["--repeats", "0"])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err


@pytest.mark.slow  # Monte Carlo on a data set: ~4 s of CPU
def test_your_data_angular_hybrid_on_wine_is_unreliable_by_theory_not_a_disagreement() -> None:
    """Issue 28: the Your-data page's defaults (wine, 60 × 60 points, standardize + scale 0.5, m = 16) at 300
    repeats. The per-repeat Frobenius error of the (correct) angular hybrid is heavily skewed (measured over 6000
    repeats: skewness 5.9, kurtosis 73, largest repeat 14× the mean), so a 300-repeat sample can miss by 3.4 of its
    own standard errors; the per-pair fourth moments bound its relative standard error by 16 % (> 10 %), so theory
    calls it unreliable with the repeats that guarantee ±10 % (790), never 'disagrees'."""
    ds = data.load("wine", queries=60, keys=60, steps=("standardize", "scale"), scale=0.5)
    res = gram.with_family_agreement([gram.gram_error(create("hybrid_angular", m=16), ds.queries, ds.keys, 300, s)
                                      for s in (0, 1)])
    for r in res:
        assert r.reliable is False and r.agreement == "unreliable" and r.repeats_needed == 790
        assert "790 repeats" in r.warning and "standard errors" not in r.note
