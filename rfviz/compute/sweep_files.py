"""Sweep result files (``python -m rfviz sweep … --out FILE.csv|.parquet``): reading and validating an uploaded or
local file into a ``SweepTable``, and listing the result files of a folder. rfviz.figures.sweep draws the table.

A result file has one row per grid point: the grid values (one column per grid axis), then the columns of
``rfviz.sweeps.tasks.point_row`` (``mc_mse``, ``stderr``, ``reliable``, closed-form ``mse``, …).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..params import ParameterError

RESULT_COLUMNS = ("estimator", "kernel_value", "mse", "mc_mse", "stderr", "z", "log10_mse", "log10_mc_mse", "mc_mean",
                  "top_share", "reliable", "warning", "disagrees", "trials", "seed", "device", "backend", "seconds")
"""Columns of a sweep's output row after ``point`` and the grid axes, in order (written by
``rfviz.sweeps.tasks.point_row``; the one definition of the file format, read by the writer and by this reader)."""
BOOL_COLUMNS = ("reliable", "disagrees")
STR_COLUMNS = ("estimator", "warning", "device", "backend")
OUTPUT_COLUMNS = ("point", *RESULT_COLUMNS)
"""Columns a sweep writes besides its grid axes (``rfviz.sweeps.tasks.point_row``)."""


REQUIRED_COLUMNS = ("mc_mse", "stderr", "reliable")


MAX_BYTES = 50 * 2**20
"""Largest result file read (an upload or a local file)."""


MAX_ROWS = 10**6
"""Most rows of a result file."""


MAX_CELLS = 4_000_000
"""Most values (rows × columns) of a result file, checked before reading: a Parquet file's metadata first (a
compressed constant column of 10⁸ rows is ~1 MB), a CSV file while it streams."""


MAX_UNCOMPRESSED_BYTES = 256 * 2**20
"""Largest decompressed size of a Parquet file (its row groups' total byte size, from the metadata)."""


def example_command(folder: str) -> str:
    """A sweep command that works when pasted in a shell (from the directory the app was started in) and writes
    its result where the Sweeps page looks: into ``folder``, created first (``rfviz sweep`` creates no directory).

    Parameters
    ----------
    folder : str
        The folder the Sweeps page reads.

    Returns
    -------
    str
        A shell command line.

    Examples
    --------
    >>> example_command("results").split(" && ")[0], example_command("results").split()[-1]
    ('mkdir -p results', 'results/positive.csv')
    """
    import shlex

    q = shlex.quote(folder)
    out = shlex.quote(f"{folder.rstrip('/') or '/'}/positive.csv".replace("//", "/"))
    return (f"mkdir -p {q} && python -m rfviz sweep positive d=64 --grid theta=0:3.1416:9 r=0.2:1.5:8 "
            f"--trials 20000 --out {out}")


def _check_shape(rows: int, columns: int, what: str = "file") -> None:
    """Refuse a table over ``MAX_ROWS`` rows or ``MAX_CELLS`` values (ParameterError)."""
    if rows > MAX_ROWS or rows * max(columns, 1) > MAX_CELLS:
        raise ParameterError(f"{what} must have at most {MAX_ROWS} rows and {MAX_CELLS} values (rows × columns), "
                             f"got {rows} rows × {columns} columns")


def _read_parquet(data: bytes) -> dict[str, list[Any]]:
    """Read a Parquet file after checking its metadata (rows, columns, decompressed size) against the caps."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(io.BytesIO(data))
    meta = pf.metadata
    _check_shape(meta.num_rows, meta.num_columns)
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if size > MAX_UNCOMPRESSED_BYTES:
        raise ParameterError(f"file must decompress to at most {MAX_UNCOMPRESSED_BYTES / 2**20:.0f} MiB, its "
                             f"metadata says {size / 2**20:.1f} MiB")
    return pf.read().to_pydict()


_TRUE = {"true", "1", "yes"}


_FALSE = {"false", "0", "no"}


@dataclass(frozen=True)
class SweepTable:
    """A validated sweep result: ``columns`` (name → 1-D array, all the same length) and its grid ``axes``.

    Parameters
    ----------
    columns : dict of str to numpy.ndarray
        The result's columns, all of one length.
    axes : tuple of str
        The columns that vary over the sweep's grid.
    name : str, default ""
        The file it was read from.

    Examples
    --------
    >>> t = SweepTable({"r": np.array([0.5, 1.0]), "mc_mse": np.array([0.1, 0.2])}, ("r",))
    >>> len(t)
    2
    """

    columns: dict[str, np.ndarray]
    axes: tuple[str, ...]
    name: str = ""

    def __len__(self) -> int:
        return len(self.columns["mc_mse"])

    @property
    def estimator(self) -> str:
        est = self.columns.get("estimator")
        return str(est[0]) if est is not None and len(est) else ""


def _float_column(name: str, values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values))
    for i, v in enumerate(values):
        if v is None or (isinstance(v, str) and v.strip() in ("", "nan", "None", "null")):
            out[i] = np.nan
            continue
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise ParameterError(f"column {name} must hold numbers, row {i + 1} has {v!r}") from None
    return out


def _bool_column(name: str, values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=bool)
    for i, v in enumerate(values):
        text = str(v).strip().lower()
        if isinstance(v, bool | np.bool_):
            out[i] = bool(v)
        elif text in _TRUE:
            out[i] = True
        elif text in _FALSE:
            out[i] = False
        else:
            raise ParameterError(f"column {name} must hold true/false, row {i + 1} has {v!r}")
    return out


def _axis_column(values: Sequence[Any]) -> np.ndarray:
    """A grid axis: float64 when every value is a number, else its text (e.g. complex A = -0.2+0.05j)."""
    try:
        return np.array([float(v) for v in values])
    except (TypeError, ValueError):
        return np.array([str(v) for v in values], dtype=object)


def _raw_columns(data: bytes, kind: str) -> dict[str, list[Any]]:
    if kind == "parquet":
        try:
            return _read_parquet(data)
        except ParameterError:
            raise
        except ImportError:
            raise ParameterError("file: reading Parquet needs pyarrow (pip install pyarrow)") from None
        except Exception as exc:  # pyarrow raises ArrowInvalid and friends on a corrupt file
            raise ParameterError(f"file is not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    reader = csv.reader(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise ParameterError("file is empty") from None
    except UnicodeDecodeError:
        raise ParameterError("file is not UTF-8 text (a sweep CSV is)") from None
    except csv.Error as exc:
        raise ParameterError(f"file is not a readable CSV file ({exc})") from None
    header = [h.strip() for h in header]
    cols: dict[str, list[Any]] = {h: [] for h in header}
    rows = 0
    try:
        for i, row in enumerate(reader):
            if not row:
                continue
            if len(row) != len(header):
                raise ParameterError(f"file: CSV row {i + 1} has {len(row)} fields, the header {len(header)}")
            rows += 1
            _check_shape(rows, len(header))  # while streaming: memory stays bounded by the caps
            for h, v in zip(header, row, strict=True):
                cols[h].append(v)
    except UnicodeDecodeError:
        raise ParameterError("file is not UTF-8 text (a sweep CSV is)") from None
    except csv.Error as exc:
        raise ParameterError(f"file is not a readable CSV file ({exc})") from None
    return cols


def read_results(data: bytes, filename: str, max_bytes: int = MAX_BYTES) -> SweepTable:
    """Validate and read a sweep result file (``.csv`` or ``.parquet``) given as bytes.

    ParameterError naming what is wrong: suffix, size (at most ``max_bytes``), format, the missing required columns
    (``mc_mse``, ``stderr``, ``reliable``), no grid axis, no rows, or a non-numeric value in a numeric column.

    Parameters
    ----------
    data : bytes
        The file's content.
    filename : str
        Its name (the suffix picks the format).
    max_bytes : int, default MAX_BYTES
        The largest file accepted.

    Returns
    -------
    SweepTable
        The validated columns and grid axes.

    Examples
    --------
    >>> t = read_results(b"r,mc_mse,stderr,reliable\\n0.5,0.1,0.01,true\\n1.0,0.2,0.02,true\\n", "s.csv")
    >>> t.axes, len(t)
    (('r',), 2)
    """
    kind = Path(filename).suffix.lower().lstrip(".")
    if kind not in ("csv", "parquet"):
        raise ParameterError(f"file must be a .csv or .parquet sweep result, got {filename!r}")
    if len(data) > max_bytes:
        raise ParameterError(f"file must be at most {max_bytes / 2**20:.0f} MiB, got {len(data) / 2**20:.1f} MiB")
    raw = _raw_columns(data, kind)
    missing = [c for c in REQUIRED_COLUMNS if c not in raw]
    if missing:
        raise ParameterError(f"file {filename!r} is not a sweep result: missing column(s) {', '.join(missing)} "
                             f"(expected the output of `python -m rfviz sweep`: grid axes, "
                             f"{', '.join(REQUIRED_COLUMNS)}, mse, …)")
    axes = tuple(c for c in raw if c not in OUTPUT_COLUMNS)
    if not axes:
        raise ParameterError(f"file {filename!r} has no grid-axis column (every column is a sweep output column)")
    n = len(raw["mc_mse"])
    if n == 0:
        raise ParameterError(f"file {filename!r} has no rows")
    if n > MAX_ROWS:
        raise ParameterError(f"file must have at most {MAX_ROWS} rows, got {n}")
    cols: dict[str, np.ndarray] = {}
    for name, values in raw.items():
        if name in axes:
            cols[name] = _axis_column(values)
        elif name in BOOL_COLUMNS:
            cols[name] = _bool_column(name, values)
        elif name in STR_COLUMNS:
            cols[name] = np.array(["" if v is None else str(v) for v in values], dtype=object)
        else:
            cols[name] = _float_column(name, values)
    if "log10_mc_mse" not in cols:  # a hand-made file: derive it (log10 of a non-positive MSE is −inf → a gap)
        with np.errstate(divide="ignore", invalid="ignore"):
            cols["log10_mc_mse"] = np.log10(cols["mc_mse"])
    if "log10_mse" not in cols and "mse" in cols:
        with np.errstate(divide="ignore", invalid="ignore"):
            cols["log10_mse"] = np.log10(cols["mse"])
    return SweepTable(cols, axes, Path(filename).name)


def read_rows(path: str | Path) -> Any:
    """A sweep output file's rows as a pandas DataFrame, read by its suffix matched without case (``.csv``,
    ``.parquet``, ``.PARQUET``); ParameterError for any other suffix or a file that is not of its kind.

    Parameters
    ----------
    path : str or Path
        The sweep's ``--out``.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> read_rows("results.txt")
    Traceback (most recent call last):
    rfviz.params.ParameterError: out must end in .csv or .parquet (any case), got 'results.txt'
    """
    import pandas as pd

    p = Path(path)
    kind = p.suffix.lower()
    if kind not in (".csv", ".parquet"):
        raise ParameterError(f"out must end in .csv or .parquet (any case), got {str(p)[:200]!r}")
    try:
        return pd.read_parquet(p) if kind == ".parquet" else pd.read_csv(p)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ParameterError(f"{str(p)[:200]!r} is not a readable {kind[1:]} sweep file "
                             f"({' '.join(str(exc).split())[:120]})") from None


def result_files(folder: str | Path) -> list[Path]:
    """The ``*.csv`` and ``*.parquet`` files directly in ``folder`` (sorted by name; none when it is missing).

    Parameters
    ----------
    folder : str or Path
        The folder to list.

    Returns
    -------
    list of pathlib.Path
        The result files, by name.

    Examples
    --------
    >>> result_files("/nonexistent-folder")
    []
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in (".csv", ".parquet"))
