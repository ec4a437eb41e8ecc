"""Gram- and attention-matrix error of an estimator on a data set (queries x_i, keys y_j).

With one draw of random features shared by every entry (as in a real model), K̂_ij = φ_q(x_i)·φ_k(y_j) and, by
linearity of expectation, whatever the correlation between entries,

    E‖K̂ − K‖²_F = Σ_ij E(K̂_ij − K_ij)² = Σ_ij MSE(x_i, y_j),

so the pairwise closed forms give the expected Gram error of a data set without sampling (``frobenius_sq_closed_form``).
The Monte-Carlo twin draws the features once per repeat, computes ‖K̂ − K‖²_F for that repeat, and reports the mean
and standard error over repeats. For softmax estimators it also reports the attention error: with
A_ij = K_ij / Σ_j K_ij (row-normalised, as in softmax attention; Performer's Â from K̂ the same way), the mean over
rows of ‖Â_i − A_i‖_1 (Monte Carlo only: the normalisation is nonlinear in K̂).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import torch

from .diagnostics import Moments, Reliability, assess_mse
from .engine import DEFAULT_BLOCK_TRIALS, DEFAULT_CHUNK_BYTES, slice_trials, spawn_seed, work_seconds
from .params import Cost, ParameterError, check_int, require_fits, require_time
from .verdicts import (
    DISAGREES,
    GRAM_MIN_REPEATS,
    GRAM_RELIABLE_BLOCKS,
    GramTheory,
    agreement,
    exact_at_roundoff,
    family_agreement,
    gram_theory,
    gram_witness,
    iid_witness,
    practical_count,
    roundoff_floor,
    sample_skewness,
    skew_corrected_z,
    vetoed,
    z_against_closed_form,
)

GRAM_BLOCK_REPEATS = DEFAULT_BLOCK_TRIALS
"""Repeats per independently seeded block (the engine's determinism contract: block b draws its features from its
own generator seeded with ``spawn_seed(seed, b)``, so the numbers depend on the seed alone, not on the memory
budget or how the block is cut into units)."""
GRAM_MAX_SECONDS = 600.0
"""Longest Monte-Carlo Gram study one command may ask for, by the engine's time model (``engine.work_seconds``);
longer: refused with a message (run it as a sweep). About ten minutes on one core."""
LOG_OVERFLOW = 700.0


class GramEstimator(Protocol):
    """What a Gram error needs: registered estimators and ``rfviz.clustered`` estimators both fit."""

    family: str
    params: dict[str, Any]

    def closed_form_available(self) -> bool: ...
    def log_mse(self, x: np.ndarray, y: np.ndarray, d: int | None = None) -> np.ndarray: ...
    def kernel_log_value(self, x: np.ndarray, y: np.ndarray,
                         d: int | None = None) -> tuple[np.ndarray, np.ndarray]: ...
    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> dict[str, torch.Tensor]: ...
    def features(self, samples: dict[str, torch.Tensor], u: torch.Tensor, side: str = "query") -> torch.Tensor: ...


@dataclass(frozen=True)
class GramError:
    """Gram error of one estimator on one data set. ``None`` where a quantity does not exist (no closed form, no
    feature map, not a softmax estimator); ``note`` says why."""

    estimator: str
    params: dict[str, Any]
    kernel_frobenius_sq: float
    frobenius_sq_closed_form: float | None
    frobenius_sq_mc: float | None
    stderr: float | None
    reliable: bool | None
    repeats: int
    attention_l1: float | None = None
    attention_l1_stderr: float | None = None
    note: str = ""
    warning: str | None = None
    exact: bool = False
    """Closed form and sample both at float64 round-off (rfviz.verdicts.exact_at_roundoff): never tested."""
    agreement: str | None = None
    """The verdict word of rfviz.verdicts (``"agrees"``, ``"disagrees"``, ``"unreliable"``, ``"exact"``, None: not
    tested), for this row alone (``gram_error``) or over a whole table (``with_family_agreement``)."""
    repeats_needed: float | None = None
    """Repeats that guarantee ±10 % on the sampled value (from the per-pair fourth moments, rfviz.verdicts.gram_theory;
    inf: none do; None: no fourth moments, the repeats alone decide ``reliable``). Where the iid witness of a
    coupled estimator objects (rfviz.verdicts.gram_witness), the iid estimator's count."""
    skewness: float | None = None
    """Sample skewness of the per-repeat ‖K̂ − K‖²_F (None: no Monte Carlo): ``z`` is corrected for it."""

    @property
    def relative_frobenius(self) -> float | None:
        """√(E‖K̂ − K‖²_F)/‖K‖_F, from the closed form when there is one, else from Monte Carlo."""
        value = self.frobenius_sq_closed_form if self.frobenius_sq_closed_form is not None else self.frobenius_sq_mc
        if value is None or not math.isfinite(value) or self.kernel_frobenius_sq <= 0:
            return None
        return math.sqrt(value / self.kernel_frobenius_sq)

    @property
    def z(self) -> float | None:
        """(MC − closed form)/stderr, corrected for the repeats' skewness (rfviz.verdicts.skew_corrected_z): how many
        standard errors the two disagree by."""
        if self.frobenius_sq_closed_form is None or self.frobenius_sq_mc is None or not self.stderr:
            return None
        z = z_against_closed_form(self.frobenius_sq_mc, self.frobenius_sq_closed_form, self.stderr)
        return float(z if self.skewness is None else skew_corrected_z(z, self.skewness, self.repeats))

    def to_json(self) -> dict[str, Any]:
        return {"estimator": self.estimator, "params": self.params, "m": self.params.get("m"),
                "frobenius_sq_closed_form": self.frobenius_sq_closed_form,
                "frobenius_sq_mc": self.frobenius_sq_mc, "stderr": self.stderr, "reliable": self.reliable,
                "z_vs_closed_form": self.z, "agreement": self.agreement, "warning": self.warning,
                "relative_frobenius": self.relative_frobenius,
                "kernel_frobenius_sq": self.kernel_frobenius_sq, "attention_l1": self.attention_l1,
                "attention_l1_stderr": self.attention_l1_stderr, "repeats": self.repeats,
                "repeats_needed": practical_count(self.repeats_needed) if self.repeats_needed is not None else None,
                **({"note": self.note} if self.note else {})}


def _pairs(queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Broadcast views (N, 1, d) and (1, M, d): every (query, key) pair without copying."""
    q = np.asarray(queries, dtype=float)
    k = np.asarray(keys, dtype=float)
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1]:
        raise ParameterError(f"queries and keys must be (N, d) and (M, d) arrays with the same d, got {q.shape} "
                             f"and {k.shape}")
    return q[:, None, :], k[None, :, :]


PAIR_CHUNK_BYTES = 32 * 2**20
"""Pairwise closed forms form each pair's x − y and x + y (|x ∓ y|² from the difference, exact for near-duplicate
rows): a (rows, M, d) array per step, so queries are taken in row blocks of at most this many bytes."""


def _row_blocks(n: int, m: int, d: int) -> list[slice]:
    """Row slices of the N queries with rows·M·d·8 bytes ≤ ``PAIR_CHUNK_BYTES`` (at least one row each)."""
    rows = max(1, PAIR_CHUNK_BYTES // max(1, 8 * m * d))
    return [slice(i, min(n, i + rows)) for i in range(0, n, rows)]


def log_kernel_matrix(est: GramEstimator, queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log|K_ij|, sign K_ij), shape (N, M), in row blocks (``PAIR_CHUNK_BYTES``)."""
    x, y = _pairs(queries, keys)
    n, m = x.shape[0], y.shape[1]
    log_k, sign = np.empty((n, m)), np.empty((n, m))
    for rows in _row_blocks(n, m, x.shape[-1]):
        lk, sg = est.kernel_log_value(x[rows], y)
        block = (rows.stop - rows.start, m)
        log_k[rows], sign[rows] = np.broadcast_to(lk, block), np.broadcast_to(sg, block)
    return log_k, sign


def kernel_matrix(est: GramEstimator, queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """K_ij = K(x_i, y_j); ParameterError where it would overflow float64 (scale the data down)."""
    log_k, sign = log_kernel_matrix(est, queries, keys)
    if np.max(log_k) > LOG_OVERFLOW:
        raise ParameterError(f"scale must be smaller: the kernel reaches e^{np.max(log_k):.0f} on this data "
                             f"(float64 overflows past e^709)")
    return sign * np.exp(log_k)


def log_frobenius_sq_closed_form(est: GramEstimator, queries: np.ndarray, keys: np.ndarray) -> float | None:
    """log Σ_ij MSE(x_i, y_j) = log E‖K̂ − K‖²_F for features shared by all entries (``None``: no closed form).

    Broadcast calls of the estimator's ``log_mse`` over the N×M pairs in row blocks (``PAIR_CHUNK_BYTES``; each
    pair's |x ∓ y|² from its difference), summed in log space."""
    if not est.closed_form_available():
        return None
    x, y = _pairs(queries, keys)
    n, m = x.shape[0], y.shape[1]
    log_mse = np.empty((n, m))
    try:
        for rows in _row_blocks(n, m, x.shape[-1]):
            log_mse[rows] = np.asarray(est.log_mse(x[rows], y), dtype=float)
    except NotImplementedError:
        return None
    top = float(np.max(log_mse))
    if not math.isfinite(top):
        return top
    return top + math.log(float(np.sum(np.exp(log_mse - top))))


def frobenius_sq_closed_form(est: GramEstimator, queries: np.ndarray, keys: np.ndarray) -> float | None:
    """Σ_ij MSE(x_i, y_j) (inf where it overflows float64; ``None``: no closed form)."""
    log_value = log_frobenius_sq_closed_form(est, queries, keys)
    if log_value is None:
        return None
    return math.inf if log_value > 709.0 else math.exp(log_value)


def _per_repeat(est: GramEstimator, queries: np.ndarray, keys: np.ndarray) -> int:
    """Numbers one repeat holds: the features of every query and key, and the N × M estimates."""
    n, m_ = queries.shape[0], keys.shape[0]
    return max(1, int(feature_count(est, queries[:1])) * (n + m_) + n * m_)


def _unit_repeats(per_repeat: int, block: int) -> int:
    """Repeats estimated together: a unit of at most the engine's ``DEFAULT_CHUNK_BYTES`` of float64 (at least one
    repeat; the memory check of ``gram_cost`` refuses a repeat over the budget)."""
    return max(1, min(block, DEFAULT_CHUNK_BYTES // (8 * per_repeat)))


def _estimate_blocks(est: GramEstimator, queries: np.ndarray, keys: np.ndarray, repeats: int, seed: int,
                     device: torch.device):
    """Yield K̂ for units of repeats, shape (r, N, M) (complex for complex feature maps): blocks of
    ``GRAM_BLOCK_REPEATS`` repeats, each drawn from its own generator seeded with ``spawn_seed(seed, b)`` (the
    engine's rule), estimated in units of ``_unit_repeats`` (the engine's chunk size; the numbers do not depend
    on it)."""
    q = torch.as_tensor(queries, dtype=torch.float64, device=device)
    k = torch.as_tensor(keys, dtype=torch.float64, device=device)
    d = q.shape[1]
    block = min(GRAM_BLOCK_REPEATS, repeats)
    unit = _unit_repeats(_per_repeat(est, queries, keys), block)
    for b, start in enumerate(range(0, repeats, block)):
        n_block = min(block, repeats - start)
        gen = torch.Generator(device=device).manual_seed(spawn_seed(seed, b))
        samples = est.sample(n_block, d, generator=gen, device=device)
        for t0 in range(0, n_block, unit):
            part = slice_trials(samples, t0, min(n_block, t0 + unit), n_block)
            phi_q = est.features(part, q, "query")
            phi_k = est.features(part, k, "key")
            yield torch.matmul(phi_q, phi_k.transpose(-1, -2))


def gram_cost(est: GramEstimator, queries: np.ndarray, keys: np.ndarray, repeats: int) -> tuple[float, float]:
    """(bytes, seconds) that ``monte_carlo_gram`` needs for ``repeats``, by the engine's cost model: memory from the
    unit of repeats estimated together (``_unit_repeats``: the engine's ``DEFAULT_CHUNK_BYTES``), time from the
    engine's ``work_seconds`` of the multiply-adds (every input's features, d per feature, and the N × M products).

    Parameters
    ----------
    est : GramEstimator
        The estimator.
    queries, keys : np.ndarray
        (N, d) and (M, d) inputs.
    repeats : int
        Monte-Carlo repeats.

    Returns
    -------
    (float, float)
        Peak bytes (one unit of features and K̂, three working copies, one block's samples, plus two numbers per
        repeat kept) and seconds on one core.

    Examples
    --------
    >>> from rfviz import create
    >>> q = np.zeros((4, 3)); gram_cost(create("trig", m=8), q, q, 100)[1] > 0
    True
    """
    if repeats == 0:
        return 0.0, 0.0
    n, m_, d = queries.shape[0], keys.shape[0], queries.shape[1]
    try:
        f = feature_count(est, queries[:1])
    except NotImplementedError:
        return 0.0, 0.0  # no feature map: gram_error reports "no Monte Carlo"
    per_repeat = max(1, int(f) * (n + m_) + n * m_)
    unit = _unit_repeats(per_repeat, min(GRAM_BLOCK_REPEATS, repeats))
    sample_bytes = 8.0 * min(GRAM_BLOCK_REPEATS, repeats) * f * (d + 1)
    nbytes = 8.0 * (3 * unit * per_repeat + 3 * n * m_) + sample_bytes + 16.0 * repeats
    return nbytes, work_seconds(float(repeats) * (n * m_ * f + (n + m_) * f * d))


PROBE_M = 8
"""The feature count of an estimator with m > 2·PROBE_M features is extrapolated from probes at m = PROBE_M and
2·PROBE_M (features are affine in m), so that costing m = 10⁷ does not draw 10⁷ features first."""


def _probe_count(est: GramEstimator, row: np.ndarray) -> int:
    """Real features per input of one sampled feature map (complex features count twice)."""
    gen = torch.Generator().manual_seed(0)
    probe = est.features(est.sample(1, row.shape[1], generator=gen, device=torch.device("cpu")),
                         torch.as_tensor(row, dtype=torch.float64), "query")
    return probe.shape[-1] * (2 if probe.is_complex() else 1)


def feature_count(est: GramEstimator, row: np.ndarray) -> float:
    """Real numbers per input in the feature vector of ``est`` (complex features count twice): the memory and
    multiply-adds a user pays per input. Probed directly for small m, else an affine extrapolation in m from two
    small probes (the larger of it and the direct count's lower bound m).

    Parameters
    ----------
    est : Estimator
        An estimator with a feature map (``features``); NotImplementedError otherwise.
    row : np.ndarray
        One input of shape (1, d) to probe with.

    Returns
    -------
    float
        The feature-vector length.

    Examples
    --------
    >>> from rfviz import create
    >>> feature_count(create("trig", m=16), np.ones((1, 3)))  # cos and sin of 16 projections
    32.0
    """
    params = getattr(est, "params", {})
    m = params.get("m")
    if not isinstance(m, int) or m <= 2 * PROBE_M:
        return float(_probe_count(est, row))
    try:
        small = [_probe_count(type(est)(**{**params, "m": k}), row) for k in (PROBE_M, 2 * PROBE_M)]
    except (ValueError, TypeError):  # parameters tied to m (ParameterError is a ValueError): probe the real one
        return float(_probe_count(est, row))
    slope = (small[1] - small[0]) / PROBE_M
    return max(float(m), small[0] + slope * (m - PROBE_M))


def gram_study_cost(estimators: Sequence[GramEstimator], queries: np.ndarray, keys: np.ndarray,
                    repeats: int) -> Cost:
    """The ``Cost`` of ``repeats`` Gram Monte-Carlo repeats of each estimator (``gram_cost``), for the budgets of
    ``rfviz.params.require_cost``: the largest estimator's memory and every estimator's time (the engine's model).

    Parameters
    ----------
    estimators : estimators run one after the other on the same data.
    queries, keys, repeats : as for ``monte_carlo_gram``.

    Returns
    -------
    Cost
        Peak bytes and seconds (one core).

    Examples
    --------
    >>> from rfviz import create
    >>> q = np.ones((4, 3)); gram_study_cost([create("trig", m=8)], q, q, 100).seconds < 1
    True
    """
    costs = [gram_cost(est, queries, keys, repeats) for est in estimators]
    return Cost(nbytes=max((c[0] for c in costs), default=0.0), seconds=sum(c[1] for c in costs))


def require_gram_budget(nbytes: float, seconds: float, repeats: int) -> None:
    """Refuse (ParameterError, one line saying what to change) a Gram study over the memory budget, the time budget
    in force, or ``GRAM_MAX_SECONDS``.

    Parameters
    ----------
    nbytes, seconds : float
        The study's cost (``gram_cost``: the largest estimator's bytes, every estimator's seconds summed).
    repeats : int
        The repeats asked for (named in the message).

    Examples
    --------
    >>> require_gram_budget(1e3, 1.0, 100)
    """
    hint = f"lower --repeats (now {repeats}), --m, --queries/--keys or the number of estimators"
    require_fits(f"gram with --repeats {repeats}", nbytes, hint)
    require_time(f"gram with --repeats {repeats}", seconds, hint)
    if seconds > GRAM_MAX_SECONDS:
        raise ParameterError(f"gram with --repeats {repeats} needs about {seconds:.3g} s by the engine's time model, "
                             f"more than the limit of {GRAM_MAX_SECONDS:.0f} s; {hint}, or run it as a sweep")


def _mean_stderr(values: np.ndarray) -> tuple[float, float]:
    n = values.size
    mean = float(np.mean(values))
    return mean, float(np.std(values, ddof=1) / math.sqrt(n)) if n > 1 else math.inf


def monte_carlo_gram(est: GramEstimator, queries: np.ndarray, keys: np.ndarray, repeats: int, seed: int = 0,
                     device: str | torch.device = "cpu", attention: bool | None = None
                     ) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-repeat ‖K̂ − K‖²_F (features drawn once per repeat, shared by all entries), and per-repeat mean-over-rows
    ‖Â_i − A_i‖_1 of the row-normalised attention matrices (softmax estimators; ``None`` otherwise)."""
    repeats = check_int("repeats", repeats, 2)
    dev = torch.device(device)
    kmat = torch.as_tensor(kernel_matrix(est, queries, keys), device=dev)
    if attention is None:
        attention = est.family == "softmax" and getattr(est, "kernel", "softmax") == "softmax"
    attn = kmat / kmat.sum(-1, keepdim=True) if attention else None
    frob: list[np.ndarray] = []
    att: list[np.ndarray] = []
    for khat in _estimate_blocks(est, queries, keys, repeats, seed, dev):
        diff = khat - kmat
        err = (diff.real**2 + diff.imag**2 if diff.is_complex() else diff**2).sum((-1, -2))
        frob.append(err.cpu().numpy())
        if attn is not None:
            kr = khat.real if khat.is_complex() else khat
            ahat = kr / kr.sum(-1, keepdim=True)
            att.append((ahat - attn).abs().sum(-1).mean(-1).cpu().numpy())
    values = np.concatenate(frob)
    if not np.all(np.isfinite(values)):
        raise FloatingPointError("the sampled features overflowed float64 on this data")
    return values, (np.concatenate(att) if attn is not None else None)


def assess_repeats(values: np.ndarray) -> Reliability:
    """Reliability of a Monte-Carlo mean of per-repeat errors, decided from the repeats alone with the shared
    heavy-tail diagnostic (``rfviz.diagnostics.assess_mse``: relative standard error, and the share of the sum
    carried by the largest of ``GRAM_RELIABLE_BLOCKS`` contiguous blocks of repeats, as the sweep's blocks do), plus at
    least ``GRAM_MIN_REPEATS`` repeats. Never uses a closed form."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size < GRAM_MIN_REPEATS:
        return Reliability(False, f"only {v.size} repeats (< {GRAM_MIN_REPEATS})")
    n = int(v.size)
    mean = float(np.mean(v))
    moments = Moments(n, mean, float(np.sum((v - mean) ** 2)))
    sums = np.array([float(np.sum(b)) for b in np.array_split(v, min(n, GRAM_RELIABLE_BLOCKS))])
    total = float(np.sum(sums))
    share = float(np.max(sums)) / total if total > 0 else 0.0
    return assess_mse(moments, top_share=share, parts=int(sums.size))


def reliable(values: np.ndarray) -> bool:
    """``assess_repeats(values).reliable``."""
    return assess_repeats(values).reliable


def with_family_agreement(results: Sequence[GramError]) -> list[GramError]:
    """The rows of one table with their agreement decided over the whole table (rfviz.verdicts.family_agreement:
    Holm at 1 % over the reliable, non-exact rows with a z), and the row note that says how far a disagreeing row
    misses, so the table's column and each row's note agree."""
    words = family_agreement([r.z for r in results], [r.reliable for r in results], [r.exact for r in results])
    return [_with_agreement(r, w) for r, w in zip(results, words, strict=True)]


def _with_agreement(result: GramError, word: str | None) -> GramError:
    notes = [n for n in result.note.split("; ") if n and not n.startswith("Monte Carlo misses")]
    if word == DISAGREES:
        notes.append(f"Monte Carlo misses the closed form by {result.z:+.1f} standard errors")
    return replace(result, agreement=word, note="; ".join(notes))


def _theory_logs(est: GramEstimator, queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(log MSE_ij, log E|K̂_ij − K_ij|⁴) from the closed forms of ``est`` (None where it has no fourth-moment closed
    form, or it fails here)."""
    try:
        if not (est.closed_form_available() and getattr(est, "fourth_moment_available", lambda: False)()):
            return None
        x, y = _pairs(queries, keys)
        n, m = x.shape[0], y.shape[1]
        log_mse = np.broadcast_to(np.asarray(est.log_mse(x, y), float), (n, m))
        log_m4 = np.full((n, m), -np.inf)
        rows = max(1, THEORY_CHUNK // m)  # query rows per call: ≤ THEORY_CHUNK pairs, never all N·M·d at once
        for start in range(0, n, rows):
            block = log_mse[start:start + rows]
            xb = np.broadcast_to(x[start:start + rows], (block.shape[0], m, x.shape[-1]))
            yb = np.broadcast_to(y, (block.shape[0], m, x.shape[-1]))
            live = np.isfinite(block)
            if live.any():
                sub = log_m4[start:start + rows]
                sub[live] = est.log_fourth_central_moment(xb[live], yb[live])  # type: ignore[attr-defined]
    except (AttributeError, NotImplementedError, ValueError, ArithmeticError):
        return None
    return log_mse, log_m4


def _theory(est: GramEstimator, queries: np.ndarray, keys: np.ndarray, repeats: int) -> GramTheory | None:
    """rfviz.verdicts.gram_theory from the per-pair closed-form MSEs and fourth moments (None where the estimator
    has no fourth-moment closed form, or it fails here)."""
    logs = _theory_logs(est, queries, keys)
    return None if logs is None else gram_theory(*logs, repeats)


def _witness(est: GramEstimator, queries: np.ndarray, keys: np.ndarray, repeats: int) -> GramTheory | None:
    """rfviz.verdicts.gram_witness: what the iid estimator's closed forms say about a coupled estimator's repeats
    (rfviz.verdicts.iid_witness; None where there is no witness, or its closed forms fail here)."""
    witness = iid_witness(est)
    logs = None if witness is None else _theory_logs(witness, queries, keys)
    return None if logs is None else gram_witness(*logs, repeats, est.params["coupling"])


def _repeats_verdict(est: GramEstimator, queries: np.ndarray, keys: np.ndarray,
                     values: np.ndarray) -> tuple[bool, str | None, float | None]:
    """(reliable, warning, repeats_needed) of a Gram row's repeats: the closed-form fourth moments decide where the
    estimator has them (rfviz.verdicts.gram_theory); elsewhere the repeats (``assess_repeats``), vetoed by the iid
    witness of a coupled estimator (rfviz.verdicts.gram_witness, vetoed)."""
    repeats = int(np.size(values))
    theory = _theory(est, queries, keys, repeats)
    if theory is not None:
        return theory.reliable, theory.warning, theory.repeats_needed
    verdict = assess_repeats(values)
    witness = _witness(est, queries, keys, repeats)
    if witness is None:
        return verdict.reliable, verdict.warning, None
    ok, warning, needed = vetoed(verdict.reliable, verdict.warning, math.nan, witness)
    return bool(ok), warning[()], None if math.isnan(needed) else float(needed)


THEORY_CHUNK = 2048
"""Pairs per call of the closed-form fourth moment (as the engine's ``THEORY_CHUNK``)."""


def gram_error(est: GramEstimator, queries: np.ndarray, keys: np.ndarray, repeats: int = 0, seed: int = 0,
               device: str | torch.device = "cpu", name: str | None = None) -> GramError:
    """Closed form (where it exists) and Monte Carlo (``repeats`` ≥ 2, where there is a feature map) of the Gram
    error. ``reliable``: where the estimator has closed-form fourth moments, theory decides (rfviz.verdicts.gram_theory:
    the per-pair fourth moments bound the spread of the summed squared error, which gives ``repeats_needed``) —
    heavy-tailed errors (positive features at large norms) can leave no trace in a finite sample; elsewhere the
    repeats (``assess_repeats``), vetoed for a coupled estimator by the closed forms of the same estimator with iid
    features (rfviz.verdicts.iid_witness, gram_witness). ``agreement`` is this row's verdict as a family of one
    (rfviz.verdicts.agreement); a table re-decides it over all its rows (``with_family_agreement``)."""
    kmat = kernel_matrix(est, queries, keys)
    closed = frobenius_sq_closed_form(est, queries, keys)
    notes = [] if closed is not None else ["no closed-form MSE for these parameters"]
    mc = se = att = att_se = skew = None
    needed: float | None = None
    ok: bool | None = None
    warning: str | None = None
    if repeats:
        try:
            values, att_values = monte_carlo_gram(est, queries, keys, repeats, seed, device)
        except NotImplementedError as exc:
            notes.append(f"no Monte Carlo: {exc}")
        except FloatingPointError as exc:
            notes.append(f"no Monte Carlo: {exc}; scale the data down")
        else:
            mc, se = _mean_stderr(values)
            skew = sample_skewness(values)
            ok, warning, needed = _repeats_verdict(est, queries, keys, values)  # rfviz.verdicts' rules
            if att_values is not None:
                att, att_se = _mean_stderr(att_values)
    kernel_sq = float(np.sum(kmat**2))
    exact = mc is not None and closed is not None and kernel_sq > 0 and bool(exact_at_roundoff(
        closed / kernel_sq, mc / kernel_sq, roundoff_floor(np.shape(queries)[-1], int(est.params.get("m", 1)))))
    result = GramError(name or getattr(est, "name", type(est).__name__), dict(est.params), kernel_sq, closed, mc,
                       se, ok, int(repeats), att, att_se, "; ".join(notes), warning, exact, None, needed, skew)
    return _with_agreement(result, agreement(result.z, bool(ok), exact) if result.z is not None or exact else None)
