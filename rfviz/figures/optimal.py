"""Figures of optimal importance sampling Ψ (Sernau et al., Thm 1 and Cor. 2; [OS]
views 1, 3-5). Pure builders: numbers in, plotly Figures out; all maths lives in rfviz.maths.optimal."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..maths.optimal import (
    MECHANISMS,
    OptimalSampling,
    divergence_regions,
    equivalence_curve,
    variance_sweep,
)
from .common import figure_window, layout, log_axes, overlay_points

_COLORS = {"positive": "#d62728", "trig": "#1f77b4", "omega": "#7f7f7f", "bound": "#2ca02c"}
_SHADES = {"variance_infinite": "rgba(214,39,40,0.18)", "fourth_moment_infinite": "rgba(255,127,14,0.15)",
           "heavy_tail": "rgba(148,103,189,0.12)"}
_SHADE_TEXT = {"variance_infinite": "V = ∞", "fourth_moment_infinite": "E Y⁴ = ∞: MC variance unreliable",
               "heavy_tail": "heavy tail: MC variance unreliable"}
_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
_AXIS_LABEL = {"r": "input radius r", "sigma": "input std σ (x ~ N(0, σ²I))", "r2": "radius r2 of X2"}


def _finite(a: np.ndarray) -> np.ndarray:
    """±inf → NaN so plotly draws a gap."""
    a = np.asarray(a, dtype=float).copy()
    a[~np.isfinite(a)] = np.nan
    return a


def psi_radial_density_figure(problems: OptimalSampling | Sequence[OptimalSampling], n: int = 301) -> go.Figure:
    """Radial density of |ω| under Ψ* for each problem against Ω's χ_d.

    Problems should share d and the input law (e.g. positive and trig features of the same inputs).
    """
    probs = [problems] if isinstance(problems, OptimalSampling) else list(problems)
    rho = np.unique(np.concatenate([p.radial_grid(n) for p in probs]))
    fig = go.Figure()
    for p in probs:
        fig.add_trace(go.Scatter(x=rho, y=np.exp(p.psi_radial_log_pdf(rho)), name=f"Ψ* ({p.mechanism})",
                                 line={"color": _COLORS[p.mechanism], "width": 3},
                                 hovertemplate="ρ=%{x:.3g}<br>density=%{y:.4g}<extra>Ψ* " + p.mechanism + "</extra>"))
    fig.add_trace(go.Scatter(x=rho, y=np.exp(probs[0].omega_radial_log_pdf(rho)),
                             name=f"Ω: χ{str(probs[0].d).translate(_SUBSCRIPT)}",
                             line={"color": _COLORS["omega"], "dash": "dash"}))
    law = probs[0].inputs.describe()
    title = "Optimal Ψ: radial density of |ω| (" + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                                               for k, v in law.items()) + f", {probs[0].kernel})"
    fig.update_layout(title=title, xaxis_title="ρ = |ω|", yaxis_title="density", height=420, **layout())
    return fig


def _shade(fig: go.Figure, regions: list[dict], mechanism: str) -> None:
    """Shade each region and add one legend entry per (estimator, kind) instead of overlapping annotations."""
    seen: set[tuple[str, str]] = set()
    for reg in regions:
        lo, hi = reg["start"], reg["end"]
        if hi <= lo:
            continue
        fig.add_vrect(x0=lo, x1=hi, fillcolor=_SHADES[reg["kind"]], line_width=0, layer="below")
        key = (reg["estimator"], reg["kind"])
        if key not in seen:
            seen.add(key)
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"shaded from {lo:.3g}: {mechanism} "
                                     f"{reg['estimator']}, {_SHADE_TEXT[reg['kind']]}",
                                     marker={"symbol": "square", "size": 12, "color": _SHADES[reg["kind"]]}))


def variance_sweep_figure(kind: str, d: int, axis: str, values: np.ndarray, kernel: str = "softmax",
                          mechanisms: Sequence[str] = MECHANISMS, relative: bool = False, shade: bool = True,
                          **fixed: float) -> go.Figure:
    """V* (importance sampling from Ψ*) and the unweighted variance (Ψ = Ω) as r or σ moves, per sample, on a
    log axis; ``relative`` divides by E K². Regions where a variance or its
    Monte-Carlo estimate
    diverges are shaded."""
    values = np.asarray(values, dtype=float)
    fig = go.Figure()
    for mech in mechanisms:
        sweep = variance_sweep(mech, kind, kernel, d, axis, values, **fixed)
        base = sweep["log10_expected_k2"] if relative else 0.0
        fig.add_trace(go.Scatter(x=values, y=_finite(sweep["log10_v_opt"] - base), name=f"V* ({mech}, Ψ*)",
                                 line={"color": _COLORS[mech], "width": 3 if mech == "positive" else 2,
                                       "dash": "solid" if mech == "positive" else "dot"}))
        fig.add_trace(go.Scatter(x=values, y=_finite(sweep["log10_v_plain"] - base), name=f"{mech}, plain Ψ = Ω",
                                 line={"color": _COLORS[mech], "dash": "dash"}))
        if shade:
            _shade(fig, divergence_regions(mech, kind, kernel, d, axis, values, **fixed), mech)
    label = "log₁₀ V / E K²" if relative else "log₁₀ V (per sample; MSE = V/m)"
    fig.update_layout(title=f"Optimal vs unweighted variance ({kind} inputs, d={d}, {kernel} kernel)",
                      legend={"font": {"size": 11}},
                      xaxis_title=_AXIS_LABEL.get(axis, axis), yaxis_title=label, height=460, **layout())
    return fig


def equivalence_figure(r1: float, r2_values: np.ndarray, d: int, kernel: str = "softmax") -> go.Figure:
    """'All representations are equivalent' and its failure: V* of positive and trig features under their own
    optimal Ψ for X1 = Unif(r1 S), X2 = Unif(r2 S). Equal (= Cor. 1 bound) at r2 = r1 (Cor. 2), apart elsewhere.
    Scope: iid ω, independent x1, x2, scalar features (§6.1)."""
    curve = equivalence_curve(r1, np.asarray(r2_values, dtype=float), d, kernel)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=curve["r2"], y=_finite(curve["bound"]), name="Cor. 1 bound (φ-free)",
                             line={"color": _COLORS["bound"], "dash": "dash"}))
    for mech in MECHANISMS:
        fig.add_trace(go.Scatter(x=curve["r2"], y=_finite(curve[mech]), name=f"V* {mech} (optimal Ψ)",
                                 line={"color": _COLORS[mech]}))
    fig.add_vline(x=r1, line_dash="dot", line_color="black", annotation_text="X1 = X2: equal (Cor. 2)",
                  annotation_position="top")
    log_axes(fig.update_yaxes(type="log"))
    fig.update_layout(title=f"Equivalence under optimal Ψ holds only for X1 = X2 (r1={r1:g}, d={d}, {kernel})",
                      xaxis_title=_AXIS_LABEL["r2"], yaxis_title="V* per sample (log scale)", height=440, **layout())
    return fig


def add_mc_points(fig: go.Figure, points: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
                  ) -> go.Figure:
    """Overlay rfviz.compute.optimal.variance_sweep_mc points (open markers, ±2 SE bars; a missing lower bar:
    V − 2 SE ≤ 0)."""
    window = figure_window(fig)
    for label, (x, mid, lo, hi) in points.items():
        mech = label.split("(")[1].split(",")[0] if label.startswith("V*") else label.split(",")[0]
        se = (np.asarray(hi, float) - np.asarray(lo, float)) / 4
        overlay_points(fig, label, (x, mid, se), _COLORS.get(mech, "black"), window,
                       symbol="circle" if label.startswith("V*") else "square", bars=(lo, hi))
    return fig


__all__ = ["add_mc_points", "equivalence_figure", "psi_radial_density_figure", "variance_sweep_figure"]
