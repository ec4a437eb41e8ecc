"""GERF / OPRF / discrete random features (Chefs' Random Tables): variance against A, OPRF vs PosRF, PoisRF/GeomRF."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages import _ui as ui
from rfviz.compute import crt as cg
from rfviz.figures import crt as fg
from rfviz.geometry import EMBEDDINGS
from rfviz.params import D_PARAM, M_PARAM, SEED_PARAM, TRIALS_PARAM

with ui.page(
    "gerf",
    "GERF, OPRF and discrete random features",
    "**Generalised exponential RFs** (GERF) f(ω, x) = D·exp(A|ω|² + B ω·x + C|x|²) estimate the Gaussian and softmax "
    "kernels for any complex A with Re A < 1/8 (finite variance) and s = ±1; A = 0, s = +1 is the positive RF. "
    "**OPRF** picks the real A* that minimises the variance for the pair. **PoisRF** and **GeomRF** draw discrete "
    "ω and depend on coordinates, so the pair (r, θ) is placed in ℝᵈ by the embedding below. Variances are of m iid "
    "features (per-feature variance / m).",
    [
        (r"\frac{\mathrm{Var}}{K^2} = \tfrac12\left(\mathrm{Re}\,e^{L_1} + e^{L_3}\right) - 1,\quad "
         r"L_1 = d\left(\log(1-4A) - \tfrac12\log(1-8A)\right) + \frac{s Z_s}{1-8A},\quad Z_s = |x + s y|^2",
         "CRT Theorem 3.2, eq. 6 (relative form; [CRT], with L₃ as there)."),
        (r"A^* = \frac{1 - 1/\rho^*}{8},\quad \rho^* = \frac{2d}{(2Z+d) + \sqrt{(2Z+d)^2 + 8dZ}},\quad Z = |x+y|^2",
         "CRT Theorem 3.3, eq. 7 (OPRF), rationalised."),
        (r"\text{PoisRF: } \log R = \lambda d + \frac{\sum_l x_l^2 y_l^2}{\lambda} - 2x\cdot y,\ \ "
         r"\lambda^* = \sqrt{\textstyle\sum_l x_l^2y_l^2 / d};\qquad "
         r"\text{GeomRF: } \log R = -d\log p - 2x\cdot y + "
         r"\sum_l \log I_0\!\left(\tfrac{2|x_l y_l|}{\sqrt{1-p}}\right)",
         "CRT Theorems 3.4 (eq. 11) and 3.5 (eq. 13). Var/K² = R − 1."),
    ],
) as state:
    side = st.sidebar

    view = state.view()  # a slug of PAGES' gerf views: real-a, complex-a, oprf, discrete
    oprf_off = ui.unused("OPRF vs PosRF depends on d and ‖x + y‖² only (swept)") if view == "oprf" else {}
    kernel = state.selectbox("Kernel", "kernel", ["gaussian", "softmax"], "gaussian", container=side, **oprf_off)
    d = state.param(D_PARAM, 16, container=side)
    m = state.param(M_PARAM, 16, container=side, **oprf_off)
    r = state.slider("r (input length)", "r", 0.05, 3.0, 1.0, step=0.05, container=side, **oprf_off)
    theta = state.slider("θ (angle between x and y, rad)", "theta", 0.0, float(np.pi), 1.0, step=0.01, container=side,
                         **oprf_off)
    side.caption(f"Sidebar scope: the **{state.views.label(view)}** view; greyed inputs are not used by it.")
    state.show_url_errors()


    @ui.cached
    def _real(r, theta, d, m, kernel, a_min):
        return cg.real_A_columns(r, theta, d, m, kernel, a_min)


    @ui.cached
    def _complex(r, theta, d, m, kernel, s, re_min, im_max):
        return cg.complex_A_data(r, theta, d, m, kernel, s, re_min, im_max)


    @ui.cached
    def _oprf(d, z_max):
        return cg.oprf_columns(d, z_max, with_derf=True)


    @ui.cached
    def _dirf(r, theta, d, m, kernel, embedding, shifted):
        return cg.dirf_columns(r, theta, d, m, kernel, embedding, shifted)


    @ui.cached_mc  # shared by every session, computed once, in the server's bounded Monte-Carlo pool
    def _sampled_real(r: float, theta: float, d: int, m: int, kernel: str, a_min: float, trials: int, seed: int):
        return cg.sampled_real_A_columns(r, theta, d, m, kernel, a_min, trials, seed)


    if view == "real-a":
        rc = st.columns([1, 2, 1, 1])
        a_min = state.number("A min", "a_min", -1.0, float, format="%g", step=0.1, container=rc[0])
        mc_on = state.mc_switch("Monte Carlo points", "mc", container=rc[1],
                                help="sample GERF with rfviz.engine at 9 values of A below 1/16 (±2 SE bars)")
        trials = state.param(TRIALS_PARAM, 4000, container=rc[2], disabled=not mc_on)
        seed = state.param(SEED_PARAM, container=rc[3], disabled=not mc_on)
        with ui.guard():
            d, m = ui.valid(D_PARAM, d), ui.valid(M_PARAM, m)
            c = _real(r, theta, int(d), int(m), kernel, float(a_min))
            sampled = None
            if mc_on:
                trials, seed = ui.valid(TRIALS_PARAM, trials), ui.valid(SEED_PARAM, seed)
                with st.spinner("sampling…"):
                    sampled = _sampled_real(r, theta, int(d), int(m), kernel, float(a_min), trials, seed)
            fig = fg.real_A_figure(c, r, theta, int(d), int(m), kernel, sampled)
            ui.plot(fig, key="gerf-real")
            st.caption(f"A* = {cg.a_star(r, theta, int(d)):.6g} for this pair. Admissible: Re A < 1/8 (finite "
                       "variance); Re A < 1/16 for a finite fourth moment (Monte-Carlo error bars), Re A < 0 for "
                       "bounded features.")
            ui.downloads("rfviz-gerf-real-A", lambda: fg.columns_to_csv(c), fig, key="real")
    elif view == "complex-a":
        cc = st.columns([1, 1.2, 1.2, 1.6])
        s = int(state.radio("s", "s", ["+1", "-1"], "+1", container=cc[0]))
        re_min = state.slider("Re A min", "re_min", -2.0, 0.0, -0.5, step=0.05, container=cc[1])
        im_max = state.slider("|Im A| max", "im_max", 0.05, 2.0, 0.5, step=0.05, container=cc[2])
        zrange = ui.colour_range(state, container=cc[3], default=(-2.0, 2.0),
                                 help="auto: the lowest 92 % of the values (the variance blows up as Re A → 1/8); "
                                      "fixed: your own window in log₁₀ MSE")
        with ui.guard():
            d, m = ui.valid(D_PARAM, d), ui.valid(M_PARAM, m)
            re, im, z = _complex(r, theta, int(d), int(m), kernel, s, re_min, im_max)
            fig2 = fg.complex_A_figure(re, im, z, s, r, theta, int(d), zrange=zrange)
            ui.plot(fig2, key="gerf-complex")
            rr, ii = np.meshgrid(re, im)
            ui.downloads("rfviz-gerf-complex-A", lambda: fg.columns_to_csv({"re_A": rr.ravel(), "im_A": ii.ravel(),
                                                                            "log10_mse": z.ravel()}), fig2, key="cx")
    elif view == "oprf":
        z_max = state.slider("Z max (‖x + y‖²)", "z_max", 1.0, 200.0, 40.0, step=1.0)
        with ui.guard():
            d = ui.valid(D_PARAM, d)
            c3 = _oprf(int(d), z_max)
            fig3 = fg.oprf_figure(c3, int(d))
            ui.plot(fig3, key="gerf-oprf")
            st.caption("Both relative variances are kernel-independent. OPRF's gain grows with ‖x + y‖²: at d = 64, "
                       "Z = 100 the ratio is $e^{-61.2}$ (CRT Fig. 1). Dashed: SDERF ([DERF], FAVOR#), whose matrix A "
                       "puts all the reduction along x + y (OPRF's formula with d = 1); ADERF and SADERF also depend "
                       "on |x|/|y|: see the MSE explorer and the gallery.")
            ui.downloads("rfviz-oprf-vs-posrf", lambda: fg.columns_to_csv(c3), fig3, key="oprf")
    else:
        dc = st.columns(2)
        embedding = state.selectbox("Embedding of (r, θ) in ℝᵈ", "embedding", list(EMBEDDINGS), "canonical",
                                    container=dc[0],
                                    help="PoisRF and GeomRF depend on coordinates, not only on r and θ")
        shifted = state.toggle("Shifted variants PoisRF+ / GeomRF+ (CRT §3.2.3)", "shifted", False, container=dc[1])
        with ui.guard():
            d, m = ui.valid(D_PARAM, d), ui.valid(M_PARAM, m)
            pois, geo, optima = _dirf(r, theta, int(d), int(m), kernel, embedding, shifted)
            fig4 = fg.dirf_figure(pois, geo, optima, shifted)
            ui.plot(fig4, key="gerf-dirf")
            st.caption(f"λ* = {optima['lam_star']:.4g} (closed form), p* = {optima['p_star']:.4g} (numerical minimum). "
                       f"Embedding: {embedding}.")
            ui.downloads("rfviz-dirf", lambda: fg.columns_to_csv({"lam": pois["lam"], "poisson_log10_mse":
                                                                 pois["log10_mse"], "prob": geo["prob"],
                                                                 "geometric_log10_mse": geo["log10_mse"]}), fig4,
                         key="dirf")
