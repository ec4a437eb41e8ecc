"""Monte-Carlo assertions shared by the test modules: tolerances come from standard errors, never constants."""

from __future__ import annotations

import numpy as np

from rfviz.engine import MCResult, monte_carlo
from rfviz.estimators.base import Estimator

Z_TOL = 4.0


def assert_mc_matches_closed_form(est: Estimator, x: np.ndarray, y: np.ndarray, *, trials: int = 20000,
                                  seed: int = 0, d: int | None = None, z_tol: float = Z_TOL) -> MCResult:
    """Sampled MSE within ``z_tol`` standard errors of the closed form, and the sampled mean unbiased."""
    res = monte_carlo(est, x, y, d=d, trials=trials, seed=seed, device="cpu")
    log_mse = est.log_mse(np.atleast_2d(x), np.atleast_2d(y), d=d).ravel()
    z = res.z_against(log_mse)
    assert np.all(np.abs(z) < z_tol), f"{est}: MSE z-scores {z} (closed {np.exp(log_mse)}, MC {res.mse})"
    bz = res.bias_z
    assert np.all(np.abs(bz) < z_tol), f"{est}: bias z-scores {bz}"
    return res
