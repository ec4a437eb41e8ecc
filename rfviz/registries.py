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
SORF = "sorf"
FASTFOOD = "fastfood"
QMC_SOBOL = "qmc_sobol"
QMC_HALTON = "qmc_halton"

# ------------------------------------------------------------------------------- what is known (labels)
CLOSED_FORM = "closed_form"
BOUND = "bound"
RATE = "rate"
MONTE_CARLO = "monte_carlo"
KNOWN_LABELS: dict[str, str] = {
    CLOSED_FORM: "closed form (verified)",
    BOUND: "bound",
    RATE: "rate only",
    MONTE_CARLO: "Monte Carlo only",
}
"""What is known about an estimator's or a coupling's MSE, label → human text (legends, tooltips, the catalog):
*closed form* (an exact formula, verified against Monte Carlo and mpmath in the tests), *bound* (a published bound
on the bias or the error, no exact MSE), *rate* (an asymptotic error rate only), *Monte Carlo* (nothing known:
sampled curves only). Every registered estimator (``Estimator.known``) and coupling (``Coupling.known``) carries one,
with a citation (paper key + equation; ``rfviz.references.check_citation``)."""


def known_title(known: str) -> str:
    """The human text of a ``known`` label (KeyError naming the valid labels otherwise).

    Parameters
    ----------
    known : str
        A key of ``KNOWN_LABELS``.

    Returns
    -------
    str
        Its text in figures and tables.

    Examples
    --------
    >>> known_title("bound")
    'bound'
    """
    if known not in KNOWN_LABELS:
        raise KeyError(f"known must be one of {', '.join(KNOWN_LABELS)}, got {known!r}")
    return KNOWN_LABELS[known]


@dataclass(frozen=True)
class Coupling:
    """How the m random projections ω are drawn jointly (SimRF §3).

    Parameters
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
    known : str
        What is known about the MSE of estimators drawn with this coupling (``KNOWN_LABELS``).
    citation : str
        Paper key and equation (``[KEY] eq. N``; keys of ``rfviz.references.REFERENCES``), and the bound where
        ``known`` is ``bound``.
    gaussian_marginals : bool
        Whether every ω_i is, on its own, exactly N(0, I_d) (the coupling only ties the ω_i together): each
        feature is then distributed as an iid estimator's feature, so the iid estimator's closed-form fourth
        moment is a heavy-tail witness for the coupled one (``rfviz.verdicts.iid_witness``). False for SORF
        (rows of fixed norm √d', not Gaussian). The randomised QMC points are Φ⁻¹ of exactly uniform points clamped
        to [2⁻⁶⁰, 1 − 2⁻⁵³] (``rfviz.maths.qmc``): Gaussian but for events of probability ~10⁻¹⁶ per coordinate,
        which no sample reaches.

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
    known: str
    citation: str
    gaussian_marginals: bool = False

    def __post_init__(self) -> None:
        known_title(self.known)  # KeyError for a label outside KNOWN_LABELS

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
    Coupling(IID, "iid", 1, True, False, "rfviz.sampling:sample_iid", CLOSED_FORM,
             "[SimRF] §3 (ω_i iid N(0, I_d)); the MSE is each estimator's own closed form",
             gaussian_marginals=True),
    Coupling(ORTHOGONAL, "orthogonal (ORF)", 1, True, True, "rfviz.sampling:sample_orthogonal", CLOSED_FORM,
             "[SimRF] Lemma 4.1, Thm 4.3 (coupled MSE); [CRT] §3.9",
             gaussian_marginals=True),
    Coupling(SIMPLEX, "simplex (SimRF)", 2, True, True, "rfviz.maths.simrf:sample_simplex", CLOSED_FORM,
             "[SimRF] Eq. 8 (blocks), Lemma 4.2, Thm 4.3 (coupled MSE)",
             gaussian_marginals=True),
    Coupling(SIMPLEX_PLUS, "simplex+ (SimRF+)", 2, False, False, "rfviz.maths.simrf:sample_simplex_plus",
             MONTE_CARLO, "[SimRF] §3.2, Eq. 17 (weight-dependent directions; no closed form)",
             gaussian_marginals=True),
    Coupling(SORF, "SORF (structured orthogonal)", 1, False, False, "rfviz.maths.structured:sample_sorf", BOUND,
             "[ORF] §4 (W = √d' H D₁ H D₂ H D₃, d' = d padded to a power of two), Thm 5: biased, |E K̂ − K| ≤ "
             "6|x − y|/√d' for trig features of the Gaussian kernel"),
    Coupling(FASTFOOD, "Fastfood", 1, False, False, "rfviz.maths.structured:sample_fastfood", MONTE_CARLO,
             "[Fastfood] §3 (V = S H G Π H B, χ row lengths, d padded to a power of two): every ω_i exactly "
             "N(0, I), unbiased; no closed-form variance",
             gaussian_marginals=True),
    Coupling(QMC_SOBOL, "randomised QMC (Sobol')", 1, False, False, "rfviz.maths.qmc:sample_qmc_sobol", RATE,
             "[QMC] §3 (Φ⁻¹ of digitally shifted Sobol' points; Koksma–Hlawka rate O((log m)^d / m)); unbiased",
             gaussian_marginals=True),
    Coupling(QMC_HALTON, "randomised QMC (Halton)", 1, False, False, "rfviz.maths.qmc:sample_qmc_halton", RATE,
             "[QMC] §3 (Φ⁻¹ of Halton points shifted modulo 1; Koksma–Hlawka rate O((log m)^d / m)); unbiased",
             gaussian_marginals=True),
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

    Parameters
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

    Parameters
    ----------
    name : str
        A kernel's name or alias.

    Returns
    -------
    tuple of str
        The canonical name, then its aliases.

    Examples
    --------
    >>> kernel_spellings("softmax")
    ('softmax', 'exponential')
    """
    kernel = KERNELS.get(canonical_kernel(name))
    return kernel.spellings if kernel is not None else (name,)


__all__ = ["BOUND", "CLOSED_FORM", "COUPLED_CLOSED_FORMS", "COUPLINGS", "COUPLINGS_WITH_DENSITY", "COUPLING_NAMES",
           "COUPLING_TITLES", "DOT_PRODUCT", "FASTFOOD", "GAUSSIAN", "IID", "KERNELS", "KNOWN_LABELS", "MONTE_CARLO",
           "ORTHOGONAL", "POLYNOMIAL", "QMC_HALTON", "QMC_SOBOL", "RATE", "SAMPLED_COUPLINGS", "SIMPLEX",
           "SIMPLEX_PLUS", "SOFTMAX", "SOFTMAX_KERNELS", "SORF", "Coupling", "Kernel", "canonical_kernel",
           "kernel_spellings", "known_title"]
