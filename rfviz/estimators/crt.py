"""Estimators of the Chefs' Random Tables paper (Likhosherstov et al. 2022, "CRT"): GERF, OPRF, PoisRF, GeomRF.

[CRT] writes every mechanism for the Gaussian kernel; these
classes implement the softmax versions (features times e^{|u|²/2}, variance times e^{|x|²+|y|²})
and get the Gaussian kernel from SoftmaxFamilyEstimator. The relative MSE is the same for both kernels.
The maths (closed forms, A*, orthogonal covariance) lives in ``rfviz.maths.crt``.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from ..maths import crt, moments, simrf
from ..maths.crt import POISSON_LAM_PARAM, PROB_PARAM
from ..numerics import log_expm1
from ..params import COUPLING_PARAM, M_PARAM, Param, ParameterError
from ..registries import CLOSED_FORM, COUPLED_CLOSED_FORMS, IID, ORTHOGONAL
from .base import PairStats, Samples, SoftmaxFamilyEstimator, projections, register, sq_norm, with_kernel
from .hrf import _ProjectionEstimator

GERF_A_PARAM = Param("A", complex(-0.1, 0.0), "complex",
                "GERF parameter A ∈ ℂ (CRT Thm 3.1); finite variance needs Re A < 1/8; A = 0 gives PosRF (s=+1) or "
                "TrigRF (s=−1); a real A < 0 with s = +1 gives bounded positive features",
                high=crt.A_VARIANCE_BOUND, high_open=True, ui_low=-1.0, ui_high=0.12)
S_PARAM = Param("s", 1, "int", "GERF sign s: +1 (positive family, variance via |x+y|²) or −1 (trigonometric family, "
                "via |x−y|²)", low=-1, high=1)
A_FROM_PARAM = Param("A_from", "pair", "choice",
                     "OPRF's A = A*(Z, d): Z = |x+y|² of each pair (optimal, Thm 3.3) or a fixed Z (the FAVOR++ "
                     "batch heuristic, eq. 8; also gives a feature map)", choices=("pair", "fixed"))
Z_PARAM = Param("Z", 1.0, "float", "Z used for A* when A_from=fixed (e.g. a batch average of |x+y|², CRT eq. 8)",
                low=0.0, ui_low=0.0, ui_high=100.0)
SHIFT_PARAM = Param("shift", 0.0, "float",
                    "c of the '+' variants (PoisRF+/GeomRF+, CRT §3.2.3): features use x − c·1 and y − c·1; c below "
                    "every coordinate makes them positive. The kernel is unchanged", ui_low=-5.0, ui_high=5.0)


class _GerfBase(_ProjectionEstimator):
    """Shared sampling and estimation of the GERF family: Y = f1(ω, x)·f2(ω, y), K̂ = (1/m) Σ Re Y (CRT eq. 1, 4)."""

    def _A_s(self, d: int) -> tuple[complex, int]:
        """(A, s) used for inputs of dimension d."""
        raise NotImplementedError

    def _complex_A(self) -> bool:
        return False

    def _is_real(self) -> bool:
        """Whether f1, f2 are real (s = +1 and real A)."""
        return not self._complex_A() and self._A_s(1)[1] == 1

    coupled_closed_forms: ClassVar[tuple[str, ...]] = COUPLED_CLOSED_FORMS

    def closed_form_available(self) -> bool:
        """iid: always; orthogonal ([CRT] §3.9) and simplex ([SimRF] pair covariance): real A only."""
        return super().closed_form_available() and (self.params["coupling"] == IID or not self._complex_A())

    def _log_mse_crt(self, s: PairStats, coupling: str) -> np.ndarray:
        """log MSE (softmax kernel) with iid or orthogonal ω ([CRT] Thm 3.2 eq. 6, §3.9)."""
        raise NotImplementedError

    def _log_mse_iid(self, s: PairStats) -> np.ndarray:
        return self._log_mse_crt(s, IID)

    def _log_mse_coupled(self, s: PairStats, coupling: str) -> np.ndarray:
        if coupling == ORTHOGONAL:
            return self._log_mse_crt(s, coupling)
        sign = int(self.params.get("s", 1))
        return simrf.log_mse_coupled_gerf(self._log_mse_crt(s, IID), s.xy, sign, s.z2 if sign == 1 else s.delta2,
                                          s.d, self.params["m"], coupling)

    block_streams: ClassVar[bool] = True  # ``sample`` draws through rfviz.sampling only (via super().sample)

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        out = super().sample(trials, d, generator=generator, device=device, dtype=dtype, dim=dim)
        out["d"] = torch.tensor(d)
        return out

    @staticmethod
    def _mean_real(log_re: torch.Tensor, phase: torch.Tensor | None) -> torch.Tensor:
        """(1/m) Σ e^{log_re}·cos(phase) over the last axis, with a max-shift so that no term overflows."""
        top = log_re.amax(-1, keepdim=True)
        terms = torch.exp(log_re - top)
        if phase is not None:
            terms = terms * torch.cos(phase)
        return terms.mean(-1) * torch.exp(top.squeeze(-1))

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        """log Y_sm = 2 log D + 2A|ω|² + Bω·(x + sy) + (C + ½)(|x|² + |y|²) (CRT eq. 5, softmax form)."""
        d = int(samples["d"])
        a, s = self._A_s(d)
        b, c, log_d = crt.gerf_coefficients(a, s, d)
        proj = projections(samples["w"], x + s * y)
        wsq = samples["w_sq"][:, None, :]
        shift = ((c + 0.5) * (sq_norm(x) + sq_norm(y)) - log_scale)[None, :, None]
        log_re = 2 * log_d.real + 2 * a.real * wsq + b.real * proj + shift
        phase = None if self._is_real() else 2 * log_d.imag + 2 * a.imag * wsq + b.imag * proj
        return self._mean_real(log_re, phase)

    def _features_scaled(self, samples: Samples, u: torch.Tensor, side: str,
                         log_scale: torch.Tensor) -> torch.Tensor:
        """Real features: [f] when f is real, else [Re f1, Im f1] (query) and [Re f2, −Im f2] (key), so that
        Σ φ_q·φ_k = (1/m) Σ Re(f1 f2) ('complex features cost double')."""
        d = int(samples["d"])
        a, s = self._A_s(d)
        b, c, log_d = crt.gerf_coefficients(a, s, d)
        bb = b if side == "query" else s * b
        proj = projections(samples["w"], u)
        wsq = samples["w_sq"][:, None, :]
        m = samples["w"].shape[1]
        log_mag = (log_d.real + a.real * wsq + bb.real * proj + ((c + 0.5) * sq_norm(u) + log_scale)[None, :, None]
                   - 0.5 * math.log(m))
        mag = torch.exp(log_mag)
        if self._is_real():
            return mag
        phase = log_d.imag + a.imag * wsq + bb.imag * proj
        im_sign = 1.0 if side == "query" else -1.0
        return torch.cat([mag * torch.cos(phase), im_sign * mag * torch.sin(phase)], -1)


@register
class Gerf(_GerfBase):
    """Generalised exponential RF (CRT §3.1, eqs. 4–5):
    f1 = D e^{A|ω|² + Bω·x + C|x|²}, f2 = D e^{A|ω|² + sBω·y + C|y|²}."""

    name = "gerf"
    known = CLOSED_FORM
    citation = "[CRT] Thm 3.1 eq. 5; variance Thm 3.2 eq. 6; orthogonal §3.9"
    title = "GERF (generalised exponential RF)"
    short_title = "GERF"
    reference = ("CRT paper (Likhosherstov et al. 2022) Thm 3.1 eq. 5; variance Thm 3.2 eq. 6; orthogonal "
                 "coupling Thm 4.1")
    description = ("A ∈ ℂ, s = ±1. Contains PosRF (A=0, s=+1), TrigRF (A=0, s=−1) and OPRF (A=A*). Complex features "
                   "cost two real numbers per ω.")
    spec: ClassVar[tuple[Param, ...]] = with_kernel(GERF_A_PARAM, S_PARAM, M_PARAM, COUPLING_PARAM)

    def validate(self) -> None:
        crt.check_s(self.params["s"])

    def _A_s(self, d: int) -> tuple[complex, int]:
        return complex(self.params["A"]), int(self.params["s"])

    def _complex_A(self) -> bool:
        return complex(self.params["A"]).imag != 0

    def fourth_moment_finite(self, s: PairStats) -> np.ndarray:
        """E|Y|⁴ < ∞ iff Re A < 1/16 ([CRT] Thm 3.2 applied to Y²), at every pair."""
        a, _ = self._A_s(s.d)
        return np.broadcast_to(np.asarray(complex(a).real < crt.A_FOURTH_MOMENT_BOUND), np.shape(s.xx))

    def log_scale(self, s: PairStats) -> np.ndarray:
        """For s = −1 the estimates are O(e^{|x−y|²/2})·K (bounded features, tiny K): scale by the RMS
        K·√R ([CRT] eq. 6) so that float32 Monte Carlo stays finite far from the origin; log|K| for s = +1."""
        base = super().log_scale(s)
        a, sign = self._A_s(s.d)
        if sign == 1:
            return base
        return base + 0.5 * np.maximum(crt.gerf_log_R(a, -1, s.delta2, s.d), 0.0)

    def _log_mse_crt(self, s: PairStats, coupling: str) -> np.ndarray:
        """[CRT] Thm 3.2 eq. 6 (iid) or the exact orthogonal closed form ([CRT] §3.9), softmax kernel."""
        a, sign = self._A_s(s.d)
        return crt.gerf_log_mse(a, sign, s.xx, s.yy, s.xy, s.d, self.params["m"], coupling, kernel="softmax",
                                z2=s.z2, delta2=s.delta2)

    def _log_rel_fourth(self, s: PairStats) -> np.ndarray:
        """iid ω: rfviz.maths.moments (+inf where Re A ≥ 1/16)."""
        a, sign = self._A_s(s.d)
        return moments.log_fourth_gerf(a, sign, s.z2 if sign == 1 else s.delta2, s.xx, s.yy, s.xy, s.d,
                                       self.params["m"])


@register
class Oprf(_GerfBase):
    """Optimised positive RF (CRT §3.1, Thm 3.3): GERF with s = +1 and A = A*(Z, d) = (1 − 1/ρ*)/8 ≤ 0."""

    name = "oprf"
    known = CLOSED_FORM
    citation = "[CRT] Thm 3.3 eq. 7; variance Thm 3.2 eq. 6; orthogonal §3.9"
    title = "OPRF (optimised positive RF, FAVOR++ features)"
    short_title = "OPRF (FAVOR++)"
    reference = "CRT paper Thm 3.3 eq. 7 (stable ρ* form); variance Thm 3.2; orthogonal §3.9"
    description = ("Positive and bounded. A = A*(|x+y|², d) per pair (optimal), or from a fixed Z (FAVOR++ batch "
                   "heuristic). Equals PosRF at x = −y.")
    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM, COUPLING_PARAM, A_FROM_PARAM, Z_PARAM)

    def _A_s(self, d: int) -> tuple[complex, int]:
        if self.params["A_from"] == "pair":
            raise NotImplementedError("oprf with A_from=pair has no single A")
        return complex(float(crt.A_star(self.params["Z"], d))), 1

    def _is_real(self) -> bool:
        return True

    def _rho(self, z2: np.ndarray, d: int) -> np.ndarray:
        """ρ* from this pair's Z (A_from=pair) or from the fixed Z."""
        return crt.rho_star(z2 if self.params["A_from"] == "pair" else self.params["Z"], d)

    def _log_mse_crt(self, s: PairStats, coupling: str) -> np.ndarray:
        """Var/K² = R(ρ) − 1 with log R = d log((1+ρ)/(2√ρ)) + ρZ ([CRT] Thm 3.3), /m (iid) or §3.9 (orthogonal)."""
        m = self.params["m"]
        z2 = s.z2
        log_rel = log_expm1(crt.oprf_log_R(z2, s.d, self._rho(z2, s.d))) - math.log(m)
        frac = crt.ortho_pair_fraction(m, s.d) if coupling == ORTHOGONAL else 0.0
        if frac > 0:
            log_rel = crt.log_minus_covariance(log_rel, math.log(frac) + crt.ortho_log_neg_relcov_pos(z2, s.d))
        return 2.0 * s.xy + log_rel

    def _log_rel_fourth(self, s: PairStats) -> np.ndarray:
        """iid ω: rfviz.maths.moments with A = A*(Z, d) (per pair or from the fixed Z; A* ≤ 0, so always finite)."""
        a = crt.A_star(s.z2 if self.params["A_from"] == "pair" else self.params["Z"], s.d)
        return moments.log_fourth_gerf(np.broadcast_to(a, np.shape(s.z2)), 1, s.z2, s.xx, s.yy, s.xy, s.d,
                                       self.params["m"])

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        if self.params["A_from"] == "fixed":
            return super()._estimate_softmax(samples, x, y, log_scale)
        d = int(samples["d"])
        z2 = sq_norm(x + y)
        rho = 2.0 * d / ((2 * z2 + d) + torch.sqrt((2 * z2 + d) ** 2 + 8.0 * d * z2))
        a = (1.0 - 1.0 / rho) / 8.0  # A*(Z, d) per pair, (P,)
        log_d2 = 0.5 * d * torch.log1p(-4.0 * a)
        b = torch.sqrt(1.0 - 4.0 * a)
        proj = projections(samples["w"], x + y)
        wsq = samples["w_sq"][:, None, :]
        log_y = (log_d2 - 0.5 * (sq_norm(x) + sq_norm(y)) - log_scale)[None, :, None] + 2 * a[None, :, None] * wsq \
            + b[None, :, None] * proj
        return self._mean_real(log_y, None)

    def _features_scaled(self, samples: Samples, u: torch.Tensor, side: str,
                         log_scale: torch.Tensor) -> torch.Tensor:
        if self.params["A_from"] == "pair":
            raise NotImplementedError("oprf with A_from=pair has no feature map (A* depends on both inputs); "
                                      "use A_from=fixed with a batch Z (FAVOR++)")
        return super()._features_scaled(samples, u, side, log_scale)


class _DirfBase(SoftmaxFamilyEstimator):
    """Discretely-induced RF (CRT §3.2, eq. 10): ω ∈ ℕ^d with iid coordinates, f(ω, u) =
    e^{−|û|²/2} Π_l û_l^{ω_l}(ω_l!)^{−1/2} p_{ω_l}^{−1/2}, û = u − c (c = 0 unless the '+' shift is set).
    Not rotation-invariant: the MSE depends on the coordinates of x and y ([CRT] §3)."""

    isotropic: ClassVar[bool] = False

    def _law(self, d: int) -> tuple[float, float, bool]:
        """(log c0, log q, factorial): f = e^{c0 − |û|²/2} Π (û_l/√q)^{ω_l} (ω_l!)^{−1/2 if factorial}."""
        raise NotImplementedError

    def _draw(self, shape: tuple[int, ...], generator: torch.Generator, device: torch.device,
              dtype: torch.dtype) -> torch.Tensor:
        raise NotImplementedError

    def _log_r(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        if dim is not None and dim != d:
            raise ParameterError(f"{self.name} depends on coordinates: inputs must be given in R^d (d = {d})")
        omega = self._draw((trials, self.params["m"], d), generator, device, dtype)
        return {"omega": omega}

    def _log_terms(self, omega: torch.Tensor, v: torch.Tensor, log_q_power: float) -> tuple[torch.Tensor, ...]:
        """Σ_l ω_l (log|v_l| − log_q_power), the count of ω_l > 0 at v_l = 0, and the count of odd signs: (t, P, m)."""
        zero = v == 0
        log_abs = torch.where(zero, torch.zeros_like(v), torch.log(v.abs())) - log_q_power
        log_sum = torch.einsum("tmd,pd->tpm", omega, log_abs)
        zeros = torch.einsum("tmd,pd->tpm", omega, zero.to(omega.dtype))
        negs = torch.einsum("tmd,pd->tpm", omega, (v < 0).to(omega.dtype))
        return log_sum, zeros, negs

    def _signed_mean(self, log_val: torch.Tensor, zeros: torch.Tensor, negs: torch.Tensor) -> torch.Tensor:
        """(1/m) Σ ±e^{log_val} (0 where a zero coordinate has ω_l > 0: 0^k = 0, 0^0 = 1), max-shifted."""
        top = log_val.amax(-1, keepdim=True)
        sign = 1.0 - 2.0 * torch.remainder(negs, 2.0)
        terms = torch.where(zeros > 0, torch.zeros_like(log_val), sign * torch.exp(log_val - top))
        return terms.mean(-1) * torch.exp(top.squeeze(-1))

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        omega = samples["omega"]
        d = omega.shape[-1]
        log_c0, log_q, factorial = self._law(d)
        c = self.params["shift"]
        xs, ys = x - c, y - c
        log_sum, zeros, negs = self._log_terms(omega, xs * ys, log_q)
        const = 2 * log_c0 - 0.5 * (sq_norm(xs) + sq_norm(ys)) + 0.5 * (sq_norm(x) + sq_norm(y)) - log_scale
        log_val = log_sum + const[None, :, None]
        if factorial:
            log_val = log_val - torch.lgamma(omega + 1.0).sum(-1)[:, None, :]
        return self._signed_mean(log_val, zeros, negs)

    def _features_scaled(self, samples: Samples, u: torch.Tensor, side: str,
                         log_scale: torch.Tensor) -> torch.Tensor:
        omega = samples["omega"]
        d, m = omega.shape[-1], omega.shape[1]
        log_c0, log_q, factorial = self._law(d)
        us = u - self.params["shift"]
        log_sum, zeros, negs = self._log_terms(omega, us, 0.5 * log_q)
        log_val = log_sum + (log_c0 - 0.5 * sq_norm(us) + 0.5 * sq_norm(u) + log_scale
                             - 0.5 * math.log(m))[None, :, None]
        if factorial:
            log_val = log_val - 0.5 * torch.lgamma(omega + 1.0).sum(-1)[:, None, :]
        sign = 1.0 - 2.0 * torch.remainder(negs, 2.0)
        return torch.where(zeros > 0, torch.zeros_like(log_val), sign * torch.exp(log_val))

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        """Var_sm/m = e^{2x·y}(R − 1)/m with R from the shifted coordinates (K is shift-invariant)."""
        return 2.0 * s.xy + log_expm1(self._log_r(s.x, s.y)) - math.log(self.params["m"])


@register
class Poisson(_DirfBase):
    """PoisRF (CRT §3.2.1): ω_l ~ Poisson(λ), f(ω, u) = e^{λd/2 − |û|²/2} Π_l û_l^{ω_l} λ^{−ω_l/2}."""

    name = "poisson"
    known = CLOSED_FORM
    citation = "[CRT] §3.2.1, Thm 3.4 eq. 11"
    title = "PoisRF (Poisson DIRF)"
    short_title = "PoisRF"
    reference = "CRT paper §3.2.1, Thm 3.4 eq. 11; '+' variant §3.2.3"
    description = "Real, coordinate-dependent (not rotation-invariant); positive iff all shifted coordinates are."
    spec: ClassVar[tuple[Param, ...]] = with_kernel(POISSON_LAM_PARAM, M_PARAM, SHIFT_PARAM)

    def _law(self, d: int) -> tuple[float, float, bool]:
        lam = self.params["lam"]
        return lam * d / 2.0, math.log(lam), False

    def _draw(self, shape: tuple[int, ...], generator: torch.Generator, device: torch.device,
              dtype: torch.dtype) -> torch.Tensor:
        rates = torch.full(shape, self.params["lam"], device=device, dtype=dtype)
        return torch.poisson(rates, generator=generator)

    def _log_r(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return crt.poisson_log_R(x, y, self.params["lam"], self.params["shift"])


@register
class Geometric(_DirfBase):
    """GeomRF (CRT §3.2.2): P(ω_l = k) = p(1−p)^k,
    f(ω, u) = p^{−d/2} e^{−|û|²/2} Π_l û_l^{ω_l}(1−p)^{−ω_l/2}(ω_l!)^{−1/2}."""

    name = "geometric"
    known = CLOSED_FORM
    citation = "[CRT] §3.2.2, Thm 3.5 eq. 13"
    title = "GeomRF (geometric DIRF)"
    short_title = "GeomRF"
    reference = "CRT paper §3.2.2, Thm 3.5 eq. 13; '+' variant §3.2.3"
    description = "Real, coordinate-dependent (not rotation-invariant); heavy-tailed as p → 0."
    spec: ClassVar[tuple[Param, ...]] = with_kernel(PROB_PARAM, M_PARAM, SHIFT_PARAM)

    def _law(self, d: int) -> tuple[float, float, bool]:
        p = self.params["prob"]
        return -0.5 * d * math.log(p), math.log1p(-p), True

    def _draw(self, shape: tuple[int, ...], generator: torch.Generator, device: torch.device,
              dtype: torch.dtype) -> torch.Tensor:
        """Inverse CDF: k = ⌊log(1−U)/log(1−p)⌋ has P(k ≥ j) = (1−p)^j."""
        u = torch.rand(shape, generator=generator, device=device, dtype=dtype)
        return torch.floor(torch.log1p(-u) / math.log1p(-self.params["prob"]))

    def _log_r(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return crt.geometric_log_R(x, y, self.params["prob"], self.params["shift"])
