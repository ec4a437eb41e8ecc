"""Samplers of random projections ω, in torch so the same code runs on a CUDA GPU or the CPU.

Every sampler returns ω in *reduced coordinates*: the first ``dim`` coordinates of ω after a uniformly
random rotation of R^d, plus the full squared norms |ω|². For a rotation-invariant (isotropic) law of ω
and inputs x, y that live in the first ``dim`` coordinates, ω·x and ω·y then have exactly the law they
have in R^d; with ``dim = 2`` this needs two numbers per ω instead of d (the engine's fast path).
With ``dim = d`` the samples are full vectors.

Couplings (Simplex Random Features paper, §3; CRT §4 / App. 9.1): ``iid`` (ω_i ~ N(0, I_d)),
``orthogonal`` (blocks of d orthogonal directions with iid χ_d lengths). Further couplings register
themselves in ``COUPLINGS``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .params import ParameterError

OmegaSampler = Callable[..., tuple[torch.Tensor, torch.Tensor]]
COUPLINGS: dict[str, OmegaSampler] = {}


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


def register_coupling(name: str) -> Callable[[OmegaSampler], OmegaSampler]:
    """Decorator: make a sampler available as ``coupling=name``."""

    def deco(fn: OmegaSampler) -> OmegaSampler:
        COUPLINGS[name] = fn
        return fn

    return deco


def chi_square(shape: tuple[int, ...], dof: int, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype) -> torch.Tensor:
    """χ²_dof samples (zeros when dof = 0), via the Gamma(dof/2, 2) law."""
    if dof <= 0:
        return torch.zeros(shape, device=device, dtype=dtype)
    # torch's Gamma sampler takes no generator: draw it from a seeded, generator-driven uniform instead.
    # For integer dof use the sum of squares in chunks of ≤ 64 (exact and deterministic under the generator).
    total = torch.zeros(shape, device=device, dtype=dtype)
    remaining = dof
    while remaining > 0:
        k = min(remaining, 64)
        g = torch.randn((*shape, k), generator=generator, device=device, dtype=dtype)
        total += (g * g).sum(-1)
        remaining -= k
    return total


def random_frame(trials: int, d: int, dim: int, generator: torch.Generator, device: torch.device,
                 dtype: torch.dtype) -> torch.Tensor:
    """First ``dim`` rows of Haar-random rotations of R^d: shape (trials, dim, d), orthonormal rows.

    Costs O(d·dim²) per trial instead of the O(d³) of a full Haar matrix.
    """
    g = torch.randn((trials, d, dim), generator=generator, device=device, dtype=dtype)
    q, r = torch.linalg.qr(g)
    # Fix the signs so that q is Haar-distributed (Mezzadri 2007).
    sign = torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))
    sign = torch.where(sign == 0, torch.ones_like(sign), sign)
    return (q * sign.unsqueeze(-2)).transpose(-1, -2)


@register_coupling("iid")
def sample_iid(trials: int, m: int, d: int, dim: int, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """ω_i iid N(0, I_d). Returns (reduced coordinates (trials, m, dim), |ω|² (trials, m))."""
    w = torch.randn((trials, m, dim), generator=generator, device=device, dtype=dtype)
    sq = (w * w).sum(-1) + chi_square((trials, m), d - dim, generator, device, dtype)
    return w, sq


@register_coupling("orthogonal")
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
    """Dispatch to the registered coupling sampler; see the module docstring for the reduced coordinates."""
    if coupling not in COUPLINGS:
        raise ParameterError(f"coupling must be one of {', '.join(COUPLINGS)}, got {coupling!r}")
    if dim > d:
        raise ParameterError(f"d must be ≥ {dim} (the dimension of the inputs), got {d}")
    return COUPLINGS[coupling](trials, m, d, dim, generator, device, dtype)
