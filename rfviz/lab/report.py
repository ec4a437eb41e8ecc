"""The lab's report: ``LabReport`` (the findings, the verdict and exit code that follow from them, the JSON of
``rfviz check --json``) and ``Comparison``; its words are in ``rfviz.lab.text``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..verdicts.rules import (  # the lab's rules, with their reasons, live in the verdict module
    CLOSED_FORM_ALPHA_FACTOR,
    CONFIRM_TRIALS_FACTOR,
    MIN_CLOSED_FORM_POINTS,
    MIN_INFORMATIVE,
    UNEQUAL_POWER_TARGET,
)
from . import text
from .options import EXIT_CODES
from .stats import bonferroni_z


@dataclass
class Comparison:
    """MSE of the candidate relative to one built-in: log10 ratio per grid point (< 0: the candidate wins)."""

    name: str
    params: dict[str, Any]
    source: str  # "closed form" or "monte carlo"
    log10_ratio: np.ndarray
    wins: int
    losses: int
    ties: int
    unknown: int = 0  # cells where either MSE is unknown (heavy tail): no win, no loss


@dataclass
class LabReport:
    """Everything the lab found; grids are (len(r), len(theta)) arrays (rows r, columns θ)."""

    estimator: str
    title: str
    params: dict[str, Any]
    kernel: str
    d: int
    trials: int
    seed: int
    alpha: float
    r: np.ndarray
    theta: np.ndarray
    bias_z: np.ndarray
    bias_p: np.ndarray
    kurtosis: np.ndarray
    bias_tested: np.ndarray
    bias_rejected: np.ndarray
    log10_mse: np.ndarray
    mse_source: str
    closed_form_z: np.ndarray | None = None
    closed_form_tested: np.ndarray | None = None
    closed_form_rejected: np.ndarray | None = None
    closed_form_error: str | None = None
    comparisons: list[Comparison] = field(default_factory=list)
    skipped_comparisons: dict[str, str] = field(default_factory=dict)
    features: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    declared_biased: bool = False
    informative: np.ndarray | None = None
    """Points that inform the verdict: tested, not exact, with a reliable sampled MSE."""
    deterministic_wrong: np.ndarray | None = None
    """Points where every trial gave the same K̂ and it is not the kernel."""
    exact: np.ndarray | None = None
    """Points where every trial equals the kernel up to round-off."""
    extra_pairs: list[dict[str, Any]] = field(default_factory=list)
    """Pairs beyond the grid (``pairs`` random / unequal), each with its kind, ``|x|``, ``|y|``, θ, bias z, tested,
    rejected and reliable; they share the grid's Holm family."""
    closed_form_confirmation: list[dict[str, Any]] = field(default_factory=list)
    """Points (grid and extra pairs) the first sample's closed-form test rejected, re-tested on an independent
    sample with CONFIRM_TRIALS_FACTOR × the trials (``confirm_disagreements``): only confirmed points count."""
    closed_form_nonexact_tested: int = 0
    """Points (grid and extra pairs) where the closed form was tested and the sample is not exact: only these test
    a formula (at an exact point closed form and sample are both 0 at round-off)."""
    closed_form_exact_tested: int = 0
    """Exact points in the closed-form test (both 0 at round-off): they count in the Holm family, not as evidence."""
    closed_form_detectable: float | None = None
    """Smallest relative error of the closed form detected with power ≈ 1/2 at these trials (``detectable_error``);
    None when no non-exact point was tested."""
    closed_form_unequal_detectable: float | None = None
    """Smallest relative closed-form error detectable (power ≈ 1/2) at the ``|x| ≠ |y|`` pairs alone; None when none
    was tested."""
    closed_form_unequal_trials: int | None = None
    """The ``trials`` at which that error would be UNEQUAL_POWER_TARGET, when it is larger at these trials."""
    rotation: dict[str, Any] | None = None
    """The rotation test (``rfviz.lab.rotation.rotation_step``): ``ran``, and per grid point (flattened, r-major)
    q, p, tested, rejected, with ``direction_dependent``."""
    closed_form_used: np.ndarray | None = None
    """Grid points where the MSE map (``log10_mse``, the comparisons) uses the closed form: tested there and
    rejected nowhere; the sampled MSE elsewhere."""

    @property
    def biased(self) -> bool:
        """Bias found (Holm rejects E[K̂] = K somewhere), declared or not."""
        return (bool(self.bias_rejected.any()) or any(p["rejected"] for p in self.extra_pairs)
                or self.direction_dependent)

    @property
    def direction_dependent(self) -> bool:
        """The rotation test rejects: the mean of K̂ differs between directions with the same kernel value."""
        return bool(self.rotation and self.rotation.get("direction_dependent"))

    @property
    def n_informative(self) -> int:
        grid = int(self.informative.sum()) if self.informative is not None else int(self.bias_tested.sum())
        return grid + sum(bool(p["informative"]) for p in self.extra_pairs)

    def bias_unreliable(self) -> np.ndarray:
        """Grid mask of the tested, non-exact points whose sampled MSE is unreliable: not informative."""
        tested = np.asarray(self.bias_tested, bool)
        if self.informative is None:
            return np.zeros(tested.shape, bool)
        exact = np.zeros(tested.shape, bool) if self.exact is None else np.asarray(self.exact, bool)
        det = np.zeros(tested.shape, bool) if self.deterministic_wrong is None else self.deterministic_wrong
        return tested & ~exact & ~np.asarray(self.informative, bool) & ~det

    @property
    def bias_counts(self) -> dict[str, int]:
        """Grid points by their part in the bias test, the numbers the text, the JSON and the bias map all show:
        ``left_out`` (heavy-tailed or infinite variance: not tested), ``exact`` (tested, 0 at round-off),
        ``unreliable`` (tested, not exact, sampled MSE unreliable: not informative), ``informative``, ``rejected``."""
        tested = np.asarray(self.bias_tested, bool)
        exact = np.zeros(tested.shape, bool) if self.exact is None else np.asarray(self.exact, bool) & tested
        informative = tested & ~exact if self.informative is None else np.asarray(self.informative, bool)
        return {"points": int(tested.size), "tested": int(tested.sum()), "left_out": int((~tested).sum()),
                "exact": int(exact.sum()), "unreliable": int(self.bias_unreliable().sum()),
                "informative": int(informative.sum()), "rejected": int(np.asarray(self.bias_rejected).sum())}

    @property
    def inconclusive(self) -> bool:
        """Neither bias nor a broken closed form found, and too few informative points to call it unbiased."""
        return not self.biased and self.closed_form_agrees is not False and self.n_informative < MIN_INFORMATIVE

    @property
    def verdict(self) -> str:
        """The lab's answer: ``unbiased``, ``bias detected``, ``closed form disagrees``, ``biased, as declared`` or
        ``inconclusive``."""
        if self.biased and not self.declared_biased:
            return "bias detected"
        if self.closed_form_agrees is False:
            return "closed form disagrees"
        if self.biased:
            return "biased, as declared"
        return "inconclusive" if self.inconclusive else "unbiased"

    @property
    def exit_code(self) -> int:
        """CLI exit code (EXIT_CODES): 0 unbiased (≥ MIN_INFORMATIVE informative points); 1 bias detected in an
        estimator that does not declare it, or the closed form disagrees with the estimator's own Monte Carlo;
        3 inconclusive; 4 biased as the estimator declares (``unbiased = False``) and its closed form does not
        disagree (2, bad input or a broken plugin, is raised by the CLI)."""
        return EXIT_CODES[self.verdict]

    @property
    def z_critical(self) -> float:
        return bonferroni_z(self.alpha, int(self.bias_tested.sum()) + sum(bool(p["tested"]) for p in self.extra_pairs))

    @property
    def closed_form_any_rejected(self) -> bool:
        """Some grid point or extra pair rejects the closed form (confirmed), or it is deterministically wrong."""
        grid = self.closed_form_rejected is not None and bool(np.asarray(self.closed_form_rejected).any())
        return grid or any(p.get("cf_rejected", False) for p in self.extra_pairs)

    @property
    def closed_form_agrees(self) -> bool | None:
        """False when the closed form failed or is rejected anywhere; True only when nothing is rejected at
        ≥ MIN_CLOSED_FORM_POINTS tested non-exact points; None otherwise (none given, or too little tested:
        exact points, where closed form and sample are both 0, say nothing about a formula)."""
        if self.closed_form_error is not None:
            return False
        if self.closed_form_rejected is None:
            return None
        if self.closed_form_any_rejected:
            return False
        return None if self.closed_form_nonexact_tested < MIN_CLOSED_FORM_POINTS else True

    def closed_form_text(self) -> str:
        """The closed-form verdict in words (``rfviz.lab.text.closed_form_text``)."""
        return text.closed_form_text(self)

    def summary(self) -> str:
        """One sentence: the verdict and why (``rfviz.lab.text.summary_text``).

        Returns
        -------
        str
            The sentence the CLI and the lab page show first.
        """
        return text.summary_text(self)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict: what ``rfviz check --json`` prints.

        Returns
        -------
        dict
            Plain numbers, strings, lists and None (non-finite floats become null).
        """
        out: dict[str, Any] = {
            "estimator": self.estimator,
            "title": self.title,
            "params": self.params,
            "kernel": self.kernel,
            "d": self.d,
            "trials": self.trials,
            "seed": self.seed,
            "alpha": self.alpha,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "informative_points": self.n_informative,
            "min_informative_points": MIN_INFORMATIVE,
            "exit_codes": EXIT_CODES,
            "summary": self.summary(),
            "grid": {"r": self.r, "theta": self.theta, "layout": "rows r, columns theta"},
            "bias": {
                "z": self.bias_z,
                "p": self.bias_p,
                "tested": self.bias_tested,
                "rejected": self.bias_rejected,
                "kurtosis": self.kurtosis,
                "method": "two-sided z of the mean, Holm step-down over tested points",
                "first_threshold_abs_z": self.z_critical,
                "counts": self.bias_counts,
                "unreliable": self.bias_unreliable(),
            },
            "closed_form": None if self.closed_form_z is None else {
                "z": self.closed_form_z,
                "tested": self.closed_form_tested,
                "rejected": self.closed_form_rejected,
                "agrees": self.closed_form_agrees,
                "verdict": self.closed_form_text(),
                "nonexact_tested": self.closed_form_nonexact_tested,
                "exact_tested": self.closed_form_exact_tested,
                "min_nonexact_tested": MIN_CLOSED_FORM_POINTS,
                "detectable_rel_error": self.closed_form_detectable,
                "used_in_mse_map": self.closed_form_used,
                "confirmation": self.closed_form_confirmation,
                "method": f"two-sided z of the sampled MSE, Holm at alpha·{CLOSED_FORM_ALPHA_FACTOR:g}; each "
                          f"rejection confirmed on an independent sample with {CONFIRM_TRIALS_FACTOR}× the trials",
            },
            "closed_form_error": self.closed_form_error,
            "closed_form_unequal": None if self.closed_form_z is None else {
                "detectable_rel_error": self.closed_form_unequal_detectable,
                "target_rel_error": UNEQUAL_POWER_TARGET,
                "trials_for_target": self.closed_form_unequal_trials,
            },
            "rotation": self.rotation,
            "direction_dependent": self.direction_dependent,
            "extra_pairs": self.extra_pairs,
            "log10_mse": self.log10_mse,
            "mse_source": self.mse_source,
            "bias_as_declared": self.verdict == "biased, as declared",
            "comparisons": {c.name: {"params": c.params, "source": c.source, "log10_ratio": c.log10_ratio,
                                     "wins": c.wins, "losses": c.losses, "ties": c.ties,
                                     "unknown": c.unknown} for c in self.comparisons},
            "skipped_comparisons": self.skipped_comparisons,
            "features": self.features,
            "warnings": self.warnings,
            "declared_biased": self.declared_biased,
        }
        return out

    def to_text(self) -> str:
        """Human-readable report: what ``rfviz check`` prints (``rfviz.lab.text.report_text``).

        Returns
        -------
        str
            The report, several lines.
        """
        return text.report_text(self)
