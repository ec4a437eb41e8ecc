"""Packaging: pyproject.toml and requirements.txt agree, the version lives in one place, the console script points
at the CLI's entry point, and the two set-up commands exist."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _requirements_txt() -> dict[str, str]:
    reqs: dict[str, str] = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            assert req.name not in reqs, f"requirements.txt lists {req.name} twice"
            reqs[req.name.lower()] = str(req.specifier)
    return reqs


def _pyproject_requirements() -> dict[str, str]:
    project = _pyproject()["project"]
    reqs: dict[str, str] = {}
    groups = {"dependencies": project["dependencies"], **project["optional-dependencies"]}
    for group, lines in groups.items():
        for line in lines:
            req = Requirement(line)
            if req.name == "rfviz":  # the [all] extra names the others
                continue
            name = req.name.lower()
            assert name not in reqs, f"pyproject lists {name} twice (again in {group})"
            reqs[name] = str(req.specifier)
    return reqs


def test_requirements_txt_agrees_with_pyproject():
    """requirements.txt = the runtime dependencies plus every extra, with the same specifiers."""
    assert _requirements_txt() == _pyproject_requirements()


def test_all_extra_names_every_other_extra():
    extras = _pyproject()["project"]["optional-dependencies"]
    (all_req,) = (Requirement(s) for s in extras["all"])
    assert all_req.name == "rfviz" and all_req.extras == set(extras) - {"all"}


def test_torch_is_pinned_and_docs_tools_are_pinned():
    reqs = _pyproject_requirements()
    assert reqs["torch"] == "==2.13.0"
    for line in _pyproject()["project"]["optional-dependencies"]["docs"]:
        assert str(Requirement(line).specifier).startswith("=="), f"docs tool not pinned: {line}"


def test_version_is_one_literal_read_by_setuptools():
    """The version is written once, as a plain literal in rfviz/_version.py (setuptools reads it without importing
    the package); rfviz.__version__ is that value."""
    project = _pyproject()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "rfviz._version.__version__"}
    tree = ast.parse((ROOT / "rfviz" / "_version.py").read_text())
    literals = [node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)
                and isinstance(node.value, ast.Constant)]
    assert len(literals) == 1 and isinstance(literals[0], str)
    import rfviz

    assert rfviz.__version__ == literals[0]


@pytest.mark.integration
def test_console_script_is_the_cli_main():
    """The console script and ``python -m rfviz`` enter through rfviz._console, which imports nothing heavy and then
    runs rfviz.cli's console_main."""
    module, func = _pyproject()["project"]["scripts"]["rfviz"].split(":")
    import importlib
    import inspect

    from rfviz import _console

    entry = getattr(importlib.import_module(module), func)
    assert entry is _console.console_main and "from .cli import console_main" in inspect.getsource(entry)
    probe = "import sys, rfviz._console; print(sorted(m for m in ('torch', 'scipy', 'rfviz.cli') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


EXIT_PROBE = """
import atexit, sys, threading, time
from rfviz.cli import exit_process
atexit.register(lambda: print("atexit ran", flush=False))
sys.stdout.write("x" * 200000)  # buffered: must be flushed before the process leaves
if sys.argv[1] == "thread":
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread done"))).start()
exit_process(int(sys.argv[2]))
"""


@pytest.mark.slow  # starts Python subprocesses
@pytest.mark.parametrize(("mode", "code"), [("plain", 0), ("plain", 3), ("thread", 2)])
def test_exit_process_runs_atexit_flushes_and_waits_for_threads(mode, code):
    """The CLI leaves without Python's module teardown (rfviz.cli.exit_process) but still runs the atexit handlers,
    flushes what it printed, keeps the exit code, and waits for a live non-daemon thread."""
    out = subprocess.run([sys.executable, "-c", EXIT_PROBE, mode, str(code)], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert out.returncode == code, out.stderr
    assert out.stdout.startswith("x" * 200000) and "atexit ran" in out.stdout, out.stdout[-200:]
    assert ("thread done" in out.stdout) == (mode == "thread")


@pytest.mark.integration  # runs ./run in a subprocess
def test_run_script_knows_the_two_commands():
    """./run app and ./run test are the README's set-up; .ci/run calls ./run test."""
    run = ROOT / "run"
    assert run.stat().st_mode & 0o111, "./run must be executable"
    out = subprocess.run(["bash", str(run), "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "app" in out.stdout and "test" in out.stdout
    bad = subprocess.run(["bash", str(run), "nonsense"], capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "./run test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "./run app" in readme and "./run test" in readme


@pytest.mark.slow  # starts a Python subprocess (interpreter + torch import)
def test_python_m_rfviz_still_works():
    out = subprocess.run([sys.executable, "-m", "rfviz", "--help"], capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0 and "mse" in out.stdout


def test_licence_and_citation_agree_with_the_package():
    """LICENSE is the MIT licence, pyproject.toml declares it as a PEP 639 expression (setuptools ≥ 77 reads it), and
    CITATION.cff (Citation File Format 1.2.0: its required keys, an entity author) carries rfviz.__version__ and the
    same licence."""
    import yaml

    import rfviz

    project = _pyproject()
    assert project["project"]["license"] == "MIT" and project["project"]["license-files"] == ["LICENSE"]
    (setuptools_req,) = (Requirement(r) for r in project["build-system"]["requires"] if r.startswith("setuptools"))
    assert setuptools_req.specifier.contains("77") and not setuptools_req.specifier.contains("76.9")
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("MIT License\n") and "Copyright (c) 2026 the rfviz developers" in licence
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert all(isinstance(cff[key], str) and cff[key] for key in ("message", "title"))
    assert cff["authors"] == [{"name": "The rfviz developers"}]
    assert cff["version"] == rfviz.__version__
    assert cff["license"] == project["project"]["license"]
