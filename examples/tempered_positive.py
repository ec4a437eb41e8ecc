"""A correct new estimator: positive random features with a wider (tempered) proposal N(0, σ²I).

The positive RF of the softmax kernel draws ω ~ N(0, I_d). Drawing ω ~ q = N(0, σ²I_d) instead and weighting
each feature by the likelihood ratio p(ω)/q(ω) = σ^d·exp(-|ω|²(1 - σ⁻²)/2) keeps the estimator unbiased
(importance sampling; cf. the optimal-sampling reference, §importance sampling from Ψ):

    SM̂(x, y) = e^{-(|x|²+|y|²)/2}·(1/m) Σ_i e^{ω_i·(x+y)}·p(ω_i)/q(ω_i).

Its MSE has a closed form (Gaussian integral, needs σ² > 1/2), with a = 1 - 1/(2σ²) and z = x + y:

    MSE = (e^{-|x|²-|y|²}·σ^d·(2a)^{-d/2}·e^{|z|²/a} - SM²)/m.

σ = 1 gives back the plain positive RF. σ > 1 wins where |x + y| is large (θ near 0, large r), and loses a
factor (σ⁴/(2σ² - 1))^{d/2} where x + y ≈ 0: a genuine trade-off, which the lab's ratio map shows.

Check it with ``python -m rfviz check examples/tempered_positive.py:TemperedPositive``.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from rfviz.estimators.base import PairStats, Samples, SoftmaxFamilyEstimator, projections, sq_norm, with_kernel
from rfviz.numerics import log_expm1
from rfviz.params import M_PARAM, Param
from rfviz.sampling import sample_omegas

SIGMA_PARAM = Param("sigma", 1.25, "float", "standard deviation of the proposal N(0, σ²I) of ω (σ = 1: positive RF)",
                    low=math.sqrt(0.5), low_open=True, ui_low=0.75, ui_high=2.0, label="σ (proposal width)")


class TemperedPositive(SoftmaxFamilyEstimator):
    """Positive RF with ω ~ N(0, σ²I) and likelihood-ratio weights (importance sampling; unbiased for σ² > 1/2)."""

    name = "tempered_positive"
    title = "Positive RF, tempered proposal N(0, σ²I)"
    reference = "examples/tempered_positive.py (importance-sampled positive RF; MSE by a Gaussian integral)"
    description = "Strictly positive, unbounded; m features; σ = 1 is the positive RF."
    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM, SIGMA_PARAM)

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        sigma = self.params["sigma"]
        w, w_sq = sample_omegas("iid", trials, self.params["m"], d, d if dim is None else dim, generator, device, dtype)
        w, w_sq = sigma * w, sigma**2 * w_sq
        # log p(ω)/q(ω) = d·log σ - |ω|²(1 - σ⁻²)/2, with |ω|² the full d-dimensional squared norm.
        log_weight = d * math.log(sigma) - 0.5 * (1.0 - sigma**-2) * w_sq
        return {"w": w, "log_weight": log_weight}

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        shift = (0.5 * (sq_norm(x) + sq_norm(y)) + log_scale)[None, :, None]
        a = projections(samples["w"], x + y) + samples["log_weight"][:, None, :] - shift
        return torch.exp(torch.logsumexp(a, -1) - math.log(a.shape[-1]))

    def _features_softmax(self, samples: Samples, u: torch.Tensor, side: str) -> torch.Tensor:
        p = projections(samples["w"], u) + 0.5 * samples["log_weight"][:, None, :] - 0.5 * sq_norm(u)[None, :, None]
        return torch.exp(p) / math.sqrt(self.params["m"])

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        """log MSE = 2x·y + log(e^{c_d + |z|²(1/a - 1)} - 1) - log m, c_d = d(log σ - ½ log(2a)) ≥ 0."""
        sigma = self.params["sigma"]
        a = 1.0 - 0.5 / sigma**2
        c_d = s.d * (math.log(sigma) - 0.5 * math.log(2.0 * a))
        return 2.0 * s.xy + log_expm1(c_d + s.z2 * (1.0 / a - 1.0)) - math.log(self.params["m"])
