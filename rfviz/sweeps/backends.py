"""Where sweep tasks run: ``local`` (this process, one task after another) or ``ray`` (a Ray cluster).

Both are thin layers over ``rfviz.sweeps.tasks.run_tasks`` (itself one ``rfviz.engine.monte_carlo`` call per
task); the engine knows nothing of Ray. ``ray`` is imported only when the Ray backend starts.

The Ray backend (connecting, shipping rfviz to the workers, adaptive Ray task sizes, retries) lives in
``rfviz.sweeps.ray_backend``; its names are re-exported here.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ..params import ParameterError
from .stats import BackendStats
from .tasks import COL, SweepSpec, run_task


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


def make_backend(name: str, *, address: str | None = None, workers: int | None = None,
                 **ray_options: Any) -> LocalBackend | RayBackend:
    """``local`` or ``ray`` (ParameterError otherwise); ``ray_options`` (``RAY_PARAMS`` names, e.g. ``max_retries``)
    are refused on ``local``, where they would do nothing.

    Example
    -------
    >>> make_backend("local").name
    'local'
    """
    if name == "local":
        if address:
            raise ParameterError("address needs --backend ray")
        given = sorted(k for k, v in ray_options.items() if v is not None)
        if given:
            flags = ", ".join("--" + k.replace("_", "-") for k in given)
            raise ParameterError(f"{flags} applies to --backend ray only (the local backend runs every task once, "
                                 f"in this process)")
        return LocalBackend(workers)
    if name == "ray":
        return RayBackend(address, workers, **{k: v for k, v in ray_options.items() if v is not None})
    raise ParameterError(f"backend must be local or ray, got {name!r}")


from .ray_backend import (  # noqa: E402  (the Ray backend's names, re-exported; it imports BackendStats from here)
    CRASH_ONCE_ENV,
    DEFAULT_TASK_SECONDS,
    MIN_BATCHES_PER_SLOT,
    RayBackend,
    SweepTaskError,
    batch_size,
    ray_slots,
    ray_task_options,
)

__all__ = ["CRASH_ONCE_ENV", "DEFAULT_TASK_SECONDS", "MIN_BATCHES_PER_SLOT", "BackendStats", "LocalBackend",
           "RayBackend", "SweepTaskError", "batch_size", "make_backend", "ray_slots", "ray_task_options"]
