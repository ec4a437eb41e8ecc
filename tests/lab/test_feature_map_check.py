"""The lab on plain feature maps ``features(X, rng) -> Φ`` (rfviz.lab.feature_map): maps written here, each with
the verdict it must get — a correct one, a biased one, one biased only along the coordinate axes (the rotation
test), one whose closed-form MSE is wrong only off |x| = |y| — and the plugin process that runs a user's file."""

from __future__ import annotations

import math
import pathlib
import sys
import textwrap

import numpy as np
import pytest

import rfviz
from rfviz.lab import haar_rotation, rotation_test
from rfviz.lab.feature_map import check_feature_map, feature_map_estimator
from rfviz.params import ParameterError
from rfviz.plugin_process import check_feature_map_isolated

M = 16
FAST = {"r": (0.5, 1.0), "theta": (0.0, math.pi / 2, 3 * math.pi / 4), "trials": 2000, "check_feature_maps": False}
"""A small grid for the fast tier (one rotation-test run of it costs 2000 calls of the map)."""


def positive(X, rng):
    """Positive random features of the softmax kernel e^{x·y}: unbiased."""
    W = rng.standard_normal((X.shape[1], M))
    return np.exp(X @ W - 0.5 * (X * X).sum(1, keepdims=True)) / math.sqrt(M)


def inflated(X, rng):
    """Positive features scaled by √1.1: E[Φx·Φy] = 1.1·K everywhere, in every direction."""
    return positive(X, rng) * math.sqrt(1.1)


def axis_biased(X, rng):
    """Positive features whose first coordinate is half-normal (|g|): biased where x, y have an e₁ component."""
    W = rng.standard_normal((X.shape[1], M))
    W[0] = np.abs(W[0])
    return np.exp(X @ W - 0.5 * (X * X).sum(1, keepdims=True)) / math.sqrt(M)


def trig(X, rng):
    """Trig features of the Gaussian kernel e^{−|x−y|²/2}, m = M (2M numbers): unbiased."""
    P = X @ rng.standard_normal((X.shape[1], M))
    return np.hstack([np.cos(P), np.sin(P)]) / math.sqrt(M)


TRIG = rfviz.create("trig", m=M, kernel="gaussian")


def trig_mse(x, y):
    """The correct closed form (rfviz's trig, written by hand here would be the same formula)."""
    return float(TRIG.mse(x, y, d=len(x)))


def trig_mse_wrong_off_diagonal(x, y):
    """Right at |x| = |y|, 15 % too large wherever |x| ≠ |y|."""
    equal = math.isclose(np.linalg.norm(x), np.linalg.norm(y), rel_tol=1e-9)
    return trig_mse(x, y) * (1.0 if equal else 1.15)


@pytest.mark.slow  # Monte Carlo of a Python map: a few seconds
def test_correct_map_is_unbiased_and_compared_at_its_feature_length():
    report = check_feature_map(positive, "softmax", compare=("trig", "positive"), **FAST)
    assert report.verdict == "unbiased", report.summary()
    assert report.rotation["ran"] and not report.direction_dependent
    assert report.params == {"features": M, "kernel": "softmax"}
    by_name = {c.name: c for c in report.comparisons}
    assert by_name["positive"].params["m"] == M and by_name["trig"].params["m"] == M // 2  # 16 numbers each


@pytest.mark.slow  # Monte Carlo of a Python map: a few seconds
def test_uniformly_biased_map_is_flagged():
    report = check_feature_map(inflated, "softmax", **FAST)
    assert report.verdict == "bias detected" and report.exit_code == 1, report.summary()


@pytest.mark.slow  # Monte Carlo of a Python map: a few seconds
def test_declared_bias_is_reported_as_declared():
    report = check_feature_map(inflated, "softmax", biased=True, **FAST)
    assert report.verdict == "biased, as declared" and report.exit_code == 4


@pytest.mark.slow  # Monte Carlo of a Python map: a few seconds
def test_axis_dependent_map_is_flagged_as_direction_dependent():
    report = check_feature_map(axis_biased, "softmax", **FAST)
    assert report.verdict == "bias detected", report.summary()
    assert report.direction_dependent, report.rotation
    assert "depend on the direction of x" in report.summary()
    assert report.to_json()["direction_dependent"] is True


@pytest.mark.slow  # Monte Carlo of a Python map: a few seconds
def test_rotation_test_passes_a_rotation_invariant_map_on_the_full_grid():
    report = check_feature_map(trig, "gaussian", trials=2000, check_feature_maps=False, seed=3)
    assert report.rotation["tested_count"] >= 10 and report.rotation["rejected_count"] == 0, report.rotation
    assert report.verdict == "unbiased"


def test_haar_rotation_is_orthogonal_with_haar_signs():
    rng = np.random.default_rng(0)
    firsts = np.array([haar_rotation(5, rng)[0, 0] for _ in range(400)])
    q = haar_rotation(5, rng)
    assert np.allclose(q @ q.T, np.eye(5))
    assert 0.4 < np.mean(firsts < 0) < 0.6  # Haar: Q[0, 0] is symmetric about 0 (no sign bias as in plain QR)


def test_rotation_test_statistic_is_chi_square_of_the_differences():
    class Run:  # the MCResult fields the test reads
        def __init__(self, mean, sd):
            self.mean_ratio, self.ratio_sd, self.target = np.array(mean), np.array([sd, sd]), np.ones(2)
            self.trials, self.rel_mse = 10_000, np.array([1e-2, 1e-2])  # kurtosis 1 + N·SE²/MSE² = 2
            self.rel_mse_stderr, self.extras, self.dtype = np.array([1e-4, 1e-4]), {"d": 2}, "torch.float64"

    q, p, tested = rotation_test([Run([1.0, 1.0], 10.0), Run([1.0, 1.5], 10.0)])
    se = 10.0 / 100  # sd / √trials
    assert q[0] == pytest.approx(0.0) and q[1] == pytest.approx(0.5**2 / (2 * se**2))  # (b₁ − b₀)²/(2s²)
    assert tested.all() and p[0] == pytest.approx(1.0)
    assert p[1] == pytest.approx(math.erfc(math.sqrt(q[1] / 2)))  # χ²₁'s tail: P(|N(0, 1)| ≥ √q)


@pytest.mark.slow  # Monte Carlo of a Python map: a few seconds
def test_closed_form_wrong_only_off_equal_norms_is_caught_at_default_trials():
    report = check_feature_map(trig, "gaussian", mse=trig_mse_wrong_off_diagonal, check_feature_maps=False,
                               rotations=0)
    assert report.verdict == "closed form disagrees", report.closed_form_text()
    assert any(p["cf_rejected"] for p in report.extra_pairs if p["kind"] == "unequal")
    assert not report.closed_form_rejected.any()  # the grid has |x| = |y|: right there
    assert report.closed_form_unequal_detectable < 0.15


@pytest.mark.slow  # Monte Carlo of a Python map: a few seconds
def test_correct_closed_form_agrees():
    report = check_feature_map(trig, "gaussian", mse=trig_mse, check_feature_maps=False, rotations=0)
    assert report.closed_form_agrees is True, report.closed_form_text()
    assert report.verdict == "unbiased"


def test_torch_maps_are_accepted():
    torch = pytest.importorskip("torch")

    def torch_positive(X, rng):
        return torch.as_tensor(positive(X, rng))

    est = feature_map_estimator(torch_positive, "softmax", d=3)
    assert est.feature_length == M


@pytest.mark.parametrize(("fn", "message"), [
    (lambda X, rng: np.ones(3), "(n, M) array"),
    (lambda X, rng: 1 / 0, "ZeroDivisionError"),
    ("not a function", "callable"),
])
def test_broken_maps_are_one_line_errors(fn, message):
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        feature_map_estimator(fn, "softmax", d=3)


def test_a_map_using_the_global_rng_is_refused_as_not_reproducible():
    def global_rng(X, rng):
        return positive(X, np.random.default_rng(np.random.randint(2**31)))

    with pytest.raises(ParameterError, match="not reproducible"):
        check_feature_map(global_rng, "softmax", **FAST)


def _write(tmp_path: pathlib.Path, body: str) -> pathlib.Path:
    path = tmp_path / "my_map.py"
    path.write_text(textwrap.dedent(body))
    return path


@pytest.mark.slow
@pytest.mark.integration  # a plugin process
def test_a_ten_line_numpy_file_runs_in_the_plugin_process(tmp_path):
    path = _write(tmp_path, """\
        import numpy as np

        LOADED_IN_PARENT = __import__("os").getpid()


        def phi(X, rng):
            m = 16
            W = rng.standard_normal((X.shape[1], m))
            return np.exp(X @ W - 0.5 * (X * X).sum(1, keepdims=True)) / np.sqrt(m)
        """)
    report = check_feature_map_isolated(f"{path}:phi", "softmax", ["positive"], **FAST)
    assert report.verdict == "unbiased" and report.estimator == "phi"
    assert not [m for m in sys.modules if m.startswith("rfviz_plugin_my_map")]  # never imported here
    assert report.features == {"available": False, "reason": "not checked"}
    assert report.comparisons and report.comparisons[0].name == "positive"


@pytest.mark.slow
@pytest.mark.integration  # a plugin process
def test_isolated_errors_are_one_line(tmp_path):
    path = _write(tmp_path, "def phi(X, rng):\n    raise RuntimeError('boom')\n")
    with pytest.raises(ParameterError, match="RuntimeError: boom") as info:
        check_feature_map_isolated(f"{path}:phi", "softmax", [], **FAST)
    assert "\n" not in str(info.value)
    with pytest.raises(ParameterError, match=r"FILE\.py:FUNCTION"):
        check_feature_map_isolated(str(path), "softmax", [], **FAST)


@pytest.mark.slow  # the lab page through Streamlit's AppTest, and a check in a plugin process
@pytest.mark.integration
def test_the_lab_page_checks_a_feature_map_file_and_pasted_code(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    root = pathlib.Path(__file__).resolve().parents[2]
    path = _write(tmp_path, "import numpy as np\n\n\ndef phi(X, rng):\n"
                  "    W = rng.standard_normal((X.shape[1], 16))\n"
                  "    return np.exp(X @ W - 0.5 * (X * X).sum(1, keepdims=True)) / 4\n")
    monkeypatch.setenv("RFVIZ_LAB_PASTE", "1")
    at = AppTest.from_file(str(root / "app_pages" / "estimator_lab.py"), default_timeout=300).run()
    next(r for r in at.radio if r.label == "Check").set_value("a feature map").run()
    assert not at.exception, at.exception
    next(t for t in at.text_input if t.label.startswith("features")).set_value(f"{path}:phi").run()
    next(t for t in at.number_input if t.label == "Monte-Carlo trials").set_value(2000).run()
    next(b for b in at.button if b.label == "Run the check").click().run()
    assert not at.exception, at.exception
    assert any("UNBIASED" in s.value for s in at.success), [m.value for m in at.main]
    next(r for r in at.radio if r.label == "Feature map from").set_value("pasted code").run()
    assert not at.exception and [s.value for s in at.selectbox if s.label.startswith("features")] == ["phi"]


def test_a_function_crosses_to_the_plugin_process_by_its_file_and_name():
    from rfviz.lab.feature_map import callable_spec

    assert callable_spec(positive) == f"{pathlib.Path(__file__).resolve()}:positive"
    assert callable_spec("my_map.py:phi") == "my_map.py:phi"

    def nested(X, rng):
        return X

    for bad in (nested, lambda X, rng: X, np.exp, 3):
        with pytest.raises(ParameterError, match="features"):
            callable_spec(bad)


@pytest.mark.slow  # Monte Carlo of a Python map
def test_the_documented_feature_map_is_unbiased(tmp_path):
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "howto" / "own-estimator.md").read_text()
    code = next(block.split("```", 1)[0] for block in doc.split("```python\n")[1:] if "def phi(X, rng)" in block)
    namespace: dict = {}
    exec(compile(code, "own-estimator.md", "exec"), namespace)  # the snippet as a user copies it
    report = check_feature_map(namespace["phi"], "softmax", **FAST)
    assert report.verdict == "unbiased", report.summary()


@pytest.mark.slow
@pytest.mark.integration  # the CLI as a subprocess, the map in a plugin process
def test_cli_and_api_check_a_feature_map_file(tmp_path):
    import json
    import os
    import subprocess

    root = pathlib.Path(__file__).resolve().parents[2]
    path = _write(tmp_path, "import numpy as np\n\n\ndef phi(X, rng):\n"
                  "    W = rng.standard_normal((X.shape[1], 16))\n"
                  "    return np.exp(X @ W - 0.5 * (X * X).sum(1, keepdims=True)) / 4\n\n\n"
                  "def biased(X, rng):\n    return phi(X, rng) * 1.1\n")
    fast = ["--r", "0.5,1", "--theta", "3", "--trials", "2000", "--no-features", "--compare", ""]
    proc = subprocess.run([sys.executable, "-m", "rfviz", "check", "--features", f"{path}:phi", "--kernel",
                           "softmax", "--json", *fast], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["verdict"] == "unbiased" and out["rotation"]["ran"] and out["estimator"] == "phi"
    bad = subprocess.run([sys.executable, "-m", "rfviz", "check", "--features", f"{path}:phi"], capture_output=True,
                         text=True, timeout=600, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)})
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--kernel" in bad.stderr
    res = rfviz.check(features=f"{path}:biased", kernel="softmax", biased=True, r=[0.5, 1.0],
                      theta=[0.0, 1.5, 2.5], trials=2000, compare=[], check_feature_maps=False)
    assert res.verdict == "biased, as declared" and res.exit_code == 4
