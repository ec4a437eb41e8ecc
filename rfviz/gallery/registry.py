"""The gallery's entry format and registry: ``GalleryFigure`` and ``@gallery_figure`` (the per-paper entry modules
import only this, so the package has no import cycle)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

Columns = dict[str, Any]
Data = Columns | str
"""A figure's numbers: equal-length columns, or CSV text (e.g. ``figures.common.traces_csv`` of the figure)."""
Builder = Callable[[], tuple[Any, Data]]
KeyNumbers = Callable[[Any, Data], dict[str, float]]

@dataclass(frozen=True)
class GalleryFigure:
    """One reproducible paper figure.

    Parameters
    ----------
    name : str
        Unique identifier (``<paper>-<figure>-<what>``).
    title : str
        The figure's title.
    paper : str
        The paper and figure it reproduces, as shown (e.g. "Hybrid Random Features (...), Fig. 1").
    caption : str
        What the figure shows.
    build : callable
        Returns (figure, data) from the figure's parameters.
    errata : str, default ""
        What rfviz corrects in the paper's figure.
    explorer_page : str, default ""
        URL path of the live page.
    explorer_params : dict of str to str
        Query parameters of the live page.
    key_numbers : callable, optional
        (figure, data) → rfviz's value of every ``catalog`` key.
    catalog : dict of str to str
        Key → the value the reference catalog prints.
    corrections : dict of str to (str, str)
        Key → (correct value, why) where the reference is wrong.
    params : dict
        The figure's parameters.
    source : str, default ""
        Where the catalog numbers come from (reference file and section).

    Examples
    --------
    >>> from rfviz.gallery import load_gallery
    >>> load_gallery()["hrf-fig1-mse-surfaces"].explorer_page
    'mse_explorer'
    """

    name: str
    title: str
    paper: str
    caption: str
    build: Builder
    errata: str = ""
    explorer_page: str = ""
    explorer_params: dict[str, str] = field(default_factory=dict)
    """Query parameters of the live page; a view by its slug (``"view": "oprf"``, the page's ``Views`` in
    app_pages/__init__.py), never its label, so renaming a view keeps the link."""
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
        or relative to the current page with ``prefix="./"``.

        Parameters
        ----------
        prefix : str, default "/"
            What comes before the page's URL path.

        Returns
        -------
        str
            The link.

        Examples
        --------
        >>> from rfviz.gallery import load_gallery
        >>> load_gallery()["hrf-fig1-mse-surfaces"].explorer_link().startswith("/mse_explorer?")
        True
        """
        if not self.explorer_page:
            return ""
        query = urlencode(self.explorer_params)
        return f"{prefix}{self.explorer_page}" + (f"?{query}" if query else "")


GALLERY: dict[str, GalleryFigure] = {}


def gallery_figure(entry: GalleryFigure) -> GalleryFigure:
    """Register a gallery entry (names are unique).

    Parameters
    ----------
    entry : GalleryFigure
        The entry.

    Returns
    -------
    GalleryFigure
        The same entry, registered.
    """
    if entry.name in GALLERY:
        raise ValueError(f"gallery figure {entry.name!r} registered twice")
    GALLERY[entry.name] = entry
    return entry
