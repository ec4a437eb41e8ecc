"""Random features of dot-product kernels: polynomial sketches (real/complex, parameter q), TensorSRHT and
Maclaurin features (Wacker, Kanagawa, Filippone; [DP]). The maths lives in
rfviz.maths.dp; these classes wire it into the estimator protocol.

Their variances depend on the coordinates of x and y through S = Σ_k x_k² y_k², so they are
not isotropic: the engine gives them full d-vectors, and grids need an embedding (canonical, flat or
rotation_average; see rfviz.maths.dp).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import torch

from ..maths import dp
from ..numerics import to_log10
from ..params import ESTIMATOR_DEGREE_PARAM, M_PARAM, Param, ParameterError
from ..registries import CLOSED_FORM
from .base import Estimator, PairStats, Samples, register

Q_PARAM = Param("q", 0.5, "float", "realness of each weight entry z = a + ib: E a² = q, E b² = 1 − q (1 real, "
                "½ complex, 0 purely imaginary ≡ 1; only (2q−1)² matters)", low=0.0, high=1.0, label="q (realness)")
MAX_OPTIMIZED_FEATURES = 10_000
"""Largest m of Maclaurin's optimized allocation (Algorithm 3), whose cost grows like m·p."""
FEATURES_PARAM = replace(M_PARAM, default=16, help="number of random features D (a complex feature counts once)",
                         label="m (features D)")
BASIS_PARAM = Param("basis", "rademacher", "choice",
                    "law of each weight entry, with q setting its real/imaginary split: rademacher √q·v + i√(1−q)·w "
                    "(v, w = ±1), gaussian (a ~ N(0, q), b ~ N(0, 1−q)), plus_minus_i ({±1} w.p. q, else {±i}), "
                    "unit_circle (exp(iφ))", choices=dp.BASES)
UNIT_BASIS_PARAM = Param("basis", "rademacher", "choice",
                         "law of each entry of z (|z| = 1, Theorem 10), q setting its real/imaginary split: "
                         "rademacher, plus_minus_i or unit_circle", choices=dp.UNIT_MODULUS_BASES)
DP_VARIANCE_PARAM = Param("variance", "complex", "choice",
                       "which error of complex features is measured: complex = E|k̂ − k|² (the paper's, default) or "
                       "real_part = E(Re k̂ − k)² (what a real-valued use of the features sees)",
                       choices=dp.VARIANCES)
PERMUTATION_PARAM = Param("permutation", "per_degree", "choice",
                          "TensorSRHT permutations: per_degree = independent for every (block, degree) (Algorithm 1; "
                          "Theorem 10 holds, default) or shared across degrees (literal Eq. 25; no closed form)",
                          choices=("per_degree", "shared"))


def _unit_and_log_norm(u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """u/|u| (0 for u = 0) and log|u| (−inf for u = 0)."""
    norm = torch.linalg.vector_norm(u, dim=-1)
    safe = torch.where(norm > 0, norm, torch.ones_like(norm))
    return u / safe[:, None], torch.log(norm)


class _DotProductEstimator(Estimator):
    """Shared plumbing: closed forms from DotStats, grids under the three embeddings, complex/real outputs."""

    family: ClassVar[str] = "dot_product"
    isotropic: ClassVar[bool] = False

    def _log_mse_stats(self, st: dp.DotStats) -> np.ndarray:
        raise NotImplementedError

    def _log_mse(self, s: PairStats) -> np.ndarray:
        return self._log_mse_stats(dp.DotStats.from_pairs(s.x, s.y))

    def log10_mse_grid(self, r: np.ndarray | float, theta: np.ndarray | float, d: int,
                       embedding: str = "canonical") -> np.ndarray:
        """log10 MSE at (r, θ) in the named embedding of R^d, straight from the pair statistics; for
        ``rotation_average`` the MSE (not its log) is averaged over dp.ROTATIONS fixed orientations."""
        self.check_dimension(d)
        st = dp.grid_stats(r, theta, d, embedding)
        out = np.asarray(self._log_mse_stats(st), dtype=float)
        if embedding in dp.AVERAGED_EMBEDDINGS:
            out = dp.log_mean_exp(out, axis=-1)
        if np.any(np.isnan(out)):
            raise FloatingPointError(f"{self.name}: NaN in the closed-form MSE for params {self.params}")
        return to_log10(out)

    def _finish(self, khat: torch.Tensor) -> torch.Tensor:
        """Complex K̂ for variance=complex, Re K̂ for variance=real_part (real tensors pass through)."""
        if khat.is_complex() and self.params.get("variance") == "real_part":
            return khat.real
        return khat

    def _pair_features(self, f: torch.Tensor, side: str) -> torch.Tensor:
        """Query φ(x), key conj φ(y) (so Σ φ_q·φ_k = Φ(x)ᵀconj Φ(y)); [Re φ, Im φ] for variance=real_part."""
        if not f.is_complex():
            return f
        if self.params.get("variance") == "real_part":
            return torch.cat([f.real, f.imag], -1)
        return f.conj().resolve_conj() if side == "key" else f


class _HomogeneousPolynomial(_DotProductEstimator):
    """Estimators of (x·y)^p: the kernel, its scale (|x||y|)^p, and K̂ from features of x/|x| and y/|y|."""

    @property
    def kernel(self) -> str:
        return "polynomial"

    def log_abs_kernel(self, s: PairStats) -> tuple[np.ndarray, np.ndarray]:
        p = self.params["p"]
        with np.errstate(divide="ignore"):
            return p * np.log(np.abs(s.xy)), np.sign(s.xy) ** p

    def log_scale(self, s: PairStats) -> np.ndarray:
        """p·log(|x||y|), finite where K = 0 (x ⟂ y) so the engine can still normalise; 0 if x or y is 0."""
        nn = np.asarray(s.xx * s.yy, float)
        with np.errstate(divide="ignore"):
            return np.where(nn > 0, 0.5 * self.params["p"] * np.log(np.where(nn > 0, nn, 1.0)), 0.0)

    def _raw_features(self, samples: Samples, u: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def estimate(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                 log_scale: torch.Tensor | None = None) -> torch.Tensor:
        xu, log_nx = _unit_and_log_norm(x)
        yu, log_ny = _unit_and_log_norm(y)
        fx = self._raw_features(samples, xu)
        fy = self._raw_features(samples, yu)
        khat = (fx * (fy.conj() if fy.is_complex() else fy)).mean(-1)
        scale = self.params["p"] * (log_nx + log_ny)
        if log_scale is not None:
            scale = scale - log_scale
        return self._finish(khat * torch.exp(scale)[None, :])

    def features(self, samples: Samples, u: torch.Tensor, side: str = "query") -> torch.Tensor:
        f = self._raw_features(samples, u) / math.sqrt(self.params["m"])
        return self._pair_features(f, side)


@register
class PolySketch(_HomogeneousPolynomial):
    """Real/complex polynomial sketch: k̂ = (1/D) Σ_ℓ Π_i (z_{iℓ}ᵀx)·conj(z_{iℓ}ᵀy) (Eqs. 5, 10, 11)."""

    name = "poly_sketch"
    known = CLOSED_FORM
    citation = "[DP] Eqs. 10–11; variance Thm 2 Eq. 16"
    title = "Polynomial sketch, real/complex (q)"
    short_title = "Poly sketch"
    reference = ("Wacker et al., Improved RF for dot-product kernels: Eqs. 10–11, variance Theorem 2 Eq. 16 "
                 "(Eqs. 18–21); Re-part variance derived")
    description = ("Unbiased for (x·y)^p; q = 1 real (Kar & Karnick, Hamid et al.), q = ½ complex. Variance depends "
                   "on the coordinates through S = Σ x_k²y_k²; complex beats real iff (x·y)² > S.")
    spec: ClassVar[tuple[Param, ...]] = (ESTIMATOR_DEGREE_PARAM, Q_PARAM, FEATURES_PARAM, BASIS_PARAM,
                                         DP_VARIANCE_PARAM)

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        shape = (trials, self.params["m"], self.params["p"], d)
        return {"z": dp.sample_entries(self.params["basis"], self.params["q"], shape, generator=generator,
                                       device=device, dtype=dtype)}

    def _raw_features(self, samples: Samples, u: torch.Tensor) -> torch.Tensor:
        return dp.sketch_features(samples["z"], u)

    def work_per_pair(self, d: int) -> int:
        return 4 * self.params["m"] * (self.params["p"] + 2) + 16

    def _log_mse_stats(self, st: dp.DotStats) -> np.ndarray:
        """[DP] Theorem 2 (eq. 16) with μ4 of the basis; the Re-part variance derived likewise."""
        q = self.params["q"]
        return dp.log_var_poly(st, self.params["p"], q, dp.fourth_moment(self.params["basis"], q),
                               self.params["m"], self.params["variance"])


@register
class TensorSRHT(_HomogeneousPolynomial):
    """TensorSRHT, real (q = 1) and complex: structured weights s_{iℓ} = z_i ∘ h_{π_i(ℓ)}, orthogonal within
    blocks of d (Algorithm 1, Eqs. 24–27 and 30–32); inputs padded with zeros to a power of two."""

    name = "tensor_srht"
    known = CLOSED_FORM
    citation = "[DP] Alg. 1, Eqs. 27/32; variance Thm 5 Eq. 28, Thm 10 Eq. 33"
    title = "TensorSRHT, real/complex"
    short_title = "TensorSRHT"
    reference = ("Wacker et al.: Algorithm 1, Eqs. 27/32; variance Theorem 5 Eq. 28 and Theorem 10 Eq. 33; Re-part "
                 "variance derived; per-degree permutations docs: errata")
    description = ("Unbiased for (x·y)^p; variance is a sawtooth in D (it rises when a new block of d starts). "
                   "Theorem 10 needs an independent permutation per degree: permutation=shared has no closed form.")
    spec: ClassVar[tuple[Param, ...]] = (ESTIMATOR_DEGREE_PARAM, Q_PARAM, FEATURES_PARAM, UNIT_BASIS_PARAM,
                                         DP_VARIANCE_PARAM, PERMUTATION_PARAM)

    def closed_form_available(self) -> bool:
        return self.params["permutation"] == "per_degree"

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        return dp.sample_tsrht(self.params["basis"], self.params["q"], self.params["p"], self.params["m"], d,
                               trials, shared_permutation=self.params["permutation"] == "shared",
                               generator=generator, device=device, dtype=dtype)

    def _raw_features(self, samples: Samples, u: torch.Tensor) -> torch.Tensor:
        return dp.tsrht_features(samples["z"], samples["perm"], u, self.params["m"])

    def work_per_pair(self, d: int) -> int:
        d_pad = dp.padded_dim(d)
        width = -(-self.params["m"] // d_pad) * d_pad
        return 4 * width * (self.params["p"] + 2) + 16

    def _log_mse_stats(self, st: dp.DotStats) -> np.ndarray:
        """[DP] Theorem 10 (eq. 33) with the padded d; for variance=real_part the Re-part variance derived likewise."""
        return dp.log_var_tsrht(st, self.params["p"], self.params["q"], self.params["m"], self.params["variance"])


@register
class TensorSketch(_HomogeneousPolynomial):
    """TensorSketch (Pham & Pagh 2013): degree-p CountSketches with independent hashes and signs, combined by FFT;
    k̂ = ⟨TS(x), TS(y)⟩ with TS(u) ∈ R^m (rfviz.maths.dp, TensorSketch section)."""

    name = "tensor_sketch"
    known = CLOSED_FORM
    citation = ("[DP] §6 (TensorSketch of Pham & Pagh 2013, compared there); exact variance derived in docs: "
                "derivations/tensor-sketch")
    title = "TensorSketch (CountSketch + FFT)"
    short_title = "TensorSketch"
    reference = ("Pham & Pagh, KDD 2013 (§3; Lemma 2 bounds the variance); exact variance derived in "
                 "rfviz.maths.dp (var_tensor_sketch_normalised), compared in [DP] §6")
    description = ("Unbiased for (x·y)^p with m buckets, O(p(d + m log m)) per input. Exact for x ∥ y along one "
                   "axis; its variance does not shrink with the input's spread the way complex TensorSRHT's does.")
    spec: ClassVar[tuple[Param, ...]] = (ESTIMATOR_DEGREE_PARAM, FEATURES_PARAM)

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        return dp.sample_tensor_sketch(self.params["p"], self.params["m"], d, trials, generator=generator,
                                       device=device, dtype=dtype)

    def _raw_features(self, samples: Samples, u: torch.Tensor) -> torch.Tensor:
        # ⟨TS(x), TS(y)⟩ = m · mean(TS(x) TS(y)): scale by √m so the shared mean(-1) and features/√m apply.
        m = self.params["m"]
        return dp.tensor_sketch_features(samples["hash"], samples["sign"], u, m) * math.sqrt(m)

    def work_per_pair(self, d: int) -> int:
        return 4 * self.params["m"] * (self.params["p"] * (d + 4) + 2) + 16

    def _log_mse_stats(self, st: dp.DotStats) -> np.ndarray:
        """Exact variance (rfviz.maths.dp.var_tensor_sketch_normalised)."""
        return dp.log_var_tensor_sketch(st, self.params["p"], self.params["m"])


@register
class Maclaurin(_DotProductEstimator):
    """Maclaurin features of k(x, y) = Σ a_n (x·y)^n: random (Kar & Karnick, Eq. 43) or optimised (Eq. 44,
    Algorithms 2–3), for the exponential e^{x·y}, Gaussian e^{−|x−y|²/2} (Sec. 5.4) and (x·y + ν)^P kernels."""

    name = "maclaurin"
    known = CLOSED_FORM
    citation = "[DP] §5 Eqs. 40–44; MSE Eqs. 47/48"
    title = "Maclaurin features (random / optimised)"
    short_title = "Maclaurin"
    reference = ("Wacker et al. §5: random Maclaurin Eqs. 40–43 (variance derived), optimised "
                 "Maclaurin Eq. 44 with Algorithms 2–3, MSE Eqs. 47/48, Gaussian kernel Eq. 55")
    description = ("Biased: drops degrees above p. method=optimized allocates the m features over degrees 1..p* "
                   "by Algorithm 3, tuned once on 64 fixed pairs of uniform unit vectors in R^d.")
    spec: ClassVar[tuple[Param, ...]] = (
        Param("kernel", "exponential", "choice", "target: exponential exp(x·y), gaussian exp(−|x−y|²/2) or polynomial "
              "(x·y + nu)^kernel_degree", choices=dp.MACLAURIN_KERNELS),
        Param("method", "optimized", "choice", "optimized (Algorithm 3 allocation, a_0 exact) or random (degree n ~ "
              "μ(n) ∝ c^−(n+1) per feature on 1..p, Kar & Karnick)", choices=("optimized", "random")),
        FEATURES_PARAM,
        Param("p", 6, "int", "highest Maclaurin degree: p_max of Algorithm 3, or the support 1..p of the random "
              "degree measure", low=1, high=30, ui_low=1, ui_high=15, label="p (max degree)"),
        Param("sketch", "poly", "choice", "sketch of each degree: poly (unstructured) or tensor_srht (optimized only)",
              choices=("poly", "tensor_srht")),
        BASIS_PARAM,
        Q_PARAM,
        DP_VARIANCE_PARAM,
        Param("c", 2.0, "float", "base of the random degree measure μ(n) ∝ c^−(n+1)", low=1.0, low_open=True,
              ui_low=1.1, ui_high=5.0),
        Param("kernel_degree", 3, "int", "degree P of the polynomial kernel (x·y + nu)^P", low=1, high=30),
        Param("nu", 1.0, "float", "offset ν ≥ 0 of the polynomial kernel (x·y + nu)^P", low=0.0, ui_high=4.0),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._plans: dict[int, dp.MaclaurinPlan] = {}

    def validate(self) -> None:
        p = self.params
        if p["method"] == "optimized" and p["m"] > MAX_OPTIMIZED_FEATURES:
            raise ParameterError(f"m must be at most {MAX_OPTIMIZED_FEATURES} for method=optimized (Algorithm 3's "
                                 f"greedy allocation costs O(m·p) closed-form evaluations: ~14 s at m=10000 on a "
                                 f"2-core VM), got {p['m']}; use method=random for larger m")
        if p["sketch"] == "tensor_srht" and p["method"] == "random":
            raise ParameterError("sketch must be poly for method=random, got 'tensor_srht'")
        if p["sketch"] == "tensor_srht" and p["basis"] not in dp.UNIT_MODULUS_BASES:
            raise ParameterError(f"basis must be one of {', '.join(dp.UNIT_MODULUS_BASES)} for sketch=tensor_srht "
                                 f"(Theorem 10 needs |z| = 1), got {p['basis']!r}")

    # ------------------------------------------------------------------ coefficients and plan
    @property
    def top_degree(self) -> int:
        """Highest degree used: p, capped at P for the polynomial kernel (higher a_n vanish)."""
        p = self.params
        return min(p["p"], p["kernel_degree"]) if p["kernel"] == "polynomial" else p["p"]

    @property
    def log_coefficients(self) -> np.ndarray:
        p = self.params
        return dp.log_maclaurin_coefficients(p["kernel"], self.top_degree, p["kernel_degree"], p["nu"])

    @property
    def mu4(self) -> float:
        return dp.fourth_moment(self.params["basis"], self.params["q"])

    def plan(self, d: int) -> dp.MaclaurinPlan:
        """Algorithm 3 on the reference pairs of R^d (cached per d)."""
        if d not in self._plans:
            p = self.params
            self._plans[d] = dp.optimize_maclaurin(
                dp.reference_unit_pairs(d), kernel=p["kernel"], total=p["m"], p_min=1, p_max=self.top_degree,
                sketch=p["sketch"], q=p["q"], mu4=self.mu4, variance=p["variance"], kernel_degree=p["kernel_degree"],
                nu=p["nu"])
        return self._plans[d]

    def measure(self) -> np.ndarray:
        return dp.kar_karnick_measure(self.top_degree, self.params["c"])

    # ------------------------------------------------------------------ kernel and scale
    def log_abs_kernel(self, s: PairStats) -> tuple[np.ndarray, np.ndarray]:
        p = self.params
        return dp.log_kernel_dot(p["kernel"], dp.DotStats.from_pairs(s.x, s.y), p["kernel_degree"], p["nu"])

    def log_scale(self, s: PairStats) -> np.ndarray:
        """log Σ_{n≤p} a_n (|x||y|)^n (− (|x|²+|y|²)/2 for the Gaussian kernel): the size of K̂'s terms."""
        st = dp.DotStats.from_pairs(s.x, s.y)
        return self._log_scale_stats(st)

    def _log_scale_stats(self, st: dp.DotStats) -> np.ndarray:
        la = self.log_coefficients
        n = np.arange(len(la))
        half = 0.5 * np.asarray(st.log_nn)[..., None]
        with np.errstate(invalid="ignore"):
            terms = np.where(n == 0, la, la + n * half)
        out = np.logaddexp.reduce(np.where(np.isnan(terms), -np.inf, terms), axis=-1)
        return out - 0.5 * st.sum_sq if self.params["kernel"] == "gaussian" else out

    # ------------------------------------------------------------------ sampling
    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        p = self.params
        kw = {"generator": generator, "device": device, "dtype": dtype}
        if p["method"] == "random":
            probs = torch.as_tensor(self.measure(), device=device, dtype=torch.float64)
            degrees = torch.multinomial(probs, trials * p["m"], replacement=True, generator=generator) + 1
            z = dp.sample_entries(p["basis"], p["q"], (trials, p["m"], self.top_degree, d), **kw)
            return {"degrees": degrees.reshape(trials, p["m"]), "z": z}
        out: Samples = {}
        for n, dn in enumerate(self.plan(d).alloc, start=1):
            if p["sketch"] == "tensor_srht":
                part = dp.sample_tsrht(p["basis"], p["q"], n, dn, d, trials, shared_permutation=False, **kw)
                out[f"z{n}"], out[f"perm{n}"] = part["z"], part["perm"]
                out[f"D{n}"] = torch.tensor(dn)  # 0-dim: not sliced along trials
            else:
                out[f"z{n}"] = dp.sample_entries(p["basis"], p["q"], (trials, dn, n, d), **kw)
        return out

    @staticmethod
    def _degrees(samples: Samples) -> list[int]:
        """Degrees n present in optimised-method samples (keys "z1", "z2", …)."""
        return sorted(int(k[1:]) for k in samples if k[0] == "z" and k[1:].isdigit())

    def _degree_features(self, samples: Samples, n: int, u: torch.Tensor) -> torch.Tensor:
        """Unscaled features of degree n for the optimised method: (trials, P, D_n)."""
        if self.params["sketch"] == "tensor_srht":
            return dp.tsrht_features(samples[f"z{n}"], samples[f"perm{n}"], u, int(samples[f"D{n}"]))
        return dp.sketch_features(samples[f"z{n}"], u)

    def _random_features(self, samples: Samples, u: torch.Tensor) -> torch.Tensor:
        """Π_{i ≤ n_j} z_{ij}ᵀu for random degrees n_j: (trials, P, m)."""
        z, degrees = samples["z"], samples["degrees"]
        proj = torch.einsum("tmik,pk->tpmi", z, u.to(z.dtype))
        keep = torch.arange(z.shape[2], device=z.device)[None, None, :] < degrees[:, :, None]  # (t, m, p)
        return torch.where(keep[:, None], proj, torch.ones_like(proj)).prod(-1)

    def estimate(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                 log_scale: torch.Tensor | None = None) -> torch.Tensor:
        xu, log_nx = _unit_and_log_norm(x)
        yu, log_ny = _unit_and_log_norm(y)
        log_rr = log_nx + log_ny  # log(|x||y|)
        shift = torch.zeros_like(log_rr) if log_scale is None else log_scale.clone()
        if self.params["kernel"] == "gaussian":
            shift = shift + 0.5 * ((x * x).sum(-1) + (y * y).sum(-1))
        la = torch.as_tensor(self.log_coefficients, device=x.device, dtype=x.dtype)
        total: torch.Tensor = torch.exp(la[0] - shift)[None, :]
        if self.params["method"] == "random":
            degrees = samples["degrees"]
            fx = self._random_features(samples, xu)
            fy = self._random_features(samples, yu)
            log_mu = torch.log(torch.as_tensor(self.measure(), device=x.device, dtype=x.dtype))
            log_w = la[degrees] - log_mu[degrees - 1]
            expo = log_w[:, None, :] + degrees[:, None, :].to(x.dtype) * log_rr[None, :, None] - shift[None, :, None]
            prod = fx * (fy.conj() if fy.is_complex() else fy)
            total = total + (torch.exp(expo) * prod).mean(-1)
        else:
            for n in self._degrees(samples):
                fx = self._degree_features(samples, n, xu)
                fy = self._degree_features(samples, n, yu)
                khat_n = (fx * (fy.conj() if fy.is_complex() else fy)).mean(-1)
                total = total + khat_n * torch.exp(la[n] + n * log_rr - shift)[None, :]
        return self._finish(total)

    def features(self, samples: Samples, u: torch.Tensor, side: str = "query") -> torch.Tensor:
        la = self.log_coefficients
        if self.params["method"] == "random":
            f = self._random_features(samples, u)
            degrees = samples["degrees"]
            w = torch.as_tensor(np.exp(0.5 * (la[1:] - np.log(self.measure()))), device=u.device, dtype=u.dtype)
            f = f * (w[degrees - 1] / math.sqrt(self.params["m"]))[:, None, :]
        else:
            parts = []
            for n in self._degrees(samples):
                fn = self._degree_features(samples, n, u)
                parts.append(fn * (math.exp(0.5 * la[n]) / math.sqrt(fn.shape[-1])))
            f = torch.cat(parts, -1)
        const = torch.full((*f.shape[:2], 1), math.exp(0.5 * la[0]), device=u.device, dtype=u.dtype).to(f.dtype)
        f = torch.cat([const, f], -1)
        if self.params["kernel"] == "gaussian":
            f = f * torch.exp(-0.5 * (u * u).sum(-1))[None, :, None].to(f.dtype)
        return self._pair_features(f, side)

    def work_per_pair(self, d: int) -> int:
        return 6 * self.params["m"] * (self.top_degree + 2) + 16

    # ------------------------------------------------------------------ closed form
    def _log_mse_stats(self, st: dp.DotStats) -> np.ndarray:
        """Optimised: [DP] eqs. 47/48 (+ eq. 55); random: the derived variance plus the truncation bias²."""
        p = self.params
        la = self.log_coefficients
        if p["method"] == "optimized":
            return dp.log_mse_optimized_maclaurin(st, la, self.plan(st.d).alloc, kernel=p["kernel"],
                                                  sketch=p["sketch"], q=p["q"], mu4=self.mu4,
                                                  variance=p["variance"], kernel_degree=p["kernel_degree"],
                                                  nu=p["nu"])
        log_var = dp.log_var_random_maclaurin(st, la, self.measure(), p["m"], q=p["q"], mu4=self.mu4,
                                              variance=p["variance"])
        kern = "exponential" if p["kernel"] == "gaussian" else p["kernel"]
        log_bias = dp.log_abs_truncation_bias(kern, st, self.top_degree, p["kernel_degree"], p["nu"])
        out = np.logaddexp(log_var, 2.0 * log_bias)
        return out - st.sum_sq if p["kernel"] == "gaussian" else out
