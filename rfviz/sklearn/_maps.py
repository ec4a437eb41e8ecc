"""How a fitted ``RandomFeatures`` computes φ(X): the random draw, the projections ω·u (dense, sparse or by fast
Walsh–Hadamard transforms), the estimator's map, and what both cost before they run.

The inputs are first mapped to u = scale·(x − c): ``scale`` = √(2γ) is the bandwidth and c the training data's mean
for translation-invariant kernels (the Gaussian: K(x − c, y − c) = K(x, y) exactly), 0 otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch

from ..estimators.base import Estimator
from ..maths.structured import apply_fastfood, apply_sorf, draw_fastfood, draw_sorf, padded_dimension
from ..params import Cost, require_cost
from ..registries import FASTFOOD, IID, ORTHOGONAL, QMC_HALTON, QMC_SOBOL, SIMPLEX, SIMPLEX_PLUS, SORF

CHUNK_BYTES = 64 * 2**20
"""Largest working array (bytes) ``transform`` builds for one chunk of rows (projections, temporaries)."""
FLOPS_PER_SECOND = 1e9
"""One core's rough speed, for the time estimate of a ``Cost``."""
STRUCTURED = (SORF, FASTFOOD)
FRAME_COUPLINGS = (ORTHOGONAL, SIMPLEX, SIMPLEX_PLUS)
"""Couplings whose sampler builds one d × d frame per block of d rows."""
QMC_FACTOR = {QMC_SOBOL: 4.0, QMC_HALTON: 20.0}
"""Peak memory of the QMC samplers against two m × d arrays, measured at m = d = 4096 (sobol 922 MiB, halton
4879 MiB: scipy's scrambled point sets and their transforms)."""


def fast_structured(est: Estimator) -> bool:
    """Whether ``est`` is applied with the fast SORF/Fastfood transform (state O(m), O(m log d) per row): a
    projection map that never reads |ω|², with a structured coupling."""
    return (bool(getattr(est, "projection_features", False)) and not getattr(est, "needs_norms", True)
            and est.params.get("coupling", IID) in STRUCTURED)


def fit_cost(est: Estimator, d: int) -> Cost:
    """Memory and time of drawing ``est``'s random variables for inputs of dimension d (before it runs).

    Dense couplings hold m·(1 + n) rows of d numbers (a hybrid's n extra directions included) and a temporary of the
    same size, the frame couplings also a d × d frame and its QR per block of d rows, the QMC ones ``QMC_FACTOR``
    times that (the factors measured at m = d = 4096); the fast structured ones hold O(m) numbers.

    Parameters
    ----------
    est : Estimator
        The validated estimator.
    d : int
        Input dimension.

    Returns
    -------
    Cost
    """
    m = int(est.params.get("m", 1))
    rows = m * (1 + int(est.params.get("n", 0)))
    coupling = est.params.get("coupling", IID)
    if fast_structured(est):
        dp = padded_dimension(d)
        numbers = 8.0 * -(-m // dp) * dp
        return Cost(8.0 * numbers, numbers * math.log2(dp) / FLOPS_PER_SECOND)
    numbers = 2.0 * rows * d  # the draw and one temporary (measured: 270 MB for iid trig at m = d = 4096)
    if coupling in FRAME_COUPLINGS or coupling in STRUCTURED:  # one d × d Gaussian, its QR, per block of d rows
        blocks = -(-m // d)
        numbers += 2.5 * blocks * d * d  # measured: 558 MB for orthogonal or simplex at m = d = 4096
        return Cost(8.0 * numbers, 2.0 * blocks * d**3 / FLOPS_PER_SECOND)
    numbers *= QMC_FACTOR.get(coupling, 1.0)
    return Cost(8.0 * numbers, 4.0 * numbers / FLOPS_PER_SECOND)


def require_fit_fits(est: Estimator, d: int) -> None:
    """Refuse (``ParameterError``, one sentence) a fit whose draw exceeds the memory or time budget in force."""
    coupling = est.params.get("coupling")
    what = (f"RandomFeatures.fit of {est.name} with m = {est.params.get('m')} at d = {d}"
            + (f" (coupling {coupling})" if coupling else ""))
    hint = ("lower n_components (or m)" + (", or use coupling='sorf' or 'fastfood' (O(m) state)"
                                            if coupling in FRAME_COUPLINGS else ""))
    require_cost(what, fit_cost(est, d), hint)


@dataclass(eq=False)
class FittedMap:
    """A fitted feature map: the estimator, its draw and the input affine map u = scale·(x − center).

    ``kind`` is ``dense`` (ω as a matrix, any projection map), ``sorf``/``fastfood`` (the fast transforms) or
    ``protocol`` (the estimator's own ``features`` on dense rows)."""

    est: Estimator
    samples: dict[str, torch.Tensor]
    scale: float
    center: np.ndarray
    gaussian: bool
    kind: str
    m: int
    d: int
    _shift: torch.Tensor | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.kind == "dense":  # scale·(ω·c), subtracted from the projections of sparse rows
            self._shift = torch.from_numpy(self.center @ self.samples["w"][0].numpy().T)

    # ------------------------------------------------------------------------------------------- projections
    def weights(self) -> torch.Tensor:
        """The projections scale·ω as an (m, d) matrix (formed on demand for the structured kinds)."""
        if self.kind == "dense":
            return self.samples["w"][0] * self.scale
        if self.kind in STRUCTURED:
            eye = torch.eye(self.d, dtype=torch.float64) * self.scale
            return self._structured(eye).T.contiguous()
        if "w" in self.samples:
            return self.samples["w"][0] * self.scale
        raise AttributeError(f"{self.est.name} has no projection matrix")

    def _structured(self, u: torch.Tensor) -> torch.Tensor:
        if self.kind == SORF:
            return apply_sorf(u, self.samples["signs"], self.m)
        return apply_fastfood(u, self.samples, self.m)

    def _dense_u(self, X: Any) -> torch.Tensor:
        """u = scale·(x − center) for a chunk of rows, float64 (sparse rows densified)."""
        rows = X.toarray() if sp.issparse(X) else np.asarray(X)
        u = torch.from_numpy(np.asarray(rows, dtype=np.float64) - self.center)
        return u.mul_(self.scale)

    def projections(self, X: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """(ω·u (P, m), |u|² (P,)) for a chunk of rows of X (dense or CSR/CSC)."""
        if self.kind == "dense" and sp.issparse(X):
            w = self.samples["w"][0].numpy()
            p = torch.from_numpy(np.asarray(X @ w.T, dtype=np.float64)).sub_(self._shift).mul_(self.scale)
            x = X.tocsr()
            sq = np.asarray(x.multiply(x).sum(1)).ravel() - 2.0 * (x @ self.center) + self.center @ self.center
            return p, torch.from_numpy(np.maximum(sq, 0.0) * self.scale**2)
        u = self._dense_u(X)
        sq = (u * u).sum(-1)
        if self.kind == "dense":
            return u @ self.samples["w"][0].T, sq
        return self._structured(u), sq

    # ------------------------------------------------------------------------------------------- features
    def features(self, X: Any, side: str) -> torch.Tensor:
        """φ_side of a chunk of rows: (P, columns), real float64."""
        if self.kind == "protocol":
            u = self._dense_u(X)
            phi = self.est.features(self.samples, u, side)[0]
        else:
            p, sq = self.projections(X)
            log_scale = -0.5 * sq if self.gaussian else torch.zeros_like(sq)
            phi = self.est.features_from_projections(self.samples, p[None], sq, side, log_scale)[0]
        if phi.is_complex():
            sign = 1.0 if side == "query" else -1.0
            phi = torch.cat([phi.real, sign * phi.imag], dim=-1)
        return phi

    def state_nbytes(self) -> int:
        """Bytes of the fitted state (the draw and the centre)."""
        return int(sum(t.element_size() * t.numel() for t in self.samples.values()) + self.center.nbytes)


def draw(est: Estimator, d: int, seed: int) -> tuple[str, dict[str, torch.Tensor]]:
    """The kind of map and the random draw for ``est`` at dimension d (``require_fit_fits`` first)."""
    gen = torch.Generator().manual_seed(seed)
    cpu = torch.device("cpu")
    if fast_structured(est):
        coupling, m = est.params["coupling"], int(est.params["m"])
        dp = padded_dimension(d)
        blocks = -(-m // dp)
        if coupling == SORF:
            return SORF, {"signs": draw_sorf(blocks, dp, gen, cpu, torch.float64)}
        return FASTFOOD, draw_fastfood(blocks, dp, gen, cpu, torch.float64)
    samples = est.sample(1, d, generator=gen, device=cpu)
    kind = "dense" if getattr(est, "projection_features", False) else "protocol"
    return kind, samples


def rows_per_chunk(columns: int, m: int, d: int) -> int:
    """Rows of one transform chunk so that its working arrays (u, projections, features) stay under
    ``CHUNK_BYTES``."""
    per_row = 8 * (padded_dimension(d) + columns + m)
    return max(1, CHUNK_BYTES // per_row)


def require_transform_fits(name: str, n: int, columns: int, m: int, d: int, itemsize: int) -> None:
    """Refuse (``ParameterError``) a transform whose output (n × columns) and chunk exceed the budget in force."""
    nbytes = float(n) * columns * itemsize + min(CHUNK_BYTES, 8.0 * n * (padded_dimension(d) + columns + m))
    seconds = 2.0 * n * m * d / FLOPS_PER_SECOND
    require_cost(f"RandomFeatures.transform of {n} rows into {columns} {name} features", Cost(nbytes, seconds),
                 "transform fewer rows at a time, or lower n_components")


__all__ = ["CHUNK_BYTES", "FittedMap", "draw", "fast_structured", "fit_cost", "require_fit_fits",
           "require_transform_fits", "rows_per_chunk"]
