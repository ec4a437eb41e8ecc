"""rfviz.maths.hadamard (the fast Walsh–Hadamard transform) and the fast SORF/Fastfood transforms of
rfviz.maths.structured: against dense matrices built independently (scipy's Hadamard matrix, explicit diagonal and
permutation matrices), and the draws the samplers make unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg
import torch

from rfviz.maths.hadamard import fwht, hadamard_matrix
from rfviz.maths.structured import (
    apply_fastfood,
    apply_sorf,
    draw_fastfood,
    draw_sorf,
    hadamard_transform,
    sample_fastfood,
    sample_sorf,
)
from rfviz.sklearn import RandomFeatures

CPU = torch.device("cpu")


def _scipy_h(n: int) -> torch.Tensor:
    return torch.as_tensor(scipy.linalg.hadamard(n) / math.sqrt(n))


@pytest.mark.parametrize("n", [1, 2, 4, 32, 64, 128, 1024, pytest.param(4096, marks=pytest.mark.slow)])
def test_fwht_is_the_orthonormal_sylvester_hadamard_matrix(n: int) -> None:
    x = torch.randn(3, 2, n, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    assert torch.allclose(fwht(x), x @ _scipy_h(n), rtol=0, atol=1e-13 * math.sqrt(n))
    assert torch.allclose(hadamard_matrix(n), _scipy_h(n), rtol=0, atol=1e-15)
    if n > 1:  # the butterfly the engine's samplers use: the same transform along axis 1
        assert torch.allclose(fwht(x[0]), hadamard_transform(x[0].T[None]).squeeze(0).T, atol=1e-13)


def test_fwht_refuses_a_length_that_is_not_a_power_of_two() -> None:
    with pytest.raises(ValueError, match="power-of-two"):
        fwht(torch.zeros(2, 12))


def _sorf_dense(signs: torch.Tensor, m: int) -> torch.Tensor:
    dp = signs.shape[-1]
    h = _scipy_h(dp)
    blocks = [math.sqrt(dp) * h @ torch.diag(s[0]) @ h @ torch.diag(s[1]) @ h @ torch.diag(s[2]) for s in signs]
    return torch.cat(blocks)[:m]


def _fastfood_dense(ff: dict[str, torch.Tensor], m: int) -> torch.Tensor:
    dp = ff["b"].shape[-1]
    h = _scipy_h(dp)
    eye = torch.eye(dp, dtype=torch.float64)
    blocks = [torch.diag(ff["scale"][j]) @ h @ torch.diag(ff["g"][j]) @ eye[ff["perm"][j]] @ h @ torch.diag(ff["b"][j])
              for j in range(ff["b"].shape[0])]
    return torch.cat(blocks)[:m]


@pytest.mark.parametrize(("d", "m"), [(5, 3), (8, 8), (13, 40), (64, 100)])
def test_fast_sorf_and_fastfood_equal_their_dense_matrices(d: int, m: int) -> None:
    gen = torch.Generator().manual_seed(d * m)
    dp = 1 << (d - 1).bit_length()
    blocks = -(-m // dp)
    u = torch.randn(7, d, dtype=torch.float64, generator=gen)
    signs = draw_sorf(blocks, dp, gen, CPU, torch.float64)
    assert torch.allclose(apply_sorf(u, signs, m), u @ _sorf_dense(signs, m)[:, :d].T, rtol=0, atol=1e-12)
    ff = draw_fastfood(blocks, dp, gen, CPU, torch.float64)
    dense = _fastfood_dense(ff, m)
    assert torch.allclose(apply_fastfood(u, ff, m), u @ dense[:, :d].T, rtol=0, atol=1e-12)
    # Fastfood's rows have the drawn χ_{d'} lengths; SORF's rows are orthogonal with norm √d'
    assert torch.allclose(torch.linalg.vector_norm(dense, dim=1), ff["lengths"].reshape(-1)[:m], atol=1e-12)
    w = _sorf_dense(signs, min(m, dp))
    assert torch.allclose(w @ w.T, dp * torch.eye(w.shape[0], dtype=torch.float64), atol=1e-10)


def test_the_samplers_draw_what_draw_sorf_and_draw_fastfood_draw() -> None:
    """sample_sorf/sample_fastfood draw a frame, then exactly draw_sorf's/draw_fastfood's numbers: their rows are
    the dense blocks applied to that frame (the engine's law is unchanged by the refactoring)."""
    from rfviz.sampling import random_frame

    trials, m, d = 2, 12, 8
    for sampler, draw, apply in ((sample_sorf, draw_sorf, apply_sorf), (sample_fastfood, draw_fastfood,
                                                                         apply_fastfood)):
        w, _ = sampler(trials, m, d, d, torch.Generator().manual_seed(3), CPU, torch.float64)
        gen = torch.Generator().manual_seed(3)
        frame = random_frame(trials, d, d, gen, CPU, torch.float64)
        params = draw(trials * 2, 8, gen, CPU, torch.float64)
        for t in range(trials):
            block = ({k: v[2 * t:2 * t + 2] for k, v in params.items()} if isinstance(params, dict)
                     else params[2 * t:2 * t + 2])
            rows = apply(frame[t], block, m).T  # (m, dim): W applied to the frame's columns
            assert torch.allclose(w[t], rows, atol=1e-12)


@pytest.mark.parametrize("coupling", ["sorf", "fastfood"])
def test_transformer_state_is_o_m_and_its_output_the_dense_projections(coupling: str) -> None:
    X = np.random.default_rng(0).normal(size=(9, 100))
    rf = RandomFeatures("trig", n_components=512, gamma=0.01, coupling=coupling, random_state=0).fit(X)
    assert rf.fitted_map_.kind == coupling
    dense_bytes = rf.m_ * X.shape[1] * 8
    assert rf.fitted_state_nbytes() < 0.15 * dense_bytes  # ≈ 3·d'·8 + d·8 bytes, d' = 128 ≥ d
    w = rf.random_weights_  # (d, m), formed from the draw on demand
    p = (X - rf.center_) @ w
    expected = np.concatenate([np.sin(p), np.cos(p)], axis=1) / math.sqrt(rf.m_)
    assert np.allclose(rf.transform(X), expected, rtol=0, atol=1e-12)
