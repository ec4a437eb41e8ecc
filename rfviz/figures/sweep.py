"""Figures of a sweep result file (``python -m rfviz sweep … --out FILE.csv|.parquet``): pure builders, no Streamlit.

A result file has one row per grid point: the grid values (one column per grid axis), then the columns of
``rfviz.sweeps.tasks.point_row`` (``mc_mse``, ``stderr``, ``reliable``, closed-form ``mse``, …).
``rfviz.compute.sweep_files.read_results`` validates an uploaded or local file into a ``SweepTable``;
``heatmap_figure`` plots log10 MSE over two grid axes (the others fixed),
``slice_figure`` along one axis with ±2 SE bars and the closed form; unreliable (heavy-tailed) points, flagged by
``rfviz.diagnostics.assess_mse``, are drawn as hollow markers with their own legend entry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import plotly.graph_objects as go

from ..numerics import LOG10
from ..params import ParameterError
from ..verdicts import roundoff_floor
from .common import THETA_TICKS, color, columns_to_csv, finite_or_none, heatmaps, layout


class SweepTable(Protocol):
    """What these figures read of a validated result (rfviz.compute.sweep_files.SweepTable): ``columns`` (name →
    1-D array, all the same length), its grid ``axes`` and its file ``name``."""

    columns: dict[str, np.ndarray]
    axes: tuple[str, ...]
    name: str

    @property
    def estimator(self) -> str: ...


UNRELIABLE = "unreliable (heavy-tailed)"
UNRELIABLE_COLOR = "#ff00c8"
"""Ring colour of unreliable points on heatmaps (visible on every Viridis colour and in the legend)."""


def axis_values(table: SweepTable, axis: str) -> list[Any]:
    """The distinct values of a grid axis, sorted (numbers) or in file order (text)."""
    col = table.columns[axis]
    if col.dtype == object:
        return list(dict.fromkeys(col.tolist()))
    return sorted(set(col.tolist()))


def _mask(table: SweepTable, fixed: Mapping[str, Any]) -> np.ndarray:
    mask = np.ones(len(table), dtype=bool)
    for axis, value in fixed.items():
        if axis not in table.axes:
            raise ParameterError(f"axis must be one of {', '.join(table.axes)}, got {axis!r}")
        mask &= table.columns[axis] == value
    return mask


def _log10_se(table: SweepTable, rows: np.ndarray) -> np.ndarray:
    """Standard error of log10 MC MSE by the delta method: SE / (MSE · ln 10), computed in log space."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log10_se = np.log10(table.columns["stderr"][rows])
        return np.power(10.0, log10_se - table.columns["log10_mc_mse"][rows]) / LOG10


ROUNDOFF_DEFAULT_D = ROUNDOFF_DEFAULT_M = 1024
"""d and m assumed for the round-off floor when the file has no such column (a larger floor: the conservative
side for drawing, never for a verdict)."""


def _roundoff_cells(table: SweepTable, rows: np.ndarray, col: str) -> np.ndarray:
    """Rows whose ``col`` (a log10 MSE) is at float64 round-off relative to K² (rfviz.verdicts.roundoff_floor with
    the row's d and m where the file has them): drawn as exact, never setting the colour scale."""
    cols = table.columns
    value_col = "mse" if col == "log10_mse" else "mc_mse"
    zero = cols[value_col][rows].astype(float) == 0.0 if value_col in cols else np.zeros(len(rows), bool)
    if "kernel_value" not in cols:
        return zero
    d = cols["d"][rows] if "d" in cols else np.full(len(rows), ROUNDOFF_DEFAULT_D)
    m = cols["m"][rows] if "m" in cols else np.full(len(rows), ROUNDOFF_DEFAULT_M)
    log10_floor = np.log10([roundoff_floor(int(a), int(b)) for a, b in zip(d, m, strict=True)])
    with np.errstate(divide="ignore", invalid="ignore"):
        log10_k2 = 2.0 * np.log10(np.abs(cols["kernel_value"][rows].astype(float)))
        rel = cols[col][rows].astype(float) - log10_k2
    return zero | (rel <= log10_floor)


def _check_axes(table: SweepTable, axes: Sequence[str], fixed: Mapping[str, Any]) -> None:
    if len(set(axes)) != len(axes):
        raise ParameterError(f"axes must be distinct, got {', '.join(axes)}")
    for axis in axes:
        if axis not in table.axes:
            raise ParameterError(f"axis must be one of {', '.join(table.axes)}, got {axis!r}")
    other = [a for a in table.axes if a not in axes and a not in fixed]
    if other:
        raise ParameterError(f"fix a value for every other axis: {', '.join(other)}")


def _warnings(table: SweepTable, rows: np.ndarray) -> list[str]:
    warn = table.columns.get("warning")
    return [UNRELIABLE if warn is None or not warn[r] else str(warn[r]) for r in rows]


def label(axis: str) -> str:
    """Display name of a grid axis (θ for theta)."""
    return "θ" if axis == "theta" else axis


def heatmap_figure(table: SweepTable, x: str, y: str, fixed: Mapping[str, Any], title: str = "") -> go.Figure:
    """log10 MSE over grid axes ``x`` × ``y`` (the other axes at ``fixed``): a Monte-Carlo panel, plus a
    closed-form panel where the file has one ([HRF] Lemma 1 family, per estimator); unreliable points ringed; cells
    at float64 round-off drawn as exact (they never stretch the colour scale)."""
    fixed = {k: v for k, v in fixed.items() if k not in (x, y)}
    _check_axes(table, (x, y), fixed)
    rows = np.flatnonzero(_mask(table, fixed))
    xs, ys = axis_values(table, x), axis_values(table, y)
    xi = {v: i for i, v in enumerate(xs)}
    yi = {v: i for i, v in enumerate(ys)}
    panels = {"Monte Carlo": "log10_mc_mse"}
    if "log10_mse" in table.columns and np.isfinite(table.columns["log10_mse"][rows]).any():
        panels["closed form"] = "log10_mse"
    zs = {}
    for panel, col in panels.items():
        z = np.full((len(ys), len(xs)), np.nan)
        exact = _roundoff_cells(table, rows, col)
        for r, at_roundoff in zip(rows, exact, strict=True):
            z[yi[table.columns[y][r]], xi[table.columns[x][r]]] = -np.inf if at_roundoff else table.columns[col][r]
        zs[panel] = z
    fig = heatmaps(np.array(xs, dtype=object), np.array(ys, dtype=object), zs, xlabel=label(x), ylabel=label(y),
                   zlabel="log10 MSE", title=title, theta_axis="x" if x == "theta" else "y" if y == "theta" else "",)
    bad = rows[~table.columns["reliable"][rows]]
    if len(bad):
        fig.add_trace(go.Scatter(x=table.columns[x][bad], y=table.columns[y][bad], mode="markers", name=UNRELIABLE,
                                 marker={"symbol": "circle-open", "size": 12, "line": {"width": 3},
                                         "color": UNRELIABLE_COLOR},
                                 hovertext=_warnings(table, bad)), row=1, col=1)
    fig.update_layout(showlegend=bool(len(bad)), legend={"orientation": "h", "y": -0.2})
    return fig


def slice_figure(table: SweepTable, x: str, fixed: Mapping[str, Any], series: str | None = None,
                 title: str = "") -> go.Figure:
    """log10 MSE along grid axis ``x`` (other axes at ``fixed``; one curve per value of ``series`` when given):
    Monte-Carlo points ±2 SE (delta method in log10), the closed form as a line, unreliable points hollow."""
    fixed = {k: v for k, v in fixed.items() if k not in (x, series)}
    _check_axes(table, (x,) if series is None else (x, series), fixed)
    mask = _mask(table, fixed)
    groups = [(None, mask)] if series is None else [(v, mask & (table.columns[series] == v))
                                                    for v in axis_values(table, series)]
    fig = go.Figure()
    unreliable_shown = False
    for i, (value, m) in enumerate(groups):
        rows = np.flatnonzero(m)
        if not len(rows):
            continue
        if table.columns[x].dtype != object:
            rows = rows[np.argsort(table.columns[x][rows], kind="stable")]
        name = "" if value is None else f"{label(series)} = {value:g}" if isinstance(value, float) else \
            f"{label(series)} = {value}"
        c = color(i)
        xs = table.columns[x][rows]
        if "log10_mse" in table.columns and np.isfinite(table.columns["log10_mse"][rows]).any():
            fig.add_trace(go.Scatter(x=xs, y=finite_or_none(table.columns["log10_mse"][rows]), mode="lines",
                                     name=f"closed form {name}".strip(), line={"color": c, "width": 2.5}))
        se = _log10_se(table, rows)
        ok = table.columns["reliable"][rows]
        for flag, trace_name, symbol in ((True, f"Monte Carlo ±2 SE {name}".strip(), "circle"),
                                         (False, UNRELIABLE, "circle-open")):
            sel = ok == flag
            if not sel.any():
                continue
            show = flag or not unreliable_shown
            unreliable_shown |= not flag
            fig.add_trace(go.Scatter(
                x=xs[sel], y=finite_or_none(table.columns["log10_mc_mse"][rows][sel]), mode="markers",
                name=trace_name, legendgroup=None if flag else UNRELIABLE, showlegend=show,
                marker={"color": c, "size": 9 if flag else 11, "symbol": symbol, "line": {"width": 2, "color": c}},
                error_y={"type": "data", "array": 2 * finite_or_none(se[sel]), "visible": True}))
    fig.update_xaxes(title_text=label(x), **(THETA_TICKS if x == "theta" else {}))
    fig.update_yaxes(title_text="log10 MSE")
    fig.update_layout(title=title, height=420, **layout())
    return fig


def rows_table(table: SweepTable, fixed: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """The rows at ``fixed`` (all rows when None): grid axes first, then mse, mc_mse, stderr, z, reliable, …"""
    mask = _mask(table, fixed or {})
    order = [*table.axes, *(c for c in ("mse", "mc_mse", "stderr", "z", "reliable", "warning", "trials",
                                        "kernel_value", "top_share") if c in table.columns)]
    return {c: table.columns[c][mask] for c in order}


COLUMN_NAMES = {
    "mse": "MSE (closed form)", "mc_mse": "MSE (Monte Carlo)", "stderr": "± SE (Monte Carlo)",
    "z": "z (MC vs closed form)", "reliable": "reliable", "warning": "warning", "trials": "trials",
    "kernel_value": "kernel K(x, y)", "top_share": "largest block's share of squared error",
}
"""Human headers of the rows table (the CSV keeps the file's own column names)."""
COLUMNS_NOTE = ("MSE (closed form): the estimator's exact MSE where it has one; MSE (Monte Carlo) ± SE: the sampled "
                "value and its standard error; z: their difference in SE; largest block's share (`top_share`): the "
                "fraction of all squared error carried by the single largest block of trials. A share far above "
                "1/blocks means one block dominates: a heavy tail, and the point is flagged unreliable.")
"""What the rows table's columns mean (shown under it on the Sweeps page)."""


def human_rows(rows: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``rows_table`` with human headers (``COLUMN_NAMES``; grid axes by ``label``)."""
    return {COLUMN_NAMES.get(k, label(k)): v for k, v in rows.items()}


def rows_csv(table: SweepTable, fixed: Mapping[str, Any] | None = None) -> str:
    """``rows_table`` as CSV text."""
    return columns_to_csv({k: np.asarray(v, dtype=object) for k, v in rows_table(table, fixed).items()})


def fixed_text(fixed: Mapping[str, Any]) -> str:
    """``  (a = 1, b = x)`` for a title ("" when nothing is fixed)."""
    if not fixed:
        return ""
    parts = [f"{label(k)} = {v:.4g}" if isinstance(v, float) and math.isfinite(v) else f"{label(k)} = {v}"
             for k, v in fixed.items()]
    return f"  ({', '.join(parts)})"
