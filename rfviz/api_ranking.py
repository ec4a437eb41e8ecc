"""The Python face of "which estimator, tuned, for my data": ``rfviz.rank_estimators`` (the ``rfviz
rank-estimators`` command's computation; ``result.to_dict()`` is its ``--json`` output). The maths is in
rfviz.compute.ranking.

>>> import rfviz
>>> res = rfviz.rank_estimators("iris", kernel="gaussian", length=64, queries=16, keys=16,
...                             names=["trig", "positive"])
>>> res.ranking[0]["estimator"]
'trig'
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .api_features import _load_data
from .compute.ranking import rank_estimators as rank
from .params import ParameterError, check_int
from .textio import jsonable

__all__ = ["RankingResult", "rank_estimators"]

KERNELS = ("softmax", "gaussian", "dot_product")


@dataclasses.dataclass(frozen=True)
class RankingResult:
    """Estimators ranked on a data set, each tuned on it: ``ranking`` (best first at equal feature length, with the
    tuned ``params``, the equal-length and equal-m errors and lengths) and ``monte_carlo`` (the top three sampled)."""

    data: dict[str, Any]
    kernel: str
    length: int
    m: int
    ranking: list[dict[str, Any]]
    monte_carlo: list[dict[str, Any]]
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The result as ``rfviz rank-estimators --json`` prints it (a fresh copy)."""
        return copy.deepcopy(self._json)


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
        Monte-Carlo repeats confirming the top three (0: closed forms only).
    keys_data, data_params, queries, keys, preprocess, scale, seed :
        As in :func:`rfviz.api.gram`.
    device : str
        ``cpu`` or ``cuda`` for the Monte Carlo.

    Returns
    -------
    RankingResult

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.rank_estimators("wine", kernel="gaussian", length=32, queries=8, keys=8, names="trig,positive")
    >>> [row["m_equal_length"] for row in res.ranking]
    [16, 32]
    """
    if kernel not in KERNELS:
        raise ParameterError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    length = check_int("length", length, 1)
    m = None if m is None else check_int("m", m, 1)
    repeats = check_int("repeats", repeats, 0)
    if repeats == 1:
        raise ParameterError("repeats must be 0 (closed forms only) or an integer in [2, inf), got 1")
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    ds = _load_data(data, keys_data=keys_data, queries=queries, keys=keys, preprocess=preprocess, scale=scale,
                    seed=seed, data_params=data_params)
    result = rank(ds.queries, ds.keys, kernel, length, m, names, repeats, seed, device)
    info = {k: v for k, v in ds.describe().items() if not k.endswith("_labels")}
    report = jsonable({"data": info, **result.to_json()})
    report["monte_carlo"] = report.pop("monte_carlo")
    fields = [f.name for f in dataclasses.fields(RankingResult) if f.name != "_json"]
    return RankingResult(**{k: report.get(k) for k in fields}, _json=report)
