"""Gallery entries of [CRT] (Chefs' Random Tables): Figure 1 (OPRF vs positive RF) and Figure 2 (variance of
every mechanism on three input regimes), with Figure 2's pipeline (``fig2_*``: [CRT] §5.1, App. 9.10.1)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from scipy import optimize, special

from ..figures.common import color, layout, lines
from ..maths import crt as gerf
from ..numerics import LOG2, log_expm1
from ..params import ParameterError
from .common import catalog_rows, nearest
from .registry import Columns, GalleryFigure, gallery_figure

# ============================================================================================ CRT Figure 1
CRT1_DIMS = (1, 16, 64, 256)
CRT1_Z = np.linspace(0.0, 200.0, 401)


def build_crt_fig1() -> tuple[go.Figure, Columns]:
    """μ(Z, d) = log(Var_OPRF/Var_PosRF) (exact, solid; second-moment version, dotted) per d."""
    cols: Columns = {"Z": CRT1_Z}
    ys, dash = {}, {}
    for d in CRT1_DIMS:
        exact, second = gerf.mu_fig1(CRT1_Z, d)
        cols[f"mu_exact_d{d}"], cols[f"mu_second_moment_d{d}"] = exact, second
        ys[f"d = {d}"] = exact
        ys[f"d = {d}, second-moment version"] = second
        dash[f"d = {d}, second-moment version"] = "dot"
    fig = lines(CRT1_Z, ys, xlabel="Z = ‖x + y‖²", ylabel="μ = log(Var<sub>OPRF</sub>/Var<sub>PosRF</sub>)", dash=dash,
                height=460,
                title="CRT Fig. 1 (right): OPRF against positive random features")
    for i, tr in enumerate(fig.data):  # one colour per d: exact and second-moment curves share it
        tr.line.color = color(i // 2)
    fig.add_annotation(x=100, y=float(gerf.mu_fig1(100.0, 64)[0]), text="d = 64, Z = 100: μ = −61.22", showarrow=True)
    return fig, cols


CRT1_TABLE = {1: ("-1.052", "-8.948", "-23.40", "-48.01", "-97.63", "-197.26"),
              16: ("-0.166", "-4.403", "-15.31", "-36.32", "-81.73", "-176.73"),
              64: ("-0.047", "-2.029", "-8.795", "-24.14", "-61.22", "-145.28"),
              256: ("-0.012", "-0.680", "-3.612", "-11.76", "-35.18", "-96.54")}
CRT1_ZS = (1, 10, 25, 50, 100, 200)


def _crt1_catalog() -> dict[str, str]:
    out = {}
    for d, row in CRT1_TABLE.items():
        out.update(catalog_rows(f"mu_d{d}_Z", CRT1_ZS, row))
    out["mu_d64_Z100_precise"] = "-61.2212"
    return out


def _crt1_keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    out = {}
    for key in _crt1_catalog():
        d, z = key.split("_")[1:3]
        out[key] = float(c[f"mu_exact_{d}"][nearest(c["Z"], float(z[1:]))])
    return out


gallery_figure(GalleryFigure(
    name="crt-fig1-oprf-vs-positive",
    title="CRT Fig. 1: OPRF vs positive RF, log-variance ratio μ(Z, d)",
    paper="Chefs' Random Tables (Likhosherstov et al. 2022), Fig. 1 (right)",
    caption="μ = log(Var_OPRF/Var_PosRF) against Z = ‖x + y‖², one curve per dimension d. Both relative variances "
            "depend only on Z and d, so the same curve holds for the Gaussian and the softmax kernel. OPRF's gain "
            "grows about linearly in Z and shrinks with d: at d = 64, Z = 100 the variance is e^61.2 times smaller "
            "(the paper's 'μ < −60'). Dotted: the second-moment version log R* − Z, visibly different only for "
            "small d and small Z.",
    errata="The paper gives neither the d values nor the x-range (only Z = 100 on the axis); rfviz draws d ∈ {1, 16, "
           "64, 256}, Z ∈ [0, 200], the exact ratio (caption: 'ratio of the variance'). The orthogonal-features "
           "theorem (Thm 9.1) has typos (C(‖x‖²+‖y‖²), not 2C(…); F's first argument is ω·z) that do not affect "
           "this iid figure (docs: errata).",
    build=build_crt_fig1,
    explorer_page="gerf",
    explorer_params={"view": "oprf", "d": "64", "z_max": "200", "kernel": "gaussian"},
    key_numbers=_crt1_keys,
    catalog=_crt1_catalog(),
    params={"d": list(CRT1_DIMS), "Z": "0 … 200", "μ": "natural log"},
    source="[CRT] Fig. 1 (table of μ_exact)",
))


# ----------------------------------------------------------------------------------- [CRT] Figure 2 pipeline (§5.1)
FIG2_MECHANISMS = ("trig", "gerf", "poisson", "geometric", "positive", "oprf", "poisson+", "geometric+")
FIG2_REAL_VALUED = frozenset({"positive", "oprf", "poisson", "geometric", "poisson+", "geometric+"})
FIG2_REGIMES = ("normal", "sphere", "heterogen")


def fig2_inputs(regime: str, sigma: float, L: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Input sets of Figure 2 (CRT §5.1): normal N(0, σ²I), sphere σS^{d−1}, heterogen y ~ N(σ1, σ²I)."""
    if regime == "normal":
        return rng.standard_normal((L, d)) * sigma, rng.standard_normal((L, d)) * sigma
    if regime == "sphere":
        X, Y = rng.standard_normal((L, d)), rng.standard_normal((L, d))
        return (X * sigma / np.linalg.norm(X, axis=1, keepdims=True),
                Y * sigma / np.linalg.norm(Y, axis=1, keepdims=True))
    if regime == "heterogen":
        return rng.standard_normal((L, d)) * sigma, sigma + rng.standard_normal((L, d)) * sigma
    raise ParameterError(f"regime must be one of {', '.join(FIG2_REGIMES)}, got {regime!r}")


def fig2_pair_log_vars(X: np.ndarray, Y: np.ndarray, mechanism: str) -> np.ndarray:
    """Per-pair log Var (Gaussian kernel, M = 1) over all pairs of rows, parameters fitted once from the batch
    statistics as in the paper's pipeline (CRT §5.1, App. 9.10.1; reference checks section E)."""
    d = X.shape[1]
    xx = np.sum(X**2, 1)[:, None]
    yy = np.sum(Y**2, 1)[None, :]
    xy = X @ Y.T
    W = np.maximum(xx + yy - 2 * xy, 0.0)
    if mechanism == "trig":
        return gerf.gerf_log_var(0.0, -1, xx, yy, xy, d)
    if mechanism == "positive":
        return gerf.gerf_log_var(0.0, 1, xx, yy, xy, d)
    st = gerf.batch_stats(X, Y)
    if mechanism == "oprf":
        return -W + gerf.oprf_log_rel_var(np.maximum(xx + yy + 2 * xy, 0.0), d, Z_for_A=st["Zbar"])
    if mechanism == "gerf":
        s, a = gerf.fit_gerf_complex(st)
        return gerf.gerf_log_var(a, s, xx, yy, xy, d)
    if mechanism.rstrip("+") not in ("poisson", "geometric"):
        raise ParameterError(f"mechanism must be one of {', '.join(FIG2_MECHANISMS)}, got {mechanism!r}")
    if mechanism.endswith("+"):
        X, Y, _ = gerf.shift_positive(X, Y)
        st = gerf.batch_stats(X, Y)
    xy_shifted = X @ Y.T
    if mechanism.startswith("poisson"):
        lam = max(math.sqrt(st["Qbar"] / d), 1e-300)
        log_r = lam * d + (X**2) @ (Y**2).T / lam - 2 * xy_shifted  # eq. 11 over all pairs at once
    else:
        a = st["abar"]

        def objective(p: float) -> float:
            t = 2 * a / math.sqrt(1 - p)
            return -d * math.log(p) + float(np.sum(np.log(special.i0e(t)) + t))

        p = optimize.minimize_scalar(objective, bounds=(1e-9, 1 - 1e-9), method="bounded",
                                     options={"maxiter": 100}).x
        log_r = -d * math.log(p) - 2 * xy_shifted  # eq. 13, one coordinate at a time to keep memory O(L²)
        for col in range(d):
            t = 2 * np.abs(np.outer(X[:, col], Y[:, col])) / math.sqrt(1 - p)
            log_r = log_r + np.log(special.i0e(t)) + t
    return -W + log_expm1(log_r)


def reference_seed(seed: int, rep: int, sigma: float) -> int:
    """The seed of draw ``rep`` at σ in the CRT reference reproduction, seed + 1000·rep + int(100σ): an external
    program's formula, kept so that the gallery's catalog numbers (computed by that program) are reproduced exactly.
    The one exception to rfviz's seed rule (``rfviz.engine.spawn_seed``): every seed rfviz derives itself comes from
    there.

    Parameters
    ----------
    seed : int
        The figure's seed.
    rep : int
        The draw.
    sigma : float
        The σ of the draw.

    Returns
    -------
    int
        numpy's seed of that draw.

    Examples
    --------
    >>> reference_seed(0, 1, 0.5)
    1050
    """
    return seed + 1000 * rep + int(sigma * 100)


def fig2_log_variances(regime: str, sigmas: Any, d: int = 64, L: int = 256, reps: int = 1, seed: int = 0,
                       mechanisms: tuple[str, ...] = FIG2_MECHANISMS) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Figure 2: mean and std of log Var over all pairs and ``reps`` draws, per mechanism and σ (CRT §5.1).

    Real-valued mechanisms have their variance halved (log − log 2), as in the paper.
    Draw ``rep`` at σ uses numpy's default_rng(``reference_seed(seed, rep, σ)``): the reference reproduction's own
    seeding, so that with seed = 0, L = 512, reps = 2 this is exactly the reference's reproduction (checks
    section E). Returns {mechanism: (means, stds)} over ``sigmas``.
    GeomRF and GeomRF+ dominate the cost (L²·d Bessel evaluations); leave them out of ``mechanisms`` for speed.
    """
    sig = np.atleast_1d(np.asarray(sigmas, dtype=float))
    for mech in mechanisms:
        if mech not in FIG2_MECHANISMS:
            raise ParameterError(f"mechanism must be one of {', '.join(FIG2_MECHANISMS)}, got {mech!r}")
    means = {m: np.empty(sig.size) for m in mechanisms}
    stds = {m: np.empty(sig.size) for m in mechanisms}
    for i, sg in enumerate(sig):
        acc: dict[str, list[np.ndarray]] = {m: [] for m in mechanisms}
        for rep in range(reps):
            X, Y = fig2_inputs(regime, float(sg), L, d, np.random.default_rng(reference_seed(seed, rep, float(sg))))
            for mech in mechanisms:
                lv = fig2_pair_log_vars(X, Y, mech)
                acc[mech].append((lv - LOG2 if mech in FIG2_REAL_VALUED else lv).ravel())
        for mech in mechanisms:
            v = np.concatenate(acc[mech])
            means[mech][i], stds[mech][i] = v.mean(), v.std()
    return {m: (means[m], stds[m]) for m in mechanisms}


# ============================================================================================ CRT Figure 2
CRT2_SIGMAS = np.round(np.linspace(0.1, 1.0, 10), 10)
CRT2_L, CRT2_REPS = 128, 1
CRT2_REF_L, CRT2_REF_REPS = 512, 2
CRT2_REF_MECHANISMS = ("trig", "gerf", "poisson", "positive", "oprf", "poisson+")
CRT2_PANELS = {"non-positive": ("trig", "gerf", "poisson", "geometric"),
               "positive": ("positive", "oprf", "poisson+", "geometric+")}
CRT2_LABELS = {"trig": "TrigRF", "gerf": "GERF", "poisson": "PoisRF", "geometric": "GeomRF", "positive": "PosRF",
               "oprf": "OPRF", "poisson+": "PoisRF+", "geometric+": "GeomRF+"}


def build_crt_fig2() -> tuple[go.Figure, Columns]:
    """Mean ± std of log Var over all pairs (lines, L = 128, one draw) per regime and panel, with the reference's
    settings (L = 512, two draws) at σ = 1 as diamonds (the key numbers)."""
    regimes = FIG2_REGIMES
    fig = make_subplots(rows=2, cols=len(regimes), shared_xaxes=True, vertical_spacing=0.08,
                        horizontal_spacing=0.06,
                        subplot_titles=[f"{reg}: {panel}" for panel in CRT2_PANELS for reg in regimes])
    rows: dict[str, list] = {k: [] for k in ("regime", "sigma", "mechanism", "L", "draws", "mean_log_var",
                                             "std_log_var")}

    def record(reg: str, sig: np.ndarray, mech: str, L: int, reps: int, mean: np.ndarray, std: np.ndarray) -> None:
        n = len(sig)
        for k, v in (("regime", [reg] * n), ("sigma", sig), ("mechanism", [mech] * n), ("L", [L] * n),
                     ("draws", [reps] * n), ("mean_log_var", mean), ("std_log_var", std)):
            rows[k].extend(list(v))

    for j, reg in enumerate(regimes, start=1):
        curves = fig2_log_variances(reg, CRT2_SIGMAS, L=CRT2_L, reps=CRT2_REPS)
        ref = fig2_log_variances(reg, [1.0], L=CRT2_REF_L, reps=CRT2_REF_REPS, mechanisms=CRT2_REF_MECHANISMS)
        for i, mechs in enumerate(CRT2_PANELS.values(), start=1):
            for k, mech in enumerate(mechs):
                mean, std = curves[mech]
                record(reg, CRT2_SIGMAS, mech, CRT2_L, CRT2_REPS, mean, std)
                show = j == 1
                fig.add_trace(go.Scatter(x=CRT2_SIGMAS, y=mean, mode="lines+markers", name=CRT2_LABELS[mech],
                                         legendgroup=mech, showlegend=show, line={"color": color(4 * (i - 1) + k)},
                                         error_y={"type": "data", "array": std, "thickness": 1, "width": 2},
                                         customdata=std, hovertemplate="σ=%{x:.2f}<br>mean log Var=%{y:.4g}"
                                                                       "<br>std=%{customdata:.3g}"),
                              row=i, col=j)
                if mech in ref:
                    rm, rs = ref[mech]
                    record(reg, np.array([1.0]), mech, CRT2_REF_L, CRT2_REF_REPS, rm, rs)
                    fig.add_trace(go.Scatter(x=[1.0], y=rm, mode="markers", legendgroup=mech, showlegend=False,
                                             name=f"{CRT2_LABELS[mech]} (L = {CRT2_REF_L}, {CRT2_REF_REPS} draws)",
                                             marker={"symbol": "diamond-open", "size": 11,
                                                     "color": color(4 * (i - 1) + k), "line": {"width": 2}}),
                                  row=i, col=j)
        fig.update_xaxes(title_text="σ", row=2, col=j)
    fig.update_yaxes(title_text="log Var (mean ± std over pairs)", col=1)
    fig.update_layout(title="CRT Fig. 2: log-variance of 8 mechanisms, Gaussian kernel, d = 64<br>"
                            f"(lines: L = {CRT2_L}, {CRT2_REPS} draw; diamonds: L = {CRT2_REF_L}, {CRT2_REF_REPS} "
                            "draws)", height=740,
                      **layout(top=100))
    cols = {k: np.asarray(v, dtype=object if k in ("regime", "mechanism") else float) for k, v in rows.items()}
    return fig, cols


CRT2_TABLE = {  # [CRT] Fig. 2, σ = 1 (L = 512, 2 draws): mechanism → (normal, sphere, heterogen)
    "trig": ("-0.69", "-1.00", "-0.69"), "gerf": ("-83.29", "-1.00", "-135.34"),
    "poisson": ("-0.71", "-0.85", "-11.44"), "positive": ("-0.76", "-0.85", "2.25"),
    "oprf": ("-83.98", "-0.98", "-136.03"), "poisson+": ("30.28", "-0.47", "-29.14"),
}
CRT2_GAPS = {("gerf", "trig"): ("82.6", "0.0", "134.6"), ("oprf", "positive"): ("83.2", "0.1", "138.3")}


def _crt2_catalog() -> dict[str, str]:
    out = {}
    for mech, row in CRT2_TABLE.items():
        out.update(catalog_rows(f"mean_log_var_{mech}_sigma1_", ("normal", "sphere", "heterogen"), row))
    for (a, b), row in CRT2_GAPS.items():
        out.update(catalog_rows(f"gap_{a}_vs_{b}_sigma1_", ("normal", "sphere", "heterogen"), row))
    return out


def _crt2_keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    ref = c["L"] == CRT2_REF_L

    def mean(mech: str, reg: str) -> float:
        sel = ref & (c["mechanism"] == mech) & (c["regime"] == reg) & (c["sigma"] == 1.0)
        return float(c["mean_log_var"][sel][0])

    out = {}
    for key in _crt2_catalog():
        reg = key.rsplit("_", 1)[1]
        if key.startswith("gap_"):
            a, b = key[4:].split("_vs_")
            out[key] = mean(b.split("_")[0], reg) - mean(a, reg)
        else:
            out[key] = mean(key[len("mean_log_var_"):].split("_sigma1")[0], reg)
    return out


gallery_figure(GalleryFigure(
    name="crt-fig2-variance-comparison",
    title="CRT Fig. 2: log-variance of all 8 mechanisms (normal, sphere, heterogeneous inputs)",
    paper="Chefs' Random Tables (Likhosherstov et al. 2022), Fig. 2 (§5.1, App. 9.10.1)",
    caption="Mean ± std over all input pairs of the analytic log-variance (Gaussian kernel, d = 64) against the input "
            "scale σ, with each mechanism's parameters fitted from the batch statistics as in the paper. Top: the "
            "non-positive mechanisms (TrigRF, GERF, PoisRF, GeomRF); bottom: the positive ones (PosRF, OPRF, "
            "PoisRF+, GeomRF+). GERF and OPRF win by ≈ e^83 (normal) and ≈ e^135 (heterogeneous) at σ = 1; on the "
            "sphere all mechanisms are close. TrigRF sits at log ½ for σ ≥ 0.3 (K ≈ 0, Var → ½). Lines use a "
            "smaller set L = 128 and one draw (the paper: L = 1024, 5 draws) so the figure builds in seconds; the "
            "diamonds at σ = 1 use the reference's L = 512 and two draws and reproduce its table.",
    errata="Real-valued mechanisms have their variance halved ('M = 2', complex ones use two reals per sample), as "
           "in the paper. The paper's claim that GeomRF+ beats PosRF by > e^75 (normal) and > e^125 (heterogen) is "
           "not reproduced: the reference (and rfviz) get about e^60 and e^122 ([CRT] Fig. 2; docs: errata item "
           "13). The MNIST column needs the MNIST data and is left out. Printed Thm 4.2 / eq. 35 lacks the factor "
           "(1 − 4A)^{d/2} (docs: errata; not used here).",
    build=build_crt_fig2,
    explorer_page="gerf",
    explorer_params={"kernel": "gaussian", "d": "64"},
    key_numbers=_crt2_keys,
    catalog=_crt2_catalog(),
    params={"kernel": "gaussian", "d": 64, "σ": "0.1 … 1.0", "lines: L, draws": (CRT2_L, CRT2_REPS),
            "diamonds: L, draws": (CRT2_REF_L, CRT2_REF_REPS), "regimes": list(FIG2_REGIMES)},
    source="[CRT] Fig. 2 (means of log-variance, gaps at σ = 1)",
))
