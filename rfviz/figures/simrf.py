"""Figures of the coupling page (Simplex Random Features): p(w_ij) with sampled histograms (Fig. 5), the
MSE ratio against iid versus v (Fig. 6) and versus d, and the conformity ρ(v). Pure functions returning plotly
Figures of closed forms (rfviz.maths.simrf); sampled values come from rfviz.compute.simrf."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..maths.simrf import (
    conformity_iterations,
    density_wij,
    f_penalty,
    log_conformity,
    mse_ratio_vs_iid,
)
from ..numerics import LOG10
from ..registries import COUPLING_TITLES, COUPLINGS_WITH_DENSITY, ORTHOGONAL, SIMPLEX, SIMPLEX_PLUS
from .common import color, figure_window, finite_or_none, horizontal_line, layout, lines, log_axes, overlay_points

LABELS = COUPLING_TITLES
FEATURE_LABELS = {"positive": "positive RF", "positive_antithetic": "antithetic positive RF", "trig": "trig RF"}


def default_w_grid(d: int, points: int = 301) -> np.ndarray:
    """w from 0 to well past the iid tail (iid w_ij ~ √2·χ_d has mean ≈ √(2d))."""
    return np.linspace(0.0, math.sqrt(2.0 * d) + 6.0 + 2.0 * math.sqrt(d) ** 0.5, points)


def density_figure(d: int, couplings: Sequence[str] = COUPLINGS_WITH_DENSITY, *, w: np.ndarray | None = None,
                   drawn: Mapping[str, np.ndarray] | None = None, v: float | None = None) -> go.Figure:
    """p(w_ij) of each coupling at dimension d (SimRF Fig. 5; Lemmas 4.1, 4.2), optionally with a histogram of the
    ``drawn`` values of ‖ω_1 + ω_2‖ per coupling (rfviz.compute.simrf.pair_sum_samples) and, with ``v``, the penalty
    f(w, v) = 0F1(; d/2; v²w²/4) on a second axis (its average against p(w) is the conformity ρ(v))."""
    w = default_w_grid(d) if w is None else np.asarray(w, dtype=float)
    fig = make_subplots(specs=[[{"secondary_y": v is not None}]])
    for i, coupling in enumerate(couplings):
        fig.add_trace(go.Scatter(x=w, y=finite_or_none(density_wij(w, d, coupling)), mode="lines",
                                 name=LABELS.get(coupling, coupling), line={"color": color(i), "width": 2.5}),
                      secondary_y=False)
        if drawn and coupling in drawn:
            fig.add_trace(go.Histogram(x=drawn[coupling], histnorm="probability density",
                                       name=f"{LABELS.get(coupling)} (sampled, n={len(drawn[coupling])})",
                                       marker={"color": color(i)}, opacity=0.35,
                                       xbins={"start": float(w[0]), "end": float(w[-1]),
                                              "size": float(w[-1] - w[0]) / 60}),
                          secondary_y=False)
    if v is not None:
        fig.add_trace(go.Scatter(x=w, y=finite_or_none(f_penalty(w, v, d)), mode="lines", name=f"f(w, v={v:g})",
                                 line={"color": "black", "dash": "dot"}), secondary_y=True)
        log_axes(fig.update_yaxes(title_text="f(w, v) (log scale)", type="log", exponentformat="power", showgrid=False,
                         secondary_y=True))
    fig.update_xaxes(title_text="w<sub>ij</sub> = |ω<sub>i</sub> + ω<sub>j</sub>|")
    fig.update_yaxes(title_text="density p(w<sub>ij</sub>)", secondary_y=False)
    fig.update_layout(title=f"Law of w<sub>ij</sub> at d = {d}", barmode="overlay", height=460, **layout())
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0})
    return fig


def ratio_vs_v_figure(d: int, m: int | None = None, *, features: str = "positive",
                      couplings: Sequence[str] = (ORTHOGONAL, SIMPLEX), v: np.ndarray | None = None) -> go.Figure:
    """MSE_coupling/MSE_iid against v = |x+y| (z = |x−y| for trig) on a log axis (SimRF Fig. 6: d = m = 64).
    The ratio depends only on v, d, m and the coupling, not on the kernel (softmax or Gaussian)."""
    m = d if m is None else m
    v = np.geomspace(1e-3, 1e2, 241) if v is None else np.asarray(v, dtype=float)
    ys = {LABELS.get(c, c): mse_ratio_vs_iid(features, v * v, d, m, c) for c in couplings}
    arg = "z = |x − y|" if features == "trig" else "v = |x + y|"
    fig = lines(v, ys, xlabel=arg, ylabel="MSE ratio vs iid, MSE/MSE<sub>iid</sub>",
                title=f"{FEATURE_LABELS.get(features, features)}: MSE ratio vs iid (d = {d}, m = {m})")
    log_axes(fig.update_xaxes(type="log"))
    return horizontal_line(fig, 1.0, {"color": "gray", "dash": "dot"})


def ratio_vs_d_figure(v: float, ds: Sequence[int] = (2, 3, 4, 6, 8, 16, 32, 64, 128, 256, 512, 1024), *,
                      features: str = "positive", couplings: Sequence[str] = (ORTHOGONAL, SIMPLEX),
                      blocks: int = 1) -> go.Figure:
    """MSE_coupling/MSE_iid against d at fixed v (z for trig) with m = blocks·d ([SimRF] Fig. 4, "MSE vs d")."""
    dd = np.asarray(ds, dtype=int)
    ys = {LABELS.get(c, c): np.array([mse_ratio_vs_iid(features, v * v, int(k), blocks * int(k), c) for k in dd])
          for c in couplings}
    arg = "z" if features == "trig" else "v"
    fig = lines(dd.astype(float), ys, xlabel="d", ylabel="MSE ratio vs iid, MSE/MSE<sub>iid</sub>",
                title=f"{FEATURE_LABELS.get(features, features)}: MSE ratio vs d ({arg} = {v:g}, m = {blocks}·d)")
    log_axes(fig.update_xaxes(type="log"))
    return fig


def conformity_figure(d: int, couplings: Sequence[str] = COUPLINGS_WITH_DENSITY, *,
                      v: np.ndarray | None = None, relative: bool = True) -> go.Figure:
    """RF-conformity ρ(v) (SimRF Def. 3.1, Thm 4.3) per coupling; ``relative`` plots ρ(v)e^{−v²} (iid = 1),
    which stays readable for large v, otherwise log10 ρ(v)."""
    v = np.linspace(0.0, 3.0, 151) if v is None else np.asarray(v, dtype=float)
    if relative:
        ys = {LABELS.get(c, c): np.exp(log_conformity(v, d, c) - v * v) for c in couplings}
        label = "ρ(v)·e<sup>−v²</sup> (iid = 1)"
    else:
        ys = {LABELS.get(c, c): log_conformity(v, d, c) / LOG10 for c in couplings}
        label = "log₁₀ ρ(v)"
    return lines(v, ys, xlabel="v = |x + y|", ylabel=label, title=f"RF-conformity at d = {d}")


def simplex_plus_iterations_figure(norms: np.ndarray, v: float = 1.0, passes: int = 15, iid_draws: int = 100,
                                   seed: int = 0) -> go.Figure:
    """SimRF Fig. 4: conformity against SimRF+ passes (Eq. 17) for one fixed draw of the d norms, with IIDRF
    (mean ± 1 sd over random directions), ORF and SimRF as horizontal references. The caller draws the norms
    (e.g. χ_d samples) so that the page can offer a "resample" button."""
    res = conformity_iterations(norms, v, passes, iid_draws, seed)
    it = np.arange(passes + 1)
    fig = go.Figure()
    mean, sd = res["iid_mean"], res["iid_sd"]
    fig.add_trace(go.Scatter(x=np.r_[it, it[::-1]], y=np.r_[np.full(it.size, mean + sd), np.full(it.size, mean - sd)],
                             fill="toself", fillcolor="rgba(31,119,180,0.15)", line={"width": 0}, hoverinfo="skip",
                             name="iid ± 1 sd"))
    for i, (name, value) in enumerate([("iid (mean)", mean), (LABELS[ORTHOGONAL], res[ORTHOGONAL]),
                                       (LABELS[SIMPLEX], res[SIMPLEX])]):
        fig.add_trace(go.Scatter(x=it, y=np.full(it.size, value), mode="lines", name=name,
                                 line={"color": color(i), "dash": "dash" if i else "dot"}))
    fig.add_trace(go.Scatter(x=it, y=res[SIMPLEX_PLUS], mode="lines+markers", name=LABELS[SIMPLEX_PLUS],
                             line={"color": color(3), "width": 2.5}))
    fig.update_xaxes(title_text="SimRF+ passes (Eq. 17)")
    fig.update_yaxes(title_text=f"RF-conformity ρ at v = {v:g}")
    fig.update_layout(title=f"Conformity of one norm draw (d = {np.asarray(norms).size})", height=400, **layout())
    return fig


def add_sampled_ratios(fig: go.Figure, sampled: dict[str, tuple[np.ndarray, ...]]) -> go.Figure:
    """A copy of ``ratio_vs_v_figure``'s figure with the sampled ratios of ``sampled_ratio_columns`` as markers
    (±2 SE bars): filled where the sampled MSE is reliable, hollow where it is heavy-tailed (MCResult.reliable)."""
    out = go.Figure(fig)
    symbols = ("circle", "square", "diamond")
    curve = {t.name: t.line.color for t in out.data if t.type == "scatter" and t.mode == "lines"}
    window = figure_window(out)
    for i, (name, pt) in enumerate(sampled.items()):
        label = LABELS.get(name, name)
        c = curve.get(label, color(len(curve) + i))  # the colour of the curve it samples
        overlay_points(out, label, tuple(pt), c, window, symbol=symbols[i % len(symbols)])
    return out


__all__ = ["add_sampled_ratios", "conformity_figure", "default_w_grid", "density_figure", "ratio_vs_d_figure",
           "ratio_vs_v_figure", "simplex_plus_iterations_figure"]
