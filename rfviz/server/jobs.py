"""Sharing a server between many visitors: a bounded pool of Monte-Carlo jobs run off the page's thread, and a
single-flight shared cache of their results.

* ``JobPool``: at most ``workers`` jobs hold a slot at once, process-wide; the others queue in arrival order.
  ``JobPool.submit`` runs a computation in a thread of its own (``Job``), not on the page's script thread: a page
  polls the job, shows its place in the queue or its progress, and may be rerun or stopped meanwhile without
  stopping the computation, whose result lands in the shared cache for the next run.
* ``Job``: one submitted computation, with its future, its place in the queue and its progress. While at least one
  page waits for it (``Job.watch``) it runs to the end; once nobody has watched it for ``abandon_after`` seconds
  (every visitor who asked moved on) its next progress report raises ``Abandoned`` and its slot is freed.
* ``SharedCache``: results keyed by their parameters, shared by every caller (every app session) and computed once:
  a caller asking for a key being computed joins that job instead of starting its own (single-flight); a failure
  is handed to the waiting callers and not stored.

``POOL`` and ``SHARED`` are the process-wide instances the app uses (``app_pages/_ui/_run.py``). Nothing here
imports streamlit: the page shows the waiting and the progress from its own thread.
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from ..engine import Cancelled

T = TypeVar("T")
Progress = Callable[[float], None]
"""A progress callback: called with the fraction done (0 to 1)."""

POLL_SECONDS = 0.25
"""How often a queued job re-reports its place in the queue, and a waiting page polls its job."""


class Abandoned(Cancelled):
    """A job nobody waited for any more (every page that asked moved on): stopped at its next progress report."""


ABANDON_SECONDS = 2.0
"""A job nobody has watched for this long is abandoned (a rerun of the page that asked rejoins it well within)."""


def default_workers() -> int:
    """Monte-Carlo slots of this server: ``$RFVIZ_MC_WORKERS`` if set, else half the cores (at least 1; each run
    uses several threads of its own).

    Returns
    -------
    int
        The number of jobs that may run at once.

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
        An exception raised by ``on_wait`` (a cancelled page run) leaves the queue cleanly.

        Parameters
        ----------
        on_wait : callable, optional
            Called with the number of jobs ahead while this caller queues.

        Yields
        ------
        None
            While the slot is held.

        Examples
        --------
        >>> pool = JobPool(workers=1)
        >>> with pool.slot():
        ...     pool.running
        1
        """
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

    def submit(self, compute: Callable[[Progress], T],
               abandon_after: float = ABANDON_SECONDS) -> Job[T]:
        """Run ``compute(report)`` in a thread of its own once a slot is free, with the caller's context variables
        (the memory and time budgets in force); ``report(fraction)`` is its progress callback (``Job.report``).

        Parameters
        ----------
        compute : the computation; it must not call streamlit (it runs off the page's thread).
        abandon_after : see ``Job``.

        Returns
        -------
        Job
            Its future, place in the queue and progress.

        Examples
        --------
        >>> JobPool(2).submit(lambda report: report(1.0) or "done").future.result(timeout=10)
        'done'
        """
        job: Job[T] = Job(abandon_after)
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(self._run, job, compute), name="rfviz-job", daemon=True).start()
        return job

    def _run(self, job: Job[T], compute: Callable[[Progress], T]) -> None:
        try:
            with self.slot(on_wait=job.queued):
                job.ahead = 0
                value = compute(job.report)
        except BaseException as exc:  # handed to every waiting page; never raised in this thread
            job.future.set_exception(exc)
        else:
            job.future.set_result(value)


class Job(Generic[T]):
    """One computation submitted to a ``JobPool``, running in a thread of its own.

    Parameters
    ----------
    abandon_after : seconds without any watcher after which ``report`` raises ``Abandoned``.

    Attributes
    ----------
    future : concurrent.futures.Future
        The result, or the exception the computation raised.
    ahead : int
        Jobs ahead of this one in the pool's queue (0 once it runs).
    fraction : float
        The last progress reported by the computation (0 to 1).

    Examples
    --------
    >>> job = JobPool(1).submit(lambda report: 6 * 7)
    >>> job.future.result(timeout=10)
    42
    """

    def __init__(self, abandon_after: float = ABANDON_SECONDS) -> None:
        self.future: Future = Future()
        self.ahead = 0
        self.fraction = 0.0
        self.abandon_after = float(abandon_after)
        self._lock = threading.Lock()
        self._watchers = 0
        self._unwatched_since: float | None = time.monotonic()

    @contextmanager
    def watch(self) -> Iterator[Job[T]]:
        """Mark one page as waiting for this job for the block (the job is not abandoned meanwhile).

        Yields
        ------
        Job
            This job.
        """
        with self._lock:
            self._watchers += 1
            self._unwatched_since = None
        try:
            yield self
        finally:
            with self._lock:
                self._watchers -= 1
                if self._watchers == 0:
                    self._unwatched_since = time.monotonic()

    def abandoned(self) -> bool:
        """Whether nobody has watched this job for ``abandon_after`` seconds.

        Returns
        -------
        bool
            True once the job has had no watcher for longer than ``abandon_after``.
        """
        with self._lock:
            since = self._unwatched_since
        return since is not None and time.monotonic() - since > self.abandon_after

    def report(self, fraction: float) -> None:
        """The computation's progress callback: records ``fraction`` and raises ``Abandoned`` if nobody waits.

        Parameters
        ----------
        fraction : float
            The share of the work done, in [0, 1].
        """
        self.fraction = float(fraction)
        self._stop_if_abandoned()

    def queued(self, ahead: int) -> None:
        """The pool's ``on_wait`` while this job queues: records its place; an abandoned job leaves the queue.

        Parameters
        ----------
        ahead : int
            Jobs ahead of this one.
        """
        self.ahead = int(ahead)
        self._stop_if_abandoned()

    def _stop_if_abandoned(self) -> None:
        if self.abandoned():
            raise Abandoned("nobody waits for this Monte-Carlo result any more")


class SharedCache:
    """Results shared by every caller, keyed by their parameters, computed once (single-flight), LRU-bounded.

    Parameters
    ----------
    max_entries : int
        Results kept (least recently used dropped first).

    Examples
    --------
    >>> cache, pool = SharedCache(4), JobPool(1)
    >>> hit, job, started = cache.result_or_job(("square", 3), lambda: pool.submit(lambda report: 9))
    >>> (hit, started, job.future.result(timeout=10))
    (False, True, 9)
    >>> cache.result_or_job(("square", 3), lambda: pool.submit(lambda report: 0))  # stored: not recomputed
    (True, 9, False)
    """

    def __init__(self, max_entries: int = 64) -> None:
        self.max_entries = int(max_entries)
        self.computed = 0
        """Computations whose result was stored (hits and joined flights do not count)."""
        self._lock = threading.Lock()
        self._done: OrderedDict[Hashable, Any] = OrderedDict()
        self._flights: dict[Hashable, Job] = {}

    def lookup(self, key: Hashable) -> tuple[bool, Any]:
        """``(True, value)`` for a stored result, else ``(False, None)``.

        Parameters
        ----------
        key : hashable
            The result's parameters.

        Returns
        -------
        found : bool
            Whether a result is stored under ``key``.
        value : object
            The result, or None.

        Examples
        --------
        >>> SharedCache(max_entries=4).lookup(("trig", 1))
        (False, None)
        """
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return True, self._done[key]
        return False, None

    def result_or_job(self, key: Hashable, start: Callable[[], Job[T]]) -> tuple[bool, Any, bool]:
        """``(True, value, False)`` for a stored result; else ``(False, job, started)``: the job computing ``key``,
        the one in flight (``started`` False: this caller joins it) or a new one from ``start()`` (True). The
        job's result is stored when it finishes, whether or not anybody still waits; a failure is not stored.

        Parameters
        ----------
        key : hashable
            The result's parameters.
        start : callable
            Starts the job computing ``key`` (called only when none is stored or in flight).

        Returns
        -------
        done : bool
            Whether the value is stored.
        value_or_job : object
            The stored value, or the job computing it.
        started : bool
            Whether this call started the job.
        """
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return True, self._done[key], False
            job = self._flights.get(key)
            if job is not None and not job.future.done():  # a finished one is landing: its failure is not shared
                return False, job, False
            job = self._flights[key] = start()
        job.future.add_done_callback(lambda done: self._land(key, job, done))
        return False, job, True

    def _land(self, key: Hashable, job: Job, done: Future) -> None:
        with self._lock:
            if self._flights.get(key) is job:
                del self._flights[key]
            if done.exception() is None:
                self.computed += 1
                self._done[key] = done.result()
                self._done.move_to_end(key)
                while len(self._done) > self.max_entries:
                    self._done.popitem(last=False)


POOL = JobPool(default_workers())
"""The server's Monte-Carlo slots."""
SHARED = SharedCache(256)
"""The server's shared results of Monte-Carlo runs (every session's)."""
