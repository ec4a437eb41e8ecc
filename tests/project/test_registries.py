"""One source for each concept: the coupling and kernel registries, and one ``Param`` definition per name.

The static checks read the source with ``ast`` (no module is executed), so they see every module of ``rfviz/``,
including ones no test imports.
"""

from __future__ import annotations

import ast
import functools
import pathlib
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
import source_trees
import torch

import rfviz
from rfviz import registries as R
from rfviz.params import COUPLING_PARAM, KERNEL_PARAM, ParameterError
from rfviz.sampling import sample_omegas

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "rfviz"
COUPLING_NAMES = ("iid", "orthogonal", "simplex", "simplex_plus", "sorf", "fastfood", "qmc_sobol",
                  "qmc_halton")  # spelled here on purpose: the test's own truth
MAX_MODULES_SPELLING_COUPLINGS = 2


@functools.cache  # parsed once for every test of this file (the tests only read the trees)
def _trees() -> dict[str, ast.Module]:
    return {str(p.relative_to(ROOT)): source_trees.parse(p) for p in sorted(PACKAGE.rglob("*.py"))}


def modules_spelling(names: tuple[str, ...], trees: dict[str, ast.Module]) -> dict[str, int]:
    """module → how many string constants in it are exactly one of ``names`` (docstrings are not exact names)."""
    out = {}
    for module, tree in trees.items():
        n = sum(isinstance(node, ast.Constant) and node.value in names for node in ast.walk(tree))
        if n:
            out[module] = n
    return out


def param_assignments(trees: dict[str, ast.Module]) -> list[tuple[str, str]]:
    """(variable name, module) of every assignment whose value is a call to ``Param``/``replace`` of a Param, or any
    ``...Param(...)`` subclass; annotated assignments included."""
    found = []
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            if not isinstance(value, ast.Call):
                continue
            func = value.func
            fname = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            is_param = fname.endswith("Param") or (fname == "replace" and any(
                isinstance(a, ast.Name) and a.id.endswith("_PARAM") for a in value.args))
            if is_param:
                found += [(t.id, module) for t in targets if isinstance(t, ast.Name)]
    return found


# ------------------------------------------------------------------------------------------ static checks
def test_coupling_names_are_spelled_in_at_most_two_modules():
    spelled = modules_spelling(COUPLING_NAMES, _trees())
    assert "rfviz/registries.py" in spelled
    assert len(spelled) <= MAX_MODULES_SPELLING_COUPLINGS, (
        f"coupling names spelled as literals in {len(spelled)} modules (read them from rfviz.registries): {spelled}")


def test_one_param_definition_per_name():
    found = param_assignments(_trees())
    assert len(found) > 40  # the checker sees the package's Params
    counts = Counter(name for name, _ in found)
    repeated = {name: sorted(m for n, m in found if n == name) for name, c in counts.items() if c > 1}
    assert not repeated, f"Param variables defined more than once: {repeated}"


def test_checkers_find_what_they_look_for():
    """The two static checks fail on code that breaks them (a check that cannot fail tests nothing)."""
    trees = {"a.py": ast.parse('X = "iid"\nTRIALS_PARAM = Param("trials", 1)'),
             "b.py": ast.parse('Y = {"simplex": 1}\nTRIALS_PARAM = replace(BASE_PARAM, high=3)'),
             "c.py": ast.parse('"""iid docstring"""\nZ = "orthogonal (ORF)"')}
    assert modules_spelling(COUPLING_NAMES, trees) == {"a.py": 1, "b.py": 1}
    assert Counter(n for n, _ in param_assignments(trees))["TRIALS_PARAM"] == 2


# -------------------------------------------------------------------------------------------- registries
@pytest.mark.integration  # imports in a fresh Python subprocess
def test_registries_import_neither_torch_nor_numpy():
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('r', sys.argv[1]); "
            "m = importlib.util.module_from_spec(spec); sys.modules['r'] = m; spec.loader.exec_module(m); "
            "print('torch' in sys.modules, 'numpy' in sys.modules, len(m.COUPLINGS))")
    out = subprocess.run([sys.executable, "-c", code, str(PACKAGE / "registries.py")], capture_output=True,
                         text=True, check=True, timeout=120).stdout.split()
    assert out == ["False", "False", str(len(COUPLING_NAMES))]


def test_coupling_registry_drives_params_and_samplers():
    assert R.COUPLING_NAMES == COUPLING_NAMES
    assert COUPLING_PARAM.choices == R.COUPLING_NAMES
    assert R.COUPLINGS_WITH_DENSITY == ("iid", "orthogonal", "simplex")
    assert R.COUPLED_CLOSED_FORMS == ("orthogonal", "simplex")
    assert R.SAMPLED_COUPLINGS == COUPLING_NAMES[1:]
    for name, coupling in R.COUPLINGS.items():
        assert callable(coupling.sampler()), name
        gen = torch.Generator().manual_seed(1)
        w, sq = sample_omegas(name, 3, 5, coupling.min_d + 2, 2, gen, torch.device("cpu"), torch.float64)
        assert w.shape == (3, 5, 2) and torch.all(sq >= (w * w).sum(-1) - 1e-12)


def test_coupling_minimum_dimension_comes_from_the_registry():
    from rfviz.maths.simrf import check_coupling_dimension
    for name, coupling in R.COUPLINGS.items():
        assert check_coupling_dimension(name, coupling.min_d) == coupling.min_d
        if coupling.min_d > 1:
            with pytest.raises(ParameterError, match=rf"d must be an integer in \[{coupling.min_d}, inf\)"):
                check_coupling_dimension(name, coupling.min_d - 1)


def test_estimators_closed_forms_follow_the_registry():
    for name, coupling in R.COUPLINGS.items():
        est = rfviz.create("positive", m=4, coupling=name)
        assert est.closed_form_available() == (name == R.IID or coupling.coupled_closed_form), name


def test_figure_labels_are_the_registry_titles():
    from rfviz.figures import simrf as fc
    assert fc.LABELS["simplex_plus"] == "simplex+ (SimRF+)" and fc.LABELS["orthogonal"] == "orthogonal (ORF)"
    fig = fc.density_figure(6, R.COUPLINGS_WITH_DENSITY, w=np.linspace(0.1, 6, 20))
    assert {t.name for t in fig.data} >= {R.COUPLINGS[c].title for c in R.COUPLINGS_WITH_DENSITY}


def test_kernel_aliases_are_declared_once():
    assert KERNEL_PARAM.choices == R.SOFTMAX_KERNELS == ("softmax", "gaussian")
    assert R.canonical_kernel("exponential") == "softmax" and R.canonical_kernel("softmax") == "softmax"
    assert R.kernel_spellings("softmax") == ("softmax", "exponential")
    assert R.kernel_spellings("unknown") == ("unknown",)
    from rfviz.compute.catalog import estimators_for_kernel, make_estimator
    assert "maclaurin" in estimators_for_kernel("softmax")
    assert make_estimator("maclaurin", {}, "softmax").params["kernel"] == "exponential"


# ------------------------------------------------------------------------------------ what is known (labels)
def _label_problems(entries: dict[str, tuple[str, str]]) -> dict[str, str]:
    """name → what is wrong with its (known, citation); empty when every entry is labelled and cited."""
    from rfviz.references import check_citation
    problems = {}
    for name, (known, citation) in entries.items():
        if known not in R.KNOWN_LABELS:
            problems[name] = f"known={known!r}"
            continue
        try:
            check_citation(citation)
        except ValueError as exc:
            problems[name] = str(exc)
    return problems


def test_every_estimator_and_coupling_carries_a_label_and_a_citation():
    entries = {f"estimator {n}": (cls.known, cls.citation) for n, cls in rfviz.REGISTRY.items()}
    entries |= {f"coupling {n}": (c.known, c.citation) for n, c in R.COUPLINGS.items()}
    assert len(entries) >= 20
    assert _label_problems(entries) == {}
    assert set(R.KNOWN_LABELS) == {"closed_form", "bound", "rate", "monte_carlo"}


def test_the_label_check_fails_on_an_unlabelled_or_uncited_entry():
    problems = _label_problems({"a": ("", "[CRT] eq. 5"), "b": ("closed_form", ""), "c": ("bound", "[XYZ] eq. 1"),
                                "d": ("rate", "[CRT] somewhere"), "e": ("monte_carlo", "[SimRF] §3.2, Eq. 17")})
    assert set(problems) == {"a", "b", "c", "d"}
    with pytest.raises(KeyError, match="known must be one of"):
        R.Coupling("x", "x", 1, False, False, "rfviz.sampling:sample_iid", "exact", "[SimRF] §3")


def test_the_label_of_a_curve_follows_its_coupling():
    assert rfviz.create("trig", m=4).known_for_params() == "closed_form"
    assert rfviz.create("positive", m=4, coupling="orthogonal").known_for_params() == "closed_form"
    assert rfviz.create("positive", m=4, coupling="simplex_plus").known_for_params() == "monte_carlo"
    # the orthogonal coupling has closed forms, but not for a complex GERF A ([CRT] §3.9 is for real A)
    assert rfviz.create("gerf", A=complex(-0.1, 0.05), m=4, coupling="orthogonal").known_for_params() == "monte_carlo"


def test_estimators_json_carries_the_label(capsys):
    from rfviz.cli import main
    assert main(["estimators", "--json"]) == 0
    catalog = __import__("json").loads(capsys.readouterr().out)["estimators"]
    assert {e["name"] for e in catalog} == set(rfviz.REGISTRY)
    assert all(e["known"] in R.KNOWN_LABELS and e["citation"] for e in catalog)
