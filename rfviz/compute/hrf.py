"""HRF (hybrid estimators) page, the computing half: λ-coefficients and their moments, the hybrid MSE against its
two base estimators (closed forms and Monte Carlo through rfviz.engine), where each base estimator wins, and the
max-relative-error with the corrected Theorem 3.5 bound. Functions return plain columns (CSV-ready) that
rfviz.figures.hrf draws. All inputs are same-length pairs on the sphere S(r) (angle θ), as in the paper."""

from __future__ import annotations

import numpy as np

from ..engine import monte_carlo
from ..estimators import create
from ..geometry import canonical_pair
from ..maths import hrf as hy
from ..numerics import LOG10

Columns = dict[str, np.ndarray]


LAMBDAS = ("angular", "gaussian")


def _moments(kind: str, theta: np.ndarray, r: float, n: int, sigma: float) -> hy.LambdaMoments:
    if kind == "angular":
        return hy.angular_lambda_moments(theta, n)
    if kind == "gaussian":
        return hy.gaussian_lambda_moments_tr(theta, r, sigma, n)
    raise hy.ParameterError(f"lambda must be one of {', '.join(LAMBDAS)}, got {kind!r}")


def lambda_columns(kind: str, r: float, n: int, sigma: float, m: int, points: int = 181) -> Columns:
    """λ(θ) = E λ̂, E[λ̂²], Var λ̂ and the oracle λ*(θ) on S(r) (HRF Lemma 3.2 eq. 24; App. F eqs. 72–73;
    [HRF] eq. 24; docs: derivations/gaussian-lambda; derived).

    Parameters
    ----------
    kind : str
        The λ of the hybrid: ``angular`` or ``gaussian``.
    r : float
        The inputs' norm (both on the sphere S(r)).
    n : int
        λ-features of the hybrid.
    sigma : float
        The Gaussian λ's σ (unused by the angular λ).
    m : int
        Features per base estimator.
    points : int, default 181
        Angles in [0, π].

    Returns
    -------
    dict of str to numpy.ndarray
        ``theta``, ``lambda``, ``E_lambda2``, ``var_lambda`` and ``oracle_lambda``.

    Examples
    --------
    >>> c = lambda_columns("angular", 1.0, 8, 1.0, 10, points=3)
    >>> c["lambda"].tolist()
    [0.0, 0.5, 1.0]
    """
    theta = np.linspace(0.0, np.pi, points)
    mom = _moments(kind, theta, r, n, sigma)
    return {"theta": theta, "lambda": np.asarray(mom.mean), "E_lambda2": np.asarray(mom.second),
            "var_lambda": np.asarray(mom.variance), "oracle_lambda": hy.oracle_lambda_tr(theta, r, m)}


def mse_columns(kind: str, r: float, n: int, sigma: float, m: int, points: int = 181) -> Columns:
    """log₁₀ MSE on S(r) of trig, ++ (HRF Lemma 2.2), the hybrid (corrected eq. 47 / Thm F.2) and the oracle
    (derived); for the angular λ also eq. 47 as printed (wrong, docs:
    derivations/hrf-angular-hybrid).

    Parameters
    ----------
    kind : str
        The λ of the hybrid: ``angular`` or ``gaussian``.
    r : float
        The inputs' norm (both on the sphere S(r)).
    n : int
        λ-features of the hybrid.
    sigma : float
        The Gaussian λ's σ (unused by the angular λ).
    m : int
        Features per base estimator.
    points : int, default 181
        Angles in [0, π].

    Returns
    -------
    dict of str to numpy.ndarray
        ``theta`` and ``log10_mse_<trig, pos, hybrid, oracle>`` (and ``log10_mse_hybrid_eq47_printed``).

    Examples
    --------
    >>> c = mse_columns("angular", 1.0, 8, 1.0, 10, points=3)
    >>> float(c["log10_mse_trig"][0])
    -inf
    """
    theta = np.linspace(0.0, np.pi, points)
    lt = hy.log_mse_trig_tr(theta, r, m)
    lp = hy.log_mse_pos_tr(theta, r, m)
    if kind == "angular":
        lh = hy.log_mse_angular_hybrid_tr(theta, r, m, n)
    else:
        lh = hy.log_mse_gaussian_hybrid_tr(theta, r, m, n, sigma)
    cols = {"theta": theta, "log10_mse_trig": lt / LOG10, "log10_mse_pos": lp / LOG10,
            "log10_mse_hybrid": lh / LOG10, "log10_mse_oracle": hy.log_oracle_mse_tr(theta, r, m) / LOG10}
    if kind == "angular":
        cols["log10_mse_hybrid_eq47_printed"] = hy.log_mse_angular_hybrid_tr_as_printed(theta, r, m, n) / LOG10
    return cols


SAMPLED_ESTIMATORS = {"trig": "trig", "pos": "positive_antithetic", "hybrid": None}


def sampled_mse_columns(kind: str, r: float, n: int, sigma: float, m: int, trials: int, seed: int,
                        points: int = 13) -> Columns:
    """Monte-Carlo twins of ``mse_columns`` at ``points`` angles: log₁₀ MSE and its standard error for trig, ++ and
    the hybrid (the registered estimators, sampled by rfviz.engine at the same seed).

    Parameters
    ----------
    kind : str
        The λ of the hybrid: ``angular`` or ``gaussian``.
    r : float
        The inputs' norm (both on the sphere S(r)).
    n : int
        λ-features of the hybrid.
    sigma : float
        The Gaussian λ's σ (unused by the angular λ).
    m : int
        Features per base estimator.
    trials : int
        Monte-Carlo trials per angle.
    seed : int
        The random seed.
    points : int, default 13
        Angles in [0, π].

    Returns
    -------
    dict of str to numpy.ndarray
        ``theta``, and ``log10_mse_*``, ``log10_se_*`` and ``reliable_*`` of each estimator.

    Examples
    --------
    >>> c = sampled_mse_columns("angular", 1.0, 8, 1.0, 10, 200, 0, points=2)
    >>> len(c["log10_mse_hybrid"])
    2
    """
    theta = np.linspace(0.0, np.pi, points)
    x, y = canonical_pair(r, theta, 2)
    hybrid = (create("hybrid_angular", m=m, n=n) if kind == "angular"
              else create("hybrid_gaussian", m=m, n=n, sigma=sigma))
    cols: Columns = {"theta": theta}
    for key, name in SAMPLED_ESTIMATORS.items():
        est = hybrid if name is None else create(name, m=m)
        res = monte_carlo(est, x, y, d=2, trials=trials, seed=seed)
        cols[f"log10_mse_{key}"] = res.log10_mse
        cols[f"log10_se_{key}"] = res.log10_mse_stderr
        cols[f"reliable_{key}"] = np.asarray(res.reliable).astype(float)  # 1/0: the CSV stays numeric
    return cols


def winner_columns(kind: str, r_max: float, n: int, sigma: float, m: int, n_r: int = 60,
                   n_theta: int = 91) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(r, θ, panels): log₁₀ MSE_trig/MSE_++ (negative where trig is better) and log₁₀ MSE_hybrid / min(base).

    Parameters
    ----------
    kind : str
        The λ of the hybrid: ``angular`` or ``gaussian``.
    r_max : float
        The largest norm.
    n : int
        λ-features of the hybrid.
    sigma : float
        The Gaussian λ's σ.
    m : int
        Features per base estimator.
    n_r : int, default 60
        Norms in (0, r_max].
    n_theta : int, default 91
        Angles in [0, π].

    Returns
    -------
    r : numpy.ndarray
        The norms.
    theta : numpy.ndarray
        The angles.
    panels : dict of str to numpy.ndarray
        Each panel's values, shape (n_theta, n_r), by title.

    Examples
    --------
    >>> r, theta, panels = winner_columns("angular", 2.0, 8, 1.0, 10, n_r=3, n_theta=4)
    >>> r.shape, theta.shape, len(panels)
    ((3,), (4,), 2)
    """
    r = np.linspace(r_max / n_r, r_max, n_r)
    theta = np.linspace(0.0, np.pi, n_theta)
    rr, tt = np.meshgrid(r, theta, indexing="ij")
    lt = hy.log_mse_trig_tr(tt, rr, m)
    lp = hy.log_mse_pos_tr(tt, rr, m)
    lh = (hy.log_mse_angular_hybrid_tr(tt, rr, m, n) if kind == "angular"
          else hy.log_mse_gaussian_hybrid_tr(tt, rr, m, n, sigma))
    with np.errstate(invalid="ignore"):
        panels = {"trig vs ++: log₁₀ MSE<sub>trig</sub>/MSE<sub>++</sub>": (lt - lp) / LOG10,
                  "hybrid vs best base: log₁₀ MSE<sub>hyb</sub>/min": (lh - np.minimum(lt, lp)) / LOG10}
    return r, theta, panels


def max_error_columns(r_max: float, n: int, m: int, points: int = 40) -> Columns:
    """Max-relative-error max_θ ε_{θ,r} of the angular hybrid for r ∈ [1, r_max], normalised by W(r)/√(2m) (the
    common worst case of trig and ++, HRF eq. 26), against the Thm 3.5 bound as printed (eq. 27) and corrected
    (docs: errata).

    Parameters
    ----------
    r_max : float
        The largest norm (≥ 1).
    n : int
        λ-features of the hybrid.
    m : int
        Features per base estimator.
    points : int, default 40
        Norms in [1, r_max].

    Returns
    -------
    dict of str to numpy.ndarray
        ``r``, ``max_eps_normalised``, ``bound_printed_normalised`` and ``bound_corrected_normalised``.

    Examples
    --------
    >>> c = max_error_columns(2.0, 8, 10, points=3)
    >>> c["r"].tolist()
    [1.0, 1.5, 2.0]
    """
    r = np.linspace(1.0, max(r_max, 1.0 + 1e-9), points)
    log_norm = hy.log_w(r) - 0.5 * np.log(2 * m)
    true_max = np.array([hy.max_log_eps_angular_hybrid(float(v), m, n, grid=801)[1] for v in r])
    return {"r": r, "max_eps_normalised": np.exp(true_max - log_norm),
            "bound_printed_normalised": np.exp(hy.log_bound_thm35_printed(r, m, n) - log_norm),
            "bound_corrected_normalised": np.exp(hy.log_bound_thm35_corrected(r, m, n) - log_norm)}


def relative_error_columns(r: float, m: int, n: int, points: int = 181) -> Columns:
    """log₁₀ of the relative error √MSE/SM on S(r) along θ ∈ [0, π] of trig, ++ and the angular hybrid with n
    λ-features (HRF Lemma 3.4 eq. 25 and eqs. 48–50): where each base estimator fails, and the hybrid's cap on the
    worst case (the Home page's first story and the Learn page's lessons).

    Parameters
    ----------
    r : float
        Input length |x| = |y|.
    m : int
        Features per base estimator.
    n : int
        λ-features of the angular hybrid.
    points : int
        Angles on [0, π].

    Returns
    -------
    dict
        ``theta`` and ``log10_rel_trig``, ``log10_rel_pos``, ``log10_rel_hybrid`` (−inf where exact).

    Examples
    --------
    >>> c = relative_error_columns(1.5, 10, 8)
    >>> bool(c["log10_rel_trig"][-1] > c["log10_rel_pos"][-1])
    True
    """
    theta = np.linspace(0.0, np.pi, points)
    with np.errstate(divide="ignore"):
        return {"theta": theta, "log10_rel_trig": hy.log_eps_trig_tr(theta, r, m) / LOG10,
                "log10_rel_pos": hy.log_eps_pos_tr(theta, r, m) / LOG10,
                "log10_rel_hybrid": hy.log_eps_angular_hybrid_tr(theta, r, m, n) / LOG10}
