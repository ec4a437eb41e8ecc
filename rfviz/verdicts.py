"""One home for every verdict rfviz gives on a sampled MSE: exact at round-off, reliable, z, p, family-wise tests,
agreement, and the words that say what to do. Every face (``rfviz mse``/``rfviz.mse``, sweeps, ``rfviz gram``, the
explorer, the Your-data page, the lab) decides through these functions, so one point gets one verdict whichever door
it came in by. Pure numpy/scipy; imports nothing of rfviz but the bottom layer.

The rules, one each
-------------------
exact at round-off
    A relative MSE (MSE/K², or MSE over the run's scale e^{2s}) at or below ``roundoff_floor(d, m)`` is float64
    round-off of K̂ − K, for the closed form and the sample alike. A point where both are at or below the floor is
    *exact*: it is never tested, never a disagreement, never unreliable, and never sets a colour scale.
reliable
    Where the estimator has a closed-form fourth moment E|K̂ − K|⁴, theory decides (the predicted relative standard
    error of the sampled MSE at this trial count, ``theory_reliability``; for a Gram matrix the
    bound of ``gram_theory``); elsewhere the sample decides (``rfviz.diagnostics.assess_trials``/``assess_mse``:
    tail index, top share, relative standard error), except that a coupled estimator whose features are each those
    of the iid estimator has that estimator's fourth moment as a witness that may veto the sample (``iid_witness``,
    ``witness_reliability``/``gram_witness``, ``vetoed``). An unreliable point is never called a disagreement. A sample
    at round-off where the closed form is above it is unreliable too (``precision_loss``: underflow or cancellation
    in the features), never a disagreement.
z
    (sampled − closed form) / SE, with SE the larger of the sampled standard error and the one the fourth moment
    predicts (``z_against_closed_form``; for a coupled estimator the one its iid witness predicts where single
    features carry the tail, ``log_witness_stderr``): a heavy-ish tail underestimates its own spread in a finite
    sample.
p
    Two-sided normal p = 2Φ(−|z|) (``two_sided_p``).
family-wise
    Points shown or reported together are one family, tested at family-wise level ``FWER_LEVEL`` (1 %): Holm's
    step-down when the family is complete (``holm``, ``family_disagreements``), Bonferroni when rows are written as
    they finish (``bonferroni_disagrees``, a sweep). A single point is a family of one: |z| > 2.576.
agreement
    One word per point (``agreement``/``family_agreement``): ``"exact"`` (both at round-off), ``"unreliable"``,
    ``"disagrees"`` (the family-wise test rejects), ``"agrees"``, or ``None`` where nothing could be tested (no
    closed form, no finite z).
words
    Where no practical trial count pins a sampled MSE down (more than ``PRACTICAL_TRIALS`` trials needed for ±10 %,
    or an infinite fourth moment), the count is not printed as a number: ``trials_needed_text`` says so in words.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

FWER_LEVEL = 0.01
"""Family-wise error level of every "closed form and sampled MSE disagree" verdict (Holm or Bonferroni)."""

EPS = float(np.finfo(np.float64).eps)
"""float64 machine epsilon, 2.22e-16."""

ROUNDOFF_AMPLIFICATION = 16.0
"""Safety factor of ``roundoff_floor`` for the exponential's amplification of an argument's absolute round-off
(exp(a + δ) = e^a(1 + δ + …): a dot product ω·x of size |a| carries an absolute error ~|a|·γ_d) and for the
reductions' worst cases; 16 covers arguments up to |a| ≈ 15 with room to spare."""

PRACTICAL_TRIALS = 1e9
"""More trials than this (for ±10 % on a sampled MSE) is not a practical count: the verdict says so in words."""

TARGET_REL_STDERR = 0.1
"""The relative standard error a reliable sampled MSE must reach (±10 %)."""

EXACT, AGREES, DISAGREES, UNRELIABLE = "exact", "agrees", "disagrees", "unreliable"
"""The four agreement words (``None``: not tested)."""

PRECISION_LOSS = ("precision loss: every sampled estimate equals K to float64 round-off, but the closed-form MSE is "
                  "above round-off here")
"""Warning of a sample at round-off where the closed form is not (underflow or cancellation in the features)."""


def roundoff_floor(d: int, m: int = 1, eps: float = EPS) -> float:
    """The relative MSE (MSE/K²) at or below which a squared error is float64 round-off of K̂ − K.

    Derivation. A random-feature estimate is K̂ = (1/m)·Σᵢ tᵢ, each term tᵢ a product of exponentials (or cosines) of
    length-d dot products ω·x. In float64 (unit round-off u = eps/2, γ_n = n·u/(1 − n·u), Higham 2002 §3.1):

    * a dot product of length d has absolute error ≤ γ_d·Σ_k|ω_k x_k|; through exp (or cos) an argument error δ
      becomes a relative (absolute) error δ of the term, so each term carries a relative error ≤ A·γ_d + O(u) with
      A ≤ ``ROUNDOFF_AMPLIFICATION`` bounding 1 + Σ_k|ω_k x_k| for the arguments rfviz evaluates;
    * the sum of m terms adds γ_m·Σᵢ|tᵢ|, and the division by m and the final product with the scale a few u.

    With Σᵢ|tᵢ|/m of the order of the scale |K| (exactly |K̂| for positive features), |fl(K̂) − K̂| ≤ c·eps·|K| with
    c = A·(d + m + 8)/2 ≤ A·(d + m + 8), so the squared round-off error relative to K² is at most (c·eps)². The floor
    is that bound, (A·(d + m + 8)·eps)²: 1.5e-26 at d = 16, m = 10; 2.0e-23 at d = m = 1000. A closed form is held
    to the same floor, since its own evaluation carries the same relative error (log-space sums of d-term
    quantities).

    Parameters
    ----------
    d : int
        Input dimension.
    m : int
        Number of random features (1 where not known).
    eps : float
        Machine epsilon of the arithmetic (float64 by default; a float32 run passes its own).

    Returns
    -------
    float
        The floor on the relative MSE.

    Examples
    --------
    >>> f"{roundoff_floor(16, 10):.2g}"
    '1.5e-26'
    """
    c = ROUNDOFF_AMPLIFICATION * (max(int(d), 1) + max(int(m), 1) + 8)
    return (c * eps) ** 2


def exact_at_roundoff(closed_rel: np.ndarray | float | None, sampled_rel: np.ndarray | float | None,
                      floor: float) -> np.ndarray:
    """Where a point is exact at round-off: the closed form's and the sample's relative MSEs are both ≤ ``floor``
    (``roundoff_floor``); a missing one (None/NaN) counts as at the floor only if the other is. NaN-safe.

    Examples
    --------
    >>> exact_at_roundoff(np.array([0.0, 0.0, 1e-3]), np.array([1e-33, 1e-3, 1e-33]), 1e-26).tolist()
    [True, False, False]
    """
    c = np.asarray(np.nan if closed_rel is None else closed_rel, dtype=float)
    s = np.asarray(np.nan if sampled_rel is None else sampled_rel, dtype=float)
    c, s = np.broadcast_arrays(c, s)
    with np.errstate(invalid="ignore"):
        c_ok = np.where(np.isnan(c), True, c <= floor)
        s_ok = np.where(np.isnan(s), True, s <= floor)
        return c_ok & s_ok & ~(np.isnan(c) & np.isnan(s))




# ------------------------------------------------------- reliable: theory where fourth moments exist

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
    from .registries import COUPLINGS, IID

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


def _witness_warning(rse: float, needed: float, count: int, coupling: str, unit: str, max_rel_stderr: float,
                     bound: bool = False) -> str:
    """The words of a witness's veto (``witness_reliability``, ``gram_witness``)."""
    from .registries import COUPLINGS

    title = COUPLINGS[coupling].title if coupling in COUPLINGS else coupling
    own = (f"a coupling of such features keeps a single feature's tail, and the {title} coupling has no "
           "fourth-moment closed form of its own")
    noun = unit[:-1] if unit.endswith("s") else unit
    if math.isinf(rse):
        return (f"heavy-tailed here: its features are each distributed as the iid estimator's, whose fourth moment "
                f"E|K̂ − K|⁴ is infinite here, so no number of {unit} makes the sampled MSE informative; {own}; "
                "trust the closed form")
    what = (f"whose per-pair fourth moments cannot guarantee ±{max_rel_stderr:.0%} at {count:,} {unit} (their "
            f"bound on the relative standard error: {_percent(rse)})" if bound else
            f"whose fourth moment predicts a relative standard error of {_percent(rse)} at {count:,} {unit} "
            f"(> {max_rel_stderr:.0%})")
    if needed > PRACTICAL_TRIALS:
        return (f"heavy-tailed here: its features are each distributed as the iid estimator's, {what}; the sampled "
                f"MSE is not informative at any practical {noun} count (±10 % would need more than "
                f"{PRACTICAL_TRIALS:.0e} {unit} for the iid estimator); {own}; trust the closed form")
    return (f"too few {unit} for its tail: its features are each distributed as the iid estimator's, {what}; "
            f"±10 % needs ≈ {int(needed):,} {unit} for the iid estimator; {own}")


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
    from .numerics import log_diff_exp

    log_mse, log_fourth = np.broadcast_arrays(np.asarray(log_mse, float), np.asarray(log_fourth, float))
    with np.errstate(invalid="ignore"):
        log_var = log_diff_exp(log_fourth, np.minimum(2.0 * log_mse, log_fourth))
    log_var = np.where(np.isposinf(log_fourth), np.inf, np.where(np.isneginf(log_fourth), -np.inf, log_var))
    return 0.5 * (log_var - math.log(max(int(trials), 1)))


def fwer_threshold_text(alpha: float = FWER_LEVEL) -> str:
    """How a disagreement is decided, in words (for the UI, the CLI and the README)."""
    return (f"Holm's step-down test over the reliable points at family-wise level {alpha:g} (two-sided z of the "
            "sampled MSE against the closed form)")


def precision_loss(closed_rel: np.ndarray | float | None, sampled_rel: np.ndarray | float, floor: float) -> np.ndarray:
    """Where the sample sits at round-off (relative MSE ≤ ``floor``) but the closed form is above it: every estimate
    equals K to the last bits where the estimator is not exact (underflow or cancellation in the features). Such a
    sample is unreliable (``PRECISION_LOSS``), never a disagreement. False where the closed form is missing.

    Examples
    --------
    >>> precision_loss(np.array([1e-3, 0.0, 1e-3]), np.array([0.0, 0.0, 1e-3]), 1e-26).tolist()
    [True, False, False]
    """
    c = np.asarray(np.nan if closed_rel is None else closed_rel, dtype=float)
    s = np.asarray(sampled_rel, dtype=float)
    with np.errstate(invalid="ignore"):
        return (s <= floor) & (c > floor)


# ------------------------------------------------------------------------------------------- z and p-values

def z_against_closed_form(sampled: np.ndarray | float, closed: np.ndarray | float, stderr: np.ndarray | float,
                          stderr_theory: np.ndarray | float | None = None) -> np.ndarray:
    """(sampled − closed) / SE with SE the larger of the sampled ``stderr`` and the predicted ``stderr_theory``
    (NaN where the prediction is unknown). Same units for all four; ±inf where SE is 0 and they differ.

    Examples
    --------
    >>> z_against_closed_form(1.1, 1.0, 0.01, 0.05).round(6).tolist()
    2.0
    """
    se = np.asarray(stderr, dtype=float)
    if stderr_theory is not None:
        theory = np.asarray(stderr_theory, dtype=float)
        se = np.where(np.isnan(theory), se, np.fmax(se, theory))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return (np.asarray(sampled, dtype=float) - np.asarray(closed, dtype=float)) / se


def two_sided_p(z: np.ndarray | float) -> np.ndarray:
    """Two-sided normal p-values 2·Φ(−|z|) (NaN stays NaN).

    Examples
    --------
    >>> float(two_sided_p(0.0))
    1.0
    """
    from scipy.special import ndtr

    return 2.0 * ndtr(-np.abs(np.asarray(z, dtype=float)))


def holm(pvalues: np.ndarray, alpha: float = FWER_LEVEL) -> np.ndarray:
    """Holm's step-down rejections at family-wise level ``alpha`` (Holm 1979): sort the m p-values, reject
    p₍ᵢ₎ while p₍ᵢ₎ ≤ alpha/(m − i + 1). NaN p-values are not tested (and do not count in m).

    Examples
    --------
    >>> holm(np.array([0.001, 0.2, 0.004, np.nan]), alpha=0.01).tolist()
    [True, False, True, False]
    """
    p = np.asarray(pvalues, dtype=float)
    flat = p.ravel()
    tested = np.flatnonzero(np.isfinite(flat))
    reject = np.zeros(flat.shape, bool)
    order = tested[np.argsort(flat[tested], kind="stable")]
    m = len(order)
    for rank, idx in enumerate(order):
        if flat[idx] > alpha / (m - rank):
            break
        reject[idx] = True
    return reject.reshape(p.shape)


def family_disagreements(z: np.ndarray, reliable: np.ndarray | None = None, exact: np.ndarray | None = None,
                         alpha: float = FWER_LEVEL) -> np.ndarray:
    """Points where the closed form and the sampled MSE disagree, family-wise error held at ``alpha`` over all the
    points given: Holm over the two-sided p-values of the reliable, non-exact points with a finite z.

    Examples
    --------
    >>> family_disagreements(np.array([0.5, 6.0, -4.0, 9.0]), np.array([True, True, True, False])).tolist()
    [False, True, True, False]
    """
    z = np.asarray(z, dtype=float)
    ok = _tested(z, reliable, exact)
    p = np.where(ok, two_sided_p(np.where(ok, z, 0.0)), np.nan)
    return holm(p, alpha)


def bonferroni_disagrees(z: float | None, reliable: bool, family_size: int, alpha: float = FWER_LEVEL,
                         exact: bool = False) -> bool:
    """One point of a streamed family (a sweep writes rows as they finish, before the family is complete):
    disagrees when it is reliable, not exact, and p ≤ alpha/family_size (family-wise error ≤ alpha, like Holm's
    first step).

    Examples
    --------
    >>> bonferroni_disagrees(4.0, True, 10), bonferroni_disagrees(4.0, True, 10, exact=True)
    (True, False)
    """
    if exact or z is None or not math.isfinite(z) or not reliable:
        return False
    return bool(two_sided_p(z) <= alpha / max(int(family_size), 1))


def _tested(z: np.ndarray, reliable: np.ndarray | None, exact: np.ndarray | None) -> np.ndarray:
    ok = np.isfinite(z)
    if reliable is not None:
        ok &= np.asarray(reliable, bool)
    if exact is not None:
        ok &= ~np.asarray(exact, bool)
    return ok


def family_agreement(z: Sequence[float | None] | np.ndarray, reliable: Sequence[bool | None] | np.ndarray,
                     exact: Sequence[bool] | np.ndarray | None = None,
                     alpha: float = FWER_LEVEL) -> list[str | None]:
    """The agreement word of every point of one family (a table, a grid): ``"exact"`` where ``exact``,
    ``"unreliable"`` where ``reliable`` is False, ``None`` where z is missing or not finite, else ``"disagrees"``
    where Holm at ``alpha`` over the tested points rejects and ``"agrees"`` otherwise.

    Examples
    --------
    >>> family_agreement([0.5, 9.0, None, 30.0, 1e9], [True, True, True, False, True], [0, 0, 0, 0, 1])
    ['agrees', 'disagrees', None, 'unreliable', 'exact']
    >>> family_agreement(np.array([30.0]), np.array([False]))  # numpy bools read as bools
    ['unreliable']
    """
    zz = np.array([np.nan if v is None else float(v) for v in z], dtype=float)
    rel = np.array([r is None or bool(r) for r in reliable], bool)  # None (not sampled) is not "unreliable"
    ex = np.zeros(zz.shape, bool) if exact is None else np.asarray(exact, bool).reshape(zz.shape)
    bad = family_disagreements(zz, rel, ex, alpha)
    words: list[str | None] = []
    for i in range(len(zz)):
        if ex[i]:
            words.append(EXACT)
        elif not rel[i]:
            words.append(UNRELIABLE)
        elif not np.isfinite(zz[i]):
            words.append(None)
        else:
            words.append(DISAGREES if bad[i] else AGREES)
    return words


def agreement(z: float | None, reliable: bool, exact: bool = False, alpha: float = FWER_LEVEL) -> str | None:
    """The agreement word of a single point (a family of one): see ``family_agreement``.

    Examples
    --------
    >>> agreement(2.0, True), agreement(3.0, True), agreement(30.0, False), agreement(1e9, True, exact=True)
    ('agrees', 'disagrees', 'unreliable', 'exact')
    """
    return family_agreement([z], [reliable], [exact], alpha)[0]


# ------------------------------------------------------------------------------------------------- words

def trials_needed_text(needed: float, trials: int, unit: str = "trials") -> str:
    """What it takes to pin a sampled MSE down to ±10 %, in words a person can act on: the count where it is
    practical (≤ ``PRACTICAL_TRIALS``), else that the sample is not informative and the closed form is the answer.
    Empty where unknown (NaN).

    Examples
    --------
    >>> trials_needed_text(3.1e28, 2000).split(":")[0], "1e+09" in trials_needed_text(3.1e28, 2000)
    ('heavy-tailed here', True)
    >>> trials_needed_text(5000, 2000)
    '±10 % needs ≈ 5,000 trials (now 2,000)'
    """
    if needed is None or math.isnan(needed):
        return ""
    noun = unit[:-1] if unit.endswith("s") else unit
    if math.isinf(needed):
        return (f"heavy-tailed here: no number of {unit} makes the sampled MSE informative (infinite fourth moment, "
                "or precision loss); trust the closed form")
    if needed > PRACTICAL_TRIALS:
        return (f"heavy-tailed here: the sampled MSE is not informative at any practical {noun} count (±10 % would "
                f"need more than {PRACTICAL_TRIALS:.0e} {unit}); trust the closed form")
    if needed <= trials:
        return f"{int(trials):,} {unit} give ±10 % or better"
    return f"±10 % needs ≈ {int(needed):,} {unit} (now {int(trials):,})"


def practical_count(needed: float) -> int | None:
    """``needed`` as an int for JSON, None where it is not a practical count (inf, NaN or > ``PRACTICAL_TRIALS``:
    the words of ``trials_needed_text`` say why).

    Examples
    --------
    >>> practical_count(1200.0), practical_count(3e28), practical_count(float("inf"))
    (1200, None, None)
    """
    return int(needed) if math.isfinite(needed) and needed <= PRACTICAL_TRIALS else None


# ------------------------------------------------------------------------------- Gram errors from theory

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


def _percent(fraction: float) -> str:
    """``fraction`` as a percentage readable at any size (12%, 3.4e+05%, inf%)."""
    return f"{fraction:.0%}" if fraction < 100 else f"{100 * fraction:.3g}%"


# ------------------------------------------------------------------------------ one point of ``rfviz mse``



def _num(v: float) -> float | None:
    return float(v) if math.isfinite(float(v)) else None


def sampled_verdict(res: Any, log_mse: float | None, n_pairs: int, floor: float) -> dict[str, Any]:
    """The ``mc`` object of ``rfviz mse --json`` from an engine result ``res`` (``rfviz.engine.MCResult``, read by
    attribute) over ``n_pairs`` pairs (an averaging embedding: the mean MSE over the pairs) and the closed-form
    ``log_mse`` (None: none), with every verdict decided by the rules of this module:

    * exact at round-off: closed form and sample both ≤ ``floor`` relative to K² → agreement ``"exact"``, no z;
    * a sample at round-off where the closed form is above it is unreliable (``PRECISION_LOSS``);
    * reliable: the engine's per-pair verdict (theory where fourth moments exist, the sample otherwise);
    * z: ``z_against_closed_form`` (one pair: the larger of the sampled and the predicted standard error);
    * agreement: a family of one at ``FWER_LEVEL`` (``agreement``); ``trials_needed`` is null where it is not a
      practical count, and the warning then says so in words (``trials_needed_text``).

    Examples
    --------
    >>> import rfviz
    >>> rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10, trials=2000, seed=0).mc.agreement
    'agrees'
    """
    if n_pairs > 1:
        return _pairs_verdict(res, log_mse, n_pairs, floor)
    rel, scale = float(res.rel_mse[0]), float(res.log_scale[0])
    closed_rel = math.nan if log_mse is None else math.exp(min(log_mse - 2.0 * scale, 700.0))
    exact = bool(exact_at_roundoff(closed_rel, rel, floor)) and log_mse is not None
    reliable, warning = bool(res.reliable[0]), res.warning[0]
    if log_mse is not None and precision_loss(closed_rel, rel, floor).item():
        reliable, warning = False, PRECISION_LOSS
    needed = float(res.trials_needed[0])
    if not reliable and needed > PRACTICAL_TRIALS and "practical" not in str(warning) and "no number" not in str(
            warning):
        warning = f"{warning}; {trials_needed_text(needed, res.trials)}"
    bias_z = float(res.bias_z[0])
    out = {"mse": float(res.mse[0]), "stderr": float(res.mse_stderr[0]),
           "log10_mse": float(res.log10_mse[0]) if rel > 0 else None, "mean": float(res.mean[0]),
           "bias_z": _num(bias_z), "trials": res.trials, "device": res.device, "reliable": reliable,
           "warning": warning, "trials_needed": practical_count(needed), "tail_index": _num(res.tail_index[0])}
    if log_mse is not None:
        z = None if exact else _num(float(res.z_against(np.array([log_mse]))[0]))
        out["z_vs_closed_form"] = z
        out["agreement"] = agreement(z, reliable, exact)
    return out


def _pairs_verdict(res: Any, log_mse: float | None, n_pairs: int, floor: float) -> dict[str, Any]:
    """``sampled_verdict`` over a stack of pairs: the mean MSE, its standard error √(Σ SE²)/P, reliable only if
    every pair is, exact only if every pair's sample and the mean closed form are at round-off."""
    mse, stderr = float(np.mean(res.mse)), float(np.sqrt(np.sum(res.mse_stderr**2)) / n_pairs)
    warnings = [str(w) for w in np.ravel(res.warning) if w is not None]
    out: dict[str, Any] = {
        "mse": mse, "stderr": stderr, "log10_mse": math.log10(mse) if mse > 0 else None,
        "mean": float(np.mean(res.mean)), "trials": res.trials * n_pairs, "pairs": n_pairs, "device": res.device,
        "reliable": res.all_reliable,
        "warning": f"{len(warnings)} of {n_pairs} pairs unreliable: {warnings[0]}" if warnings else None}
    if log_mse is None:
        return out
    scale = float(np.max(res.log_scale))
    exact = bool(exact_at_roundoff(math.exp(min(log_mse - 2.0 * scale, 700.0)), float(np.max(res.rel_mse)), floor))
    z = None
    if not exact and stderr > 0 and log_mse < 709:
        z = _num(float(z_against_closed_form(mse, math.exp(log_mse), stderr)))
    if z is not None or exact:
        out["z_vs_closed_form"] = z
        out["agreement"] = agreement(z, res.all_reliable, exact)
    return out


def outcome_text(counts: dict[str, int], trials: int) -> str:
    """One line saying what was sampled and with which outcome, from the counts of the agreement words (keys
    ``agrees``, ``disagrees``, ``unreliable``, ``exact``, ``untested``; they add up to the points sampled).

    Examples
    --------
    >>> outcome_text({"agrees": 40, "disagrees": 0, "unreliable": 5, "exact": 4, "untested": 0}, 2000)[:55]
    '49 points sampled at 2,000 trials: 40 agree with the cl'
    """
    total = sum(counts.values())
    parts = [f"{counts.get('agrees', 0)} agree with the closed form"]
    labels = (("disagrees", "disagree (Holm, 1 % family-wise)"), ("unreliable", "unreliable (heavy-tailed)"),
              ("exact", "exact at round-off"), ("untested", "not tested (no closed form)"))
    parts += [f"{counts[k]} {label}" for k, label in labels if counts.get(k)]
    return f"{total} points sampled at {int(trials):,} trials: " + ", ".join(parts)
