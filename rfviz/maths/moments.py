"""Fourth moments of random-feature estimators: E(K̂ − K)⁴, hence the variance of the squared error (log space).

With m iid features, K̂ = (1/m) Σ Z_i and, with μ_k the central moments of one feature Z,

    E(K̂ − K)⁴ = (μ4 + 3(m − 1)μ2²)/m³                                  (real K̂),
    E|K̂ − K|⁴ = (E|ξ|⁴ + (m − 1)(2(E|ξ|²)² + |Eξ²|²))/m³, ξ = Z − K    (complex K̂)

[derived: expand the fourth power of a sum of iid mean-zero terms]. Every feature used here is a finite sum of
terms c·exp(α|ω|² + ω·v + κ) with ω ~ N(0, I_d) and v = Σ_r β_r u_r a combination of fixed (possibly complex)
vectors u_r, so every product of features has the Gaussian moment generating function

    E exp(α|ω|² + ω·v) = (1 − 2α)^{−d/2} exp(v·v/(2(1 − 2α))),  Re α < 1/2 (+∞ otherwise)

(v·v bilinear, principal branch; [CRT] Thm 3.1's computation with α = 2A). Trigonometric features are the
α = 0, β = ±i case (cos t = (e^{it} + e^{−it})/2). The central moments are sums of such exponentials that cancel
to leading order near exact points (x = y for trig); where the float64 sum's estimated relative error exceeds
FLOAT_SUM_RTOL there, the sum is re-evaluated in mpmath at the precision it needs (the inputs taken as exact).

Everything is relative to the target kernel (Z/K has mean 1), so the same numbers serve the softmax and the
Gaussian kernel; the estimators multiply by K⁴.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import mpmath
import numpy as np

from ..numerics import LOG2


@dataclass(frozen=True)
class Term:
    """coef·exp(κ + α|ω|² + ω·Σ_r β_r u_r): arrays broadcast over points.

    ``log_c`` κ: (P,) complex; ``alpha``: (P,) complex; ``beta``: (R, P) complex; ``coef``: an exact scalar (±1,
    ±1/2, …: kept out of the logs so that the mpmath re-evaluation sees it without round-off)."""

    log_c: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    coef: complex = 1.0


Feature = list[Term]


def term(log_c: np.ndarray | complex, beta: Sequence[np.ndarray | complex], alpha: np.ndarray | complex = 0.0,
         points: int = 1, coef: complex = 1.0) -> Term:
    """A ``Term`` with every field broadcast to ``points`` points (``beta`` one entry per vector u_r)."""
    shape = (points,)
    return Term(np.broadcast_to(np.asarray(log_c, complex), shape).copy(),
                np.broadcast_to(np.asarray(alpha, complex), shape).copy(),
                np.stack([np.broadcast_to(np.asarray(b, complex), shape) for b in beta]), coef)


def conjugate(feature: Feature, swap: Sequence[int] | None = None) -> Feature:
    """The complex conjugate of a feature. ``swap[r]`` names the vector u_{swap[r]} = conj(u_r) (identity for real
    vectors)."""
    out = []
    for t in feature:
        beta = np.conj(t.beta)
        if swap is not None:
            beta = beta[list(swap)]
        out.append(Term(np.conj(t.log_c), np.conj(t.alpha), beta, complex(t.coef).conjugate()))
    return out


def scaled(feature: Feature, coef: complex) -> Feature:
    """coef·feature (coef exact: 1/2, 1/4, …)."""
    return [Term(t.log_c, t.alpha, t.beta, t.coef * coef) for t in feature]


def shifted(feature: Feature, mean: complex = 1.0) -> Feature:
    """feature − mean (a constant term), for central moments. Relative features Z/K have mean exactly 1."""
    zero = np.zeros_like(feature[0].beta)
    points = zero.shape[-1]
    return [*feature, Term(np.zeros(points, complex), np.zeros(points, complex), zero, -mean)]


Combo = tuple[complex, np.ndarray, np.ndarray, np.ndarray]


def _combos(factors: Sequence[tuple[Feature, int]]) -> list[tuple[complex, list[Term]]]:
    """Expand Π feature^power into (exact coefficient, terms) products (multinomial expansion of each power)."""
    per_factor = []
    for feature, power in factors:
        items = []
        for counts in itertools.combinations_with_replacement(range(len(feature)), power):
            c = [counts.count(j) for j in range(len(feature))]
            multi = math.factorial(power) // math.prod(math.factorial(k) for k in c)
            coef = complex(multi)
            for j in counts:
                coef *= feature[j].coef
            items.append((coef, [feature[j] for j in counts]))
        per_factor.append(items)
    out = []
    for choice in itertools.product(*per_factor):
        coef = complex(1.0)
        for ch in choice:
            coef *= ch[0]
        out.append((coef, [t for ch in choice for t in ch[1]]))
    return out


def _combo_arrays(combos: list[tuple[complex, list[Term]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    coef = np.array([c for c, _ in combos], complex)
    log_c = np.stack([sum(t.log_c for t in ts) for _, ts in combos])
    alpha = np.stack([sum(t.alpha for t in ts) for _, ts in combos])
    beta = np.stack([sum(t.beta for t in ts) for _, ts in combos])
    return coef, log_c, alpha, beta


def _log_expectation_float(coef: np.ndarray, log_c: np.ndarray, alpha: np.ndarray, beta: np.ndarray,
                           gram: np.ndarray, d: int) -> np.ndarray:
    """Complex logs of E[each combo] (n, P), coefficient included; +inf real part where Re α ≥ 1/2."""
    one = 1.0 - 2.0 * alpha
    ok = one.real > 0
    one = np.where(ok, one, 1.0)
    vv = np.einsum("nrp,rsp,nsp->np", beta, gram, beta)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.log(coef)[:, None] + log_c - 0.5 * d * np.log(one) + vv / (2.0 * one)
    return np.where(ok, out, np.inf + 0j)


FLOAT_SUM_RTOL = 1e-8
"""Largest *estimated* relative round-off (``_float_sum_trusted``, a bound: every addend's error at its worst)
accepted from a cancelling float64 sum of moment terms before the point is re-evaluated in mpmath. The bound
overstates the real error by orders of magnitude: at 1e-8 the mpmath tests still hold every fourth moment to
1e-10 in log space at every hostile point, while at 1e-12 the angular hybrid's Gram reliability took 4.2 s for
4096 pairs (0.22 s at 1e-8, 0.12 s with the earlier, unchecked rule)."""


def _exponent_round_off(combos: list[tuple[complex, list[Term]]], alpha: np.ndarray, beta: np.ndarray,
                        gram: np.ndarray, d: int) -> np.ndarray:
    """(n, P): a bound, in units of eps, on the absolute round-off of each float64 log E[combo]: each addend of
    κ − (d/2)Log(1 − 2α) + v·v/(2(1 − 2α)) is off by ~eps times its size, and 1 − 2α by eps (relative 1/|1 − 2α|)."""
    one = np.abs(1.0 - 2.0 * alpha)
    one = np.where(one > 0, one, 1.0)
    log_c = np.stack([sum(np.abs(t.log_c) for t in ts) for _, ts in combos])
    vv = np.einsum("nrp,rsp,nsp->np", np.abs(beta), np.abs(gram), np.abs(beta))
    return 8.0 + log_c + 0.5 * d * (np.abs(np.log(one)) + 1.0 / one) + vv / (2.0 * one) * (1.0 + 2.0 / one)


def _float_sum_trusted(parts: np.ndarray, total: np.ndarray, round_off: np.ndarray) -> np.ndarray:
    """Whether a float64 sum Re Σ parts (complex, (n, P)) is accurate: its estimated relative error
    Σ|part|·δ/|Re Σ part| (δ = eps × ``round_off``; |part| the modulus: a phase error moves the real part by as much)
    is at most FLOAT_SUM_RTOL, or the sum does not cancel (Σ|part| ≤ 2|Re Σ part|: the error is then
    that of the terms' own exponents, which no precision of the sum improves). A sum that cancelled by 1e-3..1e-8
    was trusted before and kept only 8 digits (4e-9 in log E(K̂ − K)⁴ of trig at θ = 0.02)."""
    mags = np.abs(parts)
    size = np.sum(mags, axis=0)
    error = np.finfo(float).eps * np.sum(mags * np.where(mags > 0, round_off, 0.0), axis=0)
    return (error <= FLOAT_SUM_RTOL * np.abs(total)) | (size <= 2.0 * np.abs(total))


def _mp_value(combos: list[tuple[complex, list[Term]]], gram: np.ndarray, d: int, p: int,
              dps: int) -> mpmath.mpf:
    """Re Σ E[combo] at point p in mpmath, the exponents summed term by term at this precision (summing them in
    float64 first would make O(1) terms inconsistent at the 1e-16 level, which the cancellation amplifies)."""
    with mpmath.workdps(dps):
        g = [[mpmath.mpc(gram[r, s, p]) for s in range(gram.shape[1])] for r in range(gram.shape[0])]
        total = mpmath.mpc(0)
        for coef, terms in combos:
            log_c = mpmath.fsum(mpmath.mpc(t.log_c[p]) for t in terms)
            one = 1 - 2 * mpmath.fsum(mpmath.mpc(t.alpha[p]) for t in terms)
            beta = [mpmath.fsum(mpmath.mpc(t.beta[r, p]) for t in terms) for r in range(len(g))]
            vv = mpmath.fsum(beta[r] * g[r][s] * beta[s] for r in range(len(g)) for s in range(len(g)))
            total += mpmath.mpc(coef) * mpmath.exp(log_c - mpmath.mpf(d) / 2 * mpmath.log(one) + vv / (2 * one))
        return total.real


def expect_signed(factors: Sequence[tuple[Feature, int]], gram: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """(log|Re E[Π feature^power]|, sign) at each point, shape (P,) each: log −inf where it is 0, +inf where it
    diverges (sign +1 there).

    ``gram[r, s]`` (R, R, P) = u_r·u_s (bilinear). The float64 sum is checked for cancellation: where its estimated
    relative error exceeds FLOAT_SUM_RTOL, the point is re-evaluated in mpmath with enough digits (a central moment
    at a nearly exact point is a tiny difference of O(1) terms).
    """
    combos = _combos(factors)
    arrays = _combo_arrays(combos)
    logs = _log_expectation_float(*arrays, gram, d)
    infinite = np.any(np.isposinf(logs.real), axis=0)
    finite_logs = np.where(np.isposinf(logs.real), -np.inf + 0j, logs)
    top = np.max(finite_logs.real, axis=0)
    top_safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        parts = np.where(np.isneginf(finite_logs.real), 0.0, np.exp(finite_logs - top_safe))
    total = np.sum(parts.real, axis=0)
    trusted = _float_sum_trusted(parts, total, _exponent_round_off(combos, *arrays[2:], gram, d))
    out = np.empty(total.shape)
    sign = np.where(total < 0, -1.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[:] = np.log(np.abs(total)) + top_safe
    suspect = ~infinite & np.isfinite(top) & ~trusted
    for p in np.flatnonzero(suspect):
        out[p], sign[p] = _log_mp(combos, gram, d, int(p), top_safe[p])
    out = np.where(np.isfinite(top), out, -np.inf)
    return np.where(infinite, np.inf, out), np.where(infinite, 1.0, sign)


def expect(factors: Sequence[tuple[Feature, int]], gram: np.ndarray, d: int) -> np.ndarray:
    """log Re E[Π feature^power] of a non-negative quantity (even central moments), see ``expect_signed``; a
    negative result (round-off beyond the mpmath re-evaluation) raises FloatingPointError rather than a NaN."""
    out, sign = expect_signed(factors, gram, d)
    if np.any((sign < 0) & np.isfinite(out)):
        raise FloatingPointError("a fourth moment came out negative (round-off in the Gaussian moment sums)")
    return out


def _log_mp(combos: list[tuple[complex, list[Term]]], gram: np.ndarray, d: int, p: int,
            top: float) -> tuple[float, float]:
    """log of one point's sum in mpmath, raising the precision until ≥ 15 digits survive the cancellation
    (``top``: log of the largest term)."""
    dps = 40
    while dps <= 320:
        value = _mp_value(combos, gram, d, p, dps)
        if value == 0:  # every digit cancelled at this precision: not yet a zero (E(cos t − μ)⁴ ~ W⁴ at W = |Δ|²)
            dps *= 2
            continue
        with mpmath.workdps(dps):
            log_value = float(mpmath.log(abs(value)))
        lost = (top - log_value) / math.log(10)
        if lost < dps - 15:
            return log_value, (1.0 if value > 0 else -1.0)
        dps *= 2
    return -math.inf, 1.0  # the terms cancel to below 10^-305 of their size: zero for every practical purpose


# ----------------------------------------------------------------------------------------- assembling K̂
def log_fourth_central_iid(log_mu2: np.ndarray, log_mu4: np.ndarray, m: int) -> np.ndarray:
    """log E(K̂ − K)⁴ = log[(μ4 + 3(m − 1)μ2²)/m³] for the mean of m iid real features (module docstring)."""
    log_mu2 = np.asarray(log_mu2, float)
    with np.errstate(divide="ignore"):
        cross = math.log(3 * (m - 1)) + 2 * log_mu2 if m > 1 else np.full_like(log_mu2, -np.inf)
    return np.logaddexp(np.asarray(log_mu4, float), cross) - 3 * math.log(m)


def log_fourth_abs_iid_complex(log_mu2: np.ndarray, log_abs_nu: np.ndarray, log_mu4: np.ndarray,
                               m: int) -> np.ndarray:
    """log E|K̂ − K|⁴ = log[(E|ξ|⁴ + (m − 1)(2μ2² + |ν|²))/m³], μ2 = E|ξ|², ν = Eξ² (module docstring)."""
    if m == 1:
        return np.asarray(log_mu4, float)
    pair = np.logaddexp(LOG2 + 2 * np.asarray(log_mu2, float), 2 * np.asarray(log_abs_nu, float))
    return np.logaddexp(np.asarray(log_mu4, float), math.log(m - 1) + pair) - 3 * math.log(m)


def real_feature_moments(feature: Feature, gram: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """(log μ2, log μ4) of a real feature (given as complex terms whose sum is real)."""
    centred = shifted(feature)
    return expect([(centred, 2)], gram, d), expect([(centred, 4)], gram, d)


def log_fourth_central_real(feature: Feature, gram: np.ndarray, d: int, m: int) -> np.ndarray:
    """log E(K̂ − K)⁴/K⁴ of the mean of m iid copies of a real relative feature Z/K."""
    log_mu2, log_mu4 = real_feature_moments(feature, gram, d)
    return log_fourth_central_iid(log_mu2, log_mu4, m)


# ------------------------------------------------------------------------------------ estimators' features
def trig_feature(delta2: np.ndarray) -> tuple[Feature, np.ndarray]:
    """Z/K of one trig feature, e^{D/2}cos(ω·Δ) (D = |x − y|², [HRF] eq. 2), and its Gram matrix."""
    delta2 = np.atleast_1d(np.asarray(delta2, float))
    p = delta2.size
    c = delta2 / 2
    return [term(c, [1j], points=p, coef=0.5), term(c, [-1j], points=p, coef=0.5)], \
        delta2[None, None, :].astype(complex)


def exp_feature(z2: np.ndarray, antithetic: bool) -> tuple[Feature, np.ndarray]:
    """Z/K of one positive feature e^{ω·z − Z/2} (Z = |x + y|², [HRF] §2.1 E2′) or its antithetic pair
    e^{−Z/2}cosh(ω·z) (FAVOR+, [HRF] eq. 3), and its Gram matrix."""
    z2 = np.atleast_1d(np.asarray(z2, float))
    p = z2.size
    if antithetic:
        c = -z2 / 2
        feature = [term(c, [1.0], points=p, coef=0.5), term(c, [-1.0], points=p, coef=0.5)]
    else:
        feature = [term(-z2 / 2, [1.0], points=p)]
    return feature, z2[None, None, :].astype(complex)


def log_fourth_trig(delta2: np.ndarray, m: int) -> np.ndarray:
    """log E(K̂_trig − K)⁴/K⁴, m iid ω ([HRF] eq. 2; moments [derived], module docstring)."""
    feature, gram = trig_feature(delta2)
    return log_fourth_central_real(feature, gram, 1, m)


def log_fourth_trig_phase(delta2: np.ndarray, m: int) -> np.ndarray:
    """log E(K̂ − K)⁴/K⁴ of random Fourier features with phase (Rahimi & Recht), m iid (ω, b) [derived].

    Z/K = e^{D/2}(cos(ω·Δ) + P) with P = cos(ω·(x + y) + 2b) independent of ω·Δ and uniform-phase (EP = EP³ = 0,
    EP² = 1/2, EP⁴ = 3/8), so μ2 = μ2_trig + e^D/2 and μ4 = μ4_trig + 6·μ2_trig·e^D/2 + 3e^{2D}/8.
    """
    delta2 = np.atleast_1d(np.asarray(delta2, float))
    feature, gram = trig_feature(delta2)
    t2, t4 = real_feature_moments(feature, gram, 1)
    w2 = delta2 - LOG2
    w4 = 2 * delta2 + math.log(3 / 8)
    mu2 = np.logaddexp(t2, w2)
    mu4 = np.logaddexp(np.logaddexp(t4, math.log(6) + t2 + w2), w4)
    return log_fourth_central_iid(mu2, mu4, m)


def log_fourth_exp(z2: np.ndarray, m: int, antithetic: bool) -> np.ndarray:
    """log E(K̂ − K)⁴/K⁴ of the positive RF (lognormal features) or FAVOR+ (cosh features), m iid ω [derived]."""
    feature, gram = exp_feature(z2, antithetic)
    return log_fourth_central_real(feature, gram, 1, m)


def gerf_feature(A: np.ndarray | complex, s: int, zs: np.ndarray, xx: np.ndarray, yy: np.ndarray, xy: np.ndarray,
                 d: int) -> tuple[Feature, np.ndarray]:
    """Re Y/K of one GERF feature (softmax form, [CRT] Thm 3.1 eq. 5):
    log Y = 2 log D + 2A|ω|² + Bω·(x + sy) + (C + ½)(|x|² + |y|²), B = √(s(1 − 4A)), C = −(s + 1)/2,
    log D = (d/4)Log(1 − 4A); A may vary per point (OPRF's A*). Returns the feature and its Gram (Z_s = |x + sy|²)."""
    zs = np.atleast_1d(np.asarray(zs, float))
    p = zs.size
    a = np.broadcast_to(np.asarray(A, complex), (p,))
    b = np.sqrt(s * (1 - 4 * a))
    log_d2 = 0.5 * d * np.log(1 - 4 * a)
    c = -(s + 1) / 2.0
    log_c = log_d2 + (c + 0.5) * (np.asarray(xx, float) + np.asarray(yy, float)) - np.asarray(xy, float)
    log_c = np.broadcast_to(log_c, (p,))
    gram = zs[None, None, :].astype(complex)
    y = term(log_c, [b], alpha=2 * a, points=p)
    if s == 1 and np.all(a.imag == 0):
        return [y], gram
    half = scaled([y], 0.5)
    return half + conjugate(half), gram


def log_fourth_gerf(A: np.ndarray | complex, s: int, zs: np.ndarray, xx: np.ndarray, yy: np.ndarray,
                    xy: np.ndarray, d: int, m: int) -> np.ndarray:
    """log E(K̂ − K)⁴/K⁴ of GERF/OPRF with m iid ω ([CRT] eq. 5 features; +∞ iff Re A ≥ 1/16, [CRT] Thm 3.2's
    finiteness argument applied to Y²)."""
    feature, gram = gerf_feature(A, s, zs, xx, yy, xy, d)
    return log_fourth_central_real(feature, gram, d, m)


def ce_features(w: np.ndarray, antithetic: bool) -> tuple[Feature, np.ndarray]:
    """The complex relative feature V = e^{ω·w − w²/2} of the CE estimator ([HRF] eqs. 13–17; w = Ax + (Aᵀ)^{-1}y,
    w² = Σ w_k²), or (V + V′)/2 with V′ = e^{−ω·w − w²/2} for antithetic pairs.

    The vectors are the real u_1 = Re w, u_2 = Im w (ω·w = ω·u_1 + iω·u_2), so the Gram matrix holds P = |u_1|²,
    Q = |u_2|², R = u_1·u_2, each rounded once, and w² = P − Q + 2iR and |w|² = P + Q are formed from the same
    three numbers. Rounding w² and |w|² separately made them inconsistent at the 1e-16 level, which the moment sums'
    cancellation near an exact point (w → 0) amplified: relative errors of 1e-9 in the fourth moment of A = i at
    near-duplicate rows."""
    w = np.asarray(w, complex)
    w = w.reshape(-1, w.shape[-1])
    p = w.shape[0]
    re, im = w.real, w.imag
    pp, qq, rr = np.sum(re * re, -1), np.sum(im * im, -1), np.sum(re * im, -1)
    gram = np.stack([np.stack([pp, rr]), np.stack([rr, qq])]).astype(complex)
    c = -(pp - qq) / 2 - 1j * rr  # −w²/2
    if antithetic:
        feature = [term(c, [1.0, 1j], points=p, coef=0.5), term(c, [-1.0, -1j], points=p, coef=0.5)]
    else:
        feature = [term(c, [1.0, 1j], points=p)]
    return feature, gram


def _log_abs_complex_mean(xi: Feature, gram: np.ndarray) -> np.ndarray:
    """log|E ξ²| from Re E ξ² and Im E ξ² = Re E[(−iξ)ξ], each through ``expect_signed`` (so with its mpmath
    re-evaluation: E ξ² cancels like E|ξ|² near an exact point; a float64 sum of it lost up to 2e-4 of log|Eξ²|)."""
    log_re, _ = expect_signed([(xi, 2)], gram, 1)
    log_im, _ = expect_signed([(scaled(xi, -1j), 1), (xi, 1)], gram, 1)
    return 0.5 * np.logaddexp(2 * log_re, 2 * log_im)


def log_fourth_complex_exponential(w: np.ndarray, m: int, antithetic: bool = False,
                                   variance: str = "real_part") -> np.ndarray:
    """log E|K̂ − K|⁴/K⁴ of the CE estimator with m iid ω: of Re K̂ (``real_part``) or of the complex K̂
    (``complex``) [derived, module docstring]."""
    feature, gram = ce_features(w, antithetic)
    conj = conjugate(feature)
    if variance == "real_part":
        return log_fourth_central_real(scaled(feature + conj, 0.5), gram, 1, m)
    xi, xi_bar = shifted(feature), shifted(conj)  # E V = 1: V is relative
    log_mu2 = expect([(xi, 1), (xi_bar, 1)], gram, 1)
    log_mu4 = expect([(xi, 2), (xi_bar, 2)], gram, 1)
    log_abs_nu = np.minimum(_log_abs_complex_mean(xi, gram), log_mu2)  # |Eξ²| ≤ E|ξ|² (round-off only)
    return log_fourth_abs_iid_complex(log_mu2, log_abs_nu, log_mu4, m)


def _take(t: Term, idx: np.ndarray) -> Term:
    """The term at the points ``idx``."""
    return Term(t.log_c[idx], t.alpha[idx], t.beta[:, idx], t.coef)


def _binomial_lambda_moments(p: np.ndarray, n: int, q: np.ndarray | None = None) -> np.ndarray:
    """E[λ̂^j(1 − λ̂)^{4−j}], j = 0..4, for λ̂ = Binomial(n, p)/n (angular λ, [HRF] Lemma 3.2): shape (5, P).
    ``q`` = 1 − p computed directly (from π − θ) keeps the weights exact as p → 1."""
    k = np.arange(n + 1)[:, None]
    p = np.asarray(p, float)[None, :]
    q = 1.0 - p if q is None else np.asarray(q, float).reshape(1, -1)
    comb = np.array([math.comb(n, int(i)) for i in k[:, 0]], float)[:, None]
    pmf = comb * p**k * q ** (n - k)
    lam = k / n
    return np.stack([np.sum(pmf * lam**j * (1 - lam) ** (4 - j), axis=0) for j in range(5)])


def log_fourth_angular_hybrid(xx: np.ndarray, yy: np.ndarray, xy: np.ndarray, theta: np.ndarray, m: int, n: int,
                              shared: bool, *, z2: np.ndarray | None = None,
                              delta2: np.ndarray | None = None, antipode: np.ndarray | None = None) -> np.ndarray:
    """log E(K̂ − K)⁴/K⁴ of the angular hybrid λ̂·SM_++ + (1 − λ̂)·SM_trig ([HRF] eq. 12, λ̂ = Binomial(n, θ/π)/n
    independent of the m projections ω, shared by both estimators or not) [derived].

    K̂ − K = λ̂a + (1 − λ̂)b with a, b the errors of FAVOR+ and trig, so E(K̂ − K)⁴ = Σ_j C(4, j)·E[λ̂^j(1 − λ̂)^{4−j}]
    ·E[a^j b^{4−j}], and for means of m iid feature pairs (α_i, β_i), E[a^j b^k] = (E[α^jβ^k] + (m − 1)·P_jk)/m³
    where P_jk sums E[·]E[·] over the three ways of pairing the four factors (e.g. P_22 = E[α²]E[β²] + 2E[αβ]²).
    Independent ω: E[α^jβ^k] = E[α^j]E[β^k] and E[αβ] = 0.
    """
    xx, yy, xy = (np.atleast_1d(np.asarray(v, float)) for v in (xx, yy, xy))
    # |x ± y|² from the caller's x ± y where given (PairStats), else the expansion (cancels as y → ±x)
    z2 = np.maximum(xx + yy + 2 * xy, 0.0) if z2 is None else np.atleast_1d(np.asarray(z2, float))
    delta2 = np.maximum(xx + yy - 2 * xy, 0.0) if delta2 is None else np.atleast_1d(np.asarray(delta2, float))
    pts = z2.size
    pos, _ = exp_feature(z2, antithetic=True)
    trig, _ = trig_feature(delta2)
    # both features over the vectors (z, Δ): Gram [[Z, z·Δ], [z·Δ, D]], z·Δ = |x|² − |y|²
    pos = [Term(t.log_c, t.alpha, np.stack([t.beta[0], np.zeros(pts, complex)]), t.coef) for t in pos]
    trig = [Term(t.log_c, t.alpha, np.stack([np.zeros(pts, complex), t.beta[0]]), t.coef) for t in trig]
    cross = (xx - yy).astype(complex)
    gram = np.stack([np.stack([z2.astype(complex), cross]), np.stack([cross, delta2.astype(complex)])])
    a, b = shifted(pos), shifted(trig)

    def value(factors: list[tuple[Feature, int]], idx: np.ndarray, into: _Signed) -> None:
        sub = [([_take(t, idx) for t in f], q) for f, q in factors]
        into.log[idx], into.sign[idx] = expect_signed(sub, gram[:, :, idx], 1)

    # every moment as (log|·|, sign): the relative moments reach e^{1000} and more at |x| ≥ 10 (float64 gave ±inf)
    e = {(1, 0): _Signed.zeros(pts), (0, 1): _Signed.zeros(pts)}  # central: E α = E β = 0 exactly
    alive_a, alive_b = np.flatnonzero(z2 > 0), np.flatnonzero(delta2 > 0)  # α ≡ 0 at Z = 0, β ≡ 0 at D = 0
    for q in (2, 3, 4):
        e[(q, 0)], e[(0, q)] = _Signed.zeros(pts), _Signed.zeros(pts)
        value([(a, q)], alive_a, e[(q, 0)])
        value([(b, q)], alive_b, e[(0, q)])
    # With independent ω, or |x| = |y| (z ⊥ Δ, so ω·z and ω·Δ are independent), E[α^jβ^k] = E[α^j]E[β^k].
    for j, k in ((1, 1), (1, 3), (3, 1), (2, 2)):
        e[(j, k)] = e[(j, 0)] * e[(0, k)]
        # |x|² − |y|² at round-off level: the dependence it adds is below float64 resolution
        coupled = (np.abs(cross) > 1e-12 * (xx + yy)) & (z2 > 0) & (delta2 > 0)
        dependent = np.flatnonzero(coupled) if shared else np.array([], int)
        if dependent.size:
            value([(a, j), (b, k)], dependent, e[(j, k)])
    pairs = {4: e[(2, 0)] * e[(2, 0)] * 3, 3: e[(2, 0)] * e[(1, 1)] * 3,
             2: _Signed.sum([e[(2, 0)] * e[(0, 2)], e[(1, 1)] * e[(1, 1)] * 2]),
             1: e[(1, 1)] * e[(0, 2)] * 3, 0: e[(0, 2)] * e[(0, 2)] * 3}
    weights = _binomial_lambda_moments(np.asarray(theta, float).reshape(-1) / np.pi, n,
                                       None if antipode is None else np.asarray(antipode, float).reshape(-1) / np.pi)
    parts = []
    for j in range(5):
        mixed = _Signed.sum([e[(j, 4 - j)], pairs[j] * (m - 1)])
        parts.append(mixed * (math.comb(4, j) / m**3) * weights[j])
    total = _Signed.sum(parts)
    if np.any(total.sign < 0):  # an even moment below 0: round-off past the mpmath re-evaluation, never a silent −inf
        raise FloatingPointError("the angular hybrid's fourth moment came out negative (round-off in its moment sums)")
    return np.where(total.sign > 0, total.log, -np.inf)


@dataclass
class _Signed:
    """Numbers held as (log|v|, sign v) arrays; sign 0 is an exact zero."""

    log: np.ndarray
    sign: np.ndarray

    @classmethod
    def zeros(cls, size: int) -> _Signed:
        return cls(np.full(size, -np.inf), np.zeros(size))

    def __mul__(self, other: _Signed | float | np.ndarray) -> _Signed:
        if isinstance(other, _Signed):
            return _Signed(np.where((self.sign == 0) | (other.sign == 0), -np.inf, self.log + other.log),
                           self.sign * other.sign)
        other = np.asarray(other, float)
        with np.errstate(divide="ignore"):
            return _Signed(np.where(other == 0, -np.inf, self.log + np.log(np.abs(other))), self.sign * np.sign(other))

    @staticmethod
    def sum(items: list[_Signed]) -> _Signed:
        logs = np.stack([np.where(i.sign == 0, -np.inf, i.log) for i in items])
        signs = np.stack([i.sign for i in items])
        infinite = np.any(np.isposinf(logs) & (signs != 0), axis=0)  # a divergent moment: the sum diverges
        finite = np.where(np.isposinf(logs), -np.inf, logs)
        top = np.max(finite, axis=0)
        safe = np.where(np.isfinite(top), top, 0.0)
        total = np.sum(signs * np.exp(finite - safe), axis=0)
        with np.errstate(divide="ignore"):
            log = np.where(total != 0, np.log(np.abs(total)) + safe, -np.inf)
        return _Signed(np.where(infinite, np.inf, log), np.where(infinite, 1.0, np.sign(total)))


__all__ = [
    "Term",
    "expect",
    "log_fourth_angular_hybrid",
    "log_fourth_central_iid",
    "log_fourth_complex_exponential",
    "log_fourth_exp",
    "log_fourth_gerf",
    "log_fourth_trig",
    "log_fourth_trig_phase",
    "real_feature_moments",
]
