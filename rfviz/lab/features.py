"""The lab's checks of a feature map and of the estimator itself: ``check_features`` (finite, positive, bounded,
consistent with ``estimate``), ``check_reproducible`` (same seed, same estimates), ``declares_bias`` and the
like-for-like ``comparator``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..engine import spawn_seed
from ..estimators import REGISTRY, Estimator  # the package: REGISTRY needs the catalog loaded
from ..params import ParameterError
from ..plugins import call_guarded, protocol_guard
from ..verdicts.rules import (
    FEATURE_CONSISTENCY_REL,  # the lab's rules, with their reasons, live in the verdict module
    FEATURE_GROWTH_TOLERANCE,
)
from .options import FEATURE_TRIALS, FEATURES_KEY, REPRODUCIBLE_KEY, SHARED_PARAMS


def declares_bias(cls: type[Estimator]) -> bool:
    """Whether an estimator says it is biased by design (``unbiased = False``, or a description starting with
    "Biased", e.g. truncated Maclaurin features): the lab then expects, and reports, "bias detected"."""
    return getattr(cls, "unbiased", True) is False or str(getattr(cls, "description", "")).strip().lower(
    ).startswith("biased")


def comparator(name: str, candidate: Estimator) -> Estimator:
    """Built-in ``name`` with the candidate's m, kernel and coupling where it has those parameters."""
    if name not in REGISTRY:
        raise ParameterError(f"compare must name built-in estimators ({', '.join(sorted(REGISTRY))}), got {name!r}")
    cls = REGISTRY[name]
    own = {p.name: p for p in cls.spec}
    params = {k: candidate.params[k] for k in SHARED_PARAMS if k in own and k in candidate.params}
    length = getattr(candidate, "feature_length", None)
    if length is not None and "m" in own:  # a plain feature map: the built-in at the same feature length M
        params["m"] = _m_for_length(cls, params, int(length))
    other = cls(**params)
    if other.kernel != candidate.kernel:
        raise ParameterError(f"{name} estimates the {other.kernel} kernel, not {candidate.kernel}")
    return other


def features_per_m(estimator_class: type[Estimator], params: dict[str, Any]) -> int:
    """How many features a built-in has per unit of ``m`` (1 for positive RFs, 2 for trig and antithetic ones),
    read off one draw of its feature map at m = 1.

    Parameters
    ----------
    estimator_class : type
        A built-in estimator class.
    params : dict
        Its other parameters (kernel, coupling).

    Returns
    -------
    int

    Examples
    --------
    >>> from rfviz.estimators import REGISTRY
    >>> features_per_m(REGISTRY["trig"], {})
    2
    """
    est = estimator_class(**{**params, "m": 1})
    gen = torch.Generator().manual_seed(0)
    samples = est.sample(1, 2, generator=gen, device=torch.device("cpu"), dim=2)
    return int(est.features(samples, torch.zeros((1, 2), dtype=torch.float64), "query").shape[-1])


def _m_for_length(cls: type[Estimator], params: dict[str, Any], length: int) -> int:
    """The m at which built-in ``cls`` has ``length`` features; ParameterError where none does."""
    try:
        per = features_per_m(cls, params)
    except NotImplementedError:
        raise ParameterError(f"{cls.name} has no feature map to match the feature length {length}") from None
    if per < 1 or length % per:
        raise ParameterError(f"{cls.name} has {per} features per m, so no m gives {length} features")
    return length // per


def check_features(est: Estimator, x: np.ndarray, y: np.ndarray, log_scale: np.ndarray, d: int, seed: int,
                   r: np.ndarray) -> dict[str, Any]:
    """Positivity, finiteness, observed boundedness and consistency (Σ φ_q·φ_k = K̂) of the feature maps."""
    owner = f"{type(est).__name__} ({est.name})"
    gen = torch.Generator().manual_seed(spawn_seed(seed, FEATURES_KEY))
    dt = torch.float64
    samples = call_guarded(owner, "sample", est.sample, FEATURE_TRIALS, d, generator=gen,
                           device=torch.device("cpu"), dtype=dt, dim=x.shape[-1])
    xt, yt = torch.as_tensor(x, dtype=dt), torch.as_tensor(y, dtype=dt)
    try:
        phi_q = est.features(samples, xt, "query")
        phi_k = est.features(samples, yt, "key")
    except NotImplementedError:
        return {"available": False, "reason": "no feature map (features() not implemented)"}
    except Exception as exc:
        with protocol_guard(owner, "features"):
            raise exc
    if not (isinstance(phi_q, torch.Tensor) and phi_q.dim() == 3 and phi_q.shape[:2] == (FEATURE_TRIALS, len(x))):
        raise ParameterError(f"{owner}: features must return shape (trials, pairs, features)")
    finite = bool(torch.isfinite(phi_q).all() and torch.isfinite(phi_k).all())
    positive = bool(not phi_q.is_complex() and not phi_k.is_complex() and (phi_q > 0).all() and (phi_k > 0).all())
    # Boundedness, observed: at the largest r, does max|φ| keep growing when we look at 16× more samples?
    big = np.isclose(r, r.max())
    both = torch.cat([phi_q[:, big], phi_k[:, big]], 1).abs()
    head = both[: max(1, FEATURE_TRIALS // 16)].max()
    growth = float(both.max() / head) if float(head) > 0 else 1.0
    # Consistency with estimate: (Σ φ_q·φ_k)·e^{-s} against K̂·e^{-s}, relative to max(|K̂e^{-s}|, 1).
    st = torch.as_tensor(log_scale, dtype=dt)
    prod = (phi_q * phi_k).sum(-1) * torch.exp(-st)[None, :]
    est_vals = call_guarded(owner, "estimate", est.estimate, samples, xt, yt, st)
    diff = (prod - est_vals).abs() / torch.clamp(est_vals.abs(), min=1.0)
    max_rel = float(diff.max()) if finite else float("nan")
    return {"available": True, "count": int(phi_q.shape[-1]), "finite": finite, "positive": positive,
            "bounded_observed": bool(finite and growth <= FEATURE_GROWTH_TOLERANCE), "max_growth": growth,
            "consistent": bool(finite and max_rel < FEATURE_CONSISTENCY_REL), "max_rel_diff": max_rel}


REPRO_TRIALS = 64
"""Trials of the reproducibility check: the lab draws twice with the same seed and compares the estimates."""


def check_reproducible(est: Estimator, x: np.ndarray, y: np.ndarray, d: int, seed: int) -> None:
    """Draw ``REPRO_TRIALS`` estimates twice with generators seeded alike; ParameterError (one line, exit 2) when
    they differ: the plugin draws random numbers without the generator it is given (np.random, torch's global
    RNG, …), so the same seed gives different reports and no result of the lab can be reproduced."""
    owner = f"{type(est).__name__} ({est.name})"
    draws = []
    for _ in range(2):
        gen = torch.Generator().manual_seed(spawn_seed(seed, REPRODUCIBLE_KEY))
        samples = call_guarded(owner, "sample", est.sample, REPRO_TRIALS, d, generator=gen,
                               device=torch.device("cpu"), dtype=torch.float64, dim=x.shape[-1])
        xt, yt = torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(y, dtype=torch.float64)
        draws.append(call_guarded(owner, "estimate", est.estimate, samples, xt, yt, None))
    a, b = draws
    same = a.shape == b.shape and bool(torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)))
    if not same:
        raise ParameterError(f"{owner} is not reproducible: two draws with the same seed gave different estimates "
                             "(draw every random number with the torch.Generator passed to sample(), not np.random or "
                             "torch's global RNG)")
