"""The API reference's docstrings follow numpydoc, and their examples run.

Scope: exactly the objects docs/api.md documents (its ``autofunction``/``autoclass``/``automodule`` directives and
the members they list), validated with numpydoc's own validator (``numpydoc.validate``), as scikit-learn does:

* every object has a docstring (GL08), and every documented parameter is ``name : type`` then an indented
  description (PR07), names a real parameter (PR02), and every return value has a description (RT03);
* functions and methods document every parameter (PR01) and what they return (RT01);
* the user-facing functions (every ``autofunction`` of the reference) have an Examples section (EX01).

The Examples of the modules the reference documents run as doctests (``rfviz.api``'s in tests/api/test_api.py).
"""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

ROOT = pathlib.Path(__file__).resolve().parents[2]
API_PAGE = ROOT / "docs" / "api.md"
CHECKED_EVERYWHERE = {"GL08", "PR02", "PR07", "RT03"}
CHECKED_FOR_CALLABLES = {"PR01", "RT01"}
EXAMPLES_NOT_REQUIRED = {"rfviz.estimators.base.register": "a decorator for built-ins; plugins must not use it"}
DOCTEST_MODULES = ["rfviz.estimators.base", "rfviz.params", "rfviz.registries", "rfviz.references",
                   "rfviz.geometry", "rfviz.compute.catalog", "rfviz.sweeps.runner"]
SLOW_DOCTEST_MODULES = ["rfviz.engine", "rfviz.lab.options", "rfviz.lab.stats", "rfviz.lab.features",
                        "rfviz.lab.report", "rfviz.lab.closed_form", "rfviz.lab.pipeline"]  # they run Monte Carlo


def reference_objects() -> list[tuple[str, str]]:
    """(kind, dotted name) of every object docs/api.md documents: function, class, method or data."""
    text = API_PAGE.read_text()
    objects = []
    for match in re.finditer(r"^\.\. auto(function|class|data|module):: (\S+)\n((?:   :.*\n)*)", text, re.M):
        kind, name, options = match.groups()
        if kind == "module":
            continue
        objects.append((kind, name))
        members = re.search(r":members: (.*)", options)
        if kind == "class" and members:
            objects += [("method", f"{name}.{m.strip()}") for m in members.group(1).split(",")]
    return objects


OBJECTS = [o for o in reference_objects() if o[0] != "data"]


def test_the_reference_is_found():
    names = {name for _, name in OBJECTS}
    for expected in ("rfviz.api.mse", "rfviz.engine.monte_carlo", "rfviz.params.Param", "rfviz.lab.check_estimator",
                     "rfviz.estimators.base.Estimator", "rfviz.registries.Coupling"):
        assert expected in names


@pytest.mark.parametrize(("kind", "name"), OBJECTS, ids=[name for _, name in OBJECTS])
def test_numpydoc_docstring(kind, name):
    checked = set(CHECKED_EVERYWHERE)
    if kind in ("function", "method"):
        checked |= CHECKED_FOR_CALLABLES
    if kind == "function" and name not in EXAMPLES_NOT_REQUIRED:
        checked.add("EX01")
    errors = [f"{code}: {message}" for code, message in numpydoc_validate.validate(name)["errors"]
              if code in checked]
    assert not errors, f"{name}:\n" + "\n".join(errors)


def _run_doctests(module_name: str) -> None:
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{module_name}: {result.failed} of {result.attempted} examples failed"


@pytest.mark.parametrize("module_name", DOCTEST_MODULES)
def test_examples_run(module_name):
    _run_doctests(module_name)


@pytest.mark.slow
@pytest.mark.parametrize("module_name", SLOW_DOCTEST_MODULES)
def test_monte_carlo_examples_run(module_name):
    _run_doctests(module_name)
