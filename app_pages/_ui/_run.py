"""Running a page's computations: errors shown instead of raised (``guard``), results cached across reruns and
sessions (``cached``: closed forms; ``memo``/``cached_mc``: Monte Carlo, shared, single-flight, run in the server's
bounded pool off the page's thread, ``rfviz.server.jobs``)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import Any, TypeVar

import plotly.graph_objects as go
import streamlit as st

from rfviz.params import ParameterError
from rfviz.server.jobs import POLL_SECONDS, POOL, SHARED, Abandoned, Job, Progress
from rfviz.server.turns import RUNS

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


_WRAPPERS: dict[tuple[str, Any], Any] = {}
"""The Streamlit cache wrapper of each page function, by its code object (see ``_once``)."""
_CURRENT = threading.local()
"""This thread's (this script run's) definition of each wrapped page function, by the same key."""


class FrozenFigure(go.Figure):
    """A Plotly figure that is never modified again (a ``shared_figure`` result): its ``to_dict`` is computed once.

    ``st.plotly_chart`` turns its figure into a dict (``to_dict``, a deep copy of every trace: ~2 ms for the Hybrid
    page's figure) and then into JSON on every rerun of every session; for a figure shared read-only by a classroom
    the dict is the same each time, so it is kept."""

    def to_dict(self) -> dict:
        cached = self.__dict__.get("_rfviz_dict")
        if cached is None:
            cached = self._rfviz_dict = super().to_dict()
        return cached


def _frozen(value: Any) -> Any:
    """``value`` with its Plotly figures (alone or in a tuple) as ``FrozenFigure``s."""
    if type(value) is go.Figure:  # re-classed in place: a copy would cost as much as building the figure
        value.__class__ = FrozenFigure
        return value
    if isinstance(value, tuple):
        return tuple(_frozen(v) for v in value)
    return value


def _once(kind: str, decorate: Callable[[F], F], fn: F, convert: Callable[[Any], Any] = lambda v: v) -> F:
    """``decorate(fn)``, with the Streamlit wrapper made once per page function rather than on every rerun.

    A page script runs again on every rerun and with it its ``@cached`` definitions; wrapping a function in
    ``st.cache_data``/``st.cache_resource`` reads its source (``inspect.getsource``) to key its cache, ~1 ms each,
    about a tenth of a classroom session's rerun (py-spy, bench/bench_classroom.py). Streamlit compiles a page once,
    so a function defined in it keeps its code object across reruns: the wrapper made on the first run is reused,
    and it calls the definition of the current run (``_CURRENT``: each session's script runs in a thread of its
    own), so a cached function still sees this run's globals, as it would with a fresh wrapper."""
    key = (kind, fn.__code__)
    current = _CURRENT.__dict__.setdefault("functions", {})
    current[key] = fn
    wrapper = _WRAPPERS.get(key)
    if wrapper is None:

        @functools.wraps(fn)  # the cache is keyed by fn's module, name and source (inspect follows __wrapped__)
        def call(*args: Any, **kwargs: Any) -> Any:
            return convert(getattr(_CURRENT, "functions", {}).get(key, fn)(*args, **kwargs))

        wrapper = _WRAPPERS[key] = decorate(call)  # type: ignore[arg-type]
    return wrapper


def cached(fn: F) -> F:
    """``st.cache_data`` for a pure computation (arguments must be hashable values, results picklable)."""
    return _once("data", st.cache_data(show_spinner=False, max_entries=256, hash_funcs=_HASH_FUNCS), fn)


_HASH_FUNCS: dict[type, Callable[[Any], Any]] = {complex: lambda c: (c.real, c.imag)}
"""What Streamlit's cache cannot hash itself: a complex parameter (``A``, ``A_diag``) by its two parts."""


def shared_figure(fn: F) -> F:
    """``st.cache_resource`` for a figure builder of hashable arguments: the figure object is built once and shared
    by every session asking for the same parameters (building a Plotly figure costs ~0.1–0.3 s of CPU, the main
    cost of a classroom's rerun). The figure is shared read-only (a ``FrozenFigure``, whose dict for the browser is
    made once): never modify what it returns."""
    return _once("resource", st.cache_resource(show_spinner=False, max_entries=256), fn, convert=_frozen)


def memo(namespace: str, key: Any, compute: Callable[[Progress], T], progress: Progress | None = None) -> T:
    """A Monte-Carlo result shared by every session (``rfviz.server.jobs.SHARED``: keyed by ``namespace`` and the
    parameters ``key``, computed once even when many sessions ask at the same moment), computed by
    ``compute(report)`` in the server's bounded pool, in a thread of its own (``rfviz.server.jobs.POOL``).

    The page waits here and shows, from its own thread, the jobs ahead of it in the queue, that another visitor's
    identical request is running, or the job's progress through ``progress(fraction)``; ``compute`` reports its
    progress through the ``report`` it is given and must not call streamlit. If the page is rerun or stopped
    meanwhile the computation goes on and its result is stored for the next run; once no page has waited for it
    for a few seconds it stops at its next report (``Abandoned``). ``key`` must be hashable and hold every input
    of ``compute`` (uploads by content hash)."""
    while True:
        hit, found, started = SHARED.result_or_job((namespace, key), lambda: POOL.submit(compute))
        if hit:
            return found
        try:
            return wait_for(found, progress, joined=not started)
        except Abandoned:  # joined a job everyone before had left: ask again (a new job)
            continue


def wait_for(job: Job[T], progress: Progress | None = None, joined: bool = False) -> T:
    """Wait for ``job`` on the page's thread: its place in the queue, the note that it is another visitor's
    request (``joined``), or ``progress(fraction)`` while it runs; its result, or the exception it raised."""
    RUNS.step_aside()  # the next page run need not wait for this one's job
    note, shown = st.empty(), None
    try:
        with job.watch():
            while True:
                try:
                    return job.future.result(timeout=POLL_SECONDS)
                except FutureTimeout:
                    pass
                waiting = _waiting_note(job, joined)
                if waiting != shown:  # a new delta only when the note changes (cleared once the job leaves the queue)
                    if waiting is None:
                        note.empty()
                    else:
                        note.info(waiting[0], icon=waiting[1])
                    shown = waiting
                if progress is not None and not job.ahead:
                    progress(job.fraction)
    finally:
        note.empty()


def _waiting_note(job: Job, joined: bool) -> tuple[str, str] | None:
    """(text, icon) of what the page says while ``job`` runs: its place in the queue, that it is another visitor's
    request, or nothing."""
    if job.ahead:
        return (f"Waiting for a free worker: {job.ahead} job{'s' if job.ahead != 1 else ''} ahead (this server runs "
                f"{POOL.workers} Monte-Carlo job{'s' if POOL.workers != 1 else ''} at a time).",
                ":material/hourglass_top:")
    if joined:
        return "The same computation is running for another visitor: waiting for its result.", ":material/group:"
    return None


def pooled(compute: Callable[[Progress], T], progress: Progress | None = None) -> T:
    """``compute(report)`` in the server's bounded pool, off the page's thread, for this page alone (not shared,
    e.g. a check of a plugin file that may have been edited since): ``wait_for`` its result."""
    return wait_for(POOL.submit(compute), progress)


def cached_mc(fn: F) -> F:
    """Decorator for a page's Monte-Carlo function of hashable arguments (no Streamlit calls inside): its results
    are shared by every session and computed once in the bounded pool (``memo``)."""
    namespace = f"{fn.__code__.co_filename}:{fn.__qualname__}"

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return memo(namespace, (args, tuple(sorted(kwargs.items()))), lambda report: fn(*args, **kwargs))

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



@contextmanager
def stages(what: str, names: Sequence[str]) -> Iterator[Progress]:
    """``with ui.stages("Fitting the models", STAGES) as progress: ui.memo(..., progress)``: a progress bar for a
    run in named stages that share the progress equally, drawn at the first ``progress(fraction)`` (a result
    already computed draws nothing) with the stage the fraction falls in (``what: stage (i of n)``), removed at the
    end of the ``with``.

    Parameters
    ----------
    what : str
        What runs ("Fitting the models").
    names : sequence of str
        The stages, in order.

    Yields
    ------
    callable
        The ``progress(fraction)`` callback for ``memo``/``pooled``.
    """
    slot = st.empty()

    def progress(fraction: float) -> None:
        f = min(max(float(fraction), 0.0), 1.0)
        i = min(int(f * len(names)), len(names) - 1)
        slot.progress(f, text=f"{what}: {names[i]} ({i + 1} of {len(names)})")

    try:
        yield progress
    finally:
        slot.empty()
