"""The catalogue of shared parameters: every ``*_PARAM`` used by more than one module, declared once; where a face
needs other bounds (app vs CLI vs lab vs engine) the variant is derived visibly from its base with ``replace``."""

from __future__ import annotations

import math
from dataclasses import replace

from ..registries import COUPLING_NAMES, IID, SOFTMAX, SOFTMAX_KERNELS
from .core import MAX_DIMENSION, MAX_TRIALS, Param

# One definition per parameter name: every Param used by more than one module is declared here; where a face needs
# other bounds (app vs CLI vs lab vs engine) the variant is derived visibly from the base with ``replace``.
M_PARAM = Param("m", 10, "int", "number of random projections ω (trig and antithetic features are 2m numbers)", low=1,
                high=10_000_000, ui_low=1, ui_high=256, label="m (random features)")
KERNEL_PARAM = Param("kernel", SOFTMAX, "choice", "target kernel: softmax exp(x·y) or Gaussian exp(-|x-y|²/2)",
                     choices=SOFTMAX_KERNELS)
COUPLING_PARAM = Param("coupling", IID, "choice",
                       "how the m projections ω are drawn jointly (Simplex RF paper §3): iid Gaussian, orthogonal "
                       "blocks, simplex blocks, or simplex+ (data-dependent)",
                       choices=COUPLING_NAMES)

# Page-level parameters of the app (inputs and sampling settings, not estimator parameters), and their variants for
# the CLI, the estimator lab and the engine: every page's widgets, URL parsing and error messages use the same range.
DIM_PARAM = Param("d", 16, "int", "input dimension of x and y", low=1)
"""d wherever a formula needs it (no upper bound: the memory budget decides); ``geometry.check_d``."""
D_PARAM = replace(DIM_PARAM, high=4096, label="d (input dimension)")
"""The app pages' d."""
COUPLED_D_PARAM = replace(D_PARAM, help="dimension: coupled (orthogonal / simplex) projections need d ≥ 2", low=2,
                          label="d (dimension)")
CLI_D_PARAM = replace(D_PARAM, default=2, help="input dimension", high=MAX_DIMENSION, label="")
"""``python -m rfviz mse``'s d (bounded by the memory budget, not by the app's slider)."""
LAB_D_PARAM = replace(DIM_PARAM, default=8, help="input dimension of the grid's pairs")
"""The estimator lab's d (``lab.check_estimator``, ``python -m rfviz check --d``)."""
DEGREE_PARAM = Param("p", 3, "int", "degree of the polynomial kernel (x·y)ᵖ", low=1, high=64, label="p (degree)")
"""The app's degree p of the dot-product pages (the estimators' own p stops at 30: ``ESTIMATOR_DEGREE_PARAM``)."""
ESTIMATOR_DEGREE_PARAM = replace(DEGREE_PARAM, help="degree p of the homogeneous polynomial kernel (x·y)^p", high=30,
                                 ui_low=1, ui_high=10, label="p (degree)")
TRIALS_PARAM = Param("trials", 2000, "int", "Monte-Carlo trials (independent draws of the features) per point",
                     low=2, high=1_000_000, label="trials")
ENGINE_TRIALS_PARAM = replace(TRIALS_PARAM, help="independent Monte-Carlo estimates per pair", high=MAX_TRIALS,
                              label="")
"""``engine.monte_carlo``'s trials (larger studies: the ``sweep`` command, resumable)."""
CLI_TRIALS_PARAM = replace(TRIALS_PARAM, default=0, help="Monte-Carlo trials (0: closed form only)", low=0,
                           high=MAX_TRIALS, label="")
"""``python -m rfviz mse --trials`` (0: closed form only)."""
LAB_TRIALS_PARAM = replace(TRIALS_PARAM, default=4000, help="per grid point; the bias test's power grows like √trials",
                           low=100, high=200_000, label="Monte-Carlo trials")
"""The estimator lab page's trials."""
CHECK_TRIALS_PARAM = replace(LAB_TRIALS_PARAM, help="Monte-Carlo trials per grid point", high=None, label="")
"""``lab.check_estimator``'s trials (no upper bound: the memory budget decides)."""
SAMPLES_PARAM = Param("samples", 3000, "int", "draws of |ω_i + ω_j| per coupling for the histograms", low=10,
                      high=200_000, label="samples")
SEED_PARAM = Param("seed", 0, "int", "random seed (same seed, same draws)", low=0, high=2**53 - 1, label="seed")
"""The seed on every face (CLI, API, app widgets, sweeps, lab): [0, 2^53 − 1], the largest range all of them honour
exactly (the browser's number widgets hold integers up to 2^53 − 1; torch, numpy's SeedSequence and the sweep's
task seeds take any of them)."""
DEVICE_PARAM = Param("device", "auto", "device", "where Monte Carlo runs: auto (CUDA when available), cpu, cuda or "
                     "cuda:N", label="device")
"""The device on every face; ``sampling.resolve_device`` turns it into a ``torch.device`` (and refuses CUDA where
torch sees none)."""
CPU_DEVICE_PARAM = replace(DEVICE_PARAM, default="cpu")
"""The device of the commands that run on the CPU unless asked (``gram``, ``check``)."""
ENGINE_SEED_PARAM = replace(SEED_PARAM, help="random seed of the Monte-Carlo run", low=None, high=None, label="")
"""The engine's seed: any integer (torch folds it into its seed range)."""
R_PARAM = Param("r", 1.0, "float", "input length r = |x| = |y|", low=0.0)
"""r wherever a formula needs it; ``geometry.check_r``."""
THETA_PARAM = Param("theta", math.pi / 2, "float", "angle between x and y (radians)", low=0.0, high=math.pi)
"""θ of an input pair (``rfviz mse``, ``rfviz psi``; the lab's grid of angles)."""
R_MAX_PARAM = Param("r_max", 2.0, "float", "largest input length r = |x| = |y| of the grid", low=0.0, low_open=True,
                    label="r max")

APP_INT_CAPS: dict[str, int] = {"m": 100_000, "n": 10_000, "trials": 200_000, "samples": 200_000, "p": 30,
                                "D": 100_000}
"""Upper bounds of integer parameters in the app (the CLI may go further under --memory-budget), by parameter name:
the same cap for every estimator's ``m``, ``n``, … (``app_param``)."""


def app_param(p: Param) -> Param:
    """``p`` with the app's cap (``APP_INT_CAPS``) as its upper bound, so that a URL cannot ask for more.

    Parameters
    ----------
    p : Param
        Any parameter spec.

    Returns
    -------
    Param
        ``p`` itself, or a copy with ``high`` lowered to the app's cap.

    Examples
    --------
    >>> app_param(M_PARAM).high
    100000.0
    """
    cap = APP_INT_CAPS.get(p.name)
    if p.kind != "int" or cap is None or (p.high is not None and p.high <= cap):
        return p
    return replace(p, high=float(cap), high_open=False)
