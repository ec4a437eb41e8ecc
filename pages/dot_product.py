"""Dot-product kernel sketches: polynomial sketches (q), TensorSRHT, Maclaurin features."""

from __future__ import annotations

import numpy as np
import streamlit as st

from rfviz import ParameterError, ui
from rfviz.figures import explorer as ex
from rfviz.figures.common import bars, columns_to_csv

state = ui.PageState("dot")
ui.header(
    "Dot-product kernel sketches",
    "Random features for the polynomial kernel (x·y)ᵖ multiply p independent random projections. Each weight entry "
    "is real (q = 1), imaginary (q = 0) or a complex mix (q = ½); the variance depends on q only through (2q − 1)², "
    "and **complex features beat real ones exactly when (x·y)² > S = Σₖ xₖ²yₖ²**. TensorSRHT replaces the Gaussian/"
    "Rademacher projections by subsampled randomised Hadamard transforms (one independent permutation per degree). "
    "Maclaurin features approximate the exponential (softmax) and Gaussian kernels by allocating the m features over "
    "the degrees of the Taylor series. These variances depend on coordinates through S, so the pair (r, θ) is placed "
    "in ℝᵈ by the chosen embedding. Default variance: the complex E|k̂ − k|².",
    [
        (r"\mathrm{Var}\,\hat k = \frac{1}{m}\left[\left(|x|^2|y|^2 + \rho^2 (x\cdot y)^2 + (\mu_4 - 1 - \rho^2)"
         r"S\right)^p - (x\cdot y)^{2p}\right]\ \text{(per the basis)},\quad \rho^2 = (2q-1)^2,\ "
         r"S = \textstyle\sum_k x_k^2 y_k^2",
         "Improved Random Features for Dot Product Kernels, Theorem 2 family (reference dot_product_features.md "
         "§3, exact forms per basis and variance type)."),
        (r"\mathrm{Var}_{\mathrm{TensorSRHT}}:\ \text{Thm 5 / 10, within-block pairs } c(m,d) = "
         r"\lfloor m/d\rfloor d(d-1) + (m \bmod d)(m \bmod d - 1)",
         "Reference §3 (one permutation per degree; the shared reading is wrong)."),
        (r"k(x,y) = \sum_n a_n (x\cdot y)^n:\ \ \min_{p,\,D_1+\dots+D_p = m}\ \sum_{n\le p} a_n^2\,"
         r"\mathrm{Var}_n(D_n) + \mathrm{bias}_p^2",
         "Optimised Maclaurin features, §5.3 Algorithms 2–3 (reference F6)."),
    ],
)
ui.sidebar_info()
side = st.sidebar
try:
    from rfviz.dot_product import grid_stats, optimize_maclaurin
    from rfviz.estimators import REGISTRY
    from rfviz.geometry import EMBEDDINGS

    SKETCHES = [n for n in ("poly_sketch", "tensor_srht") if n in REGISTRY]
except ImportError as exc:
    ui.missing_module("rfviz.dot_product", exc)
    st.stop()

d = state.number("d (dimension)", "d", 16, int, container=side)
m = state.number("m (features D)", "m", 64, int, container=side)
p = state.number("p (degree)", "p", 3, int, container=side)
q = state.slider("q (real/imaginary mix)", "q", 0.0, 1.0, 0.5, step=0.05, container=side)
basis = state.selectbox("Basis", "basis", ["rademacher", "plus_minus_i", "unit_circle", "gaussian"], "rademacher",
                        container=side, help="distribution of each weight entry (TensorSRHT: not gaussian)")
variance = state.selectbox("Variance", "variance", ["complex", "real_part"], "complex", container=side,
                           help="complex: E|k̂ − k|²; real_part: Var(Re k̂)")
r = state.slider("r (input length)", "r", 0.1, 2.0, 1.0, step=0.05, container=side)
theta = state.slider("θ (angle, rad)", "theta", 0.0, float(np.pi), 0.5, step=0.01, container=side)
embedding = state.selectbox("Embedding of (r, θ) in ℝᵈ", "embedding", list(EMBEDDINGS), "canonical", container=side)
state.show_url_errors()


def _params(name: str, **over) -> dict:
    base = {"p": int(p), "q": float(q), "m": int(m), "variance": variance}
    if name == "poly_sketch" or basis != "gaussian":
        base["basis"] = basis
    base.update(over)
    return base


@ui.cached
def _sweep(name: str, params: dict, d: int, r: float, theta: float, sweep: str, values: tuple, embedding: str):
    return ex.param_sweep(name, params, "dot_product", d, r, theta, sweep, values, embedding)


@ui.cached
def _surface(name: str, params: dict, d: int, r_max: float, embedding: str):
    rr, tt = ex.make_axes(r_max, 40, 61)
    return rr, tt, ex.analytic_surface(name, params, "dot_product", d, rr, tt, embedding)


@ui.cached
def _maclaurin(kernel: str, d: int, r: float, theta: float, m: int, embedding: str, sketch: str):
    return optimize_maclaurin(grid_stats(r, theta, d, embedding), kernel=kernel, total=m, sketch=sketch)


with ui.guard():
    for label, value, low in (("d", d, 1), ("m", m, 1), ("p", p, 1)):
        if int(value) < low:
            raise ParameterError(f"{label} must be an integer in [{low}, inf), got {value}")
    d, m, p = int(d), int(m), int(p)
    for name in SKETCHES:  # validate every parameter through the estimators' specs
        REGISTRY[name](**_params(name))
    views = ["Variance vs q, p, d, m", "Real vs complex", "TensorSRHT vs Rademacher", "Maclaurin allocation"]
    view = state.radio("View", "view", views, views[0])
    if view == views[0]:
        qs = tuple(np.round(np.linspace(0.0, 1.0, 41), 6))
        ps = tuple(range(1, 11))
        ms = tuple(int(v) for v in np.unique(np.geomspace(1, 1024, 31).astype(int)))
        ds = tuple(int(v) for v in (2, 4, 8, 16, 32, 64, 128, 256))
        specs = [("q", qs, "q", False), ("p", ps, "degree p", False), ("m", ms, "m (features)", True),
                 ("d", ds, "d", True)]
        cols = st.columns(2)
        data = {}
        for i, (sweep, values, label, log_x) in enumerate(specs):
            curves = {}
            for name in SKETCHES:
                if name == "tensor_srht" and basis == "gaussian":
                    continue
                prm = _params(name)
                prm.pop(sweep, None)
                curves[name] = _sweep(name, prm, d, r, theta, sweep, values, embedding)
            data[sweep] = (values, curves)
            fig = ex.sweep_figure(np.asarray(values, float), curves, label, f"log10 MSE against {label}", log_x)
            with cols[i % 2]:
                ui.plot(fig, key=f"dot-sweep-{sweep}")
        st.caption(f"At r = {r:g}, θ = {theta:.3g}, embedding {embedding}; other parameters as in the sidebar.")
        ui.downloads("rfviz-dot-sweeps", lambda: columns_to_csv(
            {"sweep": np.concatenate([[k] * len(v[0]) for k, v in data.items()]).astype(object),
             "value": np.concatenate([np.asarray(v[0], float) for v in data.values()]),
             **{n: np.concatenate([v[1].get(n, np.full(len(v[0]), np.nan)) for v in data.values()])
                for n in SKETCHES}}), None, key="sweeps")
    if view == views[1]:
        r_max = state.slider("r max", "r_max", 0.5, 3.0, 1.5, step=0.1)
        rr, tt, real = _surface("poly_sketch", _params("poly_sketch", q=1.0), d, r_max, embedding)
        _, _, cplx = _surface("poly_sketch", _params("poly_sketch", q=0.5), d, r_max, embedding)
        with np.errstate(invalid="ignore"):
            ratio = {"log10 MSE_real / MSE_complex (poly_sketch)": real.log10_mse - cplx.log10_mse}
        fig2 = ex.heatmap_figure(rr, tt, ratio, "ratio", title="Real (q = 1) vs complex (q = ½) features: "
                                 "red where complex wins")
        ui.plot(fig2, key="dot-real-complex")
        st.caption("Complex features win where (x·y)² > S = Σ x_k² y_k² (reference §3, property P4).")
        ui.downloads("rfviz-dot-real-vs-complex", lambda: ex.grid_csv(rr, tt, ratio, "log10_ratio"), fig2, key="rc")
    if view == views[2]:
        if "tensor_srht" not in SKETCHES or basis == "gaussian":
            st.info("TensorSRHT needs a Rademacher, ±i or unit-circle basis.")
        else:
            ms2 = tuple(range(1, 4 * d + 1)) if d <= 64 else ms
            ts = _sweep("tensor_srht", {k: v for k, v in _params("tensor_srht").items() if k != "m"}, d, r, theta,
                        "m", ms2, embedding)
            rd = _sweep("poly_sketch", {k: v for k, v in _params("poly_sketch").items() if k != "m"}, d, r, theta,
                        "m", ms2, embedding)
            fig3 = ex.sweep_figure(np.asarray(ms2, float), {"tensor_srht": ts, f"poly_sketch ({basis})": rd,
                                                            "log10 ratio TensorSRHT / poly": ts - rd},
                                   "m (features)", "TensorSRHT against independent projections (sawtooth in m)")
            ui.plot(fig3, key="dot-tsrht")
            ui.downloads("rfviz-dot-tsrht", lambda: columns_to_csv({"m": np.asarray(ms2), "tensor_srht": ts,
                                                                    "poly_sketch": rd}), fig3, key="ts")
    if view == views[3]:
        c = st.columns(2)
        mk = state.selectbox("Kernel", "mk", ["exponential", "gaussian"], "exponential", container=c[0])
        sk = state.selectbox("Sketch per degree", "sketch", ["poly", "tensor_srht"], "poly", container=c[1])
        plan = _maclaurin(mk, d, r, theta, m, embedding, sk)
        best = bars(list(range(1, plan.p + 1)), {"features D_n": plan.alloc}, xlabel="degree n",
                    ylabel="features", title=f"Optimal allocation of m = {m} features: p = {plan.p}, "
                                             f"objective {plan.objective:.4g} (variance {plan.variance:.3g} + "
                                             f"bias² {plan.bias2:.3g})")
        ui.plot(best, key="dot-maclaurin")
        table = {"p": np.array([row[0] for row in plan.table]), "objective": np.array([row[2] for row in plan.table]),
                 "allocation": np.array([" ".join(map(str, row[1])) for row in plan.table], dtype=object)}
        fig5 = ex.sweep_figure(table["p"], {"objective g(p)": np.log10(table["objective"])}, "truncation degree p",
                               "Maclaurin objective against the truncation degree", ylabel="log10 (variance + bias²)")
        ui.plot(fig5, key="dot-maclaurin-g")
        ui.downloads("rfviz-dot-maclaurin", lambda: columns_to_csv(table), best, key="mac")
