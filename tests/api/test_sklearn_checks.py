"""scikit-learn's ``check_estimator`` on every mode RandomFeatures' docstring lists as supported (the default
Gaussian kernel), and the one-feature message scikit-learn expects from the simplex couplings."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_estimator

from rfviz.params import ParameterError
from rfviz.sklearn import RandomFeatures

COUPLINGS = ("iid", "orthogonal", "simplex", "simplex_plus", "sorf", "fastfood", "qmc_sobol", "qmc_halton")
MODES = [(name, c) for name in ("trig", "positive", "positive_antithetic") for c in COUPLINGS]
MODES += [("trig_phase", None), ("complex_exponential", None), ("gerf", None)]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "coupling"), MODES, ids=[f"{n}-{c}" for n, c in MODES])
def test_check_estimator_passes(name: str, coupling: str | None) -> None:
    est = RandomFeatures(name, coupling=coupling, random_state=0)
    results = check_estimator(est, on_fail=None)
    assert len(results) > 40
    failed = {r["check_name"]: str(r["exception"])[:200] for r in results if r["status"] == "failed"}
    assert failed == {}


def test_the_docstring_lists_these_modes() -> None:
    notes = RandomFeatures.__doc__
    for word in ("``trig``", "``trig_phase``", "``positive``", "``positive_antithetic``", "``complex_exponential``",
                 "``gerf``", *COUPLINGS):
        assert word.strip("`") in notes


@pytest.mark.parametrize("coupling", ["simplex", "simplex_plus"])
def test_simplex_couplings_refuse_one_feature_naming_the_count(coupling: str) -> None:
    with pytest.raises(ParameterError, match=r"1 feature\(s\)"):
        RandomFeatures("trig", coupling=coupling).fit(np.ones((4, 1)))
    assert RandomFeatures("trig", coupling=coupling).fit(np.ones((4, 2))).n_output_features_ == 100
