"""Plugin code runs in its own process (rfviz.plugin_process): hostile plugins cannot fake, hang or break `check`.

Each case runs ``python -m rfviz check`` as a real subprocess with pipes (as a shell or CI would): a grandchild that
held rfviz's stdout would make ``subprocess.run`` wait for it, so the elapsed time measures what a user waits.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.slow  # every test starts Python subprocesses (interpreter + torch import each)

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SLEEPERS_S = 300
"""How long the hostile plugins' children sleep: the elapsed-time bounds sit well below it and well above what a
loaded 2-core machine needs to start a worker (importing torch) and run a small check, so load cannot fail them."""
FAST = ("--trials", "200", "--theta", "2", "--r", "0.5", "--compare", "", "--no-features")


def _rfviz(*argv: str, timeout: float = 240, env: dict[str, str] | None = None) -> tuple[int, str, str, float]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "rfviz", *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=full_env)
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0


def _plugin(tmp_path: pathlib.Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def _one_line_exit_2(code: int, out: str, err: str) -> None:
    assert code == 2, (code, out, err)
    assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith("error: "), err


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie still answers kill(0): read its state
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_os_exit_at_import_is_exit_2_in_one_line(tmp_path):
    path = _plugin(tmp_path, "quits.py", "import os\nos._exit(0)\n")
    code, out, err, _ = _rfviz("check", path, "--json")
    _one_line_exit_2(code, out, err)
    assert "ended the checking process (exit code 0) during import" in err, err


def test_forked_children_holding_stdout_do_not_outlive_the_check(tmp_path):
    pids = tmp_path / "pids"
    path = _plugin(tmp_path, "forks.py", f"""
        import os, subprocess, time
        from rfviz.estimators.hrf import Trig
        child = os.fork()
        if child == 0:          # a forked copy that sleeps holding fds 1 and 2
            time.sleep({SLEEPERS_S})
            os._exit(0)
        proc = subprocess.Popen(["sleep", "{SLEEPERS_S}"])   # a child process inheriting fds 1 and 2
        with open({str(pids)!r}, "w") as f:
            f.write(f"{{child}} {{proc.pid}}")
        class ForkingTrig(Trig):
            name = "forking_trig"
    """)
    code, out, err, elapsed = _rfviz("check", path, "--json", "--timeout", "150", *FAST, timeout=280)
    assert code in (0, 3), (code, err)
    assert json.loads(out)["estimator"] == "forking_trig"
    assert elapsed < SLEEPERS_S - 30, elapsed  # rfviz did not wait for the sleepers holding its stdout
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), pid


def test_the_group_wait_returns_once_only_zombies_are_left():
    """``_kill_group`` + ``_end_group`` (what ``run_isolated`` does): a group whose members were started in the
    background and whose leader is still unreaped (a zombie keeps ``killpg(pgid, 0)`` answering) is over when the
    wait returns; no member runs then, however slow the machine is to deliver the SIGKILL."""
    from rfviz.plugin_process import _await_group_end, _end_group, _kill_group

    proc = subprocess.Popen(["sh", "-c", f"sleep {SLEEPERS_S} & a=$!; sleep {SLEEPERS_S} & echo $a $!; wait"],
                            stdout=subprocess.PIPE, start_new_session=True, text=True)
    members = [int(p) for p in proc.stdout.readline().split()]
    proc.stdout.close()
    assert all(_alive(p) for p in members)
    assert not _await_group_end(proc.pid, timeout_s=0.2)  # nothing killed yet: the bounded wait gives up
    _kill_group(proc.pid)
    _end_group(proc)
    assert proc.returncode == -9
    assert not [p for p in members if _alive(p)]
    assert _await_group_end(proc.pid, timeout_s=0.2)


def test_forked_child_is_killed_with_the_group_at_the_deadline(tmp_path):
    pids = tmp_path / "pids"
    path = _plugin(tmp_path, "forks_and_hangs.py", f"""
        import os, time
        child = os.fork()
        if child == 0:
            time.sleep({SLEEPERS_S})
            os._exit(0)
        open({str(pids)!r}, "w").write(str(child))
        time.sleep({SLEEPERS_S})
    """)
    code, out, err, elapsed = _rfviz("check", path, "--timeout", "3", timeout=280)
    _one_line_exit_2(code, out, err)
    assert "did not finish within 3 s during import" in err, err
    assert elapsed < SLEEPERS_S - 30, elapsed  # killed at the deadline (the worker's own start may be slow)
    assert not _alive(int(pids.read_text()))


def test_raw_writes_to_fd_1_inside_the_closed_form_keep_json_valid(tmp_path):
    path = _plugin(tmp_path, "writes.py", """
        import os
        from rfviz.estimators.hrf import Trig
        os.write(1, b"junk at import")
        class WritingTrig(Trig):
            name = "writing_trig"
            def _log_mse(self, s):
                os.write(1, b"junk")
                os.write(2, b"more junk")
                print("printed junk")
                return super()._log_mse(s)
    """)
    code, out, err, _ = _rfviz("check", path, "--json", *FAST)
    assert code in (0, 3), (code, err)
    report = json.loads(out)
    assert report["estimator"] == "writing_trig" and report["closed_form"] is not None
    assert "junk" not in out + err


def test_infinite_loop_at_import_is_killed_at_the_timeout(tmp_path):
    path = _plugin(tmp_path, "spins.py", "while True:\n    pass\n")
    code, out, err, elapsed = _rfviz("check", path, "--timeout", "2", timeout=280)
    _one_line_exit_2(code, out, err)
    assert "did not finish within 2 s during import" in err, err
    assert elapsed < 200, elapsed  # killed at the deadline, not at the CPU limit ((2 + 120) s × the CPUs)


def test_memory_bomb_is_refused_by_the_address_space_limit(tmp_path):
    path = _plugin(tmp_path, "bomb.py", "hog = b'x' * (3 * 2**30)\n")
    code, out, err, _ = _rfviz("check", path, env={"RFVIZ_PLUGIN_MEMORY": "2GiB"})
    _one_line_exit_2(code, out, err)
    assert "MemoryError" in err, err


def test_cpu_time_limit_kills_a_spinning_plugin(tmp_path):
    path = _plugin(tmp_path, "spins_cpu.py", "while True:\n    pass\n")
    code, out, err, _ = _rfviz("check", path, "--timeout", "60", env={"RFVIZ_PLUGIN_CPU_SECONDS": "1"})
    _one_line_exit_2(code, out, err)
    assert "SIGXCPU" in err or "SIGKILL" in err, err


@pytest.mark.parametrize("value", ["lots", "0", "-3"])
def test_bad_limits_are_refused_naming_the_variable(value):
    from rfviz.params import ParameterError
    from rfviz.plugin_process import PluginLimits

    with pytest.raises(ParameterError, match="RFVIZ_PLUGIN_CPU_SECONDS"):
        PluginLimits.from_env({"RFVIZ_PLUGIN_CPU_SECONDS": value})
    with pytest.raises(ParameterError, match="RFVIZ_PLUGIN_MEMORY"):
        PluginLimits.from_env({"RFVIZ_PLUGIN_MEMORY": value})
    limits = PluginLimits.from_env({"RFVIZ_PLUGIN_MEMORY": "unlimited", "RFVIZ_PLUGIN_CPU_SECONDS": "7"})
    assert limits.memory_bytes is None and limits.cpu_s == 7


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "expected"), [("tempered_positive.py", 0), ("shared_omega_hybrid.py", 1)])
def test_the_examples_keep_their_verdicts_in_a_plugin_process(spec, expected):
    code, out, err, _ = _rfviz("check", str(EXAMPLES / spec), "--json", timeout=300)
    assert code == expected, (code, err)
    assert json.loads(out)["exit_code"] == expected


def test_discovery_runs_each_plugin_in_its_own_process(tmp_path):
    from rfviz.plugin_process import discover_isolated

    quits = _plugin(tmp_path, "quits.py", "import os\nos._exit(3)\n")
    before = set(sys.modules)  # other tests of this process may have loaded the example in-process on purpose
    found, errors = discover_isolated([str(EXAMPLES / "tempered_positive.py"), quits])
    assert list(found) == ["tempered_positive"]
    info = found["tempered_positive"]
    assert info.source.endswith("tempered_positive.py:TemperedPositive") and any(p.name == "m" for p in info.spec)
    assert len(errors) == 1 and "exit code 3" in errors[0]
    assert not [m for m in set(sys.modules) - before if "tempered_positive" in m]  # nothing was imported here


@pytest.mark.slow
def test_the_lab_page_loads_and_checks_plugins_in_plugin_processes(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from app_pages import BY_PATH

    quits = _plugin(tmp_path, "quits_in_app.py", "import os\nos._exit(0)\n")
    monkeypatch.setenv("RFVIZ_PLUGINS", f"{EXAMPLES / 'tempered_positive.py'},{quits}")
    before = set(sys.modules)  # other tests of this process may have loaded the example in-process on purpose
    at = AppTest.from_file(str(BY_PATH["estimator_lab"].file), default_timeout=240)
    at.query_params.update({"trials": "400", "n_theta": "3", "r": "0.5,1"})
    at.run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("ended the checking process (exit code 0) during import" in e for e in errors), errors
    assert "tempered_positive (plugin)" in at.selectbox(key="estimator_lab.est").options
    at.button(key="estimator_lab.run").click().run()
    assert not at.exception
    shown = [m.value for m in [*at.success, *at.warning, *at.error]]
    assert any("CLI exit code" in m for m in shown), shown
    assert not [m for m in set(sys.modules) - before if "tempered_positive" in m]  # the server never imported it


def test_the_python_api_checks_plugin_specs_in_a_plugin_process(tmp_path):
    import rfviz.api
    from rfviz.plugins import PluginError

    quits = _plugin(tmp_path, "quits_in_api.py", "import os\nos._exit(0)\n")
    with pytest.raises(PluginError, match=r"ended the checking process \(exit code 0\) during import"):
        rfviz.api.check(quits)  # before: this ended the caller's own Python process
