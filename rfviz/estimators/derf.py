"""Dense-exponential random features ([DERF], the FAVOR# paper): SDERF, ADERF and SADERF with their per-pair optimal
parameters, on the softmax-family protocol (the Gaussian kernel from ``SoftmaxFamilyEstimator``).

Each class is the atlas's isotropic, per-pair version (like OPRF's ``A_from=pair``): the parameters are the variant's
optimum for the pair itself (``rfviz.maths.derf.pair_log_R``), so the law of K̂ depends on x, y only through |x|,
|y|, x·y and the engine samples in span(x, y). The batch optima from data sets (what a feature map for attention
uses) are ``rfviz.maths.derf.{sderf,aderf,saderf}_fit``. Derivation: docs: derivations/dense-exponential.

With x̃, ỹ the pair's transformed inputs (x, y for sderf; both rescaled to the norm √(|x||y|) for aderf and
saderf, i.e. Ψ = λI with λ² = |y|/|x|) and v = x̃ + ỹ:

* sderf / aderf: A = a·uuᵀ, u = v/|v|, a = A*(|v|², 1): log Y = ½ log(1 − 4a) + 2a(ω·u)² + √(1 − 4a) ω·v
  − (|x̃|² + |ỹ|²)/2.
* saderf: A = aI, a = A*(|v|², d) (OPRF on x̃, ỹ): log Y = (d/2) log(1 − 4a) + 2a|ω|² + √(1 − 4a) ω·v
  − (|x̃|² + |ỹ|²)/2.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from ..maths import derf
from ..numerics import log_expm1
from ..registries import CLOSED_FORM
from .base import PairStats, Samples, projections, register, sq_norm
from .hrf import _ProjectionEstimator

DERF_CITATION = ("[DERF] §3 (the DERF family, section as recalled: not re-read here); variance and per-pair optimum "
                 "derived in docs: derivations/dense-exponential")


def _rho_star_1d(z: torch.Tensor, d: int) -> torch.Tensor:
    """ρ* = 2d/((2Z + d) + √((2Z + d)² + 8dZ)) ([CRT] eq. 7, as ``rfviz.maths.crt.rho_star``), in torch."""
    return 2.0 * d / ((2 * z + d) + torch.sqrt((2 * z + d) ** 2 + 8.0 * d * z))


class _DerfBase(_ProjectionEstimator):
    """Shared sampling (iid or coupled ω through rfviz.sampling) and the per-pair estimate of the DERF variants."""

    known = CLOSED_FORM
    citation = DERF_CITATION
    variant: ClassVar[str] = ""
    rescaled: ClassVar[bool] = True
    """Whether the inputs are rescaled to the norm √(|x||y|) (Ψ = λI, the asymmetric variants)."""
    needs_norms: ClassVar[bool] = False

    def _log_mse_iid(self, s: PairStats) -> np.ndarray:
        """Var = K²(R − 1)/m with log R from ``rfviz.maths.derf.pair_log_R`` (softmax kernel)."""
        x, y = np.broadcast_arrays(s.x, s.y)
        log_r = derf.pair_log_R(x, y, s.d, self.variant)
        return 2.0 * s.xy + log_expm1(log_r) - math.log(self.params["m"])

    def fourth_moment_finite(self, s: PairStats) -> np.ndarray:
        """The per-pair optimum has every a ≤ 0 < 1/16: E[Y⁴] < ∞ at every pair."""
        return np.ones(np.shape(s.xx), dtype=bool)

    def _inputs(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(x̃, ỹ): unchanged, or both rescaled to the norm √(|x||y|) (0 when either is 0: then K̂ = K = 1·e^0)."""
        if not self.rescaled:
            return x, y
        nx, ny = torch.sqrt(sq_norm(x)), torch.sqrt(sq_norm(y))
        g = torch.sqrt(nx * ny)
        sx = torch.where(nx > 0, g / torch.where(nx > 0, nx, torch.ones_like(nx)), torch.zeros_like(nx))
        sy = torch.where(ny > 0, g / torch.where(ny > 0, ny, torch.ones_like(ny)), torch.zeros_like(ny))
        return x * sx[:, None], y * sy[:, None]

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        xt, yt = self._inputs(x, y)
        v = xt + yt
        z = sq_norm(v)
        one_direction = self.variant != "saderf"
        d_eff = 1 if one_direction else int(samples["d"])
        a = (1.0 - 1.0 / _rho_star_1d(z, d_eff)) / 8.0  # A*(Z, d_eff) ≤ 0 per pair, (P,)
        proj = projections(samples["w"], v)  # ω·v, (T, P, m)
        if one_direction:
            norm = torch.sqrt(z)
            quad = (proj / torch.where(norm > 0, norm, torch.ones_like(norm))[None, :, None]) ** 2  # (ω·u)²
        else:
            quad = samples["w_sq"][:, None, :]
        const = 0.5 * d_eff * torch.log1p(-4.0 * a) - 0.5 * (sq_norm(xt) + sq_norm(yt)) - log_scale
        log_y = const[None, :, None] + 2.0 * a[None, :, None] * quad + torch.sqrt(1.0 - 4.0 * a)[None, :, None] * proj
        top = log_y.amax(-1, keepdim=True)
        return torch.exp(log_y - top).mean(-1) * torch.exp(top.squeeze(-1))

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        out = super().sample(trials, d, generator=generator, device=device, dtype=dtype, dim=dim)
        out["d"] = torch.tensor(d)
        return out

    def _features_scaled(self, samples: Samples, u: torch.Tensor, side: str,
                         log_scale: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(f"{self.name} uses per-pair parameters (they depend on both inputs): no feature "
                                  "map; fit batch parameters with rfviz.maths.derf.{sderf,aderf,saderf}_fit")


@register
class Sderf(_DerfBase):
    """SDERF, symmetric dense-exponential RF ([DERF]): f = D e^{ωᵀAω + ωᵀBu + uᵀCu} on both sides, A a matrix;
    per pair A = a·uuᵀ along u = (x + y)/|x + y| with a = A*(|x + y|², 1)."""

    name = "sderf"
    title = "SDERF (symmetric dense-exponential RF, per-pair optimum)"
    short_title = "SDERF"
    reference = "FAVOR# paper (Likhosherstov et al. 2023); variance and optimum: docs: derivations/dense-exponential"
    description = ("Positive. GERF's scalar A becomes a matrix: all of its variance reduction goes to the direction "
                   "of x + y, so its relative variance is OPRF's with d = 1 (never above OPRF's).")
    variant = "sderf"
    rescaled = False


@register
class Aderf(_DerfBase):
    """ADERF, asymmetric dense-exponential RF ([DERF]): the query side sees Ψx, the key side Ψ⁻ᵀy, and A is a
    matrix; per pair Ψ = λI (λ² = |y|/|x|) and A = a·uuᵀ along x̃ + ỹ with a = A*(2|x||y| + 2x·y, 1)."""

    name = "aderf"
    title = "ADERF (asymmetric dense-exponential RF, per-pair optimum)"
    short_title = "ADERF"
    reference = Sderf.reference
    description = ("Positive. Balances the two norms (|x̃| = |ỹ| = √(|x||y|)) and puts A along x̃ + ỹ: "
                   "|x̃ + ỹ|² = 2|x||y| + 2x·y ≤ |x + y|², so never above SDERF's variance.")
    variant = "aderf"


@register
class Saderf(_DerfBase):
    """SADERF, simplified asymmetric dense-exponential RF ([DERF]): A = aI scalar with the asymmetric Ψ; per pair
    Ψ = λI (λ² = |y|/|x|) and a = A*(2|x||y| + 2x·y, d): OPRF on the balanced inputs."""

    name = "saderf"
    title = "SADERF (simplified asymmetric DERF, per-pair optimum)"
    short_title = "SADERF"
    reference = Sderf.reference
    description = ("Positive. OPRF on inputs rescaled to equal norms √(|x||y|): never above OPRF's variance; "
                   "reads |ω|² like GERF.")
    variant = "saderf"
    needs_norms = True
