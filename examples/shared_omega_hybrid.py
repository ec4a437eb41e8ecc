"""A subtly BIASED estimator, kept as a warning: an angular hybrid whose λ̂ reuses the base estimators' ω.

The angular hybrid of the HRF paper (eq. 19) mixes the antithetic positive RF (exact at θ = π)
and the trigonometric RF (exact at θ = 0):

    SM̂ = λ̂·SM̂_++ + (1 - λ̂)·SM̂_trig,   λ̂ = 1/2 - (1/(2n)) Σ_j sgn(τ_j·x)·sgn(τ_j·y),   E[λ̂] = θ/π.

It is unbiased only when the hyperplanes τ are drawn independently of the projections ω of the base estimators
(HRF eq. 8 condition (ii); tests/estimators/test_hrf.py). This version saves n random vectors by
setting τ_j = ω_j. Every ingredient is individually unbiased and the code looks right, but λ̂ is now correlated
with SM̂_++ - SM̂_trig, so E[SM̂] ≠ SM. The bias shrinks like 1/m, which is why it is easy to miss by eye and why
`python -m rfviz check examples/shared_omega_hybrid.py:SharedOmegaHybrid` flags it.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch

from rfviz.estimators.base import Samples, SoftmaxFamilyEstimator, projections, sq_norm, with_kernel
from rfviz.params import M_PARAM, Param
from rfviz.sampling import sample_omegas


def _sign(t: torch.Tensor) -> torch.Tensor:
    """sgn with sgn(0) = +1, so that λ̂ stays in {k/n} (tests/estimators/test_hrf.py)."""
    return torch.where(t >= 0, 1.0, -1.0).to(t.dtype)


class SharedOmegaHybrid(SoftmaxFamilyEstimator):
    """Angular hybrid λ̂·SM_++ + (1 - λ̂)·SM_trig with τ = ω (BIASED: violates HRF eq. 8 condition (ii))."""

    name = "shared_omega_hybrid"
    title = "Angular hybrid with λ̂ sharing ω (biased)"
    reference = "examples/shared_omega_hybrid.py (HRF eq. 19 with τ = ω; see [HRF] eq. 8 condition (ii))"
    description = "Looks like the angular hybrid but reuses ω for λ̂: biased by O(1/m)."
    has_closed_form = False
    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM)

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        w, _ = sample_omegas("iid", trials, self.params["m"], d, d if dim is None else dim, generator, device, dtype)
        return {"w": w}

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        w = samples["w"]
        half = 0.5 * (sq_norm(x) + sq_norm(y))
        p = projections(w, x + y)
        a = torch.cat([p, -p], -1) - (half + log_scale)[None, :, None]
        positive = torch.exp(torch.logsumexp(a, -1) - math.log(a.shape[-1]))
        trig = torch.cos(projections(w, x - y)).mean(-1) * torch.exp(half - log_scale)
        # The bug: the hyperplanes of λ̂ are the same ω as above instead of independent τ.
        lam = 0.5 - 0.5 * (_sign(projections(w, x)) * _sign(projections(w, y))).mean(-1)
        return lam * positive + (1.0 - lam) * trig

    def _features_softmax(self, samples: Samples, u: torch.Tensor, side: str) -> torch.Tensor:
        """Real asymmetric hybrid feature map ([HRF] eq. 19) with s(u) = sgn(ω·u): 4m(m + 1) features."""
        w = samples["w"]
        m = w.shape[1]
        p = projections(w, u)
        h = -0.5 * sq_norm(u)[None, :, None]
        phi_pos = torch.exp(torch.cat([p + h, -p + h], -1)) / math.sqrt(2 * m)
        phi_trig = torch.cat([torch.sin(p), torch.cos(p)], -1) * torch.exp(-h) / math.sqrt(m)
        s = _sign(p)
        outer_pos = (s[..., :, None] * phi_pos[..., None, :]).flatten(-2) / math.sqrt(2 * m)
        outer_trig = (s[..., :, None] * phi_trig[..., None, :]).flatten(-2) / math.sqrt(2 * m)
        sign_pos = 1.0 if side == "query" else -1.0
        return torch.cat([phi_pos / math.sqrt(2), phi_trig / math.sqrt(2), sign_pos * outer_pos, outer_trig], -1)
