"""The Python face of rfviz: one function per command, each returning a small frozen result object.

``rfviz.mse``, ``rfviz.density``, ``rfviz.psi``, ``rfviz.check``, ``rfviz.api.gram`` and ``rfviz.api.sweep`` (the
names ``rfviz.gram`` and ``rfviz.sweep`` belong to the engine's modules) take typed
keyword arguments and compute exactly what ``rfviz COMMAND ... --json`` prints (the CLI parses its text into the same
calls): ``result.to_dict()`` equals the command's JSON, and the numbers are attributes (``result.mse``,
``result.mc.stderr``, ...). Figure helpers (``result.figure()``, :func:`mse_curve`) return Plotly figures, which show
themselves in Jupyter.

>>> import rfviz
>>> res = rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10)
>>> round(res.mse, 6)
0.133553
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pathlib
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import data as datasets
from .clustered import NAME as CLUSTERED
from .clustered import ClusteredCE
from .engine import monte_carlo
from .estimators import REGISTRY, get_estimator
from .geometry import embed_pair, parse_real, snap_theta
from .gram import family_agreement, gram_cost, gram_error, require_gram_budget
from .maths.optimal import (
    INPUT_KINDS,
    INPUT_PARAMS,
    KERNELS,
    MECHANISMS,
    InputLaw,
    OptimalSampling,
    gaussian_input_thresholds,
)
from .maths.simrf import (
    cdf_wij,
    check_coupling_dimension,
    log_conformity,
    log_density_wij,
    mean_wij_sq,
    mse_ratio_vs_iid,
    pair_cosine,
    pairs_within_blocks,
)
from .numerics import LOG10
from .params import CLI_D_PARAM, Param, ParameterError, require_fits, validate_params
from .params import check as check_value
from .registries import COUPLINGS_WITH_DENSITY, IID, SIMPLEX
from .textio import format_complex, jsonable, parse_vector

__all__ = ["CheckResult", "DensityResult", "GramResult", "MSEResult", "MonteCarloSummary", "PsiResult",
           "SweepResult", "check", "density", "gram", "mse", "mse_curve", "psi", "sweep"]


def as_text(value: Any) -> str:
    """A Python value as the command line writes it (what the CLI's ``key=value`` parsing reads back exactly):
    floats by ``repr``, complex numbers as ``a+bj``, sequences and arrays comma-separated, booleans lower-case.

    Parameters
    ----------
    value : Any
        A string (returned as it is), number, complex number, boolean, sequence or array.

    Returns
    -------
    str
        The text of a ``key=value`` command-line assignment.

    Examples
    --------
    >>> as_text(-0.1 + 0.05j), as_text([1, 2.5]), as_text(True)
    ('-0.1+0.05j', '1,2.5', 'true')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, complex | np.complexfloating):
        return format_complex(complex(value))
    if isinstance(value, np.ndarray):
        return ",".join(as_text(v) for v in np.ravel(value).tolist())
    if isinstance(value, Sequence):
        return ",".join(as_text(v) for v in value)
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _assignments(values: Mapping[str, Any]) -> dict[str, str]:
    return {k: as_text(v) for k, v in values.items() if v is not None}


# ------------------------------------------------------------------------------ the computations behind the commands
# Each ``*_report`` takes the command's ``key=value`` assignments as text and returns its JSON object; the functions
# above call them with typed values (``as_text``), and rfviz.cli's commands call them with what the user typed.

INPUT_KEYS = ("r", "theta", "d", "embedding", "x", "y")


def resolve_inputs(values: dict[str, str]) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """x, y from ``x=``/``y=`` or from (r, theta, d) in the named ``embedding`` (default canonical).

    An averaging embedding (e.g. ``rotation_average``) returns a stack of pairs (shape (n, d)); ``mse_report``
    then reports the mean MSE over them."""
    if "x" in values or "y" in values:
        if "x" not in values or "y" not in values:
            raise ParameterError("x and y must be given together")
        if any(k in values for k in ("r", "theta", "d", "embedding")):
            raise ParameterError("give either x and y, or r, theta, d and embedding, not both")
        x = parse_vector("x", values["x"])
        y = parse_vector("y", values["y"])
        if x.shape != y.shape:
            raise ParameterError(f"x and y must have the same length, got {x.size} and {y.size}")
        return x, y, {"x": x.tolist(), "y": y.tolist(), "d": int(x.size)}
    r = _number("r", values.get("r", "1.0"))
    theta = _number("theta", values.get("theta", str(math.pi / 2)))
    d = check_value(_number("d", values.get("d", "2")), CLI_D_PARAM)
    require_fits(f"a pair of inputs in dimension d={d}", 4 * 8 * d, "use a smaller d")
    embedding = values.get("embedding", "canonical")
    x, y = embed_pair(r, theta, d, embedding)
    info: dict[str, Any] = {"r": r, "theta": theta, "d": d}
    if "embedding" in values:
        info["embedding"] = embedding
    return x, y, info


def _log_mean_mse(log_mse: np.ndarray) -> float:
    """log of the mean of e^{log_mse} (a single pair: its value)."""
    values = np.ravel(log_mse)
    top = float(np.max(values))
    if not math.isfinite(top):
        return top
    return top + math.log(float(np.mean(np.exp(values - top))))


AGREEMENT_Z = 4.0
"""|z| of the sampled MSE against the closed form above which a reliable point is called a disagreement."""


def agreement(z: float, reliable: bool) -> str:
    """"agrees", "disagrees" (|z| > AGREEMENT_Z at a reliable point) or "unreliable" (the sampled MSE's standard
    error cannot be trusted, so no z-score means anything)."""
    if not reliable:
        return "unreliable"
    return "agrees" if math.isfinite(z) and abs(z) <= AGREEMENT_Z else "disagrees"


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(float(v)) else None


def _count(v: float) -> int | None:
    return int(v) if math.isfinite(float(v)) else None


def _number(name: str, text: str) -> float:
    """A number as typed (``pi/2`` allowed); θ just above π (``3.1416``) is read as π."""
    value = parse_real(name, text)
    return snap_theta(value) if name == "theta" else value


class _Progress:
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
        raise ParameterError(f"the Monte-Carlo run passed --max-seconds={self.max_seconds:g} at "
                             f"{100 * self.fraction:.1f}% done; use fewer trials, a larger --max-seconds, or the "
                             f"resumable sweep command")


def mse_report(name: str, assignments: dict[str, str], trials: int, seed: int, device: str,
               max_seconds: float | None = None) -> dict[str, Any]:
    """The JSON object of ``python -m rfviz mse``."""
    cls = get_estimator(name)
    inputs = {k: v for k, v in assignments.items() if k in INPUT_KEYS}
    est = cls(**{k: v for k, v in assignments.items() if k not in INPUT_KEYS})
    x, y, input_info = resolve_inputs(inputs)
    d = x.shape[-1]
    est.check_dimension(d)
    log_k, sign = est.kernel_log_value(x, y)
    if x.ndim > 1:  # averaging embedding: mean MSE over the stack of pairs (the kernel is the same for all)
        log_k, sign = log_k[0], sign[0]
    log_mse, note = None, None
    if est.closed_form_available():
        try:
            log_mse = _log_mean_mse(est.log_mse(x, y))
        except (FloatingPointError, OverflowError) as exc:  # valid but extreme inputs: null with a reason
            note = f"closed form not representable at these inputs ({' '.join(str(exc).split())[:160]})"
        else:
            if math.isnan(log_mse):
                log_mse, note = None, "closed form not representable at these inputs (NaN in log space)"
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
        prog = _Progress(max_seconds)
        res = monte_carlo(est, x, y, trials=max(2, -(-trials // n_pairs)), seed=seed, device=device, progress=prog,
                          cancel=prog.cancel)
        if n_pairs == 1:
            exact = float(res.rel_mse[0]) == 0.0 and float(res.rel_mse_stderr[0]) == 0.0
            reliable, warning = bool(res.reliable[0]), res.warning[0]
            if exact and log_mse is not None and math.isfinite(log_mse) and log_mse - 2 * float(res.log_scale[0]) > -50:
                reliable = False  # every trial equal to K where the closed form says the estimator is not exact
                warning = ("precision loss: every sampled estimate equals K exactly, but the closed-form MSE is "
                           "not 0 here")
            bias_z = float(res.bias_z[0])
            report["mc"] = {
                "mse": float(res.mse[0]),
                "stderr": float(res.mse_stderr[0]),
                "log10_mse": float(res.log10_mse[0]) if float(res.rel_mse[0]) > 0 else None,
                "mean": float(res.mean[0]),
                "bias_z": bias_z if math.isfinite(bias_z) else None,
                "trials": res.trials,
                "device": res.device,
                "reliable": reliable,
                "warning": warning,
                "trials_needed": _count(res.trials_needed[0]),
                "tail_index": _finite(res.tail_index[0]),
            }
            if log_mse is not None:
                z = 0.0 if exact and not math.isfinite(log_mse) else float(res.z_against(np.array([log_mse]))[0])
                report["mc"]["z_vs_closed_form"] = z if math.isfinite(z) else None
                report["mc"]["agreement"] = agreement(z, reliable)
        else:
            mse, stderr = float(np.mean(res.mse)), float(np.sqrt(np.sum(res.mse_stderr**2)) / n_pairs)
            warnings = [str(w) for w in np.ravel(res.warning) if w is not None]
            report["mc"] = {"mse": mse, "stderr": stderr, "log10_mse": math.log10(mse) if mse > 0 else None,
                            "mean": float(np.mean(res.mean)), "trials": res.trials * n_pairs, "pairs": n_pairs,
                            "device": res.device, "reliable": res.all_reliable,
                            "warning": f"{len(warnings)} of {n_pairs} pairs unreliable: {warnings[0]}" if warnings
                            else None}
            if log_mse is not None and stderr > 0 and log_mse < 709:
                z = (mse - math.exp(log_mse)) / stderr
                report["mc"]["z_vs_closed_form"] = z
                report["mc"]["agreement"] = agreement(z, res.all_reliable)
    return report




DENSITY_SPECS: dict[str, Param] = {
    "coupling": Param("coupling", SIMPLEX, "choice", "coupling of the pair", choices=COUPLINGS_WITH_DENSITY),
    "d": Param("d", 6, "int", "dimension", low=1, high=100_000),
    "m": Param("m", 0, "int", "features for the MSE ratios (default: m = d, one full block)", low=1,
               high=10_000_000),
}


def density_report(assignments: dict[str, str]) -> dict[str, Any]:
    """The JSON object of ``python -m rfviz density``: p(w), log10 p(w), P(w_ij ≤ w) at each w, E[w_ij²], the pair
    cosine, and (with ``v=``) log10 ρ(v) and MSE_coupling/MSE_iid for positive, antithetic and trig features
    (for trig the same numbers are read as z = |x − y|)."""
    known = (*DENSITY_SPECS, "w", "v")
    unknown = set(assignments) - set(known)
    if unknown:
        raise ParameterError(f"density has no parameter {sorted(unknown)[0]!r}; its parameters are: "
                             + ", ".join(known))
    own = {k: v for k, v in assignments.items() if k in DENSITY_SPECS}
    values = validate_params(tuple(DENSITY_SPECS.values()), own, "density")
    coupling, d = values["coupling"], values["d"]
    check_coupling_dimension(coupling, d)
    if "w" in assignments:
        w = parse_vector("w", assignments["w"])
        if np.any(w < 0):
            raise ParameterError(f"w must be numbers in [0, inf), got {assignments['w']!r}")
    else:
        w = np.linspace(0.0, 2.0 * math.sqrt(2.0 * d) + 6.0, 121)
    log_p = log_density_wij(w, d, coupling)
    with np.errstate(under="ignore"):
        report: dict[str, Any] = {
            "coupling": coupling,
            "d": d,
            "pair_cosine": pair_cosine(coupling, d),
            "mean_wij_sq": mean_wij_sq(d, coupling),
            "w": w,
            "density": np.exp(log_p),
            "log10_density": log_p / LOG10,
            "cdf": cdf_wij(w, d, coupling),
        }
    if "v" in assignments:
        v = parse_vector("v", assignments["v"])
        if np.any(v < 0):
            raise ParameterError(f"v must be numbers in [0, inf), got {assignments['v']!r}")
        m = values["m"] or d
        report["v"] = v
        report["m"] = m
        report["coupled_pairs"] = pairs_within_blocks(m, d) if coupling != IID else 0
        report["log10_conformity"] = log_conformity(v, d, coupling) / LOG10
        report["mse_ratio_vs_iid"] = {
            features: mse_ratio_vs_iid(features, v * v, d, m, coupling)
            for features in ("positive", "positive_antithetic")}
        report["mse_ratio_vs_iid"]["trig"] = mse_ratio_vs_iid("trig", v * v, d, m, coupling)
    return report




PSI_SPECS: dict[str, Param] = {
    "mechanism": Param("mechanism", "positive", "choice", "feature map", choices=MECHANISMS),
    "inputs": Param("inputs", "sphere", "choice", "input law", choices=INPUT_KINDS),
    "kernel": Param("kernel", "softmax", "choice", "target kernel", choices=KERNELS),
    "d": Param("d", 16, "int", "dimension", low=1, high=100_000),
    "r": Param("r", 1.0, help="sphere radius / |x| / r1", low=0.0),
    "r2": Param("r2", 1.5, help="|y| (pair) or second radius (two spheres); default r for the pair", low=0.0),
    "sigma": Param("sigma", 0.2, help="std of Gaussian inputs N(0, σ²I)", low=0.0),
    "theta": Param("theta", math.pi / 2, help="angle between x and y (radians)", low=0.0, high=math.pi),
    "grid": Param("grid", 201, "int", "points of the radial grid", low=2, high=100000),
}


def psi_report(assignments: dict[str, str]) -> dict[str, Any]:
    """The JSON object of ``python -m rfviz psi``."""
    values = validate_params(tuple(PSI_SPECS.values()), assignments, "psi")
    kind = values["inputs"]
    allowed = INPUT_PARAMS[kind]
    for name in ("d", "r", "r2", "sigma", "theta"):
        if name in assignments and name not in allowed:
            raise ParameterError(f"{name} is not a parameter of inputs={kind}; its parameters are: "
                                 + ", ".join(allowed))
    law_args: dict[str, Any] = {name: values[name] for name in allowed}
    if kind == "pair" and "r2" not in assignments:
        law_args["r2"] = values["r"]
    prob = OptimalSampling(values["mechanism"], InputLaw(kind=kind, **law_args), values["kernel"])
    report = prob.report(values["grid"])
    if kind == "gaussian":
        report["sigma_thresholds"] = {
            label: {k: math.sqrt(v) if math.isfinite(v) else None for k, v in thr.items()}
            for label, thr in gaussian_input_thresholds(values["mechanism"], values["kernel"]).items()}
    return report


def _spec_names(name: str) -> set[str]:
    cls = ClusteredCE if name == CLUSTERED else get_estimator(name)
    return {p.name for p in cls.spec}


def gram_report(names: list[str], assignments: dict[str, str], data: Any, ms: list[int], repeats: int, seed: int,
                device: str = "cpu") -> dict[str, Any]:
    """The JSON object of ``python -m rfviz gram`` for a loaded data set."""
    if "m" in assignments:
        raise ParameterError("m is set by --m (a comma-separated list), not by m=")
    specs = {name: _spec_names(name) for name in names}
    for key in assignments:
        if not any(key in s for s in specs.values()):
            raise ParameterError(f"no named estimator has a parameter {key!r} ({', '.join(names)})")
    fits: dict[str, Any] = {}
    built: list[tuple[str, Any]] = []
    for name in names:
        own = {k: v for k, v in assignments.items() if k in specs[name]}
        for m in ms:
            if name == CLUSTERED:
                est: Any = ClusteredCE(m=m, **own).fit(data.queries, data.keys, seed)
                fits[name] = est.describe_fit()
            else:
                est = get_estimator(name)(**({"m": m} if "m" in specs[name] else {}), **own)
                est.check_dimension(data.d)
            built.append((name, est))
    costs = [gram_cost(est, data.queries, data.keys, repeats) for _, est in built]  # refused before any repeat
    require_gram_budget(max((c[0] for c in costs), default=0.0), sum(c[1] for c in costs), repeats)
    results = [gram_error(est, data.queries, data.keys, repeats, seed, device, name).to_json() for name, est in built]
    for row, agrees in zip(results, family_agreement([r["z_vs_closed_form"] for r in results],
                                                     [r["reliable"] for r in results]), strict=True):
        row["agreement"] = agrees  # Holm at 1 % over the table's reliable rows
    info = {k: v for k, v in data.describe().items() if not k.endswith("_labels")}
    return {"data": info, "m": ms, "repeats": repeats, "seed": seed, "results": results,
            **({"clusters": fits} if fits else {})}


class _Result:
    """Base of the result objects: the fields are the JSON's top-level numbers; ``to_dict()`` is the JSON itself."""

    _json: dict[str, Any]

    @classmethod
    def _of(cls, json_report: Mapping[str, Any], /, **extra: Any) -> Any:
        data = jsonable(dict(json_report))
        names = [f.name for f in dataclasses.fields(cls) if f.name != "_json" and f.name not in extra]
        return cls(**{n: data.get(n) for n in names}, **extra, _json=data)

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
        Monte-Carlo trials (None or 0: closed form only).
    seed : int
        Seed of the Monte-Carlo run.
    device : str
        ``auto``, ``cpu`` or ``cuda``.
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
    assignments = _assignments({"r": r, "theta": theta, "d": d, "x": x, "y": y, "embedding": embedding, **params})
    report = mse_report(name, assignments, int(trials or 0), seed, device, max_seconds)
    mc = MonteCarloSummary._of(report["mc"]) if report.get("mc") is not None else None
    return MSEResult._of(report, mc=mc)


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
    from .estimators import get_estimator
    from .figures.common import lines

    names = [names] if isinstance(names, str) else list(names)
    if values is None:
        values = np.linspace(0.0, math.pi, 181) if vary == "theta" else np.linspace(0.05, 2.0, 160)
    axis = np.asarray(values, dtype=float)
    curves: dict[str, np.ndarray] = {}
    for name in names:
        cls = get_estimator(name)
        own = {k: v for k, v in params.items() if any(p.name == k for p in cls.spec)}
        if vary in ("theta", "r"):
            est = cls(**own)
            grid = {"r": r, "theta": theta, vary: axis}
            curves[name] = np.asarray(est.log10_mse_grid(grid["r"], grid["theta"], d), dtype=float)
        else:
            curves[name] = np.array([cls(**{**own, vary: v}).log10_mse_grid(r, theta, d) for v in axis.tolist()],
                                    dtype=float).ravel()
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
    return DensityResult._of(density_report(_assignments({"coupling": coupling, "d": d, "w": w, "v": v, "m": m})))


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
    values = {"mechanism": mechanism, "inputs": inputs, "kernel": kernel, "d": d, "r": r, "r2": r2, "sigma": sigma,
              "theta": theta, "grid": grid}
    return PsiResult._of(psi_report(_assignments(values)))


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


def _check_gram_device(device: str) -> None:
    """cpu, or cuda[:N] where torch sees a CUDA GPU; ParameterError (one line) otherwise."""
    import torch

    name = str(device).strip().lower()
    if name != "cpu" and not (name == "cuda" or (name.startswith("cuda:") and name[5:].isdigit())):
        raise ParameterError(f"device must be cpu or cuda (cuda:N), got {str(device)[:40]!r}")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ParameterError("device cuda needs a CUDA GPU, and torch sees none on this machine; use cpu")


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
        ``cpu`` or ``cuda``.
    params, **more
        Estimator parameters (each goes to the named estimators that have it), as a mapping and/or keywords.

    Returns
    -------
    GramResult
        ``results``: per estimator and m, the closed-form and sampled Frobenius errors and their agreement.

    Examples
    --------
    >>> import rfviz.api
    >>> res = rfviz.api.gram("trig", "iris", queries=8, keys=8, m=[16], repeats=0)
    >>> res.results[0]["frobenius_sq_closed_form"] > 0
    True
    """
    from .params import check_int

    items = [names] if isinstance(names, str) else list(names)
    names = [n.strip() for item in items for n in item.split(",")]
    if "" in names:
        raise ParameterError(f"estimator names must not be empty (a stray comma?), got {','.join(items)[:80]!r}")
    for name in names:
        if name != CLUSTERED and name not in REGISTRY:
            raise ParameterError(f"estimator must be one of {', '.join(sorted([*REGISTRY, CLUSTERED]))}, got "
                                 f"{name!r}")
    ms = [check_int("m", v, 1) for v in np.ravel(np.asarray(m, dtype=float)).tolist()]
    repeats = check_int("repeats", repeats, 0)
    if repeats == 1:
        raise ParameterError("repeats must be 0 (closed form only) or an integer in [2, inf), got 1")
    if preprocess is not None and "" in [t.strip() for t in preprocess.split(",")]:
        raise ParameterError(f"preprocess must name steps ({', '.join(datasets.PREPROCESS_STEPS)}) or none, got "
                             f"{preprocess[:80]!r}")
    _check_gram_device(device)
    steps = datasets.parse_preprocess(preprocess if preprocess is not None else
                                      ("none" if data == "clusters" else "center,scale"))
    ds = datasets.load(data, keys_data, queries=queries, keys=keys, steps=steps, scale=scale, seed=seed,
                       options=_assignments(data_params or {}))
    estimator_params = _assignments({**(params or {}), **more})
    return GramResult._of(gram_report(names, estimator_params, ds, ms, repeats, seed, device))


@dataclasses.dataclass(frozen=True)
class CheckResult(_Result):
    """The estimator lab's verdict on an estimator (``rfviz check``): ``exit_code`` 0 unbiased, 1 bias detected,
    3 inconclusive; ``report`` is the lab's full report (``to_text()`` prints it)."""

    estimator: str
    verdict: str
    exit_code: int
    report: Any = dataclasses.field(repr=False, compare=False)
    _json: dict[str, Any] = dataclasses.field(repr=False, compare=False)


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
    from .lab import DEFAULT_COMPARE
    from .lab import check as lab_check
    from .plugins import resolve_estimator

    if isinstance(target, str) and target not in REGISTRY:  # plugin code runs in a plugin process
        from .plugin_process import check_isolated

        opts = dict(options)
        report = check_isolated(target, (), dict(params or {}), list(opts.pop("compare", DEFAULT_COMPARE)), **opts)
        return CheckResult._of(report.to_json(), estimator=report.estimator, report=report)
    cls = resolve_estimator(target, ()) if isinstance(target, str) else target
    report = lab_check(cls, dict(params or {}), **options)
    return CheckResult._of(report.to_json(), estimator=getattr(cls, "name", str(target)), report=report)


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
        import pandas as pd

        path = pathlib.Path(self.out)
        return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


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
        ``auto``, ``cpu`` or ``cuda``.
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
    >>> res = rfviz.api.sweep("trig", out, grid={"theta": [0.5, 1.0]}, trials=4096, d=4, m=8, device="cpu")
    >>> res.points_done, len(res.rows())
    (2, 2)
    """
    from .sweep import make_backend, run_sweep
    from .sweep.runner import sweep_device, sweep_spec

    axes = [f"{k}={as_text(v)}" for k, v in grid.items()] if isinstance(grid, Mapping) else list(grid)
    spec = sweep_spec(name, _assignments(fixed), axes, trials=trials, seed=seed, block_trials=block_trials,
                      device=device, resume=resume, overwrite=overwrite)  # validates before a backend starts
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
