"""Drawing for app_pages/data.py: where a data set's pairs lie on the MSE map, and its data-averaged MSE against m
(the numbers come from rfviz.compute.data)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .common import color, layout
from .explorer import heatmap_figure

CONTOUR_LEVELS = (0.1, 0.3, 0.5, 0.7, 0.9)
"""Levels of the pair-density contours, as fractions of the peak density."""
CONTOUR_NOTE = ("White contour lines: the density of the data's pairs at 10 %, 30 %, 50 %, 70 % and 90 % of its "
                "peak (inner lines: more pairs)")
"""How the contours of ``data_map_figure`` are drawn, in words (the page's caption)."""


def data_map_figure(r_axis: np.ndarray, theta_axis: np.ndarray, values: Mapping[str, np.ndarray],
                    density: np.ndarray, title: str = "", titles: Mapping[str, str] | None = None) -> go.Figure:
    """The explorer's log10 MSE heatmaps (rows r, columns θ; one panel per estimator, shown by ``titles``) with the
    pairs' density drawn on top of each panel as contours (rfviz.compute.data.data_map gives every argument).

    Examples
    --------
    >>> dm = rfviz.compute.data.data_map(ds, ["trig"], {"m": 8})  # doctest: +SKIP
    >>> fig = data_map_figure(dm.r_axis, dm.theta_axis, dm.values, dm.density, dm.title)  # doctest: +SKIP
    """
    fig = heatmap_figure(r_axis, theta_axis, values, "log10_mse", title=title, titles=titles)
    for i in range(len(values)):
        fig.add_trace(go.Contour(x=theta_axis, y=r_axis, z=density, showscale=False, name="pair density",
                                 contours={"coloring": "lines", "start": CONTOUR_LEVELS[0], "end": CONTOUR_LEVELS[-1],
                                           "size": CONTOUR_LEVELS[1] - CONTOUR_LEVELS[0]},
                                 colorscale=[[0.0, "white"], [1.0, "white"]],  # coloring "lines" ignores line.color
                                 line={"color": "white", "width": 1.5}, hoverinfo="skip", showlegend=i == 0),
                      row=1, col=i + 1)
    return fig


def mse_vs_m_figure(data_name: str, names: Sequence[str], m: np.ndarray, log10_mse: np.ndarray) -> go.Figure:
    """E_pairs[MSE] against m, one line per estimator (log-log); ``log10_mse`` has one row per name (NaN: no closed
    form), as in rfviz.compute.data.PairAverages."""
    fig = go.Figure()
    for i, n in enumerate(names):
        y = np.where(np.isfinite(log10_mse[i]), 10.0 ** log10_mse[i], np.nan)
        fig.add_trace(go.Scatter(x=m, y=[None if not np.isfinite(v) else float(v) for v in y],
                                 mode="lines+markers", name=n, line={"color": color(i)}))
    fig.update_xaxes(title_text="number of features m", type="log")
    fig.update_yaxes(title_text="E_pairs[MSE]", type="log")
    fig.update_layout(title=f"{data_name}: data-averaged MSE (closed form at every pair) vs m", height=420, **layout())
    return fig
