"""Reliability of a sampled MSE under heavy tails, from statistics that combine exactly across parts of a run.

Squared errors |K̂ − K|² of random-feature estimators are often heavy-tailed (positive features at large
r, some couplings): a Monte-Carlo MSE can then look precise while a handful of trials carry most of it, and
its standard error is itself unreliable. This module decides ``reliable`` and a one-line ``warning`` from:

* ``Moments`` of the squared errors (count, mean, M2): pooled exactly, in any order, by Chan, Golub & LeVeque's
  update, so the verdict for a point does not depend on how its trials were split into tasks;
* the share of the total squared error carried by the largest part (a part is a trial, or a block of trials
  when only block sums are known), with the number of parts.

The verdicts built on these (exact at round-off, theory-decided reliability, z, p, Holm, agreement) live in
``rfviz.verdicts``. Pure numpy/maths; no torch, no engine. Thresholds are keyword arguments whose defaults are the
verdict module's rules (``rfviz.verdicts.rules``: top share ×8 capped at 1/2, tail index 2 with Hill's z 1.645, top-k
share 1/2); this module only computes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .verdicts.rules import (
    HILL_Z,
    MAX_PART_SHARE,
    MAX_TOP_SHARE,
    MIN_PARTS,
    MIN_TAIL_INDEX,
    MIN_TAIL_TRIALS,
    TARGET_REL_STDERR,
    TOP_SHARE_FACTOR,
    TOP_SHARE_MIN_RATIO,
    roundoff_floor,
)

MAX_REL_STDERR = TARGET_REL_STDERR
"""Default: the MSE's standard error must be at most 10% of the MSE (``rfviz.verdicts.TARGET_REL_STDERR``)."""


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
        limit = min(MAX_PART_SHARE, top_share_factor / parts)
        if top_share > limit:
            reasons.append(f"largest of {parts} parts carries {top_share:.0%} of the squared error (> {limit:.0%})")
    if not reasons:
        return Reliability(True, None)
    return Reliability(False, "heavy tail or too few trials: " + "; ".join(reasons))


# --------------------------------------------------------------------------- per-trial tail diagnostics (engine)

TOP_K = 32
"""Largest per-trial squared errors the engine keeps per pair (merged exactly across blocks: the top k of a union
is the top k of the parts' top k's)."""
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
                  max_top_share: float = MAX_TOP_SHARE, exact_below: float | None = None) -> TailReport:
    """Whether each of several sampled MSEs (the means of per-trial squared errors) can be trusted, from per-pair
    ``mean``, ``m2`` of ``count`` trials and the ``top`` largest squared errors (shape (P, k), any order).

    Unreliable, in this order of the warning: every estimate underflowed to 0 (``underflow``: precision loss, the
    sampled MSE is then K² whatever the estimator); the paper says E|K̂|⁴ = ∞ there (``fourth_moment_finite``
    False); Hill α̂·(1 + 1.645/√k) < ``min_tail_index`` (needs ≥ 64 trials); the largest k trials carry more than
    ``max_top_share`` of the squared error (needs ≥ 16·k trials); relative standard error > ``max_rel_stderr``.
    Exact points (mean squared error ≤ ``exact_below``, default ``rfviz.verdicts.roundoff_floor(1)``: round-off) are
    reliable."""
    if exact_below is None:
        exact_below = roundoff_floor(1)
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    m2 = np.atleast_1d(np.asarray(m2, dtype=float))
    top = -np.sort(-np.asarray(top, dtype=float).reshape(len(mean), -1), axis=-1)
    k = top.shape[-1]
    var = m2 / (count - 1) if count > 1 else np.full_like(mean, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(mean > 0, np.sqrt(np.maximum(var, 0.0) / max(count, 1)) / np.where(mean > 0, mean, 1.0),
                       np.where(m2 > 0, np.inf, 0.0))
        share = np.where(mean > 0, top.sum(axis=-1) / (mean * count), 0.0)
    tail = hill_tail_index(top) if count >= MIN_TAIL_TRIALS else np.full(len(mean), np.nan)
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
            if count >= TOP_SHARE_MIN_RATIO * k and share[i] > max_top_share:
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
