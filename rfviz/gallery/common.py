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
    """Index of the grid value nearest to ``at``."""
    return int(np.argmin(np.abs(np.asarray(values, dtype=float) - at)))


def trace_y(fig: go.Figure, name: str) -> np.ndarray:
    """The y values of the (first) trace called ``name``."""
    for t in fig.data:
        if t.name == name:
            return np.asarray(t.y, dtype=float)
    raise KeyError(f"no trace named {name!r} in the figure (traces: {[t.name for t in fig.data]})")


def side_by_side(figures: Sequence[go.Figure], titles: Sequence[str], title: str, height: int = 460) -> go.Figure:
    """The traces of several 2-D figures as panels of one figure (legend entries kept once per name)."""
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
    """{f"{prefix}{label}": printed value} for a printed table row."""
    if len(labels) != len(printed):
        raise ValueError(f"{prefix}: {len(labels)} labels but {len(printed)} printed values")
    return {f"{prefix}{lab}": txt for lab, txt in zip(labels, printed, strict=True)}
