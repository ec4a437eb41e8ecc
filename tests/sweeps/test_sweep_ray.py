"""The Ray sweep backend as users meet it (issues 20 and 24): adaptive Ray task sizes, a lazily consumed task stream,
failing points named, Ray-only options validated and refused on the local backend, unreachable addresses answered
in one line. A private local Ray (2 CPUs, its own temp dir) serves the tests that need one; the multi-node cluster is
in tests/sweeps/test_sweep_ray_cluster.py. Tests that start Ray or a child process are in the slow tier."""

from __future__ import annotations

import itertools
import shutil
import socket
import tempfile
import time

import numpy as np
import pytest
from proc_helpers import reap, start_allowance
from sweep_helpers import rows, small_spec

from rfviz import ParameterError, get_estimator
from rfviz.cli import main
from rfviz.server.processes import read_line
from rfviz.sweeps import SweepSpec, make_backend, parse_grid, run_sweep
from rfviz.sweeps.ray_backend import FAIL_POINT_ENV, BatchSizer, RayBackend, SweepTaskError, batch_size, probe_address


def chunks(spec: SweepSpec, points=None, size: int = 3):
    """The runner's contract: (k, 2) int64 (point, block) chunks, in order."""
    pairs = ((p, b) for p in (range(spec.n_points) if points is None else points) for b in range(spec.n_blocks))
    while chunk := list(itertools.islice(pairs, size)):
        yield np.array(chunk, dtype=np.int64)


# ----------------------------------------------------------------------------- adaptive Ray task sizes (pure)
def test_batch_sizes_follow_the_median_of_several_measured_tasks_not_one_cold_task() -> None:
    sizer = BatchSizer(slots=2, task_seconds=0.5)
    assert sizer.next_size(20_000) == 2  # nothing measured yet: small first Ray tasks
    # a worker's first Ray task: a 45 ms cold task then 2 ms tasks; the cold one is left out of the median
    sizer.observe(np.array([0.045, 0.002, 0.002, 0.0021]), cold=True)
    assert sizer.median_s == pytest.approx(0.002)
    sizes = [sizer.next_size(20_000) for _ in range(10)]
    assert sizes[:7] == [4, 8, 16, 32, 64, 128, 250] and set(sizes[7:]) == {250}  # 0.5 s / 2 ms, grown ≤ 2× a step
    # the old calibration from one cold task gave 0.5 / 0.045 → 12 tasks per Ray task
    assert batch_size(0.045, 20_000, 2) == 12
    # re-estimated as the sweep runs: tasks become 10× slower (larger r, m further along the grid)
    for _ in range(300):
        sizer.observe(np.array([0.02]), cold=False)
    assert sizer.next_size(20_000) == 25
    # the tail: ≤ remaining / (8 × slots) so each slot still gets 8 Ray tasks
    assert sizer.next_size(160) == 10
    assert BatchSizer(slots=2, fixed=7).next_size(10**6) == 7


# ----------------------------------------------------------------------------- Ray-only options and addresses (CLI)
CLI = ["sweep", "positive", "d=8", "theta=1.0", "--grid", "r=0.3,0.6", "--trials", "1024", "--quiet"]


@pytest.mark.parametrize("extra, message", [
    (["--max-retries", "-1"], "max_retries must be an integer in [0, 100]"),
    (["--task-seconds", "0"], "task_seconds must be a number in (0, 3600]"),
    (["--task-seconds", "-1"], "task_seconds must be"),
    (["--task-seconds", "nan"], "task_seconds must be finite"),
    (["--gpus-per-task", "-1"], "gpus_per_task must be a number in (0, 1024]"),
    (["--gpus-per-task", "1.5"], "gpus_per_task must be in (0, 1] or a whole number"),
    (["--backend", "ray", "--max-retries", "-1"], "max_retries must be"),
    (["--max-retries", "2"], "--max-retries applies to --backend ray only"),
    (["--task-seconds", "2", "--gpus-per-task", "1"], "--gpus-per-task, --task-seconds applies to --backend ray"),
    (["--backend", "ray", "--address", "127.0.0.1:9", "--workers", "2"], "drop --workers"),
    pytest.param(["--backend", "ray", "--address", "127.0.0.1:9"], "no Ray cluster reachable there",
                 marks=pytest.mark.integration),  # connects to the address
    (["--backend", "ray", "--address", " "], "address must be HOST:PORT"),
])
def test_sweep_ray_options_refused_in_one_line(capsys, tmp_path, extra, message) -> None:
    t0 = time.perf_counter()
    code = main([*CLI, "--out", str(tmp_path / "x.csv"), *extra])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, err)
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and message in err, err
    assert time.perf_counter() - t0 < 30
    assert not list(tmp_path.iterdir())  # nothing created


@pytest.mark.slow
def test_a_port_where_no_ray_answers_is_one_line_within_the_timeout() -> None:
    with socket.socket() as server:  # accepts TCP connections (the kernel's backlog) but never speaks Ray
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        address = f"127.0.0.1:{server.getsockname()[1]}"
        t0 = time.perf_counter()
        with pytest.raises(ParameterError, match=r"no Ray cluster answered within 3 s|cannot connect"):
            probe_address(address, timeout=3)
        assert time.perf_counter() - t0 < 10


# ----------------------------------------------------------------------------- a private local Ray
@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    temp = tempfile.mkdtemp(prefix="rfr")  # short: Ray's socket paths must stay < 108 bytes; never /tmp/ray
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp)
    yield ray
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
def test_ray_consumes_the_task_stream_lazily(ray_local) -> None:
    """10⁶ tasks offered, a few results taken: only the chunks needed for the Ray tasks in flight were read."""
    est = get_estimator("positive")
    grid = parse_grid(["r=0.1:1:1000", "theta=0:3:1000"], est, {})
    spec = SweepSpec("positive", {"d": "4", "m": "2"}, grid, trials=2, block_trials=2)
    pulled = []

    def stream():
        for start in range(0, spec.n_tasks, 4096):
            pulled.append(start)
            points = np.arange(start, min(start + 4096, spec.n_tasks), dtype=np.int64)
            yield np.stack([points, np.zeros_like(points)], axis=1)

    backend = RayBackend(batch_tasks=None)
    results = backend.run(spec, stream())
    got = [next(results) for _ in range(6)]
    results.close()  # the runner stops (Ctrl-C): pending Ray tasks are cancelled
    assert sum(len(r) for r in got) >= 6
    assert len(pulled) <= 2, len(pulled)  # ≤ 2 × slots small Ray tasks in flight: one 4096-task chunk is enough
    done = np.concatenate(got)[:, 0].astype(int)
    assert set(done) <= set(range(4096))


@pytest.mark.slow
def test_ray_rows_equal_local_from_a_chunk_stream(ray_local, tmp_path) -> None:
    spec = small_spec()
    run_sweep(spec, str(tmp_path / "local.csv"), make_backend("local"), progress=False)
    by_point: dict[int, list[np.ndarray]] = {}
    for out in RayBackend(workers=2).run(spec, chunks(spec, size=5)):
        for row in out:
            by_point.setdefault(int(row[0]), []).append(row)
    assert sorted(by_point) == list(range(spec.n_points))
    assert all(len(v) == spec.n_blocks for v in by_point.values())
    report = run_sweep(spec, str(tmp_path / "ray.csv"), RayBackend(workers=2), progress=False)
    assert report.status == "complete" and rows(tmp_path / "ray.csv") == rows(tmp_path / "local.csv")


@pytest.mark.slow
def test_a_failing_point_is_named_in_one_line_and_the_others_are_kept(ray_local, tmp_path, monkeypatch,
                                                                      capsys) -> None:
    spec = small_spec()
    run_sweep(spec, str(tmp_path / "local.csv"), make_backend("local"), progress=False)
    expected = {r["point"]: r for r in rows(tmp_path / "local.csv")}
    # transient: point 2 fails once, its retry succeeds: identical rows
    monkeypatch.setenv(FAIL_POINT_ENV, f"2:{tmp_path / 'failed-once'}")
    report = run_sweep(spec, str(tmp_path / "transient.csv"), RayBackend(max_retries=2), progress=False)
    assert report.status == "complete" and (tmp_path / "failed-once").exists()
    assert rows(tmp_path / "transient.csv") == rows(tmp_path / "local.csv")
    # persistent: point 2 fails on every try; the other points are stored, the error names point 2's parameters
    monkeypatch.setenv(FAIL_POINT_ENV, "2")
    with pytest.raises(SweepTaskError, match=r"point 2 \(r=0.6, m=4\), block \d, failed 3 time\(s\): ArithmeticError"):
        run_sweep(spec, str(tmp_path / "bad.csv"), RayBackend(max_retries=2), progress=False)
    kept = rows(tmp_path / "bad.csv")
    assert sorted(r["point"] for r in kept) == ["0", "1", "3"]
    assert all(r == expected[r["point"]] for r in kept)
    # on the command line: one line, exit 2, no Ray traceback
    capsys.readouterr()
    args = ["sweep", "positive", "d=8", "theta=1.0", "--grid", "r=0.3:0.6:2", "m=4,8", "--trials", "2048", "--seed",
            "7", "--block-trials", "512", "--device", "cpu", "--quiet", "--backend", "ray", "--max-retries", "1",
            "--out", str(tmp_path / "cli.csv")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "error: point 2 (r=0.6, m=4)" in err and "--resume" in err, err
    assert "Traceback" not in err
    monkeypatch.delenv(FAIL_POINT_ENV)
    assert main([*args, "--resume"]) == 0  # the cause fixed: --resume computes only point 2
    assert rows(tmp_path / "cli.csv") == rows(tmp_path / "local.csv")


@pytest.mark.slow
def test_sigterm_while_waiting_for_a_silent_address_is_honoured(tmp_path) -> None:
    """A blocked ``ray.init`` ignored SIGTERM for over a minute; the probe keeps the command responsive."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        address = f"127.0.0.1:{server.getsockname()[1]}"
        proc = subprocess.Popen([sys.executable, "-m", "rfviz", *CLI, "--out", str(tmp_path / "x.csv"), "--backend",
                                 "ray", "--address", address], cwd=root, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(root)})
        try:
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline:  # wait until the probe runs
                if any("ray" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")
                       for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()):
                    break
                time.sleep(0.2)
            t0 = time.perf_counter()
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
        finally:
            reap(proc)  # a failed wait leaves nothing running
    assert time.perf_counter() - t0 < 5, err
    assert proc.returncode == 130 and err.strip().splitlines()[-1].startswith("interrupted"), (proc.returncode, err)
    assert "Traceback" not in err and not (tmp_path / "x.csv").exists()


@pytest.mark.slow
def test_sigterm_during_a_ray_sweep_stops_it_and_its_private_ray(tmp_path) -> None:
    """SIGTERM mid-sweep: exit 130 with the interrupted line, and no process of its private Ray left behind."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    ray_tmp = tempfile.mkdtemp(prefix="rfr")
    env = {**os.environ, "PYTHONPATH": str(root), "RAY_TMPDIR": ray_tmp}
    env.pop("RAY_ADDRESS", None)
    cmd = [sys.executable, "-m", "rfviz", "sweep", "positive", "d=16", "m=64", "theta=1.0", "--grid",
           "r=0.2:1.2:400", "--trials", "65536", "--backend", "ray", "--workers", "1", "--out", str(tmp_path / "s.csv")]
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        while not (lines and lines[-1].startswith("ray: ")) and len(lines) < 20:  # Ray's own log lines first
            lines.append(read_line(proc.stderr, seconds=start_allowance(120)) or "(nothing within the allowance)")
        assert lines[-1].startswith("ray: started a private local Ray"), lines  # Ray up, its workers started
        time.sleep(2)
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "interrupted" in err, (proc.returncode, err[-2000:])
        assert "Traceback" not in err
        assert time.perf_counter() - t0 < 30
        time.sleep(1)
        left = [p for p in os.listdir("/proc") if p.isdigit() and ray_tmp.encode() in
                (Path(f"/proc/{p}/cmdline").read_bytes() if os.path.exists(f"/proc/{p}/cmdline") else b"")]
        assert not left, left
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(ray_tmp, ignore_errors=True)
