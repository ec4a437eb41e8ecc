"""The estimator lab: is a (new) estimator unbiased, and where does its MSE beat the known mechanisms?

``check_estimator`` runs one Monte-Carlo experiment over a grid of (r, θ) (canonical embedding of R^d) and reports:

* **bias**: at each point the z-score of the sampled mean of K̂ against the true kernel (MCResult.bias_z), its
  two-sided normal p-value, and Holm's step-down test over the grid (family-wise error ≤ α under any dependence
  between the points; the points share their random draws, so they are dependent). Verdict "bias detected" iff
  Holm rejects at least one point.
* **heavy tails**: the CLT behind a z-score needs trials ≫ the kurtosis κ of K̂ (positive RFs at large |x + y|
  are log-normal-like). κ is estimated from the engine's output (κ = 1 + n·SE(rel_mse)²/rel_mse²); points with
  κ > trials/100 are left out of the bias test (κ > trials/1000 for the closed-form test, which needs higher
  moments), and the report lists them with that reason.
* **closed form**: if the estimator gives one, the z-score of the sampled MSE against it on the grid and the extra
  pairs (one Holm family at α/100, each rejection confirmed on an independent 4× sample). "Agrees" needs at least
  MIN_CLOSED_FORM_POINTS tested non-exact points (exact points, 0 = 0 at round-off, test no formula); the report
  gives their number and the smallest detectable relative error (``detectable_error``).
* **MSE ratio map**: log10(MSE_candidate / MSE_builtin) against chosen built-ins with the same m and kernel
  (the built-ins' closed forms where they exist, Monte Carlo otherwise; the candidate's closed form only where it
  was tested and agreed, its sampled MSE elsewhere): negative where the candidate wins.
* **features**: finite, positive (real and > 0), bounded-looking (the largest |φ| does not grow with more
  samples), and consistent with ``estimate`` (Σ φ_query(x)·φ_key(y) = K̂(x, y)).

The summary verdict (``LabReport.verdict``, exit codes in EXIT_CODES) is "unbiased", "bias detected", "closed form
disagrees", "inconclusive" or "biased, as declared" (``unbiased = False``: exit 4, not 1); other findings are
warnings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
from scipy.special import ndtri

from .engine import MCResult, monte_carlo, spawn_seed
from .estimators import REGISTRY, Estimator, PairStats  # the package: REGISTRY needs the catalog loaded
from .geometry import check_r, check_theta, embed_pair
from .numerics import LOG10
from .params import CHECK_TRIALS_PARAM, CPU_DEVICE_PARAM, LAB_D_PARAM, SEED_PARAM, Param, ParameterError, validated
from .params import check as check_param
from .plugins import call_guarded, instantiate, protocol_guard
from .verdicts import closed_form_word, holm, roundoff_floor, theory_reliability, two_sided_p
from .verdicts.rules import (  # the lab's rules, with their reasons, live in the verdict module
    BIAS_KURTOSIS_FRACTION,
    CLOSED_FORM_ALPHA_FACTOR,
    CLOSED_FORM_KURTOSIS_FRACTION,
    CLOSED_FORM_KURTOSIS_FRACTION_THEORY,
    CONFIRM_TRIALS_FACTOR,
    DETERMINISTIC_MATCH_REL,
    DETERMINISTIC_REL,
    EXACT_REL_MSE_FLOAT32,
    FEATURE_GROWTH_TOLERANCE,
    LAB_ALPHA,
    MIN_CLOSED_FORM_POINTS,
    MIN_INFORMATIVE,
    TIE_LOG10,
)

DEFAULT_R: tuple[float, ...] = (0.5, 1.0, 1.5)
DEFAULT_THETA: tuple[float, ...] = (0.0, math.pi / 4, math.pi / 2, 3 * math.pi / 4, math.pi)
DEFAULT_D = LAB_D_PARAM.default
DEFAULT_TRIALS = CHECK_TRIALS_PARAM.default
DEFAULT_ALPHA = LAB_ALPHA
DEFAULT_COMPARE: tuple[str, ...] = ("trig", "positive", "positive_antithetic")
FEATURES_KEY, EXTRA_PAIRS_KEY, CONFIRM_KEY, ORIENTATIONS_KEY, REPRODUCIBLE_KEY = 1, 2, 3, 4, 5
"""The children of the lab's seed (the one seed rule, ``rfviz.engine.spawn_seed(seed, key)``): the feature checks,
the extra pairs' Monte Carlo, the confirmation sample, the extra pairs' random orientations and the
reproducibility probe. The grid's Monte Carlo and the comparators use the seed itself (common random numbers)."""
FEATURE_TRIALS = 1024
EXIT_CODES: dict[str, int] = {"unbiased": 0, "bias detected": 1, "closed form disagrees": 1, "inconclusive": 3,
                              "biased, as declared": 4}
"""The CLI exit code of each verdict (2 is bad input or a broken plugin, raised before any verdict)."""
PAIR_KINDS: tuple[str, ...] = ("canonical", "random", "unequal")
"""``pairs``: the (r, θ) grid in the canonical embedding; random orientations of R^d (catches estimators that are
not rotation-invariant although they claim to be, or depend on coordinates); |x| ≠ |y| (the grid has |x| = |y|)."""
EXTRA_PAIRS = 4
"""Pairs of each extra kind (random, unequal): at the grid's middle r and θ spread over (0, π)."""
UNEQUAL_RATIO = 0.5
"""|y| = this·|x| for the ``unequal`` pairs."""
SHARED_PARAMS = ("m", "kernel", "coupling")
"""Parameters copied from the candidate to each comparator (a like-for-like comparison)."""

ALPHA_PARAM = Param("alpha", DEFAULT_ALPHA, help="family-wise error rate of the bias test (Holm)", low=0.0, high=1.0,
                    low_open=True, high_open=True)


# --------------------------------------------------------------------------- statistics helpers
def holm_over(p: np.ndarray, alpha: float, mask: np.ndarray | None = None) -> np.ndarray:
    """Holm's step-down rejections (``rfviz.verdicts.holm``) over the entries where ``mask`` is true; the others
    neither count in the family nor are rejected. A NaN p-value (an undefined z) is not tested either."""
    p = np.asarray(p, dtype=float)
    return holm(p if mask is None else np.where(np.asarray(mask, bool), p, np.nan), alpha)


def bonferroni_z(alpha: float, tests: int) -> float:
    """|z| above which a single point is significant after Bonferroni (Holm's first, strictest step)."""
    return float(ndtri(1.0 - alpha / (2 * max(tests, 1))))


def exact_threshold(res: MCResult) -> float:
    """Relative MSE that counts as round-off for the run's dtype and sizes (``rfviz.verdicts.roundoff_floor``, as
    the engine recorded it; the float32 floor of the GPU default at least ``EXACT_REL_MSE_FLOAT32``)."""
    floor = float(res.extras.get("exact_below", roundoff_floor(int(res.extras.get("d", 1)))))
    return max(floor, EXACT_REL_MSE_FLOAT32) if "32" in res.dtype else floor


def exact_points(res: MCResult) -> np.ndarray:
    """Pairs where every trial equals the kernel up to round-off of the run's dtype."""
    return np.asarray(res.rel_mse) <= exact_threshold(res)


def kurtosis(res: MCResult) -> np.ndarray:
    """Kurtosis of K̂ about the target, E(K̂ − K)⁴ / (E(K̂ − K)²)², from the engine's MSE and its standard error.

    NaN where the estimator is exact up to round-off (``exact_points``): there is no spread.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        kappa = 1.0 + res.trials * res.rel_mse_stderr**2 / res.rel_mse**2
    return np.where(exact_points(res), np.nan, kappa)


def declares_bias(cls: type[Estimator]) -> bool:
    """Whether an estimator says it is biased by design (``unbiased = False``, or a description starting with
    "Biased", e.g. truncated Maclaurin features): the lab then expects, and reports, "bias detected"."""
    return getattr(cls, "unbiased", True) is False or str(getattr(cls, "description", "")).strip().lower(
    ).startswith("biased")


# --------------------------------------------------------------------------- report
@dataclass
class Comparison:
    """MSE of the candidate relative to one built-in: log10 ratio per grid point (< 0: the candidate wins)."""

    name: str
    params: dict[str, Any]
    source: str  # "closed form" or "monte carlo"
    log10_ratio: np.ndarray
    wins: int
    losses: int
    ties: int


@dataclass
class LabReport:
    """Everything the lab found; grids are (len(r), len(theta)) arrays (rows r, columns θ)."""

    estimator: str
    title: str
    params: dict[str, Any]
    kernel: str
    d: int
    trials: int
    seed: int
    alpha: float
    r: np.ndarray
    theta: np.ndarray
    bias_z: np.ndarray
    bias_p: np.ndarray
    kurtosis: np.ndarray
    bias_tested: np.ndarray
    bias_rejected: np.ndarray
    log10_mse: np.ndarray
    mse_source: str
    closed_form_z: np.ndarray | None = None
    closed_form_tested: np.ndarray | None = None
    closed_form_rejected: np.ndarray | None = None
    closed_form_error: str | None = None
    comparisons: list[Comparison] = field(default_factory=list)
    skipped_comparisons: dict[str, str] = field(default_factory=dict)
    features: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    declared_biased: bool = False
    informative: np.ndarray | None = None
    """Points that inform the verdict: tested, not exact, with a reliable sampled MSE."""
    deterministic_wrong: np.ndarray | None = None
    """Points where every trial gave the same K̂ and it is not the kernel."""
    exact: np.ndarray | None = None
    """Points where every trial equals the kernel up to round-off."""
    extra_pairs: list[dict[str, Any]] = field(default_factory=list)
    """Pairs beyond the grid (``pairs`` random / unequal), each with its kind, ``|x|``, ``|y|``, θ, bias z, tested,
    rejected and reliable; they share the grid's Holm family."""
    closed_form_confirmation: list[dict[str, Any]] = field(default_factory=list)
    """Points (grid and extra pairs) the first sample's closed-form test rejected, re-tested on an independent
    sample with CONFIRM_TRIALS_FACTOR × the trials (``confirm_disagreements``): only confirmed points count."""
    closed_form_nonexact_tested: int = 0
    """Points (grid and extra pairs) where the closed form was tested and the sample is not exact: only these test
    a formula (at an exact point closed form and sample are both 0 at round-off)."""
    closed_form_exact_tested: int = 0
    """Exact points in the closed-form test (both 0 at round-off): they count in the Holm family, not as evidence."""
    closed_form_detectable: float | None = None
    """Smallest relative error of the closed form detected with power ≈ 1/2 at these trials (``detectable_error``);
    None when no non-exact point was tested."""
    closed_form_used: np.ndarray | None = None
    """Grid points where the MSE map (``log10_mse``, the comparisons) uses the closed form: tested there and
    rejected nowhere; the sampled MSE elsewhere."""

    @property
    def biased(self) -> bool:
        """Bias found (Holm rejects E[K̂] = K somewhere), declared or not."""
        return bool(self.bias_rejected.any()) or any(p["rejected"] for p in self.extra_pairs)

    @property
    def n_informative(self) -> int:
        grid = int(self.informative.sum()) if self.informative is not None else int(self.bias_tested.sum())
        return grid + sum(bool(p["informative"]) for p in self.extra_pairs)

    def bias_unreliable(self) -> np.ndarray:
        """Grid mask of the tested, non-exact points whose sampled MSE is unreliable: not informative."""
        tested = np.asarray(self.bias_tested, bool)
        if self.informative is None:
            return np.zeros(tested.shape, bool)
        exact = np.zeros(tested.shape, bool) if self.exact is None else np.asarray(self.exact, bool)
        det = np.zeros(tested.shape, bool) if self.deterministic_wrong is None else self.deterministic_wrong
        return tested & ~exact & ~np.asarray(self.informative, bool) & ~det

    @property
    def bias_counts(self) -> dict[str, int]:
        """Grid points by their part in the bias test, the numbers the text, the JSON and the bias map all show:
        ``left_out`` (heavy-tailed or infinite variance: not tested), ``exact`` (tested, 0 at round-off),
        ``unreliable`` (tested, not exact, sampled MSE unreliable: not informative), ``informative``, ``rejected``."""
        tested = np.asarray(self.bias_tested, bool)
        exact = np.zeros(tested.shape, bool) if self.exact is None else np.asarray(self.exact, bool) & tested
        informative = tested & ~exact if self.informative is None else np.asarray(self.informative, bool)
        return {"points": int(tested.size), "tested": int(tested.sum()), "left_out": int((~tested).sum()),
                "exact": int(exact.sum()), "unreliable": int(self.bias_unreliable().sum()),
                "informative": int(informative.sum()), "rejected": int(np.asarray(self.bias_rejected).sum())}

    @property
    def inconclusive(self) -> bool:
        """Neither bias nor a broken closed form found, and too few informative points to call it unbiased."""
        return not self.biased and self.closed_form_agrees is not False and self.n_informative < MIN_INFORMATIVE

    @property
    def verdict(self) -> str:
        """The lab's answer: ``unbiased``, ``bias detected``, ``closed form disagrees``, ``biased, as declared`` or
        ``inconclusive``."""
        if self.biased and not self.declared_biased:
            return "bias detected"
        if self.closed_form_agrees is False:
            return "closed form disagrees"
        if self.biased:
            return "biased, as declared"
        return "inconclusive" if self.inconclusive else "unbiased"

    @property
    def exit_code(self) -> int:
        """CLI exit code (EXIT_CODES): 0 unbiased (≥ MIN_INFORMATIVE informative points); 1 bias detected in an
        estimator that does not declare it, or the closed form disagrees with the estimator's own Monte Carlo;
        3 inconclusive; 4 biased as the estimator declares (``unbiased = False``) and its closed form does not
        disagree (2, bad input or a broken plugin, is raised by the CLI)."""
        return EXIT_CODES[self.verdict]

    @property
    def z_critical(self) -> float:
        return bonferroni_z(self.alpha, int(self.bias_tested.sum()) + sum(bool(p["tested"]) for p in self.extra_pairs))

    @property
    def closed_form_any_rejected(self) -> bool:
        """Some grid point or extra pair rejects the closed form (confirmed), or it is deterministically wrong."""
        grid = self.closed_form_rejected is not None and bool(np.asarray(self.closed_form_rejected).any())
        return grid or any(p.get("cf_rejected", False) for p in self.extra_pairs)

    @property
    def closed_form_agrees(self) -> bool | None:
        """False when the closed form failed or is rejected anywhere; True only when nothing is rejected at
        ≥ MIN_CLOSED_FORM_POINTS tested non-exact points; None otherwise (none given, or too little tested:
        exact points, where closed form and sample are both 0, say nothing about a formula)."""
        if self.closed_form_error is not None:
            return False
        if self.closed_form_rejected is None:
            return None
        if self.closed_form_any_rejected:
            return False
        return None if self.closed_form_nonexact_tested < MIN_CLOSED_FORM_POINTS else True

    def closed_form_text(self) -> str:
        """The closed-form verdict in words, with what was tested and the smallest error it would have caught."""
        if self.closed_form_error is not None:
            return f"FAILED ({self.closed_form_error})"
        if self.closed_form_rejected is None:
            return "none given"
        n, e = self.closed_form_nonexact_tested, self.closed_form_exact_tested
        tested = f"{n} non-exact point(s) tested" + (f" (+ {e} exact, which test no formula)" if e else "")
        power = "" if self.closed_form_detectable is None else (
            f"; smallest relative error detectable at {self.trials} trials: {self.closed_form_detectable:.2%} "
            "(power ≈ 1/2 at the Holm/Bonferroni threshold)")
        agrees = self.closed_form_agrees
        if agrees is None:
            return (f"NOT TESTED ENOUGH: {tested}, at least {MIN_CLOSED_FORM_POINTS} needed{power}; "
                    f"{self._closed_form_advice()}the MSE map uses the sampled MSE where it was not tested")
        return f"{closed_form_word(agrees, True)}: {tested}{power}"

    def _closed_form_advice(self) -> str:
        """How many trials would let MIN_CLOSED_FORM_POINTS grid points into the closed-form test (its gate is the
        sampled kurtosis κ ≤ trials·CLOSED_FORM_KURTOSIS_FRACTION; κ is itself sampled, so this is a lower bound)."""
        kappa = np.sort(np.asarray(self.kurtosis, float)[np.isfinite(self.kurtosis)])
        if kappa.size < MIN_CLOSED_FORM_POINTS:
            return ""
        needed = math.ceil(kappa[MIN_CLOSED_FORM_POINTS - 1] / CLOSED_FORM_KURTOSIS_FRACTION)
        if needed <= self.trials:
            return ""
        return f"--trials {needed} or more would let {MIN_CLOSED_FORM_POINTS} grid points into the test; "

    def summary(self) -> str:
        """One sentence: the verdict and why.

        Returns
        -------
        str
            The sentence the CLI and the lab page show first.
        """
        n = int(self.bias_tested.sum())
        total = self.bias_z.size
        if self.verdict in ("bias detected", "biased, as declared"):
            text = self._bias_summary(n)
            if self.declared_biased:
                text = text.replace("BIAS DETECTED", "BIASED, AS DECLARED (the estimator sets unbiased = False)", 1)
            return text
        max_z = float(np.max(np.abs(self.bias_z[self.bias_tested]))) if n else float("nan")
        if self.closed_form_agrees is False:
            return ("CLOSED FORM DISAGREES: the estimator's own closed-form MSE does not match its Monte Carlo "
                    f"(no bias found at {n} of {total} tested points)")
        if self.inconclusive:
            if self.exact is not None and bool(np.all(self.exact | self.informative)):
                return (f"INCONCLUSIVE: only {self.n_informative} informative grid point(s) (need {MIN_INFORMATIVE}): "
                        "the estimator is exact (no spread) at the others, so there is no sampling noise to test "
                        "and more --trials cannot help; test pairs where it is random (other --r/--theta, or "
                        "--pairs random,unequal)")
            return (f"INCONCLUSIVE: only {self.n_informative} informative grid point(s) (need {MIN_INFORMATIVE}): "
                    "the others are exact or heavy-tailed, so the sampled mean/MSE cannot be trusted there; use "
                    "more --trials, smaller --r, or other --theta")
        n_extra = sum(bool(p["tested"]) for p in self.extra_pairs)
        extra = f" + {n_extra} extra pairs" if n_extra else ""
        return (f"UNBIASED: no point rejects E[K̂] = K (Holm over {n} of {total} grid points{extra}, "
                f"α = {self.alpha:g}; "
                f"max |z| = {max_z:.2f}, first Holm threshold {self.z_critical:.2f}; {self.n_informative} "
                f"informative points incl. extra pairs, at least {MIN_INFORMATIVE} needed)")

    def _bias_summary(self, n: int) -> str:
        """The sentence of a bias found: where, how strong (deterministic, extra pairs, or grid points)."""
        if self.deterministic_wrong is not None and (self.deterministic_wrong
                                                                     & self.bias_rejected).any():
            k = int((self.deterministic_wrong & self.bias_rejected).sum())
            return (f"BIAS DETECTED: at {k} grid point(s) every trial gave the same K̂ and it is not the kernel "
                    "(a deterministic wrong estimate, no sampling noise to explain it)")
        if not self.bias_rejected.any():
            bad = [p for p in self.extra_pairs if p["rejected"]]
            w = max(bad, key=lambda p: abs(p["z"]))
            return (f"BIAS DETECTED at {len(bad)} of the extra pairs (Holm, α = {self.alpha:g}); worst z = "
                    f"{w['z']:+.1f} for {w['kind']} pair |x| = {w['norm_x']:g}, |y| = {w['norm_y']:g}, "
                    f"θ = {w['theta']:.3f}")
        k = int(self.bias_rejected.sum())
        i = np.unravel_index(np.nanargmax(np.where(self.bias_rejected, np.abs(self.bias_z), -1)), self.bias_z.shape)
        return (f"BIAS DETECTED: the mean of K̂ differs from the kernel at {k} of {n} tested grid points "
                f"(Holm, α = {self.alpha:g}); worst z = {self.bias_z[i]:+.1f} at r = {self.r[i[0]]:g}, "
                f"θ = {self.theta[i[1]]:.3f}")


    def _bias_counts_text(self) -> str:
        c = self.bias_counts
        return (f"bias test on the grid: {c['tested']} of {c['points']} points tested ({c['left_out']} left out: "
                f"heavy-tailed; {c['exact']} exact; {c['unreliable']} with an unreliable sampled MSE, not "
                f"informative; {c['informative']} informative; {c['rejected']} rejected)")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict: what ``rfviz check --json`` prints.

        Returns
        -------
        dict
            Plain numbers, strings, lists and None (non-finite floats become null).
        """
        out: dict[str, Any] = {
            "estimator": self.estimator,
            "title": self.title,
            "params": self.params,
            "kernel": self.kernel,
            "d": self.d,
            "trials": self.trials,
            "seed": self.seed,
            "alpha": self.alpha,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "informative_points": self.n_informative,
            "min_informative_points": MIN_INFORMATIVE,
            "exit_codes": EXIT_CODES,
            "summary": self.summary(),
            "grid": {"r": self.r, "theta": self.theta, "layout": "rows r, columns theta"},
            "bias": {
                "z": self.bias_z,
                "p": self.bias_p,
                "tested": self.bias_tested,
                "rejected": self.bias_rejected,
                "kurtosis": self.kurtosis,
                "method": "two-sided z of the mean, Holm step-down over tested points",
                "first_threshold_abs_z": self.z_critical,
                "counts": self.bias_counts,
                "unreliable": self.bias_unreliable(),
            },
            "closed_form": None if self.closed_form_z is None else {
                "z": self.closed_form_z,
                "tested": self.closed_form_tested,
                "rejected": self.closed_form_rejected,
                "agrees": self.closed_form_agrees,
                "verdict": self.closed_form_text(),
                "nonexact_tested": self.closed_form_nonexact_tested,
                "exact_tested": self.closed_form_exact_tested,
                "min_nonexact_tested": MIN_CLOSED_FORM_POINTS,
                "detectable_rel_error": self.closed_form_detectable,
                "used_in_mse_map": self.closed_form_used,
                "confirmation": self.closed_form_confirmation,
                "method": f"two-sided z of the sampled MSE, Holm at alpha·{CLOSED_FORM_ALPHA_FACTOR:g}; each "
                          f"rejection confirmed on an independent sample with {CONFIRM_TRIALS_FACTOR}× the trials",
            },
            "closed_form_error": self.closed_form_error,
            "extra_pairs": self.extra_pairs,
            "log10_mse": self.log10_mse,
            "mse_source": self.mse_source,
            "bias_as_declared": self.verdict == "biased, as declared",
            "comparisons": {c.name: {"params": c.params, "source": c.source, "log10_ratio": c.log10_ratio,
                                     "wins": c.wins, "losses": c.losses, "ties": c.ties} for c in self.comparisons},
            "skipped_comparisons": self.skipped_comparisons,
            "features": self.features,
            "warnings": self.warnings,
            "declared_biased": self.declared_biased,
        }
        return out

    def to_text(self) -> str:
        """Human-readable report: what ``rfviz check`` prints.

        Returns
        -------
        str
            The report, several lines.
        """
        params = ", ".join(f"{k}={v}" for k, v in self.params.items())
        lines = [f"estimator   {self.estimator} ({self.title}) [{params}]",
                 f"setting     kernel={self.kernel}, d={self.d}, trials={self.trials}, seed={self.seed}, "
                 f"grid {len(self.r)} r × {len(self.theta)} θ",
                 f"verdict     {self.summary()}", "", self._bias_counts_text(),
                 "bias z-score of the mean (rows r, columns θ; * = rejected by Holm, ~ = heavy-tailed, left out, "
                 "? = sampled MSE unreliable, not informative):"]
        lines += _grid_text(self.r, self.theta, self.bias_z, self.bias_rejected, ~self.bias_tested,
                            note=self.bias_unreliable())
        if self.closed_form_z is not None:
            lines += ["", f"closed-form MSE vs Monte Carlo: {self.closed_form_text()}",
                      "  (z-scores on the grid, * = rejected, ~ = left out):"]
            lines += _grid_text(self.r, self.theta, self.closed_form_z, self.closed_form_rejected,
                                ~self.closed_form_tested)
            for c in self.closed_form_confirmation:
                outcome = "confirmed" if c["confirmed"] else ("not confirmed" if c["tested"] else
                                                              "not confirmed (heavy-tailed or unreliable there)")
                lines.append(f"  re-tested {where_text(c)} with {c['trials']} independent "
                             f"trials: z = {c['z']:+.2f}, {outcome}")
        elif self.closed_form_error is not None:
            lines += ["", f"closed-form MSE: FAILED ({self.closed_form_error})"]
        else:
            lines += ["", "closed-form MSE: none given"]
        if self.extra_pairs:
            lines += ["", "bias z-score at extra pairs (* = rejected by Holm with the grid, ~ = not informative: "
                      "heavy-tailed or exact); closed-form z where it was tested:"]
            for p in self.extra_pairs:
                mark = "*" if p["rejected"] else ("~" if not p["informative"] else " ")
                cf = ""
                if "cf_z" in p:
                    cf_mark = "*" if p["cf_rejected"] else ("~" if not p["cf_tested"] else " ")
                    cf = f"  closed-form z = {p['cf_z']:+7.2f}{cf_mark}"
                lines.append(f"  {p['kind']:<8} |x| = {p['norm_x']:<5g} |y| = {p['norm_y']:<5g} "
                             f"θ = {p['theta']:.3f}  z = {p['z']:+7.2f}{mark}{cf}")
        if self.comparisons:
            lines += ["", f"{self.estimator}'s MSE in the ratio maps: {self.mse_source}"
                      + ("" if self.closed_form_used is None or not (~self.closed_form_used).any() else
                         " (o = sampled MSE at that point)")]
        for c in self.comparisons:
            lines += ["", f"log10 MSE ratio vs {c.name} ({c.source}); < 0: {self.estimator} wins "
                      f"(wins {c.wins}, loses {c.losses}, ties {c.ties}):"]
            sampled = None if self.closed_form_used is None else ~self.closed_form_used
            lines += _grid_text(self.r, self.theta, c.log10_ratio, None, None, fmt="{:+7.2f}", note=sampled,
                                note_tag="o")
        for name, why in self.skipped_comparisons.items():
            lines.append(f"not compared with {name}: {why}")
        f = self.features
        lines += [""]
        if f.get("available"):
            lines.append(f"features    {f['count']} per input; finite: {f['finite']}; positive: {f['positive']}; "
                         f"bounded (observed): {f['bounded_observed']} (max|φ| growth {f['max_growth']:.2f}); "
                         f"Σφ·φ = K̂: {f['consistent']} (max rel. diff {f['max_rel_diff']:.1e})")
        else:
            lines.append(f"features    {f.get('reason', 'not available')}")
        if self.declared_biased:
            lines.append("note        the estimator declares itself biased by design (unbiased = False): a bias found "
                         f"is reported as expected, exit {EXIT_CODES['biased, as declared']}, not "
                         f"{EXIT_CODES['bias detected']}")
        for w in self.warnings:
            lines.append(f"warning     {w}")
        return "\n".join(lines)


def where_text(row: dict[str, Any]) -> str:
    """A re-tested point in words: a grid point (r, θ) or an extra pair (kind, |x|, |y|, θ)."""
    if row.get("pair", "grid") == "grid":
        return f"r = {row['r']:g}, θ = {row['theta']:.3f}"
    return f"{row['pair']} pair |x| = {row['r']:g}, |y| = {row['norm_y']:g}, θ = {row['theta']:.3f}"


def _grid_text(r: np.ndarray, theta: np.ndarray, values: np.ndarray, mark: np.ndarray | None,
               skip: np.ndarray | None, fmt: str = "{:+7.2f}", note: np.ndarray | None = None,
               note_tag: str = "?") -> list[str]:
    head = "   r \\ θ " + "".join(f"{t:>9.3f}" for t in theta)
    rows = [head]
    for i, rv in enumerate(r):
        cells = []
        for j in range(len(theta)):
            v = values[i, j]
            text = (fmt.format(v) if abs(v) < 1e4 else f"{v:+7.0e}") if np.isfinite(v) else f"{v:>7}"
            tag = "*" if mark is not None and mark[i, j] else ("~" if skip is not None and skip[i, j] else (
                note_tag if note is not None and note[i, j] else " "))
            cells.append(f"{text:>8}{tag}")
        rows.append(f"{rv:>8g} " + "".join(cells))
    return rows


# --------------------------------------------------------------------------- the check
MAX_GRID_PAIRS = 10_000
"""Most (r, θ) pairs of one check (a 100 × 100 grid): each is a Monte-Carlo point and a row of the report."""


def _grid(r: Sequence[float], theta: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    r_arr = np.asarray(r, dtype=float).ravel()
    t_arr = np.asarray(theta, dtype=float).ravel()
    if r_arr.size == 0 or t_arr.size == 0:
        raise ParameterError("the grid needs at least one r and one theta value")
    if r_arr.size * t_arr.size > MAX_GRID_PAIRS:  # before any pair is built: 10⁴ × 10⁴ took 2.6 GB and 50 s
        raise ParameterError(f"the grid has {r_arr.size} r × {t_arr.size} theta = {r_arr.size * t_arr.size} pairs; "
                             f"at most {MAX_GRID_PAIRS} (use fewer --r or --theta values, or a sweep)")
    return check_r(r_arr), check_theta(t_arr)


def _run_mc(est: Estimator, x: np.ndarray, y: np.ndarray, d: int, trials: int, seed: int, device: str,
            progress: Callable[[float], None] | None) -> MCResult:
    with protocol_guard(f"{type(est).__name__} ({est.name})", "the Monte-Carlo run (sample/estimate)"):
        try:
            return monte_carlo(est, x, y, d=d, trials=trials, seed=seed, device=device, progress=progress)
        except FloatingPointError as exc:
            raise ParameterError(f"{est.name}: {exc}; its estimates are NaN or inf on this grid "
                                 "(compute K̂ in log space, or use a smaller r)") from None


def comparator(name: str, candidate: Estimator) -> Estimator:
    """Built-in ``name`` with the candidate's m, kernel and coupling where it has those parameters."""
    if name not in REGISTRY:
        raise ParameterError(f"compare must name built-in estimators ({', '.join(sorted(REGISTRY))}), got {name!r}")
    cls = REGISTRY[name]
    own = {p.name: p for p in cls.spec}
    params = {k: candidate.params[k] for k in SHARED_PARAMS if k in own and k in candidate.params}
    other = cls(**params)
    if other.kernel != candidate.kernel:
        raise ParameterError(f"{name} estimates the {other.kernel} kernel, not {candidate.kernel}")
    return other


def check_features(est: Estimator, x: np.ndarray, y: np.ndarray, log_scale: np.ndarray, d: int, seed: int,
                   r: np.ndarray) -> dict[str, Any]:
    """Positivity, finiteness, observed boundedness and consistency (Σ φ_q·φ_k = K̂) of the feature maps."""
    owner = f"{type(est).__name__} ({est.name})"
    gen = torch.Generator().manual_seed(spawn_seed(seed, FEATURES_KEY))
    dt = torch.float64
    samples = call_guarded(owner, "sample", est.sample, FEATURE_TRIALS, d, generator=gen,
                           device=torch.device("cpu"), dtype=dt, dim=x.shape[-1])
    xt, yt = torch.as_tensor(x, dtype=dt), torch.as_tensor(y, dtype=dt)
    try:
        phi_q = est.features(samples, xt, "query")
        phi_k = est.features(samples, yt, "key")
    except NotImplementedError:
        return {"available": False, "reason": "no feature map (features() not implemented)"}
    except Exception as exc:
        with protocol_guard(owner, "features"):
            raise exc
    if not (isinstance(phi_q, torch.Tensor) and phi_q.dim() == 3 and phi_q.shape[:2] == (FEATURE_TRIALS, len(x))):
        raise ParameterError(f"{owner}: features must return shape (trials, pairs, features)")
    finite = bool(torch.isfinite(phi_q).all() and torch.isfinite(phi_k).all())
    positive = bool(not phi_q.is_complex() and not phi_k.is_complex() and (phi_q > 0).all() and (phi_k > 0).all())
    # Boundedness, observed: at the largest r, does max|φ| keep growing when we look at 16× more samples?
    big = np.isclose(r, r.max())
    both = torch.cat([phi_q[:, big], phi_k[:, big]], 1).abs()
    head = both[: max(1, FEATURE_TRIALS // 16)].max()
    growth = float(both.max() / head) if float(head) > 0 else 1.0
    # Consistency with estimate: (Σ φ_q·φ_k)·e^{-s} against K̂·e^{-s}, relative to max(|K̂e^{-s}|, 1).
    st = torch.as_tensor(log_scale, dtype=dt)
    prod = (phi_q * phi_k).sum(-1) * torch.exp(-st)[None, :]
    est_vals = call_guarded(owner, "estimate", est.estimate, samples, xt, yt, st)
    diff = (prod - est_vals).abs() / torch.clamp(est_vals.abs(), min=1.0)
    max_rel = float(diff.max()) if finite else float("nan")
    return {"available": True, "count": int(phi_q.shape[-1]), "finite": finite, "positive": positive,
            "bounded_observed": bool(finite and growth <= FEATURE_GROWTH_TOLERANCE), "max_growth": growth,
            "consistent": bool(finite and max_rel < 1e-6), "max_rel_diff": max_rel}


@dataclass(frozen=True)
class LabOptions:
    """The lab's settings (``check_estimator``'s keywords, validated once), shared by every step of the pipeline.

    Parameters
    ----------
    r, theta : the grid's norms |x| = |y| and angles (rows r, columns θ).
    d : input dimension of the grid's pairs.
    trials, seed : Monte-Carlo trials per point and the seed (extra pairs use ``spawn_seed(seed, EXTRA_PAIRS_KEY)``).
    alpha : family-wise error rate of the bias test (Holm); the closed-form test runs at α·CLOSED_FORM_ALPHA_FACTOR.
    compare : built-in estimators to compare the MSE with (the candidate's own name is dropped).
    device : torch device of the Monte-Carlo runs.
    check_feature_maps : whether to check ``features`` (finite, positive, bounded, consistent with ``estimate``).
    pairs : which pair kinds enter the bias test (subset of PAIR_KINDS).
    progress : called with the fraction done in [0, 1], or None.

    Examples
    --------
    >>> LabOptions(trials=2000, compare=()).stages
    2
    """

    r: Sequence[float] = DEFAULT_R
    theta: Sequence[float] = DEFAULT_THETA
    d: int = DEFAULT_D
    trials: int = DEFAULT_TRIALS
    seed: int = 0
    alpha: float = DEFAULT_ALPHA
    compare: Sequence[str] = DEFAULT_COMPARE
    device: str = "cpu"
    check_feature_maps: bool = True
    pairs: Sequence[str] = PAIR_KINDS
    progress: Callable[[float], None] | None = None

    def __post_init__(self) -> None:
        for spec in (CHECK_TRIALS_PARAM, ALPHA_PARAM, SEED_PARAM, CPU_DEVICE_PARAM):
            object.__setattr__(self, spec.name, check_param(getattr(self, spec.name), spec))

    @property
    def stages(self) -> int:
        """Progress shares: the candidate's MC run, one per comparator, one for the feature check."""
        return 1 + len(self.compare) + (1 if self.check_feature_maps else 0)

    def stage(self, i: int) -> Callable[[float], None] | None:
        """The progress callback of stage ``i`` (its fraction mapped into the whole run), or None."""
        progress = self.progress
        if progress is None:
            return None
        return lambda f: progress(min(1.0, (i + f) / self.stages))


@dataclass
class _Grid:
    """The (r, θ) grid in R^d: its axes, meshes and flattened pairs (one row per point, r-major)."""

    r: np.ndarray
    theta: np.ndarray
    rr: np.ndarray
    tt: np.ndarray
    x: np.ndarray
    y: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return self.rr.shape


@dataclass
class _Bias:
    """Step 3's findings: per grid point z, p, κ, tested/informative/rejected masks; the extra pairs' rows."""

    z: np.ndarray
    p: np.ndarray
    kappa: np.ndarray
    reliable: np.ndarray
    tested: np.ndarray
    informative: np.ndarray
    deterministic_wrong: np.ndarray
    rejected: np.ndarray
    extra_rows: list[dict[str, Any]]
    warnings: list[str]
    extra: _ExtraRun | None = None


@dataclass
class _ExtraRun:
    """The extra pairs' (random / unequal) Monte Carlo: pairs, their (kind, |x|, |y|, θ), κ and reliability."""

    x: np.ndarray
    y: np.ndarray
    meta: list[tuple[str, float, float, float]]
    res: MCResult
    kappa: np.ndarray
    reliable: np.ndarray


@dataclass
class _ClosedForm:
    """Step 4's findings: the candidate's MSE (closed form if it agrees, else Monte Carlo) and the z-test."""

    log_mse: np.ndarray
    source: str
    z: np.ndarray | None = None
    tested: np.ndarray | None = None
    rejected: np.ndarray | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    confirmation: list[dict[str, Any]] = field(default_factory=list)
    nonexact_tested: int = 0
    exact_tested: int = 0
    detectable: float | None = None
    any_rejected: bool = False
    used: np.ndarray | None = None


def _owner(est: Estimator) -> str:
    return f"{type(est).__name__} ({est.name})"


def _p_values(res: MCResult, z: np.ndarray) -> np.ndarray:
    """Two-sided p of the bias z; doubled (Bonferroni over the two parts) for complex estimates."""
    return np.minimum(1.0, two_sided_p(z) * (2.0 if np.iscomplexobj(res.mean_ratio) else 1.0))


def build_grid(est: Estimator, opts: LabOptions) -> _Grid:
    """Step 1: the (r, θ) grid's pairs in R^d, as the estimator embeds them (``grid_pairs``)."""
    r_arr, t_arr = _grid(opts.r, opts.theta)
    rr, tt = np.meshgrid(r_arr, t_arr, indexing="ij")
    with protocol_guard(_owner(est), "grid_pairs"):
        x, y = est.grid_pairs(rr, tt, opts.d)
    return _Grid(r_arr, t_arr, rr, tt, x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1]))


def sample_grid(est: Estimator, grid: _Grid, opts: LabOptions) -> MCResult:
    """Step 2: the candidate's Monte Carlo over the grid (the first progress stage), after a reproducibility draw
    (``check_reproducible``: the same seed must give the same estimates)."""
    check_reproducible(est, grid.x, grid.y, opts.d, opts.seed)
    return _run_mc(est, grid.x, grid.y, opts.d, opts.trials, opts.seed, opts.device, opts.stage(0))


def _usable_extra_pairs(est: Estimator, opts: LabOptions, grid: _Grid, warnings: list[str]
                        ) -> tuple[np.ndarray, np.ndarray, list[tuple[str, float, float, float]]] | None:
    """The extra pairs (random / unequal) of the kinds the estimator accepts; a rejected kind adds a warning."""
    extra = _extra_pairs(est, opts.pairs, grid.r, grid.theta, opts.d, opts.seed)
    if not extra:
        return None
    ex_x, ex_y, meta = extra
    keep = np.ones(len(meta), bool)
    for kind in dict.fromkeys(k for k, *_ in meta):  # an estimator may reject a kind (e.g. needs |x| = |y|)
        rows = np.array([k == kind for k, *_ in meta])
        try:
            est.log_abs_kernel(PairStats.of(ex_x[rows], ex_y[rows], opts.d))
            if est.closed_form_available():
                est.log_mse(ex_x[rows], ex_y[rows], opts.d)
        except ParameterError as exc:
            keep &= ~rows
            warnings.append(f"{kind} pairs not tested: {exc}")
        except NotImplementedError:
            pass
    meta = [m for m, k in zip(meta, keep, strict=True) if k]
    return (ex_x[keep], ex_y[keep], meta) if meta else None


def _holm_with_extra_pairs(est: Estimator, opts: LabOptions, grid: _Grid, p: np.ndarray, tested: np.ndarray,
                           warnings: list[str]) -> tuple[np.ndarray, list[dict[str, Any]], _ExtraRun | None]:
    """Holm over the tested grid points and the extra pairs together: (grid rejections, extra pairs' rows, their
    run)."""
    extra = _usable_extra_pairs(est, opts, grid, warnings)
    if not extra:
        return holm_over(p, opts.alpha, tested), [], None
    ex_x, ex_y, meta = extra
    ex = _run_mc(est, ex_x, ex_y, opts.d, opts.trials, spawn_seed(opts.seed, EXTRA_PAIRS_KEY), opts.device, None)
    log_cf = _closed_form_logs(est, ex_x, ex_y, opts.d)
    e_reliable = lab_reliable(ex, log_cf)
    ez, e_tested, e_inf, e_det = _bias_test(ex, opts.trials, e_reliable)
    if log_cf is not None:
        e_tested &= ~np.isposinf(log_cf)
        e_inf &= ~np.isposinf(log_cf)
    both = holm_over(np.concatenate([p, _p_values(ex, ez)]), opts.alpha, np.concatenate([tested, e_tested]))
    rows = [{"kind": kind, "norm_x": nx, "norm_y": ny, "theta": th, "z": float(ez[i]), "tested": bool(e_tested[i]),
             "informative": bool(e_inf[i]), "rejected": bool(both[p.size + i]), "reliable": bool(e_reliable[i]),
             "deterministic_wrong": bool(e_det[i])} for i, (kind, nx, ny, th) in enumerate(meta)]
    return both[: p.size], rows, _ExtraRun(ex_x, ex_y, meta, ex, kurtosis(ex), e_reliable)


def bias_step(est: Estimator, grid: _Grid, res: MCResult, opts: LabOptions) -> _Bias:
    """Step 3: the bias test. Per point the z of the sampled mean against the kernel (exact points count as 0:
    the engine's z would measure round-off there; complex estimates test both parts), points too heavy-tailed for
    the CLT left out, then Holm's step-down test over the grid and the extra pairs together at level α."""
    log_cf = _closed_form_logs(est, grid.x, grid.y, opts.d)
    reliable = lab_reliable(res, log_cf)
    bias_z, tested, informative, deterministic_wrong = _bias_test(res, opts.trials, reliable)
    if log_cf is not None:  # +∞ closed-form MSE: infinite variance, no CLT for the mean: left out
        tested &= ~np.isposinf(log_cf)
        informative &= ~np.isposinf(log_cf)
    kappa = kurtosis(res)
    p = _p_values(res, bias_z)
    heavy = ~tested
    if "canonical" not in opts.pairs:  # the grid still drives the closed form and the MSE map, not the verdict
        tested &= np.zeros(res.shape, bool)
        informative &= np.zeros(res.shape, bool)
    warnings: list[str] = []
    rejected, extra_rows, extra = _holm_with_extra_pairs(est, opts, grid, p, tested, warnings)
    if "canonical" not in opts.pairs:
        warnings.append("the (r, θ) grid is not part of the bias test (pairs without canonical); it still gives "
                        "the closed-form check and the MSE maps")
    left_out = int(heavy.sum())
    if left_out:
        warnings.append(f"{left_out} of {tested.size} grid points are heavy-tailed (kurtosis > "
                        f"trials/{round(1 / BIAS_KURTOSIS_FRACTION)}) and were left out of the bias test; more "
                        "trials or a smaller r would include them")
    if heavy.all():
        warnings.append("no grid point could be tested: every point is heavy-tailed at this trial count")
    return _Bias(bias_z, p, kappa, reliable, tested, informative, deterministic_wrong, rejected, extra_rows, warnings,
                 extra)


def _closed_form_values(est: Estimator, grid: _Grid, opts: LabOptions, out: _ClosedForm) -> np.ndarray | None:
    """The estimator's closed-form log MSE on the grid, or None (none given, not implemented, or it failed)."""
    owner = _owner(est)
    if not call_guarded(owner, "closed_form_available", est.closed_form_available):
        return None
    try:
        return np.asarray(call_guarded(owner, "log_mse", est.log_mse, grid.x, grid.y, opts.d), float).ravel()
    except NotImplementedError as exc:
        out.warnings.append(f"closed_form_available() is True but log_mse is not implemented ({exc}); set "
                            "has_closed_form = False or implement _log_mse")
    except ParameterError as exc:
        out.error = str(exc)
        out.warnings.append(f"the closed-form MSE could not be evaluated on this grid: {exc}")
    return None


def closed_form_step(est: Estimator, grid: _Grid, res: MCResult, bias: _Bias, opts: LabOptions) -> _ClosedForm:
    """Step 4: closed-form agreement. The z of the sampled MSE against the estimator's closed form at the grid points
    and the extra pairs (random orientations, |x| ≠ |y|) light-tailed enough (κ ≤ trials·CLOSED_FORM_KURTOSIS_FRACTION)
    and reliable (``lab_reliable``), one Holm family at α·CLOSED_FORM_ALPHA_FACTOR, each rejection confirmed on an
    independent sample. The candidate's MSE map takes the closed form only at the grid points where it was tested
    and nothing anywhere was rejected; the sampled MSE elsewhere (``_ClosedForm.used``)."""
    exact = exact_points(res)
    out = _ClosedForm(np.where(exact, -np.inf, np.asarray(res.log_mse, float)), "monte carlo")  # round-off ≠ MSE
    log_mse_cf = _closed_form_values(est, grid, opts, out)
    if log_mse_cf is None:
        return out
    # A deterministic K̂ (no spread) or a +∞ closed form gets words, not a z (closed_form_verdicts).
    parts = [(closed_form_verdicts(res, log_mse_cf, exact, bias.kappa, bias.reliable, opts.trials, opts.alpha),
              grid.x, grid.y, log_mse_cf, [{"pair": "grid", "r": float(r), "theta": float(t)}
                                           for r, t in zip(grid.rr.ravel(), grid.tt.ravel(), strict=True)])]
    ex = bias.extra
    ex_cf = None if ex is None else _closed_form_logs(est, ex.x, ex.y, opts.d)
    if ex is not None and ex_cf is not None:
        parts.append((closed_form_verdicts(ex.res, ex_cf, exact_points(ex.res), ex.kappa, ex.reliable, opts.trials,
                                           opts.alpha), ex.x, ex.y, ex_cf,
                      [{"pair": kind, "r": nx, "norm_y": ny, "theta": th} for kind, nx, ny, th in ex.meta]))
    _joint_closed_form_family([v for v, *_ in parts], opts.alpha * CLOSED_FORM_ALPHA_FACTOR)
    _confirm_parts(est, opts, parts, out)
    v = parts[0][0]
    out.z, out.tested, out.rejected = v["z"], v["tested"], v["rejected"]
    if len(parts) > 1:
        ev = parts[1][0]
        for i, row in enumerate(bias.extra_rows):
            row.update(cf_z=float(ev["z"][i]), cf_tested=bool(ev["tested"][i]), cf_rejected=bool(ev["rejected"][i]))
    for p in parts:
        out.warnings.extend(closed_form_warnings(p[0], res, where="grid" if p is parts[0] else "extra"))
    out.warnings.extend(confirmation_warnings(out.confirmation))
    tests = sum(int(p[0]["tested"].sum()) for p in parts)
    out.nonexact_tested = sum(int(p[0]["nonexact"].sum()) for p in parts)
    out.exact_tested = tests - out.nonexact_tested
    out.detectable = detectable_error(np.concatenate([p[0]["rse"] for p in parts]), tests,
                                      opts.alpha * CLOSED_FORM_ALPHA_FACTOR)
    out.any_rejected = any(bool(p[0]["rejected"].any()) for p in parts)
    out.used = v["tested"] & (not out.any_rejected)
    out.log_mse = np.where(out.used, log_mse_cf, out.log_mse)
    out.source = ("closed form" if out.used.all() else "monte carlo" if not out.used.any()
                  else "closed form where tested and agreed, Monte Carlo elsewhere")
    return out


def _joint_closed_form_family(verdicts: list[dict[str, Any]], alpha: float) -> None:
    """One Holm family over the tested points of every part (grid and extra pairs): sets each part's ``rejected``
    (deterministic differences stay rejected: they are values, not z-scores)."""
    z = np.concatenate([v["z"] for v in verdicts])
    tested = np.concatenate([v["tested"] for v in verdicts])
    rejected = holm_over(two_sided_p(z), alpha, tested)
    start = 0
    for v in verdicts:
        n = v["z"].size
        v["rejected"] = rejected[start:start + n] | v["deterministic_wrong"]
        start += n


def _confirm_parts(est: Estimator, opts: LabOptions, parts: list[tuple], out: _ClosedForm) -> None:
    """Re-test every first-sample rejection (``confirm_disagreements``; one run per part, grid pairs and extra
    pairs, since their coordinates differ); only the confirmed ones stay rejected."""
    for v, x, y, log_cf, where in parts:
        index = np.flatnonzero(v["rejected"] & ~v["deterministic_wrong"])
        if not index.size:
            continue
        rows = confirm_disagreements(est, x[index], y[index], log_cf[index], opts,
                                     [{**where[i], "index": int(i)} for i in index])
        for i, row in zip(index, rows, strict=True):
            v["rejected"][i] = row["confirmed"]
        out.confirmation.extend(rows)


def confirm_disagreements(est: Estimator, x: np.ndarray, y: np.ndarray, log_mse_cf: np.ndarray, opts: LabOptions,
                          where: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Re-test the closed form at the pairs (x, y) (rejected by the first sample) on an independent sample with
    CONFIRM_TRIALS_FACTOR × the trials and ``spawn_seed(seed, CONFIRM_KEY)``; a point stays a disagreement only if that
    sample is light-tailed, reliable and rejects too (Holm at the same level over the re-tested points).

    Parameters
    ----------
    est : the candidate estimator.
    x, y : the re-tested pairs, shape (k, dim) each.
    log_mse_cf : the closed-form log MSE at those pairs.
    opts : the lab's settings.
    where : per pair, what the report says about it (pair: "grid" or the extra pair's kind, index, r, theta, …).

    Returns
    -------
    list of dict
        Per re-tested point: ``where``'s keys, trials, z (the confirmation's), tested and confirmed.

    Examples
    --------
    >>> confirm_disagreements(est, x, y, log_cf, opts, [{"pair": "grid", "index": 7, "r": 1.5, "theta": 1.571}])
    ... # doctest: +SKIP
    [{'pair': 'grid', 'index': 7, 'r': 1.5, 'theta': 1.571, 'trials': 16000, 'z': -0.9, 'tested': False,
      'confirmed': False}]
    """
    trials = opts.trials * CONFIRM_TRIALS_FACTOR
    res = _run_mc(est, x, y, opts.d, trials, spawn_seed(opts.seed, CONFIRM_KEY), opts.device, None)
    exact = exact_points(res)
    v = closed_form_verdicts(res, log_mse_cf, exact, kurtosis(res), lab_reliable(res, log_mse_cf), trials,
                             opts.alpha)
    return [{**w, "trials": trials, "z": float(v["z"][k]), "tested": bool(v["tested"][k]),
             "confirmed": bool(v["rejected"][k])} for k, w in enumerate(where)]


def confirmation_warnings(rows: list[dict[str, Any]]) -> list[str]:
    """Words for the re-tested points that the independent, larger sample did not confirm."""
    dropped = [r for r in rows if not r["confirmed"]]
    if not dropped:
        return []
    where = ", ".join(where_text(r) for r in dropped)
    why = ("it was heavy-tailed or unreliable there, so the first sample's low MSE was missing rare large draws"
           if any(not r["tested"] for r in dropped) else "it agreed with the closed form")
    return [f"the first sample disagreed with the closed form at {len(dropped)} point(s) ({where}), but an "
            f"independent sample with {dropped[0]['trials']} trials did not confirm it: {why}; not counted as a "
            "disagreement"]


def _comparator_log_mse(other: Estimator, grid: _Grid, opts: LabOptions, stage: int) -> tuple[np.ndarray, str]:
    """A comparator's log MSE on the grid: its closed form, or its Monte Carlo (same trials and seed)."""
    ox, oy = other.grid_pairs(grid.rr, grid.tt, opts.d)
    ox, oy = ox.reshape(-1, ox.shape[-1]), oy.reshape(-1, oy.shape[-1])
    if other.closed_form_available():
        return other.log_mse(ox, oy, opts.d).ravel(), "closed form"
    mc = monte_carlo(other, ox, oy, d=opts.d, trials=opts.trials, seed=opts.seed, device=opts.device,
                     progress=opts.stage(stage))
    return np.where(exact_points(mc), -np.inf, np.asarray(mc.log_mse, float)), "monte carlo"


def comparisons_step(est: Estimator, grid: _Grid, log_mse: np.ndarray, compare: Sequence[str], opts: LabOptions
                     ) -> tuple[list[Comparison], dict[str, str]]:
    """Step 5: log10(MSE_candidate / MSE_builtin) per point against each built-in in ``compare`` (same m, kernel
    and coupling); a built-in that cannot be compared is skipped with the reason."""
    comparisons: list[Comparison] = []
    skipped: dict[str, str] = {}
    for i, name in enumerate(compare, start=1):
        try:
            other = comparator(name, est)
        except ParameterError as exc:
            skipped[name] = str(exc)
            continue
        try:
            log_other, source = _comparator_log_mse(other, grid, opts, i)
        except (ParameterError, NotImplementedError, FloatingPointError) as exc:
            skipped[name] = str(exc)
            continue
        with np.errstate(invalid="ignore"):
            ratio = (log_mse - log_other) / LOG10
        ratio = np.where((log_mse == -np.inf) & (log_other == -np.inf), 0.0, ratio)
        comparisons.append(Comparison(name, dict(other.params), source, ratio.reshape(grid.shape),
                                      wins=int(np.sum(ratio < -TIE_LOG10)), losses=int(np.sum(ratio > TIE_LOG10)),
                                      ties=int(np.sum(np.abs(ratio) <= TIE_LOG10))))
    return comparisons, skipped


def features_step(est: Estimator, grid: _Grid, res: MCResult, opts: LabOptions, warnings: list[str]
                  ) -> dict[str, Any]:
    """Step 6 (optional): ``check_features`` on the grid's pairs; NaN/inf or inconsistent features add a warning."""
    if not opts.check_feature_maps:
        return {"available": False, "reason": "not checked"}
    features = check_features(est, grid.x, grid.y, res.log_scale, opts.d, opts.seed, grid.rr.ravel())
    if features.get("available"):
        if not features["finite"]:
            warnings.append("the feature map returned NaN or inf on this grid")
        elif not features["consistent"]:
            warnings.append(f"Σ φ_query(x)·φ_key(y) differs from estimate() (max relative difference "
                            f"{features['max_rel_diff']:.2g})")
    if opts.progress is not None:
        opts.progress(1.0)
    return features


def run_lab(est: Estimator, opts: LabOptions) -> LabReport:
    """The lab as a pipeline of named steps: build the grid → sample → bias test (Holm) → closed-form agreement →
    comparisons → features → the report (whose ``verdict`` and ``exit_code`` follow from the steps' findings).

    Parameters
    ----------
    est : the estimator instance to check.
    opts : the settings (``LabOptions``); ``check_estimator`` validates them from keywords.

    Returns
    -------
    LabReport

    Examples
    --------
    >>> import rfviz
    >>> rep = run_lab(rfviz.create("positive"), LabOptions(trials=400, compare=()))  # doctest: +SKIP
    >>> rep.verdict  # doctest: +SKIP
    'unbiased'
    """
    grid = build_grid(est, opts)
    opts = replace(opts, pairs=_check_pairs(opts.pairs), compare=[c for c in opts.compare if c != est.name])
    res = sample_grid(est, grid, opts)
    bias = bias_step(est, grid, res, opts)
    cf = closed_form_step(est, grid, res, bias, opts)
    warnings = bias.warnings + cf.warnings
    comparisons, skipped = comparisons_step(est, grid, cf.log_mse, opts.compare, opts)
    features = features_step(est, grid, res, opts, warnings)
    shape = grid.shape

    def grid_of(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a.reshape(shape)

    return LabReport(
        estimator=est.name, title=type(est).title, params=dict(est.params), kernel=est.kernel, d=opts.d,
        trials=res.trials, seed=opts.seed, alpha=opts.alpha, r=grid.r, theta=grid.theta,
        bias_z=bias.z.reshape(shape), bias_p=bias.p.reshape(shape), kurtosis=bias.kappa.reshape(shape),
        bias_tested=bias.tested.reshape(shape), bias_rejected=bias.rejected.reshape(shape),
        log10_mse=(cf.log_mse / LOG10).reshape(shape), mse_source=cf.source, closed_form_z=grid_of(cf.z),
        closed_form_tested=grid_of(cf.tested), closed_form_rejected=grid_of(cf.rejected), closed_form_error=cf.error,
        closed_form_confirmation=cf.confirmation, closed_form_nonexact_tested=cf.nonexact_tested,
        closed_form_exact_tested=cf.exact_tested, closed_form_detectable=cf.detectable,
        closed_form_used=grid_of(cf.used),
        comparisons=comparisons, skipped_comparisons=skipped, features=features, warnings=warnings,
        declared_biased=declares_bias(type(est)), informative=bias.informative.reshape(shape),
        deterministic_wrong=bias.deterministic_wrong.reshape(shape), exact=exact_points(res).reshape(shape),
        extra_pairs=bias.extra_rows)


@validated(CHECK_TRIALS_PARAM, ALPHA_PARAM)
def check_estimator(est: Estimator, *, r: Sequence[float] = DEFAULT_R, theta: Sequence[float] = DEFAULT_THETA,
                    d: int = DEFAULT_D, trials: int = DEFAULT_TRIALS, seed: int = 0, alpha: float = DEFAULT_ALPHA,
                    compare: Sequence[str] = DEFAULT_COMPARE, device: str = "cpu",
                    check_feature_maps: bool = True, pairs: Sequence[str] = PAIR_KINDS,
                    progress: Callable[[float], None] | None = None) -> LabReport:
    """Run the lab's checks on ``est`` over the (r, θ) grid in R^d: bias, closed form, comparisons, features.

    The decision rules (Holm over the grid, confirmed closed-form rejections, at least 3 informative points) are
    explained in the documentation's reliability page.

    Parameters
    ----------
    est : Estimator
        The estimator instance to check (a built-in or a plugin class instantiated with its parameters).
    r : sequence of float
        The grid's norms ``|x| = |y|``.
    theta : sequence of float
        The grid's angles between x and y, in [0, π].
    d : int
        Dimension of the input space.
    trials : int
        Monte-Carlo trials per point (extra pairs use ``spawn_seed(seed, EXTRA_PAIRS_KEY)``).
    seed : int
        Seed of the Monte-Carlo runs.
    alpha : float
        Family-wise error rate of the bias test (Holm); the closed-form test runs at α/100.
    compare : sequence of str
        Built-in estimators to compare the MSE with (empty: none).
    device : str
        Torch device of the Monte-Carlo runs.
    check_feature_maps : bool
        Whether to check ``features`` (finite, positive, bounded, consistent with ``estimate``).
    pairs : sequence of str
        Which pair kinds enter the bias test: ``canonical`` (the grid), ``random`` orientations, ``unequal`` norms.
    progress : callable, optional
        Called with the fraction done in [0, 1].

    Returns
    -------
    LabReport
        The verdict (``verdict``, ``exit_code``, ``summary()``) and every test's numbers.

    Raises
    ------
    ParameterError
        When a setting is out of its range (e.g. ``trials``, ``alpha``).

    Examples
    --------
    >>> import rfviz
    >>> report = check_estimator(rfviz.create("trig", m=8), r=(0.5, 1.0), theta=(0.5, 1.5, 2.5), trials=1000,
    ...                          compare=(), check_feature_maps=False, pairs=("canonical",))
    >>> report.verdict, report.exit_code
    ('unbiased', 0)
    """
    return run_lab(est, LabOptions(r=r, theta=theta, d=d, trials=trials, seed=seed, alpha=alpha, compare=compare,
                                   device=device, check_feature_maps=check_feature_maps, pairs=pairs,
                                   progress=progress))


def _closed_form_logs(est: Estimator, x: np.ndarray, y: np.ndarray, d: int) -> np.ndarray | None:
    """The estimator's own closed-form log MSE at the pairs (+∞: infinite variance, so no z-test of the mean or the
    MSE applies), or None without a usable closed form (its errors are reported by the closed-form step)."""
    try:
        if not est.closed_form_available():
            return None
        return np.asarray(est.log_mse(x, y, d), float).ravel()
    except Exception:  # the closed-form step reports (or raises) the same failure in words
        return None


def lab_reliable(res: MCResult, log_mse_cf: np.ndarray | None) -> np.ndarray:
    """Per pair: can the sampled MSE be trusted, decided without the closed-form MSE that the lab is testing.

    Where the estimator has a closed-form fourth moment the engine decides ``res.reliable`` from theory
    (rfviz.verdicts.theory_reliability): relative standard error √((E|K̂ − K|⁴/MSE² − 1)/N) ≤ 10 % with the
    *closed-form* MSE. In the lab that MSE is the claim under test, so a closed form 10× too small makes
    E|K̂ − K|⁴/MSE² 100× too large, calls every point unreliable and hides itself ("agrees" on exact
    points alone). Here the same rule (the same function) is applied to the *sampled* MSE: E|K̂ − K|⁴ is recovered
    from the engine's predicted standard error, N·SE_theory² + MSE_cf² (all relative to e^{2s}), and set against
    the sampled MSE. A sample that missed a rare large draw has a low MSE, which only raises the predicted relative
    error (conservative). Precision loss (every estimate underflowed) stays unreliable; without a fourth-moment
    closed form ``res.reliable`` (the sample's own diagnostics) stands.

    Parameters
    ----------
    res : the Monte-Carlo result (its ``rel_mse_stderr_theory``, ``reliable`` and ``warning``).
    log_mse_cf : the estimator's closed-form log MSE at the same pairs, or None.

    Returns
    -------
    np.ndarray of bool, one per pair (flattened).

    Examples
    --------
    >>> lab_reliable(res, est.log_mse(x, y, d))  # doctest: +SKIP
    array([ True,  True, False])
    """
    base = np.ones(res.rel_mse.size, bool) if res.reliable is None else np.asarray(res.reliable, bool).ravel()
    if res.rel_mse_stderr_theory is None or log_mse_cf is None:
        return base
    se_theory = np.asarray(res.rel_mse_stderr_theory, float).ravel()
    known = ~np.isnan(se_theory)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        cf_rel = np.exp(np.asarray(log_mse_cf, float).ravel() - 2.0 * np.asarray(res.log_scale, float).ravel())
        log_fourth = np.log(res.trials * np.where(known, se_theory, 0.0) ** 2 + cf_rel**2)
        log_sampled = np.log(np.asarray(res.rel_mse, float).ravel())
    theory = theory_reliability(log_sampled, np.where(np.isnan(log_fourth), np.inf, log_fourth), res.trials)
    warnings = np.full(base.shape, None, object) if res.warning is None else np.asarray(res.warning, object).ravel()
    underflow = np.array(["precision loss" in str(w) for w in warnings], bool)
    return np.where(known & ~underflow, theory.reliable, base)


def _check_pairs(pairs: Sequence[str] | str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in (pairs.split(",") if isinstance(pairs, str) else pairs) if k.strip())
    bad = [k for k in kinds if k not in PAIR_KINDS]
    if bad or not kinds:
        raise ParameterError(f"pairs must be a comma-separated subset of {', '.join(PAIR_KINDS)}, got {pairs!r}")
    return kinds


def _extra_pairs(est: Estimator, kinds: Sequence[str], r: np.ndarray, theta: np.ndarray, d: int,
                 seed: int) -> tuple[np.ndarray, np.ndarray, list[tuple[str, float, float, float]]] | None:
    """Full R^d pairs of the extra kinds (random orientations, |x| ≠ |y|), with (kind, |x|, |y|, θ) each."""
    r0 = float(np.median(r))
    angles = [float(a) for a in np.linspace(0.0, math.pi, EXTRA_PAIRS + 2)[1:-1]] if d > 1 else [0.0, math.pi]
    rng = np.random.default_rng(spawn_seed(seed, ORIENTATIONS_KEY))
    xs, ys, meta = [], [], []
    for kind in kinds:
        if kind == "canonical":
            continue
        for th in angles:
            x, y = (np.asarray(v, float) for v in embed_pair(r0, th, d, "canonical"))
            if kind == "random":  # x, y span e1, e2: a Haar-random frame of k = min(d, 2) columns rotates them
                k = min(d, 2)  # (O(d) memory; a d × d QR took 3 GiB at d = 20 000)
                q, rr = np.linalg.qr(rng.standard_normal((d, k)))
                q = q * np.where(np.diag(rr) < 0, -1.0, 1.0)
                x, y = q @ x[:k], q @ y[:k]
                nx, ny = r0, r0
            else:
                y = UNEQUAL_RATIO * y
                nx, ny = r0, UNEQUAL_RATIO * r0
            xs.append(x)
            ys.append(y)
            meta.append((kind, nx, ny, th))
    if not xs:
        return None
    return np.stack(xs), np.stack(ys), meta


def _bias_test(res: MCResult, trials: int, reliable: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(z, tested, informative, deterministic_wrong) per pair: the larger of the real- and imaginary-part
    z-scores against the (real) kernel, tested where exact or light-tailed enough for the CLT; informative where
    also not exact and ``reliable`` (``lab_reliable``)."""
    exact = exact_points(res)
    z_re = np.where(exact, 0.0, np.asarray(res.bias_z, float))
    se = np.asarray(res.ratio_sd, float) / math.sqrt(res.trials)
    imag = np.imag(np.asarray(res.mean_ratio))
    with np.errstate(divide="ignore", invalid="ignore"):
        z_im = np.where(se > 0, imag / np.where(se > 0, se, 1.0), np.where(np.abs(imag) > 1e-9, np.inf, 0.0))
    z_im = np.where(exact, 0.0, z_im)
    z = np.where(np.abs(z_im) > np.abs(z_re), z_im, z_re)
    # Every trial gave the same K̂ (spread at round-off level): a z from a round-off standard error (1e17) means
    # nothing; a value off the kernel is a deterministic error (z = ±inf, described in words by the summary).
    target = np.abs(np.asarray(res.target, float))
    mean = np.asarray(res.mean_ratio)
    scale = np.maximum(np.abs(mean), target)
    flat = ~exact & (se <= DETERMINISTIC_REL * scale)
    off = np.abs(mean - np.asarray(res.target)) > DETERMINISTIC_MATCH_REL * np.where(scale > 0, scale, 1.0)
    z = np.where(flat & off, np.copysign(np.inf, np.real(mean) - np.asarray(res.target, float)),
                 np.where(flat, 0.0, z))
    det = np.isinf(z) & flat
    tested = exact | (kurtosis(res) <= trials * BIAS_KURTOSIS_FRACTION) | det
    return z, tested, tested & ~exact & reliable & ~det, det


REPRO_TRIALS = 64
"""Trials of the reproducibility check: the lab draws twice with the same seed and compares the estimates."""


def check_reproducible(est: Estimator, x: np.ndarray, y: np.ndarray, d: int, seed: int) -> None:
    """Draw ``REPRO_TRIALS`` estimates twice with generators seeded alike; ParameterError (one line, exit 2) when
    they differ: the plugin draws random numbers without the generator it is given (np.random, torch's global
    RNG, …), so the same seed gives different reports and no result of the lab can be reproduced."""
    owner = f"{type(est).__name__} ({est.name})"
    draws = []
    for _ in range(2):
        gen = torch.Generator().manual_seed(spawn_seed(seed, REPRODUCIBLE_KEY))
        samples = call_guarded(owner, "sample", est.sample, REPRO_TRIALS, d, generator=gen,
                               device=torch.device("cpu"), dtype=torch.float64, dim=x.shape[-1])
        xt, yt = torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(y, dtype=torch.float64)
        draws.append(call_guarded(owner, "estimate", est.estimate, samples, xt, yt, None))
    a, b = draws
    same = a.shape == b.shape and bool(torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)))
    if not same:
        raise ParameterError(f"{owner} is not reproducible: two draws with the same seed gave different estimates "
                             "(draw every random number with the torch.Generator passed to sample(), not np.random or "
                             "torch's global RNG)")


def closed_form_verdicts(res: MCResult, log_mse_cf: np.ndarray, exact: np.ndarray, kappa: np.ndarray,
                         reliable: np.ndarray, trials: int, alpha: float) -> dict[str, Any]:
    """The closed-form test of the lab, per pair: z (NaN where no z applies), tested, rejected (Holm at
    alpha·CLOSED_FORM_ALPHA_FACTOR over the tested points), and the points where the closed-form MSE is +∞
    (``infinite``: a finite sample is no evidence against +∞, so they are reported, never tested) or where every
    trial gave the same K̂ (``deterministic``: compared as values, in words, never as a z from round-off)."""
    z = np.asarray(res.z_against(log_mse_cf), float)
    infinite = np.isposinf(log_mse_cf)
    with np.errstate(over="ignore", invalid="ignore"):
        expected_rel = np.exp(log_mse_cf - 2.0 * res.log_scale)
        cf_exact = expected_rel <= exact_threshold(res)
        deterministic = (res.rel_mse_stderr <= DETERMINISTIC_REL * res.rel_mse) & ~exact & ~infinite
        rel_diff = np.abs(res.rel_mse - expected_rel) / np.where(expected_rel > 0, expected_rel, np.inf)
    same = rel_diff <= DETERMINISTIC_MATCH_REL
    det_wrong = deterministic & ~same
    z = np.where((exact & cf_exact) | (deterministic & same), 0.0, z)
    z = np.where(infinite | det_wrong, np.nan, z)
    theory = (np.zeros(z.shape, bool) if res.rel_mse_stderr_theory is None
              else np.isfinite(np.asarray(res.rel_mse_stderr_theory, float)))
    light = np.where(theory, kappa <= trials * CLOSED_FORM_KURTOSIS_FRACTION_THEORY,
                     kappa <= trials * CLOSED_FORM_KURTOSIS_FRACTION)
    tested = ~infinite & ~det_wrong & (exact | (light & reliable))
    tested &= np.isfinite(z)
    rejected = holm_over(two_sided_p(z), alpha * CLOSED_FORM_ALPHA_FACTOR, tested) | det_wrong
    se = np.asarray(res.rel_mse_stderr, float)
    if res.rel_mse_stderr_theory is not None:  # the standard error z_against divides by
        theory = np.asarray(res.rel_mse_stderr_theory, float)
        se = np.where(np.isnan(theory), se, np.fmax(se, theory))
    with np.errstate(divide="ignore", invalid="ignore"):
        rse = np.where(tested & ~exact, se / np.asarray(res.rel_mse, float), np.nan)
    return {"z": z, "tested": tested, "rejected": rejected, "infinite": infinite, "deterministic_wrong": det_wrong,
            "rel_diff": rel_diff, "nonexact": tested & ~exact, "rse": rse}


def detectable_error(rse: np.ndarray, tests: int, alpha: float) -> float | None:
    """The smallest relative error of a closed form that the lab's closed-form test detects with power ≈ 1/2.

    Derivation: at a tested point the sampled MSE X̄ is approximately N(μ, (ρμ)²), ρ = SE/μ its relative standard
    error (``rse``: the SE that ``MCResult.z_against`` divides by, over the sampled MSE). A closed form c = μ(1 ± ε)
    gives z = (X̄ − c)/SE ≈ N(∓ε/ρ, 1). Holm's first step is Bonferroni: a point with |z| ≥ z* = Φ⁻¹(1 − α/(2M))
    is rejected (M = ``tests``, α = the closed-form level alpha·CLOSED_FORM_ALPHA_FACTOR), and no rejection happens
    without one such point. |z| ≥ z* has probability ≥ 1/2 once ε/ρ ≥ z*, so a closed form off by the same
    relative error everywhere is caught with power ≥ 1/2 when ε ≥ ε* = z*·min ρ over the tested non-exact points.
    The confirmation sample (CONFIRM_TRIALS_FACTOR = 4× the trials) halves ρ, so at ε* its z ≈ 2z* and it confirms
    with power ≈ 1; an error at fewer points, or only where ρ is large, needs more. None when no non-exact point was
    tested (then nothing is detectable: exact points, where closed form and sample are both 0, test no formula).

    Parameters
    ----------
    rse : relative standard errors at the tested non-exact points (NaN elsewhere is ignored).
    tests : the size M of the Holm family (every tested point, exact ones included).
    alpha : the closed-form test's family-wise level.

    Returns
    -------
    float or None

    Examples
    --------
    >>> round(detectable_error(np.array([0.02, 0.05, np.nan]), 10, 1e-4), 3)  # z* = Φ⁻¹(1 − 5e-6) = 4.42
    0.088
    """
    rse = np.asarray(rse, float)
    finite = rse[np.isfinite(rse)]
    if finite.size == 0:
        return None
    return bonferroni_z(alpha, tests) * float(finite.min())


def closed_form_warnings(v: dict[str, Any], res: MCResult, where: str = "grid") -> list[str]:
    """Words for the closed-form findings (infinite variance, deterministic differences, rejections) at the
    ``where`` points ("grid" or "extra")."""
    out = []
    kind = "grid point(s)" if where == "grid" else "extra pair(s)"
    n_inf = int(v["infinite"].sum())
    if n_inf:
        out.append(f"the closed-form MSE is +∞ at {n_inf} {kind}: the variance is infinite there, so a finite "
                   "sample says nothing against it (not tested)")
    det = v["deterministic_wrong"]
    if det.any():
        worst = float(np.nanmax(np.where(det, v["rel_diff"], np.nan)))
        out.append(f"at {int(det.sum())} {kind} every trial gave the same K̂ and its squared error differs "
                   f"from the closed-form MSE by up to {worst:.3g} relative (a deterministic difference, not "
                   "sampling noise)")
    n_rej = int((v["rejected"] & ~det).sum())
    if n_rej:
        out.append(f"the closed-form MSE disagrees with Monte Carlo at {n_rej} {kind}")
    return out


def check(target: type[Estimator], params: dict[str, Any] | None = None, **kwargs: Any) -> LabReport:
    """Instantiate ``target`` (validated parameters, plugin failures as one-line errors) and check it."""
    return check_estimator(instantiate(target, params), **kwargs)
