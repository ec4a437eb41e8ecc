"""Data sets for Gram- and attention-matrix errors: queries x_i and keys y_j as two arrays.

Sources:

* scikit-learn's bundled sets (no download): ``digits``, ``wine``, ``iris``, ``breast_cancer`` (BSD-3-Clause
  package; the data are the UCI sets distributed with scikit-learn, see ``BUNDLED``);
* ``clusters``: the synthetic Gaussian clusters of [HRF] App. H.3 (two d-dimensional clusters per side whose
  centres are random rotations of X_0, Y_0, with signs set so that a chosen number of coordinates of every query
  centre and key centre agree in sign, which fixes how far the real-diagonal l(A) of eq. 21/88 stays from 0);
* the user's own file: CSV (numbers only, an optional header row) or ``.npy`` (no pickles), queries and keys
  drawn from one file or read from two, size-limited.

Preprocessing (the papers' choices, applied in the order given, with one transform shared by both sides so that
x·y keeps its meaning): ``center`` (subtract the mean of all points), ``sphere`` (each point to norm 1, the
dot-product paper's unit sphere), ``standardize`` (every coordinate to mean 0 and standard deviation 1; constant
coordinates to 0), ``attention`` (multiply by d^{-1/4}, so x·y becomes q·k/√d as in softmax
attention), ``scale`` (rescale so that the mean norm is ``scale``, HRF H.3).
"""

from __future__ import annotations

import io
import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .params import MAX_DIMENSION, Cost, Param, ParameterError, check, check_int, require_cost

MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_ROWS = 200_000
MAX_DIM = 4096
MAX_POINTS = 5000
MAX_VALUES = 4_000_000
"""Most numbers (rows × columns) an uploaded or local data file may hold (32 MB as float64), checked while reading."""
"""Most queries (and most keys) one data set may hold: a Gram matrix has queries × keys entries."""

BUNDLED: dict[str, tuple[str, str]] = {
    "digits": ("load_digits", "UCI Optical Recognition of Handwritten Digits (8×8 images, 64-d, 1797 points); "
                              "bundled with scikit-learn (BSD-3-Clause), data CC BY 4.0 (UCI)"),
    "wine": ("load_wine", "UCI Wine recognition (13-d, 178 points); bundled with scikit-learn (BSD-3-Clause), "
                          "data CC BY 4.0 (UCI)"),
    "iris": ("load_iris", "Fisher's Iris (4-d, 150 points); bundled with scikit-learn (BSD-3-Clause), data CC BY 4.0 "
                          "(UCI)"),
    "breast_cancer": ("load_breast_cancer", "UCI Breast Cancer Wisconsin (Diagnostic) (30-d, 569 points); bundled "
                                            "with scikit-learn (BSD-3-Clause), data CC BY 4.0 (UCI)"),
}
SYNTHETIC = ("clusters",)
PREPROCESS_STEPS = ("center", "standardize", "sphere", "attention", "scale")


@dataclass(frozen=True)
class DataSet:
    """Queries (N, d) and keys (M, d), float64, with a description of where they came from.

    Parameters
    ----------
    queries : numpy.ndarray
        Shape (N, d).
    keys : numpy.ndarray
        Shape (M, d).
    name : str
        Where they came from (a bundled set, ``clusters`` or a file).
    info : dict
        The preprocessing and sampling applied (JSON-ready).

    Examples
    --------
    >>> ds = DataSet(np.ones((2, 3)), np.zeros((4, 3)), "toy")
    >>> (ds.d, ds.describe()["keys"])
    (3, 4)
    """

    queries: np.ndarray
    keys: np.ndarray
    name: str
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def d(self) -> int:
        return int(self.queries.shape[1])

    def describe(self) -> dict[str, Any]:
        """JSON-ready summary: sizes, norms, the source and the preprocessing applied.

        Returns
        -------
        dict
            ``name``, ``queries``, ``keys``, ``d``, mean and max norms, then ``info``.
        """
        qn = np.linalg.norm(self.queries, axis=1)
        kn = np.linalg.norm(self.keys, axis=1)
        return {"name": self.name, "queries": int(self.queries.shape[0]), "keys": int(self.keys.shape[0]),
                "d": self.d, "mean_query_norm": float(qn.mean()), "mean_key_norm": float(kn.mean()),
                "max_norm": float(max(qn.max(), kn.max())), **self.info}


# ------------------------------------------------------------------------------------------ loading
def _check_matrix(name: str, a: np.ndarray) -> np.ndarray:
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ParameterError(f"{name} must hold a non-empty 2-D table of numbers (rows = points), got shape "
                             f"{a.shape}")
    if a.shape[0] > MAX_ROWS or a.shape[1] > MAX_DIM:
        raise ParameterError(f"{name} must have at most {MAX_ROWS} rows and {MAX_DIM} columns, got {a.shape[0]}×"
                             f"{a.shape[1]}")
    if not np.all(np.isfinite(a)):
        raise ParameterError(f"{name} must contain finite numbers only (found NaN or inf)")
    return np.ascontiguousarray(a, dtype=float)


MAX_FIELD_CHARS = 64
"""Longest number accepted in a CSV field (a float64 needs 24 characters; 64 leaves room for padding)."""
MAX_LINE_BYTES = MAX_DIM * (MAX_FIELD_CHARS + 1)
"""Longest CSV line: ``MAX_DIM`` fields of ``MAX_FIELD_CHARS`` characters and their separators."""
_FIELD = re.compile(rb"[^\s,]+")


def _too_many_fields(line: bytes, sep: bytes | None) -> bool:
    """Whether ``line`` has more than ``MAX_DIM`` fields, counted without splitting it (bounded memory)."""
    if sep is not None:
        return line.count(sep) >= MAX_DIM
    return any(True for _ in itertools.islice(_FIELD.finditer(line), MAX_DIM, MAX_DIM + 1))


def _parse_csv(name: str, raw: bytes) -> np.ndarray:
    """Rows of numbers (an optional header row, ``#`` comments, a UTF-8 byte-order mark ignored), read line by line
    from the bytes; every line's length and field count are checked before it is decoded or converted, and reading
    stops as soon as the rows pass ``MAX_ROWS`` rows, ``MAX_DIM`` columns or ``MAX_VALUES`` values: memory stays
    bounded by the caps (one line at a time, rows as float64 arrays)."""
    sep: bytes | None = None
    rows: list[np.ndarray] = []
    width = 0
    header_seen = False
    buf = io.BytesIO(raw)
    buf.seek(3 if raw.startswith(b"\xef\xbb\xbf") else 0)
    lines = iter(lambda: buf.readline(MAX_LINE_BYTES + 1), b"")  # one line at most MAX_LINE_BYTES + 1 in memory
    for k, ln in enumerate(lines):
        if len(ln) > MAX_LINE_BYTES:
            raise ParameterError(f"{name}: line {k + 1} is longer than {MAX_LINE_BYTES} bytes (at most {MAX_DIM} "
                                 f"columns of at most {MAX_FIELD_CHARS} characters); reading stopped there")
        if not ln.strip() or ln.lstrip().startswith(b"#"):
            continue
        if not rows and not header_seen:
            sep = b"," if b"," in ln else None
        if _too_many_fields(ln, sep):
            raise ParameterError(f"{name} must have at most {MAX_DIM} columns; line {k + 1} has more (reading "
                                 f"stopped there)")
        try:
            text = ln.decode("utf-8")
            values = np.array([float(t) for t in text.split(None if sep is None else ",") if t.strip()])
        except UnicodeDecodeError:
            raise ParameterError(f"{name} must be a CSV text file (UTF-8) or a .npy array; line {k + 1} is not "
                                 f"text") from None
        except ValueError:
            if rows or header_seen:
                raise ParameterError(f"{name}: line {k + 1} is not a row of numbers: {text.strip()[:60]!r}") from None
            header_seen = True  # a header row
            continue
        if rows and len(values) != width:
            raise ParameterError(f"{name}: every row must have the same number of columns, got {width} and "
                                 f"{len(values)} (line {k + 1})")
        width = len(values)
        rows.append(values)
        if len(rows) > MAX_ROWS or width > MAX_DIM or len(rows) * width > MAX_VALUES:
            raise ParameterError(f"{name} must have at most {MAX_ROWS} rows, {MAX_DIM} columns and {MAX_VALUES} "
                                 f"values (rows × columns); reading stopped at line {k + 1}")
    if not rows:
        raise ParameterError(f"{name} has a header but no rows" if header_seen else f"{name} is empty")
    return np.stack(rows)


def read_array(source: str | Path | bytes, name: str = "data", filename: str | None = None) -> np.ndarray:
    """A 2-D float array from a CSV or ``.npy`` file path, or from the raw bytes of one (an app upload).

    Size-limited (``MAX_FILE_BYTES``, ``MAX_ROWS``, ``MAX_DIM``); ``.npy`` files are read without pickles.

    Parameters
    ----------
    source : str, Path or bytes
        A file path, or a file's bytes.
    name : str, default "data"
        What the data is, named in errors.
    filename : str, optional
        The uploaded file's name when ``source`` is bytes (its suffix picks the format).

    Returns
    -------
    numpy.ndarray
        Shape (rows, columns), float64; ParameterError for a file that is too large or not numbers.

    Examples
    --------
    >>> read_array(b"1,2\\n3,4\\n", filename="a.csv").tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    if isinstance(source, bytes):
        raw, fname = source, filename or ""
    else:
        path = Path(source)
        if not path.is_file():
            why = ("is a directory" if path.is_dir() else "is not a regular file (a device, pipe or socket)"
                   if path.exists() else "does not exist (no file)")
            raise ParameterError(f"{name} must be digits, wine, iris, breast_cancer, clusters or a path to a .csv "
                                 f"or .npy file; {str(path)[:200]!r} {why}")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ParameterError(f"{name} file must be at most {MAX_FILE_BYTES // 2**20} MiB, got "
                                 f"{path.stat().st_size / 2**20:.1f} MiB")
        with open(path, "rb") as fh:  # at most the cap + 1 bytes, even if the file grew since the stat
            raw, fname = fh.read(MAX_FILE_BYTES + 1), path.name
    if len(raw) > MAX_FILE_BYTES:
        raise ParameterError(f"{name} file must be at most {MAX_FILE_BYTES // 2**20} MiB")
    if raw[:6] == NPY_MAGIC:
        return _check_matrix(name, _load_npy(name, raw))
    if fname.lower().endswith(".npy"):
        what = "a .npz archive (zip)" if raw[:4] == b"PK\x03\x04" else "not a .npy array"
        raise ParameterError(f"{name}: {fname[:60]!r} is named .npy but is {what}; give a .npy saved by "
                             f"numpy.save or a CSV file")
    if raw[:4] == b"PK\x03\x04":
        raise ParameterError(f"{name}: a zip archive (.npz?) is not supported; give a .npy saved by numpy.save or a "
                             f"CSV file")
    return _check_matrix(name, _parse_csv(name, raw))


NPY_MAGIC = b"\x93NUMPY"


def _npy_header(name: str, buf: io.BytesIO) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) from a ``.npy`` header, checked against the caps before any data is read: a numeric dtype, at
    most two axes, at most ``MAX_ROWS`` rows, ``MAX_DIM`` columns and ``MAX_VALUES`` numbers."""
    from numpy.lib import format as npy_format

    try:
        version = npy_format.read_magic(buf)
        read = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
        shape, _, dtype = read(buf, max_header_size=10_000)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as exc:
        raise ParameterError(f"{name}: not a numeric .npy array ({' '.join(str(exc).split())[:120]})") from None
    if dtype.hasobject or dtype.kind not in "iuf":
        raise ParameterError(f"{name}: .npy array must be numeric, got dtype {dtype}")
    if len(shape) > 2:
        raise ParameterError(f"{name} must hold a non-empty 2-D table of numbers (rows = points), got a .npy array "
                             f"of shape {shape}")
    rows, cols = (*shape, 1, 1)[:2]
    if rows > MAX_ROWS or cols > MAX_DIM or math.prod(shape) > MAX_VALUES:
        raise ParameterError(f"{name} must have at most {MAX_ROWS} rows, {MAX_DIM} columns and {MAX_VALUES} "
                             f"numbers, got a .npy array of shape {shape} (read from its header; nothing loaded)")
    return shape, dtype


def _load_npy(name: str, raw: bytes) -> np.ndarray:
    """A numeric array from the bytes of a ``.npy`` file, read without pickles; ParameterError for anything else
    (object arrays, a damaged header, truncated data, a shape past the caps — refused from the header, before the
    data is converted)."""
    buf = io.BytesIO(raw)
    shape, dtype = _npy_header(name, buf)
    if len(raw) - buf.tell() < math.prod(shape) * dtype.itemsize:
        raise ParameterError(f"{name}: .npy data is shorter than its header's shape {shape} (a truncated file)")
    try:
        a = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ParameterError(f"{name}: not a numeric .npy array ({' '.join(str(exc).split())[:120]})") from None
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "iuf":
        raise ParameterError(f"{name}: .npy array must be numeric, got dtype {getattr(a, 'dtype', type(a).__name__)}")
    return np.asarray(a, dtype=float)


def bundled(name: str) -> np.ndarray:
    """The feature matrix of one of scikit-learn's bundled sets (no download).

    Parameters
    ----------
    name : str
        A key of ``BUNDLED``.

    Returns
    -------
    numpy.ndarray
        The set's features, shape (samples, features).

    Examples
    --------
    >>> bundled("iris").shape
    (150, 4)
    """
    if name not in BUNDLED:
        raise ParameterError(f"data must be one of {', '.join(BUNDLED)}, got {name!r}")
    import sklearn.datasets

    return np.asarray(getattr(sklearn.datasets, BUNDLED[name][0])().data, dtype=float)


def _split(points: np.ndarray, n_queries: int, n_keys: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Queries and keys drawn from one point set: disjoint when it is large enough, else each side drawn alone."""
    n = points.shape[0]
    if n_queries > n or n_keys > n:
        raise ParameterError(f"queries and keys must each be at most {n} (the points in the data), got "
                             f"{n_queries} and {n_keys}")
    if n_queries + n_keys <= n:
        perm = rng.permutation(n)
        return points[perm[:n_queries]], points[perm[n_queries:n_queries + n_keys]]
    return points[rng.choice(n, n_queries, replace=False)], points[rng.choice(n, n_keys, replace=False)]


def _subsample(points: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    if n > points.shape[0]:
        raise ParameterError(f"the count must be at most {points.shape[0]} (the rows in the file), got {n}")
    return points[np.sort(rng.choice(points.shape[0], n, replace=False))]


# --------------------------------------------------------------------------- HRF App. H.3 clusters
def sign_matched_centres(d: int, same_sign: int, rng: np.random.Generator,
                         centre_scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Two query and two key centres, (2, d) each: rotations X_i = O^{i,1}X_0, Y_j = O^{j,2}Y_0 of two Gaussian
    vectors by random orthogonal matrices ([HRF] App. H.3), then signs set so that every query centre has the
    sign pattern s and every key centre −s except on the first ``same_sign`` coordinates, where it is +s.

    With real diagonal A the minimal l(A) of eq. 21 is 4 Σ_{k: x_k y_k > 0} x_k y_k ([HRF] App. H), so
    ``same_sign`` = 0 makes it 0 at every centre pair and larger values push it up (the paper's s lists).
    X_0, Y_0 ~ N(0, centre_scale²·I): the centres' spread against the noise σ is the clusters' separation.

    Parameters
    ----------
    d : int
        The dimension.
    same_sign : int
        Leading coordinates where queries and keys share their sign.
    rng : numpy.random.Generator
        The source of random numbers.
    centre_scale : float, default 1.0
        The standard deviation of X_0 and Y_0.

    Returns
    -------
    query_centres, key_centres : numpy.ndarray
        Shape (2, d) each.

    Examples
    --------
    >>> q, k = sign_matched_centres(6, 2, np.random.default_rng(0))
    >>> bool(np.all(np.sign(q[:, 2:]) == -np.sign(k[:, 2:])))
    True
    """
    from scipy.stats import ortho_group

    x0, y0 = centre_scale * rng.standard_normal(d), centre_scale * rng.standard_normal(d)
    # one d × d rotation alive at a time (drawn in the same order as when all four were kept: same numbers)
    rotated = [np.abs((ortho_group.rvs(d, random_state=rng) if d > 1 else np.ones((1, 1))) @ v)
               for v in (x0, x0, y0, y0)]
    xs, ys = np.stack(rotated[:2]), np.stack(rotated[2:])
    s = np.where(rng.random(d) < 0.5, -1.0, 1.0)
    key_sign = -s
    key_sign[:same_sign] = s[:same_sign]
    return xs * s, ys * key_sign


CLUSTER_POINTS_PARAM = Param("points", 1000, "int", "points around each cluster centre (queries and keys alike)",
                             low=1, high=10**9)
CLUSTER_D_PARAM = Param("d", 50, "int", "dimension of the synthetic clusters", low=1, high=MAX_DIMENSION)
ROTATION_SECONDS_PER_D3 = 2e-8
"""Seconds per d³ of one random d × d rotation (``scipy.stats.ortho_group``: a QR), one core, with margin (measured
1e-8-2e-8 at d = 1000-1500 on the CI machine)."""
DRAW_SECONDS_PER_VALUE = 1e-7
"""Seconds per generated coordinate of the clusters (normal draw, shift, rescale), with margin (measured 6.5e-8)."""


def hrf_clusters_cost(points: int, d: int) -> Cost:
    """The ``Cost`` of ``hrf_clusters(points, d)``: one d × d rotation at a time (its QR needs ~4 matrices of d²
    floats, measured with tracemalloc: 4.1) and the 2·points × d queries and keys with their temporaries (~4 copies).

    Parameters
    ----------
    points, d : as ``hrf_clusters``.

    Returns
    -------
    Cost
        Peak bytes and seconds (one core).

    Examples
    --------
    >>> hrf_clusters_cost(1000, 6000).seconds > 20  # the server's limit per request
    True
    """
    p, dd = float(points), float(d)
    return Cost(nbytes=8 * (5 * dd * dd + 4 * 2 * 2 * p * dd),
                seconds=4 * ROTATION_SECONDS_PER_D3 * dd**3 + DRAW_SECONDS_PER_VALUE * 4 * p * dd)


def hrf_clusters(points: int = 1000, d: int = 50, sigma: float = 1.0, same_sign: int = 5,
                 query_norm: float = 0.1, key_norm: float = 1.0, centre_scale: float = 1.0, seed: int = 0) -> DataSet:
    """The synthetic clustered data of [HRF] App. H.1/H.3: ``points`` queries around each of two centres and
    ``points`` keys around each of two others, isotropic noise σ²I, then every point rescaled to norm
    ``query_norm`` (queries) or ``key_norm`` (keys) as the authors' notebook does (0.1 and 1). The paper does not
    give the law of X_0, Y_0; here they are N(0, centre_scale²·I). Refused up front (ParameterError) over the
    memory or time budget in force (``hrf_clusters_cost``).

    Parameters
    ----------
    points : int, default 1000
        Points per cluster.
    d : int, default 50
        The dimension.
    sigma : float, default 1.0
        The noise's standard deviation.
    same_sign : int, default 5
        Leading coordinates where query and key centres share their sign (``sign_matched_centres``).
    query_norm : float, default 0.1
        The norm of every query.
    key_norm : float, default 1.0
        The norm of every key.
    centre_scale : float, default 1.0
        The standard deviation of the centres' Gaussian vectors.
    seed : int, default 0
        The random seed.

    Returns
    -------
    DataSet
        2·``points`` queries and 2·``points`` keys.

    Examples
    --------
    >>> ds = hrf_clusters(points=5, d=4, same_sign=1)
    >>> ds.queries.shape, round(float(np.linalg.norm(ds.keys[0])), 12)
    ((10, 4), 1.0)
    """
    points = check(points, CLUSTER_POINTS_PARAM)
    d = check(d, CLUSTER_D_PARAM)
    same_sign = check_int("same_sign", same_sign, 0)
    if same_sign > d:
        raise ParameterError(f"same_sign must be an integer in [0, {d}] (at most d), got {same_sign}")
    for nm, v in (("sigma", sigma), ("query_norm", query_norm), ("key_norm", key_norm),
                  ("centre_scale", centre_scale)):
        if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
            raise ParameterError(f"{nm} must be a number in (0, inf), got {v!r}")
    require_cost(f"the clusters data set (points = {points}, d = {d})", hrf_clusters_cost(points, d),
                 "lower d or points")
    rng = np.random.default_rng(seed)
    xc, yc = sign_matched_centres(d, same_sign, rng, centre_scale)
    q = np.concatenate([c + sigma * rng.standard_normal((points, d)) for c in xc])
    k = np.concatenate([c + sigma * rng.standard_normal((points, d)) for c in yc])
    q = q * (query_norm / np.linalg.norm(q, axis=1, keepdims=True))
    k = k * (key_norm / np.linalg.norm(k, axis=1, keepdims=True))
    labels = np.repeat([0, 1], points)
    info = {"source": "HRF App. H.3 synthetic Gaussian clusters", "sigma": sigma, "same_sign": same_sign,
            "query_norm": query_norm, "key_norm": key_norm, "centre_scale": centre_scale, "seed": seed,
            "query_labels": labels.tolist(), "key_labels": labels.tolist()}
    return DataSet(q, k, "clusters", info)


CLUSTER_KEYS = {"points": int, "d": int, "sigma": float, "same_sign": int, "query_norm": float, "key_norm": float,
                "centre_scale": float}


# ------------------------------------------------------------------------------------ preprocessing
def parse_preprocess(text: str) -> tuple[str, ...]:
    """``"center,scale"`` → ("center", "scale"); ``"none"`` or "" → ().

    Parameters
    ----------
    text : str
        Comma-separated steps of ``PREPROCESS_STEPS``.

    Returns
    -------
    tuple of str
        The steps in order; ParameterError names an unknown one.

    Examples
    --------
    >>> parse_preprocess("center,scale")
    ('center', 'scale')
    """
    steps = tuple(t.strip() for t in text.split(",") if t.strip() and t.strip() != "none")
    for s in steps:
        if s not in PREPROCESS_STEPS:
            raise ParameterError(f"preprocess must be a comma-separated list of {', '.join(PREPROCESS_STEPS)} "
                                 f"(or none), got {s!r}")
    return steps


def preprocess(queries: np.ndarray, keys: np.ndarray, steps: tuple[str, ...] | list[str],
               scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Apply the steps in order, one transform for both sides (see the module docstring).

    Parameters
    ----------
    queries : numpy.ndarray
        Shape (N, d).
    keys : numpy.ndarray
        Shape (M, d).
    steps : sequence of str
        Preprocessing steps of ``PREPROCESS_STEPS``, applied in order.
    scale : float, default 1.0
        The factor of the ``scale`` step.

    Returns
    -------
    queries, keys : numpy.ndarray
        The transformed points.

    Examples
    --------
    >>> q, k = preprocess(np.array([[1.0, 0.0]]), np.array([[3.0, 0.0]]), ["center"])
    >>> q.tolist(), k.tolist()
    ([[-1.0, 0.0]], [[1.0, 0.0]])
    """
    q, k = np.array(queries, dtype=float), np.array(keys, dtype=float)
    for step in steps:
        if step == "center":
            mean = np.concatenate([q, k]).mean(0)
            q, k = q - mean, k - mean
        elif step == "standardize":
            both = np.concatenate([q, k])
            mean, std = both.mean(0), both.std(0)
            std = np.where(std > 0, std, 1.0)
            q, k = (q - mean) / std, (k - mean) / std
        elif step == "sphere":
            for a in (q, k):
                norms = np.linalg.norm(a, axis=1, keepdims=True)
                if np.any(norms == 0):
                    raise ParameterError("preprocess sphere needs nonzero points; a point is 0 (after centring?)")
                a /= norms
        elif step == "attention":
            f = q.shape[1] ** -0.25
            q, k = q * f, k * f
        elif step == "scale":
            if not (math.isfinite(scale) and scale > 0):
                raise ParameterError(f"scale must be a number in (0, inf), got {scale!r}")
            mean_norm = float(np.concatenate([np.linalg.norm(q, axis=1), np.linalg.norm(k, axis=1)]).mean())
            if mean_norm == 0:
                raise ParameterError("preprocess scale needs data with a nonzero mean norm")
            q, k = q * (scale / mean_norm), k * (scale / mean_norm)
        else:
            raise ParameterError(f"preprocess must be one of {', '.join(PREPROCESS_STEPS)}, got {step!r}")
    return q, k


# ---------------------------------------------------------------------------------------- front door
def from_points(points: np.ndarray, name: str = "upload", *, queries: int = 64, keys: int = 64,
                steps: tuple[str, ...] | list[str] = ("center", "scale"), scale: float = 1.0,
                seed: int = 0) -> DataSet:
    """A preprocessed data set from one point matrix already in memory (e.g. ``read_array`` of an app upload):
    queries and keys drawn from it as ``load`` does for a file.

    Parameters
    ----------
    points : numpy.ndarray
        Shape (rows, d).
    name : str, default "upload"
        Where they came from.
    queries : int, default 64
        Queries drawn.
    keys : int, default 64
        Keys drawn.
    steps : sequence of str
        Preprocessing steps of ``PREPROCESS_STEPS``, applied in order.
    scale : float, default 1.0
        The factor of the ``scale`` step.
    seed : int, default 0
        The random seed of the draw.

    Returns
    -------
    DataSet
        The drawn, preprocessed queries and keys.

    Examples
    --------
    >>> ds = from_points(np.arange(20.0).reshape(10, 2), queries=3, keys=4)
    >>> ds.queries.shape, ds.keys.shape
    ((3, 2), (4, 2))
    """
    n_q = check_int("queries", queries, 1)
    n_k = check_int("keys", keys, 1)
    if n_q > MAX_POINTS or n_k > MAX_POINTS:
        raise ParameterError(f"queries and keys must each be an integer in [1, {MAX_POINTS}], got {n_q} and {n_k}")
    q, k = _split(_check_matrix("data", np.asarray(points, dtype=float)), n_q, n_k, np.random.default_rng(seed))
    q, k = preprocess(q, k, tuple(steps), scale)
    info: dict[str, Any] = {"source": f"{name} (queries and keys drawn from it)", "preprocess": list(steps)}
    if "scale" in steps:
        info["scale"] = scale
    return DataSet(q, k, name, info)


def load(source: str, keys_source: str | None = None, *, queries: int = 64, keys: int = 64,
         steps: tuple[str, ...] | list[str] = ("center", "scale"), scale: float = 1.0, seed: int = 0,
         options: dict[str, Any] | None = None) -> DataSet:
    """A preprocessed data set: ``source`` is a bundled name, ``clusters`` or a file path; ``keys_source`` a
    second file holding the keys (then ``source`` holds the queries). ``queries``/``keys`` points are drawn
    at random (seed). ``options`` are the ``clusters`` parameters (``CLUSTER_KEYS``).

    Parameters
    ----------
    source : str
        A key of ``BUNDLED``, ``clusters`` or a file path.
    keys_source : str, optional
        A second file holding the keys.
    queries : int, default 64
        Queries drawn.
    keys : int, default 64
        Keys drawn.
    steps : sequence of str
        Preprocessing steps of ``PREPROCESS_STEPS``, applied in order.
    scale : float, default 1.0
        The factor of the ``scale`` step.
    seed : int, default 0
        The random seed of the draw.
    options : dict, optional
        The ``clusters`` parameters.

    Returns
    -------
    DataSet
        The drawn, preprocessed queries and keys.

    Examples
    --------
    >>> load("iris", queries=5, keys=6).queries.shape
    (5, 4)
    """
    n_q = check_int("queries", queries, 1)
    n_k = check_int("keys", keys, 1)
    if n_q > MAX_POINTS or n_k > MAX_POINTS:
        raise ParameterError(f"queries and keys must each be an integer in [1, {MAX_POINTS}], got {n_q} and {n_k}")
    options = dict(options or {})
    rng = np.random.default_rng(seed)
    info: dict[str, Any]
    if source == "clusters":
        if keys_source is not None:
            raise ParameterError("keys-data applies to files only, not to data=clusters")
        unknown = set(options) - set(CLUSTER_KEYS)
        if unknown:
            raise ParameterError(f"clusters has no parameter {sorted(unknown)[0]!r}; its parameters are: "
                                 + ", ".join(CLUSTER_KEYS))
        kw: dict[str, Any] = {}
        for key, typ in CLUSTER_KEYS.items():
            if key in options:
                try:
                    kw[key] = typ(options[key])
                except ValueError:
                    raise ParameterError(f"{key} must be {'an integer' if typ is int else 'a number'}, got "
                                         f"{options[key]!r}") from None
        kw.setdefault("points", max(n_q, n_k))
        ds = hrf_clusters(seed=seed, **kw)
        iq = np.sort(rng.choice(ds.queries.shape[0], min(n_q, ds.queries.shape[0]), replace=False))
        ik = np.sort(rng.choice(ds.keys.shape[0], min(n_k, ds.keys.shape[0]), replace=False))
        info = {k: v for k, v in ds.info.items() if not k.endswith("_labels")}
        info["query_labels"] = [ds.info["query_labels"][i] for i in iq]
        info["key_labels"] = [ds.info["key_labels"][i] for i in ik]
        q, k = ds.queries[iq], ds.keys[ik]
    else:
        if options:
            raise ParameterError(f"data={source} takes no parameter {sorted(options)[0]!r} (only clusters does)")
        if source in BUNDLED:
            if keys_source is not None:
                raise ParameterError("keys-data applies to files only, not to a bundled data set")
            q, k = _split(bundled(source), n_q, n_k, rng)
            info = {"source": BUNDLED[source][1]}
        elif keys_source is None:
            q, k = _split(read_array(source, "data"), n_q, n_k, rng)
            info = {"source": f"file {Path(source).name} (queries and keys drawn from it)"}
        else:
            qa, ka = read_array(source, "data"), read_array(keys_source, "keys-data")
            if qa.shape[1] != ka.shape[1]:
                raise ParameterError(f"data and keys-data must have the same number of columns, got {qa.shape[1]} "
                                     f"and {ka.shape[1]}")
            q, k = _subsample(qa, n_q, rng), _subsample(ka, n_k, rng)
            info = {"source": f"files {Path(source).name} (queries) and {Path(keys_source).name} (keys)"}
    q, k = preprocess(q, k, tuple(steps), scale)
    info["preprocess"] = list(steps)
    if "scale" in steps:
        info["scale"] = scale
    return DataSet(q, k, Path(source).name if source not in BUNDLED and source != "clusters" else source, info)
