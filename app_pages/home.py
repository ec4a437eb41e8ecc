"""The Home page: three guided stories with their live figures, the Learn lessons, every view and the registered
estimators. ``app.py`` routes it at ``/`` (URL path ``start``) and hands it the views' pages for its links."""

from __future__ import annotations

import streamlit as st

from app_pages import PAGES, SECTIONS
from app_pages import _ui as ui


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


def render(by_path: dict[str, st.Page]) -> None:
    """Draw the Home page: the three stories with their live figures, the lessons, every view, the estimators.

    Parameters
    ----------
    by_path : dict of str to streamlit.navigation.page.StreamlitPage
        The views' pages by URL path (``app.py``'s router makes them once per session), for the links.
    """
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
    from rfviz.lessons import LESSONS

    lessons = list(LESSONS.values())
    for row in range(0, len(lessons), 2):  # one row of two per pair: a phone stacks them in reading order
        for column, (i, lesson) in zip(st.columns(2), enumerate(lessons[row:row + 2], start=row), strict=False):
            column.page_link(by_path["learn"], label=f"{i + 1} · {lesson.title}", icon=":material/school:",
                             query_params={"lesson": lesson.slug, "step": "1"})
    st.header("All views")
    for column, section in zip(st.columns(len(SECTIONS)), SECTIONS, strict=True):
        column.markdown(f"**{section}**")
        for page in PAGES:
            if page.section == section:
                column.page_link(by_path[page.url_path])
    st.subheader("Registered estimators")
    st.table([{"name": c.name, "title": c.title, "kernel": c.family, "closed form": c.has_closed_form,
               "reference": c.reference} for c in rfviz.REGISTRY.values()])
    ui.sidebar_info()
