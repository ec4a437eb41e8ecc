"""Lessons for a class: predict, then the live figure answers, then try it yourself.

Each :class:`Lesson` teaches one idea in one or more :class:`Step`\\ s. A step asks a question with a few choices
(the reader predicts), then reveals the answer with a figure built by rfviz's own compute functions and figure
builders and a short explanation whose numbers are read off that figure's data (``Step.facts``), and offers one
"now try" control (a :class:`~rfviz.params.Param`) that changes the figure. The app's Learn page
(``app_pages/learn.py``) draws them; the tests check that every number a step's text states is the number its
figure shows, recomputed from the closed forms.

Lessons register in ``LESSONS`` (ordered; the URL names a lesson by its ``slug`` and a step by its 1-based index).

Examples
--------
>>> from rfviz.lessons import LESSONS
>>> lesson = LESSONS["kernel-average"]
>>> step = lesson.steps[0]
>>> step.choices[step.answer]
'it halves'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .params import Param, ParameterError

Facts = dict[str, float]


@dataclass(frozen=True)
class Step:
    """One predict → reveal → try step of a lesson.

    Parameters
    ----------
    title : str
        A few words naming the idea of the step.
    question : str
        What the reader predicts (Markdown).
    choices : tuple of str
        The possible answers, in the order shown.
    answer : int
        Index of the right choice in ``choices``.
    reveal : str
        The explanation shown with the figure, a ``str.format`` template over the names of ``facts``.
    control : Param
        The "now try" control (its default is the value the question is about).
    try_text : str
        What to look for when moving the control.
    build : callable
        ``build(value) -> (figure, facts)``: the figure at the control's value and the numbers the text states,
        read off the figure's data.
    options : tuple
        The control's values when it offers only a few (empty: any value in its range).
    """

    title: str
    question: str
    choices: tuple[str, ...]
    answer: int
    reveal: str
    control: Param
    try_text: str
    build: Callable[[Any], tuple[Any, Facts]] = field(repr=False)
    samples: bool = False
    """Whether ``build`` runs Monte Carlo (the app then runs it in the server's bounded pool, shared)."""
    options: tuple[Any, ...] = ()
    """The control's values when it offers only a few (a stepped slider; each value's figure is shared by every
    visitor), else empty (any value in the control's range)."""

    def __post_init__(self) -> None:
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"step {self.title!r}: answer {self.answer} is not an index of its choices")
        if self.options and self.control.default not in self.options:
            raise ValueError(f"step {self.title!r}: the control's default is not one of its options")

    def figure_and_text(self, value: Any = None) -> tuple[Any, str, Facts]:
        """The figure, the explanation with its numbers filled in, and the numbers themselves.

        Parameters
        ----------
        value : optional
            The control's value (validated by ``control``; default: the control's default).

        Returns
        -------
        tuple
            ``(figure, text, facts)``.
        """
        value = self.control.default if value is None else self.control.validate(value)
        if self.options and value not in self.options:
            raise ParameterError(f"{self.control.name} must be one of {', '.join(map(str, self.options))}, got "
                                 f"{value}")
        fig, facts = self.build(value)
        return fig, self.reveal.format(**facts), facts


@dataclass(frozen=True)
class Lesson:
    """One idea taught in a few steps; ``page``/``query`` open the expert page that shows it in full."""

    slug: str
    title: str
    idea: str
    steps: tuple[Step, ...]
    page: str
    query: Mapping[str, str] = field(default_factory=dict)


LESSONS: dict[str, Lesson] = {}
"""Every lesson, in teaching order, by slug."""


def lesson(slug: str, title: str, idea: str, page: str, query: Mapping[str, str] | None = None) -> Callable:
    """Register the lesson whose steps the decorated function returns."""

    def register(make_steps: Callable[[], tuple[Step, ...]]) -> Callable[[], tuple[Step, ...]]:
        if slug in LESSONS:
            raise ValueError(f"lesson {slug!r} is registered twice")
        LESSONS[slug] = Lesson(slug, title, idea, tuple(make_steps()), page, dict(query or {}))
        return make_steps

    return register


def get_lesson(slug: str) -> Lesson:
    """The lesson ``slug``; ParameterError naming the lessons otherwise."""
    if slug not in LESSONS:
        raise ParameterError(f"lesson must be one of {', '.join(LESSONS)}, got {str(slug)[:40]!r}")
    return LESSONS[slug]


def _nearest(xs: np.ndarray, x: float) -> int:
    """Index of the grid point nearest ``x`` (where the figure shows a value)."""
    return int(np.argmin(np.abs(np.asarray(xs) - x)))


def _at(xs: np.ndarray, ys: np.ndarray, x: float) -> float:
    """The curve's value at the grid point nearest ``x`` (the value the figure shows there)."""
    return float(np.asarray(ys)[_nearest(xs, x)])


def _percent(log10_value: float) -> float:
    return 100.0 * 10.0 ** log10_value


# ------------------------------------------------------------------------------------------------ 1 · an average
KA_R, KA_THETA, KA_D = 1.0, 1.0, 8
KA_MS = (4, 16, 64, 256)
KA_TRIALS, KA_SEED = 4000, 0


def _kernel_average(m_mark: int) -> tuple[Any, Facts]:
    from .compute.learn import sampled_relative_error_vs_m
    from .figures.learn import relative_error_vs_m_figure

    cols = sampled_relative_error_vs_m(KA_R, KA_THETA, KA_D, KA_MS, KA_TRIALS, KA_SEED)
    fig = relative_error_vs_m_figure(cols, m_mark, f"trig features · r = {KA_R:g}, θ = {KA_THETA:g}, d = {KA_D}")
    m, rel = cols["m"], cols["log10_rel_closed_form"]
    e4, e16 = _at(m, rel, 4), _at(m, rel, 16)
    mark = float(np.interp(math.log(m_mark), np.log(m), rel))
    return fig, {"e4": _percent(e4), "e16": _percent(e16), "ratio": 10 ** (e4 - e16), "m_mark": m_mark,
                 "e_mark": _percent(mark)}


KD_D_ASKED = (8, 1000)
"""The two dimensions the step's question compares (its text states the figure's values there)."""
KD_DS = (2, 4, 8, 16, 32, 64, 128, 256, 512, 1000)


def _error_vs_d(theta: float) -> tuple[Any, Facts]:
    from .compute.learn import relative_error_vs_d
    from .figures.common import lines

    cols = relative_error_vs_d(KA_R, theta, 16, KD_DS)
    fig = lines(cols["d"], {"trig": cols["log10_rel_trig"], "positive": cols["log10_rel_pos"]}, xlabel="d",
                ylabel="log₁₀ relative error √MSE/K", title=f"error against the dimension (m = 16, r = {KA_R:g})")
    fig.update_xaxes(type="log")
    small, big = (KD_DS.index(d) for d in KD_D_ASKED)
    return fig, {"theta": theta, "d_small": KD_D_ASKED[0], "d_big": KD_D_ASKED[1],
                 "trig_small": _percent(cols["log10_rel_trig"][small]),
                 "trig_big": _percent(cols["log10_rel_trig"][big]), "pos_small": _percent(cols["log10_rel_pos"][small]),
                 "pos_big": _percent(cols["log10_rel_pos"][big])}


@lesson("kernel-average", "A kernel is an average", "K̂ averages m random features; its error falls as 1/√m.",
        "mse_explorer", {"est": "trig", "view": "heatmap"})
def _lesson_kernel_average() -> tuple[Step, ...]:
    return (Step(
        "Four times the features",
        "Trigonometric random features estimate the softmax kernel K(x, y) = exp(x·y) by **averaging** m random "
        "cosines. Going from m = 4 to m = 16 features, what happens to the typical error √MSE of the estimate?",
        ("it shrinks 4-fold", "it halves", "it shrinks 16-fold", "it stays the same"), 1,
        "An average of m independent features has variance Var/m, so √MSE falls as 1/√m: four times the features, "
        "half the error. Here the relative error √MSE/K is {e4:.1f} % at m = 4 and {e16:.1f} % at m = 16, a ratio "
        "of {ratio:.2f}. The dots are Monte-Carlo estimates (±2 standard errors) from rfviz's engine: they sit on "
        "the closed-form line.",
        Param("m", 16, "int", "features", low=1, high=4096, label="m (features)"),
        "Move m: the relative error at m = {m_mark:d} is {e_mark:.2f} %. Every 4× in m halves it; on these log axes "
        "the line falls with slope −½.",
        _kernel_average, samples=True, options=tuple(2 ** k for k in range(11))),
        Step(
        "Higher dimension",
        "Same estimator, same angle θ = 1 and length r = 1 between x and y, but now in d = 1,000 dimensions instead "
        "of d = 8. With independent random directions, the error of K̂ …",
        ("grows with d", "does not depend on d", "shrinks with d"), 1,
        "It does not depend on d: with independent directions the MSE depends on the pair only through |x − y| "
        "(trig) or |x + y| and the norms (positive features). At m = 16 the relative error is {trig_small:.2f} % "
        "at d = {d_small:d} and {trig_big:.2f} % at d = {d_big:,d} for trig ({pos_small:.2f} % and {pos_big:.2f} % "
        "for positive features). What d changes is the cost: each feature is a d-dimensional projection. Coupled "
        "directions (lesson 4) are where d enters.",
        Param("theta", 1.0, help="angle between x and y (radians)", low=0.0, high=math.pi,
              label="θ (angle, radians)"),
        "Move θ (now {theta:.2f}): both lines move, and both stay flat in d.",
        _error_vs_d),)


# ------------------------------------------------------------------------------------ 2 · trig against positive
TP_M, TP_N = 10, 8


def _trig_vs_positive(r: float) -> tuple[Any, Facts]:
    from .compute.hrf import relative_error_columns
    from .figures.hrf import relative_error_figure

    cols = relative_error_columns(r, TP_M, TP_N)
    fig = relative_error_figure(cols, r, TP_M, TP_N, hybrid=False)
    th = cols["theta"]  # a grid symmetric about π/2: the point mirroring index i is len − 1 − i
    near_pi = _nearest(th, 3.0)  # a grid angle, as the figure's hover shows it
    near_0 = len(th) - 1 - near_pi  # its mirror point, π − θ
    trig, pos = cols["log10_rel_trig"], cols["log10_rel_pos"]
    return fig, {"r": r, "theta_pi": float(th[near_pi]), "theta_0": float(th[near_0]),
                 "trig_pi": _percent(trig[near_pi]), "pos_pi": _percent(pos[near_pi]),
                 "trig_0": _percent(trig[near_0]), "pos_0": _percent(pos[near_0]),
                 "worst_trig": _percent(float(np.max(trig))), "theta_worst": float(th[int(np.argmax(trig))])}


R_CONTROL = Param("r", 1.5, help="input length |x| = |y|", low=0.1, high=3.0, label="r (input length)")


@lesson("trig-vs-positive", "Trig against positive features", "Each fails where the other is exact.", "hybrid",
        {"view": "mse-vs-base", "lam": "angular"})
def _lesson_trig_vs_positive() -> tuple[Step, ...]:
    return (Step(
        "Opposite directions",
        "x and y lie on a sphere of radius r = 1.5, at an angle θ. Near θ = π they point in opposite directions and "
        "the kernel exp(x·y) is tiny. Which features have the larger **relative** error √MSE/K there?",
        ("trigonometric features (cos, sin)", "positive features (exp)", "both about the same"), 0,
        "Trig features: at θ = {theta_pi:.3f} their relative error is {trig_pi:,.0f} %, against {pos_pi:.2g} % for "
        "positive features, and at θ = {theta_worst:.3f} (π) it peaks at {worst_trig:,.0f} %. Trig features are "
        "bounded, so their error does not shrink with K, and relative to a tiny K it is huge. Positive features are "
        "products of exponentials that shrink with the kernel. Near θ = 0 the roles swap, exactly: at the mirror "
        "angle π − {theta_pi:.3f} = {theta_0:.3f}, trig is at {trig_0:.2g} % and positive features at "
        "{pos_0:,.0f} %.",
        R_CONTROL,
        "Move r (now {r:g}): at θ = {theta_pi:.3f} trig is at {trig_pi:,.0f} %. Larger inputs make both failures "
        "worse; the curves cross at θ = π/2, because each is the other's mirror image.",
        _trig_vs_positive),)


# ---------------------------------------------------------------------------------------------- 3 · hybrids
N_OPTIONS = tuple(2 ** k for k in range(10))
"""The n control's values: powers of two, 1 to 512, evenly spaced on the slider (a log scale: n ≤ 32, where the
worst case moves most, is half the track, not its first 6 %)."""

def _hybrid(n: int) -> tuple[Any, Facts]:
    from .compute.hrf import relative_error_columns
    from .figures.hrf import relative_error_figure

    r = R_CONTROL.default
    cols = relative_error_columns(r, TP_M, n)
    fig = relative_error_figure(cols, r, TP_M, n, hybrid=True)
    return fig, {"n": n, "worst_trig": _percent(float(np.max(cols["log10_rel_trig"]))),
                 "worst_pos": _percent(float(np.max(cols["log10_rel_pos"]))),
                 "worst_hybrid": _percent(float(np.max(cols["log10_rel_hybrid"])))}


@lesson("hybrids", "Hybrids and the λ that mixes them", "A random mix that follows θ caps the worst case.", "hybrid",
        {"view": "max-error"})
def _lesson_hybrids() -> tuple[Step, ...]:
    return (Step(
        "The worst case over all angles",
        "A **hybrid** estimator mixes the two: K̂ = λ̂·(positive) + (1 − λ̂)·(trig), where the random weight λ̂ "
        "estimates θ/π from n = 8 sign features. Over all angles θ, its **worst** relative error is …",
        ("below the base estimators' worst case", "the same as theirs", "above it: mixing adds noise"), 0,
        "Below it: the worst relative error over θ is {worst_trig:,.0f} % for trig, {worst_pos:,.0f} % for "
        "positive features (mirror images: the same worst case, at opposite ends) and {worst_hybrid:,.0f} % for the "
        "hybrid (r = 1.5, m = 10). The hybrid is exact at "
        "θ = 0 and θ = π, but in between λ̂'s own noise lets some of each base estimator's error in: it is not "
        "better everywhere, it caps the worst case (HRF Theorem 3.5).",
        Param("n", 8, "int", "λ-features", low=1, high=512, label="n (λ-features)"),
        "Move n (now {n:d}): the hybrid's worst case is {worst_hybrid:,.0f} %. More λ-features make λ̂ less noisy and "
        "bring it down, with diminishing returns.",
        _hybrid, options=N_OPTIONS),)


# -------------------------------------------------------------------------------------------------- 4 · coupling
CP_V, CP_V_ORTHO = 0.1, 1.3


def _coupling(d: int) -> tuple[Any, Facts]:
    from .compute.learn import coupling_ratio_at
    from .figures.simrf import ratio_vs_v_figure

    fig = ratio_vs_v_figure(d, d, features="positive")
    ratios, wide = coupling_ratio_at(CP_V, d), coupling_ratio_at(CP_V_ORTHO, d)
    return fig, {"d": d, "v": CP_V, "ortho": ratios["orthogonal"], "simplex": ratios["simplex"],
                 "v_ortho": CP_V_ORTHO, "ortho_wide": wide["orthogonal"]}


@lesson("coupling", "Coupling the projections", "Orthogonal and simplex blocks make projections less alike.",
        "coupling", {"view": "ratio-vs-v"})
def _lesson_coupling() -> tuple[Step, ...]:
    return (Step(
        "Draw them together",
        "Positive random features project x + y on m random directions. Draw the m = d directions **jointly**, as "
        "a simplex block (every pair at the same obtuse angle, arccos(−1/(d − 1))), instead of independently. Every "
        "estimate stays unbiased. For small v = |x + y|, the MSE …",
        ("drops below the independent (iid) MSE", "stays the same: unbiased is unbiased", "rises above it"), 0,
        "It drops: at v = {v:g} and d = {d:d} the ratio MSE/MSE_iid is {simplex:.3f} for simplex blocks. "
        "Orthogonal blocks, the better-known coupling, barely help there ({ortho:.3f}); they gain most at moderate "
        "v ({ortho_wide:.2f} at v = {v_ortho:g}). For large v both ratios go back to 1: coupling no longer helps.",
        Param("d", 16, "int", "dimension (m = d)", low=2, high=1024, label="d (dimension, m = d)"),
        "Move d (now {d:d}): at v = {v:g} simplex blocks give {simplex:.3g} and orthogonal ones {ortho:.3g}; the "
        "simplex gain grows with d.",
        _coupling),)


# ------------------------------------------------------------------------------------------------ 5 · GERF's A
GA_THETA, GA_D, GA_M = math.pi / 2, 8, 16


def _gerf(r: float) -> tuple[Any, Facts]:
    from .compute.crt import a_star, real_A_columns
    from .figures.crt import real_A_figure

    cols = real_A_columns(r, GA_THETA, GA_D, GA_M, "softmax", -1.0)
    fig = real_A_figure(cols, r, GA_THETA, GA_D, GA_M, "softmax")
    star = a_star(r, GA_THETA, GA_D)
    a, curve = cols["A"], cols["log10_mse_s+1"]
    best = float(np.interp(star, a, curve))
    return fig, {"r": r, "a_star": star, "at_zero": _at(a, curve, 0.0), "at_star": best,
                 "gain": 10 ** (_at(a, curve, 0.0) - best)}


@lesson("gerf-a", "Choosing GERF's A", "A free parameter of the feature map, tuned to the inputs.", "gerf",
        {"view": "real-a"})
def _lesson_gerf() -> tuple[Step, ...]:
    return (Step(
        "Is the plain choice the best?",
        "Generalised exponential random features (GERF) have a free parameter A; A = 0 gives plain positive "
        "features. For inputs of length r = 1 at a right angle (d = 8), is A = 0 the variance-minimising choice?",
        ("yes, A = 0 is optimal", "no: a negative A is better", "no: a positive A is better"), 1,
        "No: the optimum A* = {a_star:.3f} is negative. There log₁₀ MSE is {at_star:.2f}, against {at_zero:.2f} at "
        "A = 0: {gain:.2f} times lower. A* depends on the inputs only through |x + y|² and d (CRT Theorem 3.3); "
        "positive A close to 1/8 makes the variance blow up (the shaded band: no finite fourth moment).",
        Param("r", 1.0, help="input length", low=0.1, high=2.0, label="r (input length)"),
        "Move r (now {r:g}): A* = {a_star:.3f}, and the gain over A = 0 is {gain:.2f}×; it grows with r.",
        _gerf),)


# ------------------------------------------------------------------------------------- 6 · dot-product sketches
DQ_R, DQ_D, DQ_P, DQ_M = 1.0, 8, 3, 16


def _sketch_q(theta: float) -> tuple[Any, Facts]:
    from .compute.dp import variance_vs_q
    from .compute.learn import sketch_variance_at_q

    fig = variance_vs_q(DQ_R, theta, DQ_D, DQ_P, DQ_M, "flat")
    v = sketch_variance_at_q(DQ_R, theta, DQ_D, DQ_P, DQ_M, (0.0, 0.25, 0.5, 0.75, 1.0))
    return fig, {"theta": theta, "v0": v[0.0], "v25": v[0.25], "v50": v[0.5], "v75": v[0.75], "v1": v[1.0],
                 "best": "q = ½ (complex)" if v[0.5] < v[1.0] else "q = 0 or 1 (real or imaginary)"}


@lesson("sketch-q", "Dot-product sketches and q", "Real, imaginary or complex projections: only (2q − 1)² matters.",
        "dot_product", {"view": "vs-q"})
def _lesson_sketch_q() -> tuple[Step, ...]:
    return (Step(
        "A symmetry",
        "Polynomial sketches of (x·y)^p multiply p random projections whose entries are real (q = 1), imaginary "
        "(q = 0) or a complex mix (0 < q < 1). The variance as a function of q is symmetric about …",
        ("q = 0", "q = ½", "q = 1", "it is not symmetric"), 1,
        "q = ½: the variance depends on q only through (2q − 1)². Here (p = 3, d = 8, m = 16) it is {v25:.4g} at "
        "q = ¼ and {v75:.4g} at q = ¾, {v0:.4g} at both ends and {v50:.4g} at q = ½. Which end wins depends on the "
        "inputs: complex projections (q = ½) win exactly when (x·y)² > Σₖ xₖ²yₖ².",
        Param("theta", 0.79, help="angle between x and y (radians)", low=0.0, high=math.pi,
              label="θ (angle, radians)"),
        "Move θ (now {theta:.2f}): the best choice here is {best}.",
        _sketch_q),)


# ------------------------------------------------------------------------------------ 7 · when Monte Carlo lies
ML_R = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
ML_M, ML_SEED = 16, 0


def _mc_lies(trials: int) -> tuple[Any, Facts]:
    from .compute.learn import heavy_tail_columns
    from .figures.learn import heavy_tail_figure

    cols = heavy_tail_columns(ML_R, ML_M, trials, ML_SEED)
    fig = heavy_tail_figure(cols, ML_M, trials)
    i = len(ML_R) - 1
    return fig, {"trials": trials, "r_last": ML_R[i], "closed": float(cols["log10_mse_closed_form"][i]),
                 "sampled": float(cols["log10_mse_sampled"][i]),
                 "unreliable": int(np.sum(cols["reliable"] == 0)), "points": len(ML_R)}


@lesson("monte-carlo-lies", "When Monte Carlo lies", "Heavy tails: a sample can miss the rare huge values.",
        "hybrid", {"view": "mse-vs-base", "mc": "true"})
def _lesson_mc_lies() -> tuple[Step, ...]:
    return (Step(
        "A large norm",
        "Positive random features at x = y with |x| = r = 3 (m = 16, d = 2). You sample 4 000 estimates and average "
        "their squared errors. Compared with the exact (closed-form) MSE, the sampled MSE will be …",
        ("close to it", "far below it", "far above it"), 1,
        "Far below it: at r = {r_last:g} the closed form says log₁₀ MSE = {closed:.1f}, the sample gives "
        "{sampled:.1f}. The squared error is heavy-tailed there: rare, enormous values carry most of the MSE, and "
        "{trials:,d} draws almost never meet them. rfviz does not call this a disagreement: the fourth moment says "
        "the sample cannot pin the MSE down, so {unreliable:d} of the {points:d} points are flagged unreliable "
        "(hollow markers).",
        Param("trials", 4000, "int", "Monte-Carlo trials", low=1000, high=64000, label="trials"),
        "Move the trials (now {trials:,d}): at r = {r_last:g} the sample gives {sampled:.1f} against the exact "
        "{closed:.1f}. Sixteen times the trials barely move it: a heavy tail is not cured by a few more draws.",
        _mc_lies, samples=True, options=(1000, 4000, 16000, 64000)),)
