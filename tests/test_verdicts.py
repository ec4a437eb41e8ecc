"""rfviz.verdicts: one rule each (issue 28) — the round-off floor, exactness for closed form and sample alike, the
single-point and family rules, the words past a practical trial count, the Gram theory bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rfviz import verdicts as v


def test_roundoff_floor_is_the_derived_bound():
    eps = np.finfo(float).eps
    assert v.roundoff_floor(16, 10) == pytest.approx((16 * (16 + 10 + 8) * eps) ** 2, rel=1e-15)
    assert v.roundoff_floor(1000, 1000) > v.roundoff_floor(16, 10) > 0
    assert v.roundoff_floor(16, 10, eps=np.finfo(np.float32).eps) > 1e-12  # a float32 run: its own floor


def test_exact_at_roundoff_applies_to_closed_form_and_sample_alike():
    floor = v.roundoff_floor(16, 10)
    # the sweep point: sample 1e-33 (round-off) against a closed form of 0 -> exact
    assert v.exact_at_roundoff(0.0, 1e-33, floor).item()
    # either side above the floor -> not exact: a real difference is tested
    assert not v.exact_at_roundoff(0.0, 1e-20, floor).item()
    assert not v.exact_at_roundoff(1e-20, 0.0, floor).item()
    assert not v.exact_at_roundoff(None, None, floor).item()


def test_one_agreement_rule_for_a_point_and_a_family():
    assert v.agreement(2.5, True) == "agrees" and v.agreement(2.6, True) == "disagrees"  # 1 %: |z| > 2.576
    assert v.agreement(50.0, False) == "unreliable" and v.agreement(None, True) is None
    assert v.agreement(1e30, True, exact=True) == "exact"
    words = v.family_agreement([2.8, 0.1, 4.0], [True, True, True])  # Holm: 4.0 ≤ .01/3; then p(2.8) = .0051 > .01/2
    assert words == ["agrees", "agrees", "disagrees"]
    assert v.bonferroni_disagrees(3.0, True, 3) and not v.bonferroni_disagrees(3.0, True, 5)  # p = .0027
    assert not v.bonferroni_disagrees(30.0, False, 1) and not v.bonferroni_disagrees(30.0, True, 1, exact=True)


def test_words_replace_impractical_counts():
    assert v.practical_count(3.1e28) is None and v.practical_count(math.inf) is None
    assert v.practical_count(1e9) == 1_000_000_000
    text = v.trials_needed_text(3.1e28, 2000)
    assert "not informative at any practical trial count" in text and "31" not in text
    assert "no number of trials" in v.trials_needed_text(math.inf, 2000)
    assert v.trials_needed_text(5000, 2000) == "±10 % needs ≈ 5,000 trials (now 2,000)"
    assert v.trials_needed_text(100, 2000) == "2,000 trials give ±10 % or better"
    report = v.theory_reliability(np.log(1.0), np.log(1e30), 2000)
    assert not report.reliable and "not informative at any practical" in report.warning[()]


def test_gram_theory_bound():
    # one pair: the bound is exact, Var e² = E e⁴ − MSE²
    one = v.gram_theory(np.log([2.0]), np.log([12.0]), 200)
    assert one.rel_stderr_bound == pytest.approx(math.sqrt((12 / 4 - 1) / 200))
    assert one.reliable and one.repeats_needed == 200
    # many pairs perfectly correlated (the bound's equality case): (Σ√E e⁴)² − (Σ MSE)² over (Σ MSE)²
    many = v.gram_theory(np.log([2.0, 1.0]), np.log([12.0, 3.0]), 100)
    assert many.rel_stderr_bound == pytest.approx(math.sqrt(((math.sqrt(12) + math.sqrt(3)) ** 2 / 9 - 1) / 100))
    inf = v.gram_theory(np.log([1.0, 1.0]), np.array([0.0, np.inf]), 300)
    assert not inf.reliable and math.isinf(inf.repeats_needed) and "no" in inf.warning
    exact = v.gram_theory(np.array([-np.inf]), np.array([-np.inf]), 10)
    assert exact.reliable


def test_holm_controls_the_family_wise_error_with_exact_points_left_out():
    rng = np.random.default_rng(1)
    z = rng.standard_normal((5000, 49))
    exact = np.zeros(49, bool)
    exact[::7] = True
    z[:, exact] = 1e6  # round-off "z" at exact points must not count
    rate = np.mean([v.family_disagreements(row, None, exact).any() for row in z])
    assert rate <= v.FWER_LEVEL + 3 * math.sqrt(v.FWER_LEVEL / len(z))
