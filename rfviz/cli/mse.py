"""``python -m rfviz mse``: closed-form MSE of one estimator at one input pair, and optionally its Monte-Carlo twin."""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

import numpy as np

from ..engine import monte_carlo
from ..estimators import get_estimator
from ..geometry import embed_pair, parse_real, snap_theta
from ..numerics import LOG10
from ..params import MAX_DIMENSION, MAX_TRIALS, Param, ParameterError, check, require_fits
from ..textio import parse_assignments, parse_vector
from ._output import emit

NAME = "mse"
HELP = "closed-form MSE of one estimator at one input pair, and optionally its Monte-Carlo twin"

D = Param("d", 2, "int", "input dimension", low=1, high=MAX_DIMENSION)
TRIALS = Param("trials", 0, "int", "Monte-Carlo trials (0: closed form only)", low=0, high=MAX_TRIALS)
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
    d = check(_number("d", values.get("d", "2")), D)
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
    value = parse_real(name, text)
    return snap_theta(value) if name == "theta" else value


def count(text: str) -> int:
    """An argparse type for counts written as ``2000`` or ``1e6`` (an integral value)."""
    try:
        value = float(text)
        if not math.isfinite(value) or value != int(value):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:40]!r}") from None
    return int(value)


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


def run(args: argparse.Namespace) -> int:
    check(args.trials, TRIALS)
    if args.trials == 1:
        raise ParameterError("trials must be 0 (no Monte Carlo) or at least 2, got 1")
    if args.max_seconds is not None and not (math.isfinite(args.max_seconds) and args.max_seconds > 0):
        raise ParameterError(f"--max-seconds must be a number of seconds in (0, inf), got {args.max_seconds}")
    emit(mse_report(args.name, parse_assignments(args.params), args.trials, args.seed, args.device,
                    args.max_seconds), args.json)
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="estimator name (see `python -m rfviz estimators`)")
    p.add_argument("params", nargs="*",
                   help="key=value: r, theta (radians), d, embedding (canonical, flat, rotation_average), x=1,2,3, "
                        "y=..., and estimator parameters")
    p.add_argument("--trials", type=count, default=0,
                   help=f"Monte-Carlo trials (0: closed form only; at most {MAX_TRIALS:.0e}); progress on stderr "
                        "after 2 s, Ctrl-C stops")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="stop the Monte-Carlo run (exit 2) when it takes longer than this")
    p.add_argument("--seed", type=int, default=0, help="random seed of the Monte-Carlo run")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--json", action="store_true", help="print JSON")
