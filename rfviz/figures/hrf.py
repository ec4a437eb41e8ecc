"""Figures of the hybrid-estimator page (HRF paper, Choromanski et al. 2022): λ-coefficients and their moments,
the hybrid MSE against its two base estimators, where each base estimator wins, and the max-relative-error
with the corrected Theorem 3.5 bound. Data functions return plain columns (CSV-ready); figure functions are pure.
All inputs are same-length pairs on the sphere S(r) (angle θ), as in the paper."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..engine import monte_carlo
from ..estimators import create
from ..geometry import canonical_pair
from ..maths import hrf as hy
from ..numerics import LOG10
from .common import columns_to_csv, heatmaps, lines

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
    reference F2, F5, F7)."""
    theta = np.linspace(0.0, np.pi, points)
    mom = _moments(kind, theta, r, n, sigma)
    return {"theta": theta, "lambda": np.asarray(mom.mean), "E_lambda2": np.asarray(mom.second),
            "var_lambda": np.asarray(mom.variance), "oracle_lambda": hy.oracle_lambda_tr(theta, r, m)}


def lambda_figure(c: Columns, kind: str) -> go.Figure:
    """λ(θ) with a ±1 sd band of λ̂ (clipped to [0, 1], where λ̂ lives), E[λ̂²], Var λ̂, and the oracle λ* (dashed)."""
    theta = c["theta"]
    sd = np.sqrt(np.maximum(c["var_lambda"], 0.0))
    fig = lines(theta, {"λ(θ) = E λ̂": c["lambda"], "E[λ̂²]": c["E_lambda2"], "Var λ̂": c["var_lambda"],
                        "oracle λ* (best deterministic λ)": c["oracle_lambda"]},
                xlabel="θ", ylabel="value", theta_axis=True,
                title=f"{kind} λ-coefficient and the moments of its estimator λ̂",
                dash={"oracle λ* (best deterministic λ)": "dash"})
    fig.add_trace(go.Scatter(x=np.concatenate([theta, theta[::-1]]),
                             y=np.clip(np.concatenate([c["lambda"] + sd, (c["lambda"] - sd)[::-1]]), 0.0, 1.0),
                             fill="toself", fillcolor="rgba(31,119,180,0.15)", line={"width": 0},
                             name="λ ± 1 sd of λ̂", hoverinfo="skip"))
    return fig


def mse_columns(kind: str, r: float, n: int, sigma: float, m: int, points: int = 181) -> Columns:
    """log₁₀ MSE on S(r) of trig, ++ (HRF Lemma 2.2), the hybrid (corrected eq. 47 / Thm F.2) and the oracle
    (reference F7); for the angular λ also eq. 47 as printed (wrong, reference F4 erratum)."""
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
    the hybrid (the registered estimators, sampled by rfviz.engine at the same seed)."""
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


def mse_figure(c: Columns, kind: str, r: float, sampled: Columns | None = None) -> go.Figure:
    """The hybrid's log₁₀ MSE against its two base estimators along θ at fixed r; with ``sampled`` (from
    ``sampled_mse_columns``) the Monte-Carlo points with ±2 SE bars."""
    names = {"trig": "trig", "pos": "positive (++)", "hybrid": f"{kind} hybrid"}
    ys = {names["trig"]: c["log10_mse_trig"], names["pos"]: c["log10_mse_pos"], names["hybrid"]: c["log10_mse_hybrid"],
          "oracle λ* (lower envelope)": c["log10_mse_oracle"]}
    dash = {"oracle λ* (lower envelope)": "dot"}
    if "log10_mse_hybrid_eq47_printed" in c:
        ys["eq. 47 as printed (wrong)"] = c["log10_mse_hybrid_eq47_printed"]
        dash["eq. 47 as printed (wrong)"] = "dash"
    points = None if sampled is None else {
        names[k]: (sampled["theta"], sampled[f"log10_mse_{k}"], sampled[f"log10_se_{k}"],
                   None if f"reliable_{k}" not in sampled else np.asarray(sampled[f"reliable_{k}"]) > 0.5)
        for k in SAMPLED_ESTIMATORS}
    return lines(c["theta"], ys, xlabel="θ", ylabel="log₁₀ MSE", theta_axis=True, dash=dash, points=points,
                 title=f"MSE on the sphere of radius r = {r:g}")


def winner_columns(kind: str, r_max: float, n: int, sigma: float, m: int, n_r: int = 60,
                   n_theta: int = 91) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(r, θ, panels): log₁₀ MSE_trig/MSE_++ (negative where trig is better) and log₁₀ MSE_hybrid / min(base)."""
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


def winner_figure(r: np.ndarray, theta: np.ndarray, panels: dict[str, np.ndarray]) -> go.Figure:
    """Diverging heatmaps: blue where the first estimator is better (ratio < 1), red where worse."""
    return heatmaps(theta, r, panels, xlabel="θ", ylabel="r", zlabel="log₁₀ ratio", diverging=True,
                    title="Where each estimator is better (blue: numerator smaller)")


def max_error_columns(r_max: float, n: int, m: int, points: int = 40) -> Columns:
    """Max-relative-error max_θ ε_{θ,r} of the angular hybrid for r ∈ [1, r_max], normalised by W(r)/√(2m) (the
    common worst case of trig and ++, HRF eq. 26), against the Thm 3.5 bound as printed (eq. 27) and corrected
    (reference §4 erratum)."""
    r = np.linspace(1.0, max(r_max, 1.0 + 1e-9), points)
    log_norm = hy.log_w(r) - 0.5 * np.log(2 * m)
    true_max = np.array([hy.max_log_eps_angular_hybrid(float(v), m, n, grid=801)[1] for v in r])
    return {"r": r, "max_eps_normalised": np.exp(true_max - log_norm),
            "bound_printed_normalised": np.exp(hy.log_bound_thm35_printed(r, m, n) - log_norm),
            "bound_corrected_normalised": np.exp(hy.log_bound_thm35_corrected(r, m, n) - log_norm)}


def max_error_figure(c: Columns, n: int) -> go.Figure:
    """Normalised max-relative-error against r with both bounds; red markers where the printed bound fails."""
    fig = lines(c["r"], {"max_θ ε (angular hybrid)": c["max_eps_normalised"],
                         "Thm 3.5 bound, corrected": c["bound_corrected_normalised"],
                         "Thm 3.5 bound, as printed (eq. 27)": c["bound_printed_normalised"]},
                xlabel="r", ylabel="ε / [W(r)/√(2m)]", dash={"Thm 3.5 bound, as printed (eq. 27)": "dash"},
                title=f"Max-relative-error on S(r), n = {n} (1 = worst case of trig and ++)")
    bad = c["max_eps_normalised"] > c["bound_printed_normalised"]
    if np.any(bad):
        fig.add_trace(go.Scatter(x=c["r"][bad], y=c["max_eps_normalised"][bad], mode="markers",
                                 name="printed bound violated", marker={"color": "red", "size": 8, "symbol": "x"}))
    return fig


def grid_csv(r: np.ndarray, theta: np.ndarray, panels: dict[str, np.ndarray]) -> str:
    """Long-format CSV (r, theta, one column per panel) of the heatmaps."""
    rr, tt = np.meshgrid(r, theta, indexing="ij")
    plain = {k: k.replace("<sub>", "_").replace("</sub>", "") for k in panels}  # column names without HTML
    return columns_to_csv({"r": rr.ravel(), "theta": tt.ravel(), **{plain[k]: v.ravel() for k, v in panels.items()}})


__all__ = ["LAMBDAS", "columns_to_csv", "grid_csv", "lambda_columns", "lambda_figure", "max_error_columns",
           "max_error_figure", "mse_columns", "mse_figure", "winner_columns", "winner_figure"]
