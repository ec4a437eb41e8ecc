"""Re-run latency of each app page after a parameter change (streamlit.testing AppTest; not a test).

For every page: load it once (imports, caches warm), then change one slider/number to a value it has never had
(so the analytic computation really runs: no cache hit) and time ``AppTest.run()``; the median over the runs is
reported. Target: < 300 ms for the analytic views. Usage: ``python bench/bench_pages.py [--runs 7]``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from app_pages import PAGES  # noqa: E402  (each page's Sweep widgets: app_pages/__init__.py)


def bench(file: pathlib.Path, kind: str, key: str, first: float, step: float, runs: int,
          query: dict[str, str] | None = None) -> list[float]:
    at = AppTest.from_file(str(file), default_timeout=300)
    at.query_params.update(query or {})
    at.run()
    assert not at.exception, at.exception
    times = []
    for i in range(runs):
        getattr(at, kind)(key=key).set_value(round(first + i * step, 6))
        t = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t)
        assert not at.exception, at.exception
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    print(f"{'page (parameter changed)':<42} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for page in PAGES:
        for sw in page.sweeps:
            t = bench(page.file, sw.kind, page.key(sw.name), sw.first, sw.step, args.runs, sw.query)
            label = f"{page.url_path} ({sw.name})"
            print(f"{label:<42} {1000 * statistics.median(t):>10.0f} {1000 * min(t):>8.0f} {1000 * max(t):>8.0f}")


if __name__ == "__main__":
    main()
