"""``python -m rfviz rank-estimators``: which estimator, tuned, for my data — every applicable estimator with its
parameters tuned on the data (closed-form relative Gram error), ranked at equal feature-vector length and at equal
m, the top three confirmed by Monte Carlo (``--repeats``). The computation is ``rfviz.rank_estimators``."""

from __future__ import annotations

import argparse
from typing import Any

from ..api.rank_estimators_command import KERNELS, rank_estimators
from ._data import add_data_arguments, data_options
from ._output import emit

NAME = "rank-estimators"
HELP = ("rank every applicable estimator on a data set, each tuned on it (closed-form Gram error), at equal "
        "feature-vector length and at equal m; --repeats confirms the top three by Monte Carlo")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernel", default="softmax", choices=KERNELS, help="target kernel (default softmax)")
    p.add_argument("--length", type=int, default=256, help="feature-vector length (real numbers per input) of the "
                                                           "equal-length ranking (default 256)")
    p.add_argument("--m", type=int, default=None, help="m of the equal-m comparison (default length/2)")
    p.add_argument("--names", default=None, help="comma-separated estimators (default: all of the kernel)")
    p.add_argument("--repeats", type=int, default=0, help="Monte-Carlo repeats confirming the top three (0: none)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (Monte Carlo)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_data_arguments(p, required=True, seed_help="seed of the data draw and the Monte Carlo")


def _cell(v: Any, width: int) -> str:
    return f"{v:>{width}.4g}" if isinstance(v, float | int) and not isinstance(v, bool) else f"{'—':>{width}}"


def _text(report: dict[str, Any]) -> str:
    """The ranking as a table of columns, then one line per Monte-Carlo confirmation."""
    info = report["data"]
    lines = [f"data {info['name']}: {info['queries']} queries × {info['keys']} keys, d = {info['d']}; kernel "
             f"{report['kernel']}; relative Gram error √(Σ MSE)/‖K‖_F, closed form",
             f"{'rank':<5}{'estimator':<26}{'m @ length':>11}{'length':>8}{'error':>10}{'length @ m':>11}"
             f"{'error @ m':>11}  tuned parameters"]
    for i, r in enumerate(report["ranking"], 1):
        tuned = ", ".join(f"{k}={r['params'][k]}" for k in r["tuned"] if k in r["params"])
        lines.append(f"{i:<5}{r['estimator']:<26}{_cell(r['m_equal_length'], 11)}"
                     f"{_cell(r['length_equal_length'], 8)}{_cell(r['relative_error_equal_length'], 10)}"
                     f"{_cell(r['length_equal_m'], 11)}{_cell(r['relative_error_equal_m'], 11)}  {tuned or '-'}"
                     f"{'  (' + r['note'] + ')' if r['note'] else ''}")
    for c in report["monte_carlo"]:
        lines.append(f"monte carlo {c['estimator']}: Σ MSE {_cell(c['frobenius_sq_mc'], 0)} ± "
                     f"{_cell(c['stderr'], 0)} (closed form {_cell(c['frobenius_sq_closed_form'], 0)}), reliable "
                     f"{c['reliable']}, agreement {c['agreement']}{'; ' + c['warning'] if c.get('warning') else ''}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    report = rank_estimators(args.data, kernel=args.kernel, length=args.length, m=args.m, names=args.names,
                             repeats=args.repeats, **data_options(args), device=args.device)
    emit(report.to_dict(), args.json, text=_text)
    return 0
