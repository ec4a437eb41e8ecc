"""``rfviz psi`` / ``rfviz.psi``: the optimal importance-sampling density Ψ of one mechanism and input law
([OS] Thm 1), V*, the unweighted variance and the divergence flags, from typed values."""

from __future__ import annotations

import math
from dataclasses import replace
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
from ..params import DIM_PARAM, KERNEL_PARAM, R_PARAM, THETA_PARAM, Param, ParameterError, validate_params

MECHANISM_PARAM = Param("mechanism", "positive", "choice", "feature map", choices=MECHANISMS)
INPUTS_PARAM = Param("inputs", "sphere", "choice", "input law", choices=INPUT_KINDS)
PSI_KERNEL_PARAM = replace(KERNEL_PARAM, help="target kernel", choices=KERNELS)
PSI_D_PARAM = replace(DIM_PARAM, default=16, help="dimension", high=100_000)
PSI_R_PARAM = replace(R_PARAM, help="sphere radius / |x| / r1")
R2_PARAM = Param("r2", 1.5, "float", "|y| (pair) or second radius (two spheres); default r for the pair", low=0.0)
INPUT_SIGMA_PARAM = Param("sigma", 0.2, "float", "std of Gaussian inputs N(0, σ²I)", low=0.0)
GRID_PARAM = Param("grid", 201, "int", "points of the radial grid", low=2, high=100_000)
PSI_PARAMS = (MECHANISM_PARAM, INPUTS_PARAM, PSI_KERNEL_PARAM, PSI_D_PARAM, PSI_R_PARAM, R2_PARAM, INPUT_SIGMA_PARAM,
              THETA_PARAM, GRID_PARAM)
"""Every parameter of ``rfviz psi`` (the CLI parses ``key=value`` text with them)."""


def psi_report(**given: Any) -> dict[str, Any]:
    """The JSON object of ``rfviz psi`` from the given parameters (``PSI_PARAMS`` by name; None: not given).

    Parameters
    ----------
    **given
        ``mechanism``, ``inputs``, ``kernel`` and the law's parameters (``d``, ``r``, ``r2``, ``sigma``,
        ``theta``: only those the law has), ``grid``.

    Returns
    -------
    dict

    Examples
    --------
    >>> psi_report(mechanism="positive", inputs="sphere", r=1.0, d=16)["v_opt"] > 0
    True
    """
    given = {k: v for k, v in given.items() if v is not None}
    values = validate_params(PSI_PARAMS, given, "psi")
    kind = values["inputs"]
    allowed = INPUT_PARAMS[kind]
    for name in ("d", "r", "r2", "sigma", "theta"):
        if name in given and name not in allowed:
            raise ParameterError(f"{name} is not a parameter of inputs={kind}; its parameters are: "
                                 + ", ".join(allowed))
    law_args: dict[str, Any] = {name: values[name] for name in allowed}
    if kind == "pair" and "r2" not in given:
        law_args["r2"] = values["r"]
    prob = OptimalSampling(values["mechanism"], InputLaw(kind=kind, **law_args), values["kernel"])
    report = prob.report(values["grid"])
    if kind == "gaussian":
        report["sigma_thresholds"] = {
            label: {k: math.sqrt(v) if math.isfinite(v) else None for k, v in thr.items()}
            for label, thr in gaussian_input_thresholds(values["mechanism"], values["kernel"]).items()}
    return report
