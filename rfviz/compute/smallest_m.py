"""The smallest m whose relative error meets ε, also where the error is not monotone in m (block couplings).

``rfviz.compute.features`` inverts MSE = C/m exactly where that law holds (iid draws). Elsewhere this module finds
the *true* smallest m, by one of two paths, and says which (``method``):

``blocks`` (orthogonal and simplex couplings, every estimator with a coupled closed form)
    m vectors come in blocks of d coupled directions (SimRF Eq. 8); the coupled closed forms are, at every pair,

        m²·MSE(m) = m·A + P(m)·B,     P(m) = Σ_b m_b(m_b − 1)   (``maths.simrf.pairs_within_blocks``)

    with A the one-feature variance and B the covariance of two features of one block. This law is not assumed:
    A and B are read off the closed form at m = 1 and m = d and the law is checked at further m (inside and across
    blocks, ``BLOCK_PROBES``) to ``LAW_RTOL``. Because 0 ≤ P(m) ≤ (d − 1)·m, every pair obeys

        c_lo/m ≤ MSE(m) ≤ c_hi/m,     c_lo = min(A, A + (d − 1)B),  c_hi = max(A, A + (d − 1)B),

    so the answer lies in [⌈C_lo/ε²⌉, ⌈C_hi/ε²⌉] (for the worst pair, the maxima over the pairs), searched from A
    and B: every B ≤ 0, the first block whose end meets ε (d values); every B ≥ 0, bisection; mixed signs, every
    m of the bracket (the answer and the near-ties re-evaluated with the closed form itself). Where the coupling
    helps (B < 0) the error is *not* monotone in m: it rises just after each full block (e.g. trig, orthogonal,
    d = 6: √MSE/K = 0.0599 at m = 30, 0.0610 at m = 31); where every B ≥ 0 it falls with m (proof in
    docs/how-many-features.md) and bisection is exact.
``search`` (everything else without the C/m law: TensorSRHT, Maclaurin's optimized allocation)
    doubling then bisection, then every m below the bisection's answer evaluated when it is at most
    ``EXHAUSTIVE_BELOW`` (``exhaustive`` says whether it was): the smallest m meeting ε whatever the shape; above
    that the answer is the bisection's boundary and assumes the error falls with m (no counter-example is known
    for these estimators; none of them has blocks of coupled draws in its closed form).

The functions take a *problem*: any object with ``build(m, n)`` (the estimator at m), ``log_rel(m, n)`` (log of the
target's squared relative error and the worst pair), ``target`` (``rfviz.compute.features.Target``) and
``log_eps_sq`` (``rfviz.compute.features._Problem`` is one), so this module sits below ``features`` without a cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from scipy.special import logsumexp

from ..maths.simrf import pairs_within_blocks
from ..params import Cost, ParameterError, require_cost

BLOCK_PROBES = (2, 3, 5, 7, 11, 13, 41, 64, 1000)
"""Multiples-of-d offsets where the block law is checked: m = 1, 2, d − 1, d + 1, 2d + 3, ... (see ``_probes``)."""
LAW_RTOL = 1e-9
"""Largest relative difference between the closed form and the block law still called the law (round-off ~1e-15)."""
NEAR_TIE = 1e-9
"""Relative distance to ε² within which a bracket value is re-evaluated by the closed form itself."""
EXHAUSTIVE_BELOW = 256
"""The ``search`` path evaluates every m below its answer when that answer is at most this."""
SCAN_SECONDS_PER_VALUE = 2e-8
"""Seconds per (pair, m) of the vectorised bracket scan (numpy, one core, erring slow)."""
SCAN_CHUNK = 2_000_000
"""Most (pair, m) values held at once by the bracket scan."""


class Problem(Protocol):
    """What the solvers need of a problem (``rfviz.compute.features._Problem`` is one).

    Parameters
    ----------
    *args, **kwargs
        None: a structural type (``target``, ``log_eps_sq``, ``build``, ``log_rel``).
    """

    target: Any
    log_eps_sq: float

    def build(self, m: int, n: int | None = None) -> Any:
        """The estimator at m (and a hybrid's n).

        Parameters
        ----------
        m : int
            Random projections.
        n : int, optional
            A hybrid's λ features.

        Returns
        -------
        Estimator
        """

    def log_rel(self, m: int, n: int | None = None) -> tuple[float, int | None]:
        """log of the target's squared relative error at m, and the worst pair's index.

        Parameters
        ----------
        m : int
            Random projections.
        n : int, optional
            A hybrid's λ features.

        Returns
        -------
        (float, int or None)
        """


@dataclass(frozen=True)
class Smallest:
    """The smallest m meeting ε.

    Parameters
    ----------
    m : int or None
        The answer (None: none).
    method : str
        ``blocks`` or ``search``.
    reason : str, optional
        Why there is none.
    scanned : (int, int), optional
        The m range evaluated one by one.
    exhaustive : bool
        Whether every m below the answer was evaluated.
    """

    m: int | None
    method: str
    reason: str | None = None
    scanned: tuple[int, int] | None = None
    exhaustive: bool = True


def _probes(d: int, high: int) -> list[int]:
    """m where the block law is checked: inside the first block, just past it and across several blocks."""
    ms = {1, d, 2, max(1, d - 1), d + 1, 2 * d + 1, 3 * d - 1} | {k * d + (k % max(d, 1)) for k in BLOCK_PROBES}
    return sorted(m for m in ms if 1 <= m <= high)


def _pair_log_rel(problem: Problem, m: int, n: int | None) -> np.ndarray:
    """log of each pair's share of the target at m: MSE_i/K_i² (point, worst, mean) or MSE_i/Σ K² (gram)."""
    est = problem.build(m, n)
    t = problem.target
    log_mse = np.ravel(np.asarray(est.log_mse(t.x, t.y, t.d), dtype=float))
    shape = np.broadcast_shapes(t.x.shape[:-1], t.y.shape[:-1])
    log_k = np.ravel(np.broadcast_to(np.asarray(est.kernel_log_value(t.x, t.y, t.d)[0], dtype=float), shape))
    if t.over == "gram":
        return log_mse - float(logsumexp(2 * log_k))
    with np.errstate(invalid="ignore"):
        out = np.where(np.isneginf(log_mse), -np.inf, log_mse - 2 * log_k)
    return out - math.log(out.size) if t.over == "mean" else out


def block_law(problem: Problem, n: int | None, high: int) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Per-pair (A, B) of m²·MSE(m) = m·A + P(m)·B, scaled by e^{−shift}, or None where the law does not hold.

    Parameters
    ----------
    problem : Problem
        The estimator family over its target.
    n : int or None
        A hybrid's λ features (None: not a hybrid).
    high : int
        The largest m the estimator accepts.

    Returns
    -------
    (A, B, shift) or None
        Arrays over the target's pairs; ``shift`` is the log scale removed (values are e^{log − shift}).

    Examples
    --------
    >>> from rfviz.compute.features import _Problem, grid_target
    >>> law = block_law(_Problem("trig", {"coupling": "orthogonal"}, grid_target(0.8, 1.2, 6), 0.0), None, 10**7)
    >>> law is not None
    True
    """
    d = int(problem.target.d)
    if d < 2:
        return None
    try:
        base = _pair_log_rel(problem, 1, n)
        finite = base[np.isfinite(base)]
        if base.size == 0 or np.any(np.isposinf(base)) or finite.size == 0:
            return None
        shift = float(np.max(finite))
        a = np.exp(base - shift)
        b = (d * d * np.exp(_pair_log_rel(problem, d, n) - shift) - d * a) / (d * (d - 1))
        for m in _probes(d, high):
            pred = (m * a + pairs_within_blocks(m, d) * b) / (m * m)
            got = np.exp(_pair_log_rel(problem, m, n) - shift)
            if np.any(np.abs(got - pred) > LAW_RTOL * (np.abs(got) + 1e-6 * np.max(got))):
                return None
    except (ParameterError, FloatingPointError, OverflowError):
        return None
    return a, b, shift


def _combined(values: np.ndarray, over: str) -> np.ndarray:
    """The target's value from per-pair rows (pairs × m): the worst pair's, or the sum (gram, mean, point)."""
    return values.max(axis=0) if over == "worst" else values.sum(axis=0)


def _scan(a: np.ndarray, b: np.ndarray, d: int, over: str, limit: float, lo: int, hi: int) -> int | None:
    """The first m in [lo, hi] whose block-law value is at most ``limit`` (None: none), in chunks."""
    step = max(1, SCAN_CHUNK // max(1, a.size))
    for start in range(lo, hi + 1, step):
        ms = np.arange(start, min(hi, start + step - 1) + 1)
        blocks, rem = np.divmod(ms, d)
        pairs = blocks * d * (d - 1) + rem * (rem - 1)
        vals = (np.outer(a, ms) + np.outer(b, pairs)) / (ms * ms.astype(float))
        ok = np.flatnonzero(_combined(vals, over) <= limit)
        if ok.size:
            return int(ms[ok[0]])
    return None


def _law(a: np.ndarray, b: np.ndarray, d: int, over: str, m: int) -> float:
    """The block law's target value at one m."""
    blocks, rem = divmod(int(m), d)
    return float(_combined(((m * a + (blocks * d * (d - 1) + rem * (rem - 1)) * b) / (m * float(m)))[:, None],
                           over)[0])


def _bracket(a: np.ndarray, b: np.ndarray, d: int, over: str, limit: float, high: int) -> tuple[int, int]:
    """Where the smallest m lies: [⌈C_lo/ε²⌉, ⌈C_hi/ε²⌉] from c_lo/m ≤ MSE ≤ c_hi/m; where every B ≤ 0 also
    MSE(m) ≥ C_full/m with equality at full blocks (C_full = A + (d − 1)B), so the answer lies in the first block
    whose end meets ε."""
    edge = np.minimum(a, a + (d - 1) * b), np.maximum(a, a + (d - 1) * b)
    c_lo, c_hi = (float(_combined(e[:, None], over)[0]) for e in edge)
    lo, hi = max(1, math.floor(c_lo / limit)), min(high, math.ceil(c_hi / limit) + 1)
    if np.all(b <= 0):
        k = max(1, math.ceil(c_lo / (limit * d)))
        lo, hi = max(lo, (k - 1) * d + 1), min(hi, k * d + d)
    return lo, max(lo, hi)


def _bisect(a: np.ndarray, b: np.ndarray, d: int, over: str, limit: float, lo: int, hi: int) -> int | None:
    """The first m in [lo, hi] meeting the limit where the law falls with m (every B ≥ 0; B ≤ A always, a
    covariance being at most the variance: then m²f(m) = mA + P(m)B gives f(m + 1) ≤ f(m), see the docs)."""
    if _law(a, b, d, over, hi) > limit:
        return None
    while hi > lo:
        mid = (lo + hi) // 2
        if _law(a, b, d, over, mid) <= limit:
            hi = mid
        else:
            lo = mid + 1
    return hi


def _meets(problem: Problem, m: int, n: int | None) -> bool:
    return problem.log_rel(m, n)[0] <= problem.log_eps_sq


def _near_ties(a: np.ndarray, b: np.ndarray, d: int, over: str, limit: float, lo: int, hi: int) -> list[int]:
    """m in [lo, hi) whose block-law value is within ``NEAR_TIE`` of the limit (round-off could flip them)."""
    if hi <= lo:
        return []
    ms = np.arange(lo, hi)
    blocks, rem = np.divmod(ms, d)
    vals = _combined((np.outer(a, ms) + np.outer(b, blocks * d * (d - 1) + rem * (rem - 1))) / (ms * ms.astype(float)),
                     over)
    return [int(m) for m in ms[np.abs(vals - limit) <= NEAR_TIE * limit]]


def solve_blocks(problem: Problem, n: int | None, high: int) -> Smallest | None:
    """The smallest m meeting ε under the block law (``block_law``), or None where the law does not hold.

    Parameters
    ----------
    problem : Problem
    n : int or None
        A hybrid's λ features.
    high : int
        The largest m the estimator accepts.

    Returns
    -------
    Smallest or None

    Examples
    --------
    >>> from rfviz.compute.features import _Problem, grid_target
    >>> p = _Problem("trig", {"coupling": "orthogonal"}, grid_target(0.8, 1.2, 6), 2 * math.log(0.0604444))
    >>> solve_blocks(p, None, 10**7).m
    30
    """
    law = block_law(problem, n, high)
    if law is None:
        return None
    a, b, shift = law
    d, over = int(problem.target.d), problem.target.over
    limit = math.exp(problem.log_eps_sq - shift) if problem.log_eps_sq - shift < 700 else math.inf
    c_hi = float(_combined(np.maximum(a, a + (d - 1) * b)[:, None], over)[0])
    if limit == 0 or c_hi / limit > 10 * high:
        return Smallest(None, "blocks", f"ε is not reached at the largest m ({high})")
    lo, hi = _bracket(a, b, d, over, limit, high)
    monotone = bool(np.all(b >= 0))
    if not monotone:
        require_cost(f"the block scan of m in [{lo}, {hi}] over {a.size} pairs",
                     Cost(8.0 * SCAN_CHUNK * 4, SCAN_SECONDS_PER_VALUE * a.size * (hi - lo + 1)), "use fewer pairs")
    find = _bisect if monotone else _scan
    m = find(a, b, d, over, limit, lo, hi)
    while m is not None and not _meets(problem, m, n):  # round-off at the boundary: the closed form decides
        m = find(a, b, d, over, limit, m + 1, hi) if m < hi else None
    if m is None:
        return Smallest(None, "blocks", f"ε is not reached at the largest m ({high})", (lo, hi))
    earlier = [k for k in _near_ties(a, b, d, over, limit, lo, m) if _meets(problem, k, n)]
    return Smallest(min(earlier, default=m), "blocks", None, (lo, hi))


def solve_search(problem: Problem, n: int | None, found: int | None) -> Smallest:
    """Complete a monotone search's answer ``found``: every m below it evaluated when it is at most
    ``EXHAUSTIVE_BELOW``, the first that meets ε kept.

    Parameters
    ----------
    problem : Problem
    n : int or None
        A hybrid's λ features.
    found : int or None
        The doubling-and-bisection answer (None: none found).

    Returns
    -------
    Smallest

    Examples
    --------
    >>> from rfviz.compute.features import _Problem, grid_target
    >>> p = _Problem("tensor_srht", {}, grid_target(0.8, 1.2, 4, isotropic=False), 2 * math.log(0.5))
    >>> solve_search(p, None, 40).exhaustive
    True
    """
    if found is None:
        return Smallest(None, "search", "no m found", None, False)
    if found > EXHAUSTIVE_BELOW:
        return Smallest(found, "search", None, None, False)
    for m in range(1, found):
        try:
            if _meets(problem, m, n):
                return Smallest(m, "search", None, (1, m), True)
        except ParameterError:
            continue
    return Smallest(found, "search", None, (1, found), True)


def block_cells(problem: Problem, n: int | None, high: int) -> np.ndarray | None:
    """The smallest m meeting ε at *each* pair of the target on its own (a map's cells), exact under the block law
    (``block_law``): where B < 0 the first block whose end meets ε is searched (d values), where B ≥ 0 the error
    falls with m and a vectorised bisection finds it. None where the law does not hold.

    Parameters
    ----------
    problem : Problem
        Its target's pairs are the cells (``over`` ``worst``: each pair's MSE/K²).
    n : int or None
        A hybrid's λ features.
    high : int
        The largest m the estimator accepts.

    Returns
    -------
    np.ndarray or None
        One m per pair (NaN where none up to ``high`` meets ε).

    Examples
    --------
    >>> from rfviz.compute.features import _Problem, grid_target
    >>> t = grid_target([0.8, 2.0], [1.2, 2.5], 6, "worst")
    >>> int(block_cells(_Problem("trig", {"coupling": "orthogonal"}, t, 2 * math.log(0.0604444)), None, 10**7)[0])
    30
    """
    law = block_law(problem, n, high)
    if law is None:
        return None
    a, b, shift = law
    d = int(problem.target.d)
    limit = math.exp(problem.log_eps_sq - shift) if problem.log_eps_sq - shift < 700 else math.inf
    if limit == 0:
        return np.full(a.size, np.nan)

    def law_at(m: np.ndarray, a_: np.ndarray, b_: np.ndarray) -> np.ndarray:
        blocks, rem = np.divmod(m, d)
        return (m * a_ + (blocks * d * (d - 1) + rem * (rem - 1)) * b_) / (m * m.astype(float))

    out = np.full(a.size, np.nan)
    cap = float(10 * high)
    neg = b < 0
    if np.any(neg):  # the first block whose end meets ε, then its d members in order
        c = a[neg] + (d - 1) * b[neg]
        k = np.maximum(1.0, np.ceil(np.minimum(c / (limit * d), cap)))
        ms = ((k - 1) * d)[:, None] + np.arange(1, d + 1)[None, :]
        ok = law_at(ms, a[neg][:, None], b[neg][:, None]) <= limit
        out[neg] = np.where(ok.any(axis=1), ms[np.arange(ms.shape[0]), ok.argmax(axis=1)], np.nan)
    pos = ~neg
    if np.any(pos):  # the error falls with m: bisection, every cell at once
        lo = np.maximum(1.0, np.floor(np.minimum(a[pos] / limit, cap)))
        hi = np.maximum(lo, np.ceil(np.minimum((a[pos] + (d - 1) * b[pos]) / limit, cap)) + 1)
        while np.any(hi > lo):
            mid = np.floor((lo + hi) / 2)
            good = law_at(mid, a[pos], b[pos]) <= limit
            hi, lo = np.where(good, mid, hi), np.where(good, lo, mid + 1)
        out[pos] = hi
    return np.where(out <= high, out, np.nan)
