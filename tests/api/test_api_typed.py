"""The typed core (issue 28 items 1 and 6, issue 29 item 4): every public API function takes Python values, validates
them with the CLI's Params (same ranges, same messages), computes without passing through text, and refuses every bad
value with a ParameterError naming the parameter; one device Param, one seed Param on every face."""

from __future__ import annotations

import inspect
import json
import math
import pathlib
import re

import numpy as np
import pytest

import rfviz
import rfviz.api as api
from rfviz import ParameterError
from rfviz.api.density_command import DENSITY_PARAMS
from rfviz.api.psi_command import PSI_PARAMS
from rfviz.cli import main
from rfviz.estimators import get_estimator
from rfviz.params import DEVICE_PARAM, SEED_PARAM, memory_budget_scope
from rfviz.sampling import resolve_device


def _cli_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------------------------------ exact round-trips
def test_complex_parameter_round_trips_exactly():
    """The issue's case: A = -0.1234567+0.05j computes with that A (not -0.123457+0.05j) and comes back complex."""
    a = -0.1234567 + 0.05j
    res = rfviz.mse("gerf", A=a, r=0.5, theta=0.785, d=8)
    assert isinstance(res.params["A"], complex) and res.params["A"] == a
    x, y = np.array([0.5, 0, 0, 0, 0, 0, 0, 0]), 0.5 * np.array([math.cos(0.785), math.sin(0.785), 0, 0, 0, 0, 0, 0])
    exact = math.exp(float(get_estimator("gerf")(A=a).log_mse(x, y)))
    rounded = math.exp(float(get_estimator("gerf")(A=-0.123457 + 0.05j).log_mse(x, y)))
    assert res.mse == pytest.approx(exact, rel=1e-14)
    assert abs(res.mse - rounded) > 1e-14 * exact  # the rounded A would give another number: not what was computed
    assert res.to_dict()["params"]["A"] == "-0.123457+0.05j"  # the JSON keeps its format


def test_floats_round_trip_exactly():
    r, theta = 0.123456789012345678, 1.0000000000000002
    res = rfviz.mse("trig", r=r, theta=theta, d=3, m=7)
    assert res.inputs == {"r": r, "theta": theta, "d": 3} and res.params["m"] == 7
    assert isinstance(res.params["m"], int)


# ------------------------------------------------------------------------------------------ refused values
def _huge() -> np.ndarray:
    return np.zeros(10**7)


REFUSED = [
    # (call, the parameter the message must name)
    (lambda: rfviz.mse("trig", trials=1), "trials"),
    (lambda: rfviz.mse("trig", trials=-5), "trials"),
    (lambda: rfviz.mse("trig", trials=1.7), "trials"),
    (lambda: rfviz.mse("trig", trials=True), "trials"),
    (lambda: rfviz.mse("trig", trials=float("nan")), "trials"),
    (lambda: rfviz.mse("trig", trials="many"), "trials"),
    (lambda: rfviz.mse("trig", seed=-1), "seed"),
    (lambda: rfviz.mse("trig", seed=2**53), "seed"),
    (lambda: rfviz.mse("trig", seed=True), "seed"),
    (lambda: rfviz.mse("trig", seed=0.5), "seed"),
    (lambda: rfviz.mse("trig", device="gpu"), "device"),
    (lambda: rfviz.mse("trig", device=0), "device"),
    (lambda: rfviz.mse("trig", max_seconds=0), "max_seconds"),
    (lambda: rfviz.mse("trig", max_seconds=float("inf")), "max_seconds"),
    (lambda: rfviz.mse("trig", x=np.ones((2, 2)), y=np.ones((2, 2))), "x"),
    (lambda: rfviz.mse("trig", x=[[1.0, 2.0]], y=[[1.0, 2.0]]), "x"),
    (lambda: rfviz.mse("trig", x=[1.0, True], y=[1.0, 0.0]), "x"),
    (lambda: rfviz.mse("trig", x=[], y=[]), "x"),
    (lambda: rfviz.mse("trig", x=[1.0] * 10_001, y=[1.0] * 10_001), "x"),
    (lambda: rfviz.mse("trig", x="1,2", y="1,2"), "x"),
    (lambda: rfviz.mse("trig", theta="pi/0"), "theta"),
    (lambda: rfviz.mse("trig", theta=4.0), "theta"),
    (lambda: rfviz.mse("trig", theta=True), "theta"),
    (lambda: rfviz.mse("trig", r=float("inf")), "r"),
    (lambda: rfviz.mse("trig", r=[1.0]), "r"),
    (lambda: rfviz.mse("trig", d=True), "d"),
    (lambda: rfviz.mse("trig", d=1e9), "d"),
    (lambda: rfviz.mse("trig", embedding=["flat"]), "embedding"),
    (lambda: rfviz.mse("trig", m=True), "m"),
    (lambda: rfviz.mse("trig", m=2.5), "m"),
    (lambda: rfviz.mse("trig", mm=16), "mm"),
    (lambda: rfviz.mse("trig", kernel=1), "kernel"),
    (lambda: rfviz.mse(5), "estimator"),
    (lambda: rfviz.mse("gerf", A="nan+1j"), "A"),
    (lambda: rfviz.mse_curve("trig", mm=16), "mm"),
    (lambda: rfviz.mse_curve("trig", values=[]), "theta"),
    (lambda: rfviz.mse_curve("trig", values=_huge()), "theta"),
    (lambda: rfviz.mse_curve("trig", values=np.ones((3, 3))), "theta"),
    (lambda: rfviz.mse_curve("trig", d=1e9), "d"),
    (lambda: rfviz.mse_curve("trig", d=10**7), "d=10000000"),  # valid d, refused by the memory budget
    (lambda: rfviz.mse_curve("trig", vary="q"), "vary"),
    (lambda: rfviz.mse_curve("trig", vary="m", values=[4, 0]), "m"),
    (lambda: rfviz.mse_curve([5]), "names"),
    (lambda: rfviz.mse_curve([]), "names"),
    (lambda: rfviz.density(d=True), "d"),
    (lambda: rfviz.density(m=0), "m"),
    (lambda: rfviz.density(w=[[1.0, 2.0]]), "w"),
    (lambda: rfviz.density(w=[]), "w"),
    (lambda: rfviz.density(w=[-1.0]), "w"),
    (lambda: rfviz.density(v=_huge()), "v"),
    (lambda: rfviz.density(coupling=3), "coupling"),
    (lambda: rfviz.psi(grid=True), "grid"),
    (lambda: rfviz.psi(d=1.5), "d"),
    (lambda: rfviz.psi(inputs="sphere", sigma=0.3), "sigma"),
    (lambda: rfviz.psi(mechanism=["trig"]), "mechanism"),
    (lambda: api.gram("trig", "iris", m=[]), "m"),
    (lambda: api.gram("trig", "iris", m=[16, True]), "m"),
    (lambda: api.gram("trig", "iris", m=np.array([[8, 16]])), "m"),
    (lambda: api.gram([5], "iris"), "names"),
    (lambda: api.gram(["trig,"], "iris"), "names"),
    (lambda: api.gram("trig", "iris", seed=-1), "seed"),
    (lambda: api.gram("trig", "iris", device="gpu"), "device"),
    (lambda: api.gram("trig", "iris", repeats=1), "repeats"),
    (lambda: api.gram("trig", "iris", repeats=True), "repeats"),
    (lambda: api.gram("trig", "iris", scale=float("nan")), "scale"),
    (lambda: api.gram("trig", "iris", queries=True), "queries"),
    (lambda: api.gram("trig", "iris", preprocess=5), "preprocess"),
    (lambda: api.gram("trig", 5), "data"),
    (lambda: api.gram("trig", "clusters", data_params={"points": 1.5}), "points"),
    (lambda: api.gram("trig", "clusters", data_params={"pointz": 3}), "pointz"),
    (lambda: api.gram("trig", "iris", params=[1]), "params"),
    (lambda: api.gram("trig", "iris", mm=3), "mm"),
    (lambda: rfviz.check(42), "target"),
    (lambda: rfviz.check(int), "target"),
    (lambda: api.sweep(5, "never.csv", grid={"theta": [0.5]}), "estimator"),
    (lambda: rfviz.check("trig", params=[1]), "params"),
    (lambda: rfviz.check("trig", theta=np.zeros(10**6)), "theta"),
    (lambda: rfviz.check("trig", theta="pi/0"), "theta"),
    (lambda: rfviz.check("trig", theta=[]), "theta"),
    (lambda: rfviz.check("trig", r=[[0.5]]), "r"),
    (lambda: rfviz.check("trig", trials=True), "trials"),
    (lambda: rfviz.check("trig", seed=-1), "seed"),
    (lambda: rfviz.check("trig", d=2.5), "d"),
    (lambda: rfviz.check("trig", alpha=2), "alpha"),
    (lambda: rfviz.check("trig", device="tpu"), "device"),
    (lambda: rfviz.check("trig", check_feature_maps=1), "check_feature_maps"),
    (lambda: rfviz.check("trig", pairs=["bogus"]), "pairs"),
    (lambda: rfviz.check("trig", compare="trig"), "compare"),
    (lambda: rfviz.check("trig", bogus=1), "bogus"),
    (lambda: memory_budget_scope("512MiB").__enter__(), "memory_budget"),
    (lambda: memory_budget_scope(10).__enter__(), "memory_budget"),
    (lambda: memory_budget_scope(True).__enter__(), "memory_budget"),
]


@pytest.mark.parametrize("call, name", REFUSED, ids=[f"{i}-{n}" for i, (_, n) in enumerate(REFUSED)])
def test_bad_values_raise_parameter_error_naming_the_parameter(call, name):
    with pytest.raises(ParameterError) as info:
        call()
    assert type(info.value) is ParameterError  # never TypeError, AttributeError, ZeroDivisionError, ...
    assert name in str(info.value)


SWEEP_REFUSED = [
    ({"trials": True}, "trials"),
    ({"trials": 1}, "trials"),
    ({"seed": -1}, "seed"),
    ({"seed": 2**60}, "seed"),
    ({"device": "gpu"}, "device"),
    ({"block_trials": 1.5}, "block_trials"),
    ({"resume": "yes"}, "resume"),
    ({"grid": {"theta": np.ones((2, 2))}}, "theta"),
    ({"grid": {"theta": []}}, "theta"),
    ({"grid": 5}, "grid"),
    ({"d": True}, "d"),
    ({"m": float("nan")}, "m"),
    ({"backend_options": [1]}, "backend_options"),
]


@pytest.mark.parametrize("change, name", SWEEP_REFUSED, ids=[n for _, n in SWEEP_REFUSED])
def test_sweep_refuses_bad_values_before_any_file(tmp_path, change, name):
    out = tmp_path / "s.csv"
    kwargs = {"grid": {"theta": [0.5, 1.0]}, "trials": 4096, "d": 4, "m": 8, "device": "cpu", **change}
    with pytest.raises(ParameterError) as info:
        api.sweep("trig", out, **kwargs)
    assert type(info.value) is ParameterError and name in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_the_cli_refuses_what_the_api_refuses(capsys):
    """Same Param, same message: the command's one line is the API's ParameterError."""
    cases = [(["mse", "trig", "--trials", "1"], lambda: rfviz.mse("trig", trials=1)),
             (["mse", "trig", "--seed", "-1"], lambda: rfviz.mse("trig", seed=-1)),
             (["mse", "trig", "m=2.5"], lambda: rfviz.mse("trig", m=2.5)),
             (["mse", "trig", "--device", "gpu"], lambda: rfviz.mse("trig", device="gpu")),
             (["density", "m=0"], lambda: rfviz.density(m=0)),
             (["gram", "trig", "--data", "iris", "--repeats", "1"], lambda: api.gram("trig", "iris", repeats=1)),
             (["gram", "trig", "--data", "iris", "--seed", "-1"], lambda: api.gram("trig", "iris", seed=-1))]
    for argv, call in cases:
        capsys.readouterr()
        assert main(argv) == 2
        line = capsys.readouterr().err.strip()
        with pytest.raises(ParameterError) as info:
            call()
        assert line == f"error: {info.value}", argv


# ------------------------------------------------------------------------------------------ CLI JSON = API
README_COMMANDS = [
    (["mse", "trig", "r=1", "theta=1", "d=4", "m=10"], lambda: rfviz.mse("trig", r=1, theta=1, d=4, m=10)),
    (["mse", "gerf", "A=-0.1+0.05i", "s=1", "r=0.5", "theta=0.785", "d=8"],
     lambda: rfviz.mse("gerf", A=-0.1 + 0.05j, s=1, r=0.5, theta=0.785, d=8)),
    (["mse", "poly_sketch", "p=3", "q=0.25", "m=16", "embedding=flat", "d=8", "theta=0.5236"],
     lambda: rfviz.mse("poly_sketch", p=3, q=0.25, m=16, embedding="flat", d=8, theta=0.5236)),
    (["mse", "positive", "coupling=simplex", "d=16", "m=16", "r=0.8", "theta=1", "--trials", "600", "--device", "cpu"],
     lambda: rfviz.mse("positive", coupling="simplex", d=16, m=16, r=0.8, theta=1, trials=600, device="cpu")),
    (["mse", "trig", "r=1", "theta=pi/2", "d=3", "m=4", "embedding=rotation_average", "--trials", "300",
      "--device", "cpu"],
     lambda: rfviz.mse("trig", r=1, theta=math.pi / 2, d=3, m=4, embedding="rotation_average", trials=300,
                       device="cpu")),  # text such as "pi/2" is the CLI's to read, not the API's (issue 37)
    (["mse", "trig", "r=1e155", "theta=1", "d=4"], lambda: rfviz.mse("trig", r=1e155, theta=1, d=4)),  # null + note
    (["density", "coupling=simplex", "d=6", "w=1,2,3", "v=1"],
     lambda: rfviz.density("simplex", d=6, w=[1, 2, 3], v=[1])),
    (["psi", "mechanism=positive", "inputs=sphere", "r=1", "d=16"],
     lambda: rfviz.psi("positive", inputs="sphere", r=1, d=16)),
    (["psi", "mechanism=positive", "inputs=pair", "r=1", "theta=1", "d=4"],
     lambda: rfviz.psi("positive", inputs="pair", r=1, theta=1, d=4)),
    (["gram", "trig,positive", "hrf_clustered", "--data", "clusters", "--data-param", "sigma=1", "--data-param",
      "same_sign=3", "--m", "20", "--queries", "12", "--keys", "12", "--repeats", "0"],
     lambda: api.gram(["trig,positive", "hrf_clustered"], "clusters", data_params={"sigma": 1, "same_sign": 3},
                      m=[20], queries=12, keys=12, repeats=0)),
    (["gram", "trig,positive_antithetic", "--data", "wine", "--queries", "12", "--keys", "12", "--m", "16",
      "--repeats", "20", "--seed", "5"],
     lambda: api.gram("trig,positive_antithetic", "wine", queries=12, keys=12, m=16, repeats=20, seed=5)),
]


@pytest.mark.parametrize("argv, call", README_COMMANDS, ids=[" ".join(a[:2]) for a, _ in README_COMMANDS])
def test_cli_json_equals_the_api(capsys, argv, call):
    cli = _cli_json(capsys, *argv)
    res = call()
    assert res.to_dict() == cli


def test_extreme_valid_inputs_give_null_and_a_note_whatever_the_callers_errstate():
    with np.errstate(all="raise"):
        res = rfviz.mse("trig", r=1e155, theta=1.0, d=4)
    assert res.mse is None and res.note and "not representable" in res.note


# ------------------------------------------------------------------------------------------ Params declared once
@pytest.mark.parametrize("spec", [*DENSITY_PARAMS, *PSI_PARAMS], ids=lambda p: p.name)
def test_command_params_have_valid_defaults(spec):
    """``DENSITY_SPECS["m"]`` had default 0 below its own low = 1: every default is None (automatic) or valid."""
    assert spec.default is None or spec.validate(spec.default) == spec.default


def test_one_device_param_and_resolve_device():
    assert DEVICE_PARAM.validate("CUDA:3") == "cuda:3" and DEVICE_PARAM.validate(" auto ") == "auto"
    assert str(resolve_device("cpu")) == "cpu"
    assert str(resolve_device("auto")) in ("cpu", "cuda")
    res = api.gram("trig", "iris", queries=4, keys=4, m=[4], repeats=0, device="auto")  # api.gram refused auto
    assert res.results
    import torch

    if not torch.cuda.is_available():
        for name in ("cuda", "cuda:0"):
            with pytest.raises(ParameterError, match="device"):
                resolve_device(name)


def test_one_seed_param_on_every_face(tmp_path, capsys):
    """[0, 2^53 − 1]: the app's number widgets hold it exactly, and the CLI, the API, sweeps and the lab accept the
    same range and refuse the same values."""
    import app_pages.coupling as coupling_page  # noqa: F401  (the app's pages import the same Param)
    from rfviz.lab import LabOptions
    from rfviz.sweeps.tasks import SweepSpec

    top = 2**53 - 1
    assert SEED_PARAM.validate(top) == top and SEED_PARAM.high == top
    assert rfviz.mse("trig", trials=2, seed=top, device="cpu").mc is not None
    with pytest.raises(ParameterError, match="seed"):
        LabOptions(seed=top + 1)
    with pytest.raises(ParameterError, match="seed"):
        SweepSpec("trig", {}, __import__("rfviz.sweeps.grid").sweeps.grid.Grid(()), 100, seed=top + 1)
    assert main(["mse", "trig", "--trials", "2", "--seed", str(top + 1)]) == 2
    assert "seed must be an integer in [0, 9007199254740991]" in capsys.readouterr().err


def test_api_holds_no_text_path_no_maths_and_no_statistics():
    """api.py wraps the typed core: no text round-trip, no import of maths, engine, Gram or statistics modules."""
    import ast

    tree = ast.parse(pathlib.Path(api.__file__).read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert not names & {"as_text", "_assignments", "parse_vector", "parse_real", "parse_assignments", "monte_carlo",
                        "AGREEMENT_Z", "family_agreement", "two_sided_p"}
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1}
    assert not {m for m in modules if m and m.split(".")[0] in ("maths", "engine", "gram_engine",
                                                                          "numerics", "diagnostics",
                                                                "geometry", "data")}


@pytest.mark.slow
def test_the_app_seed_widget_holds_the_whole_seed_range():
    """Why [0, 2^53 − 1]: the browser's number widget holds every seed of that range exactly (a URL seed above it is
    refused with SEED_PARAM's message, as on the CLI)."""
    from streamlit.testing.v1 import AppTest

    from app_pages import BY_PATH

    path = str(pathlib.Path(__file__).resolve().parents[2] / "app_pages" / "gerf.py")
    for seed, ok in ((2**53 - 1, True), (2**53, False)):
        at = AppTest.from_file(path, default_timeout=60)
        at.query_params["seed"] = str(seed)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        value = at.number_input(key=BY_PATH["gerf"].key("seed")).value
        errors = [str(e.value).replace("\\", "") for e in at.error]  # the page escapes Markdown
        if ok:
            assert value == seed and not errors
        else:
            assert value != seed and any("seed must be an integer in [0, 9007199254740991], got 9007199254740992" in e
                                        for e in errors)


# ------------------------------------------------------------------------------------------ issue 37: strict types
STRICT_REFUSED = [
    # (call, the parameter the message must name): text, lists and out-of-range values where a number is expected
    (lambda: rfviz.mse("trig", m="10"), "m"),
    (lambda: rfviz.mse("trig", trials="1e6"), "trials"),
    (lambda: rfviz.mse("trig", trials=[100]), "trials"),
    (lambda: rfviz.mse("trig", max_seconds="5"), "max_seconds"),
    (lambda: rfviz.mse("trig", r="1"), "r"),
    (lambda: rfviz.mse("trig", theta="pi/2"), "theta"),
    (lambda: rfviz.mse("trig", d="4"), "d"),
    (lambda: rfviz.mse("gerf", A="-0.1+0.05j"), "A"),
    (lambda: rfviz.mse("trig", m=np.array([4, 5])), "m"),
    (lambda: rfviz.gram("trig", "iris", scale="0.5"), "scale"),
    (lambda: rfviz.gram("trig", "iris", queries="8"), "queries"),
    (lambda: rfviz.gram("trig", "iris", m=["16"]), "m"),
    (lambda: rfviz.gram("trig", "clusters", data_params={"sigma": "1"}), "sigma"),
    (lambda: rfviz.density(d="6"), "d"),
    (lambda: rfviz.density(w=["1"]), "w"),
    (lambda: rfviz.psi(d="16"), "d"),
    (lambda: rfviz.check("trig", d="4"), "d"),
    (lambda: rfviz.features_needed("trig", [0.1]), "eps"),
    (lambda: rfviz.features_needed("trig", "0.1"), "eps"),
    (lambda: rfviz.features_needed("trig", 0.1, r="1,2"), "r"),
    (lambda: rfviz.features_needed("trig", 0.1, d=True), "d"),
    (lambda: rfviz.features_needed("trig", 0.1, data="iris", queries="8"), "queries"),
    (lambda: rfviz.rank_estimators("iris", seed=-1), "seed"),
    (lambda: rfviz.rank_estimators("iris", length="64"), "length"),
    (lambda: rfviz.rank_estimators("iris", kernel="laplace"), "kernel"),
    (lambda: rfviz.downstream("ridge", "synthetic", input_scale=1e308), "input_scale"),
    (lambda: rfviz.downstream("ridge", "synthetic", lengths="16,32"), "lengths"),
    (lambda: rfviz.downstream("ridge", "synthetic", repeats="4"), "repeats"),
    (lambda: rfviz.downstream("attention", "iris", queries=True), "queries"),
]


@pytest.mark.parametrize("call, name", STRICT_REFUSED, ids=[f"{i}-{n}" for i, (_, n) in enumerate(STRICT_REFUSED)])
def test_text_and_lists_where_a_number_is_expected_raise_parameter_error(call, name):
    """Issue 37: no API function parses text for Python callers; every refusal is a ParameterError naming the
    parameter, and is also a TypeError and a ValueError (``except TypeError`` catches a wrong type)."""
    with pytest.raises(ParameterError) as info:
        call()
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    assert re.search(rf"\b{re.escape(name)}\b", str(info.value)), str(info.value)


def test_no_api_message_names_a_command_line_flag(tmp_path):
    """Every message of the refused calls of this file is worded with keyword names, never ``--flag``s; the CLI
    shows its flags (``rfviz.cli._flags``)."""
    calls = [c for c, _ in REFUSED + STRICT_REFUSED]
    calls += [lambda: rfviz.mse("trig", d=4, m=8, trials=10**7, max_seconds=1e-9, device="cpu"),  # stops at once
              lambda: rfviz.gram("trig", "iris", queries=64, keys=64, m=[10**6], repeats=10**6),
              lambda: api.sweep("trig", tmp_path / "s.csv", grid={"theta": [0.5]}, trials=4096, d=4,
                                backend_options={"max_retries": 2}),
              lambda: rfviz.check("trig", compare=["no_such_estimator"], trials=400)]
    flags = []
    for call in calls:
        with pytest.raises(ParameterError) as info:
            call()
        flags += [f"{info.value}" for _ in re.findall(r"(?<![\w-])--[a-z]", str(info.value))]
    assert not flags, flags


def test_the_cli_names_its_flags_where_the_api_names_keywords(capsys):
    with pytest.raises(ParameterError, match=r"passed max_seconds=1e-09") as info:
        rfviz.mse("trig", d=4, m=8, trials=10**7, max_seconds=1e-9, device="cpu")
    assert "--" not in str(info.value)
    capsys.readouterr()
    assert main(["mse", "trig", "d=4", "m=8", "--trials", "10000000", "--max-seconds", "1e-9", "--device", "cpu"]) == 2
    assert "passed --max-seconds=1e-09" in capsys.readouterr().err


def test_numpy_scalars_are_numbers_and_bools_are_not():
    plain = rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10, trials=200, seed=3, device="cpu")
    numpy = rfviz.mse("trig", r=np.float64(1.0), theta=np.float32(1.0).item(), d=np.int64(4), m=np.int32(10),
                      trials=np.int64(200), seed=np.uint8(3), device="cpu")
    assert numpy.to_dict() == plain.to_dict() and isinstance(numpy.params["m"], int)
    for keyword in ("r", "theta", "d", "m", "trials", "seed"):
        with pytest.raises(ParameterError, match=keyword):
            rfviz.mse("trig", **{keyword: True})


def _minimal_calls(tmp_path) -> dict:
    """A call of each public API function that passes validation, taking one more keyword."""
    return {"mse": lambda **kw: rfviz.mse("trig", **kw),
            "mse_curve": lambda **kw: rfviz.mse_curve("trig", **kw),
            "density": lambda **kw: rfviz.density(**kw),
            "psi": lambda **kw: rfviz.psi(**kw),
            "gram": lambda **kw: rfviz.gram("trig", "iris", **{"queries": 4, "keys": 4, "m": [4], "repeats": 0, **kw}),
            "check": lambda **kw: rfviz.check("trig", **kw),
            "sweep": lambda **kw: rfviz.sweep("trig", tmp_path / "s.csv", **{"grid": {"theta": [0.5]}, **kw}),
            "features_needed": lambda **kw: rfviz.features_needed("trig", **{"eps": 0.1, **kw}),
            "rank_estimators": lambda **kw: rfviz.rank_estimators("iris", **kw),
            "downstream": lambda **kw: rfviz.downstream("ridge", "synthetic", **kw)}


def test_every_public_function_declares_its_constraints_as_data(tmp_path):
    """scikit-learn's ``_parameter_constraints`` model: each function's constraints are a mapping on the function
    (and in PARAMETER_CONSTRAINTS), naming its own arguments; and text for any numeric one is refused, naming it."""
    from rfviz.api.validation import PARAMETER_CONSTRAINTS, ListOf
    from rfviz.params import Param

    calls = _minimal_calls(tmp_path)
    for name, call in calls.items():
        fn = getattr(rfviz, name)
        constraints = fn.parameter_constraints
        assert constraints and PARAMETER_CONSTRAINTS[name] is constraints, name
        params = inspect.signature(fn).parameters
        assert set(constraints) <= set(params), name
        for keyword, constraint in constraints.items():
            spec = constraint.param if isinstance(constraint, ListOf) else constraint
            if not isinstance(spec, Param) or spec.kind not in ("int", "float"):
                continue
            with pytest.raises(ParameterError) as info:
                call(**{keyword: "1"})
            assert keyword in str(info.value) or spec.name in str(info.value), (name, keyword, str(info.value))
    assert list(tmp_path.iterdir()) == []


def test_anticipated_failures_become_parameter_errors():
    """One decorator turns numeric, memory, torch and scikit-learn failures into ParameterError; a bug stays."""
    import torch
    from sklearn.utils._param_validation import InvalidParameterError

    from rfviz.api.validation import api_function

    failures = [FloatingPointError("overflow encountered"), OverflowError("math range error"),
                ZeroDivisionError("division by zero"), np.linalg.LinAlgError("Singular matrix"),
                MemoryError(), InvalidParameterError("The 'alpha' parameter of Ridge must be ...")]

    def raising(exc):
        @api_function({})
        def fn():
            raise exc
        return fn

    for exc in failures:
        with pytest.raises(ParameterError):
            raising(exc)()

    @api_function({})
    def torch_failure():
        torch.empty(-1)  # RuntimeError raised inside torch

    with pytest.raises(ParameterError, match="torch"):
        torch_failure()
    with pytest.raises(KeyError):
        raising(KeyError("a bug"))()


def test_results_are_typed_and_their_json_is_made_from_them():
    """Rows are typed (GramRow, MonteCarloSummary, ...); ``to_dict()`` walks the fields: a changed field changes
    the JSON (the result is not a view of a stored JSON)."""
    import dataclasses

    res = rfviz.gram("trig", "iris", queries=6, keys=6, m=[4, 8], repeats=0)
    assert all(isinstance(row, api.GramRow) for row in res.results)
    changed = dataclasses.replace(res, results=[dataclasses.replace(res.results[0], m=99)])
    assert changed.to_dict()["results"][0]["m"] == 99 and len(changed.to_dict()["results"]) == 1
    mc = rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10, trials=300, device="cpu").mc
    assert isinstance(mc, api.MonteCarloSummary) and "pairs" not in mc.to_dict()
    stacked = rfviz.mse("trig", r=1.0, theta=1.0, d=3, m=4, embedding="rotation_average", trials=300, device="cpu")
    assert stacked.mc.pairs and "bias_z" not in stacked.mc.to_dict()
    for result in (res, mc, stacked):
        assert not {f.name for f in dataclasses.fields(result)} - {"absent"} - set(result.to_dict()) - result.absent
