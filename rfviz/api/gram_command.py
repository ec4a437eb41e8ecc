"""``rfviz.gram`` (and ``rfviz gram``): Gram- and attention-matrix error of estimators on a data set, from typed
values (``gram_study``; ``gram_report`` for a loaded data set), as a :class:`GramResult` of :class:`GramRow`."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..clustered import NAME as CLUSTERED
from ..clustered import ClusteredCE
from ..estimators import REGISTRY, get_estimator  # the package: the catalog loaded
from ..gram_engine import gram_cost, gram_error, require_gram_budget, with_family_agreement
from ..params import CPU_DEVICE_PARAM, M_PARAM, SEED_PARAM, Param, ParameterError, check, check_list
from ..sampling import resolve_device
from .datasets import KEYS_PARAM, QUERIES_PARAM, SCALE_PARAM, data_info, load_dataset
from .results import Result, nested
from .validation import Instance, api_function

GRAM_M_PARAM = replace(M_PARAM, default=(8, 32, 128), help="numbers of random features", label="")
"""The list of m of ``rfviz gram --m`` (each entry in M_PARAM's range)."""
REPEATS_PARAM = Param("repeats", 100, "int", "Monte-Carlo repeats, each one draw of features shared by all entries "
                      "(0: closed form only)", low=0)


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


def _spec_names(name: str) -> set[str]:
    cls = ClusteredCE if name == CLUSTERED else get_estimator(name)
    return {p.name for p in cls.spec}


def gram_report(names: list[str], params: dict[str, Any], data: Any, ms: list[int], repeats: int, seed: int,
                device: str = "cpu") -> dict[str, Any]:
    """The JSON object of ``rfviz gram`` for a loaded data set (typed, validated arguments: see ``gram_study``)."""
    if "m" in params:
        raise ParameterError("m is set by the m argument (a list of numbers of features), not among the estimator "
                             "parameters")
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
    return {"data": data_info(data), "m": ms, "repeats": repeats, "seed": seed, "results": results,
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
    ms_given = [m] if isinstance(m, numbers.Integral) and not isinstance(m, bool | np.bool_) else m
    ms = [int(v) for v in check_list(ms_given, GRAM_M_PARAM).tolist()]
    repeats = check(repeats, REPEATS_PARAM)
    if repeats == 1:
        raise ParameterError("repeats must be 0 (closed form only) or an integer in [2, inf), got 1")
    seed = check(seed, SEED_PARAM)
    device = str(resolve_device(check(device, CPU_DEVICE_PARAM)))
    if params is not None and not isinstance(params, Mapping):
        raise ParameterError(f"params must be a mapping of estimator parameters, got {str(params)[:40]!r}")
    ds = load_dataset(data, keys_data=keys_data, data_params=data_params, queries=queries, keys=keys,
                      preprocess=preprocess, scale=scale, seed=seed)
    return gram_report(names, dict(params or {}), ds, ms, repeats, seed, device)


# ------------------------------------------------------------------------------------------------ the API
@dataclasses.dataclass(frozen=True)
class GramRow(Result):
    """One (estimator, m) row of :class:`GramResult`: closed-form and sampled E‖K̂ − K‖²_F and their agreement.

    Parameters
    ----------
    estimator : str
        The estimator (or ``hrf_clustered``).
    params : dict
        Its parameters.
    m : int or None
        Its number of features.
    frobenius_sq_closed_form, frobenius_sq_mc, stderr : float or None
        Σ MSE from the closed forms, its Monte-Carlo twin and standard error.
    reliable : bool or None
        Whether the standard error can be trusted.
    z_vs_closed_form : float or None
        z of the sample against the closed form.
    agreement : str or None
        The verdict (Holm over the table, ``rfviz.verdicts``).
    warning : str or None
        Why a sample is unreliable.
    relative_frobenius, kernel_frobenius_sq : float or None
        √(Σ MSE)/‖K‖_F and ‖K‖²_F.
    attention_l1, attention_l1_stderr : float or None
        The row-normalised attention error and its standard error (softmax estimators).
    repeats, repeats_needed : int or None
        Repeats run, and repeats a reliable standard error would need.
    note : str or None
        A remark (absent when there is none).

    Examples
    --------
    >>> import rfviz
    >>> rfviz.gram("trig", "iris", queries=8, keys=8, m=[16], repeats=0).results[0].m
    16
    """

    estimator: str
    params: dict[str, Any]
    m: int | None
    frobenius_sq_closed_form: float | None
    frobenius_sq_mc: float | None
    stderr: float | None
    reliable: bool | None
    z_vs_closed_form: float | None
    agreement: str | None
    warning: str | None
    relative_frobenius: float | None
    kernel_frobenius_sq: float | None
    attention_l1: float | None
    attention_l1_stderr: float | None
    repeats: int | None
    repeats_needed: int | None
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class GramResult(Result):
    """Gram/attention-matrix error of estimators on a data set: one :class:`GramRow` per (estimator, m).

    Parameters
    ----------
    data : dict
        The data set's description (name, sizes, norms, preprocessing, source).
    m : list of int
        The numbers of features.
    repeats, seed : int
        Monte-Carlo repeats and the seed.
    results : list of GramRow
        The rows.
    clusters : dict or None
        ``hrf_clustered``'s fit (absent without it).

    Examples
    --------
    >>> import rfviz
    >>> rfviz.gram("trig", "iris", queries=8, keys=8, m=[16], repeats=0).to_dict()["m"]
    [16]
    """

    data: dict[str, Any]
    m: list[int]
    repeats: int
    seed: int
    results: list[GramRow] = dataclasses.field(metadata=nested(GramRow, many=True))
    clusters: dict[str, Any] | None = None


GRAM_CONSTRAINTS = {"data": Instance("data", (str,), "a data set name or a file path"),
                    "keys_data": Instance("keys_data", (str,), "a data set name or a file path"),
                    "data_params": Instance("data_params", (Mapping,), "a mapping of clusters parameters"),
                    "queries": QUERIES_PARAM, "keys": KEYS_PARAM,
                    "preprocess": Instance("preprocess", (str,), "comma-separated preprocessing steps or none"),
                    "scale": SCALE_PARAM, "repeats": REPEATS_PARAM, "seed": SEED_PARAM, "device": CPU_DEVICE_PARAM,
                    "params": Instance("params", (Mapping,), "a mapping of estimator parameters")}
"""The constraints of :func:`gram` (names and m are checked by ``estimator_names`` and ``GRAM_M_PARAM``)."""


@api_function(GRAM_CONSTRAINTS)
def gram(names: str | Sequence[str], data: str, *, keys_data: str | None = None,
         data_params: Mapping[str, Any] | None = None, queries: int = 64, keys: int = 64,
         preprocess: str | None = None, scale: float = 1.0, m: int | Sequence[int] = (8, 32, 128),
         repeats: int = 100, seed: int = 0, device: str = "cpu", params: Mapping[str, Any] | None = None,
         **more: Any) -> GramResult:
    """Expected and sampled Gram-matrix error E‖K̂ − K‖²_F of estimators on a data set (``rfviz gram``).

    Parameters
    ----------
    names : str or sequence of str
        Estimators (comma-separated or a list), or ``hrf_clustered``.
    data : str
        ``digits``, ``wine``, ``iris``, ``breast_cancer``, ``clusters`` or a .csv/.npy path.
    keys_data : str, optional
        A second file holding the keys.
    data_params : mapping, optional
        Parameters of ``clusters`` (numbers).
    queries, keys : int
        Points drawn on each side.
    preprocess : str, optional
        Comma-separated steps (default ``center,scale``; none for ``clusters``).
    scale : float
        Mean norm after the ``scale`` step.
    m : int or sequence of int
        Numbers of random features.
    repeats : int
        Monte-Carlo repeats (0: closed form only).
    seed : int
        Seed of the data draw, k-means and Monte Carlo.
    device : str
        ``cpu`` (default), ``auto``, ``cuda`` or ``cuda:N`` (``rfviz.params.DEVICE_PARAM``).
    params : mapping, optional
        Estimator parameters (each goes to the named estimators that have it).
    **more
        More estimator parameters, as keywords.

    Returns
    -------
    GramResult
        ``results``: per estimator and m, the closed-form and sampled Frobenius errors and their agreement.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.gram("trig", "iris", queries=8, keys=8, m=[16], repeats=0)
    >>> res.results[0].frobenius_sq_closed_form > 0
    True
    """
    report = gram_study(names, data, keys_data=keys_data, data_params=data_params, queries=queries, keys=keys,
                        preprocess=preprocess, scale=scale, m=m, repeats=repeats, seed=seed, device=device,
                        params={**(params or {}), **more})
    return GramResult.from_mapping(report)
