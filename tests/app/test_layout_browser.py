"""Every page in headless Chromium at 1440 px (desktop) and 390 px (a phone), screenshot saved, with the text
problems a browser can measure: text outside the window (clipped), a chart's text outside its chart, and, inside a
Plotly chart, legend entries, axis titles, the chart's title and annotations (subplot titles included) overlapping
each other. Screenshots go to docs/_screenshots/layout/ (ignored by git); look at them after a layout change.

Run alone (it starts its own server; Debian's /usr/bin/chromium driven by Playwright):
``python -m pytest -q tests/test_layout_browser.py``.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
from proc_helpers import free_port, wait_for_health

from app_pages import PAGES

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "docs" / "_screenshots" / "layout"
WIDTHS = {"desktop": 1440, "phone": 390}
PHONE_AGENT = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"Chromium is not installed at {CHROMIUM}"),
]

PROBLEMS_JS = r"""
() => {
  const W = document.documentElement.clientWidth, out = [];
  const box = e => e.getBoundingClientRect();
  const label = e => (e.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 50);
  const visible = e => { const r = box(e); return r.width > 0.5 && r.height > 0.5; };
  const overlap = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)) *
                            Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top));
  const scrolls = e => { for (let p = e.parentElement; p; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (/(auto|scroll)/.test(s.overflowX) && p.scrollWidth > p.clientWidth) return true; }
    return false; };
  // page text beyond the window's right or left edge (not inside a box that scrolls sideways)
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  for (const e of main.querySelectorAll('p, li, h1, h2, h3, h4, label, code, [data-testid="stMetricValue"]')) {
    if (!visible(e) || !label(e) || scrolls(e)) continue;
    const r = box(e);
    if (r.right > W + 1 || r.left < -1) out.push(`text beyond the window: "${label(e)}"`);
  }
  // Plotly: text outside its chart, and text boxes of different kinds overlapping
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const svg = plot.querySelector('svg.main-svg'); if (!svg || !visible(svg)) continue;
    const frame = box(svg);
    const texts = [...plot.querySelectorAll('svg text')].filter(t => visible(t) && label(t));
    for (const t of texts) {
      const r = box(t);
      if (r.left < frame.left - 2 || r.right > frame.right + 2 || r.top < frame.top - 2 || r.bottom > frame.bottom + 2)
        out.push(`chart text outside its chart: "${label(t)}"`);
    }
    const groups = {
      legend: [...plot.querySelectorAll('.legend .traces text, .legend .traces .legendpoints')].filter(visible),
      axis: [...plot.querySelectorAll('[class*="title"] text')].filter(t => visible(t) && label(t) &&
             !t.closest('.gtitle') && !t.closest('.legend') && !t.closest('.annotation') && !t.closest('.colorbar')),
      title: [...plot.querySelectorAll('.gtitle')].filter(t => visible(t) && label(t)),
      annotation: [...plot.querySelectorAll('.annotation-text')].filter(t => visible(t) && label(t)),
    };
    const kinds = Object.keys(groups);
    for (let i = 0; i < kinds.length; i++) for (let j = i; j < kinds.length; j++) {
      const A = groups[kinds[i]], B = groups[kinds[j]];
      for (let a = 0; a < A.length; a++) for (let b = (i === j ? a + 1 : 0); b < B.length; b++) {
        if (kinds[i] === 'legend' && kinds[j] === 'legend') continue;  // plotly lays its own entries out
        if (overlap(box(A[a]), box(B[b])) > 6)
          out.push(`${kinds[i]} "${label(A[a])}" overlaps ${kinds[j]} "${label(B[b])}"`);
      }
    }
  }
  return [...new Set(out)];
}
"""


@pytest.fixture(scope="module")
def server():
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, proc, "streamlit")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


def open_page(browser, url: str, width: int, phone: bool):
    """A fresh browser tab at ``width`` px (a phone's User-Agent for the phone: the app's phone layout), the page
    loaded, its charts drawn and the script idle."""
    context = browser.new_context(viewport={"width": width, "height": 900},
                                  user_agent=PHONE_AGENT if phone else None, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    page.goto(url, wait_until="domcontentloaded", timeout=120_000)
    page.wait_for_selector("h1", timeout=120_000)
    wait_until_still(page)
    height = page.evaluate("() => (document.querySelector('[data-testid=\"stMain\"]') || document.body).scrollHeight")
    page.set_viewport_size({"width": width, "height": max(900, min(int(height) + 100, 12000))})  # the whole page
    wait_until_still(page)  # plotly's own layout pass after the script finished (and after the resize)
    return context, page


STILL_JS = r"""
() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return null;  // Streamlit's own flag
  if (document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSkeleton"]')) return null;
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const boxes = [...document.querySelectorAll('.js-plotly-plot svg.main-svg, h1, h2, h3')].map(e => {
    const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height].map(Math.round).join(','); });
  return main.scrollHeight + '|' + boxes.join(';');
}
"""


def wait_until_still(page, still_polls: int = 3, poll_ms: int = 250, limit_s: float = 60.0) -> None:
    """Wait until the script is idle and the page's charts and headings keep their boxes for ``still_polls``
    polls ``poll_ms`` apart (Streamlit's rerun and Plotly's relayout are both done), at most ``limit_s``."""
    import time

    deadline, last, same = time.monotonic() + limit_s, None, 0
    while time.monotonic() < deadline:
        now = page.evaluate(STILL_JS)
        same = same + 1 if now is not None and now == last else 0
        if same >= still_polls:
            return
        last = now
        page.wait_for_timeout(poll_ms)
    raise AssertionError(f"the page did not settle within {limit_s:g} s (script still running or charts moving)")


PATHS = ["", *(p.url_path for p in PAGES), "teach"]


@pytest.mark.parametrize("screen", list(WIDTHS))
@pytest.mark.parametrize("url_path", PATHS)
def test_no_clipped_or_overlapping_text(server, browser, url_path, screen):
    context, page = open_page(browser, f"{server}/{url_path}", WIDTHS[screen], screen == "phone")
    try:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{url_path or 'home'}-{WIDTHS[screen]}.png"), full_page=True)
        assert page.locator('[data-testid="stException"]').count() == 0
        problems = page.evaluate(PROBLEMS_JS)
        assert not problems, f"/{url_path} at {WIDTHS[screen]} px: " + "; ".join(problems)
    finally:
        context.close()
