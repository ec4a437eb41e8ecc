"""Coupled random projections (Simplex Random Features paper): closed-form MSE under coupling.

Placeholder contract, filled in by the coupling work (issue 3): ``coupled_log_mse(estimator, stats)`` returns
the natural-log MSE of a softmax-kernel estimator whose ω are coupled (``estimator.params['coupling']``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .estimators.base import Estimator, PairStats


def coupled_log_mse(estimator: Estimator, s: PairStats) -> np.ndarray:
    """log MSE (softmax kernel) of ``estimator`` under its non-iid coupling."""
    raise NotImplementedError(f"no closed form yet for coupling={estimator.params.get('coupling')!r}")


def has_coupled_closed_form(estimator: Estimator) -> bool:
    """Whether ``coupled_log_mse`` covers this estimator and coupling."""
    return False
