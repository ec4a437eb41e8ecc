"""Samplers of random projections ω, in torch so the same code runs on a CUDA GPU or the CPU.

Every sampler returns ω in *reduced coordinates*: the first ``dim`` coordinates of ω after a uniformly
random rotation of R^d, plus the full squared norms |ω|². For a rotation-invariant (isotropic) law of ω
and inputs x, y that live in the first ``dim`` coordinates, ω·x and ω·y then have exactly the law they
have in R^d; with ``dim = 2`` this needs two numbers per ω instead of d (the engine's fast path).
With ``dim = d`` the samples are full vectors.

Couplings (Simplex Random Features paper, §3; CRT §4 / App. 9.1): iid (ω_i ~ N(0, I_d)) and orthogonal
(blocks of d orthogonal directions with iid χ_d lengths) are sampled here; every coupling, with its sampler, is
declared in ``rfviz.registries.COUPLINGS``.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
import torch

from .params import COUPLING_PARAM, DEVICE_PARAM, ParameterError, check, require_fits
from .registries import COUPLINGS, IID

OmegaSampler = Callable[..., tuple[torch.Tensor, torch.Tensor]]


def spawn_seed(seed: int, *keys: int) -> int:
    """The one seed rule of rfviz: the seed of child ``keys`` of ``seed``, a 63-bit integer drawn from
    ``numpy.random.SeedSequence([seed, *keys])``. Every derived seed (a block of the engine, a task of a sweep, a
    repeat of a downstream study, the lab's extra and confirmation samples, a gallery panel) comes from here, so
    children of one seed, and of different keys, are statistically independent streams, never ``seed * k + r``.

    Parameters
    ----------
    seed : int
        The parent seed (≥ 0).
    *keys : int
        The child's path below the parent (≥ 0 each): a block number, (point, block), a repeat, a role.

    Returns
    -------
    int
        A seed in [0, 2^63), for ``torch.Generator.manual_seed`` or ``numpy.random.default_rng``.

    Examples
    --------
    >>> spawn_seed(0, 1) == spawn_seed(0, 1) != spawn_seed(0, 2)
    True
    >>> 0 <= spawn_seed(2**62, 7, 3) < 2**63
    True
    """
    state = np.random.SeedSequence([int(seed), *(int(k) for k in keys)]).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


def child_seeds(seed: int, n: int) -> list[int]:
    """The seeds of children 0 … n − 1 of ``seed`` (``spawn_seed(seed, i)``), e.g. one per repeat.

    Parameters
    ----------
    seed : int
        The parent seed (≥ 0).
    n : int
        How many children.

    Returns
    -------
    list of int
        ``[spawn_seed(seed, 0), …, spawn_seed(seed, n − 1)]``.

    Examples
    --------
    >>> child_seeds(5, 3)[1] == spawn_seed(5, 1)
    True
    """
    return [spawn_seed(seed, i) for i in range(int(n))]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The one device rule of every face: ``device`` validated by ``params.DEVICE_PARAM`` (auto, cpu, cuda or
    cuda:N); ``auto`` → CUDA when torch sees a GPU, else the CPU; CUDA where torch sees none, or a GPU index it does
    not have, is refused (ParameterError naming the parameter).

    Parameters
    ----------
    device : str or torch.device, default "auto"
        ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.

    Returns
    -------
    torch.device
        The device to compute on.

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    name = check(device, DEVICE_PARAM)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ParameterError(f"device {name} needs a CUDA GPU, and torch sees none on this machine; use cpu or "
                                 f"auto")
        index = int(name[5:]) if ":" in name else 0
        if index >= torch.cuda.device_count():
            raise ParameterError(f"device must be auto, cpu, cuda or cuda:N with N < {torch.cuda.device_count()} "
                                 f"(the GPUs torch sees), got {name!r}")
    return torch.device(name)


EXACT_SUM_MAX_DOF = 4
"""Up to this many degrees of freedom χ² is drawn as an exact sum of squared normals on the device; above, by numpy's
generator-driven χ² sampler (one sample costs less than a sum of squares from 5 degrees of freedom on)."""

FRAME_CHUNK_ELEMENTS = 2**21
"""Largest number of Gaussian entries a frame sampler orthogonalises at once (16 MiB in float64): bounds the QR /
Gram–Schmidt temporaries of the coupled samplers whatever the number of trials. A constant, not the engine's
memory budget, so that the numbers drawn depend only on (generator state, trials, d, dim, device, dtype)."""

@dataclass(frozen=True)
class BlockStreams:
    """Consecutive blocks of trials, each drawn from its own generator: the engine's group of independently seeded
    blocks, sampled in one call.

    Every sampler here accepts it in place of a ``torch.Generator``: block b's rows of every array (the leading axis
    holds ``trials`` or a multiple of it, trial-major) get exactly the numbers a call with ``sizes[b]`` trials and
    ``generators[b]`` alone would draw, while everything that does not draw (orthogonalisation, scaling) runs once
    over the whole group. That keeps the determinism contract (block b's numbers depend only on its seed) and
    removes the per-block Python and kernel overheads and the concatenation. On the CPU in float64 each block's
    numpy generator is seeded once (from its torch generator) and drawn from by every call in turn, so a block
    drawn alone must be drawn through a one-block ``BlockStreams`` too (the engine does).

    Parameters
    ----------
    sizes : tuple of int
        Trials per block.
    generators : tuple of torch.Generator
        One torch generator per block.

    Examples
    --------
    >>> gens = [torch.Generator().manual_seed(s) for s in (1, 2)]
    >>> standard_normal((5, 3), BlockStreams((2, 3), tuple(gens)), torch.device("cpu"), torch.float64).shape
    torch.Size([5, 3])
    """

    sizes: tuple[int, ...]
    generators: tuple[torch.Generator, ...]
    _numpy: dict[int, np.random.Generator] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def trials(self) -> int:
        return sum(self.sizes)

    def numpy_generator(self, block: int) -> np.random.Generator:
        """Block ``block``'s numpy generator, seeded from its torch generator on first use and then drawn from in
        sequence by every later call (one seeding per block, not one per library call).

        Parameters
        ----------
        block : int
            The block's index.

        Returns
        -------
        numpy.random.Generator
            That block's generator (the same object on every call).
        """
        rng = self._numpy.get(block)
        if rng is None:
            rng = self._numpy[block] = numpy_generator(self.generators[block])
        return rng

    def row_ranges(self, rows: int) -> list[tuple[int, int, torch.Generator]]:
        """(start, stop, generator) of each block in an array of ``rows`` leading rows (a multiple of trials).

        Parameters
        ----------
        rows : int
            The array's leading length: the total trials times a whole number of rows per trial.

        Returns
        -------
        list of (int, int, torch.Generator)
            Each block's rows and its generator.

        Examples
        --------
        >>> gens = tuple(torch.Generator().manual_seed(s) for s in (1, 2))
        >>> [(a, b) for a, b, _ in BlockStreams((2, 3), gens).row_ranges(10)]
        [(0, 4), (4, 10)]
        """
        per_trial, rest = divmod(rows, self.trials)
        if rest or per_trial == 0:
            raise ValueError(f"an array of {rows} rows does not split into blocks of {self.sizes} trials")
        out, start = [], 0
        for n, gen in zip(self.sizes, self.generators, strict=True):
            out.append((start, start + n * per_trial, gen))
            start += n * per_trial
        return out


RandomSource = torch.Generator | BlockStreams
"""What the samplers draw from: one generator, or a group of independently seeded blocks (``BlockStreams``)."""


def _blocks(generator: RandomSource, rows: int, chunk_rows: int | None) -> list[tuple[int, int, int]]:
    """The library calls a draw of ``rows`` leading rows makes: (start, stop, block) per block (a single generator
    is block 0), in chunks of at most ``chunk_rows`` rows, each one call."""
    ranges = generator.row_ranges(rows) if isinstance(generator, BlockStreams) else [(0, rows, generator)]
    step = chunk_rows or rows or 1
    return [(a, min(b, a + step), k) for k, (start, b, _) in enumerate(ranges) for a in range(start, b, step)]


def _torch_generator(generator: RandomSource, block: int) -> torch.Generator:
    return generator.generators[block] if isinstance(generator, BlockStreams) else generator


def _numpy_generator(generator: RandomSource, block: int) -> np.random.Generator:
    """numpy's generator for one library call: a block's own (seeded once per block) or a fresh one per call."""
    if isinstance(generator, BlockStreams):
        return generator.numpy_generator(block)
    return numpy_generator(generator)


def _rows_and_columns(shape: tuple[int, ...]) -> tuple[int, int]:
    """An array of ``shape`` as (leading rows, everything else) (a scalar is one row)."""
    return (shape[0], math.prod(shape[1:])) if shape else (1, 1)


def numpy_generator(generator: torch.Generator) -> np.random.Generator:
    """A numpy ``Generator`` seeded by one 63-bit draw from ``generator``: the torch stream still decides every
    number, so the engine's per-block seeding (same seed → same numbers whatever the chunking) carries over.

    Parameters
    ----------
    generator : torch.Generator
        The torch stream that seeds it.

    Returns
    -------
    numpy.random.Generator
        A generator seeded from one draw of ``generator``.

    Examples
    --------
    >>> a = numpy_generator(torch.Generator().manual_seed(3)).random()
    >>> a == numpy_generator(torch.Generator().manual_seed(3)).random()
    True
    """
    seed = torch.randint(0, 2**63 - 1, (1,), generator=generator, device=generator.device)
    return np.random.default_rng(int(seed.item()))


def numpy_normals_faster(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether ``standard_normal`` draws with numpy: on the CPU in float64, where numpy's ziggurat
    ``Generator.standard_normal`` (into a preallocated array) takes ~10 ns per number against ~18 ns for
    ``torch.randn`` (measured with bench/bench_point.py); torch is faster in float32 and on a GPU.

    Parameters
    ----------
    device : torch.device
        Where the samples are made.
    dtype : torch.dtype
        Their float type.

    Returns
    -------
    bool
        True on the CPU in float64.

    Examples
    --------
    >>> numpy_normals_faster(torch.device("cpu"), torch.float32)
    False
    """
    return device.type == "cpu" and dtype == torch.float64


def standard_normal(shape: tuple[int, ...], generator: RandomSource, device: torch.device, dtype: torch.dtype,
                    chunk_rows: int | None = None) -> torch.Tensor:
    """Standard normal samples driven only by ``generator``, by the fastest library sampler for (device, dtype).

    Parameters
    ----------
    shape : the output shape.
    generator : the torch generator that decides every number (one draw seeds numpy's on the CPU in float64), or
        ``BlockStreams`` (block b's rows from its own generator, see there).
    device, dtype : where and in which precision.
    chunk_rows : draw at most this many leading rows per library call (each call, on the CPU in float64, seeds its
        own numpy generator from the torch stream); None: one call per block.

    Returns
    -------
    torch.Tensor
        iid N(0, 1) numbers of ``shape``.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> standard_normal((2, 3), g, torch.device("cpu"), torch.float64).shape
    torch.Size([2, 3])
    """
    calls = _blocks(generator, shape[0] if shape else 1, chunk_rows)
    if not numpy_normals_faster(device, dtype):
        if len(calls) == 1:
            return torch.randn(shape, generator=_torch_generator(generator, 0), device=device, dtype=dtype)
        out = torch.empty(shape, device=device, dtype=dtype)
        for a, b, k in calls:
            out[a:b] = torch.randn((b - a, *shape[1:]), generator=_torch_generator(generator, k), device=device,
                                   dtype=dtype)
        return out
    out = torch.empty(shape, dtype=dtype)
    flat = out.numpy().reshape(_rows_and_columns(shape))
    for a, b, k in calls:
        _numpy_generator(generator, k).standard_normal(out=flat[a:b])
    return out


def chi_square(shape: tuple[int, ...], dof: int, generator: RandomSource, device: torch.device,
               dtype: torch.dtype) -> torch.Tensor:
    """χ²_dof samples (zeros when dof = 0), driven only by ``generator`` (deterministic under a seed; a
    ``BlockStreams`` draws each block's rows from its own generator).

    dof ≤ EXACT_SUM_MAX_DOF: a sum of squared normals on the device. Larger dof: numpy's generator-driven
    Gamma(dof/2) sampler (Marsaglia–Tsang over ziggurat normals) times 2, written into the output (the numbers of
    ``Generator.chisquare``, which computes exactly 2·Gamma(dof/2), without its temporary: ~17 against ~25 ns per
    sample here), seeded from ``generator`` and moved to ``device`` (torch's own Gamma/Chi2 take no generator, so
    they cannot be seeded per block). O(1) random numbers per sample instead of dof, which matters at large d.

    Parameters
    ----------
    shape : tuple of int
        The samples' shape.
    dof : int
        Degrees of freedom (≥ 0).
    generator : torch.Generator or BlockStreams
        The only source of random numbers (a ``BlockStreams`` draws each block's rows from its own generator).
    device : torch.device
        Where the samples are made.
    dtype : torch.dtype
        Their float type.

    Returns
    -------
    torch.Tensor
        The samples, of shape ``shape``.

    Examples
    --------
    >>> gen = torch.Generator().manual_seed(0)
    >>> chi_square((2, 3), 5, gen, torch.device("cpu"), torch.float64).shape
    torch.Size([2, 3])
    """
    if dof <= 0:
        return torch.zeros(shape, device=device, dtype=dtype)
    if dof <= EXACT_SUM_MAX_DOF:
        g = standard_normal((*shape, dof), generator, device, dtype)
        return (g * g).sum(-1)
    draws = np.empty(shape, dtype=np.float64)
    flat = draws.reshape(_rows_and_columns(shape))
    for a, b, k in _blocks(generator, flat.shape[0], None):
        _numpy_generator(generator, k).standard_gamma(0.5 * dof, out=flat[a:b])
    np.multiply(draws, 2.0, out=draws)
    return torch.from_numpy(draws).to(device=device, dtype=dtype)


def chi(shape: tuple[int, ...], dof: int, generator: RandomSource, device: torch.device,
        dtype: torch.dtype) -> torch.Tensor:
    """χ_dof samples (norms of dof-dimensional standard Gaussian vectors): √χ²_dof, see ``chi_square``.

    Parameters
    ----------
    shape : tuple of int
        The samples' shape.
    dof : int
        Degrees of freedom (≥ 0).
    generator : torch.Generator or BlockStreams
        The only source of random numbers (a ``BlockStreams`` draws each block's rows from its own generator).
    device : torch.device
        Where the samples are made.
    dtype : torch.dtype
        Their float type.

    Returns
    -------
    torch.Tensor
        The samples, of shape ``shape``, non-negative.

    Examples
    --------
    >>> gen = torch.Generator().manual_seed(0)
    >>> bool((chi((4,), 3, gen, torch.device("cpu"), torch.float64) >= 0).all())
    True
    """
    return chi_square(shape, dof, generator, device, dtype).sqrt()


def _frame_chunk(g: torch.Tensor) -> torch.Tensor:
    """Orthonormalise the rows of each (dim, d) slice of g (Gram–Schmidt = QR with a positive-diagonal R); for
    dim ≤ 4 in place (g is returned), above by a batched LAPACK QR (a new tensor)."""
    dim = g.shape[1]
    if dim > 4:
        q, r = torch.linalg.qr(g.transpose(-1, -2))
        sign = torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))
        sign = torch.where(sign == 0, torch.ones_like(sign), sign)
        return (q * sign.unsqueeze(-2)).transpose(-1, -2)
    for i in range(dim):
        v = g[:, i]
        for _ in range(2 if i else 1):
            for j in range(i):
                q = g[:, j]
                v.sub_((v * q).sum(-1, keepdim=True) * q)
            v.div_(torch.linalg.vector_norm(v, dim=-1, keepdim=True))
    return g


def random_frame(trials: int, d: int, dim: int, generator: RandomSource, device: torch.device,
                 dtype: torch.dtype) -> torch.Tensor:
    """First ``dim`` rows of Haar-random rotations of R^d: shape (trials, dim, d), orthonormal rows.

    Gram–Schmidt on iid Gaussian vectors (= QR with a positive-diagonal R, Mezzadri 2007), which is Haar on the
    Stiefel manifold. Costs O(d·dim²) per trial instead of the O(d³) of a full Haar matrix; for dim ≤ 4 the
    orthogonalisation is written out (two Gram–Schmidt passes for round-off) instead of a batched LAPACK QR.
    The Gaussians are drawn in calls of at most FRAME_CHUNK_ELEMENTS entries and orthogonalised in place, chunk by
    chunk, so the temporaries stay bounded however many trials are asked for (the output itself is trials·dim·d).

    Parameters
    ----------
    trials : int
        Independent frames.
    d : int
        The dimension of the space.
    dim : int
        Rows per frame (≤ d).
    generator : torch.Generator or BlockStreams
        The only source of random numbers (a ``BlockStreams`` draws each block's rows from its own generator).
    device : torch.device
        Where the samples are made.
    dtype : torch.dtype
        Their float type.

    Returns
    -------
    torch.Tensor
        Shape (trials, dim, d), orthonormal rows.

    Examples
    --------
    >>> gen = torch.Generator().manual_seed(0)
    >>> f = random_frame(2, 5, 3, gen, torch.device("cpu"), torch.float64)
    >>> bool(torch.allclose(f @ f.transpose(-1, -2), torch.eye(3, dtype=torch.float64).expand(2, 3, 3)))
    True
    """
    step = max(1, FRAME_CHUNK_ELEMENTS // max(1, dim * d))
    g = standard_normal((trials, dim, d), generator, device, dtype, chunk_rows=step)
    for start in range(0, trials, step):
        chunk = g[start:start + step]
        done = _frame_chunk(chunk)
        if done is not chunk:
            chunk.copy_(done)
    return g


def frame_bytes(rows: int, d: int, dim: int, itemsize: int = 8) -> float:
    """Peak bytes of ``random_frame(rows, d, dim)``: its output and one chunk's orthogonalisation temporaries.

    Parameters
    ----------
    rows : int
        Frames drawn.
    d : int
        Input dimension.
    dim : int
        Orthonormal columns per frame.
    itemsize : int, optional
        Bytes per number (8 for float64).

    Returns
    -------
    float
        Peak bytes.

    Examples
    --------
    >>> frame_bytes(1, 1000, 2) >= 8 * 2 * 1000
    True
    """
    chunk = min(rows, max(1, FRAME_CHUNK_ELEMENTS // max(1, dim * d))) * dim * d
    return float(itemsize) * (float(rows) * dim * d + 3.0 * chunk)


def sample_iid_bytes(trials: int, m: int, d: int, dim: int, itemsize: int = 8) -> float:
    """Peak bytes of ``sample_iid``: the coordinates, their squares, the χ² draw (float64) and the norms (measured
    39 bytes per ω at dim = 2 with ru_maxrss, 128 trials × 60 000 features; counted 48).

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
    >>> sample_iid_bytes(10, 4, 3, 2)
    1920.0
    """
    return float(trials) * m * (itemsize * (2 * dim + 1) + 8.0)


def sample_orthogonal_bytes(trials: int, m: int, d: int, dim: int, itemsize: int = 8) -> float:
    """Peak bytes of ``sample_orthogonal``: the frames of every block (``frame_bytes``), the χ² lengths and the
    scaled directions (measured 49 bytes per ω at dim = 2, d = 8, 128 trials × 60 000 features; counted 56).

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
    >>> sample_orthogonal_bytes(1, 4, 1000, 2) > frame_bytes(1, 1000, 2)
    True
    """
    return frame_bytes(trials * -(-m // d), d, dim, itemsize) + float(trials) * m * (itemsize * (dim + 1) + 16.0)


def sampler_bytes(coupling: str, trials: int, m: int, d: int, dim: int, itemsize: int = 8) -> float:
    """Peak working memory (bytes) of one call of a coupling's sampler, output included, before it runs: the
    coupling's sampler module states it as ``<sampler>_bytes`` beside the sampler (``sample_iid_bytes``,
    ``rfviz.maths.qmc.sample_qmc_halton_bytes``, …; a sampler without one is counted as iid).

    Parameters
    ----------
    coupling : a registered coupling.
    trials, m, d, dim : as for ``sample_omegas``.
    itemsize : bytes per element of the samples' dtype.

    Returns
    -------
    float

    Examples
    --------
    >>> sampler_bytes("iid", 10, 4, 3, 2) == sample_iid_bytes(10, 4, 3, 2)
    True
    """
    module, _, function = COUPLINGS[check(coupling, COUPLING_PARAM)].sampler_path.partition(":")
    cost = getattr(importlib.import_module(module), function + "_bytes", sample_iid_bytes)
    return float(cost(trials, m, d, dim, itemsize))


_CALLS: ContextVar[list[tuple[str, int, int, int, int, int]] | None] = ContextVar("rfviz_sampler_calls", default=None)


@contextlib.contextmanager
def sampler_calls() -> Iterator[list[tuple[str, int, int, int, int, int]]]:
    """Record the (coupling, trials, m, d, dim, itemsize) of every ``sample_omegas`` call in a block, so that a
    caller who probed one trial can cost the same draws at any number of trials (``sampler_bytes``): the engine's
    memory plan counts the samplers' working memory this way.

    Yields
    ------
    list of tuple
        The calls recorded so far, appended to while the block runs.

    Examples
    --------
    >>> with sampler_calls() as calls:
    ...     _ = sample_omegas("iid", 1, 4, 8, 2, torch.Generator().manual_seed(0), torch.device("cpu"), torch.float64)
    >>> calls
    [('iid', 1, 4, 8, 2, 8)]
    """
    calls: list[tuple[str, int, int, int, int, int]] = []
    token = _CALLS.set(calls)
    try:
        yield calls
    finally:
        _CALLS.reset(token)


def sample_iid(trials: int, m: int, d: int, dim: int, generator: RandomSource, device: torch.device,
               dtype: torch.dtype, norms: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """ω_i iid N(0, I_d). Returns (reduced coordinates (trials, m, dim), |ω|² (trials, m), or None when ``norms``
    is False: the χ²_{d−dim} draw comes after the coordinates', so skipping it leaves the coordinates unchanged).

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
        The only source of random numbers (a ``BlockStreams`` draws each block's rows from its own generator).
    device : torch.device
        Where the samples are made.
    dtype : torch.dtype
        Their float type.
    norms : bool, default True
        Whether to draw |ω|².

    Returns
    -------
    omega : torch.Tensor
        Reduced coordinates, shape (trials, m, dim).
    sq_norms : torch.Tensor or None
        |ω|², shape (trials, m); None when ``norms`` is False.

    Examples
    --------
    >>> gen = torch.Generator().manual_seed(0)
    >>> w, n = sample_iid(2, 3, 8, 2, gen, torch.device("cpu"), torch.float64)
    >>> tuple(w.shape), tuple(n.shape)
    ((2, 3, 2), (2, 3))
    """
    w = standard_normal((trials, m, dim), generator, device, dtype)
    if not norms:
        return w, None
    sq = (w * w).sum(-1) + chi_square((trials, m), d - dim, generator, device, dtype)
    return w, sq


def sample_orthogonal(trials: int, m: int, d: int, dim: int, generator: RandomSource, device: torch.device,
                      dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Block-orthogonal ω: per block of d, orthonormal Haar directions times iid χ_d lengths (SimRF §3, ORF).

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
        The only source of random numbers (a ``BlockStreams`` draws each block's rows from its own generator).
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
    >>> gen = torch.Generator().manual_seed(0)
    >>> w, n = sample_orthogonal(2, 3, 8, 2, gen, torch.device("cpu"), torch.float64)
    >>> tuple(w.shape), tuple(n.shape)
    ((2, 3, 2), (2, 3))
    """
    blocks = -(-m // d)
    frame = random_frame(trials * blocks, d, dim, generator, device, dtype)  # (T·B, dim, d): columns = directions
    sq = chi_square((trials, m), d, generator, device, dtype)
    return scaled_directions(frame, sq.sqrt(), m), sq


def scaled_directions(frame: torch.Tensor, lengths: torch.Tensor, m: int) -> torch.Tensor:
    """ω in reduced coordinates from blocks of directions and their lengths: the first m columns of each trial's
    frames (T·B, dim, d), times lengths (T, m): shape (T, m, dim). When m fills whole blocks the transpose and the
    product are one pass into the output.

    Parameters
    ----------
    frame : (trials·blocks, dim, d) directions as columns, block-major within a trial.
    lengths : (trials, m) |ω_i|.
    m : the number of ω per trial (≤ blocks·d).

    Returns
    -------
    torch.Tensor
        (trials, m, dim).

    Examples
    --------
    >>> scaled_directions(torch.ones(6, 2, 4), torch.ones(3, 8), 8).shape
    torch.Size([3, 8, 2])
    """
    trials = lengths.shape[0]
    n_blocks, dim, d = frame.shape[0] // trials, frame.shape[1], frame.shape[2]
    if m == n_blocks * d:
        out = torch.empty((trials, n_blocks, d, dim), device=frame.device, dtype=frame.dtype)
        torch.mul(frame.view(trials, n_blocks, dim, d).transpose(-1, -2), lengths.view(trials, n_blocks, d, 1),
                  out=out)
        return out.view(trials, m, dim)
    dirs = frame.transpose(-1, -2).reshape(trials, n_blocks * d, dim)[:, :m]
    return dirs * lengths.unsqueeze(-1)


def sample_omegas(coupling: str, trials: int, m: int, d: int, dim: int, generator: RandomSource,
                  device: torch.device, dtype: torch.dtype,
                  norms: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Dispatch to the coupling's sampler (``rfviz.registries.COUPLINGS``); see the module docstring for the reduced
    coordinates. ``norms=False`` (the estimator never reads |ω|²) lets iid ω skip their χ²_{d−dim} draw (None is
    returned for the norms; the coordinates are the same numbers); coupled samplers need the lengths anyway.

    Parameters
    ----------
    coupling : str
        A coupling of ``rfviz.registries.COUPLINGS``.
    trials : int
        Independent estimators.
    m : int
        Projections per estimator.
    d : int
        The true dimension of the input space.
    dim : int
        The reduced coordinates kept (≤ d).
    generator : torch.Generator or BlockStreams
        The only source of random numbers (a ``BlockStreams`` draws each block's rows from its own generator).
    device : torch.device
        Where the samples are made.
    dtype : torch.dtype
        Their float type.
    norms : bool, default True
        Whether |ω|² is needed.

    Returns
    -------
    omega : torch.Tensor
        Reduced coordinates, shape (trials, m, dim).
    sq_norms : torch.Tensor or None
        |ω|², shape (trials, m); None for iid ω when ``norms`` is False.

    Examples
    --------
    >>> gen = torch.Generator().manual_seed(0)
    >>> w, n = sample_omegas("simplex", 2, 4, 8, 2, gen, torch.device("cpu"), torch.float64)
    >>> tuple(w.shape)
    (2, 4, 2)
    """
    check(coupling, COUPLING_PARAM)
    if dim > d:
        raise ParameterError(f"d must be ≥ {dim} (the dimension of the inputs), got {d}")
    itemsize = torch.empty((), dtype=dtype).element_size()
    calls = _CALLS.get()
    if calls is not None:
        calls.append((coupling, int(trials), int(m), int(d), int(dim), itemsize))
    require_fits(f"drawing {trials} trial(s) of {m} {coupling} projections in d = {d} ({dim} coordinates kept)",
                 sampler_bytes(coupling, trials, m, d, dim, itemsize), "lower m, d or the trials drawn at once")
    if not norms and coupling == IID:
        return sample_iid(trials, m, d, dim, generator, device, dtype, norms=False)
    sampler: OmegaSampler = COUPLINGS[coupling].sampler()
    return sampler(trials, m, d, dim, generator, device, dtype)
