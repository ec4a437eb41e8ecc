"""The paper figure gallery: each paper's key figures, rebuilt by rfviz's own figure builders.

Every entry is a ``GalleryFigure``: a builder returning (plotly Figure, data), a caption saying what to see, the
errata where rfviz's value differs from the printed paper, the numbers the reference catalogs print (``catalog``,
as printed text, so the printed precision is the tolerance), a ``key_numbers`` function reading rfviz's values of
those numbers from the built figure's data, and the explorer view (page + query parameters) that shows the same
thing live. Entries register with ``@gallery_figure``; modules that add entries are listed in ``GALLERY_MODULES``.
"""

from __future__ import annotations

import csv
import functools
import importlib
import io
import math
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import numpy as np

from .params import ParameterError

Columns = dict[str, Any]
Data = Columns | str
"""A figure's numbers: equal-length columns, or CSV text (e.g. ``figures.common.traces_csv`` of the figure)."""
Builder = Callable[[], tuple[Any, Data]]
KeyNumbers = Callable[[Any, Data], dict[str, float]]

PNG_SIZE = (1200, 700)


@dataclass(frozen=True)
class GalleryFigure:
    """One reproducible paper figure."""

    name: str
    title: str
    paper: str
    caption: str
    build: Builder
    errata: str = ""
    explorer_page: str = ""
    explorer_params: dict[str, str] = field(default_factory=dict)
    key_numbers: KeyNumbers | None = None
    """(figure, data) → rfviz's value of every ``catalog`` key (read from the built figure's data where it holds
    them, else computed by the same pure functions the builder uses)."""
    catalog: dict[str, str] = field(default_factory=dict)
    """Key → the value the reference catalog prints, as printed ("0.204", "-23.40", "1.226e7", "-inf"); a value
    read off a grid carries its grid precision explicitly ("3.1622±0.00025")."""
    corrections: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Key → (correct value, why): catalog numbers that are wrong in the reference; rfviz is checked against the
    correct value and the page shows both."""
    params: dict[str, Any] = field(default_factory=dict)
    """The figure's parameters (shown on the gallery page and by ``figure --list --json``)."""
    source: str = ""
    """Where the catalog numbers come from (reference file and section)."""

    def explorer_link(self, prefix: str = "/") -> str:
        """URL of the live view with this figure's parameters (query parameters of the page): ``/page?query``,
        or relative to the current page with ``prefix="./"``."""
        if not self.explorer_page:
            return ""
        query = urlencode(self.explorer_params)
        return f"{prefix}{self.explorer_page}" + (f"?{query}" if query else "")


GALLERY: dict[str, GalleryFigure] = {}
GALLERY_MODULES: list[str] = ["rfviz.gallery_figures"]


def gallery_figure(entry: GalleryFigure) -> GalleryFigure:
    """Register a gallery entry (names are unique)."""
    if entry.name in GALLERY:
        raise ValueError(f"gallery figure {entry.name!r} registered twice")
    GALLERY[entry.name] = entry
    return entry


def load_gallery() -> dict[str, GalleryFigure]:
    """Import every module that registers gallery entries; return the gallery."""
    for mod in GALLERY_MODULES:
        importlib.import_module(mod)
    return GALLERY


def get_figure(name: str) -> GalleryFigure:
    gallery = load_gallery()
    if name not in gallery:
        raise ParameterError(f"figure must be one of {', '.join(sorted(gallery)) or '(none)'}, got {name!r}")
    return gallery[name]


@functools.lru_cache(maxsize=32)
def build_figure(name: str) -> tuple[Any, Data]:
    """The built (figure, data) of entry ``name``, cached for the process (builders are deterministic).
    Callers must not mutate the returned figure (copy it with ``go.Figure(fig)`` first)."""
    return get_figure(name).build()


# ------------------------------------------------------------------------------------ printed catalog numbers
def printed_value(text: str) -> tuple[float, float]:
    """(value, tolerance) of a number as printed: half a unit in its last printed digit.

    "0.204" → (0.204, 0.0005); "-23.40" → (-23.4, 0.005); "1.226e7" → (1.226e7, 5e3); "2958.8" → (2958.8, 0.05);
    "0" → (0, 1e-12) (an exact zero); "-inf" / "inf" / "∞" → (±inf, 0) (must match exactly); "1.235±0.007" →
    (1.235, 0.007) (an explicit tolerance, e.g. the grid step of a printed argmin).
    """
    t = text.strip().replace("−", "-").replace("∞", "inf")
    if "±" in t:
        value_text, _, tol_text = t.partition("±")
        return float(value_text), float(tol_text)
    value = float(t)
    if not math.isfinite(value):
        return value, 0.0
    mantissa, _, exponent = t.lower().partition("e")
    if value == 0 and "." not in mantissa:
        return 0.0, 1e-12  # a printed "0" is an exact zero (up to round-off)
    decimals = len(mantissa.partition(".")[2])
    return value, 0.5 * 10.0 ** (int(exponent or 0) - decimals)


@dataclass(frozen=True)
class KeyCheck:
    """One catalog number against rfviz's value."""

    key: str
    printed: str
    catalog: float
    rfviz: float
    tolerance: float
    note: str = ""
    """Set when the reference's printed value is wrong: "reference prints X; <why>" (``catalog`` is then the
    correct value)."""

    @property
    def ok(self) -> bool:
        if not math.isfinite(self.catalog):
            return self.rfviz == self.catalog
        return math.isfinite(self.rfviz) and abs(self.rfviz - self.catalog) <= self.tolerance * (1 + 1e-9) + 1e-15


def check_key_numbers(name: str) -> list[KeyCheck]:
    """Every catalog number of entry ``name`` against rfviz's value, to the printed precision."""
    entry = get_figure(name)
    if not entry.catalog:
        return []
    if entry.key_numbers is None:
        raise ValueError(f"gallery figure {name!r} has catalog numbers but no key_numbers function")
    fig, data = build_figure(name)
    values = entry.key_numbers(fig, data)
    missing = sorted(set(entry.catalog) - set(values))
    if missing:
        raise KeyError(f"gallery figure {name!r}: key_numbers gives no value for {missing}")
    out = []
    for key, text in entry.catalog.items():
        note = ""
        if key in entry.corrections:
            correct, why = entry.corrections[key]
            note = f"reference prints {text}; {why}"
            text = correct
        value, tol = printed_value(text)
        out.append(KeyCheck(key, text, value, float(values[key]), tol, note))
    return out


# --------------------------------------------------------------------------------------------- data and export
def columns_to_csv(columns: Columns) -> str:
    """Columns (equal-length 1-D sequences, or scalars repeated) as CSV text; non-finite numbers written as empty."""
    arrays = {k: np.atleast_1d(np.asarray(v)) for k, v in columns.items()}
    n = max((len(a) for a in arrays.values()), default=0)
    for k, a in arrays.items():
        if len(a) not in (1, n):
            raise ValueError(f"column {k!r} has {len(a)} rows, expected {n}")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(list(arrays))
    for i in range(n):
        row = []
        for a in arrays.values():
            v = a[0] if len(a) == 1 else a[i]
            if isinstance(v, float | np.floating) and not np.isfinite(v):
                row.append("")
            else:
                row.append(v.item() if hasattr(v, "item") else v)
        writer.writerow(row)
    return buf.getvalue()


def data_csv(data: Data) -> str:
    """A figure's data as CSV text."""
    return data if isinstance(data, str) else columns_to_csv(data)


def figure_html(fig: Any, include_plotlyjs: bool | str = True) -> str:
    """Stand-alone HTML of a figure (plotly.js embedded by default, so the file works offline)."""
    return fig.to_html(include_plotlyjs=include_plotlyjs, full_html=True)


def write_png(fig: Any, path: str | pathlib.Path) -> None:
    """PNG through kaleido and a Chromium; ParameterError (one line) when no browser can be started."""
    try:
        fig.write_image(str(path), width=PNG_SIZE[0], height=PNG_SIZE[1])
    except Exception as exc:  # kaleido raises assorted errors when no Chromium is available
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ParameterError(f"--out .png needs kaleido and a Chromium/Chrome browser ({msg}); "
                             "write .html instead") from None


def export_figure(name: str, out: str | None = None, data: str | None = None) -> dict[str, str]:
    """Build figure ``name``; write HTML (or PNG by the file suffix, through kaleido and a Chromium) and CSV."""
    entry = get_figure(name)
    if out:
        suffix = pathlib.Path(out).suffix.lower()
        if suffix not in (".png", ".html", ".htm"):
            raise ParameterError(f"--out must end in .html or .png, got {out!r}")
    fig, columns = build_figure(entry.name)
    written: dict[str, str] = {}
    if out:
        path = pathlib.Path(out)
        if path.suffix.lower() == ".png":
            write_png(fig, path)
        else:
            path.write_text(figure_html(fig), encoding="utf-8")
        written["figure"] = str(path)
    if data:
        pathlib.Path(data).write_text(data_csv(columns), encoding="utf-8")
        written["data"] = str(data)
    return written
