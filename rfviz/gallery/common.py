"""Small presentation helpers shared by the gallery entry modules."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..figures.common import layout

PI = math.pi


# ------------------------------------------------------------------------------------------------ small helpers
def nearest(values: np.ndarray, at: float) -> int:
    """Index of the grid value nearest to ``at``.

    Parameters
    ----------
    values : numpy.ndarray
        The grid.
    at : float
        The value looked for.

    Returns
    -------
    int
        The index of the nearest grid value.

    Examples
    --------
    >>> nearest(np.array([0.0, 0.5, 1.0]), 0.7)
    1
    """
    return int(np.argmin(np.abs(np.asarray(values, dtype=float) - at)))


def trace_y(fig: go.Figure, name: str) -> np.ndarray:
    """The y values of the (first) trace called ``name``.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        The figure.
    name : str
        The trace's name.

    Returns
    -------
    numpy.ndarray
        Its y values, as floats.

    Examples
    --------
    >>> trace_y(go.Figure(go.Scatter(y=[1, 2], name="a")), "a").tolist()
    [1.0, 2.0]
    """
    for t in fig.data:
        if t.name == name:
            return np.asarray(t.y, dtype=float)
    raise KeyError(f"no trace named {name!r} in the figure (traces: {[t.name for t in fig.data]})")


def side_by_side(figures: Sequence[go.Figure], titles: Sequence[str], title: str, height: int = 460) -> go.Figure:
    """The traces of several 2-D figures as panels of one figure (legend entries kept once per name).

    Parameters
    ----------
    figures : sequence of plotly.graph_objects.Figure
        The panels, left to right.
    titles : sequence of str
        Their titles.
    title : str
        The whole figure's title.
    height : int, default 460
        Its height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        One figure with a panel per input figure.

    Examples
    --------
    >>> a = go.Figure(go.Scatter(y=[1, 2], name="a"))
    >>> len(side_by_side([a, a], ["left", "right"], "both").data)
    2
    """
    out = make_subplots(rows=1, cols=len(figures), subplot_titles=list(titles), horizontal_spacing=0.07)
    seen: set[str] = set()
    for col, fig in enumerate(figures, start=1):
        for t in fig.data:
            t = go.Scatter(t) if isinstance(t, go.Scatter) else t
            t.legendgroup = t.name
            t.showlegend = t.name not in seen
            seen.add(t.name)
            out.add_trace(t, row=1, col=col)
        out.update_xaxes(title_text=fig.layout.xaxis.title.text, type=fig.layout.xaxis.type, row=1, col=col)
        out.update_yaxes(title_text=fig.layout.yaxis.title.text, type=fig.layout.yaxis.type, row=1, col=col)
    out.update_layout(title=title, height=height, **layout(top=90))
    return out


def catalog_rows(prefix: str, labels: Sequence[Any], printed: Sequence[str]) -> dict[str, str]:
    """{f"{prefix}{label}": printed value} for a printed table row.

    Parameters
    ----------
    prefix : str
        The keys' common start.
    labels : sequence
        The row's column labels.
    printed : sequence of str
        The row's values as printed.

    Returns
    -------
    dict of str to str
        The catalog entries of the row.

    Examples
    --------
    >>> catalog_rows("d", [4, 8], ["0.1", "0.2"])
    {'d4': '0.1', 'd8': '0.2'}
    """
    if len(labels) != len(printed):
        raise ValueError(f"{prefix}: {len(labels)} labels but {len(printed)} printed values")
    return {f"{prefix}{lab}": txt for lab, txt in zip(labels, printed, strict=True)}
