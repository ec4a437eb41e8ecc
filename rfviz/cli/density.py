"""``python -m rfviz density``: the law of w_ij = ‖ω_i + ω_j‖ under a coupling (SimRF Lemmas 4.1, 4.2; Fig. 5),
and, with ``v=``, the RF-conformity ρ(v) and the MSE ratios against iid (Def. 3.1, Thm 4.3; Fig. 6)."""

from __future__ import annotations

import argparse

from ..api.density_command import DENSITY_PARAMS, density
from ..registries import COUPLINGS_WITH_DENSITY
from ..textio import parse_assignments, parse_values
from ._output import emit

NAME = "density"
HELP = "density of w_ij = |ω_i + ω_j| under a coupling (SimRF Fig. 5), conformity and MSE ratios"

def run(args: argparse.Namespace) -> int:
    values = parse_values(DENSITY_PARAMS, parse_assignments(args.params), "density", lists=("w", "v"))
    emit(density(**values).to_dict(), args.json)
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", nargs="*",
                   help=f"key=value: coupling={'|'.join(COUPLINGS_WITH_DENSITY)}, d=6, w=0.5,1,1.5 (default: a grid), "
                        "v=0.5,1 (conformity and MSE ratios), m (default d)")
    p.add_argument("--json", action="store_true", help="print JSON")
