"""Figures of the estimator lab (rfviz.lab): the bias z-score map and the MSE ratio map. Pure plotly builders of a
finished report (rfviz.lab.LabReport, or anything with the fields of ``LabResult``)."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import plotly.graph_objects as go

from .common import HeatmapStyle, heatmaps

Z_CLIP = 10.0
"""|z| beyond this is drawn at the end of the colour scale (the hover still shows the value)."""
RATIO_CLIP = 4.0
"""log₁₀ MSE ratios beyond ±4 (10⁴×) are drawn at the end of the colour scale; ±inf (an exact estimator) too."""


class LabResult(Protocol):
    """The fields of rfviz.lab.LabReport these figures draw (the figures do not import the lab)."""

    estimator: str
    d: int
    trials: int
    alpha: float
    r: np.ndarray
    theta: np.ndarray
    bias_z: np.ndarray
    kurtosis: np.ndarray
    bias_tested: np.ndarray
    bias_rejected: np.ndarray
    mse_source: str
    comparisons: list[Any]
    informative: np.ndarray | None
    closed_form_used: np.ndarray | None

    @property
    def verdict(self) -> str: ...

    @property
    def bias_counts(self) -> dict[str, int]: ...

    def bias_unreliable(self) -> np.ndarray: ...


def _points(report: LabResult, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    i, j = np.nonzero(mask)
    return report.theta[j], report.r[i]


def bias_z_map(report: LabResult) -> go.Figure:
    """Heatmap of the bias z-scores over (θ, r); × marks points where Holm rejects E[K̂] = K, ○ heavy-tailed
    points left out of the test, ◇ tested points with an unreliable sampled MSE (not informative: they do not count
    towards "unbiased"). The marks are the report's masks, and the legend carries the report's counts
    (``bias_counts``), so figure and text agree."""
    z = np.clip(report.bias_z, -Z_CLIP, Z_CLIP)
    rx, ry = _points(report, report.bias_rejected)
    panel = f"{report.estimator}: z of the mean vs the kernel"
    half = max(Z_CLIP / 2, float(np.nanmax(np.abs(z))))  # z = ±Z_CLIP/2 or beyond stays saturated
    fig = heatmaps(report.theta, report.r, {panel: z}, xlabel="θ", ylabel="r = |x| = |y|", zlabel="z",
                   style=HeatmapStyle(diverging=True, zrange=(-half, half)),
                   markers={panel: (rx, ry, "bias (Holm)")} if rx.size else None,
                   title=f"Bias test: {report.verdict} (α = {report.alpha:g}, {report.trials} trials, d = {report.d})")
    counts = report.bias_counts
    hx, hy = _points(report, ~np.asarray(report.bias_tested, bool))
    if hx.size:
        fig.add_trace(go.Scatter(x=hx, y=hy, mode="markers", showlegend=True,
                                 name=f"heavy-tailed: left out ({counts['left_out']} of {counts['points']})",
                                 marker={"symbol": "circle-open", "size": 12, "line": {"width": 2},
                                         "color": "black"}))
    ux, uy = _points(report, report.bias_unreliable())
    if ux.size:
        fig.add_trace(go.Scatter(x=ux, y=uy, mode="markers", showlegend=True,
                                 name=f"sampled MSE unreliable: not informative ({counts['unreliable']})",
                                 marker={"symbol": "diamond-open", "size": 12, "line": {"width": 2},
                                         "color": "dimgray"}))
    if rx.size:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="bias detected (Holm)", showlegend=True,
                                 marker={"symbol": "x-thin", "size": 11, "line": {"width": 2.5, "color": "red"}}))
    fig.update_layout(legend={"orientation": "h", "y": -0.2})
    return fig


SAMPLED_NAME = "candidate's MSE sampled here (its closed form not tested and agreed)"


def ratio_map(report: LabResult) -> go.Figure | None:
    """One heatmap per comparator of log10(MSE_candidate / MSE_builtin): blue where the candidate wins. The
    candidate's MSE is its closed form only where the lab tested it and nothing rejected it
    (``closed_form_used``); elsewhere its sampled MSE, marked with a dot and named in the title."""
    if not report.comparisons:
        return None
    zs = {}
    for c in report.comparisons:
        ratio = np.nan_to_num(c.log10_ratio, nan=np.nan, posinf=RATIO_CLIP, neginf=-RATIO_CLIP)
        zs[f"vs {c.name}" + ("" if c.source == "closed form" else " (MC)")] = np.clip(ratio, -RATIO_CLIP, RATIO_CLIP)
    used = report.closed_form_used
    sampled = np.ones(np.shape(report.bias_z), bool) if used is None else ~np.asarray(used, bool)
    sx, sy = _points(report, sampled)
    mine = ("sampled MSE" if sampled.all() else "closed form" if not sampled.any()
            else "closed form where tested and agreed, sampled MSE at the dots")
    fig = heatmaps(report.theta, report.r, zs, xlabel="θ", ylabel="r = |x| = |y|", zlabel="log₁₀ MSE ratio",
                   style=HeatmapStyle(diverging=True),
                   title=f"log₁₀ MSE ratio {report.estimator} / built-in: blue < 0, it wins; red > 0, it loses"
                         f"<br><sup>{report.estimator}: {mine}; built-ins: closed form unless marked MC</sup>")
    fig.update_layout(margin={"t": 110})  # the title's two lines (one line did not fit a desktop chart)
    if sx.size and not sampled.all():
        for i in range(len(zs)):
            fig.add_trace(go.Scatter(x=sx, y=sy, mode="markers", name=SAMPLED_NAME, showlegend=i == 0,
                                     hovertext=SAMPLED_NAME, marker={"symbol": "circle", "size": 6, "color": "black"}),
                          row=1, col=i + 1)
    return fig
