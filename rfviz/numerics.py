"""Log-space helpers: MSEs span hundreds of orders of magnitude, so every closed form is computed as a log."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import roots_legendre

LOG2 = float(np.log(2.0))
LOG10 = float(np.log(10.0))


def log_expm1(t: np.ndarray | float) -> np.ndarray:
    """log(e^t - 1) without overflow or cancellation; -inf for t == 0, NaN-free for t >= 0.

    Negative t (which only round-off can produce in a variance) is clipped to 0, giving -inf.

    Parameters
    ----------
    t : array_like or float
        The exponent(s).

    Returns
    -------
    numpy.ndarray
        log(e^t - 1), elementwise.

    Examples
    --------
    >>> float(log_expm1(1000.0))
    1000.0
    """
    t = np.maximum(np.asarray(t, dtype=float), 0.0)
    with np.errstate(divide="ignore"):
        return np.where(t > 30.0, t + np.log1p(-np.exp(-t)), np.log(np.expm1(np.minimum(t, 30.0))))


def log1mexp(a: np.ndarray | float) -> np.ndarray:
    """log(1 - e^{-a}) for a >= 0 (Mächler's two-branch rule); -inf at a = 0.

    Parameters
    ----------
    a : array_like or float
        Non-negative exponent(s); negative values (round-off) are clipped to 0.

    Returns
    -------
    numpy.ndarray
        log(1 - e^{-a}), elementwise.

    Examples
    --------
    >>> float(log1mexp(0.0))
    -inf
    """
    a = np.maximum(np.asarray(a, dtype=float), 0.0)
    with np.errstate(divide="ignore"):
        return np.where(a > LOG2, np.log1p(-np.exp(-a)), np.log(-np.expm1(-a)))


def log_diff_exp(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """log(e^a - e^b) for a >= b; -inf where a == b. Round-off with a < b (by < 1e-12 relative) gives -inf.

    Parameters
    ----------
    a : array_like or float
        The log of the larger term.
    b : array_like or float
        The log of the smaller term.

    Returns
    -------
    numpy.ndarray
        log(e^a - e^b), elementwise.

    Examples
    --------
    >>> round(float(log_diff_exp(2.0, 1.0)), 6) == round(float(np.log(np.e**2 - np.e)), 6)
    True
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        return a + log1mexp(a - b)


def log_cosh(t: np.ndarray | float) -> np.ndarray:
    """log cosh(t) for real t, overflow-free.

    Parameters
    ----------
    t : array_like or float
        Real argument(s).

    Returns
    -------
    numpy.ndarray
        log cosh(t), elementwise.

    Examples
    --------
    >>> float(log_cosh(0.0))
    0.0
    """
    t = np.abs(np.asarray(t, dtype=float))
    return t + np.log1p(np.exp(-2.0 * t)) - LOG2


def log_cosh_m1(t: np.ndarray | float) -> np.ndarray:
    """log(cosh(t) - 1) = log 2 + 2 log sinh(|t|/2), overflow-free; -inf at t = 0.

    Parameters
    ----------
    t : array_like or float
        Real argument(s).

    Returns
    -------
    numpy.ndarray
        log(cosh(t) - 1), elementwise.

    Examples
    --------
    >>> float(log_cosh_m1(0.0))
    -inf
    """
    h = np.abs(np.asarray(t, dtype=float)) / 2.0
    with np.errstate(divide="ignore"):
        log_sinh = h + log1mexp(2.0 * h) - LOG2
    return LOG2 + 2.0 * log_sinh


def to_log10(log_value: np.ndarray | float) -> np.ndarray:
    """Natural log to log10.

    Parameters
    ----------
    log_value : array_like or float
        Natural logarithm(s).

    Returns
    -------
    numpy.ndarray
        The same values as base-10 logarithms.

    Examples
    --------
    >>> round(float(to_log10(np.log(1000.0))), 12)
    3.0
    """
    return np.asarray(log_value, dtype=float) / LOG10


def exp_or_inf(log_value: np.ndarray | float) -> np.ndarray:
    """e^{log_value}, inf where it overflows float64 (no warning).

    Parameters
    ----------
    log_value : array_like or float
        Natural logarithm(s).

    Returns
    -------
    numpy.ndarray
        exp(log_value), inf past float64's range.

    Examples
    --------
    >>> float(exp_or_inf(1000.0))
    inf
    """
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(log_value, dtype=float))


@lru_cache(maxsize=32)
def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights on [−1, 1], computed once per n and returned read-only.

    ``scipy.special.roots_legendre`` (asymptotic + Newton, ~10 ms at n = 400) instead of
    ``numpy.polynomial.legendre.leggauss`` (a dense eigen-solve, seconds at n = 400 on a loaded CPU)."""
    x, w = roots_legendre(int(n))
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w
