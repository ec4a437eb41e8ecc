"""Streamlit's "magic" writes every bare expression of a page script on the page: a string meant as a constant's
docstring inside a page's ``with`` block showed up as a stray sentence on the Estimator lab (2026-11-28). No page
script (app.py and app_pages/*.py, run by Streamlit) may hold a bare string but its module docstring."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE_SCRIPTS = sorted([ROOT / "app.py", *(p for p in (ROOT / "app_pages").glob("*.py") if p.name != "__init__.py")])


def _bare_strings(body: list[ast.stmt], top: bool) -> list[int]:
    lines = []
    for i, node in enumerate(body):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                and not (top and i == 0)):
            lines.append(node.lineno)
        for field in ("body", "orelse", "finalbody"):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                lines += _bare_strings(getattr(node, field, []) or [], False)
        for handler in getattr(node, "handlers", []):
            lines += _bare_strings(handler.body, False)
    return lines


@pytest.mark.parametrize("script", PAGE_SCRIPTS, ids=lambda p: p.name)
def test_no_page_writes_a_stray_string(script: pathlib.Path) -> None:
    lines = _bare_strings(ast.parse(script.read_text()).body, True)
    assert not lines, f"{script.name}: bare strings at lines {lines} would be written on the page (make them comments)"
