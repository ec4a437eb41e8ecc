"""URL state: ``PageState``, the widgets of one page synchronised with the URL's query parameters.

On the first run of a page a widget starts from the URL (``?m=10&kernel=gaussian``), afterwards every change is
written back, so a view can be shared. A malformed URL value falls back to the default with a visible ``st.error``.
URL values are parsed by a ``rfviz.params.Param`` (the page-level Params of rfviz.params, or one made from the
widget's own range), so the app reads numbers and booleans the way the CLI does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import streamlit as st

from app_pages import Views
from rfviz.params import Param, ParameterError

from ._text import plain, short

URL_VALUE_MAX_CHARS = 200
"""Longer URL values are refused before parsing (and never echoed in full)."""

T = TypeVar("T")


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


# --------------------------------------------------------------------------- page state
class PageState:
    """Widgets of one page, synchronised with the URL query parameters (made by ``page``, the page frame).

    Widget keys are ``"<page>.<name>"`` in ``st.session_state`` where ``page`` is the page's URL path (= its file
    name in app_pages/); the URL uses ``name`` alone.
    """

    def __init__(self, page: str, views: Views | None = None) -> None:
        self.page = page
        self.views = views
        """The page's views (slug + label, declared in ``PAGES``), read by ``view``."""
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

    def view(self, label: str = "View", default: str | None = None, name: str = "view", container: Any = st) -> str:
        """The page's view selector (a horizontal radio stored in the URL as ``view``), drawn before the sidebar so
        the sidebar can depend on the view (tabs all run on every rerun and cannot).

        Returns the view's **slug** (``PAGES``' ``Views``: the code compares slugs, the URL stores the slug, the
        label is only shown). A URL holding a view's label, or an old label of a renamed view, opens that view
        (and the URL is rewritten to the slug)."""
        views = self.views
        if views is None:
            raise TypeError(f"page {self.page!r} declares no views (Page.views in app_pages/__init__.py)")

        def parse(text: str) -> str:
            slug = views.resolve(text)
            if slug is None:
                raise ParameterError(f"view must be one of {', '.join(views.slugs)}, got {text!r}")
            return slug

        return self._choice(container.radio, label, name, views.slugs, default, parse=parse,
                            format_func=views.label, horizontal=True)

    # -- widgets -----------------------------------------------------------
    def _choice(self, widget: Any, label: str, name: str, options: Sequence[str], default: str | None,
                parse: Callable[[str], str] = str, **kw: Any) -> str:
        """One of ``options`` from a single-choice widget (selectbox or radio), synced with the URL."""
        options = list(options)
        default = options[0] if default is None or default not in options else default
        self._init(name, default, parse, lambda v: v in options)
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
        spec = Param(name, kind(default), "int" if kind is int else "float", low=low, high=high)
        self._init(name, kind(default), spec.parse)
        value = container.slider(label, kind(low), kind(high), key=self.key(name),
                                 step=None if step is None else kind(step), **kw)
        self._sync(name, value)
        return value

    def number(self, label: str, name: str, default: float, kind: type = float, container: Any = st,
               spec: Param | None = None, **kw: Any) -> float:
        """Number input: range checks belong to the computation (so errors are shown, not clamped); its URL value
        is parsed by ``spec`` when given (bounds included), else only as a finite number."""
        spec = spec or Param(name, kind(default), "int" if kind is int else "float")
        self._init(name, kind(default), spec.parse)
        value = container.number_input(label, key=self.key(name), step=1 if kind is int else kw.pop("step", None),
                                       **kw)
        self._sync(name, value)
        return value

    def toggle(self, label: str, name: str, default: bool = False, container: Any = st, **kw: Any) -> bool:
        self._init(name, default, Param(name, default, "bool").parse)
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
