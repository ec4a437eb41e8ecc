"""Core protocol: parameter specs, registry, feature maps, kernels, log-space numerics, and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from mc_helpers import assert_mc_matches_closed_form

import rfviz
from rfviz.estimators.base import Estimator, register, validate_estimator_class
from rfviz.geometry import canonical_pair, project_to_span
from rfviz.numerics import log1mexp, log_cosh_m1, log_expm1
from rfviz.params import Param, ParameterError, check, validated
from rfviz.plugins import validate_class

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_log_helpers_match_direct_formulas_where_safe():
    t = np.array([1e-12, 0.3, 1.0, 25.0])
    np.testing.assert_allclose(log_expm1(t), np.log(np.expm1(t)), rtol=1e-12)
    mpmath.mp.dps = 50
    exact = [float(mpmath.log(1 - mpmath.exp(-mpmath.mpf(v)))) for v in t]  # 50-digit reference
    np.testing.assert_allclose(log1mexp(t), exact, rtol=1e-12)
    np.testing.assert_allclose(log_cosh_m1(t[1:]), np.log(np.cosh(t[1:]) - 1), rtol=1e-9)
    assert np.isfinite(log_expm1(1e4)) and log_expm1(1e4) == pytest.approx(1e4)
    assert log_expm1(0.0) == -np.inf


def test_param_validation_messages_name_parameter_and_range():
    m = Param("m", 10, "int", low=1)
    with pytest.raises(ParameterError, match=r"m must be an integer in \[1, "):
        m.validate(0)
    with pytest.raises(ParameterError, match="m must be"):
        m.parse("2.5")
    a = Param("A", 0.0, "complex", high=0.125, high_open=True)
    assert a.parse("-0.1+0.05i") == complex(-0.1, 0.05)
    with pytest.raises(ParameterError, match="A must be"):
        a.validate(0.2)
    b = Param("shared", True, "bool")
    assert b.parse("false") is False
    c = Param("kernel", "softmax", "choice", choices=("softmax", "gaussian"))
    with pytest.raises(ParameterError, match="kernel must be one of softmax, gaussian"):
        c.validate("laplace")


def test_check_and_validated_use_the_param_spec():
    trials = Param("trials", 10, "int", low=2)
    r = Param("r", 1.0, low=0.0)
    assert check(5.0, trials) == 5 and isinstance(check(5.0, trials), int)
    assert check(2**60 + 1, Param("seed", 0, "int")) == 2**60 + 1  # exact beyond float precision
    np.testing.assert_array_equal(check([0.0, 2.5], r), [0.0, 2.5])
    with pytest.raises(ParameterError, match=r"r must be a number in \[0, inf\), got -1"):
        check(np.array([0.5, -1.0, -2.0]), r)
    with pytest.raises(ParameterError, match="r must be finite"):
        check([0.5, math.inf], r)

    @validated(trials, Param("chunk", 1, "int", low=1))
    def run(n, *, trials=10, chunk=None):
        return n, trials, chunk

    assert run(1, trials=3.0) == (1, 3, None)  # coerced; a None default passes through
    with pytest.raises(ParameterError, match=r"trials must be an integer in \[2, inf\), got 1"):
        run(1, trials=1)
    with pytest.raises(ParameterError, match="chunk must be"):
        run(1, chunk=0)
    with pytest.raises(TypeError, match="no argument 'nope'"):
        validated(Param("nope", 0))(run)


def test_register_runs_the_protocol_checks_plugins_get():
    class NoSample(Estimator):
        name = "no_sample_estimator"
        title = "No sample"

    class BadName(Estimator):
        name = "bad name"
        title = "Bad name"

    for cls, message in ((NoSample, "must implement sample"), (BadName, "must be a Python identifier")):
        with pytest.raises(TypeError, match=message):
            register(cls)
        with pytest.raises(ParameterError, match=message):  # the same check, as the plugin loader reports it
            validate_class(cls, "x.py")
        assert cls.name not in rfviz.REGISTRY
    for cls in rfviz.REGISTRY.values():
        assert validate_estimator_class(cls) is cls


@pytest.mark.parametrize("name", ["trig", "positive", "positive_antithetic"])
def test_gaussian_mse_is_softmax_mse_times_exp_minus_norms(name):
    x, y = canonical_pair(np.array([0.3, 0.9, 2.0]), np.array([0.2, 1.7, 3.0]), 5)
    sm = rfviz.create(name, kernel="softmax").log_mse(x, y)
    ga = rfviz.create(name, kernel="gaussian").log_mse(x, y)
    np.testing.assert_allclose(ga, sm - (x * x).sum(-1) - (y * y).sum(-1), rtol=1e-12)


def test_reduced_coordinates_preserve_pair_statistics():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))
    x2, y2 = project_to_span(x, y)
    for a, b in ((x2, x), (y2, y)):
        np.testing.assert_allclose((a * a).sum(-1), (b * b).sum(-1), rtol=1e-12)
    np.testing.assert_allclose((x2 * y2).sum(-1), (x * y).sum(-1), rtol=1e-10, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["trig", "positive", "positive_antithetic"])
@pytest.mark.parametrize("kernel", ["softmax", "gaussian"])
def test_closed_form_matches_monte_carlo(name, kernel):
    # Three points away from heavy tails: |x+y|² ≤ 4 keeps the positive features' 4th moment modest.
    r = np.array([0.4, 0.8, 1.0])
    theta = np.array([0.5, 1.6, 2.6])
    x, y = canonical_pair(r, theta, 6)
    assert_mc_matches_closed_form(rfviz.create(name, m=8, kernel=kernel), x, y, trials=20000, seed=11)


@pytest.mark.parametrize("name", ["trig", "positive", "positive_antithetic"])
def test_log_mse_finite_up_to_r_20(name):
    est = rfviz.create(name, m=16)
    r, th = np.meshgrid(np.linspace(0.05, 20, 41), np.linspace(0.01, math.pi - 0.01, 17))
    out = est.log10_mse_grid(r, th, d=8)
    assert np.all(np.isfinite(out))


def test_invalid_theta_raises_named_error():
    with pytest.raises(ParameterError, match="theta must be in"):
        rfviz.create("trig").log10_mse_grid(1.0, 3.5, d=2)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rfviz", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


@pytest.mark.slow
def test_cli_estimators_json_lists_registry():
    out = _cli("estimators", "--json")
    assert out.returncode == 0, out.stderr
    names = {e["name"] for e in json.loads(out.stdout)["estimators"]}
    assert names == set(rfviz.REGISTRY)


@pytest.mark.slow
def test_cli_mse_json_shape_and_bad_input():
    out = _cli("mse", "trig", "r=1", "theta=1", "d=3", "m=10", "--trials", "200", "--json")
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert set(obj) >= {"estimator", "kernel", "params", "kernel_value", "mse", "log10_mse", "mc"}
    assert obj["mse"] == pytest.approx(math.exp(2) * (1 - math.exp(-2 * (1 - math.cos(1)))) ** 2 / 20, rel=1e-12)
    assert set(obj["mc"]) >= {"mse", "stderr", "mean", "trials", "device"}
    for bad in (["trig", "m=0"], ["trig", "theta=4"], ["nope"], ["trig", "x=1,2", "y=1"], ["trig", "m"]):
        res = _cli("mse", *bad)
        assert res.returncode == 2, (bad, res.stdout, res.stderr)
        assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1, res.stderr


@pytest.mark.slow  # starts a Python subprocess (interpreter + torch import)
def test_cli_without_a_command_lists_every_command_and_exits_2():
    out = _cli()
    assert out.returncode == 2 and "Traceback" not in out.stderr
    from rfviz.cli import COMMANDS
    for module in COMMANDS:
        assert module.NAME in out.stdout


@pytest.mark.slow  # starts a Python subprocess (interpreter + torch import)
def test_cli_plain_output_is_an_aligned_table_without_dict_reprs():
    est = _cli("estimators")
    assert est.returncode == 0, est.stderr
    lines = est.stdout.splitlines()
    assert len(lines) == len(rfviz.REGISTRY) + 1
    title_col = lines[0].index("title")
    for line, name in zip(lines[1:], rfviz.REGISTRY, strict=True):
        assert line.startswith(name) and line[title_col - 1] == " " and line[title_col] != " "
    assert "{" not in est.stdout and "'re'" not in est.stdout
    mse = _cli("mse", "trig", "r=1", "theta=1", "d=3", "--trials", "200")
    assert mse.returncode == 0, mse.stderr
    assert "{" not in mse.stdout and "None" not in mse.stdout
    value_cols = {len(line) - len(line.split(maxsplit=1)[1]) for line in mse.stdout.splitlines()}
    assert len(value_cols) == 1, mse.stdout  # every value starts in the same column
    assert any(line.startswith("mc.stderr ") for line in mse.stdout.splitlines())


def test_cli_data_set_options_are_the_same_in_every_command_that_reads_a_data_set():
    """gram, features-needed and rank-estimators declare their data-set options once (rfviz.cli._data): the same
    options, defaults and types in each; --data required except in features-needed (where r, theta, d can stand
    instead); every option reaches a keyword the command's typed function takes."""
    import argparse
    import inspect

    from rfviz.api import features_needed, rank_estimators
    from rfviz.api.gram_command import gram_study
    from rfviz.cli import build_parser
    from rfviz.cli._data import data_options

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    options = ("--data", "--keys-data", "--data-param", "--queries", "--keys", "--preprocess", "--scale", "--seed")
    specs = {}
    for command in ("gram", "features-needed", "rank-estimators"):
        actions = {a.option_strings[0]: a for a in sub.choices[command]._actions if a.option_strings}
        specs[command] = {o: (actions[o].dest, actions[o].default, actions[o].type, actions[o].nargs,
                              type(actions[o]).__name__, actions[o].required) for o in options}
    required = {c: specs[c].pop("--data")[-1] for c in specs}
    assert required == {"gram": True, "features-needed": False, "rank-estimators": True}
    assert specs["gram"] == specs["features-needed"] == specs["rank-estimators"]
    assert specs["gram"]["--queries"][1] == specs["gram"]["--keys"][1] == 64 and specs["gram"]["--scale"][1] == 1.0
    args = sub.choices["gram"].parse_args(["trig", "--data", "wine"])
    for function in (gram_study, features_needed, rank_estimators):
        assert set(data_options(args)) <= set(inspect.signature(function).parameters), function.__name__


@pytest.mark.parametrize(("text", "expected"), [("pi", math.pi), ("π", math.pi), ("pi/2", math.pi / 2),
                                                ("2pi/3", 2 * math.pi / 3), ("0.5*pi", math.pi / 2), ("-pi", -math.pi),
                                                ("1.25", 1.25)])
def test_parse_real_reads_multiples_of_pi(text, expected):
    from rfviz.geometry import parse_real
    assert parse_real("theta", text) == pytest.approx(expected, rel=1e-15)


@pytest.mark.slow  # starts a Python subprocess (interpreter + torch import)
def test_readme_sweep_theta_grid_is_accepted_and_snapped_to_pi():
    from rfviz.sweeps.grid import parse_grid
    grid = parse_grid(["theta=0:3.1416:32", "m=8,16,64"], rfviz.REGISTRY["positive"])
    theta = grid.axes[0].values
    assert theta[-1] == math.pi and len(theta) == 32
    assert np.allclose(np.diff(theta), math.pi / 31, rtol=1e-12)
    assert parse_grid(["theta=0,pi/2,pi"], rfviz.REGISTRY["trig"]).axes[0].values == (0.0, math.pi / 2, math.pi)
    with pytest.raises(ParameterError, match="theta must be in"):
        parse_grid(["theta=0:3.1418:4"], rfviz.REGISTRY["trig"])  # 2e-4 above π is not rounding
    out = _cli("mse", "trig", "theta=3.1416", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["inputs"]["theta"] == math.pi


# ------------------------------------------------------------------------------------------ issue 37: params split
def test_params_is_a_package_of_three_modules_re_exporting_every_public_name():
    """The Param type and validation (core), the shared Params (catalogue), the budgets (budgets): one job each,
    every public name importable from ``rfviz.params`` as before."""
    import rfviz.params as params
    from rfviz.params import budgets, catalogue, core

    assert params.Param is core.Param and params.ParameterError is core.ParameterError
    assert params.M_PARAM is catalogue.M_PARAM and params.memory_budget_scope is budgets.memory_budget_scope
    import ast
    import pathlib

    for module in (core, catalogue, budgets):
        tree = ast.parse(pathlib.Path(module.__file__).read_text())
        public = {t.id for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
                  for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
        public |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
        public = {n for n in public if not n.startswith("_")} - {"F"}
        assert public <= set(params.__all__), (module.__name__, sorted(public - set(params.__all__)))
    assert all(isinstance(getattr(catalogue, n), core.Param) for n in dir(catalogue) if n.endswith("_PARAM"))
    assert not any(n.endswith("_PARAM") for n in dir(core))  # the catalogue holds the shared Params


def test_validate_is_strict_and_parse_reads_text():
    """``Param.validate`` takes Python values only (numpy scalars are numbers, bool is not, text is refused with a
    ParameterError that is also a TypeError); ``Param.parse`` reads the CLI's and URLs' text."""
    m = Param("m", 10, "int", low=1)
    assert m.validate(np.int64(16)) == 16 and m.parse("16") == 16 and m.parse("1e3") == 1000
    for bad in ("16", [16], True, np.bool_(True), None, 16.5):
        with pytest.raises(ParameterError, match="m must be") as info:
            m.validate(bad)
        assert isinstance(info.value, TypeError)
    a = Param("A", 0j, "complex")
    assert a.validate(np.complex128(1 + 2j)) == 1 + 2j and a.parse("1+2i") == 1 + 2j
    with pytest.raises(ParameterError, match="A must be"):
        a.validate("1+2j")
    flag = Param("shared", False, "bool")
    assert flag.validate(np.bool_(True)) is True and flag.parse("yes") is True
    with pytest.raises(ParameterError, match="shared must be true or false"):
        flag.validate("true")
    lst = Param("A_list", (1 + 0j,), "complex_list")
    assert lst.validate([1, 0.5j]) == (1 + 0j, 0.5j) and lst.parse("1,0.5j") == (1 + 0j, 0.5j)
    with pytest.raises(ParameterError, match="A_list"):
        lst.validate("1,0.5j")
    with pytest.raises(ParameterError, match="r must be"):
        check(["0.5", 1.0], Param("r", 1.0, low=0.0))  # a list's entries too


def test_the_app_and_the_sweeps_read_text_with_parse():
    """The faces that read text (URL query parameters, sweep grids and manifests) go through ``Param.parse``."""
    import rfviz
    from rfviz.sweeps.grid import parse_grid

    grid = parse_grid(["m=8,16", "coupling=iid,orthogonal"], rfviz.REGISTRY["positive"])
    assert grid.axes[0].values == (8, 16) and grid.axes[1].values == ("iid", "orthogonal")
    with pytest.raises(ParameterError, match="m must be"):
        parse_grid(["m=0,8"], rfviz.REGISTRY["positive"])
