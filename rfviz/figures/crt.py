"""Figures of the GERF / OPRF / discrete-RF page (Chefs' Random Tables, Likhosherstov et al. 2022, "CRT").

Variance of m iid features = (per-feature variance)/m, plotted as log₁₀ MSE. Inputs: |x| = |y| = r at angle θ for
GERF/OPRF (their variance depends on Z_s = |x + s·y|² only); PoisRF/GeomRF depend on coordinates, so the pair is
placed in ℝᵈ by a named embedding. The columns come from rfviz.compute.crt; this module draws them.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..maths import crt as g
from ..numerics import LOG10
from .common import THETA_TICKS, HeatmapStyle, columns_to_csv, finite_or_none, heatmaps, layout, lines, log_axes

Columns = dict[str, np.ndarray]
__all__ = ["THETA_TICKS", "columns_to_csv", "complex_A_figure", "dirf_figure", "oprf_figure", "real_A_figure"]


def _reliable(sampled: Columns, label: str) -> np.ndarray | None:
    """The ``reliable_*`` column as booleans (None for columns computed without it)."""
    col = sampled.get(f"reliable_{label}")
    return None if col is None else np.asarray(col) > 0.5


def real_A_figure(c: Columns, r: float, theta: float, d: int, m: int, kernel: str,
                  sampled: Columns | None = None) -> go.Figure:
    """Variance against real A with the admissible range, the fourth-moment bound and A* marked; with ``sampled``
    (from ``sampled_real_A_columns``) the Monte-Carlo points with ±2 SE bars."""
    points = None if sampled is None else {
        f"GERF s = {sign}1": (sampled["A"], sampled[f"log10_mse_s{key}1"], sampled[f"log10_se_s{key}1"],
                              _reliable(sampled, f"s{key}1"))
        for sign, key in (("+", "+"), ("−", "-"))}
    fig = lines(c["A"], {"GERF s = +1": c["log10_mse_s+1"], "GERF s = −1": c["log10_mse_s-1"]}, points=points,
                xlabel="A (real)",
                ylabel=f"log₁₀ MSE (m = {m})", title=f"GERF variance against A · {kernel} kernel · r = {r:g}, "
                                                     f"θ = {theta:.3g}, d = {d}")
    fig.add_vrect(x0=g.A_FOURTH_MOMENT_BOUND, x1=g.A_VARIANCE_BOUND, fillcolor="orange", opacity=0.12, line_width=0,
                  annotation_text="E|Y|⁴ = ∞", annotation_position="bottom right")  # inside the band's right
    # edge: to its left the plot has room, to its right a narrow (phone) chart has none
    fig.add_vline(x=g.A_VARIANCE_BOUND, line_dash="dash", line_color="red",
                  annotation_text="Var = ∞", annotation_position="top left")
    # the variance blows up as A → 1/8: show ~10 decades above the minimum so the optimum stays visible
    ys = np.concatenate([np.asarray(c["log10_mse_s+1"]), np.asarray(c["log10_mse_s-1"])])
    ys = ys[np.isfinite(ys)]
    if ys.size:
        lo = float(ys.min())
        fig.update_yaxes(range=[lo - 1.0, min(float(ys.max()), lo + 10.0) + 0.5])  # room for the A* label
    fig.update_xaxes(range=[float(c["A"][0]), g.A_VARIANCE_BOUND + 0.02])
    star = float(g.A_star(2 * r * r * (1 + np.cos(theta)), d))  # OPRF's A* (CRT Thm 3.3)
    y_star = (g.log_var_vs_real_A(np.array([star]), 1, r, theta, d, kernel)[0] - np.log(m)) / LOG10
    y_pos = (g.log_var_vs_real_A(np.array([0.0]), 1, r, theta, d, kernel)[0] - np.log(m)) / LOG10
    fig.add_trace(go.Scatter(x=[star], y=[y_star], mode="markers+text", text=["A* (OPRF)"],
                             textposition="bottom center",
                             marker={"size": 12, "symbol": "star", "color": "gold", "line": {"width": 1}},
                             name="A* = OPRF"))
    fig.add_trace(go.Scatter(x=[0.0], y=[y_pos], mode="markers+text", text=["PosRF"], textposition="top center",
                             marker={"size": 9, "color": "black"}, name="A = 0, s = +1: PosRF"))
    # labels: A* below its star, PosRF above its dot (they meet when A* → 0); the legend under the plot, clear of
    # the "Var = ∞" line label
    fig.update_layout(legend={"orientation": "h", "x": 0, "y": -0.2, "yanchor": "top"}, height=460)
    return fig


def complex_A_figure(re: np.ndarray, im: np.ndarray, z: np.ndarray, s: int, r: float, theta: float,
                     d: int, zrange: tuple[float, float] | None = None) -> go.Figure:
    """Heatmap of log₁₀ MSE over complex A; blank = infinite variance; A* and A = 0 marked.

    The colour window stops at the 92nd percentile (or ``zrange``): the variance blows up as Re A → 1/8, and a
    window reaching that blow-up paints the rest of the plane one colour."""
    fig = heatmaps(re, im, {f"s = {s:+d}": z}, xlabel="Re A", ylabel="Im A", zlabel="log₁₀ MSE", theta_axis="none",
                   title="GERF variance over complex A (blank: Re A ≥ 1/8, infinite variance)",
                   style=HeatmapStyle(zrange=zrange, percentiles=(0.0, 92.0)))
    fig.add_vline(x=g.A_VARIANCE_BOUND, line_dash="dash", line_color="red")
    if s == 1:
        star = float(g.A_star(2 * r * r * (1 + np.cos(theta)), d))  # OPRF's A* (CRT Thm 3.3)
        fig.add_trace(go.Scatter(x=[star], y=[0.0], mode="markers+text", text=["A*"], textposition="top center",
                                 textfont={"color": "white"},
                                 marker={"size": 13, "symbol": "star", "color": "gold", "line": {"width": 1}},
                                 name="A* (OPRF)"))
    fig.add_trace(go.Scatter(x=[0.0], y=[0.0], mode="markers+text", name="A = 0",
                             text=["PosRF" if s == 1 else "A = 0"], textposition="bottom center",
                             textfont={"color": "white"},
                             marker={"size": 8, "color": "white", "line": {"width": 1, "color": "black"}}))
    fig.update_layout(height=480)
    return fig


def oprf_figure(c: Columns, d: int) -> go.Figure:
    """OPRF against PosRF as ‖x + y‖² grows: both relative variances and their ratio."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["relative variance Var/K² (one feature)",
                                                        "OPRF / PosRF (Figure-1 utility μ)"])
    fig.add_trace(go.Scatter(x=c["Z"], y=finite_or_none(c["log10_relvar_posrf"]), name="PosRF (A = 0)",
                             line={"width": 2.5}), row=1, col=1)
    fig.add_trace(go.Scatter(x=c["Z"], y=finite_or_none(c["log10_relvar_oprf"]), name="OPRF (A = A*)",
                             line={"width": 2.5}), row=1, col=1)
    if "log10_relvar_sderf" in c:
        fig.add_trace(go.Scatter(x=c["Z"], y=finite_or_none(c["log10_relvar_sderf"]),
                                 name="SDERF (A along x + y, [DERF])", line={"width": 2.5, "dash": "dash"}),
                      row=1, col=1)
    fig.add_trace(go.Scatter(x=c["Z"], y=finite_or_none(c["log10_ratio_oprf_posrf"]),
                             name="log₁₀ Var<sub>OPRF</sub>/Var<sub>PosRF</sub>",
                             line={"width": 2.5, "color": "#2ca02c"}), row=1, col=2)
    fig.update_xaxes(title_text="Z = ‖x + y‖²")
    fig.update_yaxes(title_text="log₁₀", row=1, col=1)
    fig.update_layout(title=f"OPRF against positive features, d = {d}", height=420, **layout())
    return fig


def dirf_figure(pois: Columns, geo: Columns, optima: dict[str, float], shifted: bool) -> go.Figure:
    """PoisRF against λ (log axis) and GeomRF against p, optima starred."""
    plus = "+" if shifted else ""
    fig = make_subplots(rows=1, cols=2, subplot_titles=[f"PoisRF{plus} against the rate λ",
                                                        f"GeomRF{plus} against the probability p"])
    fig.add_trace(go.Scatter(x=pois["lam"], y=finite_or_none(pois["log10_mse"]), name=f"PoisRF{plus}",
                             line={"width": 2.5}), row=1, col=1)
    fig.add_trace(go.Scatter(x=geo["prob"], y=finite_or_none(geo["log10_mse"]), name=f"GeomRF{plus}",
                             line={"width": 2.5, "color": "#d62728"}), row=1, col=2)
    fig.add_trace(go.Scatter(x=[optima["lam_star"]], y=[optima["lam_star_log10_mse"]], mode="markers",
                             name="λ* (Thm 3.4)", marker={"size": 12, "symbol": "star", "color": "gold"}),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=[optima["p_star"]], y=[optima["p_star_log10_mse"]], mode="markers",
                             name="p* (numerical)", marker={"size": 12, "symbol": "star", "color": "gold"}),
                  row=1, col=2)
    log_axes(fig.update_xaxes(type="log", title_text="λ", row=1, col=1))
    fig.update_xaxes(title_text="p", row=1, col=2)
    fig.update_yaxes(title_text="log₁₀ MSE", row=1, col=1)
    fig.update_layout(height=420, title="Discrete random features (coordinate-dependent)", **layout())
    return fig
