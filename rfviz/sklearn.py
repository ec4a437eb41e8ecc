"""Every registered random-feature map as a scikit-learn transformer: ``rfviz.sklearn.RandomFeatures``.

scikit-learn's own ``kernel_approximation`` offers ``RBFSampler`` (trig features), ``Nystroem`` and
``PolynomialCountSketch``; this module makes every feature map rfviz verifies (positive and antithetic FAVOR+,
hybrids, simplex/orthogonal couplings, GERF/OPRF, complex exponential, dot-product sketches, ...) usable in a
``Pipeline`` and a ``GridSearchCV``.

>>> import numpy as np
>>> from rfviz.sklearn import RandomFeatures
>>> X = np.random.default_rng(0).normal(size=(5, 3)) * 0.3
>>> RandomFeatures("positive", m=8, random_state=0).fit_transform(X).shape
(5, 8)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .estimators import get_estimator
from .params import ParameterError

__all__ = ["SIDES", "RandomFeatures"]

SIDES = ("query", "key")
"""The two sides of a feature map: K̂(x, y) = φ_query(x)·φ_key(y). They differ for asymmetric maps (the hybrids,
GERF with s = −1, complex features, ...)."""


def _validate(est: BaseEstimator, X: Any, reset: bool) -> np.ndarray:
    """scikit-learn's input validation (``validate_data`` from 1.6, the older method before): a finite, dense,
    2-D float64 array; ``n_features_in_`` set (``reset``) or checked against the fitted one."""
    try:
        from sklearn.utils.validation import validate_data
    except ImportError:  # scikit-learn < 1.6
        return est._validate_data(X, reset=reset, dtype=np.float64)  # type: ignore[attr-defined]
    return validate_data(est, X, reset=reset, dtype=np.float64)


class RandomFeatures(TransformerMixin, BaseEstimator):
    """Random features of any registered rfviz estimator, as a scikit-learn transformer.

    ``fit`` draws the random projections once (``random_state``); ``transform`` maps each row x to φ(x), so that
    φ_query(x)·φ_key(y) is the estimator's K̂(x, y) — an unbiased estimate of the kernel (softmax e^{x·y}, Gaussian
    ``e^{−|x−y|²/2}``, dot-product (x·y)^p, ... as the estimator says) with the closed-form MSE rfviz gives.

    Parameters
    ----------
    estimator : str
        A registered estimator (``rfviz.REGISTRY``; ``rfviz estimators`` lists them).
    m : int
        Number of random features (the feature vector is longer for some maps: trig and antithetic 2m, hybrids
        4m(n + 1); complex maps give real and imaginary parts, twice their count).
    coupling : str, optional
        ``iid``, ``orthogonal``, ``simplex``, ... for the estimators that have a coupling (None: the estimator's
        default).
    kernel : str, optional
        ``softmax`` or ``gaussian`` for the softmax-family estimators (None: the estimator's default, softmax).
    params : mapping, optional
        The estimator's other parameters, e.g. ``{"A": -0.1}`` for GERF or ``{"n": 4}`` for a hybrid (a
        ``GridSearchCV`` searches them as ``params`` dicts).
    scale : float
        Inputs are multiplied by ``scale`` first: the Gaussian kernel becomes ``e^{−scale²|x−y|²/2}`` (scikit-learn's
        ``RBFSampler(gamma)`` is ``scale = √(2·gamma)``), the softmax kernel e^{scale²·x·y}.
    side : str
        ``query`` or ``key``: which side of an asymmetric map ``transform`` gives (``transform(X, side=...)``
        overrides it). For a symmetric model (ridge regression on φ(x)), use a map whose sides agree
        (``symmetric_`` after ``fit``), e.g. trig, positive, positive_antithetic, GERF with s = 1.
    random_state : int, RandomState or None
        Seeds the projections (the same seed gives the same features).

    Attributes
    ----------
    estimator_ : rfviz.Estimator
        The validated estimator.
    samples_ : dict of torch.Tensor
        Its random variables (one draw).
    n_features_in_ : int
        Input dimension d.
    n_output_features_ : int
        Length of φ(x) (real numbers).
    symmetric_ : bool
        Whether the query and key maps agree (checked on the fitted data's first row).

    Notes
    -----
    ``sklearn.utils.estimator_checks.check_estimator`` passes in full for ``positive``, ``positive_antithetic``
    (orthogonal coupling) and ``gerf`` (tests/test_sklearn_transformer.py). Checks that do not apply, and why:

    * ``check_fit_idempotent`` draws inputs of mean 100. The softmax-family maps whose feature values grow like
      ``e^{|x|²/2}`` (``trig``, the hybrids; for the Gaussian kernel too, since the Gaussian factor ``e^{−|x|²/2}`` is
      applied after the softmax map) overflow float64 there, and ``transform`` refuses with a ValueError naming the
      remedy rather than return inf or NaN; every other check passes for ``trig``. Scale such data down (``scale``).
    * ``check_array_api_input`` is skipped by scikit-learn itself unless ``SCIPY_ARRAY_API`` is set: the maps are
      computed in torch float64 and returned as NumPy arrays.
    * ``oprf`` with ``A_from=pair`` (A* depends on both inputs) has no per-point map: ``fit`` raises a ValueError.
    * float32 inputs give float64 features (the maps are computed in float64).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.linear_model import Ridge
    >>> X = np.random.default_rng(1).normal(size=(40, 4)) * 0.5
    >>> y = np.sin(X[:, 0])
    >>> model = make_pipeline(RandomFeatures("trig", m=64, kernel="gaussian", random_state=0), Ridge(alpha=1e-3))
    >>> model.fit(X, y).score(X, y) > 0.9
    True
    """

    def __init__(self, estimator: str = "trig", m: int = 100, *, coupling: str | None = None,
                 kernel: str | None = None, params: Mapping[str, Any] | None = None, scale: float = 1.0,
                 side: str = "query", random_state: Any = None) -> None:
        self.estimator = estimator
        self.m = m
        self.coupling = coupling
        self.kernel = kernel
        self.params = params
        self.scale = scale
        self.side = side
        self.random_state = random_state

    # ------------------------------------------------------------------------------------------------ fitting
    def _build(self) -> Any:
        """The rfviz estimator from the hyper-parameters (ValueError naming the parameter otherwise)."""
        cls = get_estimator(self.estimator)
        names = {p.name for p in cls.spec}
        values: dict[str, Any] = dict(self.params or {})
        for key, value in (("m", self.m), ("coupling", self.coupling), ("kernel", self.kernel)):
            if value is None:
                continue
            if key not in names:
                raise ParameterError(f"{self.estimator} has no parameter {key!r} (its parameters: "
                                     f"{', '.join(sorted(names))})")
            values[key] = value
        unknown = set(values) - names
        if unknown:
            raise ParameterError(f"{self.estimator} has no parameter {sorted(unknown)[0]!r} (its parameters: "
                                 f"{', '.join(sorted(names))})")
        if not (isinstance(self.scale, int | float) and np.isfinite(self.scale) and self.scale > 0):
            raise ParameterError(f"scale must be a number in (0, inf), got {self.scale!r}")
        return cls(**values)

    def fit(self, X: Any, y: Any = None) -> RandomFeatures:
        """Draw the random projections for inputs of X's dimension.

        Parameters
        ----------
        X : array-like of shape (n_samples, d)
            Training inputs (only their dimension is used).
        y : ignored

        Returns
        -------
        RandomFeatures
            self, fitted.
        """
        X = _validate(self, X, reset=True)
        est = self._build()
        self._check_side(self.side)
        d = X.shape[1]
        est.check_dimension(d)
        seed = int(check_random_state(self.random_state).randint(0, 2**31 - 1))
        samples = est.sample(1, d, generator=torch.Generator().manual_seed(seed), device=torch.device("cpu"))
        probe = torch.as_tensor(X[:1] * self.scale, dtype=torch.float64)
        try:
            query, key = est.features(samples, probe, "query"), est.features(samples, probe, "key")
        except NotImplementedError as exc:
            raise ValueError(f"{self.estimator} has no feature map with these parameters: {exc}") from None
        self.estimator_, self.samples_ = est, samples
        self.n_output_features_ = int(query.shape[-1] * (2 if query.is_complex() else 1))
        self.symmetric_ = bool(torch.equal(query, key))
        return self

    @staticmethod
    def _check_side(side: str) -> str:
        if side not in SIDES:
            raise ParameterError(f"side must be one of {', '.join(SIDES)}, got {side!r}")
        return side

    # ------------------------------------------------------------------------------------------------ mapping
    def transform(self, X: Any, side: str | None = None) -> np.ndarray:
        """φ(x) for every row of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, d)
        side : str, optional
            ``query`` or ``key`` (default: the ``side`` parameter).

        Returns
        -------
        np.ndarray of shape (n_samples, n_output_features_)
            Real features; a complex map gives [Re φ, Im φ] on the query side and [Re φ, −Im φ] on the key side,
            so that the dot product of a query row and a key row is Re K̂(x, y).
        """
        check_is_fitted(self, "samples_")
        X = _validate(self, X, reset=False)
        side = self._check_side(self.side if side is None else side)
        u = torch.as_tensor(X * self.scale, dtype=torch.float64)
        phi = self.estimator_.features(self.samples_, u, side)[0]
        if phi.is_complex():
            sign = 1.0 if side == "query" else -1.0
            phi = torch.cat([phi.real, sign * phi.imag], dim=-1)
        out = phi.numpy()
        if not np.all(np.isfinite(out)):
            raise ValueError(f"{self.estimator}'s features overflow float64 on these inputs (their kernel grows like "
                             "e^{|x|²}); use a smaller scale, the Gaussian kernel, or scale the data down")
        return out

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names ``randomfeatures0``, ``randomfeatures1``, ... (one per output column).

        Parameters
        ----------
        input_features : ignored

        Returns
        -------
        np.ndarray of str
        """
        check_is_fitted(self, "samples_")
        return np.asarray([f"randomfeatures{i}" for i in range(self.n_output_features_)], dtype=object)
