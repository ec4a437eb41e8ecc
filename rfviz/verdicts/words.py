"""The words of the verdicts: the agreement words, the warnings and the sentences every face shows (the CLI, the
API, the app's pages). A face reads its verdict words from here; it writes none of its own."""

from __future__ import annotations

import math

from .rules import FWER_LEVEL, PRACTICAL_TRIALS

EXACT, AGREES, DISAGREES, UNRELIABLE = "exact", "agrees", "disagrees", "unreliable"
"""The four agreement words (``None``: not tested)."""

PRECISION_LOSS = ("precision loss: every sampled estimate equals K to float64 round-off, but the closed-form MSE is "
                  "above round-off here")
"""Warning of a sample at round-off where the closed form is not (underflow or cancellation in the features)."""


def closed_form_word(agrees: bool | None, tested: bool) -> str:
    """The lab's closed-form verdict in one word or phrase (the lab page's metric, ``LabReport.closed_form_text``).

    Parameters
    ----------
    agrees : bool or None
        ``LabReport.closed_form_agrees``: True, False, or None where not tested enough or none was given.
    tested : bool
        Whether a closed form was given and tested at all.

    Returns
    -------
    str
        ``"agrees"``, ``"DISAGREES"``, ``"not tested enough"`` or ``"none given"``.

    Examples
    --------
    >>> closed_form_word(True, True), closed_form_word(False, True), closed_form_word(None, True)
    ('agrees', 'DISAGREES', 'not tested enough')
    >>> closed_form_word(None, False)
    'none given'
    """
    if agrees is not None:
        return AGREES if agrees else DISAGREES.upper()
    return "not tested enough" if tested else "none given"


def fwer_threshold_text(alpha: float = FWER_LEVEL) -> str:
    """How a disagreement is decided, in words (for the UI, the CLI and the README)."""
    return (f"Holm's step-down test over the reliable points at family-wise level {alpha:g} (two-sided z of the "
            "sampled MSE against the closed form)")


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


def _percent(fraction: float) -> str:
    """``fraction`` as a percentage readable at any size (12%, 3.4e+05%, inf%)."""
    return f"{fraction:.0%}" if fraction < 100 else f"{100 * fraction:.3g}%"


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


def _witness_warning(rse: float, needed: float, count: int, coupling: str, unit: str, max_rel_stderr: float,
                     bound: bool = False) -> str:
    """The words of a witness's veto (``witness_reliability``, ``gram_witness``)."""
    from ..registries import COUPLINGS

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
