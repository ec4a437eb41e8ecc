"""Coupled random projections (Simplex Random Features, Reid et al. ICML 2023 = "SimRF"; derivations in the
docs: derivations/simrf-coupled-pairs).

Three parts:

* **Samplers** (torch, declared in ``rfviz.registries.COUPLINGS``; reduced coordinates as in rfviz.sampling):
  ``simplex`` (W = D·S·R, SimRF Eq. 8–9, with the O(d) product of Algorithm 1) and ``simplex_plus``
  (W = D·S'·R, S' from the norm-dependent iteration of SimRF Eq. 17). Both use blocks of d vectors with iid
  χ_d norms, stacked independently when m > d and truncated to m rows ([SimRF] §3).
* **Densities and conformity** (numpy): p(w_ij) of w_ij = ‖ω_i + ω_j‖ (Lemmas 4.1, 4.2), its CDF, the
  RF-conformity ρ(v) (Def. 3.1, Thm 4.3) and MSE ratios against iid (Fig. 6), all in log space.
* **Closed-form MSE** of the softmax-kernel trig, positive and antithetic-positive estimators under the
  orthogonal and simplex couplings, for m ≤ d and m > d (``log_relative_mse``, ``log_mse_coupled_trig``,
  ``log_mse_coupled_gerf``); each estimator class declares which couplings it covers.

The key identity (derived here from Lemma 4.2, checked against it): for a pair at fixed angle cos θ_w = c
with iid χ_d norms, w_ij² = s·χ²_{2d} with s = 1 + c·sin u independent of the χ²_{2d}, where u ∈ [0, π] has
density ∝ sin^{d−1} u. So every quantity is a one-dimensional average over u of a χ_{2d} quantity, computed
with one Gauss–Legendre rule (``_angle_nodes``): ORF is c = 0 (no average), SimRF c = −1/(d−1).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch
from scipy.special import erfcx, gammainc, gammaln, hyp1f1, ive, logsumexp, xlogy

from ..numerics import LOG2, gauss_legendre, log1mexp, log_expm1
from ..params import ParameterError, check_int
from ..registries import COUPLED_CLOSED_FORMS, COUPLINGS, COUPLINGS_WITH_DENSITY, IID, ORTHOGONAL, SIMPLEX, SIMPLEX_PLUS
from ..sampling import RandomSource, chi_square, frame_bytes, random_frame, sample_omegas

CLOSED_FORM_MSE_COUPLINGS = (IID, *COUPLED_CLOSED_FORMS)
"""Couplings whose MSE has a closed form here (``log_relative_mse``); the law of w_ij: ``COUPLINGS_WITH_DENSITY``
(from rfviz.registries; simplex_plus is weight-dependent: no closed form)."""
FEATURES = ("trig", "positive", "positive_antithetic")
"""Random features whose coupled MSE has a closed form here (``log_relative_mse``)."""
SIMPLEX_PLUS_PASSES = 5
"""Passes of the SimRF+ iteration (Eq. 17); the authors use 5, it converges after 1–2
([SimRF] §3)."""
N_ANGLE_NODES = 400
SMALL_ARG = 1.0
"""Below this value of v² (or z²) the coefficient series is used: it is free of the cancellation in ρ − e^{v²}."""
SMALL_SERIES_TERMS = 64


# ------------------------------------------------------------------------------------------- parameters
def check_coupling(coupling: str, allowed: tuple[str, ...] = tuple(COUPLINGS), what: str = "") -> str:
    """ParameterError unless ``coupling`` is one of ``allowed``."""
    if coupling not in allowed:
        tail = f" {what}" if what else ""
        raise ParameterError(f"coupling must be one of {', '.join(allowed)}{tail}, got {coupling!r}")
    return coupling


def check_coupling_dimension(coupling: str, d: int) -> int:
    """d ≥ the coupling's ``min_d`` (rfviz.registries): 1, or 2 for simplex and simplex+ (the pair cosine −1/(d−1);
    [SimRF] §3)."""
    minimum = COUPLINGS[check_coupling(coupling)].min_d
    if isinstance(d, bool) or int(d) != d or d < minimum:
        why = " (a simplex of d unit vectors needs d ≥ 2)" if minimum == 2 else ""
        raise ParameterError(f"d must be an integer in [{minimum}, inf) for coupling={coupling}{why}, got {d!r}")
    return int(d)


def pair_cosine(coupling: str, d: int) -> float | None:
    """cos θ_w between two vectors of one block: orthogonal 0, simplex −1/(d−1) (SimRF Eq. 9); None for iid."""
    check_coupling(coupling, COUPLINGS_WITH_DENSITY)
    check_coupling_dimension(coupling, d)
    return {IID: None, ORTHOGONAL: 0.0, SIMPLEX: -1.0 / (d - 1) if d > 1 else None}[coupling]


def pairs_within_blocks(m: int, d: int) -> int:
    """P = Σ_b m_b(m_b − 1): ordered coupled pairs when m vectors come in blocks of d (docs:
    derivations/simrf-coupled-pairs)."""
    blocks, rem = divmod(int(m), int(d))
    return blocks * d * (d - 1) + rem * (rem - 1)


# ------------------------------------------------------------------------------------------- samplers
def simplex_matrix(d: int) -> np.ndarray:
    """The simplex matrix S of SimRF Eq. 9 (rows unit, s_i·s_j = −1/(d−1), Σ s_i = 0, last column 0)."""
    check_coupling_dimension(SIMPLEX, d)
    ones = np.ones(d)
    ones[-1] = 0.0
    s = np.tile(-(math.sqrt(d) + 1.0) / (d - 1) ** 1.5 * ones, (d, 1))
    s[np.arange(d - 1), np.arange(d - 1)] += math.sqrt(d / (d - 1.0))
    s[-1] = ones / math.sqrt(d - 1.0)
    return s


def simplex_product(x: torch.Tensor) -> torch.Tensor:
    """y = S x along the last axis in O(d) (SimRF Algorithm 1, App. B.2.1; [SimRF] §3):
    y_d = Σ_{i<d} x_i/√(d−1), y_i = √(d/(d−1)) x_i − (√d+1)/(d−1)·y_d."""
    d = x.shape[-1]
    y_last = x[..., : d - 1].sum(-1, keepdim=True) / math.sqrt(d - 1.0)
    head = math.sqrt(d / (d - 1.0)) * x[..., : d - 1] - (math.sqrt(d) + 1.0) / (d - 1.0) * y_last
    return torch.cat([head, y_last], -1)


def simplex_plus_directions(norms: torch.Tensor, passes: int = SIMPLEX_PLUS_PASSES) -> torch.Tensor:
    """Unit directions S' (…, d, d) of SimRF+ for norms (…, d): start at S, then for i = 1..d in turn
    ŝ_i ← −Σ_{j≠i} w_j ŝ_j / ‖Σ_{j≠i} w_j ŝ_j‖ (SimRF Eq. 17), ``passes`` times. Drives Σ_i w_i ŝ_i to 0 (Eq. 16)."""
    d = norms.shape[-1]
    s = torch.as_tensor(simplex_matrix(d), dtype=norms.dtype, device=norms.device)
    s = s.expand(*norms.shape, d).clone()
    for _ in range(passes):
        s = simplex_plus_pass(norms, s)
    return s


def simplex_plus_pass(norms: torch.Tensor, dirs: torch.Tensor) -> torch.Tensor:
    """One pass of SimRF Eq. 17 over i = 1..d from unit directions ``dirs`` (…, d, d), norms (…, d); a new tensor.
    The running sum Σ_j w_j ŝ_j is updated in O(d) per i and recomputed at each pass (no round-off drift)."""
    s = dirs.clone()
    w = norms.unsqueeze(-1)
    tiny = torch.finfo(norms.dtype).tiny
    total = (w * s).sum(-2)
    for i in range(norms.shape[-1]):
        rest = total - w[..., i, :] * s[..., i, :]
        new = -rest / torch.linalg.vector_norm(rest, dim=-1, keepdim=True).clamp_min(tiny)
        s[..., i, :] = new
        total = rest + w[..., i, :] * new
    return s


def _blocks_and_frame(trials: int, m: int, d: int, dim: int, generator: RandomSource, device: torch.device,
                      dtype: torch.dtype) -> tuple[int, torch.Tensor]:
    blocks = -(-m // d)
    return blocks, random_frame(trials * blocks, d, dim, generator, device, dtype)  # (T·B, dim, d)


def sample_simplex_bytes(trials: int, m: int, d: int, dim: int, itemsize: int = 8) -> float:
    """Peak bytes of ``sample_simplex``: the blocks' frames, their simplex product and its reshaped copy, the χ²
    lengths and the output.

    Parameters
    ----------
    trials : int
        Independent draws (the engine's trials of one block).
    m : int
        Features per draw.
    d : int
        Input dimension.
    dim : int
        Columns drawn per feature (2 for a pair's two projections).
    itemsize : int, optional
        Bytes per number (8 for float64).

    Returns
    -------
    float
        Peak bytes of the draw.

    Examples
    --------
    >>> sample_simplex_bytes(1, 4, 1000, 2) > 3 * 8 * 2 * 1000
    True
    """
    rows = trials * -(-m // d)
    return frame_bytes(rows, d, dim, itemsize) + 2.0 * itemsize * rows * d * dim + float(trials) * m * (
        itemsize * (dim + 1) + 16.0)


def sample_simplex_plus_bytes(trials: int, m: int, d: int, dim: int, itemsize: int = 8) -> float:
    """Peak bytes of ``sample_simplex_plus``: the frames, every block's d norms, its directions (d × dim), one chunk
    of S' (``SIMPLEX_PLUS_CHUNK``, four d × d copies live in a pass) and the output.

    Parameters
    ----------
    trials : int
        Independent draws (the engine's trials of one block).
    m : int
        Features per draw.
    d : int
        Input dimension.
    dim : int
        Columns drawn per feature (2 for a pair's two projections).
    itemsize : int, optional
        Bytes per number (8 for float64).

    Returns
    -------
    float
        Peak bytes of the draw.

    Examples
    --------
    >>> sample_simplex_plus_bytes(1, 4, 100, 2) > 4 * 8 * 100 * 100
    True
    """
    rows = trials * -(-m // d)
    step = min(rows, max(1, SIMPLEX_PLUS_CHUNK // (d * d)))
    return (frame_bytes(rows, d, dim, itemsize) + itemsize * rows * d * (3.0 + 2 * dim)
            + 8.0 * (4 * step + 1) * d * d + float(trials) * m * (itemsize * (2 * dim + 3) + 16.0))


def sample_simplex(trials: int, m: int, d: int, dim: int, generator: RandomSource, device: torch.device,
                   dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """SimRF blocks W = D S R (SimRF Eq. 8): ω_i = w_i Rᵀs_i, w_i ~ χ_d iid, R Haar. Reduced coordinates of
    Rᵀs_i are frame·s_i with frame the first ``dim`` rows of a Haar matrix: O(d·dim) per block via Algorithm 1."""
    check_coupling_dimension(SIMPLEX, d)
    blocks, frame = _blocks_and_frame(trials, m, d, dim, generator, device, dtype)
    dirs = simplex_product(frame).transpose(-1, -2).reshape(trials, blocks * d, dim)[:, :m]
    sq = chi_square((trials, m), d, generator, device, dtype)
    return dirs * sq.sqrt().unsqueeze(-1), sq


SIMPLEX_PLUS_CHUNK = 2**22
"""Entries of S' (blocks × d × d) built at once by the SimRF+ sampler (bounds its memory at 32 MiB in float64)."""


def sample_simplex_plus(trials: int, m: int, d: int, dim: int, generator: RandomSource, device: torch.device,
                        dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """SimRF+ blocks W = D S' R (SimRF §3.2): the d norms of each block are drawn first (iid χ_d), S' is
    computed from them by Eq. 17, then a fresh Haar R rotates the block, which keeps every ω_i ~ N(0, I_d)
    marginally (unbiased). Weight-dependent but data-independent: it needs only the norms, so it
    fits the sampler protocol. Unlike the authors' code, every block draws its own norms and S' ([SimRF] §3).
    Cost O(passes·d²) per block (a python loop over i), so it is the slow coupling at large d."""
    check_coupling_dimension(SIMPLEX_PLUS, d)
    blocks, frame = _blocks_and_frame(trials, m, d, dim, generator, device, dtype)
    sq = chi_square((trials * blocks, d), d, generator, device, dtype)
    norms = sq.sqrt()
    dirs = torch.empty((trials * blocks, d, dim), device=device, dtype=dtype)
    step = max(1, SIMPLEX_PLUS_CHUNK // (d * d))
    for start in range(0, trials * blocks, step):
        sl = slice(start, start + step)
        dirs[sl] = simplex_plus_directions(norms[sl]) @ frame[sl].transpose(-1, -2)
    dirs = dirs.reshape(trials, blocks * d, dim)[:, :m]
    sq = sq.reshape(trials, blocks * d)[:, :m]
    return dirs * sq.sqrt().unsqueeze(-1), sq


def sample_pair_sums(coupling: str, d: int, n: int, seed: int = 0) -> np.ndarray:
    """n independent draws of w_ij = ‖ω_1 + ω_2‖ (the first two vectors of a block) from the registered
    full-vector sampler (dim = d): the sampled counterpart of ``density_wij``. O(n·d³) for coupled blocks."""
    check_coupling(coupling)
    check_coupling_dimension(coupling, d)
    if d < 2:
        raise ParameterError(f"d must be an integer in [2, inf) to form a pair inside one block, got {d}")
    gen = torch.Generator().manual_seed(int(seed))
    w, _ = sample_omegas(coupling, int(n), 2, d, d, gen, torch.device("cpu"), torch.float64)
    return torch.linalg.vector_norm(w[:, 0] + w[:, 1], dim=-1).numpy()


# ------------------------------------------------------------------------------------- angle quadrature
@lru_cache(maxsize=64)
def _angle_nodes(d: int, n: int = N_ANGLE_NODES) -> tuple[np.ndarray, np.ndarray]:
    """(sin u_j, log weights) for E[g(sin u)] with u ∝ sin^{d−1} u on [0, π] (by symmetry on [0, π/2]).

    Gauss–Legendre on [0, π/2]: its nodes cluster at π/2, where the weight concentrates for large d.
    Weights are kept as logs (sin^{1023} u underflows)."""
    x, wt = gauss_legendre(n)
    u = (x + 1.0) * np.pi / 4.0
    logw = (d - 1) * np.log(np.sin(u)) + np.log(wt)
    logw -= logsumexp(logw)
    s = np.sin(u)
    s.setflags(write=False)
    logw.setflags(write=False)
    return s, logw


def kappa(d: int) -> float:
    """κ_d = E[sin u] = Γ((d+1)/2)² / (Γ(d/2)Γ(d/2+1)) ([SimRF] §5.1)."""
    return float(np.exp(2 * gammaln((d + 1) / 2) - gammaln(d / 2) - gammaln(d / 2 + 1)))


def small_v_ratio_simplex(d: int) -> float:
    """lim_{v→0} MSE_Sim/MSE_IID for m = d: 1 − κ_d ≈ 1/(2d) ([SimRF] §5.1; the paper's 0.0078 at d = 64)."""
    check_coupling_dimension(SIMPLEX, d)
    return -math.expm1(math.log(kappa(d)))


def mean_wij_sq(d: int, coupling: str) -> float:
    """E[w_ij²] = 2d(1 + κ_d cos θ_w) ([SimRF] eq. 20: 2d + 4cΓ((d+1)/2)²/Γ(d/2)²); iid and ORF: 2d."""
    c = pair_cosine(coupling, d)
    return 2.0 * d * (1.0 + (c or 0.0) * kappa(d))


# ----------------------------------------------------------------------------------------- densities
def _log_chi_density(t: np.ndarray, k: int) -> np.ndarray:
    """log density of χ_k at t ≥ 0."""
    return xlogy(k - 1, t) - 0.5 * t * t - (k / 2 - 1) * LOG2 - gammaln(k / 2)


def log_density_wij(w: np.ndarray | float, d: int, coupling: str) -> np.ndarray:
    """log p(w_ij), w_ij = ‖ω_i + ω_j‖, for two vectors of one block (stable for d up to 1024 and beyond):

    * iid: w_ij ~ √2·χ_d (Lemma 4.1, Eq. 18);
    * orthogonal: χ_{2d} (Lemma 4.2 with cos θ_w = 0, App. Eq. 58);
    * simplex (cos θ_w = −1/(d−1)): Lemma 4.2 Eq. 20 written as the scale mixture p(w) = E_u[p_{χ_2d}(w/√s)/√s],
      s = 1 + cos θ_w·sin u (module docstring); d = 2 (antithetic directions, w_ij = |w_1 − w_2|) in closed form,
      p(w) = e^{−w²/2}[w/2 + (√π/2)(1 − w²/2)·erfcx(w/2)] (derived here: the difference of two Rayleigh variables).
    """
    w = np.asarray(w, dtype=float)
    if np.any(~np.isfinite(w)) or np.any(w < 0):
        raise ParameterError("w must be finite numbers in [0, inf)")
    c = pair_cosine(coupling, d)
    if coupling == IID:
        return _log_chi_density(w / math.sqrt(2.0), d) - 0.5 * LOG2
    if coupling == ORTHOGONAL:
        return _log_chi_density(w, 2 * d)
    if d == 2:
        a = w / 2.0
        bracket = np.where(a < 1e3, a + 0.5 * np.sqrt(np.pi) * (1.0 - 2.0 * a * a) * erfcx(a),
                           1.0 / np.maximum(a, 1e3) - 1.0 / np.maximum(a, 1e3) ** 3)
        with np.errstate(divide="ignore"):
            return -0.5 * w * w + np.log(np.maximum(bracket, 0.0))
    s, logw = _angle_nodes(d)
    scale = 1.0 + c * s
    flat = w.reshape(-1, 1)
    terms = logw + _log_chi_density(flat / np.sqrt(scale), 2 * d) - 0.5 * np.log(scale)
    return logsumexp(terms, axis=-1).reshape(w.shape)


def density_wij(w: np.ndarray | float, d: int, coupling: str) -> np.ndarray:
    """p(w_ij) (see ``log_density_wij``); SimRF Fig. 5."""
    return np.exp(log_density_wij(w, d, coupling))


def cdf_wij(w: np.ndarray | float, d: int, coupling: str) -> np.ndarray:
    """P(w_ij ≤ w): iid P(χ²_d ≤ w²/2), orthogonal P(χ²_{2d} ≤ w²), simplex E_u[P(χ²_{2d} ≤ w²/s)]
    (scale mixture of Lemma 4.2); d = 2 simplex: 1 − e^{−w²/2}[1 − (√π w/2)·erfcx(w/2)] (derived, = ∫p)."""
    w = np.asarray(w, dtype=float)
    if np.any(~np.isfinite(w)) or np.any(w < 0):
        raise ParameterError("w must be finite numbers in [0, inf)")
    c = pair_cosine(coupling, d)
    if coupling == IID:
        return gammainc(d / 2, w * w / 4)
    if coupling == ORTHOGONAL:
        return gammainc(d, w * w / 2)
    if d == 2:
        return -np.expm1(-0.5 * w * w) + np.exp(-0.5 * w * w) * 0.5 * np.sqrt(np.pi) * w * erfcx(w / 2)
    s, logw = _angle_nodes(d)
    flat = w.reshape(-1, 1)
    return (np.exp(logw) * gammainc(d, flat * flat / (2 * (1.0 + c * s)))).sum(-1).reshape(w.shape)


def f_penalty(w: np.ndarray | float, v: float, d: int) -> np.ndarray:
    """f(w, v) = 0F1(; d/2; v²w²/4) = direction average of e^{ω_ij·v} (App. Eqs. 31–33, [SimRF] eq. 10; Fig. 5),
    as a log-stable evaluation: Γ(d/2)(vw/2)^{1−d/2} I_{d/2−1}(vw)."""
    t = np.asarray(w, dtype=float) * float(v)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.exp(gammaln(d / 2) + (1 - d / 2) * np.log(t / 2) + np.log(ive(d / 2 - 1, t)) + t)
    return np.where(t > 0, out, 1.0)


# --------------------------------------------------------------------------------- moments and ρ
def _log_c(k: np.ndarray, d: int) -> np.ndarray:
    """log c_k of ρ_ORF = Σ_k c_k v^{2k}: c_k = Γ(d/2)Γ(k+d)/(Γ(d)Γ(k+d/2)2^k k!) (Thm 4.3 Eq. 23)
    = Π_{j<k} (d+j)/(d+2j) / k!, summed as log1p terms (no cancellation of large log-gammas at d = 1024)."""
    j = np.arange(int(np.max(k)) + 1)
    log_prod = np.concatenate([[0.0], np.cumsum(np.log1p(-j / (d + 2.0 * j)))])
    return log_prod[k] - gammaln(k + 1)


def _fast_logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    """log Σ e^a along ``axis`` for finite-max rows (several times faster than scipy's for big tables)."""
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(a - top), axis=axis)) + np.squeeze(top, axis=axis)


@lru_cache(maxsize=64)
def _log_series_coefficients(d: int, cosines: tuple[float, ...], terms: int) -> np.ndarray:
    """log(c_k M̄_k), k < terms, where M̄_k = mean over c in ``cosines`` of E_u[(1 + c sin u)^k]
    ([SimRF] eq. 20; ρ_θ(v) = Σ_k c_k M_k v^{2k} is Eq. 21 summed in k)."""
    s, logw = _angle_nodes(d)
    k = np.arange(terms)
    per_c = []
    for c in cosines:
        with np.errstate(divide="ignore"):
            per_c.append(_fast_logsumexp(logw[None, :] + k[:, None] * np.log1p(c * s)[None, :], axis=1))
    return _log_c(k, d) + logsumexp(np.stack(per_c), axis=0) - math.log(len(cosines))


def _terms_needed(x_max: float, cosines: tuple[float, ...]) -> int:
    """Series length for Σ_k c_k M_k x^k: the terms peak at k ≤ (1 + max|c|)·x (c_k ≤ 1/k!, M_k ≤ (1 + max|c|)^k)
    with a Poisson-like spread; rounded up to a multiple of 256 so that the cached tables are reused."""
    peak = (1.0 + max(abs(c) for c in cosines)) * x_max
    need = peak + 12.0 * math.sqrt(peak + 1.0) + 64.0
    return int(256 * math.ceil(need / 256))


def _log_rho_series(x: np.ndarray, d: int, cosines: tuple[float, ...]) -> np.ndarray:
    """log Σ_k c_k M̄_k x^k for x = v² ≥ 0 (positive terms, no overflow; chunked by the needed length)."""
    x = np.asarray(x, dtype=float)
    flat_x = x.ravel()
    flat_out = np.zeros_like(flat_x)
    order = np.argsort(flat_x)
    for part in np.array_split(order, max(1, len(order) // 512)):
        if part.size == 0:
            continue
        xs = flat_x[part]
        terms = _terms_needed(float(xs.max()), cosines)
        lc = _log_series_coefficients(d, cosines, terms)
        k = np.arange(terms)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = lc[None, :] + np.where(k[None, :] > 0, k[None, :] * np.log(xs)[:, None], 0.0)
        flat_out[part] = _fast_logsumexp(t, axis=1)
    return flat_out.reshape(x.shape)


def log_conformity(v: np.ndarray | float, d: int, coupling: str) -> np.ndarray:
    """log ρ(v): RF-conformity of one coupled pair (Def. 3.1 Eq. 10): iid v² (Lemma 4.1 Eq. 19);
    orthogonal log 1F1(d; d/2; v²/2) (Thm 4.3 Eq. 23); simplex E_u[1F1(d; d/2; v²(1 − sin u/(d−1))/2)]
    (Eq. 24 in the stable form of docs: derivations/simrf-coupled-pairs). Summed as Σ_k c_k M_k v^{2k} in log space
    (v up to 100s)."""
    v = np.asarray(v, dtype=float)
    c = pair_cosine(coupling, d)
    if c is None:
        return v * v
    return _log_rho_series(v * v, d, (c,))


def conformity(v: np.ndarray | float, d: int, coupling: str) -> np.ndarray:
    """ρ(v) = e^{log_conformity} (inf where it overflows float64)."""
    with np.errstate(over="ignore"):
        return np.exp(log_conformity(v, d, coupling))


def _signed_log_add(la: np.ndarray, sa: np.ndarray, lb: np.ndarray, sb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log|a + b|, sign(a + b)) from (log|a|, sign a), (log|b|, sign b); zero is (-inf, 0)."""
    la, sa, lb, sb = np.broadcast_arrays(*(np.asarray(t, dtype=float) for t in (la, sa, lb, sb)))
    big = la >= lb
    hi, lo = np.where(big, la, lb), np.where(big, lb, la)
    s_hi, s_lo = np.where(big, sa, sb), np.where(big, sb, sa)
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(np.isfinite(lo), hi - lo, np.inf)
        same = hi + np.log1p(np.exp(-diff))
        opposite = hi + log1mexp(diff)
    out = np.where((s_lo == 0) | ~np.isfinite(lo), hi, np.where(s_hi == s_lo, same, opposite))
    sign = np.where(np.isneginf(out), 0.0, s_hi)
    return out, sign


def _small_series(x: np.ndarray, d: int, cosines: tuple[float, ...], first: int) -> np.ndarray:
    """Σ_{k≥first} x^{k−first}(c_k M̄_k − 1/k!) for |x| ≤ 1 (cancellation-free coefficients via expm1;
    ref checks ``rho_minus_exp_series``). The k = 1 coefficient is exact: mean(cosines)·κ_d."""
    k = np.arange(SMALL_SERIES_TERMS)
    lc = _log_series_coefficients(d, cosines, SMALL_SERIES_TERMS)
    coef = np.exp(-gammaln(k + 1)) * np.expm1(lc + gammaln(k + 1))
    coef[0] = 0.0
    coef[1] = float(np.mean(cosines)) * kappa(d)
    kk = k[first:] - first
    return (np.asarray(x, dtype=float)[..., None] ** kk * coef[first:]).sum(-1)


def _log_delta(v2: np.ndarray, d: int, cosines: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(log|δ|, sign δ) with δ = ρ̄(v)e^{−v²} − 1, ρ̄ the conformity averaged over ``cosines`` (large-v branch)."""
    t = _log_rho_series(v2, d, cosines) - v2
    with np.errstate(divide="ignore"):
        mag = np.where(t > 0, log_expm1(np.abs(t)), log1mexp(np.abs(t)))
    return mag, np.sign(t)


def _log_bracket_positive(v2: np.ndarray, d: int, m: int, cosines: tuple[float, ...] | None) -> np.ndarray:
    """log[m(e^{v²} − 1) + P(ρ e^{−v²} − 1)] (Thm 3.2 App. Eq. 34 generalised to blocks, docs:
    derivations/simrf-coupled-pairs)."""
    v2 = np.asarray(v2, dtype=float)
    base = math.log(m) + log_expm1(v2)
    pairs = pairs_within_blocks(m, d) if cosines is not None else 0
    if pairs == 0:
        return base
    out = np.empty_like(v2)
    small = v2 <= SMALL_ARG
    if np.any(small):
        x = v2[small]  # bracket = v²·[m·expm1(v²)/v² + P e^{−v²} Σ_{k≥1} v^{2(k−1)}(c_k M_k − 1/k!)]
        e1 = np.where(x > 0, np.expm1(x) / np.where(x > 0, x, 1.0), 1.0)
        inner = m * e1 + pairs * np.exp(-x) * _small_series(x, d, cosines, 1)
        with np.errstate(divide="ignore"):
            out[small] = np.log(x) + np.log(inner)
    if np.any(~small):
        ld, sd = _log_delta(v2[~small], d, cosines)
        out[~small] = _signed_log_add(base[~small], 1.0, math.log(pairs) + ld, sd)[0]
    return out


def _log_bracket_antithetic(v2: np.ndarray, d: int, m: int, cosines: tuple[float, ...] | None) -> np.ndarray:
    """log[m·½e^{v²}(1 − e^{−v²})² + P(C e^{−v²} − 1)], C = E[cosh(ω_i·v)cosh(ω_j·v)] = ½[ρ_c(v) + ρ_{−c}(v)]
    (derived here: cosh a cosh b = ½[cosh(a+b) + cosh(a−b)], and ω_i − ω_j is a pair at cosine −c)."""
    v2 = np.asarray(v2, dtype=float)
    base = math.log(m) - LOG2 + v2 + 2.0 * log1mexp(v2)
    pairs = pairs_within_blocks(m, d) if cosines is not None else 0
    if pairs == 0:
        return base
    sym = tuple(sorted({*cosines, *(-c for c in cosines)}))
    out = np.empty_like(v2)
    small = v2 <= SMALL_ARG
    if np.any(small):
        x = v2[small]  # bracket = v⁴·[m·½e^{−v²}(expm1(v²)/v²)² + P e^{−v²} Σ_{k≥2} v^{2(k−2)}(c_k M̄_k − 1/k!)]
        e1 = np.where(x > 0, np.expm1(x) / np.where(x > 0, x, 1.0), 1.0)
        inner = m * 0.5 * np.exp(-x) * e1 * e1 + pairs * np.exp(-x) * _small_series(x, d, sym, 2)
        with np.errstate(divide="ignore"):
            out[small] = 2.0 * np.log(x) + np.log(inner)
    if np.any(~small):
        ld, sd = _log_delta(v2[~small], d, sym)
        out[~small] = _signed_log_add(base[~small], 1.0, math.log(pairs) + ld, sd)[0]
    return out


KUMMER_ODD_LIMIT = 60.0
"""Odd d: the Kummer series is used for x below this (≤ 213 terms); above, scipy's hyp1f1 (accurate to ~1e-13
absolute there, checked against mpmath), since for odd d the function decays only like x^{−d}."""
N_TRIG_NODES = 96


@lru_cache(maxsize=64)
def _kummer_table(d: int, terms: int) -> tuple[np.ndarray, np.ndarray]:
    """(log|(−d/2)_k/((d/2)_k k!)|, sign) for k < terms (the terms vanish from k = d/2 + 1 on for even d)."""
    h = d / 2.0
    j = np.arange(terms - 1, dtype=float)
    with np.errstate(divide="ignore"):
        log_poch = np.concatenate([[0.0], np.cumsum(np.log(np.abs(j - h)) - np.log(h + j))])
    sign = np.concatenate([[1.0], np.cumprod(np.sign(j - h))])
    return log_poch - gammaln(np.arange(terms) + 1.0), sign


def hyp1f1_d_neg(x: np.ndarray, d: int) -> np.ndarray:
    """1F1(d; d/2; −x) for x ≥ 0 via Kummer, e^{−x}·Σ_k (−d/2)_k/(d/2)_k x^k/k!: each term times e^{−x} is at most
    x^k e^{−x}/k! ≤ 1 in size (|(−h)_k| ≤ (h)_k), so the absolute error is ~1e-16 per term, there is no overflow,
    and terms beyond the Poisson(x) tail k > x + 12√x + 60 are dropped (cf. rfviz.maths.crt, CRT §3.9). Even d: a
    polynomial (d/2 + 1 terms). Odd d and x ≥ KUMMER_ODD_LIMIT: scipy's hyp1f1."""
    x = np.asarray(x, dtype=float)
    flat = x.ravel()
    out = np.zeros(flat.shape)
    far = (d % 2 == 1) & (flat >= KUMMER_ODD_LIMIT)
    if np.any(far):
        out[far] = hyp1f1(d, d / 2.0, -flat[far])
    idx = np.flatnonzero(~far)
    idx = idx[np.argsort(flat[idx])]
    for part in np.array_split(idx, max(1, idx.size // 4096)):
        if part.size == 0:
            continue
        xs = flat[part]
        top = float(xs.max())
        terms = int(top + 12.0 * math.sqrt(top) + 60.0)
        if d % 2 == 0:
            terms = min(terms, d // 2 + 1)
        lc, sign = _kummer_table(d, terms)
        k = np.arange(terms)
        with np.errstate(divide="ignore", invalid="ignore"):
            lx = np.log(np.where(xs > 0, xs, 1.0))
            t = lc + np.where((k > 0) & (xs[:, None] > 0), k * lx[:, None], np.where(k > 0, -np.inf, 0.0)) \
                - xs[:, None]
        out[part] = np.sum(np.where(sign != 0, sign * np.exp(t), 0.0), axis=-1)
    return out.reshape(x.shape)


def trig_pair_product(z2: np.ndarray, d: int, coupling: str) -> np.ndarray:
    """E[a_i a_j], a_i = cos(ω_i·z), for a coupled pair: ½[R(c) + R(−c)], R(c) = E_u[1F1(d; d/2; −z²(1+c sin u)/2)]
    (ORF: 1F1(d; d/2; −z²/2), App. A.8 Eq. 74 with v → iz; simplex: docs: derivations/simrf-coupled-pairs, an
    extension not in the paper).
    |·| ≤ 1; absolute accuracy ~1e-15 (``hyp1f1_d_neg``; tested against mpmath), and relative accuracy for
    orthogonal values below 1e-8 (scipy), which the sign changes of the Thm 4.5 gap (z_crit) need."""
    z2 = np.asarray(z2, dtype=float)
    c = pair_cosine(coupling, d)
    if c is None:
        return np.exp(-z2)
    if c == 0.0:  # one evaluation per point: tiny values get scipy's relative accuracy (z_crit of [SimRF] Thm 4.5)
        out = hyp1f1_d_neg(z2 / 2.0, d)
        tiny = np.abs(out) < 1e-8
        out[tiny] = hyp1f1(d, d / 2.0, -z2[tiny] / 2.0)
        return out
    s, logw = _angle_nodes(d, N_TRIG_NODES)
    keep = logw > -45.0  # nodes of weight < 3e-20 cannot change a quantity bounded by 1
    s, wts = s[keep], np.exp(logw[keep])
    wts = wts / wts.sum()
    flat = z2.reshape(-1, 1)
    total = np.zeros(flat.shape[0])
    for cc in (c, -c):
        total += 0.5 * (wts * hyp1f1_d_neg(flat * (1.0 + cc * s) / 2.0, d)).sum(-1)
    return total.reshape(z2.shape)


def _log_bracket_trig(z2: np.ndarray, d: int, m: int, coupling: str) -> np.ndarray:
    """log[m(1 − e^{−z²})²/2 + P(E[a_i a_j] − e^{−z²})] (App. Eq. 74 generalised to blocks; no e^{−2|x|²} factor)."""
    z2 = np.asarray(z2, dtype=float)
    base = math.log(m) - LOG2 + 2.0 * log1mexp(z2)
    pairs = pairs_within_blocks(m, d) if coupling != IID else 0
    if pairs == 0:
        return base
    c = pair_cosine(coupling, d)
    sym = tuple(sorted({c, -c}))
    out = np.empty_like(z2)
    small = z2 <= SMALL_ARG
    with np.errstate(divide="ignore"):
        if np.any(small):
            x = z2[small]  # bracket = z⁴·[m·½(−expm1(−z²)/z²)² + P Σ_{k≥2} (−z²)^{k−2}(c_k M̄_k − 1/k!)]
            e1 = np.where(x > 0, -np.expm1(-x) / np.where(x > 0, x, 1.0), 1.0)
            inner = m * 0.5 * e1 * e1 + pairs * _small_series(-x, d, sym, 2)
            out[small] = 2.0 * np.log(x) + np.log(np.maximum(inner, 0.0))
        if np.any(~small):
            x = z2[~small]
            gap = trig_pair_product(x, d, coupling) - np.exp(-x)
            out[~small] = np.log(np.maximum(m * 0.5 * (-np.expm1(-x)) ** 2 + pairs * gap, 0.0))
    return out


def log_abs_relative_pair_covariance(sign: int, arg2: np.ndarray | float, d: int, coupling: str
                                     ) -> tuple[np.ndarray, np.ndarray]:
    """(log|relCov|, sign relCov) of one coupled pair of GERF features with real A (any A: the A-dependence cancels),
    relCov = Cov(Y_i, Y_j)/K²:

    * s = +1 (positive, OPRF, real-A GERF; arg2 = Z = |x+y|²): relCov = ρ_c(√Z)e^{−Z} − 1 (SimRF Def. 3.1);
    * s = −1 (trig, real-A GERF; arg2 = W = |x−y|²): relCov = e^{W}(½[R(c) + R(−c)] − e^{−W}) (docs:
    derivations/simrf-coupled-pairs).

    Orthogonal (c = 0) is [CRT] Thm 4.1. For c ≠ 0 (derived here, MC-verified in tests): with
    |ω_i|² + |ω_j|² = R² ~ χ²_{2d} and |ω_i ± ω_j|² = R²(1 ± c sin u), E_R[e^{2AR²}·0F1(; d/2; B²Z R²(1 ± c sin u)/4)]
    = (1−4A)^{−d} 1F1(d; d/2; B²Z(1 ± c sin u)/(2(1−4A))), and B² = s(1−4A), D⁴ = (1−4A)^d remove A."""
    a = np.asarray(arg2, dtype=float)
    c = pair_cosine(coupling, d)
    if c is None:
        return np.full(a.shape, -np.inf), np.zeros(a.shape)
    small = a <= SMALL_ARG
    mag, sgn = np.empty(a.shape), np.empty(a.shape)
    with np.errstate(divide="ignore"):
        if sign == 1:
            if np.any(small):  # δ = e^{−Z} Z Σ_{k≥1} Z^{k−1}(c_k M_k − 1/k!)
                series = _small_series(a[small], d, (c,), 1)
                mag[small] = np.log(a[small]) - a[small] + np.log(np.abs(series))
                sgn[small] = np.sign(series) * (a[small] > 0)
            if np.any(~small):
                mag[~small], sgn[~small] = _log_delta(a[~small], d, (c,))
        else:
            sym = tuple(sorted({c, -c}))
            if np.any(small):  # e^{W}·W² Σ_{k≥2} (−W)^{k−2}(c_k M̄_k − 1/k!)
                series = _small_series(-a[small], d, sym, 2)
                mag[small] = 2.0 * np.log(a[small]) + a[small] + np.log(np.abs(series))
                sgn[small] = np.sign(series) * (a[small] > 0)
            if np.any(~small):
                gap = trig_pair_product(a[~small], d, coupling) - np.exp(-a[~small])
                mag[~small] = a[~small] + np.log(np.abs(gap))
                sgn[~small] = np.sign(gap)
    return mag, sgn


# ------------------------------------------------------------------------------- SimRF+ (semi-analytic)
def conformity_of_vectors(vectors: np.ndarray, v: float) -> np.ndarray:
    """Rotation-averaged conformity of given vectors (…, n, d): mean_{i≠j} 0F1(; d/2; v²‖w_i + w_j‖²/4)
    (SimRF Def. 3.1 with the Haar rotation averaged analytically; the quantity of Fig. 4)."""
    w = np.asarray(vectors, dtype=float)
    n, d = w.shape[-2], w.shape[-1]
    sums = np.linalg.norm(w[..., :, None, :] + w[..., None, :, :], axis=-1)
    off = ~np.eye(n, dtype=bool)
    return f_penalty(sums[..., off], v, d).mean(-1)


def conformity_iterations(norms: np.ndarray, v: float, passes: int = 15, iid_draws: int = 100,
                          seed: int = 0) -> dict[str, np.ndarray | float]:
    """SimRF Fig. 4 for one draw of norms (d of them): conformity of ORF (identity directions), SimRF (S),
    SimRF+ after 0..passes passes of Eq. 17 (pass 0 = SimRF), and mean ± sd over ``iid_draws`` sets of independent
    uniform directions (IIDRF). Norms fixed, directions vary ([SimRF] Fig. 4: 1.8098 → 1.7989 after one pass)."""
    norms = np.asarray(norms, dtype=float)
    d = norms.size
    check_coupling_dimension(SIMPLEX_PLUS, d)
    gen = torch.Generator().manual_seed(int(seed))
    g = torch.randn((int(iid_draws), d, d), generator=gen, dtype=torch.float64).numpy()
    iid = conformity_of_vectors(norms[:, None] * g / np.linalg.norm(g, axis=-1, keepdims=True), v)
    t = torch.as_tensor(norms, dtype=torch.float64)
    plus = [conformity_of_vectors(norms[:, None] * simplex_matrix(d), v)]
    dirs = torch.as_tensor(simplex_matrix(d))
    for _ in range(passes):  # one pass at a time, continuing from the previous directions
        dirs = simplex_plus_pass(t, dirs)
        plus.append(conformity_of_vectors(norms[:, None] * dirs.numpy(), v))
    return {"iid_mean": float(iid.mean()), "iid_sd": float(iid.std(ddof=1)) if iid.size > 1 else 0.0,
            ORTHOGONAL: float(conformity_of_vectors(np.diag(norms), v)),
            SIMPLEX: float(plus[0]), SIMPLEX_PLUS: np.array(plus, dtype=float)}


def simplex_plus_relative_mse(v: float, d: int, m: int | None = None, draws: int = 20000,
                              seed: int = 0) -> tuple[float, float]:
    """(MSE/K², its standard error) of positive features under SimRF+ with full blocks (m a multiple of d):
    semi-analytic, MSE_Sim + (P/m²)e^{−v²}·E_norms[ρ_{Sim+}(norms) − ρ_Sim(norms)], a Monte Carlo over the χ_d
    norms only with the simplex as control variate (no closed form exists)."""
    m = d if m is None else int(m)
    check_coupling_dimension(SIMPLEX_PLUS, d)
    if m < d or m % d:
        raise ParameterError(f"m must be a positive multiple of d = {d} for the SimRF+ semi-analytic MSE, got {m}")
    gen = torch.Generator().manual_seed(int(seed))
    norms = chi_square((int(draws), d), d, gen, torch.device("cpu"), torch.float64).sqrt()
    plus = norms.unsqueeze(-1) * simplex_plus_directions(norms)
    plain = norms.unsqueeze(-1) * torch.as_tensor(simplex_matrix(d))
    diff = conformity_of_vectors(plus.numpy(), v) - conformity_of_vectors(plain.numpy(), v)
    scale = pairs_within_blocks(m, d) / m**2 * math.exp(-v * v)
    base = float(np.exp(log_relative_mse("positive", v * v, d, m, SIMPLEX)))
    return base + scale * float(diff.mean()), scale * float(diff.std(ddof=1)) / math.sqrt(len(diff))


# ----------------------------------------------------------------------------------- MSE and ratios
def _cosines(coupling: str, d: int) -> tuple[float, ...] | None:
    c = pair_cosine(coupling, d)
    return None if c is None else (c,)


def log_relative_mse(features: str, arg2: np.ndarray | float, d: int, m: int, coupling: str) -> np.ndarray:
    """log(MSE/K²) for the softmax (or Gaussian) kernel; the same for both kernels (docs:
    derivations/simrf-coupled-pairs).

    ``features``: ``positive`` (arg2 = v² = |x+y|²), ``positive_antithetic`` (v²) or ``trig`` (arg2 = z² = |x−y|²;
    relative to K_SM² the trig MSE carries an extra e^{z²}, see ``log_mse_coupled_trig``)."""
    check_coupling(coupling, CLOSED_FORM_MSE_COUPLINGS, "for a closed-form MSE")
    d = check_coupling_dimension(coupling, d)
    m = check_int("m", m)
    a = np.asarray(arg2, dtype=float)
    if features == "positive":
        out = _log_bracket_positive(a, d, m, _cosines(coupling, d))
    elif features == "positive_antithetic":
        out = _log_bracket_antithetic(a, d, m, _cosines(coupling, d))
    elif features == "trig":
        out = _log_bracket_trig(a, d, m, coupling) + a
    else:
        raise ParameterError(f"features must be one of {', '.join(FEATURES)}, got {features!r}")
    return out - 2.0 * math.log(m)


def mse_ratio_vs_iid(features: str, arg2: np.ndarray | float, d: int, m: int, coupling: str) -> np.ndarray:
    """MSE_coupling/MSE_iid at the same pair (SimRF Fig. 6 for positive features; Thm 4.5/Cor. 4.6 for trig)."""
    with np.errstate(invalid="ignore"):
        return np.exp(log_relative_mse(features, arg2, d, m, coupling) - log_relative_mse(features, arg2, d, m, IID))


def log_mse_coupled_trig(xx: np.ndarray, yy: np.ndarray, delta2: np.ndarray, d: int, m: int,
                         coupling: str) -> np.ndarray:
    """log MSE of the trig estimator (softmax kernel) under ``coupling``, m ≤ d or m > d (blocks):
    e^{|x|²+|y|²}/m²·[m(1 − e^{−z²})²/2 + P(E[a_i a_j] − e^{−z²})], z = |x − y|, P = Σ_b m_b(m_b − 1)
    ([SimRF] App. Eq. 74, Thm 4.5). Positive and antithetic positive features: ``log_relative_mse`` + 2x·y
    ([SimRF] Thm 3.2, App. Eq. 34). Gaussian kernel: the caller multiplies by e^{−|x|²−|y|²}."""
    check_coupling(coupling, CLOSED_FORM_MSE_COUPLINGS, "for a closed-form MSE")
    d = check_coupling_dimension(coupling, d)
    m = check_int("m", m)
    return xx + yy + _log_bracket_trig(np.asarray(delta2, float), d, m, coupling) - 2.0 * math.log(m)


def log_mse_coupled_gerf(log_mse_iid: np.ndarray, xy: np.ndarray, sign: int, arg2: np.ndarray, d: int, m: int,
                         coupling: str) -> np.ndarray:
    """log MSE (softmax kernel) of a real GERF ([CRT] eq. 5, sign s, real A) under ``coupling``:
    MSE_iid + (P/m²)·SM²·relCov_c ([CRT] §3.9 structure with the [SimRF] pair covariance
    ``log_abs_relative_pair_covariance``), arg2 = |x+y|² (s = +1) or |x−y|² (s = −1)."""
    d = check_coupling_dimension(coupling, d)
    pairs = pairs_within_blocks(m, d)
    if pairs == 0:
        return log_mse_iid
    mag, sgn = log_abs_relative_pair_covariance(sign, arg2, d, coupling)
    log_cov = 2.0 * xy + mag + math.log(pairs) - 2.0 * math.log(m)
    return _signed_log_add(log_mse_iid, np.ones_like(log_mse_iid), log_cov, sgn)[0]


__all__ = [
    "CLOSED_FORM_MSE_COUPLINGS",
    "COUPLINGS_WITH_DENSITY",
    "cdf_wij",
    "check_coupling_dimension",
    "conformity",
    "conformity_iterations",
    "conformity_of_vectors",
    "density_wij",
    "f_penalty",
    "hyp1f1_d_neg",
    "kappa",
    "log_abs_relative_pair_covariance",
    "log_conformity",
    "log_density_wij",
    "log_mse_coupled_gerf",
    "log_mse_coupled_trig",
    "log_relative_mse",
    "mean_wij_sq",
    "mse_ratio_vs_iid",
    "pair_cosine",
    "pairs_within_blocks",
    "sample_pair_sums",
    "simplex_matrix",
    "simplex_plus_directions",
    "simplex_plus_pass",
    "simplex_plus_relative_mse",
    "simplex_product",
    "small_v_ratio_simplex",
    "trig_pair_product",
]
