"""Samplers of random projections ω, in torch so the same code runs on a CUDA GPU or the CPU.

Every sampler returns ω in *reduced coordinates*: the first ``dim`` coordinates of ω after a uniformly
random rotation of R^d, plus the full squared norms |ω|². For a rotation-invariant (isotropic) law of ω
and inputs x, y that live in the first ``dim`` coordinates, ω·x and ω·y then have exactly the law they
have in R^d; with ``dim = 2`` this needs two numbers per ω instead of d (the engine's fast path).
With ``dim = d`` the samples are full vectors.

Couplings (Simplex Random Features paper, §3; CRT §4 / App. 9.1): iid (ω_i ~ N(0, I_d)) and orthogonal
(blocks of d orthogonal directions with iid χ_d lengths) are sampled here; every coupling, with its sampler, is
declared in ``rfviz.registries.COUPLINGS``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .params import COUPLING_PARAM, ParameterError, check
from .registries import COUPLINGS

OmegaSampler = Callable[..., tuple[torch.Tensor, torch.Tensor]]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """'auto' → CUDA when available, else CPU."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ParameterError("device must be one of auto, cpu (no CUDA GPU is available here), got 'cuda'")
    if device not in ("cpu", "cuda"):
        raise ParameterError(f"device must be one of auto, cpu, cuda, got {device!r}")
    return torch.device(device)


EXACT_SUM_MAX_DOF = 4
"""Up to this many degrees of freedom χ² is drawn as an exact sum of squared normals on the device; above, by numpy's
generator-driven χ² sampler (one sample costs less than a sum of squares from 5 degrees of freedom on)."""

FRAME_CHUNK_ELEMENTS = 2**21
"""Largest number of Gaussian entries a frame sampler orthogonalises at once (16 MiB in float64): bounds the QR /
Gram–Schmidt temporaries of the coupled samplers whatever the number of trials. A constant, not the engine's
memory budget, so that the numbers drawn depend only on (generator state, trials, d, dim, device, dtype)."""

def numpy_generator(generator: torch.Generator) -> np.random.Generator:
    """A numpy ``Generator`` seeded by one 63-bit draw from ``generator``: the torch stream still decides every
    number, so the engine's per-block seeding (same seed → same numbers whatever the chunking) carries over."""
    seed = torch.randint(0, 2**63 - 1, (1,), generator=generator, device=generator.device)
    return np.random.default_rng(int(seed.item()))


def chi_square(shape: tuple[int, ...], dof: int, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype) -> torch.Tensor:
    """χ²_dof samples (zeros when dof = 0), driven only by ``generator`` (deterministic under a seed).

    dof ≤ EXACT_SUM_MAX_DOF: a sum of squared normals on the device. Larger dof: numpy's
    ``Generator.chisquare`` (a well-kept, generator-driven exact sampler: 2·Gamma(dof/2) by Marsaglia–Tsang over
    ziggurat normals, ~24 ns per sample on this CPU, about 3× a vectorised torch rejection sampler), seeded from
    ``generator`` and moved to ``device`` (torch's own Gamma/Chi2 take no generator, so they cannot be seeded per
    block). O(1) random numbers per sample instead of dof, which matters for the engine at large d.
    """
    if dof <= 0:
        return torch.zeros(shape, device=device, dtype=dtype)
    if dof <= EXACT_SUM_MAX_DOF:
        g = torch.randn((*shape, dof), generator=generator, device=device, dtype=dtype)
        return (g * g).sum(-1)
    draws = numpy_generator(generator).chisquare(float(dof), size=shape)
    return torch.from_numpy(draws).to(device=device, dtype=dtype)


def chi(shape: tuple[int, ...], dof: int, generator: torch.Generator, device: torch.device,
        dtype: torch.dtype) -> torch.Tensor:
    """χ_dof samples (norms of dof-dimensional standard Gaussian vectors): √χ²_dof, see ``chi_square``."""
    return chi_square(shape, dof, generator, device, dtype).sqrt()


def _frame_chunk(g: torch.Tensor) -> torch.Tensor:
    """Orthonormalise the rows of each (dim, d) slice of g (Gram–Schmidt = QR with a positive-diagonal R)."""
    dim = g.shape[1]
    if dim > 4:
        q, r = torch.linalg.qr(g.transpose(-1, -2))
        sign = torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))
        sign = torch.where(sign == 0, torch.ones_like(sign), sign)
        return (q * sign.unsqueeze(-2)).transpose(-1, -2)
    rows: list[torch.Tensor] = []
    for i in range(dim):
        v = g[:, i]
        for _ in range(2 if i else 1):
            for q in rows:
                v = v - (v * q).sum(-1, keepdim=True) * q
            v = v / torch.linalg.vector_norm(v, dim=-1, keepdim=True)
        rows.append(v)
    return torch.stack(rows, 1)


def random_frame(trials: int, d: int, dim: int, generator: torch.Generator, device: torch.device,
                 dtype: torch.dtype) -> torch.Tensor:
    """First ``dim`` rows of Haar-random rotations of R^d: shape (trials, dim, d), orthonormal rows.

    Gram–Schmidt on iid Gaussian vectors (= QR with a positive-diagonal R, Mezzadri 2007), which is Haar on the
    Stiefel manifold. Costs O(d·dim²) per trial instead of the O(d³) of a full Haar matrix; for dim ≤ 4 the
    orthogonalisation is written out (two Gram–Schmidt passes for round-off) instead of a batched LAPACK QR.
    Frames are drawn and orthogonalised in chunks of at most FRAME_CHUNK_ELEMENTS Gaussian entries, so the
    temporaries stay bounded however many trials are asked for (the output itself is trials·dim·d).
    """
    step = max(1, FRAME_CHUNK_ELEMENTS // max(1, dim * d))
    if trials <= step:
        return _frame_chunk(torch.randn((trials, dim, d), generator=generator, device=device, dtype=dtype))
    out = torch.empty((trials, dim, d), device=device, dtype=dtype)
    for start in range(0, trials, step):
        n = min(step, trials - start)
        out[start:start + n] = _frame_chunk(torch.randn((n, dim, d), generator=generator, device=device,
                                                        dtype=dtype))
    return out


def sample_iid(trials: int, m: int, d: int, dim: int, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """ω_i iid N(0, I_d). Returns (reduced coordinates (trials, m, dim), |ω|² (trials, m))."""
    w = torch.randn((trials, m, dim), generator=generator, device=device, dtype=dtype)
    sq = (w * w).sum(-1) + chi_square((trials, m), d - dim, generator, device, dtype)
    return w, sq


def sample_orthogonal(trials: int, m: int, d: int, dim: int, generator: torch.Generator, device: torch.device,
                      dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Block-orthogonal ω: per block of d, orthonormal Haar directions times iid χ_d lengths (SimRF §3, ORF)."""
    blocks = -(-m // d)
    frame = random_frame(trials * blocks, d, dim, generator, device, dtype)  # (T·B, dim, d): columns = directions
    dirs = frame.transpose(-1, -2).reshape(trials, blocks * d, dim)[:, :m]
    sq = chi_square((trials, m), d, generator, device, dtype)
    return dirs * sq.sqrt().unsqueeze(-1), sq


def sample_omegas(coupling: str, trials: int, m: int, d: int, dim: int, generator: torch.Generator,
                  device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Dispatch to the coupling's sampler (``rfviz.registries.COUPLINGS``); see the module docstring for the reduced
    coordinates."""
    check(coupling, COUPLING_PARAM)
    if dim > d:
        raise ParameterError(f"d must be ≥ {dim} (the dimension of the inputs), got {d}")
    sampler: OmegaSampler = COUPLINGS[coupling].sampler()
    return sampler(trials, m, d, dim, generator, device, dtype)
