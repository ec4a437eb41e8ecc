"""A classroom on one server: K browser sessions move the same Hybrid slider at once.

Starts ``streamlit run app.py`` (as bench/bench_browser.py does), opens K independent sessions (one Chromium
browser context each, so K Streamlit sessions) on the Hybrid page, and for each round presses → on the ``r`` slider
in every session at the same moment: every session asks for the same, new parameters. Each session's latency is
timed in its own page clock from its key press until its chart has re-rendered and Streamlit is idle (the
bench_browser definition). Prints, per K, the median and p90 latency over all sessions and rounds, with the load
average of the machine (the numbers mean little on a busy machine) and the server's own CPU seconds per round
(/proc/<pid>/stat): the browsers run on the same machine, so on 2 cores they compete with the server.

Usage: ``python bench/bench_concurrency.py [--ks 1,4,8,16] [--rounds 3]`` (not a test).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_browser import ARGS, CHROMIUM, IDLE, WATCH, free_port, start_server  # noqa: E402

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
    while True:
        last = await page.evaluate("() => window.__rfvizLast")
        await page.wait_for_timeout(300)
        if await page.evaluate("() => window.__rfvizLast") == last:
            return (last - t0) / 1000.0


async def run_k(browser, url: str, k: int, rounds: int, pid: int) -> tuple[list[float], float]:
    """Latencies (seconds) of k sessions × ``rounds`` simultaneous presses, and the server's CPU seconds per round
    (what the server itself spent: the rest of a latency is the browsers and the machine's other load)."""
    opened = [await _open(browser, url) for _ in range(k)]
    times: list[float] = []
    cpu0 = cpu_seconds(pid)
    try:
        for _ in range(rounds):
            start = asyncio.Event()
            tasks = [asyncio.create_task(_press_and_time(page, start)) for _, page in opened]
            await asyncio.sleep(0.5)  # every session focused on its slider
            start.set()
            times += await asyncio.gather(*tasks)
        cpu = (cpu_seconds(pid) - cpu0) / rounds
    finally:
        for ctx, _ in opened:
            await ctx.close()
    return times, cpu


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (/proc/<pid>/stat)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def p90(xs: list[float]) -> float:
    """The 90th percentile (inclusive method)."""
    return statistics.quantiles(xs, n=10, method="inclusive")[-1] if len(xs) > 1 else xs[0]


async def main_async(ks: list[int], rounds: int) -> None:
    from playwright.async_api import async_playwright

    port = free_port()
    proc = start_server(port)
    url = f"http://127.0.0.1:{port}/hybrid?view=lambda&r=1.0"
    rows = []
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for k in ks:
                load = os.getloadavg()[0]
                times, cpu = await run_k(browser, url, k, rounds, proc.pid)
                rows.append((k, statistics.median(times), p90(times), max(times), cpu, load, os.getloadavg()[0]))
                print(f"K = {k:2d}: median {rows[-1][1]:.2f} s, p90 {rows[-1][2]:.2f} s", flush=True)
            await browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    print(f"\nK sessions move the Hybrid r slider at once, {rounds} rounds, headless Chromium, {os.cpu_count()} CPUs")
    print(f"{'K':>3s} {'median s':>9s} {'p90 s':>7s} {'max s':>7s} {'server CPU s/round':>19s} {'load before':>12s} "
          f"{'load after':>11s}")
    for k, med, hi, mx, cpu, l0, l1 in rows:
        print(f"{k:3d} {med:9.2f} {hi:7.2f} {mx:7.2f} {cpu:19.2f} {l0:12.2f} {l1:11.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", default="1,4,8,16", help="comma-separated session counts")
    ap.add_argument("--rounds", type=int, default=3, help="simultaneous presses per K")
    args = ap.parse_args()
    asyncio.run(main_async([int(k) for k in args.ks.split(",")], args.rounds))


if __name__ == "__main__":
    main()
