"""The estimator lab: is a (new) estimator unbiased, and where does its MSE beat the known mechanisms?

``check_estimator`` runs one Monte-Carlo experiment over a grid of (r, θ) (canonical embedding of R^d) and reports:

* **bias**: at each point the z-score of the sampled mean of K̂ against the true kernel (MCResult.bias_z), its
  two-sided normal p-value, and Holm's step-down test over the grid (family-wise error ≤ α under any dependence
  between the points; the points share their random draws, so they are dependent). Verdict "bias detected" iff
  Holm rejects at least one point.
* **heavy tails**: the CLT behind a z-score needs trials ≫ the kurtosis κ of K̂ (positive RFs at large |x + y|
  are log-normal-like). κ is estimated from the engine's output (κ = 1 + n·SE(rel_mse)²/rel_mse²); points with
  κ > trials/100 are left out of the bias test (κ > trials/1000 for the closed-form test, which needs higher
  moments), and the report lists them with that reason.
* **closed form**: if the estimator gives one, the z-score of the sampled MSE against it on the grid and the extra
  pairs (one Holm family at α/100, each rejection confirmed on an independent 4× sample). "Agrees" needs at least
  MIN_CLOSED_FORM_POINTS tested non-exact points (exact points, 0 = 0 at round-off, test no formula); the report
  gives their number and the smallest detectable relative error (``detectable_error``).
* **MSE ratio map**: log10(MSE_candidate / MSE_builtin) against chosen built-ins with the same m and kernel
  (the built-ins' closed forms where they exist, Monte Carlo otherwise; the candidate's closed form only where it
  was tested and agreed, its sampled MSE elsewhere): negative where the candidate wins.
* **features**: finite, positive (real and > 0), bounded-looking (the largest |φ| does not grow with more
  samples), and consistent with ``estimate`` (Σ φ_query(x)·φ_key(y) = K̂(x, y)).

The summary verdict (``LabReport.verdict``, exit codes in EXIT_CODES) is "unbiased", "bias detected", "closed form
disagrees", "inconclusive" or "biased, as declared" (``unbiased = False``: exit 4, not 1); other findings are
warnings.

The package, one job per module: ``options`` (settings, defaults, the records the steps hand on), ``stats`` (the
lab's statistics; their thresholds are rules of ``rfviz.verdicts``), ``features`` (feature-map and reproducibility
checks, comparators), ``closed_form`` (step 4), ``pipeline`` (the steps, ``run_lab``, ``check_estimator``,
``check``), ``report`` (``LabReport``: findings, verdict, JSON) and ``text`` (its words).
"""

from __future__ import annotations

from ..verdicts import holm, two_sided_p  # re-exported: rfviz.lab.holm, rfviz.lab.two_sided_p
from ..verdicts.rules import (  # the lab's rules, re-exported where they were: rfviz.lab.MIN_CLOSED_FORM_POINTS, ...
    BIAS_KURTOSIS_FRACTION,
    CLOSED_FORM_ALPHA_FACTOR,
    CLOSED_FORM_KURTOSIS_FRACTION,
    CLOSED_FORM_KURTOSIS_FRACTION_THEORY,
    CONFIRM_TRIALS_FACTOR,
    DETERMINISTIC_REL,
    EXACT_REL_MSE_FLOAT32,
    FEATURE_GROWTH_TOLERANCE,
    MIN_CLOSED_FORM_POINTS,
    MIN_INFORMATIVE,
    TIE_LOG10,
)
from .closed_form import (
    closed_form_step,
    confirm_disagreements,
    confirmation_warnings,
)
from .feature_map import (
    FeatureMapEstimator,
    check_feature_map,
    check_feature_map_spec,
    feature_map_estimator,
    load_callable,
)
from .features import (
    REPRO_TRIALS,
    check_features,
    check_reproducible,
    comparator,
    declares_bias,
)
from .options import (
    ALPHA_PARAM,
    CONFIRM_KEY,
    DEFAULT_ALPHA,
    DEFAULT_COMPARE,
    DEFAULT_D,
    DEFAULT_R,
    DEFAULT_THETA,
    DEFAULT_TRIALS,
    EXIT_CODES,
    EXTRA_PAIRS,
    EXTRA_PAIRS_KEY,
    FEATURE_TRIALS,
    FEATURES_KEY,
    MAX_GRID_PAIRS,
    ORIENTATIONS_KEY,
    PAIR_KINDS,
    REPRODUCIBLE_KEY,
    ROTATIONS_KEY,
    ROTATIONS_PARAM,
    SHARED_PARAMS,
    UNEQUAL_RATIO,
    LabOptions,
)
from .pipeline import (
    bias_step,
    build_grid,
    check,
    check_estimator,
    comparisons_step,
    features_step,
    run_lab,
    sample_grid,
)
from .report import (
    Comparison,
    LabReport,
)
from .rotation import (
    haar_rotation,
    rotation_step,
    rotation_test,
)
from .stats import (
    bonferroni_z,
    closed_form_verdicts,
    closed_form_warnings,
    detectable_error,
    exact_points,
    exact_threshold,
    holm_over,
    kurtosis,
    lab_reliable,
)
from .text import (
    where_text,
)

__all__ = [
    "ALPHA_PARAM",
    "BIAS_KURTOSIS_FRACTION",
    "CLOSED_FORM_ALPHA_FACTOR",
    "CLOSED_FORM_KURTOSIS_FRACTION",
    "CLOSED_FORM_KURTOSIS_FRACTION_THEORY",
    "CONFIRM_KEY",
    "CONFIRM_TRIALS_FACTOR",
    "DEFAULT_ALPHA",
    "DEFAULT_COMPARE",
    "DEFAULT_D",
    "DEFAULT_R",
    "DEFAULT_THETA",
    "DEFAULT_TRIALS",
    "DETERMINISTIC_REL",
    "EXACT_REL_MSE_FLOAT32",
    "EXIT_CODES",
    "EXTRA_PAIRS",
    "EXTRA_PAIRS_KEY",
    "FEATURES_KEY",
    "FEATURE_GROWTH_TOLERANCE",
    "FEATURE_TRIALS",
    "MAX_GRID_PAIRS",
    "MIN_CLOSED_FORM_POINTS",
    "MIN_INFORMATIVE",
    "ORIENTATIONS_KEY",
    "PAIR_KINDS",
    "REPRODUCIBLE_KEY",
    "REPRO_TRIALS",
    "ROTATIONS_KEY",
    "ROTATIONS_PARAM",
    "SHARED_PARAMS",
    "TIE_LOG10",
    "UNEQUAL_RATIO",
    "Comparison",
    "FeatureMapEstimator",
    "LabOptions",
    "LabReport",
    "bias_step",
    "bonferroni_z",
    "build_grid",
    "check",
    "check_estimator",
    "check_feature_map",
    "check_feature_map_spec",
    "check_features",
    "check_reproducible",
    "closed_form_step",
    "closed_form_verdicts",
    "closed_form_warnings",
    "comparator",
    "comparisons_step",
    "confirm_disagreements",
    "confirmation_warnings",
    "declares_bias",
    "detectable_error",
    "exact_points",
    "exact_threshold",
    "feature_map_estimator",
    "features_step",
    "haar_rotation",
    "holm",
    "holm_over",
    "kurtosis",
    "lab_reliable",
    "load_callable",
    "rotation_step",
    "rotation_test",
    "run_lab",
    "sample_grid",
    "two_sided_p",
    "where_text",
]
