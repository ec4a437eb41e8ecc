"""Running a page's computations: errors shown instead of raised (``guard``), results cached across reruns and
sessions (``cached``: closed forms; ``memo``/``cached_mc``: Monte Carlo, shared, single-flight, in the server's
bounded pool ``pooled``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import streamlit as st

from rfviz.compute.jobs import POOL, SHARED
from rfviz.params import ParameterError

from ._text import plain

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def guard(context: str = "") -> Iterator[None]:
    """Show a ParameterError as ``st.error`` (naming the parameter and its range) and carry on."""
    try:
        yield
    except ParameterError as exc:
        st.error(plain(f"{context}{exc}"), icon=":material/error:")
    except (FloatingPointError, OverflowError) as exc:
        st.error(plain(f"{context}numerical failure: {exc}"), icon=":material/error:")
    except MemoryError:
        st.error(plain(f"{context}not enough memory for this view: choose smaller sizes"), icon=":material/error:")
    except NotImplementedError as exc:
        st.warning(plain(f"{context}{exc}"), icon=":material/construction:")


def cached(fn: F) -> F:
    """``st.cache_data`` for a pure computation (arguments must be hashable values, results picklable)."""
    return st.cache_data(show_spinner=False, max_entries=256)(fn)  # type: ignore[return-value]


def shared_figure(fn: F) -> F:
    """``st.cache_resource`` for a figure builder of hashable arguments: the figure object is built once and shared
    by every session asking for the same parameters (building a Plotly figure costs ~0.1–0.3 s of CPU, the main
    cost of a classroom's rerun). The figure is shared read-only: never modify what it returns."""
    return st.cache_resource(show_spinner=False, max_entries=256)(fn)  # type: ignore[return-value]


def pooled(compute: Callable[[], T]) -> T:
    """Run ``compute()`` in one of the server's Monte-Carlo slots (``rfviz.compute.jobs.POOL``); while none is free
    the page says how many jobs are ahead."""
    note = st.empty()

    def waiting(ahead: int) -> None:
        note.info(f"Waiting for a free worker: {ahead} job{'s' if ahead != 1 else ''} ahead (this server runs "
                  f"{POOL.workers} Monte-Carlo job{'s' if POOL.workers != 1 else ''} at a time).",
                  icon=":material/hourglass_top:")

    try:
        with POOL.slot(on_wait=waiting):
            note.empty()
            return compute()
    finally:
        note.empty()


def memo(namespace: str, key: Any, compute: Callable[[], T], max_entries: int = 32) -> T:
    """A Monte-Carlo result shared by every session (``rfviz.compute.jobs.SHARED``: keyed by ``namespace`` and the
    parameters ``key``, computed once even when many sessions ask at the same moment) and computed in the server's
    bounded pool (``pooled``). Unlike ``st.cache_data`` the computation may draw Streamlit elements while running
    (progress bars): only the session that computes shows them; the others see that they wait. ``key`` must be
    hashable and hold every input of ``compute`` (uploads by content hash). ``max_entries`` is kept for callers;
    the shared store is bounded as a whole."""
    hit, value = SHARED.lookup((namespace, key))
    if hit:
        return value
    note = st.empty()
    try:
        return SHARED.get_or_compute((namespace, key), lambda: pooled(compute), on_join=lambda: note.info(
            "The same computation is running for another visitor: waiting for its result.",
            icon=":material/group:"))
    finally:
        note.empty()


def cached_mc(fn: F) -> F:
    """Decorator for a page's Monte-Carlo function of hashable arguments (no Streamlit calls inside): its results
    are shared by every session and computed once in the bounded pool (``memo``)."""
    namespace = f"{fn.__code__.co_filename}:{fn.__qualname__}"

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return memo(namespace, (args, tuple(sorted(kwargs.items()))), lambda: fn(*args, **kwargs))

    return run  # type: ignore[return-value]


def freeze(value: Any) -> Any:
    """A hashable version of nested dicts/lists/arrays (for ``memo`` keys)."""
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if hasattr(value, "tolist"):
        return freeze(value.tolist())
    return value
