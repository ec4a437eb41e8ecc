"""Issue 29's hostile cases (items 2 and 5): sizes inside the declared ranges costed before the work, files that
are not what their name says, byte-order marks, an empty --memory-budget, Ctrl-C on every command, --version and
the usage line's program name. Each answers in one line (exit 2, or 130 for Ctrl-C) or a page message."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from proc_helpers import PRINT_PEAK_KIB, reap

from rfviz import data
from rfviz.cli import main, program_name
from rfviz.params import ParameterError, server_budget_scope


def _rfviz(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rfviz", *args], capture_output=True, text=True, timeout=timeout)


def _one_line_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for w in words:
        assert w in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------ item 2: costed sizes
@pytest.mark.integration  # starts the CLI in a subprocess
@pytest.mark.parametrize(("param", "words"), [("d=12000", "GiB of memory"), ("points=10000000", "GiB of memory"),
                                              ("d=6000", "lower d or points")])
def test_gram_clusters_sizes_are_refused_before_the_work(param: str, words: str) -> None:
    started = time.perf_counter()
    _one_line_error(_rfviz("gram", "trig", "--data", "clusters", "--data-param", param), "clusters", words)
    assert time.perf_counter() - started < 60  # refused up front, not after building 5 GiB


def test_clusters_cost_is_refused_on_the_server_and_absurd_d_is_a_parameter_error() -> None:
    with server_budget_scope(), pytest.raises(ParameterError, match=r"would take|of memory"):
        data.hrf_clusters(points=50, d=6000)
    with pytest.raises(ParameterError, match=r"d must be an integer in \[1, "):
        data.hrf_clusters(points=50, d=10**308)
    with pytest.raises(ParameterError, match="points"):
        data.hrf_clusters(points=0, d=4)
    assert data.hrf_clusters_cost(1000, 6000).seconds > 20 and data.hrf_clusters_cost(64, 16).seconds < 0.1


def test_clusters_numbers_are_unchanged_by_drawing_one_rotation_at_a_time() -> None:
    from scipy.stats import ortho_group

    rng = np.random.default_rng(3)
    x0, y0 = rng.standard_normal(5), rng.standard_normal(5)
    rot = [ortho_group.rvs(5, random_state=rng) for _ in range(4)]
    s = np.where(rng.random(5) < 0.5, -1.0, 1.0)
    key_sign = -s
    key_sign[:2] = s[:2]
    xs, ys = data.sign_matched_centres(5, 2, np.random.default_rng(3))
    np.testing.assert_array_equal(xs, np.stack([np.abs(rot[0] @ x0), np.abs(rot[1] @ x0)]) * s)
    np.testing.assert_array_equal(ys, np.stack([np.abs(rot[2] @ y0), np.abs(rot[3] @ y0)]) * key_sign)


def _peak_mib(code: str) -> float:
    """Peak resident memory (MiB) of a fresh Python running ``code`` (after importing rfviz.data)."""
    proc = subprocess.run([sys.executable, "-c", "import rfviz.data as data\n" + code + "\n" + PRINT_PEAK_KIB],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.split()[-1]) / 1024


@pytest.mark.integration  # starts the CLI in a subprocess
def test_a_huge_single_line_csv_is_refused_before_converting_it(tmp_path) -> None:
    path = tmp_path / "line.csv"
    path.write_text(",".join(["1.5"] * 12_000_000) + "\n")  # 48 MB, one line: once 2.44 GB on the server
    with pytest.raises(ParameterError, match="line 1 is longer than"):
        data.read_array(path.read_bytes(), filename="line.csv")
    code = (f"raw = open({str(path)!r}, 'rb').read()\ntry:\n    data.read_array(raw, filename='x.csv')\n"
            "except data.ParameterError:\n    pass")
    baseline = _peak_mib("raw = open(__import__('sys').executable, 'rb').read()")
    assert _peak_mib(code) - baseline < 150  # the 48 MB file itself, not its 12 million fields


def test_csv_field_count_is_checked_before_splitting() -> None:
    wide = (" ".join(["1"] * (data.MAX_DIM + 1)) + "\n").encode()
    with pytest.raises(ParameterError, match=f"at most {data.MAX_DIM} columns"):
        data.read_array(wide, filename="wide.txt")
    ok = ",".join(["1"] * data.MAX_DIM) + "\n"
    assert data.read_array((ok * 2).encode(), filename="ok.csv").shape == (2, data.MAX_DIM)
    with pytest.raises(ParameterError, match="line 2 is not text"):
        data.read_array(b"1,2\n\xff\xfe,3\n", filename="bin.csv")


@pytest.mark.integration  # starts the CLI in a subprocess
def test_check_and_psi_at_d_20000_stay_small() -> None:
    code = "from rfviz.cli import main\nimport sys\nassert main(sys.argv[1:]) != 2"  # 1, 3: verdicts
    for args in (["check", "trig", "--d", "20000", "--trials", "200", "--pairs", "canonical,random", "--r", "1",
                  "--theta", "2"], ["psi", "d=20000"]):
        proc = subprocess.run([sys.executable, "-c", code + "\nprint('peak')\n" + PRINT_PEAK_KIB, *args],
                              capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        peak_mib = int(proc.stdout.rsplit("peak", 1)[1]) / 1024
        assert peak_mib < 1200, (args, peak_mib)  # was past 3 GiB (a d × d matrix of 3 GiB)


@pytest.mark.integration  # starts the CLI in a subprocess
def test_check_grid_of_a_hundred_million_pairs_is_refused_up_front() -> None:
    r = ",".join(f"{0.1 + i * 1e-4:.4f}" for i in range(10_000))
    started = time.perf_counter()
    _one_line_error(_rfviz("check", "trig", "--r", r, "--theta", "10000"), "100000000 pairs", "at most 10000")
    assert time.perf_counter() - started < 60  # was 50 s and 2.6 GB before a torch allocation error


# ------------------------------------------------------------------------------ item 5: files and signals
@pytest.mark.integration  # starts the CLI in a subprocess
def test_an_npz_renamed_npy_is_refused_in_one_line(tmp_path) -> None:
    np.savez(tmp_path / "a.npz", a=np.ones((4, 3)))
    (tmp_path / "a.npy").write_bytes((tmp_path / "a.npz").read_bytes())
    (tmp_path / "b.npy").write_bytes(b"1,2\n3,4\n")  # text named .npy
    (tmp_path / "c.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")  # a damaged header
    for name, words in (("a.npy", ".npz archive"), ("b.npy", "not a .npy array"), ("c.npy", "not a numeric .npy"),
                        ("a.npz", "zip archive")):
        with pytest.raises(ParameterError) as err:
            data.read_array(tmp_path / name)
        assert words in str(err.value)
        with pytest.raises(ParameterError):
            data.read_array((tmp_path / name).read_bytes(), filename=name)  # the Your-data page's upload
    _one_line_error(_rfviz("gram", "trig", "--data", str(tmp_path / "a.npy")), ".npz archive")


def test_a_csv_with_a_byte_order_mark_keeps_its_first_row(tmp_path) -> None:
    for text, rows in (("1,2\n3,4\n", 2), ("x,y\n1,2\n3,4\n", 2)):
        path = tmp_path / "bom.csv"
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        a = data.read_array(path)
        assert a.shape == (rows, 2) and a[0].tolist() == [1.0, 2.0]


def test_an_empty_memory_budget_is_refused(capsys) -> None:
    assert main(["estimators", "--memory-budget", ""]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--memory-budget must be a size" in err


@pytest.mark.integration  # starts the CLI in a subprocess
def test_version_and_the_usage_line_name_the_invoked_program() -> None:
    from rfviz._version import __version__

    proc = _rfviz("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"rfviz {__version__}"
    assert program_name("/x/.venv/bin/rfviz") == "rfviz"
    assert program_name("/x/rfviz/__main__.py") == "python -m rfviz"
    assert "usage: python -m rfviz" in _rfviz("mse", "--help").stdout
    script = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = '/venv/bin/rfviz'; "
                             "from rfviz.cli import main; raise SystemExit(main(['mse']))"],
                            capture_output=True, text=True, timeout=120)
    assert script.returncode == 2 and script.stderr.startswith("error: rfviz mse:"), script.stderr


def _interrupt(args: list[str], after: float) -> subprocess.CompletedProcess:
    """Run ``python -m rfviz ARGS`` with SIGINT at its default (a terminal's Ctrl-C), then send SIGINT."""
    proc = subprocess.Popen([sys.executable, "-m", "rfviz", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(after)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        reap(proc)  # a failed wait leaves nothing running
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.mark.slow
@pytest.mark.parametrize("library", ["libtorch_cpu", "libtorch_python"])
def test_ctrl_c_while_the_command_line_is_still_importing_is_one_line(library: str) -> None:
    """``python -m rfviz`` imports torch and every command first (about 2 s of CPU, many more under load): a Ctrl-C
    then ended in a traceback and exit -2, or was swallowed by the import machinery and the command ran to its end
    (found with four busy processes beside the suite). The Ctrl-C is sent as soon as torch's ``library`` is mapped
    into the process: inside the imports, whatever the load."""
    proc = subprocess.Popen([sys.executable, "-m", "rfviz", "mse", "trig", "m=64", "d=16", "--trials", "50000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if library in pathlib.Path(f"/proc/{proc.pid}/maps").read_text(errors="replace"):
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        reap(proc)  # a failed wait leaves nothing running
    assert proc.returncode == 130, (proc.returncode, err[-500:])
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("args", [["check", "trig", "--trials", "5000000"],
                                  ["mse", "trig", "m=64", "d=16", "--trials", "50000000"],
                                  ["gram", "trig", "--data", "digits", "--repeats", "20000",
                                   "--memory-budget", "2GiB"]])
def test_ctrl_c_exits_130_on_every_command(args: list[str]) -> None:
    proc = _interrupt(args, after=6.0)
    assert proc.returncode == 130, (proc.returncode, proc.stderr[-500:])
    assert "interrupted" in proc.stderr and "Traceback" not in proc.stderr


def test_a_ctrl_c_reported_as_a_failure_by_an_inner_layer_still_exits_130(monkeypatch, capsys) -> None:
    from rfviz.cli import estimators
    from rfviz.plugins import PluginError

    def swallowing(args):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except BaseException as exc:  # e.g. plugins.protocol_guard turns it into a PluginError
            raise PluginError(f"check raised {type(exc).__name__}") from exc
        return 0

    monkeypatch.setattr(estimators, "run", swallowing)
    assert main(["estimators"]) == 130
    assert capsys.readouterr().err.strip() == "interrupted"

