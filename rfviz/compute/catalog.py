"""Estimator-catalog queries for the faces: which kernels are offered, which registered estimators estimate a kernel,
the human title of an estimator, and an estimator built with the kernel spelled the way it expects.

Read by the pages (kernel and estimator pickers), the explorer's compute layer and the data page.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..estimators import REGISTRY, Estimator, create, get_estimator
from ..registries import SOFTMAX_KERNELS, kernel_spellings


def title_of(name: str, short: bool = False) -> str:
    """Human title of a panel: the estimator's ``title`` (``A / B`` for a ratio panel), else the name itself.

    This and ``short_of`` are the app's one mapping from registered names to human names.

    Parameters
    ----------
    name : str
        A registered estimator, or ``"a / b"`` of two.
    short : bool
        The short label (``Estimator.label()``: chips, legends, table rows) instead of the full title.

    Returns
    -------
    str
    """
    if name in REGISTRY:
        return REGISTRY[name].label() if short else REGISTRY[name].title
    if " / " in name:
        return " / ".join(title_of(part, short) for part in name.split(" / ", 1))
    return name


def short_of(name: str) -> str:
    """The short human name of an estimator (``title_of(name, short=True)``), e.g. ``"Trig RF"``.

    Parameters
    ----------
    name : str
        A registered estimator.

    Returns
    -------
    str
        Its short title.

    Examples
    --------
    >>> short_of("trig") == title_of("trig", short=True)
    True
    """
    return title_of(name, short=True)


def _kernel_choice(cls: type[Estimator], kernel: str) -> str | None:
    """The value of ``cls``'s own kernel parameter that means ``kernel`` (None if it has none)."""
    param = next((p for p in cls.spec if p.name == "kernel"), None)
    if param is None:
        return None
    return next((k for k in kernel_spellings(kernel) if k in param.choices), None)


def kernel_options() -> list[str]:
    """Kernels offered: softmax and Gaussian (any softmax-family estimator), then the other families.

    Returns
    -------
    list of str
        Kernel names, softmax and Gaussian first.

    Examples
    --------
    >>> kernel_options()[:2]
    ['softmax', 'gaussian']
    """
    others = sorted({cls.family for cls in REGISTRY.values()
                     if not any(p.name == "kernel" for p in cls.spec)} - set(SOFTMAX_KERNELS))
    return [*SOFTMAX_KERNELS, *others]


def estimators_for_kernel(kernel: str) -> list[str]:
    """Registered estimators of ``kernel`` (softmax-family ones estimate both softmax and Gaussian).

    Parameters
    ----------
    kernel : str
        A kernel of ``kernel_options()``.

    Returns
    -------
    list of str
        Estimator names, in registry order.

    Examples
    --------
    >>> "trig" in estimators_for_kernel("gaussian")
    True
    """
    out = []
    for name, cls in REGISTRY.items():
        names = {p.name for p in cls.spec}
        if kernel in SOFTMAX_KERNELS and "kernel" in names:
            if _kernel_choice(cls, kernel) is not None:
                out.append(name)
        elif kernel not in SOFTMAX_KERNELS and cls.family == kernel and "kernel" not in names:
            out.append(name)
    return out


def known_caption(name: str, params: Mapping[str, Any], kernel: str) -> str:
    """What is known about the MSE of ``name`` with ``params``, for a caption or tooltip: the label
    (``Estimator.known_for_params``, the coupling included) and the citation, e.g.
    ``"Known: closed form (verified) — [HRF] eq. 2; MSE Lemma 2.2 eq. 7"``. Parameters that do not validate fall back
    to the class's own label (iid).

    Parameters
    ----------
    name : str
        A registered estimator.
    params : mapping
        Its parameters (the coupling among them).
    kernel : str
        The kernel it estimates.

    Returns
    -------
    str
        ``"Known: <label> — <citation>"``.

    Examples
    --------
    >>> known_caption("trig", {"m": 4, "coupling": "simplex_plus"}, "softmax").split(" — ")[0]
    'Known: Monte Carlo only'
    """
    from ..params import ParameterError
    from ..registries import COUPLINGS, IID, known_title

    cls = get_estimator(name)
    try:
        known = make_estimator(name, params, kernel).known_for_params()
    except (ParameterError, ValueError, TypeError):
        known = cls.known
    citation = cls.citation
    coupling = params.get("coupling", IID)
    if coupling != IID and coupling in COUPLINGS:
        citation = f"{citation}; coupling: {COUPLINGS[coupling].citation}"
    return f"Known: {known_title(known)} — {citation}"


def make_estimator(name: str, params: Mapping[str, Any], kernel: str) -> Estimator:
    """Instantiate ``name`` with ``params`` (the kernel added where the estimator has a kernel parameter).

    Parameters
    ----------
    name : str
        A registered estimator.
    params : mapping
        Its parameters, without the kernel.
    kernel : str
        The kernel to estimate (ignored by an estimator without a kernel parameter).

    Returns
    -------
    Estimator
        The validated estimator.

    Examples
    --------
    >>> make_estimator("trig", {"m": 4}, "gaussian").params["kernel"]
    'gaussian'
    """
    cls = get_estimator(name)
    full = dict(params)
    choice = _kernel_choice(cls, kernel)
    if choice is not None:
        full["kernel"] = choice
    return create(name, **full)


def titles(names: Iterable[str]) -> dict[str, str]:
    """``{name: title_of(name)}`` for the panels of a figure (the drawing functions take it as ``titles``).

    Parameters
    ----------
    names : iterable of str
        Registered estimators.

    Returns
    -------
    dict of str to str
        Each name's title.

    Examples
    --------
    >>> titles(["trig"])["trig"]
    'Trigonometric RF (sin/cos)'
    """
    return {n: title_of(n) for n in names}
