"""Export of figures and their data: CSV text of columns, stand-alone HTML, PNG (through kaleido)."""

from __future__ import annotations

import csv
import io
import pathlib
from typing import Any

import numpy as np

from ..params import ParameterError

Columns = dict[str, Any]
Data = Columns | str
"""A figure's numbers: equal-length columns, or CSV text (e.g. ``figures.common.traces_csv`` of the figure)."""

PNG_SIZE = (1200, 700)


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
