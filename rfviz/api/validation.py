"""Strict typed validation of the Python API, modelled on scikit-learn's ``_parameter_constraints`` /
``validate_params``: each public API function declares its constraints once, as data (``@api_function({...})``
stores them as the function's ``parameter_constraints`` and in ``PARAMETER_CONSTRAINTS``), and every call is
checked against them before it computes. A constraint is a :class:`~rfviz.params.Param` (one value of its kind:
text is never parsed, ``bool`` is not a number, numpy scalars are numbers), :class:`ListOf` (a list of numbers)
or :class:`Instance` (a value of some Python types, e.g. text for a data set's name).

The same decorator turns the failures a valid request can still meet into ``ParameterError``: numeric ones
(FloatingPointError, OverflowError, ZeroDivisionError, ``numpy.linalg.LinAlgError``), MemoryError, a RuntimeError
raised inside torch and scikit-learn's InvalidParameterError; and it words every message with keyword names, never
command-line flags (``--max-seconds`` → ``max_seconds``; the CLI translates back where it prints).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np

from ..params import MAX_LIST_LENGTH, Param, ParameterError, check, check_list

F = TypeVar("F", bound=Callable[..., Any])

PARAMETER_CONSTRAINTS: dict[str, Mapping[str, Any]] = {}
"""Every public API function's constraints, by function name (what ``@api_function`` declared)."""

FIT_HINT = "use smaller sizes (and a memory_budget that fits the machine)"
"""How to proceed after a refused allocation (the CLI shows ``memory_budget`` as ``--memory-budget``)."""

_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


@dataclass(frozen=True)
class ListOf:
    """A non-empty list (or 1-D array) of numbers, each valid for ``param`` (``rfviz.params.check_list``).

    Parameters
    ----------
    param : Param
        The range of every entry.
    scalar_ok : bool
        Whether one number alone is accepted as a list of one.

    Examples
    --------
    >>> from rfviz.params import R_PARAM
    >>> ListOf(R_PARAM).validate([0.5, 1]).tolist()
    [0.5, 1.0]
    """

    param: Param
    scalar_ok: bool = False

    def validate(self, value: Any) -> Any:
        """The values as a float array; ParameterError naming the parameter otherwise.

        Parameters
        ----------
        value : list, tuple or 1-D array of numbers
            The values (one number when ``scalar_ok``).

        Returns
        -------
        numpy.ndarray
            The values, float64.
        """
        if self.scalar_ok and not isinstance(value, list | tuple | np.ndarray):
            value = [check(value, self.param)]
        return check_list(value, self.param, MAX_LIST_LENGTH)


@dataclass(frozen=True)
class Instance:
    """A value of one of ``types`` (e.g. ``(str,)`` for a data set's name or path), described by ``what``.

    Examples
    --------
    >>> Instance("data", (str,), "a data set name or a file path").validate("iris")
    'iris'
    """

    name: str
    types: tuple[type, ...]
    what: str

    def validate(self, value: Any) -> Any:
        """``value`` itself; ParameterError naming the parameter when it is of another type.

        Parameters
        ----------
        value : object
            The argument.

        Returns
        -------
        object
            ``value``, unchanged.
        """
        if isinstance(value, bool) and bool not in self.types:
            raise ParameterError(f"{self.name} must be {self.what}, got {value!r}")
        if not isinstance(value, self.types):
            raise ParameterError(f"{self.name} must be {self.what}, got {str(value)[:40]!r}")
        return value


def keyword_words(message: str) -> str:
    """A message worded with keyword names: each ``--flag-name`` becomes ``flag_name``.

    Examples
    --------
    >>> keyword_words("stopped at --max-seconds=5; raise the budget (--memory-budget)")
    'stopped at max_seconds=5; raise the budget (memory_budget)'
    """
    return _FLAG.sub(lambda m: m.group(1).replace("-", "_"), message)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _from_torch(exc: BaseException) -> bool:
    """Whether a RuntimeError is torch's: torch raises plain RuntimeErrors from its C++ core (rfviz raises none) or
    its own subclasses (``torch.OutOfMemoryError``); Python's own subclasses (NotImplementedError, RecursionError,
    ...) are not."""
    return type(exc) is RuntimeError or type(exc).__module__.split(".")[0] == "torch"


def as_parameter_error(exc: BaseException) -> ParameterError | None:
    """The ParameterError an anticipated failure becomes (None: a bug, raised as it is).

    Parameters
    ----------
    exc : BaseException
        What the computation raised.

    Returns
    -------
    ParameterError or None
        The error to raise instead (``exc`` itself for a ParameterError already worded with keywords).

    Examples
    --------
    >>> str(as_parameter_error(OverflowError("math range error")))
    'numeric overflow or loss of precision (math range error); try less extreme inputs'
    """
    from sklearn.utils._param_validation import InvalidParameterError

    if isinstance(exc, ParameterError):
        text = keyword_words(str(exc))
        if text == str(exc) or type(exc) is not ParameterError:
            return exc
        worded = ParameterError(text)
        worded.cli_text = str(exc)  # type: ignore[attr-defined]  # the same message with the CLI's flags
        return worded
    if isinstance(exc, InvalidParameterError):
        return ParameterError(f"invalid parameter for scikit-learn ({_one_line(exc)})")
    if isinstance(exc, FloatingPointError | OverflowError | ZeroDivisionError | np.linalg.LinAlgError):
        return ParameterError(f"numeric overflow or loss of precision ({_one_line(exc)}); try less extreme inputs")
    if isinstance(exc, MemoryError):
        return ParameterError(f"not enough memory for this request; {FIT_HINT}")
    if isinstance(exc, RuntimeError) and _from_torch(exc):
        what = "allocation refused" if any(s in str(exc) for s in ("alloc", "out of memory", "not enough memory")) \
            else "the computation failed in torch"
        return ParameterError(f"{what} ({_one_line(exc)[:160]}); {FIT_HINT}")
    return None


def _check_arguments(sig: inspect.Signature, constraints: Mapping[str, Any], args: tuple, kwargs: dict) -> None:
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:  # an unknown keyword or a missing argument: name it
        raise ParameterError(_one_line(exc)) from None
    for name, value in bound.arguments.items():
        constraint = constraints.get(name)
        if constraint is None or (value is None and sig.parameters[name].default is None):
            continue
        if isinstance(constraint, Param):
            many = isinstance(value, list | tuple) or (isinstance(value, np.ndarray) and value.ndim > 0)
            if many and constraint.kind != "complex_list":
                raise ParameterError(f"{name} must be {constraint.range_text()}, got a list ({str(value)[:40]}); one "
                                     f"value is expected")
            check(value, constraint)
        else:
            constraint.validate(value)


def api_function(constraints: Mapping[str, Any]) -> Callable[[F], F]:
    """Declare a public API function's parameter constraints and check every call against them.

    Parameters
    ----------
    constraints : mapping
        Argument name → ``Param``, ``ListOf`` or ``Instance``. An argument left at a None default is not checked
        (None means "automatic"). The mapping is stored read-only as ``fn.parameter_constraints`` and in
        ``PARAMETER_CONSTRAINTS[fn.__name__]``.

    Returns
    -------
    callable
        The decorator. The wrapped function runs with numpy's floating-point errors ignored (an extreme but valid
        input gives the command's ``null`` and note), and every anticipated failure becomes a ParameterError
        (``as_parameter_error``) worded with keyword names.

    Examples
    --------
    >>> from rfviz.params import M_PARAM
    >>> @api_function({"m": M_PARAM})
    ... def twice(m: int = 10) -> int:
    ...     return 2 * m
    >>> twice(m=4), int(twice(m=np.int64(4))), sorted(twice.parameter_constraints)
    (8, 8, ['m'])
    >>> twice(m="4")
    Traceback (most recent call last):
    ...
    rfviz.params.core.ParameterError: m must be an integer in [1, 1e+07], got '4' (text; a number is expected)
    """
    frozen = MappingProxyType(dict(constraints))

    def deco(fn: F) -> F:
        sig = inspect.signature(fn)
        missing = [n for n in frozen if n not in sig.parameters]
        if missing:
            raise TypeError(f"{fn.__qualname__} has no argument {missing[0]!r} to constrain")

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                _check_arguments(sig, frozen, args, kwargs)
                with np.errstate(all="ignore"):
                    return fn(*args, **kwargs)
            except Exception as exc:
                converted = as_parameter_error(exc)
                if converted is None:
                    raise
                if converted is exc:
                    raise
                raise converted from exc

        wrapper.parameter_constraints = frozen  # type: ignore[attr-defined]
        PARAMETER_CONSTRAINTS[fn.__name__] = frozen
        return wrapper  # type: ignore[return-value]

    return deco
