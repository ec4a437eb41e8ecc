"""The five papers behind rfviz, one key each. Docstrings cite ``[KEY] eq. N`` / ``§N`` / ``Thm N``; the same key
names the paper's modules in every layer (rfviz.maths.<key>, rfviz.estimators.<key>, rfviz.figures.<key>,
rfviz.gallery.<key>; ``optimal`` for [OS]).

Where a paper prints a result incorrectly or not at all, the documentation's derivations pages
(``docs/derivations/``) derive what rfviz uses; docstrings cite those pages as "docs: derivations/<page>".
"""

from __future__ import annotations

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
}
"""Key → (key, module name used in every layer, full citation, arXiv id; empty where the text we have gives none
and none is confirmed)."""


def cite(key: str) -> str:
    """"[KEY] citation, arXiv:id" for a bibliography key (KeyError naming the valid keys otherwise)."""
    if key not in REFERENCES:
        raise KeyError(f"reference key must be one of {', '.join(REFERENCES)}, got {key!r}")
    ref = REFERENCES[key]
    return f"[{ref.key}] {ref.citation}" + (f" arXiv:{ref.arxiv}" if ref.arxiv else "")


__all__ = ["REFERENCES", "Reference", "cite"]
