"""``rfviz gram`` / ``rfviz.api.gram``: Gram- and attention-matrix error of estimators on a data set, from typed
values (``gram_study``; ``gram_report`` for a loaded data set)."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from .. import data as datasets
from ..clustered import NAME as CLUSTERED
from ..clustered import ClusteredCE
from ..estimators import REGISTRY, get_estimator  # the package: the catalog loaded
from ..gram_engine import gram_cost, gram_error, require_gram_budget, with_family_agreement
from ..params import CPU_DEVICE_PARAM, M_PARAM, SEED_PARAM, Param, ParameterError, check, check_list
from ..sampling import resolve_device

GRAM_M_PARAM = replace(M_PARAM, default=(8, 32, 128), help="numbers of random features", label="")
"""The list of m of ``rfviz gram --m`` (each entry in M_PARAM's range)."""
REPEATS_PARAM = Param("repeats", 100, "int", "Monte-Carlo repeats, each one draw of features shared by all entries "
                      "(0: closed form only)", low=0)
SCALE_PARAM = Param("scale", 1.0, "float", "mean norm after the scale step", low=0.0, low_open=True)


def estimator_names(names: Any) -> list[str]:
    """Estimator names from a comma-separated string or a sequence of them; registered names or ``hrf_clustered``
    only, none empty."""
    items = [names] if isinstance(names, str) else list(names) if isinstance(names, list | tuple) else None
    if not items or not all(isinstance(item, str) for item in items):
        raise ParameterError(f"names must be estimator names (a string or a non-empty list of strings), got "
                             f"{str(names)[:80]!r}")
    out = [n.strip() for item in items for n in item.split(",")]
    if "" in out:
        raise ParameterError(f"estimator names must not be empty (a stray comma?), got {','.join(items)[:80]!r}")
    for name in out:
        if name != CLUSTERED and name not in REGISTRY:
            raise ParameterError(f"estimator must be one of {', '.join(sorted([*REGISTRY, CLUSTERED]))}, got "
                                 f"{name!r}")
    return out


def _cluster_options(options: Any) -> dict[str, Any]:
    """The ``clusters`` parameters: names of ``data.CLUSTER_KEYS``, numbers (integers where the key is one)."""
    if not isinstance(options, Mapping):
        raise ParameterError(f"data_params must be a mapping of clusters parameters, got {str(options)[:40]!r}")
    out: dict[str, Any] = {}
    for key, value in options.items():
        typ = datasets.CLUSTER_KEYS.get(key) if isinstance(key, str) else None
        if typ is None:
            raise ParameterError(f"clusters has no parameter {str(key)[:40]!r}; its parameters are: "
                                 + ", ".join(datasets.CLUSTER_KEYS))
        spec = Param(key, 0, "int" if typ is int else "float")
        out[key] = check(value, spec)
    return out


def _preprocess(preprocess: Any, data: str) -> tuple[str, ...]:
    if preprocess is None:
        preprocess = "none" if data == "clusters" else "center,scale"
    if not isinstance(preprocess, str) or "" in [t.strip() for t in preprocess.split(",")]:
        raise ParameterError(f"preprocess must name steps ({', '.join(datasets.PREPROCESS_STEPS)}) or none, got "
                             f"{str(preprocess)[:80]!r}")
    return datasets.parse_preprocess(preprocess)


def _spec_names(name: str) -> set[str]:
    cls = ClusteredCE if name == CLUSTERED else get_estimator(name)
    return {p.name for p in cls.spec}


def gram_report(names: list[str], params: dict[str, Any], data: Any, ms: list[int], repeats: int, seed: int,
                device: str = "cpu") -> dict[str, Any]:
    """The JSON object of ``rfviz gram`` for a loaded data set (typed, validated arguments: see ``gram_study``)."""
    if "m" in params:
        raise ParameterError("m is set by --m (a comma-separated list), not by m=")
    specs = {name: _spec_names(name) for name in names}
    for key in params:
        if not any(key in s for s in specs.values()):
            raise ParameterError(f"no named estimator has a parameter {key!r} ({', '.join(names)})")
    fits: dict[str, Any] = {}
    built: list[tuple[str, Any]] = []
    for name in names:
        own = {k: v for k, v in params.items() if k in specs[name]}
        for m in ms:
            if name == CLUSTERED:
                est: Any = ClusteredCE(m=m, **own).fit(data.queries, data.keys, seed)
                fits[name] = est.describe_fit()
            else:
                est = get_estimator(name)(**({"m": m} if "m" in specs[name] else {}), **own)
                est.check_dimension(data.d)
            built.append((name, est))
    costs = [gram_cost(est, data.queries, data.keys, repeats) for _, est in built]  # refused before any repeat
    require_gram_budget(max((c[0] for c in costs), default=0.0), sum(c[1] for c in costs), repeats)
    errors = [gram_error(est, data.queries, data.keys, repeats, seed, device, name) for name, est in built]
    results = [e.to_json() for e in with_family_agreement(errors)]  # Holm at 1 % over the table (rfviz.verdicts)
    info = {k: v for k, v in data.describe().items() if not k.endswith("_labels")}
    return {"data": info, "m": ms, "repeats": repeats, "seed": seed, "results": results,
            **({"clusters": fits} if fits else {})}


def gram_study(names: Any, data: Any, *, keys_data: Any = None, data_params: Any = None, queries: Any = 64,
               keys: Any = 64, preprocess: Any = None, scale: Any = 1.0, m: Any = (8, 32, 128), repeats: Any = 100,
               seed: Any = 0, device: Any = "cpu", params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every argument of ``rfviz gram`` validated (typed values), the data set loaded, and its report.

    Parameters
    ----------
    names, data, keys_data, data_params, queries, keys, preprocess, scale, m, repeats, seed, device, params
        As ``rfviz.api.gram``.

    Returns
    -------
    dict
        The JSON object of ``rfviz gram`` (``gram_report``).

    Examples
    --------
    >>> gram_study("trig", "iris", queries=8, keys=8, m=[16], repeats=0)["m"]
    [16]
    """
    names = estimator_names(names)
    for label, value in (("data", data), ("keys_data", keys_data)):
        if not (isinstance(value, str) or (label == "keys_data" and value is None)):
            raise ParameterError(f"{label} must be a data set name or a file path, got {str(value)[:40]!r}")
    ms_given = [m] if isinstance(m, numbers.Integral) and not isinstance(m, bool | np.bool_) else m
    ms = [int(v) for v in check_list(ms_given, GRAM_M_PARAM).tolist()]
    repeats = check(repeats, REPEATS_PARAM)
    if repeats == 1:
        raise ParameterError("repeats must be 0 (closed form only) or an integer in [2, inf), got 1")
    seed, scale = check(seed, SEED_PARAM), check(scale, SCALE_PARAM)
    device = str(resolve_device(check(device, CPU_DEVICE_PARAM)))
    if params is not None and not isinstance(params, Mapping):
        raise ParameterError(f"params must be a mapping of estimator parameters, got {str(params)[:40]!r}")
    steps = _preprocess(preprocess, data)
    ds = datasets.load(data, keys_data, queries=queries, keys=keys, steps=steps, scale=scale, seed=seed,
                       options=_cluster_options(data_params or {}))
    return gram_report(names, dict(params or {}), ds, ms, repeats, seed, device)
