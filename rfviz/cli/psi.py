"""``python -m rfviz psi``: the optimal importance-sampling density Ψ of one mechanism and input law
(Sernau et al. Thm 1; reference optimal_sampling.md §3) and its plotted quantities."""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..maths.optimal import (
    INPUT_KINDS,
    INPUT_PARAMS,
    KERNELS,
    MECHANISMS,
    InputLaw,
    OptimalSampling,
    gaussian_input_thresholds,
)
from ..params import Param, ParameterError, validate_params
from ..textio import parse_assignments
from ._output import emit

NAME = "psi"
HELP = ("optimal importance-sampling density Ψ (Thm 1 of 'All RF representations are equivalent'): "
        "radial density vs Ω, V*, unweighted variance and divergence flags")

SPECS: dict[str, Param] = {
    "mechanism": Param("mechanism", "positive", "choice", "feature map", choices=MECHANISMS),
    "inputs": Param("inputs", "sphere", "choice", "input law", choices=INPUT_KINDS),
    "kernel": Param("kernel", "softmax", "choice", "target kernel", choices=KERNELS),
    "d": Param("d", 16, "int", "dimension", low=1, high=100_000),
    "r": Param("r", 1.0, help="sphere radius / |x| / r1", low=0.0),
    "r2": Param("r2", 1.5, help="|y| (pair) or second radius (two spheres); default r for the pair", low=0.0),
    "sigma": Param("sigma", 0.2, help="std of Gaussian inputs N(0, σ²I)", low=0.0),
    "theta": Param("theta", math.pi / 2, help="angle between x and y (radians)", low=0.0, high=math.pi),
    "grid": Param("grid", 201, "int", "points of the radial grid", low=2, high=100000),
}


def psi_report(assignments: dict[str, str]) -> dict[str, Any]:
    """The JSON object of ``python -m rfviz psi``."""
    values = validate_params(tuple(SPECS.values()), assignments, "psi")
    kind = values["inputs"]
    allowed = INPUT_PARAMS[kind]
    for name in ("d", "r", "r2", "sigma", "theta"):
        if name in assignments and name not in allowed:
            raise ParameterError(f"{name} is not a parameter of inputs={kind}; its parameters are: "
                                 + ", ".join(allowed))
    law_args: dict[str, Any] = {name: values[name] for name in allowed}
    if kind == "pair" and "r2" not in assignments:
        law_args["r2"] = values["r"]
    prob = OptimalSampling(values["mechanism"], InputLaw(kind=kind, **law_args), values["kernel"])
    report = prob.report(values["grid"])
    if kind == "gaussian":
        report["sigma_thresholds"] = {
            label: {k: math.sqrt(v) if math.isfinite(v) else None for k, v in thr.items()}
            for label, thr in gaussian_input_thresholds(values["mechanism"], values["kernel"]).items()}
    return report


def run(args: argparse.Namespace) -> int:
    report = psi_report(parse_assignments(args.params))
    if not args.json:
        report = {k: v for k, v in report.items() if k != "radial"}
    emit(report, args.json)
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("params", nargs="*",
                   help="key=value: mechanism=positive|trig, inputs=sphere|gaussian|pair|two_spheres, "
                        "kernel=softmax|gaussian, d, r, r2, sigma, theta, grid")
    p.add_argument("--json", action="store_true", help="print JSON (with the radial density grid)")
