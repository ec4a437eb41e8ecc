"""``python -m rfviz psi``: the optimal importance-sampling density Ψ of one mechanism and input law
(Sernau et al. Thm 1; [OS]) and its plotted quantities."""

from __future__ import annotations

import argparse

from ..api.psi_command import PSI_PARAMS, psi
from ..textio import parse_assignments, parse_values
from ._output import emit

NAME = "psi"
HELP = ("optimal importance-sampling density Ψ (Thm 1 of 'All RF representations are equivalent'): "
        "radial density vs Ω, V*, unweighted variance and divergence flags")

def run(args: argparse.Namespace) -> int:
    report = psi(**parse_values(PSI_PARAMS, parse_assignments(args.params), "psi")).to_dict()
    if not args.json:
        report = {k: v for k, v in report.items() if k != "radial"}
    emit(report, args.json)
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", nargs="*",
                   help="key=value: mechanism=positive|trig, inputs=sphere|gaussian|pair|two_spheres, "
                        "kernel=softmax|gaussian, d, r, r2, sigma, theta, grid")
    p.add_argument("--json", action="store_true", help="print JSON (with the radial density grid)")
