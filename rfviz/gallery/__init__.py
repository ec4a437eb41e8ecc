"""The paper figure gallery: each paper's key figures, rebuilt by rfviz's own figure builders.

Every entry is a ``GalleryFigure``: a builder returning (plotly Figure, data), a caption saying what to see, the
errata where rfviz's value differs from the printed paper, the numbers the reference catalogs print (``catalog``,
as printed text, so the printed precision is the tolerance), a ``key_numbers`` function reading rfviz's values of
those numbers from the built figure's data, and the explorer view (page + query parameters) that shows the same
thing live. Entries register with ``@gallery_figure`` (rfviz.gallery.registry); one module of entries per paper
(``hrf``, ``crt``, ``simrf``, ``dp``, ``optimal``, ``derf``, ``orf_bessel``), imported by ``load_gallery``. Export
helpers: rfviz.figures.export.
"""

from __future__ import annotations

import functools
import math
import os
import pathlib
from dataclasses import dataclass
from typing import Any

from ..figures.export import PNG_SIZE, columns_to_csv, data_csv, figure_html, write_png
from ..fileio import atomic_write, tmp_path_for
from ..params import ParameterError
from .registry import GALLERY, Builder, Columns, Data, GalleryFigure, KeyNumbers, gallery_figure


def load_gallery() -> dict[str, GalleryFigure]:
    """Import the entry modules (one per paper; each registers its entries on import); return the gallery.

    Returns
    -------
    dict of str to GalleryFigure
        Every entry by name, in paper order.

    Examples
    --------
    >>> "hrf-fig1-mse-surfaces" in load_gallery()
    True
    """
    # Imported for their @gallery_figure side effect, in paper order (the order of the gallery).
    # isort: off
    from . import hrf, crt, simrf, dp, optimal, derf, orf_bessel  # noqa: F401
    # isort: on

    return GALLERY


def get_figure(name: str) -> GalleryFigure:
    """The gallery entry ``name`` (ParameterError listing the entries otherwise).

    Parameters
    ----------
    name : str
        An entry of ``load_gallery()``.

    Returns
    -------
    GalleryFigure
        The entry.

    Examples
    --------
    >>> get_figure("hrf-fig1-mse-surfaces").name
    'hrf-fig1-mse-surfaces'
    """
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

    Parameters
    ----------
    text : str
        The number as the reference prints it.

    Returns
    -------
    value : float
        The number.
    tolerance : float
        Half a unit in its last printed digit (or the explicit tolerance).

    Examples
    --------
    >>> printed_value("-23.40")
    (-23.4, 0.005)
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
    """One catalog number against rfviz's value.

    Parameters
    ----------
    key : str
        The catalog's key.
    printed : str
        The value as the reference prints it.
    catalog : float
        The value checked against (the correction where the reference is wrong).
    rfviz : float
        rfviz's value.
    tolerance : float
        Half a unit in the printed value's last digit.
    note : str, default ""
        Why the reference's value was corrected, if it was.

    Examples
    --------
    >>> KeyCheck("a", "0.204", 0.204, 0.2041, 0.0005).ok
    True
    """

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
    """Every catalog number of entry ``name`` against rfviz's value, to the printed precision.

    Parameters
    ----------
    name : str
        An entry of ``load_gallery()``.

    Returns
    -------
    list of KeyCheck
        One per catalog key.

    Examples
    --------
    >>> all(c.ok for c in check_key_numbers("hrf-fig1-mse-surfaces"))
    True
    """
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


def export_figure(name: str, out: str | None = None, data: str | None = None) -> dict[str, str]:
    """Build figure ``name``; write HTML (or PNG by the file suffix, through kaleido and a Chromium) and CSV.

    Parameters
    ----------
    name : str
        An entry of ``load_gallery()``.
    out : str, optional
        The figure's file (``.html`` or ``.png``).
    data : str, optional
        The CSV file of its data.

    Returns
    -------
    dict of str to str
        The files written, by kind (``figure``, ``data``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> sorted(export_figure("hrf-fig1-mse-surfaces", data=str(folder / "f.csv")))
    ['data']
    """
    entry = get_figure(name)
    if out:
        suffix = pathlib.Path(out).suffix.lower()
        if suffix not in (".png", ".html", ".htm"):
            raise ParameterError(f"--out must end in .html or .png, got {out!r}")
    fig, columns = build_figure(entry.name)
    written: dict[str, str] = {}
    if out:  # each file is written beside its target and renamed into place (rfviz.fileio)
        path = pathlib.Path(out)
        if path.suffix.lower() == ".png":
            tmp = tmp_path_for(path)
            try:
                write_png(fig, tmp)
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
        else:
            atomic_write(path, figure_html(fig, title=entry.name, params=entry.params))
        written["figure"] = str(path)
    if data:
        atomic_write(data, data_csv(columns, entry.name, entry.params))
        written["data"] = str(data)
    return written


__all__ = ["GALLERY", "PNG_SIZE", "Builder", "Columns", "Data", "GalleryFigure", "KeyCheck", "KeyNumbers",
           "build_figure", "check_key_numbers", "columns_to_csv", "data_csv", "export_figure", "figure_html",
           "gallery_figure", "get_figure", "load_gallery", "printed_value", "write_png"]
