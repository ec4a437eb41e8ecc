"""Issue 38, parts 2 and 5: every new path is costed before it runs (one line and exit 2 on the CLI, ParameterError in
Python) or runs within the memory budget. Refusals are checked in-process under a deadline (``_deadline``: a case
that starts the work instead of refusing fails in one line, never hangs); peak memory only in a subprocess
(``ru_maxrss``)."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch
from proc_helpers import stop

import rfviz
import rfviz.sampling
from rfviz import ParameterError
from rfviz.cli import main
from rfviz.plugins import PluginError
from rfviz.server.processes import spawn

ROOT = pathlib.Path(__file__).resolve().parents[2]
MIB = 2**20


class _TooSlow(BaseException):
    """Raised by ``_deadline``: not an Exception, so the CLI's one-line error handler cannot swallow it."""


@contextlib.contextmanager
def _deadline(seconds: float):
    """Fail the block in one line when it runs longer than ``seconds`` (it started the work instead of refusing)."""

    def alarm(*_):
        raise _TooSlow(f"still running after {seconds} s: not refused up front")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _refused(capsys, argv: list[str], *words: str, seconds: float = 30.0) -> str:
    """Run the CLI in-process: exit 2, nothing on stdout, one line on stderr holding ``words``; before ``seconds``."""
    capsys.readouterr()
    try:
        with _deadline(seconds):
            code = main(argv)
    except _TooSlow as exc:
        pytest.fail(str(exc))
    out, err = capsys.readouterr()
    assert code == 2, (code, out[-300:], err[-300:])
    assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    for w in words:
        assert w in err, err
    return err


def _peak(argv: list[str], timeout: float = 120.0) -> tuple[int, int, str]:
    """(exit code, peak resident bytes above the interpreter with rfviz and torch imported, stderr) of a CLI run in
    a child process, killed at ``timeout`` (then exit code 124)."""
    code = textwrap.dedent("""
        import json, resource, sys
        import torch, rfviz.cli, rfviz.compute.features
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        rc = rfviz.cli.main(sys.argv[1:])
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        sys.stdout.flush()
        print(json.dumps({"rc": rc, "grew": (peak - base) * 1024}), file=sys.stderr)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    try:
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return 124, 0, f"killed after {timeout} s"
    last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "{}"
    try:
        info = json.loads(last)
    except ValueError:
        return proc.returncode or 1, 0, proc.stderr[-500:]
    return info["rc"], info["grew"], proc.stderr


@pytest.mark.integration
# ------------------------------------------------------------------------------------ features-needed
@pytest.mark.parametrize("argv", [
    ["positive", "eps=0.1", "d=15000", "coupling=orthogonal"],
    ["hybrid_gaussian", "eps=0.1", "d=10000000"],
    ["trig", "eps=0.1", "r=1", "theta=1", "d=10000000"],
])
def test_features_needed_at_a_huge_d_answers_within_the_budget(argv):
    code, grew, err = _peak(["features-needed", *argv, "--json"], timeout=90)
    assert code == 0, err[-500:]
    assert grew < 512 * MIB, f"peak grew by {grew / MIB:.0f} MiB"


def test_features_needed_with_rotation_average_at_a_huge_d_is_refused_before_the_frames(capsys):
    _refused(capsys, ["features-needed", "trig", "eps=0.1", "d=600000", "embedding=rotation_average"],
             "of memory", seconds=10)


def test_a_nested_r_is_refused_not_flattened():
    from rfviz.compute.features import grid_target

    with pytest.raises(ParameterError, match="r must be a number or a one-dimensional list"):
        grid_target([[0.5, 1.0]], 1.0, 3, over="worst")


def test_the_rotation_average_frames_are_costed_before_they_are_built():
    from rfviz.maths.dp import rotation_average_pairs

    with _deadline(5):
        with pytest.raises(ParameterError, match=r"rotation_average .* of memory"):
            rotation_average_pairs(1.0, 1.0, 10**6)


# ------------------------------------------------------------------------------------ samplers at large d
def test_mse_with_halton_points_at_a_large_d_is_refused_by_the_samplers_working_memory(capsys):
    _refused(capsys, ["mse", "positive", "d=20000", "m=64", "coupling=qmc_halton", "--trials", "100"],
             "512 MiB", "--memory-budget", seconds=20)


@pytest.mark.parametrize("coupling", ["sorf", "fastfood"])
def test_a_structured_draw_at_a_large_d_is_refused_before_it_runs(coupling):
    gen = torch.Generator().manual_seed(0)
    with _deadline(5):
        with pytest.raises(ParameterError, match="of memory"):
            rfviz.sampling.sample_omegas(coupling, 128, 64, 16384, 2, gen, torch.device("cpu"), torch.float64)


@pytest.mark.integration
def test_the_samplers_stated_memory_covers_what_they_use():
    """Measured in a child process: each sampler's peak resident growth is within its stated working memory."""
    code = textwrap.dedent("""
        import json, resource, sys, torch
        from rfviz import sampling
        from rfviz.params import memory_budget_scope
        import rfviz.maths.qmc, rfviz.maths.structured, scipy.stats.qmc
        c, t, m, d = sys.argv[1], *map(int, sys.argv[2:5])
        stated = sampling.sampler_bytes(c, t, m, d, 2, 8)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with memory_budget_scope(2**34):
            sampling.sample_omegas(c, t, m, d, 2, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64)
        print(json.dumps({"grew": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024,
                          "stated": stated}))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    for case in (["qmc_halton", "20", "64", "20000"], ["qmc_sobol", "50", "64", "20000"],
                 ["sorf", "64", "64", "16384"], ["orthogonal", "128", "64", "20000"]):
        proc = subprocess.run([sys.executable, "-c", code, *case], capture_output=True, text=True, timeout=120,
                              env=env)
        assert proc.returncode == 0, proc.stderr[-500:]
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        assert info["grew"] <= info["stated"], (case, info)


# ------------------------------------------------------------------------------------ downstream in time
@pytest.mark.parametrize("task, data", [("ridge", "synthetic"), ("attention", "iris")])
def test_downstream_with_a_million_repeats_is_refused_over_the_time_limit(capsys, task, data):
    _refused(capsys, ["downstream", "--task", task, "--data", data, "--names", "trig", "--lengths", "16",
                      "--repeats", "1000000", "--no-nystroem"], "would take about", seconds=30)


# ------------------------------------------------------------------------------------ plugin answers
def test_an_answer_of_millions_of_empty_lists_is_refused_before_parsing():
    from rfviz.plugin_process import read_answer

    raw = b'{"format": "rfviz-plugin-answer/1", "value": [' + b"[]," * 3_000_000 + b"[]]}"
    t0 = time.perf_counter()
    with pytest.raises(PluginError, match="JSON values"):
        read_answer(raw, "plugin 'x.py'")
    assert time.perf_counter() - t0 < 1.0


DEEP_TREE = """
    import json, os, sys
    request = json.load(open(sys.argv[1]))
    folder = os.path.dirname(request["answer"])
    open({marker!r}, "w").write(folder)
    os.chdir(folder)
    for _ in range(3000):
        os.mkdir("d")
        os.chdir("d")
    os.mkdir("locked")
    os.chmod("locked", 0)
    os._exit(0)
"""


@pytest.mark.integration
def test_a_plugins_3000_deep_tree_is_removed_without_recursion_error(tmp_path, capsys):
    marker = tmp_path / "folder.txt"
    plugin = tmp_path / "deep.py"
    plugin.write_text(textwrap.dedent(DEEP_TREE.format(marker=str(marker))))
    err = _refused(capsys, ["check", str(plugin)], seconds=120)
    assert "RecursionError" not in err
    folder = marker.read_text()
    assert pathlib.Path(folder).name.startswith("rfviz-plugin-") and not os.path.lexists(folder), folder


def test_remove_tree_removes_deep_unreadable_trees(tmp_path):
    from rfviz.plugin_process import remove_tree

    top = tmp_path / "top"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(2500):  # deeper than PATH_MAX allows as one path
        os.mkdir("d", dir_fd=fd)
        new = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = new
    os.mkdir("locked", dir_fd=fd)
    os.chmod("locked", 0, dir_fd=fd)
    os.symlink(str(tmp_path), "link", dir_fd=fd)  # a link out is removed, never followed
    os.close(fd)
    (tmp_path / "keep").write_text("x")
    remove_tree(top)
    assert not top.exists() and (tmp_path / "keep").exists()


FORGED_REPORT = """
    import json, os, sys
    request = json.load(open(sys.argv[1]))
    with open(request["answer"], "w") as f:
        f.write({answer!r})
    os._exit(0)
"""


@pytest.mark.integration
def test_a_forged_report_whose_arrays_do_not_fit_its_grid_is_refused(tmp_path, capsys):
    from rfviz.lab import LabReport
    from rfviz.plugin_process import answer_json

    grid, wrong = np.zeros((2, 3)), np.zeros((5, 5))
    report = LabReport("x", "x", {}, "softmax", 2, 100, 0, 0.01, np.array([0.5, 1.0]), np.array([0.0, 1.0, 2.0]),
                       wrong, grid, grid, grid.astype(bool), grid.astype(bool), grid, "monte carlo")
    plugin = tmp_path / "forged.py"
    plugin.write_text(textwrap.dedent(FORGED_REPORT.format(answer=answer_json(report))))
    _refused(capsys, ["check", str(plugin), "--json"], "bias_z has shape (5, 5)", seconds=120)


# ------------------------------------------------------------------------------------ .npy headers
def test_an_npy_over_the_number_cap_is_refused_from_its_header(tmp_path, capsys):
    path = tmp_path / "big.npy"
    np.save(path, np.zeros((200_000, 260), dtype=np.int8))  # 52·10⁶ numbers in 50 MiB: rows and columns in range
    _refused(capsys, ["gram", "--data", str(path), "trig"], "4000000 numbers", "header", seconds=10)


# ------------------------------------------------------------------------------------ sweep files
def test_sweep_rows_of_an_upper_case_parquet_suffix(tmp_path):
    res = rfviz.sweep("trig", tmp_path / "U.PARQUET", grid={"r": [0.5, 1.0]}, trials=50, d=2)
    rows = res.rows()
    assert len(rows) == 2 and list(rows["r"]) == [0.5, 1.0]


def test_sweep_rows_of_another_suffix_is_a_parameter_error(tmp_path):
    from rfviz.compute.sweep_files import read_rows

    (tmp_path / "x.txt").write_text("a\n")
    with pytest.raises(ParameterError, match=r"\.csv or \.parquet"):
        read_rows(tmp_path / "x.txt")


MAKE_COMPLETE = textwrap.dedent("""
    import json, sys
    import numpy as np, pyarrow as pa, pyarrow.parquet as pq
    out = sys.argv[1]
    m = json.load(open(out + ".manifest.json"))
    axes = m["spec"]["grid"]
    shape = [len(a["values"]) for a in axes]
    n = int(np.prod(shape))
    idx = np.unravel_index(np.arange(n), shape)
    one = np.ones(n)
    cols = {"point": pa.array(np.arange(n, dtype=np.int64)), "estimator": pa.array(["trig"] * n),
            "kernel_value": one, "mse": one, "mc_mse": one, "stderr": one, "z": 0 * one, "log10_mse": 0 * one,
            "log10_mc_mse": 0 * one, "mc_mean": one, "top_share": 0.01 * one, "reliable": pa.array(np.ones(n, bool)),
            "warning": pa.nulls(n, pa.string()), "disagrees": pa.array(np.zeros(n, bool)),
            "trials": pa.array(np.full(n, m["spec"]["trials"], np.int64)),
            "seed": pa.array(np.full(n, m["spec"]["seed"], np.int64)), "device": pa.array([m["spec"]["device"]] * n),
            "backend": pa.array(["local"] * n), "seconds": 0.001 * one}
    for a, i in zip(axes, idx):
        cols[a["name"]] = pa.array(np.asarray(a["values"], dtype=float)[i])
    pq.write_table(pa.table({c: cols[c] for c in m["columns"]}), out, row_group_size=1 << 20)
    m.update(status="complete", parts=[], done_points=n)
    json.dump(m, open(out + ".manifest.json", "w"))
""")


@pytest.mark.slow
def test_resuming_a_complete_parquet_sweep_reads_it_in_bounded_batches(tmp_path):
    """A complete sweep of 400 000 rows (the hostile case had 4·10⁶; the same code path, 10× faster) resumes within
    the budget: read whole and turned into Python rows it grew by well over 512 MiB."""
    out = tmp_path / "big.parquet"
    argv = ["sweep", "trig", "d=4", "--grid", "theta=0:3:400", "r=0.5:1:1000", "--trials", "100", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = spawn([sys.executable, "-m", "rfviz", *argv], env=env)  # its own group, killed with the test
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "big.parquet.manifest.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        stop(proc)
    subprocess.run([sys.executable, "-c", MAKE_COMPLETE, str(out)], check=True, timeout=120, env=env)
    code, grew, err = _peak([*argv, "--resume"], timeout=600)
    assert code == 0, err[-500:]
    assert grew < 256 * MIB, f"peak grew by {grew / MIB:.0f} MiB"


# ------------------------------------------------------------------------------------ rank-estimators
@pytest.mark.parametrize("extra, words", [
    (["--names", "trig", "--device", "bogus"], ("device must be",)),
    (["--names", "trig", "--device", "cuda:99"], ("cuda",)),
    (["--names", "trig,trig"], ("twice",)),
])
def test_rank_estimators_refuses_bad_devices_and_repeated_names_up_front(capsys, extra, words):
    _refused(capsys, ["rank-estimators", "--data", "iris", "--repeats", "2", *extra], *words, seconds=30)


def test_rank_estimators_in_python_refuses_cuda_without_a_gpu():
    from rfviz.compute.ranking import rank_estimators

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    q = np.ones((4, 3)) * 0.1
    with pytest.raises(ParameterError, match="CUDA"):
        rank_estimators(q, q, "gaussian", length=16, names=["trig"], repeats=2, device="cuda")


@pytest.mark.parametrize("kind", ["directory", "device"])
def test_a_data_path_that_is_not_a_file_says_what_it_is(tmp_path, capsys, kind):
    path = tmp_path / "data.npy"
    if kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")  # a link to an endless device: never read
    _refused(capsys, ["gram", "--data", str(path), "trig"],
             "is a directory" if kind == "directory" else "not a regular file", seconds=10)
