"""The hostile inputs of issue 20 against a real server in headless Chromium, watching the server's memory: the
Maclaurin URL with m = 10⁷ and a ~1 MB Parquet upload holding 10⁸ rows are refused with a clear message, and the
server's resident memory (VmRSS of /proc/<pid>/status) stays under 1.5 GB throughout."""

from __future__ import annotations

import os
import pathlib
import sys
import threading

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "app"))  # test_browser's fixtures
from test_browser import CHROMIUM, _assert_no_exception, _wait_idle, browser, server  # noqa: F401  (fixtures)
from test_server import write_constant_parquet

from rfviz.compute import sweep_files as sf

RSS_LIMIT = int(1.5 * 2**30)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"Chromium is not installed at {CHROMIUM}"),
]


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` (VmRSS, /proc/<pid>/status; psutil is not needed)."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class PeakRss:
    """Samples a process's VmRSS every 50 ms in a thread while the block runs; ``peak`` in bytes."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            self._stop.wait(0.05)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


@pytest.fixture(scope="module")
def huge_parquet(tmp_path_factory) -> pathlib.Path:
    path = write_constant_parquet(tmp_path_factory.mktemp("hostile") / "huge.parquet", 100_000_000)
    assert path.stat().st_size < 5 * 2**20  # ~1 MB on disk, 10⁸ rows inside
    return path


def _server_pid(url: str) -> int:
    port = url.rsplit(":", 1)[1]
    for status in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
        try:
            cmd = status.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(cmd) and port.encode() in cmd:
            return int(status.parent.name)
    raise RuntimeError(f"no streamlit process on port {port}")


def _error_text(page) -> str:
    page.wait_for_selector('[data-testid="stAlertContentError"]', timeout=90_000)
    return " ".join(page.locator('[data-testid="stAlertContentError"]').all_inner_texts())


def test_hostile_maclaurin_url_is_refused_and_memory_stays_bounded(server, browser):  # noqa: F811
    pid = _server_pid(server)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    with PeakRss(pid) as rss:
        for view in ("maclaurin-gauss", "Maclaurin%20allocation%20(Gaussian%20kernel)"):
            page.goto(f"{server}/dot_product?view={view}&m=10000000", wait_until="domcontentloaded")
            text = _error_text(page)
            assert "Maclaurin allocation at m = 10000000" in text and "lower m" in text, text
            _wait_idle(page)
            _assert_no_exception(page, "dot_product (hostile m)")
        page.wait_for_timeout(3000)  # a runaway allocation would keep growing here
    page.close()
    print(f"server peak VmRSS {rss.peak / 2**20:.0f} MiB")
    assert rss.peak < RSS_LIMIT, f"server RSS peaked at {rss.peak / 2**20:.0f} MiB"


def test_parquet_of_a_hundred_million_rows_is_refused_and_memory_stays_bounded(server, browser,  # noqa: F811
                                                                               huge_parquet):
    pid = _server_pid(server)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{server}/sweeps", wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=90_000)
    _wait_idle(page)
    with PeakRss(pid) as rss:
        page.locator('[data-testid="stFileUploader"] input[type="file"]').first.set_input_files(str(huge_parquet))
        text = _error_text(page)
        _wait_idle(page)
        page.wait_for_timeout(2000)
    assert f"at most {sf.MAX_ROWS} rows" in text and "100000000 rows" in text, text
    _assert_no_exception(page, "sweeps (hostile upload)")
    page.close()
    print(f"server peak VmRSS {rss.peak / 2**20:.0f} MiB")
    assert rss.peak < RSS_LIMIT, f"server RSS peaked at {rss.peak / 2**20:.0f} MiB"
