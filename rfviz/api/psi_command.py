"""``rfviz.psi`` (and ``rfviz psi``): the optimal importance-sampling density Ψ of one mechanism and input law
([OS] Thm 1), V*, the unweighted variance and the divergence flags, from typed values."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import replace
from typing import Any

import numpy as np

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
from .results import Result
from .validation import api_function

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


# ------------------------------------------------------------------------------------------------ the API
@dataclasses.dataclass(frozen=True)
class PsiResult(Result):
    """The optimal importance-sampling density Ψ of one mechanism and input law ([OS] Thm 1).

    Parameters
    ----------
    mechanism, kernel : str
        The feature map and the target kernel.
    inputs : dict
        The input law and its parameters.
    radial : dict of numpy.ndarray
        ``rho`` and the radial densities of Ω and Ψ (``omega_pdf``, ``psi_pdf``, ``log10_q``).
    log10_Z : float or None
        log10 of Ψ's normaliser.
    v_opt, v_plain : float or None
        V* (optimal) and the unweighted variance.
    bound, expected_k2 : float or None
        Cor. 1's bound and E[K²].
    log10_v_opt, log10_v_plain : float or None
        Their log10.
    gain : float or None
        v_plain / v_opt.
    divergence : dict
        Divergence flags and notes.
    sigma_thresholds : dict or None
        For Gaussian inputs: the σ where the variances diverge (absent otherwise).

    Examples
    --------
    >>> import rfviz
    >>> rfviz.psi("positive", inputs="sphere", r=1.0, d=16).gain >= 1
    True
    """

    mechanism: str
    kernel: str
    inputs: dict[str, Any]
    radial: dict[str, np.ndarray]
    log10_Z: float | None
    v_opt: float | None
    v_plain: float | None
    bound: float | None
    expected_k2: float | None
    log10_v_opt: float | None
    log10_v_plain: float | None
    gain: float | None
    divergence: dict[str, Any]
    sigma_thresholds: dict[str, Any] | None = None

    def figure(self) -> Any:
        """The radial densities of Ω and of the optimal Ψ as a Plotly figure.

        Returns
        -------
        plotly.graph_objects.Figure
            Two curves, against ``|ω|``.
        """
        from ..figures.common import lines

        rad = self.radial
        return lines(np.asarray(rad["rho"]), {"Ω (sampling law)": np.asarray(rad["omega_pdf"], dtype=float),
                                             "Ψ* (optimal)": np.asarray(rad["psi_pdf"], dtype=float)},
                     xlabel="|ω|", ylabel="radial density", title=f"{self.mechanism} features")


@api_function({p.name: p for p in PSI_PARAMS} | {"inputs": INPUTS_PARAM, "kernel": PSI_KERNEL_PARAM})
def psi(mechanism: str = "positive", *, inputs: str = "sphere", kernel: str = "softmax", d: int | None = None,
        r: float | None = None, r2: float | None = None, sigma: float | None = None, theta: float | None = None,
        grid: int | None = None) -> PsiResult:
    """The optimal sampling density Ψ of a mechanism and an input law, and V* (``rfviz psi``).

    Parameters
    ----------
    mechanism : str
        ``positive`` or ``trig``.
    inputs : str
        The input law: ``sphere``, ``gaussian``, ``pair`` or ``two_spheres``.
    kernel : str
        ``softmax`` or ``gaussian``.
    d, r, r2, sigma, theta : int or float, optional
        The law's parameters (only those the law has; defaults as in ``rfviz psi``).
    grid : int, optional
        Points of the radial grid.

    Returns
    -------
    PsiResult
        ``v_opt``, ``v_plain``, ``gain``, ``divergence``, ``radial``; ``figure()`` draws the radial densities.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.psi("positive", inputs="sphere", r=1.0, d=16)
    >>> res.v_opt <= res.v_plain
    True
    """
    return PsiResult.from_mapping(psi_report(mechanism=mechanism, inputs=inputs, kernel=kernel, d=d, r=r, r2=r2,
                                             sigma=sigma, theta=theta, grid=grid))
