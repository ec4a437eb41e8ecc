"""Randomised quasi-Monte-Carlo couplings ([QMC]): the m projections of a trial are a low-discrepancy point set of
[0, 1)^d (Sobol' or Halton, from ``scipy.stats.qmc``), randomised, and mapped to Gaussian ω by the inverse normal CDF
coordinate by coordinate, ω_i = Φ⁻¹(u_i).

Randomisation, one per trial, drawn from the trial's own random stream (``rfviz.sampling.standard_normal`` mapped to
uniforms by Φ, so a ``BlockStreams`` gives every block its own numbers):

* Sobol': a random **digital shift** — the 30-bit integer coordinates of scipy's unscrambled points XOR a uniform
  30-bit integer per coordinate, plus a uniform offset inside the last dyadic cell. A digitally shifted net is still
  a (t, m, d)-net, and every point is exactly uniform on [0, 1)^d.
* Halton: a random **affine digit scrambling** (Matoušek's linear scrambling without the matrix): coordinate j in
  base p_j (the j-th prime) has its k-th digit a mapped to (h·a + g) mod p_j, h uniform in 1..p_j − 1 and g uniform
  in 0..p_j − 1, fresh for every (trial, j, k), and the digits past the ones the m indices use filled by a uniform
  offset. Each coordinate stays a (0, 1)-sequence in its base and every point is exactly uniform. A mere shift
  modulo 1 (Cranley–Patterson) leaves the linear correlations of the high-prime coordinates (i/p_j for i < p_j):
  at d = m = 64 its trig MSE was 6× iid's (measured, 20000 trials); the scrambling removes them.

So every ω_i is exactly N(0, I_d) and the estimators stay unbiased; what the point set changes is the variance, for
which only rates are known (Koksma–Hlawka: the error of a point set is at most its star discrepancy,
O((log m)^d / m) for these sequences, times the integrand's variation; [QMC] §3). Why not scipy's own ``scramble``
(Owen/LMS scrambling): it builds one engine per trial, ~6 ms at d = 64 on this machine (measured: 2 minutes for
``--trials 20000``); the shifts here cost O(m·d) per trial. The unscrambled point sets are computed once per (d, m)
by scipy (Sobol') or from the radical-inverse digits (Halton) and cached.

Reduced coordinates: the point set is not rotation-invariant, so (as for the structured couplings,
``rfviz.maths.structured``) each trial rotates R^d by one Haar rotation; the sampled MSE is averaged over the
orientation of the pair.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np
import torch

from ..params import ParameterError, require_fits
from ..sampling import RandomSource, frame_bytes, random_frame, standard_normal

SOBOL_BITS = 30
"""Bits of scipy's Sobol' points (its default): the digital shift acts on these."""

SOBOL_MAX_D = 21201
"""scipy's Sobol' direction numbers go up to this dimension."""

QMC_CHUNK_ELEMENTS = 2**22
"""Largest number of entries (trials × m × d) of the full-dimensional ω built at once before reduction."""

_UNIFORM_FLOOR = 2.0**-60
"""Smallest uniform passed to Φ⁻¹ (a point at exactly 0 would map to −∞)."""


@lru_cache(maxsize=32)
def _sobol_points(d: int, m: int) -> np.ndarray:
    """scipy's unscrambled Sobol' points as 30-bit integers (in float64), (m, d)."""
    from scipy.stats import qmc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Sobol' balance needs m a power of two; any m is a valid point set here
        pts = qmc.Sobol(d, scramble=False, bits=SOBOL_BITS).random(m)
    return np.round(pts * 2.0**SOBOL_BITS)


def first_primes(n: int) -> np.ndarray:
    """The first n primes (the Halton bases), by a sieve.

    Parameters
    ----------
    n : int
        How many primes.

    Returns
    -------
    numpy.ndarray
        The primes, ascending.

    Examples
    --------
    >>> first_primes(5).tolist()
    [2, 3, 5, 7, 11]
    """
    limit = max(16, int(n * (math.log(n + 1) + math.log(math.log(n + 2)) + 2)))
    sieve = np.ones(limit + 1, dtype=bool)
    sieve[:2] = False
    for p in range(2, int(limit**0.5) + 1):
        if sieve[p]:
            sieve[p * p::p] = False
    return np.flatnonzero(sieve)[:n]


@lru_cache(maxsize=32)
def _halton_digits(d: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bases (d,), digits (d, K, m) of the indices 0..m−1 in each base, place values p^−(k+1) (d, K)) with
    K = the digits base 2 needs (the most of any base)."""
    bases = first_primes(d)
    digits_needed = max(1, math.ceil(math.log2(max(m, 2))))
    digits = np.empty((d, digits_needed, m), dtype=np.int64)
    rest = np.broadcast_to(np.arange(m), (d, m)).copy()
    for k in range(digits_needed):  # repeated division: no power of a large prime is formed
        digits[:, k] = rest % bases[:, None]
        rest //= bases[:, None]
    places = 1.0 / (bases[:, None].astype(float) ** (np.arange(digits_needed)[None, :] + 1))
    return bases, digits, places


def _qmc_bytes(kind: str, trials: int, m: int, d: int, dim: int, itemsize: int) -> float:
    """Peak bytes of a QMC sampler call (``_sample_qmc``), before it runs: the frames, the per-trial uniforms (five
    times: 9.3 MB per trial measured with ru_maxrss for Halton at d = 20000, m = 64, while they are drawn and mapped
    by Φ), the cached point set or digits, and one chunk of trials (``QMC_CHUNK_ELEMENTS`` at most
    unless one trial is larger): Halton's digit arrays (trials × d × K × m, three live in the scrambling) and the
    full-dimensional points and ω (five m × d arrays)."""
    k = max(1, math.ceil(math.log2(max(m, 2))))
    per_trial_draws = 2 * d if kind == "sobol" else d * (2 * k + 1)
    cell = 2 * m * d if kind == "sobol" else 3 * d * k * m
    step = min(trials, max(1, QMC_CHUNK_ELEMENTS // max(1, cell)))
    cached = 2.0 * m * d if kind == "sobol" else 2.0 * d * k * m
    chunk = step * m * d * (8.0 if kind == "sobol" else 5.0 + 3 * k)
    return (frame_bytes(trials, d, dim, itemsize) + 8.0 * (5 * trials * per_trial_draws + cached + chunk)
            + float(trials) * m * itemsize * (dim + 1))


def sample_qmc_sobol_bytes(trials: int, m: int, d: int, dim: int, itemsize: int = 8) -> float:
    """Peak bytes of ``sample_qmc_sobol`` before it runs (``rfviz.sampling.sampler_bytes``).

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
    >>> sample_qmc_sobol_bytes(1, 64, 20000, 2) > 8 * 64 * 20000
    True
    """
    return _qmc_bytes("sobol", trials, m, d, dim, itemsize)


def sample_qmc_halton_bytes(trials: int, m: int, d: int, dim: int, itemsize: int = 8) -> float:
    """Peak bytes of ``sample_qmc_halton`` before it runs (``rfviz.sampling.sampler_bytes``).

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
    >>> sample_qmc_halton_bytes(1, 64, 20000, 2) > 8 * 6 * 64 * 20000
    True
    """
    return _qmc_bytes("halton", trials, m, d, dim, itemsize)


def _uniforms(shape: tuple[int, ...], generator: RandomSource, device: torch.device) -> torch.Tensor:
    """Uniform(0, 1) numbers as Φ(standard normals) in float64 (exactly uniform in law)."""
    return torch.special.ndtr(standard_normal(shape, generator, device, torch.float64))


def _sample_qmc(kind: str, trials: int, m: int, d: int, dim: int, generator: RandomSource, device: torch.device,
                dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    if kind == "sobol" and d > SOBOL_MAX_D:
        raise ParameterError(f"d must be an integer in [1, {SOBOL_MAX_D}] for Sobol' points (scipy's direction "
                             f"numbers), got {d}")
    require_fits(f"one trial of the {kind} point set (m = {m} points in d = {d} dimensions, drawn in full)",
                 8.0 * m * d * (4 + (0 if kind == "sobol" else 3 * max(1, math.ceil(math.log2(max(m, 2)))))),
                 "lower m or d")
    frame = random_frame(trials, d, dim, generator, device, dtype)
    if kind == "sobol":
        base = torch.from_numpy(_sobol_points(d, m)).to(device=device, dtype=torch.int64)
        draws = _uniforms((trials, 2, d), generator, device)  # per trial: the digital shift and the in-cell offset
        cell = 2 * m * d
    else:
        bases, digits, places = (torch.from_numpy(a).to(device) for a in _halton_digits(d, m))
        draws = _uniforms((trials, d, 2 * digits.shape[1] + 1), generator, device)  # h, g per digit; the offset
        cell = digits.numel() * 3
    w = torch.empty((trials, m, dim), device=device, dtype=dtype)
    sq = torch.empty((trials, m), device=device, dtype=dtype)
    step = max(1, QMC_CHUNK_ELEMENTS // max(1, cell))
    for start in range(0, trials, step):
        sl = slice(start, min(trials, start + step))
        if kind == "sobol":
            u = _shifted_sobol(base, draws[sl])
        else:
            u = _scrambled_halton(bases, digits, places, draws[sl])
        omega = torch.special.ndtri(u.clamp(_UNIFORM_FLOOR, 1.0 - 2.0**-53))  # (chunk, m, d)
        sq[sl] = (omega * omega).sum(-1).to(dtype)
        w[sl] = torch.matmul(omega.to(dtype), frame[sl].transpose(-1, -2))
    return w, sq


def _shifted_sobol(base: torch.Tensor, draws: torch.Tensor) -> torch.Tensor:
    """Digitally shifted Sobol' points (trials, m, d) from the 30-bit integer points (m, d) and uniforms (trials, 2, d)
    (the shift's digits, then the offset inside the last dyadic cell)."""
    scale = 2.0**SOBOL_BITS
    digits = torch.floor(draws[:, 0] * scale).clamp_max(scale - 1).to(torch.int64)
    return (torch.bitwise_xor(base[None], digits[:, None]).to(torch.float64) + draws[:, 1, None, :]) / scale


def _scrambled_halton(bases: torch.Tensor, digits: torch.Tensor, places: torch.Tensor,
                      draws: torch.Tensor) -> torch.Tensor:
    """Affinely digit-scrambled Halton points (trials, m, d): digit a of base p → (h·a + g) mod p, with h, g and the
    tail offset from the uniforms ``draws`` (trials, d, 2K + 1)."""
    k = digits.shape[1]
    p = bases.to(torch.float64)[None, :, None]  # (1, d, 1)
    h = 1.0 + torch.floor(draws[..., :k] * (p - 1.0)).clamp_max(p - 2.0).clamp_min(0.0)  # 1..p−1 (p = 2: 1)
    g = torch.floor(draws[..., k:2 * k] * p).clamp_max(p - 1.0)  # 0..p−1
    scrambled = torch.remainder(h[..., None] * digits[None].to(torch.float64) + g[..., None], p[..., None])
    u = (scrambled * places[None, :, :, None]).sum(2)  # (trials, d, m)
    u = u + draws[..., 2 * k, None] * places[None, :, -1, None]  # the digits past K: a uniform offset
    return u.transpose(1, 2)


def sample_qmc_sobol(trials: int, m: int, d: int, dim: int, generator: RandomSource, device: torch.device,
                     dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """ω_i = Φ⁻¹(u_i), u the first m Sobol' points of [0, 1)^d with a random digital shift per trial (module
    docstring), in reduced coordinates after one Haar rotation per trial.

    Parameters
    ----------
    trials : int
        Independent estimators.
    m : int
        Projections per estimator.
    d : int
        The true dimension of the input space.
    dim : int
        The reduced coordinates kept (≤ d).
    generator : torch.Generator or BlockStreams
        The only source of random numbers (the shifts and rotations).
    device : torch.device
        Where the samples are made.
    dtype : torch.dtype
        Their float type.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        ω (trials, m, dim) and |ω|² (trials, m).

    Examples
    --------
    >>> w, sq = sample_qmc_sobol(3, 8, 4, 2, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64)
    >>> w.shape, sq.shape
    (torch.Size([3, 8, 2]), torch.Size([3, 8]))
    """
    return _sample_qmc("sobol", trials, m, d, dim, generator, device, dtype)


def sample_qmc_halton(trials: int, m: int, d: int, dim: int, generator: RandomSource, device: torch.device,
                      dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """ω_i = Φ⁻¹(u_i), u the first m Halton points of [0, 1)^d, affinely digit-scrambled per trial (module
    docstring), in reduced coordinates after one Haar rotation per trial.

    Parameters
    ----------
    trials : int
        Independent estimators.
    m : int
        Projections per estimator.
    d : int
        The true dimension of the input space.
    dim : int
        The reduced coordinates kept (≤ d).
    generator : torch.Generator or BlockStreams
        The only source of random numbers (the scrambles and rotations).
    device : torch.device
        Where the samples are made.
    dtype : torch.dtype
        Their float type.

    Returns
    -------
    omega : torch.Tensor
        Reduced coordinates, shape (trials, m, dim).
    sq_norms : torch.Tensor
        |ω|², shape (trials, m).

    Examples
    --------
    >>> w, sq = sample_qmc_halton(3, 8, 4, 2, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64)
    >>> w.shape
    torch.Size([3, 8, 2])
    """
    return _sample_qmc("halton", trials, m, d, dim, generator, device, dtype)


def koksma_hlawka_rate(m: int, d: int) -> float:
    """(log m)^d / m: the order of the star discrepancy of the first m Sobol'/Halton points in d dimensions, the rate
    in the Koksma–Hlawka bound ([QMC] §3); a rate, not a bound with its constant.

    Parameters
    ----------
    m : int
        Points.
    d : int
        The dimension.

    Returns
    -------
    float
        (log m)^d / m.

    Examples
    --------
    >>> round(koksma_hlawka_rate(64, 1), 4)
    0.065
    """
    return math.log(m) ** d / m


__all__ = ["QMC_CHUNK_ELEMENTS", "SOBOL_BITS", "SOBOL_MAX_D", "first_primes", "koksma_hlawka_rate", "sample_qmc_halton",
           "sample_qmc_halton_bytes", "sample_qmc_sobol", "sample_qmc_sobol_bytes"]
