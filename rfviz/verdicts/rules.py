"""Every number a verdict on a sampled MSE uses, one constant per rule with its reason, and the round-off rules
(``roundoff_floor``, ``exact_at_roundoff``, ``precision_loss``). Faces, the engine, the diagnostics, the Gram
study, sweeps and the lab import these; none writes a threshold of its own."""

from __future__ import annotations

import numpy as np

# ------------------------------------------------------------------------------ shared by every face

FWER_LEVEL = 0.01
"""Family-wise error level of every "closed form and sampled MSE disagree" verdict (Holm or Bonferroni)."""

EPS = float(np.finfo(np.float64).eps)
"""float64 machine epsilon, 2.22e-16."""

ROUNDOFF_AMPLIFICATION = 16.0
"""Safety factor of ``roundoff_floor`` for the exponential's amplification of an argument's absolute round-off
(exp(a + δ) = e^a(1 + δ + …): a dot product ω·x of size |a| carries an absolute error ~|a|·γ_d) and for the
reductions' worst cases; 16 covers arguments up to |a| ≈ 15 with room to spare."""

PRACTICAL_TRIALS = 1e9
"""More trials than this (for ±10 % on a sampled MSE) is not a practical count: the verdict says so in words."""

TARGET_REL_STDERR = 0.1
"""The relative standard error a reliable sampled MSE must reach (±10 %)."""


# ------------------------------------------------------- heavy-tail diagnostics of a sample (rfviz.diagnostics)

TOP_SHARE_FACTOR = 8.0
"""The largest of ``parts`` parts (trials or blocks) may carry at most min(``MAX_PART_SHARE``, 8/parts) of the total
squared error (``rfviz.diagnostics.assess_mse``)."""
MAX_PART_SHARE = 0.5
"""The cap of that share whatever the number of parts."""
MIN_PARTS = 4
"""Below this many parts the top-share test says nothing (one part always carries everything)."""
MIN_TAIL_INDEX = 2.0
"""Hill tail index of the squared errors below which their variance looks infinite (P(E > t) ~ t^-α with α < 2
⇔ E[|K̂ − K|⁴] = ∞): the sampled MSE's standard error is then meaningless, however small it looks. The test uses
the one-sided 95 % upper bound α̂·(1 + ``HILL_Z``/√k) (Hill's asymptotic sd is α/√k): with k = 32 a point is flagged
when α̂ < 1.55, so that light-ish tails (α̂ ≈ 2-3 for lognormal-like positive features at small r) are not."""
HILL_Z = 1.645
"""One-sided 95 % normal quantile of the Hill test above."""
MIN_TAIL_TRIALS = 64
"""Fewer trials than this: no Hill tail index (too few order statistics beyond the top k)."""
TOP_SHARE_MIN_RATIO = 16
"""The top-k share test needs at least this many times k trials."""
MAX_TOP_SHARE = 0.5
"""The largest ``rfviz.diagnostics.TOP_K`` trials may carry at most this share of the total squared error. For
light tails (e.g. χ²-like squared errors) the top 32 of 2000 trials carry ≈ 8 %; a lognormal-like heavy tail pushes
it past 50 %."""

# ------------------------------------------------------------------------ Gram errors (rfviz.gram_engine)

GRAM_MIN_REPEATS = 10
"""Fewer Gram repeats than this are never reliable (the top-share test needs parts to compare)."""
GRAM_RELIABLE_BLOCKS = 20
"""Gram repeats are pooled into this many blocks for the top-share test (a single repeat of a light-tailed error
can carry ~log(n)/n of the sum, so per-repeat shares would flag honest samples)."""

# ------------------------------------------------------------------------------------ sweeps (rfviz.sweeps)

MAX_RELIABLE_Z = 1e6
"""A Monte-Carlo MSE further than this many standard errors from the closed form is never reliable (underflowed
estimates or a tail the trials never reached); so is a standard error of 0 at a point that is not exact
(``rfviz.verdicts.reliability.sweep_point_reliability``)."""

# ---------------------------------------------------------------------------- optimal sampling (maths.optimal)

HEAVY_TAIL_KURTOSIS = 1e4
"""A Monte-Carlo variance estimate from N samples has relative standard error ≈ √(κ/N), κ = E Y⁴/(E Y²)². Above
this κ even 10⁶ samples leave > 10 % error: [OS]'s "MC will lie" regime (§6.5), flagged."""

# ------------------------------------------------------------------------------------ the estimator lab

LAB_ALPHA = FWER_LEVEL
"""The lab's default family-wise level of its bias test (Holm): the same 1 % as every other face."""
BIAS_KURTOSIS_FRACTION = 1 / 100
"""A point enters the bias test only if its estimated kurtosis κ ≤ trials·this (CLT for the mean). Calibrated on
150 seeds of positive, FAVOR+, GERF, the angular hybrid and the tempered example at the default grid: 1/20 gave
false-alarm rates up to 4.7 % at α = 1 %, 1/100 gives ≤ 1.7 %."""
CLOSED_FORM_KURTOSIS_FRACTION = 1 / 1000
"""Stricter for the closed-form test: the sampled MSE's standard error needs the 8th moment of K̂ to be well
sampled, which the 4th-moment κ only hints at. 1/100 gave false disagreements on 7-37 % of seeds for positive RFs
and hybrids; 1/1000 gave none in 150 seeds (at the cost of testing fewer points: add trials to test more)."""
DETERMINISTIC_REL = 1e-12
"""SE(MSE)/MSE below this: every trial gave the same K̂ (closed-form MSE then must match to
``DETERMINISTIC_MATCH_REL`` relative)."""
DETERMINISTIC_MATCH_REL = 1e-8
"""How closely a deterministic estimator's sampled MSE must match its closed form."""
CLOSED_FORM_KURTOSIS_FRACTION_THEORY = 1 / 100
"""The closed-form test's gate where the estimator gives its fourth moment in closed form: the z of the sampled MSE
then divides by the larger of the sampled and the predicted standard error (MCResult.z_against), which under the
hypothesis tested (the closed forms are right) is the true one, so the 8th-moment worry above does not apply and
the bias test's gate is enough. Without it FAVOR+ and positive RFs had no non-exact point in the test at the lab's
defaults (κ ≈ 4-10 at r = 0.5 > 4000/1000). Measured false exit-1 rates: bench/README.md."""
CLOSED_FORM_ALPHA_FACTOR = 0.01
"""The closed-form test runs at α·this: the z-score of a sampled MSE has a heavier left tail than a normal (its
standard error is estimated from the same, right-skewed squared errors), and formula errors are large anyway
(a factor 2 gives |z| > 10 at the default settings). Example: trig_phase (correct closed form) at d = 2 with
random seed 0 gives z = -4.14 at one point, which α/10 would still reject; 200 seeds give sd(z) = 1.05 there."""
CONFIRM_TRIALS_FACTOR = 4
"""A closed-form disagreement is confirmed on an independent sample with this many times the trials (its own
child seed) at the rejected points only; the point counts as a disagreement only if that sample is
light-tailed and reliable too and rejects again (Holm at the same level). Needing two independent rejections can
only lower the false-alarm rate. Why: without a fourth-moment closed form a heavy-tailed estimator's rare large
draws are often missing from the first sample, so its sampled MSE comes out low with a small standard error; the
correct 0.3·FAVOR+ + 0.7·trig mixture (examples/calibration_plugins.py, no fourth moment) was rejected at 11 of 60
seeds by the first sample alone and at 0 of 60 after confirmation, where the 4× sample saw the tail (measured
with the lab's defaults)."""
TIE_LOG10 = 0.05
"""|log10 MSE ratio| below this counts as a tie in the lab's win/lose summary (about ±12 %)."""
EXACT_REL_MSE_FLOAT32 = 1e-10
"""(≈ 100 float32 ulps)²: round-off of float32 runs (the GPU default); float64 runs use ``roundoff_floor``
(a relative MSE, MSE/K², below it is round-off: exact, e.g. positive RFs at θ = π, trig at θ = 0)."""
FEATURE_GROWTH_TOLERANCE = 1.1
"""Features look bounded if max|φ| over all samples ≤ this × max|φ| over the first 1/16 of them."""
FEATURE_CONSISTENCY_REL = 1e-6
"""Features are consistent with ``estimate`` when Σ φ_query(x)·φ_key(y) and K̂(x, y) differ by less than this,
relative."""
MIN_INFORMATIVE = 3
"""A verdict of "unbiased" needs at least this many informative points: not exact, light-tailed enough for the
CLT (kurtosis test) and with a reliable sampled MSE (``lab_reliable``). Fewer: exit 3, inconclusive."""
LAB_ROTATIONS = 2
"""Random rotations of R^d under which the lab re-runs the whole (r, θ) grid of an estimator that is not isotropic
(``rfviz.lab.rotation``): each rotation is an independent Monte-Carlo run (its own child seed), so per grid point
the canonical mean and the rotated means are independent and their equality is a χ² test with this many degrees of
freedom. Two rotations triple the grid's Monte Carlo; an estimator biased only along the coordinate axes (whose
canonical grid lies in the e₁–e₂ plane) differs there from both."""
ROTATION_ALPHA = FWER_LEVEL
"""Family-wise level of the rotation test (Holm over the grid points): its own family, beside the bias test's. A
rejection is evidence of bias (the rotated pairs have the same kernel value, so unequal means cannot all equal
it): "bias detected, the estimates depend on the direction of x". Together the two families' false-alarm rate is
at most the sum of their levels."""
EXTRA_TRIALS_FACTOR = 4
"""The extra pairs (random orientations, |x| ≠ |y|) run with this many times the trials: they are the only pairs
off |x| = |y|, so a closed form wrong only there must be caught on them alone. At 4 × 4000 trials the closed-form
gate κ ≤ trials/1000 admits κ ≤ 16 (positive RFs at r ≤ 1 have κ ≈ 4-10) and a relative standard error
√((κ − 1)/N) ≈ 1.5-2.5 % puts a 15 % error at z ≈ 6-10 against a Bonferroni threshold ≈ 4.6. (8× doubled the
cost of a plain feature map's check, whose map is called once per trial.)"""
UNEQUAL_POWER_TARGET = 0.15
"""The relative closed-form error off |x| = |y| the lab must catch at its default trials; the report states the
smallest error detectable at the unequal pairs and, when it is larger than this, the trials that would reach it."""
MIN_CLOSED_FORM_POINTS = 3
""""The closed form agrees" needs at least this many tested non-exact points (grid and extra pairs) and no
rejection; fewer: "not tested enough" (``closed_form_agrees`` None) and the MSE map keeps the sampled MSE wherever
the closed form was not tested. Exact points (closed form and sample both 0 at round-off, e.g. θ = π for positive
RFs) count in the Holm family but test no formula (a closed form 10× too small would
otherwise "agree" on them alone)."""


# ----------------------------------------------------------------------------------------- round-off

def roundoff_floor(d: int, m: int = 1, eps: float = EPS) -> float:
    """The relative MSE (MSE/K²) at or below which a squared error is float64 round-off of K̂ − K.

    Derivation. A random-feature estimate is K̂ = (1/m)·Σᵢ tᵢ, each term tᵢ a product of exponentials (or cosines) of
    length-d dot products ω·x. In float64 (unit round-off u = eps/2, γ_n = n·u/(1 − n·u), Higham 2002 §3.1):

    * a dot product of length d has absolute error ≤ γ_d·Σ_k|ω_k x_k|; through exp (or cos) an argument error δ
      becomes a relative (absolute) error δ of the term, so each term carries a relative error ≤ A·γ_d + O(u) with
      A ≤ ``ROUNDOFF_AMPLIFICATION`` bounding 1 + Σ_k|ω_k x_k| for the arguments rfviz evaluates;
    * the sum of m terms adds γ_m·Σᵢ|tᵢ|, and the division by m and the final product with the scale a few u.

    With Σᵢ|tᵢ|/m of the order of the scale |K| (exactly |K̂| for positive features), |fl(K̂) − K̂| ≤ c·eps·|K| with
    c = A·(d + m + 8)/2 ≤ A·(d + m + 8), so the squared round-off error relative to K² is at most (c·eps)². The floor
    is that bound, (A·(d + m + 8)·eps)²: 1.5e-26 at d = 16, m = 10; 2.0e-23 at d = m = 1000. A closed form is held
    to the same floor, since its own evaluation carries the same relative error (log-space sums of d-term
    quantities).

    Parameters
    ----------
    d : int
        Input dimension.
    m : int
        Number of random features (1 where not known).
    eps : float
        Machine epsilon of the arithmetic (float64 by default; a float32 run passes its own).

    Returns
    -------
    float
        The floor on the relative MSE.

    Examples
    --------
    >>> f"{roundoff_floor(16, 10):.2g}"
    '1.5e-26'
    """
    c = ROUNDOFF_AMPLIFICATION * (max(int(d), 1) + max(int(m), 1) + 8)
    return (c * eps) ** 2


def exact_at_roundoff(closed_rel: np.ndarray | float | None, sampled_rel: np.ndarray | float | None,
                      floor: float) -> np.ndarray:
    """Where a point is exact at round-off: the closed form's and the sample's relative MSEs are both ≤ ``floor``
    (``roundoff_floor``); a missing one (None/NaN) counts as at the floor only if the other is. NaN-safe.

    Examples
    --------
    >>> exact_at_roundoff(np.array([0.0, 0.0, 1e-3]), np.array([1e-33, 1e-3, 1e-33]), 1e-26).tolist()
    [True, False, False]
    """
    c = np.asarray(np.nan if closed_rel is None else closed_rel, dtype=float)
    s = np.asarray(np.nan if sampled_rel is None else sampled_rel, dtype=float)
    c, s = np.broadcast_arrays(c, s)
    with np.errstate(invalid="ignore"):
        c_ok = np.where(np.isnan(c), True, c <= floor)
        s_ok = np.where(np.isnan(s), True, s <= floor)
        return c_ok & s_ok & ~(np.isnan(c) & np.isnan(s))


def precision_loss(closed_rel: np.ndarray | float | None, sampled_rel: np.ndarray | float, floor: float) -> np.ndarray:
    """Where the sample sits at round-off (relative MSE ≤ ``floor``) but the closed form is above it: every estimate
    equals K to the last bits where the estimator is not exact (underflow or cancellation in the features). Such a
    sample is unreliable (``PRECISION_LOSS``), never a disagreement. False where the closed form is missing.

    Examples
    --------
    >>> precision_loss(np.array([1e-3, 0.0, 1e-3]), np.array([0.0, 0.0, 1e-3]), 1e-26).tolist()
    [True, False, False]
    """
    c = np.asarray(np.nan if closed_rel is None else closed_rel, dtype=float)
    s = np.asarray(sampled_rel, dtype=float)
    with np.errstate(invalid="ignore"):
        return (s <= floor) & (c > floor)
