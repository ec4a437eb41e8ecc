"""The lab's pipeline: ``build_grid`` → ``sample_grid`` → ``bias_step`` → ``closed_form_step`` →
``comparisons_step`` → ``features_step`` → ``LabReport`` (``run_lab``), and the entry points ``check_estimator``
and ``check`` that validate their keywords into ``LabOptions``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..engine import MCResult, monte_carlo, spawn_seed
from ..estimators import Estimator, PairStats  # the package: REGISTRY needs the catalog loaded
from ..geometry import embed_pair
from ..numerics import LOG10
from ..params import CHECK_TRIALS_PARAM, ParameterError, validated
from ..plugins import instantiate, protocol_guard
from ..verdicts import known_log_mse, ratio_map
from ..verdicts.rules import (  # the lab's rules, with their reasons, live in the verdict module
    BIAS_KURTOSIS_FRACTION,
    EXTRA_TRIALS_FACTOR,
    LAB_ROTATIONS,
)
from .closed_form import closed_form_step
from .features import check_features, check_reproducible, comparator, declares_bias
from .options import (
    ALPHA_PARAM,
    DEFAULT_ALPHA,
    DEFAULT_COMPARE,
    DEFAULT_D,
    DEFAULT_R,
    DEFAULT_THETA,
    DEFAULT_TRIALS,
    EXTRA_PAIRS,
    EXTRA_PAIRS_KEY,
    ORIENTATIONS_KEY,
    PAIR_KINDS,
    UNEQUAL_RATIO,
    LabOptions,
    _Bias,
    _check_pairs,
    _closed_form_logs,
    _ExtraRun,
    _Grid,
    _grid,
    _owner,
    _run_mc,
)
from .report import Comparison, LabReport
from .rotation import rotation_step
from .stats import _bias_test, _p_values, exact_points, holm_over, kurtosis, lab_reliable


def build_grid(est: Estimator, opts: LabOptions) -> _Grid:
    """Step 1: the (r, θ) grid's pairs in R^d, as the estimator embeds them (``grid_pairs``)."""
    r_arr, t_arr = _grid(opts.r, opts.theta)
    rr, tt = np.meshgrid(r_arr, t_arr, indexing="ij")
    with protocol_guard(_owner(est), "grid_pairs"):
        x, y = est.grid_pairs(rr, tt, opts.d)
    return _Grid(r_arr, t_arr, rr, tt, x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1]))


def sample_grid(est: Estimator, grid: _Grid, opts: LabOptions) -> MCResult:
    """Step 2: the candidate's Monte Carlo over the grid (the first progress stage), after a reproducibility draw
    (``check_reproducible``: the same seed must give the same estimates)."""
    check_reproducible(est, grid.x, grid.y, opts.d, opts.seed)
    return _run_mc(est, grid.x, grid.y, opts.d, opts.trials, opts.seed, opts.device, opts.stage(0))


def _usable_extra_pairs(est: Estimator, opts: LabOptions, grid: _Grid, warnings: list[str]
                        ) -> tuple[np.ndarray, np.ndarray, list[tuple[str, float, float, float]]] | None:
    """The extra pairs (random / unequal) of the kinds the estimator accepts; a rejected kind adds a warning."""
    extra = _extra_pairs(est, opts.pairs, grid.r, grid.theta, opts.d, opts.seed)
    if not extra:
        return None
    ex_x, ex_y, meta = extra
    keep = np.ones(len(meta), bool)
    for kind in dict.fromkeys(k for k, *_ in meta):  # an estimator may reject a kind (e.g. needs |x| = |y|)
        rows = np.array([k == kind for k, *_ in meta])
        try:
            est.log_abs_kernel(PairStats.of(ex_x[rows], ex_y[rows], opts.d))
            if est.closed_form_available():
                est.log_mse(ex_x[rows], ex_y[rows], opts.d)
        except ParameterError as exc:
            keep &= ~rows
            warnings.append(f"{kind} pairs not tested: {exc}")
        except NotImplementedError:
            pass
    meta = [m for m, k in zip(meta, keep, strict=True) if k]
    return (ex_x[keep], ex_y[keep], meta) if meta else None


def _holm_with_extra_pairs(est: Estimator, opts: LabOptions, grid: _Grid, p: np.ndarray, tested: np.ndarray,
                           warnings: list[str]) -> tuple[np.ndarray, list[dict[str, Any]], _ExtraRun | None]:
    """Holm over the tested grid points and the extra pairs together: (grid rejections, extra pairs' rows, their
    run)."""
    extra = _usable_extra_pairs(est, opts, grid, warnings)
    if not extra:
        return holm_over(p, opts.alpha, tested), [], None
    ex_x, ex_y, meta = extra
    trials = opts.trials * EXTRA_TRIALS_FACTOR  # the only pairs off |x| = |y|: more trials (the rule's reason)
    ex = _run_mc(est, ex_x, ex_y, opts.d, trials, spawn_seed(opts.seed, EXTRA_PAIRS_KEY), opts.device, None)
    log_cf = _closed_form_logs(est, ex_x, ex_y, opts.d)
    e_reliable = lab_reliable(ex, log_cf)
    ez, e_tested, e_inf, e_det = _bias_test(ex, trials, e_reliable)
    if log_cf is not None:
        e_tested &= ~np.isposinf(log_cf)
        e_inf &= ~np.isposinf(log_cf)
    both = holm_over(np.concatenate([p, _p_values(ex, ez)]), opts.alpha, np.concatenate([tested, e_tested]))
    rows = [{"kind": kind, "norm_x": nx, "norm_y": ny, "theta": th, "trials": trials, "z": float(ez[i]),
             "tested": bool(e_tested[i]),
             "informative": bool(e_inf[i]), "rejected": bool(both[p.size + i]), "reliable": bool(e_reliable[i]),
             "deterministic_wrong": bool(e_det[i])} for i, (kind, nx, ny, th) in enumerate(meta)]
    return both[: p.size], rows, _ExtraRun(ex_x, ex_y, meta, ex, kurtosis(ex), e_reliable)


def bias_step(est: Estimator, grid: _Grid, res: MCResult, opts: LabOptions) -> _Bias:
    """Step 3: the bias test. Per point the z of the sampled mean against the kernel (exact points count as 0:
    the engine's z would measure round-off there; complex estimates test both parts), points too heavy-tailed for
    the CLT left out, then Holm's step-down test over the grid and the extra pairs together at level α."""
    log_cf = _closed_form_logs(est, grid.x, grid.y, opts.d)
    reliable = lab_reliable(res, log_cf)
    bias_z, tested, informative, deterministic_wrong = _bias_test(res, opts.trials, reliable)
    if log_cf is not None:  # +∞ closed-form MSE: infinite variance, no CLT for the mean: left out
        tested &= ~np.isposinf(log_cf)
        informative &= ~np.isposinf(log_cf)
    kappa = kurtosis(res)
    p = _p_values(res, bias_z)
    heavy = ~tested
    if "canonical" not in opts.pairs:  # the grid still drives the closed form and the MSE map, not the verdict
        tested &= np.zeros(res.shape, bool)
        informative &= np.zeros(res.shape, bool)
    warnings: list[str] = []
    rejected, extra_rows, extra = _holm_with_extra_pairs(est, opts, grid, p, tested, warnings)
    if "canonical" not in opts.pairs:
        warnings.append("the (r, θ) grid is not part of the bias test (pairs without canonical); it still gives "
                        "the closed-form check and the MSE maps")
    left_out = int(heavy.sum())
    if left_out:
        warnings.append(f"{left_out} of {tested.size} grid points are heavy-tailed (kurtosis > "
                        f"trials/{round(1 / BIAS_KURTOSIS_FRACTION)}) and were left out of the bias test; more "
                        "trials or a smaller r would include them")
    if heavy.all():
        warnings.append("no grid point could be tested: every point is heavy-tailed at this trial count")
    return _Bias(bias_z, p, kappa, reliable, tested, informative, deterministic_wrong, rejected, extra_rows, warnings,
                 extra)


def _comparator_log_mse(other: Estimator, grid: _Grid, opts: LabOptions, stage: int) -> tuple[np.ndarray, str]:
    """A comparator's known log MSE on the grid (``rfviz.verdicts.known_log_mse``): its closed form (a built-in's,
    tested against Monte Carlo by rfviz's own suite), or its Monte Carlo (same trials and seed) where that sample is
    reliable or exact; NaN (unknown: heavy tail) elsewhere."""
    ox, oy = other.grid_pairs(grid.rr, grid.tt, opts.d)
    ox, oy = ox.reshape(-1, ox.shape[-1]), oy.reshape(-1, oy.shape[-1])
    if other.closed_form_available():
        return other.log_mse(ox, oy, opts.d).ravel(), "closed form"
    mc = monte_carlo(other, ox, oy, d=opts.d, trials=opts.trials, seed=opts.seed, device=opts.device,
                     progress=opts.stage(stage))
    exact = exact_points(mc)
    sampled = np.where(exact, -np.inf, np.asarray(mc.log_mse, float))
    known, _ = known_log_mse(None, None, sampled, np.asarray(lab_reliable(mc, None), bool) | exact)
    return known, "monte carlo where reliable"


def comparisons_step(est: Estimator, grid: _Grid, log_mse: np.ndarray, compare: Sequence[str], opts: LabOptions
                     ) -> tuple[list[Comparison], dict[str, str]]:
    """Step 5: log10(MSE_candidate / MSE_builtin) per point against each built-in in ``compare`` (same m, kernel
    and coupling), a number only where both MSEs are known (``rfviz.verdicts.ratio_map``: ``log_mse`` is the
    candidate's known MSE, NaN where its sample is heavy-tailed and no tested closed form stands in); wins, losses
    and ties count the known cells, ``unknown`` the others. A built-in that cannot be compared is skipped with the
    reason."""
    comparisons: list[Comparison] = []
    skipped: dict[str, str] = {}
    for i, name in enumerate(compare, start=1):
        try:
            other = comparator(name, est)
        except ParameterError as exc:
            skipped[name] = str(exc)
            continue
        try:
            log_other, source = _comparator_log_mse(other, grid, opts, i)
        except (ParameterError, NotImplementedError, FloatingPointError) as exc:
            skipped[name] = str(exc)
            continue
        rm = ratio_map(log_mse, log_other)
        comparisons.append(Comparison(name, dict(other.params), source, rm.log10_ratio.reshape(grid.shape),
                                      wins=rm.wins, losses=rm.losses, ties=rm.ties, unknown=rm.unknown))
    return comparisons, skipped


def features_step(est: Estimator, grid: _Grid, res: MCResult, opts: LabOptions, warnings: list[str]
                  ) -> dict[str, Any]:
    """Step 6 (optional): ``check_features`` on the grid's pairs; NaN/inf or inconsistent features add a warning."""
    if not opts.check_feature_maps:
        return {"available": False, "reason": "not checked"}
    features = check_features(est, grid.x, grid.y, res.log_scale, opts.d, opts.seed, grid.rr.ravel())
    if features.get("available"):
        if not features["finite"]:
            warnings.append("the feature map returned NaN or inf on this grid")
        elif not features["consistent"]:
            warnings.append(f"Σ φ_query(x)·φ_key(y) differs from estimate() (max relative difference "
                            f"{features['max_rel_diff']:.2g})")
    if opts.progress is not None:
        opts.progress(1.0)
    return features


def run_lab(est: Estimator, opts: LabOptions) -> LabReport:
    """The lab as a pipeline of named steps: build the grid → sample → bias test (Holm) → closed-form agreement →
    comparisons → features → the report (whose ``verdict`` and ``exit_code`` follow from the steps' findings).

    Parameters
    ----------
    est : the estimator instance to check.
    opts : the settings (``LabOptions``); ``check_estimator`` validates them from keywords.

    Returns
    -------
    LabReport

    Examples
    --------
    >>> import rfviz
    >>> rep = run_lab(rfviz.create("positive"), LabOptions(trials=400, compare=()))  # doctest: +SKIP
    >>> rep.verdict  # doctest: +SKIP
    'unbiased'
    """
    grid = build_grid(est, opts)
    opts = replace(opts, pairs=_check_pairs(opts.pairs), compare=[c for c in opts.compare if c != est.name])
    res = sample_grid(est, grid, opts)
    bias = bias_step(est, grid, res, opts)
    rotation = rotation_step(est, grid, res, opts)
    cf = closed_form_step(est, grid, res, bias, opts)
    warnings = bias.warnings + cf.warnings
    known, _ = known_log_mse(cf.log_mse, cf.used, cf.log_mse, np.ravel(bias.reliable) | exact_points(res))
    comparisons, skipped = comparisons_step(est, grid, known, opts.compare, opts)
    features = features_step(est, grid, res, opts, warnings)
    shape = grid.shape

    def grid_of(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else a.reshape(shape)

    return LabReport(
        estimator=est.name, title=type(est).title, params=dict(est.params), kernel=est.kernel, d=opts.d,
        trials=res.trials, seed=opts.seed, alpha=opts.alpha, r=grid.r, theta=grid.theta,
        bias_z=bias.z.reshape(shape), bias_p=bias.p.reshape(shape), kurtosis=bias.kappa.reshape(shape),
        bias_tested=bias.tested.reshape(shape), bias_rejected=bias.rejected.reshape(shape),
        log10_mse=(cf.log_mse / LOG10).reshape(shape), mse_source=cf.source, closed_form_z=grid_of(cf.z),
        closed_form_tested=grid_of(cf.tested), closed_form_rejected=grid_of(cf.rejected), closed_form_error=cf.error,
        closed_form_confirmation=cf.confirmation, closed_form_nonexact_tested=cf.nonexact_tested,
        closed_form_exact_tested=cf.exact_tested, closed_form_detectable=cf.detectable,
        closed_form_used=grid_of(cf.used), closed_form_unequal_detectable=cf.unequal_detectable,
        closed_form_unequal_trials=cf.unequal_trials_needed, rotation=_rotation_grids(rotation, shape),
        comparisons=comparisons, skipped_comparisons=skipped, features=features, warnings=warnings,
        declared_biased=declares_bias(type(est)), informative=bias.informative.reshape(shape),
        deterministic_wrong=bias.deterministic_wrong.reshape(shape), exact=exact_points(res).reshape(shape),
        extra_pairs=bias.extra_rows)


def _rotation_grids(rotation: dict[str, Any], shape: tuple[int, ...]) -> dict[str, Any]:
    """The rotation test's per-point arrays in the grid's shape (rows r, columns θ)."""
    return {k: (v.reshape(shape) if isinstance(v, np.ndarray) else v) for k, v in rotation.items()}


@validated(CHECK_TRIALS_PARAM, ALPHA_PARAM)
def check_estimator(est: Estimator, *, r: Sequence[float] = DEFAULT_R, theta: Sequence[float] = DEFAULT_THETA,
                    d: int = DEFAULT_D, trials: int = DEFAULT_TRIALS, seed: int = 0, alpha: float = DEFAULT_ALPHA,
                    compare: Sequence[str] = DEFAULT_COMPARE, device: str = "cpu",
                    check_feature_maps: bool = True, pairs: Sequence[str] = PAIR_KINDS,
                    progress: Callable[[float], None] | None = None, rotations: int = LAB_ROTATIONS) -> LabReport:
    """Run the lab's checks on ``est`` over the (r, θ) grid in R^d: bias, closed form, comparisons, features.

    The decision rules (Holm over the grid, confirmed closed-form rejections, at least 3 informative points) are
    explained in the documentation's reliability page.

    Parameters
    ----------
    est : Estimator
        The estimator instance to check (a built-in or a plugin class instantiated with its parameters).
    r : sequence of float
        The grid's norms ``|x| = |y|``.
    theta : sequence of float
        The grid's angles between x and y, in [0, π].
    d : int
        Dimension of the input space.
    trials : int
        Monte-Carlo trials per point (extra pairs use ``spawn_seed(seed, EXTRA_PAIRS_KEY)``).
    seed : int
        Seed of the Monte-Carlo runs.
    alpha : float
        Family-wise error rate of the bias test (Holm); the closed-form test runs at α/100.
    compare : sequence of str
        Built-in estimators to compare the MSE with (empty: none).
    device : str
        Torch device of the Monte-Carlo runs.
    check_feature_maps : bool
        Whether to check ``features`` (finite, positive, bounded, consistent with ``estimate``).
    pairs : sequence of str
        Which pair kinds enter the bias test: ``canonical`` (the grid), ``random`` orientations, ``unequal`` norms.
    progress : callable, optional
        Called with the fraction done in [0, 1].
    rotations : int
        Random rotations of R^d for the rotation test of a non-isotropic estimator (``rfviz.lab.rotation``).

    Returns
    -------
    LabReport
        The verdict (``verdict``, ``exit_code``, ``summary()``) and every test's numbers.

    Raises
    ------
    ParameterError
        When a setting is out of its range (e.g. ``trials``, ``alpha``).

    Examples
    --------
    >>> import rfviz
    >>> report = check_estimator(rfviz.create("trig", m=8), r=(0.5, 1.0), theta=(0.5, 1.5, 2.5), trials=1000,
    ...                          compare=(), check_feature_maps=False, pairs=("canonical",))
    >>> report.verdict, report.exit_code
    ('unbiased', 0)
    """
    return run_lab(est, LabOptions(r=r, theta=theta, d=d, trials=trials, seed=seed, alpha=alpha, compare=compare,
                                   device=device, check_feature_maps=check_feature_maps, pairs=pairs,
                                   progress=progress, rotations=rotations))


def _extra_pairs(est: Estimator, kinds: Sequence[str], r: np.ndarray, theta: np.ndarray, d: int,
                 seed: int) -> tuple[np.ndarray, np.ndarray, list[tuple[str, float, float, float]]] | None:
    """Full R^d pairs of the extra kinds (random orientations, |x| ≠ |y|), with (kind, |x|, |y|, θ) each."""
    r0 = float(np.median(r))
    angles = [float(a) for a in np.linspace(0.0, math.pi, EXTRA_PAIRS + 2)[1:-1]] if d > 1 else [0.0, math.pi]
    rng = np.random.default_rng(spawn_seed(seed, ORIENTATIONS_KEY))
    xs, ys, meta = [], [], []
    for kind in kinds:
        if kind == "canonical":
            continue
        if kind == "unequal":
            for x, y, m in _unequal_pairs(r, angles, d):
                xs.append(x)
                ys.append(y)
                meta.append(m)
            continue
        for th in angles:
            x, y = (np.asarray(v, float) for v in embed_pair(r0, th, d, "canonical"))
            k = min(d, 2)  # x, y span e1, e2: a Haar-random frame of k = min(d, 2) columns rotates them
            q, rr = np.linalg.qr(rng.standard_normal((d, k)))  # (O(d) memory; a d × d QR took 3 GiB at d = 20 000)
            q = q * np.where(np.diag(rr) < 0, -1.0, 1.0)
            xs.append(q @ x[:k])
            ys.append(q @ y[:k])
            meta.append((kind, r0, r0, th))
    if not xs:
        return None
    return np.stack(xs), np.stack(ys), meta


def _unequal_pairs(r: np.ndarray, angles: list[float], d: int
                   ) -> list[tuple[np.ndarray, np.ndarray, tuple[str, float, float, float]]]:
    """The |x| ≠ |y| pairs: at the grid's smallest and middle r (where the sampled MSE is lightest-tailed, so a
    closed form's error shows most), each angle once, the shorter side alternating between x and y
    (|short| = UNEQUAL_RATIO·|long|): 2 × EXTRA_PAIRS pairs (one norm when the grid has one r)."""
    out = []
    for r0 in dict.fromkeys((float(np.min(r)), float(np.median(r)))):
        for i, th in enumerate(angles):
            x, y = (np.asarray(v, float) for v in embed_pair(r0, th, d, "canonical"))
            nx, ny = (r0, UNEQUAL_RATIO * r0) if i % 2 == 0 else (UNEQUAL_RATIO * r0, r0)
            out.append((x * nx / r0, y * ny / r0, ("unequal", nx, ny, th)))
    return out


def check(target: type[Estimator], params: dict[str, Any] | None = None, **kwargs: Any) -> LabReport:
    """Instantiate ``target`` (validated parameters, plugin failures as one-line errors) and check it."""
    return check_estimator(instantiate(target, params), **kwargs)
