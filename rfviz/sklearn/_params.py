"""The transformer's hyper-parameters: scikit-learn's ``_parameter_constraints`` (with booleans refused where a
number is meant), merging them with the estimator's ``params`` (a parameter given twice is refused), the bandwidth
(γ, ``"scale"``, or ``scale``) and the number of projections m from ``n_components``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions

from ..estimators import REGISTRY
from ..params import ParameterError
from ..registries import COUPLING_NAMES, IID

SIDES = ("query", "key")
"""The two sides of a feature map: K̂(x, y) = φ_query(x)·φ_key(y). They differ for asymmetric maps (the hybrids,
GERF with s = −1, complex features, ...)."""
DEFAULT_GAMMA = 1.0
"""γ when neither ``gamma`` nor ``scale`` is given: RBFSampler's default."""
DEFAULT_N_COMPONENTS = 100
"""Output columns when neither ``n_components`` nor ``m`` is given: RBFSampler's default."""
OWN_KEYS = ("m", "coupling", "kernel")
"""Constructor arguments that are also estimator parameters (and may instead be given in ``params``)."""


class RandomFeaturesParameterError(ParameterError, InvalidParameterError):
    """A hyper-parameter of ``RandomFeatures`` out of range: both rfviz's ``ParameterError`` and scikit-learn's
    ``InvalidParameterError`` (which ``check_estimator`` expects)."""


class NumberInterval(Interval):
    """scikit-learn's ``Interval`` that refuses booleans (``True`` is an ``int`` in Python, never a bandwidth)."""

    def is_satisfied_by(self, val: Any) -> bool:
        return not isinstance(val, bool | np.bool_) and super().is_satisfied_by(val)


PARAMETER_CONSTRAINTS: dict[str, list[Any]] = {
    "estimator": [StrOptions(set(REGISTRY))],
    "gamma": [StrOptions({"scale"}), NumberInterval(Real, 0.0, None, closed="neither"), None],
    "n_components": [NumberInterval(Integral, 1, None, closed="left"), None],
    "m": [NumberInterval(Integral, 1, None, closed="left"), None],
    "coupling": [StrOptions(set(COUPLING_NAMES)), None],
    "kernel": [str, None],
    "params": [Mapping, None],
    "scale": [NumberInterval(Real, 0.0, None, closed="neither"), None],
    "side": [StrOptions(set(SIDES))],
    "random_state": ["random_state"],
}


def plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (GridSearchCV grids of numpy values); anything else as is."""
    return value.item() if isinstance(value, np.generic) else value


def merged_params(name: str, own: Mapping[str, Any], params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The estimator's parameters: ``params`` plus the constructor's ``m``/``coupling``/``kernel`` (not None).

    Raises
    ------
    ParameterError
        When one of them is given both ways (``m=8`` and ``params={"m": 4}``), or the estimator lacks it.
    """
    names = {p.name for p in REGISTRY[name].spec}
    values = {str(k): plain(v) for k, v in (params or {}).items()}
    for key in OWN_KEYS:
        value = own.get(key)
        if value is None:
            continue
        if key in values:
            raise ParameterError(f"{key} is given twice ({key}={value!r} and params[{key!r}]={values[key]!r}); "
                                 "give it once")
        if key not in names:
            raise ParameterError(f"{name} has no parameter {key!r} (its parameters: {', '.join(sorted(names))})")
        values[key] = plain(value)
    unknown = sorted(set(values) - names)
    if unknown:
        raise ParameterError(f"{name} has no parameter {unknown[0]!r} (its parameters: {', '.join(sorted(names))})")
    if "kernel" in names and "kernel" not in values:
        choices = next(p.choices for p in REGISTRY[name].spec if p.name == "kernel")
        if "gaussian" in (choices or ()):
            values["kernel"] = "gaussian"  # RBFSampler's kernel: gamma has its meaning
    return values


def data_variance(X: Any) -> float:
    """X.var() over every entry, as RBFSampler's ``gamma="scale"`` computes it (sparse X too)."""
    if sp.issparse(X):
        return float(X.multiply(X).mean() - X.mean() ** 2)
    return float(np.asarray(X, dtype=np.float64).var())


def resolve_gamma(gamma: Any, scale: Any, X: Any) -> tuple[float, float]:
    """(γ, scale = √(2γ)) from the constructor's ``gamma`` (a number or ``"scale"``: 1/(n_features·X.var()), 1 when
    X is constant) or ``scale``; both given is refused."""
    if gamma is not None and scale is not None:
        raise ParameterError(f"gamma and scale are two names for one bandwidth (scale = √(2·gamma)); give one, got "
                             f"gamma={gamma!r} and scale={scale!r}")
    if scale is not None:
        s = float(plain(scale))
        return 0.5 * s * s, s
    if isinstance(gamma, str):
        var = data_variance(X)
        g = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    else:
        g = DEFAULT_GAMMA if gamma is None else float(plain(gamma))
    if not (math.isfinite(g) and g > 0 and math.isfinite(math.sqrt(2.0 * g))):
        raise ParameterError(f"gamma must be a number in (0, inf), got {g!r}")
    return g, math.sqrt(2.0 * g)


def _columns(name: str, values: dict[str, Any], d: int, m: int) -> int:
    """Output columns of ``name``'s map with m projections (drawn once with iid ω, on one zero row)."""
    probe = dict(values, m=m)
    if "coupling" in probe:
        probe["coupling"] = IID
    est = REGISTRY[name](**probe)
    samples = est.sample(1, d, generator=torch.Generator().manual_seed(0), device=torch.device("cpu"))
    phi = est.features(samples, torch.zeros((1, d), dtype=torch.float64), "query")
    return int(phi.shape[-1] * (2 if phi.is_complex() else 1))


def m_for(name: str, values: dict[str, Any], d: int, n_components: int) -> int:
    """The smallest m whose map has at least ``n_components`` output columns (columns are a·m + b for the built-in
    maps: trig 2m, hybrids 4m(n + 1), ...; exactly n_components where the map has that count)."""
    c1, c2 = _columns(name, values, d, 1), _columns(name, values, d, 2)
    a, b = c2 - c1, c1 - (c2 - c1)
    if a <= 0:
        return 1
    return max(1, -(-(n_components - b) // a))


__all__ = ["DEFAULT_GAMMA", "DEFAULT_N_COMPONENTS", "PARAMETER_CONSTRAINTS", "SIDES", "NumberInterval",
           "RandomFeaturesParameterError", "data_variance", "m_for", "merged_params", "plain", "resolve_gamma"]
