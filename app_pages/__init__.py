"""The app's pages: one file per URL path (``app_pages/<url_path>.py``), listed once in ``PAGES``.

``app.py`` builds its ``st.Page`` navigation from ``PAGES``, grouped into ``SECTIONS``; Home is ``home.py``, which
is not in ``PAGES`` (no page frame, routed at ``/``); the app's tests and bench/bench_pages.py read the same
list. Adding a page = one file here + one ``Page(...)`` line below (with its
``Views`` if it has a view selector: slugs in the code and URLs, labels on screen). A page's
widget keys in ``st.session_state`` are ``"<url_path>.<name>"`` (``_ui.PageState(url_path)``), its URL query
parameters ``name`` alone.

This package holds widgets and layout only (streamlit lives here, never in ``rfviz``); the computations are in
``rfviz.figures``, ``rfviz.lab`` and ``rfviz.gallery``. It imports nothing itself, so tests and benchmarks can read
``PAGES`` without starting Streamlit.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

HERE = pathlib.Path(__file__).resolve().parent


@dataclass(frozen=True)
class Probe:
    """A number widget of a page for the tests: setting it to ``bad`` shows an error "<name> must be …" and the
    page keeps working; ``good`` clears the error."""

    name: str
    bad: float
    good: float


@dataclass(frozen=True)
class Sweep:
    """A widget bench/bench_pages.py changes to values it never had (first + i·step) to time an uncached rerun."""

    kind: str
    name: str
    first: float
    step: float
    query: dict[str, str] | None = None
    """URL query parameters that open the view where the widget is used (None: the page's default view)."""


@dataclass(frozen=True)
class View:
    """One view of a page: its ``slug`` (in the code and the URL, ``?view=<slug>``: never renamed) and its
    ``label`` (shown by the view selector: free to change). ``old``: earlier labels of the view (after a rename),
    so links shared before it still open this view."""

    slug: str
    label: str
    old: tuple[str, ...] = ()


@dataclass(frozen=True)
class Views:
    """A page's views in selector order (``Views(View("lambda", "λ and its moments"), ...)``)."""

    items: tuple[View, ...]

    def __init__(self, *items: View) -> None:
        slugs = [v.slug for v in items]
        if len(set(slugs)) != len(slugs) or not items:
            raise ValueError(f"views need distinct slugs, got {slugs}")
        object.__setattr__(self, "items", tuple(items))

    @property
    def slugs(self) -> tuple[str, ...]:
        return tuple(v.slug for v in self.items)

    def label(self, slug: str) -> str:
        """The label shown for ``slug`` (the slug itself if unknown)."""
        return next((v.label for v in self.items if v.slug == slug), slug)

    def resolve(self, text: str) -> str | None:
        """The slug a URL value means: a slug, a label or an old label (labels of links shared before slugs);
        None if it names no view."""
        for v in self.items:
            if text == v.slug:
                return v.slug
        for v in self.items:
            if text == v.label or text in v.old:
                return v.slug
        return None


@dataclass(frozen=True)
class Page:
    """One page: its URL path (= file stem = widget-key prefix), title, icon and section in the navigation, whether
    it draws a Plotly chart with its defaults, the widgets the tests (``probe``) and the benchmark (``sweeps``) use,
    and its views (if it has a view selector)."""

    url_path: str
    title: str
    icon: str
    section: str
    """Its section in the navigation (one of ``SECTIONS``)."""
    draws_chart: bool = True
    probe: Probe | None = None
    sweeps: tuple[Sweep, ...] = ()
    views: Views | None = None
    """The page's views (``PageState.view``), slugs first: the code and URLs use slugs, the selector shows labels."""

    @property
    def file(self) -> pathlib.Path:
        return HERE / f"{self.url_path}.py"

    def key(self, name: str) -> str:
        """The ``st.session_state`` key of this page's widget ``name``."""
        return f"{self.url_path}.{name}"


SECTIONS: tuple[str, ...] = ("Learn", "Explore", "Check", "Your data")
"""The navigation's sections, in menu order, under Home (app.py's router groups ``PAGES`` by ``Page.section``)."""

PAGES: tuple[Page, ...] = (
    Page("learn", "Learn", ":material/school:", "Learn", draws_chart=False),  # a chart once the reader has predicted
    Page("mse_explorer", "MSE explorer", ":material/grid_on:", "Explore", probe=Probe("d", 0, 16),
         sweeps=(Sweep("slider", "slice_theta", 0.5, 0.07), Sweep("number_input", "r_max", 2.1, 0.05)),
         views=Views(View("heatmap", "heatmap"), View("surface", "3-D surface"),
                     View("features", "features needed for ε"))),
    Page("hybrid", "Hybrid estimators", ":material/merge_type:", "Explore", probe=Probe("m", 0, 8),
         sweeps=(Sweep("slider", "r", 1.2, 0.05),),
         views=Views(View("lambda", "λ and its moments"), View("mse-vs-base", "MSE vs base estimators"),
                     View("winner", "Where each wins"), View("max-error", "Max-relative-error"))),
    Page("gerf", "GERF / OPRF / discrete RFs", ":material/functions:", "Explore", probe=Probe("m", 0, 8),
         sweeps=(Sweep("slider", "r", 1.2, 0.05),),
         views=Views(View("real-a", "Variance against real A"), View("complex-a", "Complex A"),
                     View("oprf", "OPRF vs PosRF"), View("discrete", "Poisson & geometric RFs"))),
    Page("coupling", "Coupling (simplex RFs)", ":material/change_history:", "Explore", probe=Probe("d", 0, 16),
         sweeps=(Sweep("slider", "v", 1.2, 0.05, {"view": "ratio-vs-d"}),),
         views=Views(View("density", "Density p(wᵢⱼ)"), View("conformity", "RF-conformity ρ(v)"),
                     View("ratio-vs-v", "MSE ratio vs v (+ simplex+)"), View("ratio-vs-d", "MSE ratio vs d"),
                     View("simplex-plus", "Simplex+ iterations"))),
    Page("optimal_sampling", "Optimal sampling Ψ", ":material/target:", "Explore", probe=Probe("d", 0, 16),
         sweeps=(Sweep("slider", "r", 1.2, 0.05),),
         views=Views(View("density", "Ψ* radial density"), View("variance", "V* vs unweighted variance"),
                     View("equivalence", "Equivalence (X₁ = X₂ or not)"))),
    Page("dot_product", "Dot-product sketches", ":material/scatter_plot:", "Explore", probe=Probe("m", 0, 8),
         sweeps=(Sweep("slider", "theta", 0.5, 0.03),),
         views=Views(View("vs-q", "Variance vs q"), View("vs-p", "Variance vs p"), View("vs-d", "Variance vs d"),
                     View("vs-m", "Variance vs m (TensorSRHT sawtooth)"), View("real-vs-complex", "Real vs complex"),
                     View("tsrht-vs-rademacher", "TensorSRHT vs Rademacher"),
                     View("maclaurin-exp", "Maclaurin allocation (exponential kernel)"),
                     View("maclaurin-gauss", "Maclaurin allocation (Gaussian kernel)"),
                     View("sketches-vs-m", "Sketches vs m (with TensorSketch)"))),
    Page("data", "Your data", ":material/dataset:", "Your data", probe=Probe("m", 0, 8),
         sweeps=(Sweep("number_input", "scale", 0.3, 0.05),)),
    Page("estimator_lab", "Estimator lab", ":material/science:", "Check", draws_chart=False),
    Page("gallery", "Gallery", ":material/photo_library:", "Learn"),
    Page("sweeps", "Sweeps", ":material/stacked_line_chart:", "Your data", draws_chart=False),
)
"""Every page, in navigation order within its section (the gallery links to these URL paths)."""

LEGACY_PATHS: dict[str, str] = {"Estimator_lab": "estimator_lab", "Gallery": "gallery"}
"""Old URL path → page: the paths Streamlit's legacy ``pages/`` mode gave 7_Estimator_lab.py and 8_Gallery.py;
app.py keeps them as hidden pages that switch to the new one (query parameters kept)."""

HIDDEN_PAGES: tuple[str, ...] = ("teach",)
"""Pages app.py routes but no navigation or list of views shows: the teacher's page ``/teach?key=K`` (its file
``app_pages/teach.py``; it draws without the page frame, and opens only with the room's key)."""

BY_PATH: dict[str, Page] = {p.url_path: p for p in PAGES}
