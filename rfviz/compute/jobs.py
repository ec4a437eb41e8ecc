"""Sharing a server between many visitors: a bounded pool of Monte-Carlo slots and a single-flight shared cache.

* ``JobPool``: at most ``workers`` jobs hold a slot at once, process-wide; the others queue in arrival order and
  are told how many jobs are ahead of them (``on_wait(ahead)``), so a classroom cannot start 30 Monte-Carlo runs on
  a 2-core server at once.
* ``SharedCache``: results keyed by their parameters, shared by every caller (every app session) and computed once:
  a caller asking for a key being computed waits for that computation instead of starting its own (single-flight);
  a failure is handed to the waiting callers and not cached.

``POOL`` and ``SHARED`` are the process-wide instances the app uses (``app_pages/_ui/_run.py``). Nothing here
imports streamlit: the callbacks are how a face shows the waiting.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar

from ..engine import Cancelled

T = TypeVar("T")

POLL_SECONDS = 0.25
"""How often a waiting job re-reports its place in the queue."""


def default_workers() -> int:
    """Monte-Carlo slots of this server: ``$RFVIZ_MC_WORKERS`` if set, else half the cores (at least 1; each run
    uses several threads of its own).

    Examples
    --------
    >>> default_workers() >= 1
    True
    """
    env = os.environ.get("RFVIZ_MC_WORKERS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, (os.cpu_count() or 2) // 2)


class JobPool:
    """At most ``workers`` jobs run at once; the others wait in arrival order (FIFO).

    Parameters
    ----------
    workers : int
        Slots (at least 1).

    Examples
    --------
    >>> pool = JobPool(1)
    >>> with pool.slot():
    ...     pool.running
    1
    """

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = int(workers)
        self.running = 0
        self.peak = 0
        """Most jobs that ever held a slot at once (for tests and monitoring)."""
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()

    @property
    def waiting(self) -> int:
        """Jobs queued for a slot now."""
        with self._cond:
            return len(self._queue)

    @contextmanager
    def slot(self, on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
        """Hold one slot for the block; while none is free, call ``on_wait(jobs ahead)`` every ``POLL_SECONDS``.
        An exception raised by ``on_wait`` (a cancelled page run) leaves the queue cleanly."""
        me = object()
        with self._cond:
            self._queue.append(me)
        try:
            while True:
                with self._cond:
                    if self.running < self.workers and self._queue[0] is me:
                        self._queue.popleft()
                        self.running += 1
                        self.peak = max(self.peak, self.running)
                        break
                    ahead = self._queue.index(me) + (self.running if self._queue[0] is me else 0)
                if on_wait is not None:
                    on_wait(ahead)
                with self._cond:
                    self._cond.wait(POLL_SECONDS)
        except BaseException:
            with self._cond:
                if me in self._queue:
                    self._queue.remove(me)
                self._cond.notify_all()
            raise
        try:
            yield
        finally:
            with self._cond:
                self.running -= 1
                self._cond.notify_all()


class SharedCache:
    """Results shared by every caller, keyed by their parameters, computed once (single-flight), LRU-bounded.

    Parameters
    ----------
    max_entries : int
        Results kept (least recently used dropped first).
    abandon_on : tuple of exception types
        Failures that belong to the caller, not to the parameters (a user's Stop button): the waiters compute the
        result themselves instead of receiving the failure.

    Examples
    --------
    >>> cache = SharedCache(4)
    >>> cache.get_or_compute(("square", 3), lambda: 9)
    9
    >>> cache.get_or_compute(("square", 3), lambda: 0)  # a hit: not recomputed
    9
    """

    def __init__(self, max_entries: int = 64, abandon_on: tuple[type[BaseException], ...] = ()) -> None:
        self.max_entries = int(max_entries)
        self.abandon_on = tuple(abandon_on)
        self.computed = 0
        """Computations actually run (hits and joined flights do not count)."""
        self._lock = threading.Lock()
        self._done: OrderedDict[Hashable, Any] = OrderedDict()
        self._flights: dict[Hashable, Future] = {}

    def lookup(self, key: Hashable) -> tuple[bool, Any]:
        """``(True, value)`` for a stored result, else ``(False, None)``."""
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return True, self._done[key]
        return False, None

    def get_or_compute(self, key: Hashable, compute: Callable[[], T],
                       on_join: Callable[[], None] | None = None) -> T:
        """The stored result for ``key``, else wait for the computation of ``key`` in flight (``on_join()`` is
        called first), else run ``compute()`` here and share its result. A computation abandoned by its caller
        (a page run stopped: a BaseException that is not an Exception, or one of ``abandon_on``) is taken over by
        one of its waiters."""
        while True:
            with self._lock:
                if key in self._done:
                    self._done.move_to_end(key)
                    return self._done[key]
                flight = self._flights.get(key)
                owner = flight is None
                if owner:
                    flight = self._flights[key] = Future()
            if owner:
                return self._compute(key, compute, flight)
            if on_join is not None:
                on_join()
            try:
                return flight.result()
            except _Abandoned:
                continue

    def _compute(self, key: Hashable, compute: Callable[[], T], flight: Future) -> T:
        try:
            value = compute()
        except BaseException as exc:
            with self._lock:
                del self._flights[key]
            mine = not isinstance(exc, Exception) or isinstance(exc, self.abandon_on)
            flight.set_exception(_Abandoned() if mine else exc)
            raise
        with self._lock:
            self.computed += 1
            del self._flights[key]
            self._done[key] = value
            while len(self._done) > self.max_entries:
                self._done.popitem(last=False)
        flight.set_result(value)
        return value


class _Abandoned(Exception):
    """The computation a waiter joined was stopped by its own caller: the waiter computes it instead."""


POOL = JobPool(default_workers())
"""The server's Monte-Carlo slots."""
SHARED = SharedCache(256, abandon_on=(Cancelled,))
"""The server's shared results of Monte-Carlo runs (every session's)."""
