"""GERF page (Chefs' Random Tables, [CRT]), the computing half: GERF's variance along real and complex A (closed
forms, and Monte Carlo through rfviz.engine.sweep), OPRF's gain over positive features, and the discrete random
features. Functions return plain columns that rfviz.figures.crt draws; inputs are one pair (r, θ) placed in ℝᵈ by a
named embedding. All maths lives in rfviz.maths.crt."""

from __future__ import annotations

import numpy as np

from ..engine import sweep
from ..geometry import canonical_pair, check_d, embed_pair
from ..maths import crt as g
from ..maths.derf import pair_log_R
from ..numerics import LOG10, log_expm1
from ..params import M_PARAM, check

Columns = dict[str, np.ndarray]


def a_star(r: float, theta: float, d: int) -> float:
    """OPRF's A* at this pair (CRT Thm 3.3): depends on Z = |x + y|² = 2r²(1 + cos θ) and d.

    Parameters
    ----------
    r : float
        The inputs' norm.
    theta : float
        The angle between them.
    d : int
        The dimension.

    Returns
    -------
    float
        The optimal real A (< 0).

    Examples
    --------
    >>> a_star(1.0, 1.0, 4) < 0
    True
    """
    return float(g.A_star(2 * r * r * (1 + np.cos(theta)), d))


def real_A_columns(r: float, theta: float, d: int, m: int, kernel: str, a_min: float = -1.0,
                   points: int = 400) -> Columns:
    """log₁₀ MSE of GERF with m iid features along real A ∈ [a_min, 1/8) for s = +1 and s = −1 (CRT Thm 3.2 eq. 6;
    [CRT] eq. 6). A = 0, s = +1 is PosRF; A = A* is OPRF.

    Parameters
    ----------
    r : float
        The inputs' norm.
    theta : float
        The angle between them.
    d : int
        The dimension.
    m : int
        Features.
    kernel : str
        ``softmax`` or ``gaussian``.
    a_min : float, default -1.0
        The smallest A.
    points : int, default 400
        Values of A.

    Returns
    -------
    dict of str to numpy.ndarray
        ``A``, ``log10_mse_s+1`` and ``log10_mse_s-1``.

    Examples
    --------
    >>> len(real_A_columns(1.0, 1.0, 4, 8, "softmax", points=3)["A"])
    3
    """
    m = check(m, M_PARAM)
    if not a_min < g.A_VARIANCE_BOUND:
        raise g.ParameterError(f"A min must be a number in (-inf, 0.125), got {a_min:g}")
    a = np.linspace(a_min, g.A_VARIANCE_BOUND, points, endpoint=False)
    cols: Columns = {"A": a}
    for s in (1, -1):
        cols[f"log10_mse_s{'+' if s == 1 else '-'}1"] = (g.log_var_vs_real_A(a, s, r, theta, d, kernel)
                                                       - np.log(m)) / LOG10
    return cols


def sampled_real_A_columns(r: float, theta: float, d: int, m: int, kernel: str, a_min: float, trials: int,
                           seed: int, points: int = 9) -> Columns:
    """Monte-Carlo twins of ``real_A_columns`` (the registered ``gerf`` estimator, sampled by rfviz.engine.sweep)
    at ``points`` values of A in [a_min, 1/16): beyond 1/16 the fourth moment is infinite, so the standard error of
    the sampled MSE is meaningless.

    Parameters
    ----------
    r : float
        The inputs' norm.
    theta : float
        The angle between them.
    d : int
        The dimension.
    m : int
        Features.
    kernel : str
        ``softmax`` or ``gaussian``.
    a_min : float
        The smallest A.
    trials : int
        Monte-Carlo trials per value.
    seed : int
        The random seed.
    points : int, default 9
        Values of A.

    Returns
    -------
    dict of str to numpy.ndarray
        ``A``, and ``log10_mse_*``, ``log10_se_*`` and ``reliable_*`` for s = ±1.

    Examples
    --------
    >>> c = sampled_real_A_columns(1.0, 1.0, 4, 8, "softmax", -0.5, 100, 0, points=2)
    >>> len(c["reliable_s+1"])
    2
    """
    if not a_min < g.A_FOURTH_MOMENT_BOUND:
        raise g.ParameterError(f"A min must be a number in (-inf, 0.0625) for Monte Carlo, got {a_min:g}")
    a = np.linspace(a_min, g.A_FOURTH_MOMENT_BOUND, points, endpoint=False)
    x, y = canonical_pair(r, theta, min(d, 2))
    cols: Columns = {"A": a}
    for s in (1, -1):
        res = sweep("gerf", "A", [complex(v) for v in a], {"s": s, "m": m, "kernel": kernel}, x, y, d=d,
                    trials=trials, seed=seed)
        label = f"s{'+' if s == 1 else '-'}1"
        cols[f"log10_mse_{label}"] = res.log10_mse.ravel()
        cols[f"log10_se_{label}"] = res.log10_mse_stderr.ravel()
        cols[f"reliable_{label}"] = np.ravel(res.reliable).astype(float)  # 1/0: the CSV stays numeric
    return cols


def complex_A_data(r: float, theta: float, d: int, m: int, kernel: str, s: int, re_min: float = -0.5,
                   im_max: float = 0.5, points: int = 121) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Re A, Im A, log₁₀ MSE) over complex A; +inf (drawn blank) where Re A ≥ 1/8 (CRT Thm 3.2).

    Parameters
    ----------
    r : float
        The inputs' norm.
    theta : float
        The angle between them.
    d : int
        The dimension.
    m : int
        Features.
    kernel : str
        ``softmax`` or ``gaussian``.
    s : int
        The sign s = ±1.
    re_min : float, default -0.5
        The smallest Re A.
    im_max : float, default 0.5
        The largest |Im A|.
    points : int, default 121
        Grid values per axis.

    Returns
    -------
    re : numpy.ndarray
        Re A, shape (points,).
    im : numpy.ndarray
        Im A, shape (points,).
    log10_mse : numpy.ndarray
        Shape (points, points).

    Examples
    --------
    >>> re, im, z = complex_A_data(1.0, 1.0, 4, 8, "softmax", 1, points=3)
    >>> z.shape
    (3, 3)
    """
    m = check(m, M_PARAM)
    if not im_max > 0:
        raise g.ParameterError(f"Im A max must be a number in (0, inf), got {im_max:g}")
    re = np.linspace(re_min, 0.2, points)
    im = np.linspace(-im_max, im_max, points)
    z = (g.log_var_complex_grid(re, im, s, r, theta, d, kernel) - np.log(m)) / LOG10
    return re, im, z


def oprf_columns(d: int, z_max: float, points: int = 300, with_derf: bool = False) -> Columns:
    """Relative variance Var/K² of PosRF (e^Z − 1) and OPRF (R* − 1) against Z = |x + y|², and the Figure-1
    utility μ = log(Var_OPRF/Var_PosRF) (CRT Thm 3.3, Fig. 1; [CRT] eq. 7). Kernel-independent. ``with_derf`` adds
    SDERF's per-pair optimum (``rfviz.maths.derf``: OPRF's R* with d = 1, A along x + y), which also depends on Z
    only.

    Parameters
    ----------
    d : int
        The dimension.
    z_max : float
        The largest Z.
    points : int, default 300
        Values of Z.
    with_derf : bool, default False
        Add SDERF's column.

    Returns
    -------
    dict of str to numpy.ndarray
        ``Z``, ``log10_relvar_posrf``, ``log10_relvar_oprf``, ``log10_ratio_oprf_posrf`` (and
        ``log10_relvar_sderf``).

    Examples
    --------
    >>> c = oprf_columns(4, 3.0, points=3)
    >>> bool((c["log10_ratio_oprf_posrf"] <= 1e-12).all())
    True
    """
    d = check_d(d)
    if not (np.isfinite(z_max) and z_max > 0):
        raise g.ParameterError(f"Z max must be a number in (0, inf), got {z_max:g}")
    z = np.linspace(z_max / points, z_max, points)
    mu, _ = g.mu_fig1(z, d)
    out = {"Z": z, "log10_relvar_posrf": log_expm1(z) / LOG10,
           "log10_relvar_oprf": g.oprf_log_rel_var(z, d) / LOG10, "log10_ratio_oprf_posrf": mu / LOG10}
    if with_derf:
        x = np.stack([np.sqrt(z) / 2, np.zeros_like(z)], -1)  # x = y with |x + y|² = Z
        out["log10_relvar_sderf"] = log_expm1(pair_log_R(x, x, d, "sderf")) / LOG10
    return out


def dirf_columns(r: float, theta: float, d: int, m: int, kernel: str, embedding: str, shifted: bool,
                 points: int = 300) -> tuple[Columns, Columns, dict[str, float]]:
    """log₁₀ MSE of PoisRF against its rate λ and of GeomRF against its probability p at the pair (r, θ) placed in
    ℝᵈ by ``embedding`` (CRT Thms 3.4, 3.5; [CRT] eq. 11), plus the optima λ* and p*.

    Parameters
    ----------
    r : float
        The inputs' norm.
    theta : float
        The angle between them.
    d : int
        The dimension.
    m : int
        Features.
    kernel : str
        ``softmax`` or ``gaussian``.
    embedding : str
        How the pair is placed in ℝᵈ (``rfviz.geometry.EMBEDDINGS``).
    shifted : bool
        PoisRF+/GeomRF+: both inputs shifted by the coordinate-wise minimum (CRT §3.2.3, ``shift_positive``).
    points : int, default 300
        Values of λ and of p.

    Returns
    -------
    poisson : dict of str to numpy.ndarray
        ``lam`` and ``log10_mse``.
    geometric : dict of str to numpy.ndarray
        ``prob`` and ``log10_mse``.
    optima : dict of str to float
        ``lam_star``, ``p_star`` and their log₁₀ MSEs.

    Examples
    --------
    >>> poisson, geometric, optima = dirf_columns(1.0, 1.0, 4, 8, "softmax", "canonical", False, points=3)
    >>> 0 < optima["p_star"] < 1
    True
    """
    m = check(m, M_PARAM)
    x, y = embed_pair(r, theta, check_d(d), embedding)
    shift = g.shift_positive(x, y)[2] if shifted else np.zeros_like(x)
    lam_star = float(g.lam_star(x - shift, y - shift))
    lam_lo = max(lam_star, 1e-3) / 30
    lam = np.geomspace(lam_lo, max(lam_star, 1e-3) * 30, points)
    prob = np.linspace(0.005, 0.995, points)
    pois = {"lam": lam, "log10_mse": (np.array([g.dirf_log_var("poisson", x, y, v, shift, kernel) for v in lam])
                                      - np.log(m)) / LOG10}
    geo = {"prob": prob, "log10_mse": (np.array([g.dirf_log_var("geometric", x, y, v, shift, kernel) for v in prob])
                                       - np.log(m)) / LOG10}
    p_star = g.p_star_geometric(x - shift, y - shift)
    optima = {"lam_star": lam_star, "p_star": p_star,
              "lam_star_log10_mse": float((g.dirf_log_var("poisson", x, y, max(lam_star, 1e-12), shift, kernel)
                                           - np.log(m)) / LOG10),
              "p_star_log10_mse": float((g.dirf_log_var("geometric", x, y, p_star, shift, kernel) - np.log(m))
                                        / LOG10)}
    return pois, geo, optima
