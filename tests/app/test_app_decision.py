"""The faces of the decision core in the app: the Your-data page's defaults, and the ε view of the MSE explorer."""

from __future__ import annotations

import pathlib

import pytest

import rfviz
from rfviz.compute import decision
from rfviz.compute.decision import Question, decide

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_features_view_hides_what_it_does_not_use_and_slices_m_of_eps():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app_pages" / "mse_explorer.py"),
                           default_timeout=120)
    at.query_params.update({"view": "features", "kernel": "softmax", "est": "trig", "trig.coupling": "orthogonal",
                            "d": "6", "eps": "0.0604444", "r": "0.8", "theta": "1.2", "res": "10"})
    at.run()
    assert not at.exception, at.exception
    keys = {w.key for w in at.number_input} | {w.key for w in at.selectbox} | {w.key for w in at.toggle}
    assert "mse_explorer.trig.m" not in keys and "mse_explorer.quantity" not in keys and "mse_explorer.mc" not in keys
    text = " ".join(c.value for c in at.caption)
    assert "m = 30" in text  # the exact answer at (0.8, 1.2), as the CLI gives it


@pytest.mark.slow
def test_app_defaults_and_the_core_defaults_give_identical_numbers():
    """The Your-data page at its defaults (wine, task gram, length 128) and the decision core fed by
    load_task_data's defaults (what the CLI and the API call) give the same first line, to the last digit."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app_pages" / "data.py"),
                           default_timeout=300)
    at.query_params.update({"source": "wine"})
    at.run()
    assert not at.exception, at.exception
    page = at.dataframe[1].value.iloc[0]
    core = decide(Question(decision.load_task_data("wine", "gram"), task="gram", amount=128))
    assert page["error"] == core.first.error and page["length"] == core.first.length
    assert page["estimator"] == rfviz.compute.catalog.title_of(core.first.estimator)


@pytest.mark.slow
def test_page_cli_and_api_give_the_same_first_line_for_attention():
    """The Your-data page (task attention, length 128 on wine, its defaults) and rfviz.rank_estimators with its
    defaults (what the CLI calls): the same first estimator, length and error."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app_pages" / "data.py"), default_timeout=600)
    at.query_params.update({"source": "wine", "task": "attention", "length": "128"})
    at.run()
    assert not at.exception, at.exception
    page = at.dataframe[1].value.iloc[0]
    api = rfviz.rank_estimators("wine", task="attention", length=128)
    assert page["error"] == api.ranking[0].error and page["length"] == api.ranking[0].length
    assert page["estimator"] == rfviz.compute.catalog.title_of(api.ranking[0].estimator)
