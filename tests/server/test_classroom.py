"""What keeps a classroom's reruns cheap on one server: page functions wrapped in Streamlit's caches once, and the
shared figures' dicts made once (bench/bench_classroom.py measures the effect)."""

from __future__ import annotations

import pathlib

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from app_pages._ui import _run

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_frozen_figure_gives_the_same_dict_as_the_figure_and_makes_it_once():
    fig = go.Figure(go.Scatter(x=[0, 1, 2], y=[1.0, 0.5, 0.25], name="curve"), layout={"title": "t"})
    frozen = _run._frozen((fig, "text", {"n": 1}))[0]
    assert isinstance(frozen, _run.FrozenFigure)
    assert frozen.to_dict() == fig.to_dict()
    assert frozen.to_dict() is frozen.to_dict()  # made once, then reused


@pytest.mark.integration  # a Streamlit AppTest run
def test_page_functions_are_wrapped_once_and_see_the_current_run():
    """A rerun reuses the cache wrappers of its page (no new st.cache_data per rerun), and a cached page function
    still computes with the current run's globals (the dot-product page's figure table reads them)."""
    at = AppTest.from_file(str(ROOT / "app_pages" / "dot_product.py"), default_timeout=120).run()
    before = dict(_run._WRAPPERS)
    assert any(code.co_filename.endswith("dot_product.py") for _, code in before)
    first = at.get("plotly_chart")[0].proto.spec
    at.number_input(key="dot_product.m").set_value(32).run()
    assert not at.exception
    assert _run._WRAPPERS.keys() == before.keys() and all(_run._WRAPPERS[k] is v for k, v in before.items())
    assert at.get("plotly_chart")[0].proto.spec != first
