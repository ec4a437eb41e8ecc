"""``rfviz.sweep`` (and ``rfviz sweep``): Monte Carlo of one estimator over a grid, one row per point, resumable —
orchestrated once, here: validation before any backend starts, the output check, the writer's lock, the backend,
the run. The CLI parses its text into these typed values, adds the SIGTERM handling and prints the summary line.

The sweep's manifest records the fixed values and the axes as text (``rfviz.sweeps.grid.spec_text``), so a sweep
started by the CLI resumes from the API and back; that text is written from validated typed values.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..params import CLI_D_PARAM, DEVICE_PARAM, R_PARAM, SEED_PARAM, THETA_PARAM, Param, ParameterError, check
from ..sweeps.tasks import SWEEP_TRIALS_PARAM
from .results import Result
from .validation import Instance, api_function

SWEEP_BLOCK_TRIALS_PARAM = Param("block_trials", 4096, "int", "trials per task", low=1)
FLAG = {name: Param(name, False, "bool", f"{name} (true or false)") for name in ("resume", "overwrite", "progress")}


@dataclasses.dataclass(frozen=True)
class SweepResult(Result):
    """A finished (or resumed) sweep: where its rows are and how it ran; ``rows()`` reads them.

    Parameters
    ----------
    out : str
        The result file.
    status : str
        ``complete`` or how it ended.
    points_done, points_total, points_this_run : int
        Points stored, in the grid, and computed by this run.
    wall_s : float
        Seconds this run took.
    backend : str
        Where it ran.
    trials_this_run : int
        Trials computed by this run (not in ``to_dict()``).
    stats : object
        The backend's batching statistics (``batches``, ``batch_tasks``, ``utilisation``; not in ``to_dict()``).

    Examples
    --------
    >>> import os, tempfile, rfviz
    >>> out = os.path.join(tempfile.mkdtemp(), "s.csv")
    >>> rfviz.sweep("trig", out, grid={"theta": [0.5]}, trials=4096, d=4, m=8, device="cpu").to_dict()["status"]
    'complete'
    """

    out: str
    status: str
    points_done: int
    points_total: int
    points_this_run: int
    wall_s: float
    backend: str
    trials_this_run: int = dataclasses.field(default=0, metadata={"json": False})
    stats: Any = dataclasses.field(default=None, repr=False, compare=False, metadata={"json": False})

    def rows(self) -> Any:
        """The result rows as a pandas DataFrame (read from the CSV or Parquet output).

        Returns
        -------
        pandas.DataFrame
            One row per grid point, the columns of the sweep file.
        """
        from ..compute.sweep_files import read_rows

        return read_rows(self.out)


def _fixed_texts(name: str, fixed: Mapping[str, Any]) -> dict[str, str]:
    """The fixed values, each validated as a typed value (the estimator's Param, or r, θ, d, embedding), as the
    manifest's text."""
    from ..estimators import get_estimator
    from ..geometry import snap_theta
    from ..sweeps.grid import spec_text

    specs = {p.name: p for p in get_estimator(name).spec} if isinstance(name, str) else {}
    inputs = {"r": R_PARAM, "d": CLI_D_PARAM}
    out: dict[str, str] = {}
    for key, value in fixed.items():
        if value is None:
            continue
        if key == "theta":
            number = check(value, dataclasses.replace(THETA_PARAM, low=None, high=None))
            value = check(snap_theta(number), THETA_PARAM)
        elif key in inputs:
            value = check(value, inputs[key])
        elif key == "embedding":
            Instance("embedding", (str,), "the name of an embedding").validate(value)
        elif key in specs:
            value = check(value, specs[key])
        out[key] = spec_text(key, value)
    return out


def _axes(grid: Any) -> list[str]:
    """The grid's axes as ``name=values`` texts (a mapping of lists or ``start:stop:count`` texts, or such texts)."""
    from ..sweeps.grid import axis_text

    if isinstance(grid, Mapping):
        return [axis_text(str(k), v) for k, v in grid.items()]
    if isinstance(grid, list | tuple) and all(isinstance(a, str) for a in grid):
        return list(grid)
    raise ParameterError(f"grid must be a mapping of axes or a list of name=values texts, got {str(grid)[:40]!r}")


SWEEP_CONSTRAINTS = {"name": Instance("estimator", (str,), "the name of a registered estimator"),
                     "out": Instance("out", (str, pathlib.PurePath), "a .csv or .parquet path"),
                     "trials": SWEEP_TRIALS_PARAM, "seed": SEED_PARAM, "block_trials": SWEEP_BLOCK_TRIALS_PARAM,
                     "backend": Param("backend", "local", "choice", "where the sweep runs", choices=("local", "ray")),
                     "device": DEVICE_PARAM, **FLAG,
                     "backend_options": Instance("backend_options", (Mapping,), "a mapping of backend options")}
"""The constraints of :func:`sweep` (the fixed values are checked by the estimator's Params)."""


@api_function(SWEEP_CONSTRAINTS)
def sweep(name: str, out: str | pathlib.Path, *, grid: Mapping[str, Any] | Sequence[str], trials: int = 100_000,
          seed: int = 0, block_trials: int | None = None, backend: str = "local", device: str = "auto",
          resume: bool = False, overwrite: bool = False, progress: bool = False,
          flush_points: int | None = None, flush_seconds: float | None = None,
          backend_options: Mapping[str, Any] | None = None, on_note: Callable[[str], None] | None = None,
          **fixed: Any) -> SweepResult:
    """Monte Carlo of one estimator over a grid, one row per point, resumable (``rfviz sweep``).

    Parameters
    ----------
    name : str
        A registered estimator.
    out : str or path
        The result file, ``.csv`` or ``.parquet`` (a ``.manifest.json`` is written beside it).
    grid : mapping or sequence of str
        Axes: ``{"theta": "0:3.1416:8", "m": [8, 16]}`` or ``["theta=0:3.1416:8", "m=8,16"]``.
    trials : int
        Trials per grid point.
    seed : int
        Sweep seed (task seeds derive from seed, point, block).
    block_trials : int, optional
        Trials per task (default 4096).
    backend : str
        ``local`` or ``ray``.
    device : str
        ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (``rfviz.params.DEVICE_PARAM``; cuda:N on the local backend only).
    resume, overwrite : bool
        Continue an interrupted sweep / replace an existing file.
    progress : bool
        A progress line on stderr.
    flush_points, flush_seconds : int, float, optional
        Make rows durable every N finished points or T seconds (defaults of ``rfviz.sweeps.store``).
    backend_options : mapping, optional
        ``address``, ``workers``, ``max_retries``, ``task_seconds``, ``gpus_per_task``, ``connect_timeout`` (Ray).
    on_note : callable, optional
        Receives each note of the run (the backend's, and points dropped and recomputed on resume).
    **fixed
        Fixed estimator parameters and inputs (r, theta, d, embedding), typed values.

    Returns
    -------
    SweepResult
        ``status``, ``points_done``, ...; ``rows()`` reads the rows.

    Examples
    --------
    >>> import os, tempfile, rfviz
    >>> out = os.path.join(tempfile.mkdtemp(), "s.csv")
    >>> res = rfviz.sweep("trig", out, grid={"theta": [0.5, 1.0]}, trials=4096, d=4, m=8, device="cpu")
    >>> res.points_done, len(res.rows())
    (2, 2)
    """
    from ..sweeps import make_backend
    from ..sweeps.ray_backend import RAY_PARAMS, validate_ray_options
    from ..sweeps.runner import sweep_spec
    from ..sweeps.store import DEFAULT_FLUSH_POINTS, DEFAULT_FLUSH_S, ResultStore, check_flush, sweep_lock

    spec = sweep_spec(name, _fixed_texts(name, fixed), _axes(grid), trials=trials, seed=seed,
                      block_trials=block_trials, device=device, resume=resume, overwrite=overwrite)
    flush_points = DEFAULT_FLUSH_POINTS if flush_points is None else flush_points
    flush_seconds = DEFAULT_FLUSH_S if flush_seconds is None else flush_seconds
    check_flush(flush_points, flush_seconds)
    ResultStore.check_out(str(out), resume=resume, overwrite=overwrite)  # before a backend starts, writes nothing
    options = dict(backend_options or {})
    ray_options = validate_ray_options({p.name: options.pop(p.name) for p in RAY_PARAMS if p.name in options})
    with sweep_lock(str(out)):  # one writer per output, held from before the backend starts to the end
        runner = make_backend(backend, address=options.pop("address", None), workers=options.pop("workers", None),
                              **options, **ray_options)
        return _run(spec, str(out), runner, backend, device, resume=resume, overwrite=overwrite, progress=progress,
                    flush=(flush_points, flush_seconds), on_note=on_note)


def _run(spec: Any, out: str, runner: Any, backend: str, device: str, *, resume: bool, overwrite: bool,
         progress: bool, flush: tuple[int, float], on_note: Callable[[str], None] | None) -> SweepResult:
    """Run the validated sweep on the started backend (closed at the end) and describe the run."""
    from .. import sweeps
    from ..sweeps.runner import sweep_device

    if getattr(runner, "note", None) and on_note is not None:
        on_note(runner.note)
    try:
        spec = dataclasses.replace(spec, device=sweep_device(device, backend, runner))
        report = sweeps.run_sweep(spec, out, runner, resume=resume, overwrite=overwrite, progress=progress,
                           flush_points=flush[0], flush_s=flush[1],
                           on_notes=None if on_note is None else lambda notes: [
                               on_note(f"resume: dropped and recomputed {n}") for n in notes])
    finally:
        runner.close()
    return SweepResult(out=out, status=report.status, points_done=report.points_done,
                       points_total=report.points_total, points_this_run=report.points_this_run,
                       wall_s=report.wall_s if math.isfinite(report.wall_s) else 0.0, backend=report.backend,
                       trials_this_run=report.trials_this_run, stats=report.stats)
