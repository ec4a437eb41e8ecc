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

import itertools
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..compute.sweep_files import RESULT_COLUMNS
from ..diagnostics import Moments, assess_mse
from ..engine import BLOCK_TRIALS_PARAM, DEFAULT_BLOCK_TRIALS, monte_carlo, spawn_seed
from ..estimators import Estimator, get_estimator  # the package: get_estimator needs the catalog loaded
from ..geometry import check_d, check_r, check_theta
from ..numerics import LOG10
from ..params import DEVICE_PARAM, ENGINE_TRIALS_PARAM, SEED_PARAM, ParameterError, check
from ..params import MAX_TRIALS as ENGINE_MAX_TRIALS
from ..verdicts import (
    PRECISION_LOSS,
    bonferroni_disagrees,
    exact_at_roundoff,
    iid_witness,
    log_mse_stderr_theory,
    log_witness_stderr,
    precision_loss,
    roundoff_floor,
    sweep_point_reliability,
    theory_reliability,
    vetoed,
    witness_reliability,
    z_against_closed_form,
)
from .grid import INPUTS, Grid

TASK_FIELDS = ("point", "block", "n", "log_scale", "mean_e", "m2_e", "mean_r_re", "mean_r_im", "m2_r", "seconds")
"""Columns of the float64 array a task returns (one row per task)."""
COL = {name: i for i, name in enumerate(TASK_FIELDS)}
DEFAULT_SWEEP_BLOCK = 4096
"""Default trials per task: large enough that a task costs far more than its scheduling, small enough that a
point of 10⁶ trials spreads over hundreds of tasks."""
MAX_TRIALS = 10**13
MAX_TASKS = 10**9
MAX_TASK_TRIALS = ENGINE_MAX_TRIALS
"""Most trials of one task (one ``engine.monte_carlo`` call): a block holds up to 2·block_trials − 1 trials."""
LOG_MAX = 709.0  # exp overflows float64 above this
TASK_CHUNK = 4096
"""Most (point, block) pairs per array handed to ``backend.run`` (``iter_tasks``)."""
SWEEP_TRIALS_PARAM = replace(ENGINE_TRIALS_PARAM, help="Monte-Carlo trials per grid point", high=MAX_TRIALS)
"""A sweep's trials per point (split into tasks, so beyond one engine run's cap)."""


def task_seed(seed: int, point: int, block: int) -> int:
    """Seed of task (point, block): the one seed rule, ``rfviz.engine.spawn_seed(seed, point, block)``."""
    return spawn_seed(seed, point, block)


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
        for spec in (SWEEP_TRIALS_PARAM, SEED_PARAM, BLOCK_TRIALS_PARAM, DEVICE_PARAM):
            object.__setattr__(self, spec.name, check(getattr(self, spec.name), spec))
        if self.device == "auto":
            raise ParameterError("device must be cpu, cuda or cuda:N once resolved, got 'auto'")
        if self.block_size(0) > MAX_TASK_TRIALS:  # before any file: one task is one engine run
            raise ParameterError(f"block_trials: a task of this sweep would run {self.block_size(0)} trials, more "
                                 f"than one Monte-Carlo call runs ({MAX_TASK_TRIALS:.0e}); give --block-trials at "
                                 f"most {MAX_TASK_TRIALS // 2:.0e}")
        specs = {p.name for p in cls.spec}
        for key in self.fixed:
            if key not in specs and key not in INPUTS:
                raise ParameterError(f"{self.estimator} has no parameter or input {key!r}; choose from: "
                                     f"{', '.join([*specs, *INPUTS])}")
        if self.n_tasks > MAX_TASKS:
            raise ParameterError(f"the sweep has {self.n_tasks} tasks (points × blocks); at most {MAX_TASKS:.0e}: "
                                 f"raise block_trials or shrink the grid")
        validate_points(self)  # every point's parameters, before any work

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
        est, x, y, d = setup_values(self.estimator, self.values(point))
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


def read_params(cls: type[Estimator], params: dict[str, Any]) -> dict[str, Any]:
    """A sweep's estimator parameters as typed values: the manifest's text (``true``, ``1+0.5j``, ``16``) is read
    by the estimator's Params (``Param.parse``); typed values pass as they are.

    Examples
    --------
    >>> read_params(get_estimator("trig"), {"m": "16", "coupling": "orthogonal"})
    {'m': 16, 'coupling': 'orthogonal'}
    """
    specs = {p.name: p for p in cls.spec}
    return {k: specs[k].parse(v) if isinstance(v, str) and k in specs else v for k, v in params.items()}


def setup_values(estimator: str, values: dict[str, Any]) -> tuple[Estimator, np.ndarray, np.ndarray, int]:
    """(estimator, x, y, d) of one set of parameter and input values (ParameterError when invalid)."""
    cls = get_estimator(estimator)
    est = cls(**read_params(cls, {k: v for k, v in values.items() if k not in INPUTS}))
    r = float(check_r(_num("r", values.get("r", INPUTS["r"]))))
    theta = float(check_theta(_num("theta", values.get("theta", INPUTS["theta"]))))
    d = check_d(_num("d", values.get("d", INPUTS["d"])))
    x, y = est.grid_pairs(r, theta, d, str(values.get("embedding", INPUTS["embedding"])))
    if x.ndim != 1:
        raise ParameterError("embedding must place one pair (averaging embeddings are not supported by sweep)")
    return est, x, y, d


def _axis_or_fixed(spec: SweepSpec, name: str) -> tuple[Any, ...]:
    """The values an input takes in the sweep: its grid axis, else its fixed value, else its default."""
    for axis in spec.grid.axes:
        if axis.name == name:
            return axis.values
    return (spec.fixed.get(name, INPUTS[name]),)


def _at(names: tuple[str, ...], combo: tuple[Any, ...], exc: ParameterError) -> ParameterError:
    where = ", ".join(f"{n}={v}" for n, v in zip(names, combo, strict=True))
    return ParameterError(f"grid point {where}: {exc}") if where else exc


def validate_points(spec: SweepSpec) -> None:
    """Check every grid point's parameters before any work, at the cost of the interacting axes, not the grid size.

    * ``r``: each value on its own (it interacts with nothing);
    * the estimator: every combination of its parameter axes (cross-parameter checks in its constructor), each
      with every ``d`` (``check_dimension``);
    * the pair: for every (d, embedding), all θ values at once (``grid_pairs`` is vectorised over θ; d = 1 admits
      only θ ∈ {0, π}), and one full ``setup_values`` at the first values.

    Raises
    ------
    ParameterError
        Naming the first invalid combination (e.g. ``grid point d=1, theta=0.5: ...``).
    """
    cls = get_estimator(spec.estimator)
    r_values = np.array([_num("r", v) for v in _axis_or_fixed(spec, "r")])
    check_r(r_values)
    ds = [check_d(_num("d", v)) for v in _axis_or_fixed(spec, "d")]
    thetas = np.array([_num("theta", v) for v in _axis_or_fixed(spec, "theta")])
    check_theta(thetas)
    embeddings = _axis_or_fixed(spec, "embedding")
    fixed_params = {k: v for k, v in spec.fixed.items() if k not in INPUTS}
    param_axes = [a for a in spec.grid.axes if a.name not in INPUTS]
    names = tuple(a.name for a in param_axes)
    est = None
    for combo in itertools.product(*(a.values for a in param_axes)):
        try:
            e = cls(**read_params(cls, {**fixed_params, **dict(zip(names, combo, strict=True))}))
        except ParameterError as exc:
            raise _at(names, combo, exc) from None
        est = est or e
        for d in ds:
            try:
                e.check_dimension(d)
            except ParameterError as exc:
                raise _at((*names, "d"), (*combo, d), exc) from None
    assert est is not None
    for d, emb in itertools.product(ds, embeddings):
        try:
            est.grid_pairs(float(r_values[0]), thetas, d, str(emb))
        except ParameterError:
            for theta in thetas:  # find the first failing θ
                try:
                    est.grid_pairs(float(r_values[0]), float(theta), d, str(emb))
                except ParameterError as exc:
                    raise _at(("d", "embedding", "theta"), (d, emb, float(theta)), exc) from None
            raise
        values = {**spec.fixed, **{a.name: a.values[0] for a in spec.grid.axes}, "d": d, "embedding": emb}
        try:
            setup_values(spec.estimator, values)
        except ParameterError as exc:
            raise _at(("d", "embedding"), (d, emb), exc) from None


NUMERIC_ERRORS = (FloatingPointError, OverflowError, ZeroDivisionError)


def run_task(spec: SweepSpec, point: int, block: int) -> np.ndarray:
    """Run task (point, block): one ``monte_carlo`` call; returns its row of ``TASK_FIELDS``.

    A numeric failure inside the estimator (overflow, underflow to 0/0) does not end the sweep: the row holds NaN
    statistics, and the point's output row then has null Monte-Carlo values and a note (``point_row``)."""
    est, x, y, d = spec.setup(point)
    started = time.perf_counter()
    n = spec.block_size(block)
    try:
        with np.errstate(all="ignore"):
            res = monte_carlo(est, x, y, d=d, trials=n, seed=task_seed(spec.seed, point, block), device=spec.device,
                              block_trials=spec.engine_block_trials)
            mean_r = complex(np.asarray(res.mean_ratio).ravel()[0])
            se = float(res.rel_mse_stderr[0])
            sd = float(res.ratio_sd[0])
            stats = [float(res.log_scale[0]), float(res.rel_mse[0]), se * se * n * (n - 1), mean_r.real,
                     mean_r.imag, sd * sd * (n - 1)]
    except NUMERIC_ERRORS:
        stats = [math.nan] * 6
    return np.array([point, block, n, *stats, time.perf_counter() - started])


def task_pairs(tasks: np.ndarray, n_blocks: int) -> np.ndarray:
    """(k, 2) int64 (point, block) pairs: ``tasks`` as given, or flat task ids t → (t // n_blocks, t % n_blocks)."""
    a = np.asarray(tasks, dtype=np.int64)
    if a.ndim == 2 and a.shape[1] == 2:
        return a
    if a.ndim == 1:
        return np.stack([a // n_blocks, a % n_blocks], axis=1)
    raise ValueError(f"tasks must be (k, 2) (point, block) pairs or flat task ids, got shape {a.shape}")


def run_tasks(spec: SweepSpec, tasks: np.ndarray) -> np.ndarray:
    """Rows for a batch of tasks: (k, 2) int64 (point, block) pairs (or flat task ids, see ``task_pairs``)."""
    pairs = task_pairs(tasks, spec.n_blocks)
    return np.stack([run_task(spec, int(p), int(b)) for p, b in pairs])


def iter_tasks(spec: SweepSpec, points: Iterable[int], chunk: int = TASK_CHUNK) -> Iterator[np.ndarray]:
    """The (point, block) tasks of ``points`` (in the order given), lazily, as (k, 2) int64 arrays of k ≤ ``chunk``
    rows: memory O(chunk) whatever the grid size (the contract of ``backend.run``).

    Examples
    --------
    >>> next(iter_tasks(small, [3, 5], chunk=4)).tolist()  # doctest: +SKIP
    [[3, 0], [3, 1], [5, 0], [5, 1]]
    """
    if not 1 <= chunk <= TASK_CHUNK:
        raise ParameterError(f"chunk must be an integer in [1, {TASK_CHUNK}], got {chunk}")
    nb = spec.n_blocks
    per = max(1, chunk // nb)  # whole points per chunk when they fit
    buf: list[int] = []

    def emit(pts: list[int]) -> Iterator[np.ndarray]:
        arr = np.asarray(pts, dtype=np.int64)
        total = len(arr) * nb
        for start in range(0, total, chunk):
            idx = np.arange(start, min(start + chunk, total), dtype=np.int64)
            yield np.stack([arr[idx // nb], idx % nb], axis=1)

    for p in points:
        buf.append(int(p))
        if len(buf) >= per:
            yield from emit(buf)
            buf = []
    if buf:
        yield from emit(buf)


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


def _witnessed(est: Estimator, x: np.ndarray, y: np.ndarray, d: int, log_mse: float | None, trials: int,
               reliable: bool, warning: str | None) -> tuple[bool, str | None, float]:
    """(reliable, warning, log standard error of the sampled MSE predicted by the witness; −inf: none) of a sample
    after the iid witness of ``est`` (rfviz.verdicts.iid_witness, witness_reliability, vetoed, log_witness_stderr
    against the closed-form ``log_mse``): unchanged where there is none or its closed forms fail here."""
    witness = iid_witness(est)
    if witness is None:
        return reliable, warning, -math.inf
    try:
        w_mse = float(np.ravel(witness.log_mse(x, y, d))[0])
        w_m4 = -math.inf if w_mse == -math.inf else float(np.ravel(witness.log_fourth_central_moment(x, y, d))[0])
    except (ValueError, ArithmeticError, NotImplementedError):
        return reliable, warning, -math.inf
    report = witness_reliability(w_mse, w_m4, trials, est.params["coupling"])
    ok, words, _ = vetoed(reliable, warning, math.nan, report)
    log_se = -math.inf if log_mse is None else float(
        log_witness_stderr(log_mse, w_mse, w_m4, trials, int(est.params.get("m", 1))))
    return bool(ok), words[()], log_se


def _point_verdict(est: Estimator, x: np.ndarray, y: np.ndarray, d: int, log_mse: float | None,
                   stats: PointStats) -> tuple[bool, str | None, float]:
    """(reliable, warning, standard error of the sampled MSE relative to e^{2s}) of a finished point: the
    closed-form fourth moment decides where the estimator has one (rfviz.verdicts.theory_reliability; the
    standard error is then the larger of sampled and predicted), the sample elsewhere (assess_mse); a point where
    every estimate underflowed to 0 is never reliable (its sampled MSE is just K²). Without a fourth moment, a
    coupled estimator's sample is vetoed by its iid witness, and its standard error is the larger of the sampled
    one and the one the witness predicts (rfviz.verdicts.iid_witness, log_witness_stderr)."""
    e = stats.errors
    verdict = assess_mse(e, top_share=stats.top_share, parts=stats.parts)
    reliable, warning, se_rel = verdict.reliable, verdict.warning, e.stderr
    if log_mse is not None and est.fourth_moment_available():
        log_m4 = -math.inf if log_mse == -math.inf else float(np.ravel(est.log_fourth_central_moment(x, y, d=d))[0])
        theory = theory_reliability(log_mse, log_m4, e.count)
        reliable, warning = bool(theory.reliable), theory.warning[()]
        with np.errstate(over="ignore"):
            se_rel = max(se_rel, float(np.exp(log_mse_stderr_theory(log_mse, log_m4, e.count) - 2 * stats.log_scale)))
    else:
        reliable, warning, log_se = _witnessed(est, x, y, d, log_mse, e.count, reliable, warning)
        with np.errstate(over="ignore"):
            se_rel = max(se_rel, float(np.exp(log_se - 2 * stats.log_scale)))
    if stats.mean_r == 0 and e.mean > 0 and e.m2 == 0:
        reliable, warning = False, "precision loss: every sampled estimate underflowed to 0, so the sampled MSE is K²"
    elif log_mse is not None and math.isfinite(stats.log_scale) and precision_loss(
            math.exp(min(log_mse - 2 * stats.log_scale, LOG_MAX)), e.mean,
            roundoff_floor(d, int(est.params.get("m", 1)))).item():
        reliable, warning = False, PRECISION_LOSS  # a sample at round-off where the closed form is not
    return reliable, warning, se_rel





def output_columns(grid: Grid) -> list[str]:
    """Every column of a sweep's output, in order: ``point``, the grid axes, ``RESULT_COLUMNS``."""
    return ["point", *grid.names, *RESULT_COLUMNS]


def _scaled(value: float, log_scale: float) -> tuple[float | None, str | None]:
    """``value · e^{log_scale}`` as a float, or None with the reason when it overflows or is not finite."""
    if not (math.isfinite(value) and math.isfinite(log_scale)):
        return None, "not finite"
    if value == 0:
        return 0.0, None
    log_abs = math.log(abs(value)) + log_scale
    if log_abs > LOG_MAX:
        return None, "overflows float64"
    if log_scale <= LOG_MAX:
        return value * math.exp(log_scale), None  # the product as before (bitwise-identical rows)
    return math.copysign(math.exp(log_abs), value), None


def _mc_moments(stats: PointStats) -> tuple[float | None, float | None, float, float, list[str]]:
    """(mc_mse, stderr, log mc_mse, log stderr, notes) of a point's pooled squared errors."""
    s, e = stats.log_scale, stats.errors
    if not (math.isfinite(s) and math.isfinite(e.mean) and math.isfinite(e.m2)):
        return None, None, math.nan, math.nan, ["Monte Carlo failed: numeric overflow or underflow in the "
                                                 "estimates (values null)"]
    log_mc = 2 * s + math.log(e.mean) if e.mean > 0 else -math.inf
    log_se = 2 * s + math.log(e.stderr) if e.stderr > 0 else -math.inf
    notes = []
    mc_mse = 0.0 if log_mc == -math.inf else _exp_or_none(log_mc)
    stderr = 0.0 if log_se == -math.inf else _exp_or_none(log_se)
    if mc_mse is None or stderr is None:
        notes.append("Monte-Carlo MSE or its standard error overflows float64 (null; see log10_mc_mse)")
    return mc_mse, stderr, log_mc, log_se, notes


def _exact(est: Estimator, d: int, log_mse: float | None, stats: PointStats) -> bool:
    """Closed form and sampled MSE both at float64 round-off relative to the point's scale e^{2s}
    (rfviz.verdicts.exact_at_roundoff with ``roundoff_floor(d, m)``): exact, never a disagreement."""
    if log_mse is None or not math.isfinite(stats.log_scale):
        return False
    floor = roundoff_floor(d, int(est.params.get("m", 1)))
    closed_rel = math.exp(min(log_mse - 2 * stats.log_scale, LOG_MAX))
    return bool(exact_at_roundoff(closed_rel, stats.errors.mean, floor))


def _z_score(log_mse: float | None, stats: PointStats, se_rel: float) -> float | None:
    """(MC mean − closed form) / ``se_rel`` (the standard error of the sampled MSE, sampled or predicted by the
    fourth moment, whichever is larger) in the point's scaled units; None when either is unavailable."""
    e, s = stats.errors, stats.log_scale
    if log_mse is None or not (se_rel > 0 and math.isfinite(se_rel) and math.isfinite(e.mean)):
        return None
    if log_mse - 2 * s > LOG_MAX:  # the closed form is > e^709 of the scaled errors: z is hugely negative
        log_ratio = log_mse - 2 * s - math.log(se_rel)
        return -math.exp(min(log_ratio, LOG_MAX)) if log_ratio <= LOG_MAX else -math.inf
    return float(z_against_closed_form(e.mean, math.exp(log_mse - 2 * s), se_rel))  # rfviz.verdicts


def _reliability(verdict: tuple[bool, str | None] | None, stderr: float | None, z: float | None, notes: list[str],
                 exact: bool) -> tuple[bool, str | None]:
    """The point's ``verdict`` (from ``_point_verdict``; none when the Monte Carlo failed), made unreliable by any
    note (a null value), a standard error of 0 (unless ``exact``: every error 0 and a closed-form MSE of 0) or
    |z| > ``MAX_RELIABLE_Z``; the warning joins the reasons."""
    reasons = list(notes)
    if verdict is not None and verdict[1]:
        reasons.append(verdict[1])
    reasons += sweep_point_reliability(stderr, z, exact)  # rfviz.verdicts: SE 0 or |z| > MAX_RELIABLE_Z
    reliable = verdict is not None and verdict[0] and not reasons
    return reliable, "; ".join(reasons) or None


def point_row(spec: SweepSpec, stats: PointStats, backend: str) -> dict[str, Any]:
    """The output row of a finished point (see the README's sweep section for the columns).

    Never raises on extreme numbers: a value that overflows float64 (or a Monte Carlo that failed) is null, the
    ``warning`` says why and ``reliable`` is False; so is a point with |z| > 10⁶, or standard error 0 unless the
    estimate is exact (every error 0 and a closed-form MSE of 0)."""
    est, x, y, d = spec.setup(stats.point)
    closed_notes: list[str] = []
    with np.errstate(all="ignore"):
        try:
            log_k, sign = est.kernel_log_value(x, y, d=d)
            log_k, sign = float(np.ravel(log_k)[0]), float(np.ravel(sign)[0])
        except (ValueError, ArithmeticError) as exc:
            log_k, sign = math.nan, 1.0
            closed_notes.append(f"kernel value failed ({str(exc)[:80]})")
        log_mse: float | None = None
        if est.closed_form_available():
            try:
                log_mse = float(np.ravel(est.log_mse(x, y, d=d))[0])
            except NotImplementedError:
                log_mse = None
            except (ValueError, ArithmeticError) as exc:
                closed_notes.append(f"closed-form MSE failed ({str(exc)[:80]})")
    if log_mse is not None and math.isnan(log_mse):
        log_mse = None
    mc_mse, stderr, log_mc, _, notes = _mc_moments(stats)
    failed = math.isnan(log_mc)  # the Monte Carlo itself overflowed: no statistics at all
    verdict, se_rel = None, stats.errors.stderr
    if not failed:
        with np.errstate(all="ignore"):
            point_reliable, why, se_rel = _point_verdict(est, x, y, d, log_mse, stats)
        verdict = (point_reliable, why)
    exact = not failed and _exact(est, d, log_mse, stats)  # both at float64 round-off: not tested (rfviz.verdicts)
    z = None if failed or exact else _z_score(log_mse, stats, se_rel)
    mc_mean, why = _scaled(stats.mean_r.real, stats.log_scale)
    if why and not notes:
        notes.append(f"mean estimate {why} (null)")
    kernel_value = None if not math.isfinite(log_k) or log_k > LOG_MAX else sign * math.exp(log_k)
    reliable, warning = _reliability(verdict, stderr, z, notes, exact)
    warning = "; ".join([*([warning] if warning else []), *closed_notes]) or None  # the MC verdict stands
    return {
        "point": stats.point,
        **spec.grid.point(stats.point),
        "estimator": spec.estimator,
        "kernel_value": 0.0 if log_k == -math.inf else kernel_value,
        "mse": None if log_mse is None else (0.0 if log_mse == -math.inf else _exp_or_none(log_mse)),
        "mc_mse": mc_mse,
        "stderr": stderr,
        "z": z if z is None or math.isfinite(z) else None,
        "log10_mse": None if log_mse is None else _log10(log_mse),
        "log10_mc_mse": None if math.isnan(log_mc) else _log10(log_mc),
        "mc_mean": mc_mean,
        "top_share": stats.top_share if math.isfinite(stats.top_share) else None,
        "reliable": reliable,
        "warning": warning,
        "disagrees": bonferroni_disagrees(z, reliable, spec.grid.size, exact=exact),
        "trials": stats.errors.count,
        "seed": spec.seed,
        "device": spec.device,
        "backend": backend,
        "seconds": stats.seconds,
    }
