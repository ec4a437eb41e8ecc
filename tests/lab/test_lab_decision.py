"""Issue 39's false wins: the lab's ratio map uses a closed form only where it was tested and agreed, a sampled MSE
only where that sample is reliable, and says "unknown (heavy tail)" elsewhere; its trial advice never names a count
that cannot work."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from rfviz import lab, plugins

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_docs_plugin_template_gets_no_win_or_loss_where_its_sample_is_heavy_tailed(tmp_path):
    """The how-to's template (plain positive features, no closed form) against the built-in positive features on
    a grid reaching r = 1.5, θ = 0 (|x + y| = 3: a heavy tail): no cell with an unreliable sample is a win, a loss
    or a tie, and the counts add up to the grid."""
    readme = (ROOT / "docs" / "howto" / "own-estimator.md").read_text()
    path = tmp_path / "template.py"
    path.write_text(readme.split("```python\n", 1)[1].split("```", 1)[0])
    (cls,) = plugins.load_plugin(f"{path}:MyEstimator")
    report = lab.check(cls, r=(0.5, 1.0, 1.5), theta=(0.0, 1.5, 3.0), compare=("positive",), trials=4000)
    c = report.comparisons[0]
    heavy = ~np.asarray(report.informative, bool) & ~np.asarray(report.exact, bool)
    assert heavy.any(), "the grid must reach a heavy-tailed point for this test to mean anything"
    assert np.all(np.isnan(c.log10_ratio[heavy]))
    assert c.wins + c.losses + c.ties + c.unknown == c.log10_ratio.size and c.unknown >= int(heavy.sum())
    assert "unknown (heavy tail)" in report.to_text()
