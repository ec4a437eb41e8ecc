"""Optimal importance sampling ([OS]), the computing half: Monte Carlo of Def. 2 through rfviz.engine (memory
budget, independently seeded blocks, heavy-tail reliability like every other sampler) and the Monte-Carlo variance
per sample of positive and trig features under Ψ* and under Ω along r or σ, drawn as points by
rfviz.figures.optimal.add_mc_points.

The engine samples estimators at fixed pairs; Def. 2 draws (x1, x2, ω) jointly. ``PsiSampler`` makes one the other:
its random variables are (x1, x2, ω[, b]) per trial and it is run at the single pair x = y = 0, whose kernel is 1, as
the estimate Y − K(x1, x2) + 1. The engine's MSE at that pair is then mean((Y − K)²), its mean − 1 the bias: the
estimator of [OS] Def. 2, with the engine's standard errors and diagnostics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from ..engine import DEFAULT_BLOCK_TRIALS, MCResult, monte_carlo
from ..estimators.base import Estimator, Samples
from ..geometry import PairStats
from ..maths.optimal import MECHANISMS, InputLaw, OptimalSampling


class PsiSampler(Estimator):
    """The importance-weighted estimator Y = (p_Ω/p_Ψ)(ω) φ(x1, ω) φ(x2, ω) of one ``OptimalSampling`` problem, with
    (x1, x2) drawn from its input law in every trial, as an estimator the engine can run (not registered: it is
    built from a problem, not from parameters). ``optimal`` chooses Ψ* (True) or Ω (False)."""

    name: ClassVar[str] = "optimal_sampling"
    title: ClassVar[str] = "optimal importance sampling Ψ (Def. 2)"
    reference: ClassVar[str] = "OS"
    isotropic: ClassVar[bool] = False
    has_closed_form: ClassVar[bool] = False

    def __init__(self, problem: OptimalSampling, optimal: bool = True) -> None:
        super().__init__()
        self.problem = problem
        self.optimal = bool(optimal)

    @property
    def kernel(self) -> str:
        return self.problem.kernel

    def work_per_pair(self, d: int) -> int:
        """Per trial: x1, x2, ω (d each) and a few scalars."""
        return 4 * d + 16

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        """``trials`` joint draws (x1, x2, ω, b, log(p_Ω/p_Ψ)) from the problem's numpy samplers, seeded from the
        engine's per-block torch generator (so blocks stay independent and reproducible)."""
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device)))
        x1, x2 = self.problem.inputs.sample(trials, rng)
        draws = self.problem.sample(trials, rng, self.optimal)
        phase = np.zeros(trials) if draws.phase is None else draws.phase
        as_t = {"x1": x1, "x2": x2, "omega": draws.omega, "phase": phase, "log_weight": draws.log_weight}
        return {k: torch.as_tensor(np.asarray(v, dtype=float), device=device, dtype=dtype) for k, v in as_t.items()}

    def estimate(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                 log_scale: torch.Tensor | None = None) -> torch.Tensor:
        """Y − K(x1, x2) + 1 per trial, repeated over the pairs (the engine's pair is x = y = 0, where K = 1)."""
        x1, x2, w = samples["x1"], samples["x2"], samples["omega"]
        n1, n2 = (x1 * x1).sum(-1), (x2 * x2).sum(-1)
        p1, p2 = (w * x1).sum(-1), (w * x2).sum(-1)
        softmax = self.problem.kernel == "softmax"
        if self.problem.mechanism == "positive":
            gamma = 0.5 if softmax else 1.0
            y_hat = torch.exp(samples["log_weight"] + p1 + p2 - gamma * (n1 + n2))
        else:
            log_h = 0.5 * (n1 + n2) if softmax else torch.zeros_like(n1)
            b = samples["phase"]
            y_hat = 2 * torch.exp(samples["log_weight"] + log_h) * torch.cos(p1 + b) * torch.cos(p2 + b)
        k = torch.exp((x1 * x2).sum(-1)) if softmax else torch.exp(-0.5 * ((x1 - x2) ** 2).sum(-1))
        return (y_hat - k + 1.0)[:, None].expand(-1, x.shape[0])

    def log_abs_kernel(self, s: PairStats) -> tuple[np.ndarray, np.ndarray]:
        """The engine's pair is x = y = 0: K = 1."""
        shape = np.shape(s.xy)
        return np.zeros(shape), np.ones(shape)

    def log_scale(self, s: PairStats) -> np.ndarray:
        return np.zeros(np.shape(s.xy))

    def fourth_moment_finite(self, s: PairStats) -> bool | None:
        """E Y⁴ < ∞ where the reference derives it (positive features); None where it does not."""
        label = "optimal" if self.optimal else "plain"
        finite = self.problem.divergence()["fourth_moment_finite"].get(label)
        return None if finite is None else bool(finite)


def monte_carlo_psi(problem: OptimalSampling, n: int, seed: int = 0, optimal: bool = True,
                    device: str = "cpu", memory_budget: int | None = None) -> dict[str, Any]:
    """Monte Carlo of Def. 2 with (x1, x2, ω) drawn jointly, through rfviz.engine: the bias mean(Y − K) and the
    variance per sample mean((Y − K)²), each with its standard error, ``n`` the
    number of joint
    draws; ``reliable``/``warning`` are the engine's heavy-tail verdict and ``result`` its MCResult.

    Examples
    --------
    >>> from rfviz.maths.optimal import InputLaw, OptimalSampling
    >>> mc = monte_carlo_psi(OptimalSampling("positive", InputLaw("sphere", 4, r=0.5)), 4000, seed=1)
    >>> abs(mc["bias"]) < 4 * mc["bias_se"]
    True
    """
    d = problem.d
    res: MCResult = monte_carlo(PsiSampler(problem, optimal), np.zeros((1, d)), np.zeros((1, d)), d=d,
                                trials=int(n), seed=int(seed), device=device, memory_budget=memory_budget,
                                block_trials=max(DEFAULT_BLOCK_TRIALS, 8192))
    warning = None if res.warning is None else res.warning.ravel()[0]
    return {"bias": float(np.real(res.mean_ratio).ravel()[0] - 1.0),
            "bias_se": float(res.ratio_sd.ravel()[0] / math.sqrt(res.trials)),
            "variance": float(res.mse.ravel()[0]), "variance_se": float(res.mse_stderr.ravel()[0]), "n": res.trials,
            "reliable": None if res.reliable is None else bool(np.ravel(res.reliable)[0]), "warning": warning,
            "result": res}


def variance_sweep_mc(kind: str, d: int, axis: str, values: Sequence[float], kernel: str = "softmax",
                      mechanisms: Sequence[str] = MECHANISMS, n: int = 4000, seed: int = 0, relative: bool = False,
                      **fixed: float) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Monte-Carlo variance per sample (x1, x2, ω drawn jointly; ``monte_carlo_psi`` through the engine, reference
    §5) at ``values`` of ``axis``, under Ψ* and under Ω: label → (x, log10 V, log10 of V − 2 SE, log10 of V + 2 SE),
    in the units of ``variance_sweep_figure`` (divided by E K² when ``relative``). A lower end ≤ 0 is NaN."""
    out = {}
    for mech in mechanisms:
        for optimal, label in ((True, f"V* ({mech}, Ψ*)"), (False, f"{mech}, plain Ψ = Ω")):
            xs, mid, lo, hi = [], [], [], []
            for v in values:
                prob = OptimalSampling(mech, InputLaw(kind=kind, d=d, **{**fixed, axis: float(v)}), kernel)
                mc = monte_carlo_psi(prob, int(n), seed, optimal)
                base = prob.log_expected_k2() / np.log(10) if relative else 0.0
                var, se = mc["variance"], mc["variance_se"]
                with np.errstate(divide="ignore", invalid="ignore"):
                    xs.append(float(v))
                    mid.append(np.log10(var) - base if var > 0 else np.nan)
                    lo.append(np.log10(var - 2 * se) - base if var - 2 * se > 0 else np.nan)
                    hi.append(np.log10(var + 2 * se) - base)
            out[label] = (np.array(xs), np.array(mid), np.array(lo), np.array(hi))
    return out
