"""The syntax trees of the repository's source files, parsed once per test session and shared by the tests that
read the code with ``ast`` (tests/project/test_architecture.py, tests/project/test_registries.py); they only read
the trees."""

from __future__ import annotations

import ast
import functools
import pathlib


@functools.cache
def parse(path: pathlib.Path) -> ast.Module:
    """The syntax tree of the file at ``path`` (parsed on the first call, then shared)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))
