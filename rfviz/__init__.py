"""rfviz: the interactive atlas of random-feature kernel estimators (computation package)."""

from ._version import __version__ as __version__
from .estimators import REGISTRY, Estimator, create, get_estimator, register
from .params import Param, ParameterError

_API = ("mse", "density", "psi", "check", "mse_curve")
"""The Python API's functions (rfviz.api), loaded on first use. ``gram`` and ``sweep`` are rfviz.api.gram and
rfviz.api.sweep: rfviz.gram and rfviz.sweep name the engine's modules."""


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'rfviz' has no attribute {name!r}")


__all__ = ["REGISTRY", "Estimator", "Param", "ParameterError", "create", "get_estimator", "register", *_API]
