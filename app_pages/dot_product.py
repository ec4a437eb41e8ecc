"""Dot-product kernel sketches: polynomial sketches (q), TensorSRHT, Maclaurin features."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages import _ui as ui
from rfviz.compute import dp as cd
from rfviz.estimators import REGISTRY
from rfviz.figures.common import traces_csv
from rfviz.geometry import EMBEDDINGS
from rfviz.params import D_PARAM, DEGREE_PARAM, M_PARAM

with ui.page(
    "dot_product",
    "Dot-product kernel sketches",
    "Random features for the polynomial kernel (x·y)ᵖ multiply p independent random projections. Each weight entry "
    "is real (q = 1), imaginary (q = 0) or a complex mix (q = ½); the variance depends on q only through (2q − 1)², "
    "and **complex features beat real ones exactly when (x·y)² > S = Σₖ xₖ²yₖ²**. TensorSRHT replaces the Gaussian/"
    "Rademacher projections by subsampled randomised Hadamard transforms (one independent permutation per degree). "
    "Maclaurin features approximate the exponential (softmax) and Gaussian kernels by allocating the m features over "
    "the degrees of the Taylor series. These variances depend on coordinates through S, so the pair (r, θ) is placed "
    "in ℝᵈ by the chosen embedding. Default variance: the complex E|k̂ − k|².",
    [
        (r"\mathrm{Var}\,\hat k = \frac{1}{m}\left[\left(|x|^2|y|^2 + \kappa (x\cdot y)^2 + (\mu_4 - 1 - \kappa)"
         r"S\right)^p - (x\cdot y)^{2p}\right]\ \text{(per the basis)},\quad \kappa = 1 + (2q-1)^2,\ "
         r"S = \textstyle\sum_k x_k^2 y_k^2",
         "Improved Random Features for Dot Product Kernels, Theorem 2 family ([DP] "
         "§3, exact forms per basis and variance type)."),
        (r"\mathrm{Var}_{\mathrm{TensorSRHT}}:\ \text{Thm 5 / 10, within-block pairs } c(m,d) = "
         r"\lfloor m/d\rfloor d(d-1) + (m \bmod d)(m \bmod d - 1)",
         "Reference §3 (one permutation per degree; the shared reading is wrong)."),
        (r"k(x,y) = \sum_n a_n (x\cdot y)^n:\ \ \min_{p,\,m_1+\dots+m_p = m}\ \sum_{n\le p} a_n^2\,"
         r"\mathrm{Var}_n(m_n) + \mathrm{bias}_p^2",
         "Optimised Maclaurin features, §5.3 Algorithms 2–3 ([DP] eqs. 45–51)."),
    ],
) as state:
    side = st.sidebar

    SKETCHES = ("poly_sketch", "tensor_srht")

    view = state.view()  # a slug of PAGES' dot_product views
    label = state.views.label(view)
    USES = {  # the sidebar inputs each view's figure reads
        "vs-q": {"d", "m", "p", "r", "theta", "embedding"},
        "vs-p": {"d", "m", "r", "theta", "embedding", "variance"},
        "vs-d": {"m", "p", "r", "theta", "embedding", "variance"},
        "vs-m": {"d", "p", "r", "theta", "embedding"},
        "real-vs-complex": {"m", "p", "r", "basis", "variance"},
        "tsrht-vs-rademacher": {"d", "q", "r", "theta", "embedding"},
        "maclaurin-exp": {"d", "m", "r", "variance"},
        "maclaurin-gauss": {"d", "m", "r", "variance"},
        "sketches-vs-m": {"d", "m", "p", "r", "theta", "embedding"},
    }[view]


    def _scope(name: str) -> dict:
        """Disable a sidebar input the chosen view ignores (it sweeps it, or plots every choice of it)."""
        return {} if name in USES else ui.unused(f"the “{label}” view sweeps it or does not depend on it")


    MC_M = (4, 16, 64)  # the m of the sampled sketches; their closed-form curves reach the largest
    M_DEFAULT = 256 if view.startswith("maclaurin") else 16  # 16 features all go to degree 1: four identical bars
    d = state.param(D_PARAM, 8, container=side, label="d (dimension)", **_scope("d"))
    m = state.param(M_PARAM, M_DEFAULT, container=side, label="m (features)", **_scope("m"))
    p = state.param(DEGREE_PARAM, container=side, **_scope("p"))
    q = state.slider("q (real/imaginary mix)", "q", 0.0, 1.0, 0.5, step=0.05, container=side, **_scope("q"))
    basis = state.selectbox("Basis", "basis", ["rademacher", "plus_minus_i", "unit_circle", "gaussian"], "rademacher",
                            container=side, **(_scope("basis") or {
                                "help": "distribution of each weight entry (TensorSRHT: not gaussian)"}))
    variance = state.selectbox("Variance", "variance", ["complex", "real_part"], "complex", container=side,
                               **(_scope("variance") or {
                                   "help": "complex: E|k̂ − k|² (default); real_part: E(Re k̂ − k)²"}))
    r = state.slider("r (input length)", "r", 0.1, 2.0, 1.0, step=0.05, container=side, **_scope("r"))
    theta = state.slider("θ (angle, rad)", "theta", 0.0, float(np.pi), 0.79, step=0.01, container=side,
                         **_scope("theta"))
    embedding = state.selectbox("Embedding of (r, θ) in ℝᵈ", "embedding", list(EMBEDDINGS), "flat", container=side,
                                **(_scope("embedding") or {
                                    "help": "these variances depend on coordinates through S = Σ x_k² y_k²"}))
    side.caption(f"Sidebar scope: the **{label}** view; greyed inputs are not used by it.")
    state.show_url_errors()

    FIGURES = {  # view slug → its figure
        "vs-q": lambda: cd.variance_vs_q(r, theta, d, p, m, embedding),
        "vs-p": lambda: cd.variance_vs_p(r, theta, d, m, embedding=embedding, variance=variance),
        "vs-d": lambda: cd.variance_vs_d(r, theta, p, m, embedding, variance=variance),
        "vs-m": lambda: cd.variance_vs_m(r, theta, d, p, embedding=embedding),
        "real-vs-complex": lambda: cd.real_complex_ratio_map(p, m, r, basis=basis, variance=variance),
        "tsrht-vs-rademacher": lambda: cd.tsrht_vs_rademacher(r, theta, d, q, embedding=embedding),
        "sketches-vs-m": lambda: cd.sketches_vs_m(r, theta, d, p, max(m, *MC_M), embedding),
        "maclaurin-exp": lambda: cd.maclaurin_allocation("exponential", m, d=d, r=r, variance=variance),
        "maclaurin-gauss": lambda: cd.maclaurin_allocation("gaussian", m, d=d, r=r, variance=variance),
    }
    MC_VIEW = "sketches-vs-m"


    @ui.shared_figure  # one figure object for every session with these parameters (read-only)
    def _figure(view: str, d: int, m: int, p: int, q: float, basis: str, variance: str, r: float, theta: float,
                embedding: str):
        return FIGURES[view]()


    with ui.guard():
        d, m, p = ui.valid(D_PARAM, d), ui.valid(M_PARAM, m), ui.valid(DEGREE_PARAM, p)
        for name in SKETCHES:  # validate every parameter through the estimators' specs
            REGISTRY[name](p=p, q=q, m=m, variance=variance, **({"basis": basis} if basis != "gaussian" or
                                                                 name == "poly_sketch" else {}))
        fig = _figure(view, d, m, p, q, basis, variance, r, theta, embedding)
        if view == MC_VIEW:  # sampled points only on request: Monte Carlo takes seconds
            mc_key = ("dot_product.mc", r, theta, d, p, m, embedding)
            if st.button("Run Monte Carlo", key="dot_product.run_mc",
                         help=f"sample every sketch with the engine at m = {', '.join(map(str, MC_M))} (1000 trials "
                              "each; ±2 SE bars)"):
                with st.spinner("sampling…"):
                    st.session_state[mc_key] = ui.memo("dot_product.mc", mc_key, lambda report: cd.sketches_vs_m_mc(
                        r, theta, d, p, MC_M, embedding, trials=1000))
            if mc_key in st.session_state:
                fig = cd.sketches_vs_m(r, theta, d, p, max(m, *MC_M), embedding, points=st.session_state[mc_key])
        ui.plot(fig, key="dot-view")
        st.caption(f"Quantity: {'E|k̂ − k|²' if variance == 'complex' else 'E(Re k̂ − k)²'} where the view lets you "
                   f"choose; inputs at r = {r:g}, θ = {theta:.3g} in the {embedding} embedding (the real-vs-complex "
                   "map uses the flat embedding over d).")
        ui.downloads("rfviz-dot-product", lambda: traces_csv(fig), fig, key="dot")
