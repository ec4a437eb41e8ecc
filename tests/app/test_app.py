"""The Streamlit app through streamlit.testing.v1.AppTest: every page loads with its defaults, every widget can be
changed without an exception, an invalid value shows an error element (and the page keeps working), and the URL
query parameters restore a view. Plus unit tests of the pure figure builders behind the MSE explorer."""

from __future__ import annotations

import json
import math
import pathlib
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app_pages import BY_PATH, PAGES
from app_pages._ui import to_text
from app_pages._ui._output import PHONE_KEY
from rfviz.compute import explorer as ex
from rfviz.figures import explorer as fx

pytestmark = pytest.mark.slow  # every page run through Streamlit's AppTest (python -m pytest -m "not slow" skips them)

ROOT = pathlib.Path(__file__).resolve().parents[2]
TIMEOUT = 60
LAB_TIMEOUT = 300
"""The lab page's first run discovers the bundled examples, one plugin process each (each imports torch): a minute
or more on a loaded 2-core machine."""


def page_timeout(page: str) -> float:
    """AppTest's timeout for a page's first run."""
    return LAB_TIMEOUT if page == "estimator_lab" else TIMEOUT
WIDGET_KINDS = ("slider", "number_input", "selectbox", "multiselect", "toggle", "radio", "checkbox", "select_slider")


def page_path(page: str) -> str:
    return str(BY_PATH[page].file)


def _text(element) -> str:
    """An st.error's text as the reader sees it (messages are Markdown-escaped: see _ui.plain)."""
    return element.value.replace("\\", "")


def _no_exception(at: AppTest, context: str) -> None:
    assert not at.exception, f"{context}: {[e.message for e in at.exception]}"


def _widgets(at: AppTest) -> list[tuple[str, str]]:
    """(kind, key) of every keyed input widget on the page, main area and sidebar."""
    out = []
    for kind in WIDGET_KINDS:
        for w in getattr(at, kind):
            if w.key and not w.key.startswith("$$") and not getattr(w.proto, "disabled", False):
                out.append((kind, w.key))
    return out


def _other_value(kind: str, w) -> object:
    """A different valid value for widget ``w`` (for choice widgets: ("index", i))."""
    v = w.value
    if kind in ("toggle", "checkbox"):
        return not v
    if kind in ("selectbox", "radio", "select_slider"):
        return ("index", (list(w.options).index(w.format_func(v)) + 1) % len(w.options))
    if kind == "multiselect":
        return list(v)[:-1] if len(v) > 1 else list(v)
    if kind == "slider":
        if isinstance(v, tuple | list):
            return v
        lo, hi = w.min, w.max
        new = v + (hi - v) / 2 if v < hi else lo + (hi - lo) / 3
        return round(new) if isinstance(v, int) else float(new)
    if kind == "number_input":
        return v + (w.step or 1)
    return v


def _change(at: AppTest, kind: str, key: str) -> bool:
    """Change widget ``key`` to another valid value; False if it is no longer on the page."""
    try:
        w = getattr(at, kind)(key=key)
    except KeyError:
        return False
    if getattr(w.proto, "disabled", False):
        return False
    new = _other_value(kind, w)
    if isinstance(new, tuple) and new and new[0] == "index":
        if kind == "selectbox":
            w.select_index(new[1])
        else:
            w.set_value(w.options[new[1]])
    else:
        w.set_value(new)
    return True


ALL_PAGES = [p.url_path for p in PAGES]
PROBED = [p.url_path for p in PAGES if p.probe is not None]


@pytest.fixture(scope="module", params=ALL_PAGES)
def loaded(request) -> tuple[str, AppTest]:
    page = request.param
    at = AppTest.from_file(page_path(page), default_timeout=page_timeout(page)).run()
    return page, at


def test_every_page_file_exists_and_every_file_is_a_page():
    """One file per URL path in app_pages/ (no numbered names), and no ``pages/`` folder: that name switches
    Streamlit to its legacy multipage mode, which bypasses app.py's st.navigation."""
    missing = [p.url_path for p in PAGES if not p.file.exists()]
    assert not missing, f"pages without a file: {missing}"
    files = {f.stem for f in (ROOT / "app_pages").glob("*.py") if not f.stem.startswith("_")}
    files.discard("home")  # Home: app.py routes it at "/" (no page frame, not a view)
    from app_pages import HIDDEN_PAGES

    pages = set(ALL_PAGES) | set(HIDDEN_PAGES)  # the teacher's page: routed, hidden from the navigation
    assert files == pages, f"files in app_pages/ that are not in PAGES or HIDDEN_PAGES: {sorted(files - pages)}"
    assert not (ROOT / "pages").exists()
    assert len({p.icon for p in PAGES}) == len(PAGES), "every page has its own icon"


def test_every_page_is_in_one_navigation_section():
    """The navigation groups the views into Learn · Explore · Check · Your data (app.py's router, under Home); every
    section holds a page, and each page's URL path is its file's stem (links shared before the sections still work)."""
    from app_pages import SECTIONS

    assert SECTIONS == ("Learn", "Explore", "Check", "Your data")
    assert {p.section for p in PAGES} == set(SECTIONS), [(p.url_path, p.section) for p in PAGES]
    assert all(p.file.stem == p.url_path for p in PAGES)


def test_every_page_runs_in_the_page_frame():
    """Every page is one ``with ui.page("<its url path>", ...) as state:`` block (header, sidebar, URL errors and
    the URL clean-up come from the frame, never by hand)."""
    import ast

    for p in PAGES:
        text = p.file.read_text()
        frames = [n for n in ast.parse(text).body if isinstance(n, ast.With)
                  and isinstance(n.items[0].context_expr, ast.Call)
                  and ast.unparse(n.items[0].context_expr.func) == "ui.page"]
        assert len(frames) == 1, f"{p.url_path}: no `with ui.page(...) as state:` frame"
        first = frames[0].items[0].context_expr.args[0]
        assert isinstance(first, ast.Constant) and first.value == p.url_path, p.url_path
        for by_hand in ("PageState(", ".finish()", "ui.header(", "ui.sidebar_info("):
            assert by_hand not in text, f"{p.url_path} calls {by_hand} itself: the frame does it"


def test_every_page_parameter_is_validated_where_it_is_used():
    """``state.param`` does not clamp (a typed value out of range must be reported, not silently fixed): every value
    a page reads from ``state.param(P, ...)`` goes through ``ui.valid(P, value)`` (inside a ``ui.guard``)."""
    import ast

    for p in PAGES:
        tree = ast.parse(p.file.read_text())
        made = {(ast.unparse(n.value.args[0]), n.targets[0].id) for n in ast.walk(tree)
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                and ast.unparse(n.value.func) == "state.param"}
        checked = {(ast.unparse(n.args[0]), ast.unparse(n.args[1])) for n in ast.walk(tree)
                   if isinstance(n, ast.Call) and ast.unparse(n.func) == "ui.valid"}
        assert not made - checked, f"{p.url_path}: never validated: {sorted(made - checked)}"


def test_rfviz_never_imports_streamlit():
    import subprocess
    import sys

    code = ("import sys, rfviz, rfviz.figures, rfviz.gallery, rfviz.lab; "
            "print('streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                         timeout=120)
    assert out.stdout.strip() == "False"


def test_home_and_navigation():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    _no_exception(at, "home")
    assert any("rfviz" in t.value for t in at.title)
    at.switch_page("app_pages/mse_explorer.py").run()
    _no_exception(at, "switch to the MSE explorer")
    assert any("MSE explorer" in t.value for t in at.title)


def test_page_loads_with_defaults(loaded):
    page, at = loaded
    _no_exception(at, page)
    assert not at.error, f"{page} shows errors with its defaults: {[e.value for e in at.error]}"
    assert at.title, f"{page} has no title"
    if BY_PATH[page].draws_chart:  # the views draw their figures with the defaults (the lab waits for a button)
        assert at.get("plotly_chart"), f"{page} draws no plotly chart"


TEXT_KINDS = ("title", "header", "subheader", "markdown", "caption", "latex", "error", "warning", "info",
              "success", "metric", "code", "table", "dataframe", "button")


def _visible(at: AppTest, skip: str) -> tuple:
    """What a user sees: the figures (Plotly specs), the text elements, and every other widget (label, value,
    whether it is enabled). ``skip``: the widget just changed (its own value always changes)."""
    charts = tuple(c.proto.spec for c in at.get("plotly_chart"))
    texts = tuple((kind, repr(getattr(e, "value", None) if kind not in ("table", "dataframe", "button") else
                              (e.proto.SerializeToString() if kind != "button" else e.label)))
                  for kind in TEXT_KINDS for e in at.get(kind))
    widgets = []
    for kind in WIDGET_KINDS:
        for w in getattr(at, kind):
            if w.key != skip:
                widgets.append((kind, w.key, w.label, repr(w.value), bool(getattr(w.proto, "disabled", False))))
    return charts, texts, tuple(widgets)


BUTTON_DRIVEN = {p.url_path for p in PAGES if not p.draws_chart}
"""Pages whose inputs feed a "Run" button (the estimator lab): their widgets act on the next click."""


def test_every_widget_reruns_and_changes_what_the_page_shows(loaded):
    """No dead controls: changing any enabled widget must change a figure or the visible state of the page
    (text, other widgets). A widget the current view ignores must be disabled (exempt here)."""
    page, at = loaded
    widgets = [(kind, key) for kind, key in _widgets(at) if key != PHONE_KEY]  # the app-wide layout switch
    assert widgets, f"{page} has no widgets"
    foreign = [key for _, key in widgets if not key.startswith(f"{page}.")]
    assert not foreign, f"{page}: widget keys must start with the page's URL path: {foreign}"
    widgets.sort(key=lambda kw: kw[1].endswith(".view"))  # the view selector last: it changes the sidebar
    changed, dead = 0, []
    for kind, key in widgets:
        before = _visible(at, key)
        if _change(at, kind, key):
            at.run()
            changed += 1
            _no_exception(at, f"{page}: after changing {kind} {key}")
            if _visible(at, key) == before and not at.error:  # (a page showing an error may ignore inputs)
                dead.append(f"{kind} {key}")
    assert changed >= len(widgets) // 2
    if page not in BUTTON_DRIVEN:
        assert not dead, f"{page}: widgets that change nothing on the page (disable them where unused): {dead}"


@pytest.mark.parametrize("page", PROBED)
def test_invalid_value_shows_error_and_page_keeps_working(page):
    probe = BY_PATH[page].probe
    key, text = BY_PATH[page].key(probe.name), f"{probe.name} must be"
    fresh = AppTest.from_file(page_path(page), default_timeout=TIMEOUT).run()
    fresh.number_input(key=key).set_value(probe.bad).run()
    _no_exception(fresh, f"{page} with {key}={probe.bad}")
    errors = [_text(e) for e in fresh.error]
    assert any(text in e for e in errors), f"{page}: no error mentioning {text!r} in {errors}"
    # the page keeps working: the widgets are still there and a valid value clears the error
    fresh.number_input(key=key).set_value(probe.good).run()
    _no_exception(fresh, f"{page} after fixing {key}")
    assert not any(text in _text(e) for e in fresh.error)


MC_VIEW = {"hybrid": {"view": "mse-vs-base"}, "coupling": {"view": "ratio-vs-v"}}
"""The view holding each page's Monte-Carlo controls (pages without an entry: the default view)."""


@pytest.mark.parametrize("page,name,value", [("mse_explorer", "trials", "1"), ("hybrid", "trials", "2000000"),
                                             ("gerf", "seed", "-1"), ("estimator_lab", "trials", "50")])
def test_page_parameter_out_of_range_in_the_url_falls_back_with_an_error(page, name, value):
    """Page-level parameters (rfviz.params: TRIALS_PARAM, SEED_PARAM, LAB_TRIALS_PARAM, …) check URL values with
    the same range as the widget: out of range → the default, and an error naming the parameter and the range."""
    at = AppTest.from_file(page_path(page), default_timeout=page_timeout(page))
    at.query_params.update(MC_VIEW.get(page, {}))
    at.query_params[name] = value
    at.run()
    _no_exception(at, f"{page}?{name}={value}")
    assert any(f"URL parameter {name}: {name} must be an integer in [" in _text(e) for e in at.error), \
        [e.value for e in at.error]
    assert str(at.number_input(key=BY_PATH[page].key(name)).value) != value


@pytest.mark.parametrize("page,on", [("mse_explorer", "mc"), ("hybrid", "mc"), ("gerf", "mc"), ("coupling", "mc")])
def test_trials_share_one_range_on_every_page(page, on):
    """trials = 1 is rejected with the same message (TRIALS_PARAM's range, [2, 10⁶]) on every page that samples."""
    from rfviz.params import TRIALS_PARAM

    at = AppTest.from_file(page_path(page), default_timeout=TIMEOUT)
    at.query_params.update({"r_max": "0.6", "mc_res": "3"} if page == "mse_explorer" else MC_VIEW.get(page, {}))
    at.query_params["trials"] = "100"
    at.run()
    at.toggle(key=BY_PATH[page].key(on)).set_value(True).run(timeout=300)  # trials is enabled with the sampling
    at.number_input(key=BY_PATH[page].key("trials")).set_value(1).run()
    _no_exception(at, f"{page} with trials = 1")
    assert any(f"trials must be {TRIALS_PARAM.range_text()}, got 1" in _text(e) for e in at.error), \
        [e.value for e in at.error]


def test_url_query_parameters_restore_and_record_the_view():
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT)
    at.query_params.update({"kernel": "gaussian", "est": "trig", "trig.m": "25", "quantity": "rel_error"})
    at.run()
    _no_exception(at, "explorer from URL")
    assert at.sidebar.selectbox(key="mse_explorer.kernel").value == "gaussian"
    assert at.sidebar.multiselect(key="mse_explorer.est").value == ["trig"]
    assert at.number_input(key="mse_explorer.trig.m").value == 25
    at.number_input(key="mse_explorer.trig.m").set_value(30).run()
    assert at.query_params["trig.m"] == ["30"] or at.query_params["trig.m"] == "30"


def test_complex_list_parameter_widget_accepts_and_rejects_text():
    """complex_exponential_diag's A_diag (a list of complex numbers) gets a text widget; an entry of modulus 0
    (a singular A) shows the estimator's error and the page keeps working."""
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT)
    at.query_params.update({"est": "complex_exponential_diag"})
    at.run()
    _no_exception(at, "explorer with complex_exponential_diag")
    box = at.text_input(key="mse_explorer.complex_exponential_diag.A_diag")
    assert box.value == "1+0.5j,0.8+0j"
    box.set_value("1, 0, 1j").run()
    _no_exception(at, "explorer with a singular A_diag")
    assert any("A_diag must be" in _text(e) for e in at.error)
    at.text_input(key="mse_explorer.complex_exponential_diag.A_diag").set_value("1+0.5j, 0.8").run()
    assert not at.error


def test_bad_url_parameter_shows_error_and_falls_back():
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT)
    at.query_params.update({"res": "banana"})
    at.run()
    _no_exception(at, "explorer with a bad URL")
    assert any("res" in e.value for e in at.error)
    assert at.sidebar.slider(key="mse_explorer.res").value == 60


def test_explorer_monte_carlo_overlay_and_badge():
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT)
    # r ≤ 0.4 keeps e^{|x+y|²} ≤ e^{0.64}: light tails, so 2000 trials give reliable standard errors (at r = 0.6
    # the Hill index of positive_antithetic's squared errors at θ = 0 is ≈ 1.4: reported as heavy-tailed).
    at.query_params.update({"est": "trig,positive_antithetic", "r_max": "0.4", "trials": "2000", "mc_res": "4"})
    at.run()
    at.toggle(key="mse_explorer.mc").set_value(True).run()
    _no_exception(at, "Monte Carlo overlay")
    badges = [m.value for m in at.markdown if "badge[" in m.value]
    # one badge per sampled panel (issue 28: every panel shows what was sampled and with which outcome)
    assert len(badges) == 2 and all("points sampled at 2,000 trials" in b for b in badges), badges
    assert all("agree with the closed form" in b and "disagree" not in b for b in badges), badges


def test_explorer_defaults_give_every_panel_its_outcome_in_words():
    """Issue 28: at the explorer's defaults every sampled panel (trig too) gets a line with its counts, which add up
    to the grid, and no 29-digit trial count is printed."""
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT)
    at.run()
    at.toggle(key="mse_explorer.mc").set_value(True).run()
    _no_exception(at, "Monte Carlo at the defaults")
    badges = [m.value for m in at.markdown if "badge[" in m.value]
    shown = " ".join([*badges, *(c.value for c in at.caption)])
    assert badges and all("points sampled at" in b for b in badges), badges
    assert any("unreliable (heavy-tailed)" in b for b in badges), badges  # FAVOR+ at r ≤ 2: heavy by theory
    assert not re.search(r"\d{1,3}(,\d{3}){4,}", shown), shown  # no count of 10¹² or more as digits


# ------------------------------------------------------------------ pure figure builders (no Streamlit)
def test_analytic_surface_matches_registry_closed_form():
    r, theta = ex.make_axes(1.5, 4, 5)
    s = ex.analytic_surface("trig", {"m": 7}, "softmax", 3, r, theta)
    # HRF Lemma 2.2 (reference F1, same length): MSE = e^{2r²}(1 − e^{−4r² sin²(θ/2)})²/(2m)
    rr, tt = np.meshgrid(r, theta, indexing="ij")
    with np.errstate(divide="ignore"):
        expected = np.log10(np.exp(2 * rr**2) * (1 - np.exp(-4 * rr**2 * np.sin(tt / 2) ** 2)) ** 2 / 14)
    assert np.allclose(s.log10_mse, expected, rtol=1e-12, atol=0, equal_nan=True)
    assert np.allclose(s.log10_kernel, rr**2 * np.cos(tt) / math.log(10))


def test_quantities_are_consistent():
    r, theta = ex.make_axes(1.0, 3, 4, r_min=0.5)
    a = ex.analytic_surface("trig", {"m": 4}, "gaussian", 2, r, theta)
    b = ex.analytic_surface("positive_antithetic", {"m": 4}, "gaussian", 2, r, theta)
    rel = ex.quantity([a, b], "rel_error")
    assert np.allclose(rel["trig"], 0.5 * a.log10_mse - a.log10_kernel, equal_nan=True)
    ratio = ex.quantity([a, b], "ratio", ("trig", "positive_antithetic"))
    assert list(ratio) == ["trig / positive_antithetic"]
    with pytest.raises(ValueError, match="two different"):
        ex.quantity([a, b], "ratio", ("trig", "trig"))
    with pytest.raises(ValueError, match="r_max"):
        ex.make_axes(-1.0, 3, 3)


def test_sampled_surface_agrees_and_flags_nothing_in_the_light_tailed_region():
    # r ≤ 0.8: e^{|x+y|²} ≤ e^{2.56}, light enough tails for 3000 trials (heavier regions are left out on purpose).
    r, theta = ex.make_axes(0.8, 3, 3, r_min=0.2)
    s = ex.sampled_surface("positive_antithetic", {"m": 5}, "softmax", 8, r, theta, trials=3000, seed=1)
    assert s.z.shape == (3, 3)
    # θ = π (float): exact at round-off, not tested (z NaN); everywhere else a z within 4
    assert s.exact_mask[:, -1].all() and not s.exact_mask[:, :-1].any() and np.isnan(s.z[:, -1]).all()
    assert np.all(np.abs(s.z[:, :-1]) < 4.0), s.z
    assert s.disagreements == 0 and s.outcomes()["exact"] == 3 and sum(s.outcomes().values()) == 9


def test_grid_csv_and_figures():
    r, theta = ex.make_axes(1.0, 3, 4)
    a = ex.analytic_surface("trig", {"m": 4}, "softmax", 2, r, theta)
    vals = ex.quantity([a], "log10_mse")
    csv = fx.grid_csv(r, theta, vals, "log10_mse").splitlines()
    assert csv[0] == "panel,r,theta,log10_mse" and len(csv) == 1 + 12
    fig = fx.heatmap_figure(r, theta, vals, "log10_mse", {"trig": (np.array([0.5]), np.array([1.0]))})
    # the panel, its exact cells (θ = 0: trig is exact) as an overlay, the disagreement marker, the legend entry
    assert [(t.type, t.meta) for t in fig.data] == [("heatmap", None), ("heatmap", "exact"), ("scatter", None),
                                                    ("scatter", None)]
    fig3 = fx.surface_figure(r, theta, vals, "log10_mse")
    assert fig3.data[0].type == "surface"


def test_param_sweep_follows_the_one_over_m_law():
    # trig MSE ∝ 1/m (HRF Lemma 2.2): log10 MSE drops by log10 2 per doubling of m
    vals = ex.param_sweep("trig", {}, "softmax", 4, 1.0, 1.0, "m", [1, 2, 4, 8])
    assert np.allclose(np.diff(vals), -math.log10(2), rtol=1e-12)
    d_sweep = ex.param_sweep("trig", {"m": 3}, "softmax", 4, 1.0, 1.0, "d", [2, 8, 32])
    assert np.allclose(d_sweep, d_sweep[0], rtol=1e-12)  # iid trig MSE does not depend on d


def _gallery_links() -> list[tuple[str, str, dict]]:
    from rfviz.gallery import load_gallery

    return [(name, e.explorer_page, dict(e.explorer_params)) for name, e in sorted(load_gallery().items())
            if e.explorer_page]


@pytest.mark.parametrize("name,page,params", _gallery_links())
def test_gallery_explorer_links_open_their_view(name, page, params):
    """Every paper figure's "open live" link restores a working view (page + query parameters)."""
    assert page in ALL_PAGES, f"{name} links to an unknown page {page!r}"
    at = AppTest.from_file(page_path(page), default_timeout=TIMEOUT)
    at.query_params.update(params)
    at.run()
    _no_exception(at, f"{name} → {page}")
    assert not at.error, f"{name} → {page}: {[e.value for e in at.error]}"
    widgets = {w.key: w for kind in WIDGET_KINDS for w in getattr(at, kind) if w.key}
    for key, value in params.items():
        widget = widgets.get(BY_PATH[page].key(key))
        assert widget is not None, f"{name}: the link sets {key!r}, which no widget of {page} reads"
        assert to_text(widget.value) == to_text(_parsed(widget.value, value)), (name, key, widget.value, value)


def _parsed(current: object, text: str) -> object:
    """The URL text as the widget's type."""
    if isinstance(current, bool):
        return text.lower() in ("true", "1", "yes", "on")
    if isinstance(current, int):
        return int(float(text))
    if isinstance(current, float):
        return float(text)
    if isinstance(current, list):
        return [t for t in text.split(",") if t]
    return text


def test_hybrid_page_sampled_points_agree_with_closed_forms():
    """The hybrid page's Monte-Carlo points (trig, ++, hybrid) lie within 4 SE of the closed-form curves at a
    light-tailed radius (r = 0.5: |x + y|² ≤ 1, so the ++ features' fourth moment is small), and the figure draws them.
    θ = 0 (trig and hybrid exact) and θ = π (++ and angular hybrid exact) are left out: their MSE is 0."""
    from rfviz.compute import hrf as ch
    from rfviz.figures import hrf as fh

    for kind in ("angular", "gaussian"):
        sampled = ch.sampled_mse_columns(kind, 0.5, 2, 1.0, 8, 6000, 3)
        exact = ch.mse_columns(kind, 0.5, 2, 1.0, 8, points=len(sampled["theta"]))
        inner = slice(1, -1)
        for key in ch.SAMPLED_ESTIMATORS:
            diff = sampled[f"log10_mse_{key}"][inner] - exact[f"log10_mse_{key}"][inner]
            z = diff / sampled[f"log10_se_{key}"][inner]
            assert np.all(np.abs(z) < 4), (kind, key, z)
        fig = fh.mse_figure(exact, kind, 0.5, sampled)
        # One trace of reliable points per estimator (heavy-tailed points, if any, get a hollow trace of their own).
        assert sum(t.mode == "markers" and "±2 SE" in t.name for t in fig.data) == 3


def test_hybrid_page_monte_carlo_toggle_and_bad_trials():
    at = AppTest.from_file(page_path("hybrid"), default_timeout=TIMEOUT)
    at.query_params.update({**MC_VIEW["hybrid"], "trials": "500"})
    at.run()
    at.toggle(key="hybrid.mc").set_value(True).run()
    _no_exception(at, "hybrid page with Monte Carlo")
    assert not at.error
    at.number_input(key="hybrid.trials").set_value(1).run()
    _no_exception(at, "hybrid page with trials = 1")
    assert any("trials must be" in e.value for e in at.error)


def test_gerf_page_sampled_points_agree_with_closed_forms():
    """GERF's Monte-Carlo points against real A (both s) lie within 4 SE of the closed form (CRT Thm 3.2) where
    the fourth moment is finite (A < 1/16, which ``sampled_real_A_columns`` enforces) at a moderate pair."""
    from rfviz.compute import crt as cg
    from rfviz.figures import crt as fgerf
    from rfviz.maths import crt as gerf

    for kernel in ("gaussian", "softmax"):
        sampled = cg.sampled_real_A_columns(0.6, 1.0, 8, 16, kernel, -0.4, 6000, 2, points=5)
        exact = cg.real_A_columns(0.6, 1.0, 8, 16, kernel, a_min=-0.4)
        for s, key in ((1, "s+1"), (-1, "s-1")):
            curve = (gerf.log_var_vs_real_A(sampled["A"], s, 0.6, 1.0, 8, kernel) - math.log(16)) / math.log(10)
            z = (sampled[f"log10_mse_{key}"] - curve) / sampled[f"log10_se_{key}"]
            assert np.all(np.abs(z) < 4), (kernel, key, z)
        fig = fgerf.real_A_figure(exact, 0.6, 1.0, 8, 16, kernel, sampled)
        assert sum("sampled" in (t.name or "") for t in fig.data) == 2


def test_gerf_page_monte_carlo_toggle():
    at = AppTest.from_file(page_path("gerf"), default_timeout=TIMEOUT).run()
    at.toggle(key="gerf.mc").set_value(True).run()
    _no_exception(at, "GERF page with Monte Carlo")
    assert not at.error


# --------------------------------------------------------------------------- URL: views, stale keys, no auto-MC
@pytest.mark.parametrize("page,view", [("hybrid", "winner"), ("coupling", "ratio-vs-d"), ("gerf", "oprf"),
                                       ("dot_product", "real-vs-complex"), ("optimal_sampling", "equivalence")])
def test_view_choice_is_in_the_url_and_scopes_the_sidebar(page, view):
    at = AppTest.from_file(page_path(page), default_timeout=TIMEOUT)
    at.query_params["view"] = view
    at.run()
    _no_exception(at, f"{page}?view={view}")
    assert at.radio(key=BY_PATH[page].key("view")).value == view
    assert any(getattr(w.proto, "disabled", False) for w in at.sidebar.get("slider") + at.sidebar.get("selectbox")
               + at.sidebar.get("number_input") + at.sidebar.get("radio")), f"{page}: nothing out of scope"
    first = BY_PATH[page].views.slugs[0]
    at.radio(key=BY_PATH[page].key("view")).set_value(first).run()
    assert at.query_params["view"] in ([first], first)


OLD_VIEW_URLS = {  # ?view=<label> as links were shared before views had slugs (labels of commit ba0f824)
    "mse_explorer": {"heatmap": "heatmap", "3-D surface": "surface"},
    "hybrid": {"λ and its moments": "lambda", "MSE vs base estimators": "mse-vs-base",
               "Where each wins": "winner", "Max-relative-error": "max-error"},
    "gerf": {"Variance against real A": "real-a", "Complex A": "complex-a", "OPRF vs PosRF": "oprf",
             "Poisson & geometric RFs": "discrete"},
    "coupling": {"Density p(wᵢⱼ)": "density", "RF-conformity ρ(v)": "conformity",
                 "MSE ratio vs v (+ simplex+)": "ratio-vs-v", "MSE ratio vs d": "ratio-vs-d",
                 "Simplex+ iterations": "simplex-plus"},
    "optimal_sampling": {"Ψ* radial density": "density", "V* vs unweighted variance": "variance",
                         "Equivalence (X₁ = X₂ or not)": "equivalence"},
    "dot_product": {"Variance vs q": "vs-q", "Variance vs p": "vs-p", "Variance vs d": "vs-d",
                    "Variance vs m (TensorSRHT sawtooth)": "vs-m", "Real vs complex": "real-vs-complex",
                    "TensorSRHT vs Rademacher": "tsrht-vs-rademacher",
                    "Maclaurin allocation (exponential kernel)": "maclaurin-exp",
                    "Maclaurin allocation (Gaussian kernel)": "maclaurin-gauss",
                    "Sketches vs m (with TensorSketch)": "sketches-vs-m"},
}


VIEWS_BORN_WITH_SLUGS = {"mse_explorer": {"features"}}
"""Views added after views had slugs: no link with their label was ever shared, so they have no old-URL entry."""


def test_every_page_with_views_has_an_old_url_table():
    with_views = {p.url_path for p in PAGES if p.views is not None}
    assert set(OLD_VIEW_URLS) == with_views
    for page, table in OLD_VIEW_URLS.items():
        newer = VIEWS_BORN_WITH_SLUGS.get(page, set())
        assert sorted([*table.values(), *newer]) == sorted(BY_PATH[page].views.slugs), page


def _view_radio(at: AppTest, page: str):
    return at.radio(key=BY_PATH[page].key("view"))


@pytest.mark.parametrize("page", sorted(OLD_VIEW_URLS))
def test_old_label_urls_open_the_right_view_and_become_slugs(page):
    """A link shared when the URL held the view's label still opens that view; the URL then holds the slug and the
    selector still shows the label. The slug URL opens the same view (same figures)."""
    for label, slug in OLD_VIEW_URLS[page].items():
        old = AppTest.from_file(page_path(page), default_timeout=TIMEOUT)
        old.query_params["view"] = label
        old.run()
        _no_exception(old, f"{page}?view={label}")
        assert not [e.value for e in old.error if "view" in e.value], f"{page}?view={label}: {old.error}"
        radio = _view_radio(old, page)
        assert radio.value == slug, (page, label, radio.value)
        assert radio.options[radio.index] == label, "the selector shows the label"
        assert old.query_params["view"] in ([slug], slug), old.query_params["view"]
        new = AppTest.from_file(page_path(page), default_timeout=TIMEOUT)
        new.query_params["view"] = slug
        new.run()
        assert _view_radio(new, page).value == slug
        assert _specs(new) == _specs(old), f"{page}: ?view={slug} and ?view={label} draw different figures"


def test_renamed_view_keeps_its_old_label():
    from app_pages import View, Views

    views = Views(View("mse-vs-base", "MSE against the base estimators", old=("MSE vs base estimators",)),
                  View("winner", "Where each wins"))
    assert views.resolve("MSE vs base estimators") == "mse-vs-base"
    assert views.resolve("MSE against the base estimators") == "mse-vs-base"
    assert views.resolve("winner") == "winner" and views.resolve("Winner") is None
    assert views.label("winner") == "Where each wins"
    with pytest.raises(ValueError, match="distinct slugs"):
        Views(View("a", "A"), View("a", "B"))


def test_unknown_view_in_the_url_shows_an_error_and_the_first_view():
    at = AppTest.from_file(page_path("hybrid"), default_timeout=TIMEOUT)
    at.query_params["view"] = "no such view"
    at.run()
    _no_exception(at, "hybrid?view=no such view")
    assert any("URL parameter view: view must be one of lambda, mse-vs-base" in _text(e) for e in at.error)
    assert _view_radio(at, "hybrid").value == "lambda"


def _compared_with_view(tree) -> list[str]:
    """String literals a page compares ``view`` with (``view == "x"``, ``view in ("x", "y")``) or uses as keys of
    a dict indexed by ``view``."""
    import ast

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "view":
            for c in node.comparators:
                out += [n.value for n in ast.walk(c) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Dict) and isinstance(node.slice, ast.Name)
                and node.slice.id == "view"):
            out += [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    return out


@pytest.mark.parametrize("page", [p.url_path for p in PAGES if p.views is not None])
def test_pages_compare_views_by_declared_slugs(page):
    """A typo in a slug would silently never match: every literal a page compares ``view`` with is a slug of its
    ``Views``, and no page keeps a label list of its own."""
    import ast

    text = BY_PATH[page].file.read_text()
    used = _compared_with_view(ast.parse(text))
    assert used, f"{page}: no comparison with a view slug found"
    unknown = sorted(set(used) - set(BY_PATH[page].views.slugs))
    assert not unknown, f"{page} compares view with {unknown}, not slugs of its Views"
    for view in BY_PATH[page].views.items:
        if view.label != view.slug:
            assert repr(view.label) not in text and f'"{view.label}"' not in text, \
                f"{page}: the label {view.label!r} is spelled in the page (labels come from PAGES only)"


def test_stale_url_keys_are_dropped():
    """A removed estimator's parameters leave the URL; so do keys no widget of the page uses."""
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT)
    at.query_params.update({"est": "trig,positive", "trig.m": "25", "positive.m": "12", "nonsense": "1"})
    at.run()
    _no_exception(at, "explorer")
    assert "nonsense" not in at.query_params
    assert "positive.m" in at.query_params
    at.sidebar.multiselect(key="mse_explorer.est").set_value(["trig"]).run()
    assert "positive.m" not in at.query_params and "trig.m" in at.query_params


def test_dot_product_kernel_picks_dot_product_estimators():
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT).run()
    dp = [o for o in at.sidebar.selectbox(key="mse_explorer.kernel").options if "dot" in o]
    if not dp:
        pytest.skip("no dot-product kernel in the explorer")
    at.sidebar.selectbox(key="mse_explorer.kernel").set_value(dp[0]).run()
    _no_exception(at, "explorer with a dot-product kernel")
    assert at.sidebar.multiselect(key="mse_explorer.est").value, "switching the kernel emptied the estimator list"


@pytest.mark.parametrize("page", ["hybrid", "gerf", "coupling", "mse_explorer"])
def test_shared_url_with_mc_true_waits_for_a_click(page):
    """mc=true in a shared link shows a Run Monte Carlo button; the figures stay analytic until it is clicked (also
    across an unrelated rerun); the click adds the sampled points."""
    at = AppTest.from_file(page_path(page), default_timeout=TIMEOUT)
    at.query_params.update({**MC_VIEW.get(page, {}), "mc": "true", "trials": "200"})
    if page == "mse_explorer":
        at.query_params.update({"r_max": "0.6", "mc_res": "3"})
    at.run()
    _no_exception(at, f"{page}?mc=true")
    assert at.toggle(key=BY_PATH[page].key("mc")).value is True
    assert [b for b in at.button if b.label == "Run Monte Carlo"], f"{page}: no Run Monte Carlo button for mc=true"
    # compared parsed: a figure served from st.cache_data may serialise its keys in another order
    analytic = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    at.run()  # an unrelated rerun
    assert [json.loads(c.proto.spec) for c in at.get("plotly_chart")] == analytic, \
        f"{page}: the figures changed by themselves"
    next(b for b in at.button if b.label == "Run Monte Carlo").click().run(timeout=300)
    _no_exception(at, f"{page} after Run Monte Carlo")
    assert not [b for b in at.button if b.label == "Run Monte Carlo"]
    assert [json.loads(c.proto.spec) for c in at.get("plotly_chart")] != analytic, f"{page}: the click sampled nothing"


def test_home_tells_three_stories_with_links():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    _no_exception(at, "home")
    assert len([s for s in at.subheader if s.value[:1] in "123"]) == 3
    assert len(at.get("plotly_chart")) >= 3
    links = [(lk.proto.page, lk.proto.query_string) for lk in at.get("page_link")]
    for page in ("hybrid", "coupling", "dot_product"):
        assert any(p == page and "view=" in q for p, q in links), f"Home: no story link into /{page}: {links}"
    from urllib.parse import parse_qs

    for p, q in links:  # the stories link with slugs (a renamed label keeps them working)
        if "view=" in q:
            assert parse_qs(q)["view"][0] in BY_PATH[p].views.slugs, (p, q)
    assert at.table, "the estimator table is a full-width table (no cut-off reference column)"


def test_pyproject_installs_only_the_package():
    import tomllib

    from setuptools import find_packages

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert conf["build-system"]["build-backend"] == "setuptools.build_meta"
    include = conf["tool"]["setuptools"]["packages"]["find"]["include"]
    found = find_packages(str(ROOT), include=include)
    assert "rfviz" in found and all(f.startswith("rfviz") for f in found)


# --------------------------------------------------------------------------- colour range, 3-D choice
def _specs(at: AppTest) -> list[dict]:
    import json

    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _colour_window(spec: dict) -> tuple[float, float]:
    axis = spec["layout"]["coloraxis"]
    return axis["cmin"], axis["cmax"]


def test_explorer_colour_range_reaches_heatmap_and_surface_and_the_url():
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT)
    at.query_params.update({"res": "12", "zrange": "fixed", "zlo": "-5", "zhi": "1.5"})
    at.run()
    _no_exception(at, "explorer with a fixed colour range")
    assert _colour_window(_specs(at)[0]) == (-5.0, 1.5)
    at.sidebar.number_input(key="mse_explorer.zhi").set_value(3.0).run()
    assert _colour_window(_specs(at)[0]) == (-5.0, 3.0)
    assert at.query_params["zhi"] in (["3"], "3")
    at.sidebar.radio(key="mse_explorer.view").set_value("surface").run()
    _no_exception(at, "3-D view with a fixed colour range")
    assert _specs(at)[0]["layout"]["scene"]["zaxis"]["range"] == [-5.0, 3.0]
    at.sidebar.radio(key="mse_explorer.zrange").set_value("auto").run()
    assert _specs(at)[0]["layout"]["scene"]["zaxis"]["range"] != [-5.0, 3.0]
    assert "zlo" not in at.query_params  # the hidden inputs leave the URL


def test_explorer_invalid_colour_range_shows_error_and_page_keeps_working():
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT)
    at.query_params.update({"res": "12", "zrange": "fixed", "zlo": "2", "zhi": "2"})
    at.run()
    _no_exception(at, "explorer with lo = hi")
    assert any("Colour range" in e.value and "must be below" in e.value for e in at.error), [e.value for e in at.error]
    lo, hi = _colour_window(_specs(at)[0])  # the automatic window is shown instead
    assert lo < hi and (lo, hi) != (2.0, 2.0)
    at.sidebar.number_input(key="mse_explorer.zlo").set_value(-4.0).run()
    assert not at.error
    assert _colour_window(_specs(at)[0]) == (-4.0, 2.0)


def test_explorer_3d_view_shows_one_estimator_or_all():
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT)
    at.query_params.update({"res": "12", "view": "surface", "est": "trig,positive_antithetic"})
    at.run()
    _no_exception(at, "3-D view")
    surfaces = [t for t in _specs(at)[0]["data"] if t["type"] == "surface"]
    assert len(surfaces) == 2
    box = at.sidebar.selectbox(key="mse_explorer.surf3d")
    assert box.options[0] == "all (transparent)" and ex.title_of("trig") in box.options
    box.set_value("trig").run()
    _no_exception(at, "3-D view, one estimator")
    surfaces = [t for t in _specs(at)[0]["data"] if t["type"] == "surface"]
    assert [t["name"] for t in surfaces] == [ex.title_of("trig")]
    assert at.query_params["surf3d"] in (["trig"], "trig")


def test_explorer_shows_human_names():
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT)
    at.query_params.update({"res": "12"})
    at.run()
    assert at.sidebar.selectbox(key="mse_explorer.quantity").options == list(ex.QUANTITIES.values())
    chips = at.sidebar.multiselect(key="mse_explorer.est").options
    assert ex.short_of("trig") in chips and all(len(c) <= 20 for c in chips), chips  # short: chips not truncated
    labels = [e.label for e in at.expander]
    assert ex.title_of("trig") in " ".join(labels) and not any("positive_antithetic" in lb for lb in labels)


def test_gerf_complex_map_colour_range():
    at = AppTest.from_file(page_path("gerf"), default_timeout=TIMEOUT)
    at.query_params.update({"view": "complex-a", "zrange": "fixed", "zlo": "-1", "zhi": "0.5"})
    at.run()
    _no_exception(at, "GERF complex A with a fixed colour range")
    assert _colour_window(_specs(at)[0]) == (-1.0, 0.5)
    at.number_input(key="gerf.zlo").set_value(1.0).run()
    _no_exception(at, "GERF with lo > hi")
    assert any("must be below" in e.value for e in at.error)
    lo, hi = _colour_window(_specs(at)[0])
    assert lo < hi and (lo, hi) != (1.0, 0.5)


def test_every_figure_download_has_an_offline_twin_with_its_size():
    from rfviz.figures.export import plotlyjs_size
    from rfviz.params import format_bytes
    at = AppTest.from_file(page_path("hybrid"), default_timeout=TIMEOUT).run()
    _no_exception(at, "hybrid")
    labels = [b.proto.label for b in at.get("download_button")]
    light = [x for x in labels if x == "Figure (HTML)"]
    offline = [x for x in labels if x.startswith("Figure (HTML, offline")]
    assert light and len(light) == len(offline), labels
    assert all(format_bytes(plotlyjs_size()) in x for x in offline)


def test_lab_lists_the_bundled_examples_without_plugins_configured(monkeypatch):
    monkeypatch.delenv("RFVIZ_PLUGINS", raising=False)
    at = AppTest.from_file(page_path("estimator_lab"), default_timeout=page_timeout("estimator_lab")).run()
    _no_exception(at, "estimator_lab")
    picker = next(s for s in at.selectbox if s.label == "Estimator to check")
    examples = [o for o in picker.options if o.endswith("(example)")]
    assert len(examples) >= len(list((ROOT / "examples").glob("*.py"))), examples  # each file: one or more classes
    assert {"tempered_positive (example)", "shared_omega_hybrid (example)"} <= set(examples), examples
    picker.set_value("tempered_positive").run()
    _no_exception(at, "estimator_lab with an example")


def test_data_page_speaks_human_names_and_shows_no_empty_cells_before_a_run():
    from rfviz.compute import catalog
    from rfviz.figures import data as fdata
    at = AppTest.from_file(page_path("data"), default_timeout=TIMEOUT).run()
    _no_exception(at, "data")
    names = next(m for m in at.multiselect if m.label == "Estimators").value
    answer = next(m.value for m in at.markdown if m.value.startswith("**Answer:**")).replace("\\", "")
    assert any(catalog.title_of(n) in answer for n in names) and not any(f" {n} " in answer for n in names)
    table = at.dataframe[0].value
    assert list(table["estimator"]) == [catalog.title_of(n) for n in names]
    assert not table.isna().any().any() and "MC" not in table.columns
    assert any(fdata.CONTOUR_NOTE in c.value for c in at.caption)
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels.count("Data (CSV)") == 4 and labels.count("Figure (HTML)") == 2  # + the ranking's CSV
    ranking = at.dataframe[1].value
    assert len(ranking) >= 10 and "MC reliable" not in ranking.columns


def test_home_story_texts_say_what_their_charts_show():
    from rfviz.figures import simrf as fc
    v = np.geomspace(1e-2, 1e1, 81)
    ratio = {t.name.split(" ")[0]: np.asarray(t.y, float)
             for t in fc.ratio_vs_v_figure(16, 16, features="positive", v=v).data}
    assert 1 / 45 < ratio["simplex"][v <= 0.2].max() < 1 / 20  # "about 30-fold for v ≲ 0.2"
    orf_min = int(np.argmin(ratio["orthogonal"]))
    assert 0.7 < ratio["orthogonal"][orf_min] < 0.8 and 1.0 < v[orf_min] < 1.6  # "at most a quarter, v ≈ 1.3"
    assert all(r[v >= 3].min() > 0.97 for r in ratio.values())  # "for v ≳ 3 both ratios are back at 1"
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    text = " ".join(m.value for m in at.markdown)
    assert "v ≲ 0.2" in text and "v ≈ 1.3" in text and "v ≳ 3" in text and "most where v = |x + y| is large" not in text
    story3 = next(s.value for s in at.subheader if s.value.startswith("3"))
    assert "m = 16" in story3 and "D = " not in story3
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert "m = 16" in charts[2]["layout"]["title"]["text"] and "D = " not in charts[2]["layout"]["title"]["text"]
    names = [t.get("name") for t in charts[0]["data"] if t.get("mode") == "lines"]
    assert names[:2] == ["trig", "positive (++)"] and names[2].startswith("angular hybrid"), names  # story 1


@pytest.mark.parametrize("view", ["density", "variance", "equivalence"])
def test_optimal_sampling_notes_have_no_stray_markdown(view):
    import re
    at = AppTest.from_file(page_path("optimal_sampling"), default_timeout=TIMEOUT)
    at.query_params["view"] = view
    at.run()
    _no_exception(at, view)
    for text in [c.value for c in at.caption] + [c.value for c in at.sidebar.caption]:
        stray = re.findall(r"(?<![\\*])\*(?!\*)", text.replace("**", ""))
        assert not stray, f"unescaped * (Ψ*, V*) would italicise the note: {text!r}"


def test_upload_limits_shown_are_the_real_ones():
    from rfviz import data as rd
    from rfviz.compute import sweep_files as sf
    for page, limit in (("sweeps", sf.MAX_BYTES), ("data", rd.MAX_FILE_BYTES)):
        at = AppTest.from_file(page_path(page), default_timeout=TIMEOUT)
        if page == "data":
            at.query_params["source"] = "upload a file"
        at.run()
        uploader = at.get("file_uploader")[0].proto
        assert uploader.max_upload_size_mb == limit // 2**20, page  # Streamlit's "Limit … per file" text
        assert f"{limit // 2**20} MiB" in uploader.help + uploader.label, page


def test_phone_layout_switch_stacks_the_panels():
    at = AppTest.from_file(page_path("mse_explorer"), default_timeout=TIMEOUT).run()
    _no_exception(at, "mse_explorer")
    wide = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]
    at.sidebar.toggle(key=PHONE_KEY).set_value(True).run()
    _no_exception(at, "mse_explorer, phone layout")
    phone = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]
    assert wide["xaxis2"]["domain"][0] > wide["xaxis"]["domain"][1]  # side by side on a wide screen
    assert phone["xaxis2"]["domain"] == [0.0, 1.0] and phone["yaxis2"]["domain"][1] < phone["yaxis"]["domain"][0]
    assert phone["legend"]["orientation"] == "h"
