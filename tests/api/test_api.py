"""The Python API (rfviz.api): each function's ``to_dict()`` equals its command's JSON, the numbers are attributes,
the figure helpers return Plotly figures, and the docstring examples run."""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import json
import math
import subprocess
import sys

import numpy as np
import plotly.graph_objects as go
import pytest

import rfviz
import rfviz.api
from rfviz.cli import main


def _cli_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_mse_equals_the_installed_command():
    """Done-when of the issue: the function and the real entry point give the same number."""
    out = subprocess.run([sys.executable, "-m", "rfviz", "mse", "trig", "r=1", "theta=1", "d=4", "m=10", "--json"],
                         capture_output=True, text=True, timeout=120, check=True)
    cli = json.loads(out.stdout)
    res = rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10)
    assert res.to_dict()["mse"] == cli["mse"] == res.mse
    assert res.to_dict() == cli


@pytest.mark.slow
def test_mse_with_monte_carlo_equals_the_command(capsys):
    cli = _cli_json(capsys, "mse", "gerf", "A=-0.1+0.05i", "s=1", "r=0.5", "theta=0.785", "d=8", "--trials", "600",
                    "--seed", "3", "--device", "cpu")
    res = rfviz.mse("gerf", A=-0.1 + 0.05j, s=1, r=0.5, theta=0.785, d=8, trials=600, seed=3, device="cpu")
    assert res.to_dict() == cli
    assert res.mc is not None and res.mc.trials == cli["mc"]["trials"] and res.mc.stderr == cli["mc"]["stderr"]
    assert res.mc.agreement == cli["mc"]["agreement"]


def test_mse_explicit_vectors_and_no_closed_form(capsys):
    cli = _cli_json(capsys, "mse", "positive", "x=0.1,0.2,0.3", "y=0.3,-0.1,0.2", "m=8")
    res = rfviz.mse("positive", x=np.array([0.1, 0.2, 0.3]), y=[0.3, -0.1, 0.2], m=8)
    assert res.to_dict() == cli and res.inputs["d"] == 3


def test_results_are_frozen_dataclasses():
    res = rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10)
    assert dataclasses.is_dataclass(res)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.mse = 0.0  # type: ignore[misc]
    d = res.to_dict()
    d["mse"] = None
    assert res.to_dict()["mse"] == res.mse  # to_dict returns a copy


def test_bad_input_raises_parameter_error_naming_the_parameter():
    with pytest.raises(rfviz.ParameterError, match="m must be"):
        rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=0)


def test_density_equals_the_command(capsys):
    cli = _cli_json(capsys, "density", "coupling=simplex", "d=6", "w=1,2,3", "v=1")
    res = rfviz.density("simplex", d=6, w=[1, 2, 3], v=[1])
    assert res.to_dict() == cli
    assert res.coupling == "simplex" and len(res.density) == 3
    assert isinstance(res.figure(), go.Figure)


def test_psi_equals_the_command(capsys):
    cli = _cli_json(capsys, "psi", "mechanism=positive", "inputs=sphere", "r=1", "d=16")
    res = rfviz.psi("positive", inputs="sphere", r=1.0, d=16)
    assert res.to_dict() == cli
    assert res.v_opt == cli["v_opt"] and isinstance(res.figure(), go.Figure)


def test_gram_equals_the_command(capsys):
    cli = _cli_json(capsys, "gram", "trig,positive", "--data", "iris", "--queries", "8", "--keys", "8", "--m", "8,16",
                    "--repeats", "0")
    res = rfviz.api.gram(["trig", "positive"], "iris", queries=8, keys=8, m=[8, 16], repeats=0)
    assert res.to_dict() == cli and len(res.results) == 4


@pytest.mark.slow
def test_check_matches_the_command(capsys):
    args = ("trig", "m=4", "--r", "0.5", "--theta", "0.5,1.5,2.5", "--d", "4", "--trials", "3000", "--compare", "",
            "--pairs", "canonical", "--no-features")
    capsys.readouterr()
    code = main(["check", *args, "--json"])
    cli = json.loads(capsys.readouterr().out)
    res = rfviz.check("trig", {"m": 4}, r=[0.5], theta=[0.5, 1.5, 2.5], d=4, trials=3000, compare=[],
                      pairs=["canonical"], check_feature_maps=False)
    assert res.exit_code == code and res.to_dict() == cli


def test_mse_curve_is_the_closed_form():
    fig = rfviz.mse_curve("trig", values=[0.5, 1.0], r=1.0, d=4, m=10)
    assert isinstance(fig, go.Figure)
    expected = math.log10(rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10).mse)
    assert fig.data[0].y[1] == pytest.approx(expected, rel=1e-12)


def test_api_functions_are_lazy_top_level_names():
    for name in ("mse", "density", "psi", "check", "mse_curve"):
        assert getattr(rfviz, name) is getattr(rfviz.api, name)
    with pytest.raises(AttributeError):
        rfviz.no_such_function  # noqa: B018


API_MODULES = ["rfviz.api", "rfviz.api.mse_command", "rfviz.api.density_command", "rfviz.api.psi_command",
               "rfviz.api.gram_command", "rfviz.api.check_command", "rfviz.api.sweep_command",
               "rfviz.api.features_needed_command", "rfviz.api.rank_estimators_command",
               "rfviz.api.downstream_command", "rfviz.api.datasets"]
"""The API's modules whose examples compute (Monte Carlo, data sets)."""
FAST_MODULES = ["rfviz.api.results", "rfviz.api.validation", "rfviz.params.core", "rfviz.params.catalogue",
                "rfviz.params.budgets", "rfviz.cli._flags"]


def _doctests(name: str) -> doctest.TestResults:
    return doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)


@pytest.mark.parametrize("name", FAST_MODULES)
def test_validation_and_result_examples_run(name):
    result = _doctests(name)
    assert result.attempted >= 1 and result.failed == 0, name


@pytest.mark.slow
@pytest.mark.parametrize("name", API_MODULES)
def test_docstring_examples_run(name):
    result = _doctests(name)
    assert result.attempted >= 1 and result.failed == 0, name


def test_every_public_api_name_is_in_the_reference_with_a_numpydoc_docstring():
    """docs/api.md lists every public function and result class of rfviz.api (whose docstrings
    tests/test_docstrings.py checks against numpydoc, examples included), and each has Parameters and Examples."""
    import pathlib

    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    for name in rfviz.api.__all__:
        if name == "PARAMETER_CONSTRAINTS":
            continue
        obj = getattr(rfviz.api, name)
        documented = f"rfviz.api.{name}" if name != "Result" else "rfviz.api.results.Result"
        assert f":: {documented}\n" in page, name
        doc = obj.__doc__ or ""
        assert "Parameters\n" in doc and "Examples\n" in doc, name
        if callable(obj) and not isinstance(obj, type):
            assert "Returns\n" in doc, name
