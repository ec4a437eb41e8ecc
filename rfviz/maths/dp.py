"""Dot-product kernel features: the maths (closed forms, input geometry, samplers of the weight entries).

Source: Wacker, Kanagawa, Filippone, "Improved Random Features for Dot Product Kernels" ([DP]);
formulas re-derived and checked by Monte Carlo.

Everything hinges on four scalars per pair ([DP] §2): |x|², |y|², t = x·y and the coordinate-dependent
S = Σ_k x_k² y_k². The closed forms here work on a normalised :class:`DotStats` (τ = t²/(|x|²|y|²),
s = S/(|x|²|y|²), w = 1 − τ computed without cancellation) so that every variance is (|x|²|y|²)^p times an
O(1) number: logs never overflow and M^p − t^{2p} is evaluated as a difference of powers
without cancellation.

Weight entries z = a + ib have E a² = q, E b² = 1 − q, E ab = 0 (Eq. 15). Every formula depends on q only
through ρ² = (2q−1)² and on the law of z only through μ4 = E|z|⁴ (Eq. 61), which is why four ``basis`` families
with a common q are offered:

* ``rademacher``: z = √q·v + i√(1−q)·w, v, w independent ±1 (q = 1 real Rademacher, q = ½ Ex. 2), μ4 = 1;
* ``plus_minus_i``: z ∈ {±1} with probability q, {±i} otherwise (q = ½ is Ex. 4), μ4 = 1;
* ``unit_circle``: z = e^{iφ}, φ uniform with probability 1 − |2q−1|, else z ∈ {±1} (q > ½) or {±i} (q < ½);
  q = ½ is the uniform unit circle, μ4 = 1;
* ``gaussian``: a ~ N(0, q), b ~ N(0, 1−q) (the reference's "q-Gaussian", F1c), μ4 = (2q−1)² + 2.

Embeddings of (r, θ) in R^d: ``canonical`` (x = r e1; S = t², so q has no effect), ``flat``
(x = r𝟙/√d, y = r(cos θ 𝟙/√d + sin θ v), v = (+1, −1, …)/√d; S = r⁴/d; needs even d) and
``rotation_average`` (the closed form averaged over ROTATIONS fixed Haar-random orientations of the pair). The
last is an average over pairs, not one pair: its pair function returns an extra axis −2 of length ROTATIONS,
over which MSEs are averaged in linear space (the dot-product estimators and ``python -m rfviz mse`` do so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from scipy.special import gammainc, gammaln, logsumexp

from ..geometry import EMBEDDINGS, canonical_pair, check_d, check_r, check_theta
from ..params import Cost, ParameterError, require_cost
from ..sampling import spawn_seed

BASES = ("rademacher", "gaussian", "plus_minus_i", "unit_circle")
UNIT_MODULUS_BASES = ("rademacher", "plus_minus_i", "unit_circle")
VARIANCES = ("complex", "real_part")
ROTATIONS = 256
"""Number of fixed Haar-random orientations in the ``rotation_average`` embedding."""
ROTATION_SEED = 20240611
ROTATIONS_KEY, UNIT_VECTORS_KEY = 0, 1
"""Children of ``ROTATION_SEED`` (the one seed rule, ``rfviz.sampling.spawn_seed(ROTATION_SEED, key, d)``): the
fixed orientations of ``rotation_average`` and the reference unit vectors, per dimension d."""


# ----------------------------------------------------------------------------- parameters of the weights
def rho2(q: float) -> float:
    """ρ² = (E z²)² = (2q − 1)², the only way q enters any formula ([DP] §2)."""
    return (2.0 * q - 1.0) ** 2


def fourth_moment(basis: str, q: float) -> float:
    """μ4 = E|z|⁴ of one weight entry: 1 for |z| = 1 families, (2q−1)² + 2 for the q-Gaussian ([DP] §2)."""
    if basis not in BASES:
        raise ParameterError(f"basis must be one of {', '.join(BASES)}, got {basis!r}")
    return rho2(q) + 2.0 if basis == "gaussian" else 1.0


def padded_dim(d: int) -> int:
    """TensorSRHT pads inputs with zeros to the next power of two, at least 2 ([DP] Alg. 1)."""
    d = check_d(d)
    return max(2, 1 << (d - 1).bit_length())


def block_pairs(num_features: int | np.ndarray, d: int) -> np.ndarray:
    """c(D, d) = ⌊D/d⌋·d(d−1) + (D mod d)(D mod d − 1): ordered within-block feature pairs (Eq. 29)."""
    D = np.asarray(num_features)
    rem = D % d
    return (D // d) * d * (d - 1) + rem * (rem - 1)


# ----------------------------------------------------------------------------- pair statistics
@dataclass(frozen=True)
class DotStats:
    """Normalised statistics of pairs (broadcast arrays): everything a dot-product closed form needs.

    ``log_nn`` = log(|x|²|y|²); ``tau`` = t²/(|x|²|y|²) = cos²θ; ``w`` = 1 − τ = sin²θ (computed from the
    component of y orthogonal to x, so it is accurate near θ = 0); ``s`` = S/(|x|²|y|²) with
    S = Σ_k x_k² y_k²; ``sign_t`` = sign(x·y); ``sum_sq`` = |x|² + |y|²; ``d`` = input dimension.
    Pairs with x = 0 or y = 0 get log_nn = −inf and harmless placeholders.
    """

    log_nn: np.ndarray
    tau: np.ndarray
    w: np.ndarray
    s: np.ndarray
    sign_t: np.ndarray
    sum_sq: np.ndarray
    d: int
    delta_value: np.ndarray | None = None
    rest_value: np.ndarray | None = None

    @property
    def delta(self) -> np.ndarray:
        """Δ/(|x|²|y|²) with Δ = t² − S = Σ_{i≠j} x_i x_j y_i y_j (Eq. 22 is Δ ≥ 0): ``delta_value`` where the pairs
        gave it (``from_pairs``, summed without cancellation), else τ − s (exact for the angle embeddings, where
        τ and s come from the same cos θ)."""
        return self.tau - self.s if self.delta_value is None else self.delta_value

    @property
    def rest(self) -> np.ndarray:
        """1 − s = (|x|²|y|² − S)/(|x|²|y|²) = Σ_{k≠l} x_k²y_l²/(|x|²|y|²): ``rest_value`` where the pairs gave it
        (a sum of non-negative terms), else 1 − s."""
        return 1.0 - self.s if self.rest_value is None else self.rest_value

    @property
    def log_abs_t(self) -> np.ndarray:
        """log|x·y|."""
        with np.errstate(divide="ignore"):
            return 0.5 * (self.log_nn + np.log(self.tau))

    @classmethod
    def from_pairs(cls, x: np.ndarray, y: np.ndarray) -> DotStats:
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if x.shape[-1] != y.shape[-1]:
            raise ParameterError(f"x and y must have the same dimension, got {x.shape[-1]} and {y.shape[-1]}")
        x, y = np.broadcast_arrays(x, y)
        xx = np.sum(x * x, -1)
        yy = np.sum(y * y, -1)
        t = np.sum(x * y, -1)
        nn = xx * yy
        ok = nn > 0
        safe_xx = np.where(xx > 0, xx, 1.0)
        y_perp = y - (t / safe_xx)[..., None] * x
        safe_nn = np.where(ok, nn, 1.0)
        w = np.where(ok, xx * np.sum(y_perp * y_perp, -1) / safe_nn, 1.0)
        w = np.clip(w, 0.0, 1.0)
        with np.errstate(divide="ignore"):
            log_nn = np.log(nn)
        # Δ = t² − S = 2Σ_{i<j} p_i p_j (p = x∘y) from running sums: (1 − w) − s would leave the round-off of two
        # O(1) numbers where Δ ≪ |x|²|y|² (e.g. Δ = 0 exactly for x ∥ e1, against w = sin²θ ~ 1e-16)
        prod = x * y
        delta = 2.0 * np.sum(prod * _exclusive_sums(prod, before=True), -1)
        # |x|²|y|² − S = Σ_k x_k²·Σ_{l≠k} y_l², the inner sums from prefix and suffix sums (no cancellation)
        y2 = y * y
        rest = np.sum(x * x * (_exclusive_sums(y2, before=True) + _exclusive_sums(y2, before=False)), -1)
        return cls(
            log_nn=log_nn,
            tau=np.where(ok, np.clip(1.0 - w, 0.0, 1.0), 0.0),
            w=w,
            s=np.where(ok, np.sum(x * x * y * y, -1) / safe_nn, 0.0),
            sign_t=np.sign(t),
            sum_sq=xx + yy,
            d=int(x.shape[-1]),
            delta_value=np.where(ok, delta / safe_nn, 0.0),
            rest_value=np.where(ok, rest / safe_nn, 1.0),
        )

    @classmethod
    def from_angle(cls, r: np.ndarray, theta: np.ndarray, s: np.ndarray, d: int) -> DotStats:
        """Equal norms r, angle θ and a given normalised S (broadcast)."""
        r, theta, s = np.broadcast_arrays(np.asarray(r, float), np.asarray(theta, float), np.asarray(s, float))
        c = np.cos(theta)
        with np.errstate(divide="ignore"):
            log_nn = 4.0 * np.log(r)
        return cls(log_nn=log_nn, tau=c * c, w=np.sin(theta) ** 2, s=s, sign_t=np.sign(np.where(r > 0, c, 0.0)),
                   sum_sq=2.0 * r * r, d=d)


# ----------------------------------------------------------------------------- embeddings of (r, θ)
def flat_pair(r: np.ndarray | float, theta: np.ndarray | float, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Reference §7 "flat" pair: x = r𝟙/√d, y = r(cos θ·𝟙/√d + sin θ·v), v = (+1, −1, …)/√d; S = r⁴/d.

    Every coordinate has the same magnitude, so Δ = r⁴(cos²θ − 1/d) and complex beats real iff cos²θ > 1/d.
    Needs an even d.
    """
    r = check_r(r)
    theta = check_theta(theta)
    d = check_d(d)
    if d % 2:
        raise ParameterError(f"d must be an even integer for embedding=flat, got {d}")
    r, theta = np.broadcast_arrays(r, theta)
    u = np.ones(d) / math.sqrt(d)
    v = np.tile([1.0, -1.0], d // 2) / math.sqrt(d)
    x = r[..., None] * u
    y = r[..., None] * (np.cos(theta)[..., None] * u + np.sin(theta)[..., None] * v)
    return x, y


def rotation_frames_bytes(d: int) -> float:
    """Peak bytes of building the ``rotation_average`` frames in R^d: ROTATIONS Gaussian (d, 2) blocks, their QR and
    the (u, v) kept (about five copies of ROTATIONS·2·d numbers).

    Parameters
    ----------
    d : int
        Input dimension.

    Returns
    -------
    float
        Peak bytes.

    Examples
    --------
    >>> rotation_frames_bytes(1000) == 5 * 8 * 256 * 2 * 1000
    True
    """
    return 5 * 8.0 * ROTATIONS * 2 * d


def _frames(d: int) -> tuple[np.ndarray, np.ndarray]:
    """``_rotation_frames(d)``, refused up front (ParameterError) where building them exceeds the memory budget."""
    require_cost(f"the rotation_average embedding in d = {d} ({ROTATIONS} orientations)",
                 Cost(rotation_frames_bytes(d)), "use a smaller d or embedding=canonical")
    return _rotation_frames(d)


@lru_cache(maxsize=32)
def _rotation_frames(d: int) -> tuple[np.ndarray, np.ndarray]:
    """ROTATIONS fixed Haar-random orthonormal pairs (u, v) in R^d, each of shape (ROTATIONS, d)."""
    rng = np.random.default_rng(spawn_seed(ROTATION_SEED, ROTATIONS_KEY, d))
    g = rng.standard_normal((ROTATIONS, d, 2))
    q, rr = np.linalg.qr(g)
    q = q * np.sign(np.diagonal(rr, axis1=-2, axis2=-1))[:, None, :]
    u, v = q[..., 0], q[..., 1]
    u.setflags(write=False)
    v.setflags(write=False)
    return u, v


def rotation_average_pairs(r: np.ndarray | float, theta: np.ndarray | float,
                           d: int) -> tuple[np.ndarray, np.ndarray]:
    """The pair at (r, θ) in ROTATIONS fixed Haar-random orientations: arrays of shape (..., ROTATIONS, d).

    Not one pair: MSEs at these pairs are to be averaged (in linear space) over axis −2 of the input, i.e. the
    last axis of the MSE. Reference §7 item 3 ("semi-analytic" random orientation); E_rot[S] = r⁴(1+2cos²θ)/(d+2).
    """
    r = check_r(r)
    theta = check_theta(theta)
    d = check_d(d)
    if d < 2:
        raise ParameterError(f"d must be an integer in [2, inf) for embedding=rotation_average, got {d}")
    u, v = _frames(d)
    r, theta = np.broadcast_arrays(r, theta)
    rr = r[..., None, None]
    x = rr * u
    y = rr * (np.cos(theta)[..., None, None] * u + np.sin(theta)[..., None, None] * v)
    return x, y


def rotation_s_moments(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Σu⁴, Σu³v, Σu²v²) per fixed orientation, so that S/r⁴ = c²A + 2csB + s²C without building pairs."""
    u, v = _frames(d)
    return np.sum(u**4, -1), np.sum(u**3 * v, -1), np.sum(u * u * v * v, -1)


def expected_rotation_s(r: np.ndarray | float, theta: np.ndarray | float, d: int) -> np.ndarray:
    """E_rot[S] = r⁴(1 + 2cos²θ)/(d + 2) for a Haar-random orientation (derived and
    verified)."""
    return np.asarray(r, float) ** 4 * (1.0 + 2.0 * np.cos(theta) ** 2) / (d + 2.0)


EMBEDDINGS.setdefault("flat", flat_pair)
EMBEDDINGS.setdefault("rotation_average", rotation_average_pairs)
AVERAGED_EMBEDDINGS = ("rotation_average",)
"""Embeddings that return a stack of pairs (axis −2) whose MSEs are averaged."""


def grid_stats(r: np.ndarray | float, theta: np.ndarray | float, d: int, embedding: str = "canonical") -> DotStats:
    """DotStats of the pairs at (r, θ) under an embedding, without building d-vectors.

    For ``rotation_average`` the result has an extra last axis of length ROTATIONS (average the MSE over it).
    """
    r = check_r(r)
    theta = check_theta(theta)
    d = check_d(d)
    c, s_ = np.cos(theta), np.sin(theta)
    if embedding == "canonical":
        canonical_pair(0.0, theta, d)  # validates θ against d = 1
        return DotStats.from_angle(r, theta, c * c, d)
    if embedding == "flat":
        flat_pair(0.0, 0.0, d)  # validates d
        return DotStats.from_angle(r, theta, np.full(np.broadcast(r, theta).shape, 1.0 / d), d)
    if embedding == "rotation_average":
        rotation_average_pairs(0.0, 0.0, d)  # validates d
        a, b, cc = rotation_s_moments(d)
        c, s_ = c[..., None], s_[..., None]
        return DotStats.from_angle(np.asarray(r)[..., None], np.asarray(theta)[..., None],
                                   c * c * a + 2.0 * c * s_ * b + s_ * s_ * cc, d)
    raise ParameterError(f"embedding must be one of {', '.join(EMBEDDINGS)}, got {embedding!r}")


def log_mean_exp(log_values: np.ndarray, axis: int = -1) -> np.ndarray:
    """log of the mean of e^{log_values} along an axis (−inf entries allowed)."""
    lv = np.asarray(log_values, float)
    if np.all(np.isneginf(lv)):
        return np.full(np.delete(lv.shape, axis % lv.ndim), -np.inf) if lv.ndim > 1 else np.array(-np.inf)
    return logsumexp(lv, axis=axis) - math.log(lv.shape[axis])


# ----------------------------------------------------------------------------- difference of powers
def _exclusive_sums(v: np.ndarray, before: bool) -> np.ndarray:
    """Σ_{j<k} v_j (``before``) or Σ_{j>k} v_j at each k over the last axis, as shifted running sums (not
    cumsum − v, which leaves the round-off of v_k where v_k dominates)."""
    zero = np.zeros_like(v[..., :1])
    if before:
        return np.concatenate([zero, np.cumsum(v[..., :-1], -1)], -1)
    return np.concatenate([np.flip(np.cumsum(np.flip(v[..., 1:], -1), -1), -1), zero], -1)


def power_gap(base: np.ndarray, gap: np.ndarray, p: int) -> np.ndarray:
    """(base + gap)^p − base^p for base ≥ 0, without cancellation when |gap| ≪ base.

    Uses base^p·expm1(p·log1p(gap/base)) where |gap| < base, the direct difference elsewhere.
    """
    base, gap = np.broadcast_arrays(np.asarray(base, float), np.asarray(gap, float))
    total = base + gap
    good = (base > 0) & (np.abs(gap) < base)  # where cancellation can bite; elsewhere the direct form is exact
    safe_base = np.where(good, base, 1.0)
    ratio = np.where(good, gap / safe_base, 0.0)
    smooth = safe_base**p * np.expm1(p * np.log1p(ratio))
    return np.where(good, smooth, total**p - base**p)


def _log_nonneg(value: np.ndarray) -> np.ndarray:
    """log of a variance computed in linear space; round-off negatives become −inf."""
    v = np.asarray(value, float)
    with np.errstate(divide="ignore"):
        return np.log(np.where(v > 0, v, 0.0))


# ----------------------------------------------------------------------------- Theorem 2 family
def moment_gap(st: DotStats, q: float, mu4: float) -> np.ndarray:
    """(M − t²)/(|x|²|y|²) ≥ 0 with M = μ4 S + |x|²|y|² − S + κ(q)(t² − S) (Eq. 16 bracket).

    Cancellation-free form: (|x|²|y|² − t²) + κΔ + (μ4 − 1)S. NB a form with (κ − 1)Δ here is
    off by Δ; the form above agrees with Eq. 16.
    """
    return np.maximum(st.w + (1.0 + rho2(q)) * st.delta + (mu4 - 1.0) * st.s, 0.0)


def pseudo_moment_gap(st: DotStats, q: float, mu4: float) -> np.ndarray:
    """(M' − t²)/(|x|²|y|²) with M' = μ4 S + ρ²(|x|²|y|² − S) + 2(t² − S) (derived)."""
    return (mu4 - 1.0) * st.s + rho2(q) * st.rest + st.delta


def var_poly_normalised(st: DotStats, p: int, q: float, mu4: float, num_features: int | np.ndarray,
                        variance: str = "complex") -> np.ndarray:
    """Variance of the D-feature polynomial sketch divided by (|x|²|y|²)^p.

    complex: (M^p − t^{2p})/D (Theorem 2, Eq. 16; Eqs. 18–21 at (q, μ4) = (1,1), (½,1), (1,3), (½,2));
    real_part: (½(M^p + M'^p) − t^{2p})/D (derived and verified).
    """
    full = power_gap(st.tau, moment_gap(st, q, mu4), p)
    if variance == "real_part":
        full = 0.5 * (full + power_gap(st.tau, pseudo_moment_gap(st, q, mu4), p))
    elif variance != "complex":
        raise ParameterError(f"variance must be one of {', '.join(VARIANCES)}, got {variance!r}")
    return full / np.asarray(num_features, float)


def log_var_poly(st: DotStats, p: int, q: float, mu4: float, num_features: int | np.ndarray,
                 variance: str = "complex") -> np.ndarray:
    """Natural log of the polynomial-sketch variance ([DP] Theorem 2, eq. 16); −inf where exact."""
    return p * st.log_nn + _log_nonneg(var_poly_normalised(st, p, q, mu4, num_features, variance))


# ----------------------------------------------------------------------------- TensorSRHT
def single_degree_var(st: DotStats, q: float) -> np.ndarray:
    """V_q^{(1)}/(|x|²|y|²) = 1 − s + ρ²Δ (Eq. 17 with p = 1, μ4 = 1)."""
    return st.rest + rho2(q) * st.delta


def tsrht_parts(st: DotStats, p: int, q: float, d_pad: int) -> tuple[np.ndarray, np.ndarray]:
    """(V_q^{(p)}, Cov_q^{(p)}) / (|x|²|y|²)^p: one-feature variance and within-block covariance (App. C)."""
    v = power_gap(st.tau, moment_gap(st, q, 1.0), p)
    cov = power_gap(st.tau, -single_degree_var(st, q) / (d_pad - 1), p)
    return v, cov


def var_tsrht_normalised(st: DotStats, p: int, q: float, num_features: int | np.ndarray,
                         variance: str = "complex", d_pad: int | None = None) -> np.ndarray:
    """TensorSRHT variance / (|x|²|y|²)^p with an independent permutation per (block, degree).

    complex: V/D + c(D,d)/D²·Cov (Theorem 10, Eq. 33; Theorem 5, Eq. 28 at q = 1); d is the padded
    dimension. real_part: ½(that + PV), PV = (M'^p − t^{2p})/D + c/D²·(C'^p − t^{2p}),
    C' = t² − [Δ + ρ²(|x|²|y|² − S)]/(d − 1) (derived and verified).
    Not monotone in D: it jumps up when a new block starts ([DP] Fig. 12). Round-off below 0 is clipped to 0.
    """
    d_pad = padded_dim(st.d) if d_pad is None else d_pad
    full = _tsrht_sum(st.tau, single_degree_var(st, q), p, num_features, d_pad)
    if variance == "real_part":
        pseudo = _tsrht_sum(st.tau, st.delta + rho2(q) * st.rest, p, num_features, d_pad)
        full = 0.5 * (full + pseudo)
    elif variance != "complex":
        raise ParameterError(f"variance must be one of {', '.join(VARIANCES)}, got {variance!r}")
    return np.maximum(full, 0.0)


def _tsrht_sum(tau: np.ndarray, gap: np.ndarray, p: int, num_features: int | np.ndarray, d_pad: int) -> np.ndarray:
    """((τ + g)^p − τ^p)/D + c/D²·((τ − g/(d − 1))^p − τ^p) = Σ_{k≥1} C(p, k)τ^{p−k}g^k·β_k, β_k = 1/D +
    (c/D²)(−1/(d − 1))^k, with g = M − t² = V1 (the same number: (|x|²|y|² − t²) + κΔ = (|x|²|y|² − S) + ρ²Δ, μ4 = 1;
    normalised by |x|²|y|²). The first-order terms of the variance and the covariance cancel (exactly for D ∈ dℕ,
    where β_1 = 0), so β_1 = (D(d − 1) − c)/(D²(d − 1)) is formed from integers and the rest carries no cancellation:
    the variance stays exact where it is O(g²) (θ → 0, or p = 1)."""
    tau, gap = np.broadcast_arrays(np.asarray(tau, float), np.asarray(gap, float))
    D = np.asarray(num_features, float)
    pairs = np.asarray(block_pairs(np.asarray(num_features), d_pad), float)
    total = np.zeros(np.broadcast(tau, D).shape)
    for k in range(1, p + 1):
        if k == 1:
            beta = (D * (d_pad - 1) - pairs) / (D**2 * (d_pad - 1))
        else:
            beta = 1.0 / D + pairs / D**2 * (-1.0 / (d_pad - 1)) ** k
        total = total + math.comb(p, k) * tau ** (p - k) * gap**k * beta
    return total


def log_var_tsrht(st: DotStats, p: int, q: float, num_features: int | np.ndarray, variance: str = "complex",
                  d_pad: int | None = None) -> np.ndarray:
    """Natural log of the TensorSRHT variance ([DP] Theorem 10, eq. 33); −inf where exact (p = 1, D a multiple of d)."""
    return p * st.log_nn + _log_nonneg(var_tsrht_normalised(st, p, q, num_features, variance, d_pad))


def surrogate_tsrht_normalised(st: DotStats, p: int, q: float, num_features: int | np.ndarray,
                               d_pad: int | None = None) -> np.ndarray:
    """Convex surrogate of the TensorSRHT variance (Eq. 72/73, [DP] eqs. 72–73), / (|x|²|y|²)^p:
    (V + (d−1)Cov)/D if Cov > 0 or D > d, else (V − Cov)/D + Cov. Equals the exact variance on {1..d} ∪ dℕ."""
    d_pad = padded_dim(st.d) if d_pad is None else d_pad
    D = np.asarray(num_features, float)
    v, cov = tsrht_parts(st, p, q, d_pad)
    return np.maximum(np.where((cov > 0) | (D > d_pad), (v + (d_pad - 1) * cov) / D, (v - cov) / D + cov), 0.0)


# ----------------------------------------------------------------------------- Maclaurin
MACLAURIN_KERNELS = ("exponential", "gaussian", "polynomial")


def log_maclaurin_coefficients(kernel: str, n_max: int, kernel_degree: int = 3, nu: float = 1.0) -> np.ndarray:
    """log a_n, n = 0..n_max, of k(x, y) = Σ a_n (x·y)^n (−inf where a_n = 0).

    exponential / gaussian: a_n = 1/n! (Eq. 38 with l = 1; the Gaussian kernel is the weighted exponential
    kernel, Eq. 39); polynomial (x·y + ν)^P: a_n = C(P, n) ν^{P−n} (Eq. 37).
    """
    n = np.arange(n_max + 1, dtype=float)
    if kernel in ("exponential", "gaussian"):
        return -gammaln(n + 1.0)
    if kernel != "polynomial":
        raise ParameterError(f"kernel must be one of {', '.join(MACLAURIN_KERNELS)}, got {kernel!r}")
    big_p = int(kernel_degree)
    out = np.full(n_max + 1, -np.inf)
    k = n[n <= big_p]
    with np.errstate(divide="ignore"):
        log_nu = math.log(nu) if nu > 0 else -np.inf
        comb = gammaln(big_p + 1.0) - gammaln(k + 1.0) - gammaln(big_p - k + 1.0)
        out[: len(k)] = comb + np.where(big_p - k > 0, (big_p - k) * log_nu, 0.0)
    return out


def log_abs_truncation_bias(kernel: str, st: DotStats, p: int, kernel_degree: int = 3,
                            nu: float = 1.0) -> np.ndarray:
    """log|k − Σ_{n≤p} a_n t^n| of the exponential or polynomial kernel (without the Gaussian prefactor).

    exponential, t ≥ 0: e^t·P(p+1, t) (regularised lower incomplete gamma); t < 0: the alternating tail
    Σ_{n>p} t^n/n! when |t| < p + 1 (decreasing terms), else e^t − Σ_{n≤p} t^n/n!.
    polynomial: the finite tail Σ_{n=p+1}^{P} a_n t^n.
    """
    t = st.sign_t * np.exp(st.log_abs_t)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if kernel == "polynomial":
            log_a = log_maclaurin_coefficients(kernel, max(kernel_degree, p), kernel_degree, nu)
            tail = np.zeros_like(t)
            for n in range(p + 1, kernel_degree + 1):
                tail = tail + np.exp(log_a[n]) * t**n
            return np.log(np.abs(tail))
        pos = t >= 0
        lower = gammainc(p + 1.0, np.where(pos, t, 0.0))
        out_pos = np.where(pos, t, 0.0) + np.log(lower)
        small = (~pos) & (np.abs(t) < p + 1)
        n_terms = np.arange(p + 1, p + 80, dtype=float)
        ts = np.where(small, t, 0.0)[..., None]
        tail = np.sum(np.sign(ts) ** n_terms * np.exp(n_terms * np.log(np.abs(ts)) - gammaln(n_terms + 1.0)), -1)
        n_head = np.arange(p + 1, dtype=float)
        tb = np.where(~pos & ~small, t, -1.0)[..., None]
        head = np.sum(np.sign(tb) ** n_head * np.exp(n_head * np.log(np.abs(tb)) - gammaln(n_head + 1.0)), -1)
        out_big = np.log(np.abs(np.exp(np.where(~pos & ~small, t, 0.0)) - head))
        out = np.where(pos, out_pos, np.where(small, np.log(np.abs(tail)), out_big))
    return np.where(st.log_nn == -np.inf, -np.inf, out)


def log_kernel_dot(kernel: str, st: DotStats, kernel_degree: int = 3, nu: float = 1.0) -> tuple[np.ndarray,
                                                                                                   np.ndarray]:
    """(log|k|, sign k) for the Maclaurin targets: e^{x·y}, e^{−|x−y|²/2}, (x·y + ν)^P."""
    t = st.sign_t * np.exp(st.log_abs_t)
    if kernel == "exponential":
        return t, np.ones_like(t)
    if kernel == "gaussian":
        return t - 0.5 * st.sum_sq, np.ones_like(t)
    with np.errstate(divide="ignore"):
        return kernel_degree * np.log(np.abs(t + nu)), np.sign(t + nu) ** kernel_degree


def degree_log_var(st: DotStats, n: int, num_features: int | np.ndarray, *, sketch: str, q: float, mu4: float,
                   variance: str) -> np.ndarray:
    """log Var_n of the degree-n sketch with D_n features (unstructured: [DP] Theorem 2; TensorSRHT: Theorem 10)."""
    if sketch == "tensor_srht":
        return log_var_tsrht(st, n, q, num_features, variance)
    return log_var_poly(st, n, q, mu4, num_features, variance)


def log_mse_optimized_maclaurin(st: DotStats, log_a: np.ndarray, alloc: list[int] | tuple[int, ...], *,
                                kernel: str, sketch: str = "poly", q: float = 0.5, mu4: float = 1.0,
                                variance: str = "complex", kernel_degree: int = 3,
                                nu: float = 1.0) -> np.ndarray:
    """log MSE of k̂ = a_0 + Σ_{n≤p} a_n Φ_n(x)ᵀconj Φ_n(y), p = len(alloc) (Eq. 44; [DP] eqs. 45–51).

    Var = Σ_{D_n>0} a_n² Var_n(D_n) (Eq. 47), bias = Σ_{n>p} a_n t^n plus a_n t^n for degrees with D_n = 0
    (Eq. 48); Gaussian kernel: MSE × e^{−|x|²−|y|²} (Eq. 55, the squared prefactor).
    """
    if any(int(dn) < 1 for dn in alloc):
        raise ParameterError(f"alloc must give every degree 1..{len(alloc)} at least one feature, got {list(alloc)}")
    terms = [2.0 * log_a[n] + degree_log_var(st, n, dn, sketch=sketch, q=q, mu4=mu4, variance=variance)
             for n, dn in enumerate(alloc, start=1) if np.isfinite(log_a[n])]
    log_var = logsumexp(np.stack(terms), axis=0) if terms else np.full(np.shape(st.log_nn), -np.inf)
    kern = "exponential" if kernel == "gaussian" else kernel
    out = np.logaddexp(log_var, 2.0 * log_abs_truncation_bias(kern, st, len(alloc), kernel_degree, nu))
    if kernel == "gaussian":
        out = out - st.sum_sq
    return out


def kar_karnick_measure(p: int, c: float = 2.0) -> np.ndarray:
    """μ(n) ∝ c^{−(n+1)} on n = 1..p, renormalised (Kar & Karnick; [DP] eqs. 40–43). Index
    n − 1."""
    if not c > 1:
        raise ParameterError(f"c must be a number in (1, inf), got {c:g}")
    mu = c ** -(np.arange(1, p + 1, dtype=float) + 1.0)
    return mu / mu.sum()


def log_var_random_maclaurin(st: DotStats, log_a: np.ndarray, mu: np.ndarray, num_features: int, *, q: float,
                             mu4: float, variance: str = "complex") -> np.ndarray:
    """log Var of random Maclaurin with degree measure μ on {1..p} and a_0 exact (derived):

    Var_D = (1/D)[Σ_n a_n² M^n/μ(n) − (Σ_n a_n t^n)²], evaluated as the sum of two non-negative parts,
    Σ_n (a_n²/μ_n)(M^n − t^{2n}) and the variance over n ~ μ of a_n t^n/μ_n (no cancellation). For
    variance=real_part, M^n is replaced by ½(M^n + M'^n) (the same derivation with Re).
    """
    p = len(mu)
    log_mu = np.log(mu)
    parts = []
    for n in range(1, p + 1):
        if not np.isfinite(log_a[n]):
            continue
        parts.append(2.0 * log_a[n] - log_mu[n - 1] + log_var_poly(st, n, q, mu4, 1, variance))
    with np.errstate(divide="ignore"):
        ln = np.arange(1, p + 1)[:, None]
        log_y = log_a[1:p + 1, None] - log_mu[:, None] + ln * np.reshape(st.log_abs_t, (1, -1))  # (p, N)
        sign = np.where(ln % 2 == 1, np.reshape(st.sign_t, (1, -1)), 1.0)
        top = np.max(np.where(np.isfinite(log_y), log_y, -np.inf), axis=0)
        top = np.where(np.isfinite(top), top, 0.0)
        y = np.where(np.isfinite(log_y), sign * np.exp(log_y - top), 0.0)
        mean = np.sum(mu[:, None] * y, 0)
        spread = np.sum(mu[:, None] * (y - mean) ** 2, 0)
        log_spread = (2.0 * top + np.log(spread)).reshape(np.shape(st.log_nn))
    log_total = logsumexp(np.stack([*parts, log_spread]), axis=0)
    return log_total - math.log(num_features)


# ----------------------------------------------------------------------------- allocation (Alg. 2, Alg. 3)
def greedy_allocation(cost_table: np.ndarray, total: int) -> np.ndarray:
    """Algorithm 2: start at D_n = 1 and add features one at a time to the degree whose cost drops most,
    stopping at Σ D_n = total. cost_table[n−1, D−1] = cost of degree n with D features."""
    p = cost_table.shape[0]
    if total < p:
        raise ParameterError(f"m must be an integer in [{p}, inf) to give every degree 1..{p} a feature, got {total}")
    alloc = np.ones(p, dtype=int)
    rows = np.arange(p)
    while alloc.sum() < total:
        gains = cost_table[rows, alloc - 1] - cost_table[rows, alloc]
        alloc[int(np.argmax(gains))] += 1
    return alloc


@dataclass(frozen=True)
class MaclaurinPlan:
    """Result of Algorithm 3: chosen degree p*, allocation D_n, objective g = mean Var + mean bias²."""

    p: int
    alloc: tuple[int, ...]
    objective: float
    variance: float
    bias2: float
    table: tuple[tuple[int, tuple[int, ...], float], ...]  # (p, alloc, g) for every scanned p


_GREEDY_STEP_SECONDS = 25e-6
"""One step of Algorithm 2's greedy loop (one feature added): ~15 µs measured on one idle core, kept pessimistic."""


def optimize_maclaurin_cost(total: int, p_max: int = 10, pairs: int = 64) -> Cost:
    """Cost of ``optimize_maclaurin`` before it runs: p_max greedy loops of ``total`` steps, cost tables of
    (total × pairs) float64 per degree (~10 temporaries) and (p_max × total) for the table.

    Parameters
    ----------
    total : int
        Number of features m to allocate.
    p_max : int
        Largest degree scanned.
    pairs : int
        Pairs the variance is averaged over.

    Returns
    -------
    Cost
        Peak memory (bytes) and time (seconds, one core).

    Examples
    --------
    >>> optimize_maclaurin_cost(10_000_000).nbytes > 2**30
    True
    """
    steps = float(max(1, min(p_max, total))) * float(total)
    return Cost(nbytes=float(total) * (10 * pairs * 8 + 2 * max(p_max, 1) * 8),
                seconds=steps * _GREEDY_STEP_SECONDS)


def optimize_maclaurin(st: DotStats, *, kernel: str, total: int, p_min: int = 1, p_max: int = 10,
                       sketch: str = "poly", q: float = 0.5, mu4: float = 1.0, variance: str = "complex",
                       kernel_degree: int = 3, nu: float = 1.0) -> MaclaurinPlan:
    """Algorithm 3 (with Algorithm 2 inside): scan p ∈ [p_min, min(p_max, total)], allocate D_n greedily to
    minimise the pair-averaged variance Σ_n a_n² mean Var_n(D_n), pick the p minimising g = that + mean bias²
    ([DP] eqs. 45–51). TensorSRHT uses the convex surrogate (eqs. 72–73) inside the objective, as the paper does.
    Gaussian kernel: every term is weighted by the squared prefactor (Eq. 55)."""
    if kernel == "polynomial":
        p_max = min(p_max, kernel_degree)
    require_cost(f"Algorithm 3's allocation of m = {total} features", optimize_maclaurin_cost(
        total, p_max, int(np.size(st.log_nn))), "lower m")
    n_top = max(p_max, 1)
    log_a = log_maclaurin_coefficients(kernel, n_top, kernel_degree, nu)
    flat = DotStats(*(np.ravel(np.broadcast_to(f, np.shape(st.log_nn))) for f in
                      (st.log_nn, st.tau, st.w, st.s, st.sign_t, st.sum_sq)), d=st.d,
                    delta_value=np.ravel(np.broadcast_to(st.delta, np.shape(st.log_nn))),
                    rest_value=np.ravel(np.broadcast_to(st.rest, np.shape(st.log_nn))))
    weight = -flat.sum_sq if kernel == "gaussian" else np.zeros_like(flat.log_nn)
    D = np.arange(1, total + 1)
    log_cost = np.full((n_top, total), -np.inf)
    for n in range(1, n_top + 1):
        if not np.isfinite(log_a[n]):
            continue
        if sketch == "tensor_srht":
            norm = surrogate_tsrht_normalised(flat, n, q, D[:, None])
            per = n * flat.log_nn + _log_nonneg(norm)
        else:
            per = log_var_poly(flat, n, q, mu4, D[:, None], variance)
        log_cost[n - 1] = 2.0 * log_a[n] + log_mean_exp(per + weight, axis=1)
    shift = np.max(log_cost[np.isfinite(log_cost)]) if np.any(np.isfinite(log_cost)) else 0.0
    cost = np.exp(log_cost - shift)
    rows = []
    best = None
    kern = "exponential" if kernel == "gaussian" else kernel
    for p in range(p_min, min(p_max, total) + 1):
        alloc = greedy_allocation(cost[:p], total)
        var = float(np.sum(cost[np.arange(p), alloc - 1]) * np.exp(shift))
        log_b = log_abs_truncation_bias(kern, flat, p, kernel_degree, nu) + 0.5 * weight
        bias2 = float(np.mean(np.exp(2.0 * log_b)))
        g = var + bias2
        rows.append((p, tuple(int(a) for a in alloc), g))
        if best is None or g < best.objective:
            best = MaclaurinPlan(p, tuple(int(a) for a in alloc), g, var, bias2, ())
    if best is None:
        raise ParameterError(f"m must be an integer in [{p_min}, inf), got {total}")
    return MaclaurinPlan(best.p, best.alloc, best.objective, best.variance, best.bias2, tuple(rows))


def reference_unit_vectors(d: int, count: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Fixed pairs of independent uniform unit vectors in R^d, arrays (count, d) (seeded, reproducible)."""
    rng = np.random.default_rng(spawn_seed(ROTATION_SEED, UNIT_VECTORS_KEY, d))
    x = rng.standard_normal((count, d))
    y = rng.standard_normal((count, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True), y / np.linalg.norm(y, axis=1, keepdims=True)


@lru_cache(maxsize=64)
def reference_unit_pairs(d: int, count: int = 64) -> DotStats:
    """DotStats of ``reference_unit_vectors``: the data-free reference set on which the ``maclaurin`` estimator's
    automatic allocation is optimised (the paper uses a data subsample)."""
    return DotStats.from_pairs(*reference_unit_vectors(d, count))


# ----------------------------------------------------------------------------- torch samplers
def _signs(shape: tuple[int, ...], generator: torch.Generator, device: torch.device,
           dtype: torch.dtype) -> torch.Tensor:
    return torch.randint(0, 2, shape, generator=generator, device=device).to(dtype) * 2.0 - 1.0


def sample_entries(basis: str, q: float, shape: tuple[int, ...], *, generator: torch.Generator,
                   device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """I.i.d. weight entries z with E a² = q, E b² = 1−q, E ab = 0 (Eq. 15) for the named basis (module doc).

    Real tensor when q = 1 (real sketches), complex otherwise.
    """
    real = q == 1.0
    if basis == "rademacher":
        v = _signs(shape, generator, device, dtype)
        if real:
            return v
        w = _signs(shape, generator, device, dtype)
        return torch.complex(math.sqrt(q) * v, math.sqrt(1.0 - q) * w)
    if basis == "gaussian":
        a = torch.randn(shape, generator=generator, device=device, dtype=dtype)
        if real:
            return a
        b = torch.randn(shape, generator=generator, device=device, dtype=dtype)
        return torch.complex(math.sqrt(q) * a, math.sqrt(1.0 - q) * b)
    if basis == "plus_minus_i":
        sgn = _signs(shape, generator, device, dtype)
        is_real = torch.rand(shape, generator=generator, device=device, dtype=dtype) < q
        if real:
            return sgn
        zero = torch.zeros_like(sgn)
        return torch.complex(torch.where(is_real, sgn, zero), torch.where(is_real, zero, sgn))
    if basis == "unit_circle":
        phi = 2.0 * math.pi * torch.rand(shape, generator=generator, device=device, dtype=dtype)
        uniform = torch.rand(shape, generator=generator, device=device, dtype=dtype) < 1.0 - abs(2.0 * q - 1.0)
        sgn = _signs(shape, generator, device, dtype)
        fixed_re, fixed_im = (sgn, torch.zeros_like(sgn)) if q >= 0.5 else (torch.zeros_like(sgn), sgn)
        z = torch.complex(torch.where(uniform, torch.cos(phi), fixed_re),
                          torch.where(uniform, torch.sin(phi), fixed_im))
        return z.real.contiguous() if real else z
    raise ParameterError(f"basis must be one of {', '.join(BASES)}, got {basis!r}")


@lru_cache(maxsize=16)
def _hadamard_np(d: int) -> np.ndarray:
    h = np.array([[1.0]])
    while h.shape[0] < d:
        h = np.block([[h, h], [h, -h]])
    return h


def hadamard(d: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """Unnormalised Sylvester Hadamard matrix H_d (H Hᵀ = d I), d a power of two."""
    return torch.as_tensor(_hadamard_np(d), device=device, dtype=dtype)


def fwht(x: torch.Tensor) -> torch.Tensor:
    """Unnormalised fast Walsh–Hadamard transform along the last axis: ``x @ H_n`` for the Sylvester matrix
    (n a power of two) in O(n log n) time and O(size of x) memory, never building the n × n matrix ([DP] Alg. 1)."""
    n = x.shape[-1]
    lead = x.shape[:-1]
    h = 1
    while h < n:
        v = x.reshape(*lead, n // (2 * h), 2, h)
        a, b = v[..., 0, :], v[..., 1, :]
        x = torch.stack((a + b, a - b), dim=-2).reshape(*lead, n)
        h *= 2
    return x


def random_permutations(shape: tuple[int, ...], d: int, *, generator: torch.Generator,
                        device: torch.device) -> torch.Tensor:
    """Uniform random permutations of range(d), independent over ``shape``: long tensor (*shape, d)."""
    return torch.argsort(torch.rand((*shape, d), generator=generator, device=device), dim=-1)


def sample_tsrht(basis: str, q: float, degree: int, num_features: int, d: int, trials: int, *,
                 shared_permutation: bool, generator: torch.Generator, device: torch.device,
                 dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """Random parts of TensorSRHT (Algorithm 1): z (trials, B, p, d_pad) and permutations, one per (block,
    degree) unless ``shared_permutation`` (the literal Eq. 25 reading, for which Theorem 10 fails; docs: errata)."""
    d_pad = padded_dim(d)
    blocks = -(-num_features // d_pad)
    z = sample_entries(basis, q, (trials, blocks, degree, d_pad), generator=generator, device=device, dtype=dtype)
    perm = random_permutations((trials, blocks, 1 if shared_permutation else degree), d_pad, generator=generator,
                               device=device)
    return {"z": z, "perm": perm.expand(trials, blocks, degree, d_pad)}


def tsrht_features(z: torch.Tensor, perm: torch.Tensor, u: torch.Tensor, num_features: int) -> torch.Tensor:
    """Unscaled TensorSRHT features Π_i s_{i,ℓ}ᵀu, s_{i,ℓ} = z_i ∘ h_{π_i(ℓ)}: shape (trials, P, D)."""
    trials, blocks, degree, d_pad = z.shape
    up = torch.nn.functional.pad(u, (0, d_pad - u.shape[-1]))
    # (z_i ∘ u)ᵀ H = FWHT(z_i ∘ u): the d_pad × d_pad Hadamard matrix is never built (memory O(d_pad) per row).
    mixed = fwht(z[:, None] * up.to(z.dtype)[None, :, None, None, :])  # (trials, P, B, p, d_pad)
    idx = perm[:, None].expand(trials, u.shape[0], blocks, degree, d_pad)
    prod = torch.gather(mixed, -1, idx).prod(-2)  # (trials, P, B, d_pad)
    return prod.reshape(trials, u.shape[0], blocks * d_pad)[..., :num_features]


def sketch_features(z: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Unscaled unstructured features Π_i z_{i,ℓ}ᵀu for z (trials, D, p, d): shape (trials, P, D)."""
    return torch.einsum("tmik,pk->tpmi", z, u.to(z.dtype)).prod(-1)


# ----------------------------------------------------------------------------- TensorSketch (Pham & Pagh 2013)
# TensorSketch of degree p with m buckets: p independent CountSketches C_i(u)_b = Σ_{j: h_i(j)=b} s_i(j) u_j
# (hashes h_i: [d] → Z_m uniform, signs s_i: [d] → {±1} uniform, all independent), combined by
# TS(u) = IFFT(Π_i FFT(C_i(u))): the CountSketch of u^{⊗p} with hash Σ_i h_i(j_i) mod m and sign Π_i s_i(j_i)
# (Pham & Pagh, "Fast and scalable polynomial kernels via explicit feature maps", KDD 2013, §3, Lemma 2 gives a
# bound only). The estimate is k̂ = ⟨TS(x), TS(y)⟩ (real), unbiased for t^p.
#
# Exact variance (derived here; the [DP] authors' code formula is exact at p = 1 only, reference README).
# With F_i(ω) = Σ_j s_i(j) x_j e^{2πiωh_i(j)/m} and G_i likewise for y, k̂ = (1/m) Σ_ω Π_i F_i(ω) conj G_i(ω), so
# E k̂² = (1/m²) Σ_{ω,ω'} Π_i T(ω, ω') with one degree's
#   T(ω, ω') = E[F(ω) conj G(ω) conj F(ω') G(ω')] = t² + [ω = ω'](N − S) + [ω = −ω'](t² − S)
# (N = |x|²|y|², S = Σ x_j²y_j²; the sign expectation pairs the four indices three ways, the hash phases average to
# the Kronecker deltas). Counting (ω, ω') with c0 = #{ω: 2ω ≡ 0} = 1 + [m even]:
#   m² Var k̂ = c0[(t² + g1)^p − t^{2p}] + (m − c0)[(t² + g2)^p − t^{2p}] + (m − c0)[(t² + g3)^p − t^{2p}],
#   g1 = N + t² − 2S, g2 = N − S, g3 = t² − S.
# At p = 1 this is the CountSketch variance (N + t² − 2S)/m. Checked by Monte Carlo
# and against scikit-learn's PolynomialCountSketch (the same estimator, written by others).
def tensor_sketch_c0(m: int) -> int:
    """#{ω ∈ Z_m: 2ω ≡ 0} = 1 + [m even]."""
    return 1 + (m % 2 == 0)


def var_tensor_sketch_normalised(st: DotStats, p: int, num_features: int) -> np.ndarray:
    """Var k̂ / (|x|²|y|²)^p of the degree-p TensorSketch with m = num_features buckets (derivation above)."""
    m = int(num_features)
    c0 = tensor_sketch_c0(m)
    g1 = st.rest + st.delta  # (N + t² − 2S)/N ≥ 0
    g2 = st.rest  # (N − S)/N ≥ 0
    g3 = st.delta  # (t² − S)/N, any sign
    total = (c0 * power_gap(st.tau, g1, p) + (m - c0) * power_gap(st.tau, g2, p)
             + (m - c0) * power_gap(st.tau, g3, p))
    return total / float(m) ** 2


def log_var_tensor_sketch(st: DotStats, p: int, num_features: int) -> np.ndarray:
    """Natural log of the TensorSketch variance; −inf where exact (e.g. x ∥ y along one axis)."""
    return p * st.log_nn + _log_nonneg(var_tensor_sketch_normalised(st, p, num_features))


def sample_tensor_sketch(degree: int, num_features: int, d: int, trials: int, *, generator: torch.Generator,
                         device: torch.device, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """Independent uniform hashes h (trials, p, d) in [0, m) and signs s (trials, p, d) in {±1}."""
    h = torch.randint(0, num_features, (trials, degree, d), generator=generator, device=device)
    return {"hash": h, "sign": _signs((trials, degree, d), generator, device, dtype)}


def tensor_sketch_features(hashes: torch.Tensor, signs: torch.Tensor, u: torch.Tensor,
                           num_features: int) -> torch.Tensor:
    """TS(u) = IFFT(Π_i FFT(C_i(u))) for every trial: real, shape (trials, P, m); ⟨TS(x), TS(y)⟩ ≈ (x·y)^p."""
    trials, degree, d = hashes.shape
    values = u.to(signs.dtype)[None, :, None, :] * signs[:, None, :, :]  # (t, P, p, d): s_i(k) u_k
    index = hashes[:, None, :, :].expand(trials, u.shape[0], degree, d)
    counts = torch.zeros((trials, u.shape[0], degree, num_features), dtype=signs.dtype, device=signs.device)
    counts.scatter_add_(-1, index, values)  # C_i(u)_b = Σ_{k: h_i(k) = b} s_i(k) u_k: (t, P, p, m)
    spectrum = torch.fft.fft(counts, dim=-1).prod(-2)
    return torch.fft.ifft(spectrum, dim=-1).real
