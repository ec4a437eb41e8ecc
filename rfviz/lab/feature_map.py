"""A plain feature map ``features(X, rng) -> Φ`` as an estimator the lab can check (``rfviz check --features``).

The contract (docs/howto/own-estimator.md): ``X`` is an (n, d) numpy array, ``rng`` a ``numpy.random.Generator``;
the map returns Φ, an (n, M) array (numpy, or a torch tensor); one call is one independent draw of the random
features, and ``Φ[i]·Φ[j]`` (no conjugation) is the estimate of K(X[i], X[j]), K the softmax kernel e^{x·y} or the
Gaussian kernel e^{−|x−y|²/2}. Optional: a closed-form MSE ``mse(x, y) -> float`` of one pair, and ``biased=True``
to declare a bias by design (the lab then expects one: exit 4).

``FeatureMapEstimator`` wraps such a map in the estimator protocol: ``sample`` draws one 62-bit seed per trial
from the engine's generator (so the lab's seeds, blocks and reproducibility check apply unchanged), ``estimate``
calls the map once per trial on the pairs' points stacked ([x; y]) with ``numpy.random.default_rng(seed)`` and
multiplies the rows. It is not isotropic (the engine gives it full R^d pairs), so the lab's rotation test runs.

The user's function is imported and called only in the plugin process (``rfviz.plugin_process``,
``check_feature_map_isolated``); what comes back is the lab's report as data.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from ..estimators import REGISTRY, Estimator  # the package: REGISTRY needs the catalog loaded
from ..geometry import PairStats
from ..params import KERNEL_PARAM, Param, ParameterError
from ..plugins import PluginError, _import_file, _import_module, _one_line, split_spec
from .options import LabOptions
from .pipeline import run_lab
from .report import LabReport

FEATURE_LENGTH_PARAM = Param("features", 1, "int", "feature length M of the map (columns of Φ)", low=1)
SEED_HIGH = 2**62
"""Per-trial seeds are drawn uniformly in [0, 2^62) from the engine's generator."""
PROBE_SEED = 0
"""Seed of the probe call that measures the feature length M (the lab's own draws use its seed's children)."""

FeatureMap = Callable[[np.ndarray, np.random.Generator], Any]
MseFunction = Callable[[np.ndarray, np.ndarray], float]


def as_matrix(phi: Any, n: int, owner: str) -> np.ndarray:
    """Φ as an (n, M) numpy array (a torch tensor is detached and copied to the CPU); PluginError otherwise.

    Parameters
    ----------
    phi : array-like or torch.Tensor
        What the map returned.
    n : int
        The rows it was given.
    owner : str
        How error messages name the map.

    Returns
    -------
    numpy.ndarray
        Float (or complex) array of shape (n, M).

    Examples
    --------
    >>> as_matrix([[1, 2]], 1, "phi").shape
    (1, 2)
    """
    if isinstance(phi, torch.Tensor):
        phi = phi.detach().cpu().numpy()
    try:
        arr = np.asarray(phi)
    except Exception as exc:  # a user's object that numpy cannot read
        raise PluginError(f"{owner} returned something that is not an array ({_one_line(exc)})") from None
    if arr.dtype.kind not in "biufc":
        raise PluginError(f"{owner} must return a numeric (n, M) array, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] != n:
        raise PluginError(f"{owner} must return an (n, M) array for n = {n} input rows, got shape {arr.shape}")
    return arr.astype(complex if arr.dtype.kind == "c" else float, copy=False)


class FeatureMapEstimator(Estimator):
    """The estimator protocol around a plain feature map (see the module docstring); made per map by
    ``feature_map_estimator``, which binds the map and its optional closed form.

    Parameters
    ----------
    **params
        ``features`` (M, the map's feature length) and ``kernel`` (softmax or gaussian).

    Examples
    --------
    >>> def phi(X, rng):
    ...     W = rng.standard_normal((X.shape[1], 4))
    ...     return np.exp(X @ W - (X * X).sum(1, keepdims=True) / 2) / 2
    >>> est = feature_map_estimator(phi, "softmax", d=3)
    >>> est.params["features"], est.kernel
    (4, 'softmax')
    """

    name: ClassVar[str] = "feature_map"
    title: ClassVar[str] = "a feature map"
    family: ClassVar[str] = "softmax"
    known: ClassVar[str] = "monte_carlo"
    isotropic: ClassVar[bool] = False
    has_closed_form: ClassVar[bool] = False
    unbiased: ClassVar[bool] = True
    spec: ClassVar[tuple[Param, ...]] = (FEATURE_LENGTH_PARAM, KERNEL_PARAM)
    _map: FeatureMap
    _mse: MseFunction | None = None

    @property
    def feature_length(self) -> int:
        """M, the columns of Φ: the built-ins are compared at this feature length."""
        return int(self.params["features"])

    def work_per_pair(self, d: int) -> int:
        """Φ of both points of a pair and their product: about 3M elements per (trial, pair).

        Parameters
        ----------
        d : int
            Input dimension (unused: the map's cost is its own).

        Returns
        -------
        int
        """
        return 3 * self.feature_length + 16

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> dict[str, torch.Tensor]:
        """One seed per trial, from ``generator`` (the map draws its features from ``default_rng(seed)``).

        Parameters
        ----------
        trials : int
            Independent draws.
        d : int
            Input dimension.
        generator : torch.Generator
            The engine's generator of this block.
        device : torch.device
            Unused (the seeds stay on the CPU).
        dtype : torch.dtype
            Unused.
        dim : int, optional
            Unused (the map gets full R^d inputs).

        Returns
        -------
        dict
            ``{"seed": int64 tensor of shape (trials,)}``.
        """
        return {"seed": torch.randint(0, SEED_HIGH, (trials,), generator=generator, dtype=torch.int64)}

    def _phi(self, u: np.ndarray, seed: int) -> np.ndarray:
        owner = f"feature map {self.name!r}"
        try:
            phi = self._map(u, np.random.default_rng(seed))
        except (ParameterError, MemoryError):
            raise
        except Exception as exc:
            raise PluginError(f"{owner} raised {_one_line(exc)}") from exc
        arr = as_matrix(phi, u.shape[0], owner)
        if arr.shape[1] != self.feature_length:
            raise PluginError(f"{owner} returned {arr.shape[1]} features in one call and {self.feature_length} in "
                              "another: M must not depend on the input")
        return arr

    def estimate(self, samples: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                 log_scale: torch.Tensor | None = None) -> torch.Tensor:
        """Φ[x_p]·Φ[y_p]·e^{−log_scale_p} per trial (one call of the map per trial, on [x; y]).

        Parameters
        ----------
        samples : dict
            What ``sample`` returned.
        x, y : torch.Tensor
            The pairs, shape (P, d) each.
        log_scale : torch.Tensor, optional
            Shape (P,): the estimates are divided by its exponential.

        Returns
        -------
        torch.Tensor
            Shape (trials, P).
        """
        xy = np.concatenate([x.detach().cpu().numpy(), y.detach().cpu().numpy()])
        n = x.shape[0]
        seeds = samples["seed"].cpu().numpy()
        rows = []
        for seed in seeds:
            phi = self._phi(xy, int(seed))
            rows.append(np.sum(phi[:n] * phi[n:], axis=1))
        out = np.stack(rows) if rows else np.empty((0, n))
        scale = np.ones(n) if log_scale is None else np.exp(-log_scale.detach().cpu().numpy())
        return torch.as_tensor(out * scale, device=x.device)

    def features(self, samples: dict[str, torch.Tensor], u: torch.Tensor, side: str = "query") -> torch.Tensor:
        """Φ(u) per trial, shape (trials, P, M): the same seed gives the same draw for queries and keys.

        Parameters
        ----------
        samples : dict
            What ``sample`` returned.
        u : torch.Tensor
            The points, shape (P, d).
        side : str
            ``query`` or ``key`` (the same map for both).

        Returns
        -------
        torch.Tensor
        """
        un = u.detach().cpu().numpy()
        return torch.as_tensor(np.stack([self._phi(un, int(s)) for s in samples["seed"].cpu().numpy()]))

    def log_abs_kernel(self, s: PairStats) -> tuple[np.ndarray, np.ndarray]:
        """log K: x·y (softmax) or −|x − y|²/2 (Gaussian); K > 0.

        Parameters
        ----------
        s : PairStats
            The pairs.

        Returns
        -------
        tuple of numpy.ndarray
            (log K, sign K = 1).
        """
        logk = np.asarray(s.xy if self.kernel == "softmax" else -0.5 * s.delta2, float)
        return logk, np.ones_like(logk)

    def closed_form_available(self) -> bool:
        """True when a closed-form ``mse`` was given.

        Returns
        -------
        bool
        """
        return self._mse is not None

    def _log_mse(self, s: PairStats) -> np.ndarray:
        """log of the user's ``mse(x, y)``, called once per pair (full R^d coordinates)."""
        if self._mse is None:
            raise NotImplementedError("no closed-form mse given")
        x, y = np.broadcast_arrays(s.x, s.y)
        flat_x, flat_y = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
        out = np.empty(flat_x.shape[0])
        for i in range(out.size):
            out[i] = self._mse_value(flat_x[i], flat_y[i])
        with np.errstate(divide="ignore"):
            return np.log(out).reshape(x.shape[:-1])

    def _mse_value(self, x: np.ndarray, y: np.ndarray) -> float:
        owner = f"closed-form mse of {self.name!r}"
        try:
            value = float(self._mse(x.copy(), y.copy()))  # type: ignore[misc]
        except Exception as exc:
            raise PluginError(f"{owner} raised {_one_line(exc)}") from exc
        if not (value >= 0.0) or math.isnan(value):
            raise PluginError(f"{owner} must return a number ≥ 0 (an MSE), got {value!r}")
        return value


def feature_map_estimator(features: FeatureMap, kernel: str, *, d: int, mse: MseFunction | None = None,
                          biased: bool = False, name: str | None = None) -> FeatureMapEstimator:
    """The estimator of one feature map: its feature length M measured by a probe call in dimension ``d``.

    Parameters
    ----------
    features : callable
        ``features(X, rng) -> Φ`` (see the module docstring).
    kernel : str
        ``softmax`` or ``gaussian``: the kernel Φ[i]·Φ[j] estimates.
    d : int
        The dimension of the inputs the lab will pass.
    mse : callable, optional
        Closed-form MSE ``mse(x, y) -> float`` of one pair.
    biased : bool
        The map is biased by design (declared: the lab then reports "biased, as declared").
    name : str, optional
        The name in the report (default: the function's ``__name__``).

    Returns
    -------
    FeatureMapEstimator

    Raises
    ------
    PluginError
        When ``features`` is not callable, raises, or returns no (n, M) array.

    Examples
    --------
    >>> est = feature_map_estimator(lambda X, rng: np.ones((X.shape[0], 3)), "gaussian", d=2, name="ones")
    >>> est.feature_length, est.name
    (3, 'ones')
    """
    if not callable(features):
        raise PluginError(f"features must be a callable features(X, rng) -> Φ, got {type(features).__name__}")
    if mse is not None and not callable(mse):
        raise PluginError(f"mse must be a callable mse(x, y) -> float, got {type(mse).__name__}")
    label = str(name or getattr(features, "__name__", "feature_map"))
    if label in REGISTRY:  # the lab drops a comparator of the candidate's own name
        label = f"{label}_map"
    cls = type("FeatureMap", (FeatureMapEstimator,), {
        "name": label, "title": f"feature map {label}" + (" (declared biased)" if biased else ""),
        "unbiased": not biased, "description": "Biased by design (declared)." if biased else "A plain feature map.",
        "has_closed_form": mse is not None})
    x0 = np.eye(2, d)
    owner = f"feature map {label!r}"
    try:
        phi = features(x0, np.random.default_rng(PROBE_SEED))
    except Exception as exc:
        raise PluginError(f"{owner} raised {_one_line(exc)} on a probe X of shape (2, {d})") from exc
    m = as_matrix(phi, 2, owner).shape[1]
    est = cls(features=m, kernel=kernel)
    est._map, est._mse = features, mse
    return est


def load_callable(spec: str, what: str = "features") -> Callable[..., Any]:
    """The function a spec names: ``path/to/file.py:FUNCTION`` or ``package.module:FUNCTION`` (imported here: call
    it only in the plugin process).

    Parameters
    ----------
    spec : str
        File or module, a colon, the function's name.
    what : str
        The option's name in error messages.

    Returns
    -------
    callable

    Examples
    --------
    >>> load_callable("math:sqrt")(4.0)
    2.0
    """
    target, fn_name = split_spec(str(spec))
    if fn_name is None:
        raise PluginError(f"{what} must be FILE.py:FUNCTION or module:FUNCTION, got {str(spec)[:80]!r}")
    looks_like_path = target.endswith(".py") or "/" in target
    module = _import_file(pathlib.Path(target)) if looks_like_path else _import_module(target)
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise PluginError(f"{what} {spec!r}: {target!r} has no function {fn_name!r}")
    return fn


def check_feature_map(features: FeatureMap, kernel: str, *, mse: MseFunction | None = None, biased: bool = False,
                      name: str | None = None, compare: Sequence[str] = (), **lab: Any) -> LabReport:
    """Run the lab on a feature map (in this process: the plugin process calls it; see the module docstring).

    Parameters
    ----------
    features, kernel, mse, biased, name : as in ``feature_map_estimator``.
    compare : sequence of str
        Built-ins to compare the MSE with, each at the map's feature length M.
    **lab
        ``LabOptions`` settings (r, theta, d, trials, seed, alpha, device, check_feature_maps, pairs, progress,
        rotations).

    Returns
    -------
    LabReport

    Examples
    --------
    >>> report = check_feature_map(phi, "softmax", trials=2000)  # doctest: +SKIP
    >>> report.verdict  # doctest: +SKIP
    'unbiased'
    """
    opts = LabOptions(compare=tuple(compare), **lab)
    est = feature_map_estimator(features, kernel, d=opts.d, mse=mse, biased=biased, name=name)
    return run_lab(est, opts)


def check_feature_map_spec(features: str, kernel: str, *, mse: str | None = None, biased: bool = False,
                           **lab: Any) -> LabReport:
    """``check_feature_map`` on functions named by specs (what the plugin process runs for ``rfviz check
    --features``): the function's name is the report's name.

    Parameters
    ----------
    features : str
        ``FILE.py:FUNCTION`` or ``module:FUNCTION``.
    kernel : str
        softmax or gaussian.
    mse : str, optional
        The closed form's spec.
    biased : bool
        The map declares a bias.
    **lab
        As in ``check_feature_map``.

    Returns
    -------
    LabReport
    """
    fn = load_callable(features, "--features")
    mse_fn = None if mse is None else load_callable(mse, "--mse")
    return check_feature_map(fn, kernel, mse=mse_fn, biased=biased, name=split_spec(features)[1], **lab)


def callable_spec(fn: Any, what: str = "features") -> str:
    """The spec (``path/to/file.py:NAME``) by which the plugin process imports a function handed over from Python.

    A function crosses to the plugin process by name, never pickled: it must be defined at the top level of a
    ``.py`` file (not a lambda, not nested in another function, not typed at an interactive prompt), and the
    plugin process imports that file afresh — so it sees the file as saved, not the caller's live objects. A string
    is taken as a spec already.

    Parameters
    ----------
    fn : callable or str
        The function, or a spec.
    what : str
        The argument's name in error messages.

    Returns
    -------
    str

    Raises
    ------
    ParameterError
        When ``fn`` cannot be named that way (the message says why).

    Examples
    --------
    >>> callable_spec(callable_spec).endswith("rfviz/lab/feature_map.py:callable_spec")
    True
    """
    import inspect

    if isinstance(fn, str):
        return fn
    if not callable(fn):
        raise ParameterError(f"{what} must be a function features(X, rng) -> Φ or a spec FILE.py:FUNCTION, got "
                             f"{type(fn).__name__}")
    name = getattr(fn, "__name__", "")
    if not inspect.isfunction(fn) or name == "<lambda>" or getattr(fn, "__qualname__", name) != name:
        raise ParameterError(f"{what} must be a function defined at the top level of a .py file (it runs in a "
                             f"separate process, which imports it by name), got {getattr(fn, '__qualname__', fn)!r}")
    try:
        source = inspect.getsourcefile(fn)
    except TypeError:
        source = None
    if not source or not source.endswith(".py") or not pathlib.Path(source).is_file():
        raise ParameterError(f"{what}: {name!r} is not defined in a .py file (defined at an interactive prompt or in "
                             "a notebook?); save it in a file and pass the function from there, or FILE.py:FUNCTION")
    return f"{pathlib.Path(source).resolve()}:{name}"
