"""Printing a command's result: JSON, or an aligned two-column table (nested values flattened, never a repr)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from ..textio import jsonable


def _text(value: Any) -> str:
    """One cell: ``None`` as ``-``, a list as comma-separated items, a flat mapping as ``k=v`` pairs."""
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_text(v)}" for k, v in value.items())
    return str(value)


def _rows(obj: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """``(key, text)`` rows; a mapping holding other mappings or long values becomes dotted ``key.sub`` rows."""
    for key, value in obj.items():
        name = f"{prefix}{key}"
        nested = isinstance(value, dict) and any(isinstance(v, dict | list) for v in value.values())
        if nested or (isinstance(value, dict) and len(_text(value)) > 100):
            yield from _rows(value, f"{name}.")
        else:
            yield name, _text(value)


def table(rows: list[tuple[str, ...]]) -> str:
    """Rows of cells as text columns padded to the widest cell of each column (the last column unpadded).

    Examples
    --------
    >>> print(table([("a", "1"), ("long", "2")]))
    a     1
    long  2
    """
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
                     for r in rows)


def emit(obj: dict[str, Any], as_json: bool, text: Callable[[dict[str, Any]], str] | None = None) -> None:
    """Print a result as JSON, or as text: the command's own ``text(obj)`` or else an aligned ``key  value`` table
    (nested mappings as ``key.sub`` rows).

    Parameters
    ----------
    obj : dict
        The result; values are made JSON-able first (non-finite floats become None, also for ``text``).
    as_json : bool
        Print indented JSON instead of the text.
    text : callable, optional
        The command's text form of the (JSON-able) result, e.g. a ranking as a table of columns.

    Examples
    --------
    >>> emit({"a": 1, "b": {"c": [1, 2]}}, False)
    a    1
    b.c  1, 2
    >>> emit({"a": 1}, False, text=lambda r: f"a is {r['a']}")
    a is 1
    """
    obj = jsonable(obj)
    if as_json:
        print(json.dumps(obj, indent=2))
        return
    print(text(obj) if text is not None else table(list(_rows(obj))))
