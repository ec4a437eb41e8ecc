"""``python -m rfviz downstream``: does a lower kernel error buy a better model? Ridge regression on random features
against exact Gaussian kernel ridge (``--task ridge``, on a bundled regression set), or softmax attention from random
features against exact attention (``--task attention``, on any data set), Nyström at the same length beside them,
every error a mean ± standard error over ``--repeats`` feature draws. The computation is ``rfviz.downstream``."""

from __future__ import annotations

import argparse
from typing import Any

from ..api.downstream_command import DOWNSTREAM_REPEATS_PARAM, REGRESSION_SETS, TASKS, downstream
from ..compute.downstream import ATTENTION_ESTIMATORS, PAGE_LENGTHS, PAGE_RIDGE_ESTIMATORS, RIDGE_ESTIMATORS
from ..params import ParameterError
from ._data import DATA_SOURCES, add_data_arguments, data_options
from ._output import emit

NAME = "downstream"
HELP = ("fit models on random features: ridge regression against exact kernel ridge (--task ridge) or softmax "
        "attention against exact attention (--task attention), Nyström beside them, and the rank correlation of "
        "the closed-form kernel error with the downstream error")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", required=True, choices=TASKS,
                   help="ridge: test RMSE of ridge on the features vs exact Gaussian kernel ridge; attention: "
                        "relative output error ‖ÂV − AV‖_F/‖AV‖_F")
    p.add_argument("--names", default=None,
                   help=f"comma-separated estimators (ridge: {', '.join(RIDGE_ESTIMATORS)}, default "
                        f"{','.join(PAGE_RIDGE_ESTIMATORS)}; attention: {', '.join(ATTENTION_ESTIMATORS)}, default "
                        "all)")
    p.add_argument("--lengths", default=",".join(map(str, PAGE_LENGTHS)),
                   help="comma-separated feature-vector lengths (real numbers per input; default "
                        f"{','.join(map(str, PAGE_LENGTHS))})")
    p.add_argument("--repeats", type=int, default=DOWNSTREAM_REPEATS_PARAM.default,
                   help=f"{DOWNSTREAM_REPEATS_PARAM.help} (default {DOWNSTREAM_REPEATS_PARAM.default})")
    p.add_argument("--no-nystroem", action="store_true", help="leave out scikit-learn's Nystroem")
    p.add_argument("--alpha", type=float, default=None,
                   help="ridge penalty (ridge only; default 1 for diabetes, 0.05 for synthetic)")
    p.add_argument("--input-scale", type=float, default=None,
                   help="ridge inputs × this, kernel e^{-|x-y|²/2} on them (ridge only; default 0.3 for diabetes, "
                        "0.6 for synthetic)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_data_arguments(p, required=True, seed_help="seed of the split or data draw, the values V and the features",
                       data_help=f"ridge: a bundled regression set with targets, {' or '.join(REGRESSION_SETS)} "
                                 f"(the other data options are attention's); attention: {DATA_SOURCES}")
    p.set_defaults(queries=None, keys=None, scale=None)  # "not given": the ridge task refuses them


def _cell(v: Any, width: int) -> str:
    return f"{v:>{width}.4g}" if isinstance(v, float | int) and not isinstance(v, bool) else f"{'—':>{width}}"


def _text(report: dict[str, Any]) -> str:
    """The header (data, exact model, Spearman's ρ), then one line per method and length."""
    info, s = report["data"], report["settings"]
    size = (f"{info['train']} train / {info['test']} test" if report["task"] == "ridge"
            else f"{info['queries']} queries × {info['keys']} keys")
    lines = [f"data {info['name']}: {size}, d = {info['d']}; {report['measure']}, mean ± standard error over "
             f"{s['repeats']} draws",
             f"exact model: {_cell(report['exact'], 0)}; Spearman ρ(kernel error, downstream error) = "
             f"{_cell(report['spearman_kernel_vs_downstream'], 0)}",
             f"{'method':<22}{'m':>6}{'length':>8}{'error':>11}{'± stderr':>11}{'kernel rel. error':>19}"]
    for r in report["rows"]:
        lines.append(f"{r['method']:<22}{_cell(r['m'], 6)}{_cell(r['length'], 8)}{_cell(r['error'], 11)}"
                     f"{_cell(r['stderr'], 11)}{_cell(r['kernel_relative_error'], 19)}")
    return "\n".join(lines)


def parse_lengths(text: str) -> list[int]:
    """``--lengths`` text as integers (each checked by the API).

    Examples
    --------
    >>> parse_lengths("32,64")
    [32, 64]
    """
    out = []
    for t in (t.strip() for t in text.split(",")):
        try:
            out.append(int(t))
        except ValueError:
            raise ParameterError(f"lengths must be integers in [1, inf), got {t!r}") from None
    return out


def run(args: argparse.Namespace) -> int:
    report = downstream(args.task, args.data, names=args.names, lengths=parse_lengths(args.lengths),
                        repeats=args.repeats,
                        nystroem=not args.no_nystroem, alpha=args.alpha, input_scale=args.input_scale,
                        **data_options(args))
    emit(report.to_dict(), args.json, text=_text)
    return 0
