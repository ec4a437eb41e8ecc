"""The Python face of "does it hold downstream": ``rfviz.downstream`` (the ``rfviz downstream`` command's computation;
``result.to_dict()`` is its ``--json`` output). The models are fitted by rfviz.compute.downstream.

>>> import rfviz
>>> res = rfviz.downstream("ridge", "synthetic", names="trig", lengths=[16], repeats=2, nystroem=False)
>>> [(row["method"], row["length"]) for row in res.rows]
[('trig', 16)]
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .api_features import _load_data
from .compute import downstream as study
from .params import MAX_LIST_LENGTH, Param, ParameterError, check, check_int
from .textio import jsonable

__all__ = ["DownstreamResult", "downstream"]

TASKS = ("ridge", "attention")
REGRESSION_SETS = tuple(study.REGRESSION_SETTINGS)
DOWNSTREAM_REPEATS_PARAM = Param("repeats", 8, "int", "feature draws per estimator and length (at least two: the "
                                 "standard errors need them)", low=2, high=1_000_000)
"""``repeats`` of ``rfviz downstream`` (default 8, as the Your-data page)."""
_ATTENTION_ONLY = ("keys_data", "data_params", "queries", "keys", "preprocess", "scale")


@dataclasses.dataclass(frozen=True)
class DownstreamResult:
    """A downstream study: ``exact`` (exact kernel ridge's test RMSE; 0 for attention, whose error is relative to
    exact attention), ``rows`` (per method and feature length: ``error`` ± ``stderr`` over the repeats, ``m``, the
    closed-form ``kernel_relative_error``; Nyström rows have none) and ``spearman_kernel_vs_downstream`` (Spearman's
    ρ between kernel error and downstream error over the random-feature rows; None under 3 rows)."""

    task: str
    measure: str
    data: dict[str, Any]
    settings: dict[str, Any]
    exact: float
    spearman_kernel_vs_downstream: float | None
    rows: list[dict[str, Any]]
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The result as ``rfviz downstream --json`` prints it (a fresh copy).

        Returns
        -------
        dict
            A JSON-ready copy of the result.
        """
        return copy.deepcopy(self._json)


def _names(task: str, names: Sequence[str] | str | None) -> tuple[str, ...]:
    allowed = study.RIDGE_ESTIMATORS if task == "ridge" else study.ATTENTION_ESTIMATORS
    if names is None:
        return study.PAGE_RIDGE_ESTIMATORS if task == "ridge" else study.ATTENTION_ESTIMATORS
    if not isinstance(names, str | Sequence) or isinstance(names, bytes):
        raise ParameterError(f"names must be a comma-separated text or a list of estimators, got {names!r}")
    items = [n.strip() for n in names.split(",")] if isinstance(names, str) else [str(n) for n in names]
    if not items or any(not n for n in items):
        raise ParameterError(f"names must list estimators of the {task} task: {', '.join(allowed)}, got {names!r}")
    for n in items:
        if n not in allowed:
            raise ParameterError(f"names: {n!r} is not an estimator of the {task} task; choose from "
                                 f"{', '.join(allowed)}")
    if len(set(items)) != len(items):
        raise ParameterError(f"names lists an estimator twice: {', '.join(items)}")
    return tuple(items)


def _lengths(lengths: Sequence[int] | str) -> tuple[int, ...]:
    if not isinstance(lengths, str | Sequence) or isinstance(lengths, bytes):
        raise ParameterError(f"lengths must be a comma-separated text or a list of integers, got {lengths!r}")
    items: list[Any] = [t.strip() for t in lengths.split(",")] if isinstance(lengths, str) else list(lengths)
    if not items or len(items) > MAX_LIST_LENGTH:
        raise ParameterError(f"lengths must list 1 to {MAX_LIST_LENGTH} feature lengths, got {len(items)}")
    out = []
    for t in items:
        try:
            value = int(t) if isinstance(t, str) else t
        except ValueError:
            raise ParameterError(f"lengths must be integers in [1, inf), got {t!r}") from None
        out.append(check_int("lengths", value, 1))
    if len(set(out)) != len(out):
        raise ParameterError(f"lengths lists a length twice: {', '.join(map(str, out))}")
    return tuple(out)


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ParameterError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _reachable(task: str, names: Sequence[str], lengths: Sequence[int], d: int) -> None:
    """Every (estimator, length) must fit m ≥ 1, or the row would be missing from the table."""
    kernel = "gaussian" if task == "ridge" else "softmax"
    for n in names:
        for length in lengths:
            if study.m_for_length(n, kernel, length, d, {}) is None:
                raise ParameterError(f"lengths: {length} is too short for one feature vector of {n} at d = {d}; "
                                     f"use longer lengths")


def _ridge(data: str, names: tuple[str, ...], lengths: tuple[int, ...], repeats: int, nystroem: bool, seed: int,
           alpha: float | None, input_scale: float | None) -> tuple[dict[str, Any], dict[str, Any], study.Study]:
    if data not in REGRESSION_SETS:
        raise ParameterError(f"the ridge task needs a regression target: data must be one of "
                             f"{', '.join(REGRESSION_SETS)} (bundled), got {data!r}")
    page_scale, page_alpha = study.REGRESSION_SETTINGS[data]
    input_scale = page_scale if input_scale is None else _positive("input_scale", input_scale)
    alpha = page_alpha if alpha is None else _positive("alpha", alpha)
    X_train, y_train, X_test, y_test = study.regression_sets(seed)[data]
    _reachable("ridge", names, lengths, X_train.shape[1])
    result = study.ridge_study(X_train, y_train, X_test, y_test, names=names, lengths=lengths, repeats=repeats,
                               scale=input_scale, alpha=alpha, seed=seed, nystroem=nystroem)
    info = {"name": data, "train": int(X_train.shape[0]), "test": int(X_test.shape[0]), "d": int(X_train.shape[1])}
    return info, {"alpha": alpha, "input_scale": input_scale}, result


def downstream(task: str, data: str, *, names: Sequence[str] | str | None = None,
               lengths: Sequence[int] | str = study.PAGE_LENGTHS, repeats: int = DOWNSTREAM_REPEATS_PARAM.default,
               nystroem: bool = True, seed: int = 0, alpha: float | None = None, input_scale: float | None = None,
               keys_data: str | None = None, data_params: Mapping[str, Any] | None = None, queries: int | None = None,
               keys: int | None = None, preprocess: str | None = None, scale: float | None = None) -> DownstreamResult:
    """What a kernel approximation does to a model fitted on it (``rfviz downstream``): ridge regression on random
    features against exact Gaussian kernel ridge, or softmax attention from random features against exact
    attention, with Nyström at the same feature length and the rank correlation of kernel and downstream errors.

    Parameters
    ----------
    task : str
        ``ridge`` (test RMSE of ridge regression on the features; exact kernel ridge as ``exact``) or ``attention``
        (relative output error ‖ÂV − AV‖_F/‖AV‖_F, V drawn from ``seed``).
    data : str
        ``ridge``: a bundled regression set with targets, ``diabetes`` or ``synthetic`` (75 %/25 % split from
        ``seed``). ``attention``: ``digits``, ``wine``, ``iris``, ``breast_cancer``, ``clusters`` or a .csv/.npy path.
    names : sequence of str or str, optional
        Estimators (comma-separated text allowed). Default: trig, positive_antithetic, gerf (ridge) or every
        attention estimator, as the Your-data page.
    lengths : sequence of int or str
        Feature-vector lengths (real numbers per input; each estimator gets the largest m that fits).
    repeats : int
        Feature draws per (estimator, length), at least 2 (the standard errors need them).
    nystroem : bool
        Add scikit-learn's Nystroem at each length.
    seed : int
        Seed of the split or data draw, of V and of the features.
    alpha : float, optional
        Ridge penalty (ridge only; default 1 for diabetes, 0.05 for synthetic).
    input_scale : float, optional
        Ridge inputs × input_scale, kernel e^{−|x−y|²/2} on them (ridge only; default 0.3 diabetes, 0.6 synthetic).
    keys_data, data_params, queries, keys, preprocess, scale :
        The attention task's data options, as in :func:`rfviz.api.gram` (queries and keys default 64, scale 1).

    Returns
    -------
    DownstreamResult
        ``to_dict()`` is the command's JSON.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.downstream("attention", "iris", names=["trig", "positive"], lengths=[16, 64], repeats=2,
    ...                        queries=12, keys=12, scale=0.5)
    >>> [(row["method"], row["length"]) for row in res.rows]
    [('trig', 16), ('trig', 64), ('positive', 16), ('positive', 64), ('nystroem', 16), ('nystroem', 24)]
    """
    if task not in TASKS:
        raise ParameterError(f"task must be one of {', '.join(TASKS)}, got {task!r}")
    if not isinstance(data, str):
        raise ParameterError(f"data must be the name of a data set or a path (text), got {data!r}")
    if not isinstance(nystroem, bool):
        raise ParameterError(f"nystroem must be True or False, got {nystroem!r}")
    names_t, lengths_t = _names(task, names), _lengths(lengths)
    repeats = check(repeats, DOWNSTREAM_REPEATS_PARAM)
    seed = check_int("seed", seed, 0)
    given = {"keys_data": keys_data, "data_params": data_params or None, "queries": queries, "keys": keys,
             "preprocess": preprocess, "scale": scale}
    if task == "ridge":
        extra = [k for k in _ATTENTION_ONLY if given[k] is not None]
        if extra:
            raise ParameterError(f"{', '.join(extra)}: the attention task's data options; the ridge task takes a "
                                 f"bundled regression set ({', '.join(REGRESSION_SETS)})")
        info, settings, result = _ridge(data, names_t, lengths_t, repeats, nystroem, seed, alpha, input_scale)
    else:
        extra = [k for k, v in (("alpha", alpha), ("input_scale", input_scale)) if v is not None]
        if extra:
            raise ParameterError(f"{', '.join(extra)}: the ridge task's options, not attention's")
        ds = _load_data(data, keys_data=keys_data, queries=64 if queries is None else queries,
                        keys=64 if keys is None else keys, preprocess=preprocess, scale=1.0 if scale is None else scale,
                        seed=seed, data_params=data_params)
        _reachable("attention", names_t, lengths_t, ds.d)
        info = {k: v for k, v in ds.describe().items() if not k.endswith("_labels")}
        settings = {"value_columns": study.VALUE_DIM}
        result = study.attention_study(ds.queries, ds.keys, study.attention_values(len(ds.keys), seed),
                                       names=names_t, lengths=lengths_t, repeats=repeats, seed=seed,
                                       nystroem=nystroem)
    body = result.to_json()
    report = jsonable({"task": task, "measure": body.pop("task"), "data": info,
                       "settings": {"names": list(names_t), "lengths": list(lengths_t), "repeats": repeats,
                                    "nystroem": nystroem, "seed": seed, **settings}, **body})
    fields = [f.name for f in dataclasses.fields(DownstreamResult) if f.name != "_json"]
    return DownstreamResult(**{k: report.get(k) for k in fields}, _json=report)
