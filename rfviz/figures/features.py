"""How many features, the drawing half: maps of the m needed for a target relative error over the (r, θ) plane
(computed by rfviz.compute.features.features_needed_map; arrays in, a Plotly figure out)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from .common import HeatmapStyle, heatmaps, layout

ZLABEL = "log₁₀ m needed"


def features_needed_figure(r: np.ndarray, theta: np.ndarray, maps: Mapping[str, np.ndarray], eps: float,
                           title: str = "", titles: Mapping[str, str] | None = None,
                           zrange: tuple[float, float] | None = None) -> go.Figure:
    """Heatmaps over θ (x-axis) × r (y-axis) of log₁₀ of the smallest m whose relative error √MSE/|K| is at most
    ``eps``, one panel per estimator sharing one colour scale; blank cells are unreachable (no m up to the
    estimator's largest), cells at 0 need one feature.

    Parameters
    ----------
    r, theta : np.ndarray
        The grid's axes.
    maps : mapping of str to np.ndarray
        Panel → log₁₀ m, shape (len(r), len(θ)) (NaN: unreachable).
    eps : float
        The target relative error (for the colour bar's title).
    title : str
        Figure title.
    titles : mapping, optional
        Panel name → the title shown.
    zrange : (float, float), optional
        A fixed colour window (log₁₀ m).

    Returns
    -------
    plotly.graph_objects.Figure

    Examples
    --------
    >>> fig = features_needed_figure(np.array([0.5, 1.0]), np.array([0.0, 1.0]), {"trig": np.ones((2, 2))}, 0.1)
    >>> fig.data[0].type
    'heatmap'
    """
    shown = {(titles or {}).get(k, k): v for k, v in maps.items()}
    fig = heatmaps(theta, r, shown, xlabel="θ", ylabel="r", zlabel=f"{ZLABEL} (ε = {eps:g})", title=title,
                   style=HeatmapStyle(zrange=zrange, exact_label="exact (MSE = 0)"))
    for trace in fig.data:  # hover: m itself, at the cell's own (r, θ), where it was computed exactly
        if trace.type == "heatmap" and trace.meta != "exact" and trace.name in shown:
            m = np.rint(10 ** np.asarray(shown[trace.name], dtype=float))
            trace.customdata = np.where(np.isfinite(m) & (m >= 1), m, None)
            trace.hovertemplate = (f"r = %{{y:.6g}}, θ = %{{x:.6g}}<br>m needed = %{{customdata:,.0f}} (ε = {eps:g}; "
                                   "computed at exactly this r, θ)<extra>" + str(trace.name) + "</extra>")
    return fig


def needed_vs_eps_figure(eps_values: np.ndarray, ms: Mapping[str, np.ndarray], eps: float, r: float, theta: float,
                         titles: Mapping[str, str] | None = None) -> go.Figure:
    """The slice of the features view: the m needed as a function of ε at one exact pair (r, θ), log-log, one line
    per estimator, the page's ε marked.

    Parameters
    ----------
    eps_values : np.ndarray
        The ε axis.
    ms : mapping of str to np.ndarray
        Estimator → m at each ε (NaN: unreachable).
    eps : float
        The page's ε (a vertical line).
    r, theta : float
        The pair (in the title).
    titles : mapping, optional
        Estimator name → the title shown.

    Returns
    -------
    plotly.graph_objects.Figure

    Examples
    --------
    >>> fig = needed_vs_eps_figure(np.array([0.01, 0.1]), {"trig": np.array([4600.0, 46.0])}, 0.1, 1.0, 1.0)
    >>> fig.data[0].y.tolist()
    [4600.0, 46.0]
    """
    traces = [go.Scatter(x=eps_values, y=np.where(np.isfinite(m), m, None), mode="lines+markers",
                         name=(titles or {}).get(k, k),
                         hovertemplate="ε = %{x:.4g}<br>m = %{y:,.0f}<extra>%{fullData.name}</extra>")
              for k, m in ms.items()]
    return go.Figure(traces, layout={**layout(), "title": f"m needed against ε at r = {r:g}, θ = {theta:g}",
                                     "xaxis": {"type": "log", "title": {"text": "ε (target relative error)"}},
                                     "yaxis": {"type": "log", "title": {"text": "m needed"}},
                                     "shapes": [{"type": "line", "xref": "x", "x0": eps, "x1": eps, "yref": "y domain",
                                                 "y0": 0, "y1": 1, "line": {"color": "gray", "dash": "dot"}}],
                                     "height": 380})
