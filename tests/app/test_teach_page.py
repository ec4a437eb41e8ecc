"""The teacher's page (/teach?key=K) and the Learn page in a classroom, through Streamlit's AppTest with a real room
store (a SQLite file in a temporary folder, RFVIZ_CLASSROOM_DB) and a fresh key (RFVIZ_TEACHER_KEY)."""

from __future__ import annotations

import json
import pathlib

import pytest
from streamlit.testing.v1 import AppTest

from rfviz.lessons import LESSONS
from rfviz.server.room import ENV_DB, ENV_KEY, Room, new_key, new_session_id

pytestmark = pytest.mark.integration  # subprocesses, AppTest runs or sockets: not the unit tier

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEACH = str(ROOT / "app_pages" / "teach.py")
LEARN = str(ROOT / "app_pages" / "learn.py")


@pytest.fixture
def room(tmp_path, monkeypatch):
    key = new_key()
    monkeypatch.setenv(ENV_DB, str(tmp_path / "room.sqlite3"))
    monkeypatch.setenv(ENV_KEY, key)
    return Room(tmp_path / "room.sqlite3"), key


def _teach(key: str | None) -> AppTest:
    at = AppTest.from_file(TEACH, default_timeout=120)
    if key is not None:
        at.query_params["key"] = key
    return at.run()


def _text(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "info", "caption", "subheader", "title", "error", "warning", "success")
             for e in at.get(kind) if isinstance(getattr(e, "value", None), str)]
    return " ".join(parts)


def _bars(at: AppTest) -> list[int]:
    return list(json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["x"])


@pytest.mark.parametrize("given", [None, "", "wrong", "x" * 500, "KEY-with-one-letter-changed"])
def test_without_the_key_nothing_of_the_class(room, given):
    r, key = room
    for _ in range(3):
        r.record("kernel-average", 1, new_session_id(), 1)
    r.open_step("kernel-average", 1)
    if given == "KEY-with-one-letter-changed":
        given = key[:-1] + ("A" if key[-1] != "A" else "B")
    at = _teach(given)
    assert not at.exception
    assert not at.get("metric") and not at.get("plotly_chart") and not at.button and not at.sidebar.selectbox
    assert not at.markdown  # nothing but the title and the one sentence
    assert [i.value for i in at.info] == [
        "This page is the teacher's: it needs the teacher's link (…/teach?key=…) that `./run classroom` or "
        "`./run app` printed when it started."]
    assert "kernel" not in _text(at).lower() and key not in _text(at)


def test_no_key_set_opens_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_DB, str(tmp_path / "room.sqlite3"))
    monkeypatch.delenv(ENV_KEY, raising=False)
    at = _teach("")
    assert not at.exception and not at.get("metric") and at.info


def test_with_the_key_the_count_and_the_spread(room):
    r, key = room
    step = LESSONS["hybrids"].steps[0]
    choices = [0, 0, 1, 2, 0]
    for c in choices:
        r.record("hybrids", 1, new_session_id(), c)
    r.open_step("hybrids", 1)
    at = _teach(key)
    assert not at.exception
    assert at.sidebar.selectbox(key="teach.lesson").value == "hybrids"  # starts where the class is
    assert [m.label for m in at.get("metric")] == ["answered"]
    assert at.get("metric")[0].value == str(len(choices))
    assert _bars(at) == [choices.count(i) for i in range(len(step.choices))]
    assert "The class is on** lesson 3" in _text(at) or "The class is on lesson 3" in _text(at)
    r.record("hybrids", 1, new_session_id(), 2)  # another student answers: the next refresh counts it
    at.run()
    assert at.get("metric")[0].value == str(len(choices) + 1)


def test_the_teacher_moves_the_class_and_reveals(room):
    r, key = room
    at = _teach(key)
    at.sidebar.selectbox(key="teach.lesson").set_value("coupling").run()
    at.button(key="teach.open").click().run()
    assert not at.exception
    now = r.state()
    assert (now.lesson, now.step, now.revealed) == ("coupling", 1, False)
    at.button(key="teach.reveal").click().run()
    assert r.state().revealed and r.state().version == now.version + 1


def _learn(slug: str | None = None) -> AppTest:
    at = AppTest.from_file(LEARN, default_timeout=120)
    if slug is not None:
        at.query_params["lesson"] = slug
        at.query_params["step"] = "1"
    return at.run()


def test_a_students_prediction_is_counted_once(room):
    r, key = room
    step = LESSONS["trig-vs-positive"].steps[0]
    at = _learn("trig-vs-positive")
    at.radio[0].set_value(step.choices[1]).run()
    assert r.counts("trig-vs-positive", 1, len(step.choices)) == [0, 1, 0]
    at.radio[0].set_value(step.choices[0]).run()  # a change of mind replaces the answer
    assert r.counts("trig-vs-positive", 1, len(step.choices)) == [1, 0, 0]
    assert key not in _text(at) and key not in json.dumps(dict(at.query_params))  # the key reaches no student
    assert not any("room store" in m.value or "How often" in m.value for m in at.markdown)  # no stray strings


def test_students_follow_the_teacher_and_see_the_reveal(room):
    r, _ = room
    at = _learn("kernel-average")
    assert "Four times the features" in _text(at)
    r.open_step("trig-vs-positive", 1)
    at.run()
    assert at.query_params["lesson"] == "trig-vs-positive" and "Opposite directions" in _text(at)
    assert not at.get("plotly_chart")  # not revealed yet: the student predicts first
    r.reveal("trig-vs-positive", 1)
    at.run()
    assert not at.exception and len(at.get("plotly_chart")) == 1  # revealed to everyone, predicted or not
    at.sidebar.selectbox(key="learn.lesson").set_value("gerf-a").run()  # the student may look elsewhere
    assert at.query_params["lesson"] == "gerf-a"  # until the teacher moves the class again


def test_a_wrong_lesson_slug_is_answered_in_a_sentence_naming_the_lessons(monkeypatch):
    monkeypatch.delenv(ENV_DB, raising=False)
    at = _learn("hybrid")  # a near miss of "hybrids"
    assert not at.exception
    errors = " ".join(e.value for e in at.error).replace("\\", "")  # Markdown escapes
    assert "lesson must be one of " + ", ".join(LESSONS) in errors and "'hybrid'" in errors
    assert all(f"`{slug}`" in _text(at) for slug in LESSONS)  # the slugs are listed on the page


def test_the_teachers_page_is_hidden_from_the_navigation():
    source = (ROOT / "app.py").read_text()
    assert 'url_path="teach", visibility="hidden"' in source
    from app_pages import HIDDEN_PAGES, PAGES

    assert "teach" not in {p.url_path for p in PAGES}  # not among the views Home and the navigation list
    assert "teach" in HIDDEN_PAGES
