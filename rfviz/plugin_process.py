"""Plugin code in its own process: ``check`` and the lab page never run a user's estimator in their own process.

Why a ``subprocess`` running ``python -m rfviz._plugin_worker`` (and not ``multiprocessing``): the child must be
the leader of its own session (``start_new_session=True``), so one ``os.killpg(SIGKILL)`` ends it *and* everything
it forked or started; its stdout and stderr must be plain files, so a grandchild that keeps them open cannot make
rfviz wait; and its exit status must be readable before it is reaped (``os.waitid(..., WNOWAIT)``), so the group is
killed while its id cannot yet be reused. ``multiprocessing`` hides all three behind its own pipes and helpers. The
request goes in as a JSON file, the answer comes back as a pickle file the worker renames into place when it is
done; what plugin code writes to fd 1/2 lands in the child's own temp files, never in rfviz's stdout (so ``--json``
stays valid), and its tail is kept in ``rfviz.plugins.CAPTURED_STDOUT``.

Limits (``PluginLimits``; defaults stated there): a wall-clock deadline for the plugin's code (from the moment the
worker has imported rfviz until it answers), RLIMIT_AS (address space) and RLIMIT_CPU, set by the worker on itself
before any plugin code runs (not in ``preexec_fn``, which is unsafe in a threaded parent such as Streamlit).

Built-in estimators (no plugin code) keep running in-process.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .params import ParameterError, current_memory_budget, format_bytes, parse_bytes
from .plugins import CAPTURED_STDOUT, PluginError, plugin_timeout

MEMORY_ENV_VAR = "RFVIZ_PLUGIN_MEMORY"
CPU_ENV_VAR = "RFVIZ_PLUGIN_CPU_SECONDS"
DEFAULT_MEMORY_BYTES = 4 * 2**30
"""RLIMIT_AS of the plugin process: 4 GiB. A full default check of examples/tempered_positive.py peaks near 1 GiB of
address space (torch alone maps about 0.8 GiB); the engine's own memory budget (512 MiB) stays well inside it."""
STARTUP_TIMEOUT_S = 120.0
"""Seconds the worker may take to start Python and import rfviz and torch (before any plugin code runs)."""
POLL_S = 0.05
GROUP_EXIT_TIMEOUT_S = 5.0
"""Seconds ``run_isolated`` waits, after the SIGKILL of the plugin's process group, for every member to end."""
OUTPUT_TAIL = 2000


@dataclass(frozen=True)
class PluginLimits:
    """Limits of one plugin process.

    Parameters
    ----------
    timeout_s : wall-clock seconds the plugin's code may take in all (import, smoke test, the check); default
        ``rfviz.plugins.plugin_timeout()`` (``--timeout``, ``RFVIZ_PLUGIN_TIMEOUT``, else 300).
    memory_bytes : RLIMIT_AS of the process, None for none; default ``RFVIZ_PLUGIN_MEMORY`` (e.g. ``8GiB``,
        ``unlimited``), else 4 GiB.
    cpu_s : RLIMIT_CPU (CPU seconds over all threads), None for none; default ``RFVIZ_PLUGIN_CPU_SECONDS``, else
        the deadline times the number of CPUs plus the startup allowance (what the deadline permits anyway).

    Examples
    --------
    >>> PluginLimits(timeout_s=5.0, memory_bytes=2**31, cpu_s=20).memory_bytes
    2147483648
    """

    timeout_s: float
    memory_bytes: int | None
    cpu_s: int | None

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> PluginLimits:
        """The limits in force: ``plugin_timeout()`` and the two environment variables (see the class)."""
        env = os.environ if environ is None else environ
        timeout = plugin_timeout()
        raw_mem = env.get(MEMORY_ENV_VAR, "").strip()
        if raw_mem.lower() in ("unlimited", "none"):
            memory: int | None = None
        else:
            memory = parse_bytes(raw_mem, MEMORY_ENV_VAR) if raw_mem else DEFAULT_MEMORY_BYTES
        raw_cpu = env.get(CPU_ENV_VAR, "").strip()
        if raw_cpu.lower() in ("unlimited", "none"):
            cpu: int | None = None
        elif raw_cpu:
            try:
                cpu = int(raw_cpu)
            except ValueError:
                cpu = 0
            if cpu < 1:
                raise ParameterError(f"{CPU_ENV_VAR} must be a whole number of CPU seconds ≥ 1 or unlimited, got "
                                     f"{raw_cpu[:40]!r}")
        else:
            cpu = math.ceil((timeout + STARTUP_TIMEOUT_S) * (os.cpu_count() or 1))
        return cls(timeout, memory, cpu)


def _plain(value: Any) -> Any:
    """numpy arrays and scalars in a request become lists and numbers."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} cannot be sent to a plugin process")


def _tail(path: pathlib.Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - OUTPUT_TAIL))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _only_zombies_left(pgid: int) -> bool | None:
    """Whether every process of group ``pgid`` has ended (a zombie whose threads are all gone, or state X); None
    where /proc cannot be read (not Linux). A killed member stays a zombie until its parent reaps it, and members
    that outlived the worker were reparented to init, which in a container need not reap them at all."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            fields = pathlib.Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            if fields[0] not in (b"Z", b"X") or len(os.listdir(f"/proc/{entry}/task")) > 1:
                return False  # still running, or still tearing down (exit of its threads, its memory)
        except (OSError, IndexError, ValueError):
            continue  # gone between listdir and read
    return True


def _await_group_end(pgid: int, timeout_s: float = GROUP_EXIT_TIMEOUT_S) -> bool:
    """After ``_kill_group``: wait until the group is gone (``killpg(pgid, 0)`` answers ESRCH) or only zombies are
    left; False if some member still runs after ``timeout_s`` (e.g. in uninterruptible sleep on a dead NFS mount).
    SIGKILL is delivered asynchronously: without this wait a forked child could still be alive (its memory being
    torn down on a loaded machine) when ``check`` returns."""
    deadline = time.monotonic() + timeout_s
    delay = 0.001
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # a member we may not signal (it changed its uid): we cannot see its end
            return False
        if _only_zombies_left(pgid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(delay)
        delay = min(2 * delay, 0.05)


def _end_group(proc: subprocess.Popen) -> None:
    """Reap the killed worker and wait (bounded) for the rest of its group. Where /proc can tell zombies apart
    (Linux) the worker is reaped last, so its id, the group's id, cannot be reused while the group is awaited."""
    if not os.path.exists("/proc/self/stat"):
        proc.wait()
        _await_group_end(proc.pid)
        return
    _await_group_end(proc.pid)
    proc.wait()


def _read_status(path: pathlib.Path) -> tuple[str, float | None]:
    """The worker's last status line: ``stage`` or ``stage<TAB>fraction``; ("", None) before the first."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return "", None
    stage, _, frac = text.partition("\t")
    try:
        return stage, float(frac) if frac else None
    except ValueError:
        return stage, None


def _exited(proc: subprocess.Popen) -> int | None:
    """The worker's exit status (negative: killed by that signal) once it has ended, else None; left unreaped where
    ``os.waitid`` exists (Linux), so its process-group id cannot be reused before ``_kill_group``."""
    if not hasattr(os, "waitid"):  # macOS: reaped here; the group id is then free, a tiny race
        return proc.poll()
    info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _wait(proc: subprocess.Popen, status: pathlib.Path, limits: PluginLimits,
          progress: Callable[[float], None] | None) -> tuple[int | None, str, bool]:
    """Poll until the worker exits or its deadline passes; (exit status or None, last stage, timed out). The
    process is not reaped here (WNOWAIT), so its group id stays reserved for ``_kill_group``."""
    start = time.monotonic()
    deadline = start + STARTUP_TIMEOUT_S
    started = False
    stage, last_frac = "", None
    while True:
        code = _exited(proc)
        new_stage, frac = _read_status(status)
        if new_stage:
            stage = new_stage
            if not started:
                started, deadline = True, time.monotonic() + limits.timeout_s
        if progress is not None and frac is not None and frac != last_frac:
            last_frac = frac
            progress(frac)
        if code is not None:
            return code, stage, False
        if time.monotonic() > deadline:
            return None, stage, True
        time.sleep(POLL_S)


def _failure(label: str, code: int | None, stage: str, timed_out: bool, limits: PluginLimits) -> PluginError:
    where = f" during {stage}" if stage else " while starting"
    if timed_out:
        allowed = limits.timeout_s if stage else STARTUP_TIMEOUT_S
        return PluginError(f"{label} did not finish within {allowed:g} s{where} (set RFVIZ_PLUGIN_TIMEOUT or "
                           f"--timeout for slower plugins)")
    if code is not None and code < 0:
        sig = -code
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        why = " (its CPU-time limit, RFVIZ_PLUGIN_CPU_SECONDS)" if sig == signal.SIGXCPU else ""
        return PluginError(f"{label} killed the checking process with signal {name}{why}{where}")
    return PluginError(f"{label} ended the checking process (exit code {code}){where}")


def run_isolated(task: str, payload: dict[str, Any], label: str, limits: PluginLimits | None = None,
                 progress: Callable[[float], None] | None = None) -> Any:
    """Run ``rfviz._plugin_worker``'s ``task`` on ``payload`` in a child process and return its answer.

    Parameters
    ----------
    task : ``"check"`` (a LabReport) or ``"discover"`` (plugin descriptions and error lines).
    payload : JSON-ready arguments of the task.
    label : how error messages name the plugin (``"plugin 'x.py'"``).
    limits : the process's limits (default ``PluginLimits.from_env()``).
    progress : called with fractions in [0, 1] as the worker reports them.

    Returns
    -------
    The task's result, unpickled.

    Raises
    ------
    PluginError
        One line: the plugin's own error, or how its process ended (exit code, signal, deadline).

    Examples
    --------
    >>> run_isolated("discover", {"spec": "examples/tempered_positive.py"}, "plugin")  # doctest: +SKIP
    """
    limits = PluginLimits.from_env() if limits is None else limits
    with tempfile.TemporaryDirectory(prefix="rfviz-plugin-") as tmp:
        folder = pathlib.Path(tmp)
        request = {"task": task, "payload": payload, "limits": asdict(limits), "sys_path": list(sys.path),
                   "memory_budget": current_memory_budget(), "result": str(folder / "result.pickle"),
                   "status": str(folder / "status")}
        (folder / "request.json").write_text(json.dumps(request, default=_plain), encoding="utf-8")
        env = dict(os.environ)
        root = str(pathlib.Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join([root, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
        with open(folder / "stdout", "wb") as out, open(folder / "stderr", "wb") as err:
            proc = subprocess.Popen([sys.executable, "-m", "rfviz._plugin_worker", str(folder / "request.json")],
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                                    env=env)
        try:
            code, stage, timed_out = _wait(proc, folder / "status", limits, progress)
        finally:
            _kill_group(proc.pid)  # the worker, if still running, and whatever it forked or started
            _end_group(proc)
        output = (_tail(folder / "stdout") + _tail(folder / "stderr")).strip()
        if output:
            CAPTURED_STDOUT.append(output[-OUTPUT_TAIL:])
            del CAPTURED_STDOUT[:-50]
        result = folder / "result.pickle"
        if timed_out or code != 0 or not result.is_file():
            raise _failure(label, code, stage, timed_out, limits)
        answer = pickle.loads(result.read_bytes())
    if "error" in answer:
        raise (ParameterError if answer.get("kind") == "parameter" else PluginError)(answer["error"])
    return answer["value"]


# --------------------------------------------------------------------------- the tasks (run in the worker)
def check_target(target: str, extra_plugins: Sequence[str], params: dict[str, Any], compare: Sequence[str],
                 **kwargs: Any) -> Any:
    """Resolve ``target`` (loading ``extra_plugins`` first), refuse unknown comparators and run the lab.

    Parameters
    ----------
    target : a built-in name, a loaded plugin's name or a plugin spec.
    extra_plugins : plugin specs to load first.
    params : the estimator's parameters.
    compare : the comparators' names.
    **kwargs : the remaining ``rfviz.lab.check_estimator`` settings.

    Returns
    -------
    rfviz.lab.LabReport

    Examples
    --------
    >>> check_target("trig", (), {}, [], trials=400).verdict  # doctest: +SKIP
    'unbiased'
    """
    from . import plugins
    from .estimators import REGISTRY
    from .lab import check
    from .plugins import PLUGINS, resolve_estimator

    cls = resolve_estimator(target, extra_plugins)
    if plugins.STAGE_HOOK is not None:
        plugins.STAGE_HOOK("the check")
    unknown = [c for c in compare if c not in REGISTRY and c not in PLUGINS]
    if unknown:
        raise ParameterError(f"--compare must name built-in estimators ({', '.join(sorted(REGISTRY))}), got "
                             f"{unknown[0][:80]!r}")
    return check(cls, params, compare=list(compare), **kwargs)


def check_isolated(target: str, extra_plugins: Sequence[str], params: dict[str, Any], compare: Sequence[str],
                   limits: PluginLimits | None = None, progress: Callable[[float], None] | None = None,
                   **kwargs: Any) -> Any:
    """``check_target`` in a plugin process (see ``run_isolated``); returns the LabReport."""
    payload = {"target": target, "extra_plugins": list(extra_plugins), "params": params, "compare": list(compare),
               "kwargs": kwargs}
    return run_isolated("check", payload, f"plugin {target!r}", limits, progress)


@dataclass(frozen=True)
class PluginInfo:
    """What the app shows of a plugin estimator without importing it: its name, texts, parameters and the spec
    (``path/to/file.py:Class`` or ``module:Class``) the plugin process loads it by."""

    name: str
    title: str
    description: str
    reference: str
    spec: tuple[Any, ...]
    source: str


def discover_isolated(specs: Sequence[str], limits: PluginLimits | None = None
                      ) -> tuple[dict[str, PluginInfo], list[str]]:
    """Load and smoke-test each spec in its own plugin process; (name → PluginInfo, one error line per failure)."""
    found: dict[str, PluginInfo] = {}
    errors: list[str] = []
    for spec in specs:
        try:
            for info in run_isolated("discover", {"spec": spec}, f"plugin {spec!r}", limits):
                found[info.name] = info
        except ParameterError as exc:
            errors.append(str(exc))
    return found, errors


def describe_limits(limits: PluginLimits) -> str:
    """One line for help texts: the deadline and the two rlimits."""
    mem = "none" if limits.memory_bytes is None else format_bytes(limits.memory_bytes)
    cpu = "none" if limits.cpu_s is None else f"{limits.cpu_s} s"
    return f"deadline {limits.timeout_s:g} s, address space {mem}, CPU time {cpu}"
