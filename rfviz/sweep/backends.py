"""Where sweep tasks run: ``local`` (this process, one task after another) or ``ray`` (a Ray cluster).

Both are thin layers over ``rfviz.sweep.tasks.run_tasks`` (itself one ``rfviz.engine.monte_carlo`` call per
task); the engine knows nothing of Ray. ``ray`` is imported only when the Ray backend starts.

Ray details: tasks are grouped into Ray tasks ("batches") of consecutive (point, block) tasks sized from a
calibration run so that each Ray task computes for about ``task_seconds`` (per-task scheduling costs ~1 ms, so
the overhead stays well under 5%), capped so that every worker still gets several batches; at most
``2 × slots`` batches are in flight (bounded driver memory on huge sweeps, prompt Ctrl-C). Each batch returns one
float64 numpy array. ``max_retries`` re-runs a batch whose worker died; ``num_gpus`` is requested when the device
is CUDA (Ray then sets CUDA_VISIBLE_DEVICES for the task).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..params import ParameterError
from .tasks import COL, SweepSpec, run_tasks

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

    def run(self, spec: SweepSpec, tasks: np.ndarray) -> Iterator[np.ndarray]:
        started = time.perf_counter()
        try:
            for t in tasks:
                rows = run_tasks(spec, np.array([t]))
                self.stats.batches += 1
                self.stats.tasks += 1
                self.stats.compute_s += float(rows[:, COL["seconds"]].sum())
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
                 task_seconds: float = 1.0, gpus_per_task: float = 1.0, batch_tasks: int | None = None) -> None:
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
        opts: dict[str, Any] = {"max_retries": self.max_retries, "num_cpus": 1}
        if spec.device == "cuda":
            if self.gpus <= 0:
                raise ParameterError("device cuda: the Ray cluster has no GPU resources")
            opts["num_gpus"] = self.gpus_per_task
        return self.ray.remote(_ray_batch).options(**opts)

    def _slots(self, spec: SweepSpec) -> int:
        if spec.device == "cuda":
            return max(1, int(self.gpus / self.gpus_per_task))
        return max(1, self.cpus)

    def run(self, spec: SweepSpec, tasks: np.ndarray) -> Iterator[np.ndarray]:
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
            if batch is None and len(tasks):  # calibrate on one task, on a worker
                ref = remote.remote(spec_ref, tasks[:1], crash, 1)
                pending[ref] = 1
                rows = ray.get(ref)
                del pending[ref]
                pos = 1
                yield self._account(rows)
                per_task = max(float(rows[0, COL["seconds"]]), 1e-4)
                batch = max(1, math.ceil(self.task_seconds / per_task))
                batch = min(batch, max(1, math.ceil((len(tasks) - 1) / (4 * slots))))
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
