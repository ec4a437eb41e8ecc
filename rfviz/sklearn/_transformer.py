"""``RandomFeatures``: every registered rfviz feature map as a scikit-learn transformer, a drop-in for
``sklearn.kernel_approximation.RBFSampler``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted, validate_data

from ..estimators import REGISTRY
from ..params import ParameterError
from ..registries import COUPLINGS
from . import _maps
from ._params import (
    DEFAULT_N_COMPONENTS,
    PARAMETER_CONSTRAINTS,
    SIDES,
    RandomFeaturesParameterError,
    m_for,
    merged_params,
    plain,
    resolve_gamma,
)

ACCEPTED_SPARSE = ("csr", "csc")
BOUNDED_MAPS = ("trig", "trig_phase", "complex_exponential")
"""Maps whose Gaussian-kernel features are bounded (|φ_i| ≤ √(2/m)): only non-finite projections can break them."""


def _check_dimension(est: Any, d: int) -> None:
    """Refuse too few input features for the estimator and its coupling, with the count scikit-learn's checks look
    for ("1 feature(s)")."""
    coupling = est.params.get("coupling")
    minimum = COUPLINGS[coupling].min_d if coupling else 1
    try:
        est.check_dimension(d)
        if d >= minimum:
            return
        why = f"coupling={coupling} needs d ≥ {minimum}"
    except ParameterError as exc:
        why = str(exc)
    raise ParameterError(f"{est.name}{f' with coupling={coupling}' if coupling else ''} cannot map {d} feature(s) "
                         f"(n_features = {d}): {why}")


class RandomFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Random features of any registered rfviz estimator, as a scikit-learn transformer (a drop-in for
    ``RBFSampler``).

    ``fit`` draws the random projections once (``random_state``); ``transform`` maps each row x to φ(x), so that
    φ_query(x)·φ_key(y) is the estimator's K̂(x, y), an unbiased estimate of its kernel (Gaussian e^{−γ|x−y|²} by
    default, softmax e^{2γ x·y}, dot-product, ... as the estimator says) with the closed-form MSE rfviz gives.
    ``RandomFeatures(gamma=g, n_components=n, random_state=s)`` stands where ``RBFSampler(gamma=g,
    n_components=n, random_state=s)`` stood (the same map, √(2/n)·cos(ω·x + b)); ``RandomFeatures("trig", ...)``
    with ``coupling="orthogonal"`` has about half its Gram error on real data.

    Parameters
    ----------
    estimator : str
        A registered estimator (``rfviz estimators`` lists them); default ``trig_phase``, RBFSampler's map.
    gamma : float or "scale", optional
        Bandwidth with RBFSampler's meaning: the Gaussian kernel is e^{−γ|x−y|²}; ``"scale"`` uses
        1/(n_features·X.var()) (stored in ``gamma_``). None: 1.0, unless ``scale`` is given.
    n_components : int, optional
        Number of output columns; m is derived per estimator (trig and antithetic maps 2m columns, trig_phase and
        positive m, hybrids 4m(n + 1), complex maps twice their count) and stored in ``m_``; a count the map cannot
        have (an odd one for trig) is rounded up to the next it has (``n_output_features_``). None: 100, unless
        ``m`` is given.
    m : int, optional
        Number of random projections instead of ``n_components`` (not both).
    coupling : str, optional
        ``iid``, ``orthogonal``, ``simplex``, ``sorf``, ``fastfood``, ``qmc_sobol``, ... for the estimators that have
        a coupling (None: iid). ``sorf`` and ``fastfood`` are applied by fast Walsh–Hadamard transforms (fitted state
        O(m), O(m log d) per row) for trig, positive and positive_antithetic.
    kernel : str, optional
        ``gaussian`` (default where the estimator offers it) or ``softmax``; the Maclaurin features also have
        ``exponential`` and ``polynomial``.
    params : mapping, optional
        The estimator's other parameters, e.g. ``{"A": -0.1}`` for GERF or ``{"n": 4}`` for a hybrid (searchable
        as ``params`` dicts). A parameter given here and as an argument is refused.
    scale : float, optional
        The bandwidth as an input scale instead of ``gamma`` (not both): inputs are multiplied by
        ``scale = √(2γ)``.
    side : str
        ``query`` or ``key``: which side of an asymmetric map ``transform`` gives (``transform(X, side=...)``
        overrides it); ``symmetric_`` tells whether they differ.
    random_state : int, RandomState or None
        Seeds the projections (the same seed gives the same features).

    Attributes
    ----------
    estimator_ : rfviz.Estimator
        The validated estimator.
    samples_ : dict of torch.Tensor
        Its random draw (for sorf and fastfood only the signs, permutations and scalings).
    gamma_, scale_ : float
        The bandwidth used (``scale_`` = √(2·``gamma_``)).
    m_ : int
        Random projections drawn.
    center_ : np.ndarray of shape (``n_features_in_``,)
        What is subtracted from the inputs: the training mean for the Gaussian kernel (K(x − c, y − c) = K(x, y)
        exactly, so the features stay in range for data far from the origin), 0 for the other kernels.
    n_features_in_ : int
        Input dimension d.
    n_output_features_ : int
        Length of φ(x) (real numbers).
    symmetric_ : bool
        Whether the query and key maps agree (checked on the fitted data's first row).
    random_weights_, random_offset_ : np.ndarray
        RBFSampler's names: the projections scale·ω as a (d, m) matrix (formed on demand for sorf and fastfood) and
        trig_phase's phases b (zeros for the maps without phases), in the input's dtype.

    Notes
    -----
    ``sklearn.utils.estimator_checks.check_estimator`` passes in full, with the default Gaussian kernel, for
    ``trig``, ``positive``, ``positive_antithetic`` (each with the couplings iid, orthogonal, simplex,
    simplex_plus, sorf, fastfood, qmc_sobol, qmc_halton), ``trig_phase``, ``complex_exponential`` and ``gerf``
    (tests/test_sklearn_checks.py); simplex couplings refuse one input feature with the message scikit-learn
    expects. Sparse CSR/CSC inputs are accepted
    (projected without densifying for the dense maps), float32 inputs give float32 features (computed in float64).
    The support table, with what does not work and why, is in docs/sklearn-pipeline.md.

    * Positive and hyperbolic maps are computed in log space; where the features of a row leave float64 (the
      softmax kernel of long inputs, or positive Gaussian features of a row far from the training data) ``transform``
      refuses with a ParameterError naming the remedy (standardise the data, a smaller gamma, or a trig map).
    * ``oprf`` with ``A_from=pair`` and the ``*derf`` estimators (parameters per pair) have no per-point map.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.linear_model import Ridge
    >>> X = np.random.default_rng(1).normal(size=(40, 4)) * 0.5
    >>> y = np.sin(X[:, 0])
    >>> model = make_pipeline(RandomFeatures("trig", n_components=128, gamma=0.5, random_state=0), Ridge(alpha=1e-3))
    >>> model.fit(X, y).score(X, y) > 0.9
    True
    """

    _parameter_constraints: dict = PARAMETER_CONSTRAINTS

    def __init__(self, estimator: str = "trig_phase", *, gamma: float | str | None = None,
                 n_components: int | None = None, m: int | None = None, coupling: str | None = None,
                 kernel: str | None = None, params: Mapping[str, Any] | None = None, scale: float | None = None,
                 side: str = "query", random_state: Any = None) -> None:
        self.estimator = estimator
        self.gamma = gamma
        self.n_components = n_components
        self.m = m
        self.coupling = coupling
        self.kernel = kernel
        self.params = params
        self.scale = scale
        self.side = side
        self.random_state = random_state

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # ------------------------------------------------------------------------------------------------ fitting
    def _check_hyper_parameters(self) -> None:
        """scikit-learn's validation of ``_parameter_constraints``, raised as a ``ParameterError`` too."""
        try:
            self._validate_params()
        except InvalidParameterError as exc:
            raise RandomFeaturesParameterError(str(exc)) from None
        if self.m is not None and self.n_components is not None:
            raise ParameterError(f"give n_components (output columns) or m (projections), not both; got "
                                 f"n_components={self.n_components!r} and m={self.m!r}")

    def _build(self, X: Any) -> Any:
        """The rfviz estimator for inputs like X, with m resolved from ``n_components``."""
        d = X.shape[1]
        values = merged_params(self.estimator, {"m": self.m, "coupling": self.coupling, "kernel": self.kernel},
                               self.params)
        cls = REGISTRY[self.estimator]
        has_m = "m" in {p.name for p in cls.spec}
        _check_dimension(cls(**dict(values, m=values.get("m", 1)) if has_m else values), d)
        if has_m and "m" in values and self.n_components is not None:
            raise ParameterError(f"give n_components (output columns) or m (projections), not both; got "
                                 f"n_components={self.n_components!r} and params['m']={values['m']!r}")
        if has_m and "m" not in values:
            n = DEFAULT_N_COMPONENTS if self.n_components is None else int(plain(self.n_components))
            try:
                values["m"] = m_for(self.estimator, values, d, n)
            except NotImplementedError as exc:
                raise ParameterError(f"{self.estimator} has no feature map with these parameters: {exc}") from None
        return cls(**values)

    def fit(self, X: Any, y: Any = None) -> RandomFeatures:
        """Draw the random projections for inputs of X's dimension (and, for the Gaussian kernel, centre on X).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, d)
            Training inputs (their dimension, their mean for the Gaussian kernel, their variance for
            ``gamma="scale"``).
        y : ignored

        Returns
        -------
        RandomFeatures
            self, fitted.
        """
        self._check_hyper_parameters()
        X = validate_data(self, X, accept_sparse=ACCEPTED_SPARSE, dtype=[np.float64, np.float32], reset=True)
        self.gamma_, self.scale_ = resolve_gamma(self.gamma, self.scale, X)
        est = self._build(X)
        d = X.shape[1]
        _maps.require_fit_fits(est, d)
        seed = int(check_random_state(self.random_state).randint(0, 2**31 - 1))
        kind, samples = _maps.draw(est, d, seed)
        gaussian = est.params.get("kernel") == "gaussian"
        center = np.asarray(X.mean(axis=0), dtype=np.float64).ravel() if gaussian else np.zeros(d)
        self.fitted_map_ = _maps.FittedMap(est, samples, self.scale_, center, gaussian, kind,
                                           int(est.params.get("m", 0)), d)
        self.estimator_, self.samples_, self.center_ = est, samples, center
        self.m_ = self.fitted_map_.m
        self._input_dtype = X.dtype
        try:
            query, key = self.fitted_map_.features(X[:1], "query"), self.fitted_map_.features(X[:1], "key")
        except NotImplementedError as exc:
            raise ParameterError(f"{self.estimator} has no feature map with these parameters: {exc}") from None
        self.n_output_features_ = self._n_features_out = int(query.shape[-1])
        self.symmetric_ = bool(torch.equal(query, key))
        return self

    # ------------------------------------------------------------------------------------------------ mapping
    def transform(self, X: Any, side: str | None = None) -> np.ndarray:
        """φ(x) for every row of X.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, d)
        side : str, optional
            ``query`` or ``key`` (default: the ``side`` parameter).

        Returns
        -------
        np.ndarray of shape (n_samples, n_output_features_)
            Real features in X's dtype (float32 or float64); a complex map gives [Re φ, Im φ] on the query side
            and [Re φ, −Im φ] on the key side, so that a query row times a key row is Re K̂(x, y).
        """
        check_is_fitted(self, "fitted_map_")
        X = validate_data(self, X, accept_sparse=ACCEPTED_SPARSE, dtype=[np.float64, np.float32], reset=False)
        side = self.side if side is None else side
        if side not in SIDES:
            raise ParameterError(f"side must be one of {', '.join(SIDES)}, got {side!r}")
        n, cols = X.shape[0], self.n_output_features_
        _maps.require_transform_fits(self.estimator, n, cols, self.m_, X.shape[1], X.dtype.itemsize)
        step = _maps.rows_per_chunk(cols, self.m_, X.shape[1])
        if n <= step and X.dtype == np.float64:  # one chunk: its features are the output, no copy
            phi = self.fitted_map_.features(X, side).numpy()
            self._check_range(phi, 0)
            return phi
        out = np.empty((n, cols), dtype=X.dtype)
        for start in range(0, n, step):
            phi = self.fitted_map_.features(X[start:start + step], side).numpy()
            self._check_range(phi, start)
            out[start:start + step] = phi
        return out

    def _check_range(self, phi: np.ndarray, start: int) -> None:
        """Refuse features that left float64 (inf/NaN, or a row of a Gaussian map that underflowed to all zeros,
        whose K̂(x, x) would be 0 for K(x, x) = 1), saying what to do. One pass: the row sums carry inf/NaN, and
        only a row summing to 0 is looked at for all zeros."""
        with np.errstate(invalid="ignore", over="ignore"):  # inf − inf is what is being looked for
            sums = phi.sum(axis=1)
        finite = np.isfinite(sums)
        empty = np.zeros_like(finite)
        if self.fitted_map_.gaussian:
            zero = np.flatnonzero(sums == 0)
            empty[zero] = ~phi[zero].any(axis=1)
        bad = np.flatnonzero(~finite | empty)
        if not bad.size:
            return
        row = start + int(bad[0])
        how = ("overflow" if not finite[bad[0]] else "underflow to 0")
        if self.estimator in BOUNDED_MAPS and self.fitted_map_.gaussian:
            fix = "the projections ω·x themselves leave float64: standardise the data (StandardScaler) or lower gamma"
        elif self.fitted_map_.gaussian:
            fix = ("standardise the data (StandardScaler), lower gamma, or use a trig map (trig, trig_phase), whose "
                   "Gaussian features are bounded")
        else:
            fix = ("the softmax kernel e^{2γx·y} itself leaves float64 there: standardise the data, lower gamma, or "
                   "use the Gaussian kernel (kernel='gaussian')")
        raise ParameterError(f"{self.estimator}'s features {how} float64 at row {row} (|x| too large for this map "
                             f"and gamma = {self.gamma_:g}); {fix}")

    # ------------------------------------------------------------------------------------------------ RBFSampler
    @property
    def _gamma(self) -> float:
        """RBFSampler's name for ``gamma_``."""
        return self.gamma_

    @property
    def random_weights_(self) -> np.ndarray:
        """The projections scale·ω as a (d, m) matrix in the input's dtype (RBFSampler's ``random_weights_``)."""
        check_is_fitted(self, "fitted_map_")
        return self.fitted_map_.weights().T.numpy().astype(self._input_dtype)

    @property
    def random_offset_(self) -> np.ndarray:
        """trig_phase's phases b (m,), zeros for the maps without phases, in the input's dtype."""
        check_is_fitted(self, "fitted_map_")
        b = self.samples_.get("b")
        values = b[0].numpy() if b is not None else np.zeros(self.m_)
        return values.astype(self._input_dtype)

    def fitted_state_nbytes(self) -> int:
        """Bytes of the fitted random draw and centre (what ``transform`` reads besides X).

        Returns
        -------
        int
        """
        check_is_fitted(self, "fitted_map_")
        return self.fitted_map_.state_nbytes()
