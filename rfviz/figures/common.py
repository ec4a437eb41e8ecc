"""Shared building blocks of rfviz's plotly figures (pure functions, no Streamlit).

Colour and z windows: ``robust_range`` takes percentiles of the finite values over all panels (shared, so panels
compare), or a user-set range; clipped ends are labelled ≤/≥ on the colour bar; exact cells (log MSE = −inf,
MSE = 0) are drawn in their own colour with a legend entry rather than hidden in a gap.
"""

from __future__ import annotations

import base64
import functools
import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from ..params import ParameterError
from .export import columns_to_csv

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f")
THETA_TICKS = {"tickvals": [0, np.pi / 4, np.pi / 2, 3 * np.pi / 4, np.pi],
               "ticktext": ["0", "π/4", "π/2", "3π/4", "π"]}

_AXIS_STYLE = {"automargin": True, "exponentformat": "power", "showexponent": "all"}
TEMPLATE = go.layout.Template(pio.templates["plotly_white"])
TEMPLATE.layout.xaxis.update(_AXIS_STYLE)
TEMPLATE.layout.yaxis.update(_AXIS_STYLE)
TEMPLATE.layout.colorway = PALETTE
"""plotly_white with powers of ten (no SI prefixes such as 10n, 1µ), automatic margins (no clipped axis titles) and
rfviz's palette."""

TEMPLATE_NAME = "rfviz"
pio.templates[TEMPLATE_NAME] = TEMPLATE  # registered by name only: plotly's default stays the caller's choice

MARGIN = {"l": 60, "r": 30, "t": 70, "b": 50, "autoexpand": True}
"""Every figure's margins (``layout(top=…)`` changes the top one)."""


def layout(top: int | None = None) -> dict[str, Any]:
    """The ``update_layout`` keywords every rfviz figure takes: rfviz's template, margins (top margin ``top``
    pixels, if given) and font.

    The template is left out where it already is plotly's default (``use_rfviz_template``, as the app does): the
    figure then got it when it was created, where plotly does not validate it again. Setting it validates its
    7 KB once more: 8 of the 14 ms the Hybrid page's figure took to build.

    Parameters
    ----------
    top : int, optional
        Top margin in pixels (default ``MARGIN["t"]``).

    Returns
    -------
    dict
        Keyword arguments for ``go.Figure.update_layout``.

    Examples
    --------
    >>> layout(top=90)["margin"]["t"]
    90
    """
    out: dict[str, Any] = {"margin": {**MARGIN, **({} if top is None else {"t": top})}, "font": {"size": 13}}
    if pio.templates.default != TEMPLATE_NAME:
        out["template"] = TEMPLATE
    return out


def copy_figure(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` (``go.Figure(fig)``) that does not validate rfviz's template again where it is plotly's
    default (``use_rfviz_template``): the copy gets it when made, as a new figure does (7 of the 8 ms a copy takes).

    Parameters
    ----------
    fig : go.Figure
        The figure to copy (left unchanged).

    Returns
    -------
    go.Figure
        An independent figure equal to ``fig``.

    Examples
    --------
    >>> f = lines(np.arange(3.0), {"a": np.ones(3)}, xlabel="x", ylabel="y")
    >>> copy_figure(f).to_plotly_json() == f.to_plotly_json() and copy_figure(f) is not f
    True
    """
    data = fig.to_dict()  # a FrozenFigure's dict is its cache: not modified below
    layout = dict(data.get("layout", {}))
    if pio.templates.default == TEMPLATE_NAME and layout.get("template") == _template_json():
        del layout["template"]
    return go.Figure({**data, "layout": layout})


@functools.cache
def _template_json() -> dict:
    return TEMPLATE.to_plotly_json()


def use_rfviz_template() -> None:
    """Make rfviz's template plotly's default in this process (the app does, once, at start): every figure built
    afterwards is drawn the same, and built faster (see ``layout``). A library import never does this: a user's
    own figures keep their default. Cheap once it is done (setting plotly's default validates the template: 5 ms,
    so it is set only when it is not yet rfviz's).

    Examples
    --------
    >>> import plotly.io as pio
    >>> before = pio.templates.default
    >>> use_rfviz_template()
    >>> pio.templates.default
    'rfviz'
    >>> pio.templates.default = before
    """
    if pio.templates.default != TEMPLATE_NAME:
        pio.templates.default = TEMPLATE_NAME

EXACT_COLOR = "#ff00ff"
"""Colour of exact cells (MSE = 0, log MSE = −inf): outside every colour scale rfviz uses."""

PERCENTILES = (1.0, 99.0)
"""Default colour window: these percentiles of the finite values over all panels."""

__all__ = ["EDGE_NOTE", "EXACT_COLOR", "MARGIN", "PALETTE", "PERCENTILES", "TEMPLATE", "THETA_TICKS", "ColourRange",
           "Window", "coinciding", "columns_to_csv", "compact_layout", "copy_figure", "curve_window",
           "figure_window", "finite_or_none", "heatmaps", "horizontal_line", "layout", "lines", "log_axes",
           "overlay_points", "robust_range", "surfaces", "traces_csv", "use_rfviz_template"]


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def finite_or_none(a: np.ndarray) -> np.ndarray:
    """Replace ±inf by NaN (plotly draws NaN as a gap; inf breaks colour scales)."""
    a = np.asarray(a, dtype=float).copy()
    a[~np.isfinite(a)] = np.nan
    return a


@dataclass(frozen=True)
class ColourRange:
    """A colour/z window [lo, hi]; ``clipped_lo``/``clipped_hi`` when some finite values lie beyond an end."""

    lo: float
    hi: float
    clipped_lo: bool = False
    clipped_hi: bool = False

    def ticks(self, n: int = 6) -> dict:
        """Colour-bar ticks at round values, the clipped ends labelled ≤ lo / ≥ hi."""
        span = self.hi - self.lo
        raw = span / max(n - 1, 1)
        mag = 10.0 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
        step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
        vals = [v for v in np.arange(math.ceil(self.lo / step) * step, self.hi + step * 1e-9, step)
                if v - self.lo > 0.3 * step and self.hi - v > 0.3 * step]
        vals = [self.lo, *vals, self.hi]
        text = [f"{v:.4g}" if abs(v) >= 1e-12 else "0" for v in vals]
        if self.clipped_lo:
            text[0] = f"≤ {self.lo:.3g}"
        if self.clipped_hi:
            text[-1] = f"≥ {self.hi:.3g}"
        return {"tickvals": vals, "ticktext": text}


def robust_range(zs: Sequence[np.ndarray], *, user: tuple[float, float] | None = None, diverging: bool = False,
                 percentiles: tuple[float, float] = PERCENTILES) -> ColourRange | None:
    """Shared colour window of ``zs``: ``user`` if given, else the ``percentiles`` of the finite values of all
    arrays together (symmetric about 0 when ``diverging``); None when no value is finite.

    The window is widened to the full data range when that costs little (≤ 25 % wider), so nothing is clipped
    without need."""
    vals = np.concatenate([np.ravel(z)[np.isfinite(np.ravel(z))] for z in zs]) if zs else np.array([])
    if user is not None:
        lo, hi = (float(v) for v in user)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ParameterError(f"colour range must be two finite numbers lo < hi, got {user!r}")
    elif vals.size == 0:
        return None
    else:
        vmin, vmax = float(vals.min()), float(vals.max())
        if diverging:
            a_full = max(abs(vmin), abs(vmax))
            a = float(np.percentile(np.abs(vals), percentiles[1]))
            a = a_full if a_full <= 1.25 * a or a == 0 else a
            lo, hi = -a, a
        else:
            lo, hi = (float(v) for v in np.percentile(vals, percentiles))
            if vmax - vmin <= 1.25 * (hi - lo):
                lo, hi = vmin, vmax
        if hi - lo < 1e-12 * max(1.0, abs(hi)):
            lo, hi = lo - 0.5, hi + 0.5
    clipped_lo = bool(vals.size and vals.min() < lo - 1e-12 * max(1.0, abs(lo)))
    clipped_hi = bool(vals.size and vals.max() > hi + 1e-12 * max(1.0, abs(hi)))
    return ColourRange(lo, hi, clipped_lo, clipped_hi)


def _exact_legend(fig: go.Figure, label: str) -> None:
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=label, showlegend=True,
                             marker={"symbol": "square", "size": 12, "color": EXACT_COLOR}))


def _wrapped(title: str, panels: int) -> str:
    """A panel title broken onto two lines (``<br>``) when ``panels`` side by side leave it too little width."""
    width = max(16, 100 // max(panels, 1))
    if len(title) <= width:
        return title
    head, sep, tail = title.partition(" (")  # "Name (detail)" breaks before its parenthesis
    if sep and len(head) <= width:
        return f"{head}<br>({tail}"
    return "<br>".join(textwrap.wrap(title, width))


@dataclass(frozen=True)
class HeatmapStyle:
    """How ``heatmaps`` colours its panels: the colour scale (``RdBu_r`` centred on 0 when ``diverging``), the colour
    window (``zrange``, else ``robust_range`` at ``percentiles``, limited to ``floor_span`` units below the top) and
    the legend label of exact (−inf) cells.

    Examples
    --------
    >>> HeatmapStyle(diverging=True).colorscale
    'Viridis'
    """

    colorscale: str = "Viridis"
    diverging: bool = False
    floor_span: float | None = None
    zrange: tuple[float, float] | None = None
    percentiles: tuple[float, float] = PERCENTILES
    exact_label: str = "exact (MSE = 0)"
    symlog: bool = False
    """Colours follow sign(z)·log₁₀(1 + |z|), so a panel of values near 0 stays readable beside one reaching ±30;
    colour-bar ticks and hover show z itself."""


def _symlog(z: np.ndarray) -> np.ndarray:
    return np.sign(z) * np.log10(1.0 + np.abs(z))


def _symlog_ticks(rng: ColourRange) -> dict:
    """Colour-bar ticks of a symlog window at z = 0, ±1, ±3, ±10, ±30, … (labelled with z)."""
    top = 10.0 ** max(abs(rng.lo), abs(rng.hi)) - 1.0
    mags = [1.0]
    while mags[-1] * 3 <= top * 1.01:
        mags.append(mags[-1] * (3.0 if len(mags) % 2 == 1 else 10.0 / 3.0))
    vals = sorted({0.0, *(s * v for v in mags for s in (-1.0, 1.0))})
    shown = [(float(_symlog(np.array(v))), v) for v in vals if rng.lo - 1e-9 <= _symlog(np.array(v)) <= rng.hi + 1e-9]
    return {"tickvals": [a for a, _ in shown], "ticktext": [f"{v:.2g}" for _, v in shown]}


def heatmaps(x: np.ndarray, y: np.ndarray, zs: Mapping[str, np.ndarray], *, xlabel: str, ylabel: str, zlabel: str,
             title: str = "", theta_axis: str = "x",
             markers: Mapping[str, tuple[np.ndarray, np.ndarray, str]] | None = None,
             style: HeatmapStyle = HeatmapStyle()) -> go.Figure:
    """One heatmap per entry of ``zs`` (z[i, j] at y[i], x[j]) side by side, sharing one colour scale.

    The colour window is ``robust_range`` of all panels (or ``style.zrange``; ``style.floor_span`` additionally
    limits it to that many units below the top). Cells at −inf are exact: drawn in ``EXACT_COLOR`` with the legend
    entry ``style.exact_label``. ``markers`` maps a panel name to (x, y, text) points drawn on top (e.g. Monte-Carlo
    disagreements).

    Examples
    --------
    >>> fig = heatmaps(np.arange(3.0), np.arange(2.0), {"a": np.zeros((2, 3))}, xlabel="x", ylabel="y", zlabel="z",
    ...                style=HeatmapStyle(diverging=True))
    >>> fig.data[0].type
    'heatmap'
    """
    diverging, zrange, floor_span, exact_label = style.diverging, style.zrange, style.floor_span, style.exact_label
    names = list(zs)
    n = max(1, len(names))
    titles = [_wrapped(k, n) for k in names]
    fig = make_subplots(rows=1, cols=n, subplot_titles=titles, shared_yaxes=True, horizontal_spacing=0.04)
    raw = [np.asarray(zs[k], dtype=float) for k in names]
    arrays = [finite_or_none(_symlog(z) if style.symlog else z) for z in raw]
    rng = robust_range(arrays, user=zrange, diverging=diverging, percentiles=style.percentiles)
    if rng is not None and floor_span is not None and zrange is None and rng.hi - rng.lo > floor_span:
        rng = ColourRange(rng.hi - floor_span, rng.hi, True, rng.clipped_hi)
    coloraxis: dict = {"colorscale": "RdBu_r" if diverging else style.colorscale,
                       "colorbar": {"title": {"text": zlabel, "side": "right"}}}
    if rng is not None:
        coloraxis.update(cmin=rng.lo, cmax=rng.hi)
        coloraxis["colorbar"].update(_symlog_ticks(rng) if style.symlog else rng.ticks())
    any_exact = False
    for i, (name, z, zr) in enumerate(zip(names, arrays, raw, strict=True)):
        value = "%{customdata:.4g}" if style.symlog else "%{z:.4g}"
        fig.add_trace(go.Heatmap(x=x, y=y, z=z, coloraxis="coloraxis", name=name,
                                 customdata=finite_or_none(zr) if style.symlog else None,
                                 hovertemplate=f"{xlabel}=%{{x:.3g}}<br>{ylabel}=%{{y:.3g}}<br>{zlabel}={value}"
                                               "<extra>" + name + "</extra>"),
                      row=1, col=i + 1)
        exact = np.isneginf(zr)
        if exact.any():
            any_exact = True
            fig.add_trace(go.Heatmap(x=x, y=y, z=np.where(exact, 1.0, np.nan), showscale=False, name=exact_label,
                                     colorscale=[[0, EXACT_COLOR], [1, EXACT_COLOR]], zmin=0, zmax=1, meta="exact",
                                     hovertemplate=f"{xlabel}=%{{x:.3g}}<br>{ylabel}=%{{y:.3g}}<br>{exact_label}"
                                                   "<extra>" + name + "</extra>"),
                          row=1, col=i + 1)
        if markers and name in markers:
            mx, my, text = markers[name]
            fig.add_trace(go.Scatter(x=mx, y=my, mode="markers", name=f"{name}: {text}", showlegend=False,
                                     marker={"symbol": "x-thin", "size": 11, "line": {"width": 2.5, "color": "red"}},
                                     hovertext=text), row=1, col=i + 1)
        fig.update_xaxes(title_text=xlabel, row=1, col=i + 1, **(THETA_TICKS if theta_axis == "x" else {}))
    if any_exact:
        _exact_legend(fig, exact_label)
    fig.update_yaxes(title_text=ylabel, row=1, col=1, **(THETA_TICKS if theta_axis == "y" else {}))
    fig.update_layout(coloraxis=coloraxis, title=title, height=450, **layout(),
                      legend={"orientation": "h", "x": 0, "y": -0.18, "yanchor": "top"})
    if any("<br>" in t for t in titles):  # room for two-line panel titles under the figure's title (at the top)
        fig.update_layout(margin={"t": MARGIN["t"] + 40},
                          title={"y": 1.0, "yref": "container", "yanchor": "top", "pad": {"t": 14}})
    return fig


PHONE_TITLE_CHARS = 38
"""Characters per line of a chart title in the compact (phone) layout."""


def _panels_in_a_row(fig: go.Figure) -> list[tuple[str, str]]:
    """(x-axis, y-axis) layout names of side-by-side 2-D panels (one row, two or more), left to right; else []."""
    pairs = []
    for name in fig.layout:
        if name.startswith("xaxis") and fig.layout[name].domain is not None:
            ax = fig.layout[name]
            anchor = ax.anchor or "y"
            pairs.append((name, "yaxis" + anchor[1:], tuple(ax.domain)))
    if len(pairs) < 2 or len({tuple(fig.layout[y].domain or (0, 1)) for _, y, _ in pairs}) != 1:
        return []
    return [(x, y) for x, y, _ in sorted(pairs, key=lambda p: p[2][0])]


def _stack_scenes(fig: go.Figure, panel_height: int) -> int:
    """Stack side-by-side 3-D scenes (two or more in one row) one per row, each subplot title moved above its scene
    (side by side on a phone the titles ran into one line); return the height they take (0 if none)."""
    scenes = sorted((name for name in fig.layout if name.startswith("scene") and fig.layout[name].domain.x),
                    key=lambda name: fig.layout[name].domain.x[0])
    if len(scenes) < 2:
        return 0
    gap = 40  # the next scene's title
    total = panel_height * len(scenes) + gap * (len(scenes) - 1)
    titles = [(a, a.x) for a in fig.layout.annotations if a.yref == "paper" and a.xref == "paper" and a.x is not None]
    for i, name in enumerate(scenes):
        old = tuple(fig.layout[name].domain.x)
        y1 = 1.0 - i * (panel_height + gap) / total
        for a, x0 in titles:  # matched by where the title was, not where an earlier scene's move put it
            if old[0] - 1e-6 <= x0 <= old[1] + 1e-6:
                a.update(x=0.5, y=y1, xanchor="center", yanchor="bottom")
        fig.layout[name].domain.update(x=[0.0, 1.0], y=[max(0.0, y1 - panel_height / total), y1])
    return total


PHONE_LEGEND_GAP_PX = 92
"""On a phone, the legend's top this far under the plot area: below the tick labels and the x-axis title (at 62 px
the title ran into the legend's first entry)."""
PHONE_MODEBAR_PX = 34
"""Height of the row kept free for Plotly's toolbar (the modebar, top right) above a phone chart's title: on a
narrow screen the wrapped title spans the width and the toolbar covered its end."""


def compact_layout(fig: go.Figure, panel_height: int = 260) -> go.Figure:
    """A copy of ``fig`` laid out for a phone (about 390 px wide): side-by-side panels stacked one per row with their
    titles above them, the chart title wrapped, the legend under the plot instead of beside it, slim margins.

    Parameters
    ----------
    fig : plotly Figure
        Any rfviz figure (2-D panels or 3-D scenes side by side in one row are stacked, one per row).
    panel_height : int
        Height in pixels of each stacked panel.

    Returns
    -------
    plotly Figure
        The re-laid-out copy; the data are unchanged.

    Examples
    --------
    >>> f = heatmaps(np.arange(3.0), np.arange(2.0), {"a": np.zeros((2, 3)), "b": np.ones((2, 3))}, xlabel="x",
    ...              ylabel="y", zlabel="z")
    >>> compact_layout(f).layout.yaxis2.domain[1] < compact_layout(f).layout.yaxis.domain[0]
    True
    """
    out = copy_figure(fig)
    title = out.layout.title.text or ""
    lines_ = textwrap.wrap(title.replace("<br>", " "), PHONE_TITLE_CHARS) if title else []
    panels = _panels_in_a_row(out)
    n = len(panels)
    top = PHONE_MODEBAR_PX + 30 + 18 * len(lines_)  # Plotly's toolbar row, then the wrapped chart title
    shown = [t for t in out.data if t.showlegend is not False]  # plotly's default: a legend from two traces on
    legend = out.layout.showlegend or (out.layout.showlegend is None and (len(shown) >= 2 or any(
        t.showlegend for t in shown)))
    bottom = 130 if legend else 60
    if n:
        gap_px = 95  # under a panel: its tick labels and x-axis title, then the next panel's title
        plot_px = panel_height * n + gap_px * (n - 1)
        titles = [(a, a.x) for a in out.layout.annotations
                  if a.yref == "paper" and a.xref == "paper" and a.yanchor == "bottom"]
        y_title = fig.layout[panels[0][1]].title.text
        for i, (xa, ya) in enumerate(panels):
            old = tuple(fig.layout[xa].domain)
            y1 = 1.0 - i * (panel_height + gap_px) / plot_px
            y0 = y1 - panel_height / plot_px
            for a, x0 in titles:  # the subplot title, on one line, centred over this panel's old column
                if old[0] - 1e-6 <= x0 <= old[1] + 1e-6:
                    text = a.text.replace("<br>", " ")
                    a.update(x=0.5, y=y1, xanchor="center", yshift=4,
                             text=text if len(text) <= 2 * PHONE_TITLE_CHARS else a.text)
            out.layout[xa].update(domain=[0.0, 1.0])
            out.layout[ya].update(domain=[max(0.0, y0), y1], showticklabels=True, title_text=y_title)
        top += 28  # the first panel's title
        out.update_layout(height=plot_px + top + bottom)
    elif (stacked := _stack_scenes(out, panel_height + 60)) > 0:
        plot_px = stacked
        top += 28  # the first scene's title
        out.update_layout(height=plot_px + top + bottom)
    else:
        plot_px = max(150, (out.layout.height or 450) - top - bottom)
        out.update_layout(height=plot_px + top + bottom)
    out.update_layout(title={"text": "<br>".join(lines_), "font": {"size": 14}, "y": 1.0, "yanchor": "top",
                             "pad": {"t": 14 + PHONE_MODEBAR_PX}},  # below the toolbar, not under it
                      margin={"l": 45, "r": 10, "t": top, "b": bottom, "autoexpand": True},
                      legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -PHONE_LEGEND_GAP_PX / plot_px,
                              "yanchor": "top"})
    if out.layout.coloraxis.colorbar is not None:
        out.layout.coloraxis.colorbar.update(thickness=12)
    return out


def surfaces(x: np.ndarray, y: np.ndarray, zs: Mapping[str, np.ndarray], *, xlabel: str, ylabel: str, zlabel: str,
             title: str = "", theta_axis: str = "x", floor_span: float | None = None,
             points: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None = None,
             zrange: tuple[float, float] | None = None, opacity: float | None = None) -> go.Figure:
    """3-D surfaces (one per entry, one colour per entry, semi-transparent when several share the scene; a click on a
    legend entry hides it, a double click shows it alone); ``points`` adds (x, y, z, error) markers.

    The z window is ``robust_range`` of all surfaces (or ``zrange``); values beyond it are pinned to its ends (the
    axis title says so); exact points (−inf) are drawn as ``EXACT_COLOR`` markers on its floor."""
    fig = go.Figure()
    arrays = {k: finite_or_none(v) for k, v in zs.items()}
    raw = {k: np.asarray(v, dtype=float) for k, v in zs.items()}
    rng = robust_range(list(arrays.values()), user=zrange)
    if rng is not None and floor_span is not None and zrange is None and rng.hi - rng.lo > floor_span:
        rng = ColourRange(rng.hi - floor_span, rng.hi, True, rng.clipped_hi)
    alpha = opacity if opacity is not None else (0.9 if len(arrays) <= 1 else 0.65)
    exact_pts: list[np.ndarray] = []
    for i, (name, z) in enumerate(arrays.items()):
        if rng is not None:
            z = np.clip(z, rng.lo, rng.hi)
            exact = np.isneginf(raw[name])
            if exact.any():
                yy, xx = np.nonzero(exact)
                exact_pts.append(np.stack([np.asarray(x, float)[xx], np.asarray(y, float)[yy]]))
        c = color(i)
        fig.add_trace(go.Surface(x=x, y=y, z=z, name=name, showscale=False, opacity=alpha, showlegend=True,
                                 colorscale=[[0, c], [1, c]], surfacecolor=np.zeros_like(z) if z.size else z,
                                 hovertemplate=f"{xlabel}=%{{x:.3g}}<br>{ylabel}=%{{y:.3g}}<br>{zlabel}=%{{z:.4g}}"
                                               "<extra>" + name + "</extra>",
                                 lighting={"ambient": 0.7, "diffuse": 0.6}))
        if points and name in points:
            px, py, pz, pe = points[name]
            fig.add_trace(go.Scatter3d(x=px, y=py, z=pz, mode="markers", name=f"{name} (sampled ±2 SE)",
                                       marker={"size": 3, "color": c, "line": {"color": "black", "width": 1}},
                                       error_z={"type": "data", "array": 2 * np.asarray(pe), "visible": True,
                                                "color": c}))
    if exact_pts and rng is not None:
        ex_xy = np.concatenate(exact_pts, axis=1)
        fig.add_trace(go.Scatter3d(x=ex_xy[0], y=ex_xy[1], z=np.full(ex_xy.shape[1], rng.lo), mode="markers",
                                   name="exact (MSE = 0), on the floor", meta="exact",
                                   marker={"size": 2.5, "color": EXACT_COLOR}))
    ztitle = zlabel
    if rng is not None and (rng.clipped_lo or rng.clipped_hi):
        ztitle += " (pinned to the window)"
    scene: dict = {"xaxis": {"title": {"text": xlabel}}, "yaxis": {"title": {"text": ylabel}},
                   "zaxis": {"title": {"text": ztitle}, "exponentformat": "power"},
                   "camera": {"eye": {"x": 1.55, "y": -1.55, "z": 0.85}},
                   # a box wider than tall, filling the figure's width (the default cube at this height took the
                   # middle third of a wide chart)
                   "aspectmode": "manual", "aspectratio": {"x": 1.35, "y": 1.35, "z": 0.75},
                   "domain": {"x": [0.0, 1.0], "y": [0.0, 1.0]}}
    if rng is not None:
        scene["zaxis"].update(range=[rng.lo, rng.hi], **rng.ticks())
    if theta_axis == "x":
        scene["xaxis"].update(THETA_TICKS)
    fig.update_layout(scene=scene, title=title, height=580, legend={"x": 0, "y": 1}, **layout())
    return fig


def lines(x: np.ndarray, ys: Mapping[str, np.ndarray], *, xlabel: str, ylabel: str, title: str = "",
          theta_axis: bool = False, points: Mapping[str, tuple[np.ndarray, ...]] | None = None,
          dash: Mapping[str, str] | None = None, log_y: bool = False, height: int = 400) -> go.Figure:
    """Curves y(x), one per entry; ``points`` maps a name to sampled (x, y, standard error[, reliable]) drawn with
    ±2 SE bars: filled where reliable, hollow where the sampled MSE is heavy-tailed (MCResult.reliable False)."""
    names = list(ys)
    curves = [{"type": "scatter", "x": x, "y": finite_or_none(ys[name]), "mode": "lines", "name": name,
               "legendgroup": name, "line": {"color": color(i), "width": 2.5, "dash": (dash or {}).get(name, "solid")}}
              for i, name in enumerate(names)]
    # one constructor call: plotly validates the whole figure once (a third of the time of adding the curves and
    # updating axes and layout one call at a time, which a classroom's every rerun pays)
    fig = go.Figure(data=curves, layout={
        "xaxis": {"title": {"text": xlabel}, **(THETA_TICKS if theta_axis else {})},
        "yaxis": {"title": {"text": ylabel}, "type": "log" if log_y else "linear"},
        "title": {"text": title}, "height": height, "hovermode": "x unified", **layout()})
    window = curve_window(x, ys.values(), log_y=log_y) if points else None
    for k, (name, pt) in enumerate((points or {}).items()):
        i = names.index(name) if name in names else len(names) + k
        overlay_points(fig, name, pt, color(i), window)
    return log_axes(fig)


EDGE_NOTE = "outside the axes: drawn at the edge"
"""Legend text of sampled points that lie outside the closed forms' axes (their true value is on hover)."""


@dataclass(frozen=True)
class Window:
    """The axes' window set by the closed-form curves: x and y ranges in axis units (log10 for a log y-axis)."""

    x: tuple[float, float]
    y: tuple[float, float]
    log_y: bool = False


def curve_window(x: np.ndarray, ys: Iterable[np.ndarray], *, log_y: bool = False, pad: float = 0.06) -> Window:
    """The window the closed-form curves ``ys`` against ``x`` set: their finite span plus ``pad`` of it each side.

    Parameters
    ----------
    x : array
        The curves' abscissae.
    ys : iterable of arrays
        The curves' ordinates (non-finite values ignored).
    log_y : bool
        The y-axis is logarithmic (the window is then in log10 units, as plotly's ``range``).
    pad : float
        Margin, as a fraction of the span, added above and below.

    Returns
    -------
    Window

    Examples
    --------
    >>> curve_window(np.array([0.0, 1.0]), [np.array([1.0, 2.0])], pad=0.0).y
    (1.0, 2.0)
    """
    vals = [np.asarray(y, float).ravel() for y in ys]
    v = np.concatenate(vals) if vals else np.array([])
    v = v[np.isfinite(v) & ((v > 0) if log_y else True)]
    v = np.log10(v) if log_y else v
    lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 1.0)
    margin = pad * (hi - lo) if hi > lo else max(abs(hi) * 0.1, 0.5)
    xs = np.asarray(x, float)
    xs = xs[np.isfinite(xs)]
    return Window((float(xs.min()), float(xs.max())) if xs.size else (0.0, 1.0), (lo - margin, hi + margin), log_y)


def _numbers(v: Any) -> np.ndarray:
    """A trace's x or y as floats: a sequence, or plotly's typed-array form ``{"dtype", "bdata"}`` (figures that went
    through JSON, e.g. a cache); None entries become NaN."""
    if isinstance(v, Mapping) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).astype(float)
    return np.array([np.nan if e is None else e for e in v], dtype=float)


def figure_window(fig: go.Figure, *, log_y: bool = False) -> Window:
    """``curve_window`` of the line traces (closed-form curves) already in ``fig``."""
    curves = [t for t in fig.data if t.type == "scatter" and (t.mode is None or "lines" in t.mode)
              and t.x is not None and t.y is not None]
    x = np.concatenate([_numbers(t.x) for t in curves]) if curves else np.array([])
    return curve_window(x, [_numbers(t.y) for t in curves], log_y=log_y)


def overlay_points(fig: go.Figure, name: str, pt: tuple[np.ndarray, ...], colour: str, window: Window | None,
                   symbol: str = "circle", bars: tuple[np.ndarray, np.ndarray] | None = None,
                   **where: Any) -> go.Figure:
    """Draw sampled (x, y, standard error[, reliable]) points over closed-form curves without rescaling their axes.

    Points inside ``window`` get ±2 SE bars, filled where reliable and hollow where heavy-tailed (MCResult.reliable
    False). Points outside are drawn ON the window's edge as triangles pointing outwards, their true value on hover
    (and in ``traces_csv``); the y-axis range is fixed to the window. Every Monte-Carlo overlay of a 2-D chart goes
    through this function.

    Parameters
    ----------
    fig : plotly Figure
        The figure holding the curves.
    name : str
        The curve's name (legend group).
    pt : tuple
        ``(x, y, se)`` or ``(x, y, se, reliable)``; ``reliable`` may be None (all reliable).
    colour : str
        The curve's colour.
    window : Window or None
        ``curve_window`` (or ``figure_window``) of the curves; None draws every point and lets plotly scale.
    symbol : str
        Marker of reliable points (``symbol-open`` for heavy-tailed ones).
    bars : (lower, upper) arrays, optional
        Asymmetric error-bar ends (e.g. ±2 SE of a variance mapped through a log), instead of ±2 ``se``.
    **where
        ``row``/``col`` of a subplot, passed to ``add_trace``.

    Returns
    -------
    plotly Figure
        ``fig``, for chaining.
    """
    px, py, pe = (np.asarray(v, float).ravel() for v in pt[:3])
    ok = np.ones(px.shape, bool) if len(pt) < 4 or pt[3] is None else np.asarray(pt[3], bool).reshape(px.shape)
    inside = np.ones(px.shape, bool)
    ay = py
    if window is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            ay = np.log10(py) if window.log_y else py
        (x0, x1), (y0, y1) = window.x, window.y
        tol = 1e-9 * max(abs(x0), abs(x1), 1.0)
        inside = np.isfinite(ay) & (ay >= y0) & (ay <= y1) & (px >= x0 - tol) & (px <= x1 + tol)
    for mask, sym, label in ((ok & inside, symbol, f"{name} (sampled ±2 SE)"),
                             (~ok & inside, f"{symbol}-open", f"{name} (sampled, heavy-tailed: unreliable)")):
        if mask.any():
            err = {"type": "data", "array": 2 * finite_or_none(pe[mask]), "visible": True, "color": colour}
            if bars is not None:
                lo, hi = (np.asarray(b, float).ravel()[mask] for b in bars)
                err.update(symmetric=False, array=np.nan_to_num(hi - py[mask]),
                           arrayminus=np.nan_to_num(py[mask] - lo, nan=0.0))
            fig.add_trace(go.Scatter(x=px[mask], y=finite_or_none(py[mask]), mode="markers", name=label,
                                     legendgroup=name,
                                     marker={"color": colour, "size": 7, "symbol": sym, "line": {"width": 2}},
                                     error_y=err), **where)
    if window is None:
        return fig
    out = ~inside & (np.isfinite(ay) | np.isneginf(ay))
    if out.any():
        (x0, x1), (y0, y1) = window.x, window.y
        ey = np.clip(np.where(np.isneginf(ay[out]), y0, ay[out]), y0, y1)
        ex = np.clip(px[out], x0, x1)
        symbols = np.where(ay[out] > y1, "triangle-up", np.where(ay[out] < y0, "triangle-down",
                           np.where(px[out] > x1, "triangle-right", "triangle-left")))
        fig.add_trace(go.Scatter(x=ex, y=10 ** ey if window.log_y else ey, mode="markers", legendgroup=name,
                                 name=f"{name} (sampled, {EDGE_NOTE})", meta="edge", cliponaxis=False,
                                 customdata=np.column_stack([px[out], py[out], pe[out]]),
                                 hovertemplate="sampled at x = %{customdata[0]:.4g}: %{customdata[1]:.4g} "
                                               f"± %{{customdata[2]:.2g}} (SE), {EDGE_NOTE}<extra>{name}</extra>",
                                 marker={"color": colour, "size": 11, "symbol": list(symbols),
                                         "line": {"width": 1.5, "color": "black"}}), **where)
    fig.update_yaxes(range=list(window.y), autorange=False, **{k: v for k, v in where.items() if k in ("row", "col")})
    return fig


def _axis_values(fig: go.Figure, axis: str) -> np.ndarray:
    """Positive finite values plotted against the layout axis ``axis`` ('xaxis', 'yaxis2', ...)."""
    letter, suffix = axis[0], axis[5:]
    ref = letter + suffix
    out = []
    for t in fig.data:
        if (getattr(t, f"{letter}axis", None) or letter) != ref:
            continue
        v = getattr(t, letter, None)
        if v is None:
            continue
        try:
            a = np.asarray(v, dtype=float).ravel()
        except (TypeError, ValueError):
            continue
        out.append(a[np.isfinite(a) & (a > 0)])
    return np.concatenate(out) if out else np.array([])


def horizontal_line(fig: go.Figure, y: float, line: dict[str, Any], text: str | None = None) -> go.Figure:
    """``fig.add_hline(y, line=line, annotation_text=text, annotation_position="bottom right")`` on a figure of one
    panel: the same shape and label, added as plain layout objects (plotly's add_hline looks for every axis pair the
    line could span first: it took longer than building the rest of a lines() figure).

    Parameters
    ----------
    fig : go.Figure
        A figure of one panel (modified and returned).
    y : float
        Where the line is, in y-axis units.
    line : dict
        The line's style, e.g. ``{"color": "gray", "dash": "dot"}``.
    text : str, optional
        A label under the line's right end.

    Returns
    -------
    go.Figure
        ``fig``.

    Examples
    --------
    >>> f = horizontal_line(go.Figure(go.Scatter(x=[0, 1], y=[0, 2])), 1.0, {"dash": "dot"}, "one")
    >>> f.to_plotly_json()["layout"]["shapes"] == go.Figure(go.Scatter(x=[0, 1], y=[0, 2])).add_hline(
    ...     y=1.0, line={"dash": "dot"}, annotation_text="one",
    ...     annotation_position="bottom right").to_plotly_json()["layout"]["shapes"]
    True
    """
    fig.add_shape(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=y, y1=y, line=line)
    if text is not None:
        fig.add_annotation(text=text, showarrow=False, xref="x domain", x=1, xanchor="right", yref="y", y=y,
                           yanchor="top")
    return fig


def log_axes(fig: go.Figure) -> go.Figure:
    """Readable log axes: labels at decades only (powers of ten) when the data span two decades or more, unlabeled
    minor ticks between them."""
    for name in list(fig.layout):
        if not (name.startswith("xaxis") or name.startswith("yaxis")):
            continue
        ax = fig.layout[name]
        if ax.type != "log":
            continue
        vals = _axis_values(fig, name)
        ax.update(exponentformat="power", showexponent="all", minor={"ticks": "outside", "ticklen": 3,
                                                                     "showgrid": False})
        if vals.size and np.log10(vals.max() / vals.min()) >= 2:
            ax.update(dtick=1)
        else:  # under two decades plotly labels every minor step (0.1, 0.15, 0.2, …): few enough not to overlap
            ax.update(nticks=5)
    return fig


def traces_csv(fig: go.Figure) -> str:
    """Long-format CSV (trace, x, y[, z]) of every trace with data in a figure: the download of figures whose builder
    returns only the Figure."""
    cols: dict[str, list] = {"trace": [], "x": [], "y": []}
    has_z = any(getattr(t, "z", None) is not None for t in fig.data)
    if has_z:
        cols["z"] = []
    for t in fig.data:
        if t.meta == "exact":  # the exact-cell overlay repeats its panel's cells
            continue
        x = getattr(t, "x", None)
        y = getattr(t, "y", None)
        if t.meta == "edge":  # sampled points drawn at the axes' edge: their true values
            x, y = (list(np.asarray(t.customdata, float)[:, j]) for j in (0, 1))
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
    fig.update_layout(title=title, xaxis_title=xlabel, yaxis_title=ylabel, height=height, barmode="group", **layout())
    return log_axes(fig)


def coinciding(fig: go.Figure) -> list[tuple[str, str]]:
    """Pairs of named line traces of ``fig`` drawn exactly on top of each other (same x and y), so the page can
    say so instead of letting one curve hide the other.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        Any figure; traces without a name, x or y (or with non-numeric x/y) are ignored.

    Returns
    -------
    list of (str, str)
        The names of each coinciding pair, in trace order.

    Examples
    --------
    >>> fig = go.Figure([go.Scatter(x=[0, 1], y=[1, 2], name="a"), go.Scatter(x=[0, 1], y=[1, 2], name="b")])
    >>> coinciding(fig)
    [('a', 'b')]
    """
    lines = []
    for t in fig.data:
        if getattr(t, "name", None) and getattr(t, "y", None) is not None and getattr(t, "x", None) is not None:
            try:
                lines.append((t.name, np.asarray(t.x, dtype=float), np.asarray(t.y, dtype=float)))
            except (TypeError, ValueError):
                continue
    out = []
    for i, (na, xa, ya) in enumerate(lines):
        for nb, xb, yb in lines[i + 1:]:
            if (na != nb and xa.shape == xb.shape and ya.shape == yb.shape and ya.size > 1
                    and np.allclose(xa, xb, equal_nan=True) and np.allclose(ya, yb, rtol=1e-9, equal_nan=True)):
                out.append((na, nb))
    return out
