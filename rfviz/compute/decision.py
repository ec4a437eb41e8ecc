"""One answer to "which estimator, and how many features, for my task": a ``Question`` in, an ``Answer`` out, the
same for every face (CLI ``rank-estimators --task``, ``rfviz.rank_estimators(data, task=...)``, ``features-needed
--task``, ``downstream``, the Your-data page).

A question is a kernel, a *task*, its data (preprocessing stated), a budget (feature length, m, or seconds of
feature-map time on this device) and a target ε. The answer ranks every applicable estimator, each tuned on the data
(``rfviz.compute.ranking``: coupling, GERF's A, the hybrids' split, ...), by **the task's own error**:

======== ===================================================================== ============================
task     error                                                                 how it is known
======== ===================================================================== ============================
kernel   root-mean relative pair error √(mean_ij MSE_ij/K_ij²) over the pairs  closed form, Monte-Carlo check
gram     relative Gram error √(Σ MSE_ij)/‖K‖_F (features shared by entries)   closed form, Monte-Carlo check
attention ‖ÂV − AV‖_F/‖AV‖_F, softmax attention (``downstream.attention_errors``) Monte Carlo over draws
ridge    |RMSE_rf − RMSE_exact|/RMSE_exact, Gaussian kernel ridge (``downstream.ridge_gaps``) Monte Carlo over draws
======== ===================================================================== ============================

Every sampled error goes through the verdict rules (``rfviz.gram_engine.gram_error`` for the Gram matrix,
``rfviz.gram_engine.assess_repeats`` for per-draw task errors); the order and the crown follow
``rfviz.verdicts.decision`` (an unreliable leader is said to be so and is not crowned). ``usable`` is true when the
crowned leader meets ε; otherwise ``needed_length`` is the smallest feature length at which this same core's answer
is usable (doubling from the budget, then bisection on multiples of ``LENGTH_STEP``), None above
``MAX_NEEDED_LENGTH``.

The time budget ranks at equal measured feature-map time: the caller passes a ``FeatureTimer`` (the faces use
``rfviz.timing``, which times ``rfviz.sklearn.RandomFeatures.transform`` on this device and caches it), and each
estimator gets the largest m whose map of the data fits in the seconds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..data import DataSet
from ..engine import spawn_seed
from ..estimators import Estimator, get_estimator
from ..gram_engine import assess_repeats, feature_count, gram_error
from ..params import M_PARAM, Param, ParameterError, check
from ..registries import COUPLINGS, FASTFOOD, SORF
from ..verdicts import GRAM_MIN_REPEATS, TARGET_REL_STDERR, crown_order, crowned
from . import downstream
from .catalog import estimators_for_kernel, make_estimator
from .features import EPS_PARAM, Target, data_target, log_relative_sq
from .ranking import LENGTH_PARAM, rank_estimators

TASKS = ("kernel", "gram", "attention", "ridge")
TASK_PARAM = Param("task", "gram", "choice", "what the features are for: kernel (each pair's kernel value), gram (the "
                   "Gram matrix), attention (softmax attention output), ridge (Gaussian kernel ridge regression)",
                   choices=TASKS, label="task")
BUDGETS = ("length", "m", "seconds")
BUDGET_PARAM = Param("budget", "length", "choice", "what is held equal across estimators: feature length (real "
                     "numbers per input), m (random projections) or seconds (measured feature-map time)",
                     choices=BUDGETS, label="budget")
SECONDS_PARAM = Param("seconds", 0.01, "float", "feature-map time of the data on this device, per estimator "
                      "(rfviz.sklearn.RandomFeatures.transform, measured)", low=0.0, high=3600.0, low_open=True,
                      ui_low=1e-4, ui_high=10.0, label="seconds")
DECISION_REPEATS_PARAM = Param("repeats", 16, "int", "feature draws per estimator for the Monte Carlo of the task "
                               "error (fewer than 10 are never called reliable)", low=2, high=10_000,
                               ui_low=10, ui_high=200, label="repeats")
DECISION_ALPHA_PARAM = Param("alpha", 1.0, "float", "ridge penalty α of the ridge task (random-feature and exact "
                             "models)", low=0.0, high=1e6, low_open=True, label="ridge α")
TASK_KERNEL = {"attention": "softmax", "ridge": "gaussian"}
"""The kernel a task fixes (kernel and gram take the question's)."""
ERROR_MEASURES = {
    "kernel": "root-mean relative pair error √(mean MSE/K²)",
    "gram": "relative Gram error √(Σ MSE)/‖K‖_F",
    "attention": "relative attention output error ‖ÂV − AV‖/‖AV‖",
    "ridge": "relative test-RMSE gap to exact kernel ridge |RMSE − RMSE_exact|/RMSE_exact"}
CONFIRMED = 3
"""How many leading rows of a closed-form task the Monte Carlo confirms (more if the leaders fall)."""
MAX_NEEDED_LENGTH = 16384
"""The longest feature length the needed-length search tries."""
LENGTH_STEP = 8
"""The needed length is searched on multiples of this."""
BISECTION_STEPS = 4
NEEDED_CANDIDATES = 4
"""The needed-length search ranks the estimators that led at the budget (this many, by error): the same core over
fewer candidates, so that each longer length costs what the budget's answer did."""
"""Bisection steps of the needed-length search after doubling (each runs the whole core)."""
MAX_REPEATS = 400
"""Most draws a row is given when its first sample is too short for the verdict (±10 %): one retry with the repeats
its relative standard error asks for (the Gram error: the repeats its fourth moments guarantee), at most this."""
STRUCTURED = (SORF, FASTFOOD)
"""Couplings without a closed form that the sampled tasks add to each estimator that has a coupling (O(d log d)
per block: what a time budget is for)."""
SECONDS_TUNING_LENGTH = 256
"""Length at which parameters are tuned for a time budget (each estimator's m then comes from its measured time)."""


class FeatureTimer(Protocol):
    """Measured feature-map time: the largest m of an estimator whose map of ``X`` takes at most ``seconds``
    (``rfviz.timing.DeviceTimer`` is one).

    Parameters
    ----------
    *args, **kwargs
        None: a structural type (any object with ``largest_m``).
    """

    def largest_m(self, name: str, params: Mapping[str, Any], X: np.ndarray, seconds: float) -> int | None:
        """The largest m whose feature map of ``X`` takes at most ``seconds`` (None: not even m = 1).

        Parameters
        ----------
        name : str
            The estimator.
        params : mapping
            Its parameters (kernel, coupling included).
        X : np.ndarray
            The data mapped.
        seconds : float
            The budget.

        Returns
        -------
        int or None
        """


@dataclass(frozen=True)
class TaskData:
    """The data a task runs on, as applied.

    Parameters
    ----------
    queries, keys : np.ndarray
        The two sides (ridge: training and test inputs).
    description : dict
        The source, ``preprocess`` and ``scale`` as applied.
    y_train, y_test : np.ndarray, optional
        The ridge task's targets.
    values : np.ndarray, optional
        The attention values V (None: drawn from the seed).
    """

    queries: np.ndarray
    keys: np.ndarray
    description: dict[str, Any]
    y_train: np.ndarray | None = None
    y_test: np.ndarray | None = None
    values: np.ndarray | None = None

    @classmethod
    def from_dataset(cls, ds: DataSet, y_train: np.ndarray | None = None,
                     y_test: np.ndarray | None = None) -> TaskData:
        """The task data of a loaded ``rfviz.data.DataSet`` (its description, labels dropped).

        Parameters
        ----------
        ds : DataSet
        y_train, y_test : np.ndarray, optional
            Regression targets (the ridge task).

        Returns
        -------
        TaskData

        Examples
        --------
        >>> from rfviz import data
        >>> td = TaskData.from_dataset(data.load("iris", queries=4, keys=4, steps=("standardize", "scale"),
        ...                                      scale=0.5))
        >>> td.description["preprocess"], td.description["scale"]
        (['standardize', 'scale'], 0.5)
        """
        info = {k: v for k, v in ds.describe().items() if not k.endswith("_labels")}
        info.setdefault("preprocess", [])
        info.setdefault("scale", None)
        return cls(ds.queries, ds.keys, info, y_train, y_test)


@dataclass(frozen=True)
class Question:
    """A question to the decision core (validated on construction).

    Parameters
    ----------
    data : TaskData
        The data as applied.
    task : str
        ``kernel``, ``gram``, ``attention`` or ``ridge``.
    kernel : str
        The target kernel (attention: softmax; ridge: gaussian).
    budget : str
        ``length``, ``m`` or ``seconds``.
    amount : float
        The budget's amount.
    eps : float
        The target error.
    names : tuple of str, optional
        The estimators ranked (default: every applicable one).
    repeats : int
        Feature draws of the Monte Carlo.
    seed : int
        Seed of the draws.
    device : str
        Where the Gram Monte Carlo runs.
    alpha : float
        The ridge task's penalty.
    """

    data: TaskData
    task: str = "gram"
    kernel: str = "softmax"
    budget: str = "length"
    amount: float = 128
    eps: float = 0.1
    names: tuple[str, ...] | None = None
    repeats: int = 16
    seed: int = 0
    device: str = "cpu"
    alpha: float = 1.0

    def __post_init__(self) -> None:
        task = check(self.task, TASK_PARAM)
        kernel = TASK_KERNEL.get(task, self.kernel)
        if task in TASK_KERNEL and self.kernel not in (kernel, "softmax"):
            raise ParameterError(f"kernel must be {kernel} for task={task}, got {self.kernel!r}")
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "kernel", kernel)
        object.__setattr__(self, "budget", check(self.budget, BUDGET_PARAM))
        amount = {"length": LENGTH_PARAM, "m": M_PARAM, "seconds": SECONDS_PARAM}[self.budget]
        object.__setattr__(self, "amount", check(self.amount, amount))
        object.__setattr__(self, "eps", check(self.eps, EPS_PARAM))
        object.__setattr__(self, "repeats", check(self.repeats, DECISION_REPEATS_PARAM))
        object.__setattr__(self, "alpha", check(self.alpha, DECISION_ALPHA_PARAM))
        if task == "ridge" and (self.data.y_train is None or self.data.y_test is None):
            raise ParameterError("task=ridge needs regression targets (data with y_train and y_test: "
                                 "rfviz.data.regression_data)")
        if self.names is not None:
            object.__setattr__(self, "names", tuple(self.names))


@dataclass(frozen=True)
class Row:
    """One estimator's line of a ranking.

    Parameters
    ----------
    estimator : str
        The estimator.
    params : dict
        Its tuned parameters.
    m : int or None
        Random projections.
    length : int or None
        Real numbers per input.
    error, stderr : float or None
        The task's error and its standard error (0 for a closed form).
    reliable : bool or None
        The Monte-Carlo verdict (None: not sampled).
    source : str
        ``closed form``, ``monte carlo`` or ``none``.
    warning : str, optional
        Why a sample is unreliable, or why there is no error.
    monte_carlo : dict, optional
        A closed-form task's sampled check.
    repeats : int, optional
        Feature draws of a sampled task.
    """

    estimator: str
    params: dict[str, Any]
    m: int | None
    length: int | None
    error: float | None
    stderr: float | None
    reliable: bool | None
    source: str
    warning: str | None = None
    monte_carlo: dict[str, Any] | None = None
    repeats: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row's JSON object (``estimator``, ``params``, ``length``, ``error``, ``stderr``, ``reliable``, then
        ``m``, ``source``, ``warning`` and ``monte_carlo`` where sampled).

        Returns
        -------
        dict
        """
        out = {"estimator": self.estimator, "params": dict(self.params), "length": self.length, "error": self.error,
               "stderr": self.stderr, "reliable": self.reliable, "m": self.m, "source": self.source,
               "warning": self.warning, "repeats": self.repeats}
        if self.monte_carlo is not None:
            out["monte_carlo"] = dict(self.monte_carlo)
        return out


@dataclass(frozen=True)
class Answer:
    """The ranking (best first; the first crowned only if reliable), whether it meets ε, and the length that would.

    Parameters
    ----------
    task, kernel : str
        The task and its kernel.
    eps : float
        The target error.
    budget : dict
        ``kind`` and ``amount``.
    ranking : tuple of Row
        Best first.
    usable : bool
        Whether the crowned leader meets ε.
    needed_length : int or None
        The smallest length at which the answer is usable (where it is not).
    data : dict
        The data as applied.
    crowned : bool
        Whether the first row's Monte Carlo is reliable.
    note : str
        A remark.
    needed : Row, optional
        The first row at ``needed_length``.
    """

    task: str
    kernel: str
    eps: float
    budget: dict[str, Any]
    ranking: tuple[Row, ...]
    usable: bool
    needed_length: int | None
    data: dict[str, Any]
    crowned: bool
    note: str = ""
    needed: Row | None = field(default=None)

    @property
    def first(self) -> Row | None:
        """The first line of the ranking (None: no estimator applies)."""
        return self.ranking[0] if self.ranking else None

    def headline(self, titles: Mapping[str, str] | None = None) -> str:
        """The answer in one line: the first row, its error ± standard error in the task's units, and the verdict.

        Parameters
        ----------
        titles : mapping, optional
            Estimator name → the title shown (default: the name).

        Returns
        -------
        str
        """
        first = self.first
        if first is None or first.error is None:
            return f"no estimator applies to task {self.task} here"
        unc = f" ± {first.stderr:.2g}" if first.stderr else " (closed form)"
        name = (titles or {}).get(first.estimator, first.estimator)
        what = f"{name} at length {first.length}: {ERROR_MEASURES[self.task]} {first.error:.3g}{unc}"
        if not self.crowned:
            return f"no reliable leader: {what}, but its Monte Carlo is unreliable"
        if self.usable:
            return f"{what} ≤ ε = {self.eps:g}"
        more = (f"; length {self.needed_length} would" if self.needed_length is not None else
                f"; no length up to {MAX_NEEDED_LENGTH} does")
        return f"not usable yet: best {what} > ε = {self.eps:g}{more}"

    def to_dict(self) -> dict[str, Any]:
        """The answer's JSON: ``task``, ``ranking``, ``usable``, ``needed_length``, ``data`` (``preprocess`` and
        ``scale`` as applied), then ``kernel``, ``eps``, ``budget``, ``error_measure``, ``crowned``, ``headline``,
        ``needed`` (the first row at ``needed_length``) and ``note``.

        Returns
        -------
        dict
        """
        return {"task": self.task, "ranking": [r.to_dict() for r in self.ranking], "usable": self.usable,
                "needed_length": self.needed_length, "data": dict(self.data), "kernel": self.kernel,
                "eps": self.eps, "budget": dict(self.budget), "error_measure": ERROR_MEASURES[self.task],
                "crowned": self.crowned, "headline": self.headline(),
                "needed": self.needed.to_dict() if self.needed is not None else None, "note": self.note}


# ------------------------------------------------------------------------------------------------ candidates
def applicable(task: str, kernel: str) -> list[str]:
    """The estimators a task ranks: the kernel's estimators with a closed form (their tuning needs it); the ridge
    task keeps the symmetric maps of ``downstream.RIDGE_ESTIMATORS`` (one φ for both sides of a ridge model).

    Parameters
    ----------
    task : str
        One of ``TASKS``.
    kernel : str
        The target kernel (attention: softmax, ridge: gaussian).

    Returns
    -------
    list of str

    Examples
    --------
    >>> applicable("ridge", "gaussian")
    ['trig', 'trig_phase', 'positive', 'positive_antithetic', 'gerf']
    """
    kernel = TASK_KERNEL.get(task, kernel)
    names = [n for n in estimators_for_kernel(kernel) if get_estimator(n).has_closed_form]
    if task == "ridge":
        names = [n for n in downstream.RIDGE_ESTIMATORS if n in names]
    return names


def _names(q: Question) -> list[str]:
    names = applicable(q.task, q.kernel)
    if q.names is None:
        return names
    for name in q.names:
        get_estimator(name)  # unknown: ParameterError listing the registered ones
        if name not in names:
            raise ParameterError(f"{name} does not apply to task={q.task} (kernel {q.kernel}); estimators that do: "
                                 f"{', '.join(names)}")
    return list(q.names)


def _tuning_pairs(q: Question) -> tuple[np.ndarray, np.ndarray]:
    """The pairs the parameters are tuned on: training × training for ridge, queries × keys otherwise."""
    x = q.data.queries
    return (x, x) if q.task == "ridge" else (x, q.data.keys)


def _length_of(est: Estimator, d: int) -> int | None:
    row = np.zeros((1, d))
    row[0, 0] = 1.0
    try:
        return round(feature_count(est, row))
    except NotImplementedError:
        return None


def _symmetric(est: Estimator, x: np.ndarray) -> bool:
    import torch

    samples = est.sample(1, x.shape[1], generator=torch.Generator().manual_seed(0), device=torch.device("cpu"))
    u = torch.as_tensor(x[:2], dtype=torch.float64)
    return bool(torch.equal(est.features(samples, u, "query"), est.features(samples, u, "key")))


@dataclass(frozen=True)
class _Candidate:
    name: str
    params: dict[str, Any]
    m: int | None
    note: str = ""


def _candidates(q: Question, names: Sequence[str], timer: FeatureTimer | None) -> list[_Candidate]:
    """Every estimator tuned on the data (``rfviz.compute.ranking``) at the budget: its parameters and m."""
    x, y = _tuning_pairs(q)
    if q.budget == "length":
        length, m = int(q.amount), None
    elif q.budget == "m":
        length, m = min(int(LENGTH_PARAM.high), 2 * int(q.amount)), int(q.amount)
    else:
        length, m = SECONDS_TUNING_LENGTH, None
    if q.budget == "seconds" and timer is None:
        raise ParameterError("budget=seconds needs a feature timer (rfviz.timing.DeviceTimer)")
    once = tuple(dict.fromkeys(names)) if names else names  # each estimator once (a name repeated is refused)
    ranking = rank_estimators(x, y, q.kernel, length=length, m=m, names=once)
    out = []
    for r in ranking.rows:
        for params in (_variants(q, r.estimator, dict(r.params)) if not r.note else [dict(r.params)]):
            chosen = r.m_equal_length if q.budget == "length" else m
            if q.budget == "seconds" and timer is not None:
                chosen = timer.largest_m(r.estimator, {**params, "kernel": q.kernel}, q.data.queries,
                                         float(q.amount))
            out.append(_Candidate(r.estimator, params, chosen, r.note if chosen is None else ""))
    return out


def _variants(q: Question, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The tuned parameters, and for the sampled tasks (attention, ridge) the same with the structured couplings
    (``STRUCTURED``: no closed form, so the tuning cannot pick them; a sampled task judges them like the others)."""
    out = [params]
    if q.task in ("attention", "ridge") and "coupling" in {p.name for p in get_estimator(name).spec}:
        d = q.data.queries.shape[1]
        out += [{**params, "coupling": c} for c in STRUCTURED if COUPLINGS[c].min_d <= d and params.get("coupling")
                != c]
    return out


def _key(name: str, params: Mapping[str, Any]) -> tuple[str, Any]:
    return name, params.get("coupling")


# ------------------------------------------------------------------------------------------------ task errors
def _closed_error(q: Question, est: Estimator) -> float | None:
    """The closed-form task error of the kernel and gram tasks (None: none; inf: overflow)."""
    x, y = q.data.queries, q.data.keys
    target = data_target(x, y) if q.task == "gram" else Target("mean", x[:, None, :], y[None, :, :], x.shape[1])
    try:
        log_sq = log_relative_sq(est, target)[0]
    except (NotImplementedError, FloatingPointError, OverflowError, ParameterError):
        return None
    return math.exp(0.5 * log_sq) if log_sq < 1400 else math.inf


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(v)):
        return math.inf, math.inf
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size))


def _sampled_row(q: Question, c: _Candidate, est: Estimator, length: int | None, repeats: int) -> Row:
    """An attention or ridge row: the task error's mean ± standard error over the draws, with its verdict."""
    def draws(repeats: int) -> np.ndarray:
        if q.task == "attention":
            values = q.data.values if q.data.values is not None else downstream.attention_values(len(q.data.keys),
                                                                                                  q.seed)
            return downstream.attention_errors(est, q.data.queries, q.data.keys, values, repeats, q.seed)
        return downstream.ridge_gaps(est, q.data.queries, q.data.y_train, q.data.keys, q.data.y_test, repeats,
                                     q.alpha, q.seed)[0]

    try:
        errs = draws(repeats)
    except (NotImplementedError, FloatingPointError, ValueError) as exc:
        return Row(c.name, c.params, c.m, length, None, None, None, "monte carlo", " ".join(str(exc).split())[:200])
    mean, se = _mean_se(errs)
    if not math.isfinite(mean):
        return Row(c.name, c.params, c.m, length, None, None, False, "monte carlo",
                   "the features overflowed float64 on this data in some draws")
    verdict = assess_repeats(errs)
    return Row(c.name, c.params, c.m, length, mean, se, verdict.reliable, "monte carlo", verdict.warning,
               repeats=int(errs.size))


def _retry_repeats(values: np.ndarray) -> int:
    """The draws a sample's relative standard error asks for to reach ±10 % (with a 25 % margin), at most
    ``MAX_REPEATS``; its own size where it is already reliable or not finite."""
    verdict = assess_repeats(values)
    mean, se = _mean_se(values)
    if verdict.reliable or not math.isfinite(mean) or mean <= 0:
        return int(values.size)
    wanted = math.ceil(1.25 * values.size * (se / mean / TARGET_REL_STDERR) ** 2)
    return int(min(MAX_REPEATS, max(wanted, GRAM_MIN_REPEATS)))


def _enough(draws: Callable[[int], np.ndarray], repeats: int) -> np.ndarray:
    """``draws(repeats)``, drawn once more with the repeats its verdict asks for when it is too short."""
    values = draws(repeats)
    more = _retry_repeats(values)
    return draws(more) if more > values.size else values


def _row(q: Question, c: _Candidate, repeats: int | None = None) -> Row:
    """One candidate evaluated on the task (closed form for kernel and gram, Monte Carlo for attention and ridge)."""
    if c.m is None:
        return Row(c.name, c.params, None, None, None, None, None, "none", c.note or "no m fits the budget")
    try:
        est = make_estimator(c.name, {**c.params, "m": c.m}, q.kernel)
        est.check_dimension(q.data.queries.shape[1])
    except ParameterError as exc:
        return Row(c.name, c.params, c.m, None, None, None, None, "none", str(exc)[:200])
    if q.task == "ridge" and not _symmetric(est, q.data.queries):  # a ridge model has one φ: defaults
        est = make_estimator(c.name, {"m": c.m}, q.kernel)
        c = dataclasses.replace(c, params={k: v for k, v in est.params.items() if k != "m"})
    params = {k: v for k, v in est.params.items() if k != "m"}
    c = dataclasses.replace(c, params=params)
    length = _length_of(est, q.data.queries.shape[1])
    if q.task in ("attention", "ridge"):
        return _sampled_row(q, c, est, length, repeats or q.repeats)
    error = _closed_error(q, est)
    return Row(c.name, params, c.m, length, error, 0.0 if error is not None else None, None, "closed form",
               None if error is not None else "no closed form here")


def _kernel_mc(q: Question, est: Estimator, repeats: int) -> np.ndarray:
    """Per draw, mean_ij (K̂_ij − K_ij)²/K_ij² (features shared by the entries)."""
    from ..gram_engine import kernel_matrix

    x, y = q.data.queries, q.data.keys
    k = kernel_matrix(est, x, y)
    values = []
    for r in range(repeats):
        pq, samples = downstream._features(est, x, spawn_seed(q.seed, downstream.FEATURES_KEY, r), "query")
        pk, _ = downstream._features(est, y, 0, "key", samples)
        with np.errstate(all="ignore"):
            values.append(float(np.mean(((pq @ pk.T) - k) ** 2 / k**2)))
    return np.asarray(values)


def _confirm(q: Question, row: Row) -> Row:
    """A closed-form row checked by Monte Carlo through the verdict rules (gram: ``gram_error``; kernel: the pair
    errors per draw, ``assess_repeats``); reliable only if the sample is and does not disagree."""
    from ..verdicts import agreement, sample_skewness, skew_corrected_z, z_against_closed_form

    est = make_estimator(row.estimator, {**row.params, "m": row.m}, q.kernel)
    try:
        if q.task == "gram":
            g = gram_error(est, q.data.queries, q.data.keys, q.repeats, q.seed, q.device, row.estimator)
            wanted = g.repeats_needed if g.repeats_needed is not None else math.inf
            if not g.reliable and q.repeats < wanted <= MAX_REPEATS:  # its fourth moments say how many suffice
                g = gram_error(est, q.data.queries, q.data.keys, math.ceil(wanted), q.seed, q.device, row.estimator)
            if g.frobenius_sq_mc is None:
                return dataclasses.replace(row, reliable=False, warning=g.note or "no Monte Carlo")
            mc = math.sqrt(g.frobenius_sq_mc / g.kernel_frobenius_sq)
            se = g.stderr / (2 * math.sqrt(g.frobenius_sq_mc * g.kernel_frobenius_sq)) if g.frobenius_sq_mc else 0.0
            ok, word, warning = bool(g.reliable), g.agreement, g.warning
        else:
            values = _enough(lambda n: _kernel_mc(q, est, n), q.repeats)
            mean, se2 = _mean_se(values)
            verdict = assess_repeats(values) if math.isfinite(mean) else None
            ok, warning = (verdict.reliable, verdict.warning) if verdict else (False, "features overflowed")
            mc, se = (math.sqrt(mean), se2 / (2 * math.sqrt(mean)) if mean > 0 else 0.0) if verdict else (None, None)
            z = (float(skew_corrected_z(z_against_closed_form(mean, (row.error or 0.0) ** 2, se2),
                                        sample_skewness(values), values.size)) if verdict and se2 > 0 else None)
            word = agreement(z, ok) if z is not None else None
    except (NotImplementedError, FloatingPointError) as exc:
        return dataclasses.replace(row, reliable=False, warning=f"no Monte Carlo: {exc}")
    reliable = ok and word != "disagrees"
    return dataclasses.replace(row, reliable=reliable, warning=warning, monte_carlo={
        "error": mc, "stderr": se, "reliable": ok, "agreement": word})


def _ordered(rows: Sequence[Row]) -> list[Row]:
    order = crown_order([r.error for r in rows], [r.reliable for r in rows])
    return [rows[i] for i in order]


def _confirmed(q: Question, rows: list[Row]) -> list[Row]:
    """Closed-form tasks: sample the leading rows until the first ``CONFIRMED`` are all sampled."""
    rows = _ordered(rows)
    while True:
        todo = [i for i, r in enumerate(rows[:CONFIRMED]) if r.reliable is None and r.error is not None]
        if not todo:
            return rows
        for i in todo:
            rows[i] = _confirm(q, rows[i])
        rows = _ordered(rows)


# ------------------------------------------------------------------------------------------------ the answer
def _firm_leader(q: Question, rows: list[Row], candidates: Sequence[_Candidate]) -> list[Row]:
    """Attention and ridge: a row whose sample was too short for the verdict and whose error is below the crowned
    leader's (or any, where none is crowned) is drawn again with the repeats its relative standard error asks for
    (``MAX_REPEATS`` at most), then the rows are re-ordered; at most ``CONFIRMED`` rows, each once."""
    by_key = {_key(c.name, c.params): c for c in candidates}
    retried: set[tuple[str, Any]] = set()
    for _ in range(CONFIRMED):
        leader = rows[0] if rows and rows[0].reliable else None
        waiting = [r for r in rows if r.reliable is False and r.error is not None and r.stderr is not None
                   and (leader is None or r.error < leader.error) and _key(r.estimator, r.params) in by_key
                   and _key(r.estimator, r.params) not in retried]
        if not waiting:
            return rows
        row = min(waiting, key=lambda r: r.error)
        key = _key(row.estimator, row.params)
        retried.add(key)
        n = row.repeats or q.repeats
        wanted = math.ceil(1.25 * n * (row.stderr / row.error / TARGET_REL_STDERR) ** 2) if row.error else n
        more = int(min(MAX_REPEATS, max(wanted, GRAM_MIN_REPEATS)))
        if more > n:
            rows = _ordered([_row(q, by_key[key], more) if r is row else r for r in rows])
    return rows


def _rank(q: Question, timer: FeatureTimer | None) -> tuple[list[Row], bool, bool]:
    """The ordered rows, whether the first is crowned and whether it meets ε."""
    candidates = _candidates(q, _names(q), timer)
    rows = [_row(q, c) for c in candidates]
    rows = _confirmed(q, rows) if q.task in ("kernel", "gram") else _firm_leader(q, _ordered(rows), candidates)
    first = rows[0] if rows else None
    crown = first is not None and first.error is not None and crowned(first.reliable)
    return rows, crown, bool(crown and first is not None and first.error is not None and first.error <= q.eps)


DECIDE_STAGES = ("tuning, ranking and confirming by Monte Carlo", "searching the length that would be usable")
"""The stages of :func:`decide` as its ``report`` sees them (the second runs only when the answer is not usable)."""


def decide(q: Question, timer: FeatureTimer | None = None, search_needed: bool = True,
           report: Callable[[float], None] | None = None) -> Answer:
    """The answer to a question (see the module's docstring).

    Parameters
    ----------
    q : Question
    timer : FeatureTimer, optional
        Needed for ``budget="seconds"`` (``rfviz.timing.DeviceTimer``).
    search_needed : bool
        Whether to search ``needed_length`` when the answer is not usable.
    report : callable, optional
        ``report(fraction)`` at the start of each of ``DECIDE_STAGES`` and at the end.

    Returns
    -------
    Answer

    Examples
    --------
    >>> from rfviz import data
    >>> td = TaskData.from_dataset(data.load("iris", queries=8, keys=8, steps=("standardize", "scale"), scale=0.5))
    >>> a = decide(Question(td, task="gram", kernel="gaussian", amount=64, names=("trig", "positive"), repeats=10))
    >>> a.first.estimator, a.to_dict()["data"]["preprocess"]
    ('trig', ['standardize', 'scale'])
    """
    tell = report or (lambda fraction: None)
    tell(0.0)
    rows, crown, usable = _rank(q, timer)
    needed, needed_row = (None, None)
    if not usable and search_needed:
        tell(0.5)
        needed, needed_row = needed_length(q, rows, timer)
    tell(1.0)
    note = "" if crown or not rows else "the leader's Monte Carlo is unreliable: not crowned"
    budget = {"kind": q.budget, "amount": q.amount}
    return Answer(q.task, q.kernel, float(q.eps), budget, tuple(rows), usable, needed, dict(q.data.description),
                  crown, note, needed_row)


def needed_length(q: Question, rows: Sequence[Row] = (), timer: FeatureTimer | None = None
                  ) -> tuple[int | None, Row | None]:
    """The smallest feature length (on multiples of ``LENGTH_STEP``) at which this core's answer is usable: doubling
    from the budget's length, then ``BISECTION_STEPS`` bisection steps, over the ``NEEDED_CANDIDATES`` estimators
    that led at the budget; None above ``MAX_NEEDED_LENGTH``.

    Parameters
    ----------
    q : Question
    rows : sequence of Row
        The rows at the budget (their longest length starts the doubling).
    timer : FeatureTimer, optional

    Returns
    -------
    (int or None, Row or None)
        The length and the first row of the answer there.
    """
    start = int(q.amount) if q.budget == "length" else max([r.length or 0 for r in rows] + [LENGTH_STEP])
    start = max(LENGTH_STEP, LENGTH_STEP * math.ceil(start / LENGTH_STEP))

    leaders = tuple(r.estimator for r in rows if r.error is not None)[:NEEDED_CANDIDATES] or q.names

    def at(length: int) -> tuple[bool, Row | None]:
        rows_l, _, ok = _rank(dataclasses.replace(q, budget="length", amount=length, names=leaders), timer)
        return ok, rows_l[0] if rows_l else None

    lo, hi, best = start, 2 * start, None
    while hi <= MAX_NEEDED_LENGTH:
        ok, first = at(hi)
        if ok:
            best = first
            break
        lo, hi = hi, 2 * hi
    if best is None:
        return None, None
    for _ in range(BISECTION_STEPS):
        mid = LENGTH_STEP * round((lo + hi) / 2 / LENGTH_STEP)
        if mid <= lo or mid >= hi:
            break
        ok, first = at(mid)
        if ok:
            hi, best = mid, first
        else:
            lo = mid
    return hi, best


def smallest_length(q: Question, timer: FeatureTimer | None = None) -> tuple[int | None, Answer]:
    """The smallest feature length at which the core's answer to ``q`` meets ε (``features-needed --task``): the
    answer at ``LENGTH_STEP`` numbers per input, then :func:`needed_length` from there (the question's budget is
    ignored).

    Parameters
    ----------
    q : Question
    timer : FeatureTimer, optional

    Returns
    -------
    (int or None, Answer)
        The length (None: none up to ``MAX_NEEDED_LENGTH``) and the answer at ``LENGTH_STEP``, whose
        ``needed_length``/``needed`` carry the search's result.

    Examples
    --------
    >>> from rfviz import data
    >>> td = TaskData.from_dataset(data.load("iris", queries=6, keys=6, steps=("standardize", "scale"), scale=0.5))
    >>> length, answer = smallest_length(Question(td, task="gram", eps=0.2, names=("trig",), repeats=10))
    >>> length is not None and length % LENGTH_STEP == 0
    True
    """
    answer = decide(dataclasses.replace(q, budget="length", amount=LENGTH_STEP), timer)
    if answer.usable:
        return LENGTH_STEP, dataclasses.replace(answer, needed_length=LENGTH_STEP, needed=answer.first)
    return answer.needed_length, answer


def answer_table(answer: Answer, titles: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The ranking as table rows for a page: the verdict right beside each row's error (visible on a phone without
    scrolling), then the length, m, the Monte-Carlo check of a closed-form task and the tuned parameters.

    Parameters
    ----------
    answer : Answer
    titles : mapping, optional
        Estimator name → the title shown.

    Returns
    -------
    list of dict

    Examples
    --------
    >>> row = Row("trig", {"coupling": "iid"}, 16, 32, 0.1, 0.0, True, "closed form")
    >>> a = Answer("gram", "softmax", 0.2, {}, (row,), True, None, {}, True)
    >>> list(answer_table(a)[0])[:5]
    ['rank', 'estimator', 'error', '± stderr', 'reliable']
    """
    out = []
    for i, r in enumerate(answer.ranking, 1):
        mc = r.monte_carlo or {}
        row = {"rank": i, "estimator": (titles or {}).get(r.estimator, r.estimator), "error": r.error,
               "± stderr": r.stderr, "reliable": {True: "yes", False: "NO", None: "not sampled"}[r.reliable],
               "length": r.length, "m": r.m}
        if answer.task in ("kernel", "gram"):
            row.update({"Monte Carlo": mc.get("error"), "MC ± stderr": mc.get("stderr"),
                        "MC agreement": mc.get("agreement")})
        row.update({"parameters": ", ".join(f"{k}={v}" for k, v in r.params.items() if k != "kernel") or "—",
                    "warning": r.warning or ""})
        out.append(row)
    return out


def load_task_data(source: str, task: str = "gram", *, queries: int | None = None, keys: int | None = None,
                   preprocess: Sequence[str] | str | None = None, scale: float | None = None, seed: int = 0,
                   keys_data: str | None = None, data_params: Mapping[str, Any] | None = None) -> TaskData:
    """A task's data from a source name, every unset option from the one set of data defaults
    (``rfviz.data.DATA_DEFAULTS``), so that the app, the CLI and the API load the same numbers.

    Parameters
    ----------
    source : str
        A bundled set, ``clusters`` or a .csv/.npy path (ridge: one of ``rfviz.data.REGRESSION_SOURCES``).
    task : str
        One of ``TASKS`` (ridge loads inputs and targets, training and test points as queries and keys).
    queries, keys : int, optional
        Points drawn (default ``DATA_DEFAULTS.queries``/``keys``).
    preprocess : sequence of str or str, optional
        Steps in order (``"center,scale"``, ``"none"``; default ``DATA_DEFAULTS.steps_for(source)``).
    scale : float, optional
        Mean norm after the scale step (default ``DATA_DEFAULTS.scale``).
    seed : int
        Seed of the draw.
    keys_data, data_params : as ``rfviz.data.load``.

    Returns
    -------
    TaskData

    Examples
    --------
    >>> td = load_task_data("wine", "attention", queries=8, keys=8)
    >>> td.description["preprocess"], td.description["scale"]
    (['standardize', 'scale'], 0.5)
    """
    from .. import data as datasets

    d = datasets.DATA_DEFAULTS
    task = check(task, TASK_PARAM)
    steps = (d.steps_for(source) if preprocess is None else
             datasets.parse_preprocess(preprocess) if isinstance(preprocess, str) else tuple(preprocess))
    n_q, n_k = d.queries if queries is None else queries, d.keys if keys is None else keys
    scale = d.scale if scale is None else scale
    if task == "ridge":
        ds, y_train, y_test = datasets.regression_data(source, train=n_q, test=n_k, steps=steps, scale=scale,
                                                       seed=seed)
        return TaskData.from_dataset(ds, y_train, y_test)
    ds = datasets.load(source, keys_data, queries=n_q, keys=n_k, steps=steps, scale=scale, seed=seed,
                       options=dict(data_params or {}))
    return TaskData.from_dataset(ds)
