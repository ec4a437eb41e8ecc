"""Size and time budgets: the memory budget (a context-local value the CLI's ``memory_budget`` option and the app's
cap set), the time budget of a server request, ``Cost`` estimates and the ``require_*`` refusals made before
anything is allocated."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .core import Param, ParameterError, check

# ---------------------------------------------------------------------------------------------- size budgets
# Every size parameter has a declared upper bound (the Param specs above and below) and a cost estimate checked
# against a memory budget before anything is allocated. The budget is one context-local value, so the CLI's
# ``--memory-budget`` and the app's cap reach every path without being threaded through each call.
DEFAULT_MEMORY_BUDGET = 512 * 2**20
"""Default working-set budget (bytes): comfortable on a laptop."""
MAX_MEMORY_BUDGET = 2**40
"""Largest budget one may ask for (1 TiB)."""
_BUDGET: ContextVar[int] = ContextVar("rfviz_memory_budget", default=DEFAULT_MEMORY_BUDGET)
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": 2**20,
          "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40}


MEMORY_BUDGET_PARAM = Param("memory_budget", DEFAULT_MEMORY_BUDGET, "int", "working-set budget in bytes",
                            low=2**16, high=MAX_MEMORY_BUDGET)
"""``memory_budget_scope``'s budget (the CLI's ``--memory-budget`` text goes through ``parse_bytes`` first)."""



def format_bytes(n: float) -> str:
    """``536870912`` → ``"512 MiB"``."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


def parse_bytes(text: str, name: str = "memory budget") -> int:
    """``"512MiB"``, ``"2G"``, ``"1e9"`` → bytes, within [64 KiB, 1 TiB]; ParameterError otherwise."""
    t = str(text).strip().lower().replace(" ", "")
    num = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(num):]
    try:
        value = float(num) * _UNITS[unit]
    except (ValueError, KeyError):
        raise ParameterError(f"{name} must be a size such as 512MiB, 2GiB or 1e9 (bytes), got {text!r}") from None
    if not (2**16 <= value <= MAX_MEMORY_BUDGET):
        raise ParameterError(f"{name} must be between 64 KiB and 1 TiB, got {text!r}")
    return int(value)


def current_memory_budget() -> int:
    """The memory budget in force (bytes): ``DEFAULT_MEMORY_BUDGET`` unless set by ``memory_budget_scope``."""
    return _BUDGET.get()


@contextmanager
def memory_budget_scope(nbytes: int) -> Iterator[int]:
    """Run a block with ``nbytes`` as the memory budget of every estimate, sampler and closed form in it.

    Parameters
    ----------
    nbytes : int
        The budget in bytes, an integer in [64 KiB, 1 TiB] (``MEMORY_BUDGET_PARAM``; the default is 512 MiB).
        Text such as ``"512MiB"`` goes through ``parse_bytes`` first.

    Yields
    ------
    int
        The budget.

    Raises
    ------
    ParameterError
        When ``nbytes`` is not an integer in the valid range.

    Examples
    --------
    >>> with memory_budget_scope(2**30):
    ...     current_memory_budget()
    1073741824
    """
    if isinstance(nbytes, str):
        raise ParameterError(f"memory_budget must be a number of bytes (an integer; parse_bytes reads text such as "
                             f"'512MiB'), got {nbytes[:40]!r}")
    nbytes = check(nbytes, MEMORY_BUDGET_PARAM)
    token = _BUDGET.set(nbytes)
    try:
        yield nbytes
    finally:
        _BUDGET.reset(token)


def require_fits(what: str, nbytes: float, hint: str = "", budget: int | None = None) -> None:
    """Refuse up front (ParameterError) a request whose estimated memory ``nbytes`` exceeds the budget; the message
    says what needs it, the budget, and how to proceed."""
    budget = current_memory_budget() if budget is None else budget
    if not math.isfinite(nbytes) or nbytes > budget:
        size = format_bytes(nbytes) if math.isfinite(nbytes) else "an unbounded amount"
        raise ParameterError(f"{what} needs about {size} of memory, more than the budget of {format_bytes(budget)}; "
                             f"{hint or 'use smaller sizes'} or raise the budget (memory_budget)")


# ---------------------------------------------------------------------------------------------- time budget
# Beside memory, a server must bound the time one request may take. The CLI runs unbounded by default (the user
# waits for their own command); the app runs every page inside ``server_budget_scope`` (memory and time caps).
SERVER_MEMORY_BUDGET = 512 * 2**20
"""Working-set budget (bytes) of one app request (one view, one Monte-Carlo overlay, one upload)."""
SERVER_TIME_BUDGET = 20.0
"""Estimated seconds one app request may take on one core; longer requests are refused before they start."""
_TIME_BUDGET: ContextVar[float] = ContextVar("rfviz_time_budget", default=math.inf)


@dataclass(frozen=True)
class Cost:
    """Estimated cost of a computation before it runs: peak working memory (bytes) and time (seconds, one core).

    Examples
    --------
    >>> (Cost(1e6, 0.5) + Cost(2e6, 1.0)).nbytes
    3000000.0
    """

    nbytes: float = 0.0
    seconds: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.nbytes + other.nbytes, self.seconds + other.seconds)


def current_time_budget() -> float:
    """The time budget in force (seconds): unbounded unless set by ``time_budget_scope``/``server_budget_scope``."""
    return _TIME_BUDGET.get()


@contextmanager
def time_budget_scope(seconds: float) -> Iterator[float]:
    """Run a block with ``seconds`` as the time budget of every costed computation in it.

    Parameters
    ----------
    seconds : float
        The budget, estimated on one core (the CLI and the API have none by default; app pages 20 s).

    Yields
    ------
    float
        The budget.

    Examples
    --------
    >>> with time_budget_scope(5.0):
    ...     current_time_budget()
    5.0
    """
    token = _TIME_BUDGET.set(float(seconds))
    try:
        yield float(seconds)
    finally:
        _TIME_BUDGET.reset(token)


@contextmanager
def server_budget_scope(nbytes: int = SERVER_MEMORY_BUDGET, seconds: float = SERVER_TIME_BUDGET) -> Iterator[None]:
    """The server's caps (memory and time per request), in force for every computation in the block.

    Examples
    --------
    >>> with server_budget_scope():
    ...     require_cost("a small grid", Cost(1e6, 0.1))
    """
    with memory_budget_scope(nbytes), time_budget_scope(seconds):
        yield


def require_time(what: str, seconds: float, hint: str = "", budget: float | None = None) -> None:
    """Refuse up front (ParameterError) a request whose estimated time exceeds the time budget."""
    budget = current_time_budget() if budget is None else budget
    if not math.isfinite(seconds) or seconds > budget:
        took = f"about {seconds:.3g} s" if math.isfinite(seconds) else "an unbounded time"
        raise ParameterError(f"{what} would take {took}, more than this server's limit of {budget:g} s per request; "
                             f"{hint or 'use smaller sizes'} (or run it with the CLI)")


def require_cost(what: str, cost: Cost, hint: str = "") -> None:
    """Refuse up front (ParameterError) a request whose ``Cost`` exceeds the memory or the time budget in force.

    Parameters
    ----------
    what : str
        What is refused, for the message ("the Maclaurin allocation at m = 10000000").
    cost : Cost
        Its estimate (``cost(...)`` of the compute function).
    hint : str
        How to proceed ("lower m").

    Examples
    --------
    >>> require_cost("a tiny grid", Cost(1e3, 1e-3))
    """
    require_fits(what, cost.nbytes, hint)
    require_time(what, cost.seconds, hint)
