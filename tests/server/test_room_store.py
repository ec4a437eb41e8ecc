"""The room store (rfviz.server.room): a real SQLite file in a temporary folder, written by this process and by two
other processes at once; no mocks."""

from __future__ import annotations

import multiprocessing
import sqlite3
import stat

import pytest

from rfviz.params import ParameterError
from rfviz.server.room import MAX_ANSWERS_PER_STEP, Room, key_matches, new_key, new_session_id

WAIT = 60  # seconds: every wait on another process is bounded


def _answer_many(path: str, prefix: str, count: int, barrier) -> None:
    """A second process: wait for the other writer, then record ``count`` answers of its own sessions."""
    room = Room(path)
    barrier.wait(WAIT)
    for i in range(count):
        session = f"{prefix}{i:031x}"[:32]
        assert room.record("hybrids", 1, session, i % 3)


@pytest.fixture
def room(tmp_path):
    return Room(tmp_path / "room.sqlite3")


def test_the_file_is_private_and_in_wal_mode(room):
    assert stat.S_IMODE(room.path.stat().st_mode) == 0o600
    with sqlite3.connect(room.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_one_answer_per_session_the_last_one_counts(room):
    a, b = new_session_id(), new_session_id()
    assert room.record("hybrids", 1, a, 0) and room.record("hybrids", 1, b, 0)
    assert room.counts("hybrids", 1, 3) == [2, 0, 0]
    assert room.record("hybrids", 1, a, 2)  # a changes its mind: replaced, not added
    assert room.counts("hybrids", 1, 3) == [1, 0, 1]
    assert room.counts("hybrids", 2, 3) == [0, 0, 0]  # another step: its own answers
    assert room.counts("coupling", 1, 3) == [0, 0, 0]


def test_answers_per_step_are_capped(tmp_path):
    small = Room(tmp_path / "small.sqlite3", max_answers=3)
    sessions = [new_session_id() for _ in range(5)]
    stored = [small.record("gerf-a", 1, s, 1) for s in sessions]
    assert stored == [True, True, True, False, False]
    assert small.counts("gerf-a", 1, 3) == [0, 3, 0]
    assert small.record("gerf-a", 1, sessions[0], 2)  # a stored session may still change its answer
    assert small.record("gerf-a", 2, sessions[4], 0)  # the cap is per step
    assert MAX_ANSWERS_PER_STEP >= 100  # a class of 100 fits


def test_nothing_about_a_student_but_a_random_session_id(room):
    with sqlite3.connect(room.path) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(answers)")]
    assert columns == ["lesson", "step", "session", "choice", "at"]
    ids = {new_session_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) == 32 for i in ids)
    with pytest.raises(ParameterError, match="session must be 32 hexadecimal digits"):
        room.record("hybrids", 1, "alice@example.org", 0)


@pytest.mark.parametrize("args, name", [(("Hybrids!", 1, 0), "lesson"), (("hybrids", 0, 0), "step"),
                                        (("hybrids", 1, 99), "choice"), (("x" * 200, 1, 0), "lesson")])
def test_bad_input_names_the_parameter(room, args, name):
    lesson, step, choice = args
    with pytest.raises(ParameterError, match=f"^{name} must"):
        room.record(lesson, step, new_session_id(), choice)


def test_the_class_state_follows_the_teacher(room):
    assert room.state().lesson is None and room.state().version == 0
    opened = room.open_step("coupling", 1)
    assert (opened.lesson, opened.step, opened.revealed) == ("coupling", 1, False)
    shown = room.reveal("coupling", 1)
    assert shown.revealed and shown.version > opened.version
    moved = room.open_step("hybrids", 1)
    assert not moved.revealed and moved.version > shown.version
    assert Room(room.path).state() == moved  # another connection (another process's view) sees the same


@pytest.mark.integration
def test_two_processes_write_at_once(tmp_path):
    path = str(tmp_path / "room.sqlite3")
    Room(path)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_answer_many, args=(path, prefix, 150, barrier)) for prefix in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(WAIT)
    assert [p.exitcode for p in procs] == [0, 0], "a writer failed or did not finish in time"
    assert sum(Room(path).counts("hybrids", 1, 3)) == 300


def test_the_teachers_key():
    key = new_key()
    assert len(key) >= 43 and key != new_key()  # 256 random bits, fresh every time
    assert key_matches(key, key)
    assert not key_matches(key[:-1] + ("A" if key[-1] != "A" else "B"), key)
    assert not key_matches(None, key) and not key_matches("", key) and not key_matches(["x"], key)
    assert not key_matches("", "") and not key_matches("anything", None)  # no key set: nothing opens the page
    assert not key_matches("é" * 43, key)
