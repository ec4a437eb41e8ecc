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

import math
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


EXACT_SUM_MAX_DOF = 8
"""Up to this many degrees of freedom χ² is drawn as an exact sum of squared normals; above, by Marsaglia–Tsang."""


def gamma_marsaglia_tsang(shape: tuple[int, ...], alpha: float, generator: torch.Generator,
                          device: torch.device) -> torch.Tensor:
    """Gamma(alpha, 1) samples in float64, driven only by ``generator`` (torch's own Gamma sampler takes none).

    Marsaglia & Tsang (2000), "A simple method for generating gamma variables", exact rejection sampler:
    with a = alpha − 1/3, c = 1/√(9a), x ~ N(0, 1), v = (1 + cx)³, u ~ U(0, 1), accept a·v when v > 0 and
    log u < x²/2 + a − a·v + a·log v (acceptance > 95% for alpha ≥ 1). alpha < 1 uses Gamma(alpha + 1)·U^{1/alpha}.
    Rejected entries are redrawn in vectorised rounds, so the cost is ~2.1 random numbers per sample whatever alpha
    (a sum of squares would need 2·alpha normals).
    """
    if alpha <= 0:
        raise ParameterError(f"alpha must be a number in (0, inf), got {alpha}")
    boost = alpha < 1.0
    a = (alpha + 1.0 if boost else alpha) - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * a)
    out = torch.empty(shape, device=device, dtype=torch.float64).reshape(-1)
    pending = torch.arange(out.numel(), device=device)
    while pending.numel() > 0:
        n = pending.numel()
        x = torch.randn(n, generator=generator, device=device, dtype=torch.float64)
        u = torch.rand(n, generator=generator, device=device, dtype=torch.float64)
        v = (1.0 + c * x) ** 3
        ok = (v > 0) & (torch.log(u) < 0.5 * x * x + a - a * v + a * torch.log(v.clamp_min(1e-300)))
        out[pending[ok]] = a * v[ok]
        pending = pending[~ok]
    if boost:
        u = torch.rand(out.numel(), generator=generator, device=device, dtype=torch.float64)
        out = out * u.pow(1.0 / alpha)
    return out.reshape(shape)


def chi_square(shape: tuple[int, ...], dof: int, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype) -> torch.Tensor:
    """χ²_dof samples (zeros when dof = 0), driven only by ``generator`` (deterministic under a seed).

    dof ≤ EXACT_SUM_MAX_DOF: sum of squared normals; larger dof: 2·Gamma(dof/2, 1) by Marsaglia–Tsang (exact
    in law, O(1) random numbers per sample instead of dof, which matters for the engine at large d).
    """
    if dof <= 0:
        return torch.zeros(shape, device=device, dtype=dtype)
    if dof <= EXACT_SUM_MAX_DOF:
        g = torch.randn((*shape, dof), generator=generator, device=device, dtype=dtype)
        return (g * g).sum(-1)
    return (2.0 * gamma_marsaglia_tsang(shape, dof / 2.0, generator, device)).to(dtype)


def random_frame(trials: int, d: int, dim: int, generator: torch.Generator, device: torch.device,
                 dtype: torch.dtype) -> torch.Tensor:
    """First ``dim`` rows of Haar-random rotations of R^d: shape (trials, dim, d), orthonormal rows.

    Gram–Schmidt on iid Gaussian vectors (= QR with a positive-diagonal R, Mezzadri 2007), which is Haar on the
    Stiefel manifold. Costs O(d·dim²) per trial instead of the O(d³) of a full Haar matrix; for dim ≤ 4 the
    orthogonalisation is written out (two Gram–Schmidt passes for round-off) instead of a batched LAPACK QR.
    """
    g = torch.randn((trials, dim, d), generator=generator, device=device, dtype=dtype)
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
