"""Every verdict rule with a number lives in the verdict module (``rfviz/verdicts/``, ARCHITECTURE.md "Verdicts").

An ``ast`` walk over ``rfviz/`` and ``app_pages/`` fails on a *verdict-threshold literal* outside
``rfviz/verdicts/``. What counts, precisely:

1. an assignment (module, class or function level, annotated or not) of a numeric literal to an UPPER_CASE name
   that names a verdict rule (``RULE_NAME``: alpha, z, threshold, share, tail, kurtosis, gate, minimum repeats or
   points, blocks of a reliability test, floor, FWER, standard-error targets, confirmation, tie, tolerance, exact,
   reliable, informative);
2. a numeric literal given as the default of a parameter whose name is such a rule (``alpha=0.01``,
   ``max_rel_stderr=0.1``, ``min_tail_index=2``);
3. a comparison of a verdict statistic — a name or attribute spelled z, p, p-value, share, kurtosis/kappa, tail
   index, rel_stderr (``STATISTIC``), or ``abs()`` of one — against a numeric literal other than 0 (a sign test
   is not a threshold).

A numeric literal is an int or float constant (not a bool), a negated one, or arithmetic of them (``1 / 100``).
Names that look like a rule but are not one (a sample size, a budget) are in ``ALLOWED`` with the reason; the
list only shrinks.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOME = ROOT / "rfviz" / "verdicts"
RULE_NAME = re.compile(r"ALPHA|(^|_)Z($|_)|THRESHOLD|SHARE|TAIL|KURTOSIS|GATE|MIN_REPEATS|MIN_INFORMATIVE|"
                       r"MIN_CLOSED_FORM|RELIABLE|FLOOR|FWER|STDERR|CONFIRM_TRIALS|TIE_|TOLERANCE|EXACT_|"
                       r"DETERMINISTIC|MIN_PARTS|MIN_POINTS", re.IGNORECASE)
STATISTIC = re.compile(r"^(z|abs_z|bias_z|z_.*|.*_z|p|p_?values?|pvalues?|.*_p|share|top_share|kurtosis|kappa|"
                       r"tail_index|tail|rel_stderr|rse)$")

# (file relative to the repository root, name or "line text") → why it is not a verdict threshold.
ALLOWED: dict[tuple[str, str], str] = {
    ("rfviz/compute/downstream.py", "alpha"): "ridge regression's regularisation strength, not a test level",
    ("rfviz/maths/moments.py", "alpha"): "a moment term's exponent (a paper's symbol), not a test level",
    ("rfviz/compute/features.py", "EXACT_RTOL"): "round-off tolerance of a closed-form fit MSE = c/m, no sample",
    ("rfviz/engine.py", "z"): "half-width of a drawn error band (±1.96 SE), not a test",
    ("rfviz/figures/lab.py", "Z_CLIP"): "where the colour scale of a z map ends (drawing)",
    ("rfviz/gallery/hrf.py", "HRF1_FLOOR"): "where a figure draws log10 MSE = -inf (drawing)",
    ("rfviz/maths/qmc.py", "_UNIFORM_FLOOR"): "clamp of a sampler's uniforms away from 0 (sampling)",
    ("rfviz/plugin_process.py", "OUTPUT_TAIL"): "bytes of a child process's output kept for its error message",
    ("rfviz/server/processes.py", "OUTPUT_TAIL_BYTES"): "bytes of a server's output kept for its error message",
    ("rfviz/sampling.py", "EXACT_SUM_MAX_DOF"): "which chi-square sampling algorithm is used (sampling)",
}


def _is_number(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _is_number(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) and _is_number(node.right)
    return False


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


def _statistic(node: ast.AST) -> str | None:
    """The name of the verdict statistic ``node`` spells (``z``, ``res.bias_z``, ``abs(z)``, ``np.abs(z[i])``)."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("abs", "fabs"):
        return _statistic(node.args[0]) if node.args else None
    if isinstance(node, ast.Subscript):
        return _statistic(node.value)
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name if name and STATISTIC.match(name) else None


def _targets(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def threshold_literals(path: pathlib.Path) -> list[tuple[str, int, str]]:
    """(name or statement, line, what) for every verdict-threshold literal in ``path`` (rules 1-3 above)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[tuple[str, int, str]] = []
    for node in ast.walk(tree):
        for name in _targets(node):
            if name.isupper() and RULE_NAME.search(name) and _is_number(node.value):  # type: ignore[attr-defined]
                found.append((name, node.lineno, "threshold constant"))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            for arg, default in pairs:
                if RULE_NAME.search(arg.arg.upper()) and _is_number(default):
                    found.append((arg.arg, default.lineno, "parameter default"))
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            stats = [s for s in (_statistic(x) for x in sides) if s]
            numbers = [x for x in sides if _is_number(x) and not _is_zero(x)]
            if stats and numbers:
                found.append((stats[0], node.lineno, f"comparison of {stats[0]} with a literal"))
    return found


def offenders(roots: tuple[pathlib.Path, ...] = (ROOT / "rfviz", ROOT / "app_pages")) -> list[str]:
    """Every verdict-threshold literal outside ``rfviz/verdicts/`` not in ``ALLOWED``, as ``file:line name (what)``."""
    out = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if HOME in path.parents:
                continue
            rel = path.relative_to(ROOT).as_posix()
            out += [f"{rel}:{line} {name} ({what})" for name, line, what in threshold_literals(path)
                    if (rel, name) not in ALLOWED]
    return out


@pytest.mark.slow  # over 2 s of CPU: kept out of the one-minute unit tier
def test_no_verdict_threshold_outside_the_verdict_module() -> None:
    found = offenders()
    assert not found, "verdict thresholds outside rfviz/verdicts/ (move them there, or say why in ALLOWED):\n" + \
        "\n".join(found)


def test_the_walk_finds_each_kind_of_threshold(tmp_path: pathlib.Path) -> None:
    """The three rules catch what they describe (so the walk above cannot pass by finding nothing)."""
    bad = tmp_path / "bad.py"
    bad.write_text("DEFAULT_ALPHA = 0.01\nHILL_Z: float = 1.645\nMAX_TOP_SHARE = 1 / 2\n"
                   "def f(z, alpha=0.05):\n    return abs(z) > 1e6 or res.top_share > 0.5 or z > 0\n")
    found = {(name, what.split()[0]) for name, _, what in threshold_literals(bad)}
    assert found == {("DEFAULT_ALPHA", "threshold"), ("HILL_Z", "threshold"), ("MAX_TOP_SHARE", "threshold"),
                     ("alpha", "parameter"), ("z", "comparison"), ("top_share", "comparison")}
    ok = tmp_path / "ok.py"
    ok.write_text("from rfviz.verdicts import FWER_LEVEL\nALPHA = FWER_LEVEL\nTRIALS = 2000\n"
                  "def f(z, alpha=FWER_LEVEL):\n    return z > 0 or z == -z\n")
    assert threshold_literals(ok) == []


def test_allowed_entries_are_still_needed() -> None:
    """An entry of ``ALLOWED`` whose name no longer appears as a threshold literal must be removed."""
    for (rel, name), why in ALLOWED.items():
        names = {n for n, _, _ in threshold_literals(ROOT / rel)}
        assert name in names, f"ALLOWED[{rel!r}, {name!r}] is stale ({why}): remove it"
