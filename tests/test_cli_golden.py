"""The CLI's ``--json`` output is byte-identical to the golden files under ``tests/golden/``.

The golden files were written by the code on main (0065e1c) BEFORE the API became the ``rfviz/api/`` package of
typed results (issue 37, parts 1-2), by running exactly the commands below; they are never regenerated from the code
under test. The commands are the README's "From the command line" ones (``rank-estimators`` and ``downstream`` as
given; they take a few seconds each), plus small runs of the other JSON commands (density, psi, gram, check).
No rule changed on purpose: every output must match byte for byte.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from rfviz.cli import main

GOLDEN = Path(__file__).parent / "golden"

COMMANDS: dict[str, list[str]] = {
    "mse_trig": ["mse", "trig", "r=1", "theta=1", "d=4", "m=10", "--trials", "5000", "--json"],
    "mse_closed_form": ["mse", "positive_antithetic", "r=0.5", "theta=1.0", "d=4", "m=10", "--json"],
    "features_needed_trig": ["features-needed", "trig", "eps=0.1", "r=1", "theta=1", "d=16", "--json"],
    "rank_estimators_wine": ["rank-estimators", "--data", "wine", "--json"],
    "downstream_ridge_synthetic": ["downstream", "--task", "ridge", "--data", "synthetic", "--repeats", "4",
                                   "--json"],
    "density_orthogonal": ["density", "coupling=orthogonal", "d=6", "w=0.5,1,1.5", "v=0.5,1", "--json"],
    "psi_positive": ["psi", "mechanism=positive", "inputs=sphere", "d=4", "grid=16", "--json"],
    "gram_iris": ["gram", "trig,positive", "--data", "iris", "--queries", "8", "--keys", "8", "--m", "4,16",
                  "--repeats", "10", "--json"],
    "check_trig": ["check", "trig", "m=4", "--trials", "2000", "--r", "1", "--theta", "2", "--no-features",
                   "--compare", "", "--d", "3", "--json"],
}


def run_cli(argv: list[str]) -> tuple[int, str]:
    """Run ``rfviz ARGV`` in-process; returns (exit code, stdout)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_cli_json_matches_golden(name: str) -> None:
    code, stdout = run_cli(COMMANDS[name])
    assert code == 0, f"rfviz {' '.join(COMMANDS[name])} exited with {code}"
    expected = (GOLDEN / f"{name}.json").read_text()
    assert stdout == expected, f"rfviz {' '.join(COMMANDS[name])}: the JSON differs from tests/golden/{name}.json"


if __name__ == "__main__":  # how the golden files were written (on main, before the change)
    for key, argv in COMMANDS.items():
        rc, text = run_cli(argv)
        assert rc == 0, (key, rc)
        (GOLDEN / f"{key}.json").write_text(text)
