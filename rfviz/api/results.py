"""The one result base of the Python API: a frozen dataclass whose ``to_dict()`` is derived from its fields.

Every command's result (``MSEResult``, ``GramResult``, ...) and every nested row (``MonteCarloSummary``,
``GramRow``, ...) subclasses :class:`Result`. ``to_dict()`` walks the fields in their declared order (that order is
the command's ``--json`` key order), turns nested results, lists, mappings and numpy values into plain JSON values
(``rfviz.textio.jsonable``: complex numbers as text, non-finite floats as None), and leaves out the fields named in
``absent`` (keys the command prints only in some cases, e.g. ``note``). The JSON is made from the result, never the
result from the JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np

from ..textio import jsonable

R = TypeVar("R", bound="Result")


def nested(row: type[Result], *, many: bool = False) -> dict[str, Any]:
    """The metadata of a dataclass field holding a nested result (``many``: a list of them), built by
    :meth:`Result.from_mapping`: ``dataclasses.field(metadata=nested(Row))``.

    Parameters
    ----------
    row : type
        The nested result class.
    many : bool
        A list of rows instead of one.

    Returns
    -------
    dict

    Examples
    --------
    >>> @dataclasses.dataclass(frozen=True)
    ... class Row(Result):
    ...     a: int
    >>> @dataclasses.dataclass(frozen=True)
    ... class Table(Result):
    ...     rows: list[Row] = dataclasses.field(metadata=nested(Row, many=True))
    >>> Table.from_mapping({"rows": [{"a": 1}]}).rows[0].a
    1
    """
    return {"row": row, "many": many}


def _plain(value: Any) -> Any:
    """A field's value as plain Python values (nested results as their ``to_dict()``)."""
    if isinstance(value, Result):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


@dataclasses.dataclass(frozen=True)
class Result:
    """Base of every API result and row: frozen fields, ``to_dict()`` derived from them.

    Parameters
    ----------
    absent : frozenset of str
        Fields the command's JSON leaves out for this result (read as None), e.g. ``note`` where there is none.

    Examples
    --------
    >>> @dataclasses.dataclass(frozen=True)
    ... class Pair(Result):
    ...     mse: float
    ...     note: str | None = None
    >>> Pair(0.5, absent=frozenset({"note"})).to_dict()
    {'mse': 0.5}
    """

    absent: frozenset[str] = dataclasses.field(default=frozenset(), kw_only=True, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The result as the command's ``--json`` output (a fresh object: plain lists, numbers, strings, None).

        Returns
        -------
        dict
            One key per field (in field order) except ``absent`` ones and fields marked ``json=False``.
        """
        out = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)
               if f.name != "absent" and f.name not in self.absent and f.metadata.get("json", True)}
        return jsonable(out)

    def __getitem__(self, name: str) -> Any:
        """``row["name"]`` reads the field ``name`` (as a JSON row was read), e.g. ``res.rows[0]["method"]``.

        Parameters
        ----------
        name : str
            A field name.

        Returns
        -------
        object
            The field's typed value.

        Examples
        --------
        >>> @dataclasses.dataclass(frozen=True)
        ... class Pair(Result):
        ...     mse: float
        >>> Pair(0.5)["mse"]
        0.5
        """
        if name == "absent" or name not in {f.name for f in dataclasses.fields(self)}:
            raise KeyError(name)
        return getattr(self, name)

    @classmethod
    def from_mapping(cls: type[R], values: Mapping[str, Any], /, **extra: Any) -> R:
        """Build the result from a computation's typed values (not from JSON): one value per field, nested rows
        built by their own class; fields the mapping lacks are ``absent``.

        Parameters
        ----------
        values : mapping
            Field name → typed value, as the computation returns them.
        **extra
            Values of further fields (e.g. the lab's full report object).

        Returns
        -------
        Result

        Raises
        ------
        KeyError
            When ``values`` holds a key that is not a field (a bug: the result must describe every key).

        Examples
        --------
        >>> @dataclasses.dataclass(frozen=True)
        ... class Pair(Result):
        ...     mse: float
        ...     note: str | None = None
        >>> Pair.from_mapping({"mse": 0.5}).absent
        frozenset({'note'})
        """
        fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "absent"}
        unknown = set(values) - set(fields)
        if unknown:
            raise KeyError(f"{cls.__name__} has no field for {sorted(unknown)}")
        given = {**values, **extra}
        kwargs: dict[str, Any] = {}
        for name, f in fields.items():
            value = given.get(name)
            row = f.metadata.get("row")
            if row is not None and value is not None:
                value = ([row.from_mapping(v) for v in value] if f.metadata.get("many")
                         else row.from_mapping(value))
            kwargs[name] = value
        return cls(**kwargs, absent=frozenset(n for n in fields if n not in given))
