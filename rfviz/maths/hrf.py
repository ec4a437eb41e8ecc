"""λ-coefficient maps, their moments and the hybrid relative errors of the HRF paper, as plain numpy functions.

Hybrid Random Features (Choromanski et al., ICLR 2022; [HRF]); derivations: the docs' derivations pages.
A bipolar hybrid is K̂ = λ̂·SM_++ + (1 − λ̂)·SM_trig (HRF eq. 12) with λ̂ independent of both base estimators.
Everything that can overflow is returned as a natural log; the moments of λ̂ are O(1) and returned as values.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..geometry import PairStats, canonical_pair, check_r, check_theta
from ..numerics import LOG2, log1mexp, log_cosh, log_cosh_m1, log_diff_exp, log_expm1
from ..params import M_PARAM, Param, ParameterError, check

PI = np.pi


class LambdaMoments(NamedTuple):
    """Moments of a λ-estimator λ̂ that enter the hybrid MSE (HRF Thm 3.1)."""

    mean: np.ndarray  # E[λ̂]
    second: np.ndarray  # E[λ̂²]
    variance: np.ndarray  # Var λ̂
    one_minus_second: np.ndarray  # E[(1 − λ̂)²]
    cross: np.ndarray  # E[λ̂(1 − λ̂)]


N_PARAM = Param("n", 4, "int", "number of random projections τ that estimate the λ-coefficient", low=1, ui_low=1,
                ui_high=64, label="n (λ features)")
SIGMA_PARAM = Param("sigma", 1.0, "float", "bandwidth σ of the Gaussian λ-coefficient (HRF App. F)", low=0.0,
                    low_open=True, ui_low=0.05, ui_high=5.0, label="σ")


def _unit_gaps(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(|x̂ − ŷ|, |x̂ + ŷ|, both non-zero) over the last axis, from x ∓ y themselves:
    x̂ ∓ ŷ = (x ∓ y)/|x| ∓ y(|y| − |x|)/(|x||y|) with |x| − |y| = (x − y)·(x + y)/(|x| + |y|), so a near-duplicate
    (or near-antipodal) pair keeps the relative accuracy of its small gap (x/|x| − y/|y| would keep ε/θ of it)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    nx = np.linalg.norm(x, axis=-1, keepdims=True)
    ny = np.linalg.norm(y, axis=-1, keepdims=True)
    ok = (nx > 0) & (ny > 0)
    sx, sy = np.where(ok, nx, 1.0), np.where(ok, ny, 1.0)
    minus, plus = x - y, x + y
    norm_gap = np.sum(minus * plus, -1, keepdims=True) / (sx + sy)  # |x| − |y|
    tilt = y * norm_gap / (sx * sy)
    return (np.linalg.norm(minus / sx - tilt, axis=-1), np.linalg.norm(plus / sx + tilt, axis=-1), ok[..., 0])


def angle_between(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """θ = ∠(x, y) ∈ [0, π] over the last axis, accurate near 0 and π (Kahan: 2·atan2(|x̂ − ŷ|, |x̂ + ŷ|), the unit
    gaps from x ∓ y, ``_unit_gaps``).

    A zero vector gets θ = π/2: with sgn(0) := +1 a sign projection separates 0 from y with probability
    1/2 = θ/π, so the angular λ-moments stay exact under that convention.
    """
    minus, plus, ok = _unit_gaps(x, y)
    return np.where(ok, 2.0 * np.arctan2(minus, plus), PI / 2)


def angle_to_antipode(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """π − ∠(x, y) over the last axis, as 2·atan2(|x̂ + ŷ|, |x̂ − ŷ|): accurate relative to itself near θ = π,
    where π − ``angle_between`` keeps only its absolute accuracy (θ = π − 1e-8: 8 digits). π/2 for a zero vector."""
    minus, plus, ok = _unit_gaps(x, y)
    return np.where(ok, 2.0 * np.arctan2(plus, minus), PI / 2)


# ------------------------------------------------------------------- trig and positive base estimators
def log_mse_trig(xx: np.ndarray, yy: np.ndarray, delta2: np.ndarray, m: int) -> np.ndarray:
    """log MSE_trig = log[e^{|x|²+|y|²}(1 − e^{−|x−y|²})²/(2m)], softmax kernel, m iid ω ([HRF] Lemma 2.2 eq. 7)."""
    return xx + yy + 2.0 * log1mexp(delta2) - math.log(2 * m)


def log_mse_positive(xy: np.ndarray, z2: np.ndarray, m: int) -> np.ndarray:
    """log MSE of the one-sided positive RF = log[SM²(e^{|x+y|²} − 1)/m] ([HRF] §2.3 eq. E2′: the CE estimator
    with A = I, whose MSE is ``log_mse_complex_exponential``'s complex form; also [CRT] §3.2 PosRF)."""
    return 2.0 * xy + log_expm1(z2) - math.log(m)


def log_mse_positive_antithetic(xx: np.ndarray, yy: np.ndarray, xy: np.ndarray, z2: np.ndarray, m: int) -> np.ndarray:
    """log MSE_++ = log[e^{|x|²+|y|²+4x·y}(1 − e^{−|x+y|²})²/(2m)] (FAVOR+, [HRF] Lemma 2.2 eq. 7)."""
    return xx + yy + 4.0 * xy + 2.0 * log1mexp(z2) - math.log(2 * m)


# ------------------------------------------------------------------------------------------- angular λ
def angular_lambda(theta: np.ndarray | float) -> np.ndarray:
    """λ(θ) = θ/π, the angular λ-coefficient (HRF eq. 19; 1 − k_0, App. D.1)."""
    return check_theta(theta) / PI


def angular_lambda_moments(theta: np.ndarray | float, n: int,
                           antipode: np.ndarray | float | None = None) -> LambdaMoments:
    """Moments of λ̂ = 1/2 − (1/2n)Σ sgn(τ_j·x)sgn(τ_j·y) = Binomial(n, p)/n, p = θ/π (HRF Lemma 3.2 eq. 24;
    [HRF] eq. 24; Var and the Binomial law [derived]). ``antipode`` = π − θ computed directly
    (``angle_to_antipode``) keeps 1 − p exact as θ → π (else 1 − θ/π)."""
    n = check(n, N_PARAM)
    p = angular_lambda(theta)
    q = 1 - p if antipode is None else np.asarray(antipode, dtype=float) / PI
    second = p * (p - p / n + 1.0 / n)
    return LambdaMoments(p, second, p * q / n, q * (q + p / n), (1 - 1.0 / n) * p * q)


# ------------------------------------------------------------------------------------------ Gaussian λ
def gaussian_lambda(theta: np.ndarray | float, r: np.ndarray | float, sigma: float) -> np.ndarray:
    """λ(θ, r) = (1 − e^{−2σ²r² sin²(θ/2)})/(1 − e^{−2σ²r²}) on the sphere S(r) (HRF eq. 76).

    0 at θ = 0, 1 at θ = π; the limit sin²(θ/2) is returned at r = 0.
    """
    theta = check_theta(theta)
    r = check_r(r)
    s2 = np.sin(theta / 2) ** 2
    t = 2.0 * check(sigma, SIGMA_PARAM) ** 2 * r**2
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.expm1(-t * s2) / np.expm1(-t)
    return np.where(t > 0, lam, s2)


def gaussian_lambda_moments(delta2: np.ndarray | float, r: np.ndarray | float, sigma: float, n: int,
                            plus_z2: np.ndarray | float | None = None, *,
                            sphere_z2: np.ndarray | float | None = None) -> LambdaMoments:
    """Moments of λ̂ = 1/ρ − (1/(nρ))Σ cos(σ τ_i·(x − y)), the normalised Gaussian λ estimated with n trig RFs
    (HRF App. F eqs. 69, 72–73; docs: derivations/gaussian-lambda). ``delta2`` = |x − y|², ``r`` the normalising
    length of ρ.

    With g = e^{−σ²D²/2} and Var_G = (1 − e^{−σ²D²})²/(2n): E λ̂ = (1 − g)/ρ, E λ̂² = ((1 − g)² + Var_G)/ρ²,
    E(1 − λ̂)² = ((1 − ρ − g)² + Var_G)/ρ². Where ρ = 0 (r = 0) λ̂ := 0 (both base estimators are exact there).

    ``plus_z2`` = |x + y|² switches to λ estimated with n ++ (positive, antithetic) features,
    Ĝ = e^{−σ²(|x|²+|y|²)}(1/n)Σ cosh(σ τ_i·(x + y)) (docs: derivations/gaussian-lambda, "[derived] λ estimated with
    ++"): only Var_G
    changes, to e^{σ²(Z² − D²)}(1 − e^{−σ²Z²})²/(2n), Z² = |x + y|².

    ``sphere_z2`` = |x + y|² where r² = (|x|² + |y|²)/2: then 2r² − D²/2 = Z²/2 exactly (parallelogram law), which
    keeps 1 − λ = (e^{−σ²D²/2} − e^{−2σ²r²})/ρ accurate as θ → π (the difference t − σ²D²/2 cancels there).
    A Var_G past float64 (e^{σ²(Z² − D²)/2} > 1e308) is refused with ParameterError.
    """
    n = check(n, N_PARAM)
    s2 = check(sigma, SIGMA_PARAM) ** 2
    delta2 = np.maximum(np.asarray(delta2, float), 0.0)
    r = check_r(r)
    t = 2.0 * s2 * r**2
    rho = -np.expm1(-t)
    ok = rho > 0
    rho_safe = np.where(ok, rho, 1.0)
    # Ratios to ρ first (ρ² may underflow where ρ does not).
    mean = -np.expm1(-s2 * delta2 / 2) / rho_safe
    if plus_z2 is None:
        sd = np.abs(np.expm1(-s2 * delta2)) / (math.sqrt(2 * n) * rho_safe)  # √Var_G / ρ
    else:
        z2 = np.maximum(np.asarray(plus_z2, float), 0.0)
        with np.errstate(divide="ignore"):  # Z² = 0: sd = 0
            log_sd = 0.5 * s2 * (z2 - delta2) + np.log(-np.expm1(-s2 * z2)) - np.log(math.sqrt(2 * n) * rho_safe)
        if np.any(log_sd > 354.0):  # sd² overflows float64
            raise ParameterError(f"sigma must be smaller (or lambda_rf=trig): the ++ λ-estimate's variance "
                                 f"e^{{σ²(|x+y|² − |x−y|²)}}/(2n) reaches e^{2 * float(np.max(log_sd)):.0f} here, "
                                 "past float64")
        sd = np.exp(log_sd)
    # |1 − ρ − g| = |e^{−2σ²r²} − e^{−σ²D²/2}| = e^{−min}·(1 − e^{−|difference|}): no cancellation, no overflow.
    half = s2 * delta2 / 2
    apart = t - half if sphere_z2 is None else s2 * np.asarray(sphere_z2, float) / 2
    gap = np.exp(-np.minimum(t, half)) * -np.expm1(-np.abs(apart)) / rho_safe
    zero = np.zeros_like(mean)
    mean = np.where(ok, mean, zero)
    variance = np.where(ok, sd**2, zero)
    second = mean**2 + variance
    one_minus_second = np.where(ok, gap**2 + variance, 1.0 + zero)
    return LambdaMoments(mean, second, variance, one_minus_second, mean - second)


def gaussian_lambda_moments_tr(theta: np.ndarray | float, r: np.ndarray | float, sigma: float,
                               n: int) -> LambdaMoments:
    """Gaussian λ moments on the sphere S(r): D² = 4r² sin²(θ/2) (HRF eqs. 78–79)."""
    theta = check_theta(theta)
    r = check_r(r)
    return gaussian_lambda_moments(4.0 * r**2 * np.sin(theta / 2) ** 2, r, sigma, n)


# ------------------------------------------------------------------------------------- bipolar MSE
def log_mse_bipolar(log_mse_pos: np.ndarray, log_mse_trig: np.ndarray, moments: LambdaMoments,
                    s: PairStats | None = None, m: int | None = None, shared: bool = False) -> np.ndarray:
    """log MSE of λ̂·SM_++ + (1 − λ̂)·SM_trig (softmax kernel; HRF Thm 3.1).

    Variant I (eq. 22): E[λ̂²]·MSE_++ + E[(1 − λ̂)²]·MSE_trig. Variant II (``shared``: trig and ++ share the
    m projections, eq. 23) subtracts (2/m)·SM²·(1 − cos(|x|² − |y|²))·E[λ̂(1 − λ̂)], which needs ``s`` and ``m``;
    it vanishes for |x| = |y| and for n = 1 (angular λ̂).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.logaddexp(np.log(moments.second) + log_mse_pos, np.log(moments.one_minus_second) + log_mse_trig)
        if not shared:
            return out
        if s is None or m is None:
            raise ValueError("the shared-projection correction (HRF eq. 23) needs the pair statistics and m")
        # log[(2/m)·SM²·2 sin²((|x|²−|y|²)/2)]; cross may be negative (Gaussian λ̂ can exceed 1).
        log_corr = (2 * LOG2 - np.log(check(m, M_PARAM)) + 2.0 * s.xy + 2.0 * np.log(np.abs(np.sin((s.xx - s.yy) / 2))))
        cross = np.asarray(moments.cross, float)
        log_term = log_corr + np.log(np.abs(cross))
        plus = np.logaddexp(out, log_term)
        minus = log_diff_exp(out, np.minimum(log_term, out))
    return np.where(np.isneginf(log_term), out, np.where(cross > 0, minus, plus))


def _same_length_stats(theta: np.ndarray | float, r: np.ndarray | float) -> PairStats:
    x, y = canonical_pair(r, theta, 2)
    return PairStats.of(x, y)


def log_mse_trig_tr(theta: np.ndarray | float, r: np.ndarray | float, m: int) -> np.ndarray:
    """log MSE_trig on S(r) ([HRF] Lemma 2.2 eq. 7)."""
    s = _same_length_stats(theta, r)
    return log_mse_trig(s.xx, s.yy, s.delta2, m)


def log_mse_pos_tr(theta: np.ndarray | float, r: np.ndarray | float, m: int) -> np.ndarray:
    """log MSE_++ (antithetic positive) on S(r) ([HRF] Lemma 2.2 eq. 7)."""
    s = _same_length_stats(theta, r)
    return log_mse_positive_antithetic(s.xx, s.yy, s.xy, s.z2, m)


def log_mse_angular_hybrid_tr(theta: np.ndarray | float, r: np.ndarray | float, m: int, n: int) -> np.ndarray:
    """log MSE of the angular hybrid on S(r): CORRECTED HRF eq. 47 (docs: derivations/hrf-angular-hybrid: the trig
    coefficient
    is E[(1 − λ̂)²] = (1 − p)(1 − p + p/n), not the printed E[λ̂(1 − λ̂)]); shared = independent here."""
    mom = angular_lambda_moments(theta, n)
    return log_mse_bipolar(log_mse_pos_tr(theta, r, m), log_mse_trig_tr(theta, r, m), mom)


def log_mse_angular_hybrid_tr_as_printed(theta: np.ndarray | float, r: np.ndarray | float, m: int,
                                         n: int) -> np.ndarray:
    """HRF eq. 47 AS PRINTED (wrong: second coefficient p(1 − 1/n − p + p/n) = E[λ̂(1 − λ̂)]); for the erratum view."""
    mom = angular_lambda_moments(theta, n)
    wrong = mom._replace(one_minus_second=mom.cross)
    return log_mse_bipolar(log_mse_pos_tr(theta, r, m), log_mse_trig_tr(theta, r, m), wrong)


def log_mse_gaussian_hybrid_tr(theta: np.ndarray | float, r: np.ndarray | float, m: int, n: int,
                               sigma: float) -> np.ndarray:
    """log MSE of the normalised Gaussian hybrid on S(r) (HRF Thm F.2, eqs. 77–79; docs:
    derivations/gaussian-lambda)."""
    mom = gaussian_lambda_moments_tr(theta, r, sigma, n)
    return log_mse_bipolar(log_mse_pos_tr(theta, r, m), log_mse_trig_tr(theta, r, m), mom)


# ----------------------------------------------------------------------------------------- oracle λ*
def oracle_lambda(log_mse_pos: np.ndarray, log_mse_trig: np.ndarray) -> np.ndarray:
    """λ* = MSE_trig/(MSE_trig + MSE_++), the best deterministic λ (derived)."""
    from scipy.special import expit

    return expit(np.asarray(log_mse_trig, float) - np.asarray(log_mse_pos, float))


def log_oracle_mse(log_mse_pos: np.ndarray, log_mse_trig: np.ndarray) -> np.ndarray:
    """log MSE* = log[MSE_trig·MSE_++/(MSE_trig + MSE_++)] (derived); −inf if either is exact."""
    a = np.asarray(log_mse_pos, float)
    b = np.asarray(log_mse_trig, float)
    with np.errstate(invalid="ignore"):
        out = a + b - np.logaddexp(a, b)
    return np.where(np.isneginf(a) | np.isneginf(b), -np.inf, out)


def oracle_lambda_tr(theta: np.ndarray | float, r: np.ndarray | float, m: int) -> np.ndarray:
    """λ*(θ, r) on S(r) (derived); strongly non-linear in θ, unlike θ/π."""
    return oracle_lambda(log_mse_pos_tr(theta, r, m), log_mse_trig_tr(theta, r, m))


def log_oracle_mse_tr(theta: np.ndarray | float, r: np.ndarray | float, m: int) -> np.ndarray:
    """log MSE* on S(r) (derived), a lower envelope of every bipolar hybrid with independent λ̂."""
    return log_oracle_mse(log_mse_pos_tr(theta, r, m), log_mse_trig_tr(theta, r, m))


# ---------------------------------------------------------------------------------- relative errors
def log_relative_error(log_mse: np.ndarray, theta: np.ndarray | float, r: np.ndarray | float) -> np.ndarray:
    """log ε_{θ,r} = log(√MSE/SM) with SM = e^{r² cos θ} on S(r) (HRF Def. 3.3)."""
    return 0.5 * np.asarray(log_mse, float) - check_r(r) ** 2 * np.cos(check_theta(theta))


def log_eps_trig_tr(theta: np.ndarray | float, r: np.ndarray | float, m: int) -> np.ndarray:
    """log ε_trig = log[(2m)^{-1/2} e^{2r² sin²(θ/2)}(1 − e^{−4r² sin²(θ/2)})] (HRF Lemma 3.4 eq. 25)."""
    a = 4.0 * check_r(r) ** 2 * np.sin(check_theta(theta) / 2) ** 2
    return a / 2 + log1mexp(a) - 0.5 * np.log(2 * check(m, M_PARAM))


def log_eps_pos_tr(theta: np.ndarray | float, r: np.ndarray | float, m: int) -> np.ndarray:
    """log ε_++(θ) = log ε_trig(π − θ) (HRF Lemma 3.4)."""
    return log_eps_trig_tr(PI - check_theta(theta), r, m)


def log_w(r: np.ndarray | float) -> np.ndarray:
    """log W(r), W(r) = e^{2r²}(1 − e^{−4r²}); ε_{S(r)}(trig) = ε_{S(r)}(++) = W(r)/√(2m) (HRF eq. 26)."""
    r2 = check_r(r) ** 2
    return 2.0 * r2 + log1mexp(4.0 * r2)


def log_eps_angular_hybrid_tr(theta: np.ndarray | float, r: np.ndarray | float, m: int, n: int) -> np.ndarray:
    """log ε_{θ,r} of the angular hybrid = log[e^{r²}/√(2m)·√h_r(θ)], h_r(θ) = a_r(θ) + a_r(π − θ),
    a_r(θ) = p(p − p/n + 1/n)·e^{2r² cos θ}(1 − e^{−4r² cos²(θ/2)})² (HRF eqs. 48–50, with the e^{r²} prefactor
    of eq. 48; eq. 66 prints e^{2r²}, a typo: docs: errata)."""
    theta = check_theta(theta)
    r2 = check_r(r) ** 2

    def log_a(t: np.ndarray) -> np.ndarray:
        second = angular_lambda_moments(t, n).second
        with np.errstate(divide="ignore"):
            return np.log(second) + 2 * r2 * np.cos(t) + 2 * log1mexp(4 * r2 * np.cos(t / 2) ** 2)

    log_h = np.logaddexp(log_a(theta), log_a(PI - theta))
    return r2 - 0.5 * np.log(2 * check(m, M_PARAM)) + 0.5 * log_h


def max_log_eps_angular_hybrid(r: float, m: int, n: int, grid: int = 4001) -> tuple[float, float]:
    """(θ*, log max_θ ε_{θ,r}) of the angular hybrid on S(r), the max-relative-error of HRF Def. 3.3:
    a grid search refined by a bounded scalar maximisation."""
    thetas = np.linspace(0.0, PI, grid)
    vals = log_eps_angular_hybrid_tr(thetas, r, m, n)
    k = int(np.argmax(vals))
    lo, hi = thetas[max(k - 1, 0)], thetas[min(k + 1, grid - 1)]
    from scipy.optimize import minimize_scalar  # lazy: 0.13 s of import only this optimiser needs

    res = minimize_scalar(lambda t: -float(log_eps_angular_hybrid_tr(t, r, m, n)), bounds=(lo, hi),
                          method="bounded", options={"xatol": 1e-13})
    if -res.fun >= vals[k]:
        return float(res.x), float(-res.fun)
    return float(thetas[k]), float(vals[k])


def _check_r_thm35(r: np.ndarray | float) -> np.ndarray:
    r = np.asarray(r, float)
    if not np.all(np.isfinite(r)) or np.any(r < 1.0):
        raise ParameterError(f"r must be a number in [1, inf) for the Theorem 3.5 bound, got {np.ravel(r)[0]:g}")
    return r


def log_bound_thm35_printed(r: np.ndarray | float, m: int, n: int) -> np.ndarray:
    """HRF Thm 3.5 eq. 27 AS PRINTED: (1/r)·W(r)/√(2m)·√(1/π − 1/(nπ) + 1/(n√π)), r ≥ 1.

    FALSE for small n and large r (e.g. n = 1, r ≥ 5): docs: errata.
    """
    r = _check_r_thm35(r)
    n = check(n, N_PARAM)
    inner = 1 / PI - 1 / (n * PI) + 1 / (n * np.sqrt(PI))
    return log_w(r) - np.log(r) - 0.5 * np.log(2 * check(m, M_PARAM)) + 0.5 * np.log(inner)


def log_bound_thm35_corrected(r: np.ndarray | float, m: int, n: int) -> np.ndarray:
    """CORRECTED Thm 3.5 bound: W(r)/√(2m)·√((1 − 1/n)/(π r²) + 1/(n√π r)), r ≥ 1 (docs: errata: the
    b² term of the proof, App. D.3 eq. 64, peaks at e^{2r²}/(2n√π r), not /r²)."""
    r = _check_r_thm35(r)
    n = check(n, N_PARAM)
    inner = (1 - 1 / n) / (PI * r**2) + 1 / (n * np.sqrt(PI) * r)
    return log_w(r) - 0.5 * np.log(2 * check(m, M_PARAM)) + 0.5 * np.log(inner)


def log_endpoint_slope(r: np.ndarray | float, m: int, n: int) -> np.ndarray:
    """log lim_{θ→0} ε/√θ = log lim_{θ→π} ε/√(π − θ) = log[W(r)/√(2π m n)] (HRF Thm 3.5; the paper's √(θ − π)
    should read √(π − θ))."""
    return log_w(r) - 0.5 * np.log(2 * PI * check(m, M_PARAM) * check(n, N_PARAM))


# --------------------------------------------------------------------------- complex-exponential loss
def _as_matrix(a: np.ndarray | complex, d: int) -> np.ndarray:
    a = np.asarray(a, dtype=complex)
    if a.ndim == 0:
        return a * np.eye(d)
    if a.ndim == 1:
        return np.diag(a)
    return a


def ce_w(a: np.ndarray | complex, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """w = Ax + (Aᵀ)^{-1}y (HRF eq. 17: the CE estimator is exact iff w = 0). ``a``: scalar (A = a·I), diagonal
    vector or d×d matrix; x, y real d-vectors."""
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    mat = _as_matrix(a, x.shape[-1])
    if not np.isfinite(np.linalg.cond(mat)) or np.linalg.cond(mat) > 1e15:
        raise ParameterError("A must be an invertible complex matrix (A ∈ GL(d, C)); got a singular one")
    return mat @ x + np.linalg.solve(mat.T, y)


def ce_loss(a: np.ndarray | complex, x: np.ndarray, y: np.ndarray) -> float:
    """l(A) = |Ax + (Aᵀ)^{-1}y|² (HRF eq. 21); for real A the CE MSE is SM²(e^{l(A)} − 1)/m (docs:
    derivations/complex-exponential)."""
    w = ce_w(a, x, y)
    return float(np.sum(np.abs(w) ** 2))


def ce_loss_min_real_diagonal(xc: np.ndarray, yc: np.ndarray) -> float:
    """min over real diagonal A of l(A) = 4·Σ_{k: x_k y_k > 0} x_k y_k ([HRF] App. H)."""
    return float(4.0 * np.sum(np.clip(np.asarray(xc, float) * np.asarray(yc, float), 0.0, None)))


def real_diagonal_a(xc: np.ndarray, yc: np.ndarray, big: float = 1e8) -> np.ndarray:
    """Minimiser of l(A) over real diagonal A (HRF App. H.2 eq. 88): a_k = √|y_k/x_k|; ``big`` if x_k = 0 ≠ y_k;
    1 if x_k = y_k = 0. Returns the diagonal."""
    xc = np.asarray(xc, float)
    yc = np.asarray(yc, float)
    a = np.where(xc != 0, np.sqrt(np.abs(yc / np.where(xc != 0, xc, 1.0))), big)
    return np.where((xc == 0) & (yc == 0), 1.0, a)


A_DIAG_MIN = 1e-3
A_DIAG_MAX = 1e3
"""Clip range of the real diagonal A fitted to data (HRF App. H.3): eq. 88's "large" a_k where r_{q,k} = 0 and a
zero a_k where r_{k,k} = 0 would make A singular."""


def real_diagonal_a_clipped(rq: np.ndarray, rk: np.ndarray) -> np.ndarray:
    """Diagonal of the real A minimising l(A) = ‖A r_q + A^{-1} r_k‖² (HRF App. H.2 eq. 88): a_k = √|r_{k,k}/r_{q,k}|,
    1 where both are 0, clipped to [A_DIAG_MIN, A_DIAG_MAX]. Broadcasts over leading axes (cluster pairs)."""
    rq = np.asarray(rq, dtype=float)
    rk = np.asarray(rk, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.sqrt(np.abs(rk / rq))
    a = np.where((rq == 0) & (rk == 0), 1.0, a)
    return np.clip(np.nan_to_num(a, nan=1.0, posinf=A_DIAG_MAX), A_DIAG_MIN, A_DIAG_MAX)


def ce_loss_diagonal(a: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """l(A) = ‖A x + A^{-1} y‖² for real diagonal A = diag(a) (HRF eq. 21), over the last axis (broadcasts)."""
    w = a * x + y / a
    return np.sum(w * w, -1)


def ce_loss_min_real_diagonal_batch(rq: np.ndarray, rk: np.ndarray) -> np.ndarray:
    """min over real diagonal A of l(A) = 4 Σ_{k: r_{q,k} r_{k,k} > 0} r_{q,k} r_{k,k} ([HRF] App. H), broadcast."""
    return 4.0 * np.sum(np.clip(np.asarray(rq) * np.asarray(rk), 0.0, None), -1)


def log_mse_ce_real_diagonal(xy: np.ndarray, loss: np.ndarray, m: int) -> np.ndarray:
    """log MSE of the m-feature CE estimator with real A: SM²(e^{l(A)} − 1)/m, SM = e^{x·y} (HRF Lemma 2.4;
    docs: derivations/complex-exponential, real A), from x·y and l(A)."""
    return 2.0 * np.asarray(xy, float) + log_expm1(np.asarray(loss, float)) - math.log(m)


def complex_diagonal_a(xc: np.ndarray, yc: np.ndarray) -> np.ndarray:
    """Complex diagonal A with Ax + A^{-1}y = 0 where every entry is nonzero (HRF App. H.2 eqs. 85–87):
    a_k = i√(y_k/x_k) if x_k y_k > 0, √(−y_k/x_k) if x_k y_k < 0, 1 + i if x_k = y_k = 0. Returns the diagonal."""
    xc = np.asarray(xc, float)
    yc = np.asarray(yc, float)
    if np.any((xc == 0) != (yc == 0)):
        raise ParameterError("x and y must be zero in the same coordinates for a zero-loss complex diagonal A")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = yc / np.where(xc != 0, xc, 1.0)
    prod = xc * yc
    return np.where(prod > 0, 1j * np.sqrt(np.abs(ratio)), np.where(prod < 0, np.sqrt(np.abs(ratio)), 1.0 + 1.0j))


# ------------------------------------------------------------------------------ complex exponential
def log_mse_complex_exponential(w: np.ndarray, log_sm: np.ndarray, m: int, antithetic: bool = False,
                                variance: str = "real_part") -> np.ndarray:
    """log MSE of the CE estimator with m iid ω, from w = Ax + (Aᵀ)^{-1}y (..., d) complex and log SM = x·y.

    [HRF] §2.3 eqs. 13–18, Lemma 2.4 (closed form derived in docs: derivations/complex-exponential): with a = |w|²,
    w² = Σ w_k² = b + ic,
    complex:   E|X − SM|² = SM²(e^a − 1)/m            (antithetic: SM²(cosh a − 1)/m);
    real_part: Var Re X  = SM²(e^a + Re e^{w²} − 2)/(2m) (antithetic: cosh in place of exp).
    The real-part bracket is rewritten without cancellation, with |u|² = (a + b)/2, |v|² = (a − b)/2
    (u, v = Re w, Im w): e^a + e^b cos c − 2 = 2(e^{|u|²} − 1)cosh|v|² + 2(cosh|v|² − 1) − 2e^b sin²(c/2), and
    cosh a + cosh b cos c − 2 = (cosh a − 1) + (cosh b − 1)cos c − 2 sin²(c/2).
    """
    w = np.asarray(w, dtype=complex)
    # |u|², |v|² summed from Re w and Im w themselves: (a ± b)/2 would leave the round-off of a and b (e.g.
    # |u|² ~ 1e-23 instead of 0 for w = i(x − y), 2e-9 of the MSE at |x − y|² = 1e-7)
    u2_sum = np.sum(w.real**2, -1)
    v2_sum = np.sum(w.imag**2, -1)
    a = u2_sum + v2_sum
    b, c = u2_sum - v2_sum, 2.0 * np.sum(w.real * w.imag, -1)
    log_sm2 = 2.0 * np.asarray(log_sm, float)
    if variance == "complex":
        core = log_cosh_m1(a) if antithetic else log_expm1(a)
        return log_sm2 + core - math.log(m)
    if variance != "real_part":
        raise ParameterError(f"variance must be one of real_part, complex, got {variance!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        log_sin2 = LOG2 + 2.0 * np.log(np.abs(np.sin(c / 2)))
        if antithetic:
            cos_c = np.cos(c)
            t2 = log_cosh_m1(b) + np.log(np.abs(cos_c))
            pos = np.where(cos_c > 0, np.logaddexp(log_cosh_m1(a), t2), log_cosh_m1(a))
            neg = np.where(cos_c < 0, np.logaddexp(log_sin2, t2), log_sin2)
        else:
            u2, v2 = u2_sum, v2_sum
            pos = np.logaddexp(LOG2 + log_expm1(u2) + log_cosh(v2), LOG2 + log_cosh_m1(v2))
            neg = b + log_sin2
        core = np.where(np.isneginf(pos), -np.inf, log_diff_exp(pos, np.minimum(neg, pos)))  # w = 0: exact
    return log_sm2 + core - math.log(2 * m)


__all__ = [
    "LambdaMoments",
    "angle_between",
    "angle_to_antipode",
    "angular_lambda",
    "angular_lambda_moments",
    "ce_loss",
    "ce_loss_min_real_diagonal",
    "ce_w",
    "complex_diagonal_a",
    "gaussian_lambda",
    "gaussian_lambda_moments",
    "gaussian_lambda_moments_tr",
    "log_bound_thm35_corrected",
    "log_bound_thm35_printed",
    "log_endpoint_slope",
    "log_eps_angular_hybrid_tr",
    "log_eps_pos_tr",
    "log_eps_trig_tr",
    "log_mse_angular_hybrid_tr",
    "log_mse_angular_hybrid_tr_as_printed",
    "log_mse_bipolar",
    "log_mse_complex_exponential",
    "log_mse_gaussian_hybrid_tr",
    "log_mse_pos_tr",
    "log_mse_positive",
    "log_mse_positive_antithetic",
    "log_mse_trig",
    "log_mse_trig_tr",
    "log_oracle_mse",
    "log_oracle_mse_tr",
    "log_relative_error",
    "log_w",
    "max_log_eps_angular_hybrid",
    "oracle_lambda",
    "oracle_lambda_tr",
    "real_diagonal_a",
]
