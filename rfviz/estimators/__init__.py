"""The estimator catalog. Importing this package registers every built-in estimator."""

from . import classic  # noqa: F401  (registers trig, positive, positive_antithetic)
from . import crt  # noqa: F401  (registers gerf, oprf, poisson, geometric)
from . import hrf  # noqa: F401  (registers trig_phase, complex_exponential[_diag], hybrid_angular, hybrid_gaussian)
from . import dot_product  # noqa: F401  (registers poly_sketch, tensor_srht, maclaurin)
from .base import REGISTRY, Estimator, PairStats, SoftmaxFamilyEstimator, create, get_estimator, register

__all__ = ["REGISTRY", "Estimator", "PairStats", "SoftmaxFamilyEstimator", "create", "get_estimator", "register"]
