"""rfviz: the interactive atlas of random-feature kernel estimators (computation package).

The package imports lazily (PEP 562): ``import rfviz.params`` (or ``rfviz.numerics``, ``rfviz.textio``, ...) loads
only that module and what it imports, not torch nor the estimator catalog. The names below are loaded from their
modules on first attribute access, e.g. ``rfviz.REGISTRY`` imports ``rfviz.estimators`` (and torch) then.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__

# public name -> the module that defines it (imported on first access)
_LAZY: dict[str, str] = {
    "REGISTRY": "rfviz.estimators",
    "Estimator": "rfviz.estimators",
    "create": "rfviz.estimators",
    "get_estimator": "rfviz.estimators",
    "register": "rfviz.estimators",
    "Param": "rfviz.params",
    "ParameterError": "rfviz.params",
    # the Python API (one function per command)
    "mse": "rfviz.api",
    "density": "rfviz.api",
    "psi": "rfviz.api",
    "check": "rfviz.api",
    "gram": "rfviz.api",
    "sweep": "rfviz.api",
    "mse_curve": "rfviz.api",
    "downstream": "rfviz.api",
    "features_needed": "rfviz.api",
    "rank_estimators": "rfviz.api",
}

__all__ = ["REGISTRY", "Estimator", "Param", "ParameterError", "__version__", "check", "create", "density",
           "downstream", "features_needed", "get_estimator", "gram", "mse", "mse_curve", "psi", "rank_estimators",
           "register", "sweep"]

if TYPE_CHECKING:  # static tools see the real names; nothing is imported at run time
    from .api import check, density, downstream, features_needed, gram, mse, mse_curve, psi, rank_estimators, sweep
    from .estimators import REGISTRY, Estimator, create, get_estimator, register
    from .params import Param, ParameterError


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first access (PEP 562) and cache it in the package namespace."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
