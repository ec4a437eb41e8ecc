"""``rfviz.downstream`` (and ``rfviz downstream``): does a lower kernel error buy a better model, as a
:class:`DownstreamResult` of :class:`DownstreamRow`. The models are fitted by rfviz.compute.downstream.

>>> import rfviz
>>> res = rfviz.downstream("ridge", "synthetic", names="trig", lengths=[16], repeats=2, nystroem=False)
>>> [(row.method, row.length) for row in res.rows]
[('trig', 16)]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..compute import downstream as study
from ..params import MAX_LIST_LENGTH, SEED_PARAM, Param, ParameterError, check, check_int
from .datasets import KEYS_PARAM, QUERIES_PARAM, SCALE_PARAM, data_info, load_dataset
from .results import Result, nested
from .validation import Instance, api_function

__all__ = ["DownstreamResult", "DownstreamRow", "downstream"]

TASKS = ("ridge", "attention")
REGRESSION_SETS = tuple(study.REGRESSION_SETTINGS)
DOWNSTREAM_REPEATS_PARAM = Param("repeats", 8, "int", "feature draws per estimator and length (at least two: the "
                                 "standard errors need them)", low=2, high=1_000_000)
"""``repeats`` of ``rfviz downstream`` (default 8, as the Your-data page)."""
RIDGE_ALPHA_PARAM = Param("alpha", None, "float", "ridge penalty (ridge only)", low=0.0, low_open=True)
INPUT_SCALE_PARAM = Param("input_scale", None, "float", "ridge inputs × this, kernel e^{-|x-y|²/2} on them (ridge "
                          "only)", low=0.0, low_open=True, high=1e3)
"""Above 1000 every off-diagonal kernel value of the bundled sets underflows: the study has nothing to measure."""
_ATTENTION_ONLY = ("keys_data", "data_params", "queries", "keys", "preprocess", "scale")


@dataclasses.dataclass(frozen=True)
class DownstreamRow(Result):
    """One method at one feature length: the downstream error over the repeats and the kernel's error.

    Parameters
    ----------
    method : str
        An estimator or ``nystroem``.
    length : int
        Real numbers per input vector.
    m : int or None
        The estimator's features at that length.
    error, stderr : float or None
        Mean downstream error and its standard error over the repeats.
    kernel_relative_error : float or None
        The closed-form relative kernel error (None for Nyström).
    asked_length : int or None
        The length asked for where Nyström's columns were capped (absent from the JSON otherwise).
    cap : str or None
        Why the length is smaller than asked (Nyström has at most one column per point); absent otherwise.

    Examples
    --------
    >>> DownstreamRow.from_mapping({"method": "trig", "length": 16, "m": 8, "error": 0.3, "stderr": 0.01,
    ...                             "kernel_relative_error": 0.2}).m
    8
    """

    method: str
    length: int
    m: int | None
    error: float | None
    stderr: float | None
    kernel_relative_error: float | None
    asked_length: int | None = None
    cap: str | None = None


@dataclasses.dataclass(frozen=True)
class DownstreamResult(Result):
    """A downstream study.

    Parameters
    ----------
    task : str
        ``ridge`` or ``attention``.
    measure : str
        What ``error`` measures.
    data : dict
        The data set's description.
    settings : dict
        names, lengths, repeats, nystroem, seed and the task's own settings.
    exact : float
        Exact kernel ridge's test RMSE (0 for attention, whose error is relative to exact attention).
    spearman_kernel_vs_downstream : float or None
        Spearman's ρ between kernel error and downstream error over the random-feature rows (None under 3 rows).
    rows : list of DownstreamRow
        Per method and feature length.

    Examples
    --------
    >>> import rfviz
    >>> rfviz.downstream("ridge", "synthetic", names="trig", lengths=[16], repeats=2, nystroem=False).task
    'ridge'
    """

    task: str
    measure: str
    data: dict[str, Any]
    settings: dict[str, Any]
    exact: float
    spearman_kernel_vs_downstream: float | None
    rows: list[DownstreamRow] = dataclasses.field(metadata=nested(DownstreamRow, many=True))


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


def _lengths(lengths: Sequence[int] | np.ndarray) -> tuple[int, ...]:
    if not isinstance(lengths, list | tuple | np.ndarray):
        raise ParameterError(f"lengths must be a list of integers, got {str(lengths)[:40]!r}")
    items = list(lengths)
    if not items or len(items) > MAX_LIST_LENGTH:
        raise ParameterError(f"lengths must list 1 to {MAX_LIST_LENGTH} feature lengths, got {len(items)}")
    out = []
    for t in items:
        out.append(check_int("lengths", t, 1))
    if len(set(out)) != len(out):
        raise ParameterError(f"lengths lists a length twice: {', '.join(map(str, out))}")
    return tuple(out)


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
    input_scale = page_scale if input_scale is None else check(input_scale, INPUT_SCALE_PARAM)
    alpha = page_alpha if alpha is None else check(alpha, RIDGE_ALPHA_PARAM)
    X_train, y_train, X_test, y_test = study.regression_sets(seed)[data]
    _reachable("ridge", names, lengths, X_train.shape[1])
    result = study.ridge_study(X_train, y_train, X_test, y_test, names=names, lengths=lengths, repeats=repeats,
                               scale=input_scale, alpha=alpha, seed=seed, nystroem=nystroem)
    info = {"name": data, "train": int(X_train.shape[0]), "test": int(X_test.shape[0]), "d": int(X_train.shape[1])}
    return info, {"alpha": alpha, "input_scale": input_scale}, result


DOWNSTREAM_CONSTRAINTS = {
    "task": Param("task", "ridge", "choice", "the downstream task", choices=TASKS),
    "data": Instance("data", (str,), "the name of a data set or a path (text)"),
    "names": Instance("names", (str, list, tuple), "a comma-separated text or a list of estimators"),
    "lengths": Instance("lengths", (list, tuple, np.ndarray), "a list of integers"),
    "repeats": DOWNSTREAM_REPEATS_PARAM, "nystroem": Param("nystroem", True, "bool", "add Nystroem"),
    "seed": SEED_PARAM, "alpha": RIDGE_ALPHA_PARAM, "input_scale": INPUT_SCALE_PARAM,
    "keys_data": Instance("keys_data", (str,), "a data set name or a file path"),
    "data_params": Instance("data_params", (Mapping,), "a mapping of clusters parameters"),
    "queries": QUERIES_PARAM, "keys": KEYS_PARAM,
    "preprocess": Instance("preprocess", (str,), "comma-separated preprocessing steps or none"),
    "scale": SCALE_PARAM}
"""The constraints of :func:`downstream`."""


@api_function(DOWNSTREAM_CONSTRAINTS)
def downstream(task: str, data: str, *, names: Sequence[str] | str | None = None,
               lengths: Sequence[int] = study.PAGE_LENGTHS, repeats: int = DOWNSTREAM_REPEATS_PARAM.default,
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
    lengths : sequence of int
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
    keys_data, data_params, queries, keys, preprocess, scale : optional
        The attention task's data options, as in :func:`rfviz.gram` (queries and keys default 64, scale 1).

    Returns
    -------
    DownstreamResult
        ``to_dict()`` is the command's JSON.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.downstream("attention", "iris", names=["trig", "positive"], lengths=[16, 64], repeats=2,
    ...                        queries=12, keys=12, scale=0.5)
    >>> [(row.method, row.length) for row in res.rows]
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
        ds = load_dataset(data, keys_data=keys_data, queries=64 if queries is None else queries,
                          keys=64 if keys is None else keys, preprocess=preprocess,
                          scale=1.0 if scale is None else scale, seed=seed, data_params=data_params)
        _reachable("attention", names_t, lengths_t, ds.d)
        info = data_info(ds)
        settings = {"value_columns": study.VALUE_DIM}
        result = study.attention_study(ds.queries, ds.keys, study.attention_values(len(ds.keys), seed),
                                       names=names_t, lengths=lengths_t, repeats=repeats, seed=seed,
                                       nystroem=nystroem)
    body = result.to_json()
    return DownstreamResult.from_mapping({"task": task, "measure": body.pop("task"), "data": info,
                                          "settings": {"names": list(names_t), "lengths": list(lengths_t),
                                                       "repeats": repeats, "nystroem": nystroem, "seed": seed,
                                                       **settings}, **body})
