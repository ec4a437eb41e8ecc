"""GPyTorch's random Fourier features (``gpytorch.kernels.RFFKernel``) as a plain feature map.

``RFFKernel(num_samples=D)`` draws its weights W ~ N(0, I) (``_init_weights``, torch's global generator) and its
features are [cos(xW/ℓ), sin(xW/ℓ)]/√D (``_featurize(x, normalize=True)``, what its ``forward`` multiplies): the
trig features of the Gaussian kernel e^{−|x−y|²/(2ℓ²)}, rfviz's ``trig`` with m = D (2D numbers). The audit sets
ℓ = 1 and float64; one kernel per process, its weights re-drawn by the library's own ``_init_weights`` on every
call with torch's generator seeded from the lab's ``rng`` (inside ``torch.random.fork_rng``).
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from .closed_forms import closed_form

RFF_SAMPLES = 32
"""num_samples D of the audited RFFKernel (2D = 64 features; rfviz's trig with m = 32)."""


@functools.cache
def _kernel(d: int):
    from gpytorch.kernels import RFFKernel

    kernel = RFFKernel(num_samples=RFF_SAMPLES, num_dims=d).double()
    kernel.lengthscale = 1.0
    return kernel


def rff_kernel(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Φ = RFFKernel(num_samples=32)._featurize(X, normalize=True) with ℓ = 1, weights drawn afresh.

    Parameters
    ----------
    X : numpy.ndarray
        The inputs, shape (n, d).
    rng : numpy.random.Generator
        The draw's randomness (one call = one draw).

    Returns
    -------
    numpy.ndarray
        Φ, shape (n, M).

    Examples
    --------
    >>> rff_kernel(np.zeros((3, 2)), np.random.default_rng(0)).shape  # doctest: +SKIP
    (3, 64)
    """
    d = X.shape[1]
    kernel = _kernel(d)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(int(rng.integers(2**63 - 1)))
        kernel._init_weights(d, RFF_SAMPLES)
        return kernel._featurize(torch.as_tensor(X, dtype=torch.float64), normalize=True).numpy()


rff_kernel_mse = closed_form("trig", m=RFF_SAMPLES, kernel="gaussian")
"""rfviz's closed form for the same mechanism: trig, m = 32, Gaussian kernel."""
