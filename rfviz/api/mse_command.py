"""``rfviz.mse`` (and ``rfviz mse``): the closed-form MSE of one estimator at one input pair, and optionally its
Monte-Carlo twin, from typed values (``mse_report``), as an :class:`MSEResult`; ``rfviz.mse_curve`` draws it."""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..engine import monte_carlo
from ..estimators import get_estimator  # the package: get_estimator needs the catalog loaded
from ..geometry import embed_pair, snap_theta
from ..numerics import LOG10
from ..params import (
    CLI_D_PARAM,
    CLI_TRIALS_PARAM,
    DEVICE_PARAM,
    R_PARAM,
    SEED_PARAM,
    THETA_PARAM,
    Param,
    ParameterError,
    check,
    check_list,
    require_fits,
)
from ..verdicts import roundoff_floor, sampled_verdict
from .results import Result, nested
from .validation import Instance, ListOf, api_function

X_PARAM = Param("x", None, "float", "the first input, a list of finite numbers (with y, instead of r, theta, d)")
Y_PARAM = Param("y", None, "float", "the second input, as long as x")
MAX_SECONDS_PARAM = Param("max_seconds", None, "float", "stop the Monte-Carlo run when it takes longer than this",
                          low=0.0, low_open=True)
"""``rfviz mse --max-seconds`` (None: no limit)."""
INPUT_KEYS = ("r", "theta", "d", "embedding", "x", "y")
"""The input keywords of ``mse`` (the rest are the estimator's parameters)."""


def real_input(value: Any, spec: Param) -> float:
    """r or θ as a number (text such as ``pi/2`` is the CLI's to read: ``geometry.parse_real``); θ just above π
    (``3.1416``) is read as π; then checked against ``spec``.

    Examples
    --------
    >>> real_input(3.1416, THETA_PARAM) == math.pi
    True
    """
    number = check(value, replace_bounds(spec))
    return check(snap_theta(number) if spec.name == "theta" else number, spec)


def replace_bounds(spec: Param) -> Param:
    """``spec`` without its bounds (the type check alone; θ is snapped to π before its range is checked)."""
    return dataclasses.replace(spec, low=None, high=None)


def pair_inputs(*, r: Any = None, theta: Any = None, d: Any = None, embedding: Any = None, x: Any = None,
                y: Any = None) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """x, y from ``x``/``y`` or from (r, θ, d) in the named ``embedding`` (default canonical), validated.

    An averaging embedding (e.g. ``rotation_average``) returns a stack of pairs (shape (n, d)); ``mse_report``
    then reports the mean MSE over them. The third value is the report's ``inputs`` object."""
    if x is not None or y is not None:
        if x is None or y is None:
            raise ParameterError("x and y must be given together")
        if any(v is not None for v in (r, theta, d, embedding)):
            raise ParameterError("give either x and y, or r, theta, d and embedding, not both")
        xv, yv = check_list(x, X_PARAM), check_list(y, Y_PARAM)
        if xv.shape != yv.shape:
            raise ParameterError(f"x and y must have the same length, got {xv.size} and {yv.size}")
        return xv, yv, {"x": xv.tolist(), "y": yv.tolist(), "d": int(xv.size)}
    r_value = real_input(R_PARAM.default if r is None else r, R_PARAM)
    theta_value = real_input(THETA_PARAM.default if theta is None else theta, THETA_PARAM)
    d_value = check(CLI_D_PARAM.default if d is None else d, CLI_D_PARAM)
    require_fits(f"a pair of inputs in dimension d={d_value}", 4 * 8 * d_value, "use a smaller d")
    xv, yv = embed_pair(r_value, theta_value, d_value, "canonical" if embedding is None else embedding)
    info: dict[str, Any] = {"r": r_value, "theta": theta_value, "d": d_value}
    if embedding is not None:
        info["embedding"] = embedding
    return xv, yv, info


def _log_mean_mse(log_mse: np.ndarray) -> float:
    """log of the mean of e^{log_mse} (a single pair: its value)."""
    values = np.ravel(log_mse)
    top = float(np.max(values))
    if not math.isfinite(top):
        return top
    return top + math.log(float(np.mean(np.exp(values - top))))


class Progress:
    """Progress of a long Monte-Carlo run on stderr (never stdout, so --json stays clean), after ``after_s``
    seconds; with ``max_seconds`` the run stops there (``Cancelled``) with a message saying how to go on."""

    def __init__(self, max_seconds: float | None, after_s: float = 2.0) -> None:
        self.start = time.monotonic()
        self.max_seconds, self.after_s = max_seconds, after_s
        self.last = -1.0
        self.fraction = 0.0

    def __call__(self, fraction: float) -> None:
        self.fraction = fraction
        now = time.monotonic() - self.start
        if now >= self.after_s and (now - self.last >= 1.0 or (fraction >= 1 and self.last >= 0)):
            self.last = now
            eta = now * (1 - fraction) / fraction if fraction > 0 else float("inf")
            print(f"\rmonte carlo: {100 * fraction:5.1f}%  {now:.0f} s elapsed, ~{eta:.0f} s left (Ctrl-C stops)",
                  end="" if fraction < 1 else "\n", file=sys.stderr, flush=True)

    def cancel(self) -> bool:
        if self.max_seconds is None or time.monotonic() - self.start <= self.max_seconds:
            return False
        if self.last >= 0:
            print(file=sys.stderr)
        raise ParameterError(f"the Monte-Carlo run passed max_seconds={self.max_seconds:g} at "
                             f"{100 * self.fraction:.1f}% done; use fewer trials, a larger max_seconds, or the "
                             f"resumable sweep command")


def _closed_form(est: Any, x: np.ndarray, y: np.ndarray) -> tuple[float | None, str | None]:
    """The log of the (mean) closed-form MSE, or None with a note where it is not representable."""
    if not est.closed_form_available():
        return None, None
    with np.errstate(over="ignore"):
        squares_finite = np.all(np.isfinite(np.sum(x * x, -1))) and np.all(np.isfinite(np.sum(y * y, -1)))
    if not squares_finite:  # every closed form works with |x|², |y|², |x ∓ y|²: none is a float64 here
        return None, "closed form not representable at these inputs (|x|² or |y|² overflows float64)"
    try:
        log_mse = _log_mean_mse(est.log_mse(x, y))
    except (FloatingPointError, OverflowError) as exc:  # valid but extreme inputs: null with a reason
        return None, f"closed form not representable at these inputs ({' '.join(str(exc).split())[:160]})"
    if math.isnan(log_mse):
        return None, "closed form not representable at these inputs (NaN in log space)"
    return log_mse, None


def mc_settings(trials: Any, seed: Any, device: Any, max_seconds: Any) -> tuple[int, int, str, float | None]:
    """``trials`` (None or 0: closed form only; 1 refused), ``seed``, ``device`` and ``max_seconds`` validated by
    their Params, as the CLI validates them."""
    trials = 0 if trials is None else check(trials, CLI_TRIALS_PARAM)
    if trials == 1:
        raise ParameterError("trials must be 0 (no Monte Carlo) or at least 2, got 1")
    max_seconds = None if max_seconds is None else check(max_seconds, MAX_SECONDS_PARAM)
    return trials, check(seed, SEED_PARAM), check(device, DEVICE_PARAM), max_seconds


def mse_report(name: str, params: dict[str, Any], inputs: dict[str, Any], *, trials: Any = 0, seed: Any = 0,
               device: Any = "auto", max_seconds: Any = None) -> dict[str, Any]:
    """The JSON object of ``rfviz mse`` as typed values (``params`` keep their types: a complex A stays complex).

    Parameters
    ----------
    name : str
        A registered estimator.
    params : dict
        The estimator's parameters (validated by its ``spec``).
    inputs : dict
        Some of ``r``, ``theta``, ``d``, ``embedding`` or ``x`` and ``y`` (``pair_inputs``); None values are absent.
    trials, seed, device, max_seconds
        The Monte-Carlo run (``mc_settings``); trials 0: closed form only.

    Returns
    -------
    dict
        estimator, kernel, params, inputs, kernel_value, log10_kernel_value, mse, log10_mse, mc (and a note where
        the closed form is not representable).

    Examples
    --------
    >>> round(mse_report("trig", {"m": 10}, {"r": 1.0, "theta": 1.0, "d": 4})["mse"], 6)
    0.133553
    """
    trials, seed, device, max_seconds = mc_settings(trials, seed, device, max_seconds)
    if not isinstance(name, str):
        raise ParameterError(f"estimator must be the name of a registered estimator, got {str(name)[:40]!r}")
    unknown = sorted(set(inputs) - set(INPUT_KEYS))
    if unknown:
        raise ParameterError(f"mse has no input {unknown[0]!r}; its inputs are: {', '.join(INPUT_KEYS)}")
    est = get_estimator(name)(**params)
    x, y, input_info = pair_inputs(**inputs)
    est.check_dimension(x.shape[-1])
    log_k, sign = est.kernel_log_value(x, y)
    if x.ndim > 1:  # averaging embedding: mean MSE over the stack of pairs (the kernel is the same for all)
        log_k, sign = log_k[0], sign[0]
    log_mse, note = _closed_form(est, x, y)
    report: dict[str, Any] = {
        "estimator": name,
        "kernel": est.kernel,
        "params": dict(est.params),
        "inputs": input_info,
        "kernel_value": float(sign) * math.exp(float(log_k)) if float(log_k) < 709 else None,
        "log10_kernel_value": float(log_k) / LOG10,
        "mse": math.exp(log_mse) if log_mse is not None and log_mse < 709 else None,
        "log10_mse": None if log_mse is None or not math.isfinite(log_mse) else log_mse / LOG10,
        "mc": None,
    }
    if note is not None:
        report["note"] = note
    if trials:
        n_pairs = 1 if x.ndim == 1 else x.shape[0]
        prog = Progress(max_seconds)
        res = monte_carlo(est, x, y, trials=max(2, -(-trials // n_pairs)), seed=seed, device=device, progress=prog,
                          cancel=prog.cancel)
        report["mc"] = sampled_verdict(res, log_mse, n_pairs, roundoff_floor(x.shape[-1], int(est.params.get("m", 1))))
    return report


CURVE_VARY_DEFAULTS = {"theta": (0.0, math.pi, 181), "r": (0.05, 2.0, 160)}
"""The default grid of ``mse_curves`` along θ and r (start, stop, count)."""


def _curve_names(names: Any) -> list[str]:
    items = [names] if isinstance(names, str) else list(names) if isinstance(names, list | tuple) else None
    if not items or not all(isinstance(n, str) for n in items):
        raise ParameterError(f"names must be an estimator name or a non-empty list of them, got {str(names)[:80]!r}")
    return items


def mse_curves(names: Any, *, vary: Any = "theta", values: Any = None, r: Any = 1.0, theta: Any = math.pi / 2,
               d: Any = 2, params: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """log10 of the closed-form MSE of estimators along ``theta``, ``r`` or a numeric estimator parameter.

    Parameters
    ----------
    names : str or list of str
        Registered estimators (parameters they lack are not passed to them).
    vary : str
        ``theta``, ``r`` or a numeric parameter of every named estimator.
    values : list or array, optional
        The values of ``vary`` (at most ``MAX_LIST_LENGTH``; a default grid for θ and r).
    r, theta, d
        The fixed inputs (validated as ``rfviz mse``'s).
    params : dict, optional
        Estimator parameters; each must belong to at least one named estimator.

    Returns
    -------
    (numpy.ndarray, dict)
        The axis and one curve per estimator name.

    Examples
    --------
    >>> axis, curves = mse_curves("trig", values=[0.5, 1.0], params={"m": 16})
    >>> curves["trig"].shape
    (2,)
    """
    names, params = _curve_names(names), dict(params or {})
    classes = {name: get_estimator(name) for name in names}
    specs = {name: {p.name: p for p in cls.spec} for name, cls in classes.items()}
    for key in params:
        if not any(key in s for s in specs.values()):
            raise ParameterError(f"no named estimator has a parameter {key!r} ({', '.join(names)})")
    if not isinstance(vary, str) or not (vary in CURVE_VARY_DEFAULTS or all(
            vary in s and s[vary].kind in ("int", "float") for s in specs.values())):
        raise ParameterError(f"vary must be theta, r or a numeric parameter of every named estimator, got "
                             f"{str(vary)[:40]!r}")
    r, theta = real_input(r, R_PARAM), real_input(theta, THETA_PARAM)
    d = check(d, CLI_D_PARAM)
    if values is None:
        values = np.linspace(*CURVE_VARY_DEFAULTS.get(vary, (0.05, 2.0, 160)))
    spec = {"theta": THETA_PARAM, "r": R_PARAM}.get(vary) or specs[names[0]][vary]
    axis = check_list(values, spec)
    require_fits(f"MSE curves at {axis.size} values in dimension d={d}", 4 * 8 * axis.size * d,
                 "use a smaller d or fewer values")
    curves: dict[str, np.ndarray] = {}
    for name, cls in classes.items():
        own = {k: v for k, v in params.items() if k in specs[name]}
        if vary in CURVE_VARY_DEFAULTS:
            grid = {"r": r, "theta": theta, vary: axis}
            curves[name] = np.asarray(cls(**own).log10_mse_grid(grid["r"], grid["theta"], d), dtype=float)
        else:
            curves[name] = np.array([cls(**{**own, vary: v}).log10_mse_grid(r, theta, d)
                                     for v in check(axis, specs[name][vary]).tolist()], dtype=float).ravel()
    return axis, curves


# ------------------------------------------------------------------------------------------------ the API
@dataclasses.dataclass(frozen=True)
class MonteCarloSummary(Result):
    """The sampled MSE of :func:`mse` with ``trials``: its standard error, reliability and agreement with the closed
    form (over a stack of pairs, ``pairs`` is their number and ``bias_z``, ``trials_needed``, ``tail_index`` are
    absent).

    Parameters
    ----------
    mse, stderr, log10_mse, mean : float
        The sampled MSE, its standard error, its log10 and the mean estimate.
    bias_z : float or None
        z of the mean against the kernel value.
    trials, pairs : int
        Trials run, and pairs averaged (an averaging embedding).
    device : str
        Where it ran.
    reliable : bool
        Whether the standard error can be trusted (``rfviz.verdicts``).
    warning : str or None
        Why not.
    trials_needed : int or None
        Trials a reliable standard error would need.
    tail_index : float or None
        Hill estimate of the squared error's tail.
    z_vs_closed_form : float or None
        z of the sampled against the closed-form MSE.
    agreement : str or None
        ``agrees``, ``disagrees``, ``unreliable`` or ``exact``.

    Examples
    --------
    >>> import rfviz
    >>> rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10, trials=2000, device="cpu").mc.trials
    2000
    """

    mse: float
    stderr: float
    log10_mse: float | None
    mean: float
    bias_z: float | None = None
    trials: int = 0
    pairs: int | None = None
    device: str = "cpu"
    reliable: bool = False
    warning: str | None = None
    trials_needed: int | None = None
    tail_index: float | None = None
    z_vs_closed_form: float | None = None
    agreement: str | None = None


@dataclasses.dataclass(frozen=True)
class MSEResult(Result):
    """Closed-form MSE of one estimator at one input pair (``mse`` None where it overflows or has no closed form,
    with a ``note``) and, with trials, its Monte-Carlo twin ``mc``.

    Parameters
    ----------
    estimator, kernel : str
        The estimator and its target kernel.
    params : dict
        The estimator's parameters, typed (a complex A stays complex; the JSON writes it as text).
    inputs : dict
        r, theta, d (and embedding) or x, y, d.
    kernel_value, log10_kernel_value : float
        K(x, y) (None where it overflows) and its log10.
    mse, log10_mse : float or None
        The closed-form MSE and its log10.
    mc : MonteCarloSummary or None
        The Monte-Carlo twin.
    note : str or None
        Why the closed form is missing (absent from the JSON when there is none).

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10)
    >>> round(res.mse, 6), res.to_dict()["estimator"]
    (0.133553, 'trig')
    """

    estimator: str
    kernel: str
    params: dict[str, Any]
    inputs: dict[str, Any]
    kernel_value: float | None
    log10_kernel_value: float
    mse: float | None
    log10_mse: float | None
    mc: MonteCarloSummary | None = dataclasses.field(default=None, metadata=nested(MonteCarloSummary))
    note: str | None = None


MSE_CONSTRAINTS = {"name": Instance("estimator", (str,), "the name of a registered estimator"),
                   "r": R_PARAM, "theta": replace_bounds(THETA_PARAM), "d": CLI_D_PARAM, "x": ListOf(X_PARAM),
                   "y": ListOf(Y_PARAM), "embedding": Instance("embedding", (str,), "the name of an embedding"),
                   "trials": CLI_TRIALS_PARAM, "seed": SEED_PARAM, "device": DEVICE_PARAM,
                   "max_seconds": MAX_SECONDS_PARAM}
"""The constraints of :func:`mse` (θ's range is checked after θ just above π is read as π)."""


@api_function(MSE_CONSTRAINTS)
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
        ``embedding`` (or ``flat``, ``rotation_average``). Numbers only (``math.pi / 2``, not ``"pi/2"``).
    x, y : array_like, optional
        An explicit pair instead of (r, θ, d).
    embedding : str, optional
        How (r, θ) become vectors of R^d: ``canonical`` (the default), ``flat`` or ``rotation_average``.
    trials : int, optional
        Monte-Carlo trials (None or 0: closed form only; otherwise an integer in [2, 1e8]).
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
    return MSEResult.from_mapping(report)


@api_function({"vary": Instance("vary", (str,), "theta, r or a numeric parameter of every named estimator"),
               "r": R_PARAM, "theta": replace_bounds(THETA_PARAM), "d": CLI_D_PARAM})
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
    r, theta, d : float, float, int
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
    from ..figures.common import lines

    axis, curves = mse_curves(names, vary=vary, values=values, r=r, theta=theta, d=d, params=params)
    label = {"theta": "θ (radians)", "r": "r = |x| = |y|"}.get(vary, vary)
    return lines(axis, curves, xlabel=label, ylabel="log10 MSE", theta_axis=vary == "theta",
                 title=f"closed-form MSE at d = {d}")
