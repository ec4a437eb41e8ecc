"""Maths of the Chefs' Random Tables paper (Likhosherstov et al. 2022, "CRT"), as pure numpy functions.

Everything here follows the paper's formulas re-derived and checked by Monte Carlo, not
the printed paper, which has errors (docs: errata). Conventions:

* Variances are per feature (M = 1) of the **Gaussian**-kernel estimator unless a function says otherwise;
  the softmax version multiplies them by e^{S}, S = |x|² + |y|², and the *relative* variance
  Var/K² is the same for both kernels.
* Everything is returned as a natural log: R = E[(Re Y)²]/K² (relative second moment) and ``log_rel_var`` =
  log(R − 1) = log(Var/K²). Var/K² of every GERF depends only on (A, s, d, Z_s), Z_s = |x + s·y|².
* Invalid input raises ParameterError naming the parameter and its valid range.

Used by the estimators in ``rfviz.estimators.crt`` and directly by the app's CRT views (variance against A,
the complex-A heat map, A*, the Figure-1 utility μ(Z, d), the orthogonal gain, the Thm 4.2 tail bounds,
and the Figure-2 eight-mechanism comparison).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from ..geometry import check_d
from ..numerics import LOG2, log_diff_exp, log_expm1
from ..params import KERNEL_PARAM, M_PARAM, Param, ParameterError, check
from ..registries import IID, ORTHOGONAL, SOFTMAX

A_MEAN_BOUND = 0.25
"""GERF is unbiased iff Re A < 1/4 (CRT Thm 3.1)."""
A_VARIANCE_BOUND = 0.125
"""GERF has finite variance iff Re A < 1/8 (CRT Thm 3.2)."""
A_FOURTH_MOMENT_BOUND = 0.0625
"""E|Y|^4 < ∞ iff Re A < 1/16: needed for a Monte-Carlo standard error of the variance."""


# ----------------------------------------------------------------------------------------------- validation
def check_s(s: Any) -> int:
    """s ∈ {+1, −1} (CRT Thm 3.1)."""
    if isinstance(s, bool) or s not in (1, -1):
        raise ParameterError(f"s must be +1 or -1, got {s!r}")
    return int(s)


def check_A(A: Any, bound: float = A_VARIANCE_BOUND) -> np.ndarray:
    """A as a complex array with every real part < ``bound`` (default 1/8: finite variance)."""
    a = np.asarray(A, dtype=complex)
    if not np.all(np.isfinite(a)):
        raise ParameterError("A must be a finite complex number")
    bad = a.real >= bound
    if np.any(bad):
        why = {A_MEAN_BOUND: "unbiasedness", A_VARIANCE_BOUND: "finite variance"}.get(bound, "a finite moment")
        raise ParameterError(f"A must be a complex number with real part in (-inf, {bound:g}) ({why}), "
                             f"got {complex(a[bad].ravel()[0]):g}")
    return a


POISSON_LAM_PARAM = Param("lam", 1.0, "float",
                          "Poisson rate λ of each ω_l (CRT §3.2.1); the optimum is λ* = √(Σ x_l²y_l²/d)",
                          low=0.0, low_open=True, ui_low=0.01, ui_high=10.0)
PROB_PARAM = Param("prob", 0.5, "float", "geometric success probability p, P(ω_l = k) = p(1−p)^k (CRT §3.2.2)",
                   low=0.0, high=1.0, low_open=True, high_open=True, ui_low=0.01, ui_high=0.99)


def admissible_A(s: int = 1) -> dict[str, Any]:
    """Admissible ranges of A for the app ([CRT] Thm 3.2): Re A below each bound.

    In general E|Y|^k < ∞ iff Re A < 1/(4k)."""
    check_s(s)
    return {
        "unbiased": A_MEAN_BOUND,
        "finite_variance": A_VARIANCE_BOUND,
        "finite_fourth_moment": A_FOURTH_MOMENT_BOUND,
        "bounded_features": "Re A < 0" + (" (or A = 0: TrigRF)" if s == -1 else ""),
        "positive_features": "s = +1 and Im A = 0",
    }


# --------------------------------------------------------------------------------------------- GERF (§3.3)
def gerf_coefficients(A: complex, s: int, d: int) -> tuple[complex, float, complex]:
    """(B, C, log D) of GERF, CRT Thm 3.1 eq. 5 with principal branches: B = √(s(1−4A)), C = −(s+1)/2,
    log D = (d/4)·Log(1 − 4A) ([CRT] Thm 3.2)."""
    s = check_s(s)
    a = complex(check_A(A, A_MEAN_BOUND))
    return complex(np.sqrt(complex(s * (1 - 4 * a)))), -(s + 1) / 2.0, d * complex(np.log(1 - 4 * a)) / 4.0


def _gerf_log_terms(A: np.ndarray, s: int, Zs: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Re L1, Im L1, L3): R = ½(Re e^{L1} + e^{L3}) (CRT Thm 3.2 eq. 6, relative form)."""
    L1 = d * (np.log(1 - 4 * A) - 0.5 * np.log(1 - 8 * A)) + s * Zs / (1 - 8 * A)
    den = 1 - 8 * A.real
    alpha4 = s / 2 + (s + 2 * np.abs(1 - 4 * A)) / (2 * den)
    L3 = 0.5 * d * np.log1p(16 * np.abs(A) ** 2 / den) + (alpha4 - s) * Zs
    return L1.real, L1.imag, L3


def gerf_log_R(A: Any, s: int, Zs: Any, d: int) -> np.ndarray:
    """log R, R = E[(Re f1 f2)²]/K², of one GERF feature (CRT Thm 3.2 eq. 6, relative form).

    Broadcasts over complex A and Z_s = |x + s·y|². Needs Re A < 1/8.
    """
    s = check_s(s)
    d = check_d(d)
    A = check_A(A)
    Zs = np.asarray(Zs, dtype=float)
    l1r, l1i, l3 = _gerf_log_terms(A, s, Zs, d)
    return -LOG2 + l3 + np.log1p(np.exp(l1r - l3) * np.cos(l1i))


def gerf_log_rel_var(A: Any, s: int, Zs: Any, d: int) -> np.ndarray:
    """log(Var/K²) = log(R − 1) of one GERF feature; -inf where the estimator is exact ([CRT] eq. 6).

    Where both exponents are ≤ 30 it evaluates R − 1 = ½(expm1(Re L1)cos φ − 2sin²(φ/2)) + ½ expm1(L3), which
    keeps full relative precision when R ≈ 1 (small inputs); elsewhere log_expm1(log R).
    """
    s = check_s(s)
    d = check_d(d)
    A = check_A(A)
    Zs = np.asarray(Zs, dtype=float)
    l1r, l1i, l3 = _gerf_log_terms(A, s, Zs, d)
    log_r = -LOG2 + l3 + np.log1p(np.exp(l1r - l3) * np.cos(l1i))
    small = np.maximum(l1r, l3) <= 30.0
    direct = 0.5 * (np.expm1(np.minimum(l1r, 30.0)) * np.cos(l1i) - 2.0 * np.sin(l1i / 2) ** 2) \
        + 0.5 * np.expm1(np.minimum(l3, 30.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        log_direct = np.where(direct > 0, np.log(np.where(direct > 0, direct, 1.0)), -np.inf)
    return np.where(small, log_direct, log_expm1(log_r))


def _plus_minus_sq(xx: np.ndarray, yy: np.ndarray, xy: np.ndarray, z2: Any, delta2: Any) -> tuple[np.ndarray, ...]:
    """(|x + y|², |x − y|²): the stable values when the caller has them (``PairStats.z2``/``delta2``, from the
    coordinates of x ± y), else |x|² + |y|² ± 2x·y (which loses digits as y → ±x)."""
    Z = np.maximum(xx + yy + 2 * xy, 0.0) if z2 is None else np.asarray(z2, dtype=float)
    W = np.maximum(xx + yy - 2 * xy, 0.0) if delta2 is None else np.asarray(delta2, dtype=float)
    return Z, W


def gerf_log_var(A: Any, s: int, xx: Any, yy: Any, xy: Any, d: int, kernel: str = "gaussian", *,
                 z2: Any = None, delta2: Any = None) -> np.ndarray:
    """log Var of one GERF feature (M = 1) for the Gaussian or softmax kernel (CRT eq. 6).

    Var_gauss = K²(R−1) with K² = e^{−|x−y|²}; Var_softmax = e^{S}·Var_gauss = e^{2x·y}(R−1). Pass ``z2`` =
    |x + y|² and ``delta2`` = |x − y|² computed from x ± y where they may be small against |x|² + |y|².
    """
    xx, yy, xy = (np.asarray(v, dtype=float) for v in (xx, yy, xy))
    Z, W = _plus_minus_sq(xx, yy, xy, z2, delta2)
    return _kernel_log_sq(kernel, xy, W) + gerf_log_rel_var(A, s, Z if check_s(s) == 1 else W, d)


def _kernel_log_sq(kernel: str, xy: np.ndarray, W: np.ndarray) -> np.ndarray:
    """log K² for the named kernel: 2x·y (softmax) or −|x−y|² (Gaussian)."""
    if check(kernel, KERNEL_PARAM) == SOFTMAX:
        return 2.0 * np.asarray(xy, dtype=float)
    return -np.asarray(W, dtype=float)


def r_theta_stats(r: Any, theta: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(|x|², |y|², x·y) for |x| = |y| = r at angle θ (reference block 0)."""
    r = np.asarray(r, dtype=float)
    r2 = r * r
    return r2, r2, r2 * np.cos(np.asarray(theta, dtype=float))


def r_theta_plus_minus(r: Any, theta: Any) -> dict[str, np.ndarray]:
    """{z2: |x + y|² = 4r²cos²(θ/2), delta2: |x − y|² = 4r²sin²(θ/2)} for |x| = |y| = r at angle θ, without the
    cancellation of 2r²(1 ± cos θ) at θ → π or 0."""
    r = np.asarray(r, dtype=float)
    theta = np.asarray(theta, dtype=float)
    cos_half = np.where(theta == np.pi, 0.0, np.cos(theta / 2))  # θ = fl(π) is π (as in geometry.canonical_pair)
    return {"z2": (2 * r * cos_half) ** 2, "delta2": (2 * r * np.sin(theta / 2)) ** 2}


def log_var_vs_real_A(A_grid: Any, s: int, r: float, theta: float, d: int, kernel: str = "gaussian") -> np.ndarray:
    """log Var (M = 1) along real A < 1/8 at one (r, θ): the 'variance against A' view ([CRT] Fig. 2, view 3)."""
    A = np.asarray(A_grid, dtype=float)
    return gerf_log_var(A.astype(complex), s, *r_theta_stats(r, theta), d, kernel, **r_theta_plus_minus(r, theta))


def log_var_complex_grid(re_A: Any, im_A: Any, s: int, r: float, theta: float, d: int,
                         kernel: str = "gaussian") -> np.ndarray:
    """log Var (M = 1) on the grid Re A × Im A, shape (len(im_A), len(re_A)) ([CRT] Fig. 2, view 4).

    Cells with Re A ≥ 1/8 hold +inf on purpose: there the variance *is* infinite (CRT Thm 3.2).
    """
    re = np.asarray(re_A, dtype=float)
    im = np.asarray(im_A, dtype=float)
    A = re[None, :] + 1j * im[:, None]
    ok = A.real < A_VARIANCE_BOUND
    out = np.full(A.shape, np.inf)
    if np.any(ok):
        out[ok] = gerf_log_var(A[ok], s, *r_theta_stats(r, theta), d, kernel, **r_theta_plus_minus(r, theta))
    return out


# --------------------------------------------------------------------------------------------- OPRF (§3.4)
def rho_star(Z: Any, d: int) -> np.ndarray:
    """ρ* of OPRF, CRT Thm 3.3 eq. 7 rationalised: ρ* = 2d/((2Z+d) + √((2Z+d)² + 8dZ)); ρ*(0) = 1."""
    d = check_d(d)
    Z = np.asarray(Z, dtype=float)
    if np.any(Z < 0):
        raise ParameterError("Z must be a number in [0, inf) (Z = |x+y|²)")
    return 2.0 * d / ((2 * Z + d) + np.sqrt((2 * Z + d) ** 2 + 8.0 * d * Z))


def A_star(Z: Any, d: int) -> np.ndarray:
    """Optimal real A for s = +1: A* = (1 − 1/ρ*)/8 ≤ 0 (CRT Thm 3.3; depends only on Z/d)."""
    return (1.0 - 1.0 / rho_star(Z, d)) / 8.0


def rho_of_A(A: Any) -> np.ndarray:
    """ρ = 1/(1 − 8A) for real A < 1/8 ([CRT] eq. 6)."""
    A = np.asarray(A, dtype=float)
    check_A(A)
    return 1.0 / (1.0 - 8.0 * A)


def oprf_log_R(Z: Any, d: int, rho: Any = None) -> np.ndarray:
    """log R = d·log((1+ρ)/(2√ρ)) + ρZ for s = +1, real A ↔ ρ = 1/(1−8A); default ρ = ρ*(Z, d) ([CRT] eq. 6).

    Uses log((1+ρ)/(2√ρ)) = log1p((1−√ρ)²/(2√ρ)) (exact near ρ = 1).
    """
    Z = np.asarray(Z, dtype=float)
    rho = rho_star(Z, d) if rho is None else np.asarray(rho, dtype=float)
    sq = np.sqrt(rho)
    return d * np.log1p((1 - sq) ** 2 / (2 * sq)) + rho * Z


def oprf_log_rel_var(Z: Any, d: int, Z_for_A: Any = None) -> np.ndarray:
    """log(Var/K²) of OPRF at Z; A from ``Z_for_A`` (batch heuristic, eq. 8) or from this pair ([CRT] eq. 7)."""
    rho = rho_star(Z if Z_for_A is None else Z_for_A, d)
    return log_expm1(oprf_log_R(Z, d, rho))


def mu_fig1(Z: Any, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Figure-1 utility μ(Z, d) = log(Var_OPRF/Var_PosRF): (exact, second-moment version) ([CRT] Fig. 1).

    exact = log(R*−1) − log(e^Z − 1); second = log R* − Z. Kernel-independent; -61.2212 at d = 64, Z = 100.
    """
    Z = np.asarray(Z, dtype=float)
    log_r = oprf_log_R(Z, d)
    with np.errstate(invalid="ignore"):
        exact = np.where(Z > 0, log_expm1(log_r) - log_expm1(np.where(Z > 0, Z, 1.0)), 0.0)
    return exact, log_r - Z


# -------------------------------------------------------------------------------------------- DIRFs (§3.5–3.7)
def _dirf_pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape[-1] != y.shape[-1]:
        raise ParameterError(f"x and y must have the same dimension, got {x.shape[-1]} and {y.shape[-1]}")
    return x, y


def lam_star(x: Any, y: Any) -> np.ndarray:
    """Optimal Poisson rate λ* = √(Σ_l x_l²y_l²/d) (CRT Thm 3.4); 0 when Σ x_l²y_l² = 0."""
    x, y = _dirf_pair(x, y)
    return np.sqrt(np.sum(x * x * y * y, -1) / x.shape[-1])


def poisson_log_R(x: Any, y: Any, lam: float, shift: float = 0.0) -> np.ndarray:
    """log R = λd + Q/λ − 2x̂·ŷ, Q = Σ x̂_l²ŷ_l², of PoisRF on x̂ = x − c, ŷ = y − c (CRT Thm 3.4 eq. 11; §3.2.3)."""
    lam = check(lam, POISSON_LAM_PARAM)
    x, y = _dirf_pair(x, y)
    xs, ys = x - shift, y - shift
    return lam * x.shape[-1] + np.sum(xs * xs * ys * ys, -1) / lam - 2.0 * np.sum(xs * ys, -1)


def geometric_log_R(x: Any, y: Any, prob: float, shift: float = 0.0) -> np.ndarray:
    """log R = −d log p − 2x̂·ŷ + Σ_l log I0(2|x̂_l ŷ_l|/√(1−p)) of GeomRF (CRT Thm 3.5 eq. 13).

    log I0(t) = log(i0e(t)) + t never overflows.
    """
    p = check(prob, PROB_PARAM)
    x, y = _dirf_pair(x, y)
    xs, ys = x - shift, y - shift
    t = 2.0 * np.abs(xs * ys) / math.sqrt(1.0 - p)
    return -x.shape[-1] * math.log(p) - 2.0 * np.sum(xs * ys, -1) + np.sum(np.log(special.i0e(t)) + t, -1)


def dirf_log_var(kind: str, x: Any, y: Any, param: float, shift: float = 0.0, kernel: str = "gaussian") -> np.ndarray:
    """log Var (M = 1) of PoisRF (kind='poisson', param=λ) or GeomRF (kind='geometric', param=p), optionally the
    '+' variant with shift c ([CRT] eq. 11). K is shift-invariant (Gaussian), so K² uses the unshifted x, y."""
    x, y = _dirf_pair(x, y)
    if kind == "poisson":
        log_r = poisson_log_R(x, y, param, shift)
    elif kind == "geometric":
        log_r = geometric_log_R(x, y, param, shift)
    else:
        raise ParameterError(f"kind must be one of poisson, geometric, got {kind!r}")
    xy = np.sum(x * y, -1)
    W = np.maximum(np.sum((x - y) ** 2, -1), 0.0)
    return _kernel_log_sq(kernel, xy, W) + log_expm1(log_r)


def p_star_geometric(x: Any, y: Any) -> float:
    """Optimal GeomRF p for one pair: no closed form, bounded 1-D minimisation of log R (CRT §3.2.2, Brent)."""
    from scipy import optimize  # lazy: 0.13 s of import that only the optimisers need

    res = optimize.minimize_scalar(lambda p: float(geometric_log_R(x, y, p)), bounds=(1e-9, 1 - 1e-9),
                                   method="bounded", options={"xatol": 1e-12})
    return float(res.x)


def shift_positive(X: Any, Y: Any, eps: float = 1e-8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PoisRF+/GeomRF+ shift (CRT §3.2.3): c_l = min over the data of min(x_l, y_l) − ε; returns (X − c, Y − c, c)."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    c = np.minimum(X.min(0), Y.min(0)) - eps
    return X - c, Y - c, c


# -------------------------------------------------------------------------------- orthogonal coupling (§3.9)
def ortho_pair_fraction(m: int, d: int) -> float:
    """Σ_b n_b(n_b−1)/m² for m features in independent orthogonal blocks of ≤ d ([CRT] Thm 4.1)."""
    m, d = check(m, M_PARAM), check_d(d)
    full, rest = divmod(m, d)
    return (full * d * (d - 1) + rest * (rest - 1)) / m**2


def _log_one_minus_P_table(d: int, kmax: int) -> np.ndarray:
    """log(1 − P_k), P_k = Π_{j<k}(d+j)/(d+2j), k = 0..kmax (−inf at k = 0, 1) ([CRT] Thm 4.1)."""
    j = np.arange(kmax, dtype=float)
    log_p = np.concatenate([[0.0], np.cumsum(np.log1p(-j / (d + 2.0 * j)))])
    with np.errstate(divide="ignore"):
        return np.log(-np.expm1(log_p))


def ortho_log_neg_relcov_pos(Z: Any, d: int, chunk: int = 2048) -> np.ndarray:
    """log(−Cov_ort/K²) for s = +1 (PosRF, OPRF, any real A): the exact series of [CRT] Thm 4.1,
    −relCov = e^{−Z} Σ_{k≥2} Z^k/k!·(1 − P_k), every term ≥ 0. −inf at Z = 0. Summed over a window of
    ±12√Z around the Poisson(Z) mode, so the cost per point is O(√Z)."""
    d = check_d(d)
    Z = np.asarray(Z, dtype=float)
    out = np.full(Z.shape, -np.inf)
    pos = Z > 0
    if not np.any(pos):
        return out
    zv = Z[pos]
    zmax = float(zv.max())
    kmax = int(zmax + 12 * math.sqrt(zmax) + 60)
    table = _log_one_minus_P_table(d, kmax)
    width = int(24 * math.sqrt(zmax) + 80)
    res = np.empty_like(zv)
    for start in range(0, zv.size, chunk):
        z = zv[start:start + chunk]
        k0 = np.maximum(2, np.floor(z - 12 * np.sqrt(z) - 10)).astype(int)
        k = k0[:, None] + np.arange(width)[None, :]
        inside = k <= kmax
        kc = np.minimum(k, kmax)
        terms = kc * np.log(z)[:, None] - special.gammaln(kc + 1.0) + table[kc]
        terms = np.where(inside, terms, -np.inf)
        res[start:start + chunk] = special.logsumexp(terms, axis=1) - z
    out[pos] = res
    return out


def ortho_cov_trig(W: Any, d: int, chunk: int = 2048) -> np.ndarray:
    """Cov_ort(Re Y1, Re Y2) for s = −1 and any real A, Gaussian kernel (bounded): 1F1(d; d/2; −W/2) − e^{−W}
    ([CRT] Thm 4.1). W < 1: −Σ_{k≥2}(−W)^k/k!(1−P_k); W ≥ 1: Kummer, 1F1(d; d/2; −W/2) = e^{−W/2}
    1F1(−d/2; d/2; W/2),
    whose terms times e^{−W/2} are each ≤ 1 in size (no overflow, absolute error ~1e-16)."""
    d = check_d(d)
    W = np.asarray(W, dtype=float)
    out = np.zeros(W.shape)
    small = (W > 0) & (W < 1)
    if np.any(small):
        kk = np.arange(2, 41)
        table = _log_one_minus_P_table(d, 40)[2:]
        w = W[small][:, None]
        terms = np.exp(kk * np.log(w) - special.gammaln(kk + 1.0) + table) * (-1.0) ** kk
        out[small] = -terms.sum(1)
    big = W >= 1
    if np.any(big):
        wv = W[big]
        half_max = float(wv.max()) / 2
        kmax = int(half_max + 12 * math.sqrt(half_max) + 60)
        j = np.arange(kmax, dtype=float)
        with np.errstate(divide="ignore"):
            log_ratio = np.log(np.abs(j - d / 2.0)) - np.log(d / 2.0 + j)
        log_poch = np.concatenate([[0.0], np.cumsum(log_ratio)])  # log |(-d/2)_k| / (d/2)_k
        sign = np.concatenate([[1.0], np.cumprod(np.sign(j - d / 2.0))])
        k = np.arange(kmax + 1, dtype=float)
        res = np.empty_like(wv)
        for start in range(0, wv.size, chunk):
            h = wv[start:start + chunk, None] / 2.0
            with np.errstate(invalid="ignore"):
                t = log_poch[None, :] + k[None, :] * np.log(h) - special.gammaln(k + 1.0)[None, :] - h
            res[start:start + chunk] = np.sum(np.where(sign != 0, sign * np.exp(t), 0.0), axis=1) - np.exp(-2 * h[:, 0])
        out[big] = res
    return out


def ortho_relcov(s: int, Zs: Any, d: int) -> np.ndarray:
    """relCov_s(Z_s, d) = Cov_ort/K² = e^{−sZ_s}·1F1(d; d/2; sZ_s/2) − 1 for an orthogonal pair
    ([CRT] Thm 4.1).

    Independent of A (any real A). For s = −1 it can exceed float range at huge W (K² underflows): inf then.
    """
    s = check_s(s)
    if s == 1:
        return -np.exp(ortho_log_neg_relcov_pos(Zs, d))
    W = np.asarray(Zs, dtype=float)
    with np.errstate(over="ignore"):
        return ortho_cov_trig(W, d) * np.exp(W)


def log_minus_covariance(log_var: np.ndarray, log_neg_cov: np.ndarray) -> np.ndarray:
    """log(e^{log_var} − e^{log_neg_cov}) for a variance minus a negative-covariance term; −inf where the variance
    is already exactly 0 (no NaN from −inf − (−inf))."""
    log_var = np.asarray(log_var, dtype=float)
    with np.errstate(invalid="ignore"):
        out = log_diff_exp(log_var, log_neg_cov)
    return np.where(np.isneginf(log_var), -np.inf, out)


def thm41_bound_rel(Z: Any, d: int) -> np.ndarray:
    """Thm 4.1 lower bound on −Cov_ort/K²: (2/(d+2))(1 − e^{−Z/2})² ([CRT] Thm 4.1; tight as Z → 0)."""
    return 2.0 / (check_d(d) + 2) * (-np.expm1(-np.asarray(Z, dtype=float) / 2)) ** 2


def gerf_log_mse(A: Any, s: int, xx: Any, yy: Any, xy: Any, d: int, m: int, coupling: str = IID,
                 kernel: str = "gaussian", *, z2: Any = None, delta2: Any = None) -> np.ndarray:
    """log MSE of the mean of m GERF features, iid (Var/m) or block-orthogonal with real A ([CRT] Thm 4.1):
    MSE_ort = Var1/m + (Σ_b n_b(n_b−1)/m²)·K²·relCov_s(Z_s, d). ``z2``/``delta2``: as in ``gerf_log_var``."""
    s = check_s(s)
    m = check(m, M_PARAM)
    xx, yy, xy = (np.asarray(v, dtype=float) for v in (xx, yy, xy))
    Z, W = _plus_minus_sq(xx, yy, xy, z2, delta2)
    Zs = Z if s == 1 else W
    log_rel = gerf_log_rel_var(A, s, Zs, d) - math.log(m)
    log_k2 = _kernel_log_sq(kernel, xy, W)
    if coupling == IID:
        return log_k2 + log_rel
    if coupling != ORTHOGONAL:
        raise ParameterError(f"coupling must be one of iid, orthogonal for the GERF closed form, got {coupling!r}")
    if np.any(np.asarray(A, dtype=complex).imag != 0):
        raise ParameterError("A must be real for the orthogonal closed form ([CRT] Thm 4.1); use "
            "Monte Carlo")
    frac = ortho_pair_fraction(m, d)
    if frac == 0.0:
        return log_k2 + log_rel
    log_frac = math.log(frac)
    if s == 1:
        return log_k2 + log_minus_covariance(log_rel, log_frac + ortho_log_neg_relcov_pos(Z, d))
    # s = -1: combine in absolute Gaussian terms, where the covariance is bounded by 1.
    cov = ortho_cov_trig(W, d) * frac
    v = -W + log_rel
    with np.errstate(divide="ignore", invalid="ignore"):
        log_abs = np.log(np.abs(cov))
        out = np.where(cov >= 0, np.logaddexp(v, log_abs), log_diff_exp(v, np.where(cov < 0, log_abs, -np.inf)))
    return out + W + log_k2


# --------------------------------------------------------------------------------- bounds (§4.5, Thm 4.2)
def oprf_log_sup(A: Any, S: Any, Z: Any, d: int) -> np.ndarray:
    """log sup_ω f1 f2 of an s = +1 GERF with real A < 0 (docs: errata): (d/2)log(1−4A) − (1−4A)Z/(8A) − S.

    CRT eq. 35 omits the (d/2)log(1−4A) term, which is why the printed Thm 4.2 bound fails.
    """
    A = np.asarray(A, dtype=float)
    if np.any(A >= 0):
        raise ParameterError("A must be a real number in (-inf, 0) for bounded features (docs: errata)")
    return d / 2 * np.log1p(-4 * A) - (1 - 4 * A) * np.asarray(Z, float) / (8 * A) - np.asarray(S, float)


def hoeffding_tail_oprf(eps: Any, m: int, A: Any, S: Any, Z: Any, d: int) -> np.ndarray:
    """Corrected Thm 4.2 part 1 (docs: errata): P(|K̂_m − K| ≥ ε) ≤ min(1, 2 exp(−2mε²/Ymax²)), Gaussian kernel."""
    log_sup = oprf_log_sup(A, S, Z, d)
    return np.minimum(1.0, 2 * np.exp(-2 * check(m, M_PARAM) * np.asarray(eps, float) ** 2 * np.exp(-2 * log_sup)))


def hoeffding_tail_printed(eps: Any, m: int, A: Any, S: Any) -> np.ndarray:
    """Thm 4.2 part 1 as printed: 2 exp(−(mε²/2)e^{S/(2A)}). NOT a valid bound (docs: errata); kept to show it."""
    rate = np.exp(np.asarray(S, float) / (2 * np.asarray(A, float)))
    return 2 * np.exp(-check(m, M_PARAM) * np.asarray(eps, float) ** 2 / 2 * rate)


# ------------------------------------------------------------------------------- batch statistics (§4.4)
def batch_stats(X: Any, Y: Any) -> dict[str, Any]:
    """Averages over all L_x·L_y pairs in O(L·d) (CRT eqs. 8, 12, 14):
    Zbar, Wbar = mean |x ± y|², Qbar = mean Σ_l x_l²y_l², abar_l = mean|x_l|·mean|y_l|."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    lx, ly = len(X), len(Y)
    sx, sy = float(np.mean(np.sum(X**2, 1))), float(np.mean(np.sum(Y**2, 1)))
    cross = 2.0 * float(X.sum(0) @ Y.sum(0)) / (lx * ly)
    return {"Sx": sx, "Sy": sy, "Zbar": sx + sy + cross, "Wbar": sx + sy - cross,
            "Qbar": float(np.sum((X**2).sum(0) * (Y**2).sum(0))) / (lx * ly),
            "abar": np.abs(X).mean(0) * np.abs(Y).mean(0), "d": X.shape[1]}


def fit_gerf_complex(stats: dict[str, Any]) -> tuple[int, complex]:
    """(s, A) minimising the batch-averaged GERF variance over complex A, for s = ±1 (CRT App. 9.10.1:
    L-BFGS-B, 50 iterations, from A = 0; reference block 6)."""
    d = int(stats["d"])
    best: tuple[float, int, complex] | None = None
    for s in (1, -1):
        zs = stats["Zbar"] if s == 1 else stats["Wbar"]

        def objective(v: np.ndarray, s: int = s, zs: float = zs) -> float:
            a = complex(v[0], v[1])
            if 1 - 8 * a.real <= 1e-12:
                return 1e300
            return float(gerf_log_R(a, s, zs, d)) - stats["Wbar"]

        from scipy import optimize  # lazy, see above

        res = optimize.minimize(objective, np.zeros(2), method="L-BFGS-B",
                                bounds=[(-1e3, A_VARIANCE_BOUND - 1e-6), (-1e3, 1e3)], options={"maxiter": 50})
        if best is None or res.fun < best[0]:
            best = (float(res.fun), s, complex(res.x[0], res.x[1]))
    assert best is not None
    return best[1], best[2]
