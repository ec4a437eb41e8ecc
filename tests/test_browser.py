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
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from app_pages import BY_PATH, LEGACY_PATHS, PAGES

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = ROOT / "docs" / "_screenshots"  # generated files: the app tour page includes them when present
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"Chromium is not installed at {CHROMIUM}"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                out = proc.stdout.read().decode() if proc.stdout else ""
                pytest.fail(f"streamlit did not start (exit code {proc.poll()}):\n{out[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
    """Wait until the script is no longer running (the status widget disappears)."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms)


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
