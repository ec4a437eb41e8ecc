"""rfviz: ``streamlit run app.py``. A home page plus one page per view (app_pages/<url_path>.py), routed by
st.navigation. The pages are listed once, in app_pages/__init__.py (``PAGES``); this file turns them into st.Page."""

from __future__ import annotations

import pathlib

import streamlit as st

from app_pages import LEGACY_PATHS, PAGES
from app_pages import _ui as ui

ROOT = pathlib.Path(__file__).resolve().parent


def home() -> None:
    import rfviz

    st.title("rfviz: the atlas of random-feature kernel estimators")
    st.markdown(
        "Random features replace a kernel K(x, y) by an inner product of random feature maps. How good the "
        "approximation is depends on the mechanism, its parameters and the inputs. rfviz shows the **mean squared "
        "error** of each estimator, **analytic** (the verified closed forms) and **sampled** (a PyTorch Monte-Carlo "
        "engine) side by side. Every view keeps its state in the URL, so you can share it."
    )
    cols = st.columns(3)
    for i, page in enumerate(VIEWS):
        cols[i % 3].page_link(page)
    st.subheader("Registered estimators")
    st.dataframe(
        [{"name": c.name, "title": c.title, "kernel": c.family, "closed form": c.has_closed_form,
          "reference": c.reference} for c in rfviz.REGISTRY.values()],
        hide_index=True,
        width="stretch",
    )
    ui.sidebar_info()


def redirect(target: st.Page, old: str) -> st.Page:
    """A hidden page at the old URL path ``old`` that switches to ``target`` with the same query parameters."""

    def go() -> None:
        st.switch_page(target, query_params=st.query_params.to_dict())

    return st.Page(go, title=target.title, url_path=old, visibility="hidden")


st.set_page_config(page_title="rfviz: random-feature atlas", page_icon=str(ROOT / "assets" / "logo.svg"),
                   layout="wide")
st.logo(str(ROOT / "assets" / "logo.svg"))
VIEWS = [st.Page(p.file, title=p.title, icon=p.icon, url_path=p.url_path) for p in PAGES]
by_path = {v.url_path: v for v in VIEWS}
OLD = [redirect(by_path[new], old) for old, new in LEGACY_PATHS.items()]
st.navigation([st.Page(home, title="Home", icon=":material/home:", default=True, url_path="home"), *VIEWS,
               *OLD]).run()
