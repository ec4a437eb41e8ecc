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

from rfviz.server.processes import read_line

pytestmark = pytest.mark.slow  # every test starts Python subprocesses (interpreter + torch import each)

ROOT = pathlib.Path(__file__).resolve().parents[2]
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
    members = [int(p) for p in read_line(proc.stdout, seconds=60).split()]  # bounded: never a hang
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


# --------------------------------------------------------------------------- answers that cannot carry code
FORGES_ANSWER = """
    import json, os, pickle, sys
    request = json.load(open(sys.argv[1]))            # the worker's request names the answer file
    class Boom:
        def __reduce__(self):                         # runs wherever this pickle is loaded
            return (os.system, ("echo PWNED; touch {marker}",))
    folder = os.path.dirname(request["answer"])
    for name in (request["answer"], os.path.join(folder, "result.pickle")):
        with open(name, "wb") as f:
            f.write({payload})
    os._exit(0)
"""


@pytest.mark.parametrize("payload", ["pickle.dumps(Boom())", "json.dumps({'format': 'rfviz-plugin-answer/1', "
                                     "'value': {'$': 'os.system', 'v': {}}}).encode()"])
def test_a_plugin_that_writes_its_own_answer_runs_no_code_in_rfviz(tmp_path, payload):
    marker = tmp_path / "marker"
    path = _plugin(tmp_path, "forges.py", FORGES_ANSWER.format(marker=marker, payload=payload))
    code, out, err, _ = _rfviz("check", path, "--json")
    _one_line_exit_2(code, out, err)
    assert "answer is not rfviz's JSON" in err or "unknown value tagged 'os.system'" in err, err
    assert "PWNED" not in out + err and not marker.exists()


def test_the_python_api_caller_stays_alive_and_quiet_when_a_plugin_forges_its_answer(tmp_path, capfd):
    import rfviz.api
    from rfviz.plugins import PluginError

    marker = tmp_path / "marker"
    path = _plugin(tmp_path, "forges_api.py", FORGES_ANSWER.format(marker=marker, payload="pickle.dumps(Boom())"))
    with pytest.raises(PluginError, match="its answer is not rfviz's JSON"):
        rfviz.api.check(path)
    out, err = capfd.readouterr()
    assert out == "" and "PWNED" not in err and not marker.exists()


def test_a_huge_status_file_is_refused_without_reading_it(tmp_path, monkeypatch):
    """A plugin that grows its status file (sparse: 1.5 GiB of size, no disk) is one line naming it; the caller reads
    at most STATUS_MAX_BYTES of it (its peak memory does not move). RLIMIT_FSIZE (1 GiB) would stop this one in the
    worker: it is lifted here to test the parent's own cap."""
    import resource

    import rfviz.plugin_process as pp
    from rfviz.plugins import PluginError

    monkeypatch.setattr(pp, "FILE_MAX_BYTES", None)
    path = _plugin(tmp_path, "grows_status.py", """
        import json, sys, time
        request = json.load(open(sys.argv[1]))
        with open(request["status"], "r+b") as f:
            f.truncate(3 * 2**29)
        time.sleep(60)
    """)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(PluginError, match=r"plugin '.*grows_status.py': its status file is over the 4 KiB rfviz "
                                          r"reads \(1.5 GiB"):
        pp.check_isolated(path, (), {}, [])
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 200 * 2**10  # KiB: < 200 MiB


def test_an_answer_over_its_cap_is_refused_naming_the_plugin(tmp_path, monkeypatch):
    import rfviz.plugin_process as pp
    from rfviz.plugins import PluginError

    monkeypatch.setattr(pp, "RESULT_MAX_BYTES", 2048)  # a lab report is larger than 2 KiB
    with pytest.raises(PluginError, match=r"plugin .*tempered_positive.py.*: its answer file is over the 2 KiB"):
        pp.check_isolated(str(EXAMPLES / "tempered_positive.py"), (), {}, [], trials=200, theta=[1.0], r=[0.5],
                          check_feature_maps=False)


ODD_TYPES = """
    from rfviz.estimators.hrf import Trig
    from rfviz.params import Param

    class Title(str):
        def __reduce__(self):
            return (print, ("PWNED by the title",))
        def __str__(self):
            raise RuntimeError("str() of the title")

    class Default(float):
        def __reduce__(self):
            return (print, ("PWNED by the default",))

    class OddTrig(Trig):
        name = "odd_trig"
        title = Title("Trig, with a str-subclass title")
        spec = Trig.spec + (Param("scale", Default(1.5), "float", "unused", low=0.5, high=2.0),)
"""


def test_str_and_float_subclasses_cross_as_plain_values(tmp_path):
    from rfviz.plugin_process import check_isolated, discover_isolated

    path = _plugin(tmp_path, "odd_types.py", ODD_TYPES)
    found, errors = discover_isolated([path])
    assert not errors, errors
    info = found["odd_trig"]
    assert type(info.title) is str and info.title == "Trig, with a str-subclass title"
    scale = next(p for p in info.spec if p.name == "scale")
    assert type(scale).__name__ == "Param" and type(scale.default) is float and scale.default == 1.5
    report = check_isolated(path, (), {"scale": 1.25}, [], trials=200, theta=[1.0, 2.0], r=[0.5],
                            check_feature_maps=False)
    assert type(report.title) is str and type(report.params["scale"]) is float
    assert report.r.dtype == float and report.bias_z.shape == (1, 2)
    code, out, err, _ = _rfviz("check", path, "--json", *FAST)
    assert code in (0, 3), (code, err)
    assert json.loads(out)["title"] == "Trig, with a str-subclass title" and "PWNED" not in out + err


def test_a_plugin_value_that_is_not_data_is_refused_in_the_worker(tmp_path):
    from rfviz.plugin_process import discover_isolated

    path = _plugin(tmp_path, "sneaky_default.py", """
        from rfviz.estimators.hrf import Trig
        from rfviz.params import Param
        class Sneaky:                       # passes Param.validate ("a" in choices) but is not data
            def __eq__(self, other):
                return other == "a"
            def __hash__(self):
                return hash("a")
        class SneakyTrig(Trig):
            name = "sneaky_trig"
            spec = Trig.spec + (Param("mode", Sneaky(), "choice", "unused", choices=("a", "b")),)
    """)
    found, errors = discover_isolated([path])
    assert not found and len(errors) == 1, errors
    assert "parameter 'mode'" in errors[0] and "a value of type Sneaky" in errors[0], errors


def _npy(arr, allow_pickle=False) -> str:
    import base64
    import io

    import numpy as np

    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=allow_pickle)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _lying_npy() -> str:
    """A .npy header claiming 10¹² float64 values over 8 bytes of data."""
    import base64

    import numpy as np

    raw = base64.b64decode(_npy(np.zeros(1)))
    lying = raw.replace(b"(1,), }" + b" " * 12, b"(1000000000000,), }")  # the header keeps its length
    assert len(lying) == len(raw) and lying != raw
    return base64.b64encode(lying).decode("ascii")


def test_answers_that_are_not_rfviz_data_are_refused():
    import numpy as np

    from rfviz.plugin_process import WireError, from_wire, read_answer, to_wire
    from rfviz.plugins import PluginError

    hostile = [
        {"$": "os.system", "v": {}},                                   # an unknown tag
        {"$": "ndarray", "v": _npy(np.array([object()]), allow_pickle=True)},  # pickled objects in a .npy
        {"$": "ndarray", "v": "not base64!"},
        {"$": "Param", "v": {"name": "m", "default": 1, "kind": "exec"}},  # a kind that is not one of Kind
        {"$": "Param", "v": {"name": "m", "default": 99, "kind": "int", "high": 10}},  # a default out of range
        {"$": "Param", "v": {"name": "m", "default": 1, "kind": "int", "__class__": "x"}},  # not a field
        {"$": "Comparison", "v": {"name": 3, "params": {}, "source": "", "log10_ratio": [], "wins": 0,
                                  "losses": 0, "ties": 0}},  # a field of the wrong type
        {"$": "tuple", "v": [1], "extra": 2},
    ]
    for data in hostile:
        with pytest.raises(WireError):
            from_wire(data)
    deep = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(WireError, match="nested deeper"):
        from_wire(deep)
    with pytest.raises(PluginError, match="not rfviz's JSON"):
        read_answer(b'{"format": "rfviz-plugin-answer/1", "value": NaN}', "plugin 'x.py'")
    with pytest.raises(PluginError, match="not rfviz's JSON"):
        read_answer(b"[" * 100_000, "plugin 'x.py'")
    arr = np.arange(6, dtype=np.complex128).reshape(2, 3) * (1 + 1j)
    back = from_wire(to_wire({"a": arr, "t": (True, 2, 2.5, float("-inf"), "x")}))
    assert np.array_equal(back["a"], arr) and back["a"].dtype == arr.dtype
    assert back["t"][:3] == (True, 2, 2.5) and back["t"][3] == float("-inf")
    params = {"A": -0.1234567 + 0.05j, "x": 0.1 + 0.2, "n": 2**63 + 1, "c": (1 + 0.5j, 0.8)}
    assert from_wire(json.loads(json.dumps(to_wire(params)))) == params  # exact, types kept


def test_python_api_params_that_are_not_data_are_refused_naming_params():
    import rfviz.api
    from rfviz.params import ParameterError

    with pytest.raises(ParameterError, match="params must map names to numbers"):
        rfviz.api.check("no/such/plugin.py", {"m": object()})


def test_an_npy_header_that_lies_about_its_shape_allocates_nothing():
    from rfviz.plugin_process import WireError, from_wire

    with pytest.raises(WireError, match="does not fill its shape"):
        from_wire({"$": "ndarray", "v": _lying_npy()})


@pytest.mark.slow
def test_the_lab_page_stays_up_with_forged_answers_and_odd_types(tmp_path, monkeypatch, capfd):
    """RFVIZ_PLUGINS naming a plugin that forges its answer (a pickle that would run a command) and one with a
    str-subclass title and a float-subclass default: the page loads (before: the server exited, or the page broke
    at load), lists the second with plain texts and checks it; nothing ran in this process, nothing on its stdout."""
    from streamlit.testing.v1 import AppTest

    from app_pages import BY_PATH

    marker = tmp_path / "marker"
    forges = _plugin(tmp_path, "forges_page.py", FORGES_ANSWER.format(marker=marker, payload="pickle.dumps(Boom())"))
    odd = _plugin(tmp_path, "odd_page.py", ODD_TYPES)
    monkeypatch.setenv("RFVIZ_PLUGINS", f"{forges},{odd}")
    at = AppTest.from_file(str(BY_PATH["estimator_lab"].file), default_timeout=300)
    at.query_params.update({"est": "odd_trig", "trials": "400", "n_theta": "3", "r": "0.5,1"})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("forges_page.py" in e.value and "not rfviz's JSON" in e.value for e in at.error), \
        [e.value for e in at.error]
    assert at.selectbox(key="estimator_lab.est").value == "odd_trig"
    assert any("Trig, with a str-subclass title" in c.value for c in at.caption)
    at.button(key="estimator_lab.run").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("CLI exit code" in m.value for m in [*at.success, *at.warning, *at.error])
    out, _err = capfd.readouterr()
    assert "PWNED" not in out and not marker.exists()


def test_output_files_are_capped_by_the_file_size_limit(tmp_path, monkeypatch):
    """A plugin printing without end cannot fill the disk: its fd 1 stops at RLIMIT_FSIZE (FILE_MAX_BYTES, here
    1 MiB), the write fails with EFBIG and the check is one line."""
    import rfviz.plugin_process as pp
    from rfviz.plugins import PluginError

    monkeypatch.setattr(pp, "FILE_MAX_BYTES", 2**20)
    path = _plugin(tmp_path, "floods.py", """
        import os
        while True:
            os.write(1, b"x" * 2**16)
    """)
    with pytest.raises(PluginError, match=r"importing plugin file .*floods.py.* raised OSError: \[Errno 27\] File "
                                          r"too large"):
        pp.check_isolated(path, (), {}, [])
