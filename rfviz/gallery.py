"""The paper figure gallery: each paper's key figures, rebuilt by rfviz's own figure builders.

Every entry is a ``GalleryFigure``: a builder returning (plotly Figure, data columns), a caption saying what to
see, the errata where rfviz's value differs from the printed paper, the key numbers the reference catalogs
give (checked by the tests), and the explorer view (page + query parameters) that shows the same thing live.
Entries register with ``@gallery_figure``; modules that add entries are listed in ``GALLERY_MODULES``.
"""

from __future__ import annotations

import csv
import importlib
import io
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import numpy as np

from .params import ParameterError

Columns = dict[str, Any]
Builder = Callable[[], tuple[Any, Columns]]


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
    key_numbers: Callable[[], dict[str, float]] | None = None

    def explorer_link(self) -> str:
        """Relative URL of the live view with this figure's parameters (query parameters of the page)."""
        if not self.explorer_page:
            return ""
        query = urlencode(self.explorer_params)
        return f"/{self.explorer_page}" + (f"?{query}" if query else "")


GALLERY: dict[str, GalleryFigure] = {}
GALLERY_MODULES: list[str] = []


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


def export_figure(name: str, out: str | None = None, data: str | None = None) -> dict[str, str]:
    """Build figure ``name``; write HTML (or PNG by the file suffix, through kaleido and a Chromium) and CSV."""
    entry = get_figure(name)
    fig, columns = entry.build()
    written: dict[str, str] = {}
    if out:
        path = pathlib.Path(out)
        if path.suffix.lower() == ".png":
            fig.write_image(str(path), width=1200, height=700)
        elif path.suffix.lower() in (".html", ".htm"):
            fig.write_html(str(path), include_plotlyjs="cdn", full_html=True)
        else:
            raise ParameterError(f"--out must end in .html or .png, got {out!r}")
        written["figure"] = str(path)
    if data:
        pathlib.Path(data).write_text(columns_to_csv(columns))
        written["data"] = str(data)
    return written
