"""The Gram-error theory: what the per-pair closed forms (MSE and fourth moment) predict about a sampled
E‖K̂ − K‖²_F over repeats (``gram_theory``), and the iid witness of a coupled estimator's Gram row
(``gram_witness``)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .rules import TARGET_REL_STDERR
from .words import _percent, _witness_warning, trials_needed_text


@dataclass(frozen=True)
class GramTheory:
    """What the per-pair closed forms predict about a sampled E‖K̂ − K‖²_F over ``repeats`` repeats:
    ``rel_stderr_bound`` (an upper bound on the relative standard error of the mean over the repeats),
    ``repeats_needed`` (repeats that guarantee ±10 %; inf: none do), ``reliable`` and a one-line ``warning``."""

    rel_stderr_bound: float
    repeats_needed: float
    reliable: bool
    warning: str | None


def gram_theory(log_mse: np.ndarray, log_fourth: np.ndarray, repeats: int,
                max_rel_stderr: float = TARGET_REL_STDERR) -> GramTheory:
    """Reliability of a Monte-Carlo Gram error predicted from the per-pair MSEs and fourth moments E|e_ij|⁴.

    Derivation. One repeat draws the features once and gives F = Σ_ij e_ij², e_ij = K̂_ij − K_ij; the entries share
    their features, so the e_ij² are correlated in unknown ways. Minkowski's inequality in L²(P) bounds the sum's
    norm by the sum of the norms whatever the correlation: ‖F‖₂ ≤ Σ_ij ‖e_ij²‖₂ = Σ_ij √(E e_ij⁴). Hence
    E F² ≤ (Σ_ij √(E e_ij⁴))² and

        Var F = E F² − (E F)² ≤ V̄ := (Σ_ij √(E e_ij⁴))² − (Σ_ij MSE_ij)²,

    with equality when the e_ij² move together (one pair, or errors driven by one feature draw — the heavy-tailed
    case). The mean over R repeats has relative standard error ≤ √(V̄/R)/Σ MSE_ij, and R ≥ V̄/(Σ MSE_ij)²/0.1²
    repeats guarantee ±10 %. Where some E e_ij⁴ = ∞ no R does. The bound is the rule: a sampled Gram error is
    reliable by theory when the bound is ≤ ``max_rel_stderr``; a light-tailed error whose bound is loose is then
    called unreliable at a repeat count that cannot *guarantee* ±10 %, and the warning gives the count that does.

    Parameters
    ----------
    log_mse, log_fourth : np.ndarray
        Natural logs of MSE_ij and E|K̂_ij − K_ij|⁴ over the pairs (any shape, same size).
    repeats : int
        The number of Monte-Carlo repeats R.
    max_rel_stderr : float
        The relative standard error to guarantee (default 10 %).

    Returns
    -------
    GramTheory

    Examples
    --------
    >>> t = gram_theory(np.log([1.0, 1.0]), np.log([3.0, 3.0]), 300)
    >>> round(t.rel_stderr_bound, 4), t.repeats_needed, t.reliable
    (0.0816, 200.0, True)
    """
    from scipy.special import logsumexp

    lm = np.asarray(log_mse, dtype=float).ravel()
    l4 = np.asarray(log_fourth, dtype=float).ravel()
    if np.all(np.isneginf(lm)):
        return GramTheory(0.0, 2.0, True, None)
    if np.any(np.isposinf(l4)):
        return GramTheory(math.inf, math.inf, False, "heavy-tailed here: E|K̂ − K|⁴ is infinite at some pair, so no "
                          "number of repeats makes the sampled Gram error informative; trust the closed form")
    log_sum_mse = float(logsumexp(lm))
    log_sum_root4 = float(logsumexp(0.5 * l4))
    with np.errstate(over="ignore"):
        excess = max(math.expm1(min(2.0 * (log_sum_root4 - log_sum_mse), 700.0)), 0.0)
    rse = math.sqrt(excess / max(int(repeats), 1))
    needed = max(math.ceil(excess / max_rel_stderr**2), 2)
    if rse <= max_rel_stderr:
        return GramTheory(rse, float(needed), True, None)
    what = trials_needed_text(float(needed), int(repeats), "repeats")
    return GramTheory(rse, float(needed), False,
                      f"the per-pair fourth moments bound the relative standard error of the sampled Gram error by "
                      f"{_percent(rse)} at {int(repeats)} repeats, not ≤ {max_rel_stderr:.0%}; {what}")


def gram_witness(log_mse: np.ndarray, log_fourth: np.ndarray, repeats: int, coupling: str,
                 max_rel_stderr: float = TARGET_REL_STDERR) -> GramTheory:
    """``gram_theory`` of the iid witness (``iid_witness``) of a coupled estimator's Gram row, with its warning
    said for the coupled estimator; apply it with ``vetoed`` (it never makes a row reliable).

    Parameters
    ----------
    log_mse, log_fourth : np.ndarray
        The *iid* estimator's per-pair log MSE and log E|K̂_ij − K_ij|⁴.
    repeats : int
        The coupled sample's repeats.
    coupling : str
        The coupled estimator's coupling.
    max_rel_stderr : float
        The threshold of the rule (10 %).

    Returns
    -------
    GramTheory

    Examples
    --------
    >>> gram_witness(np.log([1.0]), np.log([np.inf]), 20, "simplex").warning.split(":")[0]
    'heavy-tailed here'
    """
    theory = gram_theory(log_mse, log_fourth, repeats, max_rel_stderr)
    if theory.reliable:
        return theory
    return dataclasses.replace(theory, warning=_witness_warning(
        theory.rel_stderr_bound, theory.repeats_needed, int(repeats), coupling, "repeats", max_rel_stderr, bound=True))
