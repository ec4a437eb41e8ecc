"""The ``ray`` sweep backend: batches of (point, block) tasks as Ray tasks on a private local Ray or a cluster.

Connecting (``RayBackend.__init__``):

* no ``address`` (and no ``RAY_ADDRESS``): a **private local Ray** (``ray.init(address="local")``) with ``workers``
  CPUs (default: all cores), shut down at the end, even when a ``ray start --head`` cluster runs on the machine (join
  that one with ``address="auto"`` or its ``HOST:PORT``). ``note`` says which was done.
* an ``address``: first probed in a child process (``probe_address``) so that an unreachable address, a port where no
  Ray answers or a refused authentication token is one line within ``connect_timeout`` (20 s), and Ctrl-C/SIGTERM
  stay honoured (a blocked ``ray.init`` ignores both for over a minute). ``workers`` is refused with an address
  (the cluster's own CPUs are used).
* on joining a cluster, rfviz is **shipped to the workers** with the job's ``runtime_env`` (``py_modules``: the
  ``rfviz`` package directory, ~1 MB), so a cluster where only Ray, torch, numpy and scipy are installed runs it (a
  private local Ray imports the driver's own rfviz). One probe task per slot then starts the workers and reports
  their versions (``WORKER_PACKAGES``); a missing package is refused in one line.

Running (``RayBackend.run``): ``tasks`` is an iterator of int64 (k, 2) arrays of (point, block) pairs, consumed
lazily (never materialised); at most ``2 × slots`` Ray tasks are in flight, so driver memory does not grow with the
grid. Ray task sizes come from ``BatchSizer``: the median of recently measured sweep tasks (a worker's first task,
which pays its warm-up, is left out), re-estimated after every result, aiming at ``task_seconds`` of compute per Ray
task, growing at most 2× per Ray task, and capped so each slot still gets ≥ ``MIN_BATCHES_PER_SLOT`` Ray tasks.

Failures: a worker process that dies is re-run by Ray (``max_retries``); an exception inside a sweep task is caught
on the worker, the task re-submitted alone up to ``max_retries`` times, and a task that still fails is reported,
after every other task has finished, as one ``SweepTaskError`` line naming the grid point and its parameters.
"""

from __future__ import annotations

import json
import logging
import math
import os
import queue
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..params import Param, ParameterError, check_int
from .stats import BackendStats
from .tasks import COL, TASK_FIELDS, SweepSpec, run_task

DEFAULT_TASK_SECONDS = 0.5
"""Target compute seconds per Ray task (``--task-seconds``)."""
MIN_BATCHES_PER_SLOT = 8
"""Each slot gets at least this many Ray tasks, so the last (partial) round idles at most ~1/8 of the run."""
MAX_BATCH_TASKS = 65_536
"""Most sweep tasks in one Ray task (bounds a Ray task's argument and result arrays)."""
CRASH_ONCE_ENV = "RFVIZ_SWEEP_CRASH_ONCE"
"""Test hook: a file path; the first Ray batch to find it absent creates it and kills its worker process
(simulating a lost worker, which ``max_retries`` must absorb)."""
FAIL_POINT_ENV = "RFVIZ_SWEEP_FAIL_POINT"
"""Test hook: ``POINT`` or ``POINT:FILE``: sweep task (POINT, any block) raises on the worker (always, or — with FILE
— only while FILE does not exist yet, creating it: a transient error)."""
DEFAULT_CONNECT_TIMEOUT = 20.0
"""Seconds the address probe waits for a Ray cluster to answer."""
WORKER_PACKAGES = ("torch", "numpy", "scipy")
"""What every Ray worker must already have (the versions rfviz is tested with are in the README); rfviz itself is
shipped with the job."""

MAX_RETRIES_PARAM = Param("max_retries", 3, "int", "Ray: re-runs of a Ray task whose worker died, and of a sweep task "
                          "that raised", low=0, high=100)
TASK_SECONDS_PARAM = Param("task_seconds", DEFAULT_TASK_SECONDS, "float", "Ray: target compute seconds per Ray task",
                           low=0.0, low_open=True, high=3600.0)
GPUS_PER_TASK_PARAM = Param("gpus_per_task", 1.0, "float", "Ray: GPUs per Ray task on CUDA ((0, 1] or a whole number)",
                            low=0.0, low_open=True, high=1024.0)
CONNECT_TIMEOUT_PARAM = Param("connect_timeout", DEFAULT_CONNECT_TIMEOUT, "float",
                              "Ray: seconds to wait for a cluster at --address to answer", low=1.0, high=600.0)
RAY_PARAMS = (MAX_RETRIES_PARAM, TASK_SECONDS_PARAM, GPUS_PER_TASK_PARAM, CONNECT_TIMEOUT_PARAM)
"""The options that only the Ray backend has (validated here, refused by ``make_backend`` on ``local``)."""


def validate_ray_options(options: dict[str, Any]) -> dict[str, Any]:
    """The given Ray-only options (``RAY_PARAMS`` names; None = not given) validated: ParameterError naming the
    first bad one and its range.

    Example
    -------
    >>> validate_ray_options({"max_retries": 2, "gpus_per_task": None})
    {'max_retries': 2, 'gpus_per_task': None}
    """
    by_name = {p.name: p for p in RAY_PARAMS}
    out = {k: None if v is None else by_name[k].validate(v) for k, v in options.items()}
    gpus = out.get("gpus_per_task")
    if gpus is not None and gpus > 1 and gpus != int(gpus):
        raise ParameterError(f"gpus_per_task must be in (0, 1] or a whole number, got {gpus:g}")
    return out


class SweepTaskError(RuntimeError):
    """A sweep task that still failed after its retries (the message names the grid point), or a Ray task lost."""


# ----------------------------------------------------------------------------------------------- the worker side
_WORKER_TASKS = 0  # sweep tasks this worker process has run: its first one pays the warm-up (imports, caches)


def _fail_hook(spec: str | None, point: int) -> None:
    if not spec:
        return
    target, _, marker = spec.partition(":")
    if int(target) != point:
        return
    if marker:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
    raise ArithmeticError(f"test failure injected at point {point} ({FAIL_POINT_ENV})")


def _crash_hook(marker: str | None) -> None:
    if not marker:
        return
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(1)  # a lost worker: Ray re-runs the Ray task (max_retries)


def _ray_batch(spec: SweepSpec, pairs: np.ndarray, hooks: dict[str, str],
               threads: int) -> tuple[np.ndarray, list[tuple[int, int, str]], bool]:
    """Body of one Ray task: the rows of the (point, block) ``pairs`` that ran, the ones that raised
    (point, block, "Type: message") and whether this was the worker process's first Ray task (cold). ``hooks``:
    the driver's test hooks (``CRASH_ONCE_ENV``, ``FAIL_POINT_ENV``)."""
    global _WORKER_TASKS
    import torch

    if spec.device == "cpu":
        torch.set_num_threads(threads)
    _crash_hook(hooks.get(CRASH_ONCE_ENV))
    cold = _WORKER_TASKS == 0
    rows: list[np.ndarray] = []
    errors: list[tuple[int, int, str]] = []
    for point, block in pairs.tolist():
        try:
            _fail_hook(hooks.get(FAIL_POINT_ENV), point)
            rows.append(run_task(spec, point, block))
        except Exception as exc:  # reported on the driver with the point's parameters
            errors.append((point, block, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"))
        _WORKER_TASKS += 1
    out = np.stack(rows) if rows else np.empty((0, len(TASK_FIELDS)))
    return out, errors, cold


def _worker_versions() -> dict[str, str]:
    """Run on a worker: where rfviz came from and the versions of Python and ``WORKER_PACKAGES`` (or the error)."""
    import importlib
    import platform

    found = {"python": platform.python_version()}
    for name in (*WORKER_PACKAGES, __name__.split(".")[0]):  # and this package, as the worker imports it
        try:
            mod = importlib.import_module(name)
            found[name] = getattr(mod, "__version__", None) or str(Path(mod.__file__).parent)
        except Exception as exc:
            found[name] = f"missing ({type(exc).__name__}: {exc})"
    return found


# ----------------------------------------------------------------------------------------------- connecting
_PROBE = r"""
import json, logging, signal, sys
signal.alarm(int(sys.argv[2]) + 5)  # never outlive the driver's wait (SIG_DFL: the process ends)
import ray
try:
    ray.init(address=sys.argv[1], logging_level=logging.ERROR, log_to_driver=False, include_dashboard=False)
except Exception as exc:
    print("RFVIZ_PROBE_ERROR " + json.dumps(type(exc).__name__ + ": " + " ".join(str(exc).split())), flush=True)
    sys.exit(3)
res = ray.cluster_resources()
print("RFVIZ_PROBE_OK " + json.dumps({"cpus": res.get("CPU", 0), "gpus": res.get("GPU", 0),
                                      "nodes": len([n for n in ray.nodes() if n.get("Alive")])}), flush=True)
ray.shutdown()
"""
_AUTH_MARKERS = ("Unauthenticated", "InvalidAuthToken", "AuthenticationError")
_TOKEN_HELP = ("the cluster uses token authentication (RAY_AUTH_MODE=token): give this process the cluster's token "
               "in RAY_AUTH_TOKEN or a file named by RAY_AUTH_TOKEN_PATH (default ~/.ray/auth_token; "
               "`ray get-auth-token` on the head prints it)")


def _tcp_check(address: str, timeout: float) -> None:
    """For a plain HOST:PORT address: refuse at once when nothing listens there."""
    m = re.fullmatch(r"\[?([^\[\]]+?)\]?:(\d{1,5})", address)
    if not m:
        return  # "auto", ray://…: the probe resolves it
    host, port = m.group(1), int(m.group(2))
    try:
        socket.create_connection((host, port), timeout=min(timeout, 5.0)).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ParameterError(f"address {address}: no Ray cluster reachable there ({reason}); start one with "
                             f"`ray start --head --port={port}` or give the address `ray start` printed") from None


def probe_address(address: str, timeout: float = DEFAULT_CONNECT_TIMEOUT) -> dict[str, Any]:
    """Check that a Ray cluster answers at ``address`` (``HOST:PORT``, ``auto`` or ``ray://…``) within ``timeout``
    seconds, in a child process (a blocked ``ray.init`` cannot be interrupted); returns its CPUs, GPUs and nodes.

    Parameters
    ----------
    address : str
        What ``ray.init(address=…)`` accepts.
    timeout : float
        Seconds to wait for an answer.

    Returns
    -------
    dict
        ``{"cpus": float, "gpus": float, "nodes": int}``.

    Raises ParameterError (one line) when nothing answers, the authentication token is refused, or Ray reports
    another connection error.

    Example
    -------
    >>> probe_address("127.0.0.1:9", 5)  # doctest: +SKIP
    Traceback (most recent call last):
    rfviz.params.ParameterError: address 127.0.0.1:9: no Ray cluster reachable there (Connection refused); ...
    """
    _tcp_check(address, timeout)
    proc = subprocess.Popen([sys.executable, "-c", _PROBE, address, str(math.ceil(timeout))],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=os.path.expanduser("~") if os.path.isdir(os.path.expanduser("~")) else "/")
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=min(left, 0.25))
            except queue.Empty:
                continue
            if line is None:
                break
            if line.startswith("RFVIZ_PROBE_OK "):
                return json.loads(line.split(" ", 1)[1])
            if any(m in line for m in _AUTH_MARKERS):
                raise ParameterError(f"address {address}: the Ray cluster refused this process's authentication "
                                     f"token; {_TOKEN_HELP}")
            if line.startswith("RFVIZ_PROBE_ERROR "):
                reason = json.loads(line.split(" ", 1)[1])
                raise ParameterError(f"address {address}: cannot connect to a Ray cluster ({reason[:240]})")
        raise ParameterError(f"address {address}: no Ray cluster answered within {timeout:g} s (is it a Ray head's "
                             f"GCS port, as printed by `ray start --head`? a firewall?)")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        reader.join(timeout=5)  # the pipe reaches EOF once the child is gone
        if not reader.is_alive():
            proc.stdout.close()  # type: ignore[union-attr]


def _ray_init(ray: Any, **kwargs: Any) -> None:
    """``ray.init``; a SIGTERM while it runs (its own handler exits with status 15) becomes KeyboardInterrupt, so
    the caller stops as on Ctrl-C."""
    try:
        ray.init(**kwargs)
    except SystemExit as exc:
        if exc.code == signal.SIGTERM:
            raise KeyboardInterrupt from None
        raise


def _runtime_env() -> dict[str, Any]:
    """The job's runtime_env: rfviz shipped as a py_module (its package directory, caches excluded)."""
    package = Path(__file__).resolve().parents[1]
    return {"py_modules": [str(package)], "excludes": ["__pycache__", "*.pyc"]}


# ----------------------------------------------------------------------------------------------- batch sizes
def batch_size(per_task_s: float, n_tasks: int, slots: int, task_seconds: float = DEFAULT_TASK_SECONDS,
               min_batches_per_slot: int = MIN_BATCHES_PER_SLOT) -> int:
    """Sweep tasks per Ray task: enough for ~``task_seconds`` of compute (tasks of ``per_task_s`` each), but at
    most ``n_tasks / (min_batches_per_slot · slots)`` so that every slot gets that many Ray tasks; in
    [1, ``MAX_BATCH_TASKS``].

    Example
    -------
    >>> batch_size(0.002, 20_000, 2)  # 2 ms tasks: 250 per 0.5 s Ray task
    250
    """
    if not task_seconds > 0 or slots < 1 or min_batches_per_slot < 1 or n_tasks < 0:
        raise ParameterError(f"batch_size needs task_seconds > 0, slots ≥ 1, min_batches_per_slot ≥ 1 and n_tasks ≥ 0, "
                             f"got {task_seconds}, {slots}, {min_batches_per_slot}, {n_tasks}")
    per_task = per_task_s if math.isfinite(per_task_s) and per_task_s > 1e-5 else 1e-5
    by_time = math.ceil(task_seconds / per_task)
    by_tail = math.ceil(n_tasks / (min_batches_per_slot * slots))
    return max(1, min(by_time, by_tail, MAX_BATCH_TASKS))


class BatchSizer:
    """Ray task sizes re-estimated from the median compute time of the last ``window`` measured sweep tasks.

    The first Ray tasks hold ``first`` sweep tasks; a worker's first Ray task (cold: imports, torch start-up) counts
    only its later tasks; sizes grow at most 2× from one Ray task to the next (one fast outlier cannot make a huge
    Ray task) and follow ``batch_size`` (``task_seconds`` per Ray task, ≥ ``MIN_BATCHES_PER_SLOT`` per slot of the
    ``remaining`` tasks).

    Example
    -------
    >>> s = BatchSizer(slots=2, task_seconds=0.5)
    >>> s.observe(np.full(8, 0.002), cold=False)
    >>> [s.next_size(20_000) for _ in range(9)]
    [4, 8, 16, 32, 64, 128, 250, 250, 250]
    """

    def __init__(self, slots: int, task_seconds: float = DEFAULT_TASK_SECONDS, *, fixed: int | None = None,
                 first: int = 2, window: int = 256) -> None:
        self.slots = slots
        self.task_seconds = task_seconds
        self.fixed = fixed
        self.size = first
        self.samples: deque[float] = deque(maxlen=window)

    def observe(self, seconds: np.ndarray, cold: bool) -> None:
        """Record the compute seconds of the sweep tasks of one finished Ray task."""
        warm = seconds[1:] if cold and len(seconds) > 1 else seconds
        if cold and len(seconds) == 1 and self.samples:
            return  # a lone cold task says little once warm ones are known
        self.samples.extend(float(s) for s in warm if math.isfinite(s))

    @property
    def median_s(self) -> float:
        """Median compute seconds of a sweep task (nan before any measurement)."""
        return statistics.median(self.samples) if self.samples else math.nan

    def next_size(self, remaining: int) -> int:
        """Sweep tasks for the next Ray task, ``remaining`` being an upper bound of the tasks left."""
        if self.fixed is not None:
            return self.fixed
        if self.samples:
            target = batch_size(self.median_s, max(remaining, 0), self.slots, self.task_seconds)
            self.size = max(1, min(target, 2 * self.size))
        return self.size


# ----------------------------------------------------------------------------------------------- task streams
class _Feed:
    """Take (point, block) pairs a few at a time from an iterator of (k, 2) chunks, holding at most one chunk plus
    one Ray task's worth (the legacy 1-D array of task ids ``point · n_blocks + block`` is accepted too)."""

    def __init__(self, tasks: Iterable[np.ndarray] | np.ndarray, n_blocks: int) -> None:
        if isinstance(tasks, np.ndarray) and tasks.ndim == 1:
            ids = tasks.astype(np.int64)
            tasks = (np.stack([ids[i:i + 4096] // n_blocks, ids[i:i + 4096] % n_blocks], axis=1)
                     for i in range(0, len(ids), 4096))
        elif isinstance(tasks, np.ndarray):
            tasks = iter([tasks])
        self.source: Iterator[np.ndarray] = iter(tasks)
        self.buffer = np.empty((0, 2), dtype=np.int64)
        self.taken = 0

    def take(self, n: int) -> np.ndarray:
        while len(self.buffer) < n:
            chunk = next(self.source, None)
            if chunk is None:
                break
            chunk = np.asarray(chunk, dtype=np.int64).reshape(-1, 2)
            self.buffer = np.concatenate([self.buffer, chunk]) if len(self.buffer) else chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        self.taken += len(out)
        return out


def _point_text(spec: SweepSpec, point: int) -> str:
    values = ", ".join(f"{k}={v}" for k, v in spec.grid.point(point).items())
    return f"point {point} ({values})" if values else f"point {point}"


# ----------------------------------------------------------------------------------------------- the backend
class RayBackend:
    """Run batches of sweep tasks as Ray tasks on a private local Ray or a cluster (see the module docstring).

    Parameters
    ----------
    address : str, optional
        A Ray cluster to join (``HOST:PORT``, ``auto``, ``ray://…``); default ``RAY_ADDRESS``, else a private local
        Ray with ``workers`` CPUs.
    workers : int, optional
        CPUs of the private local Ray (default: all cores); refused with an address.
    max_retries, task_seconds, gpus_per_task, connect_timeout
        See ``RAY_PARAMS``.
    batch_tasks : int, optional
        Fixed sweep tasks per Ray task (default: adaptive, ``BatchSizer``).
    ship_code : bool
        Ship rfviz to the workers in the job's runtime_env (default True).

    Example
    -------
    >>> backend = RayBackend(workers=2)  # doctest: +SKIP
    >>> report = run_sweep(spec, "out.csv", backend); backend.close()  # doctest: +SKIP
    """

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, *,
                 max_retries: int = MAX_RETRIES_PARAM.default, task_seconds: float = TASK_SECONDS_PARAM.default,
                 gpus_per_task: float = GPUS_PER_TASK_PARAM.default,
                 connect_timeout: float = CONNECT_TIMEOUT_PARAM.default, batch_tasks: int | None = None,
                 ship_code: bool = True) -> None:
        if workers is not None:
            workers = check_int("workers", workers)
        opts = validate_ray_options({"max_retries": max_retries, "task_seconds": task_seconds,
                                     "gpus_per_task": gpus_per_task, "connect_timeout": connect_timeout})
        self.max_retries, self.task_seconds = opts["max_retries"], opts["task_seconds"]
        self.gpus_per_task, connect_timeout = opts["gpus_per_task"], opts["connect_timeout"]
        self.batch_tasks = None if batch_tasks is None else check_int("batch_tasks", batch_tasks)
        if address is not None and not address.strip():
            raise ParameterError("address must be HOST:PORT (as printed by `ray start --head`), auto or "
                                 "ray://HOST:PORT, got an empty string")
        address = address or os.environ.get("RAY_ADDRESS") or None
        if address and workers is not None:
            raise ParameterError("workers applies to the private local Ray only; with --address (or RAY_ADDRESS) the "
                                 "cluster's own CPUs are used: drop --workers")
        import ray

        self.ray = ray
        self._owns = False
        self.worker_versions: dict[str, str] = {}
        env = _runtime_env() if ship_code and address else None  # a private local Ray imports this very rfviz
        caller_sigterm = signal.getsignal(signal.SIGTERM)  # ray.init replaces it; an application's own is restored
        if ray.is_initialized():
            how = "using the Ray this process had already started"
        elif address:
            probe_address(address, connect_timeout)
            _ray_init(ray, address=address, logging_level=logging.WARNING, runtime_env=env)
            self._owns = True
            how = f"joined the Ray cluster at {address}"
        else:
            _ray_init(ray, address="local", num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                      logging_level=logging.WARNING)
            self._owns = True
            how = ("started a private local Ray (a running `ray start` cluster is joined only with --address auto or "
                   "HOST:PORT)")
        if callable(caller_sigterm) and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, caller_sigterm)  # e.g. the CLI's SIGTERM → KeyboardInterrupt (clean stop)
        res = ray.cluster_resources()
        self.cpus = int(res.get("CPU", 0))
        if not address and workers is not None and not self._owns:
            self.cpus = min(self.cpus, workers)  # an already running local Ray: use at most ``workers`` slots
        self.gpus = float(res.get("GPU", 0))
        if self._owns:
            self.worker_versions = self._check_workers(min(max(self.cpus, 1), 256))
        shipped = "; rfviz shipped to the workers (runtime_env py_modules)" if env and self._owns else ""
        self.note = f"ray: {how}: {self.cpus} CPUs, {self.gpus:g} GPUs{shipped}"
        self.stats = BackendStats()

    def _check_workers(self, n: int) -> dict[str, str]:
        """``n`` probe tasks (one per slot: they also start the workers, so the sweep's first seconds measure
        compute, not start-up): the workers must have ``WORKER_PACKAGES`` and import rfviz."""
        ray = self.ray
        probe = ray.remote(_worker_versions).options(num_cpus=1, max_retries=1)
        try:
            answers = ray.get([probe.remote() for _ in range(n)], timeout=300)
        except ray.exceptions.RuntimeEnvSetupError as exc:
            raise ParameterError(f"the Ray workers could not install rfviz's code (runtime_env): "
                                 f"{' '.join(str(exc).split())[-300:]}") from None
        except ray.exceptions.GetTimeoutError:
            raise ParameterError("no Ray worker started within 300 s (is the cluster out of CPUs?)") from None
        missing = sorted({f"{k}: {v}" for found in answers for k, v in found.items() if v.startswith("missing")})
        if missing:
            raise ParameterError(f"the Ray workers lack {'; '.join(missing)[:300]}; install "
                                 f"{', '.join(WORKER_PACKAGES)} (the versions in the README) on every node")
        return answers[0]

    def default_device(self) -> str:
        return "cuda" if self.gpus > 0 else "cpu"

    def _remote(self, spec: SweepSpec) -> Any:
        opts = ray_task_options(spec.device, max_retries=self.max_retries, cluster_gpus=self.gpus,
                                gpus_per_task=self.gpus_per_task)
        return self.ray.remote(_ray_batch).options(**opts)

    def _slots(self, spec: SweepSpec) -> int:
        return ray_slots(spec.device, cpus=self.cpus, gpus=self.gpus, gpus_per_task=self.gpus_per_task)

    def run(self, spec: SweepSpec, tasks: Iterable[np.ndarray] | np.ndarray) -> Iterator[np.ndarray]:
        """Yield result rows (``TASK_FIELDS``) as Ray tasks finish; ``tasks``: (k, 2) int64 (point, block) chunks,
        consumed lazily. Raises ``SweepTaskError`` at the end when a task failed on every try."""
        ray = self.ray
        remote = self._remote(spec)
        slots = self._slots(spec)
        self.stats.slots = slots
        spec_ref = ray.put(spec)
        hooks = {k: os.environ[k] for k in (CRASH_ONCE_ENV, FAIL_POINT_ENV) if os.environ.get(k)}
        feed = _Feed(tasks, spec.n_blocks)
        sizer = BatchSizer(slots, self.task_seconds, fixed=self.batch_tasks)
        retry: deque[np.ndarray] = deque()
        tries: dict[tuple[int, int], int] = {}
        failed: list[tuple[int, int, str]] = []
        pending: dict[Any, np.ndarray] = {}
        started = time.perf_counter()
        try:
            while True:
                while len(pending) < 2 * slots:
                    size = sizer.next_size(spec.n_tasks - feed.taken)
                    batch = retry.popleft() if retry else feed.take(size)
                    if not len(batch):
                        break
                    pending[remote.remote(spec_ref, batch, hooks, 1)] = batch
                    self.stats.batch_tasks = max(self.stats.batch_tasks, len(batch))
                if not pending:
                    break
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    batch = pending.pop(ref)
                    rows, errors, cold = self._collect(ref, batch)
                    for point, block, message in errors:
                        n = tries[(point, block)] = tries.get((point, block), 0) + 1
                        if n <= self.max_retries:
                            retry.append(np.array([[point, block]], dtype=np.int64))
                        else:
                            failed.append((point, block, message))
                    if len(rows):
                        sizer.observe(rows[:, COL["seconds"]], cold)
                        yield self._account(rows)
            self.stats.extra["median_task_s"] = sizer.median_s
            if failed:
                raise SweepTaskError(self._failure_text(spec, failed))
        finally:
            # A private Ray is shut down next, its tasks with it: no cancel there, since Ray's core can abort the
            # whole process when a cancel races a task's completion ("Tried to complete task that was not pending",
            # ray-project/ray#54798; 2 in 7 SIGTERM-mid-sweep runs here). On a cluster we only joined, the tasks are
            # cancelled (not force: killing workers makes Ray resubmit lost objects mid-shutdown).
            if not self._owns:
                for ref in pending:
                    ray.cancel(ref)
            self.stats.wall_s += time.perf_counter() - started

    def _collect(self, ref: Any, batch: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, str]], bool]:
        """A finished Ray task's rows, failed tasks and coldness; a Ray task lost for good fails each of its sweep
        tasks."""
        ray = self.ray
        try:
            return ray.get(ref)
        except ray.exceptions.RuntimeEnvSetupError as exc:
            raise SweepTaskError(f"the Ray workers could not install rfviz's code (runtime_env): "
                                 f"{' '.join(str(exc).split())[-300:]}") from None
        except ray.exceptions.RayError as exc:  # the worker/node died more than max_retries times, …
            text = " ".join(str(exc).split()).split(" Traceback")[0][:200]
            return np.empty((0, len(TASK_FIELDS))), [(int(p), int(b), f"{type(exc).__name__}: {text}")
                                                      for p, b in batch.tolist()], False

    def _failure_text(self, spec: SweepSpec, failed: list[tuple[int, int, str]]) -> str:
        point, block, message = failed[0]
        points = sorted({p for p, _, _ in failed})
        others = f"; {len(points) - 1} other point(s) failed too ({', '.join(map(str, points[1:6]))}" \
                 f"{', …' if len(points) > 6 else ''})" if len(points) > 1 else ""
        return (f"{_point_text(spec, point)}, block {block}, failed {self.max_retries + 1} time(s): {message}{others}; "
                f"every other point is stored — fix the cause and continue with --resume")

    def _account(self, rows: np.ndarray) -> np.ndarray:
        self.stats.batches += 1
        self.stats.tasks += len(rows)
        self.stats.compute_s += float(rows[:, COL["seconds"]].sum())
        return rows

    def close(self) -> None:
        if self._owns:
            self.ray.shutdown()
            self._owns = False


def ray_task_options(device: str, *, max_retries: int, cluster_gpus: float,
                     gpus_per_task: float = 1.0) -> dict[str, Any]:
    """Ray ``.options`` of one Ray task: 1 CPU and ``max_retries`` (re-runs after a lost worker); on CUDA also
    ``num_gpus = gpus_per_task`` (ParameterError when the cluster has no GPU). The engine then runs in float32
    (``rfviz.engine`` default on a GPU).

    Example
    -------
    >>> ray_task_options("cpu", max_retries=3, cluster_gpus=0)
    {'max_retries': 3, 'num_cpus': 1}
    """
    if device not in ("cpu", "cuda"):
        raise ParameterError(f"device must be cpu or cuda, got {device!r}")
    opts: dict[str, Any] = {"max_retries": int(max_retries), "num_cpus": 1}
    if device == "cuda":
        if cluster_gpus <= 0:
            raise ParameterError("device cuda: the Ray cluster has no GPU resources")
        opts["num_gpus"] = float(gpus_per_task)
    return opts


def ray_slots(device: str, *, cpus: int, gpus: float, gpus_per_task: float = 1.0) -> int:
    """Ray tasks that can run at once: CPUs on the CPU, ⌊GPUs / gpus_per_task⌋ on CUDA (at least 1).

    Example
    -------
    >>> ray_slots("cuda", cpus=16, gpus=4, gpus_per_task=0.5)
    8
    """
    if device == "cuda":
        return max(1, int(gpus / gpus_per_task + 1e-9))
    return max(1, int(cpus))


def install_sigterm_as_interrupt() -> Any:
    """Make SIGTERM raise KeyboardInterrupt in the main thread (the sweep then stops like on Ctrl-C: finished
    points kept, Ray shut down); returns the previous handler (``signal.signal`` restores it)."""
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, handler)
