"""Sweeps over large grids: (grid point × block of trials) tasks on this process or on Ray, resumable.

``SweepSpec`` (what to compute) + ``parse_grid`` (the ``--grid`` syntax) + a backend (``make_backend``) +
``run_sweep`` (drive, pool, store). Ray is imported only by the Ray backend.
"""

from .backends import LocalBackend, RayBackend, make_backend
from .grid import INPUTS, Axis, Grid, parse_axis, parse_grid
from .runner import SweepReport, run_sweep
from .tasks import SweepSpec, combine, point_row, run_task, run_tasks, task_seed

__all__ = ["INPUTS", "Axis", "Grid", "LocalBackend", "RayBackend", "SweepReport", "SweepSpec", "combine",
           "make_backend", "parse_axis", "parse_grid", "point_row", "run_sweep", "run_task", "run_tasks",
           "task_seed"]
