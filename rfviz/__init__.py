"""rfviz: the interactive atlas of random-feature kernel estimators (computation package)."""

from ._version import __version__ as __version__
from .estimators import REGISTRY, Estimator, create, get_estimator, register
from .params import Param, ParameterError

__all__ = ["REGISTRY", "Estimator", "Param", "ParameterError", "create", "get_estimator", "register"]
