"""Coupling of the random projections (Simplex Random Features): p(w_ij), RF-conformity, MSE ratio vs iid, simplex+."""

from __future__ import annotations

import numpy as np
import streamlit as st

from rfviz import ParameterError, ui
from rfviz.figures import simrf as fc
from rfviz.figures.common import traces_csv

state = ui.PageState("coupling")
ui.header(
    "Coupling: iid, orthogonal, simplex and simplex+ random features",
    "Drawing the m projections ω **jointly** instead of independently changes the MSE without changing the mean. "
    "What matters for positive features is the law of w_ij = |ω_i + ω_j| over pairs in a block: orthogonal blocks "
    "(ORF) and simplex blocks (SimRF, maximally obtuse directions) push it down, which lowers the **RF-conformity** "
    "ρ(v) and the MSE. **Simplex+** adapts the directions to the sampled norms (no closed form: Monte Carlo).",
    [
        (r"\mathrm{MSE}_{\text{coupled}} = \mathrm{MSE}_{\text{iid}} - \frac{m-1}{m}\,e^{-2(|x|^2+|y|^2)}"
         r"\left(e^{2v^2}\,\!-\,\rho(v)\right)\cdot(\ldots),\qquad \rho(v) = \frac{\Gamma(d/2)}{m(m-1)}"
         r"\sum_{i\ne j}\mathbb{E}\left[\sum_k \frac{v^{2k} w_{ij}^{2k}}{2^{2k}k!\,\Gamma(k+d/2)}\right]",
         "SimRF Definition 3.1 (RF-conformity) and Theorem 4.3; exact brackets in reference "
         "simplex_random_features.md §3 (m ≤ d and blocks for m > d)."),
        (r"p_{\text{orth}}(w) \text{ and } p_{\text{simplex}}(w):\ \ w_{ij}^2 = |\omega_i|^2 + |\omega_j|^2 + "
         r"2|\omega_i||\omega_j|\cos\alpha,\ \ \cos\alpha = 0 \text{ (orth)},\ -\tfrac{1}{d-1} \text{ (simplex)}",
         "SimRF Lemmas 4.1 and 4.2 (|ω| ~ χ_d independent)."),
    ],
)
ui.sidebar_info()
side = st.sidebar

d = state.number("d (dimension)", "d", 16, int, container=side)
features = state.selectbox("Features", "features", list(fc.FEATURE_LABELS), "positive", container=side)
m = state.number("m (projections; blocks of d when m > d)", "m", 16, int, container=side)
v = state.slider("v = |x + y| (z = |x − y| for trig)", "v", 0.05, 5.0, 1.0, step=0.05, container=side)
state.show_url_errors()


@ui.cached
def _density(d: int, samples: int, v: float | None):
    return fc.density_figure(d, samples=samples, v=v)


@ui.cached
def _conformity(d: int, relative: bool):
    return fc.conformity_figure(d, relative=relative)


@ui.cached
def _ratio_v(d: int, m: int, features: str):
    return fc.ratio_vs_v_figure(d, m, features=features, v=np.geomspace(1e-2, 1e1, 81))


@ui.cached
def _iterations(d: int, v: float, seed: int):
    norms = np.sqrt(np.random.default_rng(seed).chisquare(d, size=d))  # one draw of the d lengths |ω_i| ~ χ_d
    return fc.simplex_plus_iterations_figure(norms, v=v, seed=seed)


def _resample() -> None:
    st.session_state[state.key("norm_seed")] = int(st.session_state.get(state.key("norm_seed"), 0)) + 1


@ui.cached
def _ratio_d(v: float, features: str, blocks: int):
    return fc.ratio_vs_d_figure(v, features=features, blocks=blocks)


def _sampled_ratios(d: int, m: int, features: str, vs: tuple[float, ...], trials: int, progress) -> dict:
    """Monte-Carlo MSE/MSE_iid(closed form) per coupling at |x + y| = v (x = y = v/2·e1; trig: x = −y)."""
    import rfviz
    from rfviz.engine import monte_carlo

    key = ui.freeze((d, m, features, vs, trials))

    def compute() -> dict:
        out = {}
        couplings = ("orthogonal", "simplex", "simplex_plus")
        iid = rfviz.create(features, m=m, coupling="iid")
        for i, c in enumerate(couplings):
            est = rfviz.create(features, m=m, coupling=c)
            r = np.asarray(vs) / 2
            x = np.zeros((len(vs), 2))
            x[:, 0] = r
            y = -x if features == "trig" else x.copy()
            res = monte_carlo(est, x, y, d=d, trials=trials, seed=7,
                              progress=lambda f, i=i: progress((i + f) / len(couplings)))
            ref = np.exp(np.reshape(iid.log_mse(x, y, d), np.shape(res.rel_mse)) - 2 * res.log_scale)
            out[c] = (np.asarray(vs), np.ravel(res.rel_mse / ref), np.ravel(res.rel_mse_stderr / ref))
        return out

    return ui.memo("coupling-mc", key, compute)


with ui.guard():
    if int(d) < 2:
        raise ParameterError(f"d must be an integer in [2, inf) for coupled projections, got {d}")
    if int(m) < 1:
        raise ParameterError(f"m must be an integer in [1, inf), got {m}")
    d, m = int(d), int(m)
    tabs = st.tabs(["Density p(w_ij)", "RF-conformity ρ(v)", "MSE ratio vs v (+ simplex+)", "MSE ratio vs d",
                    "Simplex+ iterations"])
    with tabs[0]:
        c = st.columns(3)
        hist = state.toggle("Sampled histograms", "hist", False, container=c[0],
                            help=f"draws |ω_i + ω_j| from rfviz's samplers (d ≤ {fc.HISTOGRAM_MAX_D})")
        samples = state.number("samples", "samples", 3000, int, container=c[1])
        penalty = state.toggle("Overlay the penalty f(w, v)", "penalty", False, container=c[2])
        if hist and not 10 <= int(samples) <= 200_000:
            raise ParameterError(f"samples must be an integer in [10, 200000], got {samples}")
        fig = _density(d, int(samples) if hist else 0, v if penalty else None)
        ui.plot(fig, key="cpl-density")
        ui.downloads("rfviz-coupling-density", lambda: traces_csv(fig), fig, key="dens")
    with tabs[1]:
        relative = state.toggle("Relative to iid (ρ(v)·e^{−v²})", "relative", True)
        fig2 = _conformity(d, relative)
        ui.plot(fig2, key="cpl-conf")
        ui.downloads("rfviz-coupling-conformity", lambda: traces_csv(fig2), fig2, key="conf")
    with tabs[2]:
        fig3 = _ratio_v(d, m, features)
        mc_cols = st.columns([2, 1])
        mc = state.toggle("Monte Carlo at 6 values of v (orthogonal, simplex, simplex+)", "mc", False,
                          container=mc_cols[0])
        trials = state.number("trials", "trials", 1000, int, container=mc_cols[1])
        if mc:
            if not 2 <= int(trials) <= 10**6:
                raise ParameterError(f"trials must be an integer in [2, 1000000], got {trials}")
            bar = st.progress(0.0, text="sampling couplings…")
            pts = _sampled_ratios(d, m, features, (0.05, 0.2, 0.5, 0.8, 1.0, 1.3), int(trials),
                                  lambda f: bar.progress(min(1.0, f)))
            bar.empty()
            fig3 = fc.go.Figure(fig3)
            for i, (cname, (xs, ratio, se)) in enumerate(pts.items()):
                fig3.add_trace(fc.go.Scatter(x=xs, y=ratio, mode="markers", name=f"{cname} (sampled ±2 SE)",
                                             marker={"size": 9, "symbol": ["circle-open", "square-open",
                                                                           "diamond-open"][i], "line": {"width": 2}},
                                             error_y={"type": "data", "array": 2 * se, "visible": True}))
            st.caption("Sampled MSE divided by the iid closed form (v ≤ 1.3: beyond, positive features are "
                       "heavy-tailed and the sample MSE is biased low). Simplex+ has no closed form; it should "
                       "sit at or below simplex.")
        ui.plot(fig3, key="cpl-ratio-v")
        ui.downloads("rfviz-coupling-ratio-v", lambda: traces_csv(fig3), fig3, key="rv")
    with tabs[3]:
        blocks = state.slider("blocks (m = blocks·d)", "blocks", 1, 8, 1)
        fig4 = _ratio_d(v, features, blocks)
        ui.plot(fig4, key="cpl-ratio-d")
        ui.downloads("rfviz-coupling-ratio-d", lambda: traces_csv(fig4), fig4, key="rd")
    with tabs[4]:
        if hasattr(fc, "simplex_plus_iterations_figure"):
            c5 = st.columns([1, 1, 2])
            norm_seed = state.number("norms seed", "norm_seed", 0, int, container=c5[0])
            c5[1].button("Resample the norms", on_click=_resample, icon=":material/casino:")
            fig5 = _iterations(d, v, int(norm_seed))
            ui.plot(fig5, key="cpl-iter")
            st.caption("SimRF Fig. 4: the data-dependent simplex+ directions lower the conformity below SimRF's in "
                       "a few passes of Eq. 17, for one draw of the d norms.")
            ui.downloads("rfviz-simplex-plus-iterations", lambda: traces_csv(fig5), fig5, key="iter")
        else:
            st.info("The simplex+ iteration figure is not available in this installation.")
