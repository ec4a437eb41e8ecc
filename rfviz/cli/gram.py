"""``python -m rfviz gram``: Gram- and attention-matrix error of estimators on a data set.

E‖K̂ − K‖²_F = Σ_ij MSE(x_i, y_j) from the closed forms (features shared by all entries), its Monte-Carlo twin with
features drawn once per repeat, the relative Frobenius error and, for softmax estimators, the row-normalised
attention error (rfviz.gram_engine). Names are registered estimators or ``hrf_clustered`` (rfviz.clustered).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..api.gram_command import estimator_names, gram
from ..clustered import NAME as CLUSTERED
from ..clustered import ClusteredCE
from ..estimators import get_estimator  # the package: the catalog loaded
from ..textio import UsageError, parse_assignments, parse_values, parse_vector
from ._data import add_data_arguments, data_options

NAME = "gram"
HELP = ("Gram/attention-matrix error of estimators on a data set: closed-form E‖K̂−K‖²_F = Σ MSE(x_i, y_j) and its "
        "Monte-Carlo twin (features shared by all entries)")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("items", nargs="+", metavar="NAMES [k=v ...]",
                   help="estimator names (comma-separated or several; see `python -m rfviz estimators`, plus "
                        f"{CLUSTERED}), then key=value estimator parameters (each goes to the named estimators that "
                        "have it)")
    p.add_argument("--m", default="8,32,128", help="comma-separated numbers of random features (default 8,32,128)")
    p.add_argument("--repeats", type=int, default=100,
                   help="Monte-Carlo repeats, each one draw of features shared by all entries (0: closed form only)")
    p.add_argument("--device", default="cpu", help="cpu (default), auto, cuda or cuda:N")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_data_arguments(p, required=True, seed_help="seed of the data draw, k-means and Monte Carlo")


def _split_items(items: list[str]) -> tuple[list[str], dict[str, str]]:
    names = [item for item in items if "=" not in item]  # estimator_names splits on commas and refuses empty names
    assignments = parse_assignments([item for item in items if "=" in item])
    if not names:
        raise UsageError("give at least one estimator name")
    if "m" in assignments:
        raise UsageError("m is set by --m (a comma-separated list), not by m=")
    return names, assignments


def run(args: argparse.Namespace) -> int:
    names, assignments = _split_items(args.items)
    names = estimator_names(names)
    specs = [p for n in names for p in (ClusteredCE if n == CLUSTERED else get_estimator(n)).spec]
    result = gram(names, args.data, **data_options(args), m=parse_vector("m", args.m).tolist(),
                  repeats=args.repeats, device=args.device,
                  params=parse_values(specs, assignments))
    report = result.to_dict()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    info = report["data"]
    print(f"data {info['name']}: {info['queries']} queries × {info['keys']} keys, d = {info['d']}, mean norms "
          f"{info['mean_query_norm']:.3g} / {info['mean_key_norm']:.3g}, preprocess {info['preprocess']}")
    print(f"{'estimator':<22}{'m':>6}{'Σ MSE (closed)':>16}{'MC':>12}{'± stderr':>11}{'reliable':>9}"
          f"{'agreement':>11}{'rel. Frob':>11}{'attn L1':>10}")
    for r in report["results"]:
        def f(v: Any, w: int) -> str:
            return f"{v:>{w}.4g}" if isinstance(v, float | int) and not isinstance(v, bool) else f"{'—':>{w}}"
        print(f"{r['estimator']:<22}{r['m'] if r['m'] is not None else '—':>6}{f(r['frobenius_sq_closed_form'], 16)}"
              f"{f(r['frobenius_sq_mc'], 12)}{f(r['stderr'], 11)}{r['reliable']!s:>9}"
              f"{r['agreement'] or '—':>11}{f(r['relative_frobenius'], 11)}{f(r['attention_l1'], 10)}")
        if r.get("warning"):
            print(f"{'':<22}warning: {r['warning']}")
        if r.get("note"):
            print(f"{'':<22}note: {r['note']}")
    return 0
