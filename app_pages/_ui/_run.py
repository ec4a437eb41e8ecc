"""Running a page's computations: errors shown instead of raised (``guard``), results cached across reruns
(``cached``, ``memo``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import streamlit as st

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


def memo(namespace: str, key: Any, compute: Callable[[], T], max_entries: int = 32) -> T:
    """Session-scoped memo for computations that draw Streamlit elements while running (progress bars),
    which ``st.cache_data`` cannot replay. ``key`` must be hashable."""
    store: dict[Any, Any] = st.session_state.setdefault(f"_memo.{namespace}", {})
    if key in store:
        return store[key]
    value = compute()
    if len(store) >= max_entries:
        store.pop(next(iter(store)))
    store[key] = value
    return value


def freeze(value: Any) -> Any:
    """A hashable version of nested dicts/lists/arrays (for ``memo`` keys)."""
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if hasattr(value, "tolist"):
        return freeze(value.tolist())
    return value
