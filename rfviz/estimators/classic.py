"""Trigonometric and positive random features of the softmax kernel (HRF paper §2.1, Lemma 2.2).

Each takes m projections ω drawn under a ``coupling`` (iid by default; see rfviz.sampling).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from ..coupling import coupled_log_mse, has_coupled_closed_form
from ..numerics import log1mexp, log_expm1
from ..params import COUPLING_PARAM, M_PARAM, Param
from ..sampling import sample_omegas
from .base import PairStats, Samples, SoftmaxFamilyEstimator, projections, register, sq_norm, with_kernel


def mean_exp_shifted(w: torch.Tensor, z: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """(1/m) Σ_i e^{ω_i·z}·e^{−shift} for samples w (trials, m, dim), points z (P, dim), shift (P,): (trials, P).

    Fast path: e^{ω·z} in place and its mean, the per-pair scale e^{−shift} applied after the reduction (three
    memory passes; a logsumexp needs five). e^{ω·z} leaves the range only past ω·z ≈ 709 in float64 (never, for
    |x|, |y| ≤ 20) or ≈ 88 in float32 (far pairs, r ≳ 10); there, and if the scale underflows every term, it falls
    back to the exact logsumexp.
    """
    out = projections(w, z).exp_().mean(-1) * torch.exp(-shift)
    if bool(torch.isfinite(out).all()) and bool((out > 0).all()):
        return out
    p = projections(w, z)
    return torch.exp(torch.logsumexp(p, -1) - shift - math.log(p.shape[-1]))


def mean_cosh_shifted(w: torch.Tensor, z: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """(1/m) Σ_i cosh(ω_i·z)·e^{−shift}, shapes as in ``mean_exp_shifted``.

    Fast path: e^{p} in place, its mean, then e^{−p} as its reciprocal in place and its mean (cosh itself is 3×
    slower than exp on the CPU); this leaves the range only past |ω·z| ≈ 88 in float32 (far pairs, r ≳ 10), where
    it falls back to log Σ (e^{p} + e^{−p}) with the max |p| factored out.
    """
    e = projections(w, z).exp_()
    out = (e.mean(-1) + e.reciprocal_().mean(-1)) * (0.5 * torch.exp(-shift))
    if bool(torch.isfinite(out).all()) and bool((out > 0).all()):
        return out
    p = projections(w, z)
    top = p.abs().amax(-1, keepdim=True)
    total = torch.exp(p - top).add_(p.neg_().sub_(top).exp_()).sum(-1)
    return torch.exp(torch.log(total) + top[..., 0] - shift - math.log(2 * p.shape[-1]))


class _ProjectionEstimator(SoftmaxFamilyEstimator):
    """Softmax estimators built from m projections ω with a selectable coupling."""

    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM, COUPLING_PARAM)

    def closed_form_available(self) -> bool:
        return self.params["coupling"] == "iid" or has_coupled_closed_form(self)

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        w, w_sq = sample_omegas(self.params["coupling"], trials, self.params["m"], d, d if dim is None else dim,
                                generator, device, dtype)
        return {"w": w, "w_sq": w_sq}

    def _log_mse(self, s: PairStats) -> np.ndarray:
        if self.params["coupling"] != "iid":
            out = coupled_log_mse(self, s)
            return out if self.kernel == "softmax" else out - (s.xx + s.yy)
        return super()._log_mse(s)


@register
class Trig(_ProjectionEstimator):
    """Trigonometric RF: SM_trig = e^{(|x|²+|y|²)/2}·(1/m) Σ cos(ω_i·(x−y)) (HRF eq. 2; Rahimi & Recht)."""

    name = "trig"
    title = "Trigonometric RF (sin/cos)"
    reference = "HRF paper (Choromanski et al. 2022) eq. 2; MSE Lemma 2.2 eq. 7"
    description = "Real, bounded, not positive; exact at θ = 0 (x = y)."

    def log_scale(self, s: PairStats) -> np.ndarray:
        """|K̂_trig| ≤ e^{(|x|²+|y|²)/2} (softmax) or 1 (Gaussian): scaling by it keeps far pairs finite in float32,
        where scaling by K would need e^{|x−y|²/2}."""
        return 0.5 * (s.xx + s.yy) if self.kernel == "softmax" else np.zeros_like(s.xy)

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        """MSE_trig = e^{|x|²+|y|²}(1 − e^{−|x−y|²})²/(2m) (HRF Lemma 2.2, expanded in the reference F1)."""
        return s.xx + s.yy + 2.0 * log1mexp(s.delta2) - math.log(2 * self.params["m"])

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        c = projections(samples["w"], x - y).cos_().mean(-1)
        return c * torch.exp(0.5 * (sq_norm(x) + sq_norm(y)) - log_scale)

    def _features_softmax(self, samples: Samples, u: torch.Tensor, side: str) -> torch.Tensor:
        p = projections(samples["w"], u)
        scale = torch.exp(0.5 * sq_norm(u))[None, :, None] / math.sqrt(self.params["m"])
        return torch.cat([torch.sin(p), torch.cos(p)], -1) * scale


@register
class Positive(_ProjectionEstimator):
    """One-sided positive RF: e^{−(|x|²+|y|²)/2}·(1/m) Σ e^{ω_i·(x+y)} (HRF E2′ = CE with A = I)."""

    name = "positive"
    title = "Positive RF (one-sided)"
    reference = "HRF paper §2.1 (E2′) and Performers; MSE = SM²(e^{|x+y|²} − 1)/m (HRF F6 with A = I)"
    description = "Strictly positive, unbounded; m features."

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        """MSE = SM²(e^{|x+y|²} − 1)/m (reference F6, plain CE with A = I; CRT §3.2 PosRF)."""
        return 2.0 * s.xy + log_expm1(s.z2) - math.log(self.params["m"])

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        return mean_exp_shifted(samples["w"], x + y, 0.5 * (sq_norm(x) + sq_norm(y)) + log_scale)

    def _features_softmax(self, samples: Samples, u: torch.Tensor, side: str) -> torch.Tensor:
        p = projections(samples["w"], u) - 0.5 * sq_norm(u)[None, :, None]
        return torch.exp(p) / math.sqrt(self.params["m"])


@register
class PositiveAntithetic(_ProjectionEstimator):
    """Antithetic positive RF (FAVOR+): e^{−(|x|²+|y|²)/2}·(1/m) Σ cosh(ω_i·(x+y)) (HRF eq. 3)."""

    name = "positive_antithetic"
    title = "Positive RF, antithetic (FAVOR+)"
    reference = "HRF paper eq. 3; MSE Lemma 2.2 eq. 7"
    description = "Strictly positive, unbounded; exact at θ = π (x = −y); 2m features."

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        """MSE_++ = e^{|x|²+|y|²+4x·y}(1 − e^{−|x+y|²})²/(2m) (HRF Lemma 2.2, reference F1)."""
        return s.xx + s.yy + 4.0 * s.xy + 2.0 * log1mexp(s.z2) - math.log(2 * self.params["m"])

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        return mean_cosh_shifted(samples["w"], x + y, 0.5 * (sq_norm(x) + sq_norm(y)) + log_scale)

    def _features_softmax(self, samples: Samples, u: torch.Tensor, side: str) -> torch.Tensor:
        p = projections(samples["w"], u)
        h = -0.5 * sq_norm(u)[None, :, None]
        return torch.exp(torch.cat([p + h, -p + h], -1)) / math.sqrt(2 * self.params["m"])
