"""A one-line terminal progress report for sweeps: points done, trials/s, ETA (on stderr)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    s = round(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class Progress:
    """Redrawn in place (``\\r``) on a terminal at most every ``every_s``; plain lines every 30 s otherwise."""

    def __init__(self, total_points: int, done_points: int, trials_per_point: int, *, stream: TextIO | None = None,
                 enabled: bool = True, every_s: float = 0.5) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every_s = every_s if self.tty else 30.0
        self.total = total_points
        self.start_done = self.done = done_points
        self.trials_per_point = trials_per_point
        self.trials = 0  # trials finished in this run (tasks, not only whole points)
        self.started = time.monotonic()
        self._last = 0.0

    def update(self, points: int = 0, trials: int = 0) -> None:
        self.done += points
        self.trials += trials
        now = time.monotonic()
        if self.enabled and now - self._last >= self.every_s:
            self._last = now
            self._draw(now)

    def line(self, now: float | None = None) -> str:
        elapsed = (now or time.monotonic()) - self.started
        rate = self.trials / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) * self.trials_per_point
        left_trials = max(0, left - (self.trials - (self.done - self.start_done) * self.trials_per_point))
        eta = left_trials / rate if rate > 0 else float("inf")
        pct = 100.0 * self.done / self.total if self.total else 100.0
        return (f"sweep: {self.done}/{self.total} points ({pct:.1f}%)  {rate:.3g} trials/s  "
                f"elapsed {_duration(elapsed)}  ETA {_duration(eta)}")

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
