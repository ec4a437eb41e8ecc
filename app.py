"""rfviz: ``streamlit run app.py``. A home page plus one page per view (app_pages/<url_path>.py), routed by
st.navigation. The pages are listed once, in app_pages/__init__.py (``PAGES``); this file turns them into st.Page."""

from __future__ import annotations

import streamlit as st

from app_pages import HERE, LEGACY_PATHS, PAGES
from app_pages import _ui as ui
from rfviz.figures.common import use_rfviz_template


@ui.shared_figure  # one set of figure objects for every visitor (wrapped once, not on every rerun of this script)
def _story_figures() -> tuple:
    """The Home page's three live figures (pure builders from rfviz.figures, cached)."""
    import numpy as np

    from rfviz.compute import dp as cd
    from rfviz.compute import hrf as ch
    from rfviz.figures import hrf as fh
    from rfviz.figures import simrf as fc

    hybrid = fh.relative_error_figure(ch.relative_error_columns(*STORY1), *STORY1)
    coupling = fc.ratio_vs_v_figure(16, 16, features="positive", v=np.geomspace(1e-2, 1e1, 81))
    q = cd.variance_vs_q(1.0, 0.79, 8, 3, 16, "flat")
    import textwrap

    for fig in (hybrid, coupling, q):  # a narrow column: the title wrapped, not cut
        title = "<br>".join(textwrap.wrap((fig.layout.title.text or "").replace("<br>", " "), 60))
        fig.update_layout(height=360, margin={"t": 50 + 18 * title.count("<br>"), "b": 40}, title_text=title)
    return hybrid, coupling, q


STORY1 = (1.5, 10, 8)  # story 1's setting: r, m (features per base estimator), n (λ-features of the hybrid)


@ui.cached
def story1_text() -> str:
    """Story 1's paragraph, its numbers read off the chart's columns (rfviz.compute.hrf.relative_error_columns)."""
    from rfviz.compute import hrf as ch

    c = ch.relative_error_columns(*STORY1)
    worst = {k: 100 * 10 ** float(c[f"log10_rel_{k}"].max()) for k in ("trig", "pos", "hybrid")}
    return (
        "Relative to the kernel K = exp(x·y), **trigonometric** features are exact at θ = 0 (x = y) and fail as "
        f"θ → π, where K is tiny: their relative error √MSE/K reaches {worst['trig']:,.0f} %. **Positive** (++) "
        f"features are the mirror image, exact at θ = π and up to {worst['pos']:,.0f} % near θ = 0. A **hybrid** "
        "mixes the two with a random weight λ̂ that follows θ (angular λ = θ/π): exact at both ends, its worst "
        f"relative error over all θ is {worst['hybrid']:,.0f} %. In between it is worse than the better base "
        "estimator, because λ̂'s own noise lets some of each one's error in: a hybrid caps the worst case, it does "
        f"not win everywhere (r = {STORY1[0]:g}, m = {STORY1[1]}, n = {STORY1[2]}).")


STORIES = (
    ("1 · Trig fails near θ = π, positive features near θ = 0: a hybrid caps the worst case",
     None,
     ("hybrid", "Open the hybrid page (where each wins)", {"view": "winner", "lam": "angular", "n": "8"}),
     ("mse_explorer", "See both failures on the whole (r, θ) plane",
      {"est": "trig,positive_antithetic,hybrid_angular", "quantity": "rel_error"})),
    ("2 · Coupling the projections lowers the MSE",
     "Draw the m projections jointly instead of independently: orthogonal blocks (ORF) and simplex blocks (SimRF) "
     "keep every estimate unbiased but make pairs of projections less alike, so the MSE ratio to iid drops below 1 "
     "where v = |x + y| is small: simplex blocks cut the MSE about 30-fold for v ≲ 0.2, orthogonal ones by at most "
     "about a quarter (near v ≈ 1.3). For v ≳ 3 both ratios are back at 1: coupling no longer helps (positive "
     "features, d = m = 16).",
     ("coupling", "Open the coupling page (MSE ratio vs v)", {"view": "ratio-vs-v", "d": "16",
                                                              "m": "16"}),
     None),
    ("3 · What q does in dot-product sketches (m = 16 features)",
     "Polynomial sketches multiply p random projections whose entries are real (q = 1), imaginary (q = 0) or a "
     "complex mix. The variance depends on q only through (2q − 1)², so it is symmetric about q = ½, and complex "
     "features (q = ½) win exactly when (x·y)² > Σₖ xₖ²yₖ² (p = 3, d = 8, m = 16 features).",
     ("dot_product", "Open the dot-product page (variance vs q)", {"view": "vs-q"}),
     None),
)


def home() -> None:
    import rfviz

    st.title("rfviz: the atlas of random-feature kernel estimators")
    st.markdown(
        "Random features replace a kernel K(x, y) by an inner product of random feature maps. How good the "
        "approximation is depends on the mechanism, its parameters and the inputs. rfviz shows the **mean squared "
        "error** of each estimator, **analytic** (the verified closed forms) and **sampled** (a PyTorch Monte-Carlo "
        "engine) side by side. Every view keeps its state in the URL, so you can share it."
    )
    st.header("Start here: three short stories")
    for (title, text, link, extra), fig in zip(STORIES, _story_figures(), strict=True):
        with st.container(border=True):
            st.subheader(title)
            left, right = st.columns([2, 3])
            left.markdown(text if text is not None else story1_text())
            for target in (link, extra):
                if target is not None:
                    path, label, params = target
                    left.page_link(by_path[path], label=label, icon=":material/arrow_forward:",
                                   query_params=params)
            with right:
                ui.plot(fig, key=f"home-story-{title[0]}")
    st.header("Learn: lessons for a class")
    st.markdown("Predict, then see the live figure answer: short lessons, one idea each, every step shareable by "
                "its URL.")
    learn = st.columns(2)
    from rfviz.lessons import LESSONS

    for i, lesson in enumerate(LESSONS.values()):
        learn[i % 2].page_link(by_path["learn"], label=f"{i + 1} · {lesson.title}", icon=":material/school:",
                               query_params={"lesson": lesson.slug, "step": "1"})
    st.header("All views")
    cols = st.columns(3)
    for i, page in enumerate(by_path.values()):
        cols[i % 3].page_link(page)
    st.subheader("Registered estimators")
    st.table([{"name": c.name, "title": c.title, "kernel": c.family, "closed form": c.has_closed_form,
               "reference": c.reference} for c in rfviz.REGISTRY.values()])
    ui.sidebar_info()


def redirect(target: st.Page, old: str) -> st.Page:
    """A hidden page at the old URL path ``old`` that switches to ``target`` with the same query parameters."""

    def go() -> None:
        st.switch_page(target, query_params=st.query_params.to_dict())

    return st.Page(go, title=target.title, url_path=old, visibility="hidden")


st.set_page_config(page_title="rfviz: random-feature atlas", page_icon=ui.logo_url(), layout="wide")
ui.freeze_startup_objects()  # once per server: the imported libraries out of every garbage collection
use_rfviz_template()  # plotly's default here: a figure gets rfviz's template when made, not validated again
st.logo(ui.logo_url())


def pages() -> tuple[dict[str, st.Page], list[st.Page]]:
    """The views' pages by URL path, and every page st.navigation routes (Home, the views, the old paths'
    redirects), made once per session: st.Page resolves its file's path on disk (a tenth of a classroom rerun's CPU
    when made on each)."""
    if "_rfviz_pages" not in st.session_state:  # one session's script runs one at a time: its own objects
        views = {p.url_path: st.Page(p.file, title=p.title, icon=p.icon, url_path=p.url_path) for p in PAGES}
        start = st.Page(home, title="Home", icon=":material/home:", default=True, url_path="start")  # served at "/"
        old = [redirect(views[new], path) for path, new in LEGACY_PATHS.items()]
        teach = st.Page(HERE / "teach.py", title="Teacher",
                        icon=":material/co_present:", url_path="teach", visibility="hidden")  # /teach?key=K only
        routed = [start, *views.values(), teach, *old, redirect(start, "home")]  # "/home" (a natural guess) → "/"
        st.session_state["_rfviz_pages"] = views, routed
    return st.session_state["_rfviz_pages"]


by_path, ROUTED = pages()
st.navigation(ROUTED).run()
