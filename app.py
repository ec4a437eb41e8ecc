"""rfviz: ``streamlit run app.py``. The router: Home (app_pages/home.py) plus one page per view
(app_pages/<url_path>.py), grouped into the sections of ``app_pages.SECTIONS`` by st.navigation. The pages are listed
once, in app_pages/__init__.py (``PAGES``); this file turns them into st.Page."""

from __future__ import annotations

import streamlit as st

from app_pages import HERE, LEGACY_PATHS, PAGES, SECTIONS
from app_pages import _ui as ui
from app_pages import home as home_page
from rfviz.figures.common import use_rfviz_template
from rfviz.server.turns import RUNS


def home() -> None:
    """The Home page (``app_pages.home.render``), linking to this session's view pages."""
    home_page.render(pages()[0])


def redirect(target: st.Page, old: str) -> st.Page:
    """A hidden page at the old URL path ``old`` that switches to ``target`` with the same query parameters."""

    def go() -> None:
        st.switch_page(target, query_params=st.query_params.to_dict())

    return st.Page(go, title=target.title, url_path=old, visibility="hidden")


st.set_page_config(page_title="rfviz: random-feature atlas", page_icon=ui.logo_url(), layout="wide")
ui.freeze_startup_objects()  # once per server: the imported libraries out of every garbage collection
use_rfviz_template()  # plotly's default here: a figure gets rfviz's template when made, not validated again
st.logo(ui.logo_url())


def pages() -> tuple[dict[str, st.Page], dict[str, list[st.Page]]]:
    """The views' pages by URL path, and every page st.navigation routes by section (Home on top, the views in
    their sections, the old paths' hidden redirects), made once per session: st.Page resolves its file's path on
    disk (a tenth of a classroom rerun's CPU when made on each)."""
    if "_rfviz_pages" not in st.session_state:  # one session's script runs one at a time: its own objects
        views = {p.url_path: st.Page(p.file, title=p.title, icon=p.icon, url_path=p.url_path) for p in PAGES}
        start = st.Page(home, title="Home", icon=":material/home:", default=True, url_path="start")  # served at "/"
        old = [redirect(views[new], path) for path, new in LEGACY_PATHS.items()]
        teach = st.Page(HERE / "teach.py", title="Teacher",
                        icon=":material/co_present:", url_path="teach", visibility="hidden")  # /teach?key=K only
        routed = {"": [start, teach, *old, redirect(start, "home")]}  # "/home" (a natural guess) → "/"
        for section in SECTIONS:
            routed[section] = [views[p.url_path] for p in PAGES if p.section == section]
        st.session_state["_rfviz_pages"] = views, routed
    return st.session_state["_rfviz_pages"]


with RUNS.turn():  # page runs in order of arrival: a class moving at once gets its charts one after another
    st.navigation(pages()[1]).run()
