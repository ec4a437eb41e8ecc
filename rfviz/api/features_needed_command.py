"""``rfviz.features_needed`` (and ``rfviz features-needed``): the smallest number of features m whose relative
error √MSE/|K| is at most ε, at a pair, over an (r, θ) region or over a data set's Gram matrix, as a
:class:`FeaturesNeededResult`. The maths is in rfviz.compute.features.

>>> import rfviz
>>> res = rfviz.features_needed("trig", 0.1, r=1.0, theta=1.0, d=4)
>>> res.m, res.method
(46, 'exact')
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..compute.features import EPS_PARAM, OVER_PARAM, data_target, grid_target
from ..compute.features import features_needed as solve
from ..estimators import get_estimator
from ..geometry import snap_theta
from ..params import CLI_D_PARAM, R_PARAM, SEED_PARAM, THETA_PARAM, ParameterError, check
from .datasets import KEYS_PARAM, QUERIES_PARAM, SCALE_PARAM, data_info, load_dataset
from .results import Result
from .validation import Instance, ListOf, api_function

__all__ = ["FeaturesNeededResult", "features_needed"]

THETA_VALUES = ListOf(dataclasses.replace(THETA_PARAM, high=math.pi + 1e-3), scalar_ok=True)
"""θ values: numbers in [0, π] (just above π is read as π)."""


@dataclasses.dataclass(frozen=True)
class FeaturesNeededResult(Result):
    """The smallest m whose relative error is at most ε (``m`` None where unreachable, ``reason`` says why).

    Parameters
    ----------
    estimator : str
        The estimator.
    eps : float
        The target relative error.
    over : str
        ``point``, ``worst``, ``mean`` or ``gram``.
    params : dict
        The estimator's parameters (a hybrid's chosen ``n`` among them).
    m, n : int or None
        The features found, and a hybrid's λ features.
    feature_length : int or None
        Real numbers per input vector.
    relative_error, relative_error_below : float or None
        The predicted relative error at m and at m − 1.
    method : str or None
        ``exact`` (m = ⌈C/ε²⌉ where MSE = C/m) or ``search``.
    mse_times_m_over_k2 : float or None
        C of MSE = C·K²/m where the MSE is exactly that.
    reason : str or None
        Why m is unreachable.
    worst_at : dict or None
        The worst pair of a region (absent otherwise).
    splits : list or None
        A hybrid's (m, n) splits tried (absent otherwise).
    inputs : dict
        r, theta, d (and embedding), or ``data``: the data set's description.

    Examples
    --------
    >>> import rfviz
    >>> rfviz.features_needed("trig", 0.1, r=1.0, theta=1.0, d=16).to_dict()["m"]
    46
    """

    estimator: str
    eps: float
    over: str
    params: dict[str, Any]
    m: int | None
    n: int | None
    feature_length: int | None
    relative_error: float | None
    relative_error_below: float | None
    method: str | None
    mse_times_m_over_k2: float | None
    reason: str | None
    worst_at: dict[str, Any] | None = None
    splits: list[dict[str, Any]] | None = None
    inputs: dict[str, Any] = dataclasses.field(default_factory=dict)


FEATURES_NEEDED_CONSTRAINTS = {
    "estimator": Instance("estimator", (str,), "the name of a registered estimator"), "eps": EPS_PARAM,
    "r": ListOf(R_PARAM, scalar_ok=True), "theta": THETA_VALUES, "d": CLI_D_PARAM,
    "over": OVER_PARAM, "embedding": Instance("embedding", (str,), "the name of an embedding"),
    "data": Instance("data", (str,), "a data set name or a file path"),
    "keys_data": Instance("keys_data", (str,), "a data set name or a file path"),
    "data_params": Instance("data_params", (Mapping,), "a mapping of clusters parameters"),
    "queries": QUERIES_PARAM, "keys": KEYS_PARAM,
    "preprocess": Instance("preprocess", (str,), "comma-separated preprocessing steps or none"),
    "scale": SCALE_PARAM, "seed": SEED_PARAM}
"""The constraints of :func:`features_needed` (the estimator's parameters are checked by its own Params)."""


def _values(value: Any, default: float, snap: bool = False) -> np.ndarray:
    """One number or a list of numbers (validated by the constraints) as a float array; θ just above π is π."""
    arr = np.atleast_1d(np.asarray(default if value is None else value, dtype=float)).ravel()
    return np.array([snap_theta(float(t)) for t in arr]) if snap else arr


@api_function(FEATURES_NEEDED_CONSTRAINTS)
def features_needed(estimator: str, eps: float, *, r: float | Sequence[float] | None = None,
                    theta: float | Sequence[float] | None = None, d: int | None = None,
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
        Target relative error (0.1 = 10 %), one number.
    r, theta : float or sequence of float, optional
        The pair x = r·e1, y = r(cos θ·e1 + sin θ·e2) (defaults 1, π/2); several values make the region r × θ.
        Numbers only (``math.pi / 2``, not ``"pi/2"``).
    d : int, optional
        Input dimension (default 2; the data's with ``data``).
    over : str, optional
        ``point`` (default for one pair), ``worst`` (default for a region), ``mean`` (root-mean square of the
        pairs' relative errors) or ``gram`` (default with ``data``: the Gram matrix's relative Frobenius error).
    embedding : str
        Placement of the pairs in R^d.
    data : str, optional
        A data set instead of (r, θ): ``digits``, ``wine``, ``iris``, ``breast_cancer``, ``clusters`` or a
        .csv/.npy path.
    keys_data, data_params, queries, keys, preprocess, scale, seed : optional
        The data set's options, as in :func:`rfviz.gram`.
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
        raise ParameterError("m is what features_needed finds; do not give m")
    cls = get_estimator(estimator)
    if data is not None:
        if r is not None or theta is not None or d is not None:
            raise ParameterError("give either data or r, theta and d, not both")
        if over not in (None, "gram"):
            raise ParameterError(f"over must be gram with a data set, got {over!r}")
        ds = load_dataset(data, keys_data=keys_data, data_params=data_params, queries=queries, keys=keys,
                          preprocess=preprocess, scale=scale, seed=seed)
        info = data_info(ds)
        target = data_target(ds.queries, ds.keys, info)
        inputs: dict[str, Any] = {"data": info}
    else:
        rr, tt = _values(r, 1.0), _values(theta, math.pi / 2, snap=True)
        check(tt, THETA_PARAM)
        dd = check(2 if d is None else d, CLI_D_PARAM)
        over = check(over or ("point" if rr.size * tt.size == 1 else "worst"), OVER_PARAM)
        target = grid_target(rr, tt, dd, over, embedding, cls.isotropic)
        inputs = {"r": rr.tolist() if rr.size > 1 else float(rr[0]),
                  "theta": tt.tolist() if tt.size > 1 else float(tt[0]), "d": dd,
                  **({"embedding": embedding} if embedding != "canonical" else {})}
    answer = solve(estimator, eps, target, params)
    return FeaturesNeededResult.from_mapping({**answer.to_json(), "inputs": inputs})
