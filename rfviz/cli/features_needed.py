"""``python -m rfviz features-needed``: the smallest number of features m whose relative error √MSE/|K| is at most ε,
at a pair, over an (r, θ) region (worst or root-mean) or over a data set's Gram matrix (relative Frobenius error).

The computation is ``rfviz.features_needed`` (rfviz.api_features → rfviz.compute.features); ``--json`` prints its
``to_dict()``.
"""

from __future__ import annotations

import argparse

from ..api_features import features_needed
from ..textio import UsageError, parse_assignments
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


def run(args: argparse.Namespace) -> int:
    values = parse_assignments(args.params)
    if "eps" not in values:
        raise UsageError("give the target relative error, e.g. eps=0.1")
    inputs = {k: values.pop(k) for k in INPUT_KEYS if k in values}
    data = {}
    if args.data is not None:
        data = {"data": args.data, **data_options(args)}
    eps = inputs.pop("eps")
    result = features_needed(args.name, eps, **inputs, **data, **values)
    emit(result.to_dict(), args.json)
    return 0
