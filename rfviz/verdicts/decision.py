"""The verdicts of a decision: which sampled numbers may be compared, who may be crowned, and when a trial count
may be advised. Pure numpy; its thresholds live in ``rfviz.verdicts.rules``.

The rules, one each
-------------------
known MSE (the lab's ratio map)
    A point's MSE is *known* from its closed form only where that closed form was tested there and agreed, else
    from its sample only where the sample is reliable; elsewhere it is unknown, and the cell says
    ``UNKNOWN_HEAVY_TAIL`` (``known_log_mse``). A ratio is a number only where both sides are known; wins, losses
    and ties are counted over those cells only (``ratio_map``), so a heavy-tailed sample never makes a win.
trial-count advice
    A count is advised only where a finite count can work: from the fourth moment where it is known (finite), from
    the sample where its tail looks light; where the fourth moment is infinite or the sample's tail looks heavier
    than a finite variance allows, the words ``NO_TRIAL_COUNT`` instead, and no count above
    ``rfviz.verdicts.rules.PRACTICAL_TRIALS`` is printed as one (``trial_advice``, ``points_trial_advice``).
crowning (the decision core's ranking)
    Rows are ordered by their error with the unreliable ones after every reliable (or not sampled) one
    (``crown_order``); the first row is crowned only if its error was confirmed reliable (``crowned``): an
    unreliable leader is said to be so and is not crowned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .rules import PRACTICAL_TRIALS, TIE_LOG10

UNKNOWN_HEAVY_TAIL = "unknown (heavy tail)"
"""What a ratio-map cell says where neither a tested, agreeing closed form nor a reliable sample gives its MSE."""
NO_TRIAL_COUNT = "no trial count will make this sample reliable"
"""The advice where no finite trial count can work (infinite fourth moment, or a tail heavier than that)."""
CLOSED_FORM, SAMPLED = "closed form", "sampled"
"""Where a known MSE came from."""


def known_log_mse(closed_log_mse: np.ndarray | None, closed_agreed: np.ndarray | bool | None,
                  sampled_log_mse: np.ndarray, sample_reliable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each point's log MSE where it is known, NaN elsewhere, and where it came from.

    Parameters
    ----------
    closed_log_mse : np.ndarray or None
        The closed form per point (None: none).
    closed_agreed : np.ndarray or bool or None
        Per point (or for the whole grid): the closed form was tested there and agreed.
    sampled_log_mse : np.ndarray
        The sampled log MSE per point.
    sample_reliable : np.ndarray
        Per point: the sample is reliable (``rfviz.verdicts``' rule).

    Returns
    -------
    (np.ndarray, np.ndarray)
        log MSE (NaN where unknown) and the source per point: ``"closed form"``, ``"sampled"`` or
        ``UNKNOWN_HEAVY_TAIL``.

    Examples
    --------
    >>> v, s = known_log_mse(None, None, np.array([1.0, 2.0]), np.array([True, False]))
    >>> v.tolist()[0], s.tolist()
    (1.0, ['sampled', 'unknown (heavy tail)'])
    """
    sampled = np.asarray(sampled_log_mse, dtype=float)
    reliable = np.broadcast_to(np.asarray(sample_reliable, dtype=bool), sampled.shape)
    if closed_log_mse is None or closed_agreed is None:
        agreed = np.zeros(sampled.shape, dtype=bool)
        closed = np.full(sampled.shape, np.nan)
    else:
        closed = np.broadcast_to(np.asarray(closed_log_mse, dtype=float), sampled.shape)
        agreed = np.broadcast_to(np.asarray(closed_agreed, dtype=bool), sampled.shape)
    value = np.where(agreed, closed, np.where(reliable, sampled, np.nan))
    source = np.where(agreed, CLOSED_FORM, np.where(reliable, SAMPLED, UNKNOWN_HEAVY_TAIL)).astype(object)
    return value, source


@dataclass(frozen=True)
class RatioMap:
    """log10(MSE_candidate / MSE_other) per point (NaN where either is unknown) and the counts over known cells.

    Parameters
    ----------
    log10_ratio : np.ndarray
        Per point.
    wins, losses, ties : int
        Over the known cells.
    unknown : int
        Cells where either MSE is unknown.
    """

    log10_ratio: np.ndarray
    wins: int
    losses: int
    ties: int
    unknown: int

    def cell_text(self, fmt: str = "{:+.2f}") -> np.ndarray:
        """Each cell as text: the ratio, or ``UNKNOWN_HEAVY_TAIL``.

        Parameters
        ----------
        fmt : str
            Format of a known ratio.

        Returns
        -------
        np.ndarray of str
        """
        flat = [UNKNOWN_HEAVY_TAIL if math.isnan(v) else fmt.format(v) for v in self.log10_ratio.ravel()]
        return np.asarray(flat, dtype=object).reshape(self.log10_ratio.shape)


def ratio_map(candidate_log_mse: np.ndarray, other_log_mse: np.ndarray) -> RatioMap:
    """The ratio map from two *known* log MSEs (``known_log_mse``: NaN where unknown).

    Parameters
    ----------
    candidate_log_mse, other_log_mse : np.ndarray
        Natural logs, NaN where unknown; −inf where exact (both exact: a tie).

    Returns
    -------
    RatioMap

    Examples
    --------
    >>> r = ratio_map(np.array([0.0, np.nan, 1.0]), np.array([1.0, 0.0, 1.0]))
    >>> r.wins, r.losses, r.ties, r.unknown
    (1, 0, 1, 1)
    """
    a = np.asarray(candidate_log_mse, dtype=float)
    b = np.asarray(other_log_mse, dtype=float)
    with np.errstate(invalid="ignore"):
        ratio = (a - b) / math.log(10)
    both_exact = np.isneginf(a) & np.isneginf(b)
    ratio = np.where(both_exact, 0.0, ratio)
    unknown = np.isnan(a) | np.isnan(b)
    ratio = np.where(unknown, np.nan, ratio)
    known = ~np.isnan(ratio)
    return RatioMap(ratio, int(np.sum(known & (ratio < -TIE_LOG10))), int(np.sum(known & (ratio > TIE_LOG10))),
                    int(np.sum(known & (np.abs(ratio) <= TIE_LOG10))), int(np.sum(~known)))


@dataclass(frozen=True)
class TrialAdvice:
    """A trial count that can work, or the words to show instead.

    Parameters
    ----------
    count : int or None
        The count (None: none can work, or none is needed).
    text : str
        The words.
    """

    count: int | None
    text: str


def trial_advice(needed: float, fourth_moment_finite: bool | None, tail_heavy: bool, trials: int) -> TrialAdvice:
    """What to advise for one point: a count only where a finite count can work.

    Parameters
    ----------
    needed : float
        Trials for ±10 % (from the fourth moment where known, else from the sample; NaN: unknown).
    fourth_moment_finite : bool or None
        The fourth moment is known finite (True), known infinite (False) or unknown (None).
    tail_heavy : bool
        The sample's tail looks heavier than a finite variance of the squared errors allows (Hill index, top
        share: ``rfviz.diagnostics``); decides only where the fourth moment is unknown.
    trials : int
        The trials run.

    Returns
    -------
    TrialAdvice

    Examples
    --------
    >>> trial_advice(5000.0, True, False, 2000).count, trial_advice(5000.0, False, False, 2000).text
    (5000, 'no trial count will make this sample reliable')
    >>> trial_advice(457761.0, None, True, 2000).count is None
    True
    """
    if fourth_moment_finite is False or (fourth_moment_finite is None and tail_heavy):
        return TrialAdvice(None, NO_TRIAL_COUNT)
    if needed is None or math.isnan(needed):
        return TrialAdvice(None, "")
    if math.isinf(needed) or needed > PRACTICAL_TRIALS:
        return TrialAdvice(None, f"{NO_TRIAL_COUNT} at a practical count (more than {PRACTICAL_TRIALS:.0e} trials)")
    count = max(math.ceil(needed), int(trials))
    return TrialAdvice(count, "" if count <= trials else f"--trials {count:,} or more")


def points_trial_advice(needed: np.ndarray, fourth_moment_finite: np.ndarray | None, tail_heavy: np.ndarray,
                        points: int, trials: int) -> TrialAdvice:
    """The count that would let ``points`` grid points into a test, counting only points where a finite count can
    work (``trial_advice``); the words where fewer than ``points`` such points exist.

    Parameters
    ----------
    needed : np.ndarray
        Trials each point needs (NaN: unknown).
    fourth_moment_finite : np.ndarray or None
        Per point: True, False or None (unknown); None for the whole grid: unknown everywhere.
    tail_heavy : np.ndarray
        Per point: the sample's tail looks heavy.
    points : int
        How many points the test needs.
    trials : int
        The trials run.

    Returns
    -------
    TrialAdvice

    Examples
    --------
    >>> points_trial_advice(np.array([9e3, 2e4, 5e5]), None, np.array([False, False, True]), 3, 2000).text
    'no trial count will make this sample reliable'
    >>> points_trial_advice(np.array([9e3, 2e4, 5e4]), None, np.array([False, False, False]), 3, 2000).count
    50000
    """
    need = np.asarray(needed, dtype=float).ravel()
    heavy = np.asarray(tail_heavy, dtype=bool).ravel()
    finite4: Sequence[bool | None] = ([None] * need.size if fourth_moment_finite is None
                                      else list(np.asarray(fourth_moment_finite, dtype=object).ravel()))
    counts = sorted(a.count for a in (trial_advice(n, f, h, trials) for n, f, h in zip(need, finite4, heavy,
                                                                                       strict=True))
                    if a.count is not None)
    if len(counts) < points:
        return TrialAdvice(None, NO_TRIAL_COUNT)
    return trial_advice(float(counts[points - 1]), True, False, trials)


def crown_order(errors: Sequence[float | None], reliable: Sequence[bool | None]) -> list[int]:
    """Row order of a ranking: by error, every row confirmed unreliable after the others, rows without an error
    last.

    Parameters
    ----------
    errors : sequence of float or None
        Each row's error (smaller is better).
    reliable : sequence of bool or None
        Each row's verdict (None: not sampled).

    Returns
    -------
    list of int

    Examples
    --------
    >>> crown_order([0.1, 0.05, None, 0.2], [True, False, None, None])
    [0, 3, 1, 2]
    """
    def key(i: int) -> tuple[bool, bool, float]:
        e = errors[i]
        missing = e is None or not math.isfinite(e)
        return missing, reliable[i] is False, math.inf if missing else float(e)

    return sorted(range(len(errors)), key=key)


def crowned(first_reliable: bool | None) -> bool:
    """Whether the first row of a ranking may be named the answer: only a confirmed reliable one.

    Parameters
    ----------
    first_reliable : bool or None
        The first row's verdict (None: not sampled).

    Returns
    -------
    bool

    Examples
    --------
    >>> crowned(True), crowned(None), crowned(False)
    (True, False, False)
    """
    return first_reliable is True
