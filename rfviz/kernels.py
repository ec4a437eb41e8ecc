"""Target kernels, as logs: softmax exp(x·y), Gaussian exp(-|x-y|²/2), and the dot-product kernels.

Softmax and Gaussian are related by K_gauss(x, y) = e^{-|x|²/2} SM(x, y) e^{-|y|²/2} (HRF eq. 1), so any
softmax estimator becomes a Gaussian one by scaling its features, and its MSE scales by e^{-|x|²-|y|²}.
"""

from __future__ import annotations

import numpy as np

from .geometry import pair_stats
from .params import ParameterError

KERNELS = ("softmax", "gaussian", "polynomial", "exponential")


def log_softmax_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log SM(x, y) = x·y (HRF eq. 1)."""
    return pair_stats(x, y)[2]


def log_gaussian_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log K(x, y) = -|x-y|²/2 (HRF eq. 1, CRT §2.1)."""
    xx, yy, xy = pair_stats(x, y)
    return -0.5 * np.maximum(xx + yy - 2.0 * xy, 0.0)


def gaussian_log_correction(xx: np.ndarray, yy: np.ndarray) -> np.ndarray:
    """log of the factor MSE_gauss / MSE_softmax = e^{-|x|²-|y|²} (HRF §1; CRT §1). Implemented once, here."""
    return -(np.asarray(xx, float) + np.asarray(yy, float))


def polynomial_kernel(x: np.ndarray, y: np.ndarray, p: int, bias: float = 0.0) -> np.ndarray:
    """(x·y + bias)^p, the homogeneous polynomial kernel when bias = 0 (dot-product paper eq. 1)."""
    if int(p) != p or p < 0:
        raise ParameterError(f"p must be an integer in [0, inf), got {p!r}")
    return (pair_stats(x, y)[2] + bias) ** int(p)


def exponential_kernel(x: np.ndarray, y: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """exp(x·y / scale), the exponential dot-product kernel (dot-product paper §5)."""
    if not scale > 0:
        raise ParameterError(f"scale must be a number in (0, inf), got {scale!r}")
    return np.exp(pair_stats(x, y)[2] / scale)


def log_kernel(name: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """log K(x, y) for the softmax and Gaussian kernels (which can overflow as plain values)."""
    if name == "softmax":
        return log_softmax_kernel(x, y)
    if name == "gaussian":
        return log_gaussian_kernel(x, y)
    raise ParameterError(f"kernel must be one of softmax, gaussian for log_kernel, got {name!r}")


__all__ = [
    "KERNELS",
    "exponential_kernel",
    "gaussian_log_correction",
    "log_gaussian_kernel",
    "log_kernel",
    "log_softmax_kernel",
    "polynomial_kernel",
]
