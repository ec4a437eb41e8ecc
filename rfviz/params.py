"""Declarative parameter specs: each estimator declares its parameters once; the app, CLI and tests read them."""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

import numpy as np

from .registries import COUPLING_NAMES, IID, SOFTMAX, SOFTMAX_KERNELS

Kind = Literal["float", "int", "bool", "choice", "complex", "complex_list", "device"]
F = TypeVar("F", bound=Callable[..., Any])


class ParameterError(ValueError):
    """An input outside its valid range. The message names the parameter and the range."""


def _fmt(v: float) -> str:
    return f"{v:g}"


def _complex_text(c: complex) -> str:
    """"1+0.5j", or "1" for a real value (as ``textio.format_complex(c, drop_zero_imag=True)``)."""
    return f"{c.real:g}" if c.imag == 0 else f"{c.real:g}{c.imag:+g}j"


@dataclass(frozen=True)
class Param:
    """One parameter: name, type, valid range, default and the help text shown in the UI and CLI.

    ``low``/``high`` bound the valid range (``low_open``/``high_open`` make a bound strict);
    ``ui_low``/``ui_high`` are the slider's range when the valid range is unbounded. For ``complex`` the bounds apply
    to the real part; for ``complex_list`` (a tuple of complex numbers, written ``"1+0.5j, 0.8, 1j"``) to the modulus
    of every entry.
    """

    name: str
    default: Any
    kind: Kind = "float"
    help: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = ()
    ui_low: float | None = None
    ui_high: float | None = None
    label: str = ""

    # ------------------------------------------------------------------ ranges
    def range_text(self) -> str:
        """Human-readable valid range, used in every error message.

        Returns
        -------
        str
            E.g. ``"an integer in [1, 10000000]"`` or ``"one of iid, orthogonal, simplex, simplex_plus"``.

        Examples
        --------
        >>> Param("p", 0.5, low=0.0, high=1.0).range_text()
        'a number in [0, 1]'
        """
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "bool":
            return "true or false"
        if self.kind == "device":
            return "auto, cpu, cuda or cuda:N"
        if self.kind == "complex_list":
            return (f"a comma-separated list of complex numbers with modulus in [{_fmt(self.low or 0.0)}, "
                    f"{_fmt(math.inf if self.high is None else self.high)}] (e.g. 1+0.5j,0.8,1j)")
        lo = "(" if self.low_open or self.low is None else "["
        hi = ")" if self.high_open or self.high is None else "]"
        big = self.kind == "int" and max(abs(self.low or 0), abs(self.high or 0)) >= 2**32
        fmt = (lambda v: str(int(v))) if big else _fmt  # exact where %g would round (seeds, byte budgets)
        a = "-inf" if self.low is None else fmt(self.low)
        b = "inf" if self.high is None else fmt(self.high)
        kind = {"int": "an integer", "complex": "a complex number with real part"}.get(self.kind, "a number")
        if self.low is None and self.high is None:
            return kind
        return f"{kind} in {lo}{a}, {b}{hi}"

    def _check_bounds(self, v: float, shown: Any = None) -> None:
        bad = (
            (self.low is not None and (v < self.low or (self.low_open and v == self.low)))
            or (self.high is not None and (v > self.high or (self.high_open and v == self.high)))
        )
        if bad:
            raise ParameterError(f"{self.name} must be {self.range_text()}, got {f'{v:g}' if shown is None else shown}")

    # ------------------------------------------------------------ validation
    def validate(self, value: Any) -> Any:
        """Coerce ``value`` to this parameter's type and check its range.

        Parameters
        ----------
        value : object
            A Python value or a CLI/URL string (parsed by ``parse``).

        Returns
        -------
        object
            The value as this parameter's type (int, float, complex, bool, str or a tuple of complex).

        Raises
        ------
        ParameterError
            Naming the parameter and its valid range.

        Examples
        --------
        >>> Param("m", 10, "int", low=1).validate("16")
        16
        """
        if self.kind == "complex_list":
            return self._complex_list(value)
        if self.kind == "device":
            return self._device(value)
        if isinstance(value, str) and self.kind != "choice":
            return self.parse(value)
        if self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise ParameterError(f"{self.name} must be {self.range_text()}, got {value!r}")
            return value
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            raise ParameterError(f"{self.name} must be true or false, got {value!r}")
        if self.kind == "complex":
            try:
                c = complex(value)
            except (TypeError, ValueError):
                raise ParameterError(f"{self.name} must be {self.range_text()}, got {value!r}") from None
            if not (math.isfinite(c.real) and math.isfinite(c.imag)):
                raise ParameterError(f"{self.name} must be finite, got {value!r}")
            self._check_bounds(c.real)
            return c
        if isinstance(value, bool):
            raise ParameterError(f"{self.name} must be {self.range_text()}, got {value!r}")
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"{self.name} must be {self.range_text()}, got {value!r}") from None
        if not math.isfinite(f):
            raise ParameterError(f"{self.name} must be finite, got {value!r}")
        if self.kind == "int":
            if isinstance(value, int | np.integer):  # exact, also beyond 2^53 (e.g. random seeds)
                self._check_bounds(f, int(value) if abs(f) >= 2**32 else None)
                return int(value)
            if f != int(f):
                raise ParameterError(f"{self.name} must be {self.range_text()}, got {value!r}")
            self._check_bounds(f)
            return int(f)
        self._check_bounds(f)
        return f

    def _device(self, value: Any) -> str:
        """A ``device`` value: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (a ``torch.device`` is read by its name),
        lower-cased; whether CUDA is there is ``sampling.resolve_device``'s question."""
        if type(value).__name__ == "device" and type(value).__module__.startswith("torch"):
            value = str(value)
        name = value.strip().lower() if isinstance(value, str) else None
        if name is None or not (name in ("auto", "cpu", "cuda") or re.fullmatch(r"cuda:\d{1,4}", name)):
            shown = value[:40] if isinstance(value, str) else value
            raise ParameterError(f"{self.name} must be {self.range_text()}, got {shown!r}")
        return name

    def _complex_list(self, value: Any) -> tuple[complex, ...]:
        """A ``complex_list`` value (text or a sequence) as a tuple of finite complex numbers, each with its modulus
        in [low, high]."""
        if isinstance(value, str):
            items: list[Any] = value.replace(" ", "").split(",")
            if any(not t for t in items):  # "1,,2" is a typo, not (1, 2)
                raise ParameterError(f"{self.name} must be {self.range_text()}, got {value[:80]!r} (an empty entry)")
        elif isinstance(value, list | tuple | np.ndarray):
            items = list(value)
        else:
            raise ParameterError(f"{self.name} must be {self.range_text()}, got {value!r}")
        if not items:
            raise ParameterError(f"{self.name} must be {self.range_text()}, got {value!r}")
        out = []
        for item in items:
            try:
                c = complex(item.replace("i", "j")) if isinstance(item, str) else complex(item)
            except (TypeError, ValueError):
                raise ParameterError(f"{self.name} must be {self.range_text()}, got {value!r}") from None
            mod = abs(c)
            lo, hi = self.low or 0.0, math.inf if self.high is None else self.high
            if not (math.isfinite(mod) and lo <= mod <= hi):
                raise ParameterError(f"{self.name} must be a complex number with modulus in [{_fmt(lo)}, {_fmt(hi)}] "
                                     f"(every entry), got {_complex_text(c)}")
            out.append(c)
        return tuple(out)

    def parse(self, text: str) -> Any:
        """Parse a CLI/URL string, e.g. the value of ``m=10``, ``A=-0.1+0.05j``, ``shared=true``.

        Parameters
        ----------
        text : str
            The written value.

        Returns
        -------
        object
            The value as this parameter's type, range-checked.

        Raises
        ------
        ParameterError
            When the text is not a value of this type, or is out of range.

        Examples
        --------
        >>> Param("A", -0.1 + 0j, "complex").parse("-0.1+0.05i")
        (-0.1+0.05j)
        """
        if self.kind == "complex_list":
            return self._complex_list(text)
        t = text.strip()
        if self.kind == "bool":
            low = t.lower()
            if low in ("true", "1", "yes", "on"):
                return True
            if low in ("false", "0", "no", "off"):
                return False
            raise ParameterError(f"{self.name} must be true or false, got {text!r}")
        if self.kind in ("choice", "device"):
            return self.validate(t)
        if self.kind == "complex":
            try:
                return self.validate(complex(t.replace(" ", "").replace("i", "j")))
            except ValueError as exc:
                if isinstance(exc, ParameterError):
                    raise
                raise ParameterError(f"{self.name} must be {self.range_text()}, got {text!r}") from None
        if self.kind == "int" and t.lstrip("+-").isdigit() and len(t) < 40:
            return self.validate(int(t))  # exact beyond 2^53 (seeds); "1e3" goes through float below
        try:
            num = float(t)
        except ValueError:
            raise ParameterError(f"{self.name} must be {self.range_text()}, got {text!r}") from None
        return self.validate(num)

    def to_json(self) -> dict[str, Any]:
        """JSON description (for ``rfviz estimators --json`` and the app).

        Returns
        -------
        dict
            ``name``, ``kind``, ``default``, ``range``, ``help`` and the bounds or choices.
        """
        default = self.default
        if isinstance(default, complex):
            default = {"re": default.real, "im": default.imag}
        elif self.kind == "complex_list":
            default = ",".join(_complex_text(c) for c in default)
        return {
            "name": self.name,
            "kind": self.kind,
            "default": default,
            "low": self.low,
            "high": self.high,
            "low_open": self.low_open,
            "high_open": self.high_open,
            "choices": list(self.choices),
            "range": self.range_text(),
            "help": self.help,
        }


def check_int(name: str, value: Any, minimum: int = 1) -> int:
    """An integer parameter ≥ ``minimum`` with no declared ``Param`` (a count inside a formula); ParameterError
    naming it and its range otherwise. Same as ``check(value, Param(name, minimum, "int", low=minimum))``."""
    return Param(name, minimum, "int", low=minimum).validate(value)


def validate_params(specs: tuple[Param, ...], values: dict[str, Any], owner: str) -> dict[str, Any]:
    """Fill defaults, validate each value against its spec, and reject unknown names."""
    by_name = {p.name: p for p in specs}
    unknown = set(values) - set(by_name)
    if unknown:
        names = ", ".join(sorted(by_name)) or "none"
        raise ParameterError(f"{owner} has no parameter {sorted(unknown)[0]!r}; its parameters are: {names}")
    return {p.name: p.validate(values[p.name]) if p.name in values else p.default for p in specs}


def check(value: Any, spec: Param) -> Any:
    """``value`` validated against ``spec`` (coerced to its type); for an array of numbers, every entry is checked
    and a float array comes back. The ParameterError names the parameter, its range and the first bad entry."""
    if isinstance(value, np.ndarray | list | tuple) and spec.kind in ("float", "int"):
        a = np.asarray(value, dtype=float)
        if a.ndim > 0:
            ok = np.isfinite(a)
            if spec.low is not None:
                ok &= (a > spec.low) if spec.low_open else (a >= spec.low)
            if spec.high is not None:
                ok &= (a < spec.high) if spec.high_open else (a <= spec.high)
            if spec.kind == "int":
                ok &= a == np.round(a)
            if not np.all(ok):
                spec.validate(float(a[~ok].ravel()[0]))  # raises, naming the first bad entry
            return a
    return spec.validate(value)


def check_list(value: Any, spec: Param, max_length: int | None = None) -> np.ndarray:
    """A non-empty one-dimensional list (or array) of numbers, each valid for ``spec``, as a float array.

    The typed twin of ``textio.parse_vector``: at most ``max_length`` values (default ``MAX_LIST_LENGTH``, the
    CLI's cap), counted before anything is converted; booleans, strings, nested lists and 2-D arrays are refused,
    not coerced or flattened. ParameterError naming the parameter otherwise.

    Parameters
    ----------
    value : list, tuple or numpy array
        The values.
    spec : Param
        The range of every entry (``float`` or ``int``).
    max_length : int, optional
        Most values accepted.

    Returns
    -------
    numpy.ndarray
        The values (float64, 1-D).

    Examples
    --------
    >>> check_list([0.5, 1], R_PARAM).tolist()
    [0.5, 1.0]
    """
    cap = MAX_LIST_LENGTH if max_length is None else max_length
    what = f"a non-empty list of at most {cap} numbers ({spec.range_text()} each)"
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ParameterError(f"{spec.name} must be {what}, got an array of shape {value.shape}")
        if value.dtype.kind not in "iuf":
            raise ParameterError(f"{spec.name} must be {what}, got an array of dtype {value.dtype}")
    elif not isinstance(value, list | tuple):
        shown = repr(value) if isinstance(value, str | numbers.Number) else type(value).__name__
        raise ParameterError(f"{spec.name} must be {what}, got {shown[:80]}")
    if len(value) > cap:
        raise ParameterError(f"{spec.name} may hold at most {cap} values, got {len(value)}; split the study "
                             f"(e.g. with the sweep command)")
    if len(value) == 0:
        raise ParameterError(f"{spec.name} must be {what}, got an empty list")
    if not isinstance(value, np.ndarray):
        for item in value:
            if isinstance(item, bool | np.bool_) or not isinstance(item, numbers.Real):
                raise ParameterError(f"{spec.name} must be {what}, got an entry {str(item)[:40]!r}")
    return np.asarray(check(np.asarray(value, dtype=float), spec), dtype=float)


def validated(*specs: Param) -> Callable[[F], F]:
    """Decorator validating a free function's arguments against Param specs (matched by name) before each call.

    An argument left at a ``None`` default is passed through (``None`` means "automatic"). Example::

        @validated(Param("trials", 2000, "int", low=2))
        def run(est, *, trials=2000): ...
    """

    def deco(fn: F) -> F:
        sig = inspect.signature(fn)
        for p in specs:
            if p.name not in sig.parameters:
                raise TypeError(f"{fn.__qualname__} has no argument {p.name!r} to validate")

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)
            for p in specs:
                if p.name in bound.arguments:
                    value = bound.arguments[p.name]
                    if value is None and sig.parameters[p.name].default is None:
                        continue
                    bound.arguments[p.name] = check(value, p)
            return fn(*bound.args, **bound.kwargs)

        wrapper.__signature__ = sig  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return deco


# ---------------------------------------------------------------------------------------------- size budgets
# Every size parameter has a declared upper bound (the Param specs above and below) and a cost estimate checked
# against a memory budget before anything is allocated. The budget is one context-local value, so the CLI's
# ``--memory-budget`` and the app's cap reach every path without being threaded through each call.
DEFAULT_MEMORY_BUDGET = 512 * 2**20
"""Default working-set budget (bytes): comfortable on a laptop."""
MAX_MEMORY_BUDGET = 2**40
"""Largest budget one may ask for (1 TiB)."""
MAX_LIST_LENGTH = 10_000
"""Longest comma-separated list (r values, θ values, w=…) a command accepts."""
MAX_DIMENSION = 10_000_000
"""Largest input dimension d anywhere (the memory budget usually refuses far smaller d first)."""
MAX_TRIALS = 100_000_000
"""Most Monte-Carlo trials one request may ask for (larger studies: the ``sweep`` command, resumable)."""
_BUDGET: ContextVar[int] = ContextVar("rfviz_memory_budget", default=DEFAULT_MEMORY_BUDGET)
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": 2**20,
          "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40}


# ------------------------------------------------------------------------------------------ shared parameters
# One definition per parameter name: every Param used by more than one module is declared here; where a face needs
# other bounds (app vs CLI vs lab vs engine) the variant is derived visibly from the base with ``replace``.
M_PARAM = Param("m", 10, "int", "number of random projections ω (trig and antithetic features are 2m numbers)", low=1,
                high=10_000_000, ui_low=1, ui_high=256, label="m (random features)")
KERNEL_PARAM = Param("kernel", SOFTMAX, "choice", "target kernel: softmax exp(x·y) or Gaussian exp(-|x-y|²/2)",
                     choices=SOFTMAX_KERNELS)
COUPLING_PARAM = Param("coupling", IID, "choice",
                       "how the m projections ω are drawn jointly (Simplex RF paper §3): iid Gaussian, orthogonal "
                       "blocks, simplex blocks, or simplex+ (data-dependent)",
                       choices=COUPLING_NAMES)

# Page-level parameters of the app (inputs and sampling settings, not estimator parameters), and their variants for
# the CLI, the estimator lab and the engine: every page's widgets, URL parsing and error messages use the same range.
DIM_PARAM = Param("d", 16, "int", "input dimension of x and y", low=1)
"""d wherever a formula needs it (no upper bound: the memory budget decides); ``geometry.check_d``."""
D_PARAM = replace(DIM_PARAM, high=4096, label="d (input dimension)")
"""The app pages' d."""
COUPLED_D_PARAM = replace(D_PARAM, help="dimension: coupled (orthogonal / simplex) projections need d ≥ 2", low=2,
                          label="d (dimension)")
CLI_D_PARAM = replace(D_PARAM, default=2, help="input dimension", high=MAX_DIMENSION, label="")
"""``python -m rfviz mse``'s d (bounded by the memory budget, not by the app's slider)."""
LAB_D_PARAM = replace(DIM_PARAM, default=8, help="input dimension of the grid's pairs")
"""The estimator lab's d (``lab.check_estimator``, ``python -m rfviz check --d``)."""
DEGREE_PARAM = Param("p", 3, "int", "degree of the polynomial kernel (x·y)ᵖ", low=1, high=64, label="p (degree)")
"""The app's degree p of the dot-product pages (the estimators' own p stops at 30: ``ESTIMATOR_DEGREE_PARAM``)."""
ESTIMATOR_DEGREE_PARAM = replace(DEGREE_PARAM, help="degree p of the homogeneous polynomial kernel (x·y)^p", high=30,
                                 ui_low=1, ui_high=10, label="p (degree)")
TRIALS_PARAM = Param("trials", 2000, "int", "Monte-Carlo trials (independent draws of the features) per point",
                     low=2, high=1_000_000, label="trials")
ENGINE_TRIALS_PARAM = replace(TRIALS_PARAM, help="independent Monte-Carlo estimates per pair", high=MAX_TRIALS,
                              label="")
"""``engine.monte_carlo``'s trials (larger studies: the ``sweep`` command, resumable)."""
CLI_TRIALS_PARAM = replace(TRIALS_PARAM, default=0, help="Monte-Carlo trials (0: closed form only)", low=0,
                           high=MAX_TRIALS, label="")
"""``python -m rfviz mse --trials`` (0: closed form only)."""
LAB_TRIALS_PARAM = replace(TRIALS_PARAM, default=4000, help="per grid point; the bias test's power grows like √trials",
                           low=100, high=200_000, label="Monte-Carlo trials")
"""The estimator lab page's trials."""
CHECK_TRIALS_PARAM = replace(LAB_TRIALS_PARAM, help="Monte-Carlo trials per grid point", high=None, label="")
"""``lab.check_estimator``'s trials (no upper bound: the memory budget decides)."""
SAMPLES_PARAM = Param("samples", 3000, "int", "draws of |ω_i + ω_j| per coupling for the histograms", low=10,
                      high=200_000, label="samples")
SEED_PARAM = Param("seed", 0, "int", "random seed (same seed, same draws)", low=0, high=2**53 - 1, label="seed")
"""The seed on every face (CLI, API, app widgets, sweeps, lab): [0, 2^53 − 1], the largest range all of them honour
exactly (the browser's number widgets hold integers up to 2^53 − 1; torch, numpy's SeedSequence and the sweep's
task seeds take any of them)."""
DEVICE_PARAM = Param("device", "auto", "device", "where Monte Carlo runs: auto (CUDA when available), cpu, cuda or "
                     "cuda:N", label="device")
"""The device on every face; ``sampling.resolve_device`` turns it into a ``torch.device`` (and refuses CUDA where
torch sees none)."""
CPU_DEVICE_PARAM = replace(DEVICE_PARAM, default="cpu")
"""The device of the commands that run on the CPU unless asked (``gram``, ``check``)."""
MEMORY_BUDGET_PARAM = Param("memory_budget", DEFAULT_MEMORY_BUDGET, "int", "working-set budget in bytes",
                            low=2**16, high=MAX_MEMORY_BUDGET)
"""``memory_budget_scope``'s budget (the CLI's ``--memory-budget`` text goes through ``parse_bytes`` first)."""
ENGINE_SEED_PARAM = replace(SEED_PARAM, help="random seed of the Monte-Carlo run", low=None, high=None, label="")
"""The engine's seed: any integer (torch folds it into its seed range)."""
R_PARAM = Param("r", 1.0, "float", "input length r = |x| = |y|", low=0.0)
"""r wherever a formula needs it; ``geometry.check_r``."""
THETA_PARAM = Param("theta", math.pi / 2, "float", "angle between x and y (radians)", low=0.0, high=math.pi)
"""θ of an input pair (``rfviz mse``, ``rfviz psi``; the lab's grid of angles)."""
R_MAX_PARAM = Param("r_max", 2.0, "float", "largest input length r = |x| = |y| of the grid", low=0.0, low_open=True,
                    label="r max")

APP_INT_CAPS: dict[str, int] = {"m": 100_000, "n": 10_000, "trials": 200_000, "samples": 200_000, "p": 30,
                                "D": 100_000}
"""Upper bounds of integer parameters in the app (the CLI may go further under --memory-budget), by parameter name:
the same cap for every estimator's ``m``, ``n``, … (``app_param``)."""


def app_param(p: Param) -> Param:
    """``p`` with the app's cap (``APP_INT_CAPS``) as its upper bound, so that a URL cannot ask for more.

    Parameters
    ----------
    p : Param
        Any parameter spec.

    Returns
    -------
    Param
        ``p`` itself, or a copy with ``high`` lowered to the app's cap.

    Examples
    --------
    >>> app_param(M_PARAM).high
    100000.0
    """
    cap = APP_INT_CAPS.get(p.name)
    if p.kind != "int" or cap is None or (p.high is not None and p.high <= cap):
        return p
    return replace(p, high=float(cap), high_open=False)



def format_bytes(n: float) -> str:
    """``536870912`` → ``"512 MiB"``."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


def parse_bytes(text: str, name: str = "memory budget") -> int:
    """``"512MiB"``, ``"2G"``, ``"1e9"`` → bytes, within [64 KiB, 1 TiB]; ParameterError otherwise."""
    t = str(text).strip().lower().replace(" ", "")
    num = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(num):]
    try:
        value = float(num) * _UNITS[unit]
    except (ValueError, KeyError):
        raise ParameterError(f"{name} must be a size such as 512MiB, 2GiB or 1e9 (bytes), got {text!r}") from None
    if not (2**16 <= value <= MAX_MEMORY_BUDGET):
        raise ParameterError(f"{name} must be between 64 KiB and 1 TiB, got {text!r}")
    return int(value)


def current_memory_budget() -> int:
    """The memory budget in force (bytes): ``DEFAULT_MEMORY_BUDGET`` unless set by ``memory_budget_scope``."""
    return _BUDGET.get()


@contextmanager
def memory_budget_scope(nbytes: int) -> Iterator[int]:
    """Run a block with ``nbytes`` as the memory budget of every estimate, sampler and closed form in it.

    Parameters
    ----------
    nbytes : int
        The budget in bytes, an integer in [64 KiB, 1 TiB] (``MEMORY_BUDGET_PARAM``; the default is 512 MiB).
        Text such as ``"512MiB"`` goes through ``parse_bytes`` first.

    Yields
    ------
    int
        The budget.

    Raises
    ------
    ParameterError
        When ``nbytes`` is not an integer in the valid range.

    Examples
    --------
    >>> with memory_budget_scope(2**30):
    ...     current_memory_budget()
    1073741824
    """
    if isinstance(nbytes, str):
        raise ParameterError(f"memory_budget must be a number of bytes (an integer; parse_bytes reads text such as "
                             f"'512MiB'), got {nbytes[:40]!r}")
    nbytes = check(nbytes, MEMORY_BUDGET_PARAM)
    token = _BUDGET.set(nbytes)
    try:
        yield nbytes
    finally:
        _BUDGET.reset(token)


def require_fits(what: str, nbytes: float, hint: str = "", budget: int | None = None) -> None:
    """Refuse up front (ParameterError) a request whose estimated memory ``nbytes`` exceeds the budget; the message
    says what needs it, the budget, and how to proceed."""
    budget = current_memory_budget() if budget is None else budget
    if not math.isfinite(nbytes) or nbytes > budget:
        size = format_bytes(nbytes) if math.isfinite(nbytes) else "an unbounded amount"
        raise ParameterError(f"{what} needs about {size} of memory, more than the budget of {format_bytes(budget)}; "
                             f"{hint or 'use smaller sizes'} or raise the budget (--memory-budget)")


# ---------------------------------------------------------------------------------------------- time budget
# Beside memory, a server must bound the time one request may take. The CLI runs unbounded by default (the user
# waits for their own command); the app runs every page inside ``server_budget_scope`` (memory and time caps).
SERVER_MEMORY_BUDGET = 512 * 2**20
"""Working-set budget (bytes) of one app request (one view, one Monte-Carlo overlay, one upload)."""
SERVER_TIME_BUDGET = 20.0
"""Estimated seconds one app request may take on one core; longer requests are refused before they start."""
_TIME_BUDGET: ContextVar[float] = ContextVar("rfviz_time_budget", default=math.inf)


@dataclass(frozen=True)
class Cost:
    """Estimated cost of a computation before it runs: peak working memory (bytes) and time (seconds, one core).

    Examples
    --------
    >>> (Cost(1e6, 0.5) + Cost(2e6, 1.0)).nbytes
    3000000.0
    """

    nbytes: float = 0.0
    seconds: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.nbytes + other.nbytes, self.seconds + other.seconds)


def current_time_budget() -> float:
    """The time budget in force (seconds): unbounded unless set by ``time_budget_scope``/``server_budget_scope``."""
    return _TIME_BUDGET.get()


@contextmanager
def time_budget_scope(seconds: float) -> Iterator[float]:
    """Run a block with ``seconds`` as the time budget of every costed computation in it.

    Parameters
    ----------
    seconds : float
        The budget, estimated on one core (the CLI and the API have none by default; app pages 20 s).

    Yields
    ------
    float
        The budget.

    Examples
    --------
    >>> with time_budget_scope(5.0):
    ...     current_time_budget()
    5.0
    """
    token = _TIME_BUDGET.set(float(seconds))
    try:
        yield float(seconds)
    finally:
        _TIME_BUDGET.reset(token)


@contextmanager
def server_budget_scope(nbytes: int = SERVER_MEMORY_BUDGET, seconds: float = SERVER_TIME_BUDGET) -> Iterator[None]:
    """The server's caps (memory and time per request), in force for every computation in the block.

    Examples
    --------
    >>> with server_budget_scope():
    ...     require_cost("a small grid", Cost(1e6, 0.1))
    """
    with memory_budget_scope(nbytes), time_budget_scope(seconds):
        yield


def require_time(what: str, seconds: float, hint: str = "", budget: float | None = None) -> None:
    """Refuse up front (ParameterError) a request whose estimated time exceeds the time budget."""
    budget = current_time_budget() if budget is None else budget
    if not math.isfinite(seconds) or seconds > budget:
        took = f"about {seconds:.3g} s" if math.isfinite(seconds) else "an unbounded time"
        raise ParameterError(f"{what} would take {took}, more than this server's limit of {budget:g} s per request; "
                             f"{hint or 'use smaller sizes'} (or run it with the CLI)")


def require_cost(what: str, cost: Cost, hint: str = "") -> None:
    """Refuse up front (ParameterError) a request whose ``Cost`` exceeds the memory or the time budget in force.

    Parameters
    ----------
    what : str
        What is refused, for the message ("the Maclaurin allocation at m = 10000000").
    cost : Cost
        Its estimate (``cost(...)`` of the compute function).
    hint : str
        How to proceed ("lower m").

    Examples
    --------
    >>> require_cost("a tiny grid", Cost(1e3, 1e-3))
    """
    require_fits(what, cost.nbytes, hint)
    require_time(what, cost.seconds, hint)
