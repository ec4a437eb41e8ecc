"""Monte-Carlo engine: sampled mean, MSE and standard errors of any estimator over many input pairs.

Design:
* **Log-scaled arithmetic.** Each estimate is computed as K̂·e^{-s} with s = the estimator's ``log_scale``
  (log|K| by default), so values stay O(1) whatever the kernel's size; MSE = e^{2s}·mean|K̂e^{-s} − Ke^{-s}|²
  is reported as a log.
* **Reproducible blocks.** Trials are drawn in blocks of ``block_trials``, block b from its own generator
  seeded with (seed, b): the same seed gives the same numbers whatever the memory budget or chunking.
* **Bounded memory.** Within a block, pairs are processed in chunks sized so that the estimated working set
  (trials × pairs × the estimator's ``work_per_pair``) stays under ``memory_budget`` bytes.
* **Fast path.** For isotropic estimators, pairs are reduced to their coordinates in span(x, y) and ω is
  sampled in 2 reduced coordinates (see rfviz.sampling), never as d-vectors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from .estimators.base import Estimator, PairStats
from .geometry import canonical_pair, project_to_span
from .numerics import LOG10
from .params import ParameterError
from .sampling import resolve_device

DEFAULT_MEMORY_BUDGET = 256 * 2**20
DEFAULT_BLOCK_TRIALS = 512


class Cancelled(RuntimeError):
    """Raised when the ``cancel`` callback asks the engine to stop."""


@dataclass
class MCResult:
    """Monte-Carlo estimates at P pairs; all arrays have shape (P,). Values are kept as logs where they can overflow."""

    log_scale: np.ndarray
    target: np.ndarray  # K·e^{-s}
    mean_ratio: np.ndarray  # mean of K̂·e^{-s}
    ratio_sd: np.ndarray  # standard deviation of K̂·e^{-s}
    rel_mse: np.ndarray  # mean |K̂ − K|²·e^{-2s}
    rel_mse_stderr: np.ndarray
    trials: int
    device: str
    dtype: str
    peak_bytes: int = 0
    extras: dict = field(default_factory=dict)

    @property
    def log_mse(self) -> np.ndarray:
        """Natural log of the sampled MSE (-inf where every trial was exact)."""
        with np.errstate(divide="ignore"):
            return 2.0 * self.log_scale + np.log(self.rel_mse)

    @property
    def log10_mse(self) -> np.ndarray:
        return self.log_mse / LOG10

    @property
    def mse(self) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.exp(self.log_mse)

    @property
    def mse_stderr(self) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.exp(2.0 * self.log_scale) * self.rel_mse_stderr

    @property
    def log10_mse_stderr(self) -> np.ndarray:
        """Standard error of log10 MSE (delta method)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.rel_mse_stderr / (self.rel_mse * LOG10)

    @property
    def mean(self) -> np.ndarray:
        """Sampled mean of K̂."""
        with np.errstate(over="ignore"):
            return np.real(self.mean_ratio) * np.exp(self.log_scale)

    @property
    def bias_z(self) -> np.ndarray:
        """z-score of the sampled mean against the true kernel (0 where the estimator is exact)."""
        se = self.ratio_sd / math.sqrt(self.trials)
        diff = np.real(self.mean_ratio) - self.target
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(se > 0, diff / np.where(se > 0, se, 1.0), np.where(np.abs(diff) > 1e-9, np.inf, 0.0))

    def z_against(self, log_mse: np.ndarray) -> np.ndarray:
        """z-score of the sampled MSE against a closed-form log MSE."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            expected_rel = np.exp(np.asarray(log_mse) - 2.0 * self.log_scale)
            return (self.rel_mse - expected_rel) / self.rel_mse_stderr


def _seed_for_block(seed: int, block: int) -> int:
    return (int(seed) * 1_000_003 + 7919 * block + 12345) % (2**63 - 1)


def _default_dtype(device: torch.device) -> torch.dtype:
    return torch.float64 if device.type == "cpu" else torch.float32


def monte_carlo(
    estimator: Estimator,
    x: np.ndarray,
    y: np.ndarray,
    *,
    d: int | None = None,
    trials: int = 2000,
    seed: int = 0,
    device: str | torch.device = "auto",
    dtype: torch.dtype | None = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    block_trials: int = DEFAULT_BLOCK_TRIALS,
    progress: Callable[[float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> MCResult:
    """Sample ``trials`` independent estimates of K̂ at each pair (x[i], y[i]) and summarise them.

    x, y: arrays (..., dim) (a single pair may be 1-D); ``d`` is the true dimension when pairs are given in
    reduced coordinates. Returns an ``MCResult`` with flattened (P,) arrays.
    """
    if trials < 2:
        raise ParameterError(f"trials must be an integer in [2, inf), got {trials}")
    if memory_budget < 2**16:
        raise ParameterError(f"memory_budget must be at least 65536 bytes, got {memory_budget}")
    dev = resolve_device(device)
    dtype = dtype or _default_dtype(dev)
    x = np.atleast_2d(np.asarray(x, dtype=float))
    y = np.atleast_2d(np.asarray(y, dtype=float))
    x, y = np.broadcast_arrays(x, y)
    x = x.reshape(-1, x.shape[-1])
    y = y.reshape(-1, y.shape[-1])
    stats = PairStats.of(x, y, d)
    d = stats.d
    estimator.check_dimension(d)
    if estimator.isotropic and x.shape[-1] > 2:
        x, y = project_to_span(x, y)
    dim = x.shape[-1]
    log_abs, sign = estimator.log_abs_kernel(stats)
    log_scale = np.asarray(estimator.log_scale(stats), dtype=float) * np.ones(len(x))
    target = sign * np.exp(log_abs - log_scale)

    P = len(x)
    xt = torch.as_tensor(x, device=dev, dtype=dtype)
    yt = torch.as_tensor(y, device=dev, dtype=dtype)
    st = torch.as_tensor(log_scale, device=dev, dtype=dtype)
    tt = torch.as_tensor(target, device=dev, dtype=dtype)

    itemsize = torch.empty((), dtype=dtype).element_size()
    per_pair = max(1, int(getattr(estimator, "work_per_pair", lambda: 8 * _feature_count(estimator))()))
    n_blocks = -(-trials // block_trials)
    # Pair-chunk size so that block × chunk × per_pair × itemsize ≤ budget (at least one pair).
    bt = min(block_trials, trials)
    chunk = max(1, min(P, memory_budget // max(1, bt * per_pair * itemsize)))
    peak = bt * chunk * per_pair * itemsize

    # Accumulators (float64): Chan's parallel mean/M2 for the ratio and for the squared error.
    n_acc = 0
    mean_r = np.zeros(P, dtype=complex)
    m2_r = np.zeros(P)
    mean_e = np.zeros(P)
    m2_e = np.zeros(P)
    done = 0
    total_work = n_blocks * (-(-P // chunk))
    for b in range(n_blocks):
        nb = min(block_trials, trials - b * block_trials)
        gen = torch.Generator(device=dev)
        gen.manual_seed(_seed_for_block(seed, b))
        samples = estimator.sample(nb, d, generator=gen, device=dev, dtype=dtype, dim=dim)
        r_mean = np.empty(P, dtype=complex)
        r_m2 = np.empty(P)
        e_mean = np.empty(P)
        e_m2 = np.empty(P)
        for start in range(0, P, chunk):
            if cancel is not None and cancel():
                raise Cancelled("Monte-Carlo run cancelled")
            sl = slice(start, min(P, start + chunk))
            ratio = estimator.estimate(samples, xt[sl], yt[sl], st[sl])  # (nb, p)
            if ratio.shape != (nb, sl.stop - sl.start):
                raise ValueError(f"{estimator.name}.estimate returned shape {tuple(ratio.shape)}, "
                                 f"expected {(nb, sl.stop - sl.start)}")
            err2 = (ratio - tt[sl]).abs() ** 2
            r = ratio.to(torch.complex128 if ratio.is_complex() else torch.float64)
            e = err2.to(torch.float64)
            rm = r.mean(0)
            r_mean[sl] = rm.cpu().numpy()
            r_m2[sl] = ((r - rm).abs() ** 2).sum(0).cpu().numpy()
            em = e.mean(0)
            e_mean[sl] = em.cpu().numpy()
            e_m2[sl] = ((e - em) ** 2).sum(0).cpu().numpy()
            done += 1
            if progress is not None:
                progress(done / total_work)
        # Chan et al. merge of (n_acc, mean, M2) with (nb, block mean, block M2).
        n_new = n_acc + nb
        delta_r = r_mean - mean_r
        mean_r = mean_r + delta_r * nb / n_new
        m2_r = m2_r + r_m2 + np.abs(delta_r) ** 2 * n_acc * nb / n_new
        delta_e = e_mean - mean_e
        mean_e = mean_e + delta_e * nb / n_new
        m2_e = m2_e + e_m2 + delta_e**2 * n_acc * nb / n_new
        n_acc = n_new

    if not np.all(np.isfinite(mean_e)):
        raise FloatingPointError(f"{estimator.name}: non-finite Monte-Carlo estimates (the estimator overflowed)")
    var_r = m2_r / (n_acc - 1)
    var_e = m2_e / (n_acc - 1)
    return MCResult(
        log_scale=log_scale,
        target=target,
        mean_ratio=mean_r if np.any(np.imag(mean_r)) else np.real(mean_r),
        ratio_sd=np.sqrt(var_r),
        rel_mse=mean_e,
        rel_mse_stderr=np.sqrt(var_e / n_acc),
        trials=n_acc,
        device=str(dev),
        dtype=str(dtype).replace("torch.", ""),
        peak_bytes=int(peak),
    )


def _feature_count(estimator: Estimator) -> int:
    """Rough number of random features per pair (m, plus n for hybrids): sizes the working set."""
    p = estimator.params
    return int(p.get("m", 1)) * (1 + int(p.get("n", 0))) * 2 + 2


def monte_carlo_grid(estimator: Estimator, r: np.ndarray, theta: np.ndarray, d: int, **kwargs) -> MCResult:
    """Monte Carlo over a broadcast grid of (r, θ) in the canonical embedding of R^d (flattened result)."""
    x, y = estimator.grid_pairs(r, theta, d) if not estimator.isotropic else canonical_pair(r, theta, min(d, 2))
    return monte_carlo(estimator, x, y, d=d, **kwargs)
