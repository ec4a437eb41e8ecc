"""A classroom on one server: K browser sessions move the same Hybrid slider at once.

Starts ``streamlit run app.py`` (as bench/bench_browser.py does), opens K independent sessions (one Chromium
browser context each, so K Streamlit sessions) on the Hybrid page, and for each round presses → on the ``r`` slider
in every session at the same moment: every session asks for the same, new parameters. Each session's latency is
timed in its own page clock from its key press until its chart has re-rendered and Streamlit is idle (the
bench_browser definition). Prints, per K, the median and p90 latency over all sessions and rounds, with the load
average of the machine (the numbers mean little on a busy machine) and the server's own CPU seconds per round
(/proc/<pid>/stat): the browsers run on the same machine, so on 2 cores they compete with the server.

It also reads the CPU seconds all Chromium processes spent per round (/proc): on this machine the K browsers share
the server's two cores, whereas in a real classroom each student's laptop pays its own. ``--app floor`` serves
bench/floor_app.py instead of app.py (nothing but the same slider and chart): the browser work any Streamlit page
drawing this chart costs, the floor under the app's own numbers.

Usage: ``python bench/bench_concurrency.py [--ks 1,4,8,16] [--rounds 3] [--app rfviz|floor]`` (not a test).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_browser import ARGS, CHROMIUM, IDLE, SETTLE_S, WATCH, free_port, start_server  # noqa: E402

from rfviz.server.processes import stop_groups  # noqa: E402

SLIDER = '.st-key-hybrid-r input[type="range"], .st-key-hybrid-r [role="slider"]'


async def _open(browser, url: str):
    ctx = await browser.new_context(viewport={"width": 1200, "height": 800})
    page = await ctx.new_page()
    await page.goto(url, wait_until="domcontentloaded", timeout=180_000)
    await page.wait_for_selector(".js-plotly-plot", timeout=180_000)
    await page.wait_for_timeout(300)
    await page.wait_for_function(IDLE, timeout=180_000)
    return ctx, page


async def _press_and_time(page, start: asyncio.Event) -> float:
    """Seconds from this session's → press to its chart re-rendered and the app idle (settled for 300 ms)."""
    thumb = page.locator(SLIDER).first
    await thumb.focus()
    await start.wait()
    t0 = await page.evaluate(WATCH)
    await page.keyboard.press("ArrowRight")
    await page.wait_for_function(f"() => window.__rfvizLast > {t0}", timeout=300_000)
    await page.wait_for_timeout(150)
    await page.wait_for_function(IDLE, timeout=300_000)
    settle_until = time.monotonic() + SETTLE_S
    while True:  # settle: no chart mutation for 300 ms, within SETTLE_S
        last = await page.evaluate("() => window.__rfvizLast")
        await page.wait_for_timeout(300)
        if await page.evaluate("() => window.__rfvizLast") == last:
            return (last - t0) / 1000.0
        if time.monotonic() > settle_until:
            raise RuntimeError(f"the chart kept changing for {SETTLE_S:.0f} s")


async def run_k(browser, url: str, k: int, rounds: int, pid: int) -> dict[str, object]:
    """k sessions × ``rounds`` simultaneous presses: every latency (seconds), and the CPU seconds per round of the
    server and of all Chromium processes."""
    opened = [await _open(browser, url) for _ in range(k)]
    latency: list[float] = []
    cpu0, browsers0 = cpu_seconds(pid), chromium_seconds()
    try:
        for _ in range(rounds):
            start = asyncio.Event()
            tasks = [asyncio.create_task(_press_and_time(page, start)) for _, page in opened]
            await asyncio.sleep(0.5)  # every session focused on its slider
            start.set()
            latency += await asyncio.gather(*tasks)
        cpu, browsers = (cpu_seconds(pid) - cpu0) / rounds, (chromium_seconds() - browsers0) / rounds
    finally:
        for ctx, _ in opened:
            await ctx.close()
    return {"latency": latency, "cpu": cpu, "browsers": browsers}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (/proc/<pid>/stat)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def chromium_seconds() -> float:
    """User + system CPU time so far of every running Chromium process (renderers, GPU/compositor, browser)."""
    total = 0.0
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"chromium" in (proc / "cmdline").read_bytes().split(b"\0")[0]:
                total += cpu_seconds(int(proc.name))
        except OSError:  # the process ended meanwhile
            continue
    return total


def p90(xs: list[float]) -> float:
    """The 90th percentile (inclusive method)."""
    return statistics.quantiles(xs, n=10, method="inclusive")[-1] if len(xs) > 1 else xs[0]


async def main_async(ks: list[int], rounds: int, app: str) -> None:
    from playwright.async_api import async_playwright

    port = free_port()
    proc = start_server(port, ROOT / "bench" / "floor_app.py" if app == "floor" else ROOT / "app.py")
    url = f"http://127.0.0.1:{port}/" + ("" if app == "floor" else "hybrid?view=lambda&r=1.0")
    rows = []
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for k in ks:
                load = os.getloadavg()[0]
                r = await run_k(browser, url, k, rounds, proc.pid)
                med = statistics.median
                rows.append((k, med(r["latency"]), p90(r["latency"]), r["cpu"], r["browsers"], load,
                             os.getloadavg()[0]))
                print(f"K = {k:2d}: median {rows[-1][1]:.2f} s, p90 {rows[-1][2]:.2f} s", flush=True)
            await browser.close()
    finally:
        stop_groups([proc])
    what = "bench/floor_app.py (the slider and chart alone)" if app == "floor" else "app.py, Hybrid page"
    print(f"\nK sessions move the Hybrid r slider at once ({what}), {rounds} rounds, headless Chromium, "
          f"{os.cpu_count()} CPUs")
    print(f"{'K':>3s} {'median s':>9s} {'p90 s':>7s} {'server CPU s/round':>19s} {'Chromium CPU s/round':>21s} "
          f"{'load before':>12s} {'load after':>11s}")
    for k, lat, hi, cpu, browsers, l0, l1 in rows:
        print(f"{k:3d} {lat:9.2f} {hi:7.2f} {cpu:19.2f} {browsers:21.2f} {l0:12.2f} {l1:11.2f}")
    print("median/p90: key press to chart re-rendered, over every session and round")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", default="1,4,8,16", help="comma-separated session counts")
    ap.add_argument("--rounds", type=int, default=3, help="simultaneous presses per K")
    ap.add_argument("--app", choices=("rfviz", "floor"), default="rfviz",
                    help="rfviz: app.py's Hybrid page; floor: bench/floor_app.py (the same slider and chart alone)")
    args = ap.parse_args()
    asyncio.run(main_async([int(k) for k in args.ks.split(",")], args.rounds, args.app))


if __name__ == "__main__":
    main()
