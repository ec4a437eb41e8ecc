"""One home for every verdict rfviz gives on a sampled MSE: exact at round-off, reliable, z, p, family-wise tests,
agreement, and the words that say what to do. Every face (``rfviz mse``/``rfviz.mse``, sweeps, ``rfviz gram``, the
explorer, the Your-data page, the lab) decides through these functions, so one point gets one verdict whichever door
it came in by. Pure numpy/scipy; imports nothing of rfviz but the bottom layer.

The package, by job: ``rules`` (every number a verdict uses — levels, gates, floors — with the round-off rules
that turn them into exact/precision-loss masks), ``reliability`` (theory-decided reliability, the iid witness),
``stats`` (z, p, Holm/Bonferroni, agreement, the ``rfviz mse`` verdict), ``gram`` (the Gram-error theory),
``decision`` (a decision's verdicts: which MSE a ratio map may use, trial-count advice only where a count can work,
crowning a ranking's leader) and ``words`` (the English every face shows). Other modules read their thresholds from here
(``tests/verdicts/test_verdict_rules_home.py`` fails on a verdict-threshold literal anywhere else).

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
    sample. Where the SE comes from the sample alone and the values' skewness is known (a Gram matrix's repeats, a
    decision's confirmation), z is Hall's skewness-corrected one (``skew_corrected_z``): a right-skewed mean
    estimated with its own SE otherwise falls below the truth at 3× the stated rate.
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

from .decision import (
    CLOSED_FORM,
    NO_TRIAL_COUNT,
    SAMPLED,
    UNKNOWN_HEAVY_TAIL,
    RatioMap,
    TrialAdvice,
    crown_order,
    crowned,
    known_log_mse,
    points_trial_advice,
    ratio_map,
    trial_advice,
)
from .gram import (
    GramTheory,
    gram_theory,
    gram_witness,
)
from .reliability import (
    TheoryReport,
    iid_witness,
    log_mse_stderr_theory,
    log_witness_stderr,
    sweep_point_reliability,
    theory_reliability,
    vetoed,
    with_theory,
    witness_reliability,
)
from .rules import (
    BIAS_KURTOSIS_FRACTION,
    CLOSED_FORM_ALPHA_FACTOR,
    CLOSED_FORM_KURTOSIS_FRACTION,
    CLOSED_FORM_KURTOSIS_FRACTION_THEORY,
    CONFIRM_TRIALS_FACTOR,
    DETERMINISTIC_MATCH_REL,
    DETERMINISTIC_REL,
    EPS,
    EXACT_REL_MSE_FLOAT32,
    FEATURE_CONSISTENCY_REL,
    FEATURE_GROWTH_TOLERANCE,
    FWER_LEVEL,
    GRAM_MIN_REPEATS,
    GRAM_RELIABLE_BLOCKS,
    HEAVY_TAIL_KURTOSIS,
    HILL_Z,
    LAB_ALPHA,
    MAX_PART_SHARE,
    MAX_RELIABLE_Z,
    MAX_TOP_SHARE,
    MIN_CLOSED_FORM_POINTS,
    MIN_INFORMATIVE,
    MIN_PARTS,
    MIN_TAIL_INDEX,
    MIN_TAIL_TRIALS,
    PRACTICAL_TRIALS,
    ROUNDOFF_AMPLIFICATION,
    TARGET_REL_STDERR,
    TIE_LOG10,
    TOP_SHARE_FACTOR,
    TOP_SHARE_MIN_RATIO,
    exact_at_roundoff,
    precision_loss,
    roundoff_floor,
)
from .stats import (
    agreement,
    bonferroni_disagrees,
    family_agreement,
    family_disagreements,
    holm,
    sample_skewness,
    sampled_verdict,
    skew_corrected_z,
    two_sided_p,
    z_against_closed_form,
)
from .words import (
    AGREES,
    DISAGREES,
    EXACT,
    PRECISION_LOSS,
    UNRELIABLE,
    closed_form_word,
    fwer_threshold_text,
    outcome_text,
    practical_count,
    trials_needed_text,
)

__all__ = [
    "AGREES",
    "BIAS_KURTOSIS_FRACTION",
    "CLOSED_FORM",
    "CLOSED_FORM_ALPHA_FACTOR",
    "CLOSED_FORM_KURTOSIS_FRACTION",
    "CLOSED_FORM_KURTOSIS_FRACTION_THEORY",
    "CONFIRM_TRIALS_FACTOR",
    "DETERMINISTIC_MATCH_REL",
    "DETERMINISTIC_REL",
    "DISAGREES",
    "EPS",
    "EXACT",
    "EXACT_REL_MSE_FLOAT32",
    "FEATURE_CONSISTENCY_REL",
    "FEATURE_GROWTH_TOLERANCE",
    "FWER_LEVEL",
    "GRAM_MIN_REPEATS",
    "GRAM_RELIABLE_BLOCKS",
    "HEAVY_TAIL_KURTOSIS",
    "HILL_Z",
    "LAB_ALPHA",
    "MAX_PART_SHARE",
    "MAX_RELIABLE_Z",
    "MAX_TOP_SHARE",
    "MIN_CLOSED_FORM_POINTS",
    "MIN_INFORMATIVE",
    "MIN_PARTS",
    "MIN_TAIL_INDEX",
    "MIN_TAIL_TRIALS",
    "NO_TRIAL_COUNT",
    "PRACTICAL_TRIALS",
    "PRECISION_LOSS",
    "ROUNDOFF_AMPLIFICATION",
    "SAMPLED",
    "TARGET_REL_STDERR",
    "TIE_LOG10",
    "TOP_SHARE_FACTOR",
    "TOP_SHARE_MIN_RATIO",
    "UNKNOWN_HEAVY_TAIL",
    "UNRELIABLE",
    "GramTheory",
    "RatioMap",
    "TheoryReport",
    "TrialAdvice",
    "agreement",
    "bonferroni_disagrees",
    "closed_form_word",
    "crown_order",
    "crowned",
    "exact_at_roundoff",
    "family_agreement",
    "family_disagreements",
    "fwer_threshold_text",
    "gram_theory",
    "gram_witness",
    "holm",
    "iid_witness",
    "known_log_mse",
    "log_mse_stderr_theory",
    "log_witness_stderr",
    "outcome_text",
    "points_trial_advice",
    "practical_count",
    "precision_loss",
    "ratio_map",
    "roundoff_floor",
    "sample_skewness",
    "sampled_verdict",
    "skew_corrected_z",
    "sweep_point_reliability",
    "theory_reliability",
    "trial_advice",
    "trials_needed_text",
    "two_sided_p",
    "vetoed",
    "with_theory",
    "witness_reliability",
    "z_against_closed_form",
]
