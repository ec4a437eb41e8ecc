"""The estimator catalog. Importing this package registers every built-in estimator."""

# Each import registers its module's estimators:
# hrf: trig, positive, positive_antithetic, trig_phase, complex_exponential[_diag], hybrid_angular, hybrid_gaussian;
# crt: gerf, oprf, poisson, geometric;
# dp: poly_sketch, tensor_srht, maclaurin;
# derf: sderf, aderf, saderf.
from . import crt, derf, dp, hrf  # noqa: F401
from .base import REGISTRY, Estimator, PairStats, SoftmaxFamilyEstimator, create, get_estimator, register

__all__ = ["REGISTRY", "Estimator", "PairStats", "SoftmaxFamilyEstimator", "create", "get_estimator", "register"]
