"""Drive a sweep: skip finished points, stream the rest's tasks to a backend, pool each point's blocks, store its row.

Tasks are generated lazily (``iter_tasks``: (k, 2) int64 (point, block) arrays, k ≤ 4096) and the backend keeps a
bounded number in flight, so the driver's memory does not grow with the grid: it holds the finished-points mask
(one byte per point), the blocks of points in flight and the store's write buffer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from .backends import BackendStats, LocalBackend, RayBackend
from .progress import Progress
from .store import DEFAULT_FLUSH_POINTS, DEFAULT_FLUSH_S, ResultStore, sweep_lock
from .tasks import COL, SweepSpec, combine, iter_tasks, point_row

SCAN_CHUNK = 1 << 16
"""Points scanned at a time for the ones still to do."""


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
    notes: list[str] = field(default_factory=list)


def todo_points(done: np.ndarray) -> Iterator[int]:
    """Indices where ``done`` is False, in order, scanned ``SCAN_CHUNK`` at a time. ``done`` is read lazily, one
    chunk when the iteration reaches it: safe while the sweep marks points done, since a point is marked only after
    it was yielded (no copy of the mask is needed)."""
    for start in range(0, len(done), SCAN_CHUNK):
        for p in np.flatnonzero(~done[start:start + SCAN_CHUNK]):
            yield start + int(p)


def run_sweep(spec: SweepSpec, out: str, backend: LocalBackend | RayBackend, *, resume: bool = False,
              overwrite: bool = False, progress: bool = True, stream: TextIO | None = None,
              on_point: Callable[[dict[str, Any]], None] | None = None,
              flush_points: int = DEFAULT_FLUSH_POINTS, flush_s: float = DEFAULT_FLUSH_S,
              on_notes: Callable[[list[str]], None] | None = None) -> SweepReport:
    """Run (or resume) ``spec`` on ``backend``, storing one row per finished point in ``out``.

    Parameters
    ----------
    spec : SweepSpec
        The sweep (every point already validated).
    out : str
        ``.csv`` or ``.parquet`` output (see ``ResultStore``).
    backend : LocalBackend or RayBackend
        Where tasks run: ``backend.run(spec, tasks)`` consumes an iterator of (k, 2) int64 (point, block) arrays and
        yields task-row arrays as tasks complete.
    resume, overwrite, progress, stream : see ``rfviz sweep --help``.
    on_point : callable, optional
        Called with each point's row after it is stored.
    flush_points, flush_s : int, float
        Rows are made durable every ``flush_points`` points or ``flush_s`` seconds, whichever comes first.
    on_notes : callable, optional
        Called before any work with what ``--resume`` dropped (stored rows found broken or repeated, recomputed).

    Returns
    -------
    SweepReport
        Status, counts, timings and the store's resume notes.

    Notes
    -----
    KeyboardInterrupt (Ctrl-C) stops the backend, flushes every finished point, marks the manifest interrupted and
    propagates (the CLI exits with 130). The output's lock (``sweep_lock``) is held throughout: a second sweep of
    the same ``out`` is refused (ParameterError) while this one runs.

    Examples
    --------
    >>> run_sweep(spec, "runs/a.csv", make_backend("local"), progress=False).status  # doctest: +SKIP
    'complete'
    """
    ResultStore.check_out(out, resume=resume, overwrite=overwrite)  # before the lock file is made beside it
    with sweep_lock(out):
        return _run_locked(spec, out, backend, resume=resume, overwrite=overwrite, progress=progress, stream=stream,
                           on_point=on_point, flush_points=flush_points, flush_s=flush_s, on_notes=on_notes)


def _run_locked(spec: SweepSpec, out: str, backend: LocalBackend | RayBackend, *, resume: bool, overwrite: bool,
                progress: bool, stream: TextIO | None, on_point: Callable[[dict[str, Any]], None] | None,
                flush_points: int, flush_s: float, on_notes: Callable[[list[str]], None] | None) -> SweepReport:
    store = ResultStore(out, spec, resume=resume, overwrite=overwrite, flush_points=flush_points, flush_s=flush_s)
    notes = [*store.notes] + ([f"... {store.dropped - len(store.notes)} more"]
                              if store.dropped > len(store.notes) else [])
    if notes and on_notes is not None:
        on_notes(notes)
    started = time.perf_counter()
    nb = spec.n_blocks
    bar = Progress(spec.n_points, store.n_done, spec.trials, stream=stream, enabled=progress, tasks_per_point=nb)
    partial: dict[int, list[np.ndarray]] = {}
    finished = trials = 0
    status = "interrupted"
    try:
        for rows in backend.run(spec, iter_tasks(spec, todo_points(store.done))):
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
            bar.slots = max(1, backend.stats.slots)
            bar.update(points=new_points, trials=trials_now, task_seconds=rows[:, COL["seconds"]])
        status = "complete"
    finally:
        store.close(complete=status == "complete")
        bar.finish()
    return SweepReport(status, spec.n_points, store.n_done, finished, trials, time.perf_counter() - started,
                       backend.name, backend.stats, str(out), notes=notes)


def sweep_spec(name: str, fixed: dict[str, str], axes: list[str], *, trials: int, seed: int,
               block_trials: int | None, device: str, resume: bool, overwrite: bool) -> SweepSpec:
    """The validated ``SweepSpec`` of a sweep request (``rfviz sweep`` and ``rfviz.api.sweep``), before any backend
    starts: the device name, resume vs overwrite, the estimator, the grid and every grid point.

    Parameters
    ----------
    name : a registered estimator.
    fixed : fixed parameters and inputs as text (``{"d": "64"}``).
    axes : the grid's axes as text (``["theta=0:pi:8", "m=8,16"]``).
    trials, seed : per point, and the sweep's seed.
    block_trials : trials per task (None: DEFAULT_SWEEP_BLOCK).
    device : auto, cpu, cuda or cuda:N (``DEVICE_PARAM``; resolved later by ``sweep_device``).
    resume, overwrite : at most one.

    Returns
    -------
    SweepSpec
        With device "cpu" until the backend says which device it has.

    Examples
    --------
    >>> sweep_spec("trig", {"d": "4"}, ["theta=0,1"], trials=10, seed=0, block_trials=None, device="cpu",
    ...            resume=False, overwrite=False).estimator
    'trig'
    """
    from ..estimators import get_estimator
    from ..params import DEVICE_PARAM, ParameterError, check
    from .grid import parse_grid
    from .tasks import DEFAULT_SWEEP_BLOCK

    check(device, DEVICE_PARAM)
    if resume and overwrite:
        raise ParameterError("resume and overwrite exclude each other: give one of them")
    grid = parse_grid(axes, get_estimator(name), fixed)
    block = DEFAULT_SWEEP_BLOCK if block_trials is None else block_trials
    return SweepSpec(name, fixed, grid, trials, seed, block, "cpu")


def sweep_device(device: str, backend_name: str, backend: LocalBackend | RayBackend) -> str:
    """The device a sweep runs on: ``auto`` → the backend's default; ``cuda`` on a local backend without CUDA is
    refused (ParameterError).

    Parameters
    ----------
    device : auto, cpu or cuda.
    backend_name : local or ray.
    backend : the started backend.

    Returns
    -------
    str
        cpu or cuda.

    Examples
    --------
    >>> sweep_device("cpu", "local", LocalBackend())  # doctest: +SKIP
    'cpu'
    """
    from ..params import DEVICE_PARAM, ParameterError, check
    from ..sampling import resolve_device

    name = check(device, DEVICE_PARAM)
    chosen = backend.default_device() if name == "auto" else name
    if chosen.startswith("cuda") and backend_name == "local":
        if backend.default_device() != "cuda":
            raise ParameterError(f"device {chosen}: no CUDA GPU is visible to this process")
        resolve_device(chosen)  # cuda:N: a GPU torch sees
    if chosen.startswith("cuda:") and backend_name != "local":
        raise ParameterError(f"device {chosen} names a GPU of this machine; on Ray give cuda (Ray places each task "
                             f"on a GPU)")
    return chosen
