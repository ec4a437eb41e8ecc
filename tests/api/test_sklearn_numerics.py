"""rfviz.sklearn.RandomFeatures, numerically: translation invariance of every trig map's kernel estimate, features
unbiased for the exact kernel (tolerance from the standard error over random_states), data far from the origin,
overflow refused with the right remedy, sparse and float32 inputs, the old plugin feature protocol."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.datasets import load_digits
from sklearn.kernel_approximation import RBFSampler
from sklearn.metrics.pairwise import rbf_kernel

import rfviz
from rfviz.estimators.base import PairStats, Samples, SoftmaxFamilyEstimator, projections, sq_norm
from rfviz.estimators.hrf import Positive
from rfviz.params import ParameterError
from rfviz.sampling import sample_iid
from rfviz.sklearn import RandomFeatures

TRIG_MAPS = [("trig", {"coupling": c}) for c in ("iid", "orthogonal", "simplex", "sorf", "fastfood", "qmc_sobol")]
TRIG_MAPS += [("trig_phase", {}), ("complex_exponential", {})]


def _gram(rf: RandomFeatures, X: np.ndarray) -> np.ndarray:
    phi = rf.fit_transform(X)
    return phi @ phi.T


@pytest.mark.parametrize(("name", "kw"), TRIG_MAPS, ids=[f"{n}-{k.get('coupling', '')}" for n, k in TRIG_MAPS])
def test_every_trig_map_is_translation_invariant(name: str, kw: dict) -> None:
    """Data shifted by 30 (where the old Gaussian map overflowed): the same kernel estimate to round-off, and the
    issue's line runs where RBFSampler does."""
    X = np.random.default_rng(0).random((6, 4))
    base = RandomFeatures(name, n_components=64, gamma=0.5, random_state=0, **kw)
    assert np.allclose(_gram(base, X + 30.0), _gram(base, X), rtol=0, atol=1e-12)
    if name != "trig_phase":  # sin/cos and e^{iω·u}: pairwise invariant with one fit, no centring needed
        rf = base.fit(X)
        a, b = rf.transform(X), rf.transform(X + 30.0)
        assert np.allclose(a @ a.T, b @ b.T, rtol=0, atol=1e-11)


def test_the_issue_lines_work_on_data_far_from_the_origin() -> None:
    X = np.random.default_rng(0).random((5, 3)) + 30.0
    RBFSampler(gamma=0.5, random_state=0).fit_transform(X)
    phi = RandomFeatures("trig_phase", m=100, kernel="gaussian", random_state=0).fit_transform(X)
    assert phi.shape == (5, 100) and np.all(np.isfinite(phi))
    digits = load_digits().data  # RBFSampler's default gamma = 1 on raw pixels (0..16)
    phi = RandomFeatures(random_state=0).fit_transform(digits[:50])
    assert np.all(np.isfinite(phi)) and np.all(np.abs(phi) <= math.sqrt(2.0 / 100) + 1e-15)


UNBIASED = [("trig", c) for c in ("iid", "orthogonal", "simplex", "fastfood", "qmc_halton")]
UNBIASED += [("positive", c) for c in ("iid", "orthogonal", "fastfood")]
UNBIASED += [("positive_antithetic", "iid"), ("positive_antithetic", "orthogonal"), ("trig_phase", None),
             ("complex_exponential", None), ("gerf", "iid")]


def _estimates(name: str, coupling: str | None, x: np.ndarray, y: np.ndarray, seeds: int) -> np.ndarray:
    """K̂(x, y) of ``seeds`` independent fits on x, y and a third point (the centre is then not their midpoint, where
    positive features are exact)."""
    XY = np.vstack([x, y, 2.0 * x + 0.5])
    out = []
    for seed in range(seeds):
        phi = RandomFeatures(name, n_components=16, gamma=0.25, coupling=coupling, random_state=seed).fit_transform(XY)
        out.append(phi[0] @ phi[1])
    return np.array(out)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "coupling"), UNBIASED, ids=[f"{n}-{c}" for n, c in UNBIASED])
def test_features_are_unbiased_for_the_exact_gaussian_kernel(name: str, coupling: str | None) -> None:
    """Mean of K̂ over 600 fits within 4.5 standard errors of e^{−γ|x−y|²} (fixed seeds)."""
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=8) * 0.8, rng.normal(size=8) * 0.8
    exact = float(rbf_kernel(x[None], y[None], gamma=0.25)[0, 0])
    v = _estimates(name, coupling, x, y, 600)
    se = v.std(ddof=1) / math.sqrt(v.size)
    assert se > 1e-4 and abs(v.mean() - exact) <= 4.5 * se, (v.mean(), exact, se)


@pytest.mark.slow
def test_sorf_bias_is_within_its_bound() -> None:
    """SORF is biased ([ORF] Thm 5: |E K̂ − K| ≤ 6z/√d'); its mean stays within that bound plus 4.5 SE."""
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=16) * 0.3, rng.normal(size=16) * 0.3
    exact = float(rbf_kernel(x[None], y[None], gamma=0.25)[0, 0])
    v = _estimates("trig", "sorf", x, y, 600)
    z = math.sqrt(0.5) * float(np.linalg.norm(x - y))  # |u − v| at scale √(2γ)
    assert abs(v.mean() - exact) <= 6 * z / 4 + 4.5 * v.std(ddof=1) / math.sqrt(v.size)


def test_positive_features_far_from_the_training_data_are_refused_with_the_remedy() -> None:
    X = np.random.default_rng(0).normal(size=(20, 3))
    rf = RandomFeatures("positive", n_components=32, random_state=0).fit(X)
    assert np.all(np.isfinite(rf.transform(X + 1.0)))
    with pytest.raises(ParameterError, match=r"underflow.*standardise the data.*trig map") as info:
        rf.transform(X + 100.0)
    assert "Gaussian kernel" not in str(info.value)
    trig = RandomFeatures("trig_phase", n_components=32, random_state=0).fit(X)
    with pytest.raises(ParameterError, match="projections") as info:
        trig.transform(X * 1e300)
    assert "use a trig map" not in str(info.value)
    soft = RandomFeatures("trig", n_components=32, kernel="softmax", random_state=0).fit(X)
    with pytest.raises(ParameterError, match=r"overflow.*kernel=.gaussian."):
        soft.transform(X * 40.0)


@pytest.mark.parametrize(("name", "coupling"), [("trig", "iid"), ("trig", "sorf"), ("trig_phase", None),
                                                ("positive_antithetic", "orthogonal"), ("gerf", "iid"),
                                                ("hybrid_angular", None)])
def test_sparse_and_float32_inputs(name: str, coupling: str | None) -> None:
    X = sp.random(30, 12, density=0.3, random_state=0, format="csr", dtype=np.float64)
    kw = {"coupling": coupling} if coupling else {}
    rf = RandomFeatures(name, n_components=48 if name != "hybrid_angular" else 60, random_state=0, **kw)
    dense = rf.fit(X.toarray()).transform(X.toarray())
    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.csr_array):
        assert np.allclose(rf.fit(fmt(X)).transform(fmt(X)), dense, rtol=0, atol=1e-13)
    X32 = X.toarray().astype(np.float32)
    phi32 = rf.fit(X32).transform(X32)
    assert phi32.dtype == np.float32
    assert np.allclose(phi32, rf.fit(X32.astype(np.float64)).transform(X32.astype(np.float64)), atol=1e-6)
    if name != "hybrid_angular":  # a map of projections: RBFSampler's attribute, in the last fit's dtype
        assert rf.random_weights_.dtype == np.float64


class OldStylePositive(SoftmaxFamilyEstimator):
    """A plugin written against the old protocol: only ``_features_softmax`` (the softmax map)."""

    name = "old_style_positive"
    title = "Old-style positive RF"
    spec: ClassVar = Positive.spec[:1] + Positive.spec[2:]  # m, kernel

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        w, _ = sample_iid(trials, self.params["m"], d, d if dim is None else dim, generator, device, dtype,
                          norms=False)
        return {"w": w}

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        p = projections(samples["w"], x + y) - (0.5 * (sq_norm(x) + sq_norm(y)) + log_scale)[None, :, None]
        return torch.exp(p).mean(-1)

    def _features_softmax(self, samples: Samples, u: torch.Tensor, side: str) -> torch.Tensor:
        p = projections(samples["w"], u) - 0.5 * sq_norm(u)[None, :, None]
        return torch.exp(p) / math.sqrt(self.params["m"])

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        raise NotImplementedError


@pytest.mark.parametrize("kernel", ["softmax", "gaussian"])
def test_an_old_style_plugin_keeps_its_feature_map(kernel: str) -> None:
    """The old hook still gives both kernels' features (the Gaussian one as φ_SM·e^{−|u|²/2}), equal to the
    built-in positive map drawn from the same ω."""
    old = OldStylePositive(m=6, kernel=kernel)
    new = rfviz.create("positive", m=6, kernel=kernel)
    samples = old.sample(2, 3, generator=torch.Generator().manual_seed(0), device=torch.device("cpu"))
    u = torch.randn(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    assert torch.allclose(old.features(samples, u), new.features(samples, u), rtol=1e-13, atol=0)
    x, y = u[:2], u[2:]
    k = (old.features(samples, x) * old.features(samples, y)).sum(-1)
    assert torch.allclose(k, old.estimate(samples, x, y), rtol=1e-12)
