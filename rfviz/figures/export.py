"""Export of figures and their data: CSV text of columns, stand-alone HTML, PNG (through kaleido).

Downloads carry their parameters: CSV text starts with one commented header line
``# rfviz <version> <figure> key=value ...`` (read it back with ``pandas.read_csv(path, comment="#")`` or
``numpy.genfromtxt(path, delimiter=",", names=True, comments="#")``); the HTML has a title and the same parameters
above the figure.
"""

from __future__ import annotations

import csv
import functools
import html
import io
import json
import pathlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..params import ParameterError

Columns = dict[str, Any]
Data = Columns | str
"""A figure's numbers: equal-length columns, or CSV text (e.g. ``figures.common.traces_csv`` of the figure)."""

PNG_SIZE = (1200, 700)


def _version() -> str:
    from .._version import __version__

    return __version__


def _value(v: Any) -> str:
    """One parameter value as a token: numbers with %g, text quoted (JSON) when it has spaces, '=' or quotes."""
    if isinstance(v, float | np.floating):
        text = f"{float(v):.10g}"
    elif isinstance(v, list | tuple | np.ndarray):
        text = ",".join(_value(x) for x in v)
    else:
        text = str(v)
    text = " ".join(text.split())  # one line
    return json.dumps(text, ensure_ascii=False) if any(c in text for c in ' ="#') or not text else text


def parameter_line(figure: str, params: Mapping[str, Any] | None = None) -> str:
    """``rfviz <version> <figure> key=value ...`` (no comment sign, no newline)."""
    items = " ".join(f"{k}={_value(v)}" for k, v in (params or {}).items())
    return f"rfviz {_version()} {_value(figure)}" + (f" {items}" if items else "")


def csv_header(figure: str, params: Mapping[str, Any] | None = None) -> str:
    """The commented first line of a CSV download: ``# rfviz <version> <figure> key=value ...``."""
    return f"# {parameter_line(figure, params)}\n"


def with_header(text: str, figure: str | None, params: Mapping[str, Any] | None = None) -> str:
    """CSV ``text`` with the parameter header line in front (unchanged when ``figure`` is None or it has one)."""
    if figure is None or text.startswith("# rfviz "):
        return text
    return csv_header(figure, params) + text


def columns_to_csv(columns: Columns, figure: str | None = None, params: Mapping[str, Any] | None = None) -> str:
    """Columns (equal-length 1-D sequences, or scalars repeated) as CSV text; non-finite numbers written as empty.

    With ``figure`` the text starts with the ``csv_header`` of ``figure`` and ``params``."""
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
    return with_header(buf.getvalue(), figure, params)


def data_csv(data: Data, figure: str | None = None, params: Mapping[str, Any] | None = None) -> str:
    """A figure's data as CSV text (with the parameter header when ``figure`` is given)."""
    return with_header(data, figure, params) if isinstance(data, str) else columns_to_csv(data, figure, params)


def _float32(fig: Any) -> Any:
    """A copy of ``fig`` with its float arrays (x, y, z, surfacecolor, customdata) stored as float32."""
    out = type(fig)(fig)
    for t in out.data:
        for attr in ("x", "y", "z", "surfacecolor"):
            v = getattr(t, attr, None)
            if v is None:
                continue
            a = np.asarray(v)
            if a.dtype.kind == "f":
                setattr(t, attr, a.astype(np.float32))
    return out


@functools.cache
def plotlyjs_size() -> int:
    """Bytes of the plotly.js bundle that an offline (self-contained) HTML figure inlines (about 4.7 MB).

    Examples
    --------
    >>> plotlyjs_size() > 1_000_000
    True
    """
    from plotly.offline import get_plotlyjs

    return len(get_plotlyjs().encode())


def figure_html(fig: Any, include_plotlyjs: bool | str = True, *, title: str | None = None,
                params: Mapping[str, Any] | None = None, float32: bool = True) -> str:
    """Stand-alone HTML of a figure: plotly.js embedded by default (works offline; ``include_plotlyjs="cdn"`` makes
    the file ~4.8 MB lighter but needs the network), a page title and a line of parameters above the figure
    (``parameter_line`` of ``title`` and ``params``), data stored as float32 typed arrays unless ``float32`` is
    False."""
    body = (_float32(fig) if float32 else fig).to_html(include_plotlyjs=include_plotlyjs, full_html=True)
    if title is None:
        return body
    head = f"<title>{html.escape(title)}</title>"
    line = (f'<p style="font-family:monospace;font-size:12px;color:#444;margin:4px 8px">'
            f"{html.escape(parameter_line(title, params))}</p>")
    body = body.replace("<head>", f"<head>{head}", 1)
    return body.replace("<body>", f"<body>{line}", 1)


def write_png(fig: Any, path: str | pathlib.Path) -> None:
    """PNG through kaleido and a Chromium; ParameterError (one line) when no browser can be started."""
    try:
        fig.write_image(str(path), width=PNG_SIZE[0], height=PNG_SIZE[1])
    except Exception as exc:  # kaleido raises assorted errors when no Chromium is available
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ParameterError(f"--out .png needs kaleido and a Chromium/Chrome browser ({msg}); "
                             "write .html instead") from None
