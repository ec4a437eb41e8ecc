"""A one-line terminal progress report for sweeps: points done, trials/s, ETA (on stderr).

The ETA is sensible from the first tasks: until ``WINDOW_MIN_S`` seconds and ``WINDOW_MIN_TASKS`` tasks have passed
since the first result it is the median compute time of the last ``RECENT`` tasks × the tasks left / the backend's
slots (a median ignores a cold first task); afterwards it is the trials left / the throughput over the last
``WINDOW_S`` seconds, counted from the first result (so start-up, e.g. Ray's, is excluded, and the driver's own
overhead included), re-estimated at each redraw.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from collections.abc import Sequence
from typing import TextIO

import numpy as np

RECENT = 64
"""Task times kept for the median."""
WINDOW_S = 60.0
"""Throughput window of the ETA once it is long enough."""
WINDOW_MIN_S = 1.0
WINDOW_MIN_TASKS = 8


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    s = round(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class Progress:
    """Redrawn in place (``\\r``) on a terminal at most every ``every_s``; plain lines every 30 s otherwise.

    Parameters
    ----------
    total_points, done_points, trials_per_point : int
        The grid size, the points already stored, trials per point.
    tasks_per_point : int
        Blocks per point (for the median-based ETA).
    slots : int
        Tasks that run at once (the runner updates it from the backend).
    """

    def __init__(self, total_points: int, done_points: int, trials_per_point: int, *, stream: TextIO | None = None,
                 enabled: bool = True, every_s: float = 0.5, tasks_per_point: int = 1, slots: int = 1) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every_s = every_s if self.tty else 30.0
        self.total = total_points
        self.start_done = self.done = done_points
        self.trials_per_point = trials_per_point
        self.tasks_per_point = max(1, tasks_per_point)
        self.slots = max(1, slots)
        self.trials = 0  # trials finished in this run (tasks, not only whole points)
        self.tasks = 0
        self.started = time.monotonic()
        self._recent: deque[float] = deque(maxlen=RECENT)
        self._window: deque[tuple[float, int]] = deque()
        self._last = 0.0

    def update(self, points: int = 0, trials: int = 0, task_seconds: Sequence[float] | np.ndarray = ()) -> None:
        """Count finished points, trials and tasks (their compute seconds feed the ETA's median)."""
        self.done += points
        self.trials += trials
        self.tasks += len(task_seconds)
        self._recent.extend(float(s) for s in task_seconds[-RECENT:])
        now = time.monotonic()
        if not self._window or now - self._window[-1][0] >= 0.25:  # ≤ 4 samples/s: bounded memory
            self._window.append((now, self.trials))
        while len(self._window) > 2 and now - self._window[1][0] > WINDOW_S:
            self._window.popleft()
        if self.enabled and now - self._last >= self.every_s:
            self._last = now
            self._draw(now)

    def left_trials(self) -> int:
        """Trials still to run (points not finished, less the trials of their blocks already done)."""
        left = (self.total - self.done) * self.trials_per_point
        return max(0, left - (self.trials - (self.done - self.start_done) * self.trials_per_point))

    def rate(self, now: float | None = None) -> float:
        """Trials/s over the recent window (over the whole run until the window is long enough)."""
        now = now or time.monotonic()
        if self._window and now - self._window[0][0] >= WINDOW_MIN_S:
            t0, n0 = self._window[0]
            return (self.trials - n0) / (now - t0)
        elapsed = now - self.started
        return self.trials / elapsed if elapsed > 0 else 0.0

    def eta(self, now: float | None = None) -> float:
        """Seconds left: median task time × tasks left / slots early on, the recent throughput afterwards."""
        now = now or time.monotonic()
        left = self.left_trials()
        if left == 0:
            return 0.0
        if self._window and now - self._window[0][0] >= WINDOW_MIN_S and self.tasks >= WINDOW_MIN_TASKS:
            rate = self.rate(now)
            if rate > 0:
                return left / rate
        if not self._recent:
            return math.inf
        per_task = float(np.median(self._recent))
        trials_per_task = self.trials_per_point / self.tasks_per_point
        return left / trials_per_task * per_task / self.slots

    def line(self, now: float | None = None) -> str:
        now = now or time.monotonic()
        elapsed = now - self.started
        pct = 100.0 * self.done / self.total if self.total else 100.0
        return (f"sweep: {self.done}/{self.total} points ({pct:.1f}%)  {self.rate(now):.3g} trials/s  "
                f"elapsed {_duration(elapsed)}  ETA {_duration(self.eta(now))}")

    def _draw(self, now: float) -> None:
        text = self.line(now)
        if self.tty:
            self.stream.write("\r" + text.ljust(78))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self, message: str | None = None) -> None:
        if self.enabled:
            self.stream.write(("\r" + self.line().ljust(78) if self.tty else self.line()) + "\n")
            if message:
                self.stream.write(message + "\n")
            self.stream.flush()
