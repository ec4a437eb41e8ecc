"""Figures of the Learn page that no other page draws: the relative error against m with its Monte-Carlo twin, and
a heavy-tailed Monte-Carlo run against its closed form. The columns come from rfviz.compute.learn."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .common import lines

Columns = dict[str, np.ndarray]


def relative_error_vs_m_figure(c: Columns, m_mark: int, where: str) -> go.Figure:
    """Closed-form log₁₀ √MSE/K against m (log axis), the sampled points with ±2 SE bars, and a marker at
    ``m_mark`` (the "now try" control)."""
    points = {"Monte Carlo": (c["m_sampled"], c["log10_rel_sampled"], c["log10_rel_se"],
                                      c["reliable"] > 0.5)}
    fig = lines(c["m"], {"closed form": c["log10_rel_closed_form"]}, points=points, xlabel="m (features)",
                ylabel="log₁₀ relative error √MSE/K", title=f"error against the number of features · {where}")
    fig.update_xaxes(type="log")
    y = float(np.interp(np.log(m_mark), np.log(c["m"]), c["log10_rel_closed_form"]))
    fig.add_trace(go.Scatter(x=[m_mark], y=[y], mode="markers", name=f"m = {m_mark}",
                             marker={"size": 14, "symbol": "star", "color": "black"}))
    return fig


def heavy_tail_figure(c: Columns, m: int, trials: int) -> go.Figure:
    """Closed-form log₁₀ MSE of positive features against r and the sampled MSE (filled where the engine calls it
    reliable, hollow where it does not)."""
    points = {"sampled MSE": (c["r"], c["log10_mse_sampled"], c["log10_se"], c["reliable"] > 0.5)}
    fig = lines(c["r_curve"], {"closed form (exact)": c["log10_mse_curve"]}, points=points, xlabel="r = |x| = |y|",
                ylabel="log₁₀ MSE", title=f"positive features at x = y (m = {m}), {trials:,d} trials")
    return fig


def predictions_figure(choices: Sequence[str], counts: Sequence[int], answer: int | None = None,
                       title: str = "the class's predictions") -> go.Figure:
    """The spread of a class's predictions: one horizontal bar per choice (in the step's order, first on top), its
    count and share written on it; the right choice in green when ``answer`` is given (the teacher's view).

    Parameters
    ----------
    choices : sequence of str
        The step's choices.
    counts : sequence of int
        How many students predicted each choice.
    answer : int, optional
        Index of the right choice (None: every bar in one colour).
    title : str
        The chart's title.

    Returns
    -------
    plotly.graph_objects.Figure

    Examples
    --------
    >>> fig = predictions_figure(["yes", "no"], [3, 1], answer=0)
    >>> list(fig.data[0].x)
    [3, 1]
    """
    total = max(1, sum(counts))
    colours = ["#2ca02c" if i == answer else "#1f77b4" for i in range(len(choices))]
    text = [f"{c} ({100 * c / total:.0f} %)" for c in counts]
    wrapped = ["<br>".join(textwrap.wrap(c, 28)) for c in choices]
    fig = go.Figure(go.Bar(x=list(counts), y=wrapped, orientation="h", marker={"color": colours}, text=text,
                           textposition="outside", textangle=0, cliponaxis=False,
                           hovertemplate="%{y}: %{x}<extra></extra>"),  # counts beside the bars: never turned
                    layout={"title": {"text": title}, "xaxis": {"title": {"text": "students"},
                                                                  "range": [0, 1.4 * max(1, *counts)],
                                                                  "dtick": max(1, total // 5)},
                            "yaxis": {"autorange": "reversed", "automargin": True},
                            "height": 120 + 60 * len(choices), "margin": {"l": 10, "r": 10, "t": 50, "b": 40}})
    return fig
