"""Drive a sweep: skip finished points, run the rest on a backend, pool each point's blocks, store its row."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from .backends import BackendStats, LocalBackend, RayBackend
from .progress import Progress
from .store import ResultStore
from .tasks import COL, SweepSpec, combine, point_row


@dataclass
class SweepReport:
    """Outcome of ``run_sweep``: status (complete / interrupted), points, trials and the backend's measurements."""

    status: str
    points_total: int
    points_done: int
    points_this_run: int
    trials_this_run: int
    wall_s: float
    backend: str
    stats: BackendStats
    out: str


def run_sweep(spec: SweepSpec, out: str, backend: LocalBackend | RayBackend, *, resume: bool = False,
              overwrite: bool = False, progress: bool = True, stream: TextIO | None = None,
              on_point: Callable[[dict[str, Any]], None] | None = None) -> SweepReport:
    """Run (or resume) ``spec`` on ``backend``, appending one row per finished point to ``out``.

    ``on_point(row)`` is called after each point is stored. KeyboardInterrupt (Ctrl-C) stops the backend, keeps
    every stored point, marks the manifest interrupted and propagates (the CLI exits with 130).
    """
    store = ResultStore(out, spec, resume=resume, overwrite=overwrite)
    started = time.perf_counter()
    todo = [p for p in range(spec.n_points) if p not in store.done]
    nb = spec.n_blocks
    tasks = (np.asarray(todo, dtype=np.int64)[:, None] * nb + np.arange(nb)[None, :]).ravel()
    bar = Progress(spec.n_points, len(store.done), spec.trials, stream=stream, enabled=progress)
    partial: dict[int, list[np.ndarray]] = {}
    finished = 0
    trials = 0
    status = "interrupted"
    try:
        for rows in backend.run(spec, tasks):
            trials_now = int(rows[:, COL["n"]].sum())
            trials += trials_now
            new_points = 0
            for row in rows:
                point = int(row[COL["point"]])
                got = partial.setdefault(point, [])
                got.append(row)
                if len(got) == nb:
                    out_row = point_row(spec, combine(np.stack(partial.pop(point))), backend.name)
                    store.append(out_row)
                    finished += 1
                    new_points += 1
                    if on_point is not None:
                        on_point(out_row)
            bar.update(points=new_points, trials=trials_now)
        status = "complete"
    finally:
        store.close(complete=status == "complete")
        bar.finish()
    return SweepReport(status, spec.n_points, len(store.done), finished, trials, time.perf_counter() - started,
                       backend.name, backend.stats, str(out))
