"""The registries of couplings and kernels: each name, label and property is declared here once; params, samplers,
estimators, figures, gallery, CLI and pages read them.

This module imports nothing from rfviz and neither torch nor numpy, so any layer may use it. Samplers are named
as ``"module:function"`` strings and imported on first use (``Coupling.sampler()``).

Adding a coupling: one ``Coupling(...)`` entry in ``COUPLINGS`` below and its sampler function (signature of
``rfviz.sampling.sample_iid``). Adding a kernel: one ``Kernel(...)`` entry in ``KERNELS``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# ------------------------------------------------------------------------------------------- couplings
IID = "iid"
ORTHOGONAL = "orthogonal"
SIMPLEX = "simplex"
SIMPLEX_PLUS = "simplex_plus"


@dataclass(frozen=True)
class Coupling:
    """How the m random projections ω are drawn jointly (SimRF §3).

    Attributes
    ----------
    name : str
        Identifier used in parameters, URLs and CLI (``coupling=name``).
    title : str
        Human label of figures and pages.
    min_d : int
        Smallest input dimension d the coupling is defined for.
    has_density : bool
        Whether the law p(w_ij) of w_ij = ‖ω_i + ω_j‖ has a closed form (``rfviz.maths.simrf.log_density_wij``).
    coupled_closed_form : bool
        Whether the coupled MSE of the projection estimators has a closed form (SimRF Thm 4.3 and its ORF case);
        iid is not coupled: its closed forms are the estimators' own.
    sampler_path : str
        ``"module:function"`` of the torch sampler (reduced coordinates, see ``rfviz.sampling``).

    Examples
    --------
    >>> COUPLINGS[SIMPLEX].min_d
    2
    """

    name: str
    title: str
    min_d: int
    has_density: bool
    coupled_closed_form: bool
    sampler_path: str

    def sampler(self) -> Callable[..., Any]:
        """The sampler function, imported on first use.

        Returns
        -------
        callable
            ``(trials, m, d, dim, generator, device, dtype) -> (omega, squared_norms)``.
        """
        module, _, function = self.sampler_path.partition(":")
        return getattr(importlib.import_module(module), function)


COUPLINGS: dict[str, Coupling] = {c.name: c for c in (
    Coupling(IID, "iid", 1, True, False, "rfviz.sampling:sample_iid"),
    Coupling(ORTHOGONAL, "orthogonal (ORF)", 1, True, True, "rfviz.sampling:sample_orthogonal"),
    Coupling(SIMPLEX, "simplex (SimRF)", 2, True, True, "rfviz.maths.simrf:sample_simplex"),
    Coupling(SIMPLEX_PLUS, "simplex+ (SimRF+)", 2, False, False, "rfviz.maths.simrf:sample_simplex_plus"),
)}
"""Every coupling, by name, in the order pages and ``Param`` choices list them."""

COUPLING_NAMES: tuple[str, ...] = tuple(COUPLINGS)
COUPLINGS_WITH_DENSITY: tuple[str, ...] = tuple(c.name for c in COUPLINGS.values() if c.has_density)
"""Couplings with a closed-form law of w_ij (simplex+ is weight-dependent: none)."""
COUPLED_CLOSED_FORMS: tuple[str, ...] = tuple(c.name for c in COUPLINGS.values() if c.coupled_closed_form)
"""Coupled (non-iid) couplings whose MSE has a closed form for the projection estimators."""
SAMPLED_COUPLINGS: tuple[str, ...] = tuple(c for c in COUPLING_NAMES if c != IID)
"""Coupled couplings, compared against iid by sampling (SimRF Fig. 6's sampled ratios)."""
COUPLING_TITLES: dict[str, str] = {c.name: c.title for c in COUPLINGS.values()}


# --------------------------------------------------------------------------------------------- kernels
SOFTMAX = "softmax"
GAUSSIAN = "gaussian"
DOT_PRODUCT = "dot_product"
POLYNOMIAL = "polynomial"


@dataclass(frozen=True)
class Kernel:
    """A target kernel k(x, y).

    Attributes
    ----------
    name : str
        Identifier (``kernel=name``, an estimator's ``family``).
    title : str
        Human label with the formula.
    aliases : tuple of str
        Other names estimators use for the same kernel (the Maclaurin features call exp(x·y) ``exponential``).
    softmax_family : bool
        Whether the softmax-family estimators (those with a ``kernel`` parameter) estimate it.

    Examples
    --------
    >>> canonical_kernel("exponential")
    'softmax'
    """

    name: str
    title: str
    aliases: tuple[str, ...] = ()
    softmax_family: bool = False

    @property
    def spellings(self) -> tuple[str, ...]:
        """The name, then its aliases."""
        return (self.name, *self.aliases)


KERNELS: dict[str, Kernel] = {k.name: k for k in (
    Kernel(SOFTMAX, "softmax exp(x·y)", aliases=("exponential",), softmax_family=True),
    Kernel(GAUSSIAN, "Gaussian exp(-|x-y|²/2)", softmax_family=True),
    Kernel(DOT_PRODUCT, "homogeneous polynomial (x·y)ᵖ"),
    Kernel(POLYNOMIAL, "polynomial (x·y + ν)ᴾ"),
)}
"""Every kernel, by name."""

SOFTMAX_KERNELS: tuple[str, ...] = tuple(k.name for k in KERNELS.values() if k.softmax_family)
"""Kernels of the softmax-family estimators (their ``kernel`` parameter's choices)."""


def canonical_kernel(name: str) -> str:
    """The registry name of a kernel given by its name or an alias (unknown names come back unchanged).

    Parameters
    ----------
    name : str
        A kernel name or alias.

    Returns
    -------
    str
        The kernel's name in ``KERNELS``.

    Examples
    --------
    >>> canonical_kernel("gaussian")
    'gaussian'
    """
    return next((k.name for k in KERNELS.values() if name in k.spellings), name)


def kernel_spellings(name: str) -> tuple[str, ...]:
    """Every name of the kernel ``name`` (itself first, then its aliases); ``(name,)`` if it is not registered.

    Examples
    --------
    >>> kernel_spellings("softmax")
    ('softmax', 'exponential')
    """
    kernel = KERNELS.get(canonical_kernel(name))
    return kernel.spellings if kernel is not None else (name,)


__all__ = ["COUPLED_CLOSED_FORMS", "COUPLINGS", "COUPLINGS_WITH_DENSITY", "COUPLING_NAMES", "COUPLING_TITLES",
           "DOT_PRODUCT", "GAUSSIAN", "IID", "KERNELS", "ORTHOGONAL", "POLYNOMIAL", "SAMPLED_COUPLINGS", "SIMPLEX",
           "SIMPLEX_PLUS", "SOFTMAX", "SOFTMAX_KERNELS", "Coupling", "Kernel", "canonical_kernel",
           "kernel_spellings"]
