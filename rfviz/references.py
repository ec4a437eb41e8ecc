"""The papers behind rfviz, one key each (the five seeds, then the atlas's later mechanisms).

Docstrings cite ``[KEY] eq. N`` / ``§N`` / ``Thm N``; the same key
names the paper's modules in every layer (rfviz.maths.<key>, rfviz.estimators.<key>, rfviz.figures.<key>,
rfviz.gallery.<key>; ``optimal`` for [OS]).

Where a paper prints a result incorrectly or not at all, the documentation's derivations pages
(``docs/derivations/``) derive what rfviz uses; docstrings cite those pages as "docs: derivations/<page>".
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Reference(NamedTuple):
    key: str
    module: str
    citation: str
    arxiv: str


REFERENCES: dict[str, Reference] = {
    "HRF": Reference("HRF", "hrf", "K. Choromanski, H. Chen, H. Lin, Y. Ma, A. Sehanobish, D. Jain, M. S. Ryoo, "
                     "J. Varley, A. Zeng, V. Likhosherstov, D. Kalashnikov, V. Sindhwani, A. Weller. Hybrid Random "
                     "Features. ICLR 2022.", "2110.04367"),
    "CRT": Reference("CRT", "crt", "V. Likhosherstov, K. Choromanski, A. Dubey, F. Liu, T. Sarlos, A. Weller. Chefs' "
                     "Random Tables: Non-Trigonometric Random Features. NeurIPS 2022.", "2205.15317"),
    "SimRF": Reference("SimRF", "simrf", "I. Reid, K. Choromanski, V. Likhosherstov, A. Weller. Simplex Random "
                       "Features. ICML 2023.", "2301.13856"),
    "DP": Reference("DP", "dp", "J. Wacker, M. Kanagawa, M. Filippone. Improved Random Features for Dot Product "
                    "Kernels.", "2201.08712"),
    "OS": Reference("OS", "optimal", "L. Sernau, S. Bonacina, R. A. Saurous. All Random Features Representations are "
                    "Equivalent. Google DeepMind.", ""),
    "ORF": Reference("ORF", "structured", "F. X. Yu, A. T. Suresh, K. Choromanski, D. Holtmann-Rice, S. Kumar. "
                     "Orthogonal Random Features. NeurIPS 2016.", "1610.09072"),
    "Fastfood": Reference("Fastfood", "structured", "Q. Le, T. Sarlós, A. Smola. Fastfood: Approximating Kernel "
                          "Expansions in Loglinear Time. ICML 2013.", "1408.3060"),
    "DERF": Reference("DERF", "derf", "V. Likhosherstov, K. Choromanski, A. Dubey, F. Liu, T. Sarlos, A. Weller. "
                      "FAVOR#: Sharp Attention Kernel Approximations via New Classes of Positive Random Features "
                      "(Dense-Exponential Random Features: Sharp Positive Estimators of the Gaussian Kernel, NeurIPS "
                      "2023).", "2302.00787"),
    "DK": Reference("DK", "orf_bessel", "N. Demni, H. Kadri. Orthogonal Random Features: Explicit Forms and Sharp "
                    "Inequalities. TMLR 2024.", "2310.07370"),
    "QMC": Reference("QMC", "qmc", "H. Avron, V. Sindhwani, J. Yang, M. W. Mahoney. Quasi-Monte Carlo Feature Maps "
                     "for Shift-Invariant Kernels. JMLR 17 (2016); ICML 2014.", "1412.8293"),
}
"""Key → (key, module name used in every layer, full citation, arXiv id; empty where the text we have gives none
and none is confirmed)."""


_CITATION_KEY = re.compile(r"\[([^\]]+)\]")
_LOCATOR = re.compile(r"\b(?:eqs?\.|Eqs?\.|Thms?\.?|Theorems?|Lemmas?|Def\.|Definition|Alg\.|Algorithm|App\.|Fig\.|"
                      r"Table|Prop\.|Cor\.)\s*[A-Z]?\d|§\s*\d")


def check_citation(citation: str) -> str:
    """Validate a registry entry's citation: at least one ``[KEY]`` of ``REFERENCES``, every bracketed key known, and
    a locator (``eq. N``, ``Thm N``, ``§N``, ``Lemma N``, ``Alg. N``, ``App. X``...).

    Parameters
    ----------
    citation : str
        E.g. ``"[CRT] Thm 3.3 eq. 7"``.

    Returns
    -------
    str
        The citation, unchanged.

    Raises
    ------
    ValueError
        Naming what is missing.

    Examples
    --------
    >>> check_citation("[CRT] Thm 3.3 eq. 7")
    '[CRT] Thm 3.3 eq. 7'
    """
    keys = _CITATION_KEY.findall(citation or "")
    if not keys:
        raise ValueError(f"a citation needs a paper key [KEY] (one of {', '.join(REFERENCES)}), got {citation!r}")
    unknown = [k for k in keys if k not in REFERENCES]
    if unknown:
        raise ValueError(f"unknown paper key(s) {unknown} in {citation!r}: keys are {', '.join(REFERENCES)}")
    if not _LOCATOR.search(citation):
        raise ValueError(f"a citation needs an equation, theorem or section (eq. N, Thm N, §N...), got {citation!r}")
    return citation


def cite(key: str) -> str:
    """"[KEY] citation, arXiv:id" for a bibliography key (KeyError naming the valid keys otherwise)."""
    if key not in REFERENCES:
        raise KeyError(f"reference key must be one of {', '.join(REFERENCES)}, got {key!r}")
    ref = REFERENCES[key]
    return f"[{ref.key}] {ref.citation}" + (f" arXiv:{ref.arxiv}" if ref.arxiv else "")


__all__ = ["REFERENCES", "Reference", "check_citation", "cite"]
