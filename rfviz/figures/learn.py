"""Figures of the Learn page that no other page draws: the relative error against m with its Monte-Carlo twin, and
a heavy-tailed Monte-Carlo run against its closed form. The columns come from rfviz.compute.learn."""

from __future__ import annotations

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
