"""Output files every command writes the same way: checked before any work, written atomically.

The rule (one place for every command that writes a file: ``sweep``, ``figure``):

* the parent directory must already exist (nothing is created: ``--out /nonexistent/x.csv`` is refused);
* a symbolic link, a directory or anything that is not a regular file is never written through, replaced or
  deleted;
* an existing regular file is replaced only with ``overwrite`` and only when ``ours(path)`` recognises it as
  rfviz's own output (e.g. a sweep file with its manifest, a figure CSV with its ``# rfviz`` header);
* data goes to a temporary file in the same directory, is flushed to disk and renamed into place (``os.replace``),
  so a reader never sees half a file and a crash never destroys the previous one.

Neutral ground like ``rfviz.textio``: it imports only ``rfviz.params``.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from .params import ParameterError

TMP_PREFIX = ".rfviz-tmp-"
"""Temporary files are ``.rfviz-tmp-<name>-<random>`` beside their target."""


def _refuse(what: str, path: str | os.PathLike[str], why: str) -> ParameterError:
    return ParameterError(f"{what} {str(path)!r}: {why}")


def check_output(path: str | os.PathLike[str], *, overwrite: bool = False,
                 ours: Callable[[Path], bool] | None = None, what: str = "out",
                 exists_hint: str = "pass --overwrite to replace it") -> Path:
    """Check that ``path`` may be written (before any work) and return it as a Path.

    Parameters
    ----------
    path : str or PathLike
        The output file.
    overwrite : bool
        Whether an existing file may be replaced (the user passed ``--overwrite``).
    ours : callable, optional
        ``ours(path) -> bool``: whether an existing regular file is rfviz's own output. Without it an existing file
        is never replaced.
    what : str
        The option's name, used in messages (``out``, ``data``).
    exists_hint : str
        What to do when the file exists and ``overwrite`` is False.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ParameterError
        One line naming the path and why: a missing or unwritable directory, a symbolic link, a directory or a
        special file, an existing file without ``overwrite``, or one rfviz did not write.

    Examples
    --------
    >>> check_output("/nonexistent-dir/x.csv")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ParameterError: out '/nonexistent-dir/x.csv': the directory '/nonexistent-dir' does not exist ...
    """
    p = Path(path)
    if not p.name or p.name in (".", ".."):
        raise _refuse(what, path, "not a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_symlink():
        raise _refuse(what, path, "is a symbolic link; rfviz writes only regular files (give the real path)")
    if not parent.is_dir():
        raise _refuse(what, path, f"the directory {str(parent)!r} does not exist (rfviz does not create it)")
    name_max = os.pathconf(parent, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    if len(p.name.encode()) + len(TMP_PREFIX) + 16 > name_max:
        raise _refuse(what, p.name[:40] + "...", f"file name too long (at most {name_max - len(TMP_PREFIX) - 16} "
                                                 f"bytes)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _refuse(what, path, f"the directory {str(parent)!r} is not writable")
    try:
        mode = os.lstat(p).st_mode
    except FileNotFoundError:
        return p
    if stat.S_ISDIR(mode):
        raise _refuse(what, path, "is a directory; rfviz never replaces or deletes a directory")
    if not stat.S_ISREG(mode):
        raise _refuse(what, path, "is not a regular file; rfviz writes only regular files")
    if not overwrite:
        raise _refuse(what, path, f"already exists; {exists_hint}")
    if ours is None or not ours(p):
        raise _refuse(what, path, "exists and was not written by rfviz; it is left untouched (choose another name)")
    return p


def check_input(path: str | os.PathLike[str], what: str) -> Path:
    """A file rfviz wrote and now reads back (a sweep's manifest or rows): a regular file, not a symbolic link.

    Parameters
    ----------
    path : str or PathLike
        The file.
    what : str
        What it is, for the message.

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> check_input(__file__, "module").suffix
    '.py'
    """
    p = Path(path)
    if p.is_symlink():
        raise _refuse(what, path, "is a symbolic link; rfviz reads back only regular files it wrote")
    if p.exists() and not p.is_file():
        raise _refuse(what, path, "is not a regular file")
    return p


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO]:
    """Write to a temporary file beside ``path``; on success flush, fsync and rename it onto ``path``.

    On an exception the temporary file is removed and ``path`` is untouched. Call ``check_output`` first.

    Parameters
    ----------
    path : str or PathLike
        The target file.
    mode : str
        ``"wb"`` or ``"w"`` (text, UTF-8, ``\\n`` line ends).

    Yields
    ------
    file object
        The temporary file, open for writing.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> with atomic_writer(target, "w") as f:
    ...     _ = f.write("hello")
    >>> target.read_text()
    'hello'
    """
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{p.name}-", dir=p.parent if str(p.parent) else ".")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> None:
    """``data`` written to ``path`` through ``atomic_writer`` (text as UTF-8).

    Parameters
    ----------
    path : str or PathLike
        The target file (checked with ``check_output`` first).
    data : bytes or str
        The whole content.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "b.txt"
    >>> atomic_write(target, "x")
    >>> target.read_text()
    'x'
    """
    with atomic_writer(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def tmp_path_for(path: str | os.PathLike[str]) -> Path:
    """A fresh temporary name beside ``path`` (for writers that need a path, e.g. Parquet or kaleido); the caller
    renames it into place with ``os.replace`` or removes it.

    Parameters
    ----------
    path : str or PathLike
        The final file.

    Returns
    -------
    pathlib.Path
        An unused name in the same folder, starting with ``TMP_PREFIX``.

    Examples
    --------
    >>> tmp_path_for("/tmp/x.png").name.startswith(TMP_PREFIX)
    True
    """
    p = Path(path)
    return p.with_name(f"{TMP_PREFIX}{p.stem[:40]}-{os.urandom(6).hex()}{p.suffix}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory (so a rename in it is durable); ignored where directories cannot be opened.

    Parameters
    ----------
    path : str or PathLike
        The directory.

    Examples
    --------
    >>> fsync_dir(".")
    """
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
