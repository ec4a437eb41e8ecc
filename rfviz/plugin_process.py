"""Plugin code in its own process: ``check`` and the lab page never run a user's estimator in their own process.

Why a ``subprocess`` running ``python -m rfviz._plugin_worker`` (and not ``multiprocessing``): the child must be
the leader of its own session (``start_new_session=True``), so one ``os.killpg(SIGKILL)`` ends it *and* everything
it forked or started; its stdout and stderr must be plain files, so a grandchild that keeps them open cannot make
rfviz wait; and its exit status must be readable before it is reaped (``os.waitid(..., WNOWAIT)``), so the group is
killed while its id cannot yet be reused. ``multiprocessing`` hides all three behind its own pipes and helpers.

What crosses, and how (a plugin runs in the worker, so it can write any file the worker writes):

* the request goes in as a JSON file;
* the answer comes back as **data only**: a JSON file (ASCII, no NaN literals) the worker renames into place, whose
  values are ``None``/``bool``/``int``/``float``/``str``/lists and tagged objects (``to_wire``): non-finite floats,
  complex numbers as (re, im) pairs, tuples, dicts, numpy arrays of bool/int/float/complex as ``.npy`` bytes
  (read with ``np.load(allow_pickle=False)``), and the few rfviz dataclasses listed in ``_wire_classes``
  (``LabReport``, ``Comparison``, ``Param``, ``PluginInfo``), rebuilt field by field from
  ``dataclasses.fields`` and type-checked against their annotations (``from_wire``). Nothing is unpickled or
  imported; a plugin's own classes (a ``str`` subclass as title, a ``float`` subclass as default) are converted
  to the plain type in the worker, and a value of any other type is refused there;
* every file the parent reads is opened without following links, must be a regular file, and is read only up
  to a cap checked before reading (``RESULT_MAX_BYTES``, ``STATUS_MAX_BYTES``; fds 1 and 2: their last
  ``OUTPUT_TAIL`` bytes): a file over its cap is a one-line ``PluginError`` naming the plugin;
* what plugin code writes to fds 1/2 lands in the child's own temp files, never in rfviz's stdout (so ``--json``
  stays valid); its tail is kept in ``rfviz.plugins.CAPTURED_STDOUT``.

Limits (``PluginLimits``; defaults stated there): a wall-clock deadline for the plugin's code (from the moment the
worker has imported rfviz until it answers), RLIMIT_AS (address space), RLIMIT_CPU and RLIMIT_FSIZE
(``FILE_MAX_BYTES``), set by the worker on itself before any plugin code runs (not in ``preexec_fn``, which is
unsafe in a threaded parent such as Streamlit).

Built-in estimators (no plugin code) keep running in-process.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import io
import json
import math
import os
import pathlib
import signal
import stat
import subprocess
import sys
import tempfile
import time
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from .params import Param, ParameterError, current_memory_budget, format_bytes, parse_bytes
from .plugins import CAPTURED_STDOUT, PluginError, plugin_timeout

MEMORY_ENV_VAR = "RFVIZ_PLUGIN_MEMORY"
CPU_ENV_VAR = "RFVIZ_PLUGIN_CPU_SECONDS"
DEFAULT_MEMORY_BYTES = 4 * 2**30
"""RLIMIT_AS of the plugin process: 4 GiB. A full default check of examples/tempered_positive.py peaks near 1 GiB of
address space (torch alone maps about 0.8 GiB); the engine's own memory budget (512 MiB) stays well inside it."""
STARTUP_TIMEOUT_S = 120.0
"""Seconds the worker may take to start Python and import rfviz and torch (before any plugin code runs)."""
POLL_S = 0.05
RESULT_MAX_BYTES = 32 * 2**20
"""The largest answer file the parent reads: 32 MiB. A lab report is ~100 bytes per grid point and comparison (a
5 × 13 grid: ~40 kB), so this holds grids of ~10⁵ points; parsed, 32 MiB of JSON costs at most a few hundred MB."""
FILE_MAX_BYTES = 2**30
"""RLIMIT_FSIZE of the plugin process: no file it writes (its fds 1 and 2 included: a print in a hot loop) grows
past 1 GiB; a write beyond it fails with ``OSError`` (errno EFBIG: Python ignores SIGXFSZ), one line."""
STATUS_MAX_BYTES = 4096
"""The largest status file the parent reads (the worker writes one short line)."""
ANSWER_FORMAT = "rfviz-plugin-answer/1"
MAX_WIRE_DEPTH = 32
"""Nesting the answer may have (a report nests 5 levels deep)."""
MAX_ANSWER_ITEMS = 2_000_000
"""Most JSON values an answer may parse into, counted before ``json.loads`` as its ``[``, ``{`` and ``,`` bytes (an
upper bound: arrays travel as ``.npy`` text, so a real report holds a few thousand): 11 million empty lists fit in the
32 MiB cap and would cost ~2 GB parsed."""
GROUP_EXIT_TIMEOUT_S = 5.0
"""Seconds ``run_isolated`` waits, after the SIGKILL of the plugin's process group, for every member to end."""
OUTPUT_TAIL = 2000


@dataclass(frozen=True)
class PluginLimits:
    """Limits of one plugin process.

    Parameters
    ----------
    timeout_s : wall-clock seconds the plugin's code may take in all (import, smoke test, the check); default
        ``rfviz.plugins.plugin_timeout()`` (``--timeout``, ``RFVIZ_PLUGIN_TIMEOUT``, else 300).
    memory_bytes : RLIMIT_AS of the process, None for none; default ``RFVIZ_PLUGIN_MEMORY`` (e.g. ``8GiB``,
        ``unlimited``), else 4 GiB.
    cpu_s : RLIMIT_CPU (CPU seconds over all threads), None for none; default ``RFVIZ_PLUGIN_CPU_SECONDS``, else
        the deadline times the number of CPUs plus the startup allowance (what the deadline permits anyway).
    threads : the process's compute threads (``OMP_NUM_THREADS``, which torch reads), None for the machine's
        default. Plugin processes run side by side (``rfviz audit``) give each its share of the cores: two
        processes of two spinning threads on two cores made a 6 s check take 145 s (measured 2026-11-28).

    Examples
    --------
    >>> PluginLimits(timeout_s=5.0, memory_bytes=2**31, cpu_s=20).memory_bytes
    2147483648
    """

    timeout_s: float
    memory_bytes: int | None
    cpu_s: int | None
    threads: int | None = None

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> PluginLimits:
        """The limits in force: ``plugin_timeout()`` and the two environment variables (see the class)."""
        env = os.environ if environ is None else environ
        timeout = plugin_timeout()
        raw_mem = env.get(MEMORY_ENV_VAR, "").strip()
        if raw_mem.lower() in ("unlimited", "none"):
            memory: int | None = None
        else:
            memory = parse_bytes(raw_mem, MEMORY_ENV_VAR) if raw_mem else DEFAULT_MEMORY_BYTES
        raw_cpu = env.get(CPU_ENV_VAR, "").strip()
        if raw_cpu.lower() in ("unlimited", "none"):
            cpu: int | None = None
        elif raw_cpu:
            try:
                cpu = int(raw_cpu)
            except ValueError:
                cpu = 0
            if cpu < 1:
                raise ParameterError(f"{CPU_ENV_VAR} must be a whole number of CPU seconds ≥ 1 or unlimited, got "
                                     f"{raw_cpu[:40]!r}")
        else:
            cpu = math.ceil((timeout + STARTUP_TIMEOUT_S) * (os.cpu_count() or 1))
        return cls(timeout, memory, cpu)


# --------------------------------------------------------------------------- the answer as data
class WireError(ValueError):
    """A value that cannot cross between the plugin process and rfviz as data (see the module docstring)."""


WIRE_DTYPE_KINDS = "biufc"
"""numpy dtype kinds an answer's arrays may have: bool, signed and unsigned int, float, complex."""


@functools.cache
def _wire_classes() -> dict[str, type]:
    """The dataclasses an answer may hold, by tag; ``from_wire`` rebuilds them from ``dataclasses.fields``."""
    from .lab import Comparison, LabReport

    return {"LabReport": LabReport, "Comparison": Comparison, "Param": Param, "PluginInfo": PluginInfo}


def _wire_float(value: Any) -> Any:
    f = float.__float__(value) if isinstance(value, float) else float(value)
    return f if math.isfinite(f) else {"$": "float", "v": repr(f)}


def _npy_text(value: np.ndarray) -> str:
    arr = np.asarray(value)
    if arr.dtype.kind not in WIRE_DTYPE_KINDS or arr.dtype.fields is not None:
        raise WireError(f"an array of dtype {arr.dtype} (only bool, int, float and complex arrays cross)")
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def to_wire(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-ready data of plain types; what the worker answers (see the module docstring).

    Subclasses of ``str``, ``int``, ``float`` and ``complex`` (a plugin's own, numpy's scalars) become the plain
    type through the base type's own conversion (an overridden ``__str__`` is not called); any type not listed
    in the module docstring raises ``WireError``.

    Examples
    --------
    >>> to_wire({"A": 1 - 2j})
    {'$': 'dict', 'v': {'A': {'$': 'complex', 'v': [1.0, -2.0]}}}
    >>> to_wire((1, float("inf")))
    {'$': 'tuple', 'v': [1, {'$': 'float', 'v': 'inf'}]}
    """
    if depth > MAX_WIRE_DEPTH:
        raise WireError(f"a value nested deeper than {MAX_WIRE_DEPTH} levels")
    if value is None or isinstance(value, bool | np.bool_):
        return None if value is None else bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int | np.integer):
        return int.__int__(value) if isinstance(value, int) else int(value)
    if isinstance(value, float | np.floating):
        return _wire_float(value)
    if isinstance(value, complex | np.complexfloating):
        c = complex(value) if not isinstance(value, complex) else \
            complex(complex.real.__get__(value), complex.imag.__get__(value))
        return {"$": "complex", "v": [_wire_float(c.real), _wire_float(c.imag)]}
    if isinstance(value, np.ndarray):
        return {"$": "ndarray", "v": _npy_text(value)}
    tag = next((k for k, c in _wire_classes().items() if type(value) is c), None)
    if tag is not None:
        return {"$": tag, "v": {f.name: to_wire(getattr(value, f.name), depth + 1)
                                for f in dataclasses.fields(value)}}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in dict.keys(value)):
            raise WireError("a dict with a key that is not a string")
        return {"$": "dict", "v": {str.__str__(k): to_wire(v, depth + 1) for k, v in dict.items(value)}}
    if isinstance(value, list | tuple):
        items = [to_wire(v, depth + 1) for v in (list.__iter__(value) if isinstance(value, list)
                                                 else tuple.__iter__(value))]
        return items if isinstance(value, list) else {"$": "tuple", "v": items}
    raise WireError(f"a value of type {type(value).__name__} (an answer holds numbers, strings, arrays and rfviz's "
                    "report types)")


def _npy_array(text: str) -> np.ndarray:
    """An array from ``.npy`` bytes: the header's shape × dtype must match the data before ``np.load`` (which
    would otherwise allocate whatever shape the header claims), and no pickled objects (``allow_pickle=False``)."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
        f = io.BytesIO(raw)
        version = np.lib.format.read_magic(f)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                       (2, 0): np.lib.format.read_array_header_2_0}[version]
        shape, _fortran, dtype = read_header(f)
        if dtype.kind not in WIRE_DTYPE_KINDS or dtype.fields is not None:
            raise WireError(f"an array of dtype {dtype}")
        if math.prod(shape) * dtype.itemsize != len(raw) - f.tell():
            raise WireError(f"an array whose data does not fill its shape {shape}")
        f.seek(0)
        arr = np.load(f, allow_pickle=False)
    except WireError:
        raise
    except (ValueError, KeyError, OSError, EOFError, TypeError, UnicodeError) as exc:
        raise WireError(f"an array that is not .npy data ({type(exc).__name__})") from None
    if not isinstance(arr, np.ndarray):
        raise WireError("an array that is not .npy data")
    return arr


def _conforms(value: Any, hint: Any) -> bool:
    """Whether a rebuilt field value has its annotated type (unions, Literal, list/tuple/dict items, classes)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if origin is typing.Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if hint in (int, float):  # JSON writes 1.0 as a float; an int is a valid float; a bool is neither
        return isinstance(value, int if hint is int else int | float) and not isinstance(value, bool)
    if origin in (list, tuple, dict):
        if not isinstance(value, origin):
            return False
        if origin is dict:
            return all(isinstance(k, str) and (len(args) < 2 or _conforms(v, args[1])) for k, v in value.items())
        item = args[0] if args and (origin is list or (len(args) == 2 and args[1] is Ellipsis)) else Any
        return all(_conforms(v, item) for v in value)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _rebuild(cls: type, data: dict[str, Any], depth: int) -> Any:
    """An instance of one of ``_wire_classes`` from its fields' data, each of its annotated type."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - names)
    if unknown:
        raise WireError(f"{cls.__name__} has no field {unknown[0][:40]!r}")
    hints = typing.get_type_hints(cls)
    values = {name: from_wire(raw, depth + 1) for name, raw in data.items()}
    for name, value in values.items():
        if not _conforms(value, hints.get(name, Any)):
            raise WireError(f"{cls.__name__}.{name} is a {type(value).__name__}, not {hints.get(name)}")
    try:
        obj = cls(**values)
        if cls is Param:
            obj.validate(obj.default)  # a widget is built from it
    except (TypeError, ValueError) as exc:
        raise WireError(f"{cls.__name__} cannot be rebuilt: {' '.join(str(exc).split())[:200]}") from None
    return obj


def from_wire(data: Any, depth: int = 0) -> Any:
    """The value ``to_wire`` wrote, from parsed JSON: plain types, numpy arrays and ``_wire_classes`` only.

    Raises
    ------
    WireError
        Anything else (an unknown tag, a field of the wrong type, an array that is not plain ``.npy`` data).

    Examples
    --------
    >>> from_wire(to_wire((1 - 2j, float("nan"))))
    ((1-2j), nan)
    """
    if depth > MAX_WIRE_DEPTH:
        raise WireError(f"a value nested deeper than {MAX_WIRE_DEPTH} levels")
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if isinstance(data, list):
        return [from_wire(v, depth + 1) for v in data]
    if not (isinstance(data, dict) and set(data) == {"$", "v"}):
        raise WireError("an object that is not a tagged value")
    tag, v = data["$"], data["v"]
    classes = _wire_classes()
    if tag == "float" and v in ("nan", "inf", "-inf"):
        return float(v)
    if tag == "complex" and isinstance(v, list) and len(v) == 2:
        re, im = (from_wire(x, depth + 1) for x in v)
        if all(isinstance(x, int | float) and not isinstance(x, bool) for x in (re, im)):
            return complex(re, im)
    elif tag == "tuple" and isinstance(v, list):
        return tuple(from_wire(x, depth + 1) for x in v)
    elif tag == "dict" and isinstance(v, dict):
        return {k: from_wire(x, depth + 1) for k, x in v.items()}
    elif tag == "ndarray" and isinstance(v, str):
        return _npy_array(v)
    elif isinstance(tag, str) and tag in classes and isinstance(v, dict):
        return _rebuild(classes[tag], v, depth)
    raise WireError(f"a malformed or unknown value tagged {str(tag)[:40]!r}")


def answer_json(value: Any = None, error: str | None = None, kind: str = "plugin") -> str:
    """The worker's answer file: ``{"format", "value"}`` or ``{"format", "error", "kind"}``, ASCII JSON without
    NaN literals (``to_wire`` tags them). A value that cannot cross becomes an error answer.

    Parameters
    ----------
    value : the task's result (when ``error`` is None).
    error : one line saying why there is no result.
    kind : ``"plugin"`` or ``"parameter"`` (the parent raises PluginError or ParameterError).

    Returns
    -------
    str
        The JSON text.

    Examples
    --------
    >>> answer_json(error="boom")
    '{"format": "rfviz-plugin-answer/1", "error": "boom", "kind": "plugin"}'
    """
    if error is None:
        try:
            return json.dumps({"format": ANSWER_FORMAT, "value": to_wire(value)}, ensure_ascii=True, allow_nan=False)
        except (WireError, ValueError, RecursionError) as exc:
            error, kind = f"the plugin's result cannot be sent back as data: {exc}", "plugin"
    return json.dumps({"format": ANSWER_FORMAT, "error": str.__str__(error), "kind": str.__str__(kind)},
                      ensure_ascii=True)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_answer(raw: bytes, label: str) -> Any:
    """The value of an answer file's bytes (``answer_json``); its error as a one-line ``PluginError`` (or
    ``ParameterError``), and anything that is not such an answer as a ``PluginError`` naming the plugin.

    Parameters
    ----------
    raw : the answer file's bytes (read with ``read_capped``).
    label : how errors name the plugin (``"plugin 'x.py'"``).

    Returns
    -------
    The value, rebuilt by ``from_wire``.

    Examples
    --------
    >>> read_answer(answer_json({"m": 8}).encode(), "plugin 'x.py'")
    {'m': 8}
    """
    items = raw.count(b"[") + raw.count(b"{") + raw.count(b",")
    if items > MAX_ANSWER_ITEMS:
        raise PluginError(f"{label}: its answer holds about {items} JSON values, more than the {MAX_ANSWER_ITEMS} a "
                          f"report may have (refused before parsing)")
    try:
        data = json.loads(raw.decode("ascii"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise PluginError(f"{label}: its answer is not rfviz's JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != ANSWER_FORMAT:
        raise PluginError(f"{label}: its answer is not rfviz's JSON (no {ANSWER_FORMAT!r} format)")
    if "error" in data:
        if not isinstance(data["error"], str):
            raise PluginError(f"{label}: its answer is not rfviz's JSON (an error that is not text)")
        line = " ".join(data["error"].split())[:2000]
        raise (ParameterError if data.get("kind") == "parameter" else PluginError)(line)
    try:
        return from_wire(data.get("value"))
    except (WireError, RecursionError) as exc:
        raise PluginError(f"{label}: its answer cannot be read as data: {exc}") from None


def read_capped(path: pathlib.Path, cap: int, what: str, label: str) -> bytes | None:
    """At most ``cap`` bytes of the file a plugin process wrote at ``path``; None if there is none.

    Opened without following a link and without blocking (a FIFO planted there), it must be a regular file whose
    size, checked before reading, is within ``cap``; otherwise a one-line ``PluginError`` naming the plugin.

    Parameters
    ----------
    path : the file.
    cap : the most bytes read.
    what : how errors name the file (``"status file"``).
    label : how errors name the plugin.

    Returns
    -------
    bytes or None

    Examples
    --------
    >>> read_capped(pathlib.Path("/nonexistent/status"), 4096, "status file", "plugin 'x.py'") is None
    True
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a link where the file belongs
        raise PluginError(f"{label}: its {what} cannot be read ({exc.strerror}; the plugin replaced it)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PluginError(f"{label}: its {what} is not a regular file (the plugin replaced it)")
        over = PluginError(f"{label}: its {what} is over the {format_bytes(cap)} rfviz reads "
                           f"({format_bytes(max(info.st_size, cap + 1))}; rfviz's own is smaller: the plugin wrote it)")
        if info.st_size > cap:
            raise over
        chunks, left = [], cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 2**20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:  # it grew while being read
            raise over
        return b"".join(chunks)
    finally:
        os.close(fd)


def _plain(value: Any) -> Any:
    """numpy arrays and scalars in a request become lists and numbers."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} cannot be sent to a plugin process")


def _tail(fd: int) -> str:
    """The last ``OUTPUT_TAIL`` bytes written to a file rfviz opened itself (the worker's fd 1 or 2): read through
    rfviz's own descriptor, so a plugin that replaces the file by a link or a FIFO changes nothing."""
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, OUTPUT_TAIL, max(0, size - OUTPUT_TAIL)).decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _only_zombies_left(pgid: int) -> bool | None:
    """Whether every process of group ``pgid`` has ended (a zombie whose threads are all gone, or state X); None
    where /proc cannot be read (not Linux). A killed member stays a zombie until its parent reaps it, and members
    that outlived the worker were reparented to init, which in a container need not reap them at all."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            fields = pathlib.Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            if fields[0] not in (b"Z", b"X") or len(os.listdir(f"/proc/{entry}/task")) > 1:
                return False  # still running, or still tearing down (exit of its threads, its memory)
        except (OSError, IndexError, ValueError):
            continue  # gone between listdir and read
    return True


def _await_group_end(pgid: int, timeout_s: float = GROUP_EXIT_TIMEOUT_S) -> bool:
    """After ``_kill_group``: wait until the group is gone (``killpg(pgid, 0)`` answers ESRCH) or only zombies are
    left; False if some member still runs after ``timeout_s`` (e.g. in uninterruptible sleep on a dead NFS mount).
    SIGKILL is delivered asynchronously: without this wait a forked child could still be alive (its memory being
    torn down on a loaded machine) when ``check`` returns."""
    deadline = time.monotonic() + timeout_s
    delay = 0.001
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # a member we may not signal (it changed its uid): we cannot see its end
            return False
        if _only_zombies_left(pgid):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(delay)
        delay = min(2 * delay, 0.05)


def _end_group(proc: subprocess.Popen) -> None:
    """Reap the killed worker and wait (bounded) for the rest of its group. Where /proc can tell zombies apart
    (Linux) the worker is reaped last, so its id, the group's id, cannot be reused while the group is awaited."""
    if not os.path.exists("/proc/self/stat"):
        proc.wait()
        _await_group_end(proc.pid)
        return
    _await_group_end(proc.pid)
    proc.wait()


def _read_status(path: pathlib.Path, label: str) -> tuple[str, float | None]:
    """The worker's last status line: ``stage`` or ``stage<TAB>fraction``; ("", None) before the first. Read
    bounded (``read_capped``): a status file over ``STATUS_MAX_BYTES`` is a PluginError."""
    raw = read_capped(path, STATUS_MAX_BYTES, "status file", label)
    if raw is None:
        return "", None
    stage, _, frac = raw.decode("utf-8", "replace").strip().partition("\t")
    stage = " ".join(stage.split())[:80]
    try:
        value = float(frac) if frac else None
    except ValueError:
        return stage, None
    return stage, value if value is not None and 0.0 <= value <= 1.0 else None


def _exited(proc: subprocess.Popen) -> int | None:
    """The worker's exit status (negative: killed by that signal) once it has ended, else None; left unreaped where
    ``os.waitid`` exists (Linux), so its process-group id cannot be reused before ``_kill_group``."""
    if not hasattr(os, "waitid"):  # macOS: reaped here; the group id is then free, a tiny race
        return proc.poll()
    info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _wait(proc: subprocess.Popen, status: pathlib.Path, limits: PluginLimits,
          progress: Callable[[float], None] | None, label: str) -> tuple[int | None, str, bool]:
    """Poll until the worker exits or its deadline passes; (exit status or None, last stage, timed out). The
    process is not reaped here (WNOWAIT), so its group id stays reserved for ``_kill_group``."""
    start = time.monotonic()
    deadline = start + STARTUP_TIMEOUT_S
    started = False
    stage, last_frac = "", None
    while True:
        code = _exited(proc)
        new_stage, frac = _read_status(status, label)
        if new_stage:
            stage = new_stage
            if not started:
                started, deadline = True, time.monotonic() + limits.timeout_s
        if progress is not None and frac is not None and frac != last_frac:
            last_frac = frac
            progress(frac)
        if code is not None:
            return code, stage, False
        if time.monotonic() > deadline:
            return None, stage, True
        time.sleep(POLL_S)


def _failure(label: str, code: int | None, stage: str, timed_out: bool, limits: PluginLimits) -> PluginError:
    where = f" during {stage}" if stage else " while starting"
    if timed_out:
        allowed = limits.timeout_s if stage else STARTUP_TIMEOUT_S
        return PluginError(f"{label} did not finish within {allowed:g} s{where} (set RFVIZ_PLUGIN_TIMEOUT or "
                           f"--timeout for slower plugins)")
    if code is not None and code < 0:
        sig = -code
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        why = " (its CPU-time limit, RFVIZ_PLUGIN_CPU_SECONDS)" if sig == signal.SIGXCPU else ""
        return PluginError(f"{label} killed the checking process with signal {name}{why}{where}")
    return PluginError(f"{label} ended the checking process (exit code {code}){where}")


def run_isolated(task: str, payload: dict[str, Any], label: str, limits: PluginLimits | None = None,
                 progress: Callable[[float], None] | None = None) -> Any:
    """Run ``rfviz._plugin_worker``'s ``task`` on ``payload`` in a child process and return its answer.

    Parameters
    ----------
    task : ``"check"`` (a LabReport) or ``"discover"`` (plugin descriptions and error lines).
    payload : JSON-ready arguments of the task.
    label : how error messages name the plugin (``"plugin 'x.py'"``).
    limits : the process's limits (default ``PluginLimits.from_env()``).
    progress : called with fractions in [0, 1] as the worker reports them.

    Returns
    -------
    The task's result, rebuilt from the worker's JSON answer (``read_answer``; nothing is unpickled).

    Raises
    ------
    PluginError
        One line: the plugin's own error, how its process ended (exit code, signal, deadline), or a file of
        its answer that is over its cap or not rfviz's data.

    Examples
    --------
    >>> run_isolated("discover", {"spec": "examples/tempered_positive.py"}, "plugin")  # doctest: +SKIP
    """
    limits = PluginLimits.from_env() if limits is None else limits
    tmp = tempfile.mkdtemp(prefix="rfviz-plugin-")
    try:
        return _run_in(pathlib.Path(tmp), task, payload, label, limits, progress)
    finally:
        remove_tree(tmp)


def _run_in(folder: pathlib.Path, task: str, payload: dict[str, Any], label: str, limits: PluginLimits,
            progress: Callable[[float], None] | None) -> Any:
    """``run_isolated``'s work inside its private folder (removed by the caller, whatever the plugin left there)."""
    request = {"task": task, "payload": payload, "limits": {**asdict(limits), "file_bytes": FILE_MAX_BYTES},
               "sys_path": list(sys.path),
               "memory_budget": current_memory_budget(), "answer": str(folder / "answer.json"),
               "status": str(folder / "status")}
    (folder / "request.json").write_text(json.dumps(request, default=_plain), encoding="utf-8")
    env = dict(os.environ)
    root = str(pathlib.Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    if limits.threads is not None:
        env.update(OMP_NUM_THREADS=str(limits.threads), MKL_NUM_THREADS=str(limits.threads))
    with open(folder / "stdout", "w+b") as out, open(folder / "stderr", "w+b") as err:
        proc = subprocess.Popen([sys.executable, "-m", "rfviz._plugin_worker", str(folder / "request.json")],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                                env=env)
        try:
            code, stage, timed_out = _wait(proc, folder / "status", limits, progress, label)
        finally:
            _kill_group(proc.pid)  # the worker, if still running, and whatever it forked or started
            _end_group(proc)
            _keep_output(_tail(out.fileno()) + _tail(err.fileno()))
    if timed_out or code != 0:
        raise _failure(label, code, stage, timed_out, limits)
    raw = read_capped(folder / "answer.json", RESULT_MAX_BYTES, "answer file", label)
    if raw is None:
        raise _failure(label, code, stage, timed_out, limits)
    return read_answer(raw, label)


def _open_dir(name: str, dir_fd: int | None) -> int:
    """A directory's fd, not following a link; one the plugin made unreadable is given back its owner's rights."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=dir_fd, follow_symlinks=False)
        return os.open(name, flags, dir_fd=dir_fd)


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove a plugin's folder and everything in it without recursion, whatever its depth or path length: every
    subdirectory is first moved up into the folder itself (renamed there), so no path is longer than two names and
    at most two directories are open at once; links are removed, never followed. Errors are ignored (best effort).

    Parameters
    ----------
    path : the folder.

    Examples
    --------
    >>> d = tempfile.mkdtemp(); os.makedirs(os.path.join(d, "a", "b")); remove_tree(d); os.path.exists(d)
    False
    """
    try:
        root = _open_dir(os.fspath(path), None)
    except OSError:
        return
    token, count, todo, emptied = os.urandom(6).hex(), 0, [None], []
    try:
        while todo:
            name = todo.pop()
            try:
                fd = root if name is None else _open_dir(name, root)
            except OSError:
                continue
            try:
                for entry in list(os.scandir(fd)):
                    try:
                        if not entry.is_dir(follow_symlinks=False):
                            os.unlink(entry.name, dir_fd=fd)
                        elif name is None:
                            todo.append(entry.name)
                        else:
                            count += 1
                            moved = f".rfviz-removing-{token}-{count}"
                            os.rename(entry.name, moved, src_dir_fd=fd, dst_dir_fd=root)
                            todo.append(moved)
                    except OSError:
                        pass
            finally:
                if fd != root:
                    os.close(fd)
            if name is not None:
                emptied.append(name)
        for name in emptied:
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=root)
    finally:
        os.close(root)
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _keep_output(text: str) -> None:
    """The tail of what the plugin process wrote to fds 1 and 2, in ``CAPTURED_STDOUT`` (never on rfviz's)."""
    text = text.strip()
    if text:
        CAPTURED_STDOUT.append(text[-OUTPUT_TAIL:])
        del CAPTURED_STDOUT[:-50]


# --------------------------------------------------------------------------- the tasks (run in the worker)
def check_target(target: str, extra_plugins: Sequence[str], params: dict[str, Any], compare: Sequence[str], *,
                 param_texts: dict[str, str] | None = None, **kwargs: Any) -> Any:
    """Resolve ``target`` (loading ``extra_plugins`` first), refuse unknown comparators and run the lab.

    Parameters
    ----------
    target : a built-in name, a loaded plugin's name or a plugin spec.
    extra_plugins : plugin specs to load first.
    params : the estimator's parameters.
    compare : the comparators' names.
    param_texts : more parameters as ``key=value`` texts (the CLI's), read by the resolved class's Params.
    **kwargs : the remaining ``rfviz.lab.check_estimator`` settings.

    Returns
    -------
    rfviz.lab.LabReport

    Examples
    --------
    >>> check_target("trig", (), {}, [], trials=400).verdict  # doctest: +SKIP
    'unbiased'
    """
    from . import plugins
    from .estimators import REGISTRY
    from .lab import check
    from .plugins import PLUGINS, resolve_estimator

    cls = resolve_estimator(target, extra_plugins)
    if param_texts:
        from .textio import parse_values

        params = {**params, **parse_values(cls.spec, dict(param_texts))}
    if plugins.STAGE_HOOK is not None:
        plugins.STAGE_HOOK("the check")
    unknown = [c for c in compare if c not in REGISTRY and c not in PLUGINS]
    if unknown:
        raise ParameterError(f"--compare must name built-in estimators ({', '.join(sorted(REGISTRY))}), got "
                             f"{unknown[0][:80]!r}")
    return check(cls, params, compare=list(compare), **kwargs)


def check_isolated(target: str, extra_plugins: Sequence[str], params: dict[str, Any], compare: Sequence[str],
                   limits: PluginLimits | None = None, progress: Callable[[float], None] | None = None,
                   **kwargs: Any) -> Any:
    """``check_target`` in a plugin process (see ``run_isolated``); returns the LabReport, rebuilt in this process
    from the worker's JSON (``from_wire``): nothing of the plugin's classes or values reaches the caller."""

    try:
        wire_params = to_wire(dict(params))
    except (WireError, TypeError, ValueError) as exc:
        raise ParameterError(f"params must map names to numbers, booleans, strings, complex numbers or tuples of "
                             f"them: {exc}") from None
    payload = {"target": target, "extra_plugins": list(extra_plugins), "params": wire_params,
               "compare": list(compare), "kwargs": kwargs}
    return _isolated_report("check", payload, f"plugin {target!r}", limits, progress)


def check_feature_map_isolated(features: str, kernel: str, compare: Sequence[str], *, mse: str | None = None,
                               biased: bool = False, limits: PluginLimits | None = None,
                               progress: Callable[[float], None] | None = None, **kwargs: Any) -> Any:
    """The lab on a plain feature map ``features(X, rng) -> Φ`` named by a spec (``FILE.py:FUNCTION`` or
    ``module:FUNCTION``), in a plugin process: the function (and ``mse``, a closed-form ``mse(x, y)``) is imported
    and called only there (``rfviz.lab.feature_map.check_feature_map_spec``); the LabReport comes back as data.

    Parameters
    ----------
    features : str
        The feature map's spec.
    kernel : str
        ``softmax`` or ``gaussian``.
    compare : sequence of str
        Built-ins to compare with, each at the map's feature length.
    mse : str, optional
        The closed-form MSE's spec.
    biased : bool
        The map declares a bias.
    limits, progress : as in ``run_isolated``.
    **kwargs : the lab's remaining settings (``rfviz.commands.check.check_settings``).

    Returns
    -------
    rfviz.lab.LabReport

    Examples
    --------
    >>> check_feature_map_isolated("my_map.py:phi", "softmax", []).verdict  # doctest: +SKIP
    'unbiased'
    """

    payload = {"features": str(features), "kernel": str(kernel), "mse": None if mse is None else str(mse),
               "biased": bool(biased), "compare": list(compare), "kwargs": kwargs}
    return _isolated_report("check_features", payload, f"feature map {features!r}", limits, progress)


def _isolated_report(task: str, payload: dict[str, Any], label: str, limits: PluginLimits | None,
                     progress: Callable[[float], None] | None) -> Any:
    """``run_isolated``'s answer to a lab task, checked to be a LabReport whose arrays fit its grid."""
    from .lab import LabReport

    report = run_isolated(task, payload, label, limits, progress)
    if not isinstance(report, LabReport):
        raise PluginError(f"{label}: its answer is not a lab report")
    check_report_grid(report, label)
    return report


def check_report_grid(report: Any, label: str) -> None:
    """Refuse (PluginError, one line) a lab report whose arrays do not fit its grid: ``r`` and ``theta`` must be
    one-dimensional and every other array of the report and of its comparisons (len(r), len(theta)), as the lab
    builds them; a report forged by a plugin process is otherwise printed as if the lab had made it.

    Parameters
    ----------
    report : rfviz.lab.LabReport
        Rebuilt from the worker's answer.
    label : str
        How the message names the plugin.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> check_report_grid(SimpleNamespace(r=np.ones(2), theta=np.ones(3), bias_z=np.ones((2, 3))), "plugin")
    """
    r, theta = np.asarray(report.r), np.asarray(report.theta)
    if r.ndim != 1 or theta.ndim != 1 or r.size == 0 or theta.size == 0:
        raise PluginError(f"{label}: its answer is not a lab report (r and theta must be non-empty lists, got shapes "
                          f"{r.shape} and {theta.shape})")
    grid = (r.size, theta.size)
    parts = [("", report), *((f"comparison {i}: ", c) for i, c in enumerate(getattr(report, "comparisons", []) or []))]
    for where, part in parts:
        for name, value in vars(part).items():
            if name not in ("r", "theta") and isinstance(value, np.ndarray) and value.shape != grid:
                raise PluginError(f"{label}: its answer is not a lab report ({where}{name} has shape {value.shape}, "
                                  f"not the grid's {grid})")


@dataclass(frozen=True)
class PluginInfo:
    """What the app shows of a plugin estimator without importing it: its name, texts, parameters and the spec
    (``path/to/file.py:Class`` or ``module:Class``) the plugin process loads it by."""

    name: str
    title: str
    description: str
    reference: str
    spec: tuple[Param, ...]
    source: str

    @classmethod
    def of(cls, estimator: type, source: str) -> PluginInfo:
        """The description of a loaded plugin class (run in the worker): plain ``str`` texts and rfviz's own
        ``Param``s of plain values, each default valid for its own range; a plugin's ``str``/``float`` subclasses
        are converted here (``to_wire``), anything else is a ``PluginError`` naming the parameter."""
        spec = []
        for p in estimator.spec:
            try:
                spec.append(from_wire({"$": "Param", "v": {f.name: to_wire(getattr(p, f.name))
                                                           for f in dataclasses.fields(Param)}}))
            except WireError as exc:
                raise PluginError(f"plugin {source!r}: parameter {str.__str__(p.name)[:40]!r}: {exc}") from None
        texts = [to_wire(getattr(estimator, a, "")) for a in ("name", "title", "description", "reference")]
        if not all(isinstance(t, str) for t in texts):
            raise PluginError(f"plugin {source!r}: name, title, description and reference must be strings")
        return cls(*texts, tuple(spec), source)


def discover_isolated(specs: Sequence[str], limits: PluginLimits | None = None
                      ) -> tuple[dict[str, PluginInfo], list[str]]:
    """Load and smoke-test each spec in its own plugin process, as many at once as there are cores (each process
    one compute thread); (name → PluginInfo in the specs' order, one error line per failure)."""
    from concurrent.futures import ThreadPoolExecutor

    specs = list(specs)
    base = PluginLimits.from_env() if limits is None else limits
    workers = max(1, min(len(specs), os.cpu_count() or 1))  # the cores, counted as PluginLimits and the audit do
    one = base if base.threads is not None or workers == 1 else replace(base, threads=1)

    def discover(spec: str) -> list[PluginInfo] | str:
        label = f"plugin {spec!r}"
        try:
            infos = run_isolated("discover", {"spec": spec}, label, one)
            if not (isinstance(infos, list) and all(isinstance(i, PluginInfo) for i in infos)):
                raise PluginError(f"{label}: its answer is not a list of plugin descriptions")
            return infos
        except ParameterError as exc:
            return str(exc)

    found: dict[str, PluginInfo] = {}
    errors: list[str] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for answer in pool.map(discover, specs):
            if isinstance(answer, str):
                errors.append(answer)
            else:
                found.update((info.name, info) for info in answer)
    return found, errors


def describe_limits(limits: PluginLimits) -> str:
    """One line for help texts: the deadline and the two rlimits."""
    mem = "none" if limits.memory_bytes is None else format_bytes(limits.memory_bytes)
    cpu = "none" if limits.cpu_s is None else f"{limits.cpu_s} s"
    return f"deadline {limits.timeout_s:g} s, address space {mem}, CPU time {cpu}"
