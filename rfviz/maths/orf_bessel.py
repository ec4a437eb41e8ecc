"""Orthogonal random features with fixed norms: the exact bias and variance of their trig estimator through normalised
Bessel functions ([DK]: Demni & Kadri show that these features approximate a Bessel kernel, not the Gaussian one).
Derived here in rfviz's own steps and checked against Monte Carlo and mpmath (docs: derivations/orf-bessel).

The features. Rows u_1, …, u_d of a Haar orthogonal matrix, scaled to the norm √d (W = √d·Q, the fixed-norm ORF
that SORF imitates with Hadamard blocks; rfviz's ``orthogonal`` coupling draws χ_d norms instead and is unbiased),
blocks of d rows independent, and the trig estimator K̂ = (1/m) Σ_i cos(√d u_i·Δ), Δ = x − y, of the Gaussian kernel
K = e^{−|Δ|²/2} (softmax: times e^{(|x|²+|y|²)/2}).

* Mean. A row is uniform on the sphere of radius √d, so E cos(√d u·Δ) = Ω_d(√d|Δ|) with the normalised Bessel
  function Ω_d(t) = Γ(d/2)(2/t)^{d/2−1} J_{d/2−1}(t) = ₀F₁(; d/2; −t²/4) (the characteristic function of the uniform
  law on the unit sphere). Bias: Ω_d(√d|Δ|) − e^{−|Δ|²/2}, O(1/d).
* One row. cos² = (1 + cos 2·)/2: E cos²(√d u·Δ) = (1 + Ω_d(2√d|Δ|))/2.
* Two rows of one block. cos a cos b = (cos(a + b) + cos(a − b))/2 and (u_i ± u_j)/√2 are unit vectors, uniform on
  the sphere for an orthonormal pair: E[cos a cos b] = Ω_d(√(2d)|Δ|).

Hence, for blocks of sizes m_b (Σ m_b = m, m_b ≤ d),

    Var K̂ = (1/m²) Σ_b [ m_b ((1 + Ω(2t))/2 − Ω(t)²) + m_b(m_b − 1)(Ω(√2 t) − Ω(t)²) ],  t = √d|Δ|,

and MSE = Var + bias².
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..params import ParameterError


def bessel_kernel(t: np.ndarray, d: int) -> np.ndarray:
    """Ω_d(t) = ₀F₁(; d/2; −t²/4) = E cos(t·u₁), u uniform on the unit sphere of R^d (Ω_1 = cos).

    Parameters
    ----------
    t : array_like
        The argument(s).
    d : int
        The dimension.

    Returns
    -------
    numpy.ndarray
        Ω_d(t), elementwise.

    Examples
    --------
    >>> round(float(bessel_kernel(np.pi, 3)), 12)  # sin(t)/t at d = 3
    0.0
    """
    if int(d) != d or d < 1:
        raise ParameterError(f"d must be an integer in [1, inf), got {d!r}")
    t = np.asarray(t, dtype=float)
    with np.errstate(all="ignore"):
        out = np.asarray(special.hyp0f1(d / 2.0, -t * t / 4.0), dtype=float) if d <= SCIPY_MAX_D else \
            np.full(t.shape, np.nan)
    bad = ~np.isfinite(out)
    if np.any(bad):  # scipy's ₀F₁ fails for large d (J_ν underflows against (2/t)^ν): 30-digit mpmath instead
        out[bad] = _mp_hyp0f1(d / 2.0, -t[bad] * t[bad] / 4.0)
    return np.where(t == 0, 1.0, out)


SCIPY_MAX_D = 200
"""Above this d, scipy's hyp0f1 returns NaN where J_ν underflows (measured: d = 1024, t = 48); mpmath is used."""


def _mp_hyp0f1(b: float, z: np.ndarray) -> np.ndarray:
    import mpmath

    with mpmath.workdps(30):
        return np.array([float(mpmath.hyp0f1(b, float(v))) for v in np.ravel(z)]).reshape(np.shape(z))


def block_sizes(m: int, d: int) -> list[int]:
    """⌈m/d⌉ blocks: full blocks of d rows and a last one with the rest.

    Parameters
    ----------
    m : int
        Rows (features).
    d : int
        The dimension (rows per full block).

    Returns
    -------
    list of int
        The rows of each block.

    Examples
    --------
    >>> block_sizes(10, 4)
    [4, 4, 2]
    """
    full, rest = divmod(int(m), int(d))
    return [d] * full + ([rest] if rest else [])


def fixed_norm_orf_trig_moments(delta: np.ndarray, d: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, variance) of K̂ = (1/m) Σ cos(√d u_i·Δ) for the Gaussian kernel at |Δ| = ``delta`` (module docstring).

    Parameters
    ----------
    delta : |x − y|, any shape.
    d : dimension.
    m : number of rows (blocks of d).

    Returns
    -------
    (np.ndarray, np.ndarray)
        E K̂ = Ω_d(√d|Δ|) and Var K̂ (≥ 0; rounded at 0 where the blocks' covariance cancels to round-off).

    Examples
    --------
    >>> mean, var = fixed_norm_orf_trig_moments(0.0, 4, 4)
    >>> float(mean), float(var)
    (1.0, 0.0)
    """
    t = np.sqrt(float(d)) * np.asarray(delta, dtype=float)
    om1, om2, omr = bessel_kernel(t, d), bessel_kernel(2.0 * t, d), bessel_kernel(np.sqrt(2.0) * t, d)
    single = 0.5 * (1.0 + om2) - om1 * om1
    pair = omr - om1 * om1
    sizes = block_sizes(m, d)
    var = (sum(sizes) * single + sum(b * (b - 1) for b in sizes) * pair) / float(m) ** 2
    return om1, np.maximum(var, 0.0)


def fixed_norm_orf_trig_mse(delta: np.ndarray, d: int, m: int) -> np.ndarray:
    """MSE = Var + (Ω_d(√d|Δ|) − e^{−|Δ|²/2})² of the fixed-norm ORF trig estimator of the Gaussian kernel.

    Parameters
    ----------
    delta : array_like
        |Δ| = |x − y|.
    d : int
        The dimension.
    m : int
        Features.

    Returns
    -------
    numpy.ndarray
        The MSE, elementwise.

    Examples
    --------
    >>> float(fixed_norm_orf_trig_mse(0.0, 8, 8))
    0.0
    """
    mean, var = fixed_norm_orf_trig_moments(delta, d, m)
    bias = mean - np.exp(-0.5 * np.asarray(delta, dtype=float) ** 2)
    return var + bias * bias


__all__ = ["bessel_kernel", "block_sizes", "fixed_norm_orf_trig_moments", "fixed_norm_orf_trig_mse"]
