"""Streamlit helpers shared by the app's pages (``from app_pages import _ui as ui``).

It lives beside the pages, outside the computation package: ``rfviz`` never imports streamlit.

* ``PageState``: widgets whose state lives in the URL's query parameters, so a view can be shared. On the first
  run of a page the widget starts from the URL (``?m=10&kernel=gaussian``), afterwards every change is written back.
  A malformed URL value falls back to the default with a visible ``st.error``.
* ``param_widget`` / ``estimator_params``: widgets generated from an estimator's ``spec`` (rfviz.params.Param);
  ``PageState.param``: a page-level parameter (trials, d, seed, …) declared as a Param in rfviz.params, whose URL
  value is parsed and range-checked by the Param, and ``valid`` the same check on the widget's value.
* ``guard``: a context manager turning ``ParameterError`` into ``st.error`` so the page keeps working.
* ``cached``: ``st.cache_data`` for pure computations; ``downloads``: CSV + HTML download buttons
  (generated lazily, on click); ``header``: title, explanation and the LaTeX formula with its source;
  ``sidebar_info``: the compute device.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TypeVar

import streamlit as st

from rfviz.compute import catalog
from rfviz.figures.export import figure_html, with_header
from rfviz.params import Param, ParameterError

URL_VALUE_MAX_CHARS = 200
"""Longer URL values are refused before parsing (and never echoed in full)."""
SHOWN_CHARS = 80
"""Values shown back in messages are cut to this many characters."""
APP_INT_CAPS: dict[str, int] = {"m": 100_000, "n": 10_000, "trials": 200_000, "samples": 200_000, "p": 30,
                                "D": 100_000}
"""Upper bounds of integer estimator parameters in the app (the CLI may go further under --memory-budget)."""
_MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~:$&\"'=")


def plain(text: Any, limit: int = 400) -> str:
    """``text`` made inert for Streamlit's Markdown (st.error/st.warning render Markdown): every Markdown/HTML
    special character backslash-escaped, newlines flattened, cut to ``limit`` characters. Images, links, HTML and
    colour directives from a URL are shown as the characters they are."""
    t = " ".join(str(text).split())
    if len(t) > limit:
        t = t[: limit - 1] + "…"
    return "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in t)


def short(text: str, limit: int = SHOWN_CHARS) -> str:
    """A user-supplied value cut to ``limit`` characters for messages (its length said when cut)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


# --------------------------------------------------------------------------- values <-> URL text
def to_text(value: Any) -> str:
    """Serialise a widget value for the URL."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, complex):
        return f"{value.real:g}{value.imag:+g}j"
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, list | tuple):
        return ",".join(to_text(v) for v in value)
    return str(value)


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off"):
        return False
    raise ParameterError(f"must be true or false, got {text!r}")


def _parse_number(text: str, kind: type) -> float | int:
    try:
        f = float(text)
    except ValueError:
        raise ParameterError(f"must be a number, got {text!r}") from None
    if not math.isfinite(f):
        raise ParameterError(f"must be finite, got {text!r}")
    if kind is int:
        if f != int(f):
            raise ParameterError(f"must be an integer, got {text!r}")
        return int(f)
    return f


# --------------------------------------------------------------------------- page state
class PageState:
    """Widgets of one page, synchronised with the URL query parameters.

    Widget keys are ``"<page>.<name>"`` in ``st.session_state`` where ``page`` is the page's URL path (= its file
    name in app_pages/); the URL uses ``name`` alone.
    """

    def __init__(self, page: str) -> None:
        self.page = page
        self.url_errors: list[str] = []
        self._errors_shown = False
        self._seen: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.page}.{name}"

    def _init(self, name: str, default: T, parse: Callable[[str], T], check: Callable[[T], bool] | None = None) -> None:
        """Seed the widget's session state from the URL (first run) or the default."""
        key = self.key(name)
        if key in st.session_state:
            return
        value = default
        raw = st.query_params.get(name)
        if raw is not None:
            try:
                if len(raw) > URL_VALUE_MAX_CHARS:
                    raise ParameterError(f"value too long ({len(raw)} characters, at most {URL_VALUE_MAX_CHARS})")
                parsed = parse(raw)
                if check is not None and not check(parsed):
                    raise ParameterError(f"value {raw!r} is out of the widget's range")
                value = parsed
            except (ParameterError, ValueError, TypeError, OverflowError) as exc:
                self.url_errors.append(f"URL parameter {short(name, 40)}: {short(str(exc), 160)}; using the default "
                                       f"{short(to_text(default))}")
                if self._errors_shown:  # a widget created after show_url_errors (in a tab, behind a toggle)
                    self.show_url_errors()
        st.session_state[key] = value

    def _sync(self, name: str, value: Any) -> None:
        self._seen.add(name)
        text = to_text(value)
        if st.query_params.get(name) != text:
            st.query_params[name] = text

    def show_url_errors(self) -> None:
        """Show what could not be read from the URL (each once; later widgets show theirs where they are)."""
        self._errors_shown = True
        for msg in self.url_errors:
            st.error(plain(msg), icon=":material/link_off:")
        self.url_errors.clear()

    def finish(self) -> None:
        """End of the page: drop URL parameters no widget of this run wrote (a removed estimator's parameters,
        a hidden view's controls), so a shared link holds only what the view uses."""
        for name in [k for k in st.query_params if k not in self._seen]:
            del st.query_params[name]

    def mc_switch(self, label: str, name: str = "mc", container: Any = st, **kw: Any) -> bool:
        """A Monte-Carlo toggle that never starts sampling by itself: a URL with ``mc=true`` shows a
        "Run Monte Carlo" button, and sampling starts on that click (or on the user's own toggle). Afterwards a
        change of the sampled inputs resamples; the pages cache the results keyed on those inputs."""
        armed = f"{self.key(name)}.armed"

        def arm() -> None:
            st.session_state[armed] = True

        on = self.toggle(label, name, False, container=container, on_change=arm, **kw)
        if on and not st.session_state.get(armed, False):
            container.button("Run Monte Carlo", key=f"{self.key(name)}.run", on_click=arm, type="primary",
                             icon=":material/play_arrow:",
                             help="this link asks for Monte-Carlo sampling; it starts only when you click")
            return False
        return on

    def view(self, label: str, options: Sequence[str], default: str | None = None, name: str = "view",
             container: Any = st) -> str:
        """The page's view selector (a horizontal radio stored in the URL as ``view``), drawn before the sidebar so
        the sidebar can depend on the view (tabs all run on every rerun and cannot)."""
        return self.radio(label, name, options, default, container=container)

    # -- widgets -----------------------------------------------------------
    def _choice(self, widget: Any, label: str, name: str, options: Sequence[str], default: str | None,
                **kw: Any) -> str:
        """One of ``options`` from a single-choice widget (selectbox or radio), synced with the URL."""
        options = list(options)
        default = options[0] if default is None or default not in options else default
        self._init(name, default, str, lambda v: v in options)
        if st.session_state[self.key(name)] not in options:
            st.session_state[self.key(name)] = default
        value = widget(label, options, key=self.key(name), **kw)
        self._sync(name, value)
        return value

    def selectbox(self, label: str, name: str, options: Sequence[str], default: str | None = None,
                  container: Any = st, **kw: Any) -> str:
        return self._choice(container.selectbox, label, name, options, default, **kw)

    def radio(self, label: str, name: str, options: Sequence[str], default: str | None = None,
              container: Any = st, **kw: Any) -> str:
        return self._choice(container.radio, label, name, options, default, horizontal=True, **kw)

    def multiselect(self, label: str, name: str, options: Sequence[str], default: Sequence[str],
                    container: Any = st, **kw: Any) -> list[str]:
        options = list(options)

        most = kw.get("max_selections")

        def parse(text: str) -> list[str]:
            names = [t for t in text.split(",") if t]
            if most is not None and len(names) > most:
                raise ParameterError(f"at most {most} names, got {len(names)}")
            return names

        self._init(name, [d for d in default if d in options], parse, lambda v: all(x in options for x in v))
        key = self.key(name)
        kept = [v for v in st.session_state[key] if v in options]
        if st.session_state[key] and not kept:  # the options changed under it (another kernel): the new defaults
            kept = [d for d in default if d in options]
        st.session_state[key] = kept
        value = container.multiselect(label, options, key=key, **kw)
        self._sync(name, value)
        return list(value)

    def slider(self, label: str, name: str, low: float, high: float, default: float, step: float | None = None,
               container: Any = st, **kw: Any) -> float:
        kind = int if all(isinstance(v, int) for v in (low, high, default)) and (step is None or
                                                                                  isinstance(step, int)) else float
        self._init(name, kind(default), lambda t: _parse_number(t, kind), lambda v: low <= v <= high)
        value = container.slider(label, kind(low), kind(high), key=self.key(name),
                                 step=None if step is None else kind(step), **kw)
        self._sync(name, value)
        return value

    def number(self, label: str, name: str, default: float, kind: type = float, container: Any = st,
               spec: Param | None = None, **kw: Any) -> float:
        """Number input: range checks belong to the computation (so errors are shown, not clamped); its URL value
        is parsed by ``spec`` when given (bounds included), else only as a finite number."""
        self._init(name, kind(default), spec.parse if spec is not None else (lambda t: _parse_number(t, kind)))
        value = container.number_input(label, key=self.key(name), step=1 if kind is int else kw.pop("step", None),
                                       **kw)
        self._sync(name, value)
        return value

    def toggle(self, label: str, name: str, default: bool = False, container: Any = st, **kw: Any) -> bool:
        self._init(name, default, _parse_bool)
        value = container.toggle(label, key=self.key(name), **kw)
        self._sync(name, value)
        return bool(value)

    def text(self, label: str, name: str, default: str, container: Any = st, spec: Param | None = None,
             **kw: Any) -> str:
        """Text input; its URL value is validated by ``spec`` when given (kept as text)."""
        self._init(name, default, str, None if spec is None else (lambda t: spec.parse(t) is not None or True))
        value = container.text_input(label, key=self.key(name), **kw)
        self._sync(name, value)
        return value

    def param(self, p: Param, default: Any = None, container: Any = st, label: str | None = None,
              **kw: Any) -> Any:
        """A number input for a page-level Param (rfviz.params: D_PARAM, TRIALS_PARAM, SEED_PARAM, …).

        The URL value is parsed and range-checked by ``p`` (out of range: the default, with a visible error); the
        widget itself is not clamped, so a typed value out of range is reported by ``valid(p, value)`` where the
        page uses it. ``default`` overrides ``p.default`` for this page."""
        default = p.default if default is None else default
        kind = int if p.kind == "int" else float
        if p.kind not in ("int", "float"):
            raise TypeError(f"PageState.param takes int or float Params, not {p.kind!r} ({p.name})")
        self._init(p.name, kind(default), p.parse)
        if kind is float:
            kw.setdefault("format", "%g")
        help_text = kw.pop("help", None) or p.help
        value = container.number_input(label or p.label or p.name, key=self.key(p.name),
                                       step=1 if kind is int else kw.pop("step", None),
                                       help=f"{help_text} (valid: {p.range_text()})", **kw)
        self._sync(p.name, value)
        return value


def valid(p: Param, value: Any) -> Any:
    """``value`` checked against the Param (coerced to its type); ParameterError naming it and its range otherwise
    (inside ``guard`` it is shown as ``st.error`` and the page carries on)."""
    return p.validate(value)


# --------------------------------------------------------------------------- spec-driven widgets
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
        return state.text(label, name, to_text(complex(default)), container=container, spec=p,
                          help=help_text + "; write e.g. -0.1+0.2j")
    if p.kind == "complex_list":
        return state.text(label, name, to_text(tuple(default)), container=container, spec=p,
                          help=help_text + "; write e.g. 1+0.5j, 0.8, 1j")
    if p.kind == "int":
        return state.number(label, name, int(default), int, container=container, help=help_text, spec=app_spec(p))
    rng = slider_range(p)
    if rng is not None and rng[0] <= float(default) <= rng[1]:
        lo, hi = rng
        step = float(f"{(hi - lo) / 200:.1g}")
        return state.slider(label, name, lo, hi, float(default), step=step, container=container, help=help_text)
    return state.number(label, name, float(default), float, container=container, help=help_text, format="%g",
                        spec=p)


def app_spec(p: Param) -> Param:
    """``p`` with the app's cap (``APP_INT_CAPS``) as its upper bound, so a URL cannot ask for more."""
    cap = APP_INT_CAPS.get(p.name)
    if p.kind != "int" or cap is None or (p.high is not None and p.high <= cap):
        return p
    return replace(p, high=float(cap), high_open=False)


def estimator_params(state: PageState, spec: Sequence[Param], prefix: str = "", skip: Sequence[str] = (),
                     container: Any = st, defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """Widgets for every Param of ``spec`` not in ``skip``; returns {name: raw value}."""
    defaults = defaults or {}
    return {p.name: param_widget(state, p, prefix, container, defaults.get(p.name))
            for p in spec if p.name not in skip}


# --------------------------------------------------------------------------- page furniture
def header(title: str, intro: str, formulas: Sequence[tuple[str, str]] = ()) -> None:
    """Title, a short explanation and each plotted formula (LaTeX) with its source paper and equation."""
    st.title(title)
    st.markdown(intro)
    if formulas:
        with st.expander("What is plotted: formulas and sources", expanded=False):
            for latex, source in formulas:
                st.latex(latex)
                st.caption(source)


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


def downloads(stem: str, csv: Callable[[], str] | str | None, fig: Any = None, container: Any = st,
              key: str | None = None) -> None:
    """CSV (data) and HTML (figure) download buttons; contents are generated when clicked. Both carry the page's
    settings (its URL parameters): the CSV as a ``# rfviz <version> <stem> key=value ...`` first line, the HTML
    as its title and a line above the figure (plotly.js from the CDN: ~150 kB instead of ~5 MB)."""
    cols = container.columns(2)
    key = key or stem
    settings = {k: st.query_params[k] for k in st.query_params}
    if csv is not None:
        cols[0].download_button("Data (CSV)", lambda: with_header(csv() if callable(csv) else csv, stem, settings),
                                file_name=f"{stem}.csv", mime="text/csv", icon=":material/download:",
                                key=f"dl-csv-{key}", on_click="ignore",
                                help="first line: the settings, commented (pandas: read_csv(path, comment='#'))")
    if fig is not None:
        cols[1].download_button("Figure (HTML)", lambda: figure_html(fig, "cdn", title=stem, params=settings),
                                file_name=f"{stem}.html", mime="text/html", icon=":material/download:",
                                key=f"dl-html-{key}", on_click="ignore",
                                help="interactive figure; loads plotly.js from its CDN when opened")


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
                              format_func=catalog.title_of, help=help)
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


def coinciding(fig: Any) -> list[tuple[str, str]]:
    """Pairs of named line traces of ``fig`` drawn exactly on top of each other (same x and y), so the page can
    say so instead of letting one curve hide the other."""
    import numpy as np

    lines = []
    for t in fig.data:
        if getattr(t, "name", None) and getattr(t, "y", None) is not None and getattr(t, "x", None) is not None:
            try:
                lines.append((t.name, np.asarray(t.x, dtype=float), np.asarray(t.y, dtype=float)))
            except (TypeError, ValueError):
                continue
    out = []
    for i, (na, xa, ya) in enumerate(lines):
        for nb, xb, yb in lines[i + 1:]:
            if (na != nb and xa.shape == xb.shape and ya.shape == yb.shape and ya.size > 1
                    and np.allclose(xa, xb, equal_nan=True) and np.allclose(ya, yb, rtol=1e-9, equal_nan=True)):
                out.append((na, nb))
    return out


def announce_coinciding(fig: Any) -> None:
    """A caption naming the curves of ``fig`` that coincide (one hides the other)."""
    pairs = coinciding(fig)
    if pairs:
        st.caption("Coinciding curves (drawn on top of each other): " + "; ".join(f"{a} = {b}" for a, b in pairs)
                   + ".")


def plot(fig: Any, key: str | None = None) -> None:
    """Draw a plotly figure at full width."""
    st.plotly_chart(fig, width="stretch", key=key, config={"displaylogo": False})


@st.cache_resource(show_spinner=False)
def _device_text() -> str:
    import torch

    from rfviz.sampling import resolve_device

    dev = resolve_device("auto")
    if dev.type == "cuda":
        return f"CUDA · {torch.cuda.get_device_name(dev)}"
    return f"CPU · {torch.get_num_threads()} threads"


def device_text() -> str:
    """The compute device Monte-Carlo runs use (rfviz.sampling.resolve_device('auto'))."""
    return _device_text()


def sidebar_info() -> None:
    """Compute device and version in the sidebar."""
    from rfviz import __version__

    st.sidebar.caption(f"Compute device: **{device_text()}** · rfviz {__version__}")
