"""rfviz: the interactive atlas of random-feature kernel estimators (computation package)."""

from .estimators import REGISTRY, Estimator, create, get_estimator, register
from .params import Param, ParameterError

__version__ = "0.1.0"

__all__ = ["REGISTRY", "Estimator", "Param", "ParameterError", "create", "get_estimator", "register"]
