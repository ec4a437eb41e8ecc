"""Distribution and determinism tests of the generator-driven samplers in rfviz.sampling (issue 12 item 3):
χ²/χ/Gamma by batched Marsaglia–Tsang, the chunked Haar frame, and the coupled ω samplers' reproducibility.
Fixed seeds; KS tests against scipy.stats and moment tests with standard-error tolerances."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
import torch

import rfviz.sampling as sampling
from rfviz.sampling import chi, chi_square, random_frame, sample_omegas

CPU = torch.device("cpu")
Z_TOL = 4.0
N = 40000


@pytest.mark.parametrize("dof", [2, 4, 5, 16, 64, 1024])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_chi_square_ks_and_moments(dof, dtype):
    s = chi_square((N,), dof, torch.Generator().manual_seed(100 + dof), CPU, dtype)
    assert s.dtype == dtype and s.shape == (N,)
    s = s.double().numpy()
    assert np.all(np.isfinite(s)) and np.all(s > 0)
    assert scipy.stats.kstest(s, scipy.stats.chi2(dof).cdf).pvalue > 1e-4
    # mean: Var χ² = 2k; variance: Var of the sample variance ≈ (μ4 − σ⁴)/n with μ4 = 12k(k+4)... use the
    # χ² cumulants: κ2 = 2k, κ4 = 48k, so Var(s²) ≈ (κ4 + 2κ2²)/n.
    assert abs(s.mean() - dof) < Z_TOL * math.sqrt(2 * dof / N)
    assert abs(s.var() - 2 * dof) < Z_TOL * math.sqrt((48 * dof + 8 * dof * dof) / N)


@pytest.mark.parametrize("dof", [3, 64])
def test_chi_is_the_norm_law(dof):
    s = chi((N,), dof, torch.Generator().manual_seed(7), CPU, torch.float64).numpy()
    assert scipy.stats.kstest(s, scipy.stats.chi(dof).cdf).pvalue > 1e-4


def test_chi_square_determinism_and_shape():
    a = chi_square((50, 7), 10, torch.Generator().manual_seed(1), CPU, torch.float64)
    b = chi_square((50, 7), 10, torch.Generator().manual_seed(1), CPU, torch.float64)
    c = chi_square((50, 7), 10, torch.Generator().manual_seed(2), CPU, torch.float64)
    assert a.shape == (50, 7) and torch.equal(a, b) and not torch.equal(a, c)
    assert chi_square((0,), 10, torch.Generator(), CPU, torch.float64).shape == (0,)


def test_chi_square_advances_the_torch_stream():
    """Two draws from one generator differ: the numpy sampler is seeded from the torch stream, which moves on."""
    gen = torch.Generator().manual_seed(5)
    a, b = (chi_square((100,), 30, gen, CPU, torch.float64) for _ in range(2))
    assert not torch.equal(a, b)


def test_chi_square_zero_dof_and_generator_device():
    assert torch.equal(chi_square((4,), 0, torch.Generator(), CPU, torch.float64), torch.zeros(4, dtype=torch.float64))
    s = chi_square((1000,), 64, torch.Generator(device="cpu").manual_seed(0), CPU, torch.float32)
    assert s.device == CPU and s.dtype == torch.float32


@pytest.mark.slow
@pytest.mark.parametrize("dim", [2, 6])
def test_random_frame_chunking_is_bounded_orthonormal_and_haar(monkeypatch, dim):
    d = 9
    monkeypatch.setattr(sampling, "FRAME_CHUNK_ELEMENTS", 5 * dim * d)  # 5 frames per chunk, many chunks
    f = random_frame(3001, d, dim, torch.Generator().manual_seed(0), CPU, torch.float64)
    assert f.shape == (3001, dim, d)
    gram = f @ f.transpose(-1, -2)
    torch.testing.assert_close(gram, torch.eye(dim, dtype=torch.float64).expand_as(gram), atol=1e-12, rtol=0)
    sq = f[:, -1, -1].numpy() ** 2  # E[f²] = 1/d, Var = 2(d−1)/(d²(d+2)) (Haar)
    assert abs(sq.mean() - 1 / d) < Z_TOL * math.sqrt(2 * (d - 1) / (d * d * (d + 2)) / sq.size)


@pytest.mark.parametrize("coupling", ["iid", "orthogonal", "simplex"])
def test_coupled_samplers_reproducible_with_small_frame_chunks(monkeypatch, coupling):
    """Same generator state → same ω; the (constant) frame chunk bounds memory and the norms stay χ_d."""
    d, m = 16, 20

    def draw() -> tuple[torch.Tensor, torch.Tensor]:
        return sample_omegas(coupling, 300, m, d, 2, torch.Generator().manual_seed(5), CPU, torch.float64)

    monkeypatch.setattr(sampling, "FRAME_CHUNK_ELEMENTS", 7 * 2 * d)
    w1, sq1 = draw()
    w2, sq2 = draw()
    assert torch.equal(w1, w2) and torch.equal(sq1, sq2)
    assert w1.shape == (300, m, 2) and sq1.shape == (300, m)
    assert scipy.stats.kstest(sq1.reshape(-1).numpy(), scipy.stats.chi2(d).cdf).pvalue > 1e-4
    # reduced coordinates of an isotropic ω: E[ω_1²] = E|ω|²/d = 1
    w = w1[..., 0].reshape(-1).numpy()
    assert abs(np.mean(w * w) - 1.0) < Z_TOL * math.sqrt(2.0 / w.size) * 2  # coupled draws: 2× the iid SE


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine; the CPU path is tested above")
def test_cuda_chi_square_and_frames_follow_the_generator_device():
    dev = torch.device("cuda")
    a = chi_square((N,), 64, torch.Generator(device=dev).manual_seed(0), dev, torch.float32)
    b = chi_square((N,), 64, torch.Generator(device=dev).manual_seed(0), dev, torch.float32)
    assert a.device.type == "cuda" and torch.equal(a, b)
    assert scipy.stats.kstest(a.double().cpu().numpy(), scipy.stats.chi2(64).cdf).pvalue > 1e-4
    f = random_frame(100, 16, 2, torch.Generator(device=dev).manual_seed(0), dev, torch.float32)
    assert f.device.type == "cuda" and f.shape == (100, 2, 16)


# --------------------------------------------------------------------------- groups of blocks (issue 22 item 4)
@pytest.mark.parametrize(("name", "coupling"), [("trig", "iid"), ("positive", "iid"), ("positive", "orthogonal"),
                                                ("positive_antithetic", "simplex"), ("positive", "simplex_plus"),
                                                ("gerf", "orthogonal")])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_group_of_blocks_draws_the_numbers_of_its_blocks(name, coupling, dtype):
    """``sample_blocks`` (one call for several independently seeded blocks, the engine's fast path) gives exactly
    the numbers of drawing each block alone (a one-block BlockStreams, as the engine draws a lone block) with its
    own generator: the determinism contract, whatever the grouping."""
    import rfviz
    from rfviz.sampling import BlockStreams

    est = rfviz.create(name, m=20, coupling=coupling)
    sizes, seeds = (3, 5, 2), (11, 12, 13)
    alone = [est.sample_blocks(BlockStreams((n,), (torch.Generator().manual_seed(s),)), 8, device=CPU, dtype=dtype,
                               dim=2) for n, s in zip(sizes, seeds, strict=True)]
    streams = BlockStreams(sizes, tuple(torch.Generator().manual_seed(s) for s in seeds))
    group = est.sample_blocks(streams, 8, device=CPU, dtype=dtype, dim=2)
    for key, value in group.items():
        if value.dim() > 0:
            assert torch.equal(torch.cat([a[key] for a in alone]), value), key


def test_a_subclass_with_its_own_sample_is_drawn_block_by_block():
    """A plugin overriding ``sample`` (it may call torch.randn(generator=...) itself) never gets a BlockStreams:
    ``block_streams`` is honoured only on the class that defines ``sample``."""
    from rfviz.estimators.hrf import Positive
    from rfviz.sampling import BlockStreams

    seen = []

    class OwnSampler(Positive):
        name = "own_sampler"

        def sample(self, trials, d, *, generator, device, dtype=torch.float64, dim=None):
            seen.append(type(generator))
            w = torch.randn((trials, self.params["m"], dim or d), generator=generator, dtype=dtype)
            return {"w": w, "w_sq": (w * w).sum(-1)}

    streams = BlockStreams((2, 3), (torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)))
    out = OwnSampler(m=4).sample_blocks(streams, 4, device=CPU, dim=2)
    assert out["w"].shape == (5, 4, 2) and seen == [torch.Generator, torch.Generator]
