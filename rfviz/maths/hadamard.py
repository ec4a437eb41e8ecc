"""The fast Walsh–Hadamard transform (FWHT) along the last axis, for the structured couplings' fast transforms.

H_n (Sylvester order, n = 2^k) is the Kronecker product of k copies of H_2, so it factors as H_n = H_{s_1} ⊗ … ⊗
H_{s_r} for any split of k into k_1 + … + k_r (s_j = 2^{k_j}). ``fwht`` applies the factors one axis at a time:
with the input of length n viewed as an (s_1, …, s_r) array, each pass multiplies one axis by the small matrix
H_{s_j}/√s_j (one batched matrix product) and moves that axis to the front, so after r passes the axes are back in
order. With blocks of at most 2^``FWHT_BLOCK_LOG2`` = 32 entries this is O(n log n) work per row (2·s_j·n flops per
pass, r ≈ k/5 passes) done by BLAS, rather than k butterfly passes of interpreted array code.

>>> import torch
>>> x = torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
>>> fwht(x) * 2
tensor([[1., 1., 1., 1.]], dtype=torch.float64)
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

FWHT_BLOCK_LOG2 = 5
"""log2 of the largest Kronecker factor ``fwht`` multiplies by (32 × 32): small enough that the transform stays
O(n log n), large enough that each pass is an efficient matrix product."""
FWHT_DENSE_MAX = 128
"""Up to this length ``fwht`` multiplies by the whole n × n matrix at once (2n flops per entry, one BLAS call): faster
than several passes of tiny products there."""


def is_power_of_two(n: int) -> bool:
    """Whether n is 2^k for some k ≥ 0.

    Examples
    --------
    >>> is_power_of_two(64), is_power_of_two(48)
    (True, False)
    """
    return n >= 1 and not n & (n - 1)


@lru_cache(maxsize=32)
def _sylvester(log2: int) -> np.ndarray:
    """The orthonormal Sylvester Hadamard matrix H_{2^log2}/2^{log2/2} (float64)."""
    h = np.ones((1, 1))
    for _ in range(log2):
        h = np.block([[h, h], [h, -h]])
    return h / math.sqrt(h.shape[0])


def hadamard_matrix(n: int, dtype: torch.dtype = torch.float64, device: torch.device | None = None) -> torch.Tensor:
    """The orthonormal n × n Hadamard matrix in Sylvester order (H_{2n} = [[H_n, H_n], [H_n, −H_n]]/√2).

    Parameters
    ----------
    n : int
        A power of two.
    dtype, device
        Of the result.

    Returns
    -------
    torch.Tensor
        Shape (n, n), symmetric and orthogonal.

    Examples
    --------
    >>> hadamard_matrix(2) * 2 ** 0.5
    tensor([[ 1.,  1.],
            [ 1., -1.]], dtype=torch.float64)
    """
    if not is_power_of_two(n):
        raise ValueError(f"the Hadamard transform needs a power-of-two length, got {n}")
    return torch.as_tensor(_sylvester(n.bit_length() - 1), dtype=dtype, device=device)


def _split(log2: int) -> list[int]:
    """log2 split into near-equal parts of at most ``FWHT_BLOCK_LOG2``."""
    parts = max(1, -(-log2 // FWHT_BLOCK_LOG2))
    base, extra = divmod(log2, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def fwht(x: torch.Tensor) -> torch.Tensor:
    """The orthonormal Walsh–Hadamard transform H x along the last axis (Sylvester order), O(n log n) per row.

    Parameters
    ----------
    x : torch.Tensor
        Shape (..., n), n a power of two; real floating point.

    Returns
    -------
    torch.Tensor
        A new tensor of x's shape and dtype: every row multiplied by the orthonormal Hadamard matrix
        (``hadamard_matrix(n)``, symmetric, so x H = H x row by row).

    Examples
    --------
    >>> x = torch.arange(8.0, dtype=torch.float64)[None]
    >>> bool(torch.allclose(fwht(fwht(x)), x))
    True
    """
    n = x.shape[-1]
    if not is_power_of_two(n):
        raise ValueError(f"the Hadamard transform needs a power-of-two length, got {n}")
    lead = x.shape[:-1]
    rows = int(np.prod(lead)) if lead else 1
    if n == 1:
        return x.clone()
    y = x.reshape(rows, n)
    if n <= FWHT_DENSE_MAX:  # one small matrix product beats several passes
        return (y @ hadamard_matrix(n, x.dtype, x.device)).reshape(*lead, n)
    for log2 in reversed(_split(n.bit_length() - 1)):
        s = 1 << log2
        h = hadamard_matrix(s, x.dtype, x.device)
        # apply H_s to the last axis of (rows, n/s, s) and move that axis to the front: (rows, s, n/s)
        y = torch.matmul(h, y.reshape(rows, n // s, s).transpose(1, 2)).reshape(rows, n)
    return y.reshape(*lead, n)


__all__ = ["FWHT_BLOCK_LOG2", "FWHT_DENSE_MAX", "fwht", "hadamard_matrix", "is_power_of_two"]
