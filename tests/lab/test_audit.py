"""The audit adapters (rfviz.audit): scikit-learn's RBFSampler, GPyTorch's RFFKernel and performer-pytorch's FAVOR+
projection as plain feature maps, each against rfviz's closed form for the same mechanism. Tests of a library are
skipped, with the reason, only where the extra ``rfviz[audit]`` is not installed (CI installs it)."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import rfviz
from rfviz.audit import AUDITS, LIBRARIES, audit_json, export_audit_html, library_version, run_audit, select
from rfviz.params import ParameterError

EXTRA = "pip install rfviz[audit]"


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed ({EXTRA})")


def _unit_rows(n: int = 5, d: int = 6, seed: int = 0) -> np.ndarray:
    X = np.random.default_rng(seed).standard_normal((n, d))
    return 0.5 * X / np.linalg.norm(X, axis=1, keepdims=True)


def test_every_library_has_a_case_and_unknown_ones_are_refused():
    assert {c.library for c in AUDITS} == set(LIBRARIES)
    assert [c.name for c in select(["gpytorch"])] == ["RFFKernel"]
    with pytest.raises(ParameterError, match="library must be one of"):
        select(["tensorflow"])


def test_each_case_states_the_command_that_reproduces_it():
    for case in AUDITS:
        assert case.command().startswith(f"rfviz check --features {case.features} --kernel {case.kernel}")


@pytest.mark.slow  # 400 draws of RBFSampler: ~3 s
def test_rbf_sampler_is_reproducible_and_estimates_the_gaussian_kernel():
    _needs("sklearn")
    from rfviz.audit.sklearn_maps import RBF_COMPONENTS, rbf_sampler

    X = _unit_rows()
    a, b = rbf_sampler(X, np.random.default_rng(1)), rbf_sampler(X, np.random.default_rng(1))
    assert a.shape == (len(X), RBF_COMPONENTS) and np.array_equal(a, b)
    gram = np.mean([(lambda P: P @ P.T)(rbf_sampler(X, np.random.default_rng(s))) for s in range(400)], axis=0)
    exact = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    assert np.max(np.abs(gram - exact)) < 0.03  # 400 draws × 64 features: SE ≈ 0.004


def test_closed_forms_are_rfviz_own():
    _needs("sklearn")
    from rfviz.audit.sklearn_maps import rbf_sampler_mse

    x, y = _unit_rows(2)
    expected = rfviz.create("trig_phase", m=64, kernel="gaussian").mse(x, y)
    assert rbf_sampler_mse(x, y) == pytest.approx(float(expected))


def test_rff_kernel_draws_fresh_weights_per_call():
    _needs("gpytorch")
    from rfviz.audit.gpytorch_maps import RFF_SAMPLES, rff_kernel

    X = _unit_rows()
    a, b = rff_kernel(X, np.random.default_rng(1)), rff_kernel(X, np.random.default_rng(2))
    assert a.shape == (len(X), 2 * RFF_SAMPLES) and not np.allclose(a, b)
    assert np.array_equal(a, rff_kernel(X, np.random.default_rng(1)))
    assert np.allclose(np.sum(a * a, axis=1), 1.0)  # cos² + sin² over D frequencies, / D


def test_performer_projection_has_no_sign_fix_and_the_twin_has_one():
    _needs("performer_pytorch")
    import torch
    from performer_pytorch.performer_pytorch import gaussian_orthogonal_random_matrix

    from rfviz.audit.performer_maps import sign_fixed_orthogonal_matrix

    torch.manual_seed(0)
    library = np.array([gaussian_orthogonal_random_matrix(8, 4, scaling=0)[0, 0].item() for _ in range(300)])
    twin = np.array([sign_fixed_orthogonal_matrix(8, 4)[0, 0].item() for _ in range(300)])
    assert np.all(library < 0)  # Q without the sign correction: its first entry's sign never changes
    assert 0.4 < np.mean(twin < 0) < 0.6


def test_performer_maps_are_positive_features_of_the_softmax_kernel():
    _needs("performer_pytorch")
    from rfviz.audit.performer_maps import FAVOR_FEATURES, favor_plus, favor_plus_sign_fixed

    X = _unit_rows()
    for fn in (favor_plus, favor_plus_sign_fixed):
        phi = fn(X, np.random.default_rng(3))
        assert phi.shape == (len(X), FAVOR_FEATURES) and np.all(phi > 0)
        assert np.array_equal(phi, fn(X, np.random.default_rng(3)))


def test_missing_libraries_are_skipped_with_the_reason(monkeypatch):
    import rfviz.audit.cases as cases

    monkeypatch.setattr(cases, "library_version", lambda name: None)
    out = run_audit(["gpytorch"])
    (row,) = out["cases"]
    assert row["status"] == "skipped" and EXTRA in row["reason"]


def test_library_version_reads_the_installed_distribution():
    assert library_version("numpy") == np.__version__
    assert library_version("no-such-distribution-rfviz") is None


@pytest.mark.slow
def test_performer_audit_flags_the_library_and_passes_the_twin():
    _needs("performer_pytorch")
    out = run_audit(["performer-pytorch"], trials=600)  # the bias is at z ≈ -10 already at 200 trials
    library, twin = out["cases"]
    assert library["verdict"] == "bias detected" and library["direction_dependent"], library["summary"]
    assert twin["verdict"] == "unbiased", twin["summary"]


@pytest.mark.slow
def test_gpytorch_and_sklearn_agree_with_rfviz_closed_forms():
    _needs("gpytorch")
    out = run_audit(["scikit-learn", "gpytorch"], trials=2000)
    for row in out["cases"]:
        assert row["verdict"] == "unbiased" and row["closed_form_agrees"] is True, row["summary"]


ROWS = [{"library": "scikit-learn", "version": "1.9.1", "name": "RBFSampler", "status": "ran", "verdict": "unbiased",
         "sentence": "agrees", "command": "rfviz check …", "bias_z_min": -1.9, "bias_z_max": 1.2,
         "closed_form_z_min": -1.4, "closed_form_z_max": 1.8, "report": object()},
        {"library": "gpytorch", "name": "RFFKernel", "status": "skipped", "reason": "gpytorch is not installed"}]


def test_audit_json_drops_the_reports_and_keeps_the_rows():
    out = audit_json({"cases": ROWS, "seed": 0})
    assert [set(r) - set(row) for r, row in zip(out["cases"], ROWS, strict=True)] == [set(), set()]
    assert all("report" not in r for r in out["cases"])


def test_audit_html_exports_headless(tmp_path):
    path = export_audit_html({"cases": ROWS, "seed": 0}, str(tmp_path / "audit.html"))
    text = pathlib.Path(path).read_text()
    assert "RBFSampler" in text and "gpytorch is not installed" in text and "<html" in text
    with pytest.raises(ParameterError, match=r"\.html"):
        export_audit_html({"cases": ROWS, "seed": 0}, str(tmp_path / "audit.png"))


def _cli(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    root = pathlib.Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-m", "rfviz", "audit", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})


@pytest.mark.integration  # a subprocess
def test_cli_refuses_an_unknown_library_in_one_line():
    proc = _cli("tensorflow")
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert "library must be one of" in proc.stderr


@pytest.mark.slow  # a plugin process and 100-trial lab runs
@pytest.mark.integration
def test_cli_audit_json_and_html(tmp_path):
    _needs("sklearn")
    html = tmp_path / "audit.html"
    proc = _cli("scikit-learn", "--trials", "100", "--json", "--html", str(html))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    (row,) = out["cases"]
    assert row["status"] == "ran" and row["version"] == library_version("scikit-learn")
    assert row["command"].endswith("--trials 100") and out["cpu_seconds"] > 0
    assert "RBFSampler" in html.read_text()
