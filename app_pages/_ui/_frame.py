"""The page frame: every page is ``with ui.page(url_path, title, intro, formulas) as state: ...``.

The frame draws what every page has (title, explanation, formulas with their sources, the compute device in the
sidebar), runs the page inside ``rfviz.params.server_budget_scope`` (memory and time caps per request: costed work
over them is refused with a message before it starts), hands the page its ``PageState`` (with the page's views
from ``PAGES``), and at the end of a run shows the URL errors the page has not shown yet and drops the URL keys no
widget wrote (``PageState.finish``). A page that stops early (``st.stop``, an exception) keeps its URL as it is.
"""

from __future__ import annotations

import base64
import functools
import gc
import pathlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import streamlit as st

from app_pages import BY_PATH
from rfviz.params import server_budget_scope

from ._url import PageState


@contextmanager
def page(url_path: str, title: str, intro: str, formulas: Sequence[tuple[str, str]] = ()) -> Iterator[PageState]:
    """Frame one run of the page ``url_path`` (its entry in ``app_pages.PAGES``) and yield its ``PageState``."""
    state = PageState(url_path, BY_PATH[url_path].views)
    header(title, intro, formulas)
    sidebar_info()
    with server_budget_scope():  # every computation of the run is costed against the server's caps
        yield state
    state.show_url_errors()
    state.finish()


def header(title: str, intro: str, formulas: Sequence[tuple[str, str]] = ()) -> None:
    """Title, a short explanation and each plotted formula (LaTeX) with its source paper and equation."""
    st.title(title)
    st.markdown(intro)
    if formulas:
        with st.expander("What is plotted: formulas and sources", expanded=False):
            for latex, source in formulas:
                st.latex(latex)
                st.caption(source)


@st.cache_resource(show_spinner=False)
def device_text() -> str:
    """The compute device Monte-Carlo runs use (``rfviz.engine.device_description``, computed once)."""
    from rfviz.engine import device_description

    return device_description()


def sidebar_info() -> None:
    """Compute device and version in the sidebar, and the phone-layout switch (``_output.PHONE_KEY``)."""
    from rfviz import __version__

    from ._output import PHONE_KEY, phone_browser

    st.sidebar.caption(f"Compute device: **{device_text()}** · rfviz {__version__}")
    st.sidebar.toggle("Phone layout", value=phone_browser(), key=PHONE_KEY,
                      help="charts for a narrow screen: panels stacked one per row, legends under the plot, titles "
                           "wrapped (on by default when the browser says it is a phone)")


@functools.cache  # once per process
def logo_url() -> str:
    """rfviz's logo (assets/logo.svg) as a ``data:`` URL, for ``st.logo`` and the page icon: given the file's path,
    Streamlit reads and encodes it again on every rerun.

    Returns
    -------
    str
        ``data:image/svg+xml;base64,…``
    """
    svg = (pathlib.Path(__file__).resolve().parents[2] / "assets" / "logo.svg").read_bytes()
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")


@functools.cache  # once per process; not st.cache_resource, which "Clear caches" would run again
def freeze_startup_objects() -> int:
    """Once per server process: import the libraries every page uses, collect, then ``gc.freeze()`` what is left.

    Why: Python's full garbage collection walks every tracked object, and after torch, scipy, plotly and
    Streamlit are imported that is ~300 000 objects, ~0.3 s of CPU on a 2-core server, paid by every
    generation-2 collection (Python's own, and Streamlit's ``runner.postScriptGC`` after each run, which
    ``.streamlit/config.toml`` turns off). The imported modules live as long as the server, so freezing them
    (CPython's documented use of ``gc.freeze``: long-lived start-up objects into the permanent generation, never
    scanned) loses nothing and leaves each collection only the objects of the sessions. Measured with
    bench/bench_concurrency.py: README, "Many visitors".

    Returns
    -------
    int
        The number of objects frozen.
    """
    import plotly.graph_objects  # noqa: F401  (what every page draws with)
    import scipy.special  # noqa: F401
    import torch  # noqa: F401

    import rfviz.compute.catalog  # noqa: F401  (the estimator catalog, the engine below it)

    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
