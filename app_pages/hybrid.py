"""Hybrid estimators (HRF paper): λ-coefficients, the hybrid MSE against its base estimators, max-relative-error."""

from __future__ import annotations

import streamlit as st

from app_pages import _ui as ui
from rfviz.compute import hrf as ch
from rfviz.estimators import REGISTRY
from rfviz.figures import hrf as fh
from rfviz.params import M_PARAM, SEED_PARAM, TRIALS_PARAM

LAMBDA_SPEC = {p.name: p for p in REGISTRY["hybrid_gaussian"].spec}  # n and σ: declared by the hybrid estimator

with ui.page(
    "hybrid",
    "Hybrid estimators",
    "A **hybrid** mixes the trigonometric and positive (++) estimators of the softmax kernel with a random "
    "coefficient λ̂ estimated by its own random features: K̂ = λ̂·SM₊₊ + (1 − λ̂)·SM_trig. Trig is exact at θ = 0, "
    "++ at θ = π; the **angular** λ(θ) = θ/π (n sign projections) makes the hybrid exact at both ends, the "
    "**Gaussian** λ (n trig features, bandwidth σ) is smooth in θ and r. Inputs are on the sphere of radius r.",
    [
        (r"\widehat{SM}^{\mathrm{hyb}} = \hat\lambda\,\widehat{SM}_{++} + "
         r"(1-\hat\lambda)\,\widehat{SM}_{\mathrm{trig}},"
         r"\quad \mathrm{MSE} = \mathbb{E}[\hat\lambda^2]\,\mathrm{MSE}_{++} + \mathbb{E}[(1-\hat\lambda)^2]\,"
         r"\mathrm{MSE}_{\mathrm{trig}}",
         "HRF eq. 12 and Theorem 3.1 eq. 22 (independent λ̂)."),
        (r"\text{angular: } \hat\lambda = \mathrm{Bin}(n, \theta/\pi)/n,\quad \mathbb{E}[\hat\lambda^2] = "
         r"p\,(p - p/n + 1/n),\ \ \mathbb{E}[(1-\hat\lambda)^2] = (1-p)(1-p+p/n),\ p = \theta/\pi",
         "HRF Lemma 3.2 eq. 24; eq. 47 corrected (the paper prints E[λ̂(1−λ̂)] as the trig coefficient: "
         "docs: derivations/hrf-angular-hybrid)."),
        (r"\text{Gaussian: } \lambda(\theta,r) = \frac{1-e^{-2\sigma^2 r^2 \sin^2(\theta/2)}}{1-e^{-2\sigma^2 r^2}}",
         "HRF App. F eqs. 67–76 (σ inside sin/cos of eq. 70)."),
        (r"\max_\theta \varepsilon_{\theta,r} \le \frac{W(r)}{\sqrt{2m}}\sqrt{\frac{1-1/n}{\pi r^2} + "
         r"\frac{1}{n\sqrt{\pi}\,r}},\quad W(r) = e^{2r^2}(1-e^{-4r^2})",
         "HRF Theorem 3.5 corrected (the printed eq. 27 has 1/(n√π r²) and fails for small n, large r; "
         "docs: errata)."),
    ],
) as state:
    side = st.sidebar

    view = state.view()  # a slug of PAGES' hybrid views: lambda, mse-vs-base, winner, max-error
    max_view = view == "max-error"
    kind = state.radio("λ-coefficient", "lam", list(ch.LAMBDAS), "angular", container=side,
                       **(ui.unused("the max-relative-error bound (HRF Thm 3.5) is for the angular λ") if max_view
                          else {}))
    if max_view:
        kind = "angular"
    m = state.param(M_PARAM, 10, container=side, label="m (projections ω per base estimator)")
    n = state.param(LAMBDA_SPEC["n"], 8 if kind == "angular" else 4, container=side, label="n (λ-features)")
    sigma_off = "the angular λ has no bandwidth" if kind == "angular" else None
    sigma = state.param(LAMBDA_SPEC["sigma"], container=side, label="σ (Gaussian λ bandwidth)", step=0.1,
                        disabled=sigma_off is not None,
                        help=f"Not used here: {sigma_off}" if sigma_off else "used by the Gaussian λ only")
    if view in ("lambda", "mse-vs-base"):
        r = state.slider("r (input length)", "r", 0.1, 5.0, 1.0, step=0.05, container=side)
    else:
        r_max = state.slider("r max (maps and max-error)", "r_max", 1.5, 8.0, 4.0, step=0.1, container=side)
    side.caption(f"Sidebar scope: the **{state.views.label(view)}** view.")
    state.show_url_errors()


    @ui.cached
    def _lambda(kind: str, r: float, n: int, sigma: float, m: int):
        return ch.lambda_columns(kind, r, n, sigma, m)


    @ui.cached
    def _mse(kind: str, r: float, n: int, sigma: float, m: int):
        return ch.mse_columns(kind, r, n, sigma, m)


    @ui.cached_mc  # shared by every session, computed once, in the server's bounded Monte-Carlo pool
    def _sampled_mse(kind: str, r: float, n: int, sigma: float, m: int, trials: int, seed: int):
        return ch.sampled_mse_columns(kind, r, n, sigma, m, trials, seed)


    @ui.cached
    def _winner(kind: str, r_max: float, n: int, sigma: float, m: int):
        return ch.winner_columns(kind, r_max, n, sigma, m)


    @ui.cached
    def _max_error(r_max: float, n: int, m: int):
        return ch.max_error_columns(r_max, n, m)


    @ui.shared_figure  # closed-form views: one figure object for every session with these parameters
    def _closed_form_figure(view: str, kind: str, r: float, r_max: float, n: int, sigma: float, m: int):
        if view == "lambda":
            return fh.lambda_figure(_lambda(kind, r, n, sigma, m), kind)
        if view == "mse-vs-base":
            return fh.mse_figure(_mse(kind, r, n, sigma, m), kind, r, None)
        if view == "winner":
            return fh.winner_figure(*_winner(kind, r_max, n, sigma, m))
        return fh.max_error_figure(_max_error(r_max, n, m), n)


    with ui.guard():
        m, n, sigma = ui.valid(M_PARAM, m), ui.valid(LAMBDA_SPEC["n"], n), ui.valid(LAMBDA_SPEC["sigma"], sigma)
        if view == "lambda":
            c = _lambda(kind, r, n, sigma, m)
            fig = _closed_form_figure(view, kind, r, 0.0, n, sigma, m)
            ui.plot(fig, key="hyb-lambda")
            ui.downloads("rfviz-hybrid-lambda", lambda: fh.columns_to_csv(c), fig, key="lam")
        elif view == "mse-vs-base":
            c2 = _mse(kind, r, n, sigma, m)
            mc_cols = st.columns([2, 1, 1])
            mc_on = state.mc_switch("Monte Carlo points", "mc", container=mc_cols[0],
                                    help="sample trig, ++ and the hybrid with rfviz.engine at 13 angles (±2 SE bars)")
            trials = state.param(TRIALS_PARAM, 4000, container=mc_cols[1], disabled=not mc_on)
            seed = state.param(SEED_PARAM, container=mc_cols[2], disabled=not mc_on)
            sampled = None
            if mc_on:
                trials, seed = ui.valid(TRIALS_PARAM, trials), ui.valid(SEED_PARAM, seed)
                with st.spinner("sampling…"):
                    sampled = _sampled_mse(kind, r, n, sigma, m, trials, seed)
                st.caption("Positive (++) features are heavy-tailed at large r·cos(θ/2): there the sample MSE "
                           "converges slowly and usually falls below the closed form.")
            fig2 = (fh.mse_figure(c2, kind, r, sampled) if sampled is not None
                    else _closed_form_figure(view, kind, r, 0.0, n, sigma, m))
            ui.plot(fig2, key="hyb-mse")
            st.caption("The oracle curve uses the best deterministic λ* = MSE_trig/(MSE_trig + MSE_++) (derived), "
                       "a lower envelope for every bipolar hybrid with independent λ̂.")
            ui.downloads("rfviz-hybrid-mse", lambda: fh.columns_to_csv(c2), fig2, key="mse")
        elif view == "winner":
            rr, tt, panels = _winner(kind, r_max, n, sigma, m)
            fig3 = _closed_form_figure(view, kind, 0.0, r_max, n, sigma, m)
            ui.plot(fig3, key="hyb-win")
            ui.downloads("rfviz-hybrid-winner", lambda: fh.grid_csv(rr, tt, panels), fig3, key="win")
        else:
            c4 = _max_error(r_max, n, m)
            fig4 = _closed_form_figure(view, "angular", 0.0, r_max, n, sigma, m)
            ui.plot(fig4, key="hyb-max")
            st.caption("Normalised by W(r)/√(2m), the common worst case of trig and ++ (HRF eq. 26). For the angular "
                       "hybrid only; red crosses mark radii where the printed bound (eq. 27) is violated.")
            ui.downloads("rfviz-hybrid-max-error", lambda: fh.columns_to_csv(c4), fig4, key="max")
