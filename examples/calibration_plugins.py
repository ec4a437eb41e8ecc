"""Correct plugins that are hard on the lab's false-alarm rate (bench/bench_lab_calibration.py, tests/lab/test_lab.py).

* ``MixtureFavorTrig``: 0.3·FAVOR+ + 0.7·trig with independent ω (m each). Unbiased; its error is a mixture of a
  lognormal-like (FAVOR+) and a bounded (trig) part, so at 2000-4000 trials the rare large FAVOR+ draws have often
  not happened yet. MSE = 0.09·MSE₊₊ + 0.49·MSE_trig (independent, both unbiased). It also gives its closed-form
  fourth moment (``_log_fourth_central_moment``): with a, b the two independent mean-zero errors,
  E(K̂ − K)⁴ = 0.3⁴E a⁴ + 6·0.3²·0.7²·E a²·E b² + 0.7⁴E b⁴. ``MixtureNoTheory`` is the same without it (the lab then
  falls back on the sample's own diagnostics).
* ``InfiniteVarianceGerf``: a GERF feature (CRT Thm 3.1, s = +1) whose A depends on the pair,
  A = 0.2·Z/(1 + Z) with Z = |x + y|²: unbiased everywhere (A < 1/4), but Var = +∞ where A ≥ 1/8 (Z ≥ 5/3), and
  its closed-form MSE says so (+∞ there). Heavy-tailed where finite but close to the bound.

Check one with ``python -m rfviz check examples/calibration_plugins.py:MixtureFavorTrig``.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from rfviz.estimators.base import PairStats, Samples, SoftmaxFamilyEstimator, projections, sq_norm, with_kernel
from rfviz.estimators.hrf import PositiveAntithetic, Trig
from rfviz.maths import crt
from rfviz.params import M_PARAM, Param
from rfviz.sampling import sample_omegas

WEIGHT = 0.3


class MixtureNoTheory(SoftmaxFamilyEstimator):
    """0.3·FAVOR+ + 0.7·trig with independent ω; closed-form MSE, no fourth moment."""

    name = "mixture_no_theory"
    title = "0.3·FAVOR+ + 0.7·trig (independent ω), no fourth moment"
    reference = "examples/calibration_plugins.py"
    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM)

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._pos = PositiveAntithetic(m=self.params["m"])
        self._trig = Trig(m=self.params["m"])

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        dim = d if dim is None else dim
        m = self.params["m"]
        w_pos = sample_omegas("iid", trials, m, d, dim, generator, device, dtype)[0]
        w_trig = sample_omegas("iid", trials, m, d, dim, generator, device, dtype)[0]
        return {"w_pos": w_pos, "w_trig": w_trig}

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        pos = self._pos._estimate_softmax({"w": samples["w_pos"]}, x, y, log_scale)
        trig = self._trig._estimate_softmax({"w": samples["w_trig"]}, x, y, log_scale)
        return WEIGHT * pos + (1.0 - WEIGHT) * trig

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        return np.logaddexp(2 * math.log(WEIGHT) + self._pos._log_mse_softmax(s),
                            2 * math.log(1 - WEIGHT) + self._trig._log_mse_softmax(s))


class MixtureFavorTrig(MixtureNoTheory):
    """0.3·FAVOR+ + 0.7·trig with independent ω, with its closed-form fourth moment."""

    name = "mixture_favor_trig"
    title = "0.3·FAVOR+ + 0.7·trig (independent ω)"

    def fourth_moment_available(self) -> bool:
        return True

    def _log_rel_fourth(self, s: PairStats) -> np.ndarray:
        log_k = s.xy  # relative moments: the same for both kernels
        a4 = self._pos._log_rel_fourth(s)
        b4 = self._trig._log_rel_fourth(s)
        a2 = self._pos._log_mse_softmax(s) - 2 * log_k
        b2 = self._trig._log_mse_softmax(s) - 2 * log_k
        w, v = math.log(WEIGHT), math.log(1 - WEIGHT)
        return np.logaddexp(np.logaddexp(4 * w + a4, 4 * v + b4), math.log(6) + 2 * w + 2 * v + a2 + b2)


class InfiniteVarianceGerf(SoftmaxFamilyEstimator):
    """GERF (s = +1) with A = 0.2·Z/(1 + Z), Z = |x + y|²: unbiased, variance +∞ where Z ≥ 5/3."""

    name = "infinite_variance_gerf"
    title = "GERF with a pair-dependent A (infinite variance where |x + y|² ≥ 5/3)"
    reference = "examples/calibration_plugins.py; CRT Thm 3.1-3.2"
    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM)

    @staticmethod
    def a_of(z2: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        return 0.2 * z2 / (1.0 + z2)

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        w, w_sq = sample_omegas("iid", trials, self.params["m"], d, d if dim is None else dim, generator, device,
                                dtype)
        return {"w": w, "w_sq": w_sq, "d": torch.tensor(d)}

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        """log Y = (d/2)log(1 − 4A) + 2A|ω|² + √(1 − 4A)·ω·(x + y) − (|x|² + |y|²)/2 (CRT eq. 5, s = +1)."""
        d = int(samples["d"])
        a = self.a_of(sq_norm(x + y))
        log_y = (0.5 * d * torch.log1p(-4 * a) - 0.5 * (sq_norm(x) + sq_norm(y)) - log_scale)[None, :, None] \
            + 2 * a[None, :, None] * samples["w_sq"][:, None, :] \
            + torch.sqrt(1 - 4 * a)[None, :, None] * projections(samples["w"], x + y)
        top = log_y.amax(-1, keepdim=True)
        return torch.exp(log_y - top).mean(-1) * torch.exp(top[..., 0])

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        a = self.a_of(s.z2)
        ok = a < crt.A_VARIANCE_BOUND
        out = np.full(np.shape(a), np.inf)
        if np.any(ok):
            out[ok] = crt.gerf_log_var(a[ok].astype(complex), 1, s.xx[ok], s.yy[ok], s.xy[ok], s.d,
                                       kernel="softmax") - math.log(self.params["m"])
        return out
