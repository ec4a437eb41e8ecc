"""Text in and out, shared by the CLI and the app: ``key=value`` assignments, number lists, JSON-safe values.

Neutral ground: it imports only numpy and ``rfviz.params``, so both ``rfviz.cli`` and the app's pages can use it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .params import MAX_LIST_LENGTH, Param, ParameterError


class UsageError(ValueError):
    """Bad command-line input (exit code 2)."""


def parse_assignments(items: Sequence[str]) -> dict[str, str]:
    """``["m=10", "A=-0.1"]`` → ``{"m": "10", "A": "-0.1"}``.

    Parameters
    ----------
    items : sequence of str
        ``key=value`` words as typed on the command line.

    Returns
    -------
    dict of str to str
        The values by key, still text; UsageError for a word without ``=`` or a key given twice.

    Examples
    --------
    >>> parse_assignments(["m=10", "A=-0.1"])
    {'m': '10', 'A': '-0.1'}
    """
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"expected key=value, got {item!r}")
        if key in out:
            raise UsageError(f"parameter {key!r} given twice")
        out[key] = value
    return out


def parse_vector(name: str, text: str) -> np.ndarray:
    """``"1,0.5,-2"`` → array; ParameterError naming the parameter otherwise.

    Parameters
    ----------
    name : str
        The parameter, named in the error.
    text : str
        Comma-separated numbers (one trailing comma is allowed).

    Returns
    -------
    numpy.ndarray
        The numbers as floats.

    Examples
    --------
    >>> parse_vector("x", "1,0.5,-2").tolist()
    [1.0, 0.5, -2.0]
    """
    items = text.split(",")
    if items and not items[-1].strip():  # one trailing comma is harmless
        items = items[:-1]
    if len(items) > MAX_LIST_LENGTH:
        raise ParameterError(f"{name} may hold at most {MAX_LIST_LENGTH} values, got {len(items)}; split the study "
                             f"(e.g. with the sweep command)")
    try:
        if any(not t.strip() for t in items):
            raise ValueError
        v = np.array([float(t) for t in items], dtype=float)
    except ValueError:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ParameterError(f"{name} must be a comma-separated list of numbers, got {shown!r}") from None
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ParameterError(f"{name} must be a non-empty list of finite numbers, got {text[:80]!r}")
    return v


def parse_values(specs: Sequence[Param], assignments: dict[str, str], owner: str | None = None,
                 lists: Sequence[str] = ()) -> dict[str, Any]:
    """``key=value`` text → typed values, each read by its ``Param`` (``Param.parse``; the names in ``lists`` as
    comma-separated numbers, ``parse_vector``), for the typed functions the commands call.

    Parameters
    ----------
    specs : sequence of Param
        The parameters that may be given.
    assignments : dict
        The text (``parse_assignments``).
    owner : str, optional
        Who has these parameters: an unknown name is refused naming it and the known ones; None passes unknown
        names on as text, for the typed function to refuse in its own words.
    lists : sequence of str
        Names whose value is a list of numbers.

    Returns
    -------
    dict

    Examples
    --------
    >>> from rfviz.params import M_PARAM
    >>> parse_values([M_PARAM], {"m": "16"})
    {'m': 16}
    """
    by_name = {p.name: p for p in specs}
    out: dict[str, Any] = {}
    for key, text in assignments.items():
        if key in lists:
            out[key] = parse_vector(key, text)
        elif key in by_name:
            out[key] = by_name[key].parse(text)
        elif owner is not None:
            raise ParameterError(f"{owner} has no parameter {key!r}; its parameters are: " + ", ".join(by_name))
        else:
            out[key] = text
    return out


def format_complex(value: complex, drop_zero_imag: bool = False) -> str:
    """A complex number as text Python and ``parse_assignments`` read back: "1+0.5j" ("1" for a real value when
    ``drop_zero_imag``).

    Parameters
    ----------
    value : complex
        The number.
    drop_zero_imag : bool, default False
        Write a real value without its ``+0j``.

    Returns
    -------
    str
        The number as text (6 significant digits per part).

    Examples
    --------
    >>> format_complex(1 + 0.5j), format_complex(2, drop_zero_imag=True)
    ('1+0.5j', '2')
    """
    c = complex(value)
    return f"{c.real:g}" if drop_zero_imag and c.imag == 0 else f"{c.real:g}{c.imag:+g}j"


def jsonable(value: Any) -> Any:
    """Make numpy scalars, complex numbers and non-finite floats JSON-safe (non-finite → null).

    Parameters
    ----------
    value : object
        A value, dict, list, tuple or array (converted recursively).

    Returns
    -------
    object
        The same structure made of JSON types: complex numbers as text, inf and NaN as None.

    Examples
    --------
    >>> jsonable({"a": np.float64("inf"), "b": [np.int64(2), 1j]})
    {'a': None, 'b': [2, '0+1j']}
    """
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, complex | np.complexfloating):
        return format_complex(value)
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        f = float(value)
        return f if math.isfinite(f) else None
    return value
