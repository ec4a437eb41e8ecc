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

MAX_REL_STDERR = 0.1
"""Default: the MSE's standard error must be at most 10% of the MSE."""
TOP_SHARE_FACTOR = 8.0
"""Default: the largest of ``parts`` parts may carry at most min(1/2, 8/parts) of the total squared error."""
MIN_PARTS = 4
"""Below this many parts the top-share test says nothing (one part always carries everything)."""


@dataclass(frozen=True)
class Moments:
    """Count, mean and M2 = Σ(v − mean)² of a sample; ``merge`` pools two samples exactly (Chan et al. 1979)."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0

    def merge(self, other: Moments) -> Moments:
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        n = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / n)
        m2 = self.m2 + other.m2 + delta * delta * (self.count * other.count / n)
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
