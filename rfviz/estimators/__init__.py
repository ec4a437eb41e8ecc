"""The estimator catalog. Importing this package registers every built-in estimator."""

from . import classic  # noqa: F401  (registers trig, positive, positive_antithetic)
from .base import REGISTRY, Estimator, PairStats, SoftmaxFamilyEstimator, create, get_estimator, register

__all__ = ["REGISTRY", "Estimator", "PairStats", "SoftmaxFamilyEstimator", "create", "get_estimator", "register"]
