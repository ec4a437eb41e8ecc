"""Your data: where a data set's pairs lie on the MSE map, which estimator wins on it, its Gram error, and every
applicable estimator tuned on it and ranked at equal feature length."""

from __future__ import annotations

import hashlib

import streamlit as st

from app_pages import _ui as ui
from rfviz import data as rd
from rfviz.compute import catalog, downstream, ranking
from rfviz.compute import data as cdata
from rfviz.compute.ranking import LENGTH_PARAM
from rfviz.figures import data as fdata
from rfviz.figures.common import traces_csv
from rfviz.figures.export import columns_to_csv
from rfviz.params import M_PARAM, Param, ParameterError

with ui.page(
    "data",
    "Your data",
    "Which estimator is best depends on where your pairs (x, y) lie. Pick a bundled data set, the synthetic HRF "
    "clusters or upload your own (CSV of numbers or .npy, one point per row); queries and keys are drawn from it "
    "and preprocessed. The pairs are placed on the explorer's (r, θ) map by their angle and their **geometric-mean "
    "norm r = √(|x||y|)** (the map is drawn for |x| = |y| = r), and the data-averaged MSE uses the closed form at "
    "every actual pair.",
    [(r"\mathbb{E}_{\text{pairs}}[\mathrm{MSE}] = \frac{1}{NM}\sum_{i,j}\mathrm{MSE}(x_i, y_j) = "
      r"\frac{\mathbb{E}\|\hat K - K\|_F^2}{NM}",
      "Features shared by all entries; linearity of expectation (rfviz.gram_engine).")],
) as state:
    side = st.sidebar

    UPLOAD = "upload a file"
    POINTS_PARAM = Param("points", 60, "int", "queries (and as many keys) drawn from the data", low=1,
                         high=rd.MAX_POINTS, label="queries = keys")
    SCALE_PARAM = Param("scale", 0.5, "float", "mean norm after the scale step", low=0.0, low_open=True, label="scale")
    REPEATS_PARAM = Param("repeats", 100, "int", "Monte-Carlo repeats of the Gram error (one feature draw each)",
                          low=2, high=5000, label="repeats")
    M_VALUES = (4, 8, 16, 32, 64, 128, 256)

    source = state.selectbox("Data", "source", [*rd.BUNDLED, *rd.SYNTHETIC, UPLOAD], "iris", container=side,
                             help="; ".join(f"{k}: {v[1]}" for k, v in rd.BUNDLED.items()))
    upload = None
    if source == UPLOAD:
        upload = side.file_uploader(f"CSV or .npy (≤ {rd.MAX_FILE_BYTES // 2**20} MiB, ≤ {rd.MAX_ROWS} rows, ≤ "
                                    f"{rd.MAX_DIM} columns, ≤ {rd.MAX_VALUES:,} values)",
                                    type=["csv", "npy", "txt"], key="data.upload",
                                    max_upload_size=rd.MAX_FILE_BYTES // 2**20)
    cluster_d = (state.number("clusters: d", "cluster_d", 16, int, container=side, spec=rd.CLUSTER_D_PARAM)
                 if source == "clusters" else None)
    points = state.param(POINTS_PARAM, container=side)
    steps = state.multiselect("Preprocessing (in order)", "steps", list(rd.PREPROCESS_STEPS), ["standardize", "scale"],
                              container=side,
                              help="center, standardize, sphere (unit norm), attention (×d^-1/4), scale")
    scale = state.param(SCALE_PARAM, container=side)
    kernel, names, _ = ui.kernel_and_estimators(state, side, help="up to four; each is a row of the table and a curve")
    m = state.param(M_PARAM, 16, container=side, label="m (features)")
    state.show_url_errors()


    @ui.cached
    def _load(source: str, raw: bytes | None, filename: str | None, cluster_d: int | None, points: int,
              steps: tuple[str, ...], scale: float) -> rd.DataSet:
        if source == UPLOAD:
            if raw is None:
                raise ParameterError("data: upload a CSV or .npy file (one point per row)")
            array = rd.read_array(raw, "data", filename)
            n = min(points, array.shape[0])  # a small file: as many queries (and keys) as it has rows
            return rd.from_points(array, filename or "upload", queries=n, keys=n, steps=steps, scale=scale)
        options = {"d": cluster_d, "points": max(points, 50)} if source == "clusters" else None
        return rd.load(source, queries=points, keys=points, steps=steps, scale=scale, options=options)


    with ui.guard():
        points, scale, m = ui.valid(POINTS_PARAM, points), ui.valid(SCALE_PARAM, scale), ui.valid(M_PARAM, m)
        if not names:
            raise ParameterError("estimators must name at least one estimator")
        raw = upload.getvalue() if upload is not None else None
        digest = hashlib.sha256(raw).hexdigest() if raw is not None else None  # shared results: key by content
        load_key = (source, digest, upload.name if upload is not None else None, cluster_d, points, tuple(steps),
                    scale)
        ds = _load(source, raw, load_key[2], cluster_d, points, tuple(steps), scale)
        view_key = (*load_key, tuple(names), m, kernel)
        st.caption(f"{ds.name}: {ds.queries.shape[0]} queries × {ds.keys.shape[0]} keys, d = {ds.d}; "
                   f"{ds.info.get('source', '')}")
        if ds.queries.shape[0] < points:
            st.info(f"The file has {ds.queries.shape[0]} rows, fewer than queries = keys = {points}: every row is "
                    f"used (queries and keys overlap). Lower 'queries = keys' to draw fewer.")
        m_values = sorted({*M_VALUES, m})
        avg = ui.memo("data.avg", view_key, lambda report: cdata.pair_averages(ds, names, {"m": m}, m_values, kernel))
        st.markdown(f"**Answer:** {ui.plain(cdata.verdict(ds, avg, m, titles=catalog.titles(names)))}.")
        dm = ui.memo("data.map", view_key, lambda report: cdata.data_map(ds, names, {"m": m}, kernel))
        fig_map = fdata.data_map_figure(dm.r_axis, dm.theta_axis, dm.values, dm.density, dm.title,
                                        titles=catalog.titles(names))
        ui.plot(fig_map, key="data-map")
        st.caption(f"Heatmap: closed-form log10 MSE for |x| = |y| = r at angle θ, d = the data's d, over the data's "
                   f"range of r. {fdata.CONTOUR_NOTE}; a pair sits at (r, θ) with r the geometric-mean "
                   "norm √(|x||y|) of each pair (its |x| ≠ |y| is summarised, not kept).")
        ui.downloads("rfviz-data-map", lambda: traces_csv(fig_map), fig_map, key="data-map")
        fig_m = fdata.mse_vs_m_figure(ds.name, [catalog.title_of(n) for n in avg.names], avg.m, avg.log10_mse)
        ui.plot(fig_m, key="data-vs-m")
        ui.downloads("rfviz-data-mse-vs-m", lambda: traces_csv(fig_m), fig_m, key="data-vs-m")
        st.subheader("Gram-matrix error")
        repeats = state.param(REPEATS_PARAM)
        mc_key = ("data.gram_mc", *view_key, repeats)
        if st.button(f"Run Monte Carlo ({repeats:,} repeats)", key="data.run_gram",
                     help="sample the Gram error with features shared by all entries (repeats draws)"):
            with st.spinner("sampling…"):
                st.session_state[mc_key] = ui.memo("data.gram_mc", mc_key, lambda report: cdata.gram_table(
                    ds, names, {"m": m}, kernel, ui.valid(REPEATS_PARAM, repeats)))
        rows = st.session_state.get(mc_key)
        ran = rows is not None
        rows = [{**row, "estimator": catalog.title_of(row["estimator"])}
                for row in rows or cdata.gram_table(ds, names, {"m": m}, kernel)]
        if not ran:  # before a run: only the closed-form columns (no empty Monte-Carlo cells)
            rows = [{k: v for k, v in row.items() if k in cdata.GRAM_CLOSED_FORM_COLUMNS} for row in rows]
        st.dataframe(rows, hide_index=True)
        st.caption(cdata.GRAM_COLUMNS_NOTE if ran else "Closed form only; the button samples the Gram error.")
        if rows:
            ui.downloads("rfviz-data-gram", lambda: columns_to_csv({k: [r.get(k) for r in rows] for k in rows[0]}),
                         None, key="data-gram")

        # ------------------------------------------------------------------ which estimator, tuned, for this data
        st.subheader("Which estimator, tuned, for this data")
        length = state.param(LENGTH_PARAM)
        length = ui.valid(LENGTH_PARAM, length)
        rank_key = (*load_key, kernel, length)
        with ui.stages("Ranking", ranking.RANK_STAGES[:1]) as progress:
            ranked = ui.memo("data.rank", rank_key, lambda report: ranking.rank_estimators(
                ds.queries, ds.keys, kernel, length, report=report), progress)
        rank_mc_key = ("data.rank_mc", *rank_key, repeats)
        if st.button(f"Confirm the top three by Monte Carlo ({repeats:,} repeats)", key="data.run_rank_mc"):
            with ui.stages("Confirming", ranking.RANK_STAGES) as progress:
                st.session_state[rank_mc_key] = ui.memo("data.rank_mc", rank_mc_key, lambda report: (
                    ranking.rank_estimators(ds.queries, ds.keys, kernel, length,
                                            repeats=ui.valid(REPEATS_PARAM, repeats), report=report)), progress)
        ranked = st.session_state.get(rank_mc_key, ranked)
        table = ranking.ranking_table(ranked, catalog.titles([r.estimator for r in ranked.rows]))
        st.dataframe(table, hide_index=True)
        st.caption(ranking.RANKING_NOTE)
        ui.downloads("rfviz-data-ranking", lambda: columns_to_csv({k: [r.get(k) for r in table] for k in table[0]}),
                     None, key="data-ranking")

        # ------------------------------------------------------------------ downstream truth
        st.subheader("Downstream truth")
        st.caption("What the approximation does to a model: ridge regression on random features against exact "
                   "Gaussian kernel ridge (scikit-learn's diabetes and a synthetic set with a known function), and "
                   "softmax attention from random features on these queries and keys (values drawn once), with "
                   "scikit-learn's Nyström at equal length; mean ± standard error over 8 feature draws, and the rank "
                   "correlation (Spearman) of the closed-form kernel error with the downstream error.")
        down_key = ("data.downstream", *load_key)
        if st.button("Fit the models", key="data.run_downstream"):
            with ui.stages("Fitting the models", downstream.PAGE_STAGES) as progress:
                st.session_state[down_key] = ui.memo("data.downstream", down_key, lambda report: (
                    downstream.page_studies(ds.queries, ds.keys, report=report)), progress)
        studies = st.session_state.get(down_key)
        if studies is not None:
            for label, study in studies.items():
                exact = f"; exact model {study.exact:.4g}" if study.exact else ""
                rho = "—" if study.spearman is None else f"{study.spearman:+.2f}"
                st.markdown(f"**{ui.plain(label)}** — {ui.plain(study.task)}{exact}; Spearman ρ(kernel error, "
                            f"downstream error) = {rho}")
                names = [r.method for r in study.rows if r.method != "nystroem"]
                st.dataframe(downstream.study_table(study, catalog.titles(names)), hide_index=True)
