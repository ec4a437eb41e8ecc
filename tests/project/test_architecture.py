"""The import structure of ARCHITECTURE.md: no import cycle between rfviz modules, and no upward import.

Imports are read with ``ast`` (no module is executed): ``import``/``from`` statements anywhere in a module (inside
functions too) and, in a module that calls ``importlib.import_module``, every string literal that names a module
of the repository (a list of modules to import by name hides an import just as well). An edge goes to the module
named (``from pkg import sub`` names the submodule ``pkg.sub``, ``from pkg import attr`` the package ``pkg``).

Importing a module also runs the ``__init__`` of every package above it (``import rfviz.params`` runs
``rfviz/__init__.py``). Those runs are not edges of the cycle and layer checks (a package's own submodules import
each other through it), but what a package ``__init__`` imports *eagerly* (at module level, outside
``if TYPE_CHECKING:``) is loaded by every module below it, so it must sit in the importer's layer or below
(``test_package_inits_load_nothing_above_their_users``); a package that re-exports a higher layer does it lazily
with a module ``__getattr__`` (PEP 562), as ``rfviz/__init__.py`` does.
"""

from __future__ import annotations

import ast
import functools
import pathlib
import subprocess
import sys

import pytest
import source_trees

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("rfviz", "app_pages")

# Layers, lowest first; a module may import its own layer and the layers below it. Longest prefix wins.
LAYERS: tuple[str, ...] = ("numerics/params", "maths", "figures", "estimators", "engine", "compute",
                           "lab/gallery/sweep", "faces")
LAYER_OF_PREFIX: dict[str, str] = {
    "rfviz.params": "numerics/params",
    "rfviz.registries": "numerics/params",  # couplings and kernels; samplers named as "module:function", resolved late
    "rfviz.numerics": "numerics/params",
    "rfviz.textio": "numerics/params",
    "rfviz.fileio": "numerics/params",  # safe output files (checked, atomic)
    "rfviz.geometry": "numerics/params",
    "rfviz.references": "numerics/params",
    "rfviz._version": "numerics/params",
    "rfviz.diagnostics": "numerics/params",  # pure statistics of sampled errors (tail diagnostics)
    "rfviz.verdicts": "numerics/params",  # every verdict: round-off, reliable, z, p, Holm, agreement, words
    "rfviz.data": "numerics/params",  # data sets and preprocessing (numpy, scikit-learn)
    "rfviz.maths": "maths",
    "rfviz.sampling": "maths",
    "rfviz.estimators": "estimators",
    "rfviz.plugins": "estimators",  # loads user estimator classes; imports only estimators.base and params
    "rfviz": "faces",  # the package __init__: lazily, the registry and the Python API (rfviz.api)
    "rfviz.engine": "engine",
    "rfviz.gram_engine": "engine",  # Gram/attention error of a data set: closed forms summed, features sampled
    "rfviz.clustered": "estimators",  # HRF App. H clustered estimators, fitted to data
    "rfviz.figures": "figures",  # pure drawing: arrays in, plotly figures out (see test_figures_only_draw)
    "rfviz.compute": "compute",  # Monte Carlo, closed forms on grids, statistics, files and catalog for the figures
    "rfviz.lab": "lab/gallery/sweep",
    "rfviz.audit": "lab/gallery/sweep",  # other libraries' feature maps run through the lab
    "rfviz.plugin_process": "lab/gallery/sweep",  # runs plugin code (the lab) in a child process
    "rfviz._plugin_worker": "lab/gallery/sweep",  # that child's entry point
    "rfviz.gallery": "lab/gallery/sweep",
    "rfviz.sweeps": "lab/gallery/sweep",  # distributed sweeps: a thin layer over the engine
    "rfviz.api": "faces",  # the Python API: one typed core and function per command, which the CLI calls
    "rfviz.cli": "faces",
    "rfviz.server": "faces",  # the app server's parts without maths or streamlit (the Monte-Carlo job pool)
    "rfviz.__main__": "faces",
    "app_pages": "faces",
}
FORBIDDEN_EVERYWHERE_IN_RFVIZ = ("streamlit", "app_pages")

# Known violations (none today): an entry names one module and why it is skipped; remove it as soon as the module
# is fixed (test_known_exceptions_still_exist fails on stale entries).
KNOWN: dict[str, str] = {}


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for pkg in PACKAGES:
        base = ROOT / pkg
        if base.is_dir():
            for path in sorted(base.rglob("*.py")):
                found[_module_name(path)] = path
    return found


MODULES = _modules()


def _resolve(module: str, path: pathlib.Path, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{name}" if name else package


def _parse(path: pathlib.Path) -> ast.Module:
    """The syntax tree of one source file, parsed once per session (``source_trees``; the tests only read it)."""
    return source_trees.parse(path)


def imports(module: str) -> set[str]:
    """Full names of everything ``module`` imports (modules where they are modules)."""
    return set(_imports_of(module, MODULES[module]))


@functools.cache  # read once for every test of this file (keyed by the path too: a test may swap MODULES)
def _imports_of(module: str, path: pathlib.Path) -> frozenset[str]:
    tree = _parse(path)
    out: set[str] = set()
    dynamic = False
    literals: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            out |= _names_of(module, path, node)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            dynamic = True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in MODULES:
            literals.add(node.value)
    return frozenset(out | literals if dynamic else out)


def _names_of(module: str, path: pathlib.Path, node: ast.Import | ast.ImportFrom) -> set[str]:
    """Full names one import statement of ``module`` brings in (a submodule where ``from pkg import sub`` names one)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    target = _resolve(module, path, node.level, node.module)
    return {sub if (sub := f"{target}.{alias.name}") in MODULES else target for alias in node.names}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", getattr(test, "attr", "")) == "TYPE_CHECKING"


def eager_imports(module: str) -> set[str]:
    """Full names of what ``module`` imports when it is loaded: module-level statements (also inside module-level
    ``if``/``try``/``with``), not function or class bodies, not ``if TYPE_CHECKING:`` blocks."""
    path = MODULES[module]
    out: set[str] = set()
    todo = list(_parse(path).body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            out |= _names_of(module, path, node)
        elif isinstance(node, ast.If):
            todo += node.orelse if _is_type_checking(node) else [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *node.finalbody, *(s for h in node.handlers for s in h.body)]
        elif isinstance(node, ast.With):
            todo += node.body
    return out


def _internal(name: str) -> str:
    """The repository module that an imported name belongs to ('' if none)."""
    while name and name not in MODULES:  # `import rfviz.a.b` where b is an attribute
        name = name.rpartition(".")[0]
    return name


def packages_run(name: str) -> list[str]:
    """The package ``__init__`` modules that importing ``name`` runs (outermost first, ``name`` excluded)."""
    parts = name.split(".")
    return [p for p in (".".join(parts[:n]) for n in range(1, len(parts))) if p in MODULES]


def internal_edges() -> dict[str, set[str]]:
    """module → the rfviz/app_pages modules it imports (itself excluded)."""
    edges: dict[str, set[str]] = {}
    for module in MODULES:
        targets = set()
        for name in map(_internal, imports(module)):
            if name and name != module:
                targets.add(name)
        edges[module] = targets
    return edges


def layer(module: str) -> str:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in LAYER_OF_PREFIX:
            return LAYER_OF_PREFIX[prefix]
    raise AssertionError(f"{module} has no layer: add its path prefix to LAYER_OF_PREFIX (and to ARCHITECTURE.md)")


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    for root in sorted(edges):
        if root in state:
            continue
        stack = [(root, iter(sorted(edges[root])))]
        path = [root]
        state[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(edges.get(nxt, ())))))
                path.append(nxt)
    return None


def _checked(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {t for t in ts if t not in KNOWN} for m, ts in edges.items() if m not in KNOWN}


def test_every_module_has_a_layer():
    for module in MODULES:
        assert layer(module) in LAYERS


def test_known_exceptions_still_exist():
    """An exception for a module that is gone (or fixed and renamed) must be removed from KNOWN."""
    assert set(KNOWN) <= set(MODULES), sorted(set(KNOWN) - set(MODULES))


@pytest.mark.slow  # over 2 s of CPU: kept out of the one-minute unit tier
def test_no_import_cycle():
    cycle = find_cycle(_checked(internal_edges()))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_upward_import():
    bad = []
    for module, targets in _checked(internal_edges()).items():
        own = LAYERS.index(layer(module))
        bad += [f"{module} ({layer(module)}) imports {t} ({layer(t)})" for t in sorted(targets)
                if LAYERS.index(layer(t)) > own]
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_package_imports_neither_streamlit_nor_the_app():
    bad = []
    for module in MODULES:
        if not module.startswith("rfviz") or module in KNOWN:
            continue
        bad += [f"{module} imports {name}" for name in sorted(imports(module))
                if name.split(".")[0] in FORBIDDEN_EVERYWHERE_IN_RFVIZ]
    assert not bad, "\n".join(bad)


def test_package_inits_load_nothing_above_their_users():
    """Loading a module runs its packages' ``__init__``s (and those of every module it imports): what they import
    eagerly must not be above the module's layer (``import rfviz.params`` must not load the estimator catalog)."""
    bad = []
    for module in MODULES:
        if module in KNOWN:
            continue
        own = LAYERS.index(layer(module))
        targets = {module} | {t for t in map(_internal, imports(module)) if t}
        for package in sorted({p for t in targets for p in packages_run(t)} - {module}):
            for t in sorted({_internal(n) for n in eager_imports(package)} - {"", package}):
                if LAYERS.index(layer(t)) > own:
                    bad.append(f"{module} ({layer(module)}) runs {package}/__init__, which imports {t} ({layer(t)})")
    assert not bad, "package __init__ imports above their users (make them lazy):\n" + "\n".join(bad)


@pytest.mark.integration  # imports in a fresh Python subprocess
@pytest.mark.parametrize("module", ["rfviz.params", "rfviz.numerics", "rfviz.textio", "rfviz.geometry"])
def test_low_layers_import_neither_torch_nor_the_catalog(module):
    """The issue's own command, in a fresh interpreter: the lowest layer loads without torch or the estimators."""
    code = f"import sys, {module}; print('torch' in sys.modules, 'rfviz.estimators' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=True)
    assert out.stdout.split() == ["False", "False"], out.stdout + out.stderr


@pytest.mark.integration  # imports in a fresh Python subprocess
def test_package_exposes_its_public_names_lazily():
    code = ("import sys, rfviz; assert 'torch' not in sys.modules; assert set(rfviz.__all__) <= set(dir(rfviz)); "
            "from rfviz import REGISTRY, ParameterError, create; assert 'torch' in sys.modules; "
            "assert rfviz.REGISTRY is REGISTRY and 'gerf' in REGISTRY and rfviz.__version__; "
            "import rfviz.estimators.base as b; assert b.create is create and b.ParameterError is ParameterError; "
            "print(hasattr(rfviz, 'no_such_name'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         check=True)
    assert out.stdout.split() == ["False"], out.stdout + out.stderr


MAX_FUNCTION_LINES = 120


def long_functions(limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """Every function or method in rfviz/ (nested ones included) longer than ``limit`` lines, decorators and
    docstring included, as "module.qualname: N lines"; classes may be longer."""
    found = []
    for module, path in MODULES.items():
        if not module.startswith("rfviz"):
            continue
        stack: list[tuple[ast.AST, str]] = [(_parse(path), "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                name = prefix
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}."
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    n = child.end_lineno - first + 1
                    if n > limit:
                        found.append(f"{module}.{name[:-1]}: {n} lines")
                stack.append((child, name))
    return sorted(found)


def test_no_function_longer_than_the_limit():
    """No function or method in rfviz/ over MAX_FUNCTION_LINES lines (split it into named steps)."""
    assert not long_functions(), "functions too long:\n" + "\n".join(long_functions())

# ----------------------------------------------------------------------------- figures only draw
FIGURES_MAY_IMPORT = ("rfviz.figures", "rfviz.params", "rfviz.registries", "rfviz.numerics", "rfviz.geometry",
                      "rfviz.references",
                      "rfviz.diagnostics", "rfviz.verdicts", "rfviz._version", "rfviz.maths")
"""What rfviz/figures/ may import from the package: itself, the bottom layer and the closed forms of rfviz.maths
(never the engine, the estimators, gram, lab, data, sweep, compute or gallery)."""
FILE_READS = {"open", "read_text", "read_bytes", "iterdir", "glob", "rglob", "listdir", "scandir", "reader",
              "DictReader", "load", "loadtxt", "genfromtxt", "read_csv", "read_parquet"}
"""Calls that read files or list folders (``open``, pathlib reads, csv readers, numpy/pandas loaders)."""
MONTE_CARLO = {"monte_carlo", "sweep", "run_blocks", "prepare", "gram_error", "monte_carlo_gram", "default_rng",
               "sample_pair_sums", "sample", "check_estimator"}
"""Calls that draw random samples or run the engine."""


def _called_names(tree: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return out


def figures_violations(module: str, source: str | None = None) -> list[str]:
    """Why ``module`` (a module of rfviz/figures/) is not pure drawing: forbidden imports, file reads, sampling."""
    tree = ast.parse(source if source is not None else MODULES[module].read_text(encoding="utf-8"))
    bad = [f"{module} imports {name}" for name in sorted(imports(module) if source is None else set())
           if name.startswith("rfviz") and not name.startswith(FIGURES_MAY_IMPORT)]
    for node in ast.walk(tree):  # writing a figure out (export.py: csv.writer, pathlib paths) is drawing's business
        if isinstance(node, ast.Import | ast.ImportFrom) and source is not None:
            name = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            if name and name.split(".")[0] in ("os", "glob", "torch", "pandas"):
                bad.append(f"{module} imports {name}")
    called = _called_names(tree)
    bad += [f"{module} reads files: {name}()" for name in sorted(called & FILE_READS)]
    bad += [f"{module} samples: {name}()" for name in sorted(called & MONTE_CARLO)]
    return bad


def test_figures_only_draw():
    """rfviz/figures/ takes arrays and results and returns plotly figures: it imports no engine, estimators, gram,
    lab, data or compute, reads no file and draws no random sample (ARCHITECTURE.md, "compute vs draw")."""
    bad = []
    for module in MODULES:
        if module.startswith("rfviz.figures"):
            bad += figures_violations(module)
            source = MODULES[module].read_text(encoding="utf-8")
            bad += [v for v in figures_violations(module, source) if " imports " in v]
    assert not bad, "\n".join(bad)


def test_figures_check_catches_what_it_forbids():
    src = ("import csv\nimport torch\nimport numpy as np\n\ndef f(p):\n    rows = csv.reader(open(p))\n"
           "    return np.random.default_rng(0), monte_carlo(1)\n")
    found = figures_violations("rfviz.figures.fake", src)
    assert any("imports torch" in v for v in found) and any("open()" in v for v in found)
    assert any("reader()" in v for v in found)
    assert any("default_rng()" in v for v in found) and any("monte_carlo()" in v for v in found)
    assert figures_violations("rfviz.figures.fake", "import numpy as np\n\ndef f(x):\n    return np.sin(x)\n") == []


# ----------------------------------------------------------------------------- the checker itself
def test_cycle_finder_finds_a_cycle_and_only_a_real_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize(("module", "expected"), [("rfviz.cli", "faces"), ("rfviz.estimators.base", "estimators"),
                                                  ("rfviz.engine", "engine"), ("rfviz.params", "numerics/params")])
def test_layers_by_prefix(module, expected):
    assert layer(module) == expected


def test_eager_imports_skip_functions_and_type_checking(tmp_path, monkeypatch):
    src = tmp_path / "m.py"
    src.write_text("import a\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import b\nelse:\n    import c\n"
                   "try:\n    import d\nexcept ImportError:\n    import e\ndef f():\n    import g\n")
    monkeypatch.setitem(MODULES, "m", src)
    assert eager_imports("m") == {"a", "typing", "c", "d", "e"}
    assert {"b", "g"} <= imports("m")


def test_packages_run():
    assert packages_run("rfviz.maths.simrf") == ["rfviz", "rfviz.maths"]
    assert packages_run("rfviz") == []


def test_long_function_finder_sees_methods_and_nested_functions(tmp_path, monkeypatch):
    src = tmp_path / "m.py"
    src.write_text("class C:\n"
                   "    @property\n"
                   "    def f(self):\n"          # 3 lines with its decorator: over a limit of 2
                   "        return 1\n"
                   "    def g(self):\n"          # 5 lines
                   "        def h():\n"          # 3 lines
                   "            x = 1\n"
                   "            return x\n"
                   "        return h\n"
                   "def short():\n"
                   "    return 0\n")
    monkeypatch.setattr(sys.modules[__name__], "MODULES", {"rfviz.m": src})
    assert long_functions(2) == ["rfviz.m.C.f: 3 lines", "rfviz.m.C.g.h: 3 lines", "rfviz.m.C.g: 5 lines"]
    assert long_functions(4) == ["rfviz.m.C.g: 5 lines"]
