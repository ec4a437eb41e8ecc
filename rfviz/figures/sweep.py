"""Figures of a sweep result file (``python -m rfviz sweep … --out FILE.csv|.parquet``): pure builders, no Streamlit.

A result file has one row per grid point: the grid values (one column per grid axis), then the columns of
``rfviz.sweep.tasks.point_row`` (``mc_mse``, ``stderr``, ``reliable``, closed-form ``mse``, …). ``read_results``
validates an uploaded or local file; ``heatmap_figure`` plots log10 MSE over two grid axes (the others fixed),
``slice_figure`` along one axis with ±2 SE bars and the closed form; unreliable (heavy-tailed) points, flagged by
``rfviz.diagnostics.assess_mse``, are drawn as hollow markers with their own legend entry.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..numerics import LOG10
from ..params import ParameterError
from .common import LAYOUT, THETA_TICKS, color, columns_to_csv, finite_or_none, heatmaps

OUTPUT_COLUMNS = ("point", "estimator", "kernel_value", "mse", "mc_mse", "stderr", "z", "log10_mse", "log10_mc_mse",
                  "mc_mean", "top_share", "reliable", "warning", "trials", "seed", "device", "backend", "seconds")
"""Columns a sweep writes besides its grid axes (``rfviz.sweep.tasks.point_row``)."""
REQUIRED_COLUMNS = ("mc_mse", "stderr", "reliable")
MAX_BYTES = 50 * 2**20
"""Largest result file read (an upload or a local file)."""
MAX_ROWS = 10**6
UNRELIABLE = "unreliable (heavy-tailed)"
UNRELIABLE_COLOR = "#ff00c8"
"""Ring colour of unreliable points on heatmaps (visible on every Viridis colour and in the legend)."""
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


@dataclass(frozen=True)
class SweepTable:
    """A validated sweep result: ``columns`` (name → 1-D array, all the same length) and its grid ``axes``."""

    columns: dict[str, np.ndarray]
    axes: tuple[str, ...]
    name: str = ""

    def __len__(self) -> int:
        return len(self.columns["mc_mse"])

    @property
    def estimator(self) -> str:
        est = self.columns.get("estimator")
        return str(est[0]) if est is not None and len(est) else ""


def _float_column(name: str, values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values))
    for i, v in enumerate(values):
        if v is None or (isinstance(v, str) and v.strip() in ("", "nan", "None", "null")):
            out[i] = np.nan
            continue
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise ParameterError(f"column {name} must hold numbers, row {i + 1} has {v!r}") from None
    return out


def _bool_column(name: str, values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=bool)
    for i, v in enumerate(values):
        text = str(v).strip().lower()
        if isinstance(v, bool | np.bool_):
            out[i] = bool(v)
        elif text in _TRUE:
            out[i] = True
        elif text in _FALSE:
            out[i] = False
        else:
            raise ParameterError(f"column {name} must hold true/false, row {i + 1} has {v!r}")
    return out


def _axis_column(values: Sequence[Any]) -> np.ndarray:
    """A grid axis: float64 when every value is a number, else its text (e.g. complex A = -0.2+0.05j)."""
    try:
        return np.array([float(v) for v in values])
    except (TypeError, ValueError):
        return np.array([str(v) for v in values], dtype=object)


def _raw_columns(data: bytes, kind: str) -> dict[str, list[Any]]:
    if kind == "parquet":
        try:
            import pyarrow.parquet as pq

            return pq.read_table(io.BytesIO(data)).to_pydict()
        except ImportError:
            raise ParameterError("file: reading Parquet needs pyarrow (pip install pyarrow)") from None
        except Exception as exc:  # pyarrow raises ArrowInvalid and friends on a corrupt file
            raise ParameterError(f"file is not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ParameterError("file is not UTF-8 text (a sweep CSV is)") from None
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise ParameterError("file is empty") from None
    except csv.Error as exc:
        raise ParameterError(f"file is not a readable CSV file ({exc})") from None
    header = [h.strip() for h in header]
    cols: dict[str, list[Any]] = {h: [] for h in header}
    try:
        for i, row in enumerate(reader):
            if not row:
                continue
            if len(row) != len(header):
                raise ParameterError(f"file: CSV row {i + 1} has {len(row)} fields, the header {len(header)}")
            for h, v in zip(header, row, strict=True):
                cols[h].append(v)
    except csv.Error as exc:
        raise ParameterError(f"file is not a readable CSV file ({exc})") from None
    return cols


def read_results(data: bytes, filename: str, max_bytes: int = MAX_BYTES) -> SweepTable:
    """Validate and read a sweep result file (``.csv`` or ``.parquet``) given as bytes.

    ParameterError naming what is wrong: suffix, size (at most ``max_bytes``), format, the missing required columns
    (``mc_mse``, ``stderr``, ``reliable``), no grid axis, no rows, or a non-numeric value in a numeric column.
    """
    kind = Path(filename).suffix.lower().lstrip(".")
    if kind not in ("csv", "parquet"):
        raise ParameterError(f"file must be a .csv or .parquet sweep result, got {filename!r}")
    if len(data) > max_bytes:
        raise ParameterError(f"file must be at most {max_bytes / 2**20:.0f} MiB, got {len(data) / 2**20:.1f} MiB")
    raw = _raw_columns(data, kind)
    missing = [c for c in REQUIRED_COLUMNS if c not in raw]
    if missing:
        raise ParameterError(f"file {filename!r} is not a sweep result: missing column(s) {', '.join(missing)} "
                             f"(expected the output of `python -m rfviz sweep`: grid axes, "
                             f"{', '.join(REQUIRED_COLUMNS)}, mse, …)")
    axes = tuple(c for c in raw if c not in OUTPUT_COLUMNS)
    if not axes:
        raise ParameterError(f"file {filename!r} has no grid-axis column (every column is a sweep output column)")
    n = len(raw["mc_mse"])
    if n == 0:
        raise ParameterError(f"file {filename!r} has no rows")
    if n > MAX_ROWS:
        raise ParameterError(f"file must have at most {MAX_ROWS} rows, got {n}")
    cols: dict[str, np.ndarray] = {}
    for name, values in raw.items():
        if name in axes:
            cols[name] = _axis_column(values)
        elif name == "reliable":
            cols[name] = _bool_column(name, values)
        elif name in ("estimator", "warning", "device", "backend"):
            cols[name] = np.array(["" if v is None else str(v) for v in values], dtype=object)
        else:
            cols[name] = _float_column(name, values)
    if "log10_mc_mse" not in cols:  # a hand-made file: derive it (log10 of a non-positive MSE is −inf → a gap)
        with np.errstate(divide="ignore", invalid="ignore"):
            cols["log10_mc_mse"] = np.log10(cols["mc_mse"])
    if "log10_mse" not in cols and "mse" in cols:
        with np.errstate(divide="ignore", invalid="ignore"):
            cols["log10_mse"] = np.log10(cols["mse"])
    return SweepTable(cols, axes, Path(filename).name)


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
    closed-form panel where the file has one ([HRF] Lemma 1 family, per estimator); unreliable points ringed."""
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
        for r in rows:
            z[yi[table.columns[y][r]], xi[table.columns[x][r]]] = table.columns[col][r]
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
    fig.update_layout(title=title, height=420, **LAYOUT)
    return fig


def rows_table(table: SweepTable, fixed: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """The rows at ``fixed`` (all rows when None): grid axes first, then mse, mc_mse, stderr, z, reliable, …"""
    mask = _mask(table, fixed or {})
    order = [*table.axes, *(c for c in ("mse", "mc_mse", "stderr", "z", "reliable", "warning", "trials",
                                        "kernel_value", "top_share") if c in table.columns)]
    return {c: table.columns[c][mask] for c in order}


def rows_csv(table: SweepTable, fixed: Mapping[str, Any] | None = None) -> str:
    """``rows_table`` as CSV text."""
    return columns_to_csv({k: np.asarray(v, dtype=object) for k, v in rows_table(table, fixed).items()})


def result_files(folder: str | Path) -> list[Path]:
    """The ``*.csv`` and ``*.parquet`` files directly in ``folder`` (sorted by name; none when it is missing)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in (".csv", ".parquet"))


def fixed_text(fixed: Mapping[str, Any]) -> str:
    """``  (a = 1, b = x)`` for a title ("" when nothing is fixed)."""
    if not fixed:
        return ""
    parts = [f"{label(k)} = {v:.4g}" if isinstance(v, float) and math.isfinite(v) else f"{label(k)} = {v}"
             for k, v in fixed.items()]
    return f"  ({', '.join(parts)})"
