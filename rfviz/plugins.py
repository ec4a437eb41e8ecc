"""Loading user estimators (plugins) and checking that they follow the estimator protocol.

A plugin is an ordinary Python class that subclasses ``rfviz.estimators.base.Estimator`` (or
``SoftmaxFamilyEstimator``) in the user's own file or package. Three ways to name it, all on the machine that
runs rfviz (the browser never uploads or runs code):

* a spec string: ``path/to/file.py`` or ``path/to/file.py:Class`` or ``package.module:Class`` (CLI ``--plugin``
  and ``python -m rfviz check SPEC``);
* the ``RFVIZ_PLUGINS`` environment variable: specs separated by commas or semicolons;
* entry points in the group ``rfviz.estimators`` of an installed package (``name = "pkg.mod:Class"``).

The specs of the last two are listed here (``env_specs``, ``entry_point_specs``) but loaded only in a plugin
process (``rfviz.plugin_process.discover_isolated``, ``check_isolated``): rfviz's own process never imports them.

Loaded plugins live in ``PLUGINS`` (name → class), not in ``REGISTRY``: the built-in catalog stays what it is,
so tests and pages that iterate the registry are not changed by what a user happened to load.

Every failure (file missing, import error, not an Estimator, protocol broken, a method raising, NaN, wrong
shape) is a ``PluginError`` (a ``ParameterError``) with a one-line message naming the plugin and the step.
"""

from __future__ import annotations

import contextvars
import hashlib
import importlib
import importlib.util
import inspect
import io
import math
import os
import pathlib
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from importlib import metadata
from types import ModuleType
from typing import Any, TypeVar

import numpy as np
import torch

from .estimators import REGISTRY  # the package: the built-in catalog must be loaded before names are compared
from .estimators.base import Estimator, PairStats, validate_estimator_class
from .params import ParameterError

ENV_VAR = "RFVIZ_PLUGINS"
ENTRY_POINT_GROUP = "rfviz.estimators"
PLUGINS: dict[str, type[Estimator]] = {}
"""Plugin estimators loaded in this process, by name (filled by ``load_plugin``)."""

T = TypeVar("T")
TIMEOUT_ENV_VAR = "RFVIZ_PLUGIN_TIMEOUT"
DEFAULT_TIMEOUT_S = 300.0
"""Seconds a plugin process may run plugin code in all (import, smoke test and the check; see rfviz.plugin_process).
A default check of examples/tempered_positive.py takes about 17 s on one laptop core."""
IN_PLUGIN_PROCESS = False
"""True in the plugin process (``rfviz._plugin_worker``) only: there, and nowhere else, a name that is neither
built-in nor loaded is looked up in ``RFVIZ_PLUGINS`` (``resolve_estimator``). rfviz's own process (the CLI, the
server, the Python API) describes and checks the plugins named there through ``rfviz.plugin_process``."""
STAGE_HOOK: Callable[[str], None] | None = None
"""Set by the plugin process: told "import" and "the smoke test" as they start (for its error messages)."""
_TIMEOUT: contextvars.ContextVar[float | None] = contextvars.ContextVar("rfviz_plugin_timeout", default=None)
_CAPTURE_LOCK = threading.Lock()
CAPTURED_STDOUT: list[str] = []
"""What plugin code printed, kept away from the CLI's stdout (where it would corrupt --json); the last 50 entries.
An entry is one in-process capture (``protocol_guard``: a ``print`` inside estimator code) or the last 2000
characters a plugin process wrote to its fds 1 and 2 (``rfviz.plugin_process``: prints, ``os.write(1, …)``, a
child's output). Nothing here reaches the terminal."""


class PluginError(ParameterError):
    """A plugin could not be loaded or does not follow the estimator protocol (one-line message)."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def protocol_guard(owner: str, step: str) -> Iterator[None]:
    """Turn any exception raised by estimator code during ``step`` into a one-line PluginError.

    ParameterErrors pass through unchanged (they already name a parameter and its range), and so do
    NotImplementedErrors (the protocol's way of saying "no closed form" or "no feature map").
    """
    try:
        with _captured_stdout():
            yield
    except (ParameterError, NotImplementedError):
        raise
    except GeneratorExit:
        raise
    except BaseException as exc:  # plugin code may raise anything, sys.exit and KeyboardInterrupt included
        raise PluginError(f"{owner}: {step} raised {_one_line(exc)}") from exc


def plugin_timeout() -> float:
    """Seconds a plugin process may run: ``plugin_timeout_scope``, else ``RFVIZ_PLUGIN_TIMEOUT``, else 300."""
    value = _TIMEOUT.get()
    if value is None:
        raw = os.environ.get(TIMEOUT_ENV_VAR, "")
        try:
            value = float(raw) if raw.strip() else DEFAULT_TIMEOUT_S
        except ValueError:
            raise ParameterError(f"{TIMEOUT_ENV_VAR} must be a number of seconds, got {raw[:40]!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ParameterError(f"plugin timeout must be a number of seconds in (0, inf), got {value!r}")
    return float(value)


@contextmanager
def plugin_timeout_scope(seconds: float | None) -> Iterator[None]:
    """Use ``seconds`` as the deadline of the plugin processes started inside the block (None: the default)."""
    token = _TIMEOUT.set(seconds)
    try:
        plugin_timeout()  # validates
        yield
    finally:
        _TIMEOUT.reset(token)


class _PluginStdout(io.StringIO):
    """The buffer that stands in for stdout while plugin code runs."""


@contextmanager
def _captured_stdout() -> Iterator[None]:
    """Send what plugin code prints to ``CAPTURED_STDOUT`` instead of stdout. Re-entrant: inside a capture (any
    thread) nothing more is redirected, so an abandoned worker can never leave stdout pointing at a buffer."""
    with _CAPTURE_LOCK:
        if isinstance(sys.stdout, _PluginStdout):
            buf = None
        else:
            buf = _PluginStdout()
            saved, sys.stdout = sys.stdout, buf
    if buf is None:
        yield
        return
    try:
        yield
    finally:
        with _CAPTURE_LOCK:
            sys.stdout = saved
        if buf.getvalue():
            CAPTURED_STDOUT.append(buf.getvalue()[-2000:])
            del CAPTURED_STDOUT[:-50]


def with_deadline(owner: str, step: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, reporting ``step`` to ``STAGE_HOOK`` first. Deadlines are no longer kept here (a
    thread cannot be killed): ``check`` and the lab page run plugin code in a plugin process
    (``rfviz.plugin_process``) whose whole process group is killed at its deadline."""
    hook = STAGE_HOOK
    if hook is not None and step == "import":
        hook(step)
    return fn(*args, **kwargs)


def call_guarded(owner: str, step: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` under ``protocol_guard``."""
    with protocol_guard(owner, step):
        return with_deadline(owner, step, fn, *args, **kwargs)


# --------------------------------------------------------------------------- spec parsing and import
def is_plugin_spec(text: str) -> bool:
    """Whether ``text`` names a plugin (a .py path, or module:Class) rather than a registered estimator name."""
    return text.endswith(".py") or ".py:" in text or ":" in text or os.sep in text or "/" in text


def split_spec(spec: str) -> tuple[str, str | None]:
    """``"a/b.py:Cls"`` → ``("a/b.py", "Cls")``; ``"pkg.mod:Cls"`` → ``("pkg.mod", "Cls")``; no class → None."""
    spec = spec.strip()
    if not spec:
        raise PluginError("plugin spec must be path/to/file.py[:Class] or module:Class, got an empty string")
    head, sep, tail = spec.rpartition(":")
    if sep and head and tail.isidentifier() and not (len(head) == 1 and head.isalpha()):  # not a Windows drive
        return head, tail
    return spec, None


def _import_file(path: pathlib.Path) -> ModuleType:
    if not path.is_file():
        raise PluginError(f"plugin file {str(path)!r} does not exist")
    if path.suffix != ".py":
        raise PluginError(f"plugin file must be a .py file, got {str(path)!r}")
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    mod_name = f"rfviz_plugin_{resolved.stem}_{digest}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, resolved)
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot import plugin file {str(path)!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses and pickling look the module up by name
    try:
        with _captured_stdout():
            with_deadline(f"plugin file {str(path)!r}", "import", spec.loader.exec_module, module)
    except PluginError:
        sys.modules.pop(mod_name, None)
        raise
    except BaseException as exc:  # SystemExit, KeyboardInterrupt … from the plugin's top level
        sys.modules.pop(mod_name, None)
        raise PluginError(f"importing plugin file {str(path)!r} raised {_one_line(exc)}") from exc
    return module


def _import_module(name: str) -> ModuleType:
    try:
        with _captured_stdout():
            return with_deadline(f"plugin module {name!r}", "import", importlib.import_module, name)
    except PluginError:
        raise
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise PluginError(f"plugin module {name!r} was not found (is it installed or on PYTHONPATH?)") from None
        raise PluginError(f"importing plugin module {name!r} raised {_one_line(exc)}") from exc
    except BaseException as exc:
        raise PluginError(f"importing plugin module {name!r} raised {_one_line(exc)}") from exc


def estimator_classes(module: ModuleType) -> list[type[Estimator]]:
    """Concrete Estimator subclasses defined in ``module`` itself (not imported into it), in source order."""
    found = [obj for obj in vars(module).values()
             if inspect.isclass(obj) and issubclass(obj, Estimator) and obj.__module__ == module.__name__
             and not obj.__name__.startswith("_") and "name" in vars(obj)]
    return sorted(found, key=lambda c: inspect.getsourcelines(c)[1] if _has_source(c) else 0)


def _has_source(cls: type) -> bool:
    try:
        inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return False
    return True


def resolve_spec(spec: str) -> list[type[Estimator]]:
    """The estimator classes a spec names (one with ``:Class``, every one defined in the file/module otherwise)."""
    target, cls_name = split_spec(spec)
    looks_like_path = target.endswith(".py") or "/" in target or os.sep in target
    module = _import_file(pathlib.Path(target)) if looks_like_path else _import_module(target)
    if cls_name is not None:
        if not hasattr(module, cls_name):
            available = ", ".join(c.__name__ for c in estimator_classes(module)) or "none"
            raise PluginError(f"plugin {spec!r}: {target!r} has no attribute {cls_name!r} "
                              f"(estimator classes there: {available})")
        return [getattr(module, cls_name)]
    classes = estimator_classes(module)
    if not classes:
        raise PluginError(f"plugin {spec!r} defines no Estimator subclass (subclass rfviz.estimators.base.Estimator "
                          "or SoftmaxFamilyEstimator and set a `name`)")
    return classes


# --------------------------------------------------------------------------- protocol validation
def validate_class(cls: Any, origin: str = "") -> type[Estimator]:
    """The protocol checks every estimator gets (``validate_estimator_class``, as PluginErrors), and a name that no
    built-in uses."""
    where = f"plugin {origin!r}: " if origin else ""
    validate_estimator_class(cls, where, PluginError)
    label = f"{where}{cls.__name__}"
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise PluginError(f"{label}: name {cls.name!r} is already used by a built-in estimator; choose another")
    return cls


def smoke_test(est: Estimator, d: int = 3, trials: int = 4) -> None:
    """Run the estimator once on two small pairs: sample, estimate, closed form (if any), features (if any).

    Raises PluginError naming the method that raised, returned the wrong type/shape, or returned NaN/inf.
    """
    owner = f"{type(est).__name__} ({est.name})"
    d = max(d, int(getattr(est, "min_dim", 1)))
    x, y = est.grid_pairs(np.array([0.5, 0.8]), np.array([0.4, 2.0]), d)
    call_guarded(owner, "check_dimension", est.check_dimension, d)
    gen = torch.Generator().manual_seed(0)
    dim = x.shape[-1]
    samples = call_guarded(owner, "sample", est.sample, trials, d, generator=gen, device=torch.device("cpu"),
                           dtype=torch.float64, dim=dim)
    if not isinstance(samples, dict) or not all(isinstance(v, torch.Tensor) for v in samples.values()):
        raise PluginError(f"{owner}: sample must return a dict of torch tensors, got {type(samples).__name__}")
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    out = call_guarded(owner, "estimate", est.estimate, samples, xt, yt, torch.zeros(len(x), dtype=torch.float64))
    if not isinstance(out, torch.Tensor):
        raise PluginError(f"{owner}: estimate must return a torch tensor, got {type(out).__name__}")
    if tuple(out.shape) != (trials, len(x)):
        raise PluginError(f"{owner}: estimate returned shape {tuple(out.shape)}, expected (trials, pairs) = "
                          f"{(trials, len(x))}")
    if not bool(torch.isfinite(out).all()):
        raise PluginError(f"{owner}: estimate returned NaN or inf at r ≤ 0.8 (compute in log space)")
    log_k, _sign = call_guarded(owner, "log_abs_kernel", est.log_abs_kernel, PairStats.of(x, y, d))
    if np.shape(log_k) != (len(x),) or not np.all(np.isfinite(log_k)):
        raise PluginError(f"{owner}: log_abs_kernel must return finite arrays of shape ({len(x)},)")
    if call_guarded(owner, "closed_form_available", est.closed_form_available):
        try:
            lm = call_guarded(owner, "log_mse", est.log_mse, x, y, d)
        except NotImplementedError:
            lm = None  # the lab reports it: has_closed_form is True but there is no _log_mse
        if lm is not None and np.shape(lm) != (len(x),):
            raise PluginError(f"{owner}: log_mse must return an array of shape ({len(x)},), got {np.shape(lm)}")
    try:
        with _captured_stdout():
            phi = est.features(samples, xt, "query")
    except NotImplementedError:
        return
    except BaseException as exc:
        raise PluginError(f"{owner}: features raised {_one_line(exc)}") from exc
    if not isinstance(phi, torch.Tensor) or phi.dim() != 3 or tuple(phi.shape[:2]) != (trials, len(x)):
        shape = tuple(phi.shape) if isinstance(phi, torch.Tensor) else type(phi).__name__
        raise PluginError(f"{owner}: features returned {shape}, expected shape (trials, pairs, features)")


def instantiate(cls: type[Estimator], params: dict[str, Any] | None = None) -> Estimator:
    """``cls(**params)`` with plugin failures turned into one-line errors."""
    with protocol_guard(cls.__name__, "__init__"):
        return cls(**(params or {}))


# --------------------------------------------------------------------------- public loading API
def load_plugin(spec: str, *, check: bool = True) -> list[type[Estimator]]:
    """Import the estimator class(es) named by ``spec``, validate them and add them to ``PLUGINS``."""
    classes = resolve_spec(spec)
    for cls in classes:
        validate_class(cls, spec)
        if check:
            if STAGE_HOOK is not None:
                STAGE_HOOK("the smoke test")
            with protocol_guard(cls.__name__, "the smoke test"):
                with_deadline(cls.__name__, "the smoke test", lambda c=cls: smoke_test(instantiate(c)))
        existing = PLUGINS.get(cls.name)
        if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
            raise PluginError(f"plugin {spec!r}: another plugin already uses the name {cls.name!r}")
        PLUGINS[cls.name] = cls
    return classes


def forget() -> None:
    """Forget loaded plugins and the modules imported from plugin files, so edited files are read again
    (modules named as ``module:Class`` stay imported: Python caches them)."""
    PLUGINS.clear()
    for name in [m for m in sys.modules if m.startswith("rfviz_plugin_")]:
        del sys.modules[name]


def env_specs(environ: dict[str, str] | None = None) -> list[str]:
    """Plugin specs listed in ``RFVIZ_PLUGINS`` (comma- or semicolon-separated)."""
    raw = (os.environ if environ is None else environ).get(ENV_VAR, "")
    return [s.strip() for s in raw.replace(";", ",").split(",") if s.strip()]


def entry_point_specs() -> list[str]:
    """``module:attr`` values of the installed entry points in the group ``rfviz.estimators``."""
    return [ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)]


def resolve_estimator(target: str, extra_plugins: Iterable[str] = ()) -> type[Estimator]:
    """An estimator class from a built-in name, a loaded plugin's name, or a plugin spec."""
    for spec in extra_plugins:
        load_plugin(spec)
    if is_plugin_spec(target):
        classes = load_plugin(target)
        if len(classes) > 1:
            names = ", ".join(c.__name__ for c in classes)
            raise PluginError(f"plugin {target!r} defines several estimators ({names}); add :Class to pick one")
        return classes[0]
    if target in REGISTRY:
        return REGISTRY[target]
    if target not in PLUGINS and IN_PLUGIN_PROCESS:  # never import RFVIZ_PLUGINS' files in rfviz's own process
        for spec in env_specs():
            try:
                load_plugin(spec)
            except PluginError:
                continue
    if target in PLUGINS:
        return PLUGINS[target]
    names = ", ".join(sorted({*REGISTRY, *PLUGINS}))
    where = "" if IN_PLUGIN_PROCESS or not env_specs() else \
        f" (plugins named in {ENV_VAR} are checked by name in a plugin process: rfviz check, rfviz.check)"
    raise PluginError(f"estimator must be a built-in or loaded plugin name ({names}), or a plugin spec "
                      f"path/to/file.py[:Class] or module:Class, got {target!r}{where}")
