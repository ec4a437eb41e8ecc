"""The words of the lab's report: the summary sentence, the closed-form verdict, the text of ``rfviz check``, and
the grids drawn as text."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..verdicts import UNKNOWN_HEAVY_TAIL, closed_form_word, points_trial_advice
from ..verdicts.rules import (
    CLOSED_FORM_KURTOSIS_FRACTION,
    MIN_CLOSED_FORM_POINTS,
    MIN_INFORMATIVE,
    UNEQUAL_POWER_TARGET,
)
from .options import EXIT_CODES


def where_text(row: dict[str, Any]) -> str:
    """A re-tested point in words: a grid point (r, θ) or an extra pair (kind, |x|, |y|, θ)."""
    if row.get("pair", "grid") == "grid":
        return f"r = {row['r']:g}, θ = {row['theta']:.3f}"
    return f"{row['pair']} pair |x| = {row['r']:g}, |y| = {row['norm_y']:g}, θ = {row['theta']:.3f}"


def _grid_text(r: np.ndarray, theta: np.ndarray, values: np.ndarray, mark: np.ndarray | None,
               skip: np.ndarray | None, fmt: str = "{:+7.2f}", note: np.ndarray | None = None,
               note_tag: str = "?") -> list[str]:
    head = "   r \\ θ " + "".join(f"{t:>9.3f}" for t in theta)
    rows = [head]
    for i, rv in enumerate(r):
        cells = []
        for j in range(len(theta)):
            v = values[i, j]
            text = (fmt.format(v) if abs(v) < 1e4 else f"{v:+7.0e}") if np.isfinite(v) else f"{v:>7}"
            tag = "*" if mark is not None and mark[i, j] else ("~" if skip is not None and skip[i, j] else (
                note_tag if note is not None and note[i, j] else " "))
            cells.append(f"{text:>8}{tag}")
        rows.append(f"{rv:>8g} " + "".join(cells))
    return rows


def closed_form_text(report: Any) -> str:
    """The closed-form verdict in words, with what was tested and the smallest error it would have caught."""
    if report.closed_form_error is not None:
        return f"FAILED ({report.closed_form_error})"
    if report.closed_form_rejected is None:
        return "none given"
    n, e = report.closed_form_nonexact_tested, report.closed_form_exact_tested
    tested = f"{n} non-exact point(s) tested" + (f" (+ {e} exact, which test no formula)" if e else "")
    power = "" if report.closed_form_detectable is None else (
        f"; smallest relative error detectable at {report.trials} trials: {report.closed_form_detectable:.2%} "
        "(power ≈ 1/2 at the Holm/Bonferroni threshold)" + _unequal_text(report))
    agrees = report.closed_form_agrees
    if agrees is None:
        return (f"NOT TESTED ENOUGH: {tested}, at least {MIN_CLOSED_FORM_POINTS} needed{power}; "
                f"{_closed_form_advice(report)}the MSE map uses the sampled MSE where it was not tested")
    return f"{closed_form_word(agrees, True)}: {tested}{power}"


def _rotation_lines(report: Any) -> list[str]:
    """The rotation test in words, with its p-values on the grid when it ran."""
    rot = report.rotation
    if not rot:
        return []
    if not rot.get("ran"):
        return ["", f"rotation test: not run ({rot.get('reason', '')})"]
    verdict = ("the estimates DEPEND ON THE DIRECTION of x" if rot["direction_dependent"]
               else "no dependence on the direction of x found")
    lines = ["", f"rotation test ({rot['rotations']} random rotations of R^d, independent runs of "
             f"{rot['trials']} trials): {verdict} ({rot['rejected_count']} of {rot['tested_count']} tested points "
             f"rejected, Holm at {rot['alpha']:g}); log10 p per grid point (* = rejected, ~ = left out):"]
    with np.errstate(divide="ignore"):
        logp = np.log10(np.maximum(np.asarray(rot["p"], float), 1e-300))
    return lines + _grid_text(report.r, report.theta, logp, np.asarray(rot["rejected"], bool),
                              ~np.asarray(rot["tested"], bool))


def _unequal_text(report: Any) -> str:
    """The closed-form test's power at the |x| ≠ |y| pairs: the smallest detectable error, and the trials that
    would reach UNEQUAL_POWER_TARGET when it is larger."""
    det = report.closed_form_unequal_detectable
    if det is None:
        return "; no |x| ≠ |y| pair was tested (heavy-tailed or unreliable there)"
    text = f"; at |x| ≠ |y| alone: {det:.2%}"
    if report.closed_form_unequal_trials is not None:
        text += (f" (--trials {report.closed_form_unequal_trials} would detect {UNEQUAL_POWER_TARGET:.0%} there)")
    return text


def _closed_form_advice(report: Any) -> str:
    """How many trials would let MIN_CLOSED_FORM_POINTS grid points into the closed-form test (its gate is the
    sampled kurtosis κ ≤ trials·CLOSED_FORM_KURTOSIS_FRACTION), counting only points where a finite count can work
    (``rfviz.verdicts.points_trial_advice``): a heavy-tailed point's κ grows with the trials, so no count lets it in
    (the words say so instead of a count)."""
    kappa = np.asarray(report.kurtosis, float)
    needed = np.where(np.isfinite(kappa), kappa / CLOSED_FORM_KURTOSIS_FRACTION, np.nan)
    exact = np.zeros(kappa.shape, bool) if report.exact is None else np.asarray(report.exact, bool)
    informative = np.ones(kappa.shape, bool) if report.informative is None else np.asarray(report.informative, bool)
    advice = points_trial_advice(needed, None, ~informative & ~exact, MIN_CLOSED_FORM_POINTS, report.trials)
    if advice.count is None:
        return f"{advice.text} at {MIN_CLOSED_FORM_POINTS} grid points (their squared errors are heavy-tailed); "
    if advice.count <= report.trials:
        return ""
    return f"--trials {advice.count} or more would let {MIN_CLOSED_FORM_POINTS} grid points into the test; "


def summary_text(report: Any) -> str:
    """One sentence: the verdict and why.

    Returns
    -------
    str
        The sentence the CLI and the lab page show first.
    """
    n = int(report.bias_tested.sum())
    total = report.bias_z.size
    if report.verdict in ("bias detected", "biased, as declared"):
        text = _bias_summary(report, n)
        if report.declared_biased:
            text = text.replace("BIAS DETECTED", "BIASED, AS DECLARED (the estimator sets unbiased = False)", 1)
        return text
    max_z = float(np.max(np.abs(report.bias_z[report.bias_tested]))) if n else float("nan")
    if report.closed_form_agrees is False:
        return ("CLOSED FORM DISAGREES: the estimator's own closed-form MSE does not match its Monte Carlo "
                f"(no bias found at {n} of {total} tested points)")
    if report.inconclusive:
        if report.exact is not None and bool(np.all(report.exact | report.informative)):
            return (f"INCONCLUSIVE: only {report.n_informative} informative grid point(s) (need {MIN_INFORMATIVE}): "
                    "the estimator is exact (no spread) at the others, so there is no sampling noise to test "
                    "and more --trials cannot help; test pairs where it is random (other --r/--theta, or "
                    "--pairs random,unequal)")
        return (f"INCONCLUSIVE: only {report.n_informative} informative grid point(s) (need {MIN_INFORMATIVE}): "
                "the others are exact or heavy-tailed, so the sampled mean/MSE cannot be trusted there; use "
                "more --trials, smaller --r, or other --theta")
    n_extra = sum(bool(p["tested"]) for p in report.extra_pairs)
    extra = f" + {n_extra} extra pairs" if n_extra else ""
    return (f"UNBIASED: no point rejects E[K̂] = K (Holm over {n} of {total} grid points{extra}, "
            f"α = {report.alpha:g}; "
            f"max |z| = {max_z:.2f}, first Holm threshold {report.z_critical:.2f}; {report.n_informative} "
            f"informative points incl. extra pairs, at least {MIN_INFORMATIVE} needed)")


def _bias_summary(report: Any, n: int) -> str:
    """The sentence of a bias found (``_bias_where``), with the rotation test's finding when it rejects."""
    text = _bias_where(report, n)
    if report.direction_dependent:
        rot = report.rotation
        text += (f"; the estimates depend on the direction of x (rotation test: {rot['rejected_count']} of "
                 f"{rot['tested_count']} grid points differ between the canonical orientation and "
                 f"{rot['rotations']} random rotations, Holm at {rot['alpha']:g})")
    return text


def _bias_where(report: Any, n: int) -> str:
    """The sentence of a bias found: where, how strong (deterministic, extra pairs, grid points or directions)."""
    if not report.bias_rejected.any() and not any(p["rejected"] for p in report.extra_pairs):
        return "BIAS DETECTED"
    if report.deterministic_wrong is not None and (report.deterministic_wrong
                                                                 & report.bias_rejected).any():
        k = int((report.deterministic_wrong & report.bias_rejected).sum())
        return (f"BIAS DETECTED: at {k} grid point(s) every trial gave the same K̂ and it is not the kernel "
                "(a deterministic wrong estimate, no sampling noise to explain it)")
    if not report.bias_rejected.any():
        bad = [p for p in report.extra_pairs if p["rejected"]]
        w = max(bad, key=lambda p: abs(p["z"]))
        return (f"BIAS DETECTED at {len(bad)} of the extra pairs (Holm, α = {report.alpha:g}); worst z = "
                f"{w['z']:+.1f} for {w['kind']} pair |x| = {w['norm_x']:g}, |y| = {w['norm_y']:g}, "
                f"θ = {w['theta']:.3f}")
    k = int(report.bias_rejected.sum())
    i = np.unravel_index(np.nanargmax(np.where(report.bias_rejected, np.abs(report.bias_z), -1)), report.bias_z.shape)
    return (f"BIAS DETECTED: the mean of K̂ differs from the kernel at {k} of {n} tested grid points "
            f"(Holm, α = {report.alpha:g}); worst z = {report.bias_z[i]:+.1f} at r = {report.r[i[0]]:g}, "
            f"θ = {report.theta[i[1]]:.3f}")


def _bias_counts_text(report: Any) -> str:
    c = report.bias_counts
    return (f"bias test on the grid: {c['tested']} of {c['points']} points tested ({c['left_out']} left out: "
            f"heavy-tailed; {c['exact']} exact; {c['unreliable']} with an unreliable sampled MSE, not "
            f"informative; {c['informative']} informative; {c['rejected']} rejected)")


def report_text(report: Any) -> str:
    """Human-readable report: what ``rfviz check`` prints.

    Returns
    -------
    str
        The report, several lines.
    """
    params = ", ".join(f"{k}={v}" for k, v in report.params.items())
    lines = [f"estimator   {report.estimator} ({report.title}) [{params}]",
             f"setting     kernel={report.kernel}, d={report.d}, trials={report.trials}, seed={report.seed}, "
             f"grid {len(report.r)} r × {len(report.theta)} θ",
             f"verdict     {summary_text(report)}", "", _bias_counts_text(report),
             "bias z-score of the mean (rows r, columns θ; * = rejected by Holm, ~ = heavy-tailed, left out, "
             "? = sampled MSE unreliable, not informative):"]
    lines += _grid_text(report.r, report.theta, report.bias_z, report.bias_rejected, ~report.bias_tested,
                        note=report.bias_unreliable())
    if report.closed_form_z is not None:
        lines += ["", f"closed-form MSE vs Monte Carlo: {closed_form_text(report)}",
                  "  (z-scores on the grid, * = rejected, ~ = left out):"]
        lines += _grid_text(report.r, report.theta, report.closed_form_z, report.closed_form_rejected,
                            ~report.closed_form_tested)
        for c in report.closed_form_confirmation:
            outcome = "confirmed" if c["confirmed"] else ("not confirmed" if c["tested"] else
                                                          "not confirmed (heavy-tailed or unreliable there)")
            lines.append(f"  re-tested {where_text(c)} with {c['trials']} independent "
                         f"trials: z = {c['z']:+.2f}, {outcome}")
    elif report.closed_form_error is not None:
        lines += ["", f"closed-form MSE: FAILED ({report.closed_form_error})"]
    else:
        lines += ["", "closed-form MSE: none given"]
    lines += _rotation_lines(report)
    if report.extra_pairs:
        lines += ["", "bias z-score at extra pairs (* = rejected by Holm with the grid, ~ = not informative: "
                  "heavy-tailed or exact); closed-form z where it was tested:"]
        for p in report.extra_pairs:
            mark = "*" if p["rejected"] else ("~" if not p["informative"] else " ")
            cf = ""
            if "cf_z" in p:
                cf_mark = "*" if p["cf_rejected"] else ("~" if not p["cf_tested"] else " ")
                cf = f"  closed-form z = {p['cf_z']:+7.2f}{cf_mark}"
            lines.append(f"  {p['kind']:<8} |x| = {p['norm_x']:<5g} |y| = {p['norm_y']:<5g} "
                         f"θ = {p['theta']:.3f}  z = {p['z']:+7.2f}{mark}{cf}")
    if report.comparisons:
        lines += ["", f"{report.estimator}'s MSE in the ratio maps: {report.mse_source}"
                  + ("" if report.closed_form_used is None or not (~report.closed_form_used).any() else
                     " (o = sampled MSE at that point)")]
    for c in report.comparisons:
        unknown = getattr(c, "unknown", 0)
        lines += ["", f"log10 MSE ratio vs {c.name} ({c.source}); < 0: {report.estimator} wins "
                  f"(wins {c.wins}, loses {c.losses}, ties {c.ties}"
                  + (f", {UNKNOWN_HEAVY_TAIL}: {unknown}, shown nan" if unknown else "") + "):"]
        sampled = None if report.closed_form_used is None else ~report.closed_form_used
        lines += _grid_text(report.r, report.theta, c.log10_ratio, None, None, fmt="{:+7.2f}", note=sampled,
                            note_tag="o")
    for name, why in report.skipped_comparisons.items():
        lines.append(f"not compared with {name}: {why}")
    f = report.features
    lines += [""]
    if f.get("available"):
        lines.append(f"features    {f['count']} per input; finite: {f['finite']}; positive: {f['positive']}; "
                     f"bounded (observed): {f['bounded_observed']} (max|φ| growth {f['max_growth']:.2f}); "
                     f"Σφ·φ = K̂: {f['consistent']} (max rel. diff {f['max_rel_diff']:.1e})")
    else:
        lines.append(f"features    {f.get('reason', 'not available')}")
    if report.declared_biased:
        lines.append("note        the estimator declares itself biased by design (unbiased = False): a bias found "
                     f"is reported as expected, exit {EXIT_CODES['biased, as declared']}, not "
                     f"{EXIT_CODES['bias detected']}")
    for w in report.warnings:
        lines.append(f"warning     {w}")
    return "\n".join(lines)
