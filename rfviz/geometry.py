"""Input geometry: the canonical embedding of (r, θ, d) and the rotation-invariant statistics of pairs."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from .params import DIM_PARAM, R_PARAM, ParameterError, check

THETA_ROUNDING = 1e-4
"""θ written up to this much above π (``3.1416``) is π rounded for display, and is read as π."""
_PI_TEXT = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)?)\s*\*?\s*(?:pi|π)\s*(?:/\s*(\d+\.?\d*))?\s*$", re.I)


def parse_real(name: str, text: str | float) -> float:
    """A real number as typed: ``1.5``, ``pi``, ``π``, ``pi/2``, ``2pi/3`` or ``0.5*pi``.

    Parameters
    ----------
    name : str
        The parameter, named in the error.
    text : str
        The text to read.

    Returns
    -------
    float
        The value; ParameterError when ``text`` is neither a number nor a multiple of π.

    Examples
    --------
    >>> parse_real("theta", "pi/2") == math.pi / 2
    True
    """
    if not isinstance(text, str):
        if isinstance(text, bool):
            raise ParameterError(f"{name} must be a number, got {text!r}")
        try:
            return float(text)
        except (TypeError, ValueError, OverflowError):
            raise ParameterError(f"{name} must be a number, got {text!r}") from None
    match = _PI_TEXT.match(text)
    if match:
        sign = match.group(1) or ""
        factor = float(sign) if sign not in ("", "+", "-") else -1.0 if sign == "-" else 1.0
        divisor = float(match.group(2)) if match.group(2) else 1.0
        if divisor == 0 or not math.isfinite(divisor):
            raise ParameterError(f"{name} must be a number (or a multiple of pi such as pi/2), got {text!r}")
        return factor * math.pi / divisor
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"{name} must be a number (or a multiple of pi such as pi/2), got {text!r}") from None


def snap_theta(theta: float) -> float:
    """θ in (π, π + ``THETA_ROUNDING``] (π rounded up, e.g. ``3.1416``) becomes π; anything else is unchanged.

    Parameters
    ----------
    theta : float
        An angle in radians.

    Returns
    -------
    float
        π for a rounded-up π, else ``theta``.

    Examples
    --------
    >>> snap_theta(3.1416) == math.pi
    True
    """
    return math.pi if math.pi < theta <= math.pi + THETA_ROUNDING else theta


def check_theta(theta: np.ndarray | float) -> np.ndarray:
    """θ must lie in [0, π] (angle between x and y).

    Parameters
    ----------
    theta : array_like or float
        Angle(s) in radians.

    Returns
    -------
    numpy.ndarray
        The angles, at most π; ParameterError names the first one outside [0, π].

    Examples
    --------
    >>> float(check_theta(1.0))
    1.0
    """
    t = np.asarray(theta, dtype=float)
    if not np.all(np.isfinite(t)) or np.any(t < 0.0) or np.any(t > np.pi + 1e-12):
        bad = t[~((t >= 0) & (t <= np.pi + 1e-12))].ravel()
        raise ParameterError(f"theta must be in [0, π] (radians), got {bad[0]:g}")
    return np.minimum(t, np.pi)


def check_r(r: np.ndarray | float) -> np.ndarray:
    """r (input norm) as a float array, validated against ``R_PARAM`` (finite, ≥ 0).

    Parameters
    ----------
    r : array_like or float
        Input norm(s).

    Returns
    -------
    numpy.ndarray
        The norms as floats; ParameterError when one is negative or not finite.

    Examples
    --------
    >>> check_r([0.5, 2]).tolist()
    [0.5, 2.0]
    """
    return np.asarray(check(r, R_PARAM), dtype=float)


def check_d(d: int, minimum: int = 1) -> int:
    """d (input dimension) validated against ``DIM_PARAM``, with ``minimum`` as its lower bound.

    Parameters
    ----------
    d : int
        The input dimension.
    minimum : int, default 1
        The smallest dimension allowed here.

    Returns
    -------
    int
        ``d``; ParameterError naming the range when it is outside it.

    Examples
    --------
    >>> check_d(4, minimum=2)
    4
    """
    return check(d, DIM_PARAM if minimum == DIM_PARAM.low else replace(DIM_PARAM, low=minimum))


def canonical_pair(r: np.ndarray | float, theta: np.ndarray | float, d: int) -> tuple[np.ndarray, np.ndarray]:
    """x = r·e1, y = r(cos θ·e1 + sin θ·e2) in R^d, broadcast over r and θ: arrays of shape (..., d).

    d = 1 admits only θ ∈ {0, π}.

    Parameters
    ----------
    r : array_like or float
        The norm of both inputs.
    theta : array_like or float
        The angle between them, in [0, π].
    d : int
        The dimension of the input space.

    Returns
    -------
    x, y : numpy.ndarray
        The pairs, shape ``broadcast(r, theta).shape + (d,)`` each.

    Examples
    --------
    >>> x, y = canonical_pair(2.0, math.pi, 3)
    >>> (x.tolist(), y.tolist())
    ([2.0, 0.0, 0.0], [-2.0, 0.0, 0.0])
    """
    r = check_r(r)
    theta = check_theta(theta)
    d = check_d(d)
    r, theta = np.broadcast_arrays(r, theta)
    if d == 1 and np.any(np.abs(np.sin(theta)) > 1e-12):
        raise ParameterError("d must be ≥ 2 for an angle theta other than 0 or π")
    x = np.zeros((*r.shape, d))
    y = np.zeros((*r.shape, d))
    x[..., 0] = r
    # θ = π (the float nearest π, which check_theta also gives for θ just above it) is π exactly: y = −x, whose
    # MSEs vanish, not the pair 1.2e-16·r off antipodal that sin(fl(π)) would give
    at_pi = theta == np.pi
    y[..., 0] = np.where(at_pi, -r, r * np.cos(theta))
    if d > 1:
        y[..., 1] = np.where(at_pi, 0.0, r * np.sin(theta))
    return x, y


def pair_stats(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(|x|², |y|², x·y) over the last axis.

    Parameters
    ----------
    x, y : array_like
        Inputs of the same length along the last axis, finite.

    Returns
    -------
    xx, yy, xy : numpy.ndarray
        Squared norms and inner products, broadcast over the leading axes.

    Examples
    --------
    >>> [float(v) for v in pair_stats([1.0, 2.0], [3.0, 0.0])]
    [5.0, 9.0, 3.0]
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape[-1] != y.shape[-1]:
        raise ParameterError(f"x and y must have the same dimension, got {x.shape[-1]} and {y.shape[-1]}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ParameterError("x and y must be finite")
    return np.sum(x * x, -1), np.sum(y * y, -1), np.sum(x * y, -1)


def sum_sq(x: np.ndarray, y: np.ndarray, sign: float) -> np.ndarray:
    """|x + sign·y|² over the last axis, from the coordinates of x + sign·y: exact to round-off relative to itself.

    The expansion |x|² + |y|² + 2·sign·x·y loses every digit where x + sign·y is small against |x| and |y|
    (near-duplicate or antipodal pairs, θ → 0 or π): at |x| = |y| = 1 and θ = 1e-6 it keeps 4 of 16 digits.

    Parameters
    ----------
    x, y : array_like
        Inputs of the same length along the last axis.
    sign : float
        +1 for |x + y|², −1 for |x − y|².

    Returns
    -------
    numpy.ndarray
        The squared norms, over the leading axes.

    Examples
    --------
    >>> x, y = canonical_pair(1.0, 1e-6, 2)
    >>> bool(abs(sum_sq(x, y, -1.0) / 1e-12 - 1) < 1e-12)
    True
    """
    diff = np.asarray(x, dtype=float) + sign * np.asarray(y, dtype=float)
    return np.sum(diff * diff, -1)


def project_to_span(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates of (x, y) in an orthonormal basis of span(x, y): shape (..., 2) each.

    Rotation-invariant estimators give the same distribution of K̂ for these 2-D coordinates
    (with the ω-sampler told the true d), which is what makes the fast Monte-Carlo path possible.

    Parameters
    ----------
    x, y : array_like
        Inputs of the same length along the last axis.

    Returns
    -------
    x2, y2 : numpy.ndarray
        x as (|x|, 0) and y in the same basis, shape (..., 2) each.

    Examples
    --------
    >>> x2, y2 = project_to_span([0.0, 3.0, 0.0], [0.0, 0.0, 4.0])
    >>> (x2.tolist(), y2.tolist())
    ([3.0, 0.0], [0.0, 4.0])
    """
    xx, yy, xy = pair_stats(x, y)
    nx = np.sqrt(xx)
    safe = np.where(nx > 0, nx, 1.0)
    y1 = np.where(nx > 0, xy / safe, np.sqrt(yy))
    # y's component orthogonal to x from the vector y − (x·y/|x|²)x, not √(|y|² − y1²) (which keeps √ε of it
    # for near-parallel pairs, and so ~1 % of |x − y| for near-duplicates at |x − y| ≈ 1e-6·|x|)
    along = np.where(xx > 0, xy / np.where(xx > 0, xx, 1.0), 0.0)
    perp = np.where((xx > 0)[..., None], np.asarray(y, float) - along[..., None] * np.asarray(x, float), 0.0)
    y2 = np.sqrt(np.sum(perp * perp, -1))
    return np.stack([nx, np.zeros_like(nx)], -1), np.stack([y1, y2], -1)


EMBEDDINGS: dict[str, object] = {"canonical": canonical_pair}
"""Ways to place a pair at (r, θ) in R^d. Coordinate-dependent estimators (PoisRF, GeomRF, Rademacher and
TensorSRHT sketches) let the user choose; other modules register more (``flat``, ``rotation_average``)."""


def embed_pair(r: np.ndarray | float, theta: np.ndarray | float, d: int,
               embedding: str = "canonical") -> tuple[np.ndarray, np.ndarray]:
    """Pairs at (r, θ) in R^d under the named embedding (default: canonical).

    Parameters
    ----------
    r : array_like or float
        The norm of both inputs.
    theta : array_like or float
        The angle between them, in [0, π].
    d : int
        The dimension of the input space.
    embedding : str, default "canonical"
        A key of ``EMBEDDINGS``.

    Returns
    -------
    x, y : numpy.ndarray
        The pairs, shape (..., d) each.

    Examples
    --------
    >>> x, y = embed_pair(1.0, 0.0, 2)
    >>> x.tolist() == y.tolist()
    True
    """
    if not isinstance(embedding, str) or embedding not in EMBEDDINGS:
        raise ParameterError(f"embedding must be one of {', '.join(EMBEDDINGS)}, got {embedding!r}")
    return EMBEDDINGS[embedding](r, theta, d)  # type: ignore[operator]


@dataclass(frozen=True)
class PairStats:
    """Everything a closed form may need about the input pairs, as broadcast numpy arrays.

    ``x``/``y`` are the coordinates actually passed (possibly reduced to span(x, y)); ``d`` is the true
    dimension of the input space.

    Parameters
    ----------
    x, y : numpy.ndarray
        The pairs' coordinates, shape (..., k) each.
    xx, yy, xy : numpy.ndarray
        ``|x|²``, ``|y|²`` and x·y over the leading axes.
    d : int
        The true dimension of the input space (≥ k).

    Examples
    --------
    >>> s = PairStats.of([1.0, 0.0], [0.0, 1.0], d=5)
    >>> (float(s.xy), float(s.delta2), s.d)
    (0.0, 2.0, 5)
    """

    x: np.ndarray
    y: np.ndarray
    xx: np.ndarray
    yy: np.ndarray
    xy: np.ndarray
    d: int

    @cached_property
    def z2(self) -> np.ndarray:
        """``|x + y|²``, summed from the coordinates of x + y (``|x|² + |y|² + 2x·y`` cancels as y → −x)."""
        return sum_sq(self.x, self.y, 1.0)

    @cached_property
    def delta2(self) -> np.ndarray:
        """``|x − y|²``, summed from the coordinates of x − y (``|x|² + |y|² − 2x·y`` cancels as y → x)."""
        return sum_sq(self.x, self.y, -1.0)

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray, d: int | None = None) -> PairStats:
        """The statistics of the pairs (x, y), with ``d`` the true dimension (default: their length).

        Parameters
        ----------
        x, y : array_like
            Inputs of the same length along the last axis.
        d : int, optional
            The true dimension of the input space, at least that length.

        Returns
        -------
        PairStats
            The pairs and their squared norms and inner products.

        Examples
        --------
        >>> PairStats.of([3.0, 4.0], [0.0, 1.0]).d
        2
        """
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        xx, yy, xy = pair_stats(x, y)
        dim = x.shape[-1]
        d = dim if d is None else check_d(d)
        if d < dim:
            raise ParameterError(f"d must be ≥ {dim} (the length of x and y), got {d}")
        return cls(x, y, xx, yy, xy, d)


def gaussian_log_correction(xx: np.ndarray, yy: np.ndarray) -> np.ndarray:
    """log of the factor MSE_gauss / MSE_softmax = e^{-|x|²-|y|²}: K_gauss(x, y) = e^{-|x|²/2}·SM(x, y)·e^{-|y|²/2}
    ([HRF] eq. 1), so a softmax estimator's MSE scales by this factor.

    Parameters
    ----------
    xx, yy : array_like
        Squared norms |x|² and |y|².

    Returns
    -------
    numpy.ndarray
        −(|x|² + |y|²).

    Examples
    --------
    >>> float(gaussian_log_correction(1.0, 0.5))
    -1.5
    """
    return -(np.asarray(xx, float) + np.asarray(yy, float))
