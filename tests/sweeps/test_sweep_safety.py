"""Sweep internals behind issues 20 and 24: streamed (point, block) tasks, batched durable writes, the final file in
point order by streaming merges, resume of damaged Parquet parts, the median-based ETA, and safe figure outputs."""

from __future__ import annotations

import os

import numpy as np
import pytest
from proc_helpers import PRINT_PEAK_KIB
from sweep_helpers import NONDETERMINISTIC, rows

from rfviz import ParameterError, get_estimator
from rfviz.cli import main
from rfviz.fileio import atomic_write, check_output
from rfviz.sweeps import SweepSpec, make_backend, parse_grid, run_sweep
from rfviz.sweeps import store as store_mod
from rfviz.sweeps.progress import Progress
from rfviz.sweeps.runner import todo_points
from rfviz.sweeps.store import ResultStore
from rfviz.sweeps.tasks import COL, TASK_CHUNK, iter_tasks


def spec_of(n_r: int = 3, trials: int = 1024, block: int = 512, **kw) -> SweepSpec:
    grid = parse_grid([f"r=0.3:0.6:{n_r}", "m=4,8"], get_estimator("positive"), {"d": "8"})
    return SweepSpec("positive", {"d": "8", "theta": "1.0"}, grid, trials, 5, block, "cpu", **kw)


# ----------------------------------------------------------------------------- streamed tasks
def test_iter_tasks_is_lazy_chunked_and_in_order() -> None:
    spec = spec_of(n_r=3, trials=4096, block=512)  # 6 points × 8 blocks
    chunks = list(iter_tasks(spec, [1, 4, 5], chunk=5))
    assert all(c.dtype == np.int64 and c.ndim == 2 and c.shape[1] == 2 and 1 <= len(c) <= 5 for c in chunks)
    pairs = np.concatenate(chunks).tolist()
    assert pairs == [[p, b] for p in (1, 4, 5) for b in range(8)]
    big = iter_tasks(spec, iter(range(10**9)))  # a billion points: nothing is built before it is asked for
    first = next(big)
    assert len(first) == TASK_CHUNK and first[0].tolist() == [0, 0]
    with pytest.raises(ParameterError, match="chunk"):
        next(iter_tasks(spec, [0], chunk=TASK_CHUNK + 1))


def test_todo_points_skips_done_points_lazily() -> None:
    done = np.zeros(200_000, dtype=bool)
    done[::2] = True
    it = todo_points(done)
    assert [next(it) for _ in range(3)] == [1, 3, 5]
    assert sum(1 for _ in todo_points(done)) == 100_000


@pytest.mark.slow
def test_local_backend_consumes_tasks_lazily() -> None:
    spec = spec_of()
    pulled = []

    def source():
        for chunk in iter_tasks(spec, range(spec.n_points), chunk=2):
            pulled.append(len(chunk))
            yield chunk

    backend = make_backend("local")
    results = backend.run(spec, source())
    first = next(results)
    assert first.shape == (1, len(COL)) and len(pulled) == 1  # one chunk taken, not the whole grid
    rest = list(results)
    assert 1 + len(rest) == spec.n_tasks and backend.stats.tasks == spec.n_tasks


# ----------------------------------------------------------------------------- batched durable writes
@pytest.mark.slow
def test_rows_are_flushed_in_batches(tmp_path, monkeypatch) -> None:
    spec = spec_of(n_r=5)  # 10 points
    syncs = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (syncs.append(fd), real(fd))[1])
    run_sweep(spec, str(tmp_path / "a.csv"), make_backend("local"), progress=False, flush_points=4, flush_s=1e9)
    data_syncs = len(syncs)
    syncs.clear()
    run_sweep(spec, str(tmp_path / "b.csv"), make_backend("local"), progress=False, flush_points=1, flush_s=1e9)
    assert data_syncs < len(syncs) - 6  # 3 flushes of 4, 4, 2 rows instead of 10
    assert rows(tmp_path / "a.csv") == rows(tmp_path / "b.csv")
    with pytest.raises(ParameterError, match="flush_points"):
        run_sweep(spec, str(tmp_path / "c.csv"), make_backend("local"), progress=False, flush_points=0)


class OutOfOrder:
    """A backend that returns the tasks in reverse order of points (as a Ray cluster might)."""

    name = "local"

    def __init__(self) -> None:
        self.inner = make_backend("local")
        self.stats = self.inner.stats

    def run(self, spec, tasks):
        chunks = list(tasks)
        for chunk in reversed(chunks):
            yield from self.inner.run(spec, iter([chunk[::-1]]))


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_final_file_is_in_point_order_by_streaming_merges(tmp_path, monkeypatch, suffix) -> None:
    spec = spec_of(n_r=6)  # 12 points
    run_sweep(spec, str(tmp_path / f"ref.{suffix}"), make_backend("local"), progress=False)
    monkeypatch.setattr(store_mod, "RUN_ROWS", 5)  # several sorted runs for the CSV external merge
    monkeypatch.setattr(store_mod, "MERGE_BATCH", 3)
    run_sweep(spec, str(tmp_path / f"rev.{suffix}"), OutOfOrder(), progress=False, flush_points=2, flush_s=1e9)
    if suffix == "csv":
        assert rows(tmp_path / "rev.csv") == rows(tmp_path / "ref.csv")
    else:
        import pyarrow.parquet as pq

        a, b = (pq.read_table(tmp_path / f"{n}.parquet").drop_columns(list(NONDETERMINISTIC)) for n in ("ref", "rev"))
        assert a.equals(b) and a.column("point").to_pylist() == list(range(12))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".rfviz-tmp") or p.name.endswith(".parts")]


@pytest.mark.slow
def test_parquet_resume_drops_duplicate_and_broken_rows(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    spec = spec_of(n_r=3)
    full, out = tmp_path / "full.parquet", tmp_path / "p.parquet"
    run_sweep(spec, str(full), make_backend("local"), progress=False)
    seen = []

    def stop(row):
        seen.append(row)
        if len(seen) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, str(out), make_backend("local"), progress=False, on_point=stop, flush_points=2)
    store = ResultStore(out, spec, resume=True)
    parts_dir = out.with_name("p.parquet.parts")
    first = parts_dir / store.manifest["parts"][0]
    table = pq.read_table(first)
    bad = table.slice(0, 1).set_column(table.column_names.index("trials"), "trials", pa.array([7]))
    pq.write_table(pa.concat_tables([table, table.slice(1, 1), bad]), first)  # a duplicate and a foreign row
    report = run_sweep(spec, str(out), make_backend("local"), progress=False, resume=True)
    assert report.status == "complete" and len(report.notes) == 2
    a, b = (pq.read_table(p).drop_columns(list(NONDETERMINISTIC)) for p in (full, out))
    assert a.equals(b)


@pytest.mark.slow
def test_store_refuses_foreign_files_in_the_parts_directory(tmp_path) -> None:
    spec = spec_of()
    out = tmp_path / "x.parquet"
    run_sweep(spec, str(out), make_backend("local"), progress=False)
    parts = tmp_path / "x.parquet.parts"
    parts.mkdir()
    (parts / "mine.txt").write_text("not a part")
    with pytest.raises(ParameterError, match="did not write"):
        run_sweep(spec, str(out), make_backend("local"), progress=False, overwrite=True)
    assert (parts / "mine.txt").read_text() == "not a part" and out.exists()


# ----------------------------------------------------------------------------- ETA
def test_eta_is_the_median_task_time_early_on() -> None:
    bar = Progress(1000, 0, 100, enabled=False, tasks_per_point=1, slots=2)
    assert bar.eta() == float("inf")
    bar.update(points=10, trials=1000, task_seconds=[30.0] + [0.01] * 9)  # one cold first task
    assert bar.eta() == pytest.approx(990 * 0.01 / 2)
    bar.started -= 10  # later on: the throughput of the recent window (every overhead included)
    bar._window[0] = (bar._window[0][0] - 10, 0)
    assert 990 * 100 / (1000 / 9.5) < bar.eta() < 990 * 100 / (1000 / 10.5)  # 99 000 trials left at ~100/s


# ----------------------------------------------------------------------------- safe outputs (figure and the API)
def test_check_output_rules(tmp_path) -> None:
    (tmp_path / "d.csv").mkdir()
    (tmp_path / "f.csv").write_text("x")
    (tmp_path / "l.csv").symlink_to(tmp_path / "f.csv")
    for name, kw, words in (("d.csv", {"overwrite": True}, "directory"), ("f.csv", {}, "already exists"),
                            ("f.csv", {"overwrite": True}, "not written by rfviz"),
                            ("l.csv", {"overwrite": True, "ours": lambda p: True}, "symbolic link"),
                            ("no/x.csv", {}, "does not exist")):
        with pytest.raises(ParameterError, match=words):
            check_output(tmp_path / name, **kw)
    assert check_output(tmp_path / "f.csv", overwrite=True, ours=lambda p: True) == tmp_path / "f.csv"
    atomic_write(tmp_path / "f.csv", "y")
    assert (tmp_path / "f.csv").read_text() == "y" and (tmp_path / "l.csv").is_symlink()


@pytest.mark.slow
def test_figure_replaces_only_its_own_files(tmp_path, capsys) -> None:
    name = "os-vstar-curves"
    data = tmp_path / "fig.csv"
    data.write_text("my,own\n1,2\n")
    for extra in ([], ["--overwrite"]):
        assert main(["figure", name, "--data", str(data), *extra]) == 2
        assert "error: " in capsys.readouterr().err and data.read_text() == "my,own\n1,2\n"
    data.unlink()
    assert main(["figure", name, "--data", str(data)]) == 0
    assert main(["figure", name, "--data", str(data)]) == 2  # exists: needs --overwrite
    assert main(["figure", name, "--data", str(data), "--overwrite"]) == 0  # rfviz's own CSV is replaced
    (tmp_path / "dir.html").mkdir()
    assert main(["figure", name, "--out", str(tmp_path / "dir.html"), "--overwrite"]) == 2
    (tmp_path / "link.csv").symlink_to(data)
    assert main(["figure", name, "--data", str(tmp_path / "link.csv"), "--overwrite"]) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".rfviz-tmp")]


def test_validating_ten_million_points_is_cheap() -> None:
    import time

    est = get_estimator("positive")
    t0 = time.perf_counter()
    grid = parse_grid(["r=0:2:100", "theta=0:3.14:1000", "m=1:100:100"], est, {"d": "8"})
    spec = SweepSpec("positive", {"d": "8"}, grid, 2, 0, 2, "cpu")
    assert spec.n_points == 10**7 and time.perf_counter() - t0 < 20  # ~0.1 s idle: 100 + 1000 checks, not 10⁷
    bad = parse_grid(["theta=0,0.5", "d=2,1", "m=4,8"], est, {})
    with pytest.raises(ParameterError, match=r"d=1.*theta=0\.5"):  # the last combination is the invalid one
        SweepSpec("positive", {}, bad, 2, 0, 2, "cpu")


@pytest.mark.slow
def test_a_numeric_failure_in_a_task_gives_a_null_unreliable_row(tmp_path, monkeypatch) -> None:
    import rfviz.sweeps.tasks as tasks_mod

    real = tasks_mod.monte_carlo

    def flaky(est, x, y, **kw):  # point 1's blocks overflow inside the estimator
        if kw["seed"] in {tasks_mod.task_seed(5, 1, b) for b in range(2)}:
            raise FloatingPointError("overflow encountered in exp")
        return real(est, x, y, **kw)

    monkeypatch.setattr(tasks_mod, "monte_carlo", flaky)
    spec = spec_of(n_r=2)
    report = run_sweep(spec, str(tmp_path / "f.csv"), make_backend("local"), progress=False)
    assert report.status == "complete"
    got = rows(tmp_path / "f.csv")
    assert [r["point"] for r in got] == ["0", "1", "2", "3"]
    assert got[1]["mc_mse"] == got[1]["stderr"] == got[1]["z"] == got[1]["mc_mean"] == ""
    assert got[1]["reliable"] == "False" and "Monte Carlo failed" in got[1]["warning"]
    assert got[1]["mse"] != "" and got[0]["mc_mse"] != ""  # the closed form and the other points are kept


@pytest.mark.slow
def test_a_failing_closed_form_is_a_note_not_a_crash(tmp_path, monkeypatch) -> None:
    cls = get_estimator("positive")

    def broken(self, x, y, d=None):
        raise OverflowError("math range error")

    monkeypatch.setattr(cls, "log_mse", broken)
    report = run_sweep(spec_of(n_r=2), str(tmp_path / "c.csv"), make_backend("local"), progress=False)
    got = rows(tmp_path / "c.csv")
    assert report.status == "complete" and len(got) == 4
    assert all(r["mse"] == "" and r["z"] == "" and "closed-form MSE failed" in r["warning"] for r in got)
    assert all(r["mc_mse"] != "" for r in got)


@pytest.mark.slow
def test_parquet_part_symlink_or_garbage_is_refused(tmp_path) -> None:
    spec = spec_of(n_r=3)
    out = tmp_path / "p.parquet"

    def stop(row):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, str(out), make_backend("local"), progress=False, on_point=stop, flush_points=1)
    part = next((tmp_path / "p.parquet.parts").glob("part-*.parquet"))
    secret = tmp_path / "secret.parquet"
    part.rename(secret)
    part.symlink_to(secret)
    with pytest.raises(ParameterError, match="symbolic link"):
        run_sweep(spec, str(out), make_backend("local"), progress=False, resume=True)
    part.unlink()
    part.write_bytes(b"PAR1 not really")
    with pytest.raises(ParameterError, match="not a readable Parquet file"):
        run_sweep(spec, str(out), make_backend("local"), progress=False, resume=True)
    assert secret.exists()


# ------------------------------------------------------------------ issue 29: locks, bounds, leftovers, order
def _cli_sweep(out, *extra: str) -> list[str]:
    return ["sweep", "positive", "d=8", "theta=1.0", "--grid", "r=0.3:0.6:3", "m=4,8", "--trials", "256",
            "--block-trials", "128", "--out", str(out), "--quiet", *extra]


@pytest.mark.integration  # a second writer in a subprocess
def test_a_second_writer_of_the_same_out_is_refused_in_one_line(tmp_path, capsys) -> None:
    out = tmp_path / "a.csv"
    assert main(_cli_sweep(out)) == 0
    before = out.read_bytes()
    with store_mod.sweep_lock(out) as lock:  # another process's lock: flock conflicts per open file description
        import subprocess
        import sys

        for flag in ("--overwrite", "--resume"):
            proc = subprocess.run([sys.executable, "-m", "rfviz", *_cli_sweep(out, flag)], capture_output=True,
                                  text=True, timeout=120)
            assert proc.returncode == 2, proc.stderr
            assert proc.stderr.count("\n") == 1 and "being written by another sweep" in proc.stderr
            assert f"process {os.getpid()}" in proc.stderr
        assert lock.exists()
    assert out.read_bytes() == before  # nothing mixed in
    assert not store_mod.lock_path(out).exists()  # the lock file goes with the run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.csv.manifest.json"]


def test_the_lock_is_reentrant_and_refuses_what_is_not_a_regular_file(tmp_path) -> None:
    out = tmp_path / "a.csv"
    with store_mod.sweep_lock(out), store_mod.sweep_lock(out):
        pass
    assert not store_mod.lock_path(out).exists()
    store_mod.lock_path(out).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ParameterError, match="symbolic link"):
        with store_mod.sweep_lock(out):
            pass
    assert not (tmp_path / "elsewhere").exists()


def test_a_stale_lock_file_of_a_killed_sweep_is_reused(tmp_path) -> None:
    out = tmp_path / "a.csv"
    lock = store_mod.lock_path(out)
    lock.write_text("rfviz sweep lock pid=999999\n")  # left by a SIGKILLed run: no process holds it
    assert main(_cli_sweep(out)) == 0
    assert not lock.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.csv.manifest.json"]


def test_the_lock_file_says_whose_it_is(tmp_path) -> None:
    out = tmp_path / "a.csv"
    with store_mod.sweep_lock(out) as lock:
        assert lock.read_text() == f"rfviz sweep lock pid={os.getpid()}\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv.lock"]  # no temporary file left beside it


def _refused_in_one_line(out, capsys) -> str:
    assert main(_cli_sweep(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("text", ["my notes about a.csv\n", "", "12345\n", "rfviz sweep lock pid=\n"])
def test_a_users_own_lock_named_file_is_left_untouched(tmp_path, capsys, text) -> None:
    """``a.csv.lock`` the user already had (notes, an empty file, a bare number): refused in one line, exit 2; its
    contents, inode and modification time are as they were, and it is still there after the refusal."""
    out = tmp_path / "a.csv"
    lock = store_mod.lock_path(out)
    lock.write_text(text)
    before = os.stat(lock)
    err = _refused_in_one_line(out, capsys)
    assert "a.csv.lock exists and was not made by rfviz" in err and "remove or rename it" in err
    after = os.stat(lock)
    assert lock.read_text() == text
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["a.csv.lock"]


def test_a_hard_linked_lock_never_changes_its_target(tmp_path, capsys) -> None:
    """``a.csv.lock`` a hard link to another file — even one that looks like a stale rfviz lock — is refused: the
    target's contents stay (the old lock truncated it and wrote a pid into it) and it is not removed."""
    out = tmp_path / "a.csv"
    target = tmp_path / "precious.txt"
    target.write_text("rfviz sweep lock pid=999999\n")
    os.link(target, store_mod.lock_path(out))
    err = _refused_in_one_line(out, capsys)
    assert "has other hard links" in err
    assert target.read_text() == "rfviz sweep lock pid=999999\n" and os.stat(target).st_nlink == 2
    assert store_mod.lock_path(out).exists()


def test_a_symlinked_lock_is_refused_and_its_target_untouched(tmp_path, capsys) -> None:
    out = tmp_path / "a.csv"
    target = tmp_path / "precious.txt"
    target.write_text("rfviz sweep lock pid=999999\n")
    store_mod.lock_path(out).symlink_to(target)
    err = _refused_in_one_line(out, capsys)
    assert "a.csv.lock (is a symbolic link)" in err
    assert target.read_text() == "rfviz sweep lock pid=999999\n"
    assert store_mod.lock_path(out).is_symlink()


def test_resume_skips_an_over_long_torn_line_without_holding_it(tmp_path, monkeypatch, capsys) -> None:
    """The mechanism of the 4 GiB case below, fast: a 1 KiB bound and a torn line of 8 MiB."""
    out = tmp_path / "a.csv"
    assert main(_cli_sweep(out)) == 0
    full = rows(out)
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:-1]) + b"5," + b"7" * 8 * 2**20)
    monkeypatch.setattr(store_mod, "MAX_ROW_BYTES", 1024)
    longest = []
    real = store_mod.bounded_lines

    def spy(f, limit=None):
        for line in real(f, limit):
            longest.append(0 if line is None else len(line))
            yield line

    monkeypatch.setattr(store_mod, "bounded_lines", spy)
    assert main(_cli_sweep(out, "--resume")) == 0
    assert "longer than 1 KiB" in capsys.readouterr().err
    assert max(longest) <= 1025 and rows(out) == full


@pytest.mark.slow
def test_resume_reads_a_huge_torn_last_line_in_bounded_memory(tmp_path) -> None:
    """A CSV ending in a 4 GiB torn line (sparse: no disk used) is resumed without reading the line whole."""
    import subprocess
    import sys

    out = tmp_path / "a.csv"
    assert main(_cli_sweep(out)) == 0
    lines = out.read_bytes().splitlines(keepends=True)
    with open(out, "wb") as f:
        f.writelines(lines[:-1])
        f.write(b"5,")
        f.truncate(f.tell() + 4 * 2**30)
    code = "import sys; from rfviz.cli import main; c = main(sys.argv[1:])\n" + PRINT_PEAK_KIB
    proc = subprocess.run([sys.executable, "-c", code, *_cli_sweep(out, "--resume")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "longer than 1 MiB" in proc.stderr
    assert int(proc.stdout.split()[-1]) < 1_500_000  # KiB: far below the 4 GiB line
    assert out.stat().st_size < 10**5
    assert [r["point"] for r in rows(out)] == [str(i) for i in range(6)]


def test_a_deeply_nested_or_huge_manifest_is_refused_in_one_line(tmp_path, capsys) -> None:
    out = tmp_path / "a.csv"
    assert main(_cli_sweep(out)) == 0
    manifest = tmp_path / "a.csv.manifest.json"
    manifest.write_text("[" * 100_000 + "]" * 100_000)
    assert main(_cli_sweep(out, "--resume")) == 2
    assert "nested deeper than" in capsys.readouterr().err
    with open(manifest, "wb") as f:
        f.truncate(store_mod.MAX_MANIFEST_BYTES + 1)
    assert main(_cli_sweep(out, "--resume")) == 2
    assert "larger than" in capsys.readouterr().err
    assert store_mod.json_depth(b'{"a": [1, "[[[\\"]"], "b": {}}') == 2


def test_resuming_a_complete_sweep_with_a_deleted_row_gives_point_order(tmp_path) -> None:
    out = tmp_path / "a.csv"
    assert main(_cli_sweep(out)) == 0
    full = rows(out)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:3] + lines[4:]))  # point 2 gone
    assert main(_cli_sweep(out, "--resume")) == 0
    assert rows(out) == full
    assert '"status": "complete"' in (tmp_path / "a.csv.manifest.json").read_text()


def test_validation_happens_before_the_first_file(tmp_path, capsys) -> None:
    out = tmp_path / "a.csv"
    args = _cli_sweep(out)
    args[args.index("--trials") + 1] = "1000000000"
    args[args.index("--block-trials") + 1] = "1000000000"
    assert main(args) == 2
    assert "block_trials" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_disk_full_at_creation_leaves_nothing(tmp_path, monkeypatch) -> None:
    real_open = os.open

    def full_open(path, flags, *a):  # the CSV's header cannot be written: /dev/full's ENOSPC
        if str(path).endswith("a.csv") and flags & os.O_CREAT:
            fd = real_open(path, flags, *a)
            os.close(fd)
            return real_open("/dev/full", os.O_WRONLY)
        return real_open(path, flags, *a)

    monkeypatch.setattr(store_mod.os, "open", full_open)
    with pytest.raises(OSError):
        ResultStore(tmp_path / "a.csv", spec_of())
    assert list(tmp_path.iterdir()) == []


def test_disk_full_or_ctrl_c_during_the_final_merge_leaves_no_temporary_file(tmp_path, monkeypatch) -> None:
    import builtins

    spec = spec_of(trials=256, block=128)
    real_open = builtins.open
    for exc in (OSError(28, "No space left on device"), KeyboardInterrupt()):
        out = tmp_path / f"{type(exc).__name__}.csv"
        store = ResultStore(out, spec, flush_points=1)
        for p in reversed(range(spec.n_points)):  # out of order: the merge writes sorted runs
            store.append(_row_of(spec, p))

        def failing_open(path, mode="r", *a, _exc=exc, **kw):
            f = real_open(path, mode, *a, **kw)
            if "w" in mode and os.path.basename(str(path)).startswith(store_mod.TMP_PREFIX):
                f.close()
                raise _exc
            return f

        monkeypatch.setattr(builtins, "open", failing_open)
        with pytest.raises(type(exc)):
            store.close(complete=True)
        monkeypatch.setattr(builtins, "open", real_open)
        assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(store_mod.TMP_PREFIX)]
        assert len(out.read_text().splitlines()) == spec.n_points + 1  # the rows are all still there


def _row_of(spec: SweepSpec, point: int) -> dict:
    from rfviz.sweeps.tasks import combine, point_row, run_task

    return point_row(spec, combine(np.stack([run_task(spec, point, b) for b in range(spec.n_blocks)])), "local")


def test_disk_full_while_writing_a_parquet_part_leaves_no_temporary_file(tmp_path, monkeypatch) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    spec = spec_of(trials=256, block=128)
    store = ResultStore(tmp_path / "a.parquet", spec, flush_points=1)
    real = pq.write_table

    def full(table, where, *a, **kw):
        real(table, where, *a, **kw)  # a part of it reached the disk, then the disk filled up
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", full)
    with pytest.raises(OSError):
        store.append(_row_of(spec, 0))
    parts = tmp_path / "a.parquet.parts"
    assert not [p.name for p in parts.iterdir() if p.name.startswith(store_mod.TMP_PREFIX)]
