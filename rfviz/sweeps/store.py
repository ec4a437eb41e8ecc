"""Resumable sweep output: rows buffered and flushed durably in batches, a versioned manifest, one file in point order.

* ``OUT.csv``: finished rows are buffered and appended to ``OUT.csv`` (flush + fsync) every ``flush_points`` rows or
  ``flush_s`` seconds, whichever comes first, and on exit (Ctrl-C included). At the end the file is put in point
  order by an external merge (sorted runs of at most ``RUN_ROWS`` rows in temporary files, merged by streaming) and
  renamed into place; a file already in order is left as it is.
* ``OUT.parquet``: each flush writes a Parquet part (sorted by point) under ``OUT.parquet.parts/`` and lists it in
  the manifest, so a part counts only once it is completely written. At the end the parts are merged by streaming
  (parts whose point ranges follow each other are read one after another; overlapping chains are k-way merged).
* ``OUT.manifest.json`` (``SCHEMA``): format, schema version, the sweep's specification, the output columns, the
  status and the parts. ``--resume`` validates it field by field, refuses one written by a different sweep, and
  validates every stored row (point in range, every field present and of its type, grid values matching the
  point, no duplicates): broken or repeated rows are dropped and recomputed (``ResultStore.notes`` says which); a
  file with foreign columns is refused.
* Nothing is written through a symbolic link, and only rfviz's own files are ever replaced (``rfviz.fileio``).

Driver memory is O(buffer + one merge batch per chain) plus one byte per grid point (the set of finished points).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import heapq
import io
import json
import math
import os
import re
import signal
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..compute.sweep_files import BOOL_COLUMNS, OUTPUT_COLUMNS, STR_COLUMNS
from ..fileio import TMP_PREFIX, atomic_write, atomic_writer, check_input, check_output, fsync_dir, tmp_path_for
from ..params import ParameterError, format_bytes
from .tasks import SweepSpec, output_columns

FORMAT = "rfviz-sweep"
SCHEMA = 2
"""Manifest schema version (1: rfviz ≤ 0.x, read for resume; 2: adds ``schema`` and ``columns``)."""
LEGACY_FORMATS = {"rfviz-sweep/1": 1}
STATUSES = ("running", "interrupted", "complete")
DEFAULT_FLUSH_POINTS = 1000
DEFAULT_FLUSH_S = 5.0
RUN_ROWS = 100_000
"""Rows per sorted run of the CSV external merge (bounds the driver's memory at the end)."""
MERGE_BATCH = 1024
"""Rows read per part and written per batch while merging Parquet parts."""
RESUME_BATCH = 16_384
"""Rows of a Parquet file or part validated at a time on --resume (a few MB of Python rows)."""
_PART = re.compile(r"part-\d{6}-\d+\.parquet")
_FLOAT_COLUMNS = ("kernel_value", "mse", "mc_mse", "stderr", "z", "log10_mse", "log10_mc_mse", "mc_mean",
                  "top_share", "seconds")
_INT_COLUMNS = ("point", "trials", "seed")
assert set(_FLOAT_COLUMNS) | set(_INT_COLUMNS) | set(STR_COLUMNS) | set(BOOL_COLUMNS) == set(OUTPUT_COLUMNS)
_MAX_NOTES = 5
MAX_MANIFEST_BYTES = 32 * 2**20
"""Largest manifest read back (a grid of 10⁷ points with 100 000-value axes stays far below it)."""
MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays and objects accepted in a manifest (rfviz writes depth ≤ 5)."""
MAX_ROW_BYTES = 2**20
"""Longest CSV line read back into memory on resume; a longer one (a torn or foreign row) is skipped through in
chunks of this size, never held whole."""
LOCK_SUFFIX = ".lock"
_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _bad_manifest(path: Path, why: str) -> ParameterError:
    return ParameterError(f"--resume: {path.name} is not a valid rfviz sweep manifest ({why}); use a new --out, "
                          f"or --overwrite to start again")


def validate_manifest(obj: Any, path: Path) -> dict[str, Any]:
    """A manifest read from ``path``, checked field by field (ParameterError, one line, naming the field).

    Parameters
    ----------
    obj : Any
        The parsed JSON.
    path : Path
        Where it was read (for the message).

    Returns
    -------
    dict
        ``obj``, with ``schema`` filled in for a schema-1 manifest.

    Examples
    --------
    >>> validate_manifest([], Path("x.manifest.json"))  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ParameterError: --resume: x.manifest.json is not a valid rfviz sweep manifest (not a JSON object) ...
    """
    if not isinstance(obj, dict):
        raise _bad_manifest(path, "not a JSON object")
    fmt = obj.get("format")
    if fmt in LEGACY_FORMATS:
        obj = {**obj, "format": FORMAT, "schema": LEGACY_FORMATS[fmt]}
    elif fmt != FORMAT:
        raise _bad_manifest(path, f"format must be {FORMAT!r}, got {str(fmt)[:40]!r}")
    schema = obj.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool) or schema not in (1, SCHEMA):
        raise _bad_manifest(path, f"schema must be 1 or {SCHEMA}, got {str(schema)[:20]!r}")
    checks: dict[str, tuple[type | tuple[type, ...], str]] = {
        "spec": (dict, "an object"), "status": (str, "a string"), "parts": (list, "a list")}
    for key, (kind, words) in checks.items():
        if not isinstance(obj.get(key), kind):
            raise _bad_manifest(path, f"field {key!r} must be {words}")
    if obj["status"] not in STATUSES:
        raise _bad_manifest(path, f"status must be one of {', '.join(STATUSES)}, got {obj['status'][:20]!r}")
    if not all(isinstance(p, str) and _PART.fullmatch(p) for p in obj["parts"]):
        raise _bad_manifest(path, "field 'parts' must list part-NNNNNN-PID.parquet file names")
    if len(set(obj["parts"])) != len(obj["parts"]):
        raise _bad_manifest(path, "field 'parts' lists a part twice")
    if schema >= 2 and not (isinstance(obj.get("columns"), list) and all(isinstance(c, str) for c in obj["columns"])):
        raise _bad_manifest(path, "field 'columns' must be a list of column names")
    return obj


def json_depth(data: bytes) -> int:
    """Deepest nesting of arrays/objects in JSON text (strings skipped), found without parsing it.

    Examples
    --------
    >>> json_depth(b'{"a": [1, "[[["]}')
    2
    """
    depth = deepest = 0
    for m in _JSON_TOKEN.finditer(data):
        c = m.group()
        if c in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif c in (b"]", b"}"):
            depth -= 1
    return deepest


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest at ``path``, read with a size bound (``MAX_MANIFEST_BYTES``) and a nesting bound
    (``MAX_JSON_DEPTH``, checked before parsing) and validated (``validate_manifest``); ParameterError otherwise.

    Parameters
    ----------
    path : Path
        ``OUT.manifest.json`` (a regular file, not a symbolic link: ``check_input``).

    Returns
    -------
    dict
        The validated manifest.

    Examples
    --------
    >>> read_manifest(Path("/nonexistent.manifest.json"))  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ParameterError: --resume: nonexistent.manifest.json is not a valid rfviz sweep manifest (unreadable ...)
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _bad_manifest(path, f"unreadable: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise _bad_manifest(path, "not a regular file")
        data = f.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise _bad_manifest(path, f"larger than {MAX_MANIFEST_BYTES // 2**20} MiB")
    if json_depth(data) > MAX_JSON_DEPTH:
        raise _bad_manifest(path, f"nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise _bad_manifest(path, f"not JSON: {str(exc)[:60]}") from None
    return validate_manifest(raw, path)


def is_sweep_output(path: Path) -> bool:
    """Whether ``path`` is a sweep file rfviz wrote: a regular file with a valid manifest beside it (so that
    ``--overwrite`` may replace it)."""
    manifest = path.with_name(path.name + ".manifest.json")
    try:
        if manifest.is_symlink() or not manifest.is_file():
            return False
        read_manifest(manifest)
    except (OSError, ParameterError):
        return False
    return True


class RowChecker:
    """Validates one stored output row against the sweep's specification (the fields as text or values)."""

    def __init__(self, spec: SweepSpec) -> None:
        self.spec = spec
        self.columns = output_columns(spec.grid)
        self.expected = {"estimator": spec.estimator, "seed": str(spec.seed), "trials": str(spec.trials),
                         "device": spec.device}

    def problem(self, fields: dict[str, Any]) -> str | None:
        """Why the row cannot count as a finished point, or None when it is valid."""
        try:
            point = int(str(fields["point"]))
        except (TypeError, ValueError):
            return f"point {str(fields['point'])[:20]!r} is not an integer"
        if not 0 <= point < self.spec.n_points:
            return f"point {point} outside the grid [0, {self.spec.n_points})"
        for name, value in self.spec.grid.point(point).items():
            if _text(fields[name]) != _text(value):
                return f"point {point}: {name}={str(fields[name])[:20]} but the grid has {name}={value}"
        for name, want in self.expected.items():
            if _text(fields[name]) != want:
                return f"point {point}: {name}={str(fields[name])[:20]}, expected {want}"
        for name in BOOL_COLUMNS:
            if _text(fields[name]) not in ("True", "False"):
                return f"point {point}: {name} must be True or False"
        if not _text(fields["backend"]):
            return f"point {point}: empty backend"
        for name in _FLOAT_COLUMNS:
            value = fields[name]
            if value is None or value == "":
                if name == "seconds":
                    return f"point {point}: empty seconds (a truncated row)"
                continue
            try:
                f = float(value)
            except (TypeError, ValueError):
                return f"point {point}: {name}={str(value)[:20]!r} is not a number"
            if not math.isfinite(f):
                return f"point {point}: {name} is not finite"
        return None


def _text(value: Any) -> str:
    if isinstance(value, complex):
        return str(value)
    if value is None:
        return ""
    return str(value)


def _csv_line(columns: list[str], row: dict[str, Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerow(["" if row[k] is None else row[k] for k in columns])  # excel dialect: \r\n
    return buf.getvalue()


def _foreign_parts(parts_dir: Path) -> str | None:
    """The first entry of a parts directory that rfviz did not write (None when all are ours)."""
    if not parts_dir.is_dir():
        return "not a directory"
    for entry in os.scandir(parts_dir):
        if not (entry.is_file(follow_symlinks=False)
                and (_PART.fullmatch(entry.name) or entry.name.startswith(TMP_PREFIX))):
            return entry.name[:40]
    return None


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold SIGINT (Ctrl-C) back while a flush writes rows and marks them stored, so that an interrupted sweep's
    file and manifest agree; it is delivered when the block ends (main thread, POSIX; elsewhere a no-op)."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def bounded_lines(f: Any, limit: int | None = None) -> Iterator[bytes | None]:
    """The lines of a binary file with at most ``limit`` bytes of one line in memory: a longer line is read
    through to its end in chunks of ``limit`` bytes and yielded as None (so a torn 4 GiB last line costs one
    pass over the disk, not 4 GiB of memory).

    Examples
    --------
    >>> list(bounded_lines(io.BytesIO(b"a\\n" + b"x" * 10 + b"\\nb"), limit=4))
    [b'a\\n', None, b'b']
    """
    limit = MAX_ROW_BYTES if limit is None else limit
    while line := f.readline(limit + 1):
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        while (part := f.readline(limit)) and not part.endswith(b"\n"):
            pass
        yield None


def _line_point(line: bytes) -> int:
    return int(line.split(b",", 1)[0])


_HELD_LOCKS: dict[str, list[int]] = {}
"""Lock files this process holds: absolute path → [fd, depth] (flock conflicts between two descriptors of one
process, so a nested ``sweep_lock`` of the same output reuses the held one)."""


def lock_path(out: str | os.PathLike[str]) -> Path:
    """``OUT.lock`` beside the sweep output ``OUT`` (``runs/a.csv`` → ``runs/a.csv.lock``)."""
    p = Path(out)
    return p.with_name(p.name + LOCK_SUFFIX)


LOCK_HEADER = b"rfviz sweep lock pid="
"""The first line of a lock file rfviz made: ``rfviz sweep lock pid=<pid>``. A file ``OUT.lock`` without it is the
user's: refused, never opened for writing, never removed."""


def _lock_holder(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        first = os.pread(fd, 64, 0).split(b"\n", 1)[0]
        return f" (process {int(first.removeprefix(LOCK_HEADER))})"
    return ""


def _is_rfviz_lock(fd: int) -> bool:
    """Whether the open file ``fd`` starts with rfviz's lock line (``LOCK_HEADER`` then a pid)."""
    try:
        first = os.pread(fd, 64, 0).split(b"\n", 1)[0]
    except OSError:
        return False
    return first.startswith(LOCK_HEADER) and first.removeprefix(LOCK_HEADER).isdigit()


def _create_lock(lock: Path) -> int | None:
    """``lock`` created by this process, already holding its line and its ``flock``: a file written beside it and
    hard-linked into place, so that no other process ever sees it empty or unlocked. Returns its descriptor, or None
    when the name exists (nothing of it touched)."""
    import fcntl

    tmp = tmp_path_for(lock)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: nobody else holds it
        os.write(fd, LOCK_HEADER + f"{os.getpid()}\n".encode())
        try:
            os.link(tmp, lock, follow_symlinks=False)
        except FileExistsError:
            os.close(fd)
            return None
        except OSError:  # a file system without hard links: exclusive create (briefly empty), then the line
            os.close(fd)
            return _create_lock_in_place(lock)
        return fd
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _create_lock_in_place(lock: Path) -> int | None:
    import fcntl

    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(lock, flags, 0o666)
    except FileExistsError:
        return None
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, LOCK_HEADER + f"{os.getpid()}\n".encode())
    return fd


def _check_existing_lock(out: Path, lock: Path) -> bool:
    """An existing ``lock``: refuse (ParameterError) what is not rfviz's or is held; return True when it was a
    stale rfviz lock now removed (the caller creates its own), False when it vanished meanwhile. It is opened read-only
    (``O_NOFOLLOW``: a symbolic link is refused), so a user's file keeps its contents and inode."""
    import fcntl

    try:
        mode = os.lstat(lock).st_mode
        if stat.S_ISLNK(mode):
            raise OSError(errno.ELOOP, "is a symbolic link")
        if not stat.S_ISREG(mode):  # not even opened: a FIFO or a device could react to it
            raise ParameterError(f"out {str(out)!r}: its lock file {lock.name} is not a regular file")
        fd = os.open(lock, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return False
    except OSError as exc:
        why = "is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise ParameterError(f"out {str(out)!r}: cannot open its lock file {lock.name} ({why})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ParameterError(f"out {str(out)!r}: its lock file {lock.name} is not a regular file")
        ours = _is_rfviz_lock(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise ParameterError(f"out {str(out)!r}: cannot lock {lock.name} ({exc.strerror})") from None
            if ours:
                raise ParameterError(f"out {str(out)!r} is being written by another sweep{_lock_holder(fd)}; wait "
                                     f"for it to end or choose another --out") from None
        if not ours or st.st_nlink != 1:
            why = "has other hard links" if ours else "was not made by rfviz"
            raise ParameterError(f"out {str(out)!r}: {lock.name} exists and {why}; rfviz leaves it untouched: "
                                 f"remove or rename it, or choose another --out")
        now = os.stat(lock, follow_symlinks=False)
        if (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev):
            lock.unlink()  # a stale rfviz lock (its sweep was killed): held by us, so no live sweep uses it
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)


def _acquire_lock(out: Path) -> int:
    """The descriptor of ``OUT.lock``, created by this process and ``flock``-ed (see :func:`sweep_lock`)."""
    lock = lock_path(out)
    for _ in range(100):  # a holder that removed the file as we looked at it: look again
        try:
            fd = _create_lock(lock)
        except OSError as exc:
            raise ParameterError(f"out {str(out)!r}: cannot create its lock file {lock.name} ({exc.strerror})") \
                from None
        if fd is not None:
            return fd
        _check_existing_lock(out, lock)
    raise ParameterError(f"out {str(out)!r}: could not lock {lock.name} (it keeps being replaced)")


@contextlib.contextmanager
def sweep_lock(out: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the one-writer lock of the sweep output ``out`` for the block: an exclusive ``flock`` on
    ``OUT.lock`` beside it, created for the block (its first line ``rfviz sweep lock pid=<pid>``) and removed after
    it (the kernel releases the lock if the process dies; an rfviz lock left then is replaced). A second sweep of
    the same ``out`` — ``--overwrite`` and ``--resume`` included — is refused with ParameterError while the first
    runs. It never touches a file it did not create: an ``OUT.lock`` that is not rfviz's (the user's own file), a
    symbolic link, a file with other hard links or not a regular file is refused, its contents and inode left as
    they are. Re-entrant in one process. Without ``fcntl`` (not POSIX) it locks nothing.

    Parameters
    ----------
    out : str or PathLike
        The sweep output (its directory must exist: ``ResultStore.check_out`` first).

    Yields
    ------
    Path
        The lock file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "a.csv"
    >>> with sweep_lock(out) as lock:
    ...     lock.exists()
    True
    >>> lock_path(out).exists()
    False
    """
    lock = lock_path(out)
    key = os.path.abspath(lock)
    held = _HELD_LOCKS.get(key)
    try:
        import fcntl  # noqa: F401
    except ImportError:
        yield lock
        return
    if held is not None:
        held[1] += 1
        try:
            yield lock
        finally:
            held[1] -= 1
        return
    fd = _acquire_lock(Path(out))
    _HELD_LOCKS[key] = [fd, 1]
    try:
        yield lock
    finally:
        del _HELD_LOCKS[key]
        with contextlib.suppress(OSError):  # removed while still held: a waiter re-opens the path (see above)
            now, st = os.stat(lock, follow_symlinks=False), os.fstat(fd)
            if (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev):
                lock.unlink()
        os.close(fd)


def check_flush(flush_points: int, flush_s: float) -> None:
    """ParameterError unless ``flush_points`` is an integer ≥ 1 and ``flush_s`` a finite number > 0.

    Examples
    --------
    >>> check_flush(1000, 5.0)
    """
    if isinstance(flush_points, bool) or not isinstance(flush_points, int | np.integer) or flush_points < 1:
        raise ParameterError(f"flush_points (--flush-points) must be an integer in [1, inf), got {flush_points}")
    if isinstance(flush_s, bool) or not (isinstance(flush_s, int | float) and math.isfinite(flush_s) and flush_s > 0):
        raise ParameterError(f"flush_s (--flush-seconds) must be a number in (0, inf), got {flush_s}")


class ResultStore:
    """Append-only store of finished points for one sweep (CSV or Parquet, chosen by the file suffix).

    Parameters
    ----------
    path : str or PathLike
        ``OUT.csv`` or ``OUT.parquet`` (its directory must exist).
    spec : SweepSpec
        The sweep.
    resume, overwrite : bool
        Continue the sweep stored at ``path``, or replace it (only rfviz's own sweep output is ever replaced).
    flush_points, flush_s : int, float
        Rows are made durable every ``flush_points`` rows or ``flush_s`` seconds, whichever comes first.
    """

    def __init__(self, path: str | os.PathLike[str], spec: SweepSpec, *, resume: bool = False,
                 overwrite: bool = False, flush_points: int = DEFAULT_FLUSH_POINTS,
                 flush_s: float = DEFAULT_FLUSH_S) -> None:
        self.path = Path(path)
        self.kind = self.path.suffix.lower().lstrip(".")
        if self.kind not in ("csv", "parquet"):
            raise ParameterError(f"out must end in .csv or .parquet, got {str(self.path)!r}")
        check_flush(flush_points, flush_s)
        self.spec = spec
        self.columns = output_columns(spec.grid)
        self.manifest_path = self.path.with_name(self.path.name + ".manifest.json")
        self.parts_dir = self.path.with_name(self.path.name + ".parts")
        self.flush_points, self.flush_s = int(flush_points), float(flush_s)
        self._buffer: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self.done = np.zeros(spec.n_points, dtype=bool)
        self.notes: list[str] = []
        self.dropped = 0
        self.manifest: dict[str, Any] = {}
        if resume:
            self._open_resume()
        else:
            self._create(overwrite)

    # ------------------------------------------------------------ creation
    @staticmethod
    def check_out(path: str | os.PathLike[str], *, resume: bool = False, overwrite: bool = False) -> None:
        """Every check on ``path`` (and its manifest and parts) that can be made before any work; writes nothing.

        Parameters
        ----------
        path : str or PathLike
            The sweep output (``.csv`` or ``.parquet``).
        resume, overwrite : bool
            As ``ResultStore``.

        Examples
        --------
        >>> ResultStore.check_out("/nonexistent-dir/x.csv")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        ParameterError: out '/nonexistent-dir/x.csv': the directory '/nonexistent-dir' does not exist ...
        """
        p = Path(path)
        if p.suffix.lower() not in (".csv", ".parquet"):
            raise ParameterError(f"out must end in .csv or .parquet, got {str(p)!r}")
        manifest, parts = p.with_name(p.name + ".manifest.json"), p.with_name(p.name + ".parts")
        for extra, what in ((manifest, "manifest"), (parts, "parts directory")):
            if extra.is_symlink():
                raise ParameterError(f"{what} {str(extra)!r} is a symbolic link; rfviz neither reads nor writes "
                                     f"through it")
        if resume:
            check_input(p, "out")
            if not manifest.is_file():
                raise ParameterError(f"--resume: no sweep to resume at {str(p)!r} (missing {manifest.name})")
            return
        hint = "pass --resume to continue that sweep or --overwrite to replace it"
        check_output(p, overwrite=overwrite, ours=is_sweep_output, exists_hint=hint)
        if manifest.exists():
            if not overwrite:
                raise ParameterError(f"out {str(p)!r} already exists ({manifest.name}); {hint}")
            if not manifest.is_file() or not is_sweep_output(p):
                raise ParameterError(f"out {str(manifest)!r} is not an rfviz sweep manifest; it is left untouched "
                                     f"(choose another --out)")
        if parts.exists():
            foreign = _foreign_parts(parts)
            if foreign:
                raise ParameterError(f"out {str(parts)!r} holds files rfviz did not write ({foreign}); it is left "
                                     f"untouched (choose another --out)")
            if not overwrite:
                raise ParameterError(f"out {str(p)!r} already exists ({parts.name}); {hint}")

    def _create(self, overwrite: bool) -> None:
        self.check_out(self.path, overwrite=overwrite)
        self._remove_parts()
        if self.path.exists():
            self.path.unlink()  # a regular file with rfviz's manifest: check_output verified it
        self.manifest = {"format": FORMAT, "schema": SCHEMA, "spec": self._spec_json(), "columns": self.columns,
                         "status": "running", "parts": [], "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
        made_csv = False
        try:  # a failure here (disk full, Ctrl-C) leaves neither file: a half-made pair would block --resume
            self._save_manifest()
            if self.kind == "csv":
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                made_csv = True
                with os.fdopen(fd, "w", newline="") as f:
                    csv.writer(f).writerow(self.columns)
                    f.flush()
                    os.fsync(f.fileno())
        except BaseException:
            if made_csv:
                self.path.unlink(missing_ok=True)
            self.manifest_path.unlink(missing_ok=True)
            raise

    def _remove_parts(self) -> None:
        """Delete our part files (names checked by ``_foreign_parts``) and the then empty directory."""
        if not self.parts_dir.is_dir() or self.parts_dir.is_symlink():
            return
        for entry in os.scandir(self.parts_dir):
            if entry.is_file(follow_symlinks=False) and (_PART.fullmatch(entry.name)
                                                          or entry.name.startswith(TMP_PREFIX)):
                os.unlink(entry.path)
        try:
            self.parts_dir.rmdir()
        except OSError:
            pass  # something appeared meanwhile: leave it

    # ------------------------------------------------------------ manifest
    def _spec_json(self) -> dict[str, Any]:
        return json.loads(json.dumps(self.spec.to_json()))

    def _save_manifest(self) -> None:
        self.manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        self.manifest["done_points"] = self.n_done
        atomic_write(self.manifest_path, json.dumps(self.manifest, indent=1))

    @property
    def n_done(self) -> int:
        """Points stored (durably or in the buffer)."""
        return int(np.count_nonzero(self.done))

    def _open_resume(self) -> None:
        self.check_out(self.path, resume=True)
        self.manifest = read_manifest(self.manifest_path)
        old, new = self.manifest["spec"], self._spec_json()
        if old != new:
            diff = sorted(str(k)[:20] for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise ParameterError(f"--resume: {self.manifest_path.name} was written by a different sweep "
                                 f"({', '.join(diff)} differ); use a new --out or the same arguments")
        if self.manifest["schema"] >= 2 and self.manifest["columns"] != self.columns:
            raise _bad_manifest(self.manifest_path, "its columns do not match this sweep's")
        self.manifest["schema"] = SCHEMA
        self.manifest["columns"] = self.columns
        if self.kind == "csv":
            self._recover_csv()
        else:
            self._recover_parquet()
        if self.manifest["status"] != "complete" or self.dropped or not self.done.all():
            # dropped or missing rows are recomputed, then the file is put back in point order
            self.manifest["status"] = "running"
        self._save_manifest()

    def _note(self, where: str, why: str) -> None:
        self.dropped += 1
        if len(self.notes) < _MAX_NOTES:
            self.notes.append(f"{where}: {why}")

    # ------------------------------------------------------------ CSV resume
    def _recover_csv(self) -> None:
        """Validate every stored row; keep the first valid row of each point, drop the rest (recomputed)."""
        if not self.path.exists():
            raise ParameterError(f"--resume: {str(self.path)!r} is missing (its manifest is there); use --overwrite "
                                 f"to start again")
        checker = RowChecker(self.spec)
        rewrite = False
        with open(self.path, "rb") as f:
            header = f.readline(MAX_ROW_BYTES + 1)
            if self._csv_fields(header) != self.columns:
                raise ParameterError(f"--resume: {str(self.path)!r} is not this sweep's CSV (line 1 is not its "
                                     f"header of {len(self.columns)} columns); use a new --out")
            for number, line in enumerate(bounded_lines(f), start=2):
                why = self._csv_problem(line, checker)
                if why:
                    self._note(f"line {number}", why)
                    rewrite = True
                    continue
                assert line is not None
                self.done[_line_point(line)] = True
        if rewrite:
            self._rewrite_csv(checker)

    def _csv_fields(self, line: bytes) -> list[str] | None:
        try:
            rows = list(csv.reader(io.StringIO(line.decode())))
        except (UnicodeDecodeError, csv.Error):
            return None
        return rows[0] if len(rows) == 1 else None

    def _csv_problem(self, line: bytes | None, checker: RowChecker) -> str | None:
        if line is None:
            return f"a line longer than {format_bytes(MAX_ROW_BYTES)} (torn or foreign; skipped unread)"
        if not line.endswith(b"\n"):
            return "torn last line (no line end)"
        fields = self._csv_fields(line)
        if fields is None:
            return "not one CSV row"
        if len(fields) != len(self.columns):
            return f"{len(fields)} of {len(self.columns)} fields (a truncated or foreign row)"
        why = checker.problem(dict(zip(self.columns, fields, strict=True)))
        if why:
            return why
        if self.done[_line_point(line)]:
            return f"point {_line_point(line)} repeated (the first row is kept)"
        return None

    def _rewrite_csv(self, checker: RowChecker) -> None:
        """The CSV with only the rows counted in ``done`` (first valid row per point), through a temporary file."""
        seen = np.zeros(self.spec.n_points, dtype=bool)
        with open(self.path, "rb") as src, atomic_writer(self.path, "wb") as dst:
            dst.write(src.readline(MAX_ROW_BYTES + 1))
            for line in bounded_lines(src):
                fields = self._csv_fields(line) if line is not None and line.endswith(b"\n") else None
                if line is None or fields is None:
                    continue
                if len(fields) != len(self.columns) or checker.problem(dict(zip(self.columns, fields, strict=True))):
                    continue
                p = _line_point(line)
                if self.done[p] and not seen[p]:
                    seen[p] = True
                    dst.write(line)

    # ------------------------------------------------------------ Parquet resume
    def _recover_parquet(self) -> None:
        """Validate every stored row, read in batches of ``RESUME_BATCH`` rows (a file or part is never held whole,
        nor turned into Python rows at once); keep the first valid row of each point, drop the rest (recomputed)."""
        checker = RowChecker(self.spec)
        if self.manifest["status"] == "complete":
            sources = [("file", self.path)]
        else:
            sources = [(name, self.parts_dir / name) for name in self.manifest["parts"]]
        kept: list[str] = []
        for name, path in sources:
            check_input(path, "part")
            if not path.is_file():
                raise ParameterError(f"--resume: {str(path)!r} listed in the manifest is missing; use --overwrite to "
                                     f"start again")
            masks = self._recover_part(path, checker)
            if all(m.all() for m in masks):
                if name != "file":
                    kept.append(name)
                continue
            if name == "file":
                raise ParameterError(f"--resume: {str(path)!r} is marked complete but {self.notes[0]}; use "
                                     f"--overwrite to recompute it")
            if any(m.any() for m in masks):
                kept.append(self._write_part(self._kept_batches(path, masks)))
        if self.manifest["status"] != "complete":
            old = set(self.manifest["parts"]) - set(kept)
            self.manifest["parts"] = kept
            self._save_manifest()
            for name in old:
                (self.parts_dir / name).unlink(missing_ok=True)

    def _parquet_batches(self, path: Path) -> Iterator[Any]:
        """A stored Parquet file's record batches of ``RESUME_BATCH`` rows, its columns checked from its schema;
        ParameterError (one line) for a damaged file."""
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path)
            names = pf.schema_arrow.names
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise ParameterError(f"--resume: {str(path)!r} is not a readable Parquet file ({str(exc)[:80]})") from None
        if names != self.columns:
            raise ParameterError(f"--resume: {str(path)!r} does not hold this sweep's columns; use a new --out")
        batches = pf.iter_batches(batch_size=RESUME_BATCH)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except Exception as exc:
                raise ParameterError(f"--resume: {str(path)!r} is not a readable Parquet file "
                                     f"({str(exc)[:80]})") from None
            yield batch

    def _recover_part(self, path: Path, checker: RowChecker) -> list[np.ndarray]:
        """One boolean mask per batch of a stored Parquet file: which rows are valid and their point's first (those
        points are marked done; the others noted)."""
        masks, start = [], 0
        for batch in self._parquet_batches(path):
            masks.append(np.array([self._row_ok(row, f"{path.name} row {start + i}", checker)
                                   for i, row in enumerate(batch.to_pylist())], dtype=bool))
            start += batch.num_rows
        return masks

    def _kept_batches(self, path: Path, masks: list[np.ndarray]) -> Iterator[Any]:
        """The valid rows of a part, batch by batch (the masks of ``_recover_part``)."""
        for batch, mask in zip(self._parquet_batches(path), masks, strict=True):
            if mask.any():
                yield batch.filter(mask)

    def _row_ok(self, row: dict[str, Any], where: str, checker: RowChecker) -> bool:
        """Whether a stored row is valid and its point's first (marked done); else noted (recomputed)."""
        why = checker.problem(row)
        if why is None and self.done[int(row["point"])]:
            why = f"point {row['point']} repeated (the first row is kept)"
        if why:
            self._note(where, why)
            return False
        self.done[int(row["point"])] = True
        return True

    @property
    def complete(self) -> bool:
        return self.manifest.get("status") == "complete"

    # --------------------------------------------------------------- rows
    def append(self, row: dict[str, Any]) -> None:
        """Record one finished point; it is durable after the next flush (every ``flush_points`` rows or
        ``flush_s`` seconds, and on ``close``)."""
        with _sigint_deferred():  # Ctrl-C between these lines would count a row twice or not at all
            self._buffer.append(row)
            self.done[int(row["point"])] = True
            if len(self._buffer) >= self.flush_points or time.monotonic() - self._last_flush >= self.flush_s:
                self.flush()

    def _schema(self) -> Any:
        import pyarrow as pa

        fields = []
        first = self.spec.grid.point(0)
        for key in self.columns:
            if key in _FLOAT_COLUMNS:
                t = pa.float64()
            elif key in _INT_COLUMNS:
                t = pa.int64()
            elif key in STR_COLUMNS:
                t = pa.string()
            elif key in BOOL_COLUMNS:
                t = pa.bool_()
            else:  # a grid axis: its values share one type
                value = first[key]
                t = pa.int64() if isinstance(value, int) else pa.float64() if isinstance(value, float) else pa.string()
            fields.append(pa.field(key, t))
        return pa.schema(fields)

    def flush(self) -> None:
        """Make the buffered rows durable: appended to the CSV (fsync), or a new Parquet part listed in the
        manifest."""
        with _sigint_deferred():
            self._flush()

    def _flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self._buffer:
            return
        if self.kind == "csv":
            text = "".join(_csv_line(self.columns, r) for r in self._buffer)
            with open(self.path, "a", newline="") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            self._buffer.clear()
            return
        import pyarrow as pa

        rows = sorted(self._buffer, key=lambda r: r["point"])
        rows = [{k: (str(v) if k not in _FLOAT_COLUMNS and isinstance(v, complex) else v) for k, v in r.items()}
                for r in rows]
        self.manifest["parts"].append(self._write_part(pa.Table.from_pylist(rows, schema=self._schema())))
        self._buffer.clear()
        self._save_manifest()

    def _write_part(self, table: Any) -> str:
        """Write a new part (a table, or an iterator of record batches written one at a time) and return its name."""
        import pyarrow.parquet as pq

        if not self.parts_dir.exists():
            self.parts_dir.mkdir()
        used = {p.name for p in self.parts_dir.iterdir()}
        index = len(self.manifest["parts"])
        while (name := f"part-{index:06d}-{os.getpid()}.parquet") in used:
            index += 1
        tmp = tmp_path_for(self.parts_dir / name)
        try:  # disk-full or Ctrl-C while writing: no temporary part left behind
            if hasattr(table, "num_rows"):
                pq.write_table(table, tmp)
            else:
                import pyarrow as pa

                with pq.ParquetWriter(tmp, self._schema()) as writer:
                    for batch in table:  # a stored part's rows, in this sweep's own column types
                        writer.write_table(pa.Table.from_batches([batch]).cast(self._schema()))
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, self.parts_dir / name)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        fsync_dir(self.parts_dir)
        return name

    def close(self, *, complete: bool) -> None:
        """Flush; when ``complete``, put the rows in point order in the final file, else mark interrupted."""
        self.flush()
        if not complete:
            self.manifest["status"] = "interrupted"
            self._save_manifest()
            return
        if not self.complete:
            if self.kind == "csv":
                self._consolidate_csv()
            else:
                self._consolidate_parquet()
        self.manifest["status"] = "complete"
        parts, self.manifest["parts"] = self.manifest["parts"], []
        self._save_manifest()
        if self.kind == "parquet" and parts:
            self._remove_parts()

    # ------------------------------------------------------------ consolidation
    def _consolidate_csv(self) -> None:
        """Point order by an external merge: sorted runs of ≤ ``RUN_ROWS`` rows, merged by streaming."""
        with open(self.path, "rb") as f:
            header = f.readline()
            last, in_order = -1, True
            for line in f:
                p = _line_point(line)
                if p <= last:
                    in_order = False
                    break
                last = p
        if in_order:
            return
        runs: list[Path] = []
        try:
            with open(self.path, "rb") as f:
                f.readline()
                while chunk := [line for _, line in zip(range(RUN_ROWS), f, strict=False)]:
                    chunk.sort(key=_line_point)
                    run = tmp_path_for(self.path)
                    runs.append(run)  # before it exists: Ctrl-C or disk-full while writing it still removes it
                    with open(run, "wb") as out:
                        out.writelines(chunk)
            files = [open(r, "rb") for r in runs]
            try:
                with atomic_writer(self.path, "wb") as dst:
                    dst.write(header)
                    last = -1
                    for line in heapq.merge(*files, key=_line_point):
                        p = _line_point(line)
                        if p != last:  # duplicates cannot occur (resume keeps one row per point); cheap guard
                            dst.write(line)
                            last = p
            finally:
                for f in files:
                    f.close()
        finally:
            for r in runs:
                r.unlink(missing_ok=True)

    def _part_chains(self) -> list[list[Path]]:
        """Parts grouped into chains whose point ranges follow each other (read in sequence, no merge needed)."""
        import pyarrow.parquet as pq

        ranges = []
        for name in self.manifest["parts"]:
            path = self.parts_dir / name
            points = pq.read_table(path, columns=["point"]).column("point").to_numpy()
            if len(points):
                ranges.append((int(points.min()), int(points.max()), path))
        chains: list[tuple[int, list[Path]]] = []  # (last max, parts)
        for lo, hi, path in sorted(ranges, key=lambda t: t[0]):
            for i, (end, parts) in enumerate(chains):
                if lo > end:
                    parts.append(path)
                    chains[i] = (hi, parts)
                    break
            else:
                chains.append((hi, [path]))
        return [parts for _, parts in chains]

    def _chain_rows(self, parts: list[Path]) -> Iterator[tuple[int, dict[str, Any]]]:
        import pyarrow.parquet as pq

        for path in parts:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=MERGE_BATCH):
                for row in batch.to_pylist():
                    yield row["point"], row

    def _consolidate_parquet(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        chains = self._part_chains()
        if not chains:
            return
        schema = self._schema()
        tmp = tmp_path_for(self.path)
        try:
            with pq.ParquetWriter(tmp, schema) as writer:
                batch: list[dict[str, Any]] = []
                last = -1
                for point, row in heapq.merge(*(self._chain_rows(c) for c in chains), key=lambda t: t[0]):
                    if point == last:
                        continue
                    last = point
                    batch.append(row)
                    if len(batch) >= MERGE_BATCH:
                        writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                        batch = []
                if batch:
                    writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)
