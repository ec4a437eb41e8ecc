"""Figures a person can read (issue 13): colour/z windows that show the data, exact cells marked, human labels,
Monte-Carlo points in their curve's colour, downloads that carry their parameters."""

from __future__ import annotations

import io
import json
import pathlib
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from rfviz.compute import catalog
from rfviz.compute import crt as cg
from rfviz.compute import dp as cd
from rfviz.compute import explorer as ex
from rfviz.compute import hrf as ch
from rfviz.estimators import REGISTRY
from rfviz.figures import common, export
from rfviz.figures import crt as fg
from rfviz.figures import explorer as fx
from rfviz.figures import hrf as fh
from rfviz.figures import simrf as fs
from rfviz.params import D_PARAM, R_MAX_PARAM, ParameterError

MAX_OUTSIDE = 0.10
"""A heatmap/surface may keep at most this fraction of its finite values outside its colour/z window."""

EXPLORER_DEFAULT = ("trig", "positive_antithetic", "hybrid_angular")


# ------------------------------------------------------------------ the figures the pages and the gallery make
def _explorer(view: str, which: str = "log10_mse", r_max: float = R_MAX_PARAM.default, d: int = D_PARAM.default,
              kernel: str = "softmax", names: tuple[str, ...] = EXPLORER_DEFAULT, res: int = 60) -> go.Figure:
    r, theta = ex.make_axes(r_max, res, res)
    surfs = [ex.analytic_surface(n, {}, kernel, d, r, theta) for n in names]
    values = ex.quantity(surfs, which, pair=names[:2] if which == "ratio" else None)
    build = fx.heatmap_figure if view == "heatmap" else fx.surface_figure
    return build(r, theta, values, which, titles=catalog.titles(values))


def _gerf(s: int = 1, re_min: float = -0.5, im_max: float = 0.5, r: float = 1.0, theta: float = np.pi / 2,
          d: int = 16) -> go.Figure:
    re, im, z = cg.complex_A_data(r, theta, d, 1, "softmax", s, re_min, im_max)
    return fg.complex_A_figure(re, im, z, s, r, theta, d)


def _hybrid(kind: str = "angular", r_max: float = 4.0) -> go.Figure:
    r, theta, panels = ch.winner_columns(kind, r_max, 1 if kind == "angular" else 4, 1.0, 10)
    return fh.winner_figure(r, theta, panels)


def _gallery_hrf1() -> go.Figure:
    from rfviz.gallery import build_figure

    return build_figure("hrf-fig1-mse-surfaces")[0]


MAPS = {
    "explorer heatmap (defaults)": lambda: _explorer("heatmap"),
    "explorer 3-D (defaults)": lambda: _explorer("surface"),
    "explorer heatmap r_max = 5, d = 16 (gallery HRF Fig. 1 link)": lambda: _explorer("heatmap", r_max=5.0, d=16),
    "explorer 3-D r_max = 5": lambda: _explorer("surface", r_max=5.0),
    "explorer relative error": lambda: _explorer("heatmap", "rel_error"),
    "explorer ratio": lambda: _explorer("heatmap", "ratio", r_max=5.0),
    "explorer gaussian kernel, r_max = 8": lambda: _explorer("heatmap", r_max=8.0, kernel="gaussian"),
    "GERF complex A, s = +1": lambda: _gerf(1),
    "GERF complex A, s = −1": lambda: _gerf(-1),
    "GERF complex A, wide window": lambda: _gerf(1, re_min=-2.0, im_max=2.0),
    "hybrid winner map (angular)": lambda: _hybrid("angular"),
    "hybrid winner map (gaussian, r_max = 8)": lambda: _hybrid("gaussian", 8.0),
    "dot-product real vs complex": lambda: cd.real_complex_ratio_map(3, 16, 1.0),
    "gallery HRF Fig. 1": _gallery_hrf1,
}


def _window(fig: go.Figure, trace: go.BaseTraceType) -> tuple[float, float] | None:
    """The colour (heatmap) or z (surface) window a trace is drawn in; None when plotly autoscales to the data."""
    if trace.type == "surface":
        rng = fig.layout.scene.zaxis.range
        if rng is not None:
            return float(rng[0]), float(rng[1])
        return (trace.cmin, trace.cmax) if trace.cmin is not None else None
    if trace.coloraxis:
        ax = fig.layout[trace.coloraxis]
        return (ax.cmin, ax.cmax) if ax.cmin is not None else None
    return (trace.zmin, trace.zmax) if trace.zmin is not None else None


def outside_fractions(fig: go.Figure) -> dict[str, float]:
    """Per heatmap/surface: the fraction of its finite values outside its window (for surfaces, values pinned to
    the window's ends count as outside: that is how a surface hides what it clips)."""
    out = {}
    for t in fig.data:
        if t.type not in ("heatmap", "surface", "contour") or t.meta == "exact":
            continue
        z = np.asarray(t.z, dtype=float)
        z = z[np.isfinite(z)]
        window = _window(fig, t)
        if z.size == 0 or window is None:
            out[t.name] = 0.0
            continue
        lo, hi = window
        tol = 1e-9 * max(1.0, abs(lo), abs(hi))
        if t.type == "surface":
            outside = (z <= lo + tol) | (z >= hi - tol)
        else:
            outside = (z < lo - tol) | (z > hi + tol)
        out[t.name] = float(outside.mean())
    return out


@pytest.fixture(scope="module")
def maps() -> dict[str, go.Figure]:
    return {k: build() for k, build in MAPS.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MAPS))
def test_colour_window_shows_the_data(maps, name):
    fractions = outside_fractions(maps[name])
    assert fractions, f"{name}: no heatmap or surface"
    bad = {k: round(v, 3) for k, v in fractions.items() if v > MAX_OUTSIDE}
    assert not bad, f"{name}: more than {MAX_OUTSIDE:.0%} of the finite values outside the colour window: {bad}"


def test_outside_fraction_detects_a_hidden_map():
    """The check itself can fail: a window of the top 12 decades (the old explorer default) hides most of r_max = 5."""
    fig = _explorer("heatmap", r_max=5.0, d=16)
    fig.update_layout(coloraxis={"cmin": 52.0, "cmax": 64.0})
    assert max(outside_fractions(fig).values()) > 0.5


def test_windows_are_shared_across_panels(maps):
    fig = maps["explorer heatmap (defaults)"]
    heat = [t for t in fig.data if t.type == "heatmap" and t.meta != "exact"]
    assert len(heat) == 3 and {t.coloraxis for t in heat} == {"coloraxis"}


def test_gerf_complex_map_window_is_near_the_data():
    """Issue 13: the colour bar ran 366–378 while the data reach −0.6; the window must reach down to the minimum."""
    re, im, z = cg.complex_A_data(1.0, np.pi / 2, 16, 1, "softmax", 1)
    fig = fg.complex_A_figure(re, im, z, 1, 1.0, np.pi / 2, 16)
    finite = z[np.isfinite(z)]
    assert fig.layout.coloraxis.cmin <= float(finite.min()) + 1e-9
    assert fig.layout.coloraxis.cmax < float(finite.max())  # the blow-up at Re A → 1/8 is clipped, and says so
    assert fig.layout.coloraxis.colorbar.ticktext[-1].startswith("≥")


def test_user_range_and_clipped_ends_labelled():
    z = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 100.0]])
    fig = common.heatmaps(np.arange(3), np.arange(2), {"a": z}, xlabel="x", ylabel="y", zlabel="z",
                          style=common.HeatmapStyle(zrange=(0.5, 4.0)), theta_axis="none")
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.5, 4.0)
    text = fig.layout.coloraxis.colorbar.ticktext
    assert text[0].startswith("≤") and text[-1].startswith("≥")
    with pytest.raises(ParameterError, match="colour range"):
        common.robust_range([z], user=(3.0, 1.0))


def test_exact_cells_get_their_own_colour_and_legend(maps):
    fig = maps["explorer heatmap (defaults)"]
    overlays = [t for t in fig.data if t.meta == "exact"]
    assert overlays and all(t.colorscale[0][1] == common.EXACT_COLOR for t in overlays)
    assert any(t.showlegend and t.name == "exact (MSE = 0)" and t.marker.color == common.EXACT_COLOR
               for t in fig.data if t.type == "scatter")
    surf = maps["explorer 3-D (defaults)"]
    assert any(t.type == "scatter3d" and t.meta == "exact" for t in surf.data)


def test_roundoff_is_exact_not_a_value():
    """θ = π in floating point: a relative MSE at float64 round-off (rfviz.verdicts.roundoff_floor) is shown as exact
    (−inf), not as −16.5 or −35.6."""
    theta = np.array([np.pi])
    r = np.linspace(0.1, 3.0, 30)
    surfs = [ex.analytic_surface(n, {}, "softmax", 16, r, theta) for n in EXPLORER_DEFAULT]
    values = ex.quantity(surfs, "log10_mse")
    for s in surfs:
        v = values[s.name]
        assert np.all(np.isneginf(v) | (v - 2 * s.log10_kernel > s.log10_roundoff))
        assert -30 < s.log10_roundoff < -20  # (A·(d + m + 8)·eps)², derived in rfviz.verdicts


# ------------------------------------------------------------------ labels
RAW = re.compile(r"\blog10\b|\b\w+_\w+\b")


def _texts(fig: go.Figure) -> list[str]:
    """Axis titles, colour-bar titles, subplot titles and legend entries of a figure."""
    out = []
    layout = fig.layout
    for name in layout:
        if name.startswith(("xaxis", "yaxis")) and layout[name].title.text:
            out.append(layout[name].title.text)
    for ax in ("xaxis", "yaxis", "zaxis"):
        if layout.scene[ax].title.text:
            out.append(layout.scene[ax].title.text)
    if layout.coloraxis.colorbar.title.text:
        out.append(layout.coloraxis.colorbar.title.text)
    out += [a.text for a in layout.annotations if a.text]
    out += [t.name for t in fig.data if t.name and t.showlegend is not False]
    return out


def _label_figures() -> dict[str, go.Figure]:
    coord = np.linspace(0.0, np.pi, 50)
    surfs = [ex.analytic_surface(n, {}, "softmax", 16, np.array([1.0]), coord) for n in EXPLORER_DEFAULT]
    sl = {k: v.ravel() for k, v in ex.quantity(surfs, "log10_mse").items()}
    figs = {"slice": fx.slice_figure("r", coord, sl, "log10_mse", 1.0, titles=catalog.titles(sl)),
            "real A": fg.real_A_figure(cg.real_A_columns(1.0, 1.0, 16, 1, "softmax"), 1.0, 1.0, 16, 1, "softmax"),
            "oprf": fg.oprf_figure(cg.oprf_columns(16, 10.0), 16)}
    for view in ("heatmap", "surface"):
        for which in ex.QUANTITIES:
            figs[f"explorer {view} {which}"] = _explorer(view, which, res=12)
    figs.update({"GERF complex A": _gerf(), "hybrid winner map": _hybrid(), "DIRF": fg.dirf_figure(
        *cg.dirf_columns(1.0, 1.0, 4, 1, "softmax", "flat", False, points=20), shifted=False)})
    return figs


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_label_figures()))
def test_labels_are_human(name):
    fig = _label_figures()[name]
    for text in _texts(fig):
        assert text not in REGISTRY, f"{name}: raw registry name {text!r} as a label"
        assert not RAW.search(text), f"{name}: raw key in label {text!r}"


def test_log_axes_show_decades_with_powers():
    x = np.geomspace(1e-8, 1.0, 40)
    fig = common.lines(x, {"a": x ** 2}, xlabel="λ", ylabel="MSE", log_y=True)
    fig.update_xaxes(type="log")
    common.log_axes(fig)
    for ax in (fig.layout.xaxis, fig.layout.yaxis):
        assert ax.dtick == 1 and ax.exponentformat == "power"  # decades only, 10⁻⁸ rather than 10n
    assert common.TEMPLATE.layout.xaxis.exponentformat == "power"  # no SI prefixes on linear axes either


# ------------------------------------------------------------------ Monte-Carlo points in their curve's colour
def _mc_colours_match(fig: go.Figure) -> None:
    lines = {t.name: t.line.color for t in fig.data if t.type == "scatter" and t.mode == "lines"}
    sampled = [t for t in fig.data if t.type == "scatter" and t.name and "(sampled" in t.name]
    assert sampled
    for t in sampled:
        base = t.name.split(" (sampled")[0]
        assert base in lines, f"no curve for {t.name!r}"
        assert t.marker.color == lines[base], f"{t.name!r}: {t.marker.color} vs its curve {lines[base]}"
        assert t.meta == "edge" or t.error_y.color == lines[base]  # edge markers: no bars, value on hover


@pytest.mark.slow
def test_sampled_points_match_their_curve():
    coord = np.linspace(0.0, np.pi, 30)
    surfs = [ex.analytic_surface(n, {}, "softmax", 16, np.array([1.0]), coord) for n in EXPLORER_DEFAULT]
    sl = {k: v.ravel() for k, v in ex.quantity(surfs, "log10_mse").items()}
    sampled = {n: (coord[::5], sl[n][::5], np.full(6, 0.1)) for n in EXPLORER_DEFAULT[::-1]}  # other order
    _mc_colours_match(fx.slice_figure("r", coord, sl, "log10_mse", 1.0, sampled))
    c = cg.real_A_columns(1.0, 1.0, 16, 1, "softmax")
    fake = {"A": c["A"][:5], **{f"log10_mse_s{k}1": c[f"log10_mse_s{k}1"][:5] for k in "+-"},
            **{f"log10_se_s{k}1": np.full(5, 0.1) for k in "+-"}}
    _mc_colours_match(fg.real_A_figure(c, 1.0, 1.0, 16, 1, "softmax", sampled=fake))
    v = np.array([0.5, 1.0, 2.0])
    fake_ratios = {k: (v, np.full(3, 0.9), np.full(3, 0.01)) for k in ("simplex", "orthogonal")}
    _mc_colours_match(fs.add_sampled_ratios(fs.ratio_vs_v_figure(8), fake_ratios))


# ------------------------------------------------------------------ downloads
def test_csv_header_carries_the_parameters_and_stays_parseable():
    text = export.columns_to_csv({"theta": [0.0, 1.0], "log10_mse": [-1.0, np.inf]}, "mse-explorer",
                                 {"r_max": 5.0, "est": "trig,hybrid_angular", "label": "a b"})
    first, *_ = text.splitlines()
    from rfviz import __version__

    assert first == f'# rfviz {__version__} mse-explorer r_max=5 est=trig,hybrid_angular label="a b"'
    df = pd.read_csv(io.StringIO(text), comment="#")
    assert list(df.columns) == ["theta", "log10_mse"] and len(df) == 2 and np.isnan(df["log10_mse"][1])
    assert export.with_header(text, "again") == text  # one header only
    assert not export.columns_to_csv({"a": [1]}).startswith("#")  # no figure: plain CSV, as before


def test_html_has_title_parameters_and_can_be_light():
    fig = _explorer("heatmap")
    full = export.figure_html(fig, title="mse-explorer", params={"r_max": 2})
    light = export.figure_html(fig, "cdn", title="mse-explorer", params={"r_max": 2})
    assert "<title>mse-explorer</title>" in light and "mse-explorer r_max=2" in light
    assert len(light) < 400_000 < 4_000_000 < len(full)


def test_gallery_export_writes_the_header(tmp_path):
    from rfviz.gallery import export_figure

    written = export_figure("dp-fig2-error-vs-degree", out=str(tmp_path / "f.html"), data=str(tmp_path / "f.csv"))
    head = (tmp_path / "f.csv").read_text(encoding="utf-8").splitlines()[0]
    assert head.startswith("# rfviz ") and "dp-fig2-error-vs-degree" in head
    assert "<title>dp-fig2-error-vs-degree</title>" in (tmp_path / "f.html").read_text(encoding="utf-8")
    assert set(written) == {"figure", "data"}


def test_heatmap_panel_titles_wrap_when_many_panels_share_the_width():
    from rfviz.figures.common import heatmaps

    names = ["Trigonometric RF (sin/cos)", "Positive RF, antithetic (FAVOR+)", "Angular hybrid RF (λ = θ/π)", "P"]
    z = np.zeros((2, 3))
    fig = heatmaps(np.arange(3.0), np.arange(2.0), {k: z for k in names}, xlabel="θ", ylabel="r", zlabel="z")
    texts = [a.text for a in fig.layout.annotations]
    assert texts[:2] == ["Trigonometric RF<br>(sin/cos)", "Positive RF, antithetic<br>(FAVOR+)"]
    assert texts[3] == "P" and all(len(line) <= 25 for t in texts for line in t.split("<br>"))
    one = heatmaps(np.arange(3.0), np.arange(2.0), {names[1]: z}, xlabel="θ", ylabel="r", zlabel="z")
    assert one.layout.annotations[0].text == names[1]  # one panel: the full width, no break


# ------------------------------------------------------------------ Monte-Carlo overlays keep the closed forms' axes
def test_an_outlying_sampled_point_is_drawn_at_the_edge_and_keeps_the_axes():
    theta = np.linspace(0.0, np.pi, 50)
    curve = -1.0 - np.sin(theta)  # spans [-2, -1]
    sampled = (np.array([0.5, np.pi]), np.array([-1.5, -34.0]), np.array([0.05, 0.1]))
    fig = common.lines(theta, {"hybrid": curve}, xlabel="θ", ylabel="log₁₀ MSE", theta_axis=True,
                       points={"hybrid": sampled})
    lo, hi = fig.layout.yaxis.range
    assert -2.2 < lo < -2.0 and -1.0 < hi < -0.8, (lo, hi)  # the curve's span plus a small margin, not −34
    edge = [t for t in fig.data if t.meta == "edge"]
    assert len(edge) == 1 and list(edge[0].y) == [lo] and list(edge[0].marker.symbol) == ["triangle-down"]
    assert edge[0].customdata[0][1] == -34.0 and common.EDGE_NOTE in edge[0].name
    inside = [t for t in fig.data if t.mode == "markers" and t.meta != "edge"]
    assert [list(t.y) for t in inside] == [[-1.5]]
    rows = pd.read_csv(io.StringIO(common.traces_csv(fig)), comment="#")
    assert -34.0 in rows["y"].to_numpy()  # the CSV keeps the true value


def test_points_beyond_the_curves_x_range_are_pinned_to_its_end_and_log_axes_work():
    m = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    fig = common.lines(m, {"sketch": 1.0 / m}, xlabel="m", ylabel="MSE", log_y=True,
                       points={"sketch": (np.array([4.0, 64.0]), np.array([0.25, 0.1]), np.array([0.01, 0.001]))})
    edge = [t for t in fig.data if t.meta == "edge"]
    assert len(edge) == 1 and list(edge[0].x) == [16.0] and list(edge[0].marker.symbol) == ["triangle-right"]
    lo, hi = fig.layout.yaxis.range
    assert lo < np.log10(1 / 16) < np.log10(1.0) < hi < 0.2


def test_every_overlay_goes_through_the_edge_helper():
    v = np.array([0.5, 1.0, 2.0])
    fake = {"simplex": (v, np.array([0.9, 50.0, 0.9]), np.full(3, 0.01))}
    fig = fs.add_sampled_ratios(fs.ratio_vs_v_figure(8), fake)
    assert [t for t in fig.data if t.meta == "edge"] and fig.layout.yaxis.range[1] < 50


# ------------------------------------------------------------------ dot-product titles and ranges
def test_dot_product_titles_are_words_not_carets_and_say_m():
    figs = [cd.variance_vs_q(1.0, 0.79, 8, 3, 16, "flat"), cd.sketches_vs_m(m_max=16),
            cd.variance_vs_d(p=3, m=16), cd.maclaurin_allocation("exponential", 32)]
    for fig in figs:
        texts = [fig.layout.title.text, fig.layout.yaxis.title.text or "", fig.layout.xaxis.title.text or ""]
        assert not any("^" in t or "D = " in t or "(= m)" in t for t in texts), texts


def test_sampled_sketches_never_lie_beyond_the_curves():
    m_mc = np.array([4, 16, 64])
    fake = {label: (m_mc, 1.0 / m_mc, 0.01 / m_mc) for label in cd.SKETCH_SET}
    fig = cd.sketches_vs_m(m_max=max(16, *m_mc), points=fake)  # the page extends the curves to the sampled m
    curve_m = max(max(t.x) for t in fig.data if t.mode == "lines")
    sampled_m = max(max(t.x) for t in fig.data if t.mode == "markers")
    assert sampled_m <= curve_m == 64
    pinned = cd.sketches_vs_m(m_max=16, points=fake)  # and were they not: pinned at the edge, not beyond
    assert max(max(t.x) for t in pinned.data if t.mode == "markers") <= 16


def test_maclaurin_default_allocation_shows_a_difference():
    import ast
    source = (pathlib.Path(__file__).resolve().parents[2] / "app_pages" / "dot_product.py").read_text()
    default = next(n.value.body.value for n in ast.walk(ast.parse(source))
                   if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "M_DEFAULT")
    fig = cd.maclaurin_allocation("exponential", default)
    bars = {tuple(t.y) for t in fig.data}
    assert len(bars) > 1 and max(len([b for b in t.y if b]) for t in fig.data) > 1, bars


def test_sweep_rows_have_human_headers_and_top_share_is_explained():
    from rfviz.figures import sweep as fsw
    rows = {"theta": np.array([0.1]), "mse": np.array([1.0]), "mc_mse": np.array([1.1]), "top_share": np.array([0.2])}
    human = fsw.human_rows(rows)
    assert list(human) == ["θ", "MSE (closed form)", "MSE (Monte Carlo)", fsw.COLUMN_NAMES["top_share"]]
    assert "top_share" in fsw.COLUMNS_NOTE
    assert fsw.COLUMN_NAMES["top_share"].split()[0].lower() in fsw.COLUMNS_NOTE.lower()


# ------------------------------------------------------------------ rfviz's template: the same figure either way
def _figures_of_every_kind() -> list[go.Figure]:
    c = ch.mse_columns("angular", 1.0, 8, 1.0, 10)
    figures = [fh.mse_figure(c, "angular", 1.0, None),  # lines
               fh.winner_figure(*ch.winner_columns("angular", 3.0, 8, 1.0, 10)),  # heatmap panels (make_subplots)
               _explorer("surface", res=12),  # 3-D surfaces
               common.bars(["a", "b"], {"s": [1.0, 2.0]}, xlabel="x", ylabel="y")]  # bars
    return figures + [common.compact_layout(f) for f in figures[:2]]  # the phone layout's copies


def test_a_figure_is_the_same_with_rfviz_template_as_plotly_default(monkeypatch):
    """The app makes rfviz's template plotly's default (``use_rfviz_template``) so that figures get it when
    created instead of validating it again; a figure built there must be the very figure a library user gets."""
    import plotly.io as pio

    monkeypatch.setattr(pio.templates, "default", "plotly")
    plain = [f.to_plotly_json() for f in _figures_of_every_kind()]
    assert all(f["layout"]["template"] == common.TEMPLATE.to_plotly_json() for f in plain)
    common.use_rfviz_template()
    assert pio.templates.default == common.TEMPLATE_NAME
    assert "template" not in common.layout()
    fast = [f.to_plotly_json() for f in _figures_of_every_kind()]
    assert [json.loads(pio.to_json(f)) for f in fast] == [json.loads(pio.to_json(f)) for f in plain]
