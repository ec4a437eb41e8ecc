"""Estimators of the Hybrid Random Features paper [HRF] (closed forms in rfviz.maths.hrf).

* ``trig``, ``positive``, ``positive_antithetic``: the trigonometric and positive (FAVOR+) random features of the
  softmax kernel. They predate [HRF] (Rahimi & Recht; Performers), but [HRF] is the paper that states their MSE
  (Lemma 2.2 eq. 7) and builds its hybrids from them, so they live here; their coupled (orthogonal, simplex)
  closed forms come from [SimRF] (rfviz.maths.simrf).
* ``trig_phase``: random Fourier features with a random phase, √2·cos(ω·u + b) (Rahimi & Recht).
* ``complex_exponential`` / ``complex_exponential_diag``: the CE estimator with A = a·I or A = diag(a_k)
  ([HRF] §2.3 eqs. 13–18).
* ``hybrid_angular``: λ̂·SM_++ + (1 − λ̂)·SM_trig with the angular λ ([HRF] eq. 19, App. D; corrected eq. 47).
* ``hybrid_gaussian``: the normalised bipolar Gaussian hybrid ([HRF] App. F).

All are softmax-family estimators, so ``kernel=gaussian`` comes from the base class.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import torch

from ..maths import hrf, moments, simrf
from ..maths.hrf import (
    N_PARAM,
    SIGMA_PARAM,
    LambdaMoments,
    angle_between,
    angle_to_antipode,
    angular_lambda_moments,
    gaussian_lambda_moments,
    log_mse_bipolar,
    log_mse_complex_exponential,
)
from ..numerics import log1mexp
from ..params import COUPLING_PARAM, M_PARAM, Param, ParameterError
from ..registries import CLOSED_FORM, COUPLED_CLOSED_FORMS, IID
from ..sampling import sample_omegas
from ..textio import format_complex
from .base import PairStats, Samples, SoftmaxFamilyEstimator, projections, register, sq_norm, with_kernel

A_MIN_MODULUS = 1e-3
A_MAX_MODULUS = 1e3


def _complex_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.complex64 if dtype in (torch.float32, torch.float16, torch.bfloat16) else torch.complex128


def _sample_iid(trials: int, m: int, d: int, dim: int, generator: torch.Generator, device: torch.device,
                dtype: torch.dtype) -> torch.Tensor:
    """m iid N(0, I_d) projections in reduced coordinates (rfviz.sampling), shape (trials, m, dim)."""
    return sample_omegas(IID, trials, m, d, dim, generator, device, dtype)[0]


# ------------------------------------------------------------------ trig and positive ([HRF] §2.1)
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


def _overrides_rel_fourth(cls: type) -> bool:
    return cls._log_rel_fourth is not SoftmaxFamilyEstimator._log_rel_fourth


class _ProjectionEstimator(SoftmaxFamilyEstimator):
    """Softmax estimators built from m projections ω with a selectable coupling ([SimRF] §2).

    The MSE under iid ω is ``_log_mse_iid``; every other coupling with a closed form is listed in
    ``coupled_closed_forms`` and computed by ``_log_mse_coupled`` (formulas in rfviz.maths.simrf)."""

    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM, COUPLING_PARAM)
    coupled_closed_forms: ClassVar[tuple[str, ...]] = ()
    """Couplings besides iid whose MSE has a closed form for this class."""
    needs_norms: ClassVar[bool] = True
    """Whether ``estimate``/``features`` read |ω|² (``samples["w_sq"]``); False lets iid ω skip their χ² draw."""
    block_streams: ClassVar[bool] = True  # ``sample`` draws through rfviz.sampling only

    def closed_form_available(self) -> bool:
        return self.params["coupling"] in (IID, *self.coupled_closed_forms)

    def _features_scaled(self, samples: Samples, u: torch.Tensor, side: str,
                         log_scale: torch.Tensor) -> torch.Tensor:
        """``features_from_projections`` of ω·u (the classes with ``projection_features``; others: the base's)."""
        if not self.projection_features:
            return super()._features_scaled(samples, u, side, log_scale)
        return self.features_from_projections(samples, projections(samples["w"], u), sq_norm(u), side, log_scale)

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        w, w_sq = sample_omegas(self.params["coupling"], trials, self.params["m"], d, d if dim is None else dim,
                                generator, device, dtype, norms=self.needs_norms)
        return {"w": w} if w_sq is None else {"w": w, "w_sq": w_sq}

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        coupling = self.params["coupling"]
        return self._log_mse_iid(s) if coupling == IID else self._log_mse_coupled(s, coupling)

    def _log_mse_iid(self, s: PairStats) -> np.ndarray:
        """log MSE (softmax kernel) with m iid projections."""
        raise NotImplementedError(f"{self.name} has no closed-form MSE")

    def _log_mse_coupled(self, s: PairStats, coupling: str) -> np.ndarray:
        """log MSE (softmax kernel) under ``coupling`` (one of ``coupled_closed_forms``)."""
        raise NotImplementedError(f"no closed form for {self.name} with coupling={coupling!r}")

    def fourth_moment_available(self) -> bool:
        """iid ω only (rfviz.maths.moments); coupled ω have no fourth-moment closed form here."""
        return self.params["coupling"] == IID and _overrides_rel_fourth(type(self))


@register
class Trig(_ProjectionEstimator):
    """Trigonometric RF: SM_trig = e^{(|x|²+|y|²)/2}·(1/m) Σ cos(ω_i·(x−y)) (HRF eq. 2; Rahimi & Recht)."""

    name = "trig"
    known = CLOSED_FORM
    citation = "[HRF] eq. 2; MSE Lemma 2.2 eq. 7"
    title = "Trigonometric RF (sin/cos)"
    short_title = "Trig RF"
    reference = "HRF paper (Choromanski et al. 2022) eq. 2; MSE Lemma 2.2 eq. 7"
    description = "Real, bounded, not positive; exact at θ = 0 (x = y)."

    def log_scale(self, s: PairStats) -> np.ndarray:
        """|K̂_trig| ≤ e^{(|x|²+|y|²)/2} (softmax) or 1 (Gaussian): scaling by it keeps far pairs finite in float32,
        where scaling by K would need e^{|x−y|²/2}."""
        return 0.5 * (s.xx + s.yy) if self.kernel == "softmax" else np.zeros_like(s.xy)

    projection_features: ClassVar[bool] = True
    needs_norms: ClassVar[bool] = False
    coupled_closed_forms: ClassVar[tuple[str, ...]] = COUPLED_CLOSED_FORMS

    def _log_mse_iid(self, s: PairStats) -> np.ndarray:
        return hrf.log_mse_trig(s.xx, s.yy, s.delta2, self.params["m"])

    def _log_mse_coupled(self, s: PairStats, coupling: str) -> np.ndarray:
        return simrf.log_mse_coupled_trig(s.xx, s.yy, s.delta2, s.d, self.params["m"], coupling)

    def _log_rel_fourth(self, s: PairStats) -> np.ndarray:
        return moments.log_fourth_trig(s.delta2, self.params["m"])

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        c = projections(samples["w"], x - y).cos_().mean(-1)
        return c * torch.exp(0.5 * (sq_norm(x) + sq_norm(y)) - log_scale)

    def features_from_projections(self, samples: Samples, p: torch.Tensor, sq: torch.Tensor, side: str,
                                  log_scale: torch.Tensor) -> torch.Tensor:
        """e^{|u|²/2 + log_scale}[sin ω·u, cos ω·u]/√m from p = ω·u (trials, P, m) and sq = |u|² (P,): for the Gaussian
        kernel the factor is e^0 = 1 exactly (bounded features, translation-invariant products: sin a sin b +
        cos a cos b = cos(a − b)). ``p`` may be overwritten."""
        m = p.shape[-1]
        out = torch.empty((*p.shape[:-1], 2 * m), dtype=p.dtype, device=p.device)
        torch.sin(p, out=out[..., :m])
        torch.cos(p, out=out[..., m:])
        return out.mul_(torch.exp(0.5 * sq + log_scale)[None, :, None] / math.sqrt(self.params["m"]))


@register
class Positive(_ProjectionEstimator):
    """One-sided positive RF: e^{−(|x|²+|y|²)/2}·(1/m) Σ e^{ω_i·(x+y)} (HRF E2′ = CE with A = I)."""

    name = "positive"
    known = CLOSED_FORM
    citation = "[HRF] §2.1 (E2′); MSE App. F eq. F6 with A = I"
    title = "Positive RF (one-sided)"
    short_title = "Positive RF"
    reference = "HRF paper §2.1 (E2′) and Performers; MSE = SM²(exp(|x+y|²) − 1)/m (HRF F6 with A = I)"
    description = "Strictly positive, unbounded; m features."

    projection_features: ClassVar[bool] = True
    needs_norms: ClassVar[bool] = False
    coupled_closed_forms: ClassVar[tuple[str, ...]] = COUPLED_CLOSED_FORMS

    def _log_mse_iid(self, s: PairStats) -> np.ndarray:
        return hrf.log_mse_positive(s.xy, s.z2, self.params["m"])

    def _log_mse_coupled(self, s: PairStats, coupling: str) -> np.ndarray:
        return 2.0 * s.xy + simrf.log_relative_mse("positive", s.z2, s.d, self.params["m"], coupling)

    def _log_rel_fourth(self, s: PairStats) -> np.ndarray:
        return moments.log_fourth_exp(s.z2, self.params["m"], antithetic=False)

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        return mean_exp_shifted(samples["w"], x + y, 0.5 * (sq_norm(x) + sq_norm(y)) + log_scale)

    def features_from_projections(self, samples: Samples, p: torch.Tensor, sq: torch.Tensor, side: str,
                                  log_scale: torch.Tensor) -> torch.Tensor:
        """e^{ω·u − |u|²/2 + log_scale}/√m, one exponential per feature (Gaussian: e^{ω·u − |u|²}); p = ω·u
        (trials, P, m), sq = |u|² (P,); ``p`` may be overwritten."""
        p = p.add_((log_scale - 0.5 * sq - 0.5 * math.log(self.params["m"]))[None, :, None])
        return p.exp_()


@register
class PositiveAntithetic(_ProjectionEstimator):
    """Antithetic positive RF (FAVOR+): e^{−(|x|²+|y|²)/2}·(1/m) Σ cosh(ω_i·(x+y)) (HRF eq. 3)."""

    name = "positive_antithetic"
    known = CLOSED_FORM
    citation = "[HRF] eq. 3; MSE Lemma 2.2 eq. 7"
    title = "Positive RF, antithetic (FAVOR+)"
    short_title = "FAVOR+ (antithetic)"
    reference = "HRF paper eq. 3; MSE Lemma 2.2 eq. 7"
    description = "Strictly positive, unbounded; exact at θ = π (x = −y); 2m features."

    projection_features: ClassVar[bool] = True
    needs_norms: ClassVar[bool] = False
    coupled_closed_forms: ClassVar[tuple[str, ...]] = COUPLED_CLOSED_FORMS

    def _log_mse_iid(self, s: PairStats) -> np.ndarray:
        return hrf.log_mse_positive_antithetic(s.xx, s.yy, s.xy, s.z2, self.params["m"])

    def _log_mse_coupled(self, s: PairStats, coupling: str) -> np.ndarray:
        return 2.0 * s.xy + simrf.log_relative_mse("positive_antithetic", s.z2, s.d, self.params["m"], coupling)

    def _log_rel_fourth(self, s: PairStats) -> np.ndarray:
        return moments.log_fourth_exp(s.z2, self.params["m"], antithetic=True)

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        return mean_cosh_shifted(samples["w"], x + y, 0.5 * (sq_norm(x) + sq_norm(y)) + log_scale)

    def features_from_projections(self, samples: Samples, p: torch.Tensor, sq: torch.Tensor, side: str,
                                  log_scale: torch.Tensor) -> torch.Tensor:
        """e^{±ω·u − |u|²/2 + log_scale}/√(2m), one exponential per feature; p = ω·u (trials, P, m), sq = |u|²."""
        h = (log_scale - 0.5 * sq - 0.5 * math.log(2 * self.params["m"]))[None, :, None]
        return torch.cat([p + h, h - p], -1).exp_()


# --------------------------------------------------------------------------------------- trig_phase
@register
class TrigPhase(SoftmaxFamilyEstimator):
    """Random Fourier features with phase: φ(u) = √(2/m)·e^{|u|²/2}·[cos(ω_i·u + b_i)], b_i ~ U[0, 2π)
    (Rahimi & Recht; the e^{|u|²/2} factor turns the Gaussian-kernel features into softmax ones, HRF eq. 1).

    MSE [derived]: 2cos(ω·x + b)cos(ω·y + b) = cos(ω·Δ) + cos(ω·(x + y) + 2b); the second term has mean 0,
    second moment 1/2 and zero covariance with the first (average over b), so the per-feature variance is
    e^{|x|²+|y|²}[Var cos(ω·Δ) + 1/2] = e^{|x|²+|y|²}[(1 − e^{−|Δ|²})² + 1]/2 and
    MSE = e^{|x|²+|y|²}[(1 − e^{−|x−y|²})² + 1]/(2m). Verified by Monte Carlo.
    """

    name = "trig_phase"
    known = CLOSED_FORM
    citation = "[HRF] eq. 1 (Rahimi & Recht 2007 scaling); MSE derived in rfviz, Monte-Carlo verified"
    title = "Random Fourier features with phase (√2 cos(ω·x + b))"
    short_title = "RFF with phase"
    reference = "Rahimi & Recht 2007; HRF paper eq. 1 scaling; MSE [derived] (rfviz, MC-verified)"
    description = "m real features; never exact (the phase term adds variance 1/2 per feature, even at x = y)."
    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM)

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        m = self.params["m"]
        w = _sample_iid(trials, m, d, d if dim is None else dim, generator, device, dtype)
        b = 2.0 * math.pi * torch.rand((trials, m), generator=generator, device=device, dtype=dtype)
        return {"w": w, "b": b}

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        """log MSE = |x|² + |y|² + log(1 + (1 − e^{−|x−y|²})²) − log 2m ([derived], see the class docstring)."""
        return s.xx + s.yy + np.log1p(np.exp(2.0 * log1mexp(s.delta2))) - math.log(2 * self.params["m"])

    def fourth_moment_available(self) -> bool:
        return True

    def _log_rel_fourth(self, s: PairStats) -> np.ndarray:
        return moments.log_fourth_trig_phase(s.delta2, self.params["m"])

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        b = samples["b"][:, None, :]
        prod = torch.cos(projections(samples["w"], x) + b) * torch.cos(projections(samples["w"], y) + b)
        return 2.0 * prod.mean(-1) * torch.exp(0.5 * (sq_norm(x) + sq_norm(y)) - log_scale)

    def features_from_projections(self, samples: Samples, p: torch.Tensor, sq: torch.Tensor, side: str,
                                  log_scale: torch.Tensor) -> torch.Tensor:
        """√(2/m)·e^{|u|²/2 + log_scale}cos(ω·u + b) from p = ω·u (trials, P, m), sq = |u|² (P,): for the Gaussian
        kernel RBFSampler's bounded map (the factor is e^0 = 1 exactly). ``p`` may be overwritten."""
        scale = torch.exp(0.5 * sq + log_scale)[None, :, None] * math.sqrt(2.0 / self.params["m"])
        return p.add_(samples["b"][:, None, :]).cos_().mul_(scale)

    projection_features: ClassVar[bool] = True

    def _features_scaled(self, samples: Samples, u: torch.Tensor, side: str,
                         log_scale: torch.Tensor) -> torch.Tensor:
        return self.features_from_projections(samples, projections(samples["w"], u), sq_norm(u), side, log_scale)


# ------------------------------------------------------------------------------ complex exponential
def _check_a_entry(name: str, value: complex) -> complex:
    mod = abs(value)
    if not (math.isfinite(mod) and A_MIN_MODULUS <= mod <= A_MAX_MODULUS):
        text = format_complex(value, drop_zero_imag=True)
        raise ParameterError(f"{name} must be a complex number with modulus in [{A_MIN_MODULUS:g}, "
                             f"{A_MAX_MODULUS:g}] (A must be invertible), got {text}")
    return complex(value)


A_PARAM = Param("A", 1j, "complex", "scalar a of A = a·I in the CE estimator (HRF §2.3); a = i gives trig "
                "(real part), a = 1 the positive RF; any |a| in [1e-3, 1e3]", ui_low=-3.0, ui_high=3.0,
                label="A = a·I (complex)")
A_DIAG_PARAM = Param("A_diag", (1 + 0.5j, 0.8 + 0j), "complex_list",
                     "diagonal of A = diag(a_1..a_k, 1, …, 1) (HRF §2.3, App. H): complex entries for the first k "
                     "input coordinates, comma-separated, |a_k| in [1e-3, 1e3] (A must be invertible); later "
                     "coordinates use a = 1", low=A_MIN_MODULUS, high=A_MAX_MODULUS, label="diag(A)")
ANTITHETIC_PARAM = Param("antithetic", False, "bool",
                         "use each ω as the pair (ω, −ω): exp → cosh (with A = I this is FAVOR+)")
VARIANCE_PARAM = Param("variance", "real_part", "choice",
                       "real_part: K̂ = Re(Ψ_A(x)ᵀΨ_B(y)), MSE = Var Re K̂; complex: the complex K̂, MSE = E|K̂ − K|²",
                       choices=("real_part", "complex"))


@register
class ComplexExponential(SoftmaxFamilyEstimator):
    """Complex exponential (CE) estimator with A = a·I: Ψ_A(x)ᵀΨ_B(y), B = (Aᵀ)^{-1},
    Ψ_M(u) = m^{-1/2}e^{−(Mu)²/2}[e^{ω_i·Mu}] with the complex square (Mu)² = Σ(Mu)_k², no conjugate
    (HRF §2.3 eqs. 13–16, Lemma 2.4). Exact iff w = Ax + (Aᵀ)^{-1}y = 0 (eq. 17). A = iI: real part = trig;
    A = I: ``positive``; A = I antithetic: ``positive_antithetic`` ([HRF] §2.3; docs: derivations/complex-exponential).
    """

    name = "complex_exponential"
    known = CLOSED_FORM
    citation = "[HRF] §2.3 eqs. 13–18; MSE docs: derivations/complex-exponential"
    title = "Complex exponential RF, A = a·I"
    short_title = "Complex RF (a·I)"
    reference = "HRF paper §2.3 eqs. 13–18; MSE docs: derivations/complex-exponential"
    description = "Unbiased; real part can be negative; exact where Ax + (Aᵀ)⁻¹y = 0."
    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM, A_PARAM, ANTITHETIC_PARAM, VARIANCE_PARAM)

    def validate(self) -> None:
        _check_a_entry("A", self.params["A"])

    def diagonal(self, dim: int) -> np.ndarray:
        """Diagonal of A on ``dim`` coordinates (A = a·I is isotropic, so reduced coordinates are fine)."""
        return np.full(dim, self.params["A"], dtype=complex)

    def w(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """w = Ax + (Aᵀ)^{-1}y for diagonal A (HRF eq. 17)."""
        diag = self.diagonal(np.shape(x)[-1])
        return np.asarray(x) * diag + np.asarray(y) / diag

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        return {"w": _sample_iid(trials, self.params["m"], d, d if dim is None else dim, generator, device, dtype)}

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        """[HRF] §2.3, MSE derived in docs: derivations/complex-exponential (``log_mse_complex_exponential``)."""
        return log_mse_complex_exponential(self.w(s.x, s.y), s.xy, self.params["m"], self.params["antithetic"],
                                           self.params["variance"])

    def fourth_moment_available(self) -> bool:
        return True

    def _log_rel_fourth(self, s: PairStats) -> np.ndarray:
        return moments.log_fourth_complex_exponential(self.w(s.x, s.y), self.params["m"], self.params["antithetic"],
                                                      self.params["variance"])

    def _exponents(self, samples: Samples, u: torch.Tensor, diag: torch.Tensor) -> torch.Tensor:
        """ω·Mu − (Mu)²/2 (complex), shape (trials, P, m) or (trials, P, 2m) for antithetic pairs."""
        mu = u.to(diag.dtype) * diag
        p = projections(samples["w"].to(diag.dtype), mu)
        if self.params["antithetic"]:
            p = torch.cat([p, -p], -1)
        return p - 0.5 * (mu * mu).sum(-1)[None, :, None]

    def _diag_tensor(self, dim: int, like: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(self.diagonal(dim), device=like.device, dtype=_complex_dtype(like.dtype))

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        diag = self._diag_tensor(x.shape[-1], x)
        expo = self._exponents(samples, x, diag) + self._exponents(samples, y, 1.0 / diag)
        # Ψ_A(x)_i·Ψ_B(y)_i = e^{ω_i·w − ((Ax)² + (By)²)/2}: the exponents add term by term.
        expo = expo - log_scale.to(expo.dtype)[None, :, None]
        top = expo.real.amax(-1, keepdim=True)
        val = torch.exp(top[..., 0]) * torch.exp(expo - top).mean(-1)
        return val.real if self.params["variance"] == "real_part" else val

    def _features_scaled(self, samples: Samples, u: torch.Tensor, side: str,
                         log_scale: torch.Tensor) -> torch.Tensor:
        """e^{ω·Mu − (Mu)²/2 + log_scale}/√m (log_scale inside the exponent: with A = iI and the Gaussian kernel the
        modulus is exactly 1)."""
        diag = self._diag_tensor(u.shape[-1], u)
        expo = self._exponents(samples, u, diag if side == "query" else 1.0 / diag)
        expo = expo + log_scale.to(expo.dtype)[None, :, None]
        phi = torch.exp(expo) / math.sqrt(expo.shape[-1])
        if self.params["variance"] == "complex":
            return phi
        # Re Σ a_i b_i = Σ Re a_i Re b_i − Im a_i Im b_i: real features [Re, Im] against [Re, −Im].
        return torch.cat([phi.real, phi.imag if side == "query" else -phi.imag], -1)


@register
class ComplexExponentialDiag(ComplexExponential):
    """CE estimator with a complex diagonal A = diag(a_1..a_d) (HRF §2.3; App. H eqs. 85–88 choose a_k per
    cluster pair). Not isotropic: the inputs' coordinates matter. ``A_diag`` lists a_1..a_k for the first k
    coordinates (k ≤ d); the remaining coordinates use a = 1."""

    name = "complex_exponential_diag"
    known = CLOSED_FORM
    citation = "[HRF] §2.3 eqs. 13–18, App. H eqs. 85–88"
    title = "Complex exponential RF, A = diag(a_k)"
    short_title = "Complex RF (diag)"
    reference = "HRF paper §2.3 eqs. 13–18, App. H eqs. 85–88; MSE docs: derivations/complex-exponential"
    description = "Coordinate-dependent; exact where a_k x_k + y_k/a_k = 0 for every k."
    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM, A_DIAG_PARAM, ANTITHETIC_PARAM, VARIANCE_PARAM)
    isotropic: ClassVar[bool] = False

    def validate(self) -> None:
        """Entries are checked by ``A_DIAG_PARAM`` (a ``complex_list`` Param: modulus in [1e-3, 1e3])."""

    def check_dimension(self, d: int) -> None:
        super().check_dimension(d)
        k = len(self.params["A_diag"])
        if d < k:
            raise ParameterError(f"d must be an integer in [{k}, inf) (A_diag has {k} entries) for {self.name}, "
                                 f"got {d}")

    def diagonal(self, dim: int) -> np.ndarray:
        """(a_1..a_k, 1, …, 1): coordinates beyond the listed entries use a = 1."""
        diag = np.asarray(self.params["A_diag"], dtype=complex)
        if dim < diag.size:
            raise ParameterError(f"x and y must have at least {diag.size} coordinates (A_diag has {diag.size} "
                                 f"entries), got {dim}")
        return np.concatenate([diag, np.ones(dim - diag.size, dtype=complex)])


# ---------------------------------------------------------------------------------------- hybrids
SHARED_PARAM = Param("shared", True, "bool",
                     "trig and ++ share the same m projections ω (variant II, HRF eq. 23); false: independent ω "
                     "(variant I, eq. 22). Only matters when |x| ≠ |y|")
LAMBDA_RF_PARAM = Param("lambda_rf", "trig", "choice",
                        "random features estimating the Gaussian λ: trig (n cos features, HRF eq. 70) or positive "
                        "(n ++ features, cosh; App. F extension, docs: derivations/gaussian-lambda: same mean, other "
                         "variance)",
                        choices=("trig", "positive"))
R_NORM_PARAM = Param("r_norm", 0.0, "float",
                     "length r in ρ = 1 − exp(−2σ²r²) (HRF eq. 68). 0: the inputs' common length, which then must "
                     "satisfy |x| = |y| (App. F); > 0: a fixed normaliser, any x, y", low=0.0, ui_low=0.0,
                     ui_high=5.0)


class _BipolarHybrid(SoftmaxFamilyEstimator):
    """λ̂·SM_++ + (1 − λ̂)·SM_trig (HRF eq. 12), λ̂ = a − q(x)·q(y) from n projections τ independent of ω.

    Subclasses give λ̂ (``_lambda_hat``), its linearisation (``_lambda_features`` → a(u), q(u)) and its moments.
    Feature map (Lemma 2.3 made real and asymmetric, [HRF] eq. 19): query [√|a|φ_++, √|1−a|φ_trig, q⊗φ_++,
    q⊗φ_trig], key [sgn(a)√|a|φ_++, sgn(1−a)√|1−a|φ_trig, −q⊗φ_++, q⊗φ_trig]; dimension 4m(k + 1), k = dim q.
    """

    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM, N_PARAM, SHARED_PARAM)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._pos = PositiveAntithetic(m=self.params["m"])
        self._trig = Trig(m=self.params["m"])

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        dim = d if dim is None else dim
        m, n = self.params["m"], self.params["n"]
        w_pos = _sample_iid(trials, m, d, dim, generator, device, dtype)
        w_trig = w_pos if self.params["shared"] else _sample_iid(trials, m, d, dim, generator, device, dtype)
        tau = torch.randn((trials, n, dim), generator=generator, device=device, dtype=dtype)
        return {"w_pos": w_pos, "w_trig": w_trig, "tau": tau}

    # hooks
    def _lambda_hat(self, samples: Samples, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _lambda_features(self, samples: Samples, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def _moments(self, s: PairStats) -> LambdaMoments:
        raise NotImplementedError

    # protocol
    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        """HRF Thm 3.1: eq. 22 (independent) or eq. 23 (shared), with this λ̂'s moments."""
        return log_mse_bipolar(self._pos._log_mse_softmax(s), self._trig._log_mse_softmax(s), self._moments(s), s,
                               self.params["m"], self.params["shared"])

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        lam = self._lambda_hat(samples, x, y)
        pos = self._pos._estimate_softmax({"w": samples["w_pos"]}, x, y, log_scale)
        trig = self._trig._estimate_softmax({"w": samples["w_trig"]}, x, y, log_scale)
        return lam * pos + (1.0 - lam) * trig

    def _features_scaled(self, samples: Samples, u: torch.Tensor, side: str,
                         log_scale: torch.Tensor) -> torch.Tensor:
        a, q = self._lambda_features(samples, u)  # a: (P,), q: (trials, P, k)
        phi_pos = self._pos._features_scaled({"w": samples["w_pos"]}, u, side, log_scale)
        phi_trig = self._trig._features_scaled({"w": samples["w_trig"]}, u, side, log_scale)
        trials, points = q.shape[:2]

        def kron(v: torch.Tensor, phi: torch.Tensor) -> torch.Tensor:
            return (v[..., :, None] * phi[..., None, :]).reshape(trials, points, -1)

        root_a = a.abs().sqrt()[None, :, None]
        root_b = (1.0 - a).abs().sqrt()[None, :, None]
        if side == "query":
            blocks = [root_a * phi_pos, root_b * phi_trig, kron(q, phi_pos), kron(q, phi_trig)]
        else:
            sa, sb = torch.sign(a)[None, :, None], torch.sign(1.0 - a)[None, :, None]
            blocks = [sa * root_a * phi_pos, sb * root_b * phi_trig, -kron(q, phi_pos), kron(q, phi_trig)]
        return torch.cat(blocks, -1)


def _signs(tau: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """sgn(τ_j·u) with sgn(0) := +1 (np.sign(0) = 0 would break λ̂ ∈ {k/n}), (trials, P, n)."""
    p = projections(tau, u)
    return torch.where(p >= 0, torch.ones_like(p), -torch.ones_like(p))


@register
class HybridAngular(_BipolarHybrid):
    """Angular hybrid: λ̂ = K/n, K = #{j : τ_j separates x and y} ~ Binomial(n, θ/π) (HRF eq. 19, App. D,
    Goemans–Williamson). MSE: HRF Thm D.1 eqs. 45/46 for any x, y; on S(r) the CORRECTED eq. 47 (docs:
    derivations/hrf-angular-hybrid).
    λ̂ ≡ 0 at θ = 0 (equals trig) and ≡ 1 at θ = π (equals positive_antithetic)."""

    name = "hybrid_angular"
    known = CLOSED_FORM
    citation = "[HRF] eq. 19, Thm 3.1 eqs. 22–23, Thm D.1 eqs. 45–46"
    title = "Angular hybrid RF (λ = θ/π)"
    short_title = "Angular hybrid"
    reference = "HRF paper eq. 19, Thm 3.1 eqs. 22–23, Thm D.1 eqs. 45–46, eq. 47 (corrected)"
    description = "Trig near θ = 0, FAVOR+ near θ = π; exact at both ends for |x| = |y|; 4m(n+1) features."

    def _lambda_hat(self, samples: Samples, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        split = (_signs(samples["tau"], x) != _signs(samples["tau"], y)).to(x.dtype)
        return split.mean(-1)

    def _lambda_features(self, samples: Samples, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """λ̂ = 1/2 − (1/2n)Σ s_j(x)s_j(y): a = 1/2, q = s/√(2n) ([HRF] eq. 19)."""
        s = _signs(samples["tau"], u)
        return torch.full((u.shape[0],), 0.5, dtype=u.dtype, device=u.device), s / math.sqrt(2 * self.params["n"])

    def _moments(self, s: PairStats) -> LambdaMoments:
        """[HRF] eqs. 45–46 (docs: derivations/hrf-angular-hybrid) with θ = ∠(x, y) (θ = π/2 if x or y is 0, matching
        sgn(0) := +1)."""
        return angular_lambda_moments(angle_between(s.x, s.y), self.params["n"], angle_to_antipode(s.x, s.y))

    def fourth_moment_available(self) -> bool:
        return True

    def _log_rel_fourth(self, s: PairStats) -> np.ndarray:
        """rfviz.maths.moments.log_fourth_angular_hybrid (Binomial λ̂ independent of ω; shared or independent ω)."""
        return moments.log_fourth_angular_hybrid(s.xx, s.yy, s.xy, angle_between(s.x, s.y), self.params["m"],
                                                 self.params["n"], self.params["shared"], z2=s.z2, delta2=s.delta2,
                                                 antipode=angle_to_antipode(s.x, s.y))


@register
class HybridGaussian(_BipolarHybrid):
    """Normalised bipolar Gaussian hybrid: λ(x, y) = (1 − e^{−σ²|x−y|²/2})/ρ, ρ = 1 − e^{−2σ²r²}, estimated with
    n trig RFs, λ̂ = (1 − (1/n)Σcos(σ τ_i·(x − y)))/ρ ∈ [0, 2/ρ] (HRF App. F eqs. 67–70, with the σ that the
    printed eq. 70 omits). MSE: Thm F.2 (eqs. 71–79; docs: derivations/gaussian-lambda), plus the variant-II
    correction (eq. 23) for
    shared ω when |x| ≠ |y| (docs: derivations/gaussian-lambda: Thm F.1's "same with shared projections"
    needs |x| = |y|).

    r: with ``r_norm = 0`` (default, the paper's setting) r = |x| = |y| and unequal lengths raise ParameterError;
    with ``r_norm > 0`` ρ uses that fixed r for every pair (λ̂ stays unbiased for its λ; λ(π) = 1 only if |x| = r).
    """

    name = "hybrid_gaussian"
    known = CLOSED_FORM
    citation = "[HRF] App. F, Thms F.1–F.2 eqs. 67–79"
    title = "Gaussian hybrid RF (normalised, App. F)"
    short_title = "Gaussian hybrid"
    reference = "HRF paper App. F, Thms F.1–F.2 eqs. 67–79; docs: derivations/gaussian-lambda"
    description = "Zero variance at θ = 0 but not at θ = π; λ̂ may exceed 1; needs |x| = |y| unless r_norm > 0."
    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM, N_PARAM, SIGMA_PARAM, R_NORM_PARAM, SHARED_PARAM,
                                                    LAMBDA_RF_PARAM)
    rtol_same_length: ClassVar[float] = 1e-9

    def _check_same_length(self, xx: np.ndarray, yy: np.ndarray, rtol: float) -> None:
        if self.params["r_norm"] > 0:
            return
        xx, yy = np.asarray(xx, float), np.asarray(yy, float)
        bad = np.abs(xx - yy) > rtol * np.maximum(np.maximum(xx, yy), 1e-300)
        if np.any(bad):
            i = np.flatnonzero(np.ravel(bad))[0]
            nx, ny = math.sqrt(np.ravel(xx)[i]), math.sqrt(np.ravel(yy)[i])
            raise ParameterError(f"x and y must have the same length |x| = |y| for {self.name} with r_norm = 0 "
                                 f"(ρ = 1 − exp(−2σ²r²) needs one r, HRF App. F), got |x| = {nx:g}, |y| = {ny:g}; "
                                 f"set r_norm > 0 to fix r")

    def _log_rho(self, r2: torch.Tensor) -> torch.Tensor:
        """log ρ for squared lengths r2 (or the fixed r_norm)."""
        if self.params["r_norm"] > 0:
            r2 = torch.full_like(r2, self.params["r_norm"] ** 2)
        t = 2.0 * self.params["sigma"] ** 2 * r2
        return torch.log(-torch.expm1(-t))

    def _lambda_hat(self, samples: Samples, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        xx, yy = sq_norm(x), sq_norm(y)
        rtol = 64 * torch.finfo(x.dtype).eps
        self._check_same_length(xx.detach().cpu().numpy(), yy.detach().cpu().numpy(), max(rtol, 1e-12))
        log_rho = self._log_rho(0.5 * (xx + yy))
        sigma = self.params["sigma"]
        if self.params["lambda_rf"] == "positive":
            # Ĝ = e^{−σ²(|x|²+|y|²)}(1/n)Σ cosh(σ τ·(x + y)), cosh in log space (docs: derivations/gaussian-lambda,
            # ++ extension).
            t = sigma * projections(samples["tau"], x + y)
            log_cosh = torch.logaddexp(t, -t) - math.log(2.0)
            g = torch.exp(log_cosh - (sigma**2 * (xx + yy))[None, :, None]).mean(-1)
            one_minus_g = 1.0 - g
        else:
            # 1 − cos t = 2 sin²(t/2): no cancellation at small σ τ·(x − y).
            one_minus_g = 2.0 * (torch.sin(0.5 * sigma * projections(samples["tau"], x - y)) ** 2).mean(-1)
        lam = one_minus_g * torch.exp(-log_rho)[None, :]
        return torch.where(torch.isfinite(log_rho)[None, :], lam, torch.zeros_like(lam))

    def _lambda_features(self, samples: Samples, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """λ̂ = 1/ρ − (1/(nρ))Σ[cos(στ·x)cos(στ·y) + sin(στ·x)sin(στ·y)]: a = 1/ρ, q = [cos, sin]/√(nρ) (eq. 70
        with σ restored). With r_norm = 0, ρ uses |u|, so φ_query(x)·φ_key(y) = K̂ needs |x| = |y|."""
        log_rho = self._log_rho(sq_norm(u))
        ok = torch.isfinite(log_rho)  # ρ = 0 only at u = 0 with r_norm = 0: λ̂ := 0 there, as in ``_lambda_hat``
        log_rho = torch.where(ok, log_rho, torch.zeros_like(log_rho))
        p = self.params["sigma"] * projections(samples["tau"], u)
        scale = (ok * torch.exp(-0.5 * log_rho))[None, :, None] / math.sqrt(self.params["n"])
        if self.params["lambda_rf"] == "positive":  # Ĝ = Σ_i [e^{p_i(x)}e^{p_i(y)} + e^{−p_i(x)}e^{−p_i(y)}]/(2n)·…
            shift = (self.params["sigma"] ** 2 * sq_norm(u))[None, :, None]
            q = torch.cat([torch.exp(p - shift), torch.exp(-p - shift)], -1) / math.sqrt(2.0)
            return ok * torch.exp(-log_rho), q * scale
        return ok * torch.exp(-log_rho), torch.cat([torch.cos(p), torch.sin(p)], -1) * scale

    def _moments(self, s: PairStats) -> LambdaMoments:
        """[HRF] eqs. 72–73 (docs: derivations/gaussian-lambda) with D² from coordinates (no cancellation at small
        θ)."""
        self._check_same_length(s.xx, s.yy, self.rtol_same_length)
        sphere = self.params["r_norm"] <= 0
        r = np.sqrt(0.5 * (s.xx + s.yy)) if sphere else self.params["r_norm"]
        z2 = s.z2 if self.params["lambda_rf"] == "positive" else None
        return gaussian_lambda_moments(s.delta2, r, self.params["sigma"], self.params["n"], z2,
                                       sphere_z2=s.z2 if sphere else None)


__all__ = [
    "ComplexExponential",
    "ComplexExponentialDiag",
    "HybridAngular",
    "HybridGaussian",
    "TrigPhase",
    "log_mse_complex_exponential",
]
