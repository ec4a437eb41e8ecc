"""performer-pytorch's FAVOR+ projection (``gaussian_orthogonal_random_matrix``) as a plain feature map, and a
sign-fixed twin.

performer-pytorch 1.1.4 builds its projection W (M × d) from blocks Q of ``torch.linalg.qr`` of d × d Gaussian
matrices, rows scaled by the norms of fresh Gaussian vectors (``scaling=0``): orthogonal random features with χ_d
lengths, rfviz's ``positive`` with ``coupling="orthogonal"``, if Q were Haar-distributed. It takes Q without the
sign correction (multiplying Q's columns by the signs of R's diagonal), so its rows are not N(0, I)-distributed.
The map here is the positive softmax feature of FAVOR+, φ(x) = exp(Wx − |x|²/2)/√M, an unbiased estimate of
e^{x·y} for W with N(0, I) rows; the library's ``softmax_kernel`` adds a d^{-1/4} data scaling, a per-row maximum
and ε = 1e-4 that cancel or matter only in attention's normalisation, so they are left out. The twin is the same
construction with the sign correction. Torch's global generator is seeded from the lab's ``rng`` inside
``torch.random.fork_rng`` (the library draws from it).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..registries import ORTHOGONAL
from .closed_forms import closed_form

FAVOR_FEATURES = 32
"""nb_features M of the audited projection (rfviz's positive with m = 32)."""


def _positive_features(X: np.ndarray, w: torch.Tensor) -> np.ndarray:
    """exp(Wx − |x|²/2)/√M per row of X, in float64."""
    x = torch.as_tensor(X, dtype=torch.float64)
    proj = x @ w.to(torch.float64).T
    return (torch.exp(proj - 0.5 * (x * x).sum(-1, keepdim=True)) / math.sqrt(w.shape[0])).numpy()


def favor_plus(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """φ(X) with W = performer_pytorch.gaussian_orthogonal_random_matrix(32, d, scaling=0) (no sign fix).

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
    >>> favor_plus(np.zeros((3, 4)), np.random.default_rng(0)).shape  # doctest: +SKIP
    (3, 32)
    """
    from performer_pytorch.performer_pytorch import gaussian_orthogonal_random_matrix

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.integers(2**63 - 1)))
        w = gaussian_orthogonal_random_matrix(FAVOR_FEATURES, X.shape[1], scaling=0)
    return _positive_features(X, w)


def sign_fixed_orthogonal_matrix(nb_rows: int, nb_columns: int) -> torch.Tensor:
    """The library's ``gaussian_orthogonal_random_matrix(nb_rows, nb_columns, scaling=0)`` with Q's columns
    multiplied by the signs of R's diagonal (Haar-distributed blocks), drawn from torch's global generator in the
    same order.

    Parameters
    ----------
    nb_rows : int
        Rows M (features).
    nb_columns : int
        Columns d (input dimension).

    Returns
    -------
    torch.Tensor
        W, shape (M, d).

    Examples
    --------
    >>> sign_fixed_orthogonal_matrix(6, 4).shape
    torch.Size([6, 4])
    """
    blocks = []
    for _ in range(math.ceil(nb_rows / nb_columns)):
        q, r = torch.linalg.qr(torch.randn((nb_columns, nb_columns)), mode="reduced")
        blocks.append((q * torch.sign(torch.diagonal(r))).t())
    final = torch.cat(blocks)[:nb_rows]
    multiplier = torch.randn((nb_rows, nb_columns)).norm(dim=1)
    return torch.diag(multiplier) @ final


def favor_plus_sign_fixed(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """φ(X) with W from ``sign_fixed_orthogonal_matrix(32, d)``: the twin with the sign correction.

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
    >>> favor_plus_sign_fixed(np.zeros((3, 4)), np.random.default_rng(0)).shape
    (3, 32)
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.integers(2**63 - 1)))
        w = sign_fixed_orthogonal_matrix(FAVOR_FEATURES, X.shape[1])
    return _positive_features(X, w)


favor_plus_mse = closed_form("positive", m=FAVOR_FEATURES, coupling=ORTHOGONAL, kernel="softmax")
"""rfviz's closed form for the same mechanism: positive RFs, m = 32, orthogonal coupling (ORF), softmax kernel."""
