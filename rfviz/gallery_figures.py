"""Gallery entries: the key figures of the five seed papers, rebuilt from rfviz's own closed forms, samplers and
figure builders (see rfviz.gallery for the entry format).

Papers: HRF = Hybrid Random Features (Choromanski et al., ICLR 2022); CRT = Chefs' Random Tables (Likhosherstov
et al. 2022); SimRF = Simplex Random Features (Reid et al., ICML 2023); DP = Improved Random Features for Dot
Product Kernels (Wacker et al.); OS = optimal importance sampling Ψ for random features. The catalog numbers are
those printed in /work/shared/reference/<paper>.md (the section is named in each entry's ``source``).

The few helpers defined here are presentation or small pure functions the packages do not have (a mode, a
crossing, a mean radius, quantiles of sampled estimates); every formula they evaluate lives in the packages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from scipy import integrate, optimize

from .estimators import create
from .figures import coupling as fc
from .figures import dot_product as fd
from .figures import optimal_sampling as fo
from .figures.common import LAYOUT, THETA_TICKS, color, lines, traces_csv
from .gallery import Columns, GalleryFigure, gallery_figure
from .geometry import canonical_pair
from .maths import crt as gerf
from .maths import dp
from .maths import hrf as hy
from .maths.optimal import InputLaw, OptimalSampling
from .maths.simrf import density_wij, mse_ratio_vs_iid
from .numerics import LOG10

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
    out.update_layout(title=title, height=height, **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 90}})
    return out


def catalog_rows(prefix: str, labels: Sequence[Any], printed: Sequence[str]) -> dict[str, str]:
    """{f"{prefix}{label}": printed value} for a printed table row."""
    if len(labels) != len(printed):
        raise ValueError(f"{prefix}: {len(labels)} labels but {len(printed)} printed values")
    return {f"{prefix}{lab}": txt for lab, txt in zip(labels, printed, strict=True)}


# ============================================================================================ HRF Figure 1
HRF1_M, HRF1_N, HRF1_R = 10, 1, 5.0
HRF1_THETA = np.linspace(0.0, PI, 61)
HRF1_R_AXIS = np.linspace(-HRF1_R, HRF1_R, 81)
HRF1_CURVES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "trig": lambda t, r: hy.log_mse_trig_tr(t, r, HRF1_M),
    "++ (positive, antithetic)": lambda t, r: hy.log_mse_pos_tr(t, r, HRF1_M),
    "angular hybrid": lambda t, r: hy.log_mse_angular_hybrid_tr(t, r, HRF1_M, HRF1_N),
}
HRF1_KEYS = {"trig": "trig", "++ (positive, antithetic)": "pos", "angular hybrid": "anghyb"}
HRF1_FLOOR = -90.0
"""Exact points (log10 MSE = −∞: r = 0, trig and the hybrid at θ = 0, ++ and the hybrid at θ = π) are drawn at this
floor, so the plunge of the MSE to 0 at the ends stays visible."""


def build_hrf_fig1() -> tuple[go.Figure, Columns]:
    """Three log10-MSE surfaces over θ × r (r symmetrised as in the paper, plotted at |r|), grey slice at r = 5."""
    tt, rr = np.meshgrid(HRF1_THETA, HRF1_R_AXIS)
    fig = make_subplots(rows=1, cols=3, specs=[[{"type": "scene"}] * 3], subplot_titles=list(HRF1_CURVES),
                        horizontal_spacing=0.01)
    cols: Columns = {"theta": tt.ravel(), "r": rr.ravel()}
    for i, (label, fn) in enumerate(HRF1_CURVES.items()):
        z = fn(tt, np.abs(rr)) / LOG10
        cols[f"log10_mse_{HRF1_KEYS[label]}"] = z.ravel()
        fig.add_trace(go.Surface(x=HRF1_THETA, y=HRF1_R_AXIS, z=np.maximum(z, HRF1_FLOOR), name=label,
                                 colorscale="Viridis", cmin=HRF1_FLOOR, cmax=65.0, showscale=i == 2,
                                 colorbar={"title": {"text": "log10 MSE"}},
                                 hovertemplate="θ=%{x:.3g}<br>r=%{y:.3g}<br>log10 MSE=%{z:.4g}<extra>" + label
                                               + "</extra>"), row=1, col=i + 1)
        sl = fn(HRF1_THETA, np.full_like(HRF1_THETA, HRF1_R)) / LOG10
        fig.add_trace(go.Scatter3d(x=HRF1_THETA, y=np.full_like(HRF1_THETA, HRF1_R), z=np.maximum(sl, HRF1_FLOOR),
                                   mode="lines", line={"color": "grey", "width": 7}, name=f"{label}: slice r = 5",
                                   showlegend=False), row=1, col=i + 1)
    scene = {"xaxis": {"title": {"text": "θ"}, **THETA_TICKS}, "yaxis": {"title": {"text": "r"}},
             "zaxis": {"title": {"text": "log10 MSE"}, "range": [HRF1_FLOOR, 70]},
             "camera": {"eye": {"x": 1.7, "y": -1.5, "z": 0.8}}}
    fig.update_layout(scene=scene, scene2=scene, scene3=scene, height=520,
                      title=f"HRF Fig. 1: log10 MSE of the softmax-kernel estimators, m = {HRF1_M}, n = {HRF1_N}, "
                            f"|x| = |y| = r<br>(grey: the slice r = {HRF1_R:g}; exact points, log10 MSE = −∞, drawn "
                            f"at {HRF1_FLOOR:g})", **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 110}})
    return fig, cols


HRF1_TABLE = {  # reference §5 Figure 1: θ → (r=1 trig, pos, anghyb, r=5 trig, pos, anghyb)
    "0": ("-inf", "1.289", "-inf", "-inf", "63.843", "-inf"),
    "pi/4": ("-1.139", "0.767", "0.181", "20.414", "51.123", "50.521"),
    "pi/2": ("-0.559", "-0.559", "-0.559", "20.414", "20.414", "20.414"),
    "3pi/4": ("-0.462", "-2.367", "-1.048", "20.414", "-10.296", "19.812"),
    "pi": ("-0.448", "-65.818", "-65.818", "20.414", "-83.868", "-83.868"),
}
THETA_LABELS = {"0": 0.0, "pi/8": PI / 8, "pi/4": PI / 4, "3pi/8": 3 * PI / 8, "pi/2": PI / 2, "5pi/8": 5 * PI / 8,
                "3pi/4": 3 * PI / 4, "7pi/8": 7 * PI / 8, "pi": PI}


HRF1_PI_WHY = ("at θ = π, y = −x, so ++ (and the hybrid, λ(π) = 1) is exact: MSE = 0. The printed value is "
               "floating-point round-off of a pair built as y = r(cos π, sin π) with sin π ≈ 1.2e−16, which "
               "leaves |x + y|² ≈ 1.5e−32·r² instead of 0")


def _hrf1_catalog() -> dict[str, str]:
    out = {}
    for th, row in HRF1_TABLE.items():
        for (r, est), txt in zip([(r, e) for r in (1, 5) for e in ("trig", "pos", "anghyb")], row, strict=True):
            out[f"r{r}_{est}_theta_{th}"] = txt
    return out


def _hrf1_keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    out = {}
    for key in _hrf1_catalog():
        rpart, est, _, th = key.split("_", 3)
        theta, r = THETA_LABELS[th], float(rpart[1:])
        i = np.argmin(np.abs(c["theta"] - theta) + np.abs(c["r"] - r))
        out[key] = float(c[f"log10_mse_{est}"][i])
    return out


gallery_figure(GalleryFigure(
    name="hrf-fig1-mse-surfaces",
    title="HRF Fig. 1: MSE surfaces of trig, ++ and the angular hybrid",
    paper="Hybrid Random Features (Choromanski et al., ICLR 2022), Fig. 1",
    caption="log10 MSE of the softmax-kernel estimators for same-length inputs |x| = |y| = r at angle θ, m = 10 "
            "random features per base estimator and n = 1 λ-feature. Trig is exact at θ = 0 and nearly flat in θ "
            "once 4r² sin²(θ/2) ≫ 1; ++ (FAVOR+) is exact only as θ → π; the grey r = 5 slice shows that only the "
            "angular hybrid goes to 0 at both ends (θ → 0 and θ → π). In absolute MSE the hybrid is not uniformly "
            "better (r = 1, θ = π/4: worse than trig): its gain is in relative error and at the two ends. Values "
            "span 10^−84 … 10^64 at r = 5, hence the log scale.",
    errata="The hybrid surface uses the corrected Theorem D.1, eq. 47: the second coefficient is (1 − p)(1 − p + "
           "p/n), not the printed one (reference §7 item 1, Monte-Carlo confirmed). The reference table's θ = π "
           "values for ++ and the hybrid (−65.818 at r = 1, −83.868 at r = 5) are round-off: y = −x there, the "
           "estimates are exact and log10 MSE = −∞. The paper's 'inputs of length r = 5' is ambiguous (axis range "
           "or slice); rfviz draws r ∈ [−5, 5] (symmetrised, |r|) with the slice at r = 5. Shared and independent "
           "projections give the same MSE at equal lengths.",
    build=build_hrf_fig1,
    explorer_page="mse_explorer",
    explorer_params={"kernel": "softmax", "est": "trig,positive_antithetic,hybrid_angular", "quantity": "log10_mse",
                     "d": "16", "r_max": "5", "view": "3-D surface", "slice": "r", "slice_r": "5",
                     "trig.m": "10", "positive_antithetic.m": "10", "hybrid_angular.m": "10",
                     "hybrid_angular.n": "1"},
    key_numbers=_hrf1_keys,
    catalog=_hrf1_catalog(),
    corrections={f"r{r}_{est}_theta_pi": ("-inf", HRF1_PI_WHY) for r in (1, 5) for est in ("pos", "anghyb")},
    params={"kernel": "softmax", "m": HRF1_M, "n": HRF1_N, "r": "−5 … 5 (|r|)", "θ": "0 … π", "z": "log10 MSE"},
    source="hybrid_random_features.md §5 Figure 1 (table of reference slices)",
))


# ============================================================================================ HRF Figure 2
HRF2_D, HRF2_M, HRF2_HYB = 64, 128, (16, 8)
HRF2_RADII = (1.0, 1.5)
HRF2_TRIALS = 2000
HRF2_SEED = 20220202
HRF2_THETA = np.linspace(0.0, PI, 17)
HRF2_ESTIMATORS = {  # label → (registry name, params, analytic log ε_{θ,r})
    "trig": ("trig", {"m": HRF2_M}, lambda t, r: hy.log_eps_trig_tr(t, r, HRF2_M)),
    "FAVOR+ (++)": ("positive_antithetic", {"m": HRF2_M}, lambda t, r: hy.log_eps_pos_tr(t, r, HRF2_M)),
    "angular hybrid (16, 8)": ("hybrid_angular", {"m": HRF2_HYB[0], "n": HRF2_HYB[1]},
                               lambda t, r: hy.log_eps_angular_hybrid_tr(t, r, *HRF2_HYB)),
}
HRF2_KEYS = {"trig": "trig", "FAVOR+ (++)": "pos", "angular hybrid (16, 8)": "anghyb"}


def sampled_estimates(name: str, params: dict[str, Any], r: float, theta: np.ndarray, d: int, trials: int,
                      seed: int) -> np.ndarray:
    """``trials`` independent estimates K̂ (shape (trials, len(θ))) at the same-length pairs (r, θ), drawn with the
    estimator's own ``sample``/``estimate`` (reduced 2-D coordinates; the estimators are isotropic)."""
    est = create(name, **params)
    x, y = canonical_pair(r, theta, 2)
    gen = torch.Generator().manual_seed(seed)
    samples = est.sample(trials, d, generator=gen, device=torch.device("cpu"), dtype=torch.float64, dim=2)
    with torch.no_grad():
        return est.estimate(samples, torch.as_tensor(x), torch.as_tensor(y)).numpy()


def quantile_band_columns(r: float, trials: int = HRF2_TRIALS, seed: int = HRF2_SEED) -> Columns:
    """True SM, 5th/95th percentiles of the sampled estimates, the sampled relative MSE (with its standard error)
    and the analytic relative error ε = √MSE/SM (HRF Def. 3.3, Lemma 2.2, corrected Thm D.1) on the θ grid."""
    theta = HRF2_THETA
    sm = np.exp(r * r * np.cos(theta))
    cols: Columns = {"r": np.full(theta.shape, r), "theta": theta, "softmax_kernel": sm}
    for i, (label, (name, params, log_eps)) in enumerate(HRF2_ESTIMATORS.items()):
        k = HRF2_KEYS[label]
        est = sampled_estimates(name, params, r, theta, HRF2_D, trials, seed + 7919 * i)
        sq = (est / sm - 1.0) ** 2
        cols[f"{k}_q05"] = np.quantile(est, 0.05, axis=0)
        cols[f"{k}_q95"] = np.quantile(est, 0.95, axis=0)
        cols[f"{k}_rel_mse_sampled"] = sq.mean(0)
        cols[f"{k}_rel_mse_se"] = sq.std(0, ddof=1) / math.sqrt(trials)
        cols[f"{k}_eps_analytic"] = np.exp(log_eps(theta, r))
    return cols


def build_hrf_fig2() -> tuple[go.Figure, Columns]:
    fig = make_subplots(rows=1, cols=len(HRF2_RADII), specs=[[{"secondary_y": True}] * len(HRF2_RADII)],
                        subplot_titles=[f"r = {r:g}" for r in HRF2_RADII], horizontal_spacing=0.16)
    parts = [quantile_band_columns(r) for r in HRF2_RADII]
    fine = np.linspace(0.0, PI, 181)
    for col, (r, c) in enumerate(zip(HRF2_RADII, parts, strict=True), start=1):
        first = col == 1
        fig.add_trace(go.Scatter(x=fine, y=np.exp(r * r * np.cos(fine)), name="true SM(x, y)", showlegend=first,
                                 legendgroup="sm", line={"color": "black", "width": 2.5}), row=1, col=col)
        for i, label in enumerate(HRF2_ESTIMATORS):
            k, cl = HRF2_KEYS[label], color(i)
            band_x = np.concatenate([c["theta"], c["theta"][::-1]])
            band_y = np.concatenate([c[f"{k}_q95"], c[f"{k}_q05"][::-1]])
            fig.add_trace(go.Scatter(x=band_x, y=band_y, fill="toself", opacity=0.25, line={"width": 0},
                                     fillcolor=cl, name=f"{label}: 5th–95th percentile", legendgroup=k,
                                     showlegend=first, hoverinfo="skip"), row=1, col=col)
            eps = np.exp(HRF2_ESTIMATORS[label][2](fine, r))
            fig.add_trace(go.Scatter(x=fine, y=eps, name=f"{label}: ε analytic", legendgroup=k, showlegend=first,
                                     line={"color": cl, "dash": "dot"}), row=1, col=col, secondary_y=True)
            eps_mc = np.sqrt(c[f"{k}_rel_mse_sampled"])
            with np.errstate(divide="ignore", invalid="ignore"):  # delta method: SE(√v) = SE(v)/(2√v)
                eps_se = np.where(eps_mc > 0, c[f"{k}_rel_mse_se"] / (2 * eps_mc), 0.0)
            fig.add_trace(go.Scatter(x=c["theta"], y=eps_mc, mode="markers", name=f"{label}: ε sampled ±2 SE",
                                     legendgroup=k, showlegend=first,
                                     error_y={"type": "data", "array": 2 * eps_se, "thickness": 1, "width": 3},
                                     marker={"color": cl, "symbol": "circle-open", "size": 7}),
                          row=1, col=col, secondary_y=True)
        fig.add_hline(y=0.0, line={"color": "red", "dash": "dot"}, row=1, col=col)
        fig.update_xaxes(title_text="θ", row=1, col=col, **THETA_TICKS)
        fig.update_yaxes(title_text="SM and estimates", row=1, col=col, secondary_y=False)
        top = 1.5 * max(float(np.max(c[f"{HRF2_KEYS[lab]}_eps_analytic"])) for lab in HRF2_ESTIMATORS)
        fig.update_yaxes(title_text="relative error ε", row=1, col=col, secondary_y=True, range=[0.0, top])
    fig.update_layout(title=f"HRF Fig. 2: pointwise estimation, d = {HRF2_D}, {HRF2_TRIALS} estimates per point<br>"
                            f"(trig and FAVOR+ m = {HRF2_M}; hybrid (m, n) = {HRF2_HYB})", height=560,
                      legend={"orientation": "h", "y": -0.18, "font": {"size": 11}},
                      **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 100}})
    cols = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return fig, cols


HRF2_EPS = {  # reference §5 Figure 2 analytic expectations, θ = 0, π/8, …, π
    (1.0, "trig"): ("0", ".0095", ".0371", ".0822", ".1469", ".2334", ".3332", ".4188", ".4534"),
    (1.0, "anghyb"): ("0", ".204", ".288", ".311", ".312", ".311", ".288", ".204", "0"),
    (1.5, "anghyb"): ("0", "2.295", "2.420", "1.688", "1.244", "1.688", "2.420", "2.295", "0"),
}


def _hrf2_catalog() -> dict[str, str]:
    out = {}
    for (r, est), row in HRF2_EPS.items():
        out.update(catalog_rows(f"eps_r{r:g}_{est}_theta_", list(THETA_LABELS), row))
    # "pos: the mirror of trig" at r = 1; "trig max 5.625 at π; pos max 5.625 at 0" at r = 1.5
    out.update(catalog_rows("eps_r1_pos_theta_", list(THETA_LABELS), HRF2_EPS[(1.0, "trig")][::-1]))
    out.update({"eps_r1.5_trig_theta_pi": "5.625", "eps_r1.5_pos_theta_0": "5.625",
                "max_eps_r1_anghyb": "0.31", "max_eps_r1_trig": "0.45", "max_eps_r1.5_anghyb": "2.42",
                "max_eps_r1.5_trig": "5.63"})
    return out


def _hrf2_keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    out = {}
    for key in _hrf2_catalog():
        parts = key.split("_")
        if parts[0] == "max":  # max_eps_r{r}_{est}
            r, est = float(parts[2][1:]), parts[3]
        else:  # eps_r{r}_{est}_theta_{θ}
            r, est = float(parts[1][1:]), parts[2]
        rows = c["r"] == r
        eps = c[f"{est}_eps_analytic"][rows]
        if parts[0] == "max":  # the catalog's maxima are over its printed grid θ = kπ/8
            on_grid = np.isclose(np.mod(c["theta"][rows] / (PI / 8) + 0.5, 1.0), 0.5)
            out[key] = float(np.max(eps[on_grid]))
        else:
            out[key] = float(eps[nearest(c["theta"][rows], THETA_LABELS[parts[4]])])
    return out


gallery_figure(GalleryFigure(
    name="hrf-fig2-quantile-bands",
    title="HRF Fig. 2: pointwise estimation, 5th/95th percentile bands",
    paper="Hybrid Random Features (Choromanski et al., ICLR 2022), Fig. 2 (and Fig. 5)",
    caption="The true softmax kernel (black) and the 5th–95th percentile band of sampled estimates (left axis) for "
            "trig and FAVOR+ with m = 128 and the FLOP-matched angular hybrid (m, n) = (16, 8); the relative error "
            "ε = √MSE/SM on the right axis, analytic (dotted) and sampled (circles). Trig's band widens towards "
            "θ = π, FAVOR+'s towards θ = 0, the hybrid's vanishes at both ends: its maximal relative error is 0.31 "
            "against 0.45 at r = 1 and 2.42 against 5.63 at r = 1.5. Monte Carlo: 2000 estimates per point (the "
            "paper uses 10 000), sampled by rfviz's own estimators, so the gallery builds in about a second. Where "
            "an estimator's squared error is heavy-tailed (FAVOR+ at small θ, where ‖x + y‖ is large, and the "
            "hybrid at r = 1.5, whose λ̂-weighted ++ part inherits that tail) a few extreme draws dominate: the "
            "sampled ε is then erratic (a wide ±2 SE bar) or, more often, below the analytic curve (the rare "
            "large errors were not drawn); where the tails are light (trig, and everything near θ = π) the two "
            "agree within the bars.",
    errata="The paper does not state the hybrid's (m, n) nor the θ grid; (16, 8) is the reference's inference from "
           "the paper's other FLOP-matched experiments (reference §5 Figure 2). The maxima quoted (0.31 vs 0.45, "
           "2.42 vs 5.63) are over the grid θ = kπ/8: the continuous maximum of the hybrid at r = 1.5 is 2.54 at "
           "θ ≈ 0.61 (still well below 5.63; rfviz.hybrid.max_log_eps_angular_hybrid). The relative error is "
           "√(mean sq. err.)/SM as in Def. 3.3 (the paper's definition is not stated). The hybrid's MSE uses the "
           "corrected eq. 47 (reference §7 item 1). λ̂ is applied as in the paper (λ̂·SM_++ + (1 − λ̂)·SM_trig), "
           "not as in the public notebook, which swaps the two (reference §7 item 13).",
    build=build_hrf_fig2,
    explorer_page="hybrid",
    explorer_params={"lam": "angular", "m": "16", "n": "8", "r": "1"},
    key_numbers=_hrf2_keys,
    catalog=_hrf2_catalog(),
    params={"d": HRF2_D, "r": list(HRF2_RADII), "trig m": HRF2_M, "FAVOR+ m": HRF2_M, "hybrid (m, n)": HRF2_HYB,
            "estimates per point": HRF2_TRIALS, "seed": HRF2_SEED},
    source="hybrid_random_features.md §5 Figure 2 (analytic expectations)",
))


# ============================================================================================ CRT Figure 1
CRT1_DIMS = (1, 16, 64, 256)
CRT1_Z = np.linspace(0.0, 200.0, 401)


def build_crt_fig1() -> tuple[go.Figure, Columns]:
    """μ(Z, d) = log(Var_OPRF/Var_PosRF) (exact, solid; second-moment version, dotted) per d."""
    cols: Columns = {"Z": CRT1_Z}
    ys, dash = {}, {}
    for d in CRT1_DIMS:
        exact, second = gerf.mu_fig1(CRT1_Z, d)
        cols[f"mu_exact_d{d}"], cols[f"mu_second_moment_d{d}"] = exact, second
        ys[f"d = {d}"] = exact
        ys[f"d = {d}, second-moment version"] = second
        dash[f"d = {d}, second-moment version"] = "dot"
    fig = lines(CRT1_Z, ys, xlabel="Z = ‖x + y‖²", ylabel="μ = log(Var_OPRF / Var_PosRF)", dash=dash, height=460,
                title="CRT Fig. 1 (right): OPRF against positive random features")
    for i, tr in enumerate(fig.data):  # one colour per d: exact and second-moment curves share it
        tr.line.color = color(i // 2)
    fig.add_annotation(x=100, y=float(gerf.mu_fig1(100.0, 64)[0]), text="d = 64, Z = 100: μ = −61.22", showarrow=True)
    return fig, cols


CRT1_TABLE = {1: ("-1.052", "-8.948", "-23.40", "-48.01", "-97.63", "-197.26"),
              16: ("-0.166", "-4.403", "-15.31", "-36.32", "-81.73", "-176.73"),
              64: ("-0.047", "-2.029", "-8.795", "-24.14", "-61.22", "-145.28"),
              256: ("-0.012", "-0.680", "-3.612", "-11.76", "-35.18", "-96.54")}
CRT1_ZS = (1, 10, 25, 50, 100, 200)


def _crt1_catalog() -> dict[str, str]:
    out = {}
    for d, row in CRT1_TABLE.items():
        out.update(catalog_rows(f"mu_d{d}_Z", CRT1_ZS, row))
    out["mu_d64_Z100_precise"] = "-61.2212"
    return out


def _crt1_keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    out = {}
    for key in _crt1_catalog():
        d, z = key.split("_")[1:3]
        out[key] = float(c[f"mu_exact_{d}"][nearest(c["Z"], float(z[1:]))])
    return out


gallery_figure(GalleryFigure(
    name="crt-fig1-oprf-vs-positive",
    title="CRT Fig. 1: OPRF vs positive RF, log-variance ratio μ(Z, d)",
    paper="Chefs' Random Tables (Likhosherstov et al. 2022), Fig. 1 (right)",
    caption="μ = log(Var_OPRF/Var_PosRF) against Z = ‖x + y‖², one curve per dimension d. Both relative variances "
            "depend only on Z and d, so the same curve holds for the Gaussian and the softmax kernel. OPRF's gain "
            "grows about linearly in Z and shrinks with d: at d = 64, Z = 100 the variance is e^61.2 times smaller "
            "(the paper's 'μ < −60'). Dotted: the second-moment version log R* − Z, visibly different only for "
            "small d and small Z.",
    errata="The paper gives neither the d values nor the x-range (only Z = 100 on the axis); rfviz draws d ∈ {1, 16, "
           "64, 256}, Z ∈ [0, 200], the exact ratio (caption: 'ratio of the variance'). The orthogonal-features "
           "theorem (Thm 9.1) has typos (C(‖x‖²+‖y‖²), not 2C(…); F's first argument is ω·z) that do not affect "
           "this iid figure (reference §7.1 item 8).",
    build=build_crt_fig1,
    explorer_page="gerf",
    explorer_params={"d": "64", "z_max": "200", "kernel": "gaussian"},
    key_numbers=_crt1_keys,
    catalog=_crt1_catalog(),
    params={"d": list(CRT1_DIMS), "Z": "0 … 200", "μ": "natural log"},
    source="chefs_random_tables.md §5 Figure 1 (table of μ_exact), §4.3",
))


# ============================================================================================ CRT Figure 2
CRT2_SIGMAS = np.round(np.linspace(0.1, 1.0, 10), 10)
CRT2_L, CRT2_REPS = 128, 1
CRT2_REF_L, CRT2_REF_REPS = 512, 2
CRT2_REF_MECHANISMS = ("trig", "gerf", "poisson", "positive", "oprf", "poisson+")
CRT2_PANELS = {"non-positive": ("trig", "gerf", "poisson", "geometric"),
               "positive": ("positive", "oprf", "poisson+", "geometric+")}
CRT2_LABELS = {"trig": "TrigRF", "gerf": "GERF", "poisson": "PoisRF", "geometric": "GeomRF", "positive": "PosRF",
               "oprf": "OPRF", "poisson+": "PoisRF+", "geometric+": "GeomRF+"}


def build_crt_fig2() -> tuple[go.Figure, Columns]:
    """Mean ± std of log Var over all pairs (lines, L = 128, one draw) per regime and panel, with the reference's
    settings (L = 512, two draws) at σ = 1 as diamonds (the key numbers)."""
    regimes = gerf.FIG2_REGIMES
    fig = make_subplots(rows=2, cols=len(regimes), shared_xaxes=True, vertical_spacing=0.08,
                        horizontal_spacing=0.06,
                        subplot_titles=[f"{reg}: {panel}" for panel in CRT2_PANELS for reg in regimes])
    rows: dict[str, list] = {k: [] for k in ("regime", "sigma", "mechanism", "L", "draws", "mean_log_var",
                                             "std_log_var")}

    def record(reg: str, sig: np.ndarray, mech: str, L: int, reps: int, mean: np.ndarray, std: np.ndarray) -> None:
        n = len(sig)
        for k, v in (("regime", [reg] * n), ("sigma", sig), ("mechanism", [mech] * n), ("L", [L] * n),
                     ("draws", [reps] * n), ("mean_log_var", mean), ("std_log_var", std)):
            rows[k].extend(list(v))

    for j, reg in enumerate(regimes, start=1):
        curves = gerf.fig2_log_variances(reg, CRT2_SIGMAS, L=CRT2_L, reps=CRT2_REPS)
        ref = gerf.fig2_log_variances(reg, [1.0], L=CRT2_REF_L, reps=CRT2_REF_REPS, mechanisms=CRT2_REF_MECHANISMS)
        for i, mechs in enumerate(CRT2_PANELS.values(), start=1):
            for k, mech in enumerate(mechs):
                mean, std = curves[mech]
                record(reg, CRT2_SIGMAS, mech, CRT2_L, CRT2_REPS, mean, std)
                show = j == 1
                fig.add_trace(go.Scatter(x=CRT2_SIGMAS, y=mean, mode="lines+markers", name=CRT2_LABELS[mech],
                                         legendgroup=mech, showlegend=show, line={"color": color(4 * (i - 1) + k)},
                                         error_y={"type": "data", "array": std, "thickness": 1, "width": 2},
                                         customdata=std, hovertemplate="σ=%{x:.2f}<br>mean log Var=%{y:.4g}"
                                                                       "<br>std=%{customdata:.3g}"),
                              row=i, col=j)
                if mech in ref:
                    rm, rs = ref[mech]
                    record(reg, np.array([1.0]), mech, CRT2_REF_L, CRT2_REF_REPS, rm, rs)
                    fig.add_trace(go.Scatter(x=[1.0], y=rm, mode="markers", legendgroup=mech, showlegend=False,
                                             name=f"{CRT2_LABELS[mech]} (L = {CRT2_REF_L}, {CRT2_REF_REPS} draws)",
                                             marker={"symbol": "diamond-open", "size": 11,
                                                     "color": color(4 * (i - 1) + k), "line": {"width": 2}}),
                                  row=i, col=j)
        fig.update_xaxes(title_text="σ", row=2, col=j)
    fig.update_yaxes(title_text="log Var (mean ± std over pairs)", col=1)
    fig.update_layout(title="CRT Fig. 2: log-variance of 8 mechanisms, Gaussian kernel, d = 64<br>"
                            f"(lines: L = {CRT2_L}, {CRT2_REPS} draw; diamonds: L = {CRT2_REF_L}, {CRT2_REF_REPS} "
                            "draws)", height=740,
                      **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 100}})
    cols = {k: np.asarray(v, dtype=object if k in ("regime", "mechanism") else float) for k, v in rows.items()}
    return fig, cols


CRT2_TABLE = {  # reference §5 Figure 2, σ = 1 (L = 512, 2 draws): mechanism → (normal, sphere, heterogen)
    "trig": ("-0.69", "-1.00", "-0.69"), "gerf": ("-83.29", "-1.00", "-135.34"),
    "poisson": ("-0.71", "-0.85", "-11.44"), "positive": ("-0.76", "-0.85", "2.25"),
    "oprf": ("-83.98", "-0.98", "-136.03"), "poisson+": ("30.28", "-0.47", "-29.14"),
}
CRT2_GAPS = {("gerf", "trig"): ("82.6", "0.0", "134.6"), ("oprf", "positive"): ("83.2", "0.1", "138.3")}


def _crt2_catalog() -> dict[str, str]:
    out = {}
    for mech, row in CRT2_TABLE.items():
        out.update(catalog_rows(f"mean_log_var_{mech}_sigma1_", ("normal", "sphere", "heterogen"), row))
    for (a, b), row in CRT2_GAPS.items():
        out.update(catalog_rows(f"gap_{a}_vs_{b}_sigma1_", ("normal", "sphere", "heterogen"), row))
    return out


def _crt2_keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    ref = c["L"] == CRT2_REF_L

    def mean(mech: str, reg: str) -> float:
        sel = ref & (c["mechanism"] == mech) & (c["regime"] == reg) & (c["sigma"] == 1.0)
        return float(c["mean_log_var"][sel][0])

    out = {}
    for key in _crt2_catalog():
        reg = key.rsplit("_", 1)[1]
        if key.startswith("gap_"):
            a, b = key[4:].split("_vs_")
            out[key] = mean(b.split("_")[0], reg) - mean(a, reg)
        else:
            out[key] = mean(key[len("mean_log_var_"):].split("_sigma1")[0], reg)
    return out


gallery_figure(GalleryFigure(
    name="crt-fig2-variance-comparison",
    title="CRT Fig. 2: log-variance of all 8 mechanisms (normal, sphere, heterogeneous inputs)",
    paper="Chefs' Random Tables (Likhosherstov et al. 2022), Fig. 2 (§5.1, App. 9.10.1)",
    caption="Mean ± std over all input pairs of the analytic log-variance (Gaussian kernel, d = 64) against the input "
            "scale σ, with each mechanism's parameters fitted from the batch statistics as in the paper. Top: the "
            "non-positive mechanisms (TrigRF, GERF, PoisRF, GeomRF); bottom: the positive ones (PosRF, OPRF, "
            "PoisRF+, GeomRF+). GERF and OPRF win by ≈ e^83 (normal) and ≈ e^135 (heterogeneous) at σ = 1; on the "
            "sphere all mechanisms are close. TrigRF sits at log ½ for σ ≥ 0.3 (K ≈ 0, Var → ½). Lines use a "
            "smaller set L = 128 and one draw (the paper: L = 1024, 5 draws) so the figure builds in seconds; the "
            "diamonds at σ = 1 use the reference's L = 512 and two draws and reproduce its table.",
    errata="Real-valued mechanisms have their variance halved ('M = 2', complex ones use two reals per sample), as "
           "in the paper. The paper's claim that GeomRF+ beats PosRF by > e^75 (normal) and > e^125 (heterogen) is "
           "not reproduced: the reference (and rfviz) get about e^60 and e^122 (reference §5 Figure 2, §7.1 item "
           "13). The MNIST column needs the MNIST data and is left out. Printed Thm 4.2 / eq. 35 lacks the factor "
           "(1 − 4A)^{d/2} (reference §7.1 item 9; not used here).",
    build=build_crt_fig2,
    explorer_page="gerf",
    explorer_params={"kernel": "gaussian", "d": "64"},
    key_numbers=_crt2_keys,
    catalog=_crt2_catalog(),
    params={"kernel": "gaussian", "d": 64, "σ": "0.1 … 1.0", "lines: L, draws": (CRT2_L, CRT2_REPS),
            "diamonds: L, draws": (CRT2_REF_L, CRT2_REF_REPS), "regimes": list(gerf.FIG2_REGIMES)},
    source="chefs_random_tables.md §5 Figure 2 (means of log-variance, gaps at σ = 1)",
))


# ============================================================================================ SimRF Figure 5
SIMRF5_D, SIMRF5_V, SIMRF5_SAMPLES = 6, 1.0, 5000
SIMRF5_COUPLINGS = ("iid", "orthogonal", "simplex")


def density_mode(d: int, coupling: str) -> tuple[float, float]:
    """(w*, p(w*)): the mode of the density of w_ij = ‖ω_i + ω_j‖ (SimRF Fig. 5; reference §3 landmarks)."""
    grid = np.linspace(0.01, 4.0 * math.sqrt(d) + 4.0, 801)
    i = int(np.argmax(density_wij(grid, d, coupling)))
    res = optimize.minimize_scalar(lambda w: -float(density_wij(w, d, coupling)), bounds=(grid[max(i - 1, 0)],
                                   grid[min(i + 1, len(grid) - 1)]), method="bounded", options={"xatol": 1e-9})
    return float(res.x), float(-res.fun)


def build_simrf_fig5() -> tuple[go.Figure, str]:
    fig = fc.density_figure(SIMRF5_D, SIMRF5_COUPLINGS, samples=SIMRF5_SAMPLES, seed=5, v=SIMRF5_V)
    fig.update_layout(title=f"SimRF Fig. 5: p(w_ij) at d = {SIMRF5_D} with {SIMRF5_SAMPLES} sampled pairs per "
                            f"coupling<br>penalty f(w, v = {SIMRF5_V:g}) on the right axis (log)", height=480,
                      margin={"t": 90})
    return fig, traces_csv(fig)


SIMRF5_TABLE = {"iid": ("0.012169", "0.183940", "0.400188", "0.293050", "0.094260", "0.014994"),
                "orthogonal": ("0.000158", "0.072179", "0.512481", "0.366415", "0.047387", "0.001439"),
                "simplex": ("0.000483", "0.156401", "0.628499", "0.204289", "0.009760", "0.000091")}
SIMRF5_MODES = {"iid": ("3.1622±0.00025", "0.40559"), "orthogonal": ("3.3167±0.00025", "0.56847"),
                "simplex": ("2.9943±0.00025", "0.62852")}
"""Modes as printed, read off the reference's grid of step 0.0005 (hence ±0.00025; √10 = 3.16228 prints 3.1622)."""


def _simrf5_catalog() -> dict[str, str]:
    out = {}
    for c, row in SIMRF5_TABLE.items():
        out.update(catalog_rows(f"p_{c}_w", range(1, 7), row))
        out[f"mode_{c}"], out[f"p_at_mode_{c}"] = SIMRF5_MODES[c]
    return out


def _simrf5_keys(fig: go.Figure, data: str) -> dict[str, float]:
    out = {}
    w = np.arange(1, 7, dtype=float)
    for c in SIMRF5_COUPLINGS:
        for wi, p in zip(w, density_wij(w, SIMRF5_D, c), strict=True):
            out[f"p_{c}_w{int(wi)}"] = float(p)
        out[f"mode_{c}"], out[f"p_at_mode_{c}"] = density_mode(SIMRF5_D, c)
    return out


gallery_figure(GalleryFigure(
    name="simrf-fig5-wij-densities",
    title="SimRF Fig. 5: densities of w_ij = ‖ω_i + ω_j‖ at d = 6",
    paper="Simplex Random Features (Reid et al., ICML 2023), Fig. 5",
    caption="The law of w_ij for iid (Lemma 4.1), orthogonal and simplex (Lemma 4.2, pair angles 0 and −1/(d−1)) "
            "projections at d = 6, with histograms of pairs drawn by rfviz's own coupled samplers. The simplex "
            "density is the most concentrated and has the thinnest right tail; the convex increasing penalty "
            "f(w, v) = 0F1(; d/2; v²w²/4) (dotted, right axis) is what the MSE averages, so a thinner right tail "
            "means a lower MSE.",
    errata="The paper does not state the v used for f(w, v); rfviz draws v = 1. The paper's θ in Lemma 4.2 is the "
           "angle between random vectors, not between inputs (reference §6 item 1).",
    build=build_simrf_fig5,
    explorer_page="coupling",
    explorer_params={"d": "6", "hist": "true", "samples": "5000", "penalty": "true", "v": "1"},
    key_numbers=_simrf5_keys,
    catalog=_simrf5_catalog(),
    params={"d": SIMRF5_D, "couplings": list(SIMRF5_COUPLINGS), "samples per coupling": SIMRF5_SAMPLES,
            "v (penalty)": SIMRF5_V},
    source="simplex_random_features.md §3 (density landmarks for d = 6)",
))


# ============================================================================================ SimRF Figure 6
SIMRF6_D = SIMRF6_M = 64
SIMRF6_V = np.geomspace(1e-3, 1e2, 241)


def ratio_minimum(d: int, m: int, coupling: str, bracket: tuple[float, float] = (0.3, 3.0)) -> tuple[float, float]:
    """(v_min, ratio_min): where MSE_coupling/MSE_iid of positive RFs is smallest (SimRF Fig. 6)."""
    res = optimize.minimize_scalar(lambda v: float(mse_ratio_vs_iid("positive", v * v, d, m, coupling)),
                                   bounds=bracket, method="bounded", options={"xatol": 1e-8})
    return float(res.x), float(res.fun)


def ratio_crossing(d: int, m: int, coupling: str, level: float, bracket: tuple[float, float] = (1.0, 3.0)) -> float:
    """v where MSE_coupling/MSE_iid of positive RFs crosses ``level`` inside ``bracket``."""
    return float(optimize.brentq(lambda v: float(mse_ratio_vs_iid("positive", v * v, d, m, coupling)) - level,
                                 *bracket, xtol=1e-10))


def build_simrf_fig6() -> tuple[go.Figure, Columns]:
    fig = fc.ratio_vs_v_figure(SIMRF6_D, SIMRF6_M, features="positive", v=SIMRF6_V)
    fig.update_layout(title=f"SimRF Fig. 6: MSE ratio vs iid of positive RFs, d = m = {SIMRF6_D}")
    cols = {"v": SIMRF6_V, "ratio_orthogonal": trace_y(fig, fc.LABELS["orthogonal"]),
            "ratio_simplex": trace_y(fig, fc.LABELS["simplex"])}
    return fig, cols


SIMRF6_TABLE = {"0.001": ("1.000000", "0.007782"), "0.01": ("0.999952", "0.007786"), "0.1": ("0.995252", "0.008214"),
                "0.3": ("0.959059", "0.012827"), "0.5": ("0.895765", "0.027771"), "1": ("0.731090", "0.170498"),
                "2": ("0.878764", "0.817612"), "3": ("0.996977", "0.996407"), "5": ("1.000000", "1.000000"),
                "100": ("1.000000", "1.000000")}


def _simrf6_catalog() -> dict[str, str]:
    out = {}
    for v, (orf, sim) in SIMRF6_TABLE.items():
        out[f"ratio_orthogonal_v{v}"], out[f"ratio_simplex_v{v}"] = orf, sim
    # argmin and crossing are read off the reference's 400-point log grid on [0.05, 4] (step ≈ 1.1 % of v)
    out.update({"orthogonal_min_ratio": "0.7068", "orthogonal_argmin_v": "1.235±0.007",
                "simplex_half_crossing_v": "1.505±0.009",
                "ratio_orthogonal_v1_golden": "0.73109029", "ratio_simplex_v1_golden": "0.17049840"})
    return out


def _simrf6_keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    out = {}
    for v in SIMRF6_TABLE:
        for cp in ("orthogonal", "simplex"):
            out[f"ratio_{cp}_v{v}"] = float(mse_ratio_vs_iid("positive", float(v) ** 2, SIMRF6_D, SIMRF6_M, cp))
    out["ratio_orthogonal_v1_golden"] = out["ratio_orthogonal_v1"]
    out["ratio_simplex_v1_golden"] = out["ratio_simplex_v1"]
    out["orthogonal_argmin_v"], out["orthogonal_min_ratio"] = ratio_minimum(SIMRF6_D, SIMRF6_M, "orthogonal")
    out["simplex_half_crossing_v"] = ratio_crossing(SIMRF6_D, SIMRF6_M, "simplex", 0.5)
    return out


gallery_figure(GalleryFigure(
    name="simrf-fig6-mse-ratio",
    title="SimRF Fig. 6: MSE ratio to iid vs v at d = m = 64",
    paper="Simplex Random Features (Reid et al., ICML 2023), Fig. 6",
    caption="MSE of orthogonal (ORF) and simplex (SimRF) positive random features divided by the iid MSE, against "
            "v = ‖x + y‖ (Thm 3.2 with eqs. 19, 23, 24; the ratio is the same for the Gaussian and the softmax "
            "kernel). At small v SimRF's MSE is 0.78 % of iid (1 − κ₆₄ = 0.00778) while ORF gives nothing; ORF is "
            "best, 0.707, near v ≈ 1.24; SimRF crosses ½ at v ≈ 1.5; both return to 1 for v ≳ 5 where the MSE is "
            "dominated by e^{2v²}.",
    errata="The paper implies m = d = 64 through its quoted 0.0078; rfviz uses it. Eqs. 11/25–27 assume all m "
           "vectors coupled (m ≤ d); with blocks the factor (m − 1) becomes (d − 1) (reference §6 item 3). The "
           "small-v expansion in §5.1 has a typo, fixed in the reference (§2.10). rfviz evaluates the ratio after "
           "dividing by e^{2v²} and with cancellation-free series, so v from 1e−3 to 1e2 is exact to plotting "
           "precision (a naive evaluation is noise at v = 1e−3 and overflows at v > 18.8).",
    build=build_simrf_fig6,
    explorer_page="coupling",
    explorer_params={"d": "64", "m": "64", "features": "positive"},
    key_numbers=_simrf6_keys,
    catalog=_simrf6_catalog(),
    params={"d": SIMRF6_D, "m": SIMRF6_M, "features": "positive", "v": "1e−3 … 1e2 (log)"},
    source="simplex_random_features.md §4 Fig. 6 (table), §7 G7",
))


# ============================================================================================ DP Figure 2
DP2_DIMS, DP2_D_FEATURES, DP2_PAIRS, DP2_SEED, DP2_P_MAX = (8, 32), 1024, 1000, 2024, 9
DP2_SKETCHES = {"gaussian": "Gaussian", "rademacher": "Rademacher"}


def abs_normal_unit_pairs(dims: Sequence[int], count: int = DP2_PAIRS, seed: int = DP2_SEED
                          ) -> dict[int, dp.DotStats]:
    """DP Fig. 2 data: ``count`` pairs x = |x̃|/‖x̃‖, x̃ ~ N(0, I_d) (non-negative, unit norm) per d, drawn in the
    order of the reference's check (one generator, X then Y, d after d), so the averages match it exactly."""
    rng = np.random.default_rng(seed)
    out = {}
    for d in dims:
        x = np.abs(rng.standard_normal((count, d)))
        y = np.abs(rng.standard_normal((count, d)))
        out[d] = dp.DotStats.from_pairs(x / np.linalg.norm(x, axis=1, keepdims=True),
                                        y / np.linalg.norm(y, axis=1, keepdims=True))
    return out


def mean_poly_variance(st: dp.DotStats, p: int, basis: str, q: float, num_features: int) -> float:
    """Mean over the pairs of E|k̂ − (x·y)^p|² of the D-feature polynomial sketch (DP Thm 2, Eqs. 18–21)."""
    return float(np.mean(np.exp(dp.log_var_poly(st, p, q, dp.fourth_moment(basis, q), num_features))))


def build_dp_fig2() -> tuple[go.Figure, Columns]:
    stats = abs_normal_unit_pairs(DP2_DIMS)
    ps = np.arange(1, DP2_P_MAX + 1)
    fig = make_subplots(rows=2, cols=len(DP2_DIMS), shared_xaxes=True, row_heights=[0.62, 0.38],
                        vertical_spacing=0.07, horizontal_spacing=0.08,
                        subplot_titles=[f"d = {d}" for d in DP2_DIMS] + ["" for _ in DP2_DIMS])
    cols: dict[str, list] = {k: [] for k in ("d", "p", "sketch", "mse_real", "mse_complex", "ratio_complex_real")}
    for j, d in enumerate(DP2_DIMS, start=1):
        for i, (basis, label) in enumerate(DP2_SKETCHES.items()):
            real = np.array([mean_poly_variance(stats[d], int(p), basis, 1.0, DP2_D_FEATURES) for p in ps])
            cplx = np.array([mean_poly_variance(stats[d], int(p), basis, 0.5, DP2_D_FEATURES) for p in ps])
            for lab, y, dash, k in (("real", real, "dash", 2 * i), ("complex", cplx, "solid", 2 * i + 1)):
                fig.add_trace(go.Scatter(x=ps, y=y, mode="lines+markers", name=f"{label} {lab}",
                                         legendgroup=f"{i}{lab}", showlegend=j == 1,
                                         line={"color": color(k), "dash": dash}), row=1, col=j)
            fig.add_trace(go.Scatter(x=ps, y=cplx / real, mode="lines+markers", name=f"{label}: complex / real",
                                     legendgroup=f"{i}ratio", showlegend=j == 1, line={"color": color(2 * i + 1)}),
                          row=2, col=j)
            for k, v in (("d", [d] * len(ps)), ("p", ps), ("sketch", [basis] * len(ps)), ("mse_real", real),
                         ("mse_complex", cplx), ("ratio_complex_real", cplx / real)):
                cols[k].extend(list(v))
        fig.update_yaxes(type="log", title_text="E|k̂ − (x·y)^p|²" if j == 1 else None, row=1, col=j)
        fig.update_yaxes(title_text="complex / real" if j == 1 else None, row=2, col=j)
        fig.update_xaxes(title_text="degree p", row=2, col=j)
    fig.update_layout(title=f"DP Fig. 2: MSE vs degree p, D = {DP2_D_FEATURES}, mean over {DP2_PAIRS} pairs of "
                            "non-negative unit vectors<br>(full complex E|k̂−k|²)", height=620,
                      **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 90}})
    return fig, {k: np.asarray(v, dtype=object if k == "sketch" else float) for k, v in cols.items()}


DP2_RATIOS = {(8, "gaussian"): "0.677 0.529 0.396 0.289 0.206 0.145 0.101 0.070 0.048",
              (8, "rademacher"): "0.713 0.583 0.461 0.355 0.269 0.201 0.148 0.108 0.079",
              (32, "gaussian"): "0.699 0.563 0.438 0.334 0.251 0.188 0.139 0.103 0.075",
              (32, "rademacher"): "0.708 0.577 0.454 0.351 0.268 0.203 0.153 0.115 0.085"}
DP2_MEANS_D8 = {("gaussian", "real"): "0.00144 0.00361 0.00793 0.01731 0.03840",
                ("gaussian", "complex"): "0.00098 0.00191 0.00314 0.00500 0.00792",
                ("rademacher", "real"): "0.00120 0.00265 0.00507 0.00949 0.01792",
                ("rademacher", "complex"): "0.00085 0.00155 0.00233 0.00337 0.00482"}


def _dp2_catalog() -> dict[str, str]:
    out = {}
    for (d, basis), row in DP2_RATIOS.items():
        out.update(catalog_rows(f"ratio_d{d}_{basis}_p", range(1, 10), row.split()))
    for (basis, kind), row in DP2_MEANS_D8.items():
        out.update(catalog_rows(f"mse_d8_{basis}_{kind}_p", range(1, 6), row.split()))
    return out


def _dp2_keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    out = {}
    for key in _dp2_catalog():
        parts = key.split("_")
        d, basis, p = int(parts[1][1:]), parts[2], int(parts[-1][1:])
        sel = (c["d"] == d) & (c["sketch"] == basis) & (c["p"] == p)
        column = "ratio_complex_real" if key.startswith("ratio") else f"mse_{parts[3]}"
        out[key] = float(c[column][sel][0])
    return out


gallery_figure(GalleryFigure(
    name="dp-fig2-error-vs-degree",
    title="DP Fig. 2: polynomial-sketch error vs degree p, with the complex/real ratio",
    paper="Improved Random Features for Dot Product Kernels (Wacker, Kanagawa, Filippone), Fig. 2",
    caption="Mean over 1000 pairs of non-negative unit vectors of the MSE E|k̂ − (x·y)^p|² of D = 1024 real and "
            "complex Gaussian and Rademacher sketches (Thm 2, Eqs. 18–21), d = 8 and d = 32; below, the ratio "
            "complex/real. Complex features win, and the more so the higher the degree (ratio 0.68 → 0.05 for the "
            "Gaussian sketch at d = 8); Rademacher improves on Gaussian slightly more for small d.",
    errata="The paper does not state D; the authors' CSVs imply D = 1024, and rfviz's analytic means match them "
           "(reference §6, Fig. 2 reproduction), which also shows that the plotted quantity is the full complex "
           "E|k̂ − k|², not the error of Re k̂ (reference P1). The Ahle et al. tree sketch has no closed form and "
           "is left out. The data are drawn with the reference's seed, so the averages equal its values.",
    build=build_dp_fig2,
    explorer_page="dot_product",
    explorer_params={"d": "8", "m": "1024", "p": "3", "q": "0.5", "basis": "gaussian", "variance": "complex",
                     "embedding": "rotation_average"},
    key_numbers=_dp2_keys,
    catalog=_dp2_catalog(),
    params={"d": list(DP2_DIMS), "D": DP2_D_FEATURES, "pairs": DP2_PAIRS, "p": f"1 … {DP2_P_MAX}",
            "data seed": DP2_SEED, "variance": "complex E|k̂−k|²"},
    source="dot_product_features.md §5 Fig. 2 (ratios), §6 Fig. 2 reproduction (d = 8 means)",
))


# ============================================================================================ DP Figure 12
DP12_D_MAX = 6


def build_dp_fig12() -> tuple[go.Figure, str]:
    figs = [fd.variance_vs_m(r=1.0, theta=0.0, d=2, p=n, m_max=DP12_D_MAX, embedding="flat") for n in (1, 2)]
    fig = side_by_side(figs, ["n = 1", "n = 2"],
                       "DP Fig. 12: variance vs D for d = 2, x = y = (√½, √½)<br>TensorSRHT (Eq. 33), its surrogate "
                       "(Eq. 72, dotted) and unstructured Rademacher sketches (Eqs. 18/19, dashed)")
    for i in (1, 2):  # the n = 1 TensorSRHT variance is 0 at even D: a log axis would hide it
        fig.update_yaxes(type="linear", row=1, col=i)
    return fig, traces_csv(fig)


DP12_TABLE = {(1, "TensorSRHT real"): ("1", "0", "0.111111", "0", "0.04", "0"),
              (1, "TensorSRHT q = 0.5"): ("0.5", "0", "0.055556", "0", "0.02", "0"),
              (2, "TensorSRHT real"): ("3", "1", "0.777778", "0.5", "0.44", "0.333333"),
              (2, "TensorSRHT q = 0.5"): ("1.25", "0.25", "0.25", "0.125", "0.13", "0.083333"),
              (2, "surrogate real"): ("3", "1", "0.666667", "0.5", "0.4", "0.333333"),
              (2, "surrogate q = 0.5"): ("1.25", "0.25", "0.166667", "0.125", "0.1", "0.083333"),
              (1, "Rademacher real"): ("1", "0.5", "0.3333", "0.25", "0.2", "0.1667"),
              (2, "Rademacher real"): ("3", "1.5", "1", "0.75", "0.6", "0.5"),
              (1, "Rademacher q = 0.5"): ("0.5", "0.25", "0.1667", "0.125", "0.1", "0.0833"),
              (2, "Rademacher q = 0.5"): ("1.25", "0.625", "0.4167", "0.3125", "0.25", "0.2083")}


def _dp12_catalog() -> dict[str, str]:
    out = {}
    for (n, trace), row in DP12_TABLE.items():
        out.update(catalog_rows(f"n{n}|{trace}|D", range(1, DP12_D_MAX + 1), row))
    out.update(catalog_rows("n1|surrogate real|D", range(2, DP12_D_MAX + 1), ["0"] * (DP12_D_MAX - 1)))
    return out


def _dp12_keys(fig: go.Figure, data: str) -> dict[str, float]:
    panel = {1: [], 2: []}
    for t in fig.data:  # side_by_side keeps trace order: the n = 1 panel's traces use axis x, the n = 2 ones x2
        panel[2 if t.xaxis == "x2" else 1].append(t)
    out = {}
    for key in _dp12_catalog():
        n, trace, dlab = key.split("|")
        t = next(tr for tr in panel[int(n[1:])] if tr.name == trace)
        out[key] = float(np.asarray(t.y, dtype=float)[list(t.x).index(int(dlab[1:]))])
    return out


gallery_figure(GalleryFigure(
    name="dp-fig12-tensorsrht-vs-d",
    title="DP Fig. 12: TensorSRHT variance vs D (sawtooth), surrogate and Rademacher",
    paper="Improved Random Features for Dot Product Kernels (Wacker, Kanagawa, Filippone), Fig. 12",
    caption="Exact variance against the number of features D for d = 2 and x = y = (√½, √½) (so x·y = 1, S = ½), "
            "degree n = 1 (left) and n = 2 (right). TensorSRHT (Thm 10, Eq. 33) is not monotone in D: it jumps up "
            "whenever a new block of d features starts (a sawtooth; at n = 1 it is exactly 0 at full blocks), the "
            "convex surrogate (Eq. 72, dotted) smooths it, and both lie below the unstructured Rademacher sketch "
            "(dashed, ∝ 1/D). Complex (q = ½) features halve the real ones' variance or better.",
    errata="Thm 10 holds only when every degree draws its own permutation (as Algorithm 1 and the authors' code do); "
           "eqs. 25/31 read literally share it and then the variance formula fails (reference P2). The padded "
           "dimension must be used in c(D, d) (reference P3). No printed value differs here.",
    build=build_dp_fig12,
    explorer_page="dot_product",
    explorer_params={"d": "2", "m": "6", "p": "2", "q": "0.5", "r": "1", "theta": "0", "embedding": "flat",
                     "basis": "rademacher"},
    key_numbers=_dp12_keys,
    catalog=_dp12_catalog(),
    params={"d": 2, "x = y": "(√½, √½)", "n": [1, 2], "D": f"1 … {DP12_D_MAX}", "q": [1.0, 0.5]},
    source="dot_product_features.md §6 (Fig. 12 exact values), §9 G8–G9",
))


# ============================================================================================ OS: radial densities
OS_RADIAL_CASES = ((2, 1.0), (16, 1.0), (64, 2.0))


def mean_radius(log_pdf: Callable[[np.ndarray], np.ndarray]) -> float:
    """E|ω| = ∫ ρ p(ρ) dρ of a radial density given by its log pdf (adaptive quadrature on [0, ∞))."""
    val, _ = integrate.quad(lambda rho: rho * math.exp(float(np.asarray(log_pdf(np.array([rho])))[0])), 0.0,
                            np.inf, limit=200, epsabs=1e-12, epsrel=1e-10)
    return float(val)


def _sphere_problems(d: int, r: float) -> list[OptimalSampling]:
    return [OptimalSampling(mech, InputLaw("sphere", d=d, r=r)) for mech in ("positive", "trig")]


def build_os_radial() -> tuple[go.Figure, str]:
    figs = [fo.psi_radial_density_figure(_sphere_problems(d, r)) for d, r in OS_RADIAL_CASES]
    fig = side_by_side(figs, [f"d = {d}, r = {r:g}" for d, r in OS_RADIAL_CASES],
                       "Optimal Ψ*: radial density of |ω| for sphere inputs Unif(r·S^{d−1}), softmax kernel<br>"
                       "(Ω = N(0, I): χ_d)")
    return fig, traces_csv(fig)


OS_RADIAL_TABLE = {(2, 1.0): ("1.2533", "2.2724"), (16, 1.0): ("3.9380", "4.4054"), (64, 2.0): ("7.9688", "8.9108")}


def _os_radial_catalog() -> dict[str, str]:
    out = {}
    for (d, r), (om, psi) in OS_RADIAL_TABLE.items():
        out[f"mean_radius_omega_d{d}_r{r:g}"], out[f"mean_radius_psi_pos_d{d}_r{r:g}"] = om, psi
    return out


def _os_radial_keys(fig: go.Figure, data: str) -> dict[str, float]:
    out = {}
    for d, r in OS_RADIAL_CASES:
        pos, _ = _sphere_problems(d, r)
        out[f"mean_radius_omega_d{d}_r{r:g}"] = mean_radius(pos.omega_radial_log_pdf)
        out[f"mean_radius_psi_pos_d{d}_r{r:g}"] = mean_radius(pos.psi_radial_log_pdf)
    return out


gallery_figure(GalleryFigure(
    name="os-radial-densities",
    title="Optimal sampling: radial densities of the optimal Ψ*",
    paper="Optimal importance sampling Ψ for random features (Thm 1); no figure in the paper",
    caption="The radial law of |ω| under the optimal proposal Ψ* (Thm 1) for inputs uniform on the sphere of radius "
            "r, against the plain Ω = N(0, I) (χ_d, dashed). For positive features Ψ* is isotropic with a "
            "noncentral-χ radius (d dof, noncentrality 2r): it shifts mass outwards (mean radius 2.27 vs 1.25 at "
            "d = 2, r = 1); for trig features with a random phase the ω-marginal stays Ω and only the phase is "
            "re-weighted, so its curve lies on χ_d.",
    errata="The paper has no figures or numbers; this is the reference's suggested view 1 (optimal_sampling.md §4). "
           "Theorem 1 needs x1 and x2 independent, and its 'lowest possible' variance is the lowest among iid "
           "importance samplers of a scalar φ (reference §2.4 items 2 and 4).",
    build=build_os_radial,
    explorer_page="optimal_sampling",
    explorer_params={"inputs": "sphere", "kernel": "softmax", "d": "2", "r": "1"},
    key_numbers=_os_radial_keys,
    catalog=_os_radial_catalog(),
    params={"inputs": "Unif(r·S^{d−1})", "kernel": "softmax", "(d, r)": list(OS_RADIAL_CASES),
            "mechanisms": ["positive", "trig (random phase)"]},
    source="optimal_sampling.md §3.1 (mean radius, Ω vs Ψ)",
))


# ============================================================================================ OS: V* curves
OS_SPHERE_D = 8
OS_SPHERE_R = np.linspace(0.05, 2.0, 40)
OS_GAUSS_D = 16
OS_GAUSS_SIGMA = np.linspace(0.02, 0.7, 40)


def build_os_vstar() -> tuple[go.Figure, str]:
    figs = [fo.variance_sweep_figure("sphere", OS_SPHERE_D, "r", OS_SPHERE_R, shade=False),
            fo.variance_sweep_figure("gaussian", OS_GAUSS_D, "sigma", OS_GAUSS_SIGMA, shade=False)]
    fig = side_by_side(figs, [f"sphere inputs, d = {OS_SPHERE_D}", f"Gaussian inputs N(0, σ²I), d = {OS_GAUSS_D}"],
                       "Optimal sampling: V* (optimal Ψ) against the unweighted variance (Ψ = Ω),<br>softmax kernel, "
                       "log10 per sample", height=480)
    for j, (thr, text) in enumerate(((math.sqrt(1 / 6), "σ² = 1/6: positive plain diverges"),
                                     (math.sqrt(1 / 2), "σ² = 1/2: everything diverges")), start=1):
        fig.add_vline(x=thr, line={"dash": "dot", "color": "grey"}, row=1, col=2,
                      annotation_text=text, annotation_position="top left" if j == 1 else "bottom left")
    fig.update_xaxes(range=[0.0, 0.73], row=1, col=2)
    return fig, traces_csv(fig)


OS_SPHERE_TABLE = {  # d, r → V*, V*/EK², pos/V*, phase/V*
    (8, 0.5): ("0.633", "0.623", "1.167", "1.510"), (8, 1.0): ("6.113", "4.79", "2.817", "1.028"),
    (8, 1.5): ("86.89", "27.8", "44.08", "1.003"), (8, 2.0): ("2958.8", "134", "7895", "1.0004"),
    (16, 1.0): ("6.257", "5.53", "1.741", "1.018"), (16, 2.0): ("2974.8", "481", "454.5", "1.0000"),
    (64, 1.0): ("6.357", "6.16", "1.154", "1.012"), (64, 2.0): ("2979.3", "1814", "6.99", "1.0000"),
    (128, 1.5): ("88.94", "82.2", "1.376", "1.0001"),
}
OS_GAUSS_TABLE = {  # σ² → V*, pos plain, phase plain (d = 16)
    0.01: ("0.3784", "0.3970", "0.7471"), 0.02: ("0.9087", "1.0189", "1.1886"), 0.05: ("4.3129", "7.0086", "4.4553"),
    0.10: ("34.141", "353.48", "34.21"), 0.15: ("298.78", "1.226e7", "298.83"), 0.20: ("3540.7", "∞", "3540.7"),
    0.30: ("2.328e6", "∞", "2.328e6"),
}


def _os_vstar_catalog() -> dict[str, str]:
    out = {}
    for (d, r), row in OS_SPHERE_TABLE.items():
        out.update(catalog_rows(f"sphere_d{d}_r{r:g}_", ("v_opt", "v_opt_over_ek2", "pos_over_v_opt",
                                                          "phase_over_v_opt"), row))
    for s2, row in OS_GAUSS_TABLE.items():
        out.update(catalog_rows(f"gauss_d16_s2_{s2:g}_", ("v_opt", "pos_plain", "phase_plain"), row))
    return out


def _os_vstar_keys(fig: go.Figure, data: str) -> dict[str, float]:
    out = {}
    for d, r in OS_SPHERE_TABLE:
        pos, trig = _sphere_problems(d, r)
        v = pos.v_opt()
        out.update({f"sphere_d{d}_r{r:g}_v_opt": v, f"sphere_d{d}_r{r:g}_v_opt_over_ek2": v / pos.expected_k2(),
                    f"sphere_d{d}_r{r:g}_pos_over_v_opt": pos.v_plain() / v,
                    f"sphere_d{d}_r{r:g}_phase_over_v_opt": trig.v_plain() / trig.v_opt()})
    for s2 in OS_GAUSS_TABLE:
        law = InputLaw("gaussian", d=OS_GAUSS_D, sigma=math.sqrt(s2))
        pos, trig = OptimalSampling("positive", law), OptimalSampling("trig", law)
        out.update({f"gauss_d16_s2_{s2:g}_v_opt": pos.v_opt(), f"gauss_d16_s2_{s2:g}_pos_plain": pos.v_plain(),
                    f"gauss_d16_s2_{s2:g}_phase_plain": trig.v_plain()})
    return out


gallery_figure(GalleryFigure(
    name="os-vstar-curves",
    title="Optimal sampling: V* against the unweighted variance (sphere and Gaussian inputs)",
    paper="Optimal importance sampling Ψ for random features (Thm 1, Cor. 1); no figure in the paper",
    caption="Per-sample variance of the softmax-kernel estimate with the optimal proposal Ψ* (V*, the same for every "
            "scalar feature map when X1 = X2, Cor. 2) and with plain sampling Ψ = Ω, for positive and trig "
            "(random-phase) features. Left: inputs uniform on the sphere of radius r in d = 8: positive features "
            "gain hugely from Ψ* (7895× at r = 2), trig features barely (1.0004×). Right: Gaussian inputs "
            "N(0, σ²I) in d = 16: plain positive features diverge at σ² = 1/6, everything at σ² = 1/2.",
    errata="The paper has no figures or numbers; these are the reference's views 3 and 4 (optimal_sampling.md §4). "
           "Two entries of the reference's tables are double-rounded (d = 128, r = 1.5: V* = 88.93, printed 88.94; "
           "d = 16, σ² = 0.01: positive plain 0.3969, printed 0.3970); rfviz checks the exact values. "
           "'Lowest possible' holds only among iid importance samplers of a scalar φ: the (cos, sin) pair at equal "
           "budget and orthogonal directions go below V* (reference §2.4 item 4). For vector-valued features the "
           "paper's |φ|² recipe is only an upper bound (item 3).",
    build=build_os_vstar,
    explorer_page="optimal_sampling",
    explorer_params={"inputs": "sphere", "kernel": "softmax", "d": "8", "r": "1"},
    key_numbers=_os_vstar_keys,
    catalog=_os_vstar_catalog(),
    corrections={"sphere_d128_r1.5_v_opt": ("88.93", "double rounding of the checks script's 88.935 (the exact value "
                                                      "e^{4.5} − 0F1(; 64; 5.0625) is 88.93487)"),
                 "gauss_d16_s2_0.01_pos_plain": ("0.3969", "double rounding of the checks script's 0.39695 (the exact "
                                                           "value ((1.02)(0.94))^{−8} − (0.9996)^{−8} is 0.396948)")},
    params={"kernel": "softmax", "sphere": f"d = {OS_SPHERE_D}, r = 0.05 … 2",
            "gaussian": f"d = {OS_GAUSS_D}, σ = 0.02 … 0.7", "mechanisms": ["positive", "trig (random phase)"]},
    source="optimal_sampling.md §3.1 and §3.2 (tables)",
))


__all__ = ["abs_normal_unit_pairs", "density_mode", "mean_poly_variance", "mean_radius", "quantile_band_columns",
           "ratio_crossing", "ratio_minimum", "sampled_estimates", "side_by_side", "trace_y"]
