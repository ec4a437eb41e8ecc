"""``python -m rfviz check TARGET``: the estimator lab from the command line (see rfviz.lab).

TARGET is a built-in name, the name of a loaded plugin, or a plugin spec (``path/to/file.py[:Class]``,
``package.module:Class``). Exit code (rfviz.lab.EXIT_CODES) 0: unbiased; 1: bias detected or the closed form
disagrees; 3: inconclusive; 4: biased, as declared (the estimator sets ``unbiased = False``); 2: bad input or a broken
plugin (one line on stderr, never a traceback). Plugin code runs in its own process (rfviz.plugin_process: own session,
output captured, deadline, RLIMIT_AS and RLIMIT_CPU); a built-in target without --plugin runs in-process.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from ..api.check_command import check
from ..lab import (
    DEFAULT_ALPHA,
    DEFAULT_COMPARE,
    DEFAULT_D,
    DEFAULT_R,
    DEFAULT_THETA,
    DEFAULT_TRIALS,
    PAIR_KINDS,
)
from ..params import MAX_LIST_LENGTH, ParameterError
from ..plugins import PluginError, plugin_timeout_scope
from ..textio import UsageError, parse_assignments, parse_vector

NAME = "check"
HELP = "estimator lab: test a (new) estimator for bias and compare its MSE with the built-ins"


def _angles(text: str) -> list[float]:
    """θ values in radians; ``deg`` suffix for degrees (``0,45,90deg``), or ``N`` alone for N equispaced in [0, π]."""
    t = text.strip()
    if t.isdigit():
        n = int(t)
        if n > MAX_LIST_LENGTH:
            raise ParameterError(f"theta may be at most {MAX_LIST_LENGTH} angles, got {n}; split the study (e.g. with "
                                 f"the sweep command)")
        if n < 1:
            raise ParameterError(f"theta must be a count ≥ 1 or a list of angles, got {text!r}")
        return [math.pi * i / max(n - 1, 1) for i in range(n)] if n > 1 else [math.pi / 2]
    if t.endswith("deg"):
        return [math.radians(v) for v in parse_vector("theta", t[:-3])]
    return parse_vector("theta", t).tolist()


def _feature_check(args: argparse.Namespace) -> dict:
    """The keywords of ``rfviz.check`` for ``--features`` (a plain feature map; no target, no parameters)."""
    if args.target is not None or args.params or args.plugin:
        raise UsageError("--features checks a feature map: give no TARGET, parameters or --plugin with it")
    if args.kernel is None:
        raise UsageError("--features needs --kernel softmax or --kernel gaussian (the kernel Φ[i]·Φ[j] estimates)")
    return {"features": args.features, "kernel": args.kernel, "mse": args.mse, "biased": args.biased}


def _run_check(args: argparse.Namespace) -> int:
    if args.features is not None:
        what = _feature_check(args)
        return _report(args, check(**what, **_settings(args)))
    if args.target is None:
        raise UsageError("check needs a TARGET (an estimator name or plugin spec) or --features FILE.py:FUNCTION")
    if args.mse is not None or args.biased:
        raise UsageError("--mse and --biased go with --features (a feature map)")
    params = parse_assignments(args.params)
    if args.kernel is not None:
        if "kernel" in params:
            raise UsageError("kernel given twice (--kernel and kernel=)")
        params["kernel"] = args.kernel
    return _report(args, check(args.target, plugins=args.plugin or (), param_texts=params, **_settings(args)))


def _settings(args: argparse.Namespace) -> dict:
    """The lab's settings from the options, the same for a target and a feature map."""
    compare = [c.strip() for c in args.compare.split(",") if c.strip()] if args.compare is not None \
        else list(DEFAULT_COMPARE)
    return dict(r=parse_vector("r", args.r).tolist(), theta=_angles(args.theta), d=args.d, trials=args.trials,
                seed=args.seed, alpha=args.alpha, device=args.device, check_feature_maps=not args.no_features,
                compare=compare, pairs=[k.strip() for k in args.pairs.split(",") if k.strip()])


def _report(args: argparse.Namespace, result: Any) -> int:
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.report.to_text())
    return result.exit_code


def run(args: argparse.Namespace) -> int:
    """Plugin code runs in its own process; any failure is reported on one line (exit 2), never a traceback."""
    try:
        with plugin_timeout_scope(args.timeout):
            return _run_check(args)
    except (ParameterError, UsageError, NotImplementedError, BrokenPipeError):
        raise
    except Exception as exc:  # a last resort for failures outside the guarded estimator calls
        what = args.target if args.features is None else args.features
        raise PluginError(f"check of {what!r} failed: {type(exc).__name__}: {' '.join(str(exc).split())}") from exc


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", nargs="?", default=None,
                   help="built-in or plugin name, or a plugin spec path/to/file.py[:Class] or module:Class (or "
                        "--features instead)")
    p.add_argument("params", nargs="*", help="estimator parameters as key=value (e.g. m=16 sigma=1.3)")
    p.add_argument("--plugin", action="append", metavar="SPEC",
                   help="load a plugin first (path/to/file.py[:Class] or module:Class); repeatable")
    p.add_argument("--kernel", default=None, help="target kernel (softmax or gaussian for the softmax family; "
                   "required with --features)")
    p.add_argument("--features", default=None, metavar="FILE.py:FUNCTION",
                   help="check a plain feature map features(X, rng) -> Φ instead of an estimator class (X an (n, d) "
                        "numpy array, rng a numpy Generator, Φ an (n, M) array; Φ[i]·Φ[j] estimates the kernel); "
                        "also module:FUNCTION; it runs in a plugin process")
    p.add_argument("--mse", default=None, metavar="FILE.py:FUNCTION",
                   help="with --features: its closed-form MSE, mse(x, y) -> float for one pair")
    p.add_argument("--biased", action="store_true",
                   help="with --features: the map is biased by design (a bias found is then exit 4, not 1)")
    p.add_argument("--d", type=int, default=DEFAULT_D, help=f"input dimension (default {DEFAULT_D})")
    p.add_argument("--r", default=",".join(f"{v:g}" for v in DEFAULT_R),
                   help="input norms |x| = |y| of the grid, comma-separated (default %(default)s)")
    p.add_argument("--theta", default=str(len(DEFAULT_THETA)),
                   help="angles: a count N (N equispaced in [0, π]), radians 0,1.2,3.1 or degrees 0,45,90deg "
                        "(default %(default)s)")
    p.add_argument("--trials", type=int, default=DEFAULT_TRIALS, help=f"Monte-Carlo trials (default {DEFAULT_TRIALS})")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                   help=f"family-wise error rate of the bias test (Holm; default {DEFAULT_ALPHA})")
    p.add_argument("--compare", default=None,
                   help=f"built-ins for the MSE ratio map, comma-separated (default {','.join(DEFAULT_COMPARE)}; "
                        "empty for none)")
    p.add_argument("--pairs", default=",".join(PAIR_KINDS),
                   help="which pairs enter the bias test, comma-separated: canonical (the r × θ grid), random "
                        "(random orientations of R^d), unequal (|y| = |x|/2); default all three, each reported")
    p.add_argument("--no-features", action="store_true", help="skip the feature-map checks")
    p.add_argument("--device", default="cpu", help="cpu (default), auto, cuda or cuda:N")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="deadline of the plugin process (import, smoke test and the check together; default: "
                        "$RFVIZ_PLUGIN_TIMEOUT or 300); its address space and CPU time are limited by "
                        "$RFVIZ_PLUGIN_MEMORY (default 4GiB) and $RFVIZ_PLUGIN_CPU_SECONDS")

