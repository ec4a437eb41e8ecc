"""``python -m rfviz features-needed``: the smallest number of features m whose relative error √MSE/|K| is at most ε,
at a pair, over an (r, θ) region (worst or root-mean) or over a data set's Gram matrix (relative Frobenius error).

The computation is ``rfviz.features_needed`` (rfviz.api.features_needed_command → rfviz.compute.features); this
module reads the text into typed values; ``--json`` prints the result's ``to_dict()``.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..api.features_needed_command import EPS_PARAM, features_needed
from ..estimators import get_estimator  # the package: the catalog loaded
from ..geometry import parse_real
from ..params import CLI_D_PARAM, MAX_LIST_LENGTH, ParameterError
from ..textio import UsageError, parse_assignments, parse_values
from ._data import DATA_SOURCES, add_data_arguments, data_options
from ._output import emit

NAME = "features-needed"
HELP = ("smallest number of features m whose relative error √MSE/|K| is at most eps: at a pair, worst or mean over "
        "an (r, θ) region, or over a data set's Gram matrix")
INPUT_KEYS = ("eps", "r", "theta", "d", "over", "embedding")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="estimator name (see `python -m rfviz estimators`)")
    p.add_argument("params", nargs="*",
                   help="key=value: eps (target relative error, e.g. 0.1), r and theta (one value each, or "
                        "comma-separated lists for a region), d, over (point, worst, mean, gram), embedding, and "
                        "estimator parameters (n fixes a hybrid's λ features; m is what is found)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_data_arguments(p, required=False, seed_help="seed of the data draw",
                       data_help="a data set instead of r, theta, d (the target is then the Gram matrix's relative "
                                 f"Frobenius error): {DATA_SOURCES}")


def _reals(name: str, text: str) -> float | list[float]:
    """One number (``pi/2`` allowed) or comma-separated numbers, for r and θ."""
    items = [t.strip() for t in text.split(",") if t.strip()] if "," in text else [text]
    if len(items) > MAX_LIST_LENGTH:
        raise ParameterError(f"{name} may hold at most {MAX_LIST_LENGTH} values, got {len(items)}")
    values = [parse_real(name, t) for t in items]
    return values[0] if "," not in text else values


def parse_inputs(inputs: dict[str, str]) -> dict[str, Any]:
    """The input assignments as typed values: eps and d by their Params, r and θ as numbers or lists, over and
    embedding as names.

    Examples
    --------
    >>> parse_inputs({"eps": "0.1", "r": "0.5,1", "d": "16"})
    {'eps': 0.1, 'r': [0.5, 1.0], 'd': 16}
    """
    parse = {"eps": EPS_PARAM.parse, "d": CLI_D_PARAM.parse, "r": lambda t: _reals("r", t),
             "theta": lambda t: _reals("theta", t)}
    return {k: parse[k](v) if k in parse else v for k, v in inputs.items()}


def run(args: argparse.Namespace) -> int:
    values = parse_assignments(args.params)
    if "eps" not in values:
        raise UsageError("give the target relative error, e.g. eps=0.1")
    if "m" in values:
        raise UsageError("m is what features-needed finds; do not give m=")
    inputs = parse_inputs({k: values.pop(k) for k in INPUT_KEYS if k in values})
    data = {}
    if args.data is not None:
        if any(k in inputs for k in ("r", "theta", "d")):
            raise UsageError("give either data=... or r, theta and d, not both")
        data = {"data": args.data, **data_options(args)}
    eps = inputs.pop("eps")
    params = parse_values(get_estimator(args.name).spec, values)
    result = features_needed(args.name, eps, **inputs, **data, **params)
    emit(result.to_dict(), args.json)
    return 0
