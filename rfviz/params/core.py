"""The ``Param`` type and its validation: one parameter's name, kind, range, default and help, checked strictly for
Python callers (``Param.validate``: a value of the parameter's type, never text) and read from text only by
``Param.parse`` (the CLI, URL query parameters and sweep manifests)."""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np

Kind = Literal["float", "int", "bool", "choice", "complex", "complex_list", "device"]
F = TypeVar("F", bound=Callable[..., Any])

MAX_LIST_LENGTH = 10_000
"""Longest comma-separated list (r values, θ values, w=…) a command accepts."""
MAX_DIMENSION = 10_000_000
"""Largest input dimension d anywhere (the memory budget usually refuses far smaller d first)."""
MAX_TRIALS = 100_000_000
"""Most Monte-Carlo trials one request may ask for (larger studies: the ``sweep`` command, resumable)."""

class ParameterError(ValueError, TypeError):
    """A bad input: outside its valid range, or not of the parameter's type. The message names the parameter and the
    range. It is both a ValueError and a TypeError, so ``except ValueError`` and ``except TypeError`` both catch it.

    Examples
    --------
    >>> isinstance(ParameterError("m must be an integer in [1, inf), got '10'"), TypeError)
    True
    """


def _fmt(v: float) -> str:
    return f"{v:g}"


def _shown(value: Any) -> str:
    """A value as an error message shows it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


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
        """Check a Python value against this parameter's type and range (strict: text is never parsed here).

        Numbers are ``int``, ``float`` or numpy scalars (``bool`` is not a number); a ``choice`` and a ``device`` are
        text by nature; a ``complex_list`` is a sequence of numbers. Text for a number goes through :meth:`parse`,
        which only the CLI, URL query parameters and sweep manifests call.

        Parameters
        ----------
        value : object
            A Python value of this parameter's type.

        Returns
        -------
        object
            The value as this parameter's type (int, float, complex, bool, str or a tuple of complex).

        Raises
        ------
        ParameterError
            Naming the parameter and its valid range (also for a value of the wrong type, e.g. ``"16"``).

        Examples
        --------
        >>> Param("m", 10, "int", low=1).validate(np.int64(16))
        16
        >>> Param("m", 10, "int", low=1).validate("16")
        Traceback (most recent call last):
        ...
        rfviz.params.core.ParameterError: m must be an integer in [1, inf), got '16' (text; a number is expected)
        """
        if self.kind == "complex_list":
            if isinstance(value, str):
                raise self._wrong_type(value)
            return self._complex_list(value)
        if self.kind == "device":
            return self._device(value)
        if self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise ParameterError(f"{self.name} must be {self.range_text()}, got {_shown(value)}")
            return value
        if self.kind == "bool":
            if isinstance(value, bool | np.bool_):
                return bool(value)
            raise ParameterError(f"{self.name} must be true or false, got {_shown(value)}")
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iufc":
            value = value.item()
        if self.kind == "complex":
            if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Number):
                raise self._wrong_type(value)
            c = complex(value)
            if not (math.isfinite(c.real) and math.isfinite(c.imag)):
                raise ParameterError(f"{self.name} must be finite, got {value!r}")
            self._check_bounds(c.real)
            return c
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
            raise self._wrong_type(value)
        f = float(value)
        if not math.isfinite(f):
            raise ParameterError(f"{self.name} must be finite, got {value!r}")
        if self.kind == "int":
            if isinstance(value, numbers.Integral):  # exact, also beyond 2^53 (e.g. random seeds)
                self._check_bounds(f, int(value) if abs(f) >= 2**32 else None)
                return int(value)
            if f != int(f):
                raise ParameterError(f"{self.name} must be {self.range_text()}, got {value!r}")
            self._check_bounds(f)
            return int(f)
        self._check_bounds(f)
        return f

    def _wrong_type(self, value: Any) -> ParameterError:
        """The error for a value that is not of this parameter's type (text, a list, a bool, None, ...)."""
        what = ("text; a number is expected" if isinstance(value, str) else
                "a list; one value is expected" if isinstance(value, list | tuple | np.ndarray) else
                f"a {type(value).__name__}")
        if self.kind == "complex_list" and isinstance(value, str):
            what = "text; a list of numbers is expected"
        return ParameterError(f"{self.name} must be {self.range_text()}, got {_shown(value)} ({what})")

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
        """A ``complex_list`` value (a sequence; text only from ``parse``) as a tuple of finite complex numbers, each
        with its modulus in [low, high]."""
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
        text = isinstance(value, str)
        for item in items:
            if not text and (isinstance(item, bool | np.bool_) or not isinstance(item, numbers.Number)):
                raise ParameterError(f"{self.name} must be {self.range_text()}, got an entry {_shown(item)}")
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
        bad = ([v for v in value if isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Real)]
               if not isinstance(value, np.ndarray) else [] if value.dtype.kind in "iuf" else [value.dtype])
        if bad:
            raise ParameterError(f"{spec.name} must be {spec.range_text()} (every entry), got {_shown(bad[0])}")
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
    >>> check_list([0.5, 1], Param("r", 1.0, low=0.0)).tolist()
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
