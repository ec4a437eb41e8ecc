"""``rfviz.rank_estimators`` (and ``rfviz rank-estimators``): which estimator, tuned, for my data, as a
:class:`RankingResult` of :class:`RankedRow` and :class:`ConfirmationRow`. The maths is in rfviz.compute.ranking.

>>> import rfviz
>>> res = rfviz.rank_estimators("iris", kernel="gaussian", length=64, queries=16, keys=16,
...                             names=["trig", "positive"])
>>> res.ranking[0].estimator
'trig'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..compute.ranking import LENGTH_PARAM
from ..compute.ranking import rank_estimators as rank
from ..params import CPU_DEVICE_PARAM, SEED_PARAM, Param, ParameterError
from .datasets import KEYS_PARAM, QUERIES_PARAM, SCALE_PARAM, data_info, load_dataset
from .results import Result, nested
from .validation import Instance, api_function

__all__ = ["ConfirmationRow", "RankedRow", "RankingResult", "rank_estimators"]

KERNELS = ("softmax", "gaussian", "dot_product")
RANKING_KERNEL_PARAM = Param("kernel", "softmax", "choice", "target kernel", choices=KERNELS)
RANKING_M_PARAM = Param("m", None, "int", "m of the equal-m comparison (default length/2)", low=1)
RANKING_REPEATS_PARAM = Param("repeats", 0, "int", "Monte-Carlo repeats confirming the top three (0: none)", low=0)


@dataclasses.dataclass(frozen=True)
class RankedRow(Result):
    """One estimator of the ranking: tuned parameters, relative Gram error at equal length and at equal m.

    Parameters
    ----------
    estimator : str
        The estimator.
    params : dict
        Its tuned parameters.
    tuned : dict
        What was tuned, and how.
    m_equal_length, length_equal_length : int or None
        m and the feature length at the ranking's length.
    relative_error_equal_length : float or None
        √(Σ MSE)/‖K‖_F there.
    length_equal_m : int or None
        The feature length at the ranking's m.
    relative_error_equal_m : float or None
        √(Σ MSE)/‖K‖_F there.
    note : str
        A remark ("" where none).

    Examples
    --------
    >>> RankedRow.from_mapping({"estimator": "trig", "params": {}, "tuned": {}, "m_equal_length": 8,
    ...     "length_equal_length": 16, "relative_error_equal_length": 0.1, "length_equal_m": 16,
    ...     "relative_error_equal_m": 0.1, "note": ""}).length_equal_m
    16
    """

    estimator: str
    params: dict[str, Any]
    tuned: dict[str, str]
    m_equal_length: int | None
    length_equal_length: int | None
    relative_error_equal_length: float | None
    length_equal_m: int | None
    relative_error_equal_m: float | None
    note: str


@dataclasses.dataclass(frozen=True)
class ConfirmationRow(Result):
    """The Monte-Carlo confirmation of one of the top three: sampled against closed-form Σ MSE.

    Parameters
    ----------
    estimator : str
        The estimator.
    frobenius_sq_closed_form, frobenius_sq_mc, stderr : float or None
        Σ MSE from the closed forms, its Monte-Carlo twin and standard error.
    reliable : bool
        Whether the standard error can be trusted.
    z_vs_closed_form : float or None
        z of the sample against the closed form.
    agreement : str or None
        The verdict (Holm over the three).
    warning : str or None
        Why a sample is unreliable.
    kernel_frobenius_sq : float
        ‖K‖²_F.

    Examples
    --------
    >>> ConfirmationRow.from_mapping({"estimator": "trig", "frobenius_sq_closed_form": 1.0,
    ...     "frobenius_sq_mc": 1.0, "stderr": 0.1, "reliable": True, "z_vs_closed_form": 0.0,
    ...     "agreement": "agrees", "warning": None, "kernel_frobenius_sq": 4.0}).agreement
    'agrees'
    """

    estimator: str
    frobenius_sq_closed_form: float | None
    frobenius_sq_mc: float | None
    stderr: float | None
    reliable: bool
    z_vs_closed_form: float | None
    agreement: str | None
    warning: str | None
    kernel_frobenius_sq: float


@dataclasses.dataclass(frozen=True)
class RankingResult(Result):
    """Estimators ranked on a data set, each tuned on it.

    Parameters
    ----------
    data : dict
        The data set's description.
    kernel : str
        The target kernel.
    length, m : int
        The equal-length comparison's length and the equal-m comparison's m.
    ranking : list of RankedRow
        Best first at equal feature length.
    monte_carlo : list of ConfirmationRow
        The top three sampled (empty without repeats).

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.rank_estimators("wine", kernel="gaussian", length=32, queries=8, keys=8, names=["trig"])
    >>> res.to_dict()["length"]
    32
    """

    data: dict[str, Any]
    kernel: str
    length: int
    m: int
    ranking: list[RankedRow] = dataclasses.field(metadata=nested(RankedRow, many=True))
    monte_carlo: list[ConfirmationRow] = dataclasses.field(metadata=nested(ConfirmationRow, many=True))


RANK_ESTIMATORS_CONSTRAINTS = {
    "data": Instance("data", (str,), "a data set name or a file path"), "kernel": RANKING_KERNEL_PARAM,
    "length": LENGTH_PARAM, "m": RANKING_M_PARAM, "repeats": RANKING_REPEATS_PARAM,
    "names": Instance("names", (str, list, tuple), "estimator names (a list, or comma-separated text)"),
    "keys_data": Instance("keys_data", (str,), "a data set name or a file path"),
    "data_params": Instance("data_params", (Mapping,), "a mapping of clusters parameters"),
    "queries": QUERIES_PARAM, "keys": KEYS_PARAM,
    "preprocess": Instance("preprocess", (str,), "comma-separated preprocessing steps or none"),
    "scale": SCALE_PARAM, "seed": SEED_PARAM, "device": CPU_DEVICE_PARAM}
"""The constraints of :func:`rank_estimators`."""


@api_function(RANK_ESTIMATORS_CONSTRAINTS)
def rank_estimators(data: str, *, kernel: str = "softmax", length: int = 256, m: int | None = None,
                    names: Sequence[str] | str | None = None, repeats: int = 0, keys_data: str | None = None,
                    data_params: Mapping[str, Any] | None = None, queries: int = 64, keys: int = 64,
                    preprocess: str | None = None, scale: float = 1.0, seed: int = 0,
                    device: str = "cpu") -> RankingResult:
    """Rank every applicable estimator on a data set, each with its parameters tuned on the data by minimising the
    closed-form relative Gram error, at equal feature-vector length and at equal m (``rfviz rank-estimators``).

    Parameters
    ----------
    data : str
        ``digits``, ``wine``, ``iris``, ``breast_cancer``, ``clusters`` or a .csv/.npy path.
    kernel : str
        ``softmax``, ``gaussian`` or ``dot_product``.
    length : int
        Real numbers per input vector of the equal-length comparison.
    m : int, optional
        The equal-m comparison's m (default length // 2).
    names : sequence of str or str, optional
        Estimators to rank (default: all of the kernel with a closed form).
    repeats : int
        Monte-Carlo repeats confirming the top three (0: closed forms only; otherwise at least 2).
    keys_data, data_params, queries, keys, preprocess, scale, seed : optional
        The data set's options, as in :func:`rfviz.gram` (``seed`` also seeds the Monte Carlo).
    device : str
        ``cpu`` or ``cuda`` for the Monte Carlo.

    Returns
    -------
    RankingResult
        ``ranking`` (best first) and ``monte_carlo``; ``to_dict()`` is the command's JSON.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.rank_estimators("wine", kernel="gaussian", length=32, queries=8, keys=8, names="trig,positive")
    >>> [row.m_equal_length for row in res.ranking]
    [16, 32]
    """
    if repeats == 1:
        raise ParameterError("repeats must be 0 (closed forms only) or an integer in [2, inf), got 1")
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    elif names is not None and not all(isinstance(n, str) for n in names):
        raise ParameterError(f"names must be estimator names, got {str(names)[:40]!r}")
    ds = load_dataset(data, keys_data=keys_data, data_params=data_params, queries=queries, keys=keys,
                      preprocess=preprocess, scale=scale, seed=seed)
    result = rank(ds.queries, ds.keys, kernel, length, m, names, repeats, seed, device)
    return RankingResult.from_mapping({"data": data_info(ds), **result.to_json()})
