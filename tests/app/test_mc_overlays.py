"""Monte-Carlo overlays of the optimal-sampling and dot-product pages: the builders' sampled points agree with the
closed forms (light-tailed settings) and the pages draw them only after "Run Monte Carlo"."""

from __future__ import annotations

import numpy as np
import pytest
from mc_helpers import Z_TOL
from streamlit.testing.v1 import AppTest

from app_pages import BY_PATH
from rfviz.compute import dp as cd
from rfviz.compute import optimal as co
from rfviz.maths.optimal import InputLaw, OptimalSampling

pytestmark = pytest.mark.slow  # Monte-Carlo overlays drawn through AppTest (python -m pytest -m "not slow" skips them)

TIMEOUT = 180


def test_optimal_sampling_points_match_the_closed_form_for_trig() -> None:
    values = np.array([0.5, 1.0])
    pts = co.variance_sweep_mc("sphere", 6, "r", values, mechanisms=("trig",), n=6000, seed=1)
    for optimal, label in ((True, "V* (trig, Ψ*)"), (False, "trig, plain Ψ = Ω")):
        x, mid, _lo, hi = pts[label]
        for v, m_, h in zip(x, mid, hi, strict=True):
            prob = OptimalSampling("trig", InputLaw(kind="sphere", d=6, r=float(v)))
            exact = prob.v_opt() if optimal else prob.v_plain()
            se = (10**h - 10**m_) / 2
            assert abs(10**m_ - exact) < Z_TOL * se, (label, v, 10**m_, exact, se)


def test_dot_product_points_match_the_closed_forms() -> None:
    pts = cd.sketches_vs_m_mc(1.0, 0.9, 4, 2, (4, 16), "flat", trials=3000, seed=2)
    fig = cd.sketches_vs_m(1.0, 0.9, 4, 2, 16, "flat")
    for label, (ms, mse, se) in pts.items():
        line = next(t for t in fig.data if t.name == label)
        for m, v, s in zip(ms, mse, se, strict=True):
            exact = float(np.asarray(line.y, float)[list(line.x).index(m)])
            assert abs(v - exact) < Z_TOL * s, (label, m, v, exact, s)


def _markers(at: AppTest) -> int:
    return sum(1 for c in at.get("plotly_chart") if "sampled" in c.proto.spec)


def test_optimal_sampling_page_runs_monte_carlo_on_request() -> None:
    at = AppTest.from_file(str(BY_PATH["optimal_sampling"].file), default_timeout=TIMEOUT).run()
    at.radio(key="optimal_sampling.view").set_value("variance").run()
    assert not at.exception and _markers(at) == 0
    at.button(key="optimal_sampling.run_mc").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert _markers(at) == 1


def test_dot_product_page_runs_monte_carlo_on_request() -> None:
    at = AppTest.from_file(str(BY_PATH["dot_product"].file), default_timeout=TIMEOUT).run()
    at.radio(key="dot_product.view").set_value("sketches-vs-m").run()
    assert not at.exception and _markers(at) == 0
    at.button(key="dot_product.run_mc").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert _markers(at) == 1
