"""MSE explorer, the drawing half: heatmaps, 3-D surfaces and slices of the surfaces computed by
rfviz.compute.explorer (arrays in, plotly figures out). Panels are keyed by estimator name and shown by the
``titles`` the caller passes (rfviz.compute.catalog.titles).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..verdicts import FWER_LEVEL, trials_needed_text
from .common import HeatmapStyle, columns_to_csv, heatmaps, lines, surfaces

QUANTITIES: dict[str, str] = {
    "log10_mse": "log₁₀ MSE",
    "rel_error": "log₁₀ relative error √MSE/|K|",
    "ratio": "log₁₀ MSE ratio A/B",
}
"""What the surface shows (key → human label with units); all in log₁₀ because MSEs span hundreds of orders of
magnitude."""


# ----------------------------------------------------------------------------------- figures
def _labels(which: str) -> str:
    return QUANTITIES[which]


def _titled(values: Mapping[str, Any] | None, titles: Mapping[str, str] | None) -> dict[str, Any]:
    """The panels keyed by their titles (a name without a title is shown as itself)."""
    return {(titles or {}).get(k, k): v for k, v in (values or {}).items()}


def heatmap_figure(r: np.ndarray, theta: np.ndarray, values: Mapping[str, np.ndarray], which: str,
                   disagree: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None, title: str = "",
                   zrange: tuple[float, float] | None = None,
                   heavy: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
                   titles: Mapping[str, str] | None = None,
                   sampled: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None) -> go.Figure:
    """Heatmaps over θ (x-axis) × r (y-axis), panels titled by estimator title, one shared robust colour window (or
    ``zrange``), exact cells marked; red crosses where sampled and analytic disagree (Holm over the reliable
    points, 1 % family-wise), hollow circles at heavy-tailed points (``heavy``: the sampled MSE is unreliable there,
    MCResult.reliable), small dots at every sampled point (``sampled``), so a panel whose points all agree still shows
    where it was sampled."""
    label = f"disagrees (Holm, {FWER_LEVEL:.0%} family-wise)"
    markers = {k: (th, rr, label) for k, (rr, th) in _titled(disagree, titles).items()}
    exact = "A or B exact (MSE = 0)" if which == "ratio" else "exact (MSE = 0)"
    fig = heatmaps(theta, r, _titled(values, titles), xlabel="θ", ylabel="r", zlabel=_labels(which), title=title,
                   markers=markers, style=HeatmapStyle(diverging=which == "ratio", zrange=zrange, exact_label=exact))
    for i, name in enumerate(values):
        if sampled and name in sampled and np.size(sampled[name][0]):
            rr, th = sampled[name]
            fig.add_trace(go.Scatter(x=th, y=rr, mode="markers", name=SAMPLED_LABEL, showlegend=False,
                                     hovertext=SAMPLED_LABEL, marker={"symbol": "circle", "size": 4, "color": "black"}),
                          row=1, col=i + 1)
        if heavy and name in heavy and np.size(heavy[name][0]):
            rr, th = heavy[name]
            fig.add_trace(go.Scatter(x=th, y=rr, mode="markers", name=HEAVY_LABEL, showlegend=False,
                                     hovertext=HEAVY_LABEL,
                                     marker={"symbol": "circle-open", "size": 12, "line": {"width": 2},
                                             "color": "black"}), row=1, col=i + 1)
    return fig


SAMPLED_LABEL = "sampled (Monte Carlo): see the line above the figure for the outcome"
"""Hover text of the small dots drawn at every sampled point."""
HEAVY_LABEL = "heavy-tailed: the sampled MSE is unreliable here"
"""Hover text of the hollow markers drawn at unreliable Monte-Carlo points."""


def trials_guidance(trials_needed: float, trials: int) -> str:
    """One line for the app: how many trials give ±10 % (one standard error) on the sampled MSE, in words where no
    practical count does (rfviz.verdicts.trials_needed_text)."""
    text = trials_needed_text(trials_needed, trials)
    return f"on every sampled point: {text}" if text else ""


def surface_figure(r: np.ndarray, theta: np.ndarray, values: Mapping[str, np.ndarray], which: str,
                   sampled_points: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None = None,
                   title: str = "", zrange: tuple[float, float] | None = None,
                   titles: Mapping[str, str] | None = None) -> go.Figure:
    """3-D surfaces over θ × r (semi-transparent, same robust window as the heatmaps, or ``zrange``); sampled points
    with ±2 SE bars in their surface's colour."""
    return surfaces(theta, r, _titled(values, titles), xlabel="θ", ylabel="r", zlabel=_labels(which), title=title,
                    points=_titled(sampled_points, titles), zrange=zrange)


def slice_figure(axis: str, coord: np.ndarray, values: Mapping[str, np.ndarray], which: str, at: float,
                 sampled: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
                 titles: Mapping[str, str] | None = None) -> go.Figure:
    """The quantity along r (θ fixed) or along θ (r fixed), with sampled points ± 2 SE."""
    if axis == "theta":
        title = f"slice at θ = {at:.3g} rad (gaps: exact, MSE = 0)"
        return lines(coord, _titled(values, titles), xlabel="r", ylabel=_labels(which), title=title,
                     points=_titled(sampled, titles))
    title = f"slice at r = {at:.3g} (gaps: exact, MSE = 0)"
    return lines(coord, _titled(values, titles), xlabel="θ", ylabel=_labels(which), title=title, theta_axis=True,
                 points=_titled(sampled, titles))


def grid_csv(r: np.ndarray, theta: np.ndarray, values: Mapping[str, np.ndarray], which: str,
             sampled: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None = None,
             ) -> str:
    """Long-format CSV of the plotted surfaces: (panel, r, theta, value) rows of the closed form; with ``sampled``
    (panel → r axis, θ axis, sampled value, its standard error, reliable mask, on the Monte-Carlo grid) a
    ``source`` column (closed form / monte carlo) and the sampled rows with ``stderr`` and ``reliable`` follow.

    Examples
    --------
    >>> print(grid_csv(np.array([1.0]), np.array([0.0]), {"trig": np.array([[0.5]])}, "mse"))
    panel,r,theta,mse
    trig,1.0,0.0,0.5
    <BLANKLINE>
    """
    rr, tt = np.meshgrid(r, theta, indexing="ij")
    cols: dict[str, list[Any]] = {"panel": [], "source": [], "r": [], "theta": [], which: [], "stderr": [],
                                  "reliable": []}
    for name, z in values.items():
        cols["panel"] += [name] * rr.size
        cols["source"] += ["closed form"] * rr.size
        cols["r"] += list(rr.ravel())
        cols["theta"] += list(tt.ravel())
        cols[which] += list(np.asarray(z, dtype=float).ravel())
        cols["stderr"] += [math.nan] * rr.size
        cols["reliable"] += [""] * rr.size
    for name, (r_mc, theta_mc, v, se, ok) in (sampled or {}).items():
        mr, mt = np.meshgrid(r_mc, theta_mc, indexing="ij")
        cols["panel"] += [name] * mr.size
        cols["source"] += ["monte carlo"] * mr.size
        cols["r"] += list(mr.ravel())
        cols["theta"] += list(mt.ravel())
        cols[which] += list(np.asarray(v, dtype=float).ravel())
        cols["stderr"] += list(np.asarray(se, dtype=float).ravel())
        cols["reliable"] += [str(bool(b)) for b in np.asarray(ok).ravel()]
    if not sampled:
        cols = {k: v for k, v in cols.items() if k not in ("source", "stderr", "reliable")}
    text_cols = ("panel", "source", "reliable")
    return columns_to_csv({k: np.asarray(v, dtype=object if k in text_cols else float) for k, v in cols.items()})

