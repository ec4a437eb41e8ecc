"""``python -m rfviz gram``: Gram- and attention-matrix error of estimators on a data set.

E‖K̂ − K‖²_F = Σ_ij MSE(x_i, y_j) from the closed forms (features shared by all entries), its Monte-Carlo twin with
features drawn once per repeat, the relative Frobenius error and, for softmax estimators, the row-normalised
attention error (rfviz.gram). Names are registered estimators or ``hrf_clustered`` (rfviz.clustered).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .. import data as datasets
from ..clustered import NAME as CLUSTERED
from ..clustered import ClusteredCE
from ..estimators import REGISTRY, get_estimator
from ..gram import gram_cost, gram_error, require_gram_budget
from ..params import ParameterError, check_int
from ..textio import UsageError, jsonable, parse_assignments, parse_vector

NAME = "gram"
HELP = ("Gram/attention-matrix error of estimators on a data set: closed-form E‖K̂−K‖²_F = Σ MSE(x_i, y_j) and its "
        "Monte-Carlo twin (features shared by all entries)")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("items", nargs="+", metavar="NAMES [k=v ...]",
                   help="estimator names (comma-separated or several; see `python -m rfviz estimators`, plus "
                        f"{CLUSTERED}), then key=value estimator parameters (each goes to the named estimators that "
                        "have it)")
    p.add_argument("--data", required=True,
                   help="digits, wine, iris, breast_cancer (bundled with scikit-learn), clusters (HRF App. H.3) or a "
                        ".csv/.npy path (rows = points)")
    p.add_argument("--keys-data", default=None, help="a second .csv/.npy file holding the keys (then --data holds "
                                                     "the queries)")
    p.add_argument("--data-param", action="append", default=[], metavar="KEY=VALUE",
                   help="clusters parameters: " + ", ".join(datasets.CLUSTER_KEYS))
    p.add_argument("--queries", type=int, default=64, help="number of queries drawn (default 64)")
    p.add_argument("--keys", type=int, default=64, help="number of keys drawn (default 64)")
    p.add_argument("--preprocess", default=None,
                   help="comma-separated steps in order: " + ", ".join(datasets.PREPROCESS_STEPS) +
                        " or none (default center,scale; none for clusters)")
    p.add_argument("--scale", type=float, default=1.0, help="mean norm after the scale step (default 1)")
    p.add_argument("--m", default="8,32,128", help="comma-separated numbers of random features (default 8,32,128)")
    p.add_argument("--repeats", type=int, default=100,
                   help="Monte-Carlo repeats, each one draw of features shared by all entries (0: closed form only)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data draw, k-means and Monte Carlo")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--json", action="store_true", help="print JSON")


def _split_items(items: list[str]) -> tuple[list[str], dict[str, str]]:
    pieces = [n.strip() for item in items if "=" not in item for n in item.split(",")]
    if "" in pieces:
        raise UsageError(f"estimator names must not be empty (a stray comma?), got {' '.join(items)[:80]!r}")
    names = pieces
    assignments = parse_assignments([item for item in items if "=" in item])
    if not names:
        raise UsageError("give at least one estimator name")
    return names, assignments


def _spec_names(name: str) -> set[str]:
    cls = ClusteredCE if name == CLUSTERED else get_estimator(name)
    return {p.name for p in cls.spec}


def _check_device(device: str) -> None:
    """cpu, or cuda[:N] where torch sees a CUDA GPU; ParameterError (one line) otherwise."""
    import torch

    name = device.strip().lower()
    if name != "cpu" and not (name == "cuda" or (name.startswith("cuda:") and name[5:].isdigit())):
        raise ParameterError(f"--device must be cpu or cuda (cuda:N), got {device[:40]!r}")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ParameterError("--device cuda needs a CUDA GPU, and torch sees none on this machine; use --device cpu")


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
    costs = [gram_cost(est, data.queries, data.keys, repeats) for _, est in built]
    require_gram_budget(max((c[0] for c in costs), default=0.0), sum(c[1] for c in costs), repeats)
    results = [gram_error(est, data.queries, data.keys, repeats, seed, device, name).to_json() for name, est in built]
    info = {k: v for k, v in data.describe().items() if not k.endswith("_labels")}
    return {"data": info, "m": ms, "repeats": repeats, "seed": seed, "results": results,
            **({"clusters": fits} if fits else {})}


def run(args: argparse.Namespace) -> int:
    names, assignments = _split_items(args.items)
    for name in names:
        if name != CLUSTERED and name not in REGISTRY:
            raise ParameterError(f"estimator must be one of {', '.join(sorted([*REGISTRY, CLUSTERED]))}, got "
                                 f"{name!r}")
    ms = [check_int("m", v, 1) for v in parse_vector("m", args.m)]
    repeats = check_int("repeats", args.repeats, 0)
    if repeats == 1:
        raise ParameterError("repeats must be 0 (closed form only) or an integer in [2, inf), got 1")
    if args.preprocess is not None and "" in [t.strip() for t in args.preprocess.split(",")]:
        raise UsageError(f"--preprocess must name steps ({', '.join(datasets.PREPROCESS_STEPS)}) or none, got "
                         f"{args.preprocess[:80]!r}")
    _check_device(args.device)
    steps = datasets.parse_preprocess(args.preprocess if args.preprocess is not None else
                                      ("none" if args.data == "clusters" else "center,scale"))
    ds = datasets.load(args.data, args.keys_data, queries=args.queries, keys=args.keys, steps=steps,
                       scale=args.scale, seed=args.seed, options=parse_assignments(args.data_param))
    report = gram_report(names, assignments, ds, ms, repeats, args.seed, args.device)
    if args.json:
        print(json.dumps(jsonable(report), indent=2))
        return 0
    info = report["data"]
    print(f"data {info['name']}: {info['queries']} queries × {info['keys']} keys, d = {info['d']}, mean norms "
          f"{info['mean_query_norm']:.3g} / {info['mean_key_norm']:.3g}, preprocess {info['preprocess']}")
    print(f"{'estimator':<22}{'m':>6}{'Σ MSE (closed)':>16}{'MC':>12}{'± stderr':>11}{'reliable':>9}"
          f"{'agrees':>7}{'rel. Frob':>11}{'attn L1':>10}")
    for r in report["results"]:
        def f(v: Any, w: int) -> str:
            return f"{v:>{w}.4g}" if isinstance(v, float | int) and not isinstance(v, bool) else f"{'—':>{w}}"
        print(f"{r['estimator']:<22}{r['m'] if r['m'] is not None else '—':>6}{f(r['frobenius_sq_closed_form'], 16)}"
              f"{f(r['frobenius_sq_mc'], 12)}{f(r['stderr'], 11)}{r['reliable']!s:>9}"
              f"{r['agreement']!s:>7}{f(r['relative_frobenius'], 11)}{f(r['attention_l1'], 10)}")
        if r.get("warning"):
            print(f"{'':<22}warning: {r['warning']}")
        if r.get("note"):
            print(f"{'':<22}note: {r['note']}")
    return 0
