"""Reliable: theory where the closed-form fourth moment exists (``theory_reliability``, ``with_theory``), the
heavy-tail witness of a coupled estimator (``iid_witness``, ``witness_reliability``, ``vetoed``), and a sweep point's
last checks (``sweep_point_reliability``)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .gram import GramTheory
from .rules import MAX_RELIABLE_Z, PRACTICAL_TRIALS, TARGET_REL_STDERR
from .words import _percent, _witness_warning, trials_needed_text


@dataclass(frozen=True)
class TheoryReport:
    """What the closed-form fourth moment predicts about a sampled MSE at ``trials`` trials, per point:
    ``rel_stderr`` = √(Var|K̂ − K|²/N)/MSE (inf: the squared error has infinite variance), ``trials_needed`` for
    ``max_rel_stderr`` (inf: no trial count suffices), ``reliable`` and a one-line ``warning`` where not."""

    rel_stderr: np.ndarray
    trials_needed: np.ndarray
    reliable: np.ndarray
    warning: np.ndarray


def theory_reliability(log_mse: np.ndarray, log_fourth: np.ndarray, trials: int, *,
                       max_rel_stderr: float = TARGET_REL_STDERR) -> TheoryReport:
    """Reliability of a sampled MSE predicted before sampling, from the closed-form MSE and E|K̂ − K|⁴ (logs).

    The sampled MSE is the mean of N iid squared errors, so its relative standard error is
    rse = √((E|K̂ − K|⁴/MSE² − 1)/N) and ±``max_rel_stderr`` needs N = (E|K̂ − K|⁴/MSE² − 1)/max_rel_stderr².
    Where E|K̂ − K|⁴ = ∞ no N suffices (``trials_needed`` inf): the sample is unreliable whatever it shows.
    Exact points (log MSE = −inf) are reliable.

    Parameters
    ----------
    log_mse, log_fourth : np.ndarray
        Natural logs of the closed-form MSE and fourth central moment (broadcast together).
    trials : int
        The number of trials N.
    max_rel_stderr : float
        The largest acceptable relative standard error (default 10 %).

    Returns
    -------
    TheoryReport

    Examples
    --------
    >>> r = theory_reliability(np.log([1.0, 1.0]), np.log([3.0, np.inf]), 2000)
    >>> r.reliable.tolist(), r.trials_needed.tolist()
    ([True, False], [200.0, inf])
    """
    log_mse, log_fourth = np.broadcast_arrays(np.asarray(log_mse, float), np.asarray(log_fourth, float))
    exact = np.isneginf(log_mse)
    infinite = np.isposinf(log_fourth) & ~exact
    with np.errstate(over="ignore", invalid="ignore"):
        excess = np.maximum(np.expm1(np.where(exact | infinite, 0.0, log_fourth - 2.0 * log_mse)), 0.0)
        rse = np.sqrt(excess / max(int(trials), 1))
        needed = np.maximum(np.ceil(excess / max_rel_stderr**2), 2.0)
    rse = np.where(exact, 0.0, np.where(infinite, np.inf, rse))
    needed = np.where(exact, 2.0, np.where(infinite, np.inf, needed))
    reliable = rse <= max_rel_stderr
    warning = np.full(rse.shape, None, dtype=object)
    for i in np.ndindex(rse.shape):
        if reliable[i]:
            continue
        if infinite[i]:
            warning[i] = ("infinite variance: the closed-form E|K̂ − K|⁴ is +∞ here, so no number of trials makes "
                          "the sampled MSE reliable")
        else:
            predicted = (f"the closed-form fourth moment predicts a relative standard error of {_percent(rse[i])} "
                         f"at {trials} trials (> {max_rel_stderr:.0%})")
            what = trials_needed_text(float(needed[i]), int(trials))
            warning[i] = (f"{what} ({predicted})" if needed[i] > PRACTICAL_TRIALS
                          else f"too few trials: {predicted}; {what}")
    return TheoryReport(rse, needed, reliable, warning)


def with_theory(tails: Any, theory: TheoryReport, known: np.ndarray, underflow: np.ndarray | None = None) -> Any:
    """The per-pair verdict (on a ``rfviz.diagnostics.TailReport``, returned as a copy) when the closed-form
    fourth moment is ``known`` (mask): theory decides ``reliable``,
    ``warning`` and ``trials_needed`` there (a light-looking sample of a heavy tail is unreliable whatever it
    shows), except that precision loss (every estimate underflowed) stays unreliable; elsewhere the empirical
    ``tails`` verdict stands. Tail index and top share are kept as measured."""
    known = np.asarray(known, bool).reshape(-1)
    under = np.zeros(known.shape, bool) if underflow is None else np.asarray(underflow, bool).reshape(-1)
    use = known & ~under
    reliable = np.where(use, theory.reliable.reshape(-1), tails.reliable)
    warning = np.where(use, theory.warning.reshape(-1), tails.warning)
    needed = np.where(use, theory.trials_needed.reshape(-1), tails.trials_needed)
    return dataclasses.replace(tails, reliable=reliable, warning=warning, trials_needed=needed)


# ------------------------------------------------- reliable: the iid witness of a coupled estimator's tail

def iid_witness(est: Any) -> Any | None:
    """The heavy-tail witness of a coupled estimator: the same estimator with ``coupling=iid``, or None.

    There is one where ``est`` has a ``coupling`` parameter naming a coupling whose ω_i are each exactly
    N(0, I_d) (``rfviz.registries.Coupling.gaussian_marginals``: orthogonal, simplex, simplex+, Fastfood,
    randomised QMC; not SORF, whose rows have a fixed norm), ``est`` has no closed-form fourth moment, and the iid
    estimator has one (``fourth_moment_available``) with its closed-form MSE. Its closed forms then decide whether a
    sample of ``est`` can be reliable (``witness_reliability``, ``gram_witness``, ``vetoed``): they may only veto.

    Why the iid estimator speaks for the coupled one. K̂ = (1/m) Σᵢ Yᵢ with Yᵢ = φ(ωᵢ, x)·φ(ωᵢ, y) one feature's
    product; with Gaussian marginals every Yᵢ has the law of the iid estimator's Y, and a coupling changes only
    the joint law of (Y₁, …, Y_m).

    * Non-negative features (positive, FAVOR+, OPRF, GERF with real A): K̂ ≥ Yᵢ/m for every i, so
      P(K̂ − K > t) ≥ P(Y > m(K + t)) whatever the coupling — the coupled estimator's upper tail is at least one
      feature's tail — and (Σᵢ Yᵢ)⁴ ≥ Σᵢ Yᵢ⁴ gives E K̂⁴ ≥ E Y⁴/m³. The iid E|K̂ − K|⁴ = (μ₄ + 3(m − 1)μ₂²)/m³
      (μ_k one feature's central moments) is infinite exactly when E Y⁴ is, and then so is the coupled one: no
      coupling of identically distributed features removes the single-feature tail. This part is a theorem.
    * Finite but heavy: the iid fourth moment is then carried by its single-feature term μ₄/m³ (rare draws in
      which one feature is huge); the coupled estimator has, by the bound above, E K̂⁴ ≥ E Y⁴/m³ — the same rare
      draws at the same rate — while couplings are built to lower the MSE ([SimRF] Thm 4.3), so E|K̂ − K|⁴/MSE²,
      which sets the sampled MSE's relative standard error, is about as large or larger. A prediction, not a
      bound: hence the witness vetoes a reliable-looking sample and never declares one reliable.
    * Signed or bounded features (trig, GERF with complex A): cancellations could in principle shorten the tail;
      trig features are bounded, so their witness objects only where too few trials leave ±10 % out of reach for
      the iid estimator too. Still only a veto.

    The randomised QMC couplings clamp their uniforms to [2⁻⁶⁰, 1 − 2⁻⁵³] (Gaussian but for events of probability
    ~10⁻¹⁶ per coordinate): a tail that lives beyond the clamp is invisible to their samples, which then do not
    estimate the unclamped estimator's MSE either; the veto stands.

    Parameters
    ----------
    est : Estimator
        Any estimator (read by attribute: ``params``, ``fourth_moment_available``, ``closed_form_available``).

    Returns
    -------
    Estimator or None
        ``type(est)(**{**est.params, "coupling": iid})``, or None where no witness applies.

    Examples
    --------
    >>> import rfviz
    >>> iid_witness(rfviz.create("positive", m=8, coupling="simplex")).params["coupling"]
    'iid'
    >>> iid_witness(rfviz.create("positive", m=8)) is None, iid_witness(rfviz.create("positive", m=8,
    ...     coupling="sorf")) is None
    (True, True)
    """
    from ..registries import COUPLINGS, IID

    params = getattr(est, "params", None)
    coupling = params.get("coupling") if isinstance(params, dict) else None
    spec = COUPLINGS.get(coupling) if isinstance(coupling, str) else None
    if spec is None or coupling == IID or not spec.gaussian_marginals or _fourth_available(est):
        return None
    try:
        witness = type(est)(**{**params, "coupling": IID})
    except (TypeError, ValueError):
        return None
    return witness if _fourth_available(witness) and witness.closed_form_available() else None


def _fourth_available(est: Any) -> bool:
    try:
        return bool(est.fourth_moment_available())
    except (AttributeError, NotImplementedError):
        return False


def witness_reliability(log_mse: np.ndarray, log_fourth: np.ndarray, trials: int, coupling: str, *,
                        unit: str = "trials", max_rel_stderr: float = TARGET_REL_STDERR) -> TheoryReport:
    """``theory_reliability`` of the iid witness (``iid_witness``) at the coupled estimator's pairs and trial count,
    with the warning said for the coupled estimator (why its sample is not trusted, in words).

    Parameters
    ----------
    log_mse, log_fourth : np.ndarray
        The *iid* estimator's closed-form log MSE and log E|K̂ − K|⁴ at the pairs.
    trials : int
        The coupled sample's trial count.
    coupling : str
        The coupled estimator's coupling (named in the warning).
    unit : str
        What a trial is called ("trials").
    max_rel_stderr : float
        The threshold of the rule (10 %).

    Returns
    -------
    TheoryReport
        ``reliable`` False where the witness objects (to be applied with ``vetoed``), ``trials_needed`` the iid
        estimator's.

    Examples
    --------
    >>> w = witness_reliability(np.log([1.0, 1.0]), np.log([3.0, np.inf]), 2000, "simplex")
    >>> w.reliable.tolist(), w.warning[1].split(":")[0]
    ([True, False], 'heavy-tailed here')
    """
    theory = theory_reliability(log_mse, log_fourth, trials, max_rel_stderr=max_rel_stderr)
    warning = np.full(theory.reliable.shape, None, dtype=object)
    for i in np.ndindex(theory.reliable.shape):
        if theory.reliable[i]:
            continue
        warning[i] = _witness_warning(float(theory.rel_stderr[i]), float(theory.trials_needed[i]), trials, coupling,
                                      unit, max_rel_stderr)
    return dataclasses.replace(theory, warning=warning)


def log_witness_stderr(log_mse: np.ndarray, witness_log_mse: np.ndarray, witness_log_fourth: np.ndarray, trials: int,
                       m: int) -> np.ndarray:
    """log of the standard error of a coupled estimator's sampled MSE that its iid witness predicts, for the z
    against the closed form (``z_against_closed_form`` takes the larger of it and the sampled one): −inf where it
    predicts nothing.

    Where the iid fourth moment is carried by single features — its single-feature term μ₄/m³ larger than its
    pair term 3(m − 1)μ₂²/m³, i.e. E|K̂ − K|⁴/MSE² > 6(m − 1)/m for the iid estimator (μ₂ = m·MSE,
    μ₄ = m³·E|K̂ − K|⁴ − 3(m − 1)m²·MSE²) — the argument of ``iid_witness`` says the coupled estimator's relative
    standard error is at least about the iid one: SE = rse_iid(N)·MSE_coupled. There a skewed sample that has not
    yet drawn its rare large values underestimates its own spread; the larger standard error keeps it from being
    called a disagreement (measured: ``bench/README.md``). Elsewhere (bounded trig features, light tails) the
    coupling may shrink the relative spread, and the sample's own standard error stands. It only ever enlarges the
    standard error of the z (fewer "disagrees"), never decides reliability.

    Parameters
    ----------
    log_mse : np.ndarray
        The coupled estimator's closed-form log MSE (what the z tests against).
    witness_log_mse, witness_log_fourth : np.ndarray
        The iid estimator's closed-form log MSE and log E|K̂ − K|⁴.
    trials : int
        The number of trials N.
    m : int
        The number of features.

    Returns
    -------
    np.ndarray
        log SE (−inf where the iid fourth moment is not carried by single features, or exact; +inf where infinite).

    Examples
    --------
    >>> float(np.exp(log_witness_stderr(np.log(0.5), np.log(1.0), np.log(101.0), 100, 16)))  # rse_iid = 1
    0.5
    >>> float(log_witness_stderr(np.log(0.5), np.log(1.0), np.log(3.0), 100, 16))  # a light tail: no prediction
    -inf
    """
    log_mse, lm, l4 = np.broadcast_arrays(*(np.asarray(a, float) for a in (log_mse, witness_log_mse,
                                                                          witness_log_fourth)))
    m = max(int(m), 1)
    with np.errstate(invalid="ignore"):
        single = (l4 - 2.0 * lm > math.log(6.0 * (m - 1) / m)) if m > 1 else np.ones(lm.shape, bool)
    rse = theory_reliability(lm, l4, trials).rel_stderr
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(single & np.isfinite(lm) & np.isfinite(log_mse), log_mse + np.log(rse), -np.inf)
    return np.where(single & np.isposinf(l4) & np.isfinite(log_mse), np.inf, out)


def vetoed(reliable: np.ndarray | bool, warning: np.ndarray | str | None, needed: np.ndarray | float,
           witness: TheoryReport | GramTheory, keep: np.ndarray | bool | None = None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A sample's own verdict (``reliable``, ``warning``, ``trials_needed``) after its iid witness
    (``witness_reliability``, ``gram_witness``). Where the witness objects:

    * a point the sample calls reliable becomes unreliable, with the witness's warning;
    * a point the sample already calls unreliable keeps its own reasons, and gets the witness's words after them
      where the witness asks for more trials than the sample's own (lower-bound) count;
    * ``trials_needed`` becomes the larger of the two counts.

    The witness never makes a point reliable, and points in ``keep`` (exact at round-off) are left alone.

    Examples
    --------
    >>> w = witness_reliability(np.log([1.0, 1.0]), np.log([3.0, np.inf]), 2000, "simplex")
    >>> r, _, n = vetoed(np.array([True, True]), np.array([None, None]), np.array([300.0, 400.0]), w)
    >>> r.tolist(), n.tolist()
    ([True, False], [300.0, inf])
    """
    w_rel = np.asarray(witness.reliable, bool)
    w_warn = np.asarray(witness.warning, dtype=object)
    w_need = np.asarray(witness.repeats_needed if isinstance(witness, GramTheory) else witness.trials_needed, float)
    rel = np.asarray(reliable, bool)
    shape = np.broadcast_shapes(rel.shape, w_rel.shape, np.shape(needed))
    rel, w_rel = np.broadcast_to(rel, shape), np.broadcast_to(w_rel, shape)
    w_warn, w_need = np.broadcast_to(w_warn, shape), np.broadcast_to(w_need, shape)
    own_warn = np.broadcast_to(np.asarray(warning, dtype=object), shape)
    own_need = np.broadcast_to(np.asarray(needed, float), shape)
    objects = ~w_rel if keep is None else ~w_rel & ~np.broadcast_to(np.asarray(keep, bool), shape)
    veto = rel & objects
    more = objects & ~rel & (w_need > own_need)
    out_warn = np.array(own_warn, dtype=object)
    for i in np.ndindex(shape):
        if not (veto[i] or more[i]):
            continue
        out_warn[i] = w_warn[i] if veto[i] or own_warn[i] is None else f"{own_warn[i]}; {w_warn[i]}"
    out_need = np.where(objects, np.fmax(own_need, w_need), own_need)
    return rel & ~veto, out_warn, out_need


def log_mse_stderr_theory(log_mse: np.ndarray, log_fourth: np.ndarray, trials: int) -> np.ndarray:
    """log of the standard error of a sampled MSE predicted by the closed forms: ½·log(Var|K̂ − K|²/N) with
    Var|K̂ − K|² = E|K̂ − K|⁴ − MSE² (+inf where the fourth moment is infinite, −inf where exact)."""
    from ..numerics import log_diff_exp

    log_mse, log_fourth = np.broadcast_arrays(np.asarray(log_mse, float), np.asarray(log_fourth, float))
    with np.errstate(invalid="ignore"):
        log_var = log_diff_exp(log_fourth, np.minimum(2.0 * log_mse, log_fourth))
    log_var = np.where(np.isposinf(log_fourth), np.inf, np.where(np.isneginf(log_fourth), -np.inf, log_var))
    return 0.5 * (log_var - math.log(max(int(trials), 1)))


def sweep_point_reliability(stderr: float | None, z: float | None, exact: bool) -> list[str]:
    """A sweep point's last reasons to be unreliable beyond its per-pair verdict: a standard error of 0 at a point
    that is not exact (the estimates do not vary: exact, or every estimate underflowed) and |z| >
    ``MAX_RELIABLE_Z`` against the closed form.

    Parameters
    ----------
    stderr : float or None
        The sampled MSE's standard error (None: unknown).
    z : float or None
        Its z against the closed form (None: none).
    exact : bool
        Every error 0 and a closed-form MSE of 0.

    Returns
    -------
    list of str
        The reasons, empty where none applies.

    Examples
    --------
    >>> sweep_point_reliability(0.0, None, False)[0].split(":")[0]
    'standard error 0'
    >>> sweep_point_reliability(1.0, 2e6, False)[0][:8], sweep_point_reliability(1.0, 3.0, False)
    ('|z| > 1e', [])
    """
    reasons = []
    if stderr == 0.0 and not exact:
        reasons.append("standard error 0: the estimates do not vary (exact, or every estimate underflowed)")
    if z is not None and not abs(z) <= MAX_RELIABLE_Z:
        reasons.append(f"|z| > {MAX_RELIABLE_Z:.0e} against the closed form (underflowed estimates or a tail the "
                       f"trials never reached)")
    return reasons
