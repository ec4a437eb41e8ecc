"""``rfviz audit [LIBRARY ...] [--json] [--html FILE]``: the random features of scikit-learn, GPyTorch and
performer-pytorch run through the estimator lab against rfviz's closed forms (``rfviz.audit``). Each case runs in
its own plugin process, two at a time; a library that is not installed is skipped with the reason
(``pip install rfviz[audit]``). Exit code 0 when every case ran or was skipped, 1 when a case failed to run (a
verdict of bias is a finding about the library, not a failure of the command)."""

from __future__ import annotations

import argparse

from ..api.audit_command import audit
from ..audit import LIBRARIES
from ..fileio import check_output
from ..lab import DEFAULT_TRIALS
from ..params import CHECK_TRIALS_PARAM, SEED_PARAM, ParameterError, check
from ..plugins import plugin_timeout_scope
from ._output import emit

NAME = "audit"
HELP = "run other libraries' random features through the lab against rfviz's closed forms"
AUDIT_TIMEOUT_S = 1800.0
"""Deadline of each case's plugin process unless --timeout says otherwise (a biased map's confirmation samples make
a case take minutes on a loaded machine)."""


def configure(p: argparse.ArgumentParser) -> None:
    """The command's arguments.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's sub-parser.
    """
    p.add_argument("libraries", nargs="*", metavar="LIBRARY",
                   help=f"which libraries (default all): {', '.join(LIBRARIES)}")
    p.add_argument("--trials", type=int, default=DEFAULT_TRIALS, help=f"lab trials (default {DEFAULT_TRIALS})")
    p.add_argument("--seed", type=int, default=0, help="the lab's seed (default 0)")
    p.add_argument("--html", default=None, metavar="FILE.html", help="also write the report as a self-contained "
                   "HTML file (a table and the z ranges as bars)")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument("--timeout", type=float, default=AUDIT_TIMEOUT_S, metavar="SECONDS",
                   help=f"deadline of each case's plugin process (default {AUDIT_TIMEOUT_S:g})")


def run(args: argparse.Namespace) -> int:
    """Run the audit and print it (text, or JSON with --json); write the HTML report with --html.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed arguments.

    Returns
    -------
    int
        0, or 1 when a case failed to run.
    """
    trials = check(args.trials, CHECK_TRIALS_PARAM)
    seed = check(args.seed, SEED_PARAM)
    if args.html:  # before the minutes of work
        if not args.html.lower().endswith((".html", ".htm")):
            raise ParameterError(f"--html must end in .html, got {args.html[:80]!r}")
        check_output(args.html, overwrite=True, what="html")
    with plugin_timeout_scope(args.timeout):
        result = audit(args.libraries or None, seed=seed, trials=trials)
    if args.html:
        result.to_html(args.html)
    emit(result.to_dict(), args.json, text=lambda _r: result.to_text())
    return 1 if any(case.status == "failed" for case in result.cases) else 0
