"""The first hour's rough edges a newcomer found (issue 42), each checked: progress in named stages for the Your-data
page's long runs, no raw None and a stated Nyström cap in its tables, no server path on the Sweeps page, the Coupling
page's text true to its chart, and the guide naming only buttons the pages have."""

from __future__ import annotations

import itertools
import pathlib
import re

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_ranking_reports_its_progress_through_both_stages():
    from rfviz.compute.ranking import RANK_STAGES, rank_estimators

    q = np.random.default_rng(0).normal(size=(6, 3)) * 0.3
    seen: list[float] = []
    rank_estimators(q, q, "gaussian", length=16, names=["trig", "positive", "trig_phase"], repeats=20,
                    report=seen.append)
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    assert any(f <= 0.5 for f in seen) and any(f > 0.5 for f in seen)  # the ranking, then the confirmation
    assert len(RANK_STAGES) == 2


def test_a_downstream_study_reports_progress_states_the_nystroem_cap_and_shows_no_none():
    from rfviz.compute.downstream import NO_CLOSED_FORM, attention_study, attention_values, study_table

    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(5, 3)) * 0.3, rng.normal(size=(5, 3)) * 0.3
    seen: list[float] = []
    study = attention_study(q, k, attention_values(5, 0), names=("positive",), lengths=(4, 64), repeats=2,
                            report=seen.append)
    assert seen == pytest.approx([1 / 3, 2 / 3, 1.0])  # after each random-feature row (of 2 + Nyström), then done
    capped = [r for r in study.rows if r.method == "nystroem" and "cap" in r.extra]
    assert [(r.length, r.extra["asked_length"]) for r in capped] == [(10, 64)]  # 10 points fitted: 10 columns
    assert "at most one column per point (10 points)" in capped[0].to_json()["cap"]
    table = study_table(study)
    assert all(v is not None and "None" not in str(v) for row in table for v in row.values())
    nystroem = [row for row in table if row["method"].startswith("Nyström")]
    assert nystroem[-1]["length"].startswith("10 (64 asked: ") and nystroem[-1]["closed-form rel. Gram error"] == \
        NO_CLOSED_FORM


def test_the_page_studies_run_in_named_stages():
    from rfviz.compute import downstream

    assert len(downstream.PAGE_STAGES) == 3 and "ridge" in downstream.PAGE_STAGES[0]
    source = (ROOT / "app_pages" / "data.py").read_text()
    for what in ("Fitting the models", "Ranking", "Confirming"):  # a bar naming its stage, not a bare spinner
        assert f'ui.stages("{what}"' in source


@pytest.mark.integration
def test_the_sweeps_page_shows_no_server_path(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    folder = tmp_path / "secret-server-folder" / "results"
    folder.mkdir(parents=True)
    monkeypatch.setenv("RFVIZ_RESULTS", str(folder))
    at = AppTest.from_file(str(ROOT / "app_pages" / "sweeps.py"), default_timeout=120).run()
    assert not at.exception
    shown = " ".join(str(getattr(e, "value", "")) for kind in ("markdown", "caption", "info", "error", "warning")
                     for e in at.get(kind))
    assert "No sweep result" in shown and "secret-server-folder" not in shown and str(tmp_path) not in shown
    assert "$RFVIZ_RESULTS" in shown.replace("\\\\", "")


def test_the_coupling_page_says_what_its_density_chart_shows():
    """Simplex blocks move w_ij to smaller values; orthogonal ones narrow it but sit slightly right of iid: the page's
    intro says so, checked on the density chart's curves (d = 16, the page's default, and d = 4)."""
    from rfviz.figures.simrf import density_figure

    for d in (4, 16):
        stats = {}
        for trace in density_figure(d).data:
            x, y = np.asarray(trace.x, float), np.asarray(trace.y, float)
            dx = np.gradient(x)
            mean = float(np.sum(x * y * dx) / np.sum(y * dx))
            stats[trace.name.split()[0]] = (float(x[np.nanargmax(y)]), mean,
                                            float(np.sqrt(np.sum((x - mean) ** 2 * y * dx) / np.sum(y * dx))))
        (p_iid, m_iid, s_iid), (p_orth, m_orth, s_orth), (p_sim, m_sim, s_sim) = (
            stats["iid"], stats["orthogonal"], stats["simplex"])
        assert m_sim < m_iid and p_sim < p_iid  # simplex: to smaller values
        assert p_orth >= p_iid and m_orth > m_iid  # orthogonal: its peak slightly right, not "pushed down"
        assert s_orth < s_iid and s_sim < s_iid  # both narrower
    intro = (ROOT / "app_pages" / "coupling.py").read_text()
    assert "push it down" not in intro and "slightly right of iid's" in intro


def test_the_guide_names_only_buttons_the_pages_have():
    for guide in (ROOT / "docs" / "guide").glob("*.md"):
        if guide.stem == "index" or "**Run Monte Carlo**" not in guide.read_text():
            continue
        page = (ROOT / "app_pages" / f"{guide.stem}.py").read_text()
        assert re.search(r'st\.button\(\s*"Run Monte Carlo"', page), f"{guide.name} names a button its page lacks"


def test_side_by_side_3d_scenes_are_stacked_on_a_phone_each_under_its_own_title():
    """The Gallery's three 3-D surfaces: side by side their titles ran into one line on a phone."""
    from rfviz.figures.common import compact_layout
    from rfviz.gallery import build_figure

    fig, _ = build_figure("hrf-fig1-mse-surfaces")
    before = {a.text: a.x for a in fig.layout.annotations}
    phone = compact_layout(fig)
    scenes = sorted((phone.layout[k] for k in phone.layout if k.startswith("scene")), key=lambda s: -s.domain.y[1])
    assert len(scenes) == 3 and all(tuple(s.domain.x) == (0.0, 1.0) for s in scenes)
    assert all(a.domain.y[0] > b.domain.y[1] for a, b in itertools.pairwise(scenes))  # one per row
    tops = {a.text: a.y for a in phone.layout.annotations}
    order = sorted(before, key=before.get)  # left to right on a desktop: top to bottom on a phone
    assert [pytest.approx(tops[t]) for t in order] == [s.domain.y[1] for s in scenes]
