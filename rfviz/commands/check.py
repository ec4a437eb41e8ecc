"""``rfviz check`` / ``rfviz.check``: the estimator lab's settings validated from typed values
(``check_settings``), the same for the command, the API and the plugin process they start."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..geometry import snap_theta
from ..lab import ALPHA_PARAM, DEFAULT_COMPARE, PAIR_KINDS
from ..params import (
    CHECK_TRIALS_PARAM,
    CPU_DEVICE_PARAM,
    LAB_D_PARAM,
    R_PARAM,
    SEED_PARAM,
    THETA_PARAM,
    Param,
    ParameterError,
    check,
    check_list,
)

FEATURE_MAPS_PARAM = Param("check_feature_maps", True, "bool", "check the feature maps (finite, positive, bounded, "
                           "consistent with estimate)")
CHECK_OPTIONS = ("r", "theta", "d", "trials", "seed", "alpha", "compare", "device", "check_feature_maps", "pairs")
"""The keywords of ``rfviz.check`` besides the target and its parameters."""


def _names(name: str, value: Any) -> list[str]:
    """A list (or tuple) of strings."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ParameterError(f"{name} must be a list of names, got {str(value)[:80]!r}")
    return list(value)


def check_settings(**options: Any) -> dict[str, Any]:
    """The lab's keyword settings validated by their Params (unknown names refused; absent ones left to the lab's
    defaults); θ just above π (``3.1416``) is read as π.

    Parameters
    ----------
    **options
        Some of ``CHECK_OPTIONS``: r and theta (lists of numbers), d, trials, seed, alpha, compare (names), device,
        check_feature_maps (bool), pairs (a subset of ``lab.PAIR_KINDS``).

    Returns
    -------
    dict
        The validated settings, with ``compare`` always present.

    Examples
    --------
    >>> round(check_settings(theta=[0.5, 3.1416], d=4)["theta"][-1], 12)
    3.14159265359
    """
    unknown = sorted(set(options) - set(CHECK_OPTIONS))
    if unknown:
        raise ParameterError(f"check has no option {unknown[0]!r}; its options are: {', '.join(CHECK_OPTIONS)}")
    out: dict[str, Any] = {}
    if "r" in options:
        out["r"] = check_list(options["r"], R_PARAM).tolist()
    if "theta" in options:
        theta = options["theta"]
        if isinstance(theta, list | tuple):
            theta = [snap_theta(t) if isinstance(t, float) else t for t in theta]
        out["theta"] = check_list(theta, THETA_PARAM).tolist()
    for spec in (LAB_D_PARAM, CHECK_TRIALS_PARAM, SEED_PARAM, ALPHA_PARAM, CPU_DEVICE_PARAM, FEATURE_MAPS_PARAM):
        if spec.name in options:
            out[spec.name] = check(options[spec.name], spec)
    out["compare"] = _names("compare", options.get("compare", list(DEFAULT_COMPARE)))
    if "pairs" in options:
        pairs = options["pairs"]
        if not isinstance(pairs, list | tuple) or not pairs or not all(p in PAIR_KINDS for p in pairs):
            raise ParameterError(f"pairs must be a non-empty subset of {', '.join(PAIR_KINDS)}, got "
                                 f"{str(pairs)[:80]!r}")
        out["pairs"] = list(pairs)
    return out


def check_target_arguments(target: Any, params: Any) -> dict[str, Any]:
    """``target`` (a name, a plugin spec or an estimator class) and ``params`` (a mapping) checked for their type;
    the parameters as a dict."""
    from ..estimators.base import Estimator

    if not (isinstance(target, str) or (isinstance(target, type) and issubclass(target, Estimator))):
        raise ParameterError(f"target must be an estimator name, a plugin spec (path/to/file.py:Class) or an "
                             f"estimator class, got {str(target)[:40]!r}")
    if params is not None and not isinstance(params, Mapping):
        raise ParameterError(f"params must be a mapping of the estimator's parameters, got {str(params)[:40]!r}")
    return dict(params or {})

