"""The Learn page's lessons: every number a step's text states is the number its figure shows, recomputed here from
the closed forms (rfviz.maths), and the page walks every step (AppTest): predict, reveal, try, next."""

from __future__ import annotations

import json
import math
import pathlib
import re
import string

import numpy as np
import pytest

from rfviz.lessons import LESSONS, get_lesson
from rfviz.maths import hrf as hy
from rfviz.maths.crt import A_star
from rfviz.maths.simrf import mse_ratio_vs_iid
from rfviz.params import ParameterError

ROOT = pathlib.Path(__file__).resolve().parents[2]
LN10 = math.log(10.0)


def _steps():
    return [(slug, i) for slug, lesson in LESSONS.items() for i in range(len(lesson.steps))]


def test_at_least_six_lessons_each_with_a_question_a_reveal_and_a_control():
    assert len(LESSONS) >= 6
    assert sum(len(lesson.steps) for lesson in LESSONS.values()) > len(LESSONS)  # some lessons have several steps
    for lesson in LESSONS.values():
        for step in lesson.steps:
            assert len(step.choices) >= 2 and 0 <= step.answer < len(step.choices)
            assert step.control.default is not None and step.try_text and step.reveal


def test_unknown_lesson_is_a_parameter_error():
    with pytest.raises(ParameterError, match="lesson must be one of"):
        get_lesson("nope")
    step = LESSONS["monte-carlo-lies"].steps[0]
    with pytest.raises(ParameterError, match="trials must be one of"):
        step.figure_and_text(5000)


@pytest.mark.parametrize("slug,index", _steps())
def test_step_text_is_filled_from_its_facts(slug, index):
    step = LESSONS[slug].steps[index]
    fig, text, facts = step.figure_and_text()
    names = {f for _, f, _, _ in string.Formatter().parse(step.reveal + step.try_text) if f}
    assert names <= set(facts), f"{slug}: text names {names - set(facts)} that the step does not compute"
    assert "{" not in text and "nan" not in text.lower() and "inf" not in text.split()
    assert all(math.isfinite(float(v)) for v in facts.values() if isinstance(v, int | float))
    assert fig.data, f"{slug}: an empty figure"


def _percent(log_rel: float) -> float:
    return 100.0 * math.exp(log_rel)


def test_kernel_average_numbers_are_the_closed_form():
    step = LESSONS["kernel-average"].steps[0]
    _, text, f = step.figure_and_text()
    for m, key in ((4, "e4"), (16, "e16")):  # trig: relative error √MSE/K (HRF Lemma 3.4 eq. 25)
        assert f[key] == pytest.approx(_percent(float(hy.log_eps_trig_tr(1.0, 1.0, m))), rel=1e-9)
    assert f["ratio"] == pytest.approx(2.0, rel=1e-9)  # exactly 1/√m
    assert f"{f['e4']:.1f} %" in text and f"{f['e16']:.1f} %" in text


def test_kernel_average_samples_agree_with_the_closed_form():
    """The lesson's sampled dots sit on its closed-form line (within 4 standard errors, fixed seed)."""
    from rfviz.compute.learn import sampled_relative_error_vs_m

    c = sampled_relative_error_vs_m(1.0, 1.0, 8, (4, 16, 64), 4000, 0)
    for m, y, se in zip(c["m_sampled"], c["log10_rel_sampled"], c["log10_rel_se"], strict=True):
        exact = float(hy.log_eps_trig_tr(1.0, 1.0, int(m))) / LN10
        assert abs(y - exact) < 4 * se, (m, y, exact, se)


def test_dimension_step_is_flat_in_d():
    _, _, f = LESSONS["kernel-average"].steps[1].figure_and_text()
    assert f["trig_small"] == pytest.approx(f["trig_big"], rel=1e-10)
    assert f["trig_small"] == pytest.approx(_percent(float(hy.log_eps_trig_tr(1.0, 1.0, 16))), rel=1e-9)


def _array(values) -> np.ndarray:
    """A trace's x or y as floats: a list, or plotly's typed-array JSON ({"dtype", "bdata": base64})."""
    if isinstance(values, dict):
        import base64

        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]).astype(float)
    return np.asarray(values, dtype=float)


def _trace(fig, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the trace ``name`` of a figure (a plotly Figure or the JSON dict Streamlit sends)."""
    data = fig["data"] if isinstance(fig, dict) else fig.data
    trace = next(t for t in data if t["name"] == name)
    return _array(trace["x"]), _array(trace["y"])


def test_dimension_step_states_the_dimensions_its_question_asks_about():
    """The question compares d = 8 with d = 1,000: the reveal states the chart's values at those two d."""
    step = LESSONS["kernel-average"].steps[1]
    fig, text, f = step.figure_and_text()
    assert "d = 8" in step.question and "d = 1,000" in step.question
    assert "d = 8 " in text and "d = 1,000 " in text
    for name, key in (("trig", "trig"), ("positive", "pos")):
        d, y = _trace(fig, name)
        for dim, which in ((8, "small"), (1000, "big")):
            assert dim in d, f"the chart has no point at d = {dim}"
            assert 100 * 10 ** y[list(d).index(dim)] == pytest.approx(f[f"{key}_{which}"], rel=1e-12)
            assert f"{f[f'{key}_{which}']:.2f} %" in text


def test_trig_vs_positive_compares_mirror_points_read_off_the_chart():
    """The two curves are mirror images: the step compares θ with π − θ (the chart's values there, equal), and its
    worst case is the chart's maximum."""
    fig, text, f = LESSONS["trig-vs-positive"].steps[0].figure_and_text()
    assert f["theta_pi"] + f["theta_0"] == pytest.approx(math.pi, abs=1e-12)
    th, trig = _trace(fig, "trig")
    _, pos = _trace(fig, "positive (++)")
    at = {name: 100 * 10 ** ys[int(np.argmin(np.abs(th - f[theta])))]
          for name, ys, theta in (("trig_pi", trig, "theta_pi"), ("pos_0", pos, "theta_0"),
                                  ("pos_pi", pos, "theta_pi"), ("trig_0", trig, "theta_0"))}
    assert at["trig_pi"] == pytest.approx(f["trig_pi"], rel=1e-12)
    assert at["pos_0"] == pytest.approx(f["pos_0"], rel=1e-12)
    assert at["trig_pi"] == pytest.approx(at["pos_0"], rel=1e-9)  # mirror points: the same number
    assert at["pos_pi"] == pytest.approx(at["trig_0"], rel=1e-9)
    assert f["worst_trig"] == pytest.approx(100 * 10 ** np.nanmax(trig), rel=1e-12)
    assert f"{f['trig_pi']:,.0f} %" in text and text.count(f"{f['pos_0']:,.0f} %") == 2
    assert f"{f['worst_trig']:,.0f} %" in text


def test_hybrid_choices_are_no_empty_interval_and_n_is_log_scaled():
    step = LESSONS["hybrids"].steps[0]
    _, _, f = step.figure_and_text()
    assert f["worst_trig"] == pytest.approx(f["worst_pos"], rel=1e-9)  # both base estimators share one worst case
    assert not any("between" in c for c in step.choices)  # so "between the two" would be an empty interval
    n = np.asarray(step.options, dtype=float)
    assert n[0] == 1 and n[-1] == step.control.high and np.allclose(n[1:] / n[:-1], 2.0)  # evenly spaced in log n
    assert step.control.default in step.options


def test_trig_vs_positive_numbers_are_the_closed_form_and_in_the_figure():
    fig, _, f = LESSONS["trig-vs-positive"].steps[0].figure_and_text()
    assert f["trig_pi"] == pytest.approx(_percent(float(hy.log_eps_trig_tr(f["theta_pi"], 1.5, 10))), rel=1e-9)
    assert f["pos_0"] == pytest.approx(_percent(float(hy.log_eps_pos_tr(f["theta_0"], 1.5, 10))), rel=1e-9)
    assert f["trig_pi"] > 100 > f["pos_pi"] and f["pos_0"] > 100 > f["trig_0"]  # each fails where the other is fine
    trig = next(t for t in fig.data if t.name == "trig")
    i = int(np.argmin(np.abs(np.asarray(trig.x) - f["theta_pi"])))
    assert 100 * 10 ** trig.y[i] == pytest.approx(f["trig_pi"], rel=1e-12)  # the figure shows the stated number


def test_hybrid_caps_the_worst_case_and_more_lambda_features_help():
    _, _, f = LESSONS["hybrids"].steps[0].figure_and_text()
    theta = np.linspace(0, np.pi, 181)
    hybrid = hy.log_eps_angular_hybrid_tr(theta, 1.5, 10, 8)
    assert f["worst_hybrid"] == pytest.approx(_percent(float(np.max(hybrid))), rel=1e-9)
    assert f["worst_hybrid"] < min(f["worst_trig"], f["worst_pos"])  # the answer the step reveals
    worst = [LESSONS["hybrids"].steps[0].figure_and_text(n)[2]["worst_hybrid"] for n in (1, 8, 64)]
    assert worst[0] > worst[1] > worst[2]  # the try text: more λ-features bring it down


def test_coupling_numbers_are_simrf_ratios():
    _, _, f = LESSONS["coupling"].steps[0].figure_and_text()
    assert f["simplex"] == pytest.approx(float(mse_ratio_vs_iid("positive", 0.01, 16, 16, "simplex")), rel=1e-12)
    assert f["simplex"] < 0.1 < f["ortho"] < 1  # simplex drops the MSE many-fold at small v
    big = LESSONS["coupling"].steps[0].figure_and_text(64)[2]
    assert big["simplex"] < f["simplex"]  # "the simplex gain grows with d"


def test_gerf_optimum_is_negative_and_beats_zero():
    _, _, f = LESSONS["gerf-a"].steps[0].figure_and_text()
    assert f["a_star"] == pytest.approx(float(A_star(2.0, 8)), rel=1e-12)  # Z = |x + y|² = 2r² at θ = π/2, r = 1
    assert f["a_star"] < 0 and f["gain"] > 1
    gains = [LESSONS["gerf-a"].steps[0].figure_and_text(r)[2]["gain"] for r in (0.5, 1.0, 1.5)]
    assert gains[0] < gains[1] < gains[2]  # "it grows with r"


def test_sketch_variance_is_symmetric_about_one_half():
    _, _, f = LESSONS["sketch-q"].steps[0].figure_and_text()
    assert f["v25"] == pytest.approx(f["v75"], rel=1e-10) and f["v0"] == pytest.approx(f["v1"], rel=1e-10)
    from rfviz.geometry import embed_pair

    for theta in (0.3, 0.79, 1.4):  # DP Theorem 2: complex (q = ½) wins iff (x·y)² > Σ x_k² y_k²
        f = LESSONS["sketch-q"].steps[0].figure_and_text(theta)[2]
        x, y = embed_pair(1.0, theta, 8, "flat")
        complex_wins = float(x @ y) ** 2 > float(np.sum(x * x * y * y))
        assert (f["v50"] < f["v1"]) == complex_wins == f["best"].startswith("q = ½"), theta


def test_monte_carlo_lies_flags_the_heavy_tail():
    _, text, f = LESSONS["monte-carlo-lies"].steps[0].figure_and_text()
    assert f["closed"] - f["sampled"] > 5  # far below: the step's answer
    assert f["unreliable"] >= 4 and "unreliable" in text


@pytest.mark.integration  # a Streamlit AppTest run
def test_home_story_one_says_what_its_chart_shows():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    theta = np.linspace(0, np.pi, 181)
    for log_eps in (hy.log_eps_trig_tr(theta, 1.5, 10), hy.log_eps_angular_hybrid_tr(theta, 1.5, 10, 8)):
        assert f"{_percent(float(np.max(log_eps))):,.0f} %" in text
    home = json.loads(at.get("plotly_chart")[0].proto.spec)  # Home's chart, as the browser gets it
    home_worst = 100 * 10 ** np.nanmax(_trace(home, "trig")[1])
    for slug in ("trig-vs-positive", "hybrids"):
        lesson_worst = LESSONS[slug].steps[0].figure_and_text()[2]["worst_trig"]
        assert lesson_worst == pytest.approx(home_worst, rel=1e-9) and f"{lesson_worst:,.0f} %" in text
    assert "take the best of both" not in text and "caps the worst case" in text
    story1 = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert "relative error" in story1["layout"]["yaxis"]["title"]["text"]
    links = [(lk.proto.page, lk.proto.query_string) for lk in at.get("page_link")]
    assert sum(p == "learn" for p, _ in links) >= len(LESSONS)  # Home links to every lesson


# ------------------------------------------------------------------------------------------------ the page
@pytest.mark.slow
@pytest.mark.parametrize("slug,index", _steps())
def test_page_walks_every_step(slug, index):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app_pages" / "learn.py"), default_timeout=120)
    at.query_params["lesson"] = slug
    at.query_params["step"] = str(index + 1)
    at.run()
    assert not at.exception and not at.error
    assert not at.get("plotly_chart"), "the figure must wait for the prediction"
    step = LESSONS[slug].steps[index]
    wrong = next(i for i in range(len(step.choices)) if i != step.answer)
    at.radio[0].set_value(step.choices[wrong]).run()
    assert not at.exception and at.warning and step.choices[step.answer] in at.warning[0].value
    assert len(at.get("plotly_chart")) == 1
    before = at.get("plotly_chart")[0].proto.spec
    at.radio[0].set_value(step.choices[step.answer]).run()
    assert at.success and not at.exception
    control = at.select_slider[0] if step.options else at.slider[0]
    options = list(step.options) if step.options else None
    new = options[-1] if options else (step.control.high if step.control.high != step.control.default
                                       else step.control.low)
    control.set_value(new).run()
    assert not at.exception and not at.error
    assert at.get("plotly_chart")[0].proto.spec != before, "the try control did not change the figure"
    if at.button:
        at.button(key="learn.next").click().run()
        assert not at.exception
        assert (at.query_params["lesson"], at.query_params["step"]) != (slug, str(index + 1))


@pytest.mark.slow
def test_shared_url_opens_the_step_and_bad_urls_fall_back():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app_pages" / "learn.py"), default_timeout=120)
    at.query_params["lesson"] = "kernel-average"
    at.query_params["step"] = "2"
    at.run()
    assert "Higher dimension" in " ".join(s.value for s in at.subheader)
    bad = AppTest.from_file(str(ROOT / "app_pages" / "learn.py"), default_timeout=120)
    bad.query_params["lesson"] = "x" * 500
    bad.query_params["step"] = "99"
    bad.run()
    assert not bad.exception
    assert any(re.search("URL parameter (lesson|step)", e.value) for e in bad.error)


def test_the_guides_example_address_is_the_step_it_names():
    """docs/guide/learn.md's example `?lesson=<slug>&step=<n>` "is lesson L, step n": that lesson has that step, and
    every slug the guide lists is a lesson, in teaching order."""
    text = (ROOT / "docs" / "guide" / "learn.md").read_text()
    found = re.search(r"`\?lesson=([a-z0-9-]+)&step=(\d+)` is lesson (\d+),\s+step (\d+)", text)
    assert found, "the guide gives no example address"
    slug, step, number, step_again = found.groups()
    assert list(LESSONS).index(slug) + 1 == int(number) and step == step_again
    assert int(step) <= len(LESSONS[slug].steps)
    listed = re.search(r"in order: (`[^.]+`)", text).group(1)
    assert re.findall(r"`([a-z0-9-]+)`", listed) == list(LESSONS)
