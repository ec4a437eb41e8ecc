"""rfviz: ``streamlit run app.py``. A home page plus one page per view (pages/*.py), routed by st.navigation."""

from __future__ import annotations

import pathlib

import streamlit as st

from rfviz import ui

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


st.set_page_config(page_title="rfviz: random-feature atlas", page_icon=str(ROOT / "assets" / "logo.svg"),
                   layout="wide")
st.logo(str(ROOT / "assets" / "logo.svg"))
VIEWS = [st.Page(file, title=title, icon=icon, url_path=url)
         for file, title, icon, url in ui.discover_pages(ROOT / "pages")]
st.navigation([st.Page(home, title="Home", icon=":material/home:", default=True, url_path="home"), *VIEWS]).run()
