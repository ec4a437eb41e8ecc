"""What a sweep backend measured (``BackendStats``), shared by the local and the Ray backend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class BackendStats:
    """What a backend measured: batches run, trials per batch, compute seconds inside tasks, wall seconds."""

    batches: int = 0
    tasks: int = 0
    compute_s: float = 0.0
    wall_s: float = 0.0
    slots: int = 1
    batch_tasks: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def utilisation(self) -> float:
        """Σ compute / (wall × slots): 1 − this bounds scheduling + idle overhead."""
        return self.compute_s / (self.wall_s * self.slots) if self.wall_s > 0 else 0.0
