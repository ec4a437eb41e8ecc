"""Shared building blocks of rfviz's plotly figures (pure functions, no Streamlit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .export import columns_to_csv

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f")
THETA_TICKS = {"tickvals": [0, np.pi / 4, np.pi / 2, 3 * np.pi / 4, np.pi],
               "ticktext": ["0", "π/4", "π/2", "3π/4", "π"]}
LAYOUT = {"template": "plotly_white", "margin": {"l": 60, "r": 20, "t": 60, "b": 50}, "font": {"size": 13}}

__all__ = ["LAYOUT", "PALETTE", "THETA_TICKS", "columns_to_csv", "finite_or_none", "heatmaps", "lines", "surfaces",
           "traces_csv"]


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def finite_or_none(a: np.ndarray) -> np.ndarray:
    """Replace ±inf by NaN (plotly draws NaN as a gap; inf breaks colour scales)."""
    a = np.asarray(a, dtype=float).copy()
    a[~np.isfinite(a)] = np.nan
    return a


def _clip_range(zs: Sequence[np.ndarray], floor_span: float | None = None) -> tuple[float, float] | None:
    """Common colour range over finite values; with ``floor_span`` the range is at most that many units deep."""
    vals = np.concatenate([np.ravel(z)[np.isfinite(np.ravel(z))] for z in zs]) if zs else np.array([])
    if vals.size == 0:
        return None
    lo, hi = float(np.min(vals)), float(np.max(vals))
    if floor_span is not None:
        lo = max(lo, hi - floor_span)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def heatmaps(x: np.ndarray, y: np.ndarray, zs: Mapping[str, np.ndarray], *, xlabel: str, ylabel: str, zlabel: str,
             title: str = "", theta_axis: str = "x", colorscale: str = "Viridis", diverging: bool = False,
             floor_span: float | None = 12.0, markers: Mapping[str, tuple[np.ndarray, np.ndarray, str]] | None = None,
             ) -> go.Figure:
    """One heatmap per entry of ``zs`` (z[i, j] at y[i], x[j]) side by side, sharing one colour scale.

    ``markers`` maps a panel name to (x, y, text) points drawn on top (e.g. Monte-Carlo disagreements).
    """
    names = list(zs)
    n = max(1, len(names))
    fig = make_subplots(rows=1, cols=n, subplot_titles=names, shared_yaxes=True, horizontal_spacing=0.04)
    arrays = [finite_or_none(zs[k]) for k in names]
    rng = _clip_range(arrays, None if diverging else floor_span)
    coloraxis: dict = {"colorscale": "RdBu_r" if diverging else colorscale, "colorbar": {"title": {"text": zlabel}}}
    if rng is not None:
        lo, hi = rng
        if diverging:
            a = max(abs(lo), abs(hi))
            lo, hi = -a, a
        coloraxis.update(cmin=lo, cmax=hi)
    for i, (name, z) in enumerate(zip(names, arrays, strict=True)):
        fig.add_trace(go.Heatmap(x=x, y=y, z=z, coloraxis="coloraxis", name=name,
                                 hovertemplate=f"{xlabel}=%{{x:.3g}}<br>{ylabel}=%{{y:.3g}}<br>{zlabel}=%{{z:.4g}}"
                                               "<extra>" + name + "</extra>"),
                      row=1, col=i + 1)
        if markers and name in markers:
            mx, my, text = markers[name]
            fig.add_trace(go.Scatter(x=mx, y=my, mode="markers", name=f"{name}: {text}", showlegend=False,
                                     marker={"symbol": "x-thin", "size": 11, "line": {"width": 2.5, "color": "red"}},
                                     hovertext=text), row=1, col=i + 1)
        fig.update_xaxes(title_text=xlabel, row=1, col=i + 1, **(THETA_TICKS if theta_axis == "x" else {}))
    fig.update_yaxes(title_text=ylabel, row=1, col=1, **(THETA_TICKS if theta_axis == "y" else {}))
    fig.update_layout(coloraxis=coloraxis, title=title, height=430, **LAYOUT)
    return fig


def surfaces(x: np.ndarray, y: np.ndarray, zs: Mapping[str, np.ndarray], *, xlabel: str, ylabel: str, zlabel: str,
             title: str = "", theta_axis: str = "x", floor_span: float | None = 12.0,
             points: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None = None) -> go.Figure:
    """3-D surfaces (one per entry, distinct colours, one scene); ``points`` adds (x, y, z, error) markers."""
    fig = go.Figure()
    arrays = {k: finite_or_none(v) for k, v in zs.items()}
    rng = _clip_range(list(arrays.values()), floor_span)
    for i, (name, z) in enumerate(arrays.items()):
        if rng is not None:
            z = np.where(z < rng[0], rng[0], z)
        c = color(i)
        fig.add_trace(go.Surface(x=x, y=y, z=z, name=name, showscale=False, opacity=0.85, showlegend=True,
                                 colorscale=[[0, c], [1, c]], surfacecolor=np.zeros_like(z) if z.size else z,
                                 hovertemplate=f"{xlabel}=%{{x:.3g}}<br>{ylabel}=%{{y:.3g}}<br>{zlabel}=%{{z:.4g}}"
                                               "<extra>" + name + "</extra>",
                                 lighting={"ambient": 0.7, "diffuse": 0.6}))
        if points and name in points:
            px, py, pz, pe = points[name]
            fig.add_trace(go.Scatter3d(x=px, y=py, z=pz, mode="markers", name=f"{name} (sampled)",
                                       marker={"size": 3, "color": c, "line": {"color": "black", "width": 1}},
                                       error_z={"type": "data", "array": 2 * np.asarray(pe), "visible": True}))
    scene: dict = {"xaxis": {"title": {"text": xlabel}}, "yaxis": {"title": {"text": ylabel}},
                   "zaxis": {"title": {"text": zlabel}}, "camera": {"eye": {"x": 1.6, "y": -1.6, "z": 0.9}}}
    if theta_axis == "x":
        scene["xaxis"].update(THETA_TICKS)
    fig.update_layout(scene=scene, title=title, height=560, legend={"x": 0, "y": 1}, **LAYOUT)
    return fig


def lines(x: np.ndarray, ys: Mapping[str, np.ndarray], *, xlabel: str, ylabel: str, title: str = "",
          theta_axis: bool = False, points: Mapping[str, tuple[np.ndarray, ...]] | None = None,
          dash: Mapping[str, str] | None = None, log_y: bool = False, height: int = 400) -> go.Figure:
    """Curves y(x), one per entry; ``points`` maps a name to sampled (x, y, standard error[, reliable]) drawn with
    ±2 SE bars: filled where reliable, hollow where the sampled MSE is heavy-tailed (MCResult.reliable False)."""
    fig = go.Figure()
    names = list(ys)
    for i, name in enumerate(names):
        fig.add_trace(go.Scatter(x=x, y=finite_or_none(ys[name]), mode="lines", name=name,
                                 line={"color": color(i), "width": 2.5, "dash": (dash or {}).get(name, "solid")}))
    for name, pt in (points or {}).items():
        i = names.index(name) if name in names else len(names)
        px, py, pe = (np.asarray(v) for v in pt[:3])
        ok = np.ones(px.shape, bool) if len(pt) < 4 or pt[3] is None else np.asarray(pt[3], bool).reshape(px.shape)
        for mask, symbol, label in ((ok, "circle", f"{name} (sampled ±2 SE)"),
                                    (~ok, "circle-open", f"{name} (sampled, heavy-tailed: unreliable)")):
            if mask.any():
                fig.add_trace(go.Scatter(x=px[mask], y=finite_or_none(py[mask]), mode="markers", name=label,
                                         marker={"color": color(i), "size": 7, "symbol": symbol, "line": {"width": 2}},
                                         error_y={"type": "data", "array": 2 * finite_or_none(pe[mask]),
                                                  "visible": True}))
    fig.update_xaxes(title_text=xlabel, **(THETA_TICKS if theta_axis else {}))
    fig.update_yaxes(title_text=ylabel, type="log" if log_y else "linear")
    fig.update_layout(title=title, height=height, hovermode="x unified", **LAYOUT)
    return fig


def traces_csv(fig: go.Figure) -> str:
    """Long-format CSV (trace, x, y[, z]) of every trace with data in a figure: the download of figures whose builder
    returns only the Figure."""
    cols: dict[str, list] = {"trace": [], "x": [], "y": []}
    has_z = any(getattr(t, "z", None) is not None for t in fig.data)
    if has_z:
        cols["z"] = []
    for t in fig.data:
        x = getattr(t, "x", None)
        y = getattr(t, "y", None)
        z = getattr(t, "z", None) if has_z else None
        if z is not None and np.ndim(z) == 2 and x is not None and y is not None:
            xx, yy = np.meshgrid(np.asarray(x, float), np.asarray(y, float))
            x, y, z = xx.ravel(), yy.ravel(), np.asarray(z, float).ravel()
        if x is None and y is None:
            continue
        n = len(x) if x is not None else len(y)
        if n == 0 or (x is not None and len(x) and x[0] is None):
            continue
        cols["trace"] += [t.name or t.type] * n
        cols["x"] += list(x) if x is not None else [None] * n
        cols["y"] += list(y) if y is not None else [None] * n
        if has_z:
            cols["z"] += list(np.ravel(z)) if z is not None else [None] * n
    return columns_to_csv({k: np.asarray(v, dtype=object) for k, v in cols.items()})


def bars(x: Sequence, series: Mapping[str, Sequence[float]], *, xlabel: str, ylabel: str, title: str = "",
         height: int = 360) -> go.Figure:
    """Grouped bar chart (e.g. the Maclaurin feature allocation per degree)."""
    fig = go.Figure()
    for i, (name, y) in enumerate(series.items()):
        fig.add_trace(go.Bar(x=list(x), y=list(y), name=name, marker={"color": color(i)}))
    fig.update_layout(title=title, xaxis_title=xlabel, yaxis_title=ylabel, height=height, barmode="group", **LAYOUT)
    return fig
