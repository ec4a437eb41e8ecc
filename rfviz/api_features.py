"""The Python face of "how many features": ``rfviz.features_needed`` (the ``rfviz features-needed`` command's
computation; ``result.to_dict()`` is its ``--json`` output). The maths is in rfviz.compute.features.

>>> import rfviz
>>> res = rfviz.features_needed("trig", 0.1, r=1.0, theta=1.0, d=4)
>>> res.m, res.method
(46, 'exact')
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import data as datasets
from .compute.features import OVER_PARAM, data_target, grid_target
from .compute.features import features_needed as solve
from .estimators import get_estimator
from .geometry import parse_real, snap_theta
from .params import CLI_D_PARAM, MAX_LIST_LENGTH, ParameterError, check
from .textio import jsonable

__all__ = ["FeaturesNeededResult", "features_needed"]


@dataclasses.dataclass(frozen=True)
class FeaturesNeededResult:
    """The smallest m whose relative error is at most ε (``m`` None where unreachable, ``reason`` says why).

    ``n`` is a hybrid's number of λ features (chosen with m unless given), ``feature_length`` the real numbers per
    input vector, ``relative_error`` / ``relative_error_below`` the predicted relative error at m and m − 1,
    ``method`` ``exact`` (m = ⌈C/ε²⌉ where MSE = C/m, checked on the closed forms) or ``search``."""

    estimator: str
    eps: float
    over: str
    m: int | None
    n: int | None
    feature_length: int | None
    relative_error: float | None
    relative_error_below: float | None
    method: str | None
    reason: str | None
    params: dict[str, Any]
    inputs: dict[str, Any]
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The result as ``rfviz features-needed --json`` prints it (a fresh copy)."""
        return copy.deepcopy(self._json)


def _values(name: str, value: Any, default: float) -> np.ndarray:
    """A number, a comma-separated text of numbers (``pi/2`` allowed for one value) or a sequence, as an array."""
    if value is None:
        return np.array([default])
    if isinstance(value, str):
        items = [t for t in value.split(",") if t.strip()] if "," in value else [value]
        if len(items) > MAX_LIST_LENGTH:
            raise ParameterError(f"{name} may hold at most {MAX_LIST_LENGTH} values, got {len(items)}")
        value = [parse_real(name, t.strip()) for t in items]
    arr = np.atleast_1d(np.asarray(value, dtype=float)).ravel()
    if name == "theta":
        arr = np.array([snap_theta(float(t)) for t in arr])
    return arr


def _load_data(data: str, *, keys_data: str | None, queries: int, keys: int, preprocess: str | None, scale: float,
               seed: int, data_params: Mapping[str, Any] | None) -> Any:
    steps = datasets.parse_preprocess(preprocess if preprocess is not None else
                                      ("none" if data == "clusters" else "center,scale"))
    return datasets.load(data, keys_data, queries=queries, keys=keys, steps=steps, scale=scale, seed=seed,
                         options={k: str(v) for k, v in (data_params or {}).items()})


def features_needed(estimator: str, eps: float, *, r: float | Sequence[float] | str | None = None,
                    theta: float | Sequence[float] | str | None = None, d: int | None = None,
                    over: str | None = None, embedding: str = "canonical", data: str | None = None,
                    keys_data: str | None = None, data_params: Mapping[str, Any] | None = None, queries: int = 64,
                    keys: int = 64, preprocess: str | None = None, scale: float = 1.0, seed: int = 0,
                    **params: Any) -> FeaturesNeededResult:
    """The smallest number of features m whose relative error ``√MSE/|K|`` is at most ``eps``
    (``rfviz features-needed``).

    Parameters
    ----------
    estimator : str
        A registered estimator with a closed-form MSE.
    eps : float
        Target relative error (0.1 = 10 %).
    r, theta : float or sequence of float, optional
        The pair x = r·e1, y = r(cos θ·e1 + sin θ·e2) (defaults 1, π/2); several values make the region r × θ.
    d : int, optional
        Input dimension (default 2; the data's with ``data``).
    over : str, optional
        ``point`` (default for one pair), ``worst`` (default for a region), ``mean`` (root-mean square of the
        pairs' relative errors) or ``gram`` (default with ``data``: the Gram matrix's relative Frobenius error).
    embedding : str
        Placement of the pairs in R^d.
    data : str, optional
        A data set instead of (r, θ): ``digits``, ``wine``, ``iris``, ``breast_cancer``, ``clusters`` or a
        .csv/.npy path; ``keys_data``, ``data_params``, ``queries``, ``keys``, ``preprocess``, ``scale``, ``seed``
        as in :func:`rfviz.api.gram`.
    **params
        The estimator's other parameters (``n`` fixes a hybrid's λ features; otherwise they are chosen with m).

    Returns
    -------
    FeaturesNeededResult
        ``m`` (None with ``reason`` where unreachable), ``n``, ``feature_length``, ``relative_error``, ``method``.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.features_needed("positive", 0.1, r=[0.5, 1.0], theta=[0.0, 1.5, 3.0], d=8)
    >>> res.over, res.m is not None
    ('worst', True)
    >>> rfviz.features_needed("positive", 0.1, r=3.0, theta=0.0, d=8).reason[:8]
    'needs m '
    """
    if "m" in params:
        raise ParameterError("m is what features-needed finds; do not give m=")
    cls = get_estimator(estimator)
    if data is not None:
        if r is not None or theta is not None or d is not None:
            raise ParameterError("give either data=... or r, theta and d, not both")
        if over not in (None, "gram"):
            raise ParameterError(f"over must be gram with a data set, got {over!r}")
        ds = _load_data(data, keys_data=keys_data, queries=queries, keys=keys, preprocess=preprocess, scale=scale,
                        seed=seed, data_params=data_params)
        info = {k: v for k, v in ds.describe().items() if not k.endswith("_labels")}
        target = data_target(ds.queries, ds.keys, info)
        inputs: dict[str, Any] = {"data": info}
    else:
        rr, tt = _values("r", r, 1.0), _values("theta", theta, math.pi / 2)
        dd = check(2 if d is None else d, CLI_D_PARAM)
        over = check(over or ("point" if rr.size * tt.size == 1 else "worst"), OVER_PARAM)
        target = grid_target(rr, tt, dd, over, embedding, cls.isotropic)
        inputs = {"r": rr.tolist() if rr.size > 1 else float(rr[0]),
                  "theta": tt.tolist() if tt.size > 1 else float(tt[0]), "d": dd,
                  **({"embedding": embedding} if embedding != "canonical" else {})}
    answer = solve(estimator, eps, target, params)
    report = jsonable({**answer.to_json(), "inputs": inputs})
    names = [f.name for f in dataclasses.fields(FeaturesNeededResult) if f.name != "_json"]
    return FeaturesNeededResult(**{k: report.get(k) for k in names}, _json=report)
