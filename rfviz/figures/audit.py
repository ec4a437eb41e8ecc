"""The audit's figure (``rfviz audit --html``): one row per audited feature map — library and version, the call,
rfviz's closed form, the verdict, the bias and closed-form z ranges, the command that reproduces it — and the z
ranges as bars. Pure drawing: the rows come from ``rfviz.audit.run_audit``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import layout

COLUMNS: tuple[tuple[str, str], ...] = (
    ("library", "library"), ("version", "version"), ("name", "feature map"), ("setting", "the call"),
    ("mechanism", "rfviz's closed form"), ("verdict", "verdict"), ("sentence", "finding"), ("command", "reproduce"),
)


def _cell(row: Mapping[str, Any], key: str) -> str:
    value = row.get(key)
    if key == "verdict" and row.get("status") != "ran":
        return f"{row.get('status')}: {row.get('reason', '')}"
    return "" if value is None else str(value)


def audit_figure(rows: Sequence[Mapping[str, Any]], title: str = "rfviz audit") -> go.Figure:
    """A table of the audit's rows above bars of each case's bias and closed-form z range.

    Parameters
    ----------
    rows : the ``cases`` of ``run_audit``'s result (plain values; the reports are not read).
    title : the figure's title.

    Returns
    -------
    plotly.graph_objects.Figure

    Examples
    --------
    >>> fig = audit_figure([{"library": "x", "name": "m", "status": "ran", "verdict": "unbiased",
    ...                      "bias_z_min": -1.0, "bias_z_max": 1.2}])
    >>> len(fig.data)
    3
    """
    fig = make_subplots(rows=2, cols=1, row_heights=[0.6, 0.4], vertical_spacing=0.08,
                        specs=[[{"type": "table"}], [{"type": "xy"}]])
    fig.add_trace(go.Table(header={"values": [label for _, label in COLUMNS]},
                           cells={"values": [[_cell(r, key) for r in rows] for key, _ in COLUMNS],
                                  "align": "left"}), row=1, col=1)
    names = [f"{r.get('library', '')}: {r.get('name', '')}" for r in rows]
    for key, label in (("bias_z", "bias z (min … max)"), ("closed_form_z", "closed-form MSE z (min … max)")):
        low = [r.get(f"{key}_min") for r in rows]
        high = [r.get(f"{key}_max") for r in rows]
        fig.add_trace(go.Bar(name=label, y=names, orientation="h", base=low,
                             x=[None if a is None or b is None else b - a for a, b in zip(low, high, strict=True)]),
                      row=2, col=1)
    fig.update_layout(**layout(), title=title, barmode="group", height=420 + 60 * len(rows))
    fig.update_xaxes(title_text="z", row=2, col=1)
    return fig
