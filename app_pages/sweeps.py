"""Sweeps: open a result file of ``python -m rfviz sweep`` (a local results folder or an uploaded CSV/Parquet of
results; data only) and plot it: heatmap over two grid axes, slices with ±2 SE bars, unreliable points marked."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from app_pages import _ui as ui
from rfviz.compute import sweep_files as sf
from rfviz.figures import sweep as fs
from rfviz.params import ParameterError

RESULTS_ENV = "RFVIZ_RESULTS"
UPLOAD = "(uploaded file)"
NONE = "(no result file)"

with ui.page(
    "sweeps",
    "Sweeps",
    "Results of `python -m rfviz sweep` (one row per grid point, local or Ray backend): the Monte-Carlo MSE with its "
    "standard error, the closed form where the estimator has one, and a reliability verdict. Points flagged "
    "**unreliable** (relative SE > 10% or one block carrying most of the squared error: heavy tails, typical of "
    "positive features at large r) are drawn hollow: there the sampled MSE can be far from the truth. Files are "
    f"read from a results folder (default `./results`, or the `{RESULTS_ENV}` environment variable) or uploaded "
    f"(CSV/Parquet data only, at most {sf.MAX_BYTES // 2**20} MiB, {sf.MAX_ROWS:,} rows and {sf.MAX_CELLS:,} values; "
    f"a Parquet file's size is checked from its metadata before it is read).",
    [(r"\mathrm{SE}[\log_{10}\widehat{\mathrm{MSE}}] \approx \frac{\mathrm{SE}[\widehat{\mathrm{MSE}}]}"
      r"{\widehat{\mathrm{MSE}}\,\ln 10}",
      "Error bars: ±2 SE of the Monte-Carlo MSE on the log10 scale (delta method); closed forms as in the MSE "
      "explorer ([HRF] Lemma 1 family, per estimator).")],
) as state:
    side = st.sidebar

    # The folder is the server's setting (environment), never a URL or widget value: a shared link cannot make the
    # app list or read files elsewhere on the server.
    folder = os.environ.get(RESULTS_ENV, "results")
    # what a browser is told of it: a relative folder as it is, never the server's absolute path
    shown = folder if not Path(folder).is_absolute() and ".." not in Path(folder).parts else f"${RESULTS_ENV}"
    side.caption(f"Results folder: `{shown}` (set ${RESULTS_ENV} before starting the app to change it)")
    files = sf.result_files(folder)


    def _show_upload() -> None:  # a new upload is the file shown
        st.session_state[state.key("file")] = UPLOAD


    uploaded = side.file_uploader("…or upload a result file", type=["csv", "parquet"], key=state.key("upload"),
                                  on_change=_show_upload, max_upload_size=sf.MAX_BYTES // 2**20,
                                  help=f"a CSV/Parquet written by `rfviz sweep` (data only, ≤ "
                                       f"{sf.MAX_BYTES // 2**20} MiB, ≤ {sf.MAX_CELLS:,} values)")
    choices = [p.name for p in files] + ([UPLOAD] if uploaded is not None else [])
    state.show_url_errors()
    chosen = state.selectbox("Result file", "file", choices or [NONE], UPLOAD if uploaded is not None else None,
                             container=side)

    if chosen == NONE:
        st.info(f"No sweep result in the results folder `{shown}`. On the server, from the directory where the app "
                f"was started, run e.g. `{sf.example_command(shown)}`, or upload a result file.",
                icon=":material/folder_open:")
        st.stop()


    @ui.cached
    def _read(data: bytes, name: str) -> sf.SweepTable:
        return sf.read_results(data, name)


    table = None
    with ui.guard(f"{chosen}: "):
        if chosen == UPLOAD:
            if uploaded.size > sf.MAX_BYTES:
                raise ParameterError(f"file must be at most {sf.MAX_BYTES // 2**20} MiB, got "
                                     f"{uploaded.size / 2**20:.1f} MiB")
            data, name = uploaded.getvalue(), uploaded.name
        else:
            path = Path(folder) / chosen
            if path.stat().st_size > sf.MAX_BYTES:
                raise ParameterError(f"file must be at most {sf.MAX_BYTES // 2**20} MiB, got "
                                     f"{path.stat().st_size / 2**20:.1f} MiB")
            data, name = path.read_bytes(), path.name
        table = _read(data, name)
    if table is None:
        st.stop()

    axes = list(table.axes)
    st.caption(f"**{table.name}**: {table.estimator or 'estimator ?'}, {len(table)} points, grid axes "
               f"{', '.join(axes)}; {int((~table.columns['reliable']).sum())} unreliable.")

    x = state.selectbox("x axis", "x", axes, axes[0], container=side)
    y_options = [a for a in axes if a != x]
    y = state.selectbox("y axis (heatmap)", "y", y_options, y_options[0], container=side) if y_options else None
    series_options = ["(none)"] + [a for a in axes if a not in (x, y)] + ([y] if y else [])
    series = state.selectbox("Slice curves per", "series", series_options, "(none)", container=side)
    series = None if series == "(none)" else series
    fixed = {}
    for axis in axes:
        if axis in (x, y):
            continue
        values = fs.axis_values(table, axis)
        labels = [str(v) for v in values]
        picked = state.selectbox(f"{axis} (fixed)", f"at_{axis}", labels, labels[0], container=side)
        fixed[axis] = values[labels.index(picked)]

    with ui.guard():
        if y is not None:
            title = f"log10 MSE over {fs.label(x)} × {fs.label(y)}{fs.fixed_text(fixed)}"
            fig = fs.heatmap_figure(table, x, y, fixed, title=title)
            ui.plot(fig, key=state.key("heatmap"))
        slice_fixed = dict(fixed)
        if y is not None and series != y:
            y_values = fs.axis_values(table, y)
            y_labels = [str(v) for v in y_values]
            picked = state.selectbox(f"Slice at {y}", "slice_at", y_labels, y_labels[0])
            slice_fixed[y] = y_values[y_labels.index(picked)]
        slice_fixed = {k: v for k, v in slice_fixed.items() if k != series}
        fig = fs.slice_figure(table, x, slice_fixed, series=series,
                              title=f"log10 MSE along {fs.label(x)}{fs.fixed_text(slice_fixed)}")
        ui.plot(fig, key=state.key("slice"))
        st.subheader("Rows")
        st.dataframe(fs.human_rows(fs.rows_table(table, slice_fixed)), width="stretch")
        st.caption(fs.COLUMNS_NOTE)
        ui.downloads(f"sweep-{Path(table.name).stem}", lambda: fs.rows_csv(table, slice_fixed), fig,
                     key=state.key("downloads"))
