"""The room store: what the app processes of one classroom share, in one SQLite file (standard library ``sqlite3``,
WAL mode, so readers never wait for the writer and two processes may write at once).

It holds two things and nothing else:

* the **predictions** per lesson step: one row per (lesson, step, session), the index of the choice made. A
  student is known only by a random session id (:func:`new_session_id`, made by the Learn page for its browser
  tab): no name, no address, no cookie. A session that changes its mind replaces its row (one answer per
  session), and a step holds at most :data:`MAX_ANSWERS_PER_STEP` answers (a further session's answer is refused
  and not stored);
* the **class state**: the lesson and step the teacher has opened, whether its answer is revealed, and a version
  number that every change of the teacher's raises (a Learn page follows the class when the version it last saw
  changes).

``./run classroom`` creates the file in the room's private temporary folder (removed with the room) and hands
its path to every app process in ``RFVIZ_CLASSROOM_DB``; ``./run app`` does the same in a temporary folder of its
own. The teacher's key (``RFVIZ_TEACHER_KEY``, :func:`new_key`: 256 random bits) is compared in constant time
(:func:`key_matches`).

Examples
--------
>>> import pathlib, tempfile
>>> room = Room(pathlib.Path(tempfile.mkdtemp()) / "room.sqlite3")
>>> room.record("hybrids", 1, new_session_id(), 0)
True
>>> room.counts("hybrids", 1, 3)
[1, 0, 0]
"""

from __future__ import annotations

import hmac
import os
import pathlib
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass

from ..params import Param, ParameterError

ENV_DB = "RFVIZ_CLASSROOM_DB"
"""The environment variable holding the room's SQLite file (set by ``./run classroom`` and ``./run app``)."""
ENV_KEY = "RFVIZ_TEACHER_KEY"
"""The environment variable holding the teacher's key (``/teach?key=…``)."""

MAX_ANSWERS_PER_STEP = 1000
"""At most this many sessions' answers are kept per lesson step (a class is far smaller; the cap bounds the file)."""
MAX_CHOICES = 16
STUDENT_POLL_SECONDS = 3.0
"""How often a student's Learn page in a class asks the store whether the teacher moved or revealed (its fragment's
``run_every``): the class follows within this many seconds. At 2 s, 100 students' polls were 50 reruns a second of
the server's 2 cores, and the slider's median with the teacher's page open was 1.13 s (2026-11-28, idle)."""
TEACHER_REFRESH_SECONDS = 1.0
"""How often the open teacher's page redraws the counts (its fragment's ``run_every``)."""
BUSY_SECONDS = 5.0
"""How long a write waits for another process's write to finish before it gives up (sqlite3's busy timeout)."""

STEP_PARAM = Param("step", 1, "int", "a lesson's step (1-based)", low=1, high=99)
CHOICE_PARAM = Param("choice", 0, "int", "the index of the predicted choice", low=0, high=MAX_CHOICES - 1)
_SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_SESSION = re.compile(r"[0-9a-f]{32}")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    lesson TEXT NOT NULL, step INTEGER NOT NULL, session TEXT NOT NULL, choice INTEGER NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (lesson, step, session)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS class (
    id INTEGER PRIMARY KEY CHECK (id = 1), lesson TEXT, step INTEGER, revealed INTEGER NOT NULL,
    version INTEGER NOT NULL, at REAL NOT NULL);
INSERT OR IGNORE INTO class VALUES (1, NULL, NULL, 0, 0, 0);
"""


@dataclass(frozen=True)
class ClassState:
    """Where the teacher has put the class.

    Parameters
    ----------
    lesson : str or None
        The lesson's slug (None before the teacher opened one).
    step : int or None
        The step (from 1; None before the teacher opened one).
    revealed : bool
        Whether the step's answer is shown to everyone.
    version : int
        Raised by every change (students' pages follow it).
    """

    lesson: str | None
    step: int | None
    revealed: bool
    version: int


def new_key() -> str:
    """A fresh teacher's key: 32 random bytes (256 bits), URL-safe text.

    Returns
    -------
    str
        43 characters of ``[A-Za-z0-9_-]``.

    Examples
    --------
    >>> len(new_key()) >= 43
    True
    """
    return secrets.token_urlsafe(32)


def new_session_id() -> str:
    """A random, anonymous id for one student's browser tab (128 bits, hexadecimal).

    Returns
    -------
    str
        32 hexadecimal digits.

    Examples
    --------
    >>> len(new_session_id())
    32
    """
    return secrets.token_hex(16)


def key_matches(given: object, expected: str | None) -> bool:
    """Whether ``given`` (from a URL) is the teacher's key, compared in constant time (``hmac.compare_digest``).

    Parameters
    ----------
    given : object
        The key the visitor sent (anything: a missing parameter is None).
    expected : str or None
        The room's key; None or empty means no key was set, and then nothing matches.

    Returns
    -------
    bool

    Examples
    --------
    >>> key_matches("abc", "abc"), key_matches("abd", "abc"), key_matches(None, "abc"), key_matches("", "")
    (True, False, False, False)
    """
    if not expected or not isinstance(given, str):
        return False
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))


def check_lesson(lesson: object) -> str:
    """``lesson`` if it is a lesson slug (lower-case letters, digits and dashes, at most 64 characters).

    Parameters
    ----------
    lesson : object
        What the URL or the page gave as the lesson.

    Returns
    -------
    str
        The slug.

    Raises
    ------
    ParameterError
        When it is not a slug.

    Examples
    --------
    >>> check_lesson("hybrids")
    'hybrids'
    """
    if not isinstance(lesson, str) or not _SLUG.fullmatch(lesson):
        raise ParameterError(f"lesson must be a slug of lower-case letters, digits and dashes (at most 64 "
                             f"characters), got {str(lesson)[:40]!r}")
    return lesson


class Room:
    """One classroom's shared store (a SQLite file; every method is one short transaction).

    Parameters
    ----------
    path : str or pathlib.Path
        The SQLite file (created, with its tables, if missing; its folder must exist).
    max_answers : int
        The cap on answers per lesson step (default :data:`MAX_ANSWERS_PER_STEP`).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> room = Room(pathlib.Path(tempfile.mkdtemp()) / "room.sqlite3")
    >>> room.open_step("coupling", 1).step
    1
    """

    def __init__(self, path: str | os.PathLike, max_answers: int = MAX_ANSWERS_PER_STEP) -> None:
        self.path = pathlib.Path(path)
        self.max_answers = int(max_answers)
        self._local = threading.local()  # one connection per thread (sqlite3 connections are not shared)
        self._db().executescript(_SCHEMA)  # idempotent: every process of the room may run it

    @classmethod
    def from_environment(cls) -> Room | None:
        """The room named by ``RFVIZ_CLASSROOM_DB``, or None when the app runs without one.

        Examples
        --------
        >>> import os
        >>> os.environ.pop(ENV_DB, None) and None
        >>> Room.from_environment() is None
        True
        """
        path = os.environ.get(ENV_DB)
        return cls(path) if path else None

    # ------------------------------------------------------------------ connections
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            fresh = not self.path.exists()
            db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, isolation_level=None)
            if fresh:
                os.chmod(self.path, 0o600)  # only the room's user reads the answers
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def _write(self) -> _Transaction:
        return _Transaction(self._db())

    # ------------------------------------------------------------------ predictions
    def record(self, lesson: str, step: int, session: str, choice: int) -> bool:
        """Store ``session``'s prediction for ``lesson`` step ``step`` (replacing its earlier one).

        Parameters
        ----------
        lesson : str
            The lesson's slug.
        step : int
            The step, 1-based.
        session : str
            The student's random session id (:func:`new_session_id`).
        choice : int
            The index of the chosen answer.

        Returns
        -------
        bool
            True if stored; False if the step already holds ``max_answers`` other sessions' answers.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> room = Room(pathlib.Path(tempfile.mkdtemp()) / "r.sqlite3", max_answers=1)
        >>> room.record("a", 1, "0" * 32, 1), room.record("a", 1, "1" * 32, 0), room.record("a", 1, "0" * 32, 2)
        (True, False, True)
        """
        lesson, step, choice = check_lesson(lesson), STEP_PARAM.validate(step), CHOICE_PARAM.validate(choice)
        if not isinstance(session, str) or not _SESSION.fullmatch(session):
            raise ParameterError("session must be 32 hexadecimal digits (rfviz.server.room.new_session_id)")
        with self._write() as db:
            known = db.execute("SELECT 1 FROM answers WHERE lesson = ? AND step = ? AND session = ?",
                               (lesson, step, session)).fetchone()
            if known is None:
                (count,) = db.execute("SELECT COUNT(*) FROM answers WHERE lesson = ? AND step = ?",
                                      (lesson, step)).fetchone()
                if count >= self.max_answers:
                    return False
            db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)",
                       (lesson, step, session, choice, time.time()))
        return True

    def counts(self, lesson: str, step: int, choices: int) -> list[int]:
        """How many sessions predicted each of the step's ``choices`` (a list of that length).

        Parameters
        ----------
        lesson : str
            The lesson's slug.
        step : int
            The step (from 1).
        choices : int
            How many choices the step's question has.

        Returns
        -------
        list of int
            Sessions per choice.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> Room(pathlib.Path(tempfile.mkdtemp()) / "r.sqlite3").counts("a", 1, 2)
        [0, 0]
        """
        lesson, step = check_lesson(lesson), STEP_PARAM.validate(step)
        out = [0] * int(choices)
        rows = self._db().execute("SELECT choice, COUNT(*) FROM answers WHERE lesson = ? AND step = ? GROUP BY "
                                  "choice", (lesson, step)).fetchall()
        for choice, count in rows:
            if 0 <= choice < len(out):
                out[choice] = count
        return out

    # ------------------------------------------------------------------ the class
    def state(self) -> ClassState:
        """Where the teacher has put the class.

        Returns
        -------
        ClassState
            The class's lesson, step, reveal and version.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> Room(pathlib.Path(tempfile.mkdtemp()) / "r.sqlite3").state().version
        0
        """
        lesson, step, revealed, version = self._db().execute(
            "SELECT lesson, step, revealed, version FROM class WHERE id = 1").fetchone()
        return ClassState(lesson, step, bool(revealed), version)

    def open_step(self, lesson: str, step: int) -> ClassState:
        """Move the class to ``lesson`` step ``step``, its answer hidden; return the new state.

        Parameters
        ----------
        lesson : str
            The lesson's slug.
        step : int
            The step (from 1).

        Returns
        -------
        ClassState
            The new state.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> Room(pathlib.Path(tempfile.mkdtemp()) / "r.sqlite3").open_step("hybrids", 1).revealed
        False
        """
        lesson, step = check_lesson(lesson), STEP_PARAM.validate(step)
        with self._write() as db:
            db.execute("UPDATE class SET lesson = ?, step = ?, revealed = 0, version = version + 1, at = ? "
                       "WHERE id = 1", (lesson, step, time.time()))
        return self.state()

    def reveal(self, lesson: str, step: int) -> ClassState:
        """Reveal ``lesson`` step ``step``'s answer to everyone (the class is moved there if it was elsewhere).

        Parameters
        ----------
        lesson : str
            The lesson's slug.
        step : int
            The step (from 1).

        Returns
        -------
        ClassState
            The new state.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> Room(pathlib.Path(tempfile.mkdtemp()) / "r.sqlite3").reveal("hybrids", 1).revealed
        True
        """
        lesson, step = check_lesson(lesson), STEP_PARAM.validate(step)
        with self._write() as db:
            db.execute("UPDATE class SET lesson = ?, step = ?, revealed = 1, version = version + 1, at = ? "
                       "WHERE id = 1", (lesson, step, time.time()))
        return self.state()


class _Transaction:
    """``with`` a write transaction (``BEGIN IMMEDIATE``: the write lock taken first, so a read-then-write such as
    the cap check cannot race another process), committed on success, rolled back on an exception."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self.db.execute("ROLLBACK" if kind is not None else "COMMIT")
