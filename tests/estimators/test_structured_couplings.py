"""The structured and quasi-Monte-Carlo couplings (SORF, Fastfood, randomised Sobol'/Halton): their samplers' laws,
the engine's Monte Carlo with them (unbiased within standard errors, or biased within [ORF] Thm 5's bound for SORF),
reproducible seeding, refusals of absurd sizes.

Expected values come from the laws themselves (E|ω|² = d, ω_i ~ N(0, I_d), rows of an SORF block orthogonal with
norm √d'), an independent numpy construction of Fastfood (scipy's Hadamard matrix, explicit products), and the
Gaussian kernel; tolerances from standard errors (|z| < 4, fixed seeds).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.stats
import torch

import rfviz
from rfviz.engine import monte_carlo
from rfviz.maths import qmc as Q
from rfviz.maths import structured as S
from rfviz.params import ParameterError
from rfviz.registries import COUPLINGS, FASTFOOD, QMC_HALTON, QMC_SOBOL, SORF
from rfviz.sampling import BlockStreams, sample_omegas

CPU = torch.device("cpu")
Z_TOL = 4.0
NEW = (SORF, FASTFOOD, QMC_SOBOL, QMC_HALTON)
UNBIASED = (FASTFOOD, QMC_SOBOL, QMC_HALTON)


def draw(coupling: str, trials: int, m: int, d: int, dim: int, seed: int = 0):
    return sample_omegas(coupling, trials, m, d, dim, torch.Generator().manual_seed(seed), CPU, torch.float64)


# ------------------------------------------------------------------------------------------ building blocks
def test_hadamard_transform_is_scipys_orthonormal_hadamard():
    x = torch.randn(3, 32, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    h = torch.from_numpy(scipy.linalg.hadamard(32) / math.sqrt(32.0))
    torch.testing.assert_close(S.hadamard_transform(x), torch.einsum("ij,bjk->bik", h, x), atol=1e-13, rtol=0)
    with pytest.raises(ValueError, match="power-of-two"):
        S.hadamard_transform(torch.zeros(1, 6, 1))
    assert [S.padded_dimension(d) for d in (1, 2, 3, 64, 65, 100)] == [1, 2, 4, 64, 128, 128]


def test_first_primes_and_halton_digits():
    assert Q.first_primes(10).tolist() == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
    assert Q.first_primes(2000)[-1] == 17389  # the 2000th prime
    _, digits, places = Q._halton_digits(3, 10)
    i = np.arange(10)
    value = (digits * places[:, :, None]).sum(1)  # the radical inverse of i in each base
    np.testing.assert_allclose(value[0], [int(f"{k:b}"[::-1], 2) / 2 ** len(f"{k:b}") for k in i], atol=1e-15)


# ---------------------------------------------------------------------------------------- the samplers' laws
@pytest.mark.parametrize("d", [8, 6])
def test_sorf_rows_are_orthogonal_with_norm_root_d_padded(d):
    """Full vectors (dim = d): a block's d' rows restricted to the first d coordinates; with d = d' they are exactly
    orthogonal with norm √d; with padding E|ω|² = d (d' · d/d') and |ω|² ≤ d'."""
    dp = S.padded_dimension(d)
    w, sq = draw(SORF, 400, dp, d, d)
    torch.testing.assert_close(sq, (w * w).sum(-1), atol=1e-10, rtol=0)
    if d == dp:
        gram = w @ w.transpose(-1, -2)
        torch.testing.assert_close(gram, d * torch.eye(d, dtype=torch.float64).expand_as(gram), atol=1e-10, rtol=0)
    else:
        assert torch.all(sq <= dp + 1e-9)
        # rows of one block are exchangeable: the mean over rows and trials; its SE from the per-trial means
        per_trial = sq.mean(-1).numpy()
        assert abs(per_trial.mean() - d) < Z_TOL * per_trial.std(ddof=1) / math.sqrt(per_trial.size)


@pytest.mark.parametrize("coupling", UNBIASED)
@pytest.mark.parametrize("d", [8, 6])
def test_unbiased_couplings_draw_standard_normal_rows(coupling, d):
    """Fastfood and the randomised QMC point sets: every ω_i is exactly N(0, I_d), so one coordinate is N(0, 1) and
    |ω|² is χ²_d (Kolmogorov–Smirnov on one row per trial, independent across trials)."""
    w, sq = draw(coupling, 3000, 8, d, d, seed=1)
    torch.testing.assert_close(sq, (w * w).sum(-1), atol=1e-9, rtol=0)
    for row in (0, 5):
        assert scipy.stats.kstest(w[:, row, 0].numpy(), "norm").pvalue > 1e-3, (coupling, row)
        assert scipy.stats.kstest(sq[:, row].numpy(), scipy.stats.chi2(d).cdf).pvalue > 1e-3, (coupling, row)


def test_fastfood_matches_an_independent_numpy_construction():
    """The trig MSE of rfviz's Fastfood sampler agrees with an explicit S H G Π H B in numpy (scipy's Hadamard,
    explicit permutation, rows rescaled to χ lengths, a Haar rotation of the pair), within standard errors."""
    d, trials = 16, 3000
    rng = np.random.default_rng(2)
    h = scipy.linalg.hadamard(d) / math.sqrt(d)
    z = np.zeros(d)
    z[:2] = 1.0
    direct = np.empty(trials)
    for t in range(trials):
        q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        v = h @ np.diag(rng.standard_normal(d)) @ (h @ np.diag(rng.choice([-1.0, 1.0], d)))[rng.permutation(d)]
        v *= (np.sqrt(rng.chisquare(d, d)) / np.linalg.norm(v, axis=1))[:, None]
        direct[t] = np.cos(v @ (q @ z)).mean()
    w, _ = draw(FASTFOOD, trials, d, d, 2, seed=3)
    ours = torch.cos(w @ torch.tensor([1.0, 1.0], dtype=torch.float64)).mean(-1).numpy()
    k = math.exp(-1.0)
    a, b = (direct - k) ** 2, (ours - k) ** 2
    assert abs(a.mean() - b.mean()) < Z_TOL * math.sqrt(a.var() / a.size + b.var() / b.size)


@pytest.mark.parametrize("coupling", NEW)
def test_seeding_is_reproducible_and_blocks_draw_their_own_numbers(coupling):
    w1, sq1 = draw(coupling, 7, 10, 6, 2, seed=4)
    w2, sq2 = draw(coupling, 7, 10, 6, 2, seed=4)
    w3, _ = draw(coupling, 7, 10, 6, 2, seed=5)
    assert torch.equal(w1, w2) and torch.equal(sq1, sq2) and not torch.equal(w1, w3)
    est = rfviz.create("positive", m=10, coupling=coupling)
    sizes, seeds = (3, 5), (11, 12)
    alone = [est.sample_blocks(BlockStreams((n,), (torch.Generator().manual_seed(s),)), 6, device=CPU, dim=2)
             for n, s in zip(sizes, seeds, strict=True)]
    group = est.sample_blocks(BlockStreams(sizes, tuple(torch.Generator().manual_seed(s) for s in seeds)), 6,
                              device=CPU, dim=2)
    assert torch.equal(torch.cat([a["w"] for a in alone]), group["w"])


def test_absurd_sizes_are_refused_before_any_work():
    with pytest.raises(ParameterError, match=r"d must be an integer in \[1, 21201\]"):
        draw(QMC_SOBOL, 1, 1, 30000, 2)
    with pytest.raises(ParameterError, match=r"needs about .* of memory"):
        draw(QMC_HALTON, 1, 100_000, 20_000, 2)
    with pytest.raises(ParameterError, match=r"needs about .* of memory"):
        draw(SORF, 1, 4, 1_000_001, 2)


def test_the_new_couplings_are_labelled_sampled_curves():
    for name in NEW:
        est = rfviz.create("trig", m=8, coupling=name)
        assert not est.closed_form_available()
        assert est.known_for_params() == COUPLINGS[name].known
    assert COUPLINGS[SORF].known == "bound" and "6|x − y|/√d'" in COUPLINGS[SORF].citation


# ------------------------------------------------------------------------------ Monte Carlo through the engine
def _pairs():
    """Pairs at r ∈ {0.5, 1}, θ ∈ {π/3, 2π/3} (reduced coordinates) for the Gaussian kernel."""
    r = np.array([0.5, 0.5, 1.0, 1.0])
    theta = np.array([np.pi / 3, 2 * np.pi / 3, np.pi / 3, 2 * np.pi / 3])
    x = np.stack([r, np.zeros_like(r)], -1)
    y = np.stack([r * np.cos(theta), r * np.sin(theta)], -1)
    return x, y


@pytest.mark.slow
@pytest.mark.parametrize(("coupling", "features"), [(c, f) for f in ("trig", "positive") for c in UNBIASED])
def test_unbiased_couplings_estimate_the_kernel_without_bias(coupling, features):
    """|bias z| < 4 at four pairs, d = 6 (padded to 8 for Fastfood), m = 12 (4 pairs × 6 runs at z = 4: a
    family-wise error below 0.2 %), at the points the engine calls reliable: positive features at |x + y|² = 3 are
    heavy-tailed (their sampled mean says nothing), and with the Sobol coupling the engine also refuses |x + y|² = 1
    at 6 000 trials, so two points are required for positive features; trig features are reliable everywhere."""
    x, y = _pairs()
    est = rfviz.create(features, m=12, coupling=coupling, kernel="gaussian")
    res = monte_carlo(est, x, y, d=6, trials=6000, seed=21, device="cpu")
    ok = np.ravel(res.reliable)
    assert ok.sum() >= 2 and (features == "positive" or ok.all())
    assert np.all(np.abs(np.ravel(res.bias_z)[ok]) < Z_TOL), (coupling, features, res.bias_z)


@pytest.mark.slow
@pytest.mark.parametrize("d", [16, 12])
def test_sorf_bias_is_within_the_published_bound(d):
    """SORF trig features of the Gaussian kernel: |mean − K| ≤ 6|x − y|/√d' + 4 SE ([ORF] Thm 5), and at d = 16
    the bias is detectable (SORF is biased: the test sees it, z > 4, at |x − y| = 2)."""
    x = np.array([[1.0, 0.0], [2.0, 0.0]])
    y = np.array([[0.0, 0.0], [0.0, 0.0]])
    est = rfviz.create("trig", m=S.padded_dimension(d), coupling=SORF, kernel="gaussian")
    res = monte_carlo(est, x, y, d=d, trials=20000, seed=22, device="cpu")
    k = np.exp(-0.5 * np.array([1.0, 4.0]))
    bias = np.ravel(res.mean_ratio * np.exp(res.log_scale)) - k
    se = np.abs(bias / np.ravel(res.bias_z))
    bound = np.array([S.sorf_bias_bound(z, d) for z in (1.0, 2.0)])
    assert np.all(np.abs(bias) <= bound + Z_TOL * se), (bias, bound)
    if d == 16:
        assert abs(np.ravel(res.bias_z)[1]) > Z_TOL, res.bias_z
