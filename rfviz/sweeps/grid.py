"""Grid syntax of ``rfviz sweep``: ``name=start:stop:count`` (inclusive linspace) or ``name=v1,v2,...``.

A grid is the Cartesian product of its axes, in the order given, the last axis varying fastest; point ``i`` is
``np.unravel_index(i, grid.shape)``. Axes may name any estimator parameter or one of the inputs ``INPUTS``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..estimators.base import Estimator
from ..geometry import check_d, check_r, check_theta, parse_real, snap_theta
from ..params import ParameterError

INPUTS: dict[str, Any] = {"r": 1.0, "theta": math.pi / 2, "d": 2, "embedding": "canonical"}
"""Inputs a sweep may fix or vary, with their defaults (the pair at (r, θ) in R^d, as in ``rfviz mse``)."""
MAX_AXIS_VALUES = 100_000
MAX_POINTS = 10_000_000


@dataclass(frozen=True)
class Axis:
    """One grid axis: a name and its values (floats, ints or strings, one type per axis)."""

    name: str
    values: tuple[Any, ...]

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class Grid:
    """Cartesian product of axes (last axis fastest)."""

    axes: tuple[Axis, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.axes)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    def point(self, index: int) -> dict[str, Any]:
        """The axis values of point ``index``."""
        if not 0 <= index < self.size:
            raise IndexError(f"point {index} outside a grid of {self.size} points")
        idx = np.unravel_index(index, self.shape) if self.axes else ()
        return {a.name: a.values[int(i)] for a, i in zip(self.axes, idx, strict=True)}

    def to_json(self) -> list[dict[str, Any]]:
        return [{"name": a.name, "values": list(a.values)} for a in self.axes]

    @classmethod
    def from_json(cls, items: list[dict[str, Any]]) -> Grid:
        return cls(tuple(Axis(i["name"], tuple(i["values"])) for i in items))


def _float(name: str, text: str) -> float:
    try:
        v = parse_real(name, text)
    except ParameterError:
        raise ParameterError(f"grid {name}: {text!r} is not a number (syntax: {name}=start:stop:count or "
                             f"{name}=v1,v2,...; pi, pi/2 allowed)") from None
    if name == "theta":
        v = snap_theta(v)
    if not math.isfinite(v):
        raise ParameterError(f"grid {name}: values must be finite, got {text!r}")
    return v


def _typed(name: str, values: list[str]) -> tuple[Any, ...]:
    """A comma list as ints when all are integers, else floats when all are numbers (``pi/2`` allowed; θ just
    above π snapped to π), else the strings."""
    try:
        return tuple(int(v) for v in values)
    except ValueError:
        pass
    try:
        floats = tuple(_float(name, v) for v in values)
    except ParameterError:
        return tuple(values)
    return floats if all(math.isfinite(f) for f in floats) else tuple(values)


def parse_axis(item: str) -> Axis:
    """``"theta=0:3.1416:32"`` (θ within ``THETA_ROUNDING`` above π is π), ``"theta=0:pi:9"`` or ``"m=8,16,64"`` →
    Axis; ParameterError naming the axis otherwise."""
    name, sep, spec = item.partition("=")
    name, spec = name.strip(), spec.strip()
    if not sep or not name or not spec:
        raise ParameterError(f"grid axis must be name=start:stop:count or name=v1,v2,..., got {item!r}")
    if ":" in spec:
        parts = spec.split(":")
        if len(parts) != 3:
            raise ParameterError(f"grid {name}: expected start:stop:count, got {spec!r}")
        start, stop = _float(name, parts[0]), _float(name, parts[1])
        try:
            count = int(parts[2])
        except ValueError:
            raise ParameterError(f"grid {name}: count must be an integer in [1, {MAX_AXIS_VALUES}], "
                                 f"got {parts[2]!r}") from None
        if not 1 <= count <= MAX_AXIS_VALUES:
            raise ParameterError(f"grid {name}: count must be an integer in [1, {MAX_AXIS_VALUES}], got {count}")
        if count == 1 and start != stop:
            raise ParameterError(f"grid {name}: count 1 needs start == stop, got {start:g}:{stop:g}")
        values: tuple[Any, ...] = tuple(float(v) for v in np.linspace(start, stop, count))
    else:
        tokens = [t.strip() for t in spec.split(",")]
        if any(not t for t in tokens):
            raise ParameterError(f"grid {name}: empty value in {spec!r}")
        if len(tokens) > MAX_AXIS_VALUES:
            raise ParameterError(f"grid {name}: at most {MAX_AXIS_VALUES} values, got {len(tokens)}")
        values = _typed(name, tokens)
    if len(set(values)) != len(values):
        raise ParameterError(f"grid {name}: repeated values in {spec!r}")
    return Axis(name, values)


def _integral(axis: Axis) -> Axis:
    """Integer-valued float axes of integer parameters become ints (m=8:64:8 → 8, 16, ...)."""
    if all(isinstance(v, float) and v == int(v) for v in axis.values):
        return Axis(axis.name, tuple(int(v) for v in axis.values))
    return axis


def _numbers(axis: Axis) -> np.ndarray:
    if not all(isinstance(v, int | float) for v in axis.values):
        raise ParameterError(f"grid {axis.name}: values must be numbers, got {axis.values}")
    return np.asarray(axis.values, dtype=float)


_INPUT_CHECKS = {
    "r": lambda a: check_r(_numbers(a)),
    "theta": lambda a: check_theta(_numbers(a)),
    "d": lambda a: [check_d(v) for v in a.values],
}


def parse_grid(items: list[str], estimator: type[Estimator], fixed: dict[str, Any] | None = None) -> Grid:
    """Parse ``--grid`` items for ``estimator``: names must be its parameters or ``INPUTS``, not fixed twice,
    and every value must validate (so a bad value fails before any work, naming the parameter and its range)."""
    fixed = fixed or {}
    specs = {p.name: p for p in estimator.spec}
    axes: list[Axis] = []
    for item in items:
        axis = parse_axis(item)
        if axis.name not in specs and axis.name not in INPUTS:
            names = ", ".join([*specs, *INPUTS])
            raise ParameterError(f"grid {axis.name}: {estimator.name} has no parameter or input {axis.name!r}; "
                                 f"choose from: {names}")
        if axis.name in fixed:
            raise ParameterError(f"{axis.name} is both fixed ({axis.name}={fixed[axis.name]}) and a grid axis")
        if axis.name in (a.name for a in axes):
            raise ParameterError(f"grid {axis.name}: axis given twice")
        if axis.name == "d" or (axis.name in specs and specs[axis.name].kind == "int"):
            axis = _integral(axis)
        if axis.name in specs:  # text (true, 1+0.5j) is read by the Param, as the runner will read it
            for v in axis.values:
                specs[axis.name].parse(v) if isinstance(v, str) else specs[axis.name].validate(v)
        elif axis.name in _INPUT_CHECKS:
            _INPUT_CHECKS[axis.name](axis)
        axes.append(axis)
    grid = Grid(tuple(axes))
    if grid.size > MAX_POINTS:
        raise ParameterError(f"grid has {grid.size} points; at most {MAX_POINTS} per sweep (split it)")
    return grid


def spec_text(name: str, value: Any) -> str:
    """A typed fixed value or grid entry as the sweep manifest writes it, exactly: integers as they are, floats by
    ``repr`` (round-trips), complex numbers as ``a+bj`` from ``repr``, booleans ``true``/``false``, text as it is.
    The manifest records a sweep's arguments as text so that a sweep started by the CLI resumes from the API and
    back; ParameterError naming ``name`` for anything else (or a non-finite number).

    Examples
    --------
    >>> spec_text("A", -0.1234567 + 0.05j), spec_text("r", 0.1), spec_text("shared", True)
    ('-0.1234567+0.05j', '0.1', 'true')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating) and math.isfinite(float(value)):
        return repr(float(value))
    if isinstance(value, complex | np.complexfloating) and math.isfinite(abs(complex(value))):
        return repr(complex(value)).strip("()")
    raise ParameterError(f"{name} must be a finite number, a complex number, true/false or text, got "
                         f"{str(value)[:40]!r}")


def axis_text(name: str, values: Any) -> str:
    """A typed grid axis (a list, tuple or 1-D array of values, or ``start:stop:count`` text) as ``name=...``."""
    if isinstance(values, str):
        return f"{name}={values}"
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise ParameterError(f"grid {name}: values must be a list or a 1-D array, got shape {values.shape}")
    if not isinstance(values, list | tuple | np.ndarray):
        raise ParameterError(f"grid {name}: values must be a list or start:stop:count text, got {str(values)[:40]!r}")
    if not 1 <= len(values) <= MAX_AXIS_VALUES:
        raise ParameterError(f"grid {name}: between 1 and {MAX_AXIS_VALUES} values, got {len(values)}")
    return f"{name}=" + ",".join(spec_text(name, v) for v in values)
