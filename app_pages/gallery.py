"""Paper figure gallery: each seed paper's key figures rebuilt by rfviz, with caption, errata, catalog check,
downloads and a link to the live view. All content comes from rfviz.gallery (no maths here)."""

from __future__ import annotations

import streamlit as st

from app_pages import _ui as ui
from rfviz.gallery import build_figure, check_key_numbers, data_csv, load_gallery

with ui.page(
    "gallery",
    "Paper figure gallery",
    "The key figures of the five seed papers, rebuilt by rfviz's own closed forms, samplers and figure builders. "
    "Each entry lists its parameters, says what to see, notes where rfviz's value differs from the printed paper "
    "(and why), checks the numbers the reference catalogs print, and links to the live view with the same "
    "parameters. Every figure is also exported headless: `python -m rfviz figure NAME --out FILE.html|.png "
    "--data FILE.csv` (`python -m rfviz figure --list` lists the names).",
) as state:
    gallery = load_gallery()
    names = list(gallery)
    name = state.selectbox("Figure", "fig", names, names[0], container=st.sidebar,
                           format_func=lambda n: gallery[n].title)
    state.show_url_errors()

    with st.expander(f"All {len(names)} figures", expanded=False):
        st.dataframe([{"figure": g.title, "paper": g.paper, "name (CLI)": g.name, "live view": g.explorer_page}
                      for g in gallery.values()], hide_index=True, width="stretch")


    @ui.cached
    def _key_rows(name: str) -> list[dict]:
        return [{"key": c.key, "catalog": c.printed, "rfviz": c.rfviz, "tolerance": c.tolerance,
                 "match": "✓" if c.ok else "✗", "note": c.note} for c in check_key_numbers(name)]


    entry = gallery[name]
    st.header(entry.title)
    st.caption(entry.paper)
    with ui.guard(f"{entry.name}: "):
        with st.spinner("Building the figure…"):
            fig, data = build_figure(entry.name)
        cols = st.columns([3, 2])
        cols[0].markdown(f"**What to see.** {entry.caption}")
        if entry.errata:
            cols[0].info(f"**Where rfviz differs from the paper, and why.** {entry.errata}", icon=":material/rule:")
        with cols[1]:
            st.markdown("**Parameters**")
            st.dataframe([{"parameter": k, "value": str(v)} for k, v in entry.params.items()], hide_index=True,
                         width="stretch")
            if entry.explorer_page:
                st.link_button("Open in the explorer", entry.explorer_link(prefix="./"), icon=":material/open_in_new:",
                               help=f"The live page /{entry.explorer_page} with this figure's parameters")
            st.code(f"python -m rfviz figure {entry.name} --out {entry.name}.html --data {entry.name}.csv",
                    language="bash", wrap_lines=True)  # wrapped, not cut at the column's edge
        ui.plot(fig, key=f"gallery-{entry.name}")
        ui.downloads(f"rfviz-{entry.name}", lambda: data_csv(data), fig, key=entry.name, params=entry.params)
        if entry.catalog:
            rows = _key_rows(entry.name)
            good = sum(r["match"] == "✓" for r in rows)
            corrected = sum(bool(r["note"]) for r in rows)
            label = f"Key numbers: {good}/{len(rows)} match the reference catalog to its printed precision"
            if corrected:
                label += f" ({corrected} corrected reference values)"
            with st.expander(label, expanded=good < len(rows)):
                st.caption(f"Source: {entry.source}. Tolerance = half a unit in the last printed digit (or the stated "
                           "grid precision).")
                st.dataframe(rows, hide_index=True, width="stretch")
