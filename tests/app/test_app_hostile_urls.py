"""Issue 29's newcomer list and hostile URLs in the app: the explorer's 3-D box and its CSV with the Monte-Carlo
points, phone charts with a free row for Plotly's toolbar, the coupling page's ratio views explaining iid, the
Sweeps page's command that works when pasted, and the Your-data page refusing clusters it cannot afford."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app_pages import BY_PATH
from rfviz.compute import sweep_files as sf
from rfviz.figures import common
from rfviz.figures import explorer as fx

TIMEOUT = 120


# ------------------------------------------------------------------------------ pure builders (fast)
def test_the_explorer_csv_carries_the_monte_carlo_points() -> None:
    r, theta = np.array([0.5, 1.0]), np.array([0.0, 1.0, 2.0])
    values = {"trig": np.arange(6.0).reshape(2, 3)}
    plain = fx.grid_csv(r, theta, values, "mse")
    assert plain.splitlines()[0] == "panel,r,theta,mse" and len(plain.splitlines()) == 7
    sampled = {"trig": (np.array([1.0]), np.array([0.0, 2.0]), np.array([[0.7, 0.8]]), np.array([[0.1, 0.2]]),
                        np.array([[True, False]]))}
    import csv

    rows = list(csv.DictReader(io.StringIO(fx.grid_csv(r, theta, values, "mse", sampled))))
    assert [k for k in rows[0]] == ["panel", "source", "r", "theta", "mse", "stderr", "reliable"]
    mc = [row for row in rows if row["source"] == "monte carlo"]
    assert len(rows) == 8 and len(mc) == 2
    assert [(float(m["theta"]), float(m["mse"]), float(m["stderr"]), m["reliable"]) for m in mc] == [
        (0.0, 0.7, 0.1, "True"), (2.0, 0.8, 0.2, "False")]


def test_the_3d_box_is_wider_than_tall_and_spans_the_figure() -> None:
    r, theta = np.linspace(0.1, 2, 5), np.linspace(0, np.pi, 6)
    fig = fx.surface_figure(r, theta, {"trig": np.ones((5, 6))}, "log10_mse", {})
    scene = fig.layout.scene
    assert scene.aspectmode == "manual" and scene.aspectratio.x > 1.2 * scene.aspectratio.z
    assert tuple(scene.domain.x) == (0.0, 1.0)


def test_phone_charts_keep_a_row_for_the_toolbar_above_the_title() -> None:
    r, theta = np.linspace(0.1, 2, 5), np.linspace(0, np.pi, 6)
    fig = fx.surface_figure(r, theta, {"trig": np.ones((5, 6))}, "log10_mse", {},
                            title="a rather long chart title that wraps on a phone screen of 390 px")
    phone = common.compact_layout(fig)
    assert phone.layout.title.pad.t >= common.PHONE_MODEBAR_PX
    assert phone.layout.margin.t >= common.PHONE_MODEBAR_PX + phone.layout.title.pad.t - 14


@pytest.mark.integration  # runs the command in a subprocess
def test_the_suggested_sweep_command_works_when_pasted(tmp_path) -> None:
    command = sf.example_command("results").replace("--trials 20000", "--trials 64") + " --quiet"
    proc = subprocess.run(["bash", "-c", command.replace("python ", f"{sys.executable} ", 1)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "results" / "positive.csv").is_file()


# ------------------------------------------------------------------------------ pages (AppTest, slow)
@pytest.mark.slow
def test_the_sweeps_page_suggests_the_working_command(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RFVIZ_RESULTS", str(tmp_path / "results"))
    at = AppTest.from_file(str(BY_PATH["sweeps"].file), default_timeout=TIMEOUT).run()
    assert not at.exception, [e.message for e in at.exception]
    text = " ".join(i.value for i in at.info)
    assert sf.example_command("$RFVIZ_RESULTS") in text and "mkdir -p" in text  # the folder by its variable's name
    assert str(tmp_path) not in text  # no server path shown to a browser (issue 42)


@pytest.mark.slow
@pytest.mark.parametrize("view", ["ratio-vs-v", "ratio-vs-d"])
def test_the_coupling_ratio_views_say_where_iid_went(view: str) -> None:
    at = AppTest.from_file(str(BY_PATH["coupling"].file), default_timeout=TIMEOUT)
    at.query_params.update({"view": view, "couplings": "iid,orthogonal,simplex"})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("iid" in c.value and "constant 1" in c.value for c in at.sidebar.caption)


@pytest.mark.slow
@pytest.mark.parametrize("cluster_d", ["6000", "1e308", "99999999999"])
def test_data_page_refuses_clusters_it_cannot_afford(cluster_d: str) -> None:
    at = AppTest.from_file(str(BY_PATH["data"].file), default_timeout=TIMEOUT)
    at.query_params.update({"source": "clusters", "cluster_d": cluster_d})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    errors = " ".join(e.value for e in at.error)
    assert re.search(r"would take|of memory|must be an integer in|cluster_d", errors), errors
