"""``rfviz sweep``: grid syntax, exact pooling, identical numbers on local and a real local Ray (1 or 2 workers,
with a worker killed mid-sweep), resume after an interruption, heavy-tail diagnostics, CLI refusals."""

from __future__ import annotations

import json
import math
import shutil
import tempfile

import numpy as np
import pytest
from proc_helpers import default_sigint
from sweep_helpers import NONDETERMINISTIC, rows, small_spec

from rfviz import ParameterError, get_estimator
from rfviz.cli import main
from rfviz.diagnostics import Moments, assess_mse
from rfviz.sweeps import SweepSpec, combine, make_backend, parse_grid, run_sweep, run_tasks, task_seed
from rfviz.sweeps.backends import CRASH_ONCE_ENV, RayBackend
from rfviz.sweeps.tasks import COL


# ----------------------------------------------------------------------------- grid syntax and seeds
def test_grid_syntax() -> None:
    est = get_estimator("gerf")
    grid = parse_grid(["theta=0:3:4", "m=8:32:4", "kernel=softmax,gaussian", "A=-0.1,-0.2+0.05j"], est)
    assert grid.shape == (4, 4, 2, 2) and grid.size == 64
    assert grid.axes[0].values == (0.0, 1.0, 2.0, 3.0)
    assert grid.axes[1].values == (8, 16, 24, 32) and all(type(v) is int for v in grid.axes[1].values)
    assert grid.point(63) == {"theta": 3.0, "m": 32, "kernel": "gaussian", "A": "-0.2+0.05j"}
    assert grid.point(1)["A"] == "-0.2+0.05j" and grid.point(2)["kernel"] == "gaussian"


@pytest.mark.parametrize("items, fixed, message", [
    (["theta=0:1"], {}, "start:stop:count"),
    (["theta=0:1:x"], {}, "count must be an integer"),
    (["theta=0:1:0"], {}, "count must be an integer"),
    (["theta"], {}, "name=start:stop:count"),
    (["m=1,,2"], {}, "empty value"),
    (["m=4,4"], {}, "repeated"),
    (["q=1,2"], {}, "has no parameter or input 'q'"),
    (["m=0,3"], {}, "m must be"),
    (["m=4:9:3"], {}, "m must be"),  # 6.5
    (["m=4,8"], {"m": "4"}, "both fixed"),
    (["m=4", "m=8"], {}, "given twice"),
    (["r=0:1:100000", "theta=0:1:1000"], {}, "at most"),
])
def test_grid_errors(items, fixed, message) -> None:
    with pytest.raises(ParameterError, match=message):
        parse_grid(items, get_estimator("positive"), fixed)


def test_spec_refuses_absurd_sizes_and_bad_values() -> None:
    with pytest.raises(ParameterError, match="trials"):
        small_spec(trials=10**14)
    with pytest.raises(ParameterError, match="tasks"):
        small_spec(trials=10**12, block_trials=2)
    with pytest.raises(ParameterError, match="seed"):
        small_spec(seed=-1)
    est = get_estimator("positive")
    with pytest.raises(ParameterError, match="theta"):
        SweepSpec("positive", {}, parse_grid(["theta=0:4:3"], est), trials=100)
    with pytest.raises(ParameterError, match="no parameter or input 'zz'"):
        SweepSpec("positive", {"zz": "1"}, parse_grid([], est), trials=100)


def test_task_seeds_are_distinct_and_stable() -> None:
    seeds = {task_seed(7, p, b) for p in range(50) for b in range(50)}
    assert len(seeds) == 2500 and all(0 <= s < 2**63 for s in seeds)
    assert task_seed(7, 3, 4) == task_seed(7, 3, 4) != task_seed(8, 3, 4)


def test_pooling_is_exact_and_order_independent() -> None:
    spec = small_spec()
    table = run_tasks(spec, np.arange(spec.n_blocks))  # the 4 blocks of point 0
    a = combine(table)
    b = combine(table[::-1].copy())
    assert a == b
    assert a.errors.count == spec.trials == int(table[:, COL["n"]].sum())
    # Chan's pooled M2 equals the two-pass M2 of the concatenated sample
    rng = np.random.default_rng(0)
    parts = [rng.standard_exponential(n) ** 2 for n in (5, 17, 40)]
    pooled = Moments()
    for p in parts:
        pooled = pooled.merge(Moments(len(p), float(p.mean()), float(((p - p.mean()) ** 2).sum())))
    allv = np.concatenate(parts)
    assert pooled.count == allv.size
    assert math.isclose(pooled.mean, allv.mean(), rel_tol=1e-12)
    assert math.isclose(pooled.m2, ((allv - allv.mean()) ** 2).sum(), rel_tol=1e-12)


def test_diagnostics_flag_heavy_tails() -> None:
    rng = np.random.default_rng(1)
    light = rng.standard_normal(10_000) ** 2
    assert assess_mse(Moments(light.size, light.mean(), ((light - light.mean()) ** 2).sum())).reliable
    heavy = np.exp(3.0 * rng.standard_normal(10_000))  # log-normal squared errors: a few trials dominate
    blocks = heavy.reshape(20, -1).sum(1)
    verdict = assess_mse(Moments(heavy.size, heavy.mean(), ((heavy - heavy.mean()) ** 2).sum()),
                         top_share=blocks.max() / blocks.sum(), parts=20)
    assert not verdict.reliable and "heavy tail" in verdict.warning
    assert assess_mse(Moments(100, 0.0, 0.0)) .reliable  # an exact estimator
    assert not assess_mse(Moments(1, 1.0, 0.0)).reliable


# ----------------------------------------------------------------------------- local backend, resume
@pytest.mark.slow
def test_local_sweep_matches_closed_form(tmp_path) -> None:
    report = run_sweep(small_spec(), str(tmp_path / "a.csv"), make_backend("local"), progress=False)
    assert report.status == "complete" and report.points_done == 4
    got = rows(tmp_path / "a.csv")
    assert [int(r["point"]) for r in got] == [0, 1, 2, 3]
    reliable = [r for r in got if r["reliable"] == "True"]
    assert len(reliable) >= 2 and all(r["warning"] == "" for r in reliable)
    # theory (the closed-form fourth moment) words the verdict where the estimator has one (issue 22)
    assert all(r["warning"].startswith(("heavy tail", "heavy-tailed here", "too few trials", "infinite variance"))
               for r in got if r["reliable"] == "False")
    assert all(r["disagrees"] == "False" for r in got)
    for r in reliable:  # the closed form within 4 standard errors where the Monte Carlo is trustworthy
        assert abs(float(r["mc_mse"]) - float(r["mse"])) < 4 * float(r["stderr"])
        assert abs(float(r["z"])) < 4
    assert all(int(r["trials"]) == 2048 and r["device"] == "cpu" for r in got)
    manifest = json.loads((tmp_path / "a.csv.manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["spec"]["trials"] == 2048


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_resume_after_interrupt_loses_nothing(tmp_path, suffix) -> None:
    spec = small_spec()
    full, part = tmp_path / f"full.{suffix}", tmp_path / f"part.{suffix}"
    run_sweep(spec, str(full), make_backend("local"), progress=False)
    seen: list[int] = []

    def stop_after_two(row) -> None:
        seen.append(row["point"])
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, str(part), make_backend("local"), progress=False, on_point=stop_after_two)
    manifest = json.loads((tmp_path / f"part.{suffix}.manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["done_points"] == 2
    with pytest.raises(ParameterError, match="already exists"):
        run_sweep(spec, str(part), make_backend("local"), progress=False)
    with pytest.raises(ParameterError, match="different sweep"):
        run_sweep(small_spec(seed=8), str(part), make_backend("local"), progress=False, resume=True)
    report = run_sweep(spec, str(part), make_backend("local"), progress=False, resume=True)
    assert report.points_this_run == 2 and report.points_done == 4 and report.status == "complete"
    if suffix == "csv":
        assert rows(part) == rows(full)
    else:
        import pyarrow.parquet as pq

        a, b = (pq.read_table(p).drop_columns(list(NONDETERMINISTIC)) for p in (full, part))
        assert a.equals(b) and a.num_rows == 4
        assert not (tmp_path / "part.parquet.parts").exists()


# ----------------------------------------------------------------------------- a real local Ray
@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    temp = tempfile.mkdtemp(prefix="rfr")  # a private Ray (never /tmp/ray), even when a `ray start` head runs
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp)
    yield ray
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
def test_ray_equals_local_with_1_or_2_workers_and_a_lost_worker(ray_cluster, tmp_path, monkeypatch) -> None:
    spec = small_spec()
    run_sweep(spec, str(tmp_path / "local.csv"), make_backend("local"), progress=False)
    expected = rows(tmp_path / "local.csv")
    for workers, batch in ((1, 1), (2, 3), (2, None)):
        out = tmp_path / f"ray{workers}-{batch}.csv"
        backend = RayBackend(workers=workers, batch_tasks=batch)
        report = run_sweep(spec, str(out), backend, progress=False)
        assert report.status == "complete" and report.backend == "ray"
        assert rows(out) == expected, (workers, batch)
    # a worker process dies on its first batch: max_retries re-runs it, the numbers do not change
    marker = tmp_path / "crashed"
    monkeypatch.setenv(CRASH_ONCE_ENV, str(marker))
    backend = RayBackend(workers=2, batch_tasks=2, max_retries=2)
    report = run_sweep(spec, str(tmp_path / "crash.csv"), backend, progress=False)
    assert marker.exists() and report.status == "complete"
    assert rows(tmp_path / "crash.csv") == expected


@pytest.mark.slow
def test_ray_resumes_a_local_sweep(ray_cluster, tmp_path) -> None:
    spec = small_spec()
    run_sweep(spec, str(tmp_path / "full.csv"), make_backend("local"), progress=False)

    def stop(row) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, str(tmp_path / "p.csv"), make_backend("local"), progress=False, on_point=stop)
    report = run_sweep(spec, str(tmp_path / "p.csv"), RayBackend(workers=2), progress=False, resume=True)
    assert report.points_this_run == 3
    assert rows(tmp_path / "p.csv") == rows(tmp_path / "full.csv")


# ----------------------------------------------------------------------------- the command line
@pytest.mark.slow
def test_cli_sweep_and_refusals(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "c.csv"
    args = ["sweep", "positive", "d=8", "theta=1.0", "--grid", "r=0.3:0.6:2", "m=4,8", "--trials", "2048",
            "--seed", "7", "--block-trials", "512", "--device", "cpu", "--quiet", "--out", str(out)]
    assert main(args) == 0
    run_sweep(small_spec(), str(tmp_path / "api.csv"), make_backend("local"), progress=False)
    assert rows(out) == rows(tmp_path / "api.csv")
    capsys.readouterr()
    for bad in (["--grid", "r=0:1"], ["--grid", "nope=1,2"], ["--trials", "1"], ["--workers", "2"],
                ["--device", "tpu"], ["--grid", "m=8"],  # m=8 with out existing: refused, nothing overwritten
                ["--flush-points", "0"], ["--flush-seconds", "nan"]):
        assert main([*args, *bad]) == 2, bad
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr("rfviz.sweeps.run_sweep", interrupted)  # what rfviz.sweep (the CLI's core) calls
    assert main([*args, "--resume"]) == 130
    assert "--resume" in capsys.readouterr().err


# ----------------------------------------------------------------------------- Ctrl-C on the real CLI
@pytest.mark.slow
def test_cli_sigint_exits_130_keeps_points_and_resumes(tmp_path) -> None:
    """A `python -m rfviz sweep` subprocess sent SIGINT after k stored points: exit 130, the k points kept (their rows
    unchanged by the resumed run), the progress line printed, and `--resume` completes the sweep."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "run.csv"
    n_points, k = 40, 2
    cmd = [sys.executable, "-m", "rfviz", "sweep", "positive", "d=16", "m=64", "theta=1.0",
           "--grid", f"r=0.2:1.2:{n_points}", "--trials", "8192", "--block-trials", "2048", "--seed", "5",
           "--flush-points", "1", "--out", str(out)]  # every row durable at once, so the test can watch them
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 120
        stored: list[dict[str, str]] = []
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists():
                stored = [r for r in rows(out) if None not in r.values()]  # not a line being written
                if len(stored) >= k:
                    break
            time.sleep(0.02)
        assert proc.poll() is None, f"the sweep ended before it could be interrupted: {proc.communicate(timeout=60)}"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "--resume" in stderr
    kept = rows(out)
    assert k <= len(kept) < n_points, "finished points are kept, the sweep did not finish"
    assert kept[:len(stored)] == stored
    assert f"/{n_points} points" in stderr, "the progress line (points done, trials/s, ETA) is printed"
    manifest = json.loads((tmp_path / "run.csv.manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["done_points"] == len(kept)

    done = subprocess.run([*cmd, "--resume", "--quiet"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{n_points}/{n_points} points" in done.stderr and f"({n_points - len(kept)} this run" in done.stderr
    final = rows(out)
    assert [int(r["point"]) for r in final] == list(range(n_points))
    by_point = {r["point"]: r for r in final}
    assert all(by_point[r["point"]] == r for r in kept), "a resumed run leaves finished points untouched"
    assert json.loads((tmp_path / "run.csv.manifest.json").read_text())["status"] == "complete"


# ----------------------------------------------------------------------------- Ray sizing and the CUDA path (pure)
def test_batch_size_targets_task_seconds_and_keeps_8_batches_per_slot() -> None:
    from rfviz.sweeps.backends import batch_size

    assert batch_size(0.1, 10_000, 2, task_seconds=0.5) == 5  # ~0.5 s of compute per Ray task
    assert batch_size(0.19, 127, 2, task_seconds=0.5) == 3
    # a small sweep: capped so each of 2 slots gets >= 8 batches (ceil(40 / 16) = 3, not 50)
    assert batch_size(0.01, 40, 2, task_seconds=0.5) == 3
    n, slots = 1000, 4
    b = batch_size(1e-3, n, slots)
    assert math.ceil(n / b) >= 8 * slots
    assert batch_size(5.0, 100, 2) == 1 and batch_size(0.0, 0, 1) == 1 and batch_size(float("nan"), 5, 1) == 1
    with pytest.raises(ParameterError, match="task_seconds"):
        batch_size(0.1, 10, 0)


def test_cuda_resource_request_and_float32_without_a_gpu() -> None:
    import torch

    from rfviz.engine import _default_dtype
    from rfviz.sweeps.backends import ray_slots, ray_task_options

    assert ray_task_options("cpu", max_retries=3, cluster_gpus=4) == {"max_retries": 3, "num_cpus": 1}
    assert ray_task_options("cuda", max_retries=2, cluster_gpus=4, gpus_per_task=0.5) == \
        {"max_retries": 2, "num_cpus": 1, "num_gpus": 0.5}
    with pytest.raises(ParameterError, match="no GPU"):
        ray_task_options("cuda", max_retries=3, cluster_gpus=0)
    with pytest.raises(ParameterError, match="device"):
        ray_task_options("tpu", max_retries=3, cluster_gpus=0)
    assert ray_slots("cpu", cpus=16, gpus=4) == 16
    assert ray_slots("cuda", cpus=16, gpus=4) == 4
    assert ray_slots("cuda", cpus=16, gpus=4, gpus_per_task=0.25) == 16
    assert ray_slots("cuda", cpus=16, gpus=0.3, gpus_per_task=1.0) == 1
    # the engine computes in float32 on a GPU, float64 on the CPU (the README's reproducibility caveat)
    assert _default_dtype(torch.device("cuda")) == torch.float32
    assert _default_dtype(torch.device("cpu")) == torch.float64
    spec = small_spec()
    from dataclasses import replace

    assert replace(spec, device="cuda").device == "cuda"  # a CUDA spec is valid without a GPU (runs on the cluster)
    with pytest.raises(ParameterError, match="device"):
        replace(spec, device="mps")
