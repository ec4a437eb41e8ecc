"""The Sweeps page and its pure builders (rfviz/figures/sweep.py) on a small sweep produced by the local backend:
the file is read and validated, the figures carry the file's numbers (±2 SE bars, unreliable points hollow with
their own legend entry), a bad file shows a clear error and the page keeps working."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app_pages import BY_PATH
from rfviz import ParameterError, get_estimator
from rfviz.compute import sweep_files as sf
from rfviz.figures import sweep as fs
from rfviz.sweeps import SweepSpec, make_backend, parse_grid, run_sweep

pytestmark = pytest.mark.slow  # Streamlit AppTest page runs and sweeps (python -m pytest -m "not slow" skips them)

TIMEOUT = 60
PAGE = BY_PATH["sweeps"]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> pathlib.Path:
    """A results folder with one CSV and one Parquet sweep (positive features: heavy-tailed at r = 2.5)."""
    folder = tmp_path_factory.mktemp("results")
    grid = parse_grid(["theta=0:3:4", "r=0.5,1.5,2.5"], get_estimator("positive"), {})
    spec = SweepSpec("positive", {"d": "16", "m": "8"}, grid, trials=4096, seed=3, block_trials=1024)
    run_sweep(spec, str(folder / "a_positive.csv"), make_backend("local"), progress=False)
    pytest.importorskip("pyarrow")
    run_sweep(spec, str(folder / "b_positive.parquet"), make_backend("local"), progress=False)
    for p in folder.glob("*.manifest.json"):
        p.unlink()
    return folder


def _csv_rows(path: pathlib.Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_read_results_csv_and_parquet_agree(results):
    a = sf.read_results((results / "a_positive.csv").read_bytes(), "a_positive.csv")
    b = sf.read_results((results / "b_positive.parquet").read_bytes(), "b_positive.parquet")
    assert a.axes == b.axes == ("theta", "r")
    assert len(a) == len(b) == 12
    assert a.estimator == "positive"
    for col in ("mc_mse", "stderr", "mse", "theta", "r"):
        np.testing.assert_allclose(a.columns[col], b.columns[col], rtol=1e-12)
    np.testing.assert_array_equal(a.columns["reliable"], b.columns["reliable"])
    assert fs.axis_values(a, "r") == [0.5, 1.5, 2.5]


def test_slice_figure_error_bars_and_unreliable_marking(results):
    table = sf.read_results((results / "a_positive.csv").read_bytes(), "a_positive.csv")
    rows = [r for r in _csv_rows(results / "a_positive.csv") if float(r["r"]) == 2.5]
    rows.sort(key=lambda r: float(r["theta"]))
    assert any(r["reliable"] == "False" for r in rows), "the fixture needs an unreliable (heavy-tailed) point"
    fig = fs.slice_figure(table, "theta", {"r": 2.5})
    names = [t.name for t in fig.data]
    assert fs.UNRELIABLE in names
    line = next(t for t in fig.data if t.name == "closed form")
    np.testing.assert_allclose(line.y, [math.log10(float(r["mse"])) for r in rows], rtol=1e-12)
    for trace in fig.data:
        if trace.mode != "markers":
            continue
        want = [r for r in rows if (r["reliable"] == "True") == (trace.name != fs.UNRELIABLE)]
        np.testing.assert_allclose(trace.x, [float(r["theta"]) for r in want])
        np.testing.assert_allclose(trace.y, [math.log10(float(r["mc_mse"])) for r in want], rtol=1e-12)
        # ±2 SE on the log10 scale: 2 · SE / (MSE · ln 10)
        bars = [2 * float(r["stderr"]) / (float(r["mc_mse"]) * math.log(10)) for r in want]
        np.testing.assert_allclose(trace.error_y.array, bars, rtol=1e-9)
        hollow = trace.marker.symbol == "circle-open"
        assert hollow == (trace.name == fs.UNRELIABLE)


def test_heatmap_figure_places_values_and_rings_unreliable(results):
    table = sf.read_results((results / "a_positive.csv").read_bytes(), "a_positive.csv")
    fig = fs.heatmap_figure(table, "theta", "r", {})
    mc = next(t for t in fig.data if t.name == "Monte Carlo")
    rows = _csv_rows(results / "a_positive.csv")
    for r in rows:
        i = list(mc.y).index(float(r["r"]))
        j = list(mc.x).index(float(r["theta"]))
        assert mc.z[i][j] == pytest.approx(math.log10(float(r["mc_mse"])), rel=1e-12)
    ring = next(t for t in fig.data if t.name == fs.UNRELIABLE)
    assert len(ring.x) == sum(r["reliable"] == "False" for r in rows)
    with pytest.raises(ParameterError, match="axis"):
        fs.heatmap_figure(table, "theta", "m", {})
    with pytest.raises(ParameterError, match="distinct"):
        fs.heatmap_figure(table, "r", "r", {})


@pytest.mark.parametrize("name, data, match", [
    ("x.txt", b"a,b\n1,2\n", "csv or .parquet"),
    ("x.csv", b"", "empty"),
    ("x.csv", b"theta,r,value\n1,2,3\n", "missing column.*mc_mse"),
    ("x.csv", b"mc_mse,stderr,reliable\n1,0.1,True\n", "no grid-axis"),
    ("x.csv", b"theta,mc_mse,stderr,reliable\n", "no rows"),
    ("x.csv", b"theta,mc_mse,stderr,reliable\n1,abc,0.1,True\n", "mc_mse must hold numbers"),
    ("x.csv", b"theta,mc_mse,stderr,reliable\n1,1,0.1,maybe\n", "reliable must hold true/false"),
    ("x.csv", b"theta,mc_mse,stderr,reliable\n1,1,0.1\n", "row 1 has 3 fields"),
    ("x.csv", b"\xff\xfe\x00garbage", "UTF-8"),
    ("x.parquet", b"not parquet at all", "Parquet"),
])
def test_read_results_rejects_bad_files(name, data, match):
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    with pytest.raises(ParameterError, match=match):
        sf.read_results(data, name)


def test_read_results_size_limit():
    with pytest.raises(ParameterError, match="at most"):
        sf.read_results(b"theta,mc_mse,stderr,reliable\n" + b"1,1,0.1,True\n" * 100, "x.csv", max_bytes=100)


def _app(folder: pathlib.Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("RFVIZ_RESULTS", str(folder))
    at = AppTest.from_file(str(PAGE.file), default_timeout=TIMEOUT)
    return at.run()


def test_page_plots_a_local_sweep_and_survives_a_bad_file(results, tmp_path, monkeypatch):
    folder = tmp_path / "res"
    folder.mkdir()
    (folder / "a_positive.csv").write_bytes((results / "a_positive.csv").read_bytes())
    (folder / "z_bad.csv").write_text("theta,value\n1,2\n")
    at = _app(folder, monkeypatch)
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    charts = at.get("plotly_chart")
    assert len(charts) == 2, "heatmap and slice"
    assert len(at.dataframe) == 1
    assert "unreliable" in at.markdown[0].value or any("unreliable" in c.value for c in at.caption)
    # other axes / series
    at.selectbox(key=PAGE.key("x")).set_value("r").run()
    at.selectbox(key=PAGE.key("series")).set_value("theta").run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 2
    # a bad file: a clear error naming the missing columns, no exception, no chart
    at.selectbox(key=PAGE.key("file")).set_value("z_bad.csv").run()
    assert not at.exception, [e.message for e in at.exception]
    message = at.error[0].value.replace("\\", "") if at.error else ""  # shown escaped (plain text, not Markdown)
    assert "missing column" in message and "mc_mse" in message
    assert len(at.get("plotly_chart")) == 0
    # the page keeps working
    at.selectbox(key=PAGE.key("file")).set_value("a_positive.csv").run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 2


def test_page_without_results_explains_what_to_do(tmp_path, monkeypatch):
    at = _app(tmp_path / "missing", monkeypatch)
    assert not at.exception, [e.message for e in at.exception]
    assert at.info and "rfviz sweep" in at.info[0].value


def test_page_frame_drops_stale_url_keys(results, monkeypatch):
    """The page frame ends every run with PageState.finish (the page used to skip it): a key no widget wrote leaves
    the URL, the chosen axes stay."""
    monkeypatch.setenv("RFVIZ_RESULTS", str(results))
    at = AppTest.from_file(str(PAGE.file), default_timeout=TIMEOUT)
    at.query_params.update({"file": "a_positive.csv", "x": "r", "nonsense": "1"})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert "nonsense" not in at.query_params
    assert at.query_params["x"] in (["r"], "r") and at.selectbox(key=PAGE.key("x")).value == "r"


def test_heatmap_exact_cells_at_roundoff_never_set_the_colour_scale(tmp_path):
    """Issue 28: positive_antithetic at θ = 3.14159265 samples MSE ≈ 1e-34 (round-off); the Sweeps heatmap draws
    those cells as exact (−inf: the magenta overlay) and its colour scale no longer reaches down to them (−35.6)."""
    grid = parse_grid(["r=0.5:2:3", "theta=0:3.14159265:3"], get_estimator("positive_antithetic"), {})
    spec = SweepSpec("positive_antithetic", {"d": "16", "m": "10"}, grid, trials=2000, seed=7, block_trials=1024)
    run_sweep(spec, str(tmp_path / "pa.csv"), make_backend("local"), progress=False)
    table = sf.read_results((tmp_path / "pa.csv").read_bytes(), "pa.csv")
    fig = fs.heatmap_figure(table, "theta", "r", {})
    mc = next(t for t in fig.data if t.name == "Monte Carlo")
    z = np.array(mc.z, dtype=float)
    assert np.all(np.isnan(z[:, -1]))  # the exact column: no value (drawn by the exact overlay)
    assert np.all(np.isfinite(z[:, :-1])) and float(np.nanmin(z)) > -20
    assert mc.zmin is None or mc.zmin > -20
    lows = [t.zmin for t in fig.data if getattr(t, "zmin", None) is not None]
    assert all(v > -20 for v in lows), lows
