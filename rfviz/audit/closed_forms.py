"""rfviz's closed-form MSE of one mechanism as ``mse(x, y) -> float``, the form ``rfviz check --mse`` takes: what
each audited library's feature map is checked against (``rfviz.audit.cases``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def closed_form(name: str, **params: Any) -> Callable[[np.ndarray, np.ndarray], float]:
    """``mse(x, y)``: built-in estimator ``name``'s closed-form MSE (``Estimator.mse``) at one pair in R^d.

    Parameters
    ----------
    name : str
        A built-in estimator (``rfviz estimators``).
    **params
        Its parameters (m, kernel, coupling, …).

    Returns
    -------
    callable
        ``mse(x, y) -> float`` for x, y of shape (d,).

    Examples
    --------
    >>> mse = closed_form("trig", m=4, kernel="gaussian")
    >>> mse(np.array([1.0, 0.0]), np.array([1.0, 0.0]))
    0.0
    """
    from ..estimators import create

    est = create(name, **params)

    def mse(x: np.ndarray, y: np.ndarray) -> float:
        x, y = np.asarray(x, float), np.asarray(y, float)
        return float(est.mse(x, y, d=x.shape[-1]))

    mse.__name__ = f"{name}_mse"
    return mse
