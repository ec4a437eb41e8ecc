"""The estimator protocol and its registry (modelled on scipy.stats' distributions).

An estimator is one small class: it declares its parameters once (``spec``), samples its random variables
in torch (``sample``), computes K̂(x, y) from them (``estimate``) and its feature maps (``features``), and,
where a closed form exists, its MSE as a log (``log_mse``) in numpy. A new estimator is one new class
decorated with ``@register``; the app, the CLI, the engine and the tests iterate over ``REGISTRY``.

Shapes: torch inputs x, y are (P, dim) point pairs; samples have a leading ``trials`` axis; ``estimate``
returns (trials, P). numpy inputs to ``log_mse`` are (..., dim) and broadcast.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from ..geometry import PairStats, canonical_pair, check_d, embed_pair, gaussian_log_correction
from ..numerics import exp_or_inf, log_diff_exp, to_log10
from ..params import KERNEL_PARAM, Param, ParameterError, validate_params
from ..registries import CLOSED_FORM, COUPLINGS, IID, MONTE_CARLO

if TYPE_CHECKING:
    from ..sampling import BlockStreams

Samples = dict[str, torch.Tensor]


class Estimator:
    """Base class of every random-feature kernel estimator. Subclasses set the class attributes and hooks."""

    name: ClassVar[str]
    title: ClassVar[str]
    short_title: ClassVar[str] = ""
    """A label of at most 20 characters for chips and legends (``label()``; the ``title`` when empty)."""
    family: ClassVar[str] = "softmax"
    reference: ClassVar[str] = ""
    known: ClassVar[str] = ""
    """What is known about the MSE with iid sampling, one of ``rfviz.registries.KNOWN_LABELS`` (closed_form, bound,
    rate, monte_carlo); every registered estimator sets it."""
    citation: ClassVar[str] = ""
    """Paper key and equation, ``[KEY] eq. N`` (``rfviz.references.check_citation``)."""
    description: ClassVar[str] = ""
    spec: ClassVar[tuple[Param, ...]] = ()
    isotropic: ClassVar[bool] = True
    """True when K̂'s law depends on x, y only through ``|x|²``, ``|y|²``, x·y (so the engine may sample in
    span(x, y))."""
    has_closed_form: ClassVar[bool] = True
    min_dim: ClassVar[int] = 1

    def __init__(self, **params: Any) -> None:
        self.params: dict[str, Any] = validate_params(self.spec, params, self.name)
        self.validate()

    # ----------------------------------------------------------------- hooks
    def validate(self) -> None:
        """Cross-parameter checks (raise ParameterError naming the parameter and its valid range)."""

    def closed_form_available(self) -> bool:
        """Whether ``log_mse`` exists for these parameters (some couplings have none).

        Returns
        -------
        bool
            True when the closed-form MSE is available.
        """
        return self.has_closed_form

    def check_dimension(self, d: int) -> None:
        """Raise ParameterError if the estimator is undefined in dimension d."""
        check_d(d, self.min_dim)

    def work_per_pair(self, d: int) -> int:
        """Elements of live intermediate tensors per (trial, pair) inside ``estimate`` in dimension d: sizes the
        Monte-Carlo engine's work units. The default allows four live copies of the feature count (projections,
        shifted exponents, their exponentials, one temporary) plus a constant; the feature count is 2m (trig and
        antithetic features), times 1 + n for the hybrids' n extra draws."""
        features = int(self.params.get("m", 1)) * (1 + int(self.params.get("n", 0))) * 2
        return 4 * features + 16

    def sample(self, trials: int, d: int, *, generator: torch.Generator, device: torch.device,
               dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        """Draw the random variables of ``trials`` independent estimators.

        Parameters
        ----------
        trials : int
            Independent estimators to draw (the leading axis of every returned tensor).
        d : int
            The true dimension of the input space.
        generator : torch.Generator
            The only source of random numbers (results must be reproducible from it).
        device : torch.device
            Where the tensors live.
        dtype : torch.dtype
            Floating-point type of the samples.
        dim : int, optional
            The inputs live in the first ``dim`` coordinates (default d; isotropic estimators get 2: span(x, y)).

        Returns
        -------
        dict of str to torch.Tensor
            The samples, each with a leading ``trials`` axis, as ``estimate`` and ``features`` read them.
        """
        raise NotImplementedError

    block_streams: ClassVar[bool] = False
    """Whether this class's own ``sample`` draws every random number through rfviz.sampling's samplers, so that it
    accepts a ``rfviz.sampling.BlockStreams`` as ``generator`` (``sample_blocks`` then draws a group of blocks in
    one call). Honoured only on the class that defines ``sample``: a subclass overriding ``sample`` opts in again."""

    def sample_blocks(self, streams: BlockStreams, d: int, *, device: torch.device,
                      dtype: torch.dtype = torch.float64, dim: int | None = None) -> Samples:
        """The samples of several consecutive, independently seeded blocks of trials (the engine's unit of work).

        Parameters
        ----------
        streams : the blocks' sizes and generators (``rfviz.sampling.BlockStreams``).
        d, device, dtype, dim : as in ``sample``.

        Returns
        -------
        Samples
            Block b's trials are exactly ``sample(streams.sizes[b], d, generator=streams.generators[b], ...)``; in one
            call when the class declares ``block_streams``, else block by block and concatenated.

        Examples
        --------
        >>> import rfviz
        >>> from rfviz.sampling import BlockStreams
        >>> gens = tuple(torch.Generator().manual_seed(s) for s in (1, 2))
        >>> s = rfviz.create("trig", m=4).sample_blocks(BlockStreams((3, 2), gens), 8, device=torch.device("cpu"),
        ...                                               dim=2)
        >>> s["w"].shape
        torch.Size([5, 4, 2])
        """
        owner = next(c for c in type(self).__mro__ if "sample" in c.__dict__)
        if owner.__dict__.get("block_streams", False):
            return self.sample(streams.trials, d, generator=streams, device=device, dtype=dtype, dim=dim)
        return concat_samples([(self.sample(n, d, generator=g, device=device, dtype=dtype, dim=dim), n)
                               for n, g in zip(streams.sizes, streams.generators, strict=True)])

    def estimate(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                 log_scale: torch.Tensor | None = None) -> torch.Tensor:
        """K̂(x, y)·e^{-log_scale} for every trial and pair.

        Parameters
        ----------
        samples : dict of str to torch.Tensor
            What ``sample`` returned.
        x, y : torch.Tensor
            The pairs, shape (P, dim) each.
        log_scale : torch.Tensor, optional
            Shape (P,), subtracted inside the exponent so that estimates of huge kernels stay finite; the engine
            passes ``log|K|``, making the result ``K̂/|K|``. None: 0.

        Returns
        -------
        torch.Tensor
            The scaled estimates, shape (trials, P), finite.
        """
        raise NotImplementedError

    def features(self, samples: Samples, u: torch.Tensor, side: str = "query") -> torch.Tensor:
        """Feature map φ(u) such that Σ φ_query(x)·φ_key(y) = K̂(x, y).

        Parameters
        ----------
        samples : dict of str to torch.Tensor
            What ``sample`` returned.
        u : torch.Tensor
            The points, shape (P, dim).
        side : {"query", "key"}
            Which side's features (asymmetric estimators differ).

        Returns
        -------
        torch.Tensor
            Shape (trials, P, F); complex features multiply without conjugation.
        """
        raise NotImplementedError

    def _log_mse(self, s: PairStats) -> np.ndarray:
        """Natural log of the closed-form MSE for the pairs in ``s``."""
        raise NotImplementedError(f"{self.name} has no closed-form MSE")

    def log_abs_kernel(self, s: PairStats) -> tuple[np.ndarray, np.ndarray]:
        """(log|K(x, y)|, sign K(x, y)) of the target kernel."""
        raise NotImplementedError

    def fourth_moment_finite(self, s: PairStats) -> np.ndarray | bool | None:
        """Whether E|K̂|⁴ < ∞ at each pair, where the paper gives it (optional hook).

        When False the sampled MSE's standard error is meaningless and the engine marks the point unreliable.

        Parameters
        ----------
        s : PairStats
            The input pairs.

        Returns
        -------
        numpy.ndarray or bool or None
            Per pair (or for all), whether the fourth moment is finite; None: unknown.
        """
        return None

    def fourth_moment_available(self) -> bool:
        """Whether ``log_fourth_central_moment`` exists for these parameters (optional hook; default: no)."""
        return False

    def _log_fourth_central_moment(self, s: PairStats) -> np.ndarray:
        """Natural log of E|K̂ − K|⁴ for the pairs in ``s`` (1-D arrays), +inf where it is infinite."""
        raise NotImplementedError(f"{self.name} has no closed-form fourth moment")

    def log_scale(self, s: PairStats) -> np.ndarray:
        """A natural magnitude of K̂ used to keep Monte-Carlo arithmetic finite (default log|K|)."""
        return self.log_abs_kernel(s)[0]

    # --------------------------------------------------------------- public
    @property
    def kernel(self) -> str:
        return self.params.get("kernel", self.family)

    def log_mse(self, x: np.ndarray, y: np.ndarray, d: int | None = None) -> np.ndarray:
        """Natural log of the closed-form MSE at pairs (x, y).

        Parameters
        ----------
        x, y : numpy.ndarray
            The pairs, shape (..., dim) each.
        d : int, optional
            The true dimension when x, y are given in reduced coordinates (isotropic estimators only).

        Returns
        -------
        numpy.ndarray
            log MSE, shape (...); -inf where the estimator is exact.

        Raises
        ------
        NotImplementedError
            Without a closed form for these parameters (``closed_form_available()`` is False).
        ParameterError
            When the estimator is undefined in dimension d.

        Examples
        --------
        >>> import numpy as np, rfviz
        >>> est = rfviz.create("trig", m=1)
        >>> bool(np.isneginf(est.log_mse(np.array([1.0, 0.0]), np.array([1.0, 0.0]))))
        True
        """
        if not self.closed_form_available():
            raise NotImplementedError(f"{self.name} has no closed-form MSE for {self.params}")
        s = PairStats.of(x, y, d)
        if not self.isotropic and s.d != s.x.shape[-1]:
            raise ParameterError(f"{self.name} depends on coordinates: pass x, y in R^d (d = {s.d})")
        self.check_dimension(s.d)
        out = np.asarray(self._log_mse(s), dtype=float)
        if np.any(np.isnan(out)):
            raise FloatingPointError(f"{self.name}: NaN in the closed-form MSE for params {self.params}")
        return out

    def log_fourth_central_moment(self, x: np.ndarray, y: np.ndarray, d: int | None = None) -> np.ndarray:
        """Natural log of the closed-form E|K̂ − K|⁴ at pairs (x, y), shape (..., dim) each: -inf where exact,
        +inf where infinite (then the squared error has infinite variance and no number of trials makes a sampled
        MSE reliable). ``d`` as in ``log_mse``.

        Parameters
        ----------
        x, y : np.ndarray
            Input pairs, shape (..., dim).
        d : int, optional
            True dimension when x, y are reduced coordinates (isotropic estimators).

        Returns
        -------
        np.ndarray
            Shape (...,).

        Examples
        --------
        >>> from rfviz.estimators import create
        >>> float(create("positive", m=1).log_fourth_central_moment([[0.0]], [[0.0]])[0])
        -inf
        """
        if not self.fourth_moment_available():
            raise NotImplementedError(f"{self.name} has no closed-form fourth moment for {self.params}")
        s = PairStats.of(x, y, d)
        if not self.isotropic and s.d != s.x.shape[-1]:
            raise ParameterError(f"{self.name} depends on coordinates: pass x, y in R^d (d = {s.d})")
        self.check_dimension(s.d)
        shape = s.xx.shape
        dim = s.x.shape[-1]
        flat = PairStats.of(np.broadcast_to(s.x, (*shape, dim)).reshape(-1, dim),
                            np.broadcast_to(s.y, (*shape, dim)).reshape(-1, dim), s.d)
        out = np.asarray(self._log_fourth_central_moment(flat), dtype=float).reshape(shape)
        if np.any(np.isnan(out)):
            raise FloatingPointError(f"{self.name}: NaN in the closed-form fourth moment for params {self.params}")
        return out

    def log_squared_error_variance(self, x: np.ndarray, y: np.ndarray, d: int | None = None) -> np.ndarray:
        """log Var|K̂ − K|² = log(E|K̂ − K|⁴ − MSE²) at pairs (x, y) (see ``log_fourth_central_moment``)."""
        log_m4 = self.log_fourth_central_moment(x, y, d)
        log_mse = self.log_mse(x, y, d)
        with np.errstate(invalid="ignore"):
            out = log_diff_exp(log_m4, np.minimum(2 * log_mse, log_m4))
        return np.where(np.isposinf(log_m4), np.inf, np.where(np.isneginf(log_m4), -np.inf, out))

    def mse(self, x: np.ndarray, y: np.ndarray, d: int | None = None) -> np.ndarray:
        """Closed-form MSE at pairs (x, y).

        Parameters
        ----------
        x, y : numpy.ndarray
            The pairs, shape (..., dim) each.
        d : int, optional
            The true dimension when x, y are given in reduced coordinates.

        Returns
        -------
        numpy.ndarray
            The MSE, shape (...); inf where it overflows float64 (use ``log_mse`` there).
        """
        return exp_or_inf(self.log_mse(x, y, d))

    def log10_mse_grid(self, r: np.ndarray | float, theta: np.ndarray | float, d: int,
                       embedding: str = "canonical") -> np.ndarray:
        """log10 MSE on a grid of (r, θ) (broadcast), inputs in the canonical embedding of R^d."""
        x, y = self.grid_pairs(r, theta, d, embedding)
        return to_log10(self.log_mse(x, y, d=d))

    def grid_pairs(self, r: np.ndarray | float, theta: np.ndarray | float, d: int,
                   embedding: str = "canonical") -> tuple[np.ndarray, np.ndarray]:
        """Pairs at (r, θ): reduced 2-D coordinates for isotropic estimators, full R^d ones otherwise."""
        check_d(d)
        self.check_dimension(d)
        if embedding != "canonical" or not self.isotropic:
            return embed_pair(r, theta, d, embedding)
        return canonical_pair(r, theta, min(d, 2))

    def kernel_log_value(self, x: np.ndarray, y: np.ndarray, d: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(log|K(x, y)|, sign) of the target kernel."""
        return self.log_abs_kernel(PairStats.of(x, y, d))

    def known_for_params(self) -> str:
        """What is known about this estimator's MSE with its parameters (its coupling included): the class's label
        with iid sampling, ``closed_form`` for a coupling with a coupled closed form the estimator implements, else the
        coupling's own label (``rfviz.registries.Coupling.known``); ``monte_carlo`` where the closed form is
        unavailable for these parameters. Legends and tooltips show it.

        Returns
        -------
        str
            One of ``rfviz.registries.KNOWN_LABELS``.

        Examples
        --------
        >>> from rfviz.estimators import create
        >>> create("trig", m=4, coupling="simplex_plus").known_for_params()
        'monte_carlo'
        """
        coupling = self.params.get("coupling", IID)
        own = type(self).known if coupling == IID else COUPLINGS[coupling].known
        if self.closed_form_available():
            return CLOSED_FORM
        return MONTE_CARLO if own == CLOSED_FORM else own

    @classmethod
    def label(cls) -> str:
        """The short human name (``short_title``, else ``title``): chips, legends, table rows."""
        return cls.short_title or cls.title

    @classmethod
    def describe(cls) -> dict[str, Any]:
        """JSON-ready description (CLI ``estimators --json``, the app's pickers)."""
        return {
            "name": cls.name,
            "title": cls.title,
            "short_title": cls.label(),
            "family": cls.family,
            "reference": cls.reference,
            "description": cls.description,
            "isotropic": cls.isotropic,
            "closed_form": cls.has_closed_form,
            "known": cls.known,
            "citation": cls.citation,
            "params": [p.to_json() for p in cls.spec],
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"


class SoftmaxFamilyEstimator(Estimator):
    """Estimators of the softmax kernel SM(x, y) = e^{x·y}, each also a Gaussian-kernel estimator.

    Subclasses implement the softmax hooks; the Gaussian kernel is handled here once (HRF §1, CRT §1):
    ``φ_gauss(u) = e^{-|u|²/2} φ_SM(u)``, so ``K̂_gauss = e^{-(|x|²+|y|²)/2} K̂_SM`` and
    ``MSE_gauss = e^{-|x|²-|y|²} MSE_SM``.
    """

    family: ClassVar[str] = "softmax"

    def _log_mse_softmax(self, s: PairStats) -> np.ndarray:
        raise NotImplementedError(f"{self.name} has no closed-form MSE")

    def _estimate_softmax(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                          log_scale: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    projection_features: ClassVar[bool] = False
    """True when the map is a function of the projections ω·u and |u|² alone (``features_from_projections``): the
    scikit-learn transformer then forms ω·u itself (sparse inputs, fast structured transforms)."""

    def features_from_projections(self, samples: Samples, p: torch.Tensor, sq: torch.Tensor, side: str,
                                  log_scale: torch.Tensor) -> torch.Tensor:
        """φ from p = ω·u (trials, P, m) and sq = |u|² (P,), as ``_features_scaled`` (classes with
        ``projection_features``); ``p`` may be overwritten."""
        raise NotImplementedError(f"{self.name} is not a function of the projections alone")

    def _features_softmax(self, samples: Samples, u: torch.Tensor, side: str) -> torch.Tensor:
        """The softmax-kernel feature map (trials, P, features). The old protocol hook: a class that gives only this
        still works (``_features_scaled`` multiplies its output by e^{log_scale}); built-ins give
        ``_features_scaled`` instead, and this calls it with log_scale = 0."""
        if _overrides(type(self), "_features_scaled", SoftmaxFamilyEstimator):
            return self._features_scaled(samples, u, side, torch.zeros(u.shape[0], dtype=u.dtype, device=u.device))
        raise NotImplementedError(f"{self.name} has no feature map")

    def _features_scaled(self, samples: Samples, u: torch.Tensor, side: str,
                         log_scale: torch.Tensor) -> torch.Tensor:
        """e^{log_scale(u)}·φ_SM(u), log_scale of shape (P,) (−|u|²/2 gives the Gaussian kernel's map).

        A built-in adds ``log_scale`` inside its exponent (log space), so a feature is formed only as itself: the
        Gaussian kernel's trig map is the bounded sin/cos of ω·u, its positive map e^{ω·u − |u|²}. This default,
        for classes that give only ``_features_softmax`` (older plugins), multiplies after: it overflows where
        φ_SM does."""
        phi = self._features_softmax(samples, u, side)
        return phi * torch.exp(log_scale.to(phi.real.dtype))[None, :, None]

    def _log_mse(self, s: PairStats) -> np.ndarray:
        out = self._log_mse_softmax(s)
        if self.kernel == "gaussian":
            out = out + gaussian_log_correction(s.xx, s.yy)
        return out

    def _log_rel_fourth(self, s: PairStats) -> np.ndarray:
        """log E|K̂ − K|⁴/K⁴ (the same for both kernels); subclasses with a closed form implement it."""
        raise NotImplementedError(f"{self.name} has no closed-form fourth moment")

    def _log_fourth_central_moment(self, s: PairStats) -> np.ndarray:
        """K⁴ times the relative fourth moment, K = e^{x·y} (softmax) or e^{−|x−y|²/2} (Gaussian)."""
        return 4.0 * self.log_abs_kernel(s)[0] + self._log_rel_fourth(s)

    def log_abs_kernel(self, s: PairStats) -> tuple[np.ndarray, np.ndarray]:
        logk = s.xy if self.kernel == "softmax" else -0.5 * s.delta2
        return np.asarray(logk, float), np.ones_like(np.asarray(logk, float))

    def estimate(self, samples: Samples, x: torch.Tensor, y: torch.Tensor,
                 log_scale: torch.Tensor | None = None) -> torch.Tensor:
        if log_scale is None:
            log_scale = torch.zeros(x.shape[0], device=x.device, dtype=x.dtype)
        if self.kernel == "gaussian":
            log_scale = log_scale + 0.5 * ((x * x).sum(-1) + (y * y).sum(-1))
        return self._estimate_softmax(samples, x, y, log_scale)

    def features(self, samples: Samples, u: torch.Tensor, side: str = "query") -> torch.Tensor:
        """φ_side(u) of the estimator's kernel: ``_features_scaled`` with log_scale = 0 (softmax) or −|u|²/2
        (Gaussian, HRF §1: φ_gauss(u) = e^{−|u|²/2}φ_SM(u), formed in log space by the built-ins)."""
        if self.kernel == "gaussian":
            log_scale = -0.5 * (u * u).sum(-1)
        else:
            log_scale = torch.zeros(u.shape[0], dtype=u.dtype, device=u.device)
        return self._features_scaled(samples, u, side, log_scale)


def concat_samples(blocks: list[tuple[Samples, int]]) -> Samples:
    """Several blocks' samples as one: tensors with a leading ``trials`` axis concatenated, anything else taken
    from the first block (protocol: a per-trial tensor's first axis is ``trials``).

    Parameters
    ----------
    blocks : (samples, trials) of each block.

    Returns
    -------
    Samples

    Examples
    --------
    >>> concat_samples([({"w": torch.zeros(2, 3)}, 2), ({"w": torch.ones(1, 3)}, 1)])["w"].shape
    torch.Size([3, 3])
    """
    if len(blocks) == 1:
        return blocks[0][0]
    first, n0 = blocks[0]
    return {k: (torch.cat([samples[k] for samples, _ in blocks])
                if isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape[0] == n0 else v)
            for k, v in first.items()}


def with_kernel(*specs: Param) -> tuple[Param, ...]:
    """Spec of a softmax-family estimator: its own parameters plus ``kernel``.

    Parameters
    ----------
    *specs : Param
        The estimator's own parameters.

    Returns
    -------
    tuple of Param
        ``specs`` followed by the ``kernel`` parameter (softmax or gaussian).

    Examples
    --------
    >>> from rfviz.params import M_PARAM
    >>> [p.name for p in with_kernel(M_PARAM)]
    ['m', 'kernel']
    """
    return (*specs, KERNEL_PARAM)


# ------------------------------------------------------------------ registry
REGISTRY: dict[str, type[Estimator]] = {}
"""Every built-in estimator class by its ``name``, in registration order (filled by :func:`register` when
``rfviz.estimators`` is imported). Plugins are never added here."""


def _overrides(cls: type, method: str, base: type) -> bool:
    return getattr(cls, method, None) is not getattr(base, method, None)


def validate_estimator_class(cls: Any, where: str = "", error: type[Exception] = TypeError) -> type[Estimator]:
    """Static protocol checks, the same for built-ins (``register``) and plugins (``rfviz.plugins``): an Estimator
    subclass with a non-empty ``name`` (an identifier) and ``title``, a ``spec`` tuple of Params, and the required
    methods. Raises ``error`` with a one-line message prefixed by ``where``."""
    if not (inspect.isclass(cls) and issubclass(cls, Estimator)):
        raise error(f"{where}{getattr(cls, '__name__', cls)!r} is not an Estimator subclass (subclass "
                    "rfviz.estimators.base.Estimator or SoftmaxFamilyEstimator)")
    label = f"{where}{cls.__name__}"
    for attr in ("name", "title"):
        value = getattr(cls, attr, None)
        if not isinstance(value, str) or not value.strip():
            raise error(f"{label} must define a non-empty string class attribute {attr!r}")
    if not cls.name.isidentifier():
        raise error(f"{label}: name must be a Python identifier (letters, digits, _), got {cls.name!r}")
    spec = getattr(cls, "spec", None)
    if not isinstance(spec, tuple) or not all(isinstance(p, Param) for p in spec):
        raise error(f"{label}: spec must be a tuple of rfviz.params.Param")
    if not _overrides(cls, "sample", Estimator):
        raise error(f"{label} must implement sample(trials, d, *, generator, device, dtype, dim)")
    if issubclass(cls, SoftmaxFamilyEstimator):
        if not _overrides(cls, "_estimate_softmax", SoftmaxFamilyEstimator) and not _overrides(
                cls, "estimate", SoftmaxFamilyEstimator):
            raise error(f"{label} must implement _estimate_softmax(samples, x, y, log_scale)")
    else:
        if not _overrides(cls, "estimate", Estimator):
            raise error(f"{label} must implement estimate(samples, x, y, log_scale)")
        if not _overrides(cls, "log_abs_kernel", Estimator):
            raise error(f"{label} must implement log_abs_kernel(stats) (its target kernel), or subclass "
                        "SoftmaxFamilyEstimator")
    return cls


def register(cls: type[Estimator]) -> type[Estimator]:
    """Class decorator adding a built-in estimator class ``cls`` to the registry under ``cls.name``.

    ``cls`` is a subclass of :class:`Estimator`, checked against the protocol first (the checks plugins get at
    load). Plugins are not registered: the lab loads them by path (see the docs' how-to on writing an estimator).

    Returns
    -------
    type
        ``cls`` itself.

    Raises
    ------
    TypeError
        When ``cls`` breaks the estimator protocol.
    ValueError
        When another class is already registered under ``cls.name``.
    """
    validate_estimator_class(cls)
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ValueError(f"an estimator named {cls.name!r} is already registered")
    REGISTRY[cls.name] = cls
    return cls


def get_estimator(name: str) -> type[Estimator]:
    """The registered estimator class called ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`REGISTRY`.

    Returns
    -------
    type
        The estimator class.

    Raises
    ------
    ParameterError
        When no estimator has that name (the message lists the names).

    Examples
    --------
    >>> get_estimator("trig").title
    'Trigonometric RF (sin/cos)'
    """
    try:
        return REGISTRY[name]
    except KeyError:
        raise ParameterError(f"estimator must be one of {', '.join(sorted(REGISTRY))}, got {name!r}") from None


def create(name: str, **params: Any) -> Estimator:
    """Instantiate a registered estimator with validated parameters.

    Parameters
    ----------
    name : str
        A key of :data:`REGISTRY`.
    **params
        The estimator's parameters (its ``spec``; the others keep their defaults).

    Returns
    -------
    Estimator
        The estimator instance.

    Raises
    ------
    ParameterError
        For an unknown name, or a parameter outside its valid range (the message names the range).

    Examples
    --------
    >>> est = create("positive", m=16, coupling="orthogonal")
    >>> est.params["m"], est.params["coupling"]
    (16, 'orthogonal')
    """
    return get_estimator(name)(**params)


def projections(w: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """ω·u for samples w (trials, m, dim) and points u (P, dim): shape (trials, P, m), unit stride along m.

    One (P, dim)·(dim, trials·m) matrix product, returned as a (trials, P, m) view of the (P, trials, m) result:
    3× faster than a matmul batched over trials (whose matrices are tiny) and, unlike einsum's (trials, P, m)
    view with stride P along m, it keeps the reductions over m that follow (logsumexp, mean) contiguous."""
    trials, m, dim = w.shape
    return torch.matmul(u, w.reshape(trials * m, dim).T).view(u.shape[0], trials, m).transpose(0, 1)


def sq_norm(u: torch.Tensor) -> torch.Tensor:
    """|u|² over the last axis."""
    return (u * u).sum(-1)
