"""Task decomposition of a sweep: (grid point × block of trials) tasks, their seeds, and exact recombination.

* A point's ``trials`` are split into ``n_blocks = max(1, trials // block_trials)`` blocks of near-equal size
  (each between block_trials and 2·block_trials − 1 trials); task t is (point t // n_blocks, block t % n_blocks).
* Task (point, block) runs ``rfviz.engine.monte_carlo`` with its own seed drawn from
  ``numpy.random.SeedSequence([seed, point, block])``: the numbers depend on (seed, trials, block_trials, device),
  never on which backend or worker ran the task, in which order, or whether the sweep was resumed.
* A task returns one float64 row (``TASK_FIELDS``): counts, means and M2s relative to the point's log-scale,
  recovered from the engine's ``MCResult`` (M2 = stderr²·n·(n−1) for the squared errors, sd²·(n−1) for K̂).
  Blocks are pooled exactly by Chan et al.'s update, in block order (bitwise reproducible).
* Heavy tails: ``MCResult`` exposes no per-trial squared errors, so the per-point "largest parts" statistic is
  the share of the total squared error carried by the largest *block* (see ``rfviz.diagnostics.assess_mse``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..diagnostics import Moments, assess_mse
from ..engine import DEFAULT_BLOCK_TRIALS, monte_carlo
from ..estimators import Estimator, get_estimator  # the package: get_estimator needs the catalog loaded
from ..geometry import check_d, check_r, check_theta
from ..numerics import LOG10
from ..params import ParameterError
from .grid import INPUTS, Grid

TASK_FIELDS = ("point", "block", "n", "log_scale", "mean_e", "m2_e", "mean_r_re", "mean_r_im", "m2_r", "seconds")
"""Columns of the float64 array a task returns (one row per task)."""
COL = {name: i for i, name in enumerate(TASK_FIELDS)}
DEFAULT_SWEEP_BLOCK = 4096
"""Default trials per task: large enough that a task costs far more than its scheduling, small enough that a
point of 10⁶ trials spreads over hundreds of tasks."""
MAX_TRIALS = 10**13
MAX_TASKS = 10**9
LOG_MAX = 709.0  # exp overflows float64 above this


def task_seed(seed: int, point: int, block: int) -> int:
    """Seed of task (point, block): a 63-bit integer from SeedSequence([seed, point, block])."""
    state = np.random.SeedSequence([int(seed), int(point), int(block)]).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


@dataclass(frozen=True)
class SweepSpec:
    """Everything that determines a sweep's numbers (stored in the manifest; compared on ``--resume``)."""

    estimator: str
    fixed: dict[str, Any]
    grid: Grid
    trials: int
    seed: int = 0
    block_trials: int = DEFAULT_SWEEP_BLOCK
    device: str = "cpu"
    engine_block_trials: int = DEFAULT_BLOCK_TRIALS
    _cache: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        cls = get_estimator(self.estimator)
        if isinstance(self.trials, bool) or int(self.trials) != self.trials or not 2 <= self.trials <= MAX_TRIALS:
            raise ParameterError(f"trials must be an integer in [2, {MAX_TRIALS:.0e}], got {self.trials}")
        if isinstance(self.seed, bool) or int(self.seed) != self.seed or not 0 <= self.seed < 2**63:
            raise ParameterError(f"seed must be an integer in [0, 2^63), got {self.seed}")
        if int(self.block_trials) != self.block_trials or self.block_trials < 2:
            raise ParameterError(f"block_trials must be an integer in [2, inf), got {self.block_trials}")
        if self.device not in ("cpu", "cuda"):
            raise ParameterError(f"device must be cpu or cuda once resolved, got {self.device!r}")
        specs = {p.name for p in cls.spec}
        for key in self.fixed:
            if key not in specs and key not in INPUTS:
                raise ParameterError(f"{self.estimator} has no parameter or input {key!r}; choose from: "
                                     f"{', '.join([*specs, *INPUTS])}")
        if self.n_tasks > MAX_TASKS:
            raise ParameterError(f"the sweep has {self.n_tasks} tasks (points × blocks); at most {MAX_TASKS:.0e}: "
                                 f"raise block_trials or shrink the grid")
        self.setup(0)  # fail fast on an invalid combination (checks the first point only)

    def __getstate__(self) -> dict[str, Any]:  # the per-process cache does not travel to workers
        return {**self.__dict__, "_cache": {}}

    @property
    def n_points(self) -> int:
        return self.grid.size

    @property
    def n_blocks(self) -> int:
        return max(1, self.trials // self.block_trials)

    @property
    def n_tasks(self) -> int:
        return self.n_points * self.n_blocks

    def block_size(self, block: int) -> int:
        q, r = divmod(self.trials, self.n_blocks)
        return q + (1 if block < r else 0)

    def values(self, point: int) -> dict[str, Any]:
        """Fixed values and the point's grid values, merged."""
        return {**self.fixed, **self.grid.point(point)}

    def setup(self, point: int) -> tuple[Estimator, np.ndarray, np.ndarray, int]:
        """(estimator, x, y, d) of a grid point (cached per point in this process)."""
        hit = self._cache.get(point)
        if hit is not None:
            return hit
        values = self.values(point)
        params = {k: v for k, v in values.items() if k not in INPUTS}
        est = get_estimator(self.estimator)(**params)
        r = float(check_r(_num("r", values.get("r", INPUTS["r"]))))
        theta = float(check_theta(_num("theta", values.get("theta", INPUTS["theta"]))))
        d = check_d(_num("d", values.get("d", INPUTS["d"])))
        x, y = est.grid_pairs(r, theta, d, str(values.get("embedding", INPUTS["embedding"])))
        if x.ndim != 1:
            raise ParameterError("embedding must place one pair (averaging embeddings are not supported by sweep)")
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[point] = (est, x, y, d)
        return est, x, y, d

    def to_json(self) -> dict[str, Any]:
        return {"estimator": self.estimator, "fixed": {k: _plain(v) for k, v in self.fixed.items()},
                "grid": self.grid.to_json(), "trials": int(self.trials), "seed": int(self.seed),
                "block_trials": int(self.block_trials), "device": self.device,
                "engine_block_trials": int(self.engine_block_trials)}


def _plain(v: Any) -> Any:
    return v if isinstance(v, int | float | str | bool) else str(v)


def _num(name: str, v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {v!r}") from None
    if not math.isfinite(f):
        raise ParameterError(f"{name} must be finite, got {v!r}")
    return f


def run_task(spec: SweepSpec, point: int, block: int) -> np.ndarray:
    """Run task (point, block): one ``monte_carlo`` call; returns its row of ``TASK_FIELDS``."""
    est, x, y, d = spec.setup(point)
    started = time.perf_counter()
    n = spec.block_size(block)
    res = monte_carlo(est, x, y, d=d, trials=n, seed=task_seed(spec.seed, point, block), device=spec.device,
                      block_trials=spec.engine_block_trials)
    mean_r = complex(np.asarray(res.mean_ratio).ravel()[0])
    se = float(res.rel_mse_stderr[0])
    sd = float(res.ratio_sd[0])
    return np.array([point, block, n, float(res.log_scale[0]), float(res.rel_mse[0]), se * se * n * (n - 1),
                     mean_r.real, mean_r.imag, sd * sd * (n - 1), time.perf_counter() - started])


def run_tasks(spec: SweepSpec, tasks: np.ndarray) -> np.ndarray:
    """Rows for a batch of task ids (t → point t // n_blocks, block t % n_blocks)."""
    nb = spec.n_blocks
    return np.stack([run_task(spec, int(t) // nb, int(t) % nb) for t in tasks])


@dataclass(frozen=True)
class PointStats:
    """A point's pooled statistics, relative to e^{log_scale} (errors) and e^{log_scale} (estimates)."""

    point: int
    log_scale: float
    errors: Moments  # of |K̂ − K|²·e^{-2s}
    mean_r: complex  # mean of K̂·e^{-s}
    m2_r: float
    top_share: float
    parts: int
    seconds: float


def combine(rows: np.ndarray) -> PointStats:
    """Pool the task rows of one point (all its blocks), in block order: exact and reproducible."""
    rows = rows[np.argsort(rows[:, COL["block"]], kind="stable")]
    points = np.unique(rows[:, COL["point"]])
    if len(points) != 1:
        raise ValueError(f"combine expects the rows of one point, got points {points}")
    err, estimates = Moments(), Moments()
    for row in rows:
        n = int(row[COL["n"]])
        err = err.merge(Moments(n, float(row[COL["mean_e"]]), float(row[COL["m2_e"]])))
        mean_r = complex(row[COL["mean_r_re"]], row[COL["mean_r_im"]])
        estimates = estimates.merge(Moments(n, mean_r, float(row[COL["m2_r"]])))
    sums = rows[:, COL["n"]] * rows[:, COL["mean_e"]]
    total_sq = float(np.sum(sums))
    top = float(np.max(sums)) / total_sq if total_sq > 0 else 0.0
    return PointStats(int(points[0]), float(rows[0, COL["log_scale"]]), err, complex(estimates.mean), estimates.m2,
                      top, len(rows), float(np.sum(rows[:, COL["seconds"]])))


def _exp_or_none(log_value: float) -> float | None:
    return math.exp(log_value) if log_value <= LOG_MAX else None


def _log10(log_value: float) -> float | None:
    return log_value / LOG10 if math.isfinite(log_value) else None


def point_row(spec: SweepSpec, stats: PointStats, backend: str) -> dict[str, Any]:
    """The output row of a finished point (see the README's sweep section for the columns)."""
    est, x, y, d = spec.setup(stats.point)
    log_k, sign = est.kernel_log_value(x, y, d=d)
    log_k, sign = float(np.ravel(log_k)[0]), float(np.ravel(sign)[0])
    log_mse: float | None = None
    if est.closed_form_available():
        try:
            log_mse = float(np.ravel(est.log_mse(x, y, d=d))[0])
        except NotImplementedError:
            log_mse = None
    s = stats.log_scale
    e = stats.errors
    with np.errstate(divide="ignore"):
        log_mc = 2 * s + math.log(e.mean) if e.mean > 0 else -math.inf
        log_se = 2 * s + math.log(e.stderr) if e.stderr > 0 else -math.inf
    mc_mse = 0.0 if log_mc == -math.inf else _exp_or_none(log_mc)
    stderr = 0.0 if log_se == -math.inf else _exp_or_none(log_se)
    z: float | None = None
    if log_mse is not None and e.stderr > 0:
        expected_rel = math.exp(min(log_mse - 2 * s, LOG_MAX))
        z = (e.mean - expected_rel) / e.stderr
    verdict = assess_mse(e, top_share=stats.top_share, parts=stats.parts)
    mean_log = s + math.log(abs(stats.mean_r.real)) if stats.mean_r.real != 0 else -math.inf
    return {
        "point": stats.point,
        **spec.grid.point(stats.point),
        "estimator": spec.estimator,
        "kernel_value": None if log_k > LOG_MAX else sign * math.exp(log_k),
        "mse": None if log_mse is None else (0.0 if log_mse == -math.inf else _exp_or_none(log_mse)),
        "mc_mse": mc_mse,
        "stderr": stderr,
        "z": z,
        "log10_mse": None if log_mse is None else _log10(log_mse),
        "log10_mc_mse": _log10(log_mc),
        "mc_mean": None if mean_log > LOG_MAX else stats.mean_r.real * math.exp(s),
        "top_share": stats.top_share,
        "reliable": verdict.reliable,
        "warning": verdict.warning,
        "trials": e.count,
        "seed": spec.seed,
        "device": spec.device,
        "backend": backend,
        "seconds": stats.seconds,
    }
