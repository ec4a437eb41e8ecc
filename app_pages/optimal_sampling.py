"""Optimal importance sampling Ψ (All Random Features Representations are Equivalent): Ψ*, V*, the equivalence."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from app_pages import _ui as ui
from rfviz.compute import optimal as co
from rfviz.figures import optimal as fo
from rfviz.figures.common import traces_csv
from rfviz.maths.optimal import INPUT_KINDS, KERNELS, MECHANISMS, InputLaw, OptimalSampling
from rfviz.params import D_PARAM

with ui.page(
    "optimal_sampling",
    "Optimal sampling Ψ",
    "Sample ω from a proposal Ψ instead of Ω = N(0, I) and reweight by $p_\\Omega/p_\\Psi$: the estimator stays "
    "unbiased and its variance, averaged over the input distribution, is minimised by $\\Psi^* \\propto "
    "p_\\Omega\\,q_\\phi$. Here: the radial density of |ω| under Ψ* against Ω's $\\chi_d$, the optimal variance V* "
    "against the unweighted one as the input scale moves (regions "
    "where a variance or its Monte-Carlo estimate diverges are shaded), and the claimed **equivalence** of trig and "
    "positive features under their optimal Ψ, which holds when X₁ = X₂ and fails otherwise.",
    [
        (r"\Psi^*(\omega) \propto p_\Omega(\omega)\,q_\phi(\omega),\quad q_\phi(\omega) = "
         r"\sqrt{\mathbb{E}_{x_1,x_2}\,\phi(x_1,\omega)^2\,\phi(x_2,\omega)^2},\quad "
         r"V^* = \left(\mathbb{E}_\Omega\, q_\phi\right)^2 - \mathbb{E}\,K^2",
         "Optimal-sampling paper, Theorem 1 ([OS])."),
        (r"X_1 = X_2:\ \ V^*_{\mathrm{trig}} = V^*_{\mathrm{pos}} = "
         r"\left(\mathbb{E}\,K(x,x)\right)^2 - \mathbb{E}\,K^2",
         "Corollaries 1–2; the equality fails for X₁ ≠ X₂."),
    ],
) as state:
    side = st.sidebar

    view = state.view()  # a slug of PAGES' optimal_sampling views: density, variance, equivalence
    equiv = view == "equivalence"
    sweep = view == "variance"
    EQ = "the equivalence view uses X₁ = Unif(r·S), X₂ = Unif(r2·S) and sweeps r2"
    kind = state.selectbox("Inputs", "inputs", list(INPUT_KINDS), "sphere", container=side,
                           **(ui.unused(EQ) if equiv else {"help": "sphere: x, y ~ Unif(r·S); gaussian: N(0, σ²I); "
                                                                   "pair: fixed x, y; two_spheres: radii r, r2"}))
    kernel = state.selectbox("Kernel", "kernel", list(KERNELS), "softmax", container=side)
    d = state.param(D_PARAM, 8, container=side, label="d (dimension)")


    def _off(used: bool, reason: str) -> dict:
        return {} if used else ui.unused(reason)


    r = state.slider("r (radius)", "r", 0.05, 3.0, 1.0, step=0.05, container=side,
                     **_off(equiv or (kind != "gaussian" and not sweep),
                            "this view sweeps r" if sweep and kind != "gaussian" else "Gaussian inputs have no radius"))
    r2 = state.slider("r2 (second radius)", "r2", 0.05, 3.0, 0.5, step=0.05, container=side,
                      **_off(not equiv and kind in ("pair", "two_spheres"),
                             EQ if equiv else "only pair and two_spheres inputs have a second radius"))
    sigma = state.slider("σ (Gaussian inputs)", "sigma", 0.01, 1.0, 0.3, step=0.01, container=side,
                         **_off(not equiv and not sweep and kind == "gaussian",
                                EQ if equiv else ("this view sweeps σ" if sweep and kind == "gaussian"
                                                  else "only Gaussian inputs have σ")))
    theta = state.slider("θ (pair angle, rad)", "theta", 0.0, float(np.pi), 1.0, step=0.01, container=side,
                         **_off(not equiv and kind == "pair", EQ if equiv else "only pair inputs have an angle"))
    side.caption(f"Sidebar scope: the **{ui.plain(state.views.label(view))}** view; greyed inputs are not used by it.")
    state.show_url_errors()


    @ui.shared_figure  # one figure object for every session with these parameters (read-only)
    def _density(kind, kernel, d, r, r2, sigma, theta):
        law = InputLaw(kind, d, r=r, r2=r2, sigma=sigma, theta=theta)
        return fo.psi_radial_density_figure([OptimalSampling(m, law, kernel) for m in MECHANISMS])


    @ui.shared_figure  # one figure object for every session with these parameters (read-only)
    def _sweep(kind, kernel, d, axis, lo, hi, relative, fixed: dict):
        return fo.variance_sweep_figure(kind, d, axis, np.linspace(lo, hi, 25), kernel, relative=relative, **fixed)


    @ui.shared_figure  # one figure object for every session with these parameters (read-only)
    def _equivalence(r, d, kernel, hi):
        return fo.equivalence_figure(r, np.linspace(0.05, hi, 25), d, kernel)


    with ui.guard():
        d = ui.valid(D_PARAM, d)
        if view == "density":
            fig = _density(kind, kernel, d, r, r2, sigma, theta)
            ui.plot(fig, key="psi-density")
            ui.announce_coinciding(fig)
            ui.downloads("rfviz-psi-density", lambda: traces_csv(fig), fig, key="dens")
        if view == "variance":
            axis = "sigma" if kind == "gaussian" else "r"
            c = st.columns(2)
            top = 0.7 if axis == "sigma" and kernel == "softmax" else (1.5 if axis == "sigma" else 3.0)
            hi = state.slider(f"largest {'σ' if axis == 'sigma' else 'r'} of the sweep", f"sweep_{axis}_{kernel}", 0.2,
                              top, 0.7 if axis == "sigma" else 2.0, step=0.05, container=c[0])
            relative = state.toggle("Relative to E K²", "relative", False, container=c[1])
            fixed = {"sphere": {}, "gaussian": {}, "pair": {"r2": r2, "theta": theta},
                     "two_spheres": {"r2": r2}}[kind]
            fig2 = _sweep(kind, kernel, d, axis, hi / 25, hi, relative, fixed)
            mc_key = ("optimal_sampling.mc", kind, kernel, d, axis, hi, relative, tuple(sorted(fixed.items())))
            if st.button("Run Monte Carlo", key="optimal_sampling.run_mc",
                         help="sample the variance at 5 points of the sweep, under Ψ* and Ω (4000 draws each, ±2 SE)"):
                with st.spinner("sampling…"):
                    st.session_state[mc_key] = co.variance_sweep_mc(kind, d, axis, np.linspace(hi / 5, hi, 5), kernel,
                                                                    relative=relative, **fixed)
            if mc_key in st.session_state:
                fig2 = fo.add_mc_points(go.Figure(fig2), st.session_state[mc_key])
            ui.plot(fig2, key="psi-sweep")
            ui.announce_coinciding(fig2)
            ui.downloads("rfviz-psi-variance", lambda: traces_csv(fig2), fig2, key="sweep")
        if view == "equivalence":
            hi2 = state.slider("r2 max", "r2_max", 0.5, 3.0, 2.0, step=0.05)
            fig3 = _equivalence(r, d, kernel, hi2)
            ui.plot(fig3, key="psi-equiv")
            st.caption("X₁ = Unif(r·S), X₂ = Unif(r2·S): the two optimal variances meet only at r2 = r.")
            ui.downloads("rfviz-psi-equivalence", lambda: traces_csv(fig3), fig3, key="eq")
