"""MSE explorer, the computing half: analytic and sampled MSE surfaces of any registered estimators over a θ × r grid,
the plotted quantities derived from them, and 1-D parameter sweeps. Drawing is in rfviz.figures.explorer.

Inputs follow the canonical embedding x = r·e1, y = r(cos θ·e1 + sin θ·e2) in R^d (same-length inputs,
as in HRF Fig. 1), or a coordinate embedding for estimators that depend on coordinates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..engine import monte_carlo
from ..figures.explorer import QUANTITIES
from ..numerics import LOG10
from ..params import ParameterError
from ..verdicts import (
    FWER_LEVEL,
    exact_at_roundoff,
    family_agreement,
    family_disagreements,
    precision_loss,
    roundoff_floor,
)
from .catalog import make_estimator, short_of, title_of

__all__ = ["FWER_LEVEL", "QUANTITIES", "Sampled", "Surface",
           "analytic_surface", "make_axes", "param_sweep", "quantity", "sampled_quantity", "sampled_surface",
           "short_of", "title_of"]

def make_axes(r_max: float, n_r: int, n_theta: int, r_min: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """r ∈ [r_min, r_max] and θ ∈ [0, π] grids; ParameterError naming the bad value otherwise.

    By default r starts at r_max/n_r, not 0: at r = 0 the angle θ is undefined (x = y = 0).
    """
    if not (np.isfinite(r_max) and r_max > 0):
        raise ParameterError(f"r_max must be a number in (0, inf), got {r_max:g}")
    if r_min is None:
        r_min = r_max / n_r if n_r >= 1 else 0.0
    if not (0 <= r_min < r_max):
        raise ParameterError(f"r_min must be in [0, r_max) = [0, {r_max:g}), got {r_min:g}")
    for label, n in (("grid points in r", n_r), ("grid points in θ", n_theta)):
        if int(n) != n or n < 2 or n > 400:
            raise ParameterError(f"{label} must be an integer in [2, 400], got {n}")
    return np.linspace(r_min, r_max, int(n_r)), np.linspace(0.0, np.pi, int(n_theta))


@dataclass
class Surface:
    """Analytic log₁₀ MSE and log₁₀ |K| of one estimator on the (r, θ) grid (arrays of shape (len(r), len(θ)))."""

    name: str
    log10_mse: np.ndarray
    log10_kernel: np.ndarray
    closed_form: bool
    log10_roundoff: float = -np.inf
    """log₁₀ of rfviz.verdicts.roundoff_floor(d, m): cells whose MSE/K² is at or below it are exact at round-off
    (shown as exact, never setting a colour scale)."""


def analytic_surface(name: str, params: Mapping[str, Any], kernel: str, d: int, r: np.ndarray,
                     theta: np.ndarray, embedding: str = "canonical") -> Surface:
    """Closed-form log₁₀ MSE on the grid r × θ (NaN everywhere when the estimator has no closed form here)."""
    est = make_estimator(name, params, kernel)
    r = np.asarray(r, dtype=float)
    theta = np.asarray(theta, dtype=float)
    x, y = est.grid_pairs(r[:, None], theta[None, :], d, embedding)
    log_k, _ = est.kernel_log_value(x, y, d)
    log10_k = np.asarray(log_k, dtype=float) / LOG10
    log10_floor = float(np.log10(roundoff_floor(d, int(est.params.get("m", 1)))))
    grid_shape = (len(r), len(theta))
    if log10_k.shape != grid_shape:  # averaging embeddings (rotation_average): a stack of pairs per grid point
        log10_k = np.reshape(log10_k, (*grid_shape, -1))[..., 0]
    if not est.closed_form_available():
        return Surface(name, np.full(grid_shape, np.nan), log10_k, False, log10_floor)
    log_mse = est.log_mse(x, y, d)
    if log_mse.shape != grid_shape:  # mean MSE over the stack, in log space
        stack = np.reshape(log_mse, (*grid_shape, -1))
        log_mse = logsumexp(stack, axis=-1) - np.log(stack.shape[-1])
    return Surface(name, log_mse / LOG10, log10_k, True, log10_floor)


@dataclass
class Sampled:
    """Monte-Carlo log₁₀ MSE, its standard error and the z-score against the closed form, on a grid."""

    name: str
    log10_mse: np.ndarray
    log10_stderr: np.ndarray
    z: np.ndarray
    trials: int
    device: str
    reliable: np.ndarray | None = None
    """Per point: MCResult.reliable (None: all reliable). Unreliable points are heavy-tailed, not disagreements."""
    trials_needed: np.ndarray | None = None
    """Per point: trials for ±10 % (one standard error) from this run's variance; inf where no count suffices."""
    exact: np.ndarray | None = None
    """Per point: closed form and sample both at float64 round-off (rfviz.verdicts.exact_at_roundoff): not tested."""

    @property
    def exact_mask(self) -> np.ndarray:
        return np.zeros(np.shape(self.z), bool) if self.exact is None else np.asarray(self.exact, bool)

    def outcomes(self) -> dict[str, int]:
        """How many points got each verdict word of rfviz.verdicts (``agrees``, ``disagrees``, ``unreliable``,
        ``exact``, ``untested``), over this grid as one family; the counts add up to the grid's size."""
        words = family_agreement(np.ravel(self.z), np.ravel(self.reliable_mask), np.ravel(self.exact_mask))
        counts = {"agrees": 0, "disagrees": 0, "unreliable": 0, "exact": 0, "untested": 0}
        for w in words:
            counts[w or "untested"] += 1
        return counts

    @property
    def reliable_mask(self) -> np.ndarray:
        return np.ones(np.shape(self.z), bool) if self.reliable is None else np.asarray(self.reliable, bool)

    @property
    def disagree_mask(self) -> np.ndarray:
        """Reliable points where analytic and sampled MSE disagree, family-wise over this grid
        (rfviz.verdicts.family_disagreements: Holm at level 1 %; exact points are not tested)."""
        return family_disagreements(self.z, self.reliable_mask, self.exact_mask)

    @property
    def disagreements(self) -> int:
        """Reliable points where analytic and sampled MSE disagree (Holm over the grid at 1 %)."""
        return int(np.sum(self.disagree_mask))

    @property
    def unreliable(self) -> int:
        """Heavy-tailed points: the sampled MSE is unreliable at this trial count (no z-score means anything);
        exact points are never unreliable."""
        return int(np.sum(~self.reliable_mask & ~self.exact_mask))

    def trials_for_ten_percent(self) -> float:
        """The most trials any point of this grid needs for ±10 % (inf when some point is hopeless; NaN unknown)."""
        if self.trials_needed is None:
            return float("nan")
        return float(np.max(self.trials_needed))


def sampled_surface(name: str, params: Mapping[str, Any], kernel: str, d: int, r: np.ndarray, theta: np.ndarray,
                    trials: int, seed: int = 0, embedding: str = "canonical", device: str = "auto",
                    progress: Callable[[float], None] | None = None,
                    cancel: Callable[[], bool] | None = None) -> Sampled:
    """Sampled MSE on the grid r × θ through rfviz.engine.monte_carlo (cancellable, with progress)."""
    est = make_estimator(name, params, kernel)
    r = np.asarray(r, dtype=float)
    theta = np.asarray(theta, dtype=float)
    x, y = est.grid_pairs(r[:, None], theta[None, :], d, embedding)
    shape = x.shape[:-1]
    res = monte_carlo(est, x, y, d=d, trials=int(trials), seed=int(seed), device=device, progress=progress,
                      cancel=cancel)
    res_shape = np.shape(res.rel_mse)  # the engine returns flat (P,) or batch-shaped arrays
    with np.errstate(divide="ignore", invalid="ignore"):
        log10_mse = np.reshape(res.log10_mse, shape)
        se = np.reshape(res.log10_mse_stderr, shape)
        exact = lost = np.zeros(shape, bool)
        if est.closed_form_available():
            log_mse = np.reshape(est.log_mse(x, y, d), res_shape)
            expected = np.exp(log_mse - 2.0 * res.log_scale)  # MSE / e^{2s}
            # the larger of the sampled and the closed-form-predicted standard error (rfviz.verdicts)
            z = np.reshape(res.z_against(log_mse), shape)
            # closed form and sample both at float64 round-off: exact, not tested (rfviz.verdicts)
            floor = roundoff_floor(d, int(est.params.get("m", 1)))
            exact = np.reshape(exact_at_roundoff(expected, res.rel_mse, floor), shape)
            lost = np.reshape(precision_loss(expected, res.rel_mse, floor), shape)  # unreliable, not a disagreement
            z = np.where(np.isfinite(z) & ~exact & ~lost, z, np.nan)
        else:
            z = np.full(shape, np.nan)
    reliable = None if res.reliable is None else np.reshape(np.asarray(res.reliable, bool), shape)
    if lost.any():
        reliable = ~lost if reliable is None else reliable & ~lost
    needed = None if res.trials_needed is None else np.reshape(np.asarray(res.trials_needed, float), shape)
    return Sampled(name, log10_mse, se, z, res.trials, res.device, reliable, needed, exact)


def quantity(surfaces: Sequence[Surface], which: str, pair: tuple[str, str] | None = None,
             field: str = "log10_mse") -> dict[str, np.ndarray]:
    """The plotted quantity per panel: log₁₀ MSE, log₁₀ √MSE/|K|, or log₁₀ MSE_A/MSE_B (one panel)."""
    by_name = {s.name: s for s in surfaces}

    def value(s: Surface) -> np.ndarray:  # exact at round-off (rfviz.verdicts.roundoff_floor) shown as exact
        v = np.asarray(getattr(s, field), dtype=float)
        with np.errstate(invalid="ignore"):
            return np.where(v - 2.0 * s.log10_kernel <= s.log10_roundoff, -np.inf, v)

    if which == "log10_mse":
        return {s.name: value(s) for s in surfaces}
    if which == "rel_error":
        return {s.name: 0.5 * value(s) - s.log10_kernel for s in surfaces}
    if which == "ratio":
        if pair is None or pair[0] not in by_name or pair[1] not in by_name or pair[0] == pair[1]:
            raise ParameterError("the ratio needs two different selected estimators A and B")
        a, b = (value(by_name[k]) for k in pair)
        with np.errstate(invalid="ignore"):
            return {f"{pair[0]} / {pair[1]}": a - b}
    raise ParameterError(f"quantity must be one of {', '.join(QUANTITIES)}, got {which!r}")


def sampled_quantity(surfaces: Sequence[Surface], sampled: Mapping[str, Sampled], which: str,
                     pair: tuple[str, str] | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Sampled version of ``quantity``: {panel: (value, standard error)} for the panels that were sampled."""
    by_name = {s.name: s for s in surfaces}
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if which == "ratio":
        if pair and all(k in sampled for k in pair):
            a, b = sampled[pair[0]], sampled[pair[1]]
            either = a.exact_mask | b.exact_mask  # a ratio with an exact side is drawn as exact (no value)
            with np.errstate(invalid="ignore"):
                out[f"{pair[0]} / {pair[1]}"] = (np.where(either, -np.inf, a.log10_mse - b.log10_mse),
                                                 np.hypot(a.log10_stderr, b.log10_stderr))
        return out
    for name, s in sampled.items():
        shown = np.where(s.exact_mask, -np.inf, s.log10_mse)  # exact at round-off: drawn as exact, like the surface
        if which == "rel_error":
            # log10_kernel on the sampled grid is recomputed by the caller's Surface of that grid
            out[name] = (0.5 * shown - by_name[name].log10_kernel, 0.5 * s.log10_stderr)
        else:
            out[name] = (shown, s.log10_stderr)
    return out



# ----------------------------------------------------------------------------------- 1-D parameter sweeps
def param_sweep(name: str, params: Mapping[str, Any], kernel: str, d: int, r: float, theta: float, sweep: str,
                values: Sequence[Any], embedding: str = "canonical") -> np.ndarray:
    """log₁₀ MSE at one (r, θ) as one parameter (``sweep``: an estimator parameter, or ``d``) takes ``values``.

    For averaging embeddings (``rotation_average``) the MSE is averaged over the embedding's stack of pairs.
    """
    out = []
    for v in values:
        p = dict(params)
        dd = int(v) if sweep == "d" else d
        if sweep != "d":
            p[sweep] = v
        out.append(float(analytic_surface(name, p, kernel, dd, np.array([r]), np.array([theta]),
                                          embedding).log10_mse[0, 0]))
    return np.asarray(out)


EPS_SLICE_POINTS = 13
"""ε values of the features view's m(ε) slice (log-spaced over two decades around the page's ε)."""


def needed_vs_eps(name: str, params: Mapping[str, Any], kernel: str, d: int, r: float, theta: float, eps: float,
                  embedding: str = "canonical") -> tuple[np.ndarray, np.ndarray, Any]:
    """The smallest m meeting ε at one exact pair (r, θ), for ε from eps/10 to 10·eps (log-spaced), and the full
    answer at ``eps`` itself (``rfviz.compute.features.features_needed``: the CLI's ``features-needed`` there).

    Parameters
    ----------
    name, params, kernel : the estimator (its m is ignored: m is what is found).
    d : int
        Input dimension.
    r, theta : float
        The pair x = r·e1, y = r(cos θ·e1 + sin θ·e2), exactly.
    eps : float
        The page's target relative error.
    embedding : str
        Placement of the pair in R^d.

    Returns
    -------
    (np.ndarray, np.ndarray, FeaturesNeeded)
        ε values, m at each (NaN where unreachable) and the answer at ``eps``.

    Examples
    --------
    >>> e, m, at = needed_vs_eps("trig", {}, "softmax", 4, 1.0, 1.0, 0.1)
    >>> at.m, bool(np.all(np.diff(m) <= 0))
    (46, True)
    """
    from ..estimators import get_estimator
    from ..params import check
    from .features import EPS_PARAM, features_needed, grid_target

    eps = check(eps, EPS_PARAM)
    own = {k: v for k, v in make_estimator(name, params, kernel).params.items() if k != "m"}
    target = grid_target(float(r), float(theta), d, "point", embedding, get_estimator(name).isotropic)
    values = np.geomspace(eps / 10, eps * 10, EPS_SLICE_POINTS)
    ms = np.array([np.nan if (res := features_needed(name, float(e), target, own)).m is None else float(res.m)
                   for e in values])
    return values, ms, features_needed(name, eps, target, own)
