"""Where sweep tasks run: ``local`` (this process, one task after another) or ``ray`` (a Ray cluster).

Both are thin layers over ``rfviz.sweep.tasks.run_tasks`` (itself one ``rfviz.engine.monte_carlo`` call per
task); the engine knows nothing of Ray. ``ray`` is imported only when the Ray backend starts.

Ray details: tasks are grouped into Ray tasks ("batches") of consecutive (point, block) tasks sized from a
calibration round (one single-task batch per slot, so no slot idles while calibrating) so that each Ray task
computes for about ``task_seconds`` (default 0.5 s; per-task scheduling costs ~1 ms, so the overhead stays well
under 5%), capped so that every slot still gets at least ``MIN_BATCHES_PER_SLOT`` (8) batches: the last round then
holds at most ~1/8 of a slot's work and the tail is not half idle (``batch_size``). At most ``2 × slots`` batches are
in flight (bounded driver memory on huge sweeps, prompt Ctrl-C). Each batch returns one float64 numpy array.
``max_retries`` re-runs a batch whose worker died; on CUDA each task requests ``num_gpus`` (Ray then sets
CUDA_VISIBLE_DEVICES for the task) and the engine computes in float32 (``ray_task_options``, ``ray_slots``).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..params import ParameterError
from .tasks import COL, SweepSpec, run_task, run_tasks, task_pairs

DEFAULT_TASK_SECONDS = 0.5
"""Target compute seconds per Ray task (``--task-seconds``)."""
MIN_BATCHES_PER_SLOT = 8
"""Each slot gets at least this many batches, so the last (partial) round idles at most ~1/8 of the run."""
CRASH_ONCE_ENV = "RFVIZ_SWEEP_CRASH_ONCE"
"""Test hook: a file path; the first Ray batch to find it absent creates it and kills its worker process
(simulating a lost worker, which ``max_retries`` must absorb)."""


@dataclass
class BackendStats:
    """What a backend measured: batches run, trials per batch, compute seconds inside tasks, wall seconds."""

    batches: int = 0
    tasks: int = 0
    compute_s: float = 0.0
    wall_s: float = 0.0
    slots: int = 1
    batch_tasks: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def utilisation(self) -> float:
        """Σ compute / (wall × slots): 1 − this bounds scheduling + idle overhead."""
        return self.compute_s / (self.wall_s * self.slots) if self.wall_s > 0 else 0.0


class LocalBackend:
    """Run every task in this process, in order."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        if workers not in (None, 1):
            raise ParameterError(f"workers must be 1 with --backend local (one process), got {workers}; "
                                 f"use --backend ray for parallel workers")
        self.stats = BackendStats()

    def default_device(self) -> str:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def run(self, spec: SweepSpec, tasks: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
        """Run ``tasks`` (an iterator of (k, 2) int64 (point, block) arrays, consumed lazily) one at a time,
        yielding each task's row (shape (1, len(TASK_FIELDS)))."""
        started = time.perf_counter()
        try:
            for chunk in tasks:
                for point, block in np.asarray(chunk, dtype=np.int64).reshape(-1, 2):
                    rows = run_task(spec, int(point), int(block))[None, :]
                    self.stats.batches += 1
                    self.stats.tasks += 1
                    self.stats.compute_s += float(rows[0, COL["seconds"]])
                    yield rows
        finally:
            self.stats.wall_s += time.perf_counter() - started

    def close(self) -> None:
        pass


def _ray_batch(spec: SweepSpec, tasks: np.ndarray, crash_marker: str | None, threads: int) -> np.ndarray:
    """Body of one Ray task (a batch of sweep tasks)."""
    import torch

    if spec.device == "cpu":
        torch.set_num_threads(threads)
    if crash_marker:
        try:
            fd = os.open(crash_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            os.close(fd)
            os._exit(1)  # a lost worker: Ray retries the batch (max_retries)
    return run_tasks(spec, tasks)


class RayBackend:
    """Run batches of tasks as Ray tasks on a local Ray (``ray.init(num_cpus=workers)``) or an existing cluster."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, *, max_retries: int = 3,
                 task_seconds: float = DEFAULT_TASK_SECONDS, gpus_per_task: float = 1.0,
                 batch_tasks: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise ParameterError(f"workers must be an integer in [1, inf), got {workers}")
        if max_retries < 0:
            raise ParameterError(f"max_retries must be an integer in [0, inf), got {max_retries}")
        if not task_seconds > 0:
            raise ParameterError(f"task_seconds must be > 0, got {task_seconds}")
        if not (0 < gpus_per_task <= 1 or (gpus_per_task > 1 and gpus_per_task == int(gpus_per_task))):
            raise ParameterError(f"gpus_per_task must be in (0, 1] or a whole number, got {gpus_per_task}")
        if batch_tasks is not None and batch_tasks < 1:
            raise ParameterError(f"batch_tasks must be an integer in [1, inf), got {batch_tasks}")
        import ray

        self.ray = ray
        self._owns = False
        if not ray.is_initialized():
            if address:
                ray.init(address=address, logging_level=logging.WARNING)
            else:
                ray.init(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                         logging_level=logging.WARNING)
            self._owns = True
        self.max_retries = int(max_retries)
        self.task_seconds = float(task_seconds)
        self.gpus_per_task = float(gpus_per_task)
        self.batch_tasks = batch_tasks
        res = ray.cluster_resources()
        self.cpus = int(res.get("CPU", 1))
        if address is None and workers is not None and not self._owns:
            self.cpus = min(self.cpus, workers)  # an already running local Ray: use at most ``workers`` slots
        self.gpus = float(res.get("GPU", 0))
        self.stats = BackendStats()

    def default_device(self) -> str:
        return "cuda" if self.gpus > 0 else "cpu"

    def _remote(self, spec: SweepSpec) -> Any:
        opts = ray_task_options(spec.device, max_retries=self.max_retries, cluster_gpus=self.gpus,
                                gpus_per_task=self.gpus_per_task)
        return self.ray.remote(_ray_batch).options(**opts)

    def _slots(self, spec: SweepSpec) -> int:
        return ray_slots(spec.device, cpus=self.cpus, gpus=self.gpus, gpus_per_task=self.gpus_per_task)

    def run(self, spec: SweepSpec, tasks: Iterable[np.ndarray] | np.ndarray) -> Iterator[np.ndarray]:
        if not isinstance(tasks, np.ndarray):  # interim: the streamed (point, block) chunks as flat task ids
            pairs = [task_pairs(c, spec.n_blocks) for c in tasks]
            pairs = np.concatenate(pairs) if pairs else np.empty((0, 2), dtype=np.int64)
            tasks = pairs[:, 0] * spec.n_blocks + pairs[:, 1]
        ray = self.ray
        remote = self._remote(spec)
        slots = self._slots(spec)
        self.stats.slots = slots
        spec_ref = ray.put(spec)
        crash = os.environ.get(CRASH_ONCE_ENV) or None
        started = time.perf_counter()
        pending: dict[Any, int] = {}
        try:
            pos = 0
            batch = self.batch_tasks
            if batch is None and len(tasks):  # calibrate: one single-task batch per slot, sized by the first back
                for t in tasks[:slots]:
                    pending[remote.remote(spec_ref, np.array([t]), crash, 1)] = 1
                pos = len(pending)
                ready, _ = ray.wait(list(pending), num_returns=1)
                rows = ray.get(ready[0])
                del pending[ready[0]]
                yield self._account(rows)
                batch = batch_size(float(rows[0, COL["seconds"]]), len(tasks) - pos, slots, self.task_seconds)
                self.stats.extra["calibration_task_s"] = float(rows[0, COL["seconds"]])
            self.stats.batch_tasks = int(batch or 1)
            window = 2 * slots
            while pos < len(tasks) or pending:
                while pos < len(tasks) and len(pending) < window:
                    chunk = tasks[pos:pos + self.stats.batch_tasks]
                    pending[remote.remote(spec_ref, chunk, crash, 1)] = len(chunk)
                    pos += len(chunk)
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    rows = ray.get(ref)
                    del pending[ref]
                    yield self._account(rows)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
            self.stats.wall_s += time.perf_counter() - started

    def _account(self, rows: np.ndarray) -> np.ndarray:
        self.stats.batches += 1
        self.stats.tasks += len(rows)
        self.stats.compute_s += float(rows[:, COL["seconds"]].sum())
        return rows

    def close(self) -> None:
        if self._owns:
            self.ray.shutdown()
            self._owns = False


def batch_size(per_task_s: float, n_tasks: int, slots: int, task_seconds: float = DEFAULT_TASK_SECONDS,
               min_batches_per_slot: int = MIN_BATCHES_PER_SLOT) -> int:
    """Sweep tasks per Ray task: enough for ~``task_seconds`` of compute (tasks of ``per_task_s`` each), but at
    most ``n_tasks / (min_batches_per_slot · slots)`` so that every slot gets that many batches; at least 1."""
    if not task_seconds > 0 or slots < 1 or min_batches_per_slot < 1 or n_tasks < 0:
        raise ParameterError(f"batch_size needs task_seconds > 0, slots ≥ 1, min_batches_per_slot ≥ 1 and n_tasks ≥ 0, "
                             f"got {task_seconds}, {slots}, {min_batches_per_slot}, {n_tasks}")
    per_task = per_task_s if math.isfinite(per_task_s) and per_task_s > 1e-4 else 1e-4
    by_time = math.ceil(task_seconds / per_task)
    by_tail = math.ceil(n_tasks / (min_batches_per_slot * slots))
    return max(1, min(by_time, by_tail))


def ray_task_options(device: str, *, max_retries: int, cluster_gpus: float,
                     gpus_per_task: float = 1.0) -> dict[str, Any]:
    """Ray ``.options`` of one batch: 1 CPU and ``max_retries``; on CUDA also ``num_gpus = gpus_per_task``
    (ParameterError when the cluster has no GPU). The engine then runs in float32 (``rfviz.engine`` default on a
    GPU)."""
    if device not in ("cpu", "cuda"):
        raise ParameterError(f"device must be cpu or cuda, got {device!r}")
    opts: dict[str, Any] = {"max_retries": int(max_retries), "num_cpus": 1}
    if device == "cuda":
        if cluster_gpus <= 0:
            raise ParameterError("device cuda: the Ray cluster has no GPU resources")
        opts["num_gpus"] = float(gpus_per_task)
    return opts


def ray_slots(device: str, *, cpus: int, gpus: float, gpus_per_task: float = 1.0) -> int:
    """Batches that can run at once: CPUs on the CPU, ⌊GPUs / gpus_per_task⌋ on CUDA (at least 1)."""
    if device == "cuda":
        return max(1, int(gpus / gpus_per_task + 1e-9))
    return max(1, int(cpus))


def make_backend(name: str, *, address: str | None = None, workers: int | None = None,
                 **ray_options: Any) -> LocalBackend | RayBackend:
    """``local`` or ``ray`` (ParameterError otherwise)."""
    if name == "local":
        if address:
            raise ParameterError("address needs --backend ray")
        return LocalBackend(workers)
    if name == "ray":
        return RayBackend(address, workers, **ray_options)
    raise ParameterError(f"backend must be local or ray, got {name!r}")
