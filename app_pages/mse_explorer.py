"""MSE explorer: analytic (and, on demand, sampled) MSE surfaces of any estimators over θ × r."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages import _ui as ui
from rfviz.compute import catalog
from rfviz.compute import explorer as ex
from rfviz.compute import features as cf
from rfviz.engine import Cancelled
from rfviz.estimators import REGISTRY
from rfviz.figures import explorer as fx
from rfviz.figures import features as ffx
from rfviz.geometry import EMBEDDINGS
from rfviz.params import D_PARAM, R_MAX_PARAM, R_PARAM, SEED_PARAM, THETA_PARAM, TRIALS_PARAM
from rfviz.verdicts import outcome_text

with ui.page(
    "mse_explorer",
    "MSE explorer",
    "Mean squared error of random-feature estimators of the kernel K(x, y), for two inputs of equal length r at "
    "angle θ (x = r·e₁, y = r(cos θ·e₁ + sin θ·e₂) in ℝᵈ). Pick estimators and a kernel; every parameter of each "
    "estimator has its own widget. Turn on **Monte Carlo** to overlay the sampled MSE (±2 standard errors) and "
    "flag points where it disagrees with the closed form: Holm's test over the reliable points at family-wise level "
    "1 % (two-sided z; where the estimator has a closed-form fourth moment, points whose sampled MSE the theory "
    "says this trial count cannot pin down are marked unreliable before looking at the sample).",
    [
        (r"\mathrm{MSE}(\hat K) = \mathbb{E}\,|\hat K(x,y) - K(x,y)|^2,\qquad "
         r"\varepsilon_{x,y} = \sqrt{\mathrm{MSE}}\,/\,|K(x,y)|",
         "Relative error: HRF paper (Choromanski et al. 2022) Def. 3.3."),
        (r"\mathrm{MSE}_{\mathrm{trig}} = \frac{e^{|x|^2+|y|^2}\,(1-e^{-|x-y|^2})^2}{2m},\qquad "
         r"\mathrm{MSE}_{++} = \frac{e^{|x|^2+|y|^2+4x\cdot y}\,(1-e^{-|x+y|^2})^2}{2m}",
         "HRF paper Lemma 2.2, eq. 7 (softmax kernel; Gaussian kernel: multiply by $e^{-|x|^2-|y|^2}$). "
         "Each estimator's own closed form is cited in its description below."),
    ],
) as state:
    # ------------------------------------------------------------------ controls
    side = st.sidebar
    kernel, names, available = ui.kernel_and_estimators(state, side,
                                                        help="up to four; each gets its own panel and parameters")
    view = state.view(container=side)  # a slug of PAGES' mse_explorer views: heatmap, surface, features
    features_view = view == "features"  # the m(ε) map: no MSE quantity, no m widgets, no MSE slice, no MSE overlay
    which = "log10_mse"
    if not features_view:
        which = state.selectbox("Quantity", "quantity", list(ex.QUANTITIES), "log10_mse", container=side,
                                format_func=lambda k: ex.QUANTITIES.get(k, k),
                                help="all in log₁₀: MSEs span hundreds of orders of magnitude")
    pair = None
    if which == "ratio" and not features_view:
        c1, c2 = side.columns(2)
        options = names or available
        a = state.selectbox("A", "ratio_a", options, options[0], container=c1, format_func=ex.title_of)
        b = state.selectbox("B", "ratio_b", options, options[min(1, len(options) - 1)], container=c2,
                            format_func=ex.title_of)
        pair = (a, b)
    d = state.param(D_PARAM, container=side)
    needs_embedding = any(not REGISTRY[n].isotropic for n in names)
    embedding = "canonical"
    if needs_embedding:
        embedding = state.selectbox("Embedding of (r, θ) in ℝᵈ", "embedding", list(EMBEDDINGS), "canonical",
                                    container=side, help="coordinate-dependent estimators need a placement of x, y")
    r_max = state.param(R_MAX_PARAM, container=side, step=0.25)
    resolution = state.slider("Grid resolution", "res", 10, 120, 60, container=side)
    eps = cf.EPS_PARAM.default
    if view == "features":
        eps = state.param(cf.EPS_PARAM, container=side, step=0.01, format="%.4g")
    ALL3D = "all"
    shown3d = ALL3D
    if view == "surface":
        one_off = ui.unused("the ratio view has one surface") if which == "ratio" else {}
        shown3d = state.selectbox("Surfaces in the 3-D view", "surf3d", [ALL3D, *names], ALL3D, container=side,
                                  format_func=lambda k: "all (transparent)" if k == ALL3D else ex.title_of(k),
                                  help="one estimator at a time, or all of them semi-transparent", **one_off)
    zrange = ui.colour_range(state, container=side, unit="log₁₀")
    slice_axis, slice_at, point = "θ", 2.0, (1.0, 1.0)
    if features_view:  # the slice is m(ε) at one exact pair
        point = (state.param(R_PARAM, default=1.0, container=side, label="r of the m(ε) slice", step=0.05),
                 state.param(THETA_PARAM, default=1.0, container=side, label="θ of the m(ε) slice (rad)", step=0.05))
    else:
        slice_axis = state.radio("Slice at fixed", "slice", ["θ", "r"], "θ", container=side)
        if slice_axis == "θ":
            slice_at = state.slider("θ of the slice (rad)", "slice_theta", 0.0, float(np.pi), 2.0,
                                    step=0.01, container=side)
        else:
            r_hi = float(r_max) if np.isfinite(r_max) and r_max > 0 else 1.0
            if st.session_state.get(state.key("slice_r"), 0.0) > r_hi:
                st.session_state[state.key("slice_r")] = r_hi
            slice_at = state.slider("r of the slice", "slice_r", 0.0, r_hi, min(1.0, r_hi), step=0.01,
                                    container=side)

    state.show_url_errors()

    # ------------------------------------------------------------------ per-estimator parameters
    params: dict[str, dict] = {}
    if not names:
        st.info("Pick at least one estimator in the sidebar.", icon=":material/arrow_back:")
    else:
        cols = st.columns(len(names))
        for col, name in zip(cols, names, strict=True):
            cls = REGISTRY[name]
            with col.expander(f"**{cls.title}**", expanded=True):
                st.caption(f"{cls.description} *{cls.reference}*")
                params[name] = ui.estimator_params(state, cls.spec, prefix=f"{name}.",
                                                   skip=("kernel", "m") if features_view else ("kernel",))
                st.caption(catalog.known_caption(name, params[name], kernel))


    @ui.cached
    def _analytic(name: str, p: dict, kernel: str, d: int, r: np.ndarray, theta: np.ndarray, embedding: str):
        return ex.analytic_surface(name, p, kernel, d, r, theta, embedding)


    def _sampled(name: str, p: dict, kernel: str, d: int, r: np.ndarray, theta: np.ndarray, trials: int, seed: int,
                 embedding: str, progress) -> ex.Sampled:
        key = ui.freeze((name, p, kernel, d, r, theta, trials, seed, embedding))
        return ui.memo("mse-mc", key, lambda report: ex.sampled_surface(name, p, kernel, d, r, theta, trials, seed,
                                                                        embedding, progress=report), progress)


    def _surfaces(r: np.ndarray, theta: np.ndarray) -> list[ex.Surface]:
        out = []
        for name in names:
            with ui.guard(f"{name}: "):
                out.append(_analytic(name, params[name], kernel, int(d), r, theta, embedding))
        return out


    @ui.cached
    def _needed(name: str, p: dict, kernel: str, d: int, r: np.ndarray, theta: np.ndarray, eps: float,
                embedding: str) -> np.ndarray:
        return cf.features_needed_map(name, p, d, r, theta, eps, embedding, kernel=kernel)


    def _features_figure(title: str) -> tuple:
        """The maps of the m needed for ε on a grid of at most 30 × 40 cells (a search per rung elsewhere)."""
        eps_ok = ui.valid(cf.EPS_PARAM, eps)
        r_fm, theta_fm = ex.make_axes(float(r_max), min(resolution, 30), min(resolution + 20, 40))
        maps = {}
        for name in names:
            with ui.guard(f"{name}: "):
                maps[name] = _needed(name, params[name], kernel, int(d), r_fm, theta_fm, float(eps_ok), embedding)
        fig = ffx.features_needed_figure(r_fm, theta_fm, maps, float(eps_ok), title=title,
                                         titles=catalog.titles(maps), zrange=zrange)
        return fig, lambda: fx.grid_csv(r_fm, theta_fm, maps, "log10_m_needed")


    def _needed_slice(r_pt: float, theta_pt: float) -> None:
        """The features view's slice: m needed against ε at exactly (r, θ), and the answer at the page's ε."""
        with ui.guard():
            r_pt, theta_pt = ui.valid(R_PARAM, r_pt), ui.valid(THETA_PARAM, theta_pt)
            eps_ok = ui.valid(cf.EPS_PARAM, eps)
            curves, lines = {}, []
            for name in names:
                with ui.guard(f"{name}: "):
                    values_eps, ms, at = _needed_eps(name, params[name], kernel, int(d), float(r_pt),
                                                     float(theta_pt), float(eps_ok), embedding)
                    curves[name] = ms
                    lines.append(f"**{ex.title_of(name)}**: m = {at.m:,}" if at.m is not None else
                                 f"**{ex.title_of(name)}**: {at.reason}")
            if curves:
                sfig = ffx.needed_vs_eps_figure(values_eps, curves, float(eps_ok), float(r_pt), float(theta_pt),
                                                titles=catalog.titles(curves))
                ui.plot(sfig, key="mse-needed-slice")
                st.caption(f"At exactly r = {r_pt:g}, θ = {theta_pt:g} and ε = {eps_ok:g} (the CLI's "
                           f"`features-needed ... r={r_pt:g} theta={theta_pt:g} d={int(d)}`): " + "; ".join(lines))
                cols_csv = {"eps": values_eps, **curves}
                ui.downloads("rfviz-m-needed-vs-eps", lambda: fx.columns_to_csv(cols_csv), sfig, key="needed-slice")


    @ui.cached
    def _needed_eps(name: str, p: dict, kernel: str, d: int, r: float, theta: float, eps: float, embedding: str):
        return ex.needed_vs_eps(name, p, kernel, d, r, theta, eps, embedding)


    def _stop_sampling() -> None:
        st.session_state[state.key("mc")] = False


    surfs: list[ex.Surface] = []
    grid_ok = False
    with ui.guard():
        if names:
            d, r_max = ui.valid(D_PARAM, d), ui.valid(R_MAX_PARAM, r_max)
            r_axis, theta_axis = ex.make_axes(float(r_max), resolution, resolution + 20)
            grid_ok = True

    if grid_ok:
        surfs = _surfaces(r_axis, theta_axis)

    if grid_ok and surfs:
        no_cf = [s.name for s in surfs if not s.closed_form]
        if no_cf:
            st.warning(f"No closed form for {', '.join(map(ex.title_of, no_cf))} with these parameters: turn on "
                       "Monte Carlo.", icon=":material/info:")
        values: dict[str, np.ndarray] = {}
        with ui.guard():
            values = ex.quantity(surfs, which, pair)

        # ------------------------------------------------------------------ Monte Carlo (on demand)
        mc_box = st.container(border=not features_view)
        mc_on, trials, mc_res, seed = False, TRIALS_PARAM.default, 7, SEED_PARAM.default
        if not features_view:  # the features view draws closed forms only: no MSE overlay to sample
            mc_cols = mc_box.columns([2, 1, 1, 1, 1])
            mc_on = state.mc_switch("Monte Carlo overlay", "mc", container=mc_cols[0],
                                    help="sample the estimators with rfviz.engine.monte_carlo on a coarse grid and "
                                         "the slice")
            trials = state.param(TRIALS_PARAM, container=mc_cols[1], disabled=not mc_on)
            mc_res = state.slider("MC grid", "mc_res", 3, 16, 7, container=mc_cols[2], disabled=not mc_on)
            seed = state.param(SEED_PARAM, container=mc_cols[3], disabled=not mc_on)
            mc_cols[4].button("Stop", on_click=_stop_sampling, icon=":material/stop_circle:", disabled=not mc_on,
                              help="cancel the running Monte-Carlo computation")
        sampled_grid: dict[str, ex.Sampled] = {}
        sampled_slice: dict[str, ex.Sampled] = {}
        r_mc = theta_mc = r_sl = theta_sl = None
        if mc_on:
            with ui.guard("Monte Carlo: "):
                trials, seed = ui.valid(TRIALS_PARAM, trials), ui.valid(SEED_PARAM, seed)
                r_mc, theta_mc = ex.make_axes(float(r_max), mc_res, mc_res)
                if slice_axis == "θ":
                    r_sl, theta_sl = np.linspace(float(r_max) / 13, float(r_max), 13), np.array([slice_at])
                else:
                    r_sl, theta_sl = np.array([slice_at]), np.linspace(0.0, np.pi, 13)
                bar = mc_box.progress(0.0, text="sampling…")
                jobs = [(n, g) for n in names for g in ("grid", "slice")]
                try:
                    for i, (name, g) in enumerate(jobs):
                        def report(f: float, i: int = i, name: str = name) -> None:
                            bar.progress(min(1.0, (i + f) / len(jobs)), text=f"sampling {ex.title_of(name)}…")

                        rr, tt = (r_mc, theta_mc) if g == "grid" else (r_sl, theta_sl)
                        res = _sampled(name, params[name], kernel, int(d), rr, tt, int(trials), int(seed), embedding,
                                       report)
                        (sampled_grid if g == "grid" else sampled_slice)[name] = res
                    bar.empty()
                except Cancelled:
                    bar.empty()
                    mc_box.info("Monte Carlo cancelled.")
                except FloatingPointError as exc:
                    bar.empty()
                    mc_box.error(f"Monte Carlo failed: {exc}")
            if sampled_grid:
                dev = next(iter(sampled_grid.values())).device
                for k, s in sampled_grid.items():  # every panel: what was sampled and with which outcome
                    counts = s.outcomes()  # rfviz.verdicts: the same words as the markers and the CLI
                    color, icon = (("red", ":material/warning:") if counts["disagrees"] else
                                   ("orange", ":material/help:") if counts["unreliable"] else
                                   ("green", ":material/check_circle:"))
                    mc_box.badge(f"{ex.title_of(k)} — {outcome_text(counts, int(trials))} (device {dev})",
                                 icon=icon, color=color)
                if any(s.unreliable for s in sampled_grid.values()):
                    mc_box.caption("Hollow circles mark the unreliable points: the closed-form fourth moment predicts "
                                   "a relative standard error above 10 % at this trial count (or an infinite one), or "
                                   "a few trials carry most of the squared error, so neither the sampled MSE nor "
                                   "its error bar can be trusted (not a disagreement).")
                needed = max(s.trials_for_ten_percent() for s in sampled_grid.values())
                if fx.trials_guidance(needed, int(trials)):
                    mc_box.caption(fx.trials_guidance(needed, int(trials)))

        # ------------------------------------------------------------------ figures
        if values:
            disagree, heavy, dots = {}, {}, {}
            if sampled_grid and which != "ratio":
                for k, s in sampled_grid.items():
                    rr, tt = np.meshgrid(r_mc, theta_mc, indexing="ij")
                    dots[k] = (rr.ravel(), tt.ravel())
                    disagree[k] = (rr[s.disagree_mask], tt[s.disagree_mask])
                    unreliable = ~s.reliable_mask & ~s.exact_mask  # the badge's count (Sampled.outcomes)
                    heavy[k] = (rr[unreliable], tt[unreliable])
            title = f"{ex.QUANTITIES[which]} · {kernel.replace('_', '-')} kernel · d = {int(d)}"
            if view == "features":
                title = f"features needed for ε · {kernel.replace('_', '-')} kernel · d = {int(d)}"
                fig, csv = _features_figure(title)
            elif view == "heatmap":
                fig = fx.heatmap_figure(r_axis, theta_axis, values, which, disagree, title=title, zrange=zrange,
                                        heavy=heavy, titles=catalog.titles(values), sampled=dots)
            else:
                points = {}
                if sampled_grid:
                    mc_surfs = _surfaces(r_mc, theta_mc)
                    with ui.guard():
                        for k, (v, se) in ex.sampled_quantity(mc_surfs, sampled_grid, which, pair).items():
                            rr, tt = np.meshgrid(r_mc, theta_mc, indexing="ij")
                            points[k] = (tt.ravel(), rr.ravel(), v.ravel(), se.ravel())
                if shown3d != ALL3D and shown3d in values:
                    values3d = {shown3d: values[shown3d]}
                    points = {k: v for k, v in points.items() if k == shown3d}
                else:
                    values3d = values
                fig = fx.surface_figure(r_axis, theta_axis, values3d, which, points, title=title, zrange=zrange,
                                        titles=catalog.titles(values3d))
            ui.plot(fig, key="mse-main")
            window = (f"the fixed range {zrange[0]:g} to {zrange[1]:g} set in the sidebar" if zrange else
                      "one window shared by all panels (1st–99th percentile of their values)")
            if view == "features":
                st.caption("Each cell: the smallest number of features m whose relative error √MSE/|K| at that "
                           "cell's (r, θ) is at most ε (rfviz.features_needed; the CLI's features-needed); hover shows "
                           "m and the cell's exact r, θ. Exact where the MSE is c/m (iid features, hybrids at their "
                           "n): m = ⌈c/ε²⌉, and for the orthogonal and simplex couplings (the block law, searched "
                           "within and across blocks); elsewhere (sketches) the first m of a 9 % ladder meeting ε. "
                           "Blank: unreachable below the largest m. Feature vectors are longer than m for trig and "
                           "antithetic features (2m) and hybrids (4m(n + 1)). For a point between cells, set r and θ "
                           "of the m(ε) slice in the sidebar.")
            elif view == "heatmap":
                st.caption(f"Magenta: the estimator is exact there (MSE = 0). Colours: {window}; values beyond it take "
                           "the end colours, marked ≤ / ≥ on the colour bar.")
            else:
                st.caption(f"Magenta points on the floor: exact (MSE = 0). Height: {window}; values beyond it are "
                           "pinned to its ends. Drag to turn the view; click a legend entry to hide a surface.")
            sampled_csv = {}
            if sampled_grid:  # the CSV carries what the page shows: the Monte-Carlo points too (mc=true)
                with ui.guard():
                    for k, (v, se) in ex.sampled_quantity(_surfaces(r_mc, theta_mc), sampled_grid, which,
                                                          pair).items():
                        sampled_csv[k] = (r_mc, theta_mc, v, se, sampled_grid[k].reliable_mask)
            if view != "features":
                csv = lambda: fx.grid_csv(r_axis, theta_axis, values, which, sampled_csv)  # noqa: E731
            ui.downloads("rfviz-mse-surface", csv, fig, key="main")

            # slice: m(ε) at one exact pair in the features view, the quantity along r or θ elsewhere
            if features_view:
                _needed_slice(*point)
            else:
                if slice_axis == "θ":
                    coord = np.linspace(float(r_max) / 200, float(r_max), 200)
                    sl_surfs = _surfaces(coord, np.array([slice_at]))
                else:
                    coord = np.linspace(0.0, np.pi, 200)
                    sl_surfs = _surfaces(np.array([slice_at]), coord)
                with ui.guard():
                    sl_values = {k: v.ravel() for k, v in ex.quantity(sl_surfs, which, pair).items()}
                    pts = {}
                    if sampled_slice:
                        sl_mc = _surfaces(r_sl, theta_sl)
                        for k, (v, se) in ex.sampled_quantity(sl_mc, sampled_slice, which, pair).items():
                            rel = sampled_slice[k].reliable_mask.ravel() if k in sampled_slice else None
                            pts[k] = ((r_sl if slice_axis == "θ" else theta_sl), v.ravel(), se.ravel(), rel)
                    sfig = fx.slice_figure("theta" if slice_axis == "θ" else "r", coord, sl_values, which, slice_at,
                                           pts, titles=catalog.titles(sl_values))
                    ui.plot(sfig, key="mse-slice")
                    cols_csv = {"coordinate": coord, **sl_values}
                    ui.downloads("rfviz-mse-slice", lambda: fx.columns_to_csv(cols_csv), sfig, key="slice")
