"""A server no visitor can exhaust (issue 20 item 6) and a classroom that stays fast (issue 23 item 9): every view's
work is costed and refused over the server's caps before it starts, uploads are capped by their decompressed size,
Monte-Carlo jobs share a bounded pool, identical requests share one computation (single-flight)."""

from __future__ import annotations

import pathlib
import threading
import time

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app_pages import BY_PATH
from rfviz import ParameterError, create
from rfviz import data as rd
from rfviz.compute import dp as cd
from rfviz.compute import sweep_files as sf
from rfviz.engine import prepare
from rfviz.params import (
    SERVER_TIME_BUDGET,
    Cost,
    current_time_budget,
    require_cost,
    server_budget_scope,
    time_budget_scope,
)
from rfviz.server.jobs import Abandoned, JobPool, SharedCache

ROOT = pathlib.Path(__file__).resolve().parents[2]

TIMEOUT = 60


def write_constant_parquet(path: pathlib.Path, rows: int, chunk: int = 1_000_000) -> pathlib.Path:
    """A sweep-shaped Parquet file of ``rows`` constant rows (compresses to ~10 kB per million rows)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    n = min(rows, chunk)
    table = pa.table({"theta": np.zeros(n), "mc_mse": np.ones(n), "stderr": np.full(n, 0.1),
                      "reliable": np.ones(n, dtype=bool)})
    with pq.ParquetWriter(str(path), table.schema) as writer:
        done = 0
        while done < rows:
            part = table.slice(0, min(n, rows - done))
            writer.write_table(part, row_group_size=len(part))
            done += len(part)
    return path


# ---------------------------------------------------------------------------------------------- the cost model
def test_time_budget_is_unbounded_by_default_and_scoped_on_the_server():
    assert current_time_budget() == float("inf")  # the CLI and the API: the user waits for their own work
    with server_budget_scope():
        assert current_time_budget() == SERVER_TIME_BUDGET
        with pytest.raises(ParameterError, match="limit of"):
            require_cost("a long job", Cost(1.0, 10 * SERVER_TIME_BUDGET), "lower m")
        with pytest.raises(ParameterError, match="memory"):
            require_cost("a big job", Cost(2.0**40, 0.0))
        require_cost("a small job", Cost(1e6, 0.01))
    assert current_time_budget() == float("inf")


def test_maclaurin_allocation_of_ten_million_features_is_refused_at_once():
    with server_budget_scope():
        t0 = time.perf_counter()
        with pytest.raises(ParameterError, match=r"Maclaurin allocation at m = 10000000.*lower m"):
            cd.maclaurin_allocation("gaussian", 10_000_000)
        assert time.perf_counter() - t0 < 0.5
        cd.maclaurin_allocation("gaussian", 64)  # the page's sizes still run


def test_maclaurin_cost_grows_with_m_and_the_optimiser_checks_it_too():
    small, big = cd.maclaurin_allocation_cost(100), cd.maclaurin_allocation_cost(100_000)
    assert big.nbytes == pytest.approx(1000 * small.nbytes) and big.seconds == pytest.approx(1000 * small.seconds)
    from rfviz.maths import dp

    with time_budget_scope(1.0), pytest.raises(ParameterError, match="Algorithm 3"):
        dp.optimize_maclaurin(dp.reference_unit_pairs(8), kernel="exponential", total=1_000_000)


def test_monte_carlo_time_is_checked_before_sampling():
    est = create("trig", m=100_000)
    x = np.tile([[1.0, 0.0]], (50, 1))
    with time_budget_scope(SERVER_TIME_BUDGET):
        t0 = time.perf_counter()
        with pytest.raises(ParameterError, match=r"Monte Carlo of trig \(50 pairs × 1000000 trials\)"):
            prepare(est, x, x, trials=1_000_000, device="cpu")
        assert time.perf_counter() - t0 < 1.0
        prepare(create("trig", m=16), x, x, trials=1000, device="cpu")


def test_gram_monte_carlo_is_costed_before_it_runs():
    from rfviz.compute import data as cdata

    ds = rd.load("iris", queries=64, keys=64)
    with server_budget_scope():
        rows = cdata.gram_table(ds, ["trig"], {"m": 8}, repeats=20)  # a small run: imports done, not timed below
        t0 = time.perf_counter()
        with pytest.raises(ParameterError, match=r"Gram-error Monte Carlo \(5000 repeats, m = 10000000"):
            cdata.gram_table(ds, ["trig"], {"m": 10_000_000}, repeats=5000)
        assert time.perf_counter() - t0 < 1.0
    assert rows[0]["MC"] is not None


# ---------------------------------------------------------------------------------------------- uploads
def test_parquet_over_the_cap_is_refused_from_its_metadata(tmp_path):
    path = write_constant_parquet(tmp_path / "huge.parquet", 2 * sf.MAX_ROWS)
    data = path.read_bytes()
    assert len(data) < 200_000  # compressed: small
    with pytest.raises(ParameterError, match=rf"at most {sf.MAX_ROWS} rows.*got {2 * sf.MAX_ROWS} rows × 4"):
        sf.read_results(data, "huge.parquet")
    ok = write_constant_parquet(tmp_path / "ok.parquet", 10)
    assert len(sf.read_results(ok.read_bytes(), "ok.parquet")) == 10


def test_csv_over_the_cells_cap_is_refused_while_streaming():
    columns = 40
    header = ",".join(["theta", "mc_mse", "stderr", "reliable"] + [f"c{i}" for i in range(columns - 4)])
    row = ",".join(["1"] * columns)
    rows = sf.MAX_CELLS // columns + 1
    data = (header + "\n" + "\n".join([row] * rows) + "\n").encode()
    with pytest.raises(ParameterError, match=rf"{sf.MAX_CELLS} values.*got {rows} rows × {columns} columns"):
        sf.read_results(data, "wide.csv")


@pytest.mark.slow  # writes and streams CSVs at the caps: seconds of CPU
def test_data_csv_is_capped_by_rows_and_values():
    text = "x,y\n" + "1,2\n" * (rd.MAX_ROWS + 1)
    with pytest.raises(ParameterError, match=rf"at most {rd.MAX_ROWS} rows.*stopped at line {rd.MAX_ROWS + 2}"):
        rd.read_array(text.encode(), "data", "big.csv")
    wide = ",".join(["1"] * 4000)
    with pytest.raises(ParameterError, match=rf"{rd.MAX_VALUES} values"):
        rd.read_array(("\n".join([wide] * (rd.MAX_VALUES // 4000 + 1))).encode(), "data", "wide.csv")
    a = rd.read_array(b"# comment\nx,y\n1,2\n3,4\n", "data", "ok.csv")
    np.testing.assert_array_equal(a, [[1, 2], [3, 4]])
    with pytest.raises(ParameterError, match="line 3 is not a row"):
        rd.read_array(b"x,y\n1,2\noops,3\n", "data", "bad.csv")


# ---------------------------------------------------------------------------------------------- pool and cache
@pytest.mark.integration  # threads that sleep
def test_pool_runs_at_most_its_workers_and_reports_the_queue():
    pool = JobPool(2)
    inside = []
    lock = threading.Lock()
    ahead_seen: list[int] = []

    def job(i: int) -> None:
        with pool.slot(on_wait=ahead_seen.append):
            with lock:
                inside.append(i)
                assert pool.running <= 2
            time.sleep(0.05)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(inside) == list(range(8))
    assert pool.peak == 2 and pool.running == 0 and pool.waiting == 0
    assert ahead_seen and max(ahead_seen) >= 2  # queued jobs were told how many were ahead


def test_pool_leaves_the_queue_when_a_waiter_is_cancelled():
    pool = JobPool(1)

    class Stop(BaseException):
        pass

    def stop(_ahead: int) -> None:
        raise Stop

    with pool.slot():
        with pytest.raises(Stop):
            with pool.slot(on_wait=stop):
                pass
        assert pool.waiting == 0
    with pool.slot():
        assert pool.running == 1


@pytest.mark.integration  # threads that sleep
def test_shared_cache_computes_identical_concurrent_requests_once():
    cache, pool = SharedCache(8), JobPool(2)
    calls: list[int] = []
    results: list[float] = []
    started: list[bool] = []

    def compute(report) -> float:
        calls.append(1)
        time.sleep(0.3)
        return 42.0

    def ask() -> None:
        _, job, new = cache.result_or_job(("mc", 1), lambda: pool.submit(compute))
        started.append(new)
        with job.watch():
            results.append(job.future.result(timeout=30))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [42.0] * 8
    assert len(calls) == 1 and cache.computed == 1 and started.count(True) == 1
    assert cache.result_or_job(("mc", 1), lambda: pool.submit(compute)) == (True, 42.0, False)  # later: a hit
    assert len(calls) == 1


@pytest.mark.integration  # threads that sleep
def test_a_job_outlives_the_page_that_left_and_is_stored():
    """A page rerun or stopped while its Monte Carlo runs: the job goes on off the page's thread, a page that asks
    again within the grace period joins it, and the result is stored for everyone."""
    cache, pool = SharedCache(8), JobPool(1)

    def compute(report) -> int:
        for i in range(10):
            time.sleep(0.05)
            report((i + 1) / 10)
        return 7

    _, job, _ = cache.result_or_job("k", lambda: pool.submit(compute, abandon_after=2.0))
    with job.watch():
        time.sleep(0.1)  # the first page leaves early (a rerun)
    hit2, job2, started2 = cache.result_or_job("k", lambda: pool.submit(compute))
    assert (hit2, started2) == (False, False) and job2 is job  # the rerun joins the running job
    with job2.watch():
        assert job2.future.result(timeout=30) == 7
    assert job.fraction == 1.0 and cache.lookup("k") == (True, 7) and cache.computed == 1


@pytest.mark.integration  # threads that sleep
def test_an_abandoned_job_stops_at_its_next_report_and_frees_its_slot():
    cache, pool = SharedCache(8), JobPool(1)
    reports: list[float] = []

    def endless(report) -> None:
        while True:
            time.sleep(0.02)
            reports.append(1.0)
            report(0.5)

    _, job, _ = cache.result_or_job("endless", lambda: pool.submit(endless, abandon_after=0.2))
    with job.watch():
        time.sleep(0.3)  # watched: runs past its grace period
    assert not job.future.done()
    with pytest.raises(Abandoned):
        job.future.result(timeout=10)
    assert cache.lookup("endless") == (False, None)
    assert pool.submit(lambda report: "next").future.result(timeout=10) == "next"  # the slot is free again
    assert pool.running == 0 and len(reports) > 5


def test_a_job_runs_with_the_callers_budgets():
    pool = JobPool(1)
    with time_budget_scope(12.5):
        job = pool.submit(lambda report: current_time_budget())
    assert job.future.result(timeout=10) == 12.5


@pytest.mark.integration  # threads that sleep
def test_shared_cache_does_not_keep_failures_and_bounds_its_size():
    cache, pool = SharedCache(2), JobPool(1)

    def fail(report) -> int:
        raise ParameterError("m must be …")

    _, job, _ = cache.result_or_job("k", lambda: pool.submit(fail))
    with pytest.raises(ParameterError):
        job.future.result(timeout=10)
    _, job, started = cache.result_or_job("k", lambda: pool.submit(lambda report: 1))
    assert started and job.future.result(timeout=10) == 1
    for i in range(5):
        cache.result_or_job(i, lambda i=i: pool.submit(lambda report: i))[1].future.result(timeout=10)
    time.sleep(0.1)  # the last result lands through the future's callback
    assert cache.lookup("k") == (False, None) and cache.lookup(4) == (True, 4)


# ---------------------------------------------------------------------------------------------- app pages
def _errors(at: AppTest) -> str:
    return " ".join(e.value.replace("\\", "") for e in at.error)


@pytest.mark.slow
def test_app_refuses_the_hostile_maclaurin_url():
    page = BY_PATH["dot_product"]
    for view in ("maclaurin-gauss", "Maclaurin allocation (Gaussian kernel)"):  # slug and old label
        at = AppTest.from_file(str(page.file), default_timeout=TIMEOUT)
        at.query_params.update({"view": view, "m": "10000000"})
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        text = _errors(at)
        assert "Maclaurin allocation at m = 10000000" in text and "lower m" in text, text


@pytest.mark.slow
def test_app_refuses_a_huge_parquet_in_the_results_folder(tmp_path, monkeypatch):
    write_constant_parquet(tmp_path / "huge.parquet", 2 * sf.MAX_ROWS)
    monkeypatch.setenv("RFVIZ_RESULTS", str(tmp_path))
    page = BY_PATH["sweeps"]
    at = AppTest.from_file(str(page.file), default_timeout=TIMEOUT).run()
    assert not at.exception, [e.message for e in at.exception]
    assert f"at most {sf.MAX_ROWS} rows" in _errors(at)
    assert len(at.get("plotly_chart")) == 0


@pytest.mark.slow
def test_no_full_garbage_collection_per_rerun():
    """A classroom's server must not walk every object of torch, scipy and plotly after each session's rerun
    (~0.3 s of CPU each): Streamlit's forced collection is off in the config `streamlit run` reads, and the app
    freezes the start-up objects once, so Python's own full collections skip them too."""
    import gc

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    assert gc.get_freeze_count() > 100_000  # torch, scipy, plotly and streamlit objects (~300 000 here)


def test_the_waiting_note_follows_the_job():
    """The page's note says the queue place while the job queues, that it joined another visitor's request, and
    nothing once its own job runs (the queue note is cleared when the job leaves the queue)."""
    from app_pages._ui._run import _waiting_note
    from rfviz.server.jobs import Job

    job = Job()
    job.ahead = 2
    assert "2 jobs ahead" in _waiting_note(job, joined=False)[0]
    job.ahead = 0
    assert _waiting_note(job, joined=False) is None
    assert "another visitor" in _waiting_note(job, joined=True)[0]
