"""End-to-end: the app in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright).

Starts ``streamlit run app.py`` on a free port, opens every page by its URL path (a deep link on a fresh server: no
"Page not found"), waits for its Plotly chart, moves one slider with the keyboard, checks that no exception is shown,
and saves a screenshot per page into docs/_screenshots/ (ignored by git), which the docs'
app tour shows. Old URL paths redirect to their page.
"""

from __future__ import annotations

import os
import pathlib
import re
import sys
import urllib.parse
import urllib.request

import pytest
from proc_helpers import free_port, stop, wait_for_health

from app_pages import BY_PATH, LEGACY_PATHS, PAGES

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = ROOT / "docs" / "_screenshots"  # generated files: the app tour page includes them when present
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"Chromium is not installed at {CHROMIUM}"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from rfviz.server.processes import spawn

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    proc = spawn([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
                  "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
                  "--server.fileWatcherType", "none"], cwd=ROOT, env=env, log=log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, proc, "streamlit", log=log)
        yield url
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _assert_no_exception(page, where: str) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, f"{where}: exception element shown"
    text = page.inner_text("body")
    assert "Traceback" not in text, f"{where}: traceback on the page"
    assert "Page not found" not in text, f"{where}: Streamlit could not route the URL path"


def _wait_idle(page, timeout_ms: int = 90_000) -> None:
    """Wait until the script has run and is no longer running (Streamlit's ``data-test-script-state`` on the app is
    ``notRunning``, not ``initial``; the status widget gone)."""
    page.wait_for_function(
        "() => { const a = document.querySelector('[data-testid=\"stApp\"]'); return a && "
        "a.getAttribute('data-test-script-state') === 'notRunning' && "
        "!document.querySelector('[data-testid=\"stStatusWidget\"]'); }", timeout=timeout_ms)


URLS = [p.url_path for p in PAGES]


@pytest.mark.parametrize("url_path", URLS)
def test_page_in_browser(server, browser, url_path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        sweep = next((sw for sw in BY_PATH[url_path].sweeps if sw.kind == "slider"), None)
        query = "?" + urllib.parse.urlencode(sweep.query) if sweep and sweep.query else ""
        page.goto(f"{server}/{url_path}{query}", wait_until="domcontentloaded", timeout=60_000)
        page.wait_for_selector("h1", timeout=90_000)
        needs_chart = BY_PATH[url_path].draws_chart
        if needs_chart:
            page.wait_for_selector(".js-plotly-plot", timeout=90_000)
        _wait_idle(page)
        _assert_no_exception(page, url_path)
        if page.locator('[data-testid="stSidebarNav"]').count():
            nav = page.inner_text('[data-testid="stSidebarNav"]')
            assert "Home" in nav, f"{url_path}: st.navigation's menu is not shown: {nav!r}"
        # move one slider with the keyboard, as a user would: the page's benchmark slider (enabled in its view),
        # else the first sidebar slider
        css = re.sub(r"[^a-zA-Z0-9_-]", "-", BY_PATH[url_path].key(sweep.name)) if sweep else ""
        slider = page.locator(f'.st-key-{css} input[type="range"]') if sweep else page.locator("#none")
        if slider.count() == 0:
            slider = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"] input[type="range"]')
        if slider.count() == 0:
            slider = page.locator('[data-testid="stSlider"] input[type="range"]')
        if slider.count():
            before = slider.first.input_value()
            slider.first.focus()
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(500)
            _wait_idle(page)
            after = slider.first.input_value()
            if after == before:  # the slider sat at its maximum
                slider.first.focus()
                page.keyboard.press("ArrowLeft")
                page.wait_for_timeout(500)
                _wait_idle(page)
                after = slider.first.input_value()
            assert after != before, f"{url_path}: the slider did not move ({before} → {after})"
            if needs_chart:
                page.wait_for_selector(".js-plotly-plot", timeout=90_000)
            _assert_no_exception(page, f"{url_path} after moving a slider")
        elif any(sw.kind == "slider" for sw in BY_PATH[url_path].sweeps):  # views the benchmark times by a slider
            pytest.fail(f"{url_path} has no slider to move")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = SCREENSHOTS / f"{url_path}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert not [e for e in errors if "plotly" in e.lower() or "TypeError" in e], errors
    finally:
        page.close()


def test_home_stories_render(server, browser):
    """The Home page's three guided stories draw their live figures and link into their views."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{server}/", wait_until="domcontentloaded", timeout=60_000)
        page.wait_for_selector(".js-plotly-plot", timeout=90_000)
        _wait_idle(page)
        _assert_no_exception(page, "home")
        page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 3", timeout=90_000)
        text = page.inner_text("body")
        for story in ("1 · Trig fails", "2 · Coupling", "3 · What q does"):
            assert story in text, f"Home: story {story!r} missing"
        hrefs = page.eval_on_selector_all('[data-testid="stPageLink-NavLink"]', "els => els.map(e => e.href)")
        assert any("view=" in h for h in hrefs), hrefs
    finally:
        page.close()


@pytest.mark.parametrize("old,new", sorted(LEGACY_PATHS.items()))
def test_old_url_path_redirects(server, browser, old, new):
    """The paths of the former numbered page files open their page, query parameters kept."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{server}/{old}?fig=simrf-fig6-mse-ratio", wait_until="domcontentloaded", timeout=60_000)
        page.wait_for_url(f"**/{new}*", timeout=90_000)
        page.wait_for_selector("h1", timeout=90_000)
        _wait_idle(page)
        _assert_no_exception(page, old)
        if new == "gallery":
            assert "fig=simrf-fig6-mse-ratio" in page.url, page.url
    finally:
        page.close()


def test_home_path_redirects_to_the_root(server, browser):
    """/home (a natural guess) opens the Home page at / without Streamlit's "Page not found" popup."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(f"{server}/home?x=1", wait_until="domcontentloaded", timeout=60_000)
        page.wait_for_selector(".js-plotly-plot", timeout=90_000)
        _wait_idle(page)
        _assert_no_exception(page, "/home")
        assert "three short stories" in page.inner_text("body")
        assert page.url.split("?")[0].rstrip("/") == server.rstrip("/"), page.url
    finally:
        page.close()


def test_old_view_label_url_opens_the_view_and_becomes_a_slug(server, browser):
    """A link shared when the URL held the view's label (``?view=Where each wins``) opens that view in the browser;
    the address bar then holds its slug (``view=winner``), and the selector shows the label."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        query = urllib.parse.urlencode({"view": "Where each wins", "r_max": "3"})
        page.goto(f"{server}/hybrid?{query}", wait_until="domcontentloaded", timeout=60_000)
        page.wait_for_selector(".js-plotly-plot", timeout=90_000)
        _wait_idle(page)
        _assert_no_exception(page, "hybrid with an old view label")
        page.wait_for_function("() => location.search.includes('view=winner')", timeout=30_000)
        assert "r_max=3" in page.url, page.url
        checked = page.locator('.st-key-hybrid-view input[type="radio"]:checked')
        assert checked.count() == 1
        label = page.locator('.st-key-hybrid-view label:has(input[type="radio"]:checked)').inner_text()
        assert "Where each wins" in label, label
        assert page.locator('[data-testid="stAlert"]').count() == 0, page.inner_text("body")[:2000]
    finally:
        page.close()


# ------------------------------------------------------------------ layouts at desktop and phone width
PHONE_UA = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
            "Version/17.0 Mobile/15E148 Safari/604.1")
SIZES = {"desktop": ({"width": 1440, "height": 900}, None), "phone": ({"width": 390, "height": 844}, PHONE_UA)}
MULTI_PANEL = ["mse_explorer", "data", "hybrid?view=winner", "gerf?view=complex-a", "hybrid?view=mse-vs-base"]

# Boxes of every chart title and annotation (subplot titles) per Plotly chart; pairs that intersect; chart titles
# wider than their chart (cut); the narrowest 2-D panel; legends wider than half their chart while beside it.
_LAYOUT_JS = """() => {
  const out = {overlaps: [], cut: [], narrowest: 1e9, wide_legends: [], charts: 0};
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    out.charts += 1;
    const chart = gd.getBoundingClientRect();
    const boxes = [...gd.querySelectorAll('.g-gtitle text, .annotation-text, .infolayer .annotation text')]
      .map(e => [e.textContent, e.getBoundingClientRect()]).filter(([t, r]) => t.trim() && r.width > 0);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [ta, a] = boxes[i], [tb, b] = boxes[j];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
        out.overlaps.push([ta, tb]);
    }
    for (const t of gd.querySelectorAll('.g-gtitle text')) {
      const r = t.getBoundingClientRect();
      if (r.left < chart.left - 1 || r.right > chart.right + 1 || r.top < chart.top - 1) out.cut.push(t.textContent);
    }
    for (const d of gd.querySelectorAll('.cartesianlayer .subplot .nsewdrag')) {
      const w = d.getBoundingClientRect().width; if (w > 0) out.narrowest = Math.min(out.narrowest, w);
    }
    const leg = gd.querySelector('.legend');
    const fl = gd._fullLayout;
    if (leg && fl && fl.legend && fl.legend.orientation !== 'h' && leg.getBoundingClientRect().width > chart.width / 2)
      out.wide_legends.push(leg.getBoundingClientRect().width);
  }
  return out;
}"""


def _open(browser, server, target: str, size: str):
    viewport, agent = SIZES[size]
    page = browser.new_page(viewport=viewport, **({"user_agent": agent} if agent else {}))
    page.goto(f"{server}/{target}", wait_until="domcontentloaded", timeout=60_000)
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    _wait_idle(page, 180_000)
    page.wait_for_timeout(1500)  # Plotly's relayout after Streamlit sizes the chart
    return page


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("target", MULTI_PANEL)
def test_titles_do_not_overlap_and_panels_are_not_slivers(server, browser, target, size):
    page = _open(browser, server, target, size)
    try:
        _assert_no_exception(page, f"{target} at {size}")
        found = page.evaluate(_LAYOUT_JS)
        assert found["charts"] >= 1
        assert not found["overlaps"], f"{target} at {size}: overlapping titles {found['overlaps']}"
        assert not found["cut"], f"{target} at {size}: chart titles cut {found['cut']}"
        assert not found["wide_legends"], f"{target} at {size}: legend beside the chart takes half its width"
        if found["narrowest"] < 1e9:
            assert found["narrowest"] >= (200 if size == "phone" else 150), f"{target} at {size}: {found}"
    finally:
        page.close()


@pytest.mark.parametrize("size", list(SIZES))
def test_monte_carlo_overlay_keeps_the_closed_forms_axes(server, browser, size):
    """Hybrid, MSE vs base estimators, seed 7: a sampled point far below the curves (θ = π) used to stretch the
    y-axis to −35; it is now drawn at the edge, and the axis spans the curves."""
    page = _open(browser, server, "hybrid?view=mse-vs-base&mc=true&seed=7&trials=2000", size)
    try:
        page.get_by_role("button", name="Run Monte Carlo").click()
        page.wait_for_timeout(1000)
        _wait_idle(page, 240_000)
        page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some(gd => "
                               "gd.data.some(t => t.mode === 'markers'))", timeout=240_000)
        _assert_no_exception(page, f"hybrid overlay at {size}")
        span = page.evaluate("""() => {
          const gd = [...document.querySelectorAll('.js-plotly-plot')]
            .find(g => g.data.some(t => t.mode === 'markers'));
          const ys = gd._fullData.filter(t => t.mode === 'lines').flatMap(t => Array.from(t.y))
            .filter(v => v !== null && isFinite(v));
          return {range: gd._fullLayout.yaxis.range, lo: Math.min(...ys), hi: Math.max(...ys),
                  edge: gd.data.filter(t => t.meta === 'edge').length};
        }""")
        lo, hi = span["range"]
        assert lo <= span["lo"] and span["hi"] <= hi, span
        assert (hi - lo) < 1.3 * (span["hi"] - span["lo"]), f"the overlay rescaled the axis: {span}"
    finally:
        page.close()


@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_learn_predict_then_reveal(server, browser, width, height):
    """A reader opens a shared step, predicts, sees the figure and the explanation appear, and the URL keeps the
    lesson and step (desktop and phone width)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        page.goto(f"{server}/learn?lesson=trig-vs-positive&step=1", wait_until="domcontentloaded", timeout=60_000)
        page.wait_for_selector("h1", timeout=90_000)
        _wait_idle(page)
        _assert_no_exception(page, "learn")
        assert page.locator(".js-plotly-plot").count() == 0, "the figure must wait for the prediction"
        page.get_by_text("trigonometric features (cos, sin)").click()
        page.wait_for_selector(".js-plotly-plot", timeout=90_000)
        _wait_idle(page)
        _assert_no_exception(page, "learn after answering")
        text = page.inner_text("body")
        assert "Right" in text and "Now try" in text and "relative error is" in text
        assert "lesson=trig-vs-positive" in page.url and "step=1" in page.url
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"learn-{width}.png"), full_page=True)
    finally:
        page.close()
