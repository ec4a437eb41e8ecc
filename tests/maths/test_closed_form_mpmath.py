"""Closed forms against an independent mpmath evaluation at hostile points (θ → 0, θ → π, r → 0, r ≥ 10,
near-duplicate and near-antipodal data rows, and the moderate θ where moment sums cancel by 1e-3..1e-8), to 1e-10
in log space.

The references are written here from first principles, not from rfviz: for ω ~ N(0, I_d), ω·u ~ N(0, |u|²) and
E e^{kω·u} = e^{k²|u|²/2}, E cos(kω·u) = e^{−k²|u|²/2}; a feature's moments follow by expanding its powers
([HRF] Lemma 2.2; [CRT] Thm 3.1–3.3 for GERF and OPRF's A*). Each is evaluated at the exact float inputs x, y the
estimator receives (converted to mpf exactly), so the comparison measures rfviz's round-off alone. A point whose
true value is 0 must come back as exactly −inf.
"""

from __future__ import annotations

import itertools
import math
from functools import cache

import mpmath as mp
import numpy as np
import pytest

import rfviz
from rfviz.geometry import embed_pair

TOL = 1e-10
D = 8
M = 16
HOSTILE_RT = [(1.0, 1e-6), (3.0, 2e-8), (1.0, 1e-9), (3.0, 1e-7), (1.0, math.pi - 1e-8), (1.0, 3.14159265),
              (2.0, math.pi), (1e-6, 1.0), (1e-6, 1e-6), (10.0, 0.5), (12.0, 2.0), (10.0, math.pi - 1e-8),
              (1.0, 0.0), (0.7, 1.3), (1.0, 0.02), (1.0, math.pi - 2e-4), (3.0, 3e-3)]
# the last three: moment sums that cancel by 1e-3..1e-8, where a float64 sum keeps only ~8 digits


def _near_rows() -> list[tuple[np.ndarray, np.ndarray]]:
    """Data rows in R^D: near-duplicates (y = x + 1e-7·noise) and near-antipodal (y = −x + 1e-7·noise)."""
    rng = np.random.default_rng(28)
    rows = []
    for scale in (0.3, 1.0, 2.5):
        x = scale * rng.standard_normal(D) / math.sqrt(D)
        noise = rng.standard_normal(D)
        rows += [(x, x + 1e-7 * scale * noise), (x, -x + 1e-7 * scale * noise), (x, x + 1e-4 * noise)]
    return rows


def hostile_pairs() -> list[tuple[str, np.ndarray, np.ndarray]]:
    out = []
    for r, t in HOSTILE_RT:
        x, y = embed_pair(r, t, D)
        out.append((f"r={r:g},θ={t!r}", x, y))
    out += [(f"rows{i}", x, y) for i, (x, y) in enumerate(_near_rows())]
    return out


PAIRS = hostile_pairs()


# ---------------------------------------------------------------- references (mpmath, from first principles)
def _stats(x: np.ndarray, y: np.ndarray) -> dict[str, mp.mpf]:
    xs = [mp.mpf(float(v)) for v in x]
    ys = [mp.mpf(float(v)) for v in y]
    pairs = list(zip(xs, ys, strict=True))
    return {"xx": mp.fsum(a * a for a in xs), "yy": mp.fsum(b * b for b in ys), "xy": mp.fsum(a * b for a, b in pairs),
            "Z": mp.fsum((a + b) ** 2 for a, b in pairs), "W": mp.fsum((a - b) ** 2 for a, b in pairs)}


def _log(v: mp.mpf) -> float:
    return -math.inf if v == 0 else float(mp.log(v))


def _kernel_factor(s: dict, kernel: str) -> mp.mpf:
    """MSE_gauss = e^{−|x|²−|y|²}·MSE_softmax ([HRF] eq. 1)."""
    return mp.mpf(1) if kernel == "softmax" else mp.exp(-s["xx"] - s["yy"])


def ref_trig(s: dict, m: int, kernel: str) -> mp.mpf:
    """cos(ω·(x−y))·e^{(|x|²+|y|²)/2}: Var cos t = (1 + e^{−2W})/2 − e^{−W} = (1 − e^{−W})²/2."""
    w = s["W"]
    var = (1 + mp.exp(-2 * w)) / 2 - mp.exp(-w)
    return mp.exp(s["xx"] + s["yy"]) * var / m * _kernel_factor(s, kernel)


def ref_trig_phase(s: dict, m: int, kernel: str) -> mp.mpf:
    """2cos(ω·x + b)cos(ω·y + b) = cos(ω·(x−y)) + cos(ω·(x+y) + 2b): Var = (1 + e^{−2W})/2 + ½ − e^{−W}."""
    w = s["W"]
    var = (1 + mp.exp(-2 * w)) / 2 + mp.mpf(1) / 2 - mp.exp(-w)
    return mp.exp(s["xx"] + s["yy"]) * var / m * _kernel_factor(s, kernel)


def ref_positive(s: dict, m: int, kernel: str) -> mp.mpf:
    """e^{ω·(x+y) − (|x|²+|y|²)/2}: E f² = e^{2Z − |x|² − |y|²}, K = e^{x·y}."""
    second = mp.exp(2 * s["Z"] - s["xx"] - s["yy"])
    return (second - mp.exp(2 * s["xy"])) / m * _kernel_factor(s, kernel)


def ref_positive_antithetic(s: dict, m: int, kernel: str) -> mp.mpf:
    """e^{−(|x|²+|y|²)/2}·cosh(ω·(x+y)): E cosh² t = (1 + e^{2Z})/2."""
    second = mp.exp(-s["xx"] - s["yy"]) * (1 + mp.exp(2 * s["Z"])) / 2
    return (second - mp.exp(2 * s["xy"])) / m * _kernel_factor(s, kernel)


def ref_gerf(s: dict, m: int, kernel: str, A: mp.mpf) -> mp.mpf:
    """GERF with s = +1, real A < 1/8 ([CRT] Thm 3.1), softmax form: Y = (1−4A)^{d/2}
    e^{2A|ω|² + √(1−4A)ω·(x+y) − (|x|² + |y|²)/2} (E Y = e^{x·y}); E e^{4A|ω|² + 2b ω·z} = (1−8A)^{−d/2}
    e^{2b²|z|²/(1−8A)}."""
    A = mp.mpf(A)
    second = (1 - 4 * A) ** D * (1 - 8 * A) ** (-mp.mpf(D) / 2) \
        * mp.exp(2 * (1 - 4 * A) * s["Z"] / (1 - 8 * A) - s["xx"] - s["yy"])
    return (second - mp.exp(2 * s["xy"])) / m * _kernel_factor(s, kernel)


def ref_oprf(s: dict, m: int, kernel: str) -> mp.mpf:
    """OPRF = GERF at A* = (1 − 2Z/d − √((2Z/d + 1)² + 8Z/d))/16 ([CRT] Thm 3.3)."""
    t = 2 * s["Z"] / D
    return ref_gerf(s, m, kernel, (1 - t - mp.sqrt((t + 1) ** 2 + 4 * t)) / 16)


def ref_gerf_general(s: dict, m: int, kernel: str, A: complex, sign: int) -> mp.mpf:
    """GERF with complex A and s = ±1, estimator Re Y ([CRT] Thm 3.1–3.2): Y = D² e^{2A|ω|² + Bω·u − (s+1)(|x|²+|y|²)/2}
    (Gaussian form), u = x + s·y, Z_s = |u|², B² = s(1−4A), D⁴ = (1−4A)^d; E(Re Y)² = ½(E|Y|² + Re E Y²) with
    E e^{a|ω|² + b·ω} = (1−2a)^{−d/2} e^{b·b/(2(1−2a))} (b·b bilinear for E Y², |b|² with Re B for E|Y|²).
    Relative to K² = e^{2x·y−|x|²−|y|²} the exponents reduce to multiples of Z_s (−(s+1)S + … = −s Z_s)."""
    A = mp.mpc(A.real, A.imag)
    zs = s["Z"] if sign == 1 else s["W"]
    one4, one8, one8r = 1 - 4 * A, 1 - 8 * A, 1 - 8 * mp.re(A)
    sq = one4**D * one8 ** (-D // 2) * mp.exp((2 * sign * one4 / one8 - sign) * zs)  # E Y²/K² (d even)
    re_b2 = (abs(one4) + sign * mp.re(one4)) / 2  # (Re B)², B = √(s(1−4A)) principal
    mod = abs(one4) ** D * one8r ** (-D // 2) * mp.exp((2 * re_b2 / one8r - sign) * zs)  # E|Y|²/K²
    k2 = mp.exp(2 * s["xy"]) * _kernel_factor(s, kernel)
    return k2 * ((mod + mp.re(sq)) / 2 - 1) / m


@cache
def _pair_mean(x: mp.mpf, sigma: int, c: float) -> mp.mpf:
    """E over a coupled pair (ω1, ω2) (iid χ_d norms, directions at cosine c, uniformly rotated) of
    e^{(ω1+ω2)·z} (σ = +1, x = |z|²) or cos((ω1+ω2)·Δ) (σ = −1, x = |Δ|²). For |ω1+ω2|² = n², a uniform
    direction gives 0F1(; d/2; σn²x/4); in polar coordinates ρ1 = R cos φ, ρ2 = R sin φ, R² ~ Gamma(d, 2)
    turns the R-average into 1F1(d; d/2; σ(1 + c·sin 2φ)x/2), and φ has density ∝ (sin φ cos φ)^{d−1}."""
    if c == 0:
        return mp.hyp1f1(D, mp.mpf(D) / 2, sigma * x / 2)
    cc = mp.mpf(c)
    num = mp.quad(lambda f: (mp.sin(f) * mp.cos(f)) ** (D - 1) * mp.hyp1f1(D, mp.mpf(D) / 2,
                                                                          sigma * (1 + cc * mp.sin(2 * f)) * x / 2),
                  [0, mp.pi / 4, mp.pi / 2])
    return num / (mp.beta(mp.mpf(D) / 2, mp.mpf(D) / 2) / 2)


def coupled_rel_cov(kind: str, s: dict, c: float) -> mp.mpf:
    """Cov(feature_i, feature_j)/K² of two coupled features at pair cosine c ([SimRF] §3; [CRT] §3.9), for the
    positive family (every real-A GERF with s = +1: the A-dependence cancels, R² ~ Gamma(d, 2/(1−4A)) and
    B² = 1−4A), its antithetic form (cosh: ½ of the + and − pairs) and trig (cos(ω·Δ): ½(cos of the sum + cos of
    the difference))."""
    if kind == "trig":
        return mp.exp(s["W"]) * (_pair_mean(s["W"], -1, c) + _pair_mean(s["W"], -1, -c)) / 2 - 1
    if kind == "positive_antithetic":
        return mp.exp(-s["Z"]) * (_pair_mean(s["Z"], 1, c) + _pair_mean(s["Z"], 1, -c)) / 2 - 1
    return mp.exp(-s["Z"]) * _pair_mean(s["Z"], 1, c) - 1


def ref_coupled(kind: str, iid, coupling: str, kernel: str):
    """MSE_coupled = MSE_iid + (P/m²)·K²·relCov, P = Σ_b m_b(m_b − 1) ordered pairs within blocks of d."""
    c = 0.0 if coupling == "orthogonal" else -1.0 / (D - 1)
    blocks, rem = divmod(M, D)
    pairs = blocks * D * (D - 1) + rem * (rem - 1)

    def ref(s: dict) -> mp.mpf:
        k2 = (mp.exp(2 * s["xy"]) if kind != "trig" else mp.exp(s["xx"] + s["yy"] - s["W"])) * _kernel_factor(s, kernel)
        return iid(s) + mp.mpf(pairs) / M**2 * k2 * coupled_rel_cov(kind, s, c)
    return ref


def _coords(x: np.ndarray, y: np.ndarray) -> tuple[list[mp.mpf], list[mp.mpf]]:
    return [mp.mpf(float(v)) for v in x], [mp.mpf(float(v)) for v in y]


def ref_poisson(x: np.ndarray, y: np.ndarray, m: int, kernel: str, lam: float, shift: float) -> mp.mpf:
    """PoisRF ([CRT] Thm 3.4): Y = e^{λd − S_c/2} Π_l (x̃_l ỹ_l/λ)^{ω_l}, ω_l ~ Poisson(λ), x̃ = x − c:
    E Y = e^{x̃·ỹ − S_c/2} = e^{−|x−y|²/2}, E Y² = e^{λd + Σ x̃_l²ỹ_l²/λ − S_c}."""
    xs, ys = _coords(x, y)
    c, lam = mp.mpf(shift), mp.mpf(lam)
    xt, yt = [a - c for a in xs], [b - c for b in ys]
    second = mp.exp(lam * D + mp.fsum((a * b) ** 2 for a, b in zip(xt, yt, strict=True)) / lam
                    - mp.fsum(a * a for a in xt) - mp.fsum(b * b for b in yt))
    return _dirf_mse(xs, ys, second, m, kernel)


def ref_geometric(x: np.ndarray, y: np.ndarray, m: int, kernel: str, prob: float, shift: float) -> mp.mpf:
    """GeomRF ([CRT] Thm 3.5): ω_l ~ Geometric(p) on {0, 1, …}, Y = e^{−S_c/2} Π (x̃_lỹ_l)^{ω_l}/(ω_l!·P(ω_l)):
    E Y² = e^{−S_c} Π_l Σ_k (x̃_lỹ_l)^{2k}/(k!² p(1−p)^k) = e^{−S_c} p^{−d} Π I0(2|x̃_lỹ_l|/√(1−p))."""
    xs, ys = _coords(x, y)
    c, p = mp.mpf(shift), mp.mpf(prob)
    xt, yt = [a - c for a in xs], [b - c for b in ys]
    prod = mp.fprod(mp.besseli(0, 2 * abs(a * b) / mp.sqrt(1 - p)) for a, b in zip(xt, yt, strict=True))
    second = mp.exp(-mp.fsum(a * a for a in xt) - mp.fsum(b * b for b in yt)) * p ** (-D) * prod
    return _dirf_mse(xs, ys, second, m, kernel)


def _dirf_mse(xs: list, ys: list, second: mp.mpf, m: int, kernel: str) -> mp.mpf:
    """(E Y² − K_gauss²)/m, times e^{|x|²+|y|²} for the softmax kernel (unshifted x, y)."""
    sq = mp.fsum(a * a for a in xs) + mp.fsum(b * b for b in ys)
    k2 = mp.exp(-mp.fsum((a - b) ** 2 for a, b in zip(xs, ys, strict=True)))
    return (second - k2) / m * (mp.exp(sq) if kernel == "softmax" else 1)


def ref_poly_sketch(x: np.ndarray, y: np.ndarray, m: int, p: int, q: float, basis: str, variance: str) -> mp.mpf:
    """[DP] Thm 2: K̂ = mean over m features of Π_{i≤p}(z_i·x)·conj(z_i·y), z_i's entries a + ib with a, b
    independent, E a² = q, E b² = 1 − q (Rademacher or Gaussian). Pairing the four indices of one factor:
    E|g|² = μ4·S + (|x|²|y|² − S) + (1 + ρ²)(t² − S) and E g² = μ4·S + ρ²(|x|²|y|² − S) + 2(t² − S), with
    ρ = E z² = 2q − 1, μ4 = E|z|⁴, S = Σ x_k²y_k², t = x·y. complex: Var = ((E|g|²)^p − t^{2p})/m;
    real_part: (½((E|g|²)^p + (E g²)^p) − t^{2p})/m (E(Re f)² = ½(E|f|² + Re E f²))."""
    xs, ys = _coords(x, y)
    q = mp.mpf(q)
    rho = 2 * q - 1
    mu4 = 1 if basis == "rademacher" else 3 * q**2 + 2 * q * (1 - q) + 3 * (1 - q) ** 2
    S = mp.fsum((a * b) ** 2 for a, b in zip(xs, ys, strict=True))
    t = mp.fsum(a * b for a, b in zip(xs, ys, strict=True))
    nn = mp.fsum(a * a for a in xs) * mp.fsum(b * b for b in ys)
    mod = mu4 * S + (nn - S) + (1 + rho**2) * (t * t - S)
    if variance == "complex":
        return (mod**p - t ** (2 * p)) / m
    sq = mu4 * S + rho**2 * (nn - S) + 2 * (t * t - S)
    return ((mod**p + sq**p) / 2 - t ** (2 * p)) / m


def ref_complex_exponential(x: np.ndarray, y: np.ndarray, m: int, kernel: str, diag: list[complex],
                            antithetic: bool, variance: str) -> mp.mpf:
    """CE estimator ([HRF] §2.3): X = e^{−((Ax)² + (By)²)/2 + ω·w}, B = A^{−T}, w = Ax + By (bilinear squares),
    so with SM = e^{x·y}: E X = SM, E|X|² = SM²e^{|w|²} (2|Re w|² − Re w² = |w|²), E X² = SM²e^{w²}; antithetic
    (cosh ω·w): E|X|² = SM² cosh|w|², E X² = SM² cosh w². complex: (E|X|² − SM²)/m; real_part:
    (½(E|X|² + Re E X²) − SM²)/m."""
    xs, ys = _coords(x, y)
    a = [mp.mpc(c.real, c.imag) for c in diag] + [mp.mpc(1)] * (len(xs) - len(diag))
    w = [ak * xk + yk / ak for ak, xk, yk in zip(a, xs, ys, strict=True)]
    mod, sq = mp.fsum(abs(v) ** 2 for v in w), mp.fsum(v * v for v in w)
    f = mp.cosh if antithetic else mp.exp
    sm2 = mp.exp(2 * mp.fsum(u * v for u, v in zip(xs, ys, strict=True)))
    rel = f(mod) - 1 if variance == "complex" else (f(mod) + mp.re(f(sq))) / 2 - 1
    gauss = mp.exp(-mp.fsum(u * u for u in xs) - mp.fsum(v * v for v in ys))
    return sm2 * rel / m * (gauss if kernel == "gaussian" else 1)


def ref_angular_hybrid(x: np.ndarray, y: np.ndarray, m: int, kernel: str, n: int, shared: bool) -> mp.mpf:
    """λ̂·SM_++ + (1 − λ̂)·SM_trig with λ̂ ~ Binomial(n, θ/π)/n independent of ω ([HRF] eq. 12, Thm 3.1):
    E[λ̂²]MSE_++ + E[(1 − λ̂)²]MSE_trig + 2E[λ̂(1 − λ̂)]·Cov/m, where with shared ω the per-feature covariance is
    Re E e^{ω·(z + iΔ)} − SM² = SM²(cos(|x|² − |y|²) − 1) (z = x + y, Δ = x − y); θ = 2 atan2(|x̂ − ŷ|, |x̂ + ŷ|)."""
    xs, ys = _coords(x, y)
    s = _stats(x, y)
    nx, ny = mp.sqrt(s["xx"]), mp.sqrt(s["yy"])
    minus = mp.sqrt(mp.fsum((a / nx - b / ny) ** 2 for a, b in zip(xs, ys, strict=True)))
    plus = mp.sqrt(mp.fsum((a / nx + b / ny) ** 2 for a, b in zip(xs, ys, strict=True)))
    p = 2 * mp.atan2(minus, plus) / mp.pi
    second = p**2 + p * (1 - p) / n
    cross = p - second
    out = second * ref_positive_antithetic(s, m, kernel) + (1 - 2 * p + second) * ref_trig(s, m, kernel)
    if shared:
        out += 2 * cross * mp.exp(2 * s["xy"]) * (mp.cos(s["xx"] - s["yy"]) - 1) / m * _kernel_factor(s, kernel)
    return out


def ref_gaussian_hybrid(x: np.ndarray, y: np.ndarray, m: int, kernel: str, n: int, sigma: float, r_norm: float,
                        shared: bool, lambda_rf: str) -> mp.mpf:
    """λ̂·SM_++ + (1 − λ̂)·SM_trig with the normalised Gaussian λ = (1 − e^{−σ²|x−y|²/2})/ρ, ρ = 1 − e^{−2σ²r²}
    ([HRF] App. F), estimated as λ̂ = (1 − Ĝ)/ρ from n RFs Ĝ of e^{−σ²|x−y|²/2} at (σx, σy), independent of ω:
    E λ̂ = λ, Var λ̂ = Var Ĝ/ρ² with Var Ĝ = (1 − e^{−σ²D})²/(2n) (trig) or e^{σ²(Z − D)}(1 − e^{−σ²Z})²/(2n)
    (antithetic positive; D = |x − y|², Z = |x + y|²); then as ``ref_angular_hybrid``. r = r_norm, or |x| = |y|."""
    st = _stats(x, y)
    s2 = mp.mpf(sigma) ** 2
    r2 = mp.mpf(r_norm) ** 2 if r_norm > 0 else (st["xx"] + st["yy"]) / 2
    rho = -mp.expm1(-2 * s2 * r2)
    lam = -mp.expm1(-s2 * st["W"] / 2) / rho
    if lambda_rf == "trig":
        var = mp.expm1(-s2 * st["W"]) ** 2 / (2 * n) / rho**2
    else:
        var = mp.exp(s2 * (st["Z"] - st["W"])) * mp.expm1(-s2 * st["Z"]) ** 2 / (2 * n) / rho**2
    rest = (mp.exp(-s2 * st["W"] / 2) - mp.exp(-2 * s2 * r2)) / rho  # 1 − λ, not 1 − (1 − 1e-57) at 60 digits
    second = lam**2 + var
    out = second * ref_positive_antithetic(st, m, kernel) + (rest**2 + var) * ref_trig(st, m, kernel)
    if shared:
        out += 2 * (lam - second) * mp.exp(2 * st["xy"]) * (mp.cos(st["xx"] - st["yy"]) - 1) / m \
            * _kernel_factor(st, kernel)
    return out


def _poly_moments(x: np.ndarray, y: np.ndarray, q: float, basis: str) -> tuple[mp.mpf, mp.mpf, mp.mpf]:
    """(t = x·y, E|g|², E g²) of one sketch factor g = (z·x)·conj(z·y) (see ``ref_poly_sketch``)."""
    xs, ys = _coords(x, y)
    q = mp.mpf(q)
    rho = 2 * q - 1
    mu4 = 1 if basis == "rademacher" else 3 * q**2 + 2 * q * (1 - q) + 3 * (1 - q) ** 2
    S = mp.fsum((a * b) ** 2 for a, b in zip(xs, ys, strict=True))
    t = mp.fsum(a * b for a, b in zip(xs, ys, strict=True))
    nn = mp.fsum(a * a for a in xs) * mp.fsum(b * b for b in ys)
    return t, mu4 * S + (nn - S) + (1 + rho**2) * (t * t - S), mu4 * S + rho**2 * (nn - S) + 2 * (t * t - S)


def ref_tensor_srht(x: np.ndarray, y: np.ndarray, m: int, p: int, q: float, variance: str) -> mp.mpf:
    """TensorSRHT ([DP] Thm 10 eq. 33, Thm 5 eq. 28 at q = 1; an independent permutation per block and degree), d the
    padded dimension (8 here): Var_D = V/D + c(D, d)/D²·Cov with V = M^p − t^{2p} (μ4 = 1), V1 = |x|²|y|² − S +
    ρ²(t² − S), Cov = (t² − V1/(d − 1))^p − t^{2p}, c = ⌊D/d⌋d(d − 1) + (D mod d)(D mod d − 1); real part:
    ½(Var_D + (M'^p − t^{2p})/D + c/D²·(C'^p − t^{2p})), C' = t² − [(t² − S) + ρ²(|x|²|y|² − S)]/(d − 1)."""
    t, mod, sq = _poly_moments(x, y, q, "rademacher")
    xs, ys = _coords(x, y)
    rho2 = (2 * mp.mpf(q) - 1) ** 2
    S = mp.fsum((a * b) ** 2 for a, b in zip(xs, ys, strict=True))
    nn = mp.fsum(a * a for a in xs) * mp.fsum(b * b for b in ys)
    d = D
    pairs = (m // d) * d * (d - 1) + (m % d) * (m % d - 1)
    v1 = nn - S + rho2 * (t * t - S)
    cov = (t * t - v1 / (d - 1)) ** p - t ** (2 * p)
    var = (mod**p - t ** (2 * p)) / m + mp.mpf(pairs) / m**2 * cov
    if variance == "complex":
        return _exact_zero(var, nn**p)
    c_re = t * t - ((t * t - S) + rho2 * (nn - S)) / (d - 1)
    pv = (sq**p - t ** (2 * p)) / m + mp.mpf(pairs) / m**2 * (c_re**p - t ** (2 * p))
    return _exact_zero((var + pv) / 2, nn**p)


def _exact_zero(value: mp.mpf, scale: mp.mpf) -> mp.mpf:
    """0 for a value at the working precision's round-off of its terms (an exact case, e.g. TensorSRHT at p = 1 and
    D ∈ dℕ: ±1e-60 instead of 0)."""
    return mp.mpf(0) if abs(value) <= scale * mp.mpf(10) ** (20 - mp.mp.dps) else value


def ref_tensor_sketch(x: np.ndarray, y: np.ndarray, m: int, p: int) -> mp.mpf:
    """TensorSketch (Pham & Pagh; p CountSketches combined by FFT): by Parseval k̂ = (1/m)Σ_ω Π_i F_i(ω)conj(G_i(ω)),
    and per degree the four sign-paired index patterns give T(ω, ω') = t² + [ω = ω'](N − S) + [ω = −ω'](t² − S)
    (N = |x|²|y|², S = Σ x_j²y_j²); counting (ω, ω') pairs with c0 = 1 + [m even]:
    m²Var = c0((t² + g1)^p − t^{2p}) + (m − c0)((t² + g2)^p − t^{2p}) + (m − c0)((t² + g3)^p − t^{2p}),
    g1 = N + t² − 2S, g2 = N − S, g3 = t² − S."""
    xs, ys = _coords(x, y)
    S = mp.fsum((a * b) ** 2 for a, b in zip(xs, ys, strict=True))
    t2 = mp.fsum(a * b for a, b in zip(xs, ys, strict=True)) ** 2
    nn = mp.fsum(a * a for a in xs) * mp.fsum(b * b for b in ys)
    c0 = 1 + (m % 2 == 0)
    parts = [(c0, nn + t2 - 2 * S), (m - c0, nn - S), (m - c0, t2 - S)]
    return _exact_zero(mp.fsum(k * ((t2 + g) ** p - t2**p) for k, g in parts) / m**2, nn**p)


def ref_maclaurin(x: np.ndarray, y: np.ndarray, est, params: dict) -> mp.mpf:
    """Maclaurin features ([DP] §4): k(t) = Σ a_n t^n, a_0 exact, degrees 1..p sketched by the polynomial sketch.
    optimized: Σ_n a_n²·Var_n(D_n) + (Σ_{n>p} a_n t^n)² with the allocation D_n of Algorithm 3 (a parameter here,
    read from the estimator's plan like OPRF's A*); random (Kar–Karnick): one degree N ~ μ per feature,
    Y = (a_N/μ_N)Π_{i≤N} g_i, Var = (Σ a_n²/μ_n E|g|^{2n} − (Σ a_n t^n)²)/m (real part: ½(E|g|^{2n} + E g^{2n}))
    plus the same truncation bias². a_n = 1/n! (exponential; Gaussian: × e^{−(|x|²+|y|²)/2}), C(P, n)ν^{P−n}
    (polynomial (x·y + ν)^P)."""
    t, mod, sq = _poly_moments(x, y, params["q"], params["basis"])
    kernel, real = params["kernel"], params["variance"] == "real_part"
    if kernel == "polynomial":
        big_p, nu = params["kernel_degree"], mp.mpf(params["nu"])
        coef = {n: mp.binomial(big_p, n) * nu ** (big_p - n) for n in range(big_p + 1)}
        full = (t + nu) ** big_p
    else:
        coef = {n: 1 / mp.factorial(n) for n in range(200)}
        full = mp.exp(t)
    top = min(params["p"], params["kernel_degree"]) if kernel == "polynomial" else params["p"]

    def second(n: int) -> mp.mpf:  # E|Π g|² or E(Re Π g)²
        return (mod**n + sq**n) / 2 if real else mod**n
    if params["method"] == "optimized":
        alloc = est.plan(D).alloc
        var = mp.fsum(coef[n] ** 2 * (second(n) - t ** (2 * n)) / dn for n, dn in enumerate(alloc, start=1))
        p_used = len(alloc)
    else:
        w = [mp.mpf(params["c"]) ** -(n + 1) for n in range(1, top + 1)]
        mu = [v / mp.fsum(w) for v in w]
        mean = mp.fsum(coef[n] * t**n for n in range(1, top + 1))
        var = (mp.fsum(coef[n] ** 2 / mu[n - 1] * second(n) for n in range(1, top + 1)) - mean**2) / params["m"]
        p_used = top
    bias = full - mp.fsum(coef[n] * t**n for n in range(p_used + 1))
    out = var + bias**2
    if kernel == "gaussian":
        xs, ys = _coords(x, y)
        out *= mp.exp(-mp.fsum(a * a for a in xs) - mp.fsum(b * b for b in ys))
    return out


def _coordinate_cases() -> list[tuple[str, dict, object]]:
    """Estimators that depend on coordinates: the reference takes the pair itself."""
    out = []
    for kernel in ("softmax", "gaussian"):
        for lam, shift in ((0.5, 0.0), (2.0, -1.5)):
            out.append(("poisson", {"kernel": kernel, "lam": lam, "shift": shift},
                        lambda x, y, k=kernel, a=lam, c=shift: ref_poisson(x, y, M, k, a, c)))
        for prob, shift in ((0.3, 0.0), (0.7, -1.5)):
            out.append(("geometric", {"kernel": kernel, "prob": prob, "shift": shift},
                        lambda x, y, k=kernel, a=prob, c=shift: ref_geometric(x, y, M, k, a, c)))
        for a, antithetic, variance in ((1j, False, "real_part"), (1.0, True, "complex"), (1.0, False, "real_part"),
                                        (0.7 + 0.4j, True, "real_part"), (0.3 - 1.1j, False, "complex")):
            out.append(("complex_exponential", {"kernel": kernel, "A": a, "antithetic": antithetic,
                                                "variance": variance},
                        lambda x, y, k=kernel, a=a, t=antithetic, v=variance:
                        ref_complex_exponential(x, y, M, k, [a] * D, t, v)))
        diag = (1 + 0.5j, 0.8 + 0j)
        for antithetic, variance in ((False, "real_part"), (True, "complex")):
            out.append(("complex_exponential_diag", {"kernel": kernel, "A_diag": diag, "antithetic": antithetic,
                                                     "variance": variance},
                        lambda x, y, k=kernel, t=antithetic, v=variance, g=diag:
                        ref_complex_exponential(x, y, M, k, list(g), t, v)))
        for n, sigma, r_norm, shared, lam_rf in ((3, 1.0, 2.0, True, "trig"), (5, 0.3, 1.5, False, "positive"),
                                                  (4, 0.5, 0.8, True, "positive")):
            out.append(("hybrid_gaussian", {"kernel": kernel, "n": n, "sigma": sigma, "r_norm": r_norm,
                                            "shared": shared, "lambda_rf": lam_rf},
                        lambda x, y, k=kernel, n=n, g=sigma, rn=r_norm, sh=shared, lr=lam_rf:
                        ref_gaussian_hybrid(x, y, M, k, n, g, rn, sh, lr)))
        for n, shared in ((1, False), (7, True), (7, False)):
            out.append(("hybrid_angular", {"kernel": kernel, "n": n, "shared": shared},
                        lambda x, y, k=kernel, n=n, sh=shared: ref_angular_hybrid(x, y, M, k, n, sh)))
    for p, q, variance, m in ((1, 1.0, "complex", 16), (3, 0.5, "complex", 16), (2, 1.0, "real_part", 12),
                              (3, 0.5, "real_part", 5), (4, 0.5, "complex", 21)):
        out.append(("tensor_srht", {"p": p, "q": q, "variance": variance, "m": m},
                    lambda x, y, p=p, q=q, v=variance, m=m: ref_tensor_srht(x, y, m, p, q, v)))
    for p, m in ((1, 16), (2, 7), (3, 16), (4, 9)):
        out.append(("tensor_sketch", {"p": p, "m": m}, lambda x, y, p=p, m=m: ref_tensor_sketch(x, y, m, p)))
    for p, q, basis, variance in ((1, 1.0, "rademacher", "complex"), (3, 1.0, "rademacher", "complex"),
                                  (2, 0.5, "gaussian", "complex"), (3, 0.3, "rademacher", "real_part"),
                                  (2, 1.0, "gaussian", "real_part"), (4, 0.5, "rademacher", "complex")):
        out.append(("poly_sketch", {"p": p, "q": q, "basis": basis, "variance": variance},
                    lambda x, y, p=p, q=q, b=basis, v=variance: ref_poly_sketch(x, y, M, p, q, b, v)))
    return out


COORDINATE = _coordinate_cases()


def _central4(moment) -> tuple[mp.mpf, mp.mpf]:
    """(σ², μ4) of a feature from its raw moments E f^k (k = 1..4)."""
    mu = moment(1)
    var = moment(2) - mu**2
    return var, moment(4) - 4 * mu * moment(3) + 6 * mu**2 * moment(2) - 3 * mu**4


def _fourth_of_mean(var: mp.mpf, mu4: mp.mpf, m: int) -> mp.mpf:
    """E(mean of m iid − μ)⁴ = (μ4 + 3(m − 1)σ⁴)/m³."""
    return (mu4 + 3 * (m - 1) * var**2) / m**3


def ref_fourth(name: str, s: dict, m: int) -> mp.mpf:
    """E(K̂ − K)⁴ (softmax) of trig, trig_phase, positive and positive_antithetic: cos^k, e^{kt}, cosh^k t expanded into
    E cos(jt) = e^{−j²W/2}, E e^{jt} = e^{j²Z/2}."""
    scale = mp.exp((s["xx"] + s["yy"]) / 2)
    if name in ("trig", "trig_phase"):
        c = {0: 1, 1: mp.exp(-s["W"] / 2), 2: mp.exp(-2 * s["W"]), 3: mp.exp(-9 * s["W"] / 2), 4: mp.exp(-8 * s["W"])}
        raw = {1: c[1], 2: (1 + c[2]) / 2, 3: (3 * c[1] + c[3]) / 4, 4: (3 + 4 * c[2] + c[4]) / 8}
    elif name == "positive":
        raw = {k: mp.exp(k * k * s["Z"] / 2) for k in range(1, 5)}
        scale = 1 / scale
    else:  # cosh^k t = 2^{-k} Σ_j C(k, j) e^{(k−2j)t}
        raw = {k: mp.fsum(mp.binomial(k, j) * mp.exp((k - 2 * j) ** 2 * s["Z"] / 2) for j in range(k + 1)) / 2**k
               for k in range(1, 5)}
        scale = 1 / scale
    var, mu4 = _central4(lambda k: raw[k])
    if name == "trig_phase":  # cos(ω·Δ) + U, U = cos(uniform phase) ⊥ ω: E U² = ½, E U⁴ = 3/8, odd moments 0
        var, mu4 = var + mp.mpf(1) / 2, mu4 + 3 * var + mp.mpf(3) / 8
    return scale**4 * _fourth_of_mean(var, mu4, m)


def _central_moments(name: str, s: dict) -> tuple[mp.mpf, mp.mpf, mp.mpf]:
    """(μ2, μ3, μ4) of one softmax feature of trig (e^{S/2}cos ω·Δ) or positive_antithetic (e^{−S/2}cosh ω·z)."""
    if name == "trig":
        scale = mp.exp((s["xx"] + s["yy"]) / 2)
        c = {k: mp.exp(-k * k * s["W"] / 2) for k in range(5)}
        raw = {1: c[1], 2: (1 + c[2]) / 2, 3: (3 * c[1] + c[3]) / 4, 4: (3 + 4 * c[2] + c[4]) / 8}
    else:
        scale = mp.exp(-(s["xx"] + s["yy"]) / 2)
        raw = {k: mp.fsum(mp.binomial(k, j) * mp.exp((k - 2 * j) ** 2 * s["Z"] / 2) for j in range(k + 1)) / 2**k
               for k in range(1, 5)}
    mu = raw[1]
    mu3 = raw[3] - 3 * mu * raw[2] + 2 * mu**3
    var, mu4 = _central4(lambda k: raw[k])
    return var * scale**2, mu3 * scale**3, mu4 * scale**4


def ref_fourth_angular_hybrid(s: dict, x: np.ndarray, y: np.ndarray, m: int, n: int) -> mp.mpf:
    """E(K̂ − K)⁴ of λ̂a + (1 − λ̂)b ([HRF] eq. 12) for |x| = |y| (z ⊥ Δ: the ++ error a and the trig error b are
    independent even with shared ω, and λ̂ ~ Binomial(n, θ/π)/n is independent of both):
    Σ_j C(4, j)E[λ̂^j(1 − λ̂)^{4−j}]E[a^j]E[b^{4−j}], means of m iid: E a² = μ2/m, E a³ = μ3/m², E a⁴ =
    (μ4 + 3(m − 1)μ2²)/m³."""
    xs, ys = _coords(x, y)
    nx, ny = mp.sqrt(s["xx"]), mp.sqrt(s["yy"])
    minus = mp.sqrt(mp.fsum((a / nx - b / ny) ** 2 for a, b in zip(xs, ys, strict=True)))
    plus = mp.sqrt(mp.fsum((a / nx + b / ny) ** 2 for a, b in zip(xs, ys, strict=True)))
    p, q = 2 * mp.atan2(minus, plus) / mp.pi, 2 * mp.atan2(plus, minus) / mp.pi
    weights = [mp.fsum(mp.binomial(n, k) * p**k * q ** (n - k) * (mp.mpf(k) / n) ** j * (1 - mp.mpf(k) / n) ** (4 - j)
                       for k in range(n + 1)) for j in range(5)]

    def mean_moments(name: str) -> dict[int, mp.mpf]:
        v, m3, m4 = _central_moments(name, s)
        return {0: mp.mpf(1), 1: mp.mpf(0), 2: v / m, 3: m3 / m**2, 4: (m4 + 3 * (m - 1) * v**2) / m**3}
    a, b = mean_moments("positive_antithetic"), mean_moments("trig")
    return mp.fsum(mp.binomial(4, j) * weights[j] * a[j] * b[4 - j] for j in range(5))


# ------------------------------------------------- fourth moments of GERF, OPRF, CE and the angular hybrid anywhere
# A feature is a list of terms (c, α, b) meaning c·e^{α|ω|² + ω·b}, ω ~ N(0, I_n), b ∈ ℂ^n (n = len b). A product of
# terms is one term (c's multiply, α's and b's add), and E e^{α|ω|² + ω·b} = (1 − 2α)^{−n/2}·e^{b·b/(2(1 − 2α))}
# (b·b bilinear) where Re(1 − 2α) > 0: the Gaussian moment generating function, continued analytically in α and b.
# Where Re(1 − 2α) ≤ 0 the integrand grows like e^{Re α|ω|²} against the density's e^{−|ω|²/2}: the integral
# diverges. n is even here (D, or 2D for two independent ω), so the power needs no branch.
def _term_mean(c: mp.mpc, alpha: mp.mpc, b: list) -> mp.mpc:
    one = 1 - 2 * alpha
    if mp.re(one) <= 0:
        return mp.inf
    return c * one ** (-(len(b) // 2)) * mp.exp(mp.fsum(v * v for v in b) / (2 * one))


def _expect_product(factors: list[list[tuple]]) -> mp.mpc:
    """E Π_f (Σ of f's terms), expanded term by term; +inf where a product term's integral diverges (for the
    features below only the terms of degree 4 in Y can, all together: E(Re Y)⁴ = ∞ with them, since (Re Y)⁴ ≥ 0 and
    cos⁴ of Y's phase does not average out on the large shells where |Y|⁴ outgrows the density)."""
    n = len(factors[0][0][2])
    parts = []
    for combo in itertools.product(*factors):
        c = mp.fprod(t[0] for t in combo)
        if c == 0:
            continue
        value = _term_mean(c, mp.fsum(t[1] for t in combo), [mp.fsum(t[2][k] for t in combo) for k in range(n)])
        if value == mp.inf:
            return mp.inf
        parts.append(value)
    return mp.fsum(parts)


def _conj(feature: list[tuple]) -> list[tuple]:
    return [(mp.conj(c), mp.conj(a), [mp.conj(v) for v in b]) for c, a, b in feature]


def _real_part(feature: list[tuple]) -> list[tuple]:
    """Re f = (f + f̄)/2 (ω real)."""
    return [(c / 2, a, b) for c, a, b in feature + _conj(feature)]


def _minus_one(feature: list[tuple]) -> list[tuple]:
    """f − 1: a relative feature's error (E f = 1: every estimator here is unbiased)."""
    return [*feature, (mp.mpf(-1), mp.mpf(0), [mp.mpf(0)] * len(feature[0][2]))]


def _unbiased(feature: list[tuple]) -> None:
    """The reference's own check: a relative feature has mean 1 (to the working precision)."""
    assert abs(_expect_product([feature]) - 1) < mp.mpf(10) ** (10 - mp.mp.dps)


def _real_fourth(feature: list[tuple], m: int) -> mp.mpf:
    """E(R̄ − 1)⁴ of the mean of m iid copies of a real relative feature R (``_fourth_of_mean``)."""
    _unbiased(feature)
    xi = _minus_one(feature)
    mu4 = _expect_product([xi] * 4)
    return mp.inf if mu4 == mp.inf else _fourth_of_mean(mp.re(_expect_product([xi] * 2)), mp.re(mu4), m)


def _fourth_of_complex_mean(feature: list[tuple], m: int) -> mp.mpf:
    """E|V̄ − 1|⁴ of the mean of m iid complex relative features V, ξ = V − 1: expanding |Σξ_i|⁴ = Σ ξ_iξ_jξ̄_kξ̄_l,
    only i = j = k = l (m terms, E|ξ|⁴) and the three pairings of two distinct indices (m(m − 1) terms each:
    |Eξ²|², (E|ξ|²)², (E|ξ|²)²) survive, so m⁴·E|V̄ − 1|⁴ = m·E|ξ|⁴ + m(m − 1)(2(E|ξ|²)² + |Eξ²|²)."""
    _unbiased(feature)
    xi = _minus_one(feature)
    xb = _conj(xi)
    mu2, nu, mu4 = (_expect_product(f) for f in ([xi, xb], [xi, xi], [xi, xi, xb, xb]))
    return (mp.re(mu4) + (m - 1) * (2 * mp.re(mu2) ** 2 + abs(nu) ** 2)) / m**3


def _k4(s: dict, kernel: str) -> mp.mpf:
    """K⁴: e^{4x·y} (softmax) or e^{−2|x−y|²} = e^{4x·y}·(e^{−|x|²−|y|²})² (Gaussian)."""
    return mp.exp(4 * s["xy"]) * _kernel_factor(s, kernel) ** 2


def gerf_relative_feature(x: np.ndarray, y: np.ndarray, A: complex | mp.mpf, sign: int) -> list[tuple]:
    """Re Y/K of GERF ([CRT] eqs. 4–5), softmax form: f1 = D e^{A|ω|² + Bω·x + C|x|²}, f2 = D e^{A|ω|² + sBω·y + C|y|²},
    B² = s(1 − 4A), D² = (1 − 4A)^{d/2}, C = −(s + 1)/2, times e^{(|x|²+|y|²)/2}: with u = x + s·y, Z_s = |u|²,
    Y/K = D²·e^{2A|ω|² + Bω·u − s·Z_s/2} (as (C + ½)(|x|² + |y|²) − x·y = −s·Z_s/2), and E Y/K = 1 by the MGF.
    The sign of B does not change the law (ω → −ω)."""
    xs, ys = _coords(x, y)
    a = mp.mpc(A)
    u = [p + sign * q for p, q in zip(xs, ys, strict=True)]
    b = mp.sqrt(sign * (1 - 4 * a))
    c = (1 - 4 * a) ** (D // 2) * mp.exp(-sign * mp.fsum(v * v for v in u) / 2)
    return _real_part([(c, 2 * a, [b * v for v in u])])


def ref_fourth_gerf(x: np.ndarray, y: np.ndarray, m: int, kernel: str, A: complex, sign: int) -> mp.mpf:
    """E(K̂ − K)⁴ of GERF, K̂ the mean of m iid Re Y ([CRT] eq. 4); +inf iff Re A ≥ 1/16 (E Y⁴'s integral)."""
    return _k4(_stats(x, y), kernel) * _real_fourth(gerf_relative_feature(x, y, A, sign), m)


def _a_star(z: mp.mpf) -> mp.mpf:
    """OPRF's A* = (1 − 1/ρ*)/8 ([CRT] Thm 3.3) = (1 − t − √((t + 1)² + 4t))/16, t = 2Z/d."""
    t = 2 * mp.mpf(z) / D
    return (1 - t - mp.sqrt((t + 1) ** 2 + 4 * t)) / 16


def ref_fourth_oprf(x: np.ndarray, y: np.ndarray, m: int, kernel: str, z_fixed: float | None) -> mp.mpf:
    """OPRF: GERF (s = +1) at A*(Z) with Z = |x + y|² of the pair, or a fixed Z (A_from=fixed)."""
    s = _stats(x, y)
    a = _a_star(s["Z"] if z_fixed is None else mp.mpf(z_fixed))
    return _k4(s, kernel) * _real_fourth(gerf_relative_feature(x, y, a, 1), m)


def ref_fourth_complex_exponential(x: np.ndarray, y: np.ndarray, m: int, kernel: str, diag: list[complex],
                                   antithetic: bool, variance: str) -> mp.mpf:
    """CE ([HRF] §2.3, see ``ref_complex_exponential``): relative feature V = e^{ω·w − w·w/2} (antithetic:
    e^{−w·w/2}cosh ω·w), w = Ax + A^{−T}y; real_part: E(Re V̄ − 1)⁴; complex: E|V̄ − 1|⁴."""
    xs, ys = _coords(x, y)
    a = [mp.mpc(c.real, c.imag) for c in diag] + [mp.mpc(1)] * (len(xs) - len(diag))
    w = [ak * xk + yk / ak for ak, xk, yk in zip(a, xs, ys, strict=True)]
    c = mp.exp(-mp.fsum(v * v for v in w) / 2)
    feature = [(c / 2, mp.mpf(0), w), (c / 2, mp.mpf(0), [-v for v in w])] if antithetic else [(c, mp.mpf(0), w)]
    rel = _real_fourth(_real_part(feature), m) if variance == "real_part" else _fourth_of_complex_mean(feature, m)
    return _k4(_stats(x, y), kernel) * rel


def _mean_moment(features: list[list[tuple]], m: int) -> mp.mpf:
    """E Π_{k ≤ 4} ξ̄_k for means over m iid draws of (ξ_1, …, ξ_4) (mean zero): only all-equal indices and the three
    pairings of two distinct indices survive: (E Πξ_k + (m − 1)·Σ_pairings E[ξξ]E[ξξ])/m³ (fewer factors: E a² =
    μ2/m, E a³ = μ3/m²)."""
    if len(features) < 2:
        return mp.mpf(1) if not features else mp.mpf(0)
    if len(features) == 2:
        return mp.re(_expect_product(features)) / m
    if len(features) == 3:
        return mp.re(_expect_product(features)) / m**2
    f1, f2, f3, f4 = features
    pairs = mp.fsum(mp.re(_expect_product([p, q])) * mp.re(_expect_product([r, t]))
                    for p, q, r, t in ((f1, f2, f3, f4), (f1, f3, f2, f4), (f1, f4, f2, f3)))
    return (mp.re(_expect_product(features)) + (m - 1) * pairs) / m**3


def ref_fourth_angular_hybrid_anywhere(x: np.ndarray, y: np.ndarray, m: int, kernel: str, n: int,
                                       shared: bool) -> mp.mpf:
    """E(K̂ − K)⁴ of λ̂a + (1 − λ̂)b ([HRF] eq. 12) for any |x|, |y|: a, b the relative errors of FAVOR+
    (e^{−Z/2}cosh ω·z) and trig (e^{W/2}cos ω·Δ), means over the same m draws of ω (shared) or over independent ones
    (here ω ∈ R^{2D}, a reading the first D coordinates and b the last D); λ̂ ~ Binomial(n, θ/π)/n independent of both:
    Σ_j C(4, j)·E[λ̂^j(1 − λ̂)^{4−j}]·E[a^j b^{4−j}]. With shared ω and |x| ≠ |y|, z·Δ = |x|² − |y|² ≠ 0 correlates a
    and b (``ref_fourth_angular_hybrid`` covers |x| = |y| only)."""
    xs, ys = _coords(x, y)
    s = _stats(x, y)
    zero = [mp.mpf(0)] * (0 if shared else D)
    z = [p + q for p, q in zip(xs, ys, strict=True)]
    delta = [p - q for p, q in zip(xs, ys, strict=True)]
    c_pos, c_trig = mp.exp(-s["Z"] / 2) / 2, mp.exp(s["W"] / 2) / 2
    pos = [(c_pos, 0, z + zero), (c_pos, 0, [-v for v in z] + zero)]
    trig = [(c_trig, 0, zero + [1j * v for v in delta]), (c_trig, 0, zero + [-1j * v for v in delta])]
    _unbiased(pos), _unbiased(trig)
    a, b = _minus_one(pos), _minus_one(trig)
    nx, ny = mp.sqrt(s["xx"]), mp.sqrt(s["yy"])
    minus = mp.sqrt(mp.fsum((p / nx - q / ny) ** 2 for p, q in zip(xs, ys, strict=True)))
    plus = mp.sqrt(mp.fsum((p / nx + q / ny) ** 2 for p, q in zip(xs, ys, strict=True)))
    p, q = 2 * mp.atan2(minus, plus) / mp.pi, 2 * mp.atan2(plus, minus) / mp.pi
    out = []
    for j in range(5):
        weight = mp.fsum(mp.binomial(n, k) * p**k * q ** (n - k) * (mp.mpf(k) / n) ** j
                         * (1 - mp.mpf(k) / n) ** (4 - j) for k in range(n + 1))
        out.append(mp.binomial(4, j) * weight * _mean_moment([a] * j + [b] * (4 - j), m))
    return _k4(s, kernel) * mp.fsum(out)


# ------------------------------------------------------------------------------- cases
def ref_derf(s: dict, m: int, kernel: str, variant: str) -> mp.mpf:
    """DERF with its per-pair optimum ([DERF], docs: derivations/dense-exponential): the positive features
    e^{ω·(x+y)}-type weights tilted along one direction (sderf: Z = |x + y|²; aderf and saderf: Z = 2|x||y| + 2x·y,
    the asymmetric pair's value), n = 1 direction (n = d for saderf); the optimum ρ* = 2n/((2Z + n) +
    √((2Z + n)² + 8nZ)) gives R = E[f(x)²f(y)²]/K² with log R = n·log((1 + ρ)/(2√ρ)) + ρZ, and
    MSE = e^{2x·y}(R − 1)/m."""
    n = D if variant == "saderf" else 1
    z = s["Z"] if variant == "sderf" else 2 * mp.sqrt(s["xx"] * s["yy"]) + 2 * s["xy"]
    z = max(z, mp.mpf(0))
    rho = 2 * n / ((2 * z + n) + mp.sqrt((2 * z + n) ** 2 + 8 * n * z))
    log_r = n * mp.log((1 + rho) / (2 * mp.sqrt(rho))) + rho * z
    return mp.exp(2 * s["xy"]) * mp.expm1(log_r) / m * _kernel_factor(s, kernel)


def _cases() -> list[tuple[str, dict, object]]:
    out = []
    for kernel in ("softmax", "gaussian"):
        out += [("trig", {"kernel": kernel}, lambda s, k=kernel: ref_trig(s, M, k)),
                ("trig_phase", {"kernel": kernel}, lambda s, k=kernel: ref_trig_phase(s, M, k)),
                ("positive", {"kernel": kernel}, lambda s, k=kernel: ref_positive(s, M, k)),
                ("positive_antithetic", {"kernel": kernel}, lambda s, k=kernel: ref_positive_antithetic(s, M, k)),
                ("gerf", {"kernel": kernel, "A": -0.1, "s": 1}, lambda s, k=kernel: ref_gerf(s, M, k, "-0.1")),
                ("gerf", {"kernel": kernel, "A": 0.05, "s": 1}, lambda s, k=kernel: ref_gerf(s, M, k, "0.05")),
                ("oprf", {"kernel": kernel}, lambda s, k=kernel: ref_oprf(s, M, k))]
        out += [(v, {"kernel": kernel}, lambda s, k=kernel, v=v: ref_derf(s, M, k, v))
                for v in ("sderf", "aderf", "saderf")]
        for a, sign in ((-0.1 + 0.05j, 1), (0.03 + 0.2j, -1), (0.05, -1), (-0.2 - 0.1j, -1)):
            out.append(("gerf", {"kernel": kernel, "A": a, "s": sign},
                        lambda s, k=kernel, a=a, g=sign: ref_gerf_general(s, M, k, a, g)))
    return out


def _coupled_cases(coupling: str) -> list[tuple[str, dict, object]]:
    out = []
    for kernel in ("softmax", "gaussian"):
        iid = {"trig": lambda s, k=kernel: ref_trig(s, M, k), "positive": lambda s, k=kernel: ref_positive(s, M, k),
               "positive_antithetic": lambda s, k=kernel: ref_positive_antithetic(s, M, k)}
        for name, ref in iid.items():
            out.append((name, {"kernel": kernel, "coupling": coupling}, ref_coupled(name, ref, coupling, kernel)))
        out.append(("gerf", {"kernel": kernel, "coupling": coupling, "A": -0.1, "s": 1},
                    ref_coupled("gerf", lambda s, k=kernel: ref_gerf(s, M, k, "-0.1"), coupling, kernel)))
        out.append(("oprf", {"kernel": kernel, "coupling": coupling},
                    ref_coupled("oprf", lambda s, k=kernel: ref_oprf(s, M, k), coupling, kernel)))
        # real-A GERF with s = −1: the trig pair covariance (the A-dependence cancels as for s = +1)
        out.append(("gerf", {"kernel": kernel, "coupling": coupling, "A": 0.05, "s": -1},
                    ref_coupled("trig", lambda s, k=kernel: ref_gerf_general(s, M, k, 0.05, -1), coupling, kernel)))
    return out


CASES = _cases()
COUPLED = _coupled_cases("orthogonal") + [pytest.param(*case, marks=pytest.mark.slow)  # ~1-8 s each (quadrature)
                                           for case in _coupled_cases("simplex")]


def log_errors(name: str, params: dict, ref, pairs=PAIRS) -> list[tuple[str, float, float, float]]:
    """(point, rfviz log MSE, reference log MSE, |difference|) over the pairs."""
    est = rfviz.create(name, m=M, **params)
    rows = []
    with mp.workdps(60):
        for label, x, y in pairs:
            got = float(est.log_mse(x, y, D))
            want = _log(ref(_stats(x, y)))
            err = 0.0 if got == want else abs(got - want)
            rows.append((label, got, want, err))
    return rows


NOT_COVERED: dict[str, str] = {}
"""Estimators with a closed form but no mpmath reference here, each with the reason (none at present)."""


def _covered() -> tuple[set[str], set[tuple[str, str]]]:
    names, coupled = set(), set()
    for case in [*CASES, *COUPLED, *COORDINATE]:
        name, params, _ = case.values if hasattr(case, "values") else case
        names.add(name)
        coupled.add((name, params.get("coupling", "iid")))
    return names | {"maclaurin", "hybrid_gaussian"}, coupled


def test_every_registered_closed_form_has_an_mpmath_reference():
    """Iterates the registry: every estimator whose default instance has a closed form, and every coupling it lists
    in ``coupled_closed_forms``, is compared with mpmath above (or named in NOT_COVERED with the reason)."""
    names, coupled = _covered()
    for name, cls in rfviz.REGISTRY.items():
        if not rfviz.create(name).closed_form_available() or name in NOT_COVERED:
            continue
        assert name in names, f"{name} has a closed form but no mpmath reference in this file"
        for coupling in getattr(cls, "coupled_closed_forms", ()) or ():
            assert (name, coupling) in coupled, f"{name} with coupling={coupling} has no mpmath reference"


@pytest.mark.parametrize("name,params,ref", CASES, ids=[f"{n}-{'-'.join(map(str, p.values()))}" for n, p, _ in CASES])
def test_closed_form_matches_mpmath_at_hostile_points(name, params, ref):
    bad = [row for row in log_errors(name, params, ref) if not row[3] <= TOL]
    assert not bad, f"{name} {params}: (point, rfviz, mpmath, |Δlog|) = {bad}"


@pytest.mark.parametrize("name,params,ref", COUPLED, ids=[
    f"{n}-{'-'.join(map(str, p.values()))}" for n, p, _ in (c.values if hasattr(c, "values") else c for c in COUPLED)])
def test_coupled_closed_form_matches_mpmath_at_hostile_points(name, params, ref):
    bad = [row for row in log_errors(name, params, ref) if not row[3] <= TOL]
    assert not bad, f"{name} {params}: (point, rfviz, mpmath, |Δlog|) = {bad}"


@pytest.mark.parametrize("name,params,ref", COORDINATE,
                         ids=[f"{n}-{'-'.join(map(str, p.values()))}" for n, p, _ in COORDINATE])
def test_coordinate_closed_form_matches_mpmath_at_hostile_points(name, params, ref):
    est = rfviz.create(name, **{"m": M, **params})
    bad = []
    with mp.workdps(60):
        for label, x, y in PAIRS:
            got = float(est.log_mse(x, y))
            want = _log(ref(x, y))
            if not (got == want or abs(got - want) <= TOL):
                bad.append((label, got, want))
    assert not bad, f"{name} {params}: (point, rfviz, mpmath) = {bad}"


@pytest.mark.parametrize("lambda_rf", ["trig", "positive"])
def test_gaussian_hybrid_on_the_sphere_matches_mpmath(lambda_rf):
    """r_norm = 0 (ρ from |x| = |y|, the paper's setting): the canonical hostile pairs."""
    est = rfviz.create("hybrid_gaussian", m=M, n=3, sigma=0.7, lambda_rf=lambda_rf)
    bad = []
    with mp.workdps(60):
        for label, x, y in PAIRS[:len(HOSTILE_RT)]:
            got = float(est.log_mse(x, y, D))
            want = _log(ref_gaussian_hybrid(x, y, M, "softmax", 3, 0.7, 0.0, False, lambda_rf))
            if not (got == want or abs(got - want) <= TOL):
                bad.append((label, got, want))
    assert not bad, f"(point, rfviz, mpmath) = {bad}"


@pytest.mark.slow  # mpmath at high precision: ~1.5 s of CPU
@pytest.mark.parametrize("shared", [False, True])
def test_angular_hybrid_fourth_moment_matches_mpmath_on_the_sphere(shared):
    est = rfviz.create("hybrid_angular", m=M, n=3, shared=shared)
    bad = []
    with mp.workdps(150):
        for label, x, y in PAIRS[:len(HOSTILE_RT)]:
            got = float(est.log_fourth_central_moment(x, y, D))
            want = _log(ref_fourth_angular_hybrid(_stats(x, y), x, y, M, 3))
            if not (got == want or abs(got - want) <= TOL):
                bad.append((label, got, want))
    assert not bad, f"(point, rfviz, mpmath) = {bad}"


def test_gaussian_hybrid_refuses_a_lambda_variance_past_float64():
    """σ = 2 with ++ λ-features at |x| = 10: Var λ̂ ~ e^{σ²·4x·y} = e^{1400}: a ParameterError naming sigma, not NaN."""
    x, y = embed_pair(10.0, 0.5, D)
    est = rfviz.create("hybrid_gaussian", m=M, n=4, sigma=2.0, r_norm=0.8, lambda_rf="positive")
    with pytest.raises(rfviz.ParameterError, match="sigma"):
        est.log_mse(x, y, D)


MACLAURIN = [dict(kernel="exponential", method="optimized", p=6, m=40, q=0.5, basis="rademacher", variance="complex"),
             dict(kernel="gaussian", method="optimized", p=5, m=24, q=1.0, basis="gaussian", variance="real_part"),
             dict(kernel="polynomial", method="optimized", p=4, m=30, q=0.5, basis="rademacher",
                  variance="complex", kernel_degree=3, nu=0.5),
             dict(kernel="exponential", method="random", p=6, m=40, q=0.5, basis="rademacher", variance="complex",
                  c=2.0),
             dict(kernel="polynomial", method="random", p=3, m=16, q=1.0, basis="rademacher", variance="real_part",
                  kernel_degree=3, nu=1.0, c=3.0)]


@pytest.mark.parametrize("params", MACLAURIN, ids=[f"{p['kernel']}-{p['method']}" for p in MACLAURIN])
def test_maclaurin_closed_form_matches_mpmath_at_hostile_points(params):
    est = rfviz.create("maclaurin", sketch="poly", **params)
    full = {"kernel_degree": 3, "nu": 1.0, "c": 2.0, **params}
    bad = []
    with mp.workdps(80):
        for label, x, y in PAIRS:
            got = float(est.log_mse(x, y))
            want = _log(ref_maclaurin(x, y, est, full))
            if not (got == want or abs(got - want) <= TOL):
                bad.append((label, got, want))
    assert not bad, f"maclaurin {params}: (point, rfviz, mpmath) = {bad}"


def test_exactly_zero_where_the_truth_is_zero():
    """θ = π (y = −x) for the positive family and θ = 0 for trig: −inf, not a round-off residue."""
    x, y = embed_pair(1.5, math.pi, D)
    for name in ("positive", "positive_antithetic", "oprf"):
        assert float(rfviz.create(name).log_mse(x, y, D)) == -math.inf
    x, y = embed_pair(1.5, 0.0, D)
    assert float(rfviz.create("trig").log_mse(x, y, D)) == -math.inf


@pytest.mark.slow  # mpmath at high precision: ~2 s of CPU
@pytest.mark.parametrize("kernel", ["softmax", "gaussian"])
@pytest.mark.parametrize("name", ["trig", "trig_phase", "positive", "positive_antithetic"])
def test_fourth_moment_matches_mpmath_at_hostile_points(name, kernel):
    est = rfviz.create(name, m=M, kernel=kernel)
    bad = []
    with mp.workdps(150):  # the raw moments cancel to ~W⁴ or Z⁴ (1e-72 at W = 1e-18)
        for label, x, y in PAIRS:
            got = float(est.log_fourth_central_moment(x, y, D))
            s = _stats(x, y)
            want = _log(ref_fourth(name, s, M) * _kernel_factor(s, kernel) ** 2)  # Gaussian: K⁴ = SM⁴e^{−2|x|²−2|y|²}
            if not (got == want or abs(got - want) <= TOL):
                bad.append((label, got, want))
    assert not bad, f"{name}: (point, rfviz, mpmath) = {bad}"


def _fourth_cases() -> list[tuple[str, dict, object]]:
    """Every estimator with ``fourth_moment_available()``, beyond the four of ``ref_fourth``: GERF at real and complex
    A with s = ±1 (A → 1/16 from below, where E(K̂ − K)⁴ ~ e^{1e9}; A ≥ 1/16, where it is +inf; A ≪ 0), OPRF with A*
    per pair or from a fixed Z, CE (a·I and diagonal) in every antithetic × variance setting, and the angular hybrid
    off the sphere (the near-duplicate rows have |x| ≠ |y|)."""
    out = []
    for kernel in ("softmax", "gaussian"):
        for a, sign in ((-0.1, 1), (0.05, 1), (-0.1 + 0.05j, 1), (-30.0, 1), (0.0625 - 1e-9, 1), (0.0625, 1),
                        (0.03 + 0.2j, -1), (0.05, -1), (-0.2 - 0.1j, -1), (0.0625 - 1e-9 + 0.3j, -1), (0.07 + 0.1j, -1),
                        (0.1, -1)):
            out.append(("gerf", {"kernel": kernel, "A": a, "s": sign},
                        lambda x, y, k=kernel, a=a, g=sign: ref_fourth_gerf(x, y, M, k, a, g)))
        out.append(("oprf", {"kernel": kernel}, lambda x, y, k=kernel: ref_fourth_oprf(x, y, M, k, None)))
        for z in (0.0, 3.0, 400.0):
            out.append(("oprf", {"kernel": kernel, "A_from": "fixed", "Z": z},
                        lambda x, y, k=kernel, z=z: ref_fourth_oprf(x, y, M, k, z)))
        for a, antithetic, variance in ((1j, False, "real_part"), (1j, True, "complex"), (1.0, False, "real_part"),
                                        (1.0, True, "complex"), (0.7 + 0.4j, True, "real_part"),
                                        (0.3 - 1.1j, False, "complex")):
            out.append(("complex_exponential", {"kernel": kernel, "A": a, "antithetic": antithetic,
                                                "variance": variance},
                        lambda x, y, k=kernel, a=a, t=antithetic, v=variance:
                        ref_fourth_complex_exponential(x, y, M, k, [a] * D, t, v)))
        diag = (1 + 0.5j, 0.8 + 0j)
        for antithetic, variance in ((False, "real_part"), (True, "real_part"), (False, "complex"), (True, "complex")):
            out.append(("complex_exponential_diag", {"kernel": kernel, "A_diag": diag, "antithetic": antithetic,
                                                     "variance": variance},
                        lambda x, y, k=kernel, t=antithetic, v=variance, g=diag:
                        ref_fourth_complex_exponential(x, y, M, k, list(g), t, v)))
        for n, shared in ((1, False), (7, True), (3, True), (7, False)):
            out.append(("hybrid_angular", {"kernel": kernel, "n": n, "shared": shared},
                        lambda x, y, k=kernel, n=n, sh=shared: ref_fourth_angular_hybrid_anywhere(x, y, M, k, n, sh)))
    return out


FOURTH = _fourth_cases()
FOURTH_BY_NAME = {"trig", "trig_phase", "positive", "positive_antithetic"}
"""Covered by ``test_fourth_moment_matches_mpmath_at_hostile_points`` (``ref_fourth``: iid ω, both kernels)."""
FOURTH_NOT_COVERED: dict[str, str] = {}
"""Estimators with a fourth-moment closed form but no mpmath reference here, each with the reason (none at present)."""


def _close(got: float, want: float) -> bool:
    """Equal logs (±inf included), or within TOL plus 8 ulps of the log itself: near A = 1/16 the fourth moment is
    e^{1e9}, whose float64 log is only good to ~1e-7 absolute (the same relative accuracy)."""
    return got == want or abs(got - want) <= TOL + 8 * np.finfo(float).eps * abs(want)


def _discrete_settings(cls) -> list[dict]:
    """Every combination of an estimator's choice, bool and small-int parameters (the rest at their defaults)."""
    names, values = [], []
    for p in cls.spec:
        if p.kind == "choice":
            names.append(p.name), values.append(p.choices)
        elif p.kind == "bool":
            names.append(p.name), values.append((False, True))
        elif p.kind == "int" and p.low is not None and p.high is not None and p.high - p.low <= 4:
            names.append(p.name), values.append(tuple(range(int(p.low), int(p.high) + 1)))
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]


def test_every_fourth_moment_closed_form_has_an_mpmath_reference():
    """Iterates the registry: every setting of an estimator's discrete parameters (choices, bools, GERF's s) for
    which ``fourth_moment_available()`` is True is compared with mpmath here (or named in FOURTH_NOT_COVERED)."""
    defaults = {name: {p.name: p.default for p in cls.spec} for name, cls in rfviz.REGISTRY.items()}
    covered = [(name, {**defaults[name], **params}) for name, params, _ in FOURTH]
    checked = 0
    for name, cls in rfviz.REGISTRY.items():
        if name in FOURTH_NOT_COVERED:
            continue
        for setting in _discrete_settings(cls):
            try:
                est = rfviz.create(name, **setting)
            except rfviz.ParameterError:  # e.g. s = 0
                continue
            if not est.fourth_moment_available():
                continue
            checked += 1
            if name in FOURTH_BY_NAME and setting.get("coupling", "iid") == "iid":
                continue
            assert any(n == name and all(p[k] == v for k, v in setting.items()) for n, p in covered), \
                f"{name} {setting} has a fourth-moment closed form but no mpmath reference in this file"
    assert checked >= 20


@pytest.mark.slow  # mpmath at 150 digits for 44 settings × every hostile pair: ~85 s of CPU, most of the unit tier's
@pytest.mark.parametrize("name,params,ref", FOURTH, ids=[f"{n}-{'-'.join(map(str, p.values()))}" for n, p, _ in FOURTH])
def test_fourth_central_moment_matches_mpmath_at_hostile_points(name, params, ref):
    """E|K̂ − K|⁴ (``log_fourth_central_moment``) against ``ref`` at every hostile pair, +inf exactly where the
    reference's Gaussian integral diverges (GERF: Re A ≥ 1/16), and ``fourth_moment_finite`` saying the same."""
    from rfviz.geometry import PairStats

    est = rfviz.create(name, m=M, **params)
    bad = []
    with mp.workdps(150):  # the moment sums cancel to ~W⁴ (1e-96 at r = θ = 1e-6)
        for label, x, y in PAIRS:
            got = float(est.log_fourth_central_moment(x, y, D))
            want = _log(ref(x, y))
            finite = est.fourth_moment_finite(PairStats.of(x[None], y[None], D))
            if not _close(got, want) or (finite is not None and bool(np.all(finite)) != math.isfinite(want)):
                bad.append((label, got, want, finite))
    assert not bad, f"{name} {params}: (point, rfviz, mpmath, fourth_moment_finite) = {bad}"


def test_gram_closed_form_with_near_duplicate_rows_matches_mpmath(monkeypatch):
    """Σ_ij MSE over queries × keys holding near-duplicate rows (|q − k| ~ 1e-7·|q|): the Gram path forms each
    pair's |q − k|² from the difference; row blocks (forced small here) change nothing."""
    from rfviz import gram_engine as gram

    rng = np.random.default_rng(5)
    keys = rng.standard_normal((6, D)) / math.sqrt(D)
    queries = np.concatenate([keys[:4] + 1e-7 * rng.standard_normal((4, D)), -keys[4:] + 1e-8])
    for name, ref in (("trig", ref_trig), ("positive_antithetic", ref_positive_antithetic)):
        est = rfviz.create(name, m=M, kernel="gaussian")
        with mp.workdps(60):
            total = mp.fsum(ref(_stats(q, k), M, "gaussian") for q in queries for k in keys)
        whole = gram.log_frobenius_sq_closed_form(est, queries, keys)
        assert abs(whole - float(mp.log(total))) <= TOL
        monkeypatch.setattr(gram, "PAIR_CHUNK_BYTES", 8 * len(keys) * D)  # one query row per block
        assert gram.log_frobenius_sq_closed_form(est, queries, keys) == pytest.approx(whole, abs=1e-13)
        log_k, sign = gram.log_kernel_matrix(est, queries, keys)
        monkeypatch.undo()
        ref_k = [[float(-_stats(q, k)["W"] / 2) for k in keys] for q in queries]
        assert np.allclose(log_k, ref_k, rtol=1e-12, atol=0) and np.all(sign == 1)
