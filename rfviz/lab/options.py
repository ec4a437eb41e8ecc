"""The lab's settings (``LabOptions``, its defaults and pair kinds), the grid, and the records its steps hand
on (``_Grid``, ``_Bias``, ``_ExtraRun``, ``_ClosedForm``); the Monte-Carlo call every step makes (``_run_mc``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine import MCResult, monte_carlo
from ..estimators import Estimator  # the package: REGISTRY needs the catalog loaded
from ..geometry import check_r, check_theta
from ..params import CHECK_TRIALS_PARAM, CPU_DEVICE_PARAM, LAB_D_PARAM, SEED_PARAM, Param, ParameterError
from ..params import check as check_param
from ..plugins import protocol_guard
from ..verdicts.rules import (  # the lab's rules, with their reasons, live in the verdict module
    LAB_ALPHA,
    LAB_ROTATIONS,
)

DEFAULT_R: tuple[float, ...] = (0.5, 1.0, 1.5)
DEFAULT_THETA: tuple[float, ...] = (0.0, math.pi / 4, math.pi / 2, 3 * math.pi / 4, math.pi)
DEFAULT_D = LAB_D_PARAM.default
DEFAULT_TRIALS = CHECK_TRIALS_PARAM.default
DEFAULT_ALPHA = LAB_ALPHA
DEFAULT_COMPARE: tuple[str, ...] = ("trig", "positive", "positive_antithetic")
FEATURES_KEY, EXTRA_PAIRS_KEY, CONFIRM_KEY, ORIENTATIONS_KEY, REPRODUCIBLE_KEY, ROTATIONS_KEY = 1, 2, 3, 4, 5, 6
"""The children of the lab's seed (the one seed rule, ``rfviz.engine.spawn_seed(seed, key)``): the feature checks,
the extra pairs' Monte Carlo, the confirmation sample, the extra pairs' random orientations, the
reproducibility probe and the rotation test (its rotations, and run k's seed ``spawn_seed(seed, ROTATIONS_KEY,
k)``). The grid's Monte Carlo and the comparators use the seed itself (common random numbers)."""
FEATURE_TRIALS = 1024
EXIT_CODES: dict[str, int] = {"unbiased": 0, "bias detected": 1, "closed form disagrees": 1, "inconclusive": 3,
                              "biased, as declared": 4}
"""The CLI exit code of each verdict (2 is bad input or a broken plugin, raised before any verdict)."""
PAIR_KINDS: tuple[str, ...] = ("canonical", "random", "unequal")
"""``pairs``: the (r, θ) grid in the canonical embedding; random orientations of R^d (catches estimators that are
not rotation-invariant although they claim to be, or depend on coordinates); |x| ≠ |y| (the grid has |x| = |y|)."""
EXTRA_PAIRS = 4
"""Pairs of each extra kind (random, unequal): at the grid's middle r and θ spread over (0, π)."""
UNEQUAL_RATIO = 0.5
"""|y| = this·|x| for the ``unequal`` pairs."""
SHARED_PARAMS = ("m", "kernel", "coupling")
"""Parameters copied from the candidate to each comparator (a like-for-like comparison)."""

ROTATIONS_PARAM = Param("rotations", LAB_ROTATIONS, "int", "random rotations of R^d under which the grid is re-run "
                        "(the rotation test of a non-isotropic estimator; 0: none)", low=0, high=16)
ALPHA_PARAM = Param("alpha", DEFAULT_ALPHA, help="family-wise error rate of the bias test (Holm)", low=0.0, high=1.0,
                    low_open=True, high_open=True)


MAX_GRID_PAIRS = 10_000
"""Most (r, θ) pairs of one check (a 100 × 100 grid): each is a Monte-Carlo point and a row of the report."""


def _grid(r: Sequence[float], theta: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    r_arr = np.asarray(r, dtype=float).ravel()
    t_arr = np.asarray(theta, dtype=float).ravel()
    if r_arr.size == 0 or t_arr.size == 0:
        raise ParameterError("the grid needs at least one r and one theta value")
    if r_arr.size * t_arr.size > MAX_GRID_PAIRS:  # before any pair is built: 10⁴ × 10⁴ took 2.6 GB and 50 s
        raise ParameterError(f"the grid has {r_arr.size} r × {t_arr.size} theta = {r_arr.size * t_arr.size} pairs; "
                             f"at most {MAX_GRID_PAIRS} (use fewer --r or --theta values, or a sweep)")
    return check_r(r_arr), check_theta(t_arr)


def _run_mc(est: Estimator, x: np.ndarray, y: np.ndarray, d: int, trials: int, seed: int, device: str,
            progress: Callable[[float], None] | None) -> MCResult:
    with protocol_guard(f"{type(est).__name__} ({est.name})", "the Monte-Carlo run (sample/estimate)"):
        try:
            return monte_carlo(est, x, y, d=d, trials=trials, seed=seed, device=device, progress=progress)
        except FloatingPointError as exc:
            raise ParameterError(f"{est.name}: {exc}; its estimates are NaN or inf on this grid "
                                 "(compute K̂ in log space, or use a smaller r)") from None


@dataclass(frozen=True)
class LabOptions:
    """The lab's settings (``check_estimator``'s keywords, validated once), shared by every step of the pipeline.

    Parameters
    ----------
    r, theta : the grid's norms |x| = |y| and angles (rows r, columns θ).
    d : input dimension of the grid's pairs.
    trials, seed : Monte-Carlo trials per point and the seed (extra pairs use ``spawn_seed(seed, EXTRA_PAIRS_KEY)``).
    alpha : family-wise error rate of the bias test (Holm); the closed-form test runs at α·CLOSED_FORM_ALPHA_FACTOR.
    compare : built-in estimators to compare the MSE with (the candidate's own name is dropped).
    device : torch device of the Monte-Carlo runs.
    check_feature_maps : whether to check ``features`` (finite, positive, bounded, consistent with ``estimate``).
    pairs : which pair kinds enter the bias test (subset of PAIR_KINDS).
    progress : called with the fraction done in [0, 1], or None.
    rotations : random rotations of R^d for the rotation test of a non-isotropic estimator (``rfviz.lab.rotation``).

    Examples
    --------
    >>> LabOptions(trials=2000, compare=()).stages
    2
    """

    r: Sequence[float] = DEFAULT_R
    theta: Sequence[float] = DEFAULT_THETA
    d: int = DEFAULT_D
    trials: int = DEFAULT_TRIALS
    seed: int = 0
    alpha: float = DEFAULT_ALPHA
    compare: Sequence[str] = DEFAULT_COMPARE
    device: str = "cpu"
    check_feature_maps: bool = True
    pairs: Sequence[str] = PAIR_KINDS
    progress: Callable[[float], None] | None = None
    rotations: int = LAB_ROTATIONS

    def __post_init__(self) -> None:
        for spec in (CHECK_TRIALS_PARAM, ALPHA_PARAM, SEED_PARAM, CPU_DEVICE_PARAM, ROTATIONS_PARAM):
            object.__setattr__(self, spec.name, check_param(getattr(self, spec.name), spec))

    @property
    def stages(self) -> int:
        """Progress shares: the candidate's MC run, one per comparator, one for the feature check."""
        return 1 + len(self.compare) + (1 if self.check_feature_maps else 0)

    def stage(self, i: int) -> Callable[[float], None] | None:
        """The progress callback of stage ``i`` (its fraction mapped into the whole run), or None."""
        progress = self.progress
        if progress is None:
            return None
        return lambda f: progress(min(1.0, (i + f) / self.stages))


@dataclass
class _Grid:
    """The (r, θ) grid in R^d: its axes, meshes and flattened pairs (one row per point, r-major)."""

    r: np.ndarray
    theta: np.ndarray
    rr: np.ndarray
    tt: np.ndarray
    x: np.ndarray
    y: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return self.rr.shape


@dataclass
class _Bias:
    """Step 3's findings: per grid point z, p, κ, tested/informative/rejected masks; the extra pairs' rows."""

    z: np.ndarray
    p: np.ndarray
    kappa: np.ndarray
    reliable: np.ndarray
    tested: np.ndarray
    informative: np.ndarray
    deterministic_wrong: np.ndarray
    rejected: np.ndarray
    extra_rows: list[dict[str, Any]]
    warnings: list[str]
    extra: _ExtraRun | None = None


@dataclass
class _ExtraRun:
    """The extra pairs' (random / unequal) Monte Carlo: pairs, their (kind, |x|, |y|, θ), κ and reliability."""

    x: np.ndarray
    y: np.ndarray
    meta: list[tuple[str, float, float, float]]
    res: MCResult
    kappa: np.ndarray
    reliable: np.ndarray


@dataclass
class _ClosedForm:
    """Step 4's findings: the candidate's MSE (closed form if it agrees, else Monte Carlo) and the z-test."""

    log_mse: np.ndarray
    source: str
    z: np.ndarray | None = None
    tested: np.ndarray | None = None
    rejected: np.ndarray | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    confirmation: list[dict[str, Any]] = field(default_factory=list)
    nonexact_tested: int = 0
    exact_tested: int = 0
    detectable: float | None = None
    any_rejected: bool = False
    used: np.ndarray | None = None
    unequal_detectable: float | None = None
    unequal_trials_needed: int | None = None


def _owner(est: Estimator) -> str:
    return f"{type(est).__name__} ({est.name})"


def _closed_form_logs(est: Estimator, x: np.ndarray, y: np.ndarray, d: int) -> np.ndarray | None:
    """The estimator's own closed-form log MSE at the pairs (+∞: infinite variance, so no z-test of the mean or the
    MSE applies), or None without a usable closed form (its errors are reported by the closed-form step)."""
    try:
        if not est.closed_form_available():
            return None
        return np.asarray(est.log_mse(x, y, d), float).ravel()
    except Exception:  # the closed-form step reports (or raises) the same failure in words
        return None


def _check_pairs(pairs: Sequence[str] | str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in (pairs.split(",") if isinstance(pairs, str) else pairs) if k.strip())
    bad = [k for k in kinds if k not in PAIR_KINDS]
    if bad or not kinds:
        raise ParameterError(f"pairs must be a comma-separated subset of {', '.join(PAIR_KINDS)}, got {pairs!r}")
    return kinds
