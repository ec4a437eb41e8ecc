"""The app process's run queue (rfviz.server.turns): page runs one at a time in order of arrival, a long run
demoted after its exclusive time, a waiting run stepping aside. Threads, with every wait bounded."""

from __future__ import annotations

import threading
import time

import pytest

from rfviz.server.turns import RunQueue

pytestmark = pytest.mark.integration  # threads and timed waits

BOUND = 10.0
"""The longest any wait of these tests may take before the test fails."""


ERRORS: list[BaseException] = []
"""What the runs' threads raised (an assertion in a thread would otherwise only be printed)."""


def _start(target, *args) -> threading.Thread:
    def guarded() -> None:
        try:
            target(*args)
        except BaseException as exc:  # handed to the test's thread by _join
            ERRORS.append(exc)

    thread = threading.Thread(target=guarded, daemon=True)
    thread.start()
    return thread


def _join(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(BOUND)
        assert not thread.is_alive(), "a run never ended"
    errors, ERRORS[:] = list(ERRORS), []
    assert not errors, f"a run failed: {errors[0]!r}"


def _queued(queue: RunQueue, n: int) -> None:
    """Wait until ``n`` runs are waiting in ``queue`` (bounded)."""
    deadline = time.monotonic() + BOUND
    while len(queue._waiting) < n:
        assert time.monotonic() < deadline, f"{n} runs never queued"
        threading.Event().wait(0.001)


def test_runs_are_served_alone_in_order_of_arrival():
    queue, log, inside = RunQueue(exclusive_seconds=BOUND), [], []
    gate = threading.Event()

    def run(i: int) -> None:
        with queue.turn():
            inside.append(i)
            assert len(inside) == 1, "two runs at once"
            if i == 0:
                assert gate.wait(BOUND)  # the first run holds its turn until every other one has queued
            log.append(i)
            inside.remove(i)

    threads = [_start(run, 0)]
    for i in range(1, 6):
        _queued(queue, i - 1)
        threads.append(_start(run, i))
    _queued(queue, 5)
    gate.set()
    _join(threads)
    assert log == [0, 1, 2, 3, 4, 5]


def test_a_long_run_is_demoted_and_the_next_starts_beside_it():
    queue, started, done = RunQueue(exclusive_seconds=0.05), threading.Event(), threading.Event()

    def long_run() -> None:
        with queue.turn():
            started.set()
            assert done.wait(BOUND)  # runs until the quick run has finished beside it

    def quick_run() -> None:
        with queue.turn():
            assert queue.holding()
        done.set()

    threads = [_start(long_run)]
    assert started.wait(BOUND)
    t0 = time.monotonic()
    threads.append(_start(quick_run))
    assert done.wait(BOUND), "the quick run waited for the long one to end"
    assert time.monotonic() - t0 < 5.0
    _join(threads)


def test_a_run_that_steps_aside_lets_the_next_in_at_once():
    queue, aside, done = RunQueue(exclusive_seconds=BOUND), threading.Event(), threading.Event()

    def waiting_run() -> None:
        with queue.turn():
            queue.step_aside()
            assert not queue.holding()
            aside.set()
            assert done.wait(BOUND)

    def next_run() -> None:
        with queue.turn():
            done.set()

    threads = [_start(waiting_run)]
    assert aside.wait(BOUND)
    threads.append(_start(next_run))
    _join(threads)
    assert done.is_set()


def test_a_failing_run_hands_its_turn_on_and_turns_nest():
    queue = RunQueue(exclusive_seconds=BOUND)
    with pytest.raises(RuntimeError, match="boom"), queue.turn():
        raise RuntimeError("boom")
    assert not queue.holding()
    with queue.turn():
        with queue.turn():  # the same thread: the inner turn is the outer one
            assert queue.holding()
        assert queue.holding()
    ran = threading.Event()

    def another_run() -> None:
        with queue.turn():
            ran.set()

    _join([_start(another_run)])
    assert ran.is_set()
