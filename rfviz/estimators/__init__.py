"""The estimator catalog. Importing this package registers every built-in estimator."""

# Each import registers its module's estimators:
# classic: trig, positive, positive_antithetic; crt: gerf, oprf, poisson, geometric;
# hrf: trig_phase, complex_exponential[_diag], hybrid_angular, hybrid_gaussian;
# dot_product: poly_sketch, tensor_srht, maclaurin.
from . import classic, crt, dot_product, hrf  # noqa: F401
from .base import REGISTRY, Estimator, PairStats, SoftmaxFamilyEstimator, create, get_estimator, register

__all__ = ["REGISTRY", "Estimator", "PairStats", "SoftmaxFamilyEstimator", "create", "get_estimator", "register"]
