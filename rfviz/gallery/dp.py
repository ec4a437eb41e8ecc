"""Gallery entries of [DP] (dot-product kernels): Figure 2 (polynomial-sketch variances) and Figure 12."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..compute import dp as cd
from ..figures.common import color, layout, log_axes, traces_csv
from ..maths import dp
from .common import catalog_rows, side_by_side
from .registry import Columns, GalleryFigure, gallery_figure

# ============================================================================================ DP Figure 2
DP2_DIMS, DP2_D_FEATURES, DP2_PAIRS, DP2_SEED, DP2_P_MAX = (8, 32), 1024, 1000, 2024, 9
DP2_SKETCHES = {"gaussian": "Gaussian", "rademacher": "Rademacher"}


def abs_normal_unit_pairs(dims: Sequence[int], count: int = DP2_PAIRS, seed: int = DP2_SEED
                          ) -> dict[int, dp.DotStats]:
    """DP Fig. 2 data: ``count`` pairs x = |x̃|/‖x̃‖, x̃ ~ N(0, I_d) (non-negative, unit norm) per d, drawn in the
    order of the reference's check (one generator, X then Y, d after d), so the averages match it exactly."""
    rng = np.random.default_rng(seed)
    out = {}
    for d in dims:
        x = np.abs(rng.standard_normal((count, d)))
        y = np.abs(rng.standard_normal((count, d)))
        out[d] = dp.DotStats.from_pairs(x / np.linalg.norm(x, axis=1, keepdims=True),
                                        y / np.linalg.norm(y, axis=1, keepdims=True))
    return out


def mean_poly_variance(st: dp.DotStats, p: int, basis: str, q: float, num_features: int) -> float:
    """Mean over the pairs of E|k̂ − (x·y)^p|² of the D-feature polynomial sketch (DP Thm 2, Eqs. 18–21)."""
    return float(np.mean(np.exp(dp.log_var_poly(st, p, q, dp.fourth_moment(basis, q), num_features))))


def build_dp_fig2() -> tuple[go.Figure, Columns]:
    stats = abs_normal_unit_pairs(DP2_DIMS)
    ps = np.arange(1, DP2_P_MAX + 1)
    fig = make_subplots(rows=2, cols=len(DP2_DIMS), shared_xaxes=True, row_heights=[0.62, 0.38],
                        vertical_spacing=0.07, horizontal_spacing=0.08,
                        subplot_titles=[f"d = {d}" for d in DP2_DIMS] + ["" for _ in DP2_DIMS])
    cols: dict[str, list] = {k: [] for k in ("d", "p", "sketch", "mse_real", "mse_complex", "ratio_complex_real")}
    for j, d in enumerate(DP2_DIMS, start=1):
        for i, (basis, label) in enumerate(DP2_SKETCHES.items()):
            real = np.array([mean_poly_variance(stats[d], int(p), basis, 1.0, DP2_D_FEATURES) for p in ps])
            cplx = np.array([mean_poly_variance(stats[d], int(p), basis, 0.5, DP2_D_FEATURES) for p in ps])
            for lab, y, dash, k in (("real", real, "dash", 2 * i), ("complex", cplx, "solid", 2 * i + 1)):
                fig.add_trace(go.Scatter(x=ps, y=y, mode="lines+markers", name=f"{label} {lab}",
                                         legendgroup=f"{i}{lab}", showlegend=j == 1,
                                         line={"color": color(k), "dash": dash}), row=1, col=j)
            fig.add_trace(go.Scatter(x=ps, y=cplx / real, mode="lines+markers", name=f"{label}: complex / real",
                                     legendgroup=f"{i}ratio", showlegend=j == 1, line={"color": color(2 * i + 1)}),
                          row=2, col=j)
            for k, v in (("d", [d] * len(ps)), ("p", ps), ("sketch", [basis] * len(ps)), ("mse_real", real),
                         ("mse_complex", cplx), ("ratio_complex_real", cplx / real)):
                cols[k].extend(list(v))
        log_axes(fig.update_yaxes(type="log", title_text="E|k̂ − (x·y)<sup>p</sup>|²" if j == 1 else None, row=1, col=j))
        fig.update_yaxes(title_text="complex / real" if j == 1 else None, row=2, col=j)
        fig.update_xaxes(title_text="degree p", row=2, col=j)
    fig.update_layout(title=f"DP Fig. 2: MSE vs degree p, D = {DP2_D_FEATURES}, mean over {DP2_PAIRS} pairs of "
                            "non-negative unit vectors<br>(full complex E|k̂−k|²)", height=620,
                      **layout(top=90))
    return fig, {k: np.asarray(v, dtype=object if k == "sketch" else float) for k, v in cols.items()}


DP2_RATIOS = {(8, "gaussian"): "0.677 0.529 0.396 0.289 0.206 0.145 0.101 0.070 0.048",
              (8, "rademacher"): "0.713 0.583 0.461 0.355 0.269 0.201 0.148 0.108 0.079",
              (32, "gaussian"): "0.699 0.563 0.438 0.334 0.251 0.188 0.139 0.103 0.075",
              (32, "rademacher"): "0.708 0.577 0.454 0.351 0.268 0.203 0.153 0.115 0.085"}
DP2_MEANS_D8 = {("gaussian", "real"): "0.00144 0.00361 0.00793 0.01731 0.03840",
                ("gaussian", "complex"): "0.00098 0.00191 0.00314 0.00500 0.00792",
                ("rademacher", "real"): "0.00120 0.00265 0.00507 0.00949 0.01792",
                ("rademacher", "complex"): "0.00085 0.00155 0.00233 0.00337 0.00482"}


def _dp2_catalog() -> dict[str, str]:
    out = {}
    for (d, basis), row in DP2_RATIOS.items():
        out.update(catalog_rows(f"ratio_d{d}_{basis}_p", range(1, 10), row.split()))
    for (basis, kind), row in DP2_MEANS_D8.items():
        out.update(catalog_rows(f"mse_d8_{basis}_{kind}_p", range(1, 6), row.split()))
    return out


def _dp2_keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    out = {}
    for key in _dp2_catalog():
        parts = key.split("_")
        d, basis, p = int(parts[1][1:]), parts[2], int(parts[-1][1:])
        sel = (c["d"] == d) & (c["sketch"] == basis) & (c["p"] == p)
        column = "ratio_complex_real" if key.startswith("ratio") else f"mse_{parts[3]}"
        out[key] = float(c[column][sel][0])
    return out


gallery_figure(GalleryFigure(
    name="dp-fig2-error-vs-degree",
    title="DP Fig. 2: polynomial-sketch error vs degree p, with the complex/real ratio",
    paper="Improved Random Features for Dot Product Kernels (Wacker, Kanagawa, Filippone), Fig. 2",
    caption="Mean over 1000 pairs of non-negative unit vectors of the MSE $\\mathbb{E}|\\hat k - (x\\cdot y)^p|^2$ of "
            "D = 1024 real and "
            "complex Gaussian and Rademacher sketches (Thm 2, Eqs. 18–21), d = 8 and d = 32; below, the ratio "
            "complex/real. Complex features win, and the more so the higher the degree (ratio 0.68 → 0.05 for the "
            "Gaussian sketch at d = 8); Rademacher improves on Gaussian slightly more for small d.",
    errata="The paper does not state D; the authors' CSVs imply D = 1024, and rfviz's analytic means match them "
           "(Fig. 2 reproduction), which also shows that the plotted quantity is the full "
           "complex E|k̂ − k|², not the error of Re k̂. The Ahle et al. tree sketch has no "
           "closed form and "
           "is left out. The data are drawn with the reference's seed, so the averages equal its values.",
    build=build_dp_fig2,
    explorer_page="dot_product",
    explorer_params={"view": "vs-p", "d": "8", "m": "1024", "p": "3", "q": "0.5", "basis": "gaussian",
                     "variance": "complex", "embedding": "rotation_average"},
    key_numbers=_dp2_keys,
    catalog=_dp2_catalog(),
    params={"d": list(DP2_DIMS), "D": DP2_D_FEATURES, "pairs": DP2_PAIRS, "p": f"1 … {DP2_P_MAX}",
            "data seed": DP2_SEED, "variance": "complex E|k̂−k|²"},
    source="[DP] Fig. 2 (ratios and the d = 8 means)",
))


# ============================================================================================ DP Figure 12
DP12_D_MAX = 6


def build_dp_fig12() -> tuple[go.Figure, str]:
    figs = [cd.variance_vs_m(r=1.0, theta=0.0, d=2, p=n, m_max=DP12_D_MAX, embedding="flat") for n in (1, 2)]
    fig = side_by_side(figs, ["n = 1", "n = 2"],
                       "DP Fig. 12: variance vs D for d = 2, x = y = (√½, √½)<br>TensorSRHT (Eq. 33), its surrogate "
                       "(Eq. 72, dotted) and unstructured Rademacher sketches (Eqs. 18/19, dashed)")
    for i in (1, 2):  # the n = 1 TensorSRHT variance is 0 at even D: a log axis would hide it
        fig.update_yaxes(type="linear", row=1, col=i)
    return fig, traces_csv(fig)


DP12_TABLE = {(1, "TensorSRHT real"): ("1", "0", "0.111111", "0", "0.04", "0"),
              (1, "TensorSRHT q = 0.5"): ("0.5", "0", "0.055556", "0", "0.02", "0"),
              (2, "TensorSRHT real"): ("3", "1", "0.777778", "0.5", "0.44", "0.333333"),
              (2, "TensorSRHT q = 0.5"): ("1.25", "0.25", "0.25", "0.125", "0.13", "0.083333"),
              (2, "surrogate real"): ("3", "1", "0.666667", "0.5", "0.4", "0.333333"),
              (2, "surrogate q = 0.5"): ("1.25", "0.25", "0.166667", "0.125", "0.1", "0.083333"),
              (1, "Rademacher real"): ("1", "0.5", "0.3333", "0.25", "0.2", "0.1667"),
              (2, "Rademacher real"): ("3", "1.5", "1", "0.75", "0.6", "0.5"),
              (1, "Rademacher q = 0.5"): ("0.5", "0.25", "0.1667", "0.125", "0.1", "0.0833"),
              (2, "Rademacher q = 0.5"): ("1.25", "0.625", "0.4167", "0.3125", "0.25", "0.2083")}


def _dp12_catalog() -> dict[str, str]:
    out = {}
    for (n, trace), row in DP12_TABLE.items():
        out.update(catalog_rows(f"n{n}|{trace}|D", range(1, DP12_D_MAX + 1), row))
    out.update(catalog_rows("n1|surrogate real|D", range(2, DP12_D_MAX + 1), ["0"] * (DP12_D_MAX - 1)))
    return out


def _dp12_keys(fig: go.Figure, data: str) -> dict[str, float]:
    panel = {1: [], 2: []}
    for t in fig.data:  # side_by_side keeps trace order: the n = 1 panel's traces use axis x, the n = 2 ones x2
        panel[2 if t.xaxis == "x2" else 1].append(t)
    out = {}
    for key in _dp12_catalog():
        n, trace, dlab = key.split("|")
        t = next(tr for tr in panel[int(n[1:])] if tr.name == trace)
        out[key] = float(np.asarray(t.y, dtype=float)[list(t.x).index(int(dlab[1:]))])
    return out


gallery_figure(GalleryFigure(
    name="dp-fig12-tensorsrht-vs-d",
    title="DP Fig. 12: TensorSRHT variance vs D (sawtooth), surrogate and Rademacher",
    paper="Improved Random Features for Dot Product Kernels (Wacker, Kanagawa, Filippone), Fig. 12",
    caption="Exact variance against the number of features D for d = 2 and x = y = (√½, √½) (so x·y = 1, S = ½), "
            "degree n = 1 (left) and n = 2 (right). TensorSRHT (Thm 10, Eq. 33) is not monotone in D: it jumps up "
            "whenever a new block of d features starts (a sawtooth; at n = 1 it is exactly 0 at full blocks), the "
            "convex surrogate (Eq. 72, dotted) smooths it, and both lie below the unstructured Rademacher sketch "
            "(dashed, ∝ 1/D). Complex (q = ½) features halve the real ones' variance or better.",
    errata="Thm 10 holds only when every degree draws its own permutation (as Algorithm 1 and the authors' code do); "
           "eqs. 25/31 read literally share it and then the variance formula fails (docs: errata). The padded "
           "dimension must be used in c(D, d). No printed value differs here.",
    build=build_dp_fig12,
    explorer_page="dot_product",
    explorer_params={"view": "vs-m", "d": "2", "m": "6", "p": "2", "q": "0.5", "r": "1",
                     "theta": "0", "embedding": "flat", "basis": "rademacher"},
    key_numbers=_dp12_keys,
    catalog=_dp12_catalog(),
    params={"d": 2, "x = y": "(√½, √½)", "n": [1, 2], "D": f"1 … {DP12_D_MAX}", "q": [1.0, 0.5]},
    source="[DP] Fig. 12 (exact values)",
))


# ============================================================================== DP §6: TensorSRHT vs TensorSketch
TS_PAIR_D_MAX, TS_DATA_D, TS_DATA_P, TS_DATA_M = 6, 8, 3, (8, 16, 32, 64, 128, 256)


def _ts_curves(st: dp.DotStats, p: int, ms: Sequence[int]) -> dict[str, np.ndarray]:
    """Mean over the pairs of E|k̂ − (x·y)^p|²: TensorSRHT real/complex (Thm 10) and TensorSketch (exact)."""
    scale = np.exp(p * st.log_nn)
    out = {}
    for label, q in (("TensorSRHT real", 1.0), ("TensorSRHT complex", 0.5)):
        out[label] = np.array([float(np.mean(dp.var_tsrht_normalised(st, p, q, int(m)) * scale)) for m in ms])
    out["TensorSketch"] = np.array([float(np.mean(np.exp(dp.log_var_tensor_sketch(st, p, int(m))))) for m in ms])
    return out


def build_dp_tsrht_vs_tensorsketch() -> tuple[go.Figure, Columns]:
    pair = dp.DotStats.from_pairs(np.full(2, np.sqrt(0.5)), np.full(2, np.sqrt(0.5)))
    left_m = list(range(1, TS_PAIR_D_MAX + 1))
    left = _ts_curves(pair, 2, left_m)
    data = abs_normal_unit_pairs((TS_DATA_D,))[TS_DATA_D]
    right = _ts_curves(data, TS_DATA_P, TS_DATA_M)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=["x = y = (√½, √½), d = 2, p = 2",
                                        f"mean over {DP2_PAIRS} non-negative unit pairs, d = {TS_DATA_D}, "
                                        f"p = {TS_DATA_P}"])
    cols: dict[str, list] = {"panel": [], "m": [], "sketch": [], "mse": []}
    for j, (ms, curves, panel) in enumerate(((left_m, left, "pair"), (TS_DATA_M, right, "data")), start=1):
        for i, (label, y) in enumerate(curves.items()):
            fig.add_trace(go.Scatter(x=list(ms), y=y, mode="lines+markers", name=label, legendgroup=label,
                                     showlegend=j == 1, line={"color": color(i)}), row=1, col=j)
            cols["panel"] += [panel] * len(ms)
            cols["m"] += list(ms)
            cols["sketch"] += [label] * len(ms)
            cols["mse"] += list(y)
        fig.update_xaxes(title_text="number of features D", type="log" if j == 2 else "linear", row=1, col=j)
        fig.update_yaxes(title_text="E|k̂ − (x·y)^p|²" if j == 1 else None, type="log", row=1, col=j)
    fig.update_layout(title="DP §6: TensorSRHT (real, complex) vs TensorSketch, exact variances", height=480,
                      **layout(top=90))
    return fig, {"panel": np.asarray(cols["panel"], dtype=object), "m": np.asarray(cols["m"], dtype=float),
                 "sketch": np.asarray(cols["sketch"], dtype=object), "mse": np.asarray(cols["mse"], dtype=float)}


TS_CATALOG_ROWS = {
    # [DP] Fig. 12 exact values (n = 2, q = ½), as in DP12_TABLE
    "TensorSRHT complex": DP12_TABLE[(2, "TensorSRHT q = 0.5")],
    # hand evaluation of the derived TensorSketch variance at x = y = (√½, √½): N = t² = 1, S = ½ give
    # g1 = 1, g2 = g3 = ½ and m²·Var = c0(2² − 1) + 2(m − c0)(1.5² − 1) = 2.5m + c0/2 (c0 = 1 + [m even])
    "TensorSketch": ("3", "1.5", "0.888889", "0.6875", "0.52", "0.444444"),
}


def _ts_catalog() -> dict[str, str]:
    out = {}
    for label, row in TS_CATALOG_ROWS.items():
        out.update(catalog_rows(f"pair|{label}|D", range(1, TS_PAIR_D_MAX + 1), row))
    return out


def _ts_keys(fig: go.Figure, c: Columns) -> dict[str, float]:
    out = {}
    for key in _ts_catalog():
        _, label, dlab = key.split("|")
        sel = (c["panel"] == "pair") & (c["sketch"] == label) & (c["m"] == int(dlab[1:]))
        out[key] = float(c["mse"][sel][0])
    return out


gallery_figure(GalleryFigure(
    name="dp-tsrht-vs-tensorsketch",
    title="DP §6: TensorSRHT vs TensorSketch",
    paper="Improved Random Features for Dot Product Kernels (Wacker, Kanagawa, Filippone), §6 (TensorSketch of "
          "Pham & Pagh 2013 as a baseline)",
    caption="Exact E|k̂ − (x·y)^p|² against the number of features D. Left: the Fig. 12 pair x = y = (√½, √½), "
            "p = 2: TensorSketch (CountSketch + FFT) decays like 2.5/D, complex TensorSRHT is 2.4–6× lower. Right: "
            f"mean over {DP2_PAIRS} pairs of non-negative unit vectors in R^{TS_DATA_D} (the Fig. 2 data), "
            f"p = {TS_DATA_P}: on such non-centred data complex TensorSRHT beats both real TensorSRHT and "
            "TensorSketch, the paper's §6 finding (drawn there from data-set experiments).",
    errata="The paper gives no TensorSketch variance; the [DP] authors' code formula is exact at p = 1 only "
           "(reference README). rfviz derives the exact variance (rfviz.maths.dp, TensorSketch section), checks it "
           "against Monte Carlo and scikit-learn's PolynomialCountSketch; the "
           "TensorSketch catalog numbers are that formula evaluated by hand, the TensorSRHT ones the reference's.",
    build=build_dp_tsrht_vs_tensorsketch,
    explorer_page="dot_product",
    explorer_params={"d": "2", "m": "6", "p": "2", "r": "1", "theta": "0", "embedding": "flat",
                     "view": "sketches-vs-m"},
    key_numbers=_ts_keys,
    catalog=_ts_catalog(),
    params={"pair": "x = y = (√½, √½), p = 2, D = 1 … 6", "data": f"{DP2_PAIRS} |N(0, I_{TS_DATA_D})| unit pairs",
            "p (data)": TS_DATA_P, "D (data)": list(TS_DATA_M)},
    source="[DP] Fig. 12 (exact TensorSRHT values); TensorSketch: derived formula by hand",
))
