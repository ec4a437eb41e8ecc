"""Dense-exponential random features (DERFs, [DERF]: the FAVOR# paper): GERF's scalar A becomes a matrix, and the
two sides may transform their inputs differently. Derived in docs: derivations/dense-exponential (in rfviz's own
notation; the paper's facts, not its text).

Notation. ω ~ N(0, I_d); the softmax kernel K = e^{x·y}. A DERF pair of features is
f₁(ω, x) = D e^{ωᵀAω + ωᵀB₁x + xᵀC₁x}, f₂(ω, y) = D e^{ωᵀAω + ωᵀB₂y + yᵀC₂y}, A symmetric with A ≺ I/4, and
E[f₁f₂] = K for every x, y iff B₁ᵀΣB₂ = I, C_i = −½B_iᵀΣB_i, D⁴ = det(I − 4A), Σ = (I − 4A)⁻¹. Writing
A = U diag(a) Uᵀ and x̃ = Σ^{1/2}B₁x, ỹ = Σ^{1/2}B₂y (so x̃·ỹ = x·y), every DERF is characterised by (a, U, Ψ) with
x̃ = Ψx, ỹ = Ψ⁻ᵀy, and the relative second moment R = E[(f₁f₂)²]/K² is

    log R = Σ_k [ log(1 − 4a_k) − ½ log(1 − 8a_k) + w_k²/(1 − 8a_k) ],   w = Uᵀ(x̃ + ỹ),

finite iff every a_k < 1/8 (the variance's condition: A ≺ I/8; E[Y⁴] < ∞ needs A ≺ I/16 — the "1/16" a summary
quotes is the fourth-moment condition that a standard error of a sampled variance needs, not the variance's).
Each direction is a one-dimensional OPRF term (ρ_k = 1/(1 − 8a_k): log((1 + ρ_k)/(2√ρ_k)) + ρ_k w_k²), so
``rfviz.maths.crt``'s OPRF formulas (d = 1) give its value and its optimum a_k* = A*(w_k², 1).

Variants (one estimator each in ``rfviz.estimators.derf``):

* **SDERF** (symmetric, B₁ = B₂, i.e. Ψ = I): A a matrix. Batch optimum of the mean of log R over the pairs of
  a data set: U = the eigenvectors of M = mean (x_i + y_j)(x_i + y_j)ᵀ and a_k = A*(λ_k(M), 1) (each term is
  concave in w_k², so by Schur-concavity the eigenbasis minimises). Per pair: M is rank one, only the direction of
  x + y carries a non-zero a.
* **SADERF** (simplified asymmetric, A = aI scalar): OPRF applied to (Ψx, Ψ⁻ᵀy). Batch optimum: Ψ = P^{1/2},
  P = M_x^{−1/2}(M_x^{1/2} M_y M_x^{1/2})^{1/2} M_x^{−1/2} (the matrix geometric mean of M_x⁻¹ and M_y, M_x = mean
  xxᵀ, M_y = mean yyᵀ), minimising mean |Ψx + Ψ⁻ᵀy|² = tr(P M_x) + tr(P⁻¹ M_y) + 2 mean x·y; then a = A*(Z̄, d).
* **ADERF** (asymmetric, A a matrix and Ψ): SDERF's eigen-optimum on the transformed data, with Ψ the better of
  I and SADERF's Ψ: a closed form that is never worse than either (not claimed to be the joint optimum).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..params import ParameterError
from . import crt

A_VARIANCE_BOUND = crt.A_VARIANCE_BOUND
"""Every eigenvalue a_k of A must be < 1/8 for a finite variance (the derivation above)."""
A_FOURTH_MOMENT_BOUND = crt.A_FOURTH_MOMENT_BOUND
"""E[Y⁴] < ∞ iff every a_k < 1/16 (the same Gaussian integral with 16A): a sampled variance has a standard error."""


@dataclass(frozen=True)
class DerfParams:
    """(a, U, Ψ) of a DERF (module docstring): A = U diag(a) Uᵀ, x̃ = Ψx, ỹ = Ψ⁻ᵀy.

    Attributes
    ----------
    a : (d,) eigenvalues of A, each < 1/8.
    U : (d, d) orthonormal eigenvectors of A (columns).
    Psi : (d, d) invertible input transform (identity for SDERF).
    """

    a: np.ndarray
    U: np.ndarray
    Psi: np.ndarray

    def transformed(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Ψx, Ψ⁻ᵀy) for arrays of points (..., d)."""
        return x @ self.Psi.T, y @ np.linalg.inv(self.Psi)


def check_a(a: np.ndarray) -> np.ndarray:
    """Every a_k < 1/8 (ParameterError naming the range otherwise)."""
    a = np.asarray(a, dtype=float)
    if not np.all(np.isfinite(a)) or np.any(a >= A_VARIANCE_BOUND):
        raise ParameterError(f"every eigenvalue of A must be a number in (-inf, {A_VARIANCE_BOUND}) for a finite "
                             f"variance, got max {float(np.max(a)):g}")
    return a


def log_R_directions(a: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """log R = Σ_k [log(1 − 4a_k) − ½ log(1 − 8a_k) + w_k²/(1 − 8a_k)] (module docstring), summed over the last axis,
    each term through ``crt.oprf_log_R`` with d = 1 (exact near a_k = 0).

    Parameters
    ----------
    a : (..., d) eigenvalues of A (< 1/8).
    w2 : (..., d) squared coordinates of x̃ + ỹ in A's eigenbasis.

    Returns
    -------
    np.ndarray
        log R, shape (...).

    Examples
    --------
    >>> float(log_R_directions(np.zeros(3), np.zeros(3)))
    0.0
    """
    a = check_a(a)
    rho = 1.0 / (1.0 - 8.0 * a)
    return np.sum(crt.oprf_log_R(np.asarray(w2, dtype=float), 1, rho), axis=-1)


def derf_log_R(params: DerfParams, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log R = log(E[Y²]/K²) of the DERF ``params`` at pairs (x, y) (..., d); Var/K² = R − 1 per feature.

    Examples
    --------
    >>> p = DerfParams(np.zeros(2), np.eye(2), np.eye(2))
    >>> round(float(derf_log_R(p, np.array([0.5, 0.0]), np.array([0.0, 0.5]))), 12)  # PosRF: |x + y|² = 0.5
    0.5
    """
    xt, yt = params.transformed(np.asarray(x, float), np.asarray(y, float))
    w = (xt + yt) @ params.U
    return log_R_directions(np.broadcast_to(params.a, w.shape), w * w)


def mean_log_R(params: DerfParams, xs: np.ndarray, ys: np.ndarray) -> float:
    """The batch objective: the mean of log R over every pair (x_i, y_j) of two data sets (n, d) and (n', d), in
    O((n + n')d²) through the second moments (log R is affine in the w_k²)."""
    xt, yt = params.transformed(xs, ys)
    m = _pair_second_moment(xt, yt)
    w2 = np.einsum("ik,ij,jk->k", params.U, m, params.U)
    return float(log_R_directions(params.a, w2))


def _pair_second_moment(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """mean over all pairs of (x_i + y_j)(x_i + y_j)ᵀ = M_x + M_y + x̄ȳᵀ + ȳx̄ᵀ."""
    mx, my = xs.T @ xs / len(xs), ys.T @ ys / len(ys)
    xb, yb = xs.mean(0), ys.mean(0)
    return mx + my + np.outer(xb, yb) + np.outer(yb, xb)


def _sym_sqrt(m: np.ndarray, inverse: bool = False) -> np.ndarray:
    vals, vecs = np.linalg.eigh((m + m.T) / 2)
    vals = np.clip(vals, 1e-300, None)
    return (vecs * (vals ** (-0.5 if inverse else 0.5))) @ vecs.T


def sderf_fit(xs: np.ndarray, ys: np.ndarray, psi: np.ndarray | None = None) -> DerfParams:
    """SDERF's batch optimum (module docstring): U = eigenvectors of M, a_k = A*(λ_k, 1) (``crt.A_star``), on the
    inputs transformed by ``psi`` (identity: plain SDERF).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = sderf_fit(rng.normal(size=(50, 3)), rng.normal(size=(40, 3)))
    >>> bool(np.all(p.a <= 0))
    True
    """
    d = xs.shape[-1]
    psi = np.eye(d) if psi is None else psi
    base = DerfParams(np.zeros(d), np.eye(d), psi)
    xt, yt = base.transformed(xs, ys)
    vals, vecs = np.linalg.eigh(_pair_second_moment(xt, yt))
    return DerfParams(np.asarray(crt.A_star(np.clip(vals, 0.0, None), 1), float), vecs, psi)


def saderf_psi(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Ψ = P^{1/2} with P the matrix geometric mean of M_x⁻¹ and M_y (module docstring): minimises
    tr(P M_x) + tr(P⁻¹ M_y), whose minimum is 2 tr((M_x^{1/2} M_y M_x^{1/2})^{1/2})."""
    mx, my = xs.T @ xs / len(xs), ys.T @ ys / len(ys)
    rx, rx_inv = _sym_sqrt(mx), _sym_sqrt(mx, inverse=True)
    p = rx_inv @ _sym_sqrt(rx @ my @ rx) @ rx_inv
    return _sym_sqrt(p)


def saderf_fit(xs: np.ndarray, ys: np.ndarray) -> DerfParams:
    """SADERF's batch optimum: Ψ from ``saderf_psi``, then the scalar a = A*(Z̄, d), Z̄ = mean |Ψx + Ψ⁻ᵀy|²."""
    d = xs.shape[-1]
    psi = saderf_psi(xs, ys)
    xt, yt = DerfParams(np.zeros(d), np.eye(d), psi).transformed(xs, ys)
    z_bar = float(np.trace(_pair_second_moment(xt, yt)))
    return DerfParams(np.full(d, float(crt.A_star(z_bar, d))), np.eye(d), psi)


def aderf_fit(xs: np.ndarray, ys: np.ndarray) -> DerfParams:
    """ADERF: SDERF's eigen-optimum on the inputs transformed by Ψ ∈ {I, SADERF's Ψ}, whichever gives the lower
    batch objective; so never worse than SDERF or SADERF on the same data."""
    candidates = [sderf_fit(xs, ys), sderf_fit(xs, ys, saderf_psi(xs, ys))]
    return min(candidates, key=lambda p: mean_log_R(p, xs, ys))


def oprf_batch_fit(xs: np.ndarray, ys: np.ndarray) -> DerfParams:
    """The FAVOR++ baseline in DERF form ([CRT] eq. 8): A = A*(Z̄, d) I with Z̄ = mean |x + y|², Ψ = I."""
    d = xs.shape[-1]
    z_bar = float(np.trace(_pair_second_moment(xs, ys)))
    return DerfParams(np.full(d, float(crt.A_star(z_bar, d))), np.eye(d), np.eye(d))


def derf_features(params: DerfParams, omega: np.ndarray, u: np.ndarray, side: str = "query") -> np.ndarray:
    """The DERF feature map with batch parameters (what FAVOR# attention uses): φ(u) = f(ω_i, u)/√m for the m rows
    of ``omega``, f = D e^{ωᵀAω + ωᵀ(I − 4A)^{1/2}ũ − |ũ|²/2} with ũ = Ψu (query) or Ψ⁻ᵀu (key), D⁴ = det(I − 4A),
    so that φ_query(x)·φ_key(y) is an unbiased estimate of e^{x·y} (module docstring).

    Parameters
    ----------
    params : DerfParams
        E.g. from ``sderf_fit``, ``saderf_fit`` or ``aderf_fit``.
    omega : (m, d) rows ω_i ~ N(0, I_d).
    u : (P, d) inputs.
    side : "query" or "key".

    Returns
    -------
    np.ndarray
        (P, m) positive features.

    Examples
    --------
    >>> p = DerfParams(np.zeros(2), np.eye(2), np.eye(2))
    >>> derf_features(p, np.zeros((3, 2)), np.zeros((1, 2))).shape
    (1, 3)
    """
    if side not in ("query", "key"):
        raise ParameterError(f"side must be one of query, key, got {side!r}")
    a = check_a(params.a)
    u = np.atleast_2d(np.asarray(u, dtype=float))
    ut = u @ params.Psi.T if side == "query" else u @ np.linalg.inv(params.Psi)
    w = np.asarray(omega, dtype=float) @ params.U  # ω in A's eigenbasis, (m, d)
    half = (ut @ params.U) * np.sqrt(1.0 - 4.0 * a)  # ((I − 4A)^{1/2}ũ) in the eigenbasis, (P, d)
    log_f = (0.25 * np.sum(np.log1p(-4.0 * a)) + (w * w) @ a)[None, :] + half @ w.T - 0.5 * np.sum(ut * ut, -1)[:, None]
    return np.exp(log_f - 0.5 * np.log(len(w)))


# ------------------------------------------------------------------------------ per-pair optima (the estimators)
def pair_z(x: np.ndarray, y: np.ndarray, variant: str) -> np.ndarray:
    """The squared norm |x̃ + ỹ|² a variant's per-pair parameters see, from the vectors (..., dim) without
    cancellation: |x + y|² (sderf) or, with Ψ = λI and λ² = |y|/|x| (the pair's own norms; x̃, ỹ both of norm
    √(|x||y|)), |x||y|·|x/|x| + y/|y||² = 2|x||y| + 2x·y ≤ |x + y|² (aderf, saderf; 0 when x or y is 0)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if variant == "sderf":
        return np.sum((x + y) ** 2, axis=-1)
    nx, ny = np.linalg.norm(x, axis=-1), np.linalg.norm(y, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit_sum = x / nx[..., None] + y / ny[..., None]
    return np.where((nx > 0) & (ny > 0), nx * ny * np.sum(np.nan_to_num(unit_sum) ** 2, axis=-1), 0.0)


def pair_log_R(x: np.ndarray, y: np.ndarray, d: int, variant: str) -> np.ndarray:
    """log R at each pair (x, y) (..., dim) with the variant's per-pair optimal parameters: one direction (that of
    x̃ + ỹ) with a = A*(Z, 1) for sderf and aderf; the scalar a = A*(Z, d) over all d directions for saderf (OPRF
    on x̃, ỹ); Z = ``pair_z``.

    Examples
    --------
    >>> x, y = np.array([1.0, 0.0]), np.array([0.0, 2.0])
    >>> bool(pair_log_R(x, y, 4, "aderf") < pair_log_R(x, y, 4, "sderf"))
    True
    """
    return crt.oprf_log_R(pair_z(x, y, variant), d if variant == "saderf" else 1)


__all__ = ["A_FOURTH_MOMENT_BOUND", "A_VARIANCE_BOUND", "DerfParams", "aderf_fit", "check_a", "derf_features",
           "derf_log_R",
           "log_R_directions", "mean_log_R", "oprf_batch_fit", "pair_log_R", "pair_z", "saderf_fit", "saderf_psi",
           "sderf_fit"]
