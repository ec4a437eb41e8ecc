"""The verdicts of a decision (rfviz.verdicts.decision): which MSE a ratio map may use, trial-count advice only
where a count can work, and crowning a ranking's leader."""

from __future__ import annotations

import numpy as np

from rfviz.compute.decision import Answer
from rfviz.verdicts import (
    NO_TRIAL_COUNT,
    UNKNOWN_HEAVY_TAIL,
    crown_order,
    known_log_mse,
    points_trial_advice,
    ratio_map,
    trial_advice,
)


def test_ratio_map_counts_only_known_cells():
    """A heavy-tailed sample (unreliable) and an untested closed form give unknown cells, never a win or a loss."""
    cand, src = known_log_mse(np.log([1.0, 1.0, 1.0]), np.array([True, False, False]), np.log([50.0, 0.02, 3.0]),
                              np.array([True, False, True]))
    assert src.tolist() == ["closed form", UNKNOWN_HEAVY_TAIL, "sampled"]
    other, _ = known_log_mse(None, None, np.log([1.0, 1.0, 30.0]), np.array([True, True, False]))
    r = ratio_map(cand, other)
    assert (r.wins, r.losses, r.ties, r.unknown) == (0, 0, 1, 2)
    assert r.cell_text().tolist()[1:] == [UNKNOWN_HEAVY_TAIL, UNKNOWN_HEAVY_TAIL]


def test_trial_advice_never_gives_a_count_that_cannot_work():
    assert trial_advice(457761.0, False, False, 2000) == trial_advice(1e3, False, False, 2000)
    assert trial_advice(457761.0, None, True, 2000).count is None
    assert trial_advice(457761.0, None, True, 2000).text == NO_TRIAL_COUNT
    assert trial_advice(3e12, True, False, 2000).count is None
    assert trial_advice(4000.0, True, False, 2000).count == 4000
    heavy = np.array([True, True, False, False])
    assert points_trial_advice(np.array([1e4, 2e4, 3e4, 4e4]), None, heavy, 3, 2000).count is None
    assert points_trial_advice(np.array([1e4, 2e4, 3e4, 4e4]), np.array([False] * 4), ~heavy, 3, 2000).count is None
    assert points_trial_advice(np.array([1e4, 2e4, 3e4, 4e4]), np.array([True] * 4), heavy, 3, 2000).count == 30000


def test_crown_order_puts_unreliable_rows_after_the_others():
    assert crown_order([0.01, 0.02, 0.03], [False, True, None]) == [1, 2, 0]
    assert isinstance(Answer("gram", "softmax", 0.1, {}, (), False, None, {}, False).headline(), str)
