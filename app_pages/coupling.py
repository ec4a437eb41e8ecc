"""Coupling of the random projections (Simplex Random Features): p(w_ij), RF-conformity, MSE ratio vs iid, simplex+."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages import _ui as ui
from rfviz.compute import simrf as cs
from rfviz.figures import simrf as fc
from rfviz.figures.common import traces_csv
from rfviz.params import COUPLED_D_PARAM, M_PARAM, SAMPLES_PARAM, SEED_PARAM, TRIALS_PARAM, require_fits
from rfviz.registries import COUPLED_CLOSED_FORMS, COUPLING_TITLES, COUPLINGS, SAMPLED_COUPLINGS, known_title

with ui.page(
    "coupling",
    "Coupling: iid, orthogonal, simplex and simplex+ random features",
    "Drawing the m projections ω **jointly** instead of independently changes the MSE without changing the mean. "
    "What matters for positive features is the law of $w_{ij} = |\\omega_i + \\omega_j|$ over pairs in a block: "
    "simplex blocks (SimRF, maximally obtuse directions) move it to smaller values and narrow it; orthogonal "
    "blocks (ORF) narrow it too, though their peak sits slightly right of iid's. Fewer large $w_{ij}$ lower the "
    "**RF-conformity** ρ(v) and the MSE. **Simplex+** adapts the directions to the sampled norms "
    "(no closed form: Monte Carlo).",
    [
        (r"\mathrm{MSE} = \frac{e^{-2|x|^2-2|y|^2}}{m^2}\Big[m\,(e^{2v^2}-e^{v^2}) + P\,(\rho(v)-e^{v^2})\Big],"
         r"\quad v = |x+y|,\quad P = \sum_{\text{blocks}} m_b(m_b-1)",
         "SimRF Theorem 3.2 (appendix eq. 34; the main text's eq. 11 lost the diagonal term and the 1/m) for "
         "positive features and the Gaussian kernel (softmax: multiply by $e^{|x|^2+|y|^2}$); P counts the ordered "
         "coupled pairs: m(m − 1) for one block (m ≤ d), 0 for iid. [SimRF]"),
        (r"\rho(v) = \frac{\Gamma(d/2)}{m(m-1)}\sum_{i\ne j}\mathbb{E}\left[\sum_{k\ge 0}"
         r"\frac{v^{2k} w_{ij}^{2k}}{2^{2k}k!\,\Gamma(k+d/2)}\right]",
         "SimRF Definition 3.1, eq. 10 (RF-conformity; iid gives $\\rho = e^{v^2}$)."),
        (r"p_{\text{orth}}(w) \text{ and } p_{\text{simplex}}(w):\ \ w_{ij}^2 = |\omega_i|^2 + |\omega_j|^2 + "
         r"2|\omega_i||\omega_j|\cos\alpha,\ \ \cos\alpha = 0 \text{ (orth)},\ -\tfrac{1}{d-1} \text{ (simplex)}",
         "SimRF Lemmas 4.1 and 4.2 ($|\\omega| \\sim \\chi_d$ independent)."),
    ],
) as state:
    side = st.sidebar

    view = state.view()  # a slug of PAGES' coupling views: density, conformity, ratio-vs-v, ratio-vs-d, simplex-plus
    d_off = ui.unused("this view sweeps d") if view == "ratio-vs-d" else {}
    d = state.param(COUPLED_D_PARAM, container=side, disabled=bool(d_off), help=d_off.get("help"))
    uses_features = view in ("ratio-vs-v", "ratio-vs-d")
    features = state.selectbox("Features", "features", list(fc.FEATURE_LABELS), "positive", container=side,
                               **({} if uses_features else ui.unused("this view does not depend on the feature map")))
    m = state.param(M_PARAM, 16, container=side, label="m (projections; blocks of d when m > d)",
                    **({} if view == "ratio-vs-v" else ui.unused("only the MSE-ratio-vs-v view depends on m")))
    penalty_on = st.session_state.get(state.key("penalty"), st.query_params.get("penalty") == "true")
    v_off = {"density": None if penalty_on else "turn on the penalty overlay to use v",
             "conformity": "this view plots ρ over v", "ratio-vs-v": "this view plots the ratio over v"}.get(view)
    v = state.slider("v = |x + y| (z = |x − y| for trig)", "v", 0.05, 5.0, 1.0, step=0.05, container=side,
                     **(ui.unused(v_off) if v_off else {}))
    coupling_options = (list(fc.COUPLINGS_WITH_DENSITY) if view in ("density", "conformity")
                        else list(COUPLED_CLOSED_FORMS))
    coupling_help = {"help": "what is known about each coupling's MSE: " + "; ".join(
        f"{c.title}: {known_title(c.known)} ({c.citation})" for c in COUPLINGS.values())}
    if view == "simplex-plus":
        coupling_help = ui.unused("this view compares simplex+ iterations with iid draws")
    couplings = tuple(state.multiselect(
        "Couplings", "couplings", coupling_options, coupling_options, container=side,
        format_func=lambda c: f"{COUPLING_TITLES[c]} · {known_title(COUPLINGS[c].known)}", **coupling_help))
    if view in ("ratio-vs-v", "ratio-vs-d"):  # iid is not an option here: say so rather than drop it silently
        side.caption("**iid** is not among the couplings of this view: every curve is an MSE divided by the iid "
                     "MSE, so iid is the constant 1. Its own curve is in the density and conformity views.")
    side.caption(f"Sidebar scope: the **{state.views.label(view)}** view; greyed inputs are not used by it.")
    state.show_url_errors()


    @ui.shared_figure  # one figure object for every session with these parameters (read-only)
    def _density(d: int, samples: int, v: float | None, couplings: tuple[str, ...]):
        return fc.density_figure(d, couplings, drawn=cs.pair_sum_samples(d, couplings, samples), v=v)


    @ui.shared_figure  # one figure object for every session with these parameters (read-only)
    def _conformity(d: int, relative: bool, couplings: tuple[str, ...]):
        return fc.conformity_figure(d, couplings, relative=relative)


    @ui.shared_figure  # one figure object for every session with these parameters (read-only)
    def _ratio_v(d: int, m: int, features: str, couplings: tuple[str, ...]):
        return fc.ratio_vs_v_figure(d, m, features=features, couplings=couplings, v=np.geomspace(1e-2, 1e1, 81))


    @ui.shared_figure  # one figure object for every session with these parameters (read-only)
    def _iterations(d: int, v: float, seed: int):
        return fc.simplex_plus_iterations_figure(cs.draw_norms(d, seed), v=v, seed=seed)


    def _resample() -> None:
        st.session_state[state.key("norm_seed")] = int(st.session_state.get(state.key("norm_seed"), 0)) + 1


    @ui.shared_figure  # one figure object for every session with these parameters (read-only)
    def _ratio_d(v: float, features: str, blocks: int, couplings: tuple[str, ...]):
        return fc.ratio_vs_d_figure(v, features=features, blocks=blocks, couplings=couplings)


    def _sampled_ratios(d: int, m: int, features: str, trials: int, seed: int, progress) -> dict:
        """Sampled MSE/MSE_iid per coupling (shared by every session; ``progress`` draws this page's bar)."""
        return ui.memo("coupling-mc", (d, m, features, trials, seed),
                       lambda report: cs.sampled_ratio_columns(d, m, features, trials=trials, seed=seed,
                                                               progress=report), progress)


    with ui.guard():
        d, m = ui.valid(COUPLED_D_PARAM, d), ui.valid(M_PARAM, m)
        if view == "density":
            c = st.columns(3)
            hist = state.toggle("Sampled histograms", "hist", False, container=c[0],
                                help=f"draws |ωᵢ + ωⱼ| from rfviz's samplers (d ≤ {cs.HISTOGRAM_MAX_D})")
            samples = state.param(SAMPLES_PARAM, container=c[1], disabled=not hist)
            penalty = state.toggle("Overlay the penalty f(w, v)", "penalty", False, container=c[2])
            fig = _density(d, ui.valid(SAMPLES_PARAM, samples) if hist else 0, v if penalty else None, couplings)
            ui.plot(fig, key="cpl-density")
            ui.downloads("rfviz-coupling-density", lambda: traces_csv(fig), fig, key="dens")
        elif view == "conformity":
            relative = state.toggle("Relative to iid (ρ(v)·exp(−v²))", "relative", True)
            fig2 = _conformity(d, relative, couplings)
            ui.plot(fig2, key="cpl-conf")
            ui.downloads("rfviz-coupling-conformity", lambda: traces_csv(fig2), fig2, key="conf")
        elif view == "ratio-vs-v":
            fig3 = _ratio_v(d, m, features, couplings)
            mc_cols = st.columns([2, 1, 1])
            mc = state.mc_switch(f"Monte Carlo at {len(cs.SAMPLED_V)} values of v (every coupled coupling)", "mc",
                                 container=mc_cols[0],
                                 help=", ".join(f"{COUPLING_TITLES[c]} ({known_title(COUPLINGS[c].known)})"
                                                for c in SAMPLED_COUPLINGS))
            trials = state.param(TRIALS_PARAM, 1000, container=mc_cols[1], disabled=not mc)
            mc_seed = state.param(SEED_PARAM, 7, container=mc_cols[2], disabled=not mc)
            if mc:
                trials, mc_seed = ui.valid(TRIALS_PARAM, trials), ui.valid(SEED_PARAM, mc_seed)
                bar = st.progress(0.0, text="sampling couplings…")
                pts = _sampled_ratios(d, m, features, trials, int(mc_seed), lambda f: bar.progress(min(1.0, f)))
                bar.empty()
                fig3 = fc.add_sampled_ratios(fig3, pts)
                st.caption("Sampled MSE divided by the iid closed form (v ≤ 1.3: beyond, positive features are "
                           "heavy-tailed and the sample MSE is biased low). Simplex+, SORF, Fastfood and the QMC "
                           "point sets have no closed form: markers only (SORF is also biased, within [ORF] Thm 5's "
                           "bound). Simplex+ should sit at or below simplex.")
            ui.plot(fig3, key="cpl-ratio-v")
            ui.downloads("rfviz-coupling-ratio-v", lambda: traces_csv(fig3), fig3, key="rv")
        elif view == "ratio-vs-d":
            blocks = state.slider("blocks (m = blocks·d)", "blocks", 1, 8, 1)
            fig4 = _ratio_d(v, features, blocks, couplings)
            ui.plot(fig4, key="cpl-ratio-d")
            ui.downloads("rfviz-coupling-ratio-d", lambda: traces_csv(fig4), fig4, key="rd")
        elif hasattr(fc, "simplex_plus_iterations_figure"):
            c5 = st.columns([1, 1, 2])
            norm_seed = state.number("norms seed", "norm_seed", 0, int, container=c5[0], spec=SEED_PARAM)
            c5[1].button("Resample the norms", on_click=_resample, icon=":material/casino:")
            with ui.guard():
                norm_seed = ui.valid(SEED_PARAM, norm_seed)
                # the iid reference draws 100 sets of d×d directions (≈ 100·d³ floats): refused up front if too big
                require_fits(f"the simplex+ iterations at d = {d}", 100 * 8 * float(d) ** 3, "lower d")
                fig5 = _iterations(d, v, norm_seed)
                ui.plot(fig5, key="cpl-iter")
                st.caption("SimRF Fig. 4: the data-dependent simplex+ directions lower the conformity below SimRF's in "
                           "a few passes of Eq. 17, for one draw of the d norms.")
                ui.downloads("rfviz-simplex-plus-iterations", lambda: traces_csv(fig5), fig5, key="iter")
        else:
            st.info("The simplex+ iteration figure is not available in this installation.")
