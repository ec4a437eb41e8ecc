"""How many features, the drawing half: maps of the m needed for a target relative error over the (r, θ) plane
(computed by rfviz.compute.features.features_needed_map; arrays in, a Plotly figure out)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from .common import HeatmapStyle, heatmaps

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
    return heatmaps(theta, r, shown, xlabel="θ", ylabel="r", zlabel=f"{ZLABEL} (ε = {eps:g})", title=title,
                    style=HeatmapStyle(zrange=zrange, exact_label="exact (MSE = 0)"))
