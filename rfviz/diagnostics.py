"""Reliability of a sampled MSE under heavy tails, from statistics that combine exactly across parts of a run.

Squared errors |K̂ − K|² of random-feature estimators are often heavy-tailed (positive features at large
r, some couplings): a Monte-Carlo MSE can then look precise while a handful of trials carry most of it, and
its standard error is itself unreliable. This module decides ``reliable`` and a one-line ``warning`` from:

* ``Moments`` of the squared errors (count, mean, M2): pooled exactly, in any order, by Chan, Golub & LeVeque's
  update, so the verdict for a point does not depend on how its trials were split into tasks;
* the share of the total squared error carried by the largest part (a part is a trial, or a block of trials
  when only block sums are known), with the number of parts.

Pure numpy/maths; no torch, no engine. Thresholds are keyword arguments with documented defaults.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_REL_STDERR = 0.1
"""Default: the MSE's standard error must be at most 10% of the MSE."""
TOP_SHARE_FACTOR = 8.0
"""Default: the largest of ``parts`` parts may carry at most min(1/2, 8/parts) of the total squared error."""
MIN_PARTS = 4
"""Below this many parts the top-share test says nothing (one part always carries everything)."""


@dataclass(frozen=True)
class Moments:
    """Count, mean and M2 = Σ|v − mean|² of a sample; ``merge`` pools two samples exactly (Chan et al. 1979).
    The mean may be complex (complex estimates); M2 is real either way."""

    count: int = 0
    mean: float | complex = 0.0
    m2: float = 0.0

    def merge(self, other: Moments) -> Moments:
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        n = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / n)
        m2 = self.m2 + other.m2 + abs(delta) ** 2 * (self.count * other.count / n)
        return Moments(n, mean, m2)

    @property
    def variance(self) -> float:
        """Unbiased sample variance (0 for fewer than 2 values)."""
        return self.m2 / (self.count - 1) if self.count > 1 else 0.0

    @property
    def stderr(self) -> float:
        """Standard error of the mean."""
        return math.sqrt(max(self.variance, 0.0) / self.count) if self.count > 0 else math.inf

    @property
    def rel_stderr(self) -> float:
        """stderr / mean (0 when every value is 0, inf when the mean is 0 but not every value)."""
        if self.mean > 0:
            return self.stderr / self.mean
        return 0.0 if self.m2 == 0 else math.inf


@dataclass(frozen=True)
class Reliability:
    """Verdict on one sampled MSE: ``reliable`` and, when not, a one-line ``warning`` saying why."""

    reliable: bool
    warning: str | None = None


def assess_mse(squared_errors: Moments, *, top_share: float | None = None, parts: int = 0,
               max_rel_stderr: float = MAX_REL_STDERR, top_share_factor: float = TOP_SHARE_FACTOR) -> Reliability:
    """Whether a Monte-Carlo MSE (the mean of ``squared_errors``) can be trusted.

    Unreliable when (a) its relative standard error exceeds ``max_rel_stderr`` (too few trials for the spread),
    or (b) with ``parts ≥ MIN_PARTS``, the largest part carries more than min(1/2, top_share_factor/parts) of the
    total squared error (``top_share``): one trial or block dominating is the signature of a heavy tail, whose
    variance, hence standard error, the sample does not pin down. Exact estimates (all errors 0) are reliable.
    """
    m = squared_errors
    if m.count < 2:
        return Reliability(False, f"only {m.count} trial(s)")
    if m.mean == 0 and m.m2 == 0:
        return Reliability(True, None)
    reasons: list[str] = []
    rel = m.rel_stderr
    if not rel <= max_rel_stderr:
        reasons.append(f"relative standard error {rel:.0%} > {max_rel_stderr:.0%}")
    if top_share is not None and parts >= MIN_PARTS:
        limit = min(0.5, top_share_factor / parts)
        if top_share > limit:
            reasons.append(f"largest of {parts} parts carries {top_share:.0%} of the squared error (> {limit:.0%})")
    if not reasons:
        return Reliability(True, None)
    return Reliability(False, "heavy tail or too few trials: " + "; ".join(reasons))


# --------------------------------------------------------------------------- per-trial tail diagnostics (engine)

TOP_K = 32
"""Largest per-trial squared errors the engine keeps per pair (merged exactly across blocks: the top k of a union
is the top k of the parts' top k's)."""
MIN_TAIL_INDEX = 2.0
"""Hill tail index of the squared errors below which their variance looks infinite (P(E > t) ~ t^-α with α < 2
⇔ E[|K̂ − K|⁴] = ∞): the sampled MSE's standard error is then meaningless, however small it looks. The test uses
the one-sided 95 % upper bound α̂·(1 + 1.645/√k) (Hill's asymptotic sd is α/√k): with k = 32 a point is flagged
when α̂ < 1.55, so that light-ish tails (α̂ ≈ 2-3 for lognormal-like positive features at small r) are not."""
HILL_Z = 1.645
EXACT_REL = 1e-24
"""Mean squared error relative to e^{2s} (≈ K²) below which the point is exact up to float64 round-off."""
MAX_TOP_SHARE = 0.5
"""The largest ``TOP_K`` trials may carry at most this share of the total squared error. For light tails (e.g.
χ²-like squared errors) the top 32 of 2000 trials carry ≈ 8 %; a lognormal-like heavy tail pushes it past 50 %."""
TARGET_REL_STDERR = 0.1
"""``trials_needed``: the trials for a relative standard error of 10 % (≈ ±10 % on the sampled MSE)."""


def hill_tail_index(top: np.ndarray) -> np.ndarray:
    """Hill's estimator α̂ = k / Σ_{i≤k} log(X₍ᵢ₎ / X₍ₖ₊₁₎) from the k + 1 largest values of a sample, sorted in
    decreasing order along the last axis (Hill 1975). P(X > t) ~ t^-α: small α̂ = heavy tail. NaN where the
    threshold X₍ₖ₊₁₎ is 0 or fewer than 3 values are given."""
    top = np.asarray(top, dtype=float)
    if top.shape[-1] < 3:
        return np.full(top.shape[:-1], np.nan)
    k = top.shape[-1] - 1
    thr = top[..., -1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(top[..., :-1] / thr)
        total = np.sum(logs, axis=-1)
        alpha = np.where(thr[..., 0] > 0, k / total, np.nan)
    return alpha


@dataclass(frozen=True)
class TailReport:
    """Per-pair verdicts on sampled MSEs (arrays of one shape): ``reliable``, ``warning`` (str or None), the
    ``tail_index`` (Hill α̂ of the squared errors), the ``top_share`` of the largest ``TOP_K`` trials and
    ``trials_needed`` for a 10 % relative standard error from this run's variance (a lower bound when the tail is
    heavy; inf when no number of trials makes the standard error meaningful: infinite fourth moment, underflow)."""

    reliable: np.ndarray
    warning: np.ndarray
    tail_index: np.ndarray
    top_share: np.ndarray
    trials_needed: np.ndarray


def assess_trials(count: int, mean: np.ndarray, m2: np.ndarray, top: np.ndarray, *,
                  underflow: np.ndarray | None = None, fourth_moment_finite: np.ndarray | None = None,
                  max_rel_stderr: float = MAX_REL_STDERR, min_tail_index: float = MIN_TAIL_INDEX,
                  max_top_share: float = MAX_TOP_SHARE, exact_below: float = EXACT_REL) -> TailReport:
    """Whether each of several sampled MSEs (the means of per-trial squared errors) can be trusted, from per-pair
    ``mean``, ``m2`` of ``count`` trials and the ``top`` largest squared errors (shape (P, k), any order).

    Unreliable, in this order of the warning: every estimate underflowed to 0 (``underflow``: precision loss, the
    sampled MSE is then K² whatever the estimator); the paper says E|K̂|⁴ = ∞ there (``fourth_moment_finite``
    False); Hill α̂·(1 + 1.645/√k) < ``min_tail_index`` (needs ≥ 64 trials); the largest k trials carry more than
    ``max_top_share`` of the squared error (needs ≥ 16·k trials); relative standard error > ``max_rel_stderr``.
    Exact points (mean squared error ≤ ``exact_below``: round-off) are reliable."""
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    m2 = np.atleast_1d(np.asarray(m2, dtype=float))
    top = -np.sort(-np.asarray(top, dtype=float).reshape(len(mean), -1), axis=-1)
    k = top.shape[-1]
    var = m2 / (count - 1) if count > 1 else np.full_like(mean, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(mean > 0, np.sqrt(np.maximum(var, 0.0) / max(count, 1)) / np.where(mean > 0, mean, 1.0),
                       np.where(m2 > 0, np.inf, 0.0))
        share = np.where(mean > 0, top.sum(axis=-1) / (mean * count), 0.0)
    tail = hill_tail_index(top) if count >= 64 else np.full(len(mean), np.nan)
    exact = mean <= exact_below
    infinite4 = (np.zeros(len(mean), bool) if fourth_moment_finite is None
                 else np.asarray(fourth_moment_finite, dtype=object) == False)  # noqa: E712 (None stays unknown)
    under = np.zeros(len(mean), bool) if underflow is None else np.asarray(underflow, bool).reshape(-1)
    reliable = np.ones(len(mean), bool)
    warning = np.full(len(mean), None, dtype=object)
    for i in range(len(mean)):
        reasons: list[str] = []
        if count < 2:
            reasons.append(f"only {count} trial(s)")
        if under[i]:
            reasons.append("precision loss: every sampled estimate underflowed to 0, so the sampled MSE is just K²")
        elif not exact[i]:
            if infinite4[i]:
                reasons.append("the estimator's fourth moment is infinite here (per its paper), so the standard "
                               "error is meaningless")
            if tail[i] * (1.0 + HILL_Z / math.sqrt(k)) < min_tail_index:
                reasons.append(f"tail index of the squared errors {tail[i]:.2f}, clearly < {min_tail_index:g} "
                               "(their variance looks infinite)")
            if count >= 16 * k and share[i] > max_top_share:
                reasons.append(f"the largest {k} of {count} trials carry {share[i]:.0%} of the squared error")
            if not rel[i] <= max_rel_stderr:
                reasons.append(f"relative standard error {rel[i]:.0%} > {max_rel_stderr:.0%}")
        if reasons:
            reliable[i] = False
            warning[i] = f"heavy-tailed: the sampled MSE is unreliable at {count} trials ({'; '.join(reasons)})"
            if under[i] or count < 2:
                warning[i] = "unreliable: " + "; ".join(reasons)
    with np.errstate(over="ignore", invalid="ignore"):
        needed = np.ceil(count * (rel / TARGET_REL_STDERR) ** 2)
    needed = np.where(exact, 2.0, np.maximum(needed, 2.0))
    needed = np.where(infinite4 | under, np.inf, needed)  # heavy tail otherwise: a lower bound
    return TailReport(reliable, warning, tail, share, needed)


# ------------------------------------------------------------------------------- theory before the sample

FWER_LEVEL = 0.01
"""Family-wise error level of every "closed form and sampled MSE disagree" verdict over many points (Holm)."""


@dataclass(frozen=True)
class TheoryReport:
    """What the closed-form fourth moment predicts about a sampled MSE at ``trials`` trials, per point:
    ``rel_stderr`` = √(Var|K̂ − K|²/N)/MSE (inf: the squared error has infinite variance), ``trials_needed`` for
    ``max_rel_stderr`` (inf: no trial count suffices), ``reliable`` and a one-line ``warning`` where not."""

    rel_stderr: np.ndarray
    trials_needed: np.ndarray
    reliable: np.ndarray
    warning: np.ndarray


def theory_reliability(log_mse: np.ndarray, log_fourth: np.ndarray, trials: int, *,
                       max_rel_stderr: float = MAX_REL_STDERR) -> TheoryReport:
    """Reliability of a sampled MSE predicted before sampling, from the closed-form MSE and E|K̂ − K|⁴ (logs).

    The sampled MSE is the mean of N iid squared errors, so its relative standard error is
    rse = √((E|K̂ − K|⁴/MSE² − 1)/N) and ±``max_rel_stderr`` needs N = (E|K̂ − K|⁴/MSE² − 1)/max_rel_stderr².
    Where E|K̂ − K|⁴ = ∞ no N suffices (``trials_needed`` inf): the sample is unreliable whatever it shows.
    Exact points (log MSE = −inf) are reliable.

    Parameters
    ----------
    log_mse, log_fourth : np.ndarray
        Natural logs of the closed-form MSE and fourth central moment (broadcast together).
    trials : int
        The number of trials N.
    max_rel_stderr : float
        The largest acceptable relative standard error (default 10 %).

    Returns
    -------
    TheoryReport

    Examples
    --------
    >>> r = theory_reliability(np.log([1.0, 1.0]), np.log([3.0, np.inf]), 2000)
    >>> r.reliable.tolist(), r.trials_needed.tolist()
    ([True, False], [200.0, inf])
    """
    log_mse, log_fourth = np.broadcast_arrays(np.asarray(log_mse, float), np.asarray(log_fourth, float))
    exact = np.isneginf(log_mse)
    infinite = np.isposinf(log_fourth) & ~exact
    with np.errstate(over="ignore", invalid="ignore"):
        excess = np.maximum(np.expm1(np.where(exact | infinite, 0.0, log_fourth - 2.0 * log_mse)), 0.0)
        rse = np.sqrt(excess / max(int(trials), 1))
        needed = np.maximum(np.ceil(excess / max_rel_stderr**2), 2.0)
    rse = np.where(exact, 0.0, np.where(infinite, np.inf, rse))
    needed = np.where(exact, 2.0, np.where(infinite, np.inf, needed))
    reliable = rse <= max_rel_stderr
    warning = np.full(rse.shape, None, dtype=object)
    for i in np.ndindex(rse.shape):
        if reliable[i]:
            continue
        if infinite[i]:
            warning[i] = ("infinite variance: the closed-form E|K̂ − K|⁴ is +∞ here, so no number of trials makes "
                          "the sampled MSE reliable")
        else:
            warning[i] = (f"too few trials: the closed-form fourth moment predicts a relative standard error of "
                          f"{_percent(rse[i])} at {trials} trials (> {max_rel_stderr:.0%}; {needed[i]:.3g} needed)")
    return TheoryReport(rse, needed, reliable, warning)


def _percent(fraction: float) -> str:
    """``fraction`` as a percentage readable at any size (12%, 3.4e+05%, inf%)."""
    return f"{fraction:.0%}" if fraction < 100 else f"{100 * fraction:.3g}%"


def two_sided_p(z: np.ndarray) -> np.ndarray:
    """Two-sided normal p-values 2·Φ(−|z|) (NaN stays NaN)."""
    from scipy.special import ndtr

    return 2.0 * ndtr(-np.abs(np.asarray(z, dtype=float)))


def holm(pvalues: np.ndarray, alpha: float = FWER_LEVEL) -> np.ndarray:
    """Holm's step-down rejections at family-wise level ``alpha`` (Holm 1979): sort the m p-values, reject
    p₍ᵢ₎ while p₍ᵢ₎ ≤ alpha/(m − i + 1). NaN p-values are not tested (and do not count in m).

    Examples
    --------
    >>> holm(np.array([0.001, 0.2, 0.004, np.nan]), alpha=0.01).tolist()
    [True, False, True, False]
    """
    p = np.asarray(pvalues, dtype=float)
    flat = p.ravel()
    tested = np.flatnonzero(np.isfinite(flat))
    reject = np.zeros(flat.shape, bool)
    order = tested[np.argsort(flat[tested], kind="stable")]
    m = len(order)
    for rank, idx in enumerate(order):
        if flat[idx] > alpha / (m - rank):
            break
        reject[idx] = True
    return reject.reshape(p.shape)


def family_disagreements(z: np.ndarray, reliable: np.ndarray | None = None,
                         alpha: float = FWER_LEVEL) -> np.ndarray:
    """Points where the closed form and the sampled MSE disagree, with the family-wise error rate over all the
    points given held at ``alpha``: Holm over the two-sided z-test p-values of the reliable points with a finite z
    (NaN z: not tested, e.g. an infinite closed form or a deterministic point). One function for the explorer,
    curves, sweeps, Gram tables and the lab.

    Examples
    --------
    >>> family_disagreements(np.array([0.5, 6.0, -4.0, 9.0]), np.array([True, True, True, False])).tolist()
    [False, True, True, False]
    """
    z = np.asarray(z, dtype=float)
    ok = np.isfinite(z) & (np.ones(z.shape, bool) if reliable is None else np.asarray(reliable, bool))
    p = np.where(ok, two_sided_p(np.where(ok, z, 0.0)), np.nan)
    return holm(p, alpha)


def fwer_threshold_text(alpha: float = FWER_LEVEL) -> str:
    """How a disagreement is decided, in words (for the UI, the CLI and the README)."""
    return (f"Holm's step-down test over the reliable points at family-wise level {alpha:g} (two-sided z of the "
            "sampled MSE against the closed form)")


def with_theory(tails: TailReport, theory: TheoryReport, known: np.ndarray,
                underflow: np.ndarray | None = None) -> TailReport:
    """The per-pair verdict when the closed-form fourth moment is ``known`` (mask): theory decides ``reliable``,
    ``warning`` and ``trials_needed`` there (a light-looking sample of a heavy tail is unreliable whatever it
    shows), except that precision loss (every estimate underflowed) stays unreliable; elsewhere the empirical
    ``tails`` verdict stands. Tail index and top share are kept as measured."""
    known = np.asarray(known, bool).reshape(-1)
    under = np.zeros(known.shape, bool) if underflow is None else np.asarray(underflow, bool).reshape(-1)
    use = known & ~under
    reliable = np.where(use, theory.reliable.reshape(-1), tails.reliable)
    warning = np.where(use, theory.warning.reshape(-1), tails.warning)
    needed = np.where(use, theory.trials_needed.reshape(-1), tails.trials_needed)
    return TailReport(reliable, warning, tails.tail_index, tails.top_share, needed)


def log_mse_stderr_theory(log_mse: np.ndarray, log_fourth: np.ndarray, trials: int) -> np.ndarray:
    """log of the standard error of a sampled MSE predicted by the closed forms: ½·log(Var|K̂ − K|²/N) with
    Var|K̂ − K|² = E|K̂ − K|⁴ − MSE² (+inf where the fourth moment is infinite, −inf where exact)."""
    from .numerics import log_diff_exp

    log_mse, log_fourth = np.broadcast_arrays(np.asarray(log_mse, float), np.asarray(log_fourth, float))
    with np.errstate(invalid="ignore"):
        log_var = log_diff_exp(log_fourth, np.minimum(2.0 * log_mse, log_fourth))
    log_var = np.where(np.isposinf(log_fourth), np.inf, np.where(np.isneginf(log_fourth), -np.inf, log_var))
    return 0.5 * (log_var - math.log(max(int(trials), 1)))


def bonferroni_disagrees(z: float | None, reliable: bool, family_size: int, alpha: float = FWER_LEVEL) -> bool:
    """One point of a streamed family (a sweep's rows are written as they finish, before the family is complete):
    disagrees when it is reliable and its two-sided p-value is ≤ alpha/family_size (Bonferroni; family-wise error
    ≤ alpha over the ``family_size`` points, like Holm's first step)."""
    if z is None or not math.isfinite(z) or not reliable:
        return False
    return bool(two_sided_p(z) <= alpha / max(int(family_size), 1))
