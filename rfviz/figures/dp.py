"""Figures of the dot-product page (drawing only: the curves come from rfviz.compute.dp, whose functions of the
same names without ``_figure`` compute them and call these).

Every figure states the quantity it shows (E|k̂−k|² or E(Re k̂ − k)²) and the S-convention
(embedding) in its title.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import (
    THETA_TICKS,
    HeatmapStyle,
    bars,
    color,
    finite_or_none,
    heatmaps,
    horizontal_line,
    layout,
    lines,
    log_axes,
)

Curves = Mapping[str, np.ndarray]


def where(r: float, theta: float, d: int, embedding: str) -> str:
    """The inputs part of a title: r, θ, d and the embedding."""
    return f"r = {r:g}, θ = {theta:.3g}, d = {d}, embedding = {embedding}"


def variance_vs_q_figure(q: np.ndarray, curves: Curves, p: int, m: int, at: str) -> go.Figure:
    """MSE against q (log y), with the complex weights q = ½ marked; ``at`` is ``where(...)``."""
    fig = lines(q, dict(curves), xlabel="q (realness of the weights)", ylabel="MSE", log_y=True,
                title=f"Variance vs q, kernel (x·y)<sup>{p}</sup>, m = {m} features; {at}")
    fig.add_vline(x=0.5, line_dash="dot", line_color="grey", annotation_text="complex (q = ½)")
    return fig


def variance_vs_p_figure(ps: np.ndarray, series: Mapping[str, tuple[np.ndarray, np.ndarray]], m: int, variance: str,
                         at: str) -> go.Figure:
    """MSE against the degree p per basis (``series``: basis → (real, complex)), the complex/real ratio below."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.65, 0.35], vertical_spacing=0.06)
    for i, (basis, (real, cplx)) in enumerate(series.items()):
        for j, (label, y) in enumerate((("real", real), ("complex", cplx))):
            fig.add_trace(go.Scatter(x=ps, y=finite_or_none(y), name=f"{basis} {label}", mode="lines+markers",
                                     line={"color": color(2 * i + j), "dash": "solid" if j else "dash"}), 1, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            fig.add_trace(go.Scatter(x=ps, y=finite_or_none(cplx / real), name=f"{basis}: complex / real",
                                     mode="lines+markers", line={"color": color(2 * i + 1)}), 2, 1)
    log_axes(fig.update_yaxes(type="log", title_text="MSE", row=1, col=1))
    fig.update_yaxes(title_text="complex / real", row=2, col=1)
    fig.update_xaxes(title_text="degree p", row=2, col=1)
    fig.update_layout(title=f"MSE vs degree p, m = {m} features, {variance}; {at}", height=560, **layout())
    return fig


def variance_vs_d_figure(ds: np.ndarray, curves: Curves, p: int, m: int, variance: str, at: str) -> go.Figure:
    """MSE against the input dimension d (log-log)."""
    fig = lines(ds, dict(curves), xlabel="d", ylabel="MSE", log_y=True,
                title=f"MSE vs d, kernel (x·y)<sup>{p}</sup>, m = {m} features, {variance}; {at}")
    log_axes(fig.update_xaxes(type="log"))
    return fig


def variance_vs_m_figure(m_axis: np.ndarray, curves: Curves, dash: Mapping[str, str], p: int, d_pad: int,
                         at: str) -> go.Figure:
    """Variance against m with a dotted line at every multiple of the padded dimension (TensorSRHT's sawtooth)."""
    fig = lines(m_axis, dict(curves), xlabel="number of features m", ylabel="E|k̂−k|²", log_y=True,
                dash=dict(dash), title=f"Variance vs m, kernel (x·y)<sup>{p}</sup>; {at} (padded d = {d_pad})")
    for k in range(d_pad, int(m_axis[-1]) + 1, d_pad):
        fig.add_vline(x=k, line_dash="dot", line_color="lightgrey")
    return fig


def real_complex_ratio_figure(theta: np.ndarray, ds: np.ndarray, ratio: np.ndarray, p: int, m: int, r: float,
                              basis: str, variance: str) -> go.Figure:
    """Diverging heatmap of log₂ MSE(complex)/MSE(real) over (θ, log₂ d), with the crossover cos²θ* = 1/d."""
    fig = heatmaps(theta, np.log2(ds), {"log₂ MSE(complex)/MSE(real)": ratio}, xlabel="θ", ylabel="log₂ d",
                   zlabel="log₂ ratio", style=HeatmapStyle(diverging=True, floor_span=None),
                   title=f"Complex vs real {basis} sketch, (x·y)<sup>{p}</sup>, m = {m}, {variance}; flat embedding, "
                         f"r = {r:g}")
    dd = np.geomspace(ds.min(), ds.max(), 60)
    star = np.arccos(1.0 / np.sqrt(dd))
    for th in (star, math.pi - star):
        fig.add_trace(go.Scatter(x=th, y=np.log2(dd), mode="lines", line={"color": "black", "dash": "dash"},
                                 name="cos²θ = 1/d", showlegend=th is star))
    fig.update_xaxes(**THETA_TICKS)
    return fig


def tsrht_vs_rademacher_figure(m_axis: np.ndarray, curves: Curves, q: float, at: str) -> go.Figure:
    """The ratio TensorSRHT / unstructured sketch against D per degree, with 1 marked."""
    fig = lines(m_axis, dict(curves), xlabel="number of features m",
                ylabel="MSE TensorSRHT / MSE unstructured",
                title=f"TensorSRHT vs Rademacher-type sketch, q = {q:g}; {at}")
    return horizontal_line(fig, 1.0, {"dash": "dot", "color": "grey"})


def maclaurin_allocation_figure(series: Mapping[str, list[int]], top: int, kernel: str, m: int, r: float,
                                d: int) -> go.Figure:
    """Bars of the features m_n per degree n = 1..``top`` (they sum to m), one series per sketch."""
    fig = bars(list(range(1, top + 1)), dict(series), xlabel="degree n", ylabel="features m<sub>n</sub>",
               title=f"Optimised Maclaurin allocation, {kernel} kernel, m = {m} features, |x| = |y| = {r:g}, d = {d}")
    fig.update_xaxes(dtick=1)  # degrees are integers
    fig.update_layout(legend={"orientation": "h", "x": 0, "y": -0.2, "yanchor": "top"}, height=440)
    return fig


def sketches_vs_m_figure(m_axis: np.ndarray, curves: Curves, p: int, at: str,
                         points: dict | None = None) -> go.Figure:
    """Closed-form E|k̂ − (x·y)ᵖ|² against m per sketch, with optional sampled ``points`` (±2 SE bars; points
    beyond the curves are pinned to their edge by ``lines``)."""
    kernel = f"(x·y)<sup>{p}</sup>"
    return lines(m_axis, dict(curves), xlabel="number of features m", ylabel=f"MSE, E|k̂ − {kernel}|²", log_y=True,
                 points=points, title=f"Sketches of the polynomial kernel {kernel}: MSE vs number of features m; {at}")


__all__ = ["maclaurin_allocation_figure", "real_complex_ratio_figure", "sketches_vs_m_figure",
           "tsrht_vs_rademacher_figure", "variance_vs_d_figure", "variance_vs_m_figure", "variance_vs_p_figure",
           "variance_vs_q_figure", "where"]
