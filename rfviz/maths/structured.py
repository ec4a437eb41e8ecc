"""Structured couplings built from Walsh–Hadamard transforms: SORF ([ORF] §4) and Fastfood ([Fastfood] §3).

Both replace a dense Gaussian block of d' × d' projections by products of O(d') random numbers and fast
Hadamard transforms (O(d' log d') per input instead of O(d'²)). Rows are needed in d' = 2^k dimensions: an input of
dimension d is padded with zeros to d' = the next power of two (``padded_dimension``), one block yields d' rows, and
blocks are independent (m > d' stacks ⌈m/d'⌉ of them; the first m rows are kept).

* **SORF** ([ORF] §4): W = √d' · H D₁ H D₂ H D₃, H the orthonormal d'×d' Hadamard matrix, D_k diagonal with iid
  ±1 signs. W/√d' is orthogonal, so every row has norm exactly √d' (ORF draws χ_d norms instead) and the rows of a
  block are orthogonal. A row is not Gaussian: the estimator is biased. [ORF] Thm 5 bounds the bias of trig features
  for the Gaussian kernel by 6z/√d (z = |x − y|, d the transform's dimension, here d'); the softmax kernel's bound is
  that times e^{(|x|²+|y|²)/2}. With padding the first d coordinates of a row have E|ω|² = d' · d/d' = d.
* **Fastfood** ([Fastfood] §3): V = S H G Π H B, B iid ±1 signs, Π a uniform permutation, G iid N(0, 1) on the
  diagonal, S the row scaling s_i/|row_i| with s_i ~ χ_{d'} iid. Given B and Π the rows of H G Π H B are
  Σ_k H_ik g_k r_k with (r_k) orthonormal, hence N(0, I/d') exactly; so each direction is uniform and, with its own
  χ_{d'} length, every ω_i is exactly N(0, I_{d'}) (its first d coordinates N(0, I_d)): Fastfood is unbiased, its
  rows are not orthogonal, and its variance has no closed form here.

Reduced coordinates (``rfviz.sampling``): neither law is rotation-invariant, so each trial first rotates R^d by one
Haar rotation (``random_frame``): ω's reduced coordinates are frame · ω. The sampled MSE is therefore the MSE of the
structured estimator averaged over the orientation of the pair (x, y) — the estimator applied to randomly rotated
data — which is what a pair given only by |x|, |y|, x·y can mean. The rows restricted to the first d coordinates give
|ω|² (exactly d' for SORF and s_i² for Fastfood when d = d').

Every random number comes from ``rfviz.sampling.standard_normal`` / ``chi_square`` / ``random_frame`` (signs are the
signs of normals, the permutation the argsort of normals), so a ``BlockStreams`` draws each block's trials from its
own generator.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..params import require_fits
from ..sampling import RandomSource, chi_square, frame_bytes, random_frame, standard_normal
from .hadamard import fwht

STRUCTURED_CHUNK_ELEMENTS = 2**22
"""Largest number of entries (rows × d' × columns) the structured transforms act on at once: bounds the temporaries
(32 MiB in float64) whatever the number of trials."""

SORF_BIAS_CONSTANT = 6.0
"""[ORF] Thm 5: |E K̂_SORF − K| ≤ 6 z/√d for trig features of the Gaussian kernel, z = |x − y|."""


def padded_dimension(d: int) -> int:
    """d' = the smallest power of two ≥ d: the dimension of the Hadamard blocks (inputs are padded with zeros).

    Parameters
    ----------
    d : int
        The input dimension.

    Returns
    -------
    int
        The smallest power of two ≥ d.

    Examples
    --------
    >>> padded_dimension(5), padded_dimension(64)
    (8, 64)
    """
    return 1 << max(0, int(d) - 1).bit_length()


def hadamard_transform(x: torch.Tensor) -> torch.Tensor:
    """The orthonormal Walsh–Hadamard transform (Sylvester order) along axis 1 of x (rows, n, columns), n = 2^k:
    k butterfly passes, O(n log n) per column.

    Parameters
    ----------
    x : torch.Tensor
        Shape (rows, n, columns), n a power of two.

    Returns
    -------
    torch.Tensor
        H x with H = H_n/√n orthonormal (H_{2n} = [[H_n, H_n], [H_n, −H_n]]).

    Examples
    --------
    >>> hadamard_transform(torch.eye(2, dtype=torch.float64)[None]).squeeze(0) * 2 ** 0.5
    tensor([[ 1.,  1.],
            [ 1., -1.]], dtype=torch.float64)
    """
    rows, n, cols = x.shape
    if n & (n - 1):
        raise ValueError(f"the Hadamard transform needs a power-of-two length, got {n}")
    h = 1
    y = x
    while h < n:
        pairs = y.reshape(rows, n // (2 * h), 2, h, cols)
        a, b = pairs[:, :, 0], pairs[:, :, 1]
        y = torch.stack((a + b, a - b), dim=2).reshape(rows, n, cols)
        h *= 2
    return y * (1.0 / math.sqrt(n))


Transform = Callable[[torch.Tensor, slice], torch.Tensor]
"""(columns (rows, d', k), the rows' slice of the block parameters) → the block matrices applied to the columns."""


def _apply_in_chunks(transform: Transform, frame: torch.Tensor, blocks: int, d: int, dp: int) -> tuple[torch.Tensor,
                                                                                                      torch.Tensor]:
    """Reduced rows W·frameᵀ and the squared norms of the rows' first d coordinates, for every block of every trial.

    ``frame`` is (trials, dim, d) (one rotation per trial); block r of trial t is row t·blocks + r. The padded
    coordinates' share of each row's norm is W applied to the unit vectors e_d … e_{d'−1} (none when d = d')."""
    trials, dim, _ = frame.shape
    rows = trials * blocks
    pad = dp - d
    require_fits(f"one structured block (d = {d} padded to {dp}, its {pad} padded coordinates transformed for the "
                 "norms)", 8.0 * 4 * dp * (dim + pad), "lower d (a power of two needs no padding)")
    out = torch.empty((rows, dp, dim), device=frame.device, dtype=frame.dtype)
    pad_sq = torch.zeros((rows, dp), device=frame.device, dtype=frame.dtype)
    step = max(1, STRUCTURED_CHUNK_ELEMENTS // (dp * (dim + pad)))
    eye = torch.zeros((dp, pad), device=frame.device, dtype=frame.dtype)  # the columns e_d … e_{d'−1}, not all of I
    eye[torch.arange(d, dp, device=frame.device), torch.arange(pad, device=frame.device)] = 1.0
    for start in range(0, rows, step):
        sl = slice(start, min(rows, start + step))
        trial_of_row = torch.arange(sl.start, sl.stop, device=frame.device) // blocks
        cols = torch.zeros((sl.stop - sl.start, dp, dim + pad), device=frame.device, dtype=frame.dtype)
        cols[:, :d, :dim] = frame[trial_of_row].transpose(-1, -2)
        if pad:
            cols[:, :, dim:] = eye
        done = transform(cols, sl)
        out[sl] = done[..., :dim]
        if pad:
            pad_sq[sl] = (done[..., dim:] ** 2).sum(-1)
    return out, pad_sq


def _rows(out: torch.Tensor, trials: int, blocks: int, dp: int, m: int) -> torch.Tensor:
    """(trials·blocks, d', dim) → the first m rows of each trial: (trials, m, dim)."""
    return out.reshape(trials, blocks * dp, out.shape[-1])[:, :m]


def _signs(shape: tuple[int, ...], generator: RandomSource, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """iid ±1 (the signs of standard normals; 0 has probability 0 and is sent to +1)."""
    g = standard_normal(shape, generator, device, dtype).sign_()  # in place: no temporaries of the size of g
    return g.masked_fill_(g == 0, 1.0)


def _structured_bytes(trials: int, m: int, d: int, dim: int, itemsize: int, per_row: int) -> float:
    """Peak bytes of a structured sampler: the frames, ``per_row`` × d' numbers of block parameters per block row
    (with their drawing temporaries), the transformed rows (rows × d' × dim) and the padded share of the norms, the
    identity columns of the padding (d' × (d' − d)), one chunk of columns (``STRUCTURED_CHUNK_ELEMENTS`` at most
    unless one block is larger; five copies live in a Hadamard pass) and the output."""
    dp = padded_dimension(d)
    rows = trials * -(-m // dp)
    pad = dp - d
    chunk = min(rows, max(1, STRUCTURED_CHUNK_ELEMENTS // (dp * (dim + pad)))) * dp * (dim + pad)
    logical = (frame_bytes(trials, d, dim, itemsize) + 8.0 * per_row * rows * dp + itemsize * rows * dp * (dim + 1)
               + itemsize * (dp * pad + 5.0 * chunk) + float(trials) * m * itemsize * (2 * dim + 3))
    return STRUCTURED_HEAP_FACTOR * logical


STRUCTURED_HEAP_FACTOR = 1.5
"""Resident memory per byte counted by ``_structured_bytes`` when the engine draws block after block: the heap
fragments (measured with ru_maxrss, SORF at d = 16384, 128 trials: 300-444 MB for one draw, 556 MB after three, against
384 MB counted)."""


def sample_sorf_bytes(trials: int, m: int, d: int, dim: int, itemsize: int = 8) -> float:
    """Peak bytes of ``sample_sorf`` before it runs (``rfviz.sampling.sampler_bytes``).

    Parameters
    ----------
    trials : int
        Independent draws (the engine's trials of one block).
    m : int
        Features per draw.
    d : int
        Input dimension.
    dim : int
        Columns drawn per feature (2 for a pair's two projections).
    itemsize : int, optional
        Bytes per number (8 for float64).

    Returns
    -------
    float
        Peak bytes of the draw.

    Examples
    --------
    >>> sample_sorf_bytes(1, 8, 8, 2) > 0
    True
    """
    return _structured_bytes(trials, m, d, dim, itemsize, per_row=3 * 2)  # the signs and their drawing


def sample_fastfood_bytes(trials: int, m: int, d: int, dim: int, itemsize: int = 8) -> float:
    """Peak bytes of ``sample_fastfood`` before it runs (``rfviz.sampling.sampler_bytes``).

    Parameters
    ----------
    trials : int
        Independent draws (the engine's trials of one block).
    m : int
        Features per draw.
    d : int
        Input dimension.
    dim : int
        Columns drawn per feature (2 for a pair's two projections).
    itemsize : int, optional
        Bytes per number (8 for float64).

    Returns
    -------
    float
        Peak bytes of the draw.

    Examples
    --------
    >>> sample_fastfood_bytes(1, 8, 8, 2) > 0
    True
    """
    return _structured_bytes(trials, m, d, dim, itemsize, per_row=12)  # signs, permutation, G, χ lengths


def draw_sorf(blocks: int, dp: int, generator: RandomSource, device: torch.device,
              dtype: torch.dtype) -> torch.Tensor:
    """The random numbers of ``blocks`` SORF blocks W = √d' H D₁ H D₂ H D₃: iid ±1 signs, shape (blocks, 3, d'),
    [:, k] the diagonal of D_{k+1} (``sample_sorf`` draws exactly these; ``apply_sorf`` applies them).

    Examples
    --------
    >>> draw_sorf(2, 4, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64).shape
    torch.Size([2, 3, 4])
    """
    return _signs((blocks, 3, dp), generator, device, dtype)


def draw_fastfood(blocks: int, dp: int, generator: RandomSource, device: torch.device,
                  dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """The random numbers of ``blocks`` Fastfood blocks V = S H G Π H B, each of shape (blocks, d'): signs ``b``,
    permutation ``perm``, Gaussian diagonal ``g``, χ_{d'} row lengths ``lengths`` and the row scaling
    ``scale`` = lengths/|row of H G Π H B| (``sample_fastfood`` draws exactly these; ``apply_fastfood`` applies them).

    Examples
    --------
    >>> sorted(draw_fastfood(2, 4, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64))
    ['b', 'g', 'lengths', 'perm', 'scale']
    """
    b = _signs((blocks, dp), generator, device, dtype)
    perm = torch.argsort(standard_normal((blocks, dp), generator, device, dtype), dim=-1)
    g = standard_normal((blocks, dp), generator, device, dtype)
    lengths = chi_square((blocks, dp), dp, generator, device, dtype).sqrt()
    row_norm = torch.linalg.vector_norm(g, dim=-1, keepdim=True) / math.sqrt(dp)  # |row_i of H G Π H B|, all i
    return {"b": b, "perm": perm, "g": g, "lengths": lengths, "scale": lengths / row_norm}


def _padded(u: torch.Tensor, dp: int) -> torch.Tensor:
    """Rows of u (n, d) padded with zeros to (n, d')."""
    if u.shape[-1] == dp:
        return u
    out = u.new_zeros((u.shape[0], dp))
    out[:, :u.shape[-1]] = u
    return out


def apply_sorf(u: torch.Tensor, signs: torch.Tensor, m: int) -> torch.Tensor:
    """ω_i·u for the first m rows of the SORF blocks ``signs`` (``draw_sorf``), by three fast Walsh–Hadamard
    transforms per block: O(m log d') per input row, no d' × d' matrix formed.

    Parameters
    ----------
    u : torch.Tensor
        Inputs (n, d), d ≤ d' (padded with zeros).
    signs : torch.Tensor
        (blocks, 3, d') from ``draw_sorf``.
    m : int
        Rows kept (≤ blocks·d').

    Returns
    -------
    torch.Tensor
        (n, m): u·Wᵀ with W the stacked blocks √d' H D₁ H D₂ H D₃.

    Examples
    --------
    >>> s = draw_sorf(1, 4, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64)
    >>> apply_sorf(torch.ones(2, 3, dtype=torch.float64), s, 4).shape
    torch.Size([2, 4])
    """
    blocks, _, dp = signs.shape
    v = _padded(u, dp)[:, None, :] * signs[None, :, 2, :]  # (n, blocks, d'): D₃ first, D₁ last
    v = fwht(v)
    v = fwht(v.mul_(signs[None, :, 1, :]))
    v = fwht(v.mul_(signs[None, :, 0, :]))
    return v.mul_(math.sqrt(dp)).reshape(u.shape[0], blocks * dp)[:, :m]


def apply_fastfood(u: torch.Tensor, ff: dict[str, torch.Tensor], m: int) -> torch.Tensor:
    """ω_i·u for the first m rows of the Fastfood blocks ``ff`` (``draw_fastfood``), by two fast Walsh–Hadamard
    transforms and a permutation per block: O(m log d') per input row.

    Parameters
    ----------
    u : torch.Tensor
        Inputs (n, d), d ≤ d'.
    ff : dict of torch.Tensor
        From ``draw_fastfood`` (``b``, ``perm``, ``g``, ``scale`` are read).
    m : int
        Rows kept.

    Returns
    -------
    torch.Tensor
        (n, m): u·Vᵀ with V the stacked blocks S H G Π H B.

    Examples
    --------
    >>> ff = draw_fastfood(1, 4, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64)
    >>> apply_fastfood(torch.ones(2, 3, dtype=torch.float64), ff, 3).shape
    torch.Size([2, 3])
    """
    blocks, dp = ff["b"].shape
    n = u.shape[0]
    v = fwht(_padded(u, dp)[:, None, :] * ff["b"][None])  # (n, blocks, d')
    v = torch.gather(v, 2, ff["perm"][None].expand(n, blocks, dp))
    v = fwht(v.mul_(ff["g"][None]))
    return v.mul_(ff["scale"][None]).reshape(n, blocks * dp)[:, :m]


def sample_sorf(trials: int, m: int, d: int, dim: int, generator: RandomSource, device: torch.device,
                dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """SORF blocks W = √d' H D₁ H D₂ H D₃ ([ORF] §4), d' = ``padded_dimension(d)``, in reduced coordinates after one
    Haar rotation per trial (module docstring). Biased: [ORF] Thm 5 bounds |E K̂ − K| by 6z/√d' (trig features,
    Gaussian kernel).

    Parameters
    ----------
    trials : int
        Independent estimators.
    m : int
        Projections per estimator.
    d : int
        The true dimension of the input space.
    dim : int
        The reduced coordinates kept (≤ d).
    generator : torch.Generator or BlockStreams
        The only source of random numbers (signs and rotations).
    device : torch.device
        Where the samples are made.
    dtype : torch.dtype
        Their float type.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        ω (trials, m, dim) and |ω|² over the first d coordinates (trials, m): d' − the padded share (d when d = d').

    Examples
    --------
    >>> w, sq = sample_sorf(3, 8, 8, 2, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64)
    >>> w.shape, bool(torch.allclose(sq, torch.full_like(sq, 8.0)))
    (torch.Size([3, 8, 2]), True)
    """
    dp = padded_dimension(d)
    blocks = -(-m // dp)
    frame = random_frame(trials, d, dim, generator, device, dtype)
    signs = draw_sorf(trials * blocks, dp, generator, device, dtype)
    scale = math.sqrt(dp)

    def transform(cols: torch.Tensor, sl: slice) -> torch.Tensor:
        s = signs[sl]
        for k in (2, 1, 0):  # D₃ first, D₁ last
            cols = hadamard_transform(cols * s[:, k, :, None])
        return cols * scale

    out, pad_sq = _apply_in_chunks(transform, frame, blocks, d, dp)
    sq = (dp - pad_sq).clamp_min(0.0)
    return _rows(out, trials, blocks, dp, m), sq.reshape(trials, blocks * dp)[:, :m]


def sample_fastfood(trials: int, m: int, d: int, dim: int, generator: RandomSource, device: torch.device,
                    dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Fastfood blocks V = S H G Π H B ([Fastfood] §3), d' = ``padded_dimension(d)``, in reduced coordinates after
    one Haar rotation per trial. Each ω_i is exactly N(0, I) (module docstring): unbiased.

    Parameters
    ----------
    trials : int
        Independent estimators.
    m : int
        Projections per estimator.
    d : int
        The true dimension of the input space.
    dim : int
        The reduced coordinates kept (≤ d).
    generator : torch.Generator or BlockStreams
        The only source of random numbers.
    device : torch.device
        Where the samples are made.
    dtype : torch.dtype
        Their float type.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        ω (trials, m, dim) and |ω|² over the first d coordinates (trials, m).

    Examples
    --------
    >>> w, sq = sample_fastfood(3, 5, 6, 2, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64)
    >>> w.shape, sq.shape
    (torch.Size([3, 5, 2]), torch.Size([3, 5]))
    """
    dp = padded_dimension(d)
    blocks = -(-m // dp)
    rows = trials * blocks
    frame = random_frame(trials, d, dim, generator, device, dtype)
    ff = draw_fastfood(rows, dp, generator, device, dtype)
    b, perm, g, lengths, scale = ff["b"], ff["perm"], ff["g"], ff["lengths"], ff["scale"]

    def transform(cols: torch.Tensor, sl: slice) -> torch.Tensor:
        cols = hadamard_transform(cols * b[sl, :, None])
        cols = torch.gather(cols, 1, perm[sl, :, None].expand_as(cols))
        cols = hadamard_transform(cols * g[sl, :, None])
        return cols * scale[sl, :, None]

    out, pad_sq = _apply_in_chunks(transform, frame, blocks, d, dp)
    sq = (lengths * lengths - pad_sq).clamp_min(0.0)
    return _rows(out, trials, blocks, dp, m), sq.reshape(trials, blocks * dp)[:, :m]


def sorf_bias_bound(z: float, d: int) -> float:
    """[ORF] Thm 5's bound on |E K̂ − K| for SORF trig features of the Gaussian kernel: 6 z/√d', z = |x − y|,
    d' = ``padded_dimension(d)`` (the dimension of the Hadamard blocks).

    Parameters
    ----------
    z : float
        |x − y|.
    d : int
        The input dimension.

    Returns
    -------
    float
        6 z/√d'.

    Examples
    --------
    >>> sorf_bias_bound(1.0, 64)
    0.75
    """
    return SORF_BIAS_CONSTANT * float(z) / math.sqrt(padded_dimension(d))


__all__ = ["SORF_BIAS_CONSTANT", "STRUCTURED_CHUNK_ELEMENTS", "apply_fastfood", "apply_sorf", "draw_fastfood",
           "draw_sorf", "hadamard_transform", "padded_dimension", "sample_fastfood", "sample_fastfood_bytes",
           "sample_sorf", "sample_sorf_bytes", "sorf_bias_bound"]
