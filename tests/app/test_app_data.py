"""The "Your data" page (app_pages/data.py) in AppTest, and its figure builders (rfviz.figures.data)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app_pages import BY_PATH
from rfviz import data
from rfviz.compute import data as cdata
from rfviz.estimators import create
from rfviz.figures import data as fdata

pytestmark = pytest.mark.slow  # Streamlit AppTest page runs (python -m pytest -m "not slow" skips them)

TIMEOUT = 120


def _iris() -> data.DataSet:
    return data.load("iris", queries=12, keys=10, steps=("standardize", "scale"), scale=0.5, seed=1)


def test_pair_geometry_uses_the_geometric_mean_norm_and_the_angle() -> None:
    ds = _iris()
    r, th = cdata.pair_geometry(ds)
    i, j = 3, 7
    x, y = ds.queries[i], ds.keys[j]
    k = i * ds.keys.shape[0] + j
    assert r[k] == pytest.approx(math.sqrt(np.linalg.norm(x) * np.linalg.norm(y)))
    assert math.cos(th[k]) == pytest.approx(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))
    dens = cdata.pair_density(r, th, np.linspace(r.min(), r.max(), 8), np.linspace(0, math.pi, 9))
    assert dens.shape == (8, 9) and dens.max() == 1.0


def test_pair_average_is_the_mean_of_pairwise_closed_forms_and_the_verdict_names_the_winner() -> None:
    ds = _iris()
    avg = cdata.pair_averages(ds, ["trig", "positive"], {"m": 16}, [4, 16])
    for name, row in zip(avg.names, avg.log10_mse, strict=True):
        est = create(name, m=16)
        direct = np.mean([math.exp(float(est.log_mse(x, y))) for x in ds.queries for y in ds.keys])
        assert 10 ** row[1] == pytest.approx(direct, rel=1e-9)
        assert row[0] == pytest.approx(row[1] + math.log10(4), abs=1e-9)  # MSE ∝ 1/m for these two
    line = cdata.verdict(ds, avg, 16)
    best = avg.names[int(np.argmin(avg.log10_mse[:, 1]))]
    assert line.startswith(f"on iris at m = 16, {best} wins, with ") and "× lower MSE than" in line


def test_map_figure_overlays_density_contours_on_each_panel() -> None:
    ds = _iris()
    dm = cdata.data_map(ds, ["trig", "positive_antithetic"], {"m": 8}, n_r=10, n_theta=12)
    fig = fdata.data_map_figure(dm.r_axis, dm.theta_axis, dm.values, dm.density, dm.title)
    kinds = [t.type for t in fig.data]
    panels = [t for t in fig.data if t.type == "heatmap" and not str(t.name or "").startswith("exact")]  # not the
    assert len(panels) == 2 and kinds.count("contour") == 2  # exact-cell (MSE = 0) overlays


def _page() -> AppTest:
    return AppTest.from_file(str(BY_PATH["data"].file), default_timeout=TIMEOUT)


def test_page_shows_the_answer_the_map_and_the_gram_table() -> None:
    at = _page().run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("wins, with" in md.value for md in at.markdown)
    assert len(at.get("plotly_chart")) == 2 and len(at.dataframe) == 2  # the Gram table and the ranking
    at.button(key="data.run_gram").click().run()
    assert not at.exception, [e.message for e in at.exception]
    df = at.dataframe[0].value
    assert df["MC"].notna().all() and df["reliable"].notna().all()


def test_page_upload_without_a_file_and_bad_m_show_errors() -> None:
    at = _page().run()
    at.selectbox(key="data.source").set_value("upload a file").run()
    assert not at.exception and any("upload a CSV" in e.value for e in at.error)
    at.selectbox(key="data.source").set_value("iris").run()
    at.number_input(key="data.m").set_value(0).run()
    assert not at.exception and any("m must be" in e.value for e in at.error)


def test_uploaded_points_are_validated() -> None:
    with pytest.raises(data.ParameterError, match="finite"):
        data.from_points(np.array([[1.0, np.nan], [0.0, 1.0]]), queries=1, keys=1)
    ds = data.from_points(np.random.default_rng(0).normal(size=(30, 3)), "mine.npy", queries=5, keys=6,
                          steps=("center",))
    assert ds.queries.shape == (5, 3) and ds.keys.shape == (6, 3) and ds.name == "mine.npy"


def test_page_frame_drops_stale_url_keys() -> None:
    """The page frame ends every run with PageState.finish: keys no widget of this run wrote leave the URL (the
    clusters' d once another data set is chosen, a key of no widget), the page's own keys stay."""
    at = _page()
    at.query_params.update({"source": "iris", "cluster_d": "8", "nonsense": "1", "m": "32"})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert "nonsense" not in at.query_params and "cluster_d" not in at.query_params
    assert at.query_params["m"] in (["32"], "32") and at.number_input(key="data.m").value == 32
