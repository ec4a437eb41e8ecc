"""Page runs of one app process served in order of arrival: the server's run queue.

Streamlit runs each session's script in a thread of its own, and Python's threads share one interpreter lock, so
when a whole class moves a slider at the same moment every run advances a little at a time and every student gets
the chart at about the same late moment: the time of all the runs together. Served one after another in order of
arrival, the runs end one after another instead: the first student waits one run, the median student half of the
class's runs, the last as long as before. No run waits longer than it would have and the CPU time is the same.

A run keeps its exclusive turn for at most ``RunQueue.exclusive_seconds`` (0.25 s): a long run (a large closed-form
grid, a data set's Gram) then goes on beside the next ones, as every run did before, so one long run never holds a
quick one up by more than that. A run that waits for something else (a Monte-Carlo job in the server's pool) gives
its turn up while it waits (``RunQueue.step_aside``). This module never imports streamlit.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

EXCLUSIVE_SECONDS = 0.25
"""How long one page run may hold its turn alone before the next run in the queue starts beside it."""


class RunQueue:
    """First come, first served for the page runs of one process, each alone for at most ``exclusive_seconds``.

    Parameters
    ----------
    exclusive_seconds : float
        How long a run holds its turn alone; after it, the next run starts beside it.

    Examples
    --------
    >>> queue = RunQueue()
    >>> with queue.turn():
    ...     queue.holding()
    True
    >>> queue.holding()
    False
    """

    def __init__(self, exclusive_seconds: float = EXCLUSIVE_SECONDS) -> None:
        self.exclusive_seconds = float(exclusive_seconds)
        self._cond = threading.Condition()
        self._waiting: deque[object] = deque()  # tickets, in order of arrival
        self._holder: object | None = None  # the ticket whose run is alone now
        self._since = 0.0  # when it got its turn (time.monotonic)
        self._local = threading.local()  # this thread's ticket while it runs

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Wait for this run's turn (behind the runs that came first, each for at most ``exclusive_seconds``), run
        the body, then hand the turn to the next. Re-entrant in the same thread (an inner ``turn`` is the outer).

        Yields
        ------
        None
            While the body runs (alone until it steps aside or runs past ``exclusive_seconds`` with others waiting).
        """
        if getattr(self._local, "ticket", None) is not None:
            yield
            return
        ticket = object()
        with self._cond:
            self._waiting.append(ticket)
            try:
                self._wait_for_front(ticket)
            finally:
                self._waiting.remove(ticket)
                self._cond.notify_all()  # a waiter that leaves (taking its turn or interrupted) wakes the new first
            self._holder, self._since = ticket, time.monotonic()  # (the others, woken above, now time their wait)
        self._local.ticket = ticket
        try:
            yield
        finally:
            self._local.ticket = None
            self._release(ticket)

    def _wait_for_front(self, ticket: object) -> None:
        """Block (holding the condition's lock) until ``ticket`` is first in the queue and no run is alone."""
        while not (self._holder is None and self._waiting[0] is ticket):
            if self._holder is None:
                self._cond.wait()  # the first in the queue takes the turn and wakes everyone
                continue
            left = self._since + self.exclusive_seconds - time.monotonic()
            if left <= 0:  # a long run: it goes on beside the next ones
                self._holder = None
                self._cond.notify_all()
            else:
                self._cond.wait(left)

    def _release(self, ticket: object) -> None:
        with self._cond:
            if self._holder is ticket:
                self._holder = None
                self._cond.notify_all()

    def step_aside(self) -> None:
        """This thread's run is about to wait for something else: let the next run in now (the waiting run goes on
        beside the others when its wait ends). Does nothing outside a turn.

        Examples
        --------
        >>> queue = RunQueue()
        >>> with queue.turn():
        ...     queue.step_aside()
        ...     queue.holding()
        False
        """
        ticket = getattr(self._local, "ticket", None)
        if ticket is not None:
            self._release(ticket)

    def holding(self) -> bool:
        """Whether this thread's run is alone now (it holds the turn).

        Returns
        -------
        bool
            True inside ``turn`` until the run stepped aside or ran past ``exclusive_seconds`` with others waiting.
        """
        ticket = getattr(self._local, "ticket", None)
        with self._cond:
            return ticket is not None and self._holder is ticket


RUNS = RunQueue()
"""The app process's run queue (``app.py`` takes a turn for every page run)."""
