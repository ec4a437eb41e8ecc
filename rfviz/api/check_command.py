"""``rfviz.check`` (and ``rfviz check``): the estimator lab's settings validated from typed values
(``check_settings``), the same for the command, the API and the plugin process they start; the check itself runs
here once (``run_check``), in-process for a built-in target or in a plugin process for plugin code."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..estimators import REGISTRY  # the package: REGISTRY needs the catalog loaded
from ..geometry import snap_theta
from ..lab import ALPHA_PARAM, DEFAULT_COMPARE, PAIR_KINDS
from ..params import (
    CHECK_TRIALS_PARAM,
    CPU_DEVICE_PARAM,
    KERNEL_PARAM,
    LAB_D_PARAM,
    R_PARAM,
    SEED_PARAM,
    THETA_PARAM,
    Param,
    ParameterError,
    check_list,
)
from ..params import check as check_param
from ..textio import jsonable
from .results import Result
from .validation import Instance, api_function

FEATURE_MAPS_PARAM = Param("check_feature_maps", True, "bool", "check the feature maps (finite, positive, bounded, "
                           "consistent with estimate)")
FEATURE_KERNEL_PARAM = dataclasses.replace(KERNEL_PARAM, help="the kernel a feature map's Φ[i]·Φ[j] estimates")
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
            out[spec.name] = check_param(options[spec.name], spec)
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



def run_check(target: Any, params: Mapping[str, Any] | None, *, plugins: Sequence[str] = (),
              param_texts: Mapping[str, str] | None = None, **options: Any) -> Any:
    """The lab's report on ``target``: a built-in name runs in this process; plugin code (a spec, an unregistered
    name, or ``plugins`` to load first) runs in a plugin process (``rfviz.plugin_process``); an estimator class runs
    here.

    Parameters
    ----------
    target : str or type
        A registered estimator's name, a plugin spec or an estimator class.
    params : mapping, optional
        The estimator's parameters.
    plugins : sequence of str
        Plugin specs to load first (the CLI's repeated plugin option).
    param_texts : mapping, optional
        The CLI's ``key=value`` texts of parameters, read by the target's own Params once it is loaded (in the
        plugin process for plugin code).
    **options
        ``CHECK_OPTIONS`` (``check_settings``).

    Returns
    -------
    rfviz.lab.LabReport

    Examples
    --------
    >>> run_check("trig", {"m": 4}, r=[0.5], theta=[0.5, 1.5, 2.5], d=4, trials=4000, compare=[],
    ...           pairs=["canonical"], check_feature_maps=False).verdict
    'unbiased'
    """
    from ..lab import check as lab_check
    from ..plugin_process import check_isolated, check_target

    params = check_target_arguments(target, params)
    settings = check_settings(**options)
    compare = settings.pop("compare")
    texts = dict(param_texts or {})
    if isinstance(target, str):
        if plugins or target not in REGISTRY:  # plugin code runs in a plugin process
            return check_isolated(target, tuple(plugins), params, compare, **settings,
                                  **({"param_texts": texts} if texts else {}))
        return check_target(target, (), params, compare, param_texts=texts, **settings)
    if texts:
        from ..textio import parse_values

        params = {**params, **parse_values(target.spec, texts)}
    unknown = [c for c in compare if c not in REGISTRY]
    if unknown:
        raise ParameterError(f"compare must name built-in estimators ({', '.join(sorted(REGISTRY))}), got "
                             f"{unknown[0][:80]!r}")
    return lab_check(target, params, compare=compare, **settings)


def run_feature_check(features: Any, kernel: Any, *, mse: Any = None, biased: bool = False,
                      **options: Any) -> Any:
    """The lab's report on a plain feature map ``features(X, rng) -> Φ``, always in a plugin process
    (``rfviz.plugin_process.check_feature_map_isolated``): a function given from Python crosses by its file and
    name (``rfviz.lab.feature_map.callable_spec``), never pickled.

    Parameters
    ----------
    features : callable or str
        The map, or its spec ``FILE.py:FUNCTION`` / ``module:FUNCTION``.
    kernel : str
        ``softmax`` or ``gaussian``.
    mse : callable or str, optional
        A closed-form ``mse(x, y) -> float`` (or its spec).
    biased : bool
        The map is biased by design (declared).
    **options
        ``CHECK_OPTIONS`` (``check_settings``).

    Returns
    -------
    rfviz.lab.LabReport

    Examples
    --------
    >>> run_feature_check("my_map.py:phi", "softmax").verdict  # doctest: +SKIP
    'unbiased'
    """
    from ..lab.feature_map import callable_spec
    from ..plugin_process import check_feature_map_isolated

    kernel = check_param(kernel, FEATURE_KERNEL_PARAM)
    if not isinstance(biased, bool):
        raise ParameterError(f"biased must be True or False, got {str(biased)[:40]!r}")
    spec = callable_spec(features, "features")
    mse_spec = None if mse is None else callable_spec(mse, "mse")
    settings = check_settings(**options)
    compare = settings.pop("compare")
    unknown = [c for c in compare if c not in REGISTRY]
    if unknown:
        raise ParameterError(f"compare must name built-in estimators ({', '.join(sorted(REGISTRY))}), got "
                             f"{unknown[0][:80]!r}")
    return check_feature_map_isolated(spec, kernel, compare, mse=mse_spec, biased=biased, **settings)


# ------------------------------------------------------------------------------------------------ the API
@dataclasses.dataclass(frozen=True)
class CheckResult(Result):
    """The estimator lab's verdict on an estimator (``rfviz check``).

    Parameters
    ----------
    estimator : str
        The checked estimator's name.
    verdict : str
        ``unbiased``, ``bias detected``, ``inconclusive``, ...
    exit_code : int
        0 unbiased, 1 bias detected, 3 inconclusive, 4 biased as declared.
    report : rfviz.lab.LabReport
        The lab's full report (``to_text()`` prints it); ``to_dict()`` is its JSON.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.check("trig", {"m": 4}, r=[0.5], theta=[0.5, 1.5, 2.5], d=4, trials=4000, compare=[],
    ...                   pairs=["canonical"], check_feature_maps=False)
    >>> res.exit_code, res.to_dict()["verdict"] == res.verdict
    (0, True)
    """

    estimator: str
    verdict: str
    exit_code: int
    report: Any = dataclasses.field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The result as ``rfviz check --json`` prints it: the lab report's JSON (a fresh object).

        Returns
        -------
        dict
            The report's JSON: plain lists, numbers, strings and None.
        """
        return jsonable(self.report.to_json())


@api_function({"target": Instance("target", (str, type), "an estimator name, a plugin spec (path/to/file.py:Class) "
                                                          "or an estimator class"),
               "params": Instance("params", (Mapping,), "a mapping of the estimator's parameters"),
               "kernel": FEATURE_KERNEL_PARAM})
def check(target: str | type | None = None, params: Mapping[str, Any] | None = None, *, plugins: Sequence[str] = (),
          param_texts: Mapping[str, str] | None = None, features: Any = None, kernel: str | None = None,
          mse: Any = None, biased: bool = False, **options: Any) -> CheckResult:
    """Check an estimator for bias and compare it with the built-ins (``rfviz check``, the estimator lab).

    Parameters
    ----------
    target : str or type
        A registered estimator's name, ``path/to/file.py:ClassName``, or an estimator class.
    params : mapping, optional
        The estimator's parameters.
    plugins : sequence of str
        Plugin specs to load first (then the check runs in a plugin process).
    param_texts : mapping, optional
        Parameters as ``key=value`` texts, read by the target's own Params once it is loaded (how the CLI passes
        them; Python callers give ``params``).
    features : callable or str, optional
        Instead of ``target``: a plain feature map ``features(X, rng) -> Φ`` (``rfviz check --features``). It runs
        only in a plugin process, which imports it by name: pass a function defined at the top level of a ``.py``
        file (the process reads that file as saved; not a lambda, a nested function or one typed at a prompt),
        or its spec ``FILE.py:FUNCTION``.
    kernel : str, optional
        With ``features``: ``softmax`` or ``gaussian``, the kernel Φ[i]·Φ[j] estimates (required).
    mse : callable or str, optional
        With ``features``: its closed-form ``mse(x, y) -> float`` (same rule as ``features``).
    biased : bool
        With ``features``: the map is biased by design (the lab then expects a bias: exit 4).
    **options
        ``r``, ``theta`` (radians), ``d``, ``trials``, ``seed``, ``alpha``, ``compare``, ``device``,
        ``check_feature_maps``, ``pairs``: as in :func:`rfviz.lab.check_estimator` (same defaults as the command).

    Returns
    -------
    CheckResult
        ``verdict``, ``exit_code`` (0 unbiased, 1 bias detected, 3 inconclusive) and the full ``report``.

    Examples
    --------
    >>> import rfviz
    >>> res = rfviz.check("trig", {"m": 4}, r=[0.5], theta=[0.5, 1.5, 2.5], d=4, trials=4000, compare=[],
    ...                   pairs=["canonical"], check_feature_maps=False)
    >>> res.verdict, res.exit_code
    ('unbiased', 0)
    """
    if isinstance(plugins, str) or not all(isinstance(p, str) for p in plugins):
        raise ParameterError(f"plugins must be a list of plugin specs, got {str(plugins)[:40]!r}")
    if features is not None:
        if target is not None or params or plugins or param_texts:
            raise ParameterError("features checks a feature map: give it without target, params or plugins")
        if kernel is None:
            raise ParameterError(f"kernel must be given with features: {FEATURE_KERNEL_PARAM.range_text()}")
        report = run_feature_check(features, kernel, mse=mse, biased=biased, **options)
        return CheckResult(estimator=report.estimator, verdict=report.verdict, exit_code=report.exit_code,
                           report=report)
    if target is None:
        raise ParameterError("check needs a target (an estimator name, a plugin spec or a class) or features")
    if mse is not None or biased or kernel is not None:
        raise ParameterError("kernel, mse and biased go with features (a feature map); an estimator's kernel is "
                             "one of its params")
    report = run_check(target, params, plugins=plugins, param_texts=param_texts, **options)
    name = report.estimator if isinstance(target, str) else getattr(target, "name", str(target))
    return CheckResult(estimator=name, verdict=report.verdict, exit_code=report.exit_code, report=report)
