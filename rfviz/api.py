"""The Python face of rfviz: one function per command, each returning a small frozen result object.

``rfviz.mse``, ``rfviz.density``, ``rfviz.psi``, ``rfviz.check``, ``rfviz.gram`` and ``rfviz.sweep`` take Python
values (floats, complex numbers, ints, bools, lists and arrays), validated by the same ``Param``s as the command line,
and compute exactly what ``rfviz COMMAND ... --json`` prints: both call the typed core in ``rfviz.commands`` (the CLI
parses its text into those values first). ``result.to_dict()`` equals the command's JSON; the attributes keep their
types (``result.mse``, ``result.mc.stderr``, ``result.params["A"]`` a complex number where A is one). A bad value
raises ``ParameterError`` naming the parameter, as the command does. Figure helpers (``result.figure()``,
:func:`mse_curve`) return Plotly figures, which show themselves in Jupyter.

>>> import rfviz
>>> res = rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10)
>>> round(res.mse, 6)
0.133553
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import pathlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from .commands.check import check_settings, check_target_arguments
from .commands.density import density_report
from .commands.gram import gram_study
from .commands.mse import mse_curves, mse_report
from .commands.psi import psi_report
from .estimators import REGISTRY
from .params import ParameterError
from .registries import SIMPLEX
from .textio import jsonable

__all__ = ["CheckResult", "DensityResult", "GramResult", "MSEResult", "MonteCarloSummary", "PsiResult",
           "SweepResult", "check", "density", "gram", "mse", "mse_curve", "psi", "sweep"]


F = TypeVar("F", bound=Callable[..., Any])


def _as_command(fn: F) -> F:
    """Run an API function as its command runs: numpy's floating-point errors ignored (a valid but extreme input
    gives the command's ``null`` and note, whatever ``np.errstate`` the caller set), and a numeric failure or an
    exhausted memory a ParameterError in the command's words, never a raw FloatingPointError, OverflowError,
    ZeroDivisionError or MemoryError."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with np.errstate(all="ignore"):
                return fn(*args, **kwargs)
        except (FloatingPointError, OverflowError, ZeroDivisionError) as exc:
            text = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise ParameterError(f"numeric overflow or loss of precision ({text}); try less extreme inputs") \
                from exc
        except MemoryError as exc:
            raise ParameterError("not enough memory for this request; use smaller sizes (and a memory budget "
                                 "that fits the machine: rfviz.params.memory_budget_scope)") from exc

    return wrapper  # type: ignore[return-value]


class _Result:
    """Base of the result objects: the fields are the JSON's top-level numbers; ``to_dict()`` is the JSON itself."""

    _json: dict[str, Any]
    _typed: tuple[str, ...] = ()
    """Fields kept as the computation returned them (e.g. ``params``: a complex A stays complex), not as JSON."""

    @classmethod
    def _of(cls, json_report: Mapping[str, Any], /, **extra: Any) -> Any:
        data = jsonable(dict(json_report))
        names = [f.name for f in dataclasses.fields(cls) if f.name != "_json" and f.name not in extra]
        typed = {n: copy.deepcopy(json_report.get(n)) for n in cls._typed if n in names}
        return cls(**{n: typed[n] if n in typed else data.get(n) for n in names}, **extra, _json=data)

    def to_dict(self) -> dict[str, Any]:
        """The result as the command's ``--json`` output.

        Returns
        -------
        dict
            A fresh copy: plain lists, numbers, strings and None.
        """
        return copy.deepcopy(self._json)


@dataclasses.dataclass(frozen=True)
class MonteCarloSummary(_Result):
    """The sampled MSE of :func:`mse` with ``trials``: its standard error, reliability and agreement."""

    mse: float
    stderr: float
    log10_mse: float | None
    mean: float
    trials: int
    device: str
    reliable: bool
    warning: str | None
    bias_z: float | None
    trials_needed: int | None
    tail_index: float | None
    z_vs_closed_form: float | None
    agreement: str | None
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)


@dataclasses.dataclass(frozen=True)
class MSEResult(_Result):
    """Closed-form MSE of one estimator at one input pair (``mse`` is None where it overflows or has no closed
    form) and, with trials, its Monte-Carlo twin ``mc``."""

    estimator: str
    kernel: str
    params: dict[str, Any]
    inputs: dict[str, Any]
    kernel_value: float | None
    log10_kernel_value: float
    mse: float | None
    log10_mse: float | None
    mc: MonteCarloSummary | None
    note: str | None
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)
    _typed = ("params", "inputs")


@_as_command
def mse(name: str, *, r: float | None = None, theta: float | None = None, d: int | None = None,
        x: Sequence[float] | np.ndarray | None = None, y: Sequence[float] | np.ndarray | None = None,
        embedding: str | None = None, trials: int | None = None, seed: int = 0, device: str = "auto",
        max_seconds: float | None = None, **params: Any) -> MSEResult:
    """Closed-form MSE of one estimator at one input pair, and optionally its Monte-Carlo twin (``rfviz mse``).

    Parameters
    ----------
    name : str
        A registered estimator (``rfviz.REGISTRY``; catalog in the docs' estimator page).
    r, theta, d : float, float, int, optional
        The pair x = r·e1, y = r(cos θ·e1 + sin θ·e2) in R^d (defaults 1, π/2, 2), in the canonical
        ``embedding`` (or ``flat``, ``rotation_average``).
    x, y : array_like, optional
        An explicit pair instead of (r, θ, d).
    embedding : str, optional
        How (r, θ) become vectors of R^d: ``canonical`` (the default), ``flat`` or ``rotation_average``.
    trials : int, optional
        Monte-Carlo trials (None or 0: closed form only; otherwise an integer in [2, 1e8], as ``--trials``).
    seed : int
        Seed of the Monte-Carlo run, in [0, 2^53 − 1] (``rfviz.params.SEED_PARAM``).
    device : str
        ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (``rfviz.params.DEVICE_PARAM``).
    max_seconds : float, optional
        Stop the Monte-Carlo run (``ParameterError``) when it takes longer.
    **params
        The estimator's parameters (e.g. ``m=10``, ``kernel="gaussian"``, ``coupling="simplex"``, ``A=-0.1+0.05j``).

    Returns
    -------
    MSEResult
        ``mse``, ``log10_mse``, ``kernel_value``, ... and ``mc`` (a :class:`MonteCarloSummary`, or None).

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.mse("positive", r=0.5, theta=1.0, d=8, m=16, trials=2000, seed=1)
    >>> res.mc.agreement
    'agrees'
    """
    inputs = {"r": r, "theta": theta, "d": d, "x": x, "y": y, "embedding": embedding}
    report = mse_report(name, params, {k: v for k, v in inputs.items() if v is not None}, trials=trials, seed=seed,
                        device=device, max_seconds=max_seconds)
    mc = MonteCarloSummary._of(report["mc"]) if report.get("mc") is not None else None
    return MSEResult._of(report, mc=mc)


@_as_command
def mse_curve(names: str | Sequence[str], *, vary: str = "theta", values: Sequence[float] | np.ndarray | None = None,
              r: float = 1.0, theta: float = math.pi / 2, d: int = 2, **params: Any) -> Any:
    """log10 of the closed-form MSE of one or more estimators along ``theta``, ``r`` or an estimator parameter.

    Parameters
    ----------
    names : str or sequence of str
        Registered estimators (parameters they lack are not passed to them).
    vary : str
        ``theta`` (default, over [0, π]), ``r`` (over [0.05, 2]) or the name of a numeric estimator parameter.
    values : array_like, optional
        The values of ``vary`` (a default grid for θ and r).
    r, theta, d :
        The fixed inputs.
    **params
        Estimator parameters shared by the named estimators.

    Returns
    -------
    plotly.graph_objects.Figure
        One curve per estimator.

    Examples
    --------
    >>> import rfviz
    >>> fig = rfviz.mse_curve(["trig", "positive_antithetic"], m=16)
    >>> [t.name for t in fig.data]
    ['trig', 'positive_antithetic']
    """
    from .figures.common import lines

    axis, curves = mse_curves(names, vary=vary, values=values, r=r, theta=theta, d=d, params=params)
    label = {"theta": "θ (radians)", "r": "r = |x| = |y|"}.get(vary, vary)
    return lines(axis, curves, xlabel=label, ylabel="log10 MSE", theta_axis=vary == "theta",
                 title=f"closed-form MSE at d = {d}")


@dataclasses.dataclass(frozen=True)
class DensityResult(_Result):
    """Law of w_ij = ‖ω_i + ω_j‖ under a coupling ([SimRF] Lemmas 4.1–4.2), and with ``v`` the RF-conformity and
    the MSE ratios against iid."""

    coupling: str
    d: int
    pair_cosine: float | None
    mean_wij_sq: float
    w: list[float]
    density: list[float | None]
    log10_density: list[float | None]
    cdf: list[float]
    v: list[float] | None
    m: int | None
    log10_conformity: list[float | None] | None
    mse_ratio_vs_iid: dict[str, list[float | None]] | None
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)

    def figure(self) -> Any:
        """The density p(w_ij) as a Plotly figure.

        Returns
        -------
        plotly.graph_objects.Figure
            One curve, against w_ij.
        """
        from .figures.common import lines

        return lines(np.asarray(self.w), {self.coupling: np.asarray(self.density, dtype=float)},
                     xlabel="w_ij = ‖ω_i + ω_j‖", ylabel="density", title=f"d = {self.d}")


@_as_command
def density(coupling: str = SIMPLEX, *, d: int | None = None, w: Sequence[float] | np.ndarray | None = None,
            v: Sequence[float] | np.ndarray | None = None, m: int | None = None) -> DensityResult:
    """The density of w_ij = ‖ω_i + ω_j‖ under a coupling, its conformity and MSE ratios (``rfviz density``).

    Parameters
    ----------
    coupling : str
        ``iid``, ``orthogonal`` or ``simplex``.
    d : int, optional
        Dimension (default 6).
    w : array_like, optional
        Where to evaluate the density (default: a grid).
    v : array_like, optional
        ‖x + y‖ values for the conformity ρ(v) and the MSE ratios against iid.
    m : int, optional
        Features for the MSE ratios (default d: one full block).

    Returns
    -------
    DensityResult
        ``density``, ``cdf``, ``log10_conformity``, ``mse_ratio_vs_iid``, ...; ``figure()`` draws the density.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.density("orthogonal", d=4, w=[1.0, 2.0], v=[1.0])
    >>> res.mse_ratio_vs_iid["positive"][0] < 1
    True
    """
    return DensityResult._of(density_report(coupling, d=d, w=w, v=v, m=m))


@dataclasses.dataclass(frozen=True)
class PsiResult(_Result):
    """The optimal importance-sampling density Ψ of one mechanism and input law ([OS] Thm 1): V*, the unweighted
    variance, their ratio ``gain`` and divergence flags; ``radial`` holds the radial densities."""

    mechanism: str
    kernel: str
    inputs: dict[str, Any]
    radial: dict[str, list[float | None]]
    log10_Z: float | None
    v_opt: float | None
    v_plain: float | None
    gain: float | None
    divergence: dict[str, Any]
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)

    def figure(self) -> Any:
        """The radial densities of Ω and of the optimal Ψ as a Plotly figure.

        Returns
        -------
        plotly.graph_objects.Figure
            Two curves, against ``|ω|``.
        """
        from .figures.common import lines

        rad = self.radial
        return lines(np.asarray(rad["rho"]), {"Ω (sampling law)": np.asarray(rad["omega_pdf"], dtype=float),
                                             "Ψ* (optimal)": np.asarray(rad["psi_pdf"], dtype=float)},
                     xlabel="|ω|", ylabel="radial density", title=f"{self.mechanism} features")


@_as_command
def psi(mechanism: str = "positive", *, inputs: str = "sphere", kernel: str = "softmax", d: int | None = None,
        r: float | None = None, r2: float | None = None, sigma: float | None = None, theta: float | None = None,
        grid: int | None = None) -> PsiResult:
    """The optimal sampling density Ψ of a mechanism and an input law, and V* (``rfviz psi``).

    Parameters
    ----------
    mechanism : str
        ``positive`` or ``trig``.
    inputs : str
        The input law: ``sphere``, ``gaussian``, ``pair`` or ``two_spheres``.
    kernel : str
        ``softmax`` or ``gaussian``.
    d, r, r2, sigma, theta : optional
        The law's parameters (only those the law has; defaults as in ``rfviz psi``).
    grid : int, optional
        Points of the radial grid.

    Returns
    -------
    PsiResult
        ``v_opt``, ``v_plain``, ``gain``, ``divergence``, ``radial``; ``figure()`` draws the radial densities.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.psi("positive", inputs="sphere", r=1.0, d=16)
    >>> res.v_opt <= res.v_plain
    True
    """
    return PsiResult._of(psi_report(mechanism=mechanism, inputs=inputs, kernel=kernel, d=d, r=r, r2=r2, sigma=sigma,
                                    theta=theta, grid=grid))


@dataclasses.dataclass(frozen=True)
class GramResult(_Result):
    """Gram/attention-matrix error of estimators on a data set: one row per (estimator, m) in ``results``."""

    data: dict[str, Any]
    m: list[int]
    repeats: int
    seed: int
    results: list[dict[str, Any]]
    clusters: dict[str, Any] | None
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)


@_as_command
def gram(names: str | Sequence[str], data: str, *, keys_data: str | None = None,
         data_params: Mapping[str, Any] | None = None, queries: int = 64, keys: int = 64,
         preprocess: str | None = None, scale: float = 1.0, m: Sequence[int] = (8, 32, 128), repeats: int = 100,
         seed: int = 0, device: str = "cpu", params: Mapping[str, Any] | None = None, **more: Any) -> GramResult:
    """Expected and sampled Gram-matrix error E‖K̂ − K‖²_F of estimators on a data set (``rfviz gram``).

    Parameters
    ----------
    names : str or sequence of str
        Estimators (comma-separated or a list), or ``hrf_clustered``.
    data : str
        ``digits``, ``wine``, ``iris``, ``breast_cancer``, ``clusters`` or a .csv/.npy path.
    keys_data : str, optional
        A second file holding the keys.
    data_params : mapping, optional
        Parameters of ``clusters``.
    queries, keys : int
        Points drawn on each side.
    preprocess : str, optional
        Comma-separated steps (default ``center,scale``; none for ``clusters``).
    scale : float
        Mean norm after the ``scale`` step.
    m : sequence of int
        Numbers of random features.
    repeats : int
        Monte-Carlo repeats (0: closed form only).
    seed : int
        Seed of the data draw, k-means and Monte Carlo.
    device : str
        ``cpu`` (default), ``auto``, ``cuda`` or ``cuda:N`` (``rfviz.params.DEVICE_PARAM``).
    params, **more
        Estimator parameters (each goes to the named estimators that have it), as a mapping and/or keywords.

    Returns
    -------
    GramResult
        ``results``: per estimator and m, the closed-form and sampled Frobenius errors and their agreement.

    Examples
    --------
    >>> import rfviz.api
    >>> res = rfviz.gram("trig", "iris", queries=8, keys=8, m=[16], repeats=0)
    >>> res.results[0]["frobenius_sq_closed_form"] > 0
    True
    """
    if params is not None and not isinstance(params, Mapping):
        raise ParameterError(f"params must be a mapping of estimator parameters, got {str(params)[:40]!r}")
    report = gram_study(names, data, keys_data=keys_data, data_params=data_params, queries=queries, keys=keys,
                        preprocess=preprocess, scale=scale, m=m, repeats=repeats, seed=seed, device=device,
                        params={**(params or {}), **more})
    return GramResult._of(report)


@dataclasses.dataclass(frozen=True)
class CheckResult(_Result):
    """The estimator lab's verdict on an estimator (``rfviz check``): ``exit_code`` 0 unbiased, 1 bias detected,
    3 inconclusive; ``report`` is the lab's full report (``to_text()`` prints it)."""

    estimator: str
    verdict: str
    exit_code: int
    report: Any = dataclasses.field(repr=False, compare=False)
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)


@_as_command
def check(target: str | type, params: Mapping[str, Any] | None = None, **options: Any) -> CheckResult:
    """Check an estimator for bias and compare it with the built-ins (``rfviz check``, the estimator lab).

    Parameters
    ----------
    target : str or type
        A registered estimator's name, ``path/to/file.py:ClassName``, or an estimator class.
    params : mapping, optional
        The estimator's parameters.
    **options
        ``r``, ``theta`` (radians), ``d``, ``trials``, ``seed``, ``alpha``, ``compare``, ``device``,
        ``check_feature_maps``, ``pairs``: as in :func:`rfviz.lab.check_estimator` (same defaults as the command).

    Returns
    -------
    CheckResult
        ``verdict``, ``exit_code`` (0 unbiased, 1 bias detected, 3 inconclusive) and the full ``report``.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.check("trig", {"m": 4}, r=[0.5], theta=[0.5, 1.5, 2.5], d=4, trials=4000, compare=[],
    ...                   pairs=["canonical"], check_feature_maps=False)
    >>> res.verdict, res.exit_code
    ('unbiased', 0)
    """
    from .lab import check as lab_check
    from .plugin_process import check_isolated, check_target

    params = check_target_arguments(target, params)
    settings = check_settings(**options)
    compare = settings.pop("compare")
    if isinstance(target, str):
        if target not in REGISTRY:  # plugin code runs in a plugin process
            report = check_isolated(target, (), params, compare, **settings)
        else:
            report = check_target(target, (), params, compare, **settings)
        return CheckResult._of(report.to_json(), estimator=report.estimator, report=report)
    unknown = [c for c in compare if c not in REGISTRY]
    if unknown:
        raise ParameterError(f"compare must name built-in estimators ({', '.join(sorted(REGISTRY))}), got "
                             f"{unknown[0][:80]!r}")
    report = lab_check(target, params, compare=compare, **settings)
    return CheckResult._of(report.to_json(), estimator=getattr(target, "name", str(target)), report=report)


def _check_flags(**flags: Any) -> None:
    """true/false options: a bool, nothing else (no 0/1, no text)."""
    for name, value in flags.items():
        if not isinstance(value, bool | np.bool_):
            raise ParameterError(f"{name} must be true or false, got {str(value)[:40]!r}")


@dataclasses.dataclass(frozen=True)
class SweepResult(_Result):
    """A finished (or resumed) sweep: where its rows are and how it ran; ``rows()`` reads them."""

    out: str
    status: str
    points_done: int
    points_total: int
    points_this_run: int
    wall_s: float
    backend: str
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)

    def rows(self) -> Any:
        """The result rows as a pandas DataFrame (read from the CSV or Parquet output).

        Returns
        -------
        pandas.DataFrame
            One row per grid point, the columns of the sweep file.
        """
        from .compute.sweep_files import read_rows

        return read_rows(self.out)


@_as_command
def sweep(name: str, out: str | pathlib.Path, *, grid: Mapping[str, Any] | Sequence[str], trials: int = 100_000,
          seed: int = 0, block_trials: int | None = None, backend: str = "local", device: str = "auto",
          resume: bool = False, overwrite: bool = False, progress: bool = False,
          backend_options: Mapping[str, Any] | None = None, **fixed: Any) -> SweepResult:
    """Monte Carlo of one estimator over a grid, one row per point, resumable (``rfviz sweep``).

    Parameters
    ----------
    name : str
        A registered estimator.
    out : str or path
        The result file, ``.csv`` or ``.parquet`` (a ``.manifest.json`` is written beside it).
    grid : mapping or sequence of str
        Axes: ``{"theta": "0:3.1416:8", "m": [8, 16]}`` or ``["theta=0:3.1416:8", "m=8,16"]``.
    trials : int
        Trials per grid point.
    seed : int
        Sweep seed (task seeds derive from seed, point, block).
    block_trials : int, optional
        Trials per task (default 4096).
    backend : str
        ``local`` or ``ray``.
    device : str
        ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (``rfviz.params.DEVICE_PARAM``; cuda:N on the local backend only).
    resume, overwrite : bool
        Continue an interrupted sweep / replace an existing file.
    progress : bool
        A progress line on stderr.
    backend_options : mapping, optional
        ``address``, ``workers``, ``max_retries``, ``task_seconds``, ``gpus_per_task`` (Ray).
    **fixed
        Fixed estimator parameters and inputs (r, theta, d, embedding).

    Returns
    -------
    SweepResult
        ``status``, ``points_done``, ...; ``rows()`` reads the rows.

    Examples
    --------
    >>> import os, tempfile, rfviz.api
    >>> out = os.path.join(tempfile.mkdtemp(), "s.csv")
    >>> res = rfviz.sweep("trig", out, grid={"theta": [0.5, 1.0]}, trials=4096, d=4, m=8, device="cpu")
    >>> res.points_done, len(res.rows())
    (2, 2)
    """
    from .sweeps import make_backend, run_sweep
    from .sweeps.grid import axis_text, spec_text
    from .sweeps.runner import sweep_device, sweep_spec

    _check_flags(resume=resume, overwrite=overwrite, progress=progress)
    if isinstance(grid, Mapping):
        axes = [axis_text(str(k), v) for k, v in grid.items()]
    elif isinstance(grid, list | tuple) and all(isinstance(a, str) for a in grid):
        axes = list(grid)
    else:
        raise ParameterError(f"grid must be a mapping of axes or a list of name=values texts, got {str(grid)[:40]!r}")
    spec = sweep_spec(name, {k: spec_text(k, v) for k, v in fixed.items() if v is not None}, axes, trials=trials,
                      seed=seed, block_trials=block_trials, device=device, resume=resume,
                      overwrite=overwrite)  # validates before a backend starts
    if backend_options is not None and not isinstance(backend_options, Mapping):
        raise ParameterError(f"backend_options must be a mapping, got {str(backend_options)[:40]!r}")
    options = dict(backend_options or {})
    runner = make_backend(backend, address=options.pop("address", None), workers=options.pop("workers", None),
                          **options)
    try:
        spec = dataclasses.replace(spec, device=sweep_device(device, backend, runner))
        report = run_sweep(spec, str(out), runner, resume=resume, overwrite=overwrite, progress=progress)
    finally:
        runner.close()
    data = {"out": str(out), "status": report.status, "points_done": report.points_done,
            "points_total": report.points_total, "points_this_run": report.points_this_run,
            "wall_s": report.wall_s, "backend": report.backend}
    return SweepResult._of(data)
