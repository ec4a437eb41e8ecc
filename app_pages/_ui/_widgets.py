"""Widgets generated from ``rfviz.params.Param`` specs (an estimator's ``spec``, page-level Params) and the few
composite controls several pages share (kernel + estimators, colour range)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import streamlit as st

from rfviz.compute import catalog
from rfviz.params import Param, ParameterError, app_param

from ._url import PageState, to_text


def slider_range(p: Param) -> tuple[float, float] | None:
    """Finite slider range for a float parameter (ui_low/ui_high, else low/high), or None."""
    lo = p.ui_low if p.ui_low is not None else p.low
    hi = p.ui_high if p.ui_high is not None else p.high
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
        return None
    return float(lo), float(hi)


def param_widget(state: PageState, p: Param, prefix: str = "", container: Any = st,
                 default: Any = None) -> Any:
    """A widget for one Param: selectbox (choice), toggle (bool), number input (int; complex as text),
    slider (float with a finite UI range) or number input (float otherwise). Returns the raw value;
    validation is left to the estimator (so invalid values show an error instead of being clamped)."""
    name = f"{prefix}{p.name}"
    label = p.label or p.name
    default = p.default if default is None else default
    help_text = f"{p.help} (valid: {p.range_text()})" if p.help else p.range_text()
    if p.kind == "choice":
        return state.selectbox(label, name, p.choices, default, container=container, help=help_text)
    if p.kind == "bool":
        return state.toggle(label, name, bool(default), container=container, help=help_text)
    if p.kind == "complex":
        return _read(p, state.text(label, name, to_text(complex(default)), container=container, spec=p,
                                   help=help_text + "; write e.g. -0.1+0.2j"))
    if p.kind == "complex_list":
        return _read(p, state.text(label, name, to_text(tuple(default)), container=container, spec=p,
                                   help=help_text + "; write e.g. 1+0.5j, 0.8, 1j"))
    if p.kind == "int":
        return state.number(label, name, int(default), int, container=container, help=help_text, spec=app_param(p))
    rng = slider_range(p)
    if rng is not None and rng[0] <= float(default) <= rng[1]:
        lo, hi = rng
        step = float(f"{(hi - lo) / 200:.1g}")
        return state.slider(label, name, lo, hi, float(default), step=step, container=container, help=help_text)
    return state.number(label, name, float(default), float, container=container, help=help_text, format="%g",
                        spec=p)


def _read(p: Param, text: str) -> Any:
    """A text widget's value read by its Param (``Param.parse``: the estimator takes typed values only); text that
    does not parse is returned as it is, for the estimator to refuse where the page shows its errors."""
    try:
        return p.parse(text)
    except ParameterError:
        return text


def estimator_params(state: PageState, spec: Sequence[Param], prefix: str = "", skip: Sequence[str] = (),
                     container: Any = st, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Widgets for every Param of ``spec`` not in ``skip``; returns {name: raw value}."""
    defaults = defaults or {}
    return {p.name: param_widget(state, p, prefix, container, defaults.get(p.name))
            for p in spec if p.name not in skip}


def unused(reason: str) -> dict[str, Any]:
    """Keyword arguments that disable a widget the current view ignores, with the one-line reason as its help."""
    return {"disabled": True, "help": f"Not used here: {reason}"}


DEFAULT_ESTIMATORS = ("trig", "positive_antithetic", "hybrid_angular")
"""The estimators a page starts with where its kernel has them: the two bases of HRF and their hybrid."""


def kernel_and_estimators(state: PageState, container: Any, help: str) -> tuple[str, list[str], list[str]]:
    """The "Kernel" choice and up to four of its estimators (shown by title; URL keys ``kernel`` and ``est``).
    Returns (kernel, chosen names, every estimator of the kernel)."""
    kernel = state.selectbox("Kernel", "kernel", catalog.kernel_options(), "softmax", container=container,
                             format_func=lambda k: k.replace("_", " "))
    available = catalog.estimators_for_kernel(kernel)
    default = [n for n in DEFAULT_ESTIMATORS if n in available] or available[:2]
    names = state.multiselect("Estimators", "est", available, default, container=container, max_selections=4,
                              format_func=catalog.short_of, help=help)
    return kernel, names, available


def colour_range(state: PageState, container: Any = st, default: tuple[float, float] = (-8.0, 2.0),
                 unit: str = "log₁₀ MSE", **kw: Any) -> tuple[float, float] | None:
    """A "Colour range" control: auto (the figure's robust shared window) or two numbers lo < hi in ``unit``, kept
    in the URL (``zrange``, ``zlo``, ``zhi``). Returns (lo, hi), or None for auto; lo ≥ hi shows an error next to
    the inputs and falls back to auto, so the page keeps working."""
    mode = state.radio("Colour range", "zrange", ["auto", "fixed"], "auto", container=container,
                       help=kw.pop("help", "auto: a window over the values of all panels (shared, robust "
                                           "percentiles); fixed: your own window, the same for every panel"), **kw)
    if mode == "auto":
        return None
    c1, c2 = container.columns(2)
    lo = state.number(f"from ({unit})", "zlo", default[0], float, container=c1, format="%g", step=1.0, **kw)
    hi = state.number(f"to ({unit})", "zhi", default[1], float, container=c2, format="%g", step=1.0, **kw)
    if not lo < hi:
        container.error(f"Colour range: 'from' must be below 'to' (got {lo:g} ≥ {hi:g}); showing the automatic "
                        "range.", icon=":material/error:")
        return None
    return float(lo), float(hi)


