"""What a page shows of a result: figures, notes on them, and their downloads (CSV data, HTML figure)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from rfviz.figures.common import coinciding, compact_layout
from rfviz.figures.export import figure_html, plotlyjs_size, with_header
from rfviz.params import format_bytes

from ._text import plain

PHONE_KEY = "rfviz.phone_layout"
"""Session key of the sidebar's "Phone layout" switch (``_frame.sidebar_info``)."""
_PHONE_AGENTS = ("Mobile", "Android", "iPhone")


def phone_browser() -> bool:
    """Whether the browser's User-Agent says it is a phone (the server cannot see the screen's width)."""
    try:
        agent = st.context.headers.get("User-Agent", "") or ""
    except Exception:  # no request context (AppTest, bare mode)
        return False
    return any(word in agent for word in _PHONE_AGENTS)


def phone_layout() -> bool:
    """The phone layout is on: the sidebar switch, which starts from ``phone_browser()``."""
    return bool(st.session_state.get(PHONE_KEY, phone_browser()))


def plot(fig: Any, key: str | None = None) -> None:
    """Draw a plotly figure at full width; with the phone layout, panels stacked and legends under the plot
    (``rfviz.figures.common.compact_layout``)."""
    if phone_layout() and getattr(fig, "layout", None) is not None:
        fig = compact_layout(fig)
    st.plotly_chart(fig, width="stretch", key=key, config={"displaylogo": False, "responsive": True})


def announce_coinciding(fig: Any) -> None:
    """A caption naming the curves of ``fig`` that coincide (one hides the other); the names are Markdown-escaped
    (``Ψ*`` twice would otherwise turn the text between into italics)."""
    pairs = coinciding(fig)
    if pairs:
        st.caption("Coinciding curves (drawn on top of each other): "
                   + "; ".join(f"{plain(a)} = {plain(b)}" for a, b in pairs) + ".")


def downloads(stem: str, csv: Callable[[], str] | str | None, fig: Any = None, container: Any = st,
              key: str | None = None, params: Mapping[str, Any] | None = None) -> None:
    """CSV (data) and HTML (figure) download buttons; contents are generated when clicked. Both carry the page's
    settings (its URL parameters): the CSV as a ``# rfviz <version> <stem> key=value ...`` first line, the HTML
    as its title and a line above the figure. The figure comes twice: light (plotly.js from its CDN, needs the
    network when opened) and offline (plotly.js inlined, its size on the button). ``params`` (e.g. a gallery
    figure's own parameters) come first in both headers, then the URL's."""
    cols = container.columns(3)
    key = key or stem
    settings = {**(params or {}), **{k: st.query_params[k] for k in st.query_params}}
    if csv is not None:
        cols[0].download_button("Data (CSV)", lambda: with_header(csv() if callable(csv) else csv, stem, settings),
                                file_name=f"{stem}.csv", mime="text/csv", icon=":material/download:",
                                key=f"dl-csv-{key}", on_click="ignore",
                                help="first line: the settings, commented (pandas: read_csv(path, comment='#'))")
    if fig is not None:
        cols[1].download_button("Figure (HTML)", lambda: figure_html(fig, "cdn", title=stem, params=settings),
                                file_name=f"{stem}.html", mime="text/html", icon=":material/download:",
                                key=f"dl-html-{key}", on_click="ignore",
                                help="interactive figure, small file; loads plotly.js from its CDN when opened "
                                     "(needs the network)")
        size = format_bytes(plotlyjs_size())
        cols[2].download_button(f"Figure (HTML, offline, ~{size})",
                                lambda: figure_html(fig, True, title=stem, params=settings),
                                file_name=f"{stem}-offline.html", mime="text/html", icon=":material/download:",
                                key=f"dl-html-offline-{key}", on_click="ignore",
                                help="interactive figure that opens without a network: plotly.js is inside the file")
