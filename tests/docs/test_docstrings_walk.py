"""Every public function, class and method of the ``rfviz`` package has a numpydoc docstring (scikit-learn's
``test_docstrings.py`` walk).

The walk imports every module of ``rfviz`` (not ``rfviz.__main__``, not underscore-prefixed modules) and takes the
public names each module defines itself (not underscore-prefixed, not imported from elsewhere: ``__module__`` is the
module), and, for each public class, the public methods its body defines. Each is validated with numpydoc's own
validator (``numpydoc.validate``) for:

* a docstring (GL08) with a summary (SS01);
* a Parameters section matching the signature: every parameter documented (PR01), no unknown one (PR02);
* for functions and methods, a Returns section when it returns something (RT01), a Yields section when it is a
  generator (YD01);
* for the public API functions (``rfviz.__all__``'s functions and every ``autofunction`` of docs/api.md), an Examples
  section (EX01).

Objects that do not pass yet are listed in ``tests/docstring_ignore.txt``, one qualified name per line. The list may
only shrink: a listed name that passes now, or that no longer exists, fails ``test_ignore_list_is_not_stale``
(in the slow tier while the list is long: it validates every listed name).
Regenerate it from the current state (after a merge or a rename) with::

    python tests/docs/test_docstrings_walk.py --regenerate
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pathlib
import pkgutil
import re
import sys

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

ROOT = pathlib.Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # this checkout's rfviz, not an installed one (the walk runs at import)
IGNORE_FILE = ROOT / "tests" / "docstring_ignore.txt"
CHECKED_EVERYWHERE = ("GL08", "SS01", "PR01", "PR02")
CHECKED_FOR_CALLABLES = ("RT01", "YD01")
NO_EXAMPLES_NEEDED = {"rfviz.estimators.base.register"}  # a decorator for built-ins; plugins must not use it
IGNORE_HEADER = """\
# Public objects of rfviz whose numpydoc docstring does not pass tests/docs/test_docstrings_walk.py yet.
# One qualified name per line. This list may only shrink: a name that passes now, or no longer exists, fails the test.
# Regenerate (after a merge or a rename): python tests/docs/test_docstrings_walk.py --regenerate
"""


def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def _modules() -> list[str]:
    import rfviz

    names = [info.name for info in pkgutil.walk_packages(rfviz.__path__, "rfviz.")]
    return ["rfviz", *sorted(n for n in names if not _is_private(n))]


def _methods(cls: type) -> list[str]:
    """The public methods ``cls``'s own body defines (plain, class and static methods; not properties)."""
    found = []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        func = member.__func__ if isinstance(member, classmethod | staticmethod) else member
        if inspect.isfunction(func):
            found.append(name)
    return found


@functools.cache
def public_objects() -> dict[str, str]:
    """Every public object of the walk, qualified name → kind (``function``, ``class`` or ``method``)."""
    objects: dict[str, str] = {}
    for module_name in _modules():
        module = importlib.import_module(module_name)
        exported = set(getattr(module, "__all__", ()))
        for name, obj in vars(module).items():
            home = getattr(obj, "__module__", None)
            # its own names, and those a package exports from a private module of its own (rfviz.sklearn._transformer)
            reexported = name in exported and isinstance(home, str) and home.startswith(module_name + "._")
            if name.startswith("_") or (home != module_name and not reexported):
                continue
            if inspect.isclass(obj):
                objects[f"{module_name}.{name}"] = "class"
                for method in _methods(obj):
                    objects[f"{module_name}.{name}.{method}"] = "method"
            elif inspect.isfunction(obj):
                objects[f"{module_name}.{name}"] = "function"
    return objects


@functools.cache
def api_functions() -> frozenset[str]:
    """The public API functions, which need an Examples section: ``rfviz.__all__``'s functions and docs/api.md's
    ``autofunction`` entries, by the qualified name of their definition."""
    import rfviz

    names = set(re.findall(r"^\.\. autofunction:: (\S+)$", (ROOT / "docs" / "api.md").read_text(), re.M))
    for public in rfviz.__all__:
        obj = getattr(rfviz, public)
        if inspect.isfunction(obj):
            names.add(f"{obj.__module__}.{obj.__qualname__}")
    return frozenset(names - NO_EXAMPLES_NEEDED)


@functools.cache
def errors_of(name: str) -> tuple[str, ...]:
    """The numpydoc errors of ``name`` among the checked codes, as ``"CODE: message"``."""
    kind = public_objects()[name]
    checked = set(CHECKED_EVERYWHERE)
    if kind != "class":
        checked.update(CHECKED_FOR_CALLABLES)
    if name in api_functions():
        checked.add("EX01")
    report = numpydoc_validate.validate(name)
    return tuple(f"{code}: {message}" for code, message in report["errors"] if code in checked)


def read_ignore_list() -> list[str]:
    """The names ``tests/docstring_ignore.txt`` lists (comments and blank lines skipped)."""
    lines = IGNORE_FILE.read_text().splitlines() if IGNORE_FILE.exists() else []
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def regenerate() -> list[str]:
    """Write ``tests/docstring_ignore.txt`` anew: every public object that fails the check today, sorted."""
    failing = sorted(name for name in public_objects() if errors_of(name))
    IGNORE_FILE.write_text(IGNORE_HEADER + "".join(f"{name}\n" for name in failing))
    return failing


IGNORED = set(read_ignore_list())


def test_the_walk_finds_the_package():
    """The walk reaches the API, the four objects the reference used to miss, methods, and no private name."""
    objects = public_objects()
    for expected in ("rfviz.api.mse_command.mse", "rfviz.engine.monte_carlo", "rfviz.sklearn.RandomFeatures",
                     "rfviz.sklearn.RandomFeatures.fit", "rfviz.estimators.base.Estimator"):
        assert expected in objects, expected
    assert not [name for name in objects if _is_private(name)]
    assert {"rfviz.api.mse_command.mse", "rfviz.engine.monte_carlo"} <= api_functions()
    assert "rfviz.numpy" not in objects and "rfviz.api.np" not in objects  # imported names are not the module's


def test_the_escaped_objects_are_checked_and_pass():
    """The API functions the reference used to miss are walked, and none of them is on the ignore list."""
    escaped = {"rfviz.api.features_needed_command.features_needed", "rfviz.api.rank_estimators_command.rank_estimators",
               "rfviz.api.downstream_command.downstream"}
    assert escaped <= set(public_objects())
    assert not escaped & IGNORED


def test_ignore_list_is_sorted_and_has_no_duplicates():
    names = read_ignore_list()
    assert names == sorted(set(names)), "keep tests/docstring_ignore.txt sorted, each name once"


@pytest.mark.slow  # validates every ignored name: ~6 s of CPU while the list is long
def test_ignore_list_is_not_stale():
    """Every ignored name still exists and still fails: fixed or removed objects leave the list (it only shrinks)."""
    objects = public_objects()
    gone = sorted(IGNORED - set(objects))
    passing = sorted(name for name in IGNORED & set(objects) if not errors_of(name))
    assert not gone, f"remove from tests/docstring_ignore.txt (no such public object any more): {gone}"
    assert not passing, f"remove from tests/docstring_ignore.txt (their docstrings pass now): {passing}"


@pytest.mark.parametrize("name", sorted(set(public_objects()) - IGNORED))
def test_numpydoc_docstring(name):
    errors = errors_of(name)
    assert not errors, f"{name}:\n" + "\n".join(errors)


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit("usage: python tests/docs/test_docstrings_walk.py --regenerate")
    print(f"{IGNORE_FILE.relative_to(ROOT)}: {len(regenerate())} names")
