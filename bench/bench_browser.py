"""Browser-measured latency of the app's views: slider change → chart re-rendered, in headless Chromium.

Starts ``streamlit run app.py --server.headless true`` on a free port, opens each page that declares a slider
``Sweep`` (app_pages/__init__.py) in Debian's Chromium (Playwright sync API), and for each run presses → on that
slider and times, in the page's own clock, from the key press until Streamlit's running indicator is gone and the
last DOM mutation inside a Plotly chart has happened (the chart is re-rendered). Each press moves the slider to a
value it has not had, so the computation is not a cache hit. Prints a table with the median per page (not a test).

Usage: ``python bench/bench_browser.py [--runs 5] [--shots DIR]`` (``--shots``: a 1400×900 screenshot per page,
Home included).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app_pages import PAGES  # noqa: E402
from rfviz.server.processes import spawn, start_allowance, stop_groups, wait_for_health  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--no-first-run"]

WATCH = """() => {
  window.__rfvizLast = 0;
  const obs = new MutationObserver((muts) => {
    for (const m of muts) {
      const el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
      if (el && el.closest && el.closest('[data-testid="stPlotlyChart"], .js-plotly-plot')) {
        window.__rfvizLast = performance.now();
        return;
      }
    }
  });
  obs.observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true});
  return performance.now();
}"""
SETTLE_S = 120.0
"""The most a chart may keep redrawing after a slider press."""
IDLE = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, script: pathlib.Path = ROOT / "app.py") -> subprocess.Popen:
    """``streamlit run script`` on 127.0.0.1:port from the repository root (its .streamlit/config.toml applies),
    returned once it answers its health check (within a start-up allowance that grows with the machine's load;
    otherwise its process group is killed and RuntimeError says why in one line). Stop it with
    ``rfviz.server.processes.stop_groups([proc])``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = spawn([sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
                  "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
                  "--server.fileWatcherType", "none"], cwd=ROOT, env=env)
    wait_for_health(f"http://127.0.0.1:{port}", proc, what="streamlit", seconds=start_allowance(120.0, 600.0))
    return proc


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    page.wait_for_timeout(150)
    page.wait_for_function(IDLE, timeout=timeout_ms)


def time_page(page, url: str, key: str, runs: int) -> list[float]:
    """Seconds from each → press on slider ``key`` to the chart re-rendered (median of ``runs`` is reported)."""
    page.goto(url, wait_until="domcontentloaded", timeout=120_000)
    page.wait_for_selector(".js-plotly-plot", timeout=120_000)
    wait_idle(page)
    css_key = re.sub(r"[^a-zA-Z0-9_-]", "-", key)  # Streamlit's class for a keyed widget: st-key-<key>
    thumb = page.locator(f'.st-key-{css_key} input[type="range"], .st-key-{css_key} [role="slider"]').first
    out = []
    for _ in range(runs):
        t0 = page.evaluate(WATCH)
        thumb.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => window.__rfvizLast > {t0}", timeout=120_000)
        wait_idle(page)
        settle_until = time.monotonic() + SETTLE_S
        while True:  # settle: no chart mutation for 300 ms (a chart still redrawing after SETTLE_S is an error)
            last = page.evaluate("() => window.__rfvizLast")
            page.wait_for_timeout(300)
            if page.evaluate("() => window.__rfvizLast") == last:
                break
            if time.monotonic() > settle_until:
                raise RuntimeError(f"{url}: the chart kept changing for {SETTLE_S:.0f} s")
        out.append((last - t0) / 1000.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--shots", type=pathlib.Path, default=None, help="folder for 1400×900 screenshots")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    port = free_port()
    proc = start_server(port)
    base = f"http://127.0.0.1:{port}"
    rows = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            if args.shots:
                args.shots.mkdir(parents=True, exist_ok=True)
                page.goto(f"{base}/", wait_until="domcontentloaded", timeout=120_000)
                page.wait_for_selector(".js-plotly-plot", timeout=120_000)
                wait_idle(page)
                page.screenshot(path=str(args.shots / "home.png"), full_page=True)
            for p in PAGES:
                sweep = next((s for s in p.sweeps if s.kind == "slider"), None)
                if args.shots and sweep is None:
                    page.goto(f"{base}/{p.url_path}", wait_until="domcontentloaded", timeout=120_000)
                    page.wait_for_selector("h1", timeout=120_000)
                    wait_idle(page)
                    page.screenshot(path=str(args.shots / f"{p.url_path}.png"))
                if sweep is None:
                    continue
                query = "?" + urllib.parse.urlencode(sweep.query) if sweep.query else ""
                times = time_page(page, f"{base}/{p.url_path}{query}", p.key(sweep.name), args.runs)
                rows.append((p.url_path, sweep.name, statistics.median(times), min(times), max(times)))
                print(f"{p.url_path:18s} {sweep.name:12s} median {rows[-1][2]:6.2f} s", flush=True)
                if args.shots:
                    page.screenshot(path=str(args.shots / f"{p.url_path}.png"))
            browser.close()
    finally:
        stop_groups([proc])
    print(f"\nslider change → chart re-rendered, headless Chromium, {args.runs} runs per page "
          f"({os.cpu_count()} CPUs)")
    print(f"{'page':18s} {'slider':12s} {'median s':>9s} {'min s':>7s} {'max s':>7s}")
    for name, sl, med, lo, hi in rows:
        print(f"{name:18s} {sl:12s} {med:9.2f} {lo:7.2f} {hi:7.2f}")


if __name__ == "__main__":
    main()
