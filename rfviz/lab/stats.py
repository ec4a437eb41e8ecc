"""The lab's statistics: Holm over a mask, Bonferroni's z, round-off exactness, the kurtosis gate, the bias test,
the closed-form test and its power (``detectable_error``). Their thresholds are rules of the verdict module
(``rfviz.verdicts.rules``); the shared tests (Holm, two-sided p, the round-off floor, theory reliability) are
``rfviz.verdicts``'."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import ndtri

from ..engine import MCResult
from ..verdicts import holm, roundoff_floor, theory_reliability, two_sided_p
from ..verdicts.rules import (  # the lab's rules, with their reasons, live in the verdict module
    BIAS_KURTOSIS_FRACTION,
    CLOSED_FORM_ALPHA_FACTOR,
    CLOSED_FORM_KURTOSIS_FRACTION,
    CLOSED_FORM_KURTOSIS_FRACTION_THEORY,
    DETERMINISTIC_MATCH_REL,
    DETERMINISTIC_REL,
    EXACT_REL_MSE_FLOAT32,
)


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


def _p_values(res: MCResult, z: np.ndarray) -> np.ndarray:
    """Two-sided p of the bias z; doubled (Bonferroni over the two parts) for complex estimates."""
    return np.minimum(1.0, two_sided_p(z) * (2.0 if np.iscomplexobj(res.mean_ratio) else 1.0))


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
