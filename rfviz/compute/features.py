"""How many features: the smallest m whose relative error ``√MSE/|K|`` is at most a target ε.

The relative error is taken at one pair, as the worst or the root-mean over a region of pairs (an (r, θ) grid), or
over a data set's pairs as the relative Frobenius error of the Gram matrix (rfviz.gram_engine: with one draw of features
shared by all entries, E‖K̂ − K‖²_F = Σ_ij MSE(x_i, y_j)). Every target is a squared relative error

    point  MSE/K²,     worst  max_i MSE_i/K_i²,     mean  (1/P) Σ_i MSE_i/K_i²,     gram  Σ_i MSE_i / Σ_i K_i²,

so where each pair's MSE is c_i/m (m iid draws: trig, positive, GERF, the hybrids at a fixed n, ...) the target is
C/m too and m = ⌈C/ε²⌉ exactly. Whether an estimator is c/m is not assumed from its name: it is checked on the
closed forms at the very pairs asked about (m·MSE(m) equal at m = 1, 3, 64, 4096 to 1e-9), and the answer's
``method`` says which path was taken. Elsewhere (coupled blocks, TensorSRHT, Maclaurin's allocation) m is found
by a monotone search: doubling until the target is met, then bisection; the answer checks that m meets ε and
m − 1 does not. For the hybrids (HRF eq. 12), whose feature vectors are 4m(n + 1) long, the split between the m
base features and the n λ features is chosen too: the n of ``HYBRID_N`` giving the shortest feature vector,
unless the caller fixes n.

No answer (``m`` None with ``reason``) where no m reaches ε: an infinite variance, K = 0 (the relative error is
undefined), no closed form for these parameters, or an m above the largest the estimator accepts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from scipy.special import logsumexp

from ..estimators import Estimator, get_estimator
from ..geometry import check_d, embed_pair
from ..gram_engine import PROBE_M
from ..maths.dp import AVERAGED_EMBEDDINGS, ROTATIONS, rotation_frames_bytes
from ..params import Cost, Param, ParameterError, check, require_cost, require_fits
from .catalog import make_estimator

EPS_PARAM = Param("eps", 0.1, "float", "target relative error √MSE/|K| (0.1 = 10 %)", low=0.0, high=1e6,
                  low_open=True, ui_low=0.001, ui_high=1.0, label="ε (target relative error)")
OVER_PARAM = Param("over", "point", "choice", "how the pairs' relative errors are combined: one pair (point), the "
                   "worst pair (worst), the root-mean square over the pairs (mean), the Gram matrix's relative "
                   "Frobenius error (gram)", choices=("point", "worst", "mean", "gram"), label="over")

HYBRID_N = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
"""The λ-feature counts n tried for a hybrid when n is not fixed (its feature vector is 4m(n + 1) long)."""
EXACT_PROBES = (1, 3, 64, 4096)
"""The m at which m·MSE(m) is compared to decide that MSE = c/m at the pairs asked about."""
EXACT_RTOL = 1e-9
"""Largest difference of log(m·MSE(m)) between the probes still called c/m (round-off is ~1e-15)."""
SECONDS_PER_PAIR = 1e-5
"""Seconds of one closed-form evaluation per pair (measured 2026-11-27 on the 2-core VM, 1200 pairs: 0.1 µs for trig,
2 µs for the orthogonal/simplex positive closed forms, 6.2 µs for GERF with orthogonal coupling, the heaviest;
erring slow). Pairs in more than 64 coordinates cost proportionally more (their inner products)."""
SECONDS_PER_EVALUATION = 5e-4
"""Fixed seconds of one closed-form evaluation (estimator construction, validation; measured ~1e-4)."""
BYTES_PER_PAIR_COORDINATE = 8 * 24
"""Peak bytes per pair and coordinate of a broadcast closed form (a few dozen float64 temporaries)."""


@dataclass(frozen=True)
class Target:
    """The pairs a relative error is measured on and how the per-pair errors are combined (``over``).

    ``x``, ``y`` are (P, dim) arrays (reduced 2-D coordinates for isotropic estimators' (r, θ) pairs, with ``d``
    the true dimension) or, for ``gram``, the (N, 1, d) and (1, M, d) views of a data set's queries and keys.
    ``labels`` names each pair for the answer (``{"r": ..., "theta": ...}``; None for data sets)."""

    over: str
    x: np.ndarray
    y: np.ndarray
    d: int
    labels: tuple[dict[str, float], ...] | None = None
    description: dict[str, Any] = field(default_factory=dict)

    @property
    def pairs(self) -> int:
        """How many (x, y) pairs the target holds."""
        return int(np.prod(np.broadcast_shapes(self.x.shape[:-1], self.y.shape[:-1])))


def grid_target(r: Any, theta: Any, d: int, over: str = "point", embedding: str = "canonical",
                isotropic: bool = True) -> Target:
    """The pairs x = r·e1, y = r(cos θ·e1 + sin θ·e2) for every r × θ of two lists (one value each: a point).

    Parameters
    ----------
    r, theta : float or sequence of float
        Input lengths and angles (radians); their outer product is the region.
    d : int
        Input dimension.
    over : str
        ``point`` (needs one r and one θ), ``worst`` or ``mean``.
    embedding : str
        Placement of the pair in R^d (``rfviz.geometry.EMBEDDINGS``).
    isotropic : bool
        Reduced 2-D coordinates (True: the estimator depends on ``|x|²``, ``|y|²``, x·y only) or full R^d ones.

    Returns
    -------
    Target

    Examples
    --------
    >>> grid_target([0.5, 1.0], [0.1, 3.0], 4, over="worst").pairs
    4
    """
    over = check(over, OVER_PARAM)
    if over == "gram":
        raise ParameterError("over=gram needs a data set (data=...), not r and theta")
    d = check_d(d)
    rr, tt = _axis_values("r", r), _axis_values("theta", theta)
    if over == "point" and rr.size * tt.size != 1:
        raise ParameterError(f"over=point needs one r and one theta, got {rr.size} and {tt.size} values; use "
                             "over=worst or over=mean for a region")
    if rr.size == 0 or tt.size == 0:
        raise ParameterError("r and theta must hold at least one value each")
    require_cost(f"a region of {rr.size} × {tt.size} pairs", region_cost(rr.size * tt.size, d, embedding, isotropic),
                 "use fewer pairs or a smaller d")
    R, T = np.meshgrid(rr, tt, indexing="ij")
    if isotropic and embedding == "canonical":
        x, y = embed_pair(R.ravel(), T.ravel(), min(d, 2))
    else:
        x, y = embed_pair(R.ravel(), T.ravel(), d, embedding)
    labels = tuple({"r": float(a), "theta": float(b)} for a, b in zip(R.ravel(), T.ravel(), strict=True))
    return Target(over, np.asarray(x).reshape(-1, x.shape[-1]), np.asarray(y).reshape(-1, y.shape[-1]), d, labels)


def _axis_values(name: str, value: Any) -> np.ndarray:
    """One axis of a region: a number or a one-dimensional sequence (a nested one is refused, not flattened)."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim > 1:
        raise ParameterError(f"{name} must be a number or a one-dimensional list of numbers, got an array of shape "
                             f"{arr.shape}")
    return np.atleast_1d(arr)


def region_cost(pairs: int, d: int, embedding: str = "canonical", isotropic: bool = True) -> Cost:
    """The ``Cost`` of building a region's pairs before they are built: reduced 2-D coordinates for an isotropic
    estimator in the canonical embedding, else ``pairs`` × d coordinates, times ``maths.dp.ROTATIONS`` for an averaging
    embedding (``rotation_average``), plus that embedding's fixed frames (``maths.dp.rotation_frames_bytes``).

    Parameters
    ----------
    pairs : int
        The (r, θ) points.
    d : int
        Input dimension.
    embedding : str
        Placement of the pairs in R^d.
    isotropic : bool
        Whether reduced coordinates are used (canonical embedding only).

    Returns
    -------
    Cost

    Examples
    --------
    >>> region_cost(4, 10**7).nbytes < 1e3
    True
    """
    if isotropic and embedding == "canonical":
        return Cost(pairs * 2 * 2 * 8.0)
    if embedding in AVERAGED_EMBEDDINGS:
        return Cost(pairs * ROTATIONS * 2 * d * 8.0 + rotation_frames_bytes(d))
    return Cost(pairs * 2 * d * 8.0)


def data_target(queries: np.ndarray, keys: np.ndarray, description: Mapping[str, Any] | None = None) -> Target:
    """Every (query, key) pair of a data set, combined as the Gram matrix's relative Frobenius error.

    Parameters
    ----------
    queries, keys : np.ndarray
        (N, d) and (M, d) arrays.
    description : mapping, optional
        What the answer reports about the data (``rfviz.data.DataSet.describe()``).

    Returns
    -------
    Target

    Examples
    --------
    >>> data_target(np.ones((3, 2)), np.ones((4, 2))).pairs
    12
    """
    q, k = np.asarray(queries, dtype=float), np.asarray(keys, dtype=float)
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1] or q.shape[0] == 0 or k.shape[0] == 0:
        raise ParameterError(f"queries and keys must be non-empty (N, d) and (M, d) arrays with the same d, got "
                             f"{q.shape} and {k.shape}")
    return Target("gram", q[:, None, :], k[None, :, :], int(q.shape[1]), None, dict(description or {}))


# ------------------------------------------------------------------------------------------------- the answer
@dataclass(frozen=True)
class FeaturesNeeded:
    """The smallest m meeting ε (``m`` None and ``reason`` where none does) and what it buys.

    ``relative_error`` is the target's relative error at ``m`` (≤ ε), ``relative_error_below`` at m − 1 (> ε);
    ``n`` the hybrids' λ features; ``feature_length`` the real numbers per input vector (trig 2m, positive m,
    hybrids 4m(n + 1), complex features twice their count); ``method`` ``exact`` (m = ⌈C/ε²⌉, MSE = C/m checked)
    or ``search``; ``worst_at`` the pair where the worst relative error is attained."""

    estimator: str
    eps: float
    over: str
    params: dict[str, Any]
    m: int | None
    reason: str | None = None
    n: int | None = None
    feature_length: int | None = None
    relative_error: float | None = None
    relative_error_below: float | None = None
    method: str | None = None
    constant: float | None = None
    worst_at: dict[str, float] | None = None
    splits: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``rfviz features-needed``."""
        out = {"estimator": self.estimator, "eps": self.eps, "over": self.over, "params": self.params, "m": self.m,
               "n": self.n, "feature_length": self.feature_length, "relative_error": self.relative_error,
               "relative_error_below": self.relative_error_below, "method": self.method,
               "mse_times_m_over_k2": self.constant, "reason": self.reason}
        if self.worst_at is not None:
            out["worst_at"] = self.worst_at
        if self.splits is not None:
            out["splits"] = self.splits
        return out


# ------------------------------------------------------------------------------------------------- the solver
def log_relative_sq(est: Estimator, target: Target) -> tuple[float, int | None]:
    """log of the target's squared relative error for one estimator (and the index of the worst pair).

    Parameters
    ----------
    est : Estimator
        With a closed form.
    target : Target

    Returns
    -------
    (float, int or None)
        +inf where a pair's K is 0 or its MSE infinite; -inf where the estimator is exact.

    Examples
    --------
    >>> from rfviz import create
    >>> t = grid_target(1.0, 1.0, 4)
    >>> round(math.exp(log_relative_sq(create("trig", m=10), t)[0]), 6)
    0.045327
    """
    log_mse = np.ravel(np.asarray(est.log_mse(target.x, target.y, target.d), dtype=float))
    log_k = np.ravel(np.broadcast_to(np.asarray(est.kernel_log_value(target.x, target.y, target.d)[0], dtype=float),
                                     np.broadcast_shapes(target.x.shape[:-1], target.y.shape[:-1])))
    if target.over == "gram":
        return float(logsumexp(log_mse) - logsumexp(2 * log_k)), None
    with np.errstate(invalid="ignore"):
        rel = np.where(np.isneginf(log_mse), -np.inf, log_mse - 2 * log_k)
    if target.over == "mean":
        return float(logsumexp(rel) - math.log(rel.size)), None
    worst = int(np.argmax(rel))
    return float(rel[worst]), worst


@dataclass(frozen=True)
class _Problem:
    """One estimator family (name and fixed parameters) over a target: builds the estimator at any m (and n)."""

    name: str
    params: dict[str, Any]
    target: Target
    log_eps_sq: float

    def build(self, m: int, n: int | None = None) -> Estimator:
        extra = {} if n is None else {"n": n}
        return get_estimator(self.name)(**{**self.params, **extra, "m": m})

    def log_rel(self, m: int, n: int | None = None) -> tuple[float, int | None]:
        return log_relative_sq(self.build(m, n), self.target)


def _m_param(name: str) -> Param:
    spec = get_estimator(name).spec
    found = next((p for p in spec if p.name == "m"), None)
    if found is None:
        raise ParameterError(f"{name} has no number of features m to choose")
    return found


def _is_c_over_m(problem: _Problem, n: int | None, high: int) -> tuple[bool, float]:
    """Whether m·MSE(m) is the same at every probe m (≤ high) for every pair; and log C (the value at m = 1)."""
    values = []
    for m in [m for m in EXACT_PROBES if m <= high]:
        log_mse = np.ravel(problem.build(m, n).log_mse(problem.target.x, problem.target.y, problem.target.d))
        values.append(log_mse + math.log(m))
    stack = np.array(values)
    finite = np.isfinite(stack[0])
    same_inf = np.all(stack[:, ~finite] == stack[0, ~finite])
    close = np.all(np.abs(stack[:, finite] - stack[0, finite]) <= EXACT_RTOL * np.maximum(1.0, np.abs(stack[0,
                                                                                                         finite])))
    return bool(same_inf and close), problem.log_rel(1, n)[0]


def _largest_valid_m(problem: _Problem, n: int | None, good: int, bad: int) -> int:
    """The largest m in [good, bad) the estimator accepts (construction validates m against the other parameters)."""
    while bad - good > 1:
        mid = (good + bad) // 2
        try:
            problem.build(mid, n)
        except ParameterError:
            bad = mid
        else:
            good = mid
    return good


def _search(problem: _Problem, n: int | None, high: int) -> tuple[int | None, str | None]:
    """Smallest m with log_rel(m) ≤ log ε² by doubling then bisection (the error assumed to fall with m)."""
    lo, m = 0, 1
    while True:
        try:
            value = problem.log_rel(m, n)[0]
        except ParameterError as exc:
            top = _largest_valid_m(problem, n, max(lo, 1), m)
            if top > lo and problem.log_rel(top, n)[0] <= problem.log_eps_sq:
                m, value = top, problem.log_rel(top, n)[0]
            else:
                return None, f"ε is not reached at the largest m these parameters allow ({top}): {exc}"
        if value <= problem.log_eps_sq:
            break
        if m >= high:
            return None, f"ε is not reached at the largest m ({high}): relative error {_rel_text(value)} there"
        lo, m = m, min(2 * m, high)
    while m - lo > 1:
        mid = (lo + m) // 2
        if problem.log_rel(mid, n)[0] <= problem.log_eps_sq:
            m = mid
        else:
            lo = mid
    return m, None


def _invert(problem: _Problem, n: int | None, log_c: float, high: int) -> tuple[int | None, str | None]:
    """m = ⌈C/ε²⌉ for MSE = C/m, nudged by the closed form itself where round-off lands next to the boundary."""
    log_m = log_c - problem.log_eps_sq
    if log_m > math.log(high):
        return None, (f"needs m ≈ {_log_text(log_m)}, above the largest m ({high}) (relative error at "
                      f"m = {high}: {_rel_text(log_c - math.log(high))})")
    m = max(1, math.ceil(math.exp(log_m) * (1 - 1e-12)))
    while m > 1 and problem.log_rel(m - 1, n)[0] <= problem.log_eps_sq:
        m -= 1
    while problem.log_rel(m, n)[0] > problem.log_eps_sq:
        if m >= high:
            return None, f"ε is not reached at the largest m ({high})"
        m += 1
    return m, None


def _log_text(log_value: float) -> str:
    """e^{log_value} as text, also far beyond float64 (``1e+400`` written from its log)."""
    if log_value == math.inf:
        return "infinite"
    if log_value < 700:
        return f"{math.exp(log_value):.3g}"
    exponent = math.floor(log_value / math.log(10))
    return f"{10 ** (log_value / math.log(10) - exponent):.3g}e+{exponent}"


def _rel_text(log_rel_sq: float) -> str:
    return _log_text(0.5 * log_rel_sq)


def _unreachable_reason(problem: _Problem, log_c: float) -> str | None:
    """Why no m can work before any search: an infinite MSE, K = 0, or an undefined relative error."""
    if log_c != math.inf:
        return None
    log_k = np.ravel(np.asarray(problem.build(1).kernel_log_value(problem.target.x, problem.target.y,
                                                                  problem.target.d)[0], dtype=float))
    if problem.target.over != "gram" and np.any(np.isneginf(log_k)):
        return "K = 0 at a pair asked about: the relative error √MSE/|K| is undefined there"
    if np.all(np.isneginf(log_k)):
        return "K = 0 at every pair: the relative Frobenius error is undefined"
    return "the MSE is infinite at every m (infinite variance): no number of features reaches ε"


def _solve_one(problem: _Problem, n: int | None, high: int) -> dict[str, Any]:
    """m for one (fixed) n: exact inversion where MSE = C/m, else the monotone search."""
    exact, log_c = _is_c_over_m(problem, n, high)
    reason = _unreachable_reason(problem, log_c)
    if reason is not None:
        return {"m": None, "reason": reason, "method": "exact" if exact else "search", "log_c": log_c}
    if log_c == -math.inf:
        return {"m": 1, "reason": None, "method": "exact", "log_c": log_c}
    m, reason = _invert(problem, n, log_c, high) if exact else _search(problem, n, high)
    return {"m": m, "reason": reason, "method": "exact" if exact else "search", "log_c": log_c if exact else None}


PROBE_D = 64
"""Dimension at which a coordinate-dependent estimator's samples are measured to cost its probe at the true d."""


def _probe_length(est: Estimator, d: int) -> int:
    """Real features per input of one sampled feature map at dimension d: in reduced coordinates (2) for an isotropic
    estimator (its feature count does not depend on where the input lies), else in R^d, after costing the samples
    from a probe at ``PROBE_D`` scaled to d (four live copies)."""
    dim = min(d, 2) if est.isotropic else d
    if not est.isotropic and d > PROBE_D:
        small = est.sample(1, PROBE_D, generator=torch.Generator().manual_seed(0), device=torch.device("cpu"))
        nbytes = sum(t.numel() * t.element_size() for t in small.values() if isinstance(t, torch.Tensor))
        require_fits(f"probing the feature length of {est.name} in d = {d}", 4.0 * nbytes * d / PROBE_D,
                     "lower d")
    row = torch.zeros((1, dim), dtype=torch.float64)
    row[0, 0] = 1.0
    samples = est.sample(1, d, generator=torch.Generator().manual_seed(0), device=torch.device("cpu"), dim=dim)
    probe = est.features(samples, row, "query")
    return probe.shape[-1] * (2 if probe.is_complex() else 1)


def _feature_length(problem: _Problem, m: int, n: int | None) -> int | None:
    """Real numbers per input vector at m (None where the estimator has no feature map): probed directly for small
    m, else extrapolated in m from two small probes (feature lengths are affine in m), as
    ``rfviz.gram_engine.feature_count`` does, but in reduced coordinates where the estimator is isotropic."""
    d = problem.target.d
    try:
        if m <= 2 * PROBE_M:
            return _probe_length(problem.build(m, n), d)
        try:
            small = [_probe_length(problem.build(k, n), d) for k in (PROBE_M, 2 * PROBE_M)]
        except (ValueError, TypeError) as exc:  # parameters tied to m: probe the real one
            if isinstance(exc, ParameterError) and "memory" in str(exc):
                raise
            return _probe_length(problem.build(m, n), d)
    except NotImplementedError:
        return None
    slope = (small[1] - small[0]) / PROBE_M
    return round(max(float(m), small[0] + slope * (m - PROBE_M)))


def _evaluation_seconds(name: str, params: Mapping[str, Any], target: Target) -> float:
    """Seconds of one closed-form evaluation over the target's pairs (for Maclaurin's optimized allocation, its
    Algorithm 3 at the largest m it accepts)."""
    per_eval = SECONDS_PER_EVALUATION + max(1, target.pairs) * SECONDS_PER_PAIR * max(1.0, target.x.shape[-1] / 64)
    if name == "maclaurin" and params.get("method", "optimized") == "optimized":
        from ..estimators.dp import MAX_OPTIMIZED_FEATURES
        from ..maths.dp import optimize_maclaurin_cost

        per_eval += optimize_maclaurin_cost(MAX_OPTIMIZED_FEATURES, int(params.get("p", 6))).seconds
    return per_eval


def features_needed_cost(name: str, params: Mapping[str, Any], target: Target) -> Cost:
    """The ``Cost`` of :func:`features_needed` before it runs: its closed-form evaluations over the target's pairs.

    Parameters
    ----------
    name, params, target : as for :func:`features_needed`.

    Returns
    -------
    Cost
        Peak bytes (one broadcast closed form) and seconds (every evaluation a search may need, one core).

    Examples
    --------
    >>> features_needed_cost("trig", {}, grid_target(1.0, 1.0, 4)).seconds < 1
    True
    """
    cls = get_estimator(name)
    high = int(_m_param(name).high or 10**7)
    evaluations = len(EXACT_PROBES) + 4 * math.ceil(math.log2(high)) + 8
    if name == "maclaurin":
        from ..estimators.dp import MAX_OPTIMIZED_FEATURES

        evaluations = len(EXACT_PROBES) + 2 * math.ceil(math.log2(MAX_OPTIMIZED_FEATURES)) + 8
    if "n" in {p.name for p in cls.spec} and "n" not in params:
        evaluations *= len(HYBRID_N)
    nbytes = max(1, target.pairs) * target.x.shape[-1] * BYTES_PER_PAIR_COORDINATE
    return Cost(nbytes=nbytes, seconds=evaluations * _evaluation_seconds(name, params, target))


def features_needed(name: str, eps: float, target: Target, params: Mapping[str, Any] | None = None
                    ) -> FeaturesNeeded:
    """The smallest number of features m whose relative error over ``target`` is at most ``eps``.

    Parameters
    ----------
    name : str
        A registered estimator with a closed-form MSE.
    eps : float
        The target relative error ``√MSE/|K|`` (0.1 = 10 %).
    target : Target
        ``grid_target`` (a point, or the worst / root-mean over an (r, θ) region) or ``data_target`` (the Gram
        matrix's relative Frobenius error).
    params : mapping, optional
        The estimator's other parameters (``m`` is chosen; a hybrid's ``n`` too unless given).

    Returns
    -------
    FeaturesNeeded
        ``m`` (None with ``reason`` where no m reaches ε), ``feature_length``, ``relative_error`` at m and m − 1,
        ``method`` (``exact`` inversion of MSE = C/m, or ``search``).

    Examples
    --------
    >>> res = features_needed("trig", 0.1, grid_target(1.0, 1.0, 4))
    >>> res.m, res.method, res.relative_error <= 0.1 < res.relative_error_below
    (46, 'exact', True)
    """
    eps = check(eps, EPS_PARAM)
    own = {k: v for k, v in dict(params or {}).items() if k != "m"}
    cls = get_estimator(name)
    base = cls(**{**own, "m": 1})
    base.check_dimension(target.d)
    own = {k: base.params[k] for k in own}  # validated, typed (the CLI passes text)
    require_cost(f"features-needed for {name} over {target.pairs} pairs", features_needed_cost(name, own, target),
                 "use fewer pairs (a coarser region, fewer queries/keys)")
    problem = _Problem(name, own, target, 2 * math.log(eps))
    answer = FeaturesNeeded(name, float(eps), target.over, {k: v for k, v in base.params.items() if k != "m"}, None)
    if not base.closed_form_available():
        return replace(answer, reason=f"{name} has no closed-form MSE for these parameters; use Monte Carlo")
    high = int(_m_param(name).high or 10**7)
    if "n" in base.params and "n" not in own:
        return _best_split(problem, answer, high)
    return _complete(problem, answer, _solve_one(problem, base.params.get("n") if "n" in own else None, high),
                     own.get("n"))


def _complete(problem: _Problem, answer: FeaturesNeeded, solved: dict[str, Any], n: int | None) -> FeaturesNeeded:
    """The answer filled in from one solved m (relative errors at m and m − 1, length, worst pair)."""
    log_c = solved.get("log_c")
    constant = math.exp(log_c) if log_c is not None and log_c < 700 else None
    answer = replace(answer, method=solved["method"], constant=constant, n=n)
    m = solved["m"]
    if m is None:
        return replace(answer, reason=solved["reason"])
    rel, worst = problem.log_rel(m, n)
    below = math.exp(0.5 * problem.log_rel(m - 1, n)[0]) if m > 1 else None
    labels = problem.target.labels
    worst_at = labels[worst] if problem.target.over == "worst" and worst is not None and labels else None
    return replace(answer, m=m, relative_error=math.exp(0.5 * rel), relative_error_below=below,
                   feature_length=_feature_length(problem, m, n), worst_at=worst_at,
                   params={**answer.params, **({"n": n} if n is not None else {})})


def _best_split(problem: _Problem, answer: FeaturesNeeded, high: int) -> FeaturesNeeded:
    """A hybrid's (m, n): for each n of ``HYBRID_N`` the smallest m, then the n with the shortest feature vector."""
    splits: list[dict[str, Any]] = []
    best: tuple[int, int, dict[str, Any]] | None = None
    for n in HYBRID_N:
        solved = _solve_one(problem, n, high)
        length = _feature_length(problem, solved["m"], n) if solved["m"] is not None else None
        splits.append({"n": n, "m": solved["m"], "feature_length": length})
        if length is not None and (best is None or length < best[0]):
            best = (length, n, solved)
    if best is None:
        last = _solve_one(problem, HYBRID_N[-1], high)
        return replace(_complete(problem, answer, last, HYBRID_N[-1]), splits=splits, n=None,
                       reason=f"no split of base and λ features reaches ε ({last['reason']})")
    return replace(_complete(problem, answer, best[2], best[1]), splits=splits)


LADDER_RATIO = 2 ** 0.125
"""Step of the m ladder the explorer's map climbs for estimators without the c/m law (9 %: its cells are the first
ladder m meeting ε, at most 9 % above the exact answer of :func:`features_needed`)."""


def _ladder(high: int) -> list[int]:
    steps = math.ceil(math.log(high) / math.log(LADDER_RATIO))
    return sorted({min(high, math.ceil(LADDER_RATIO ** k)) for k in range(steps + 1)})


def features_needed_map(name: str, params: Mapping[str, Any], d: int, r: np.ndarray, theta: np.ndarray,
                        eps: float, embedding: str = "canonical", kernel: str | None = None) -> np.ndarray:
    """log₁₀ of the m needed at every (r, θ) of a grid (NaN where unreachable), each cell a point target.

    Where MSE = C/m (checked as in :func:`features_needed`) every cell is exact, m = ⌈C/ε²⌉; elsewhere the cells
    hold the first m of a geometric ladder (``LADDER_RATIO``) meeting ε, evaluated on the whole grid at once: an
    upper bound at most 9 % above the exact answer.

    Parameters
    ----------
    name, params : the estimator (a hybrid's n is the one in ``params``, not searched).
    d : int
        Input dimension.
    r, theta : np.ndarray
        The grid's axes.
    eps : float
        Target relative error.
    embedding : str
        Placement of the pairs in R^d.
    kernel : str, optional
        The target kernel, spelled as the app's kernel picker does (added to ``params`` where the estimator has one).

    Returns
    -------
    np.ndarray
        Shape (len(r), len(θ)).

    Examples
    --------
    >>> out = features_needed_map("trig", {}, 4, np.array([0.5, 1.0]), np.array([0.5, 2.0]), 0.1)
    >>> out.shape
    (2, 2)
    """
    eps = check(eps, EPS_PARAM)
    if kernel is not None:
        params = make_estimator(name, params, kernel).params
    own = {k: v for k, v in params.items() if k != "m"}
    target = grid_target(r, theta, d, "worst", embedding, get_estimator(name).isotropic)
    problem = _Problem(name, own, target, 2 * math.log(eps))
    high = int(_m_param(name).high or 10**7)
    one = _evaluation_seconds(name, own, target)
    nbytes = target.pairs * target.x.shape[-1] * BYTES_PER_PAIR_COORDINATE
    require_cost(f"the features-needed map of {name}", Cost(nbytes, (len(EXACT_PROBES) + 2) * one),
                 "use a coarser grid")
    exact, _ = _is_c_over_m(problem, own.get("n"), high)
    if not exact:
        require_cost(f"the features-needed map of {name} (a ladder of m: no c/m law)",
                     Cost(nbytes, len(_ladder(high)) * one), "use a coarser grid")
    if exact:  # m = ⌈C/ε²⌉ per cell, C = MSE/K² at m = 1
        log_rel = _log_rel_cells(problem.build(1), target)
        with np.errstate(invalid="ignore", over="ignore"):
            m = np.where(np.isneginf(log_rel), 1.0,
                         np.maximum(1.0, np.ceil(np.exp(log_rel - problem.log_eps_sq) * (1 - 1e-12))))
    else:
        m = np.full(target.pairs, np.nan)
        for rung in _ladder(high):
            try:
                log_rel = _log_rel_cells(problem.build(rung), target)
            except ParameterError:  # the largest m these parameters allow is passed
                break
            m = np.where(np.isnan(m) & (log_rel <= problem.log_eps_sq), float(rung), m)
            if not np.any(np.isnan(m)):
                break
    m = np.where(np.isfinite(m) & (m <= high), m, np.nan)
    return np.log10(m).reshape(len(r), len(theta))


def _log_rel_cells(est: Estimator, target: Target) -> np.ndarray:
    """log MSE/K² at each pair of the target (+inf where K = 0, −inf where exact)."""
    log_mse = np.ravel(est.log_mse(target.x, target.y, target.d))
    log_k = np.ravel(est.kernel_log_value(target.x, target.y, target.d)[0])
    with np.errstate(invalid="ignore"):
        return np.where(np.isneginf(log_mse), -np.inf, log_mse - 2 * log_k)
