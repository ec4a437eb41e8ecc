"""Figures of the hybrid-estimator page (HRF paper, Choromanski et al. 2022): λ-coefficients and their moments,
the hybrid MSE against its two base estimators, where each base estimator wins, and the max-relative-error
with the corrected Theorem 3.5 bound. The columns come from rfviz.compute.hrf; these functions only draw them.
All inputs are same-length pairs on the sphere S(r) (angle θ), as in the paper."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .common import HeatmapStyle, columns_to_csv, heatmaps, lines

Columns = dict[str, np.ndarray]


def lambda_figure(c: Columns, kind: str) -> go.Figure:
    """λ(θ) with a ±1 sd band of λ̂ (clipped to [0, 1], where λ̂ lives), E[λ̂²], Var λ̂, and the oracle λ* (dashed)."""
    theta = c["theta"]
    sd = np.sqrt(np.maximum(c["var_lambda"], 0.0))
    fig = lines(theta, {"λ(θ) = E λ̂": c["lambda"], "E[λ̂²]": c["E_lambda2"], "Var λ̂": c["var_lambda"],
                        "oracle λ* (best deterministic λ)": c["oracle_lambda"]},
                xlabel="θ", ylabel="value", theta_axis=True,
                title=f"{kind} λ-coefficient and the moments of its estimator λ̂",
                dash={"oracle λ* (best deterministic λ)": "dash"})
    fig.add_trace(go.Scatter(x=np.concatenate([theta, theta[::-1]]),
                             y=np.clip(np.concatenate([c["lambda"] + sd, (c["lambda"] - sd)[::-1]]), 0.0, 1.0),
                             fill="toself", fillcolor="rgba(31,119,180,0.15)", line={"width": 0},
                             name="λ ± 1 sd of λ̂", hoverinfo="skip"))
    return fig


def mse_figure(c: Columns, kind: str, r: float, sampled: Columns | None = None) -> go.Figure:
    """The hybrid's log₁₀ MSE against its two base estimators along θ at fixed r; with ``sampled`` (from
    ``sampled_mse_columns``) the Monte-Carlo points with ±2 SE bars."""
    names = {"trig": "trig", "pos": "positive (++)", "hybrid": f"{kind} hybrid"}
    ys = {names["trig"]: c["log10_mse_trig"], names["pos"]: c["log10_mse_pos"], names["hybrid"]: c["log10_mse_hybrid"],
          ORACLE: c["log10_mse_oracle"]}
    dash = {ORACLE: "dot"}
    if "log10_mse_hybrid_eq47_printed" in c:
        ys["eq. 47 as printed (wrong)"] = c["log10_mse_hybrid_eq47_printed"]
        dash["eq. 47 as printed (wrong)"] = "dash"
    points = None if sampled is None else {
        names[k]: (sampled["theta"], sampled[f"log10_mse_{k}"], sampled[f"log10_se_{k}"],
                   None if f"reliable_{k}" not in sampled else np.asarray(sampled[f"reliable_{k}"]) > 0.5)
        for k in names if f"log10_mse_{k}" in sampled}
    fig = lines(c["theta"], ys, xlabel="θ", ylabel="log₁₀ MSE", theta_axis=True, dash=dash, points=points,
                title=f"MSE on the sphere of radius r = {r:g}")
    return _on_top(fig, ORACLE)


ORACLE = "oracle λ* (lower envelope)"
"""The oracle curve: it runs along the lower of the base curves, so it is drawn over them (thicker, dotted)."""


def _on_top(fig: go.Figure, name: str) -> go.Figure:
    """Move the curve ``name`` above the other curves (still below the sampled points) and thicken it."""
    curves = [t for t in fig.data if t.mode == "lines"]
    top = [t for t in curves if t.name == name]
    for t in top:
        t.line.width = 4
    fig.data = [*(t for t in curves if t.name != name), *top, *(t for t in fig.data if t.mode != "lines")]
    return fig


def winner_figure(r: np.ndarray, theta: np.ndarray, panels: dict[str, np.ndarray]) -> go.Figure:
    """Diverging heatmaps: blue where the first estimator is better (ratio < 1), red where worse; a symlog colour
    scale keeps the hybrid's ratios (within ±1 over most of the plane) visible beside trig vs ++ (±30 at large r)."""
    return heatmaps(theta, r, panels, xlabel="θ", ylabel="r", zlabel="log₁₀ ratio",
                    style=HeatmapStyle(diverging=True, symlog=True),
                    title="Where each estimator is better (blue: numerator smaller)")


def max_error_figure(c: Columns, n: int) -> go.Figure:
    """Normalised max-relative-error against r with both bounds; red markers where the printed bound fails."""
    fig = lines(c["r"], {"max_θ ε (angular hybrid)": c["max_eps_normalised"],
                         "Thm 3.5 bound, corrected": c["bound_corrected_normalised"],
                         "Thm 3.5 bound, as printed (eq. 27)": c["bound_printed_normalised"]},
                xlabel="r", ylabel="ε / [W(r)/√(2m)]", dash={"Thm 3.5 bound, as printed (eq. 27)": "dash"},
                title=f"Max-relative-error on S(r), n = {n} (1 = worst case of trig and ++)")
    bad = c["max_eps_normalised"] > c["bound_printed_normalised"]
    if np.any(bad):
        fig.add_trace(go.Scatter(x=c["r"][bad], y=c["max_eps_normalised"][bad], mode="markers",
                                 name="printed bound violated", marker={"color": "red", "size": 8, "symbol": "x"}))
    return fig


def grid_csv(r: np.ndarray, theta: np.ndarray, panels: dict[str, np.ndarray]) -> str:
    """Long-format CSV (r, theta, one column per panel) of the heatmaps."""
    rr, tt = np.meshgrid(r, theta, indexing="ij")
    plain = {k: k.replace("<sub>", "_").replace("</sub>", "") for k in panels}  # column names without HTML
    return columns_to_csv({"r": rr.ravel(), "theta": tt.ravel(), **{plain[k]: v.ravel() for k, v in panels.items()}})


__all__ = ["columns_to_csv", "grid_csv", "lambda_figure", "max_error_figure", "mse_figure", "winner_figure"]


def relative_error_figure(c: Columns, r: float, m: int, n: int, hybrid: bool = True) -> go.Figure:
    """log₁₀ relative error √MSE/SM of trig and ++ along θ (from ``relative_error_columns``) and, with ``hybrid``,
    the angular hybrid's; the 100 % line marks where the error is as large as the kernel."""
    ys = {"trig": c["log10_rel_trig"], "positive (++)": c["log10_rel_pos"]}
    if hybrid:
        ys[f"angular hybrid (n = {n})"] = c["log10_rel_hybrid"]
    fig = lines(c["theta"], ys, xlabel="θ", ylabel="log₁₀ relative error √MSE/K", theta_axis=True,
                title=f"relative error on the sphere of radius r = {r:g} (m = {m})")
    # the 100 % line is a legend entry, not a label on the chart: the curves leave no free place for one at every
    # r and width (the label's end sat on the hybrid's vertical rise at θ = π)
    fig.add_trace(go.Scatter(x=[c["theta"][0], c["theta"][-1]], y=[0.0, 0.0], mode="lines", name="error = K (100 %)",
                             line={"color": "gray", "dash": "dot", "width": 1.5}, hoverinfo="skip"))
    top = max(float(np.nanmax(np.where(np.isfinite(v), v, np.nan))) for v in ys.values())
    # the failures are the story: a window from 0.3 % up, not down to the exact ends' −∞ (hover keeps the values)
    return fig.update_yaxes(range=[min(-2.5, top - 1.0), top + 0.3])
