"""Hybrid estimators for clustered data ([HRF] §2.4, App. H): one complex-exponential (CE) estimator per pair of
query/key clusters, each with the real diagonal A that minimises l(A) = ‖A r_i + (Aᵀ)^{-1} r_j‖² at its centres
(eq. 21, eq. 88), combined by λ-coefficients (the maths, eq. 88's A and the CE MSE, is in rfviz.maths.hrf; this
module fits it to data):

* ``lam=zero_one`` (Def. H.2, eqs. 101–104): λ^{ij}(x, y) = 1[x ∈ X_i]·1[y ∈ Y_j], so K̂(x, y) = SM̂^{ij}(x, y) for
  the clusters (i, j) of x and y. The paper's experiments (Fig. 6, Table 3) use this one. Closed-form MSE: the
  CE variance with real A, SM²(e^{‖w‖²} − 1)/m, w = A^{ij}x + (A^{ij})^{-1}y (HRF Lemma 2.4; docs:
  derivations/complex-exponential).
* ``lam=gaussian`` (Def. H.1, eqs. 93–99): λ^{ij}(x, y) = exp(−‖A^{ij}x + (A^{ij})^{-1}y‖²/(2τ²)), estimated with
  n positive random features (eqs. 94–96) independent of the base estimators, plus a default base estimator
  SM̂^0 (``base``) weighted by λ̂^0 = 1 − Σ λ̂^{ij} (eq. 98). Unbiased; Monte Carlo only (no closed form here).

Clusters come from k-means (scikit-learn ``KMeans``) on the queries and on the keys; every CE block shares the same
m projections ω (the Gram identity E‖K̂ − K‖²_F = Σ MSE holds for any sharing). The eq. 93 split needs real
symmetric A, which the real diagonal A is ([HRF] App. H, erratum 11).

These estimators depend on a data set, so they are not in the registry: build one with
``ClusteredCE(**params).fit(queries, keys, seed)``. They implement the estimator protocol (``log_mse``,
``sample``, ``features``, ``estimate``), so ``rfviz.gram_engine`` and ``rfviz.engine.monte_carlo`` take them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from .estimators import create  # the package: `base` names a catalog estimator
from .estimators.base import PairStats, Samples, SoftmaxFamilyEstimator, projections, sq_norm, with_kernel
from .maths import hrf as hy
from .params import M_PARAM, Param, ParameterError
from .registries import IID
from .sampling import sample_omegas

NAME = "hrf_clustered"
CLUSTER_LAM_PARAM = Param("lam", "zero_one", "choice", "λ-coefficients: zero_one (cluster indicators, HRF Def. H.2) or "
                  "gaussian (Gaussian mixture with a default base estimator, Def. H.1)",
                  choices=("zero_one", "gaussian"))
QUERY_CLUSTERS_PARAM = Param("query_clusters", 2, "int", "k-means clusters of the queries (n_q)", low=1, high=32)
KEY_CLUSTERS_PARAM = Param("key_clusters", 2, "int", "k-means clusters of the keys (n_k)", low=1, high=32)
LAM_N_PARAM = Param("n", 4, "int", "random features of each Gaussian λ^{ij} (lam=gaussian)", low=1, high=1024)
TAU_PARAM = Param("tau", 0.25, "float", "bandwidth τ of the Gaussian λ^{ij} (eq. 93; lam=gaussian)", low=0.0,
                  low_open=True)
BASE_PARAM = Param("base", "positive_antithetic", "choice", "default base estimator SM̂^0 of Def. H.1 (lam=gaussian)",
                   choices=("positive_antithetic", "positive", "trig"))


@dataclass(frozen=True)
class ClusterModel:
    """Fitted clusters: centres (n_q, d) and (n_k, d), and the diagonals A^{ij}, shape (n_q, n_k, d)."""

    query_centres: np.ndarray
    key_centres: np.ndarray
    a: np.ndarray

    def assign(self, u: np.ndarray, side: str) -> np.ndarray:
        """Index of the nearest centre (k-means assignment) for points u (..., d)."""
        centres = self.query_centres if side == "query" else self.key_centres
        u = np.asarray(u, dtype=float)
        dist = np.sum((u[..., None, :] - centres) ** 2, -1)
        return np.argmin(dist, -1)

    def s(self) -> np.ndarray:
        """l(A^{ij}) at the centre pairs, shape (n_q, n_k): the paper's s lists (Fig. 6, H.3)."""
        return hy.ce_loss_diagonal(self.a, self.query_centres[:, None, :], self.key_centres[None, :, :])


def fit_clusters(queries: np.ndarray, keys: np.ndarray, query_clusters: int = 2, key_clusters: int = 2,
                 seed: int = 0) -> ClusterModel:
    """k-means on queries and on keys (scikit-learn ``KMeans``, [HRF] App. H.3), and A^{ij} by eq. 88."""
    from sklearn.cluster import KMeans

    q = np.asarray(queries, dtype=float)
    k = np.asarray(keys, dtype=float)
    for name, pts, n in (("query_clusters", q, query_clusters), ("key_clusters", k, key_clusters)):
        if n > pts.shape[0]:
            raise ParameterError(f"{name} must be an integer in [1, {pts.shape[0]}] (at most the points), got {n}")
    qc = KMeans(query_clusters, n_init=10, random_state=seed).fit(q).cluster_centers_
    kc = KMeans(key_clusters, n_init=10, random_state=seed).fit(k).cluster_centers_
    return ClusterModel(qc, kc, hy.real_diagonal_a_clipped(qc[:, None, :], kc[None, :, :]))


class ClusteredCE(SoftmaxFamilyEstimator):
    """HRF clustered hybrid of CE estimators ([HRF] App. H, Defs. H.1/H.2); see the module docstring."""

    name = NAME
    title = "HRF clustered CE estimators (real diagonal A per cluster pair)"
    reference = ("HRF paper §2.4, App. H eqs. 88, 91–104; MSE (zero-one λ) docs: derivations/complex-exponential with "
                 "real A")
    description = "Data-adapted: k-means clusters, one CE estimator per cluster pair, zero-one or Gaussian λ."
    spec: ClassVar[tuple[Param, ...]] = with_kernel(M_PARAM, CLUSTER_LAM_PARAM, QUERY_CLUSTERS_PARAM,
                                                    KEY_CLUSTERS_PARAM, LAM_N_PARAM, TAU_PARAM, BASE_PARAM)
    isotropic: ClassVar[bool] = False

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.model: ClusterModel | None = None
        self._base = create(self.params["base"], m=self.params["m"])

    # ------------------------------------------------------------------------------------- fitting
    def fit(self, queries: np.ndarray, keys: np.ndarray, seed: int = 0) -> ClusteredCE:
        self.model = fit_clusters(queries, keys, self.params["query_clusters"], self.params["key_clusters"], seed)
        return self

    def _fitted(self) -> ClusterModel:
        if self.model is None:
            raise ParameterError(f"{self.name} must be fitted to data first (ClusteredCE.fit(queries, keys))")
        return self.model

    def closed_form_available(self) -> bool:
        return self.params["lam"] == "zero_one"

    def check_dimension(self, d: int) -> None:
        super().check_dimension(d)
        if self.model is not None and d != self.model.a.shape[-1]:
            raise ParameterError(f"d must be {self.model.a.shape[-1]} (the data the clusters were fitted on), got {d}")

    # --------------------------------------------------------------------------------- closed form
    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        """Zero-one λ: K̂ = SM̂^{ij} with (i, j) the clusters of (x, y); real A makes the CE estimator real, so
        MSE = SM²(e^{‖w‖²} − 1)/m, w = A^{ij}x + (A^{ij})^{-1}y (HRF Lemma 2.4 / docs:
        derivations/complex-exponential, real A)."""
        model = self._fitted()
        i = model.assign(s.x, "query")
        j = model.assign(s.y, "key")
        a = model.a[i, j]
        return hy.log_mse_ce_real_diagonal(s.xy, hy.ce_loss_diagonal(a, s.x, s.y), self.params["m"])

    # ----------------------------------------------------------------------------------- sampling
    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        self.check_dimension(d)
        self._fitted()
        out = {"w": sample_omegas(IID, trials, self.params["m"], d, d, generator, device, dtype)[0]}
        if self.params["lam"] == "gaussian":
            out["t"] = sample_omegas(IID, trials, self.params["n"], d, d, generator, device, dtype)[0]
            for key, value in self._base.sample(trials, d, generator=generator, device=device, dtype=dtype).items():
                out["base/" + key] = value
        return out

    def _ce_block(self, w: torch.Tensor, u: torch.Tensor, a: torch.Tensor, side: str, tau: float = 1.0,
                  lam: bool = False) -> torch.Tensor:
        """Ψ^m_A(u) (eq. 91) for queries, Ψ^m_{A^{-1}}(u) (eq. 92) for keys; with ``lam`` the τ-features of
        eqs. 95–96 (exponent ±ω·Mu/τ − ‖Mu‖²/τ², minus sign on the key side). Shape (trials, P, m)."""
        mu = u * a if side == "query" else u / a
        if lam:
            sign = 1.0 if side == "query" else -1.0
            p = sign * projections(w, mu) / tau - (sq_norm(mu) / tau**2)[None, :, None]
        else:
            p = projections(w, mu) - 0.5 * sq_norm(mu)[None, :, None]
        return torch.exp(p) / math.sqrt(w.shape[-2])

    def _features_softmax(self, samples: Samples, u: torch.Tensor, side: str) -> torch.Tensor:
        model = self._fitted()
        a_all = torch.as_tensor(model.a, dtype=u.dtype, device=u.device)
        nq, nk = model.a.shape[:2]
        w = samples["w"]
        blocks: list[torch.Tensor] = []
        if self.params["lam"] == "zero_one":
            labels = torch.as_tensor(model.assign(u.detach().cpu().numpy(), side), device=u.device)
            for i in range(nq):
                for j in range(nk):
                    mask = (labels == (i if side == "query" else j)).to(u.dtype)
                    blocks.append(self._ce_block(w, u, a_all[i, j], side) * mask[None, :, None])
            return torch.cat(blocks, -1)
        # Gaussian mixture (Def. H.1): Σ_ij λ̂^{ij} SM̂^{ij} + (1 − Σ_ij λ̂^{ij}) SM̂^0 as one feature map:
        # λ̂·SM̂ is the Kronecker product of the two feature vectors (independent draws).
        tau = self.params["tau"]
        base_samples = {k[5:]: v for k, v in samples.items() if k.startswith("base/")}
        phi0 = self._base.features(base_samples, u, side)
        trials, pts = phi0.shape[:2]
        default = [phi0]
        for i in range(nq):
            for j in range(nk):
                lam = self._ce_block(samples["t"], u, a_all[i, j], side, tau, lam=True)
                ce = self._ce_block(w, u, a_all[i, j], side)
                blocks.append((lam[..., :, None] * ce[..., None, :]).reshape(trials, pts, -1))
                sign = -1.0 if side == "query" else 1.0
                default.append(sign * (lam[..., :, None] * phi0[..., None, :]).reshape(trials, pts, -1))
        return torch.cat(blocks + default, -1)

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        """K̂(x, y)·e^{−log_scale} from the feature maps (pairwise, as the engine needs)."""
        k = (self._features_softmax(samples, x, "query") * self._features_softmax(samples, y, "key")).sum(-1)
        return k * torch.exp(-log_scale)[None, :]

    def describe_fit(self) -> dict[str, object]:
        """JSON-ready: centres' norms and l(A^{ij}) at the centre pairs (the paper's s)."""
        model = self._fitted()
        return {"query_centre_norms": np.linalg.norm(model.query_centres, axis=1).tolist(),
                "key_centre_norms": np.linalg.norm(model.key_centres, axis=1).tolist(),
                "s": model.s().tolist()}
