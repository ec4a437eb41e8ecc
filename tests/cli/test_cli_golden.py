"""The CLI's ``--json`` output equals the golden files under ``tests/cli/golden/`` (byte for byte on this machine;
on another machine a float may move in its last digits, relative 1e-15, from its BLAS and CPU: ``ROUNDING``).

The golden files were written by the code on main (0065e1c) BEFORE the API became the ``rfviz/api/`` package of
typed results (issue 37, parts 1-2), by running exactly the commands below; they are never regenerated from the code
under test. The commands are the README's "From the command line" ones (``rank-estimators`` and ``downstream`` as
given; they take a few seconds each), plus small runs of the other JSON commands (density, psi, gram, check).
One rule changed on purpose since: the seed rule (issue 37, part 4: every derived seed comes from
``numpy.random.SeedSequence`` through ``rfviz.sampling.spawn_seed``, no hand-written ``seed * 7919 + r``). It changes
the sampled numbers of the four commands in ``SEED_RULE_CHANGED`` and nothing else: their pre-change outputs are kept
in ``golden/before_seed_rule/`` and every field outside the sampled ones (the regular expressions below) must still
equal them; their current outputs, written once after that change, are the golden files byte for byte (two of
them, downstream and gram, written again after issue 40 formed the feature maps in a numerically safe way: their
sampled numbers moved in the last digits, relative 1e-14). Every other
output must match its pre-change golden file byte for byte.
A second rule changed on purpose (issue 39): one set of data defaults for the app, the CLI and the API
(``rfviz.data.DATA_DEFAULTS``: standardize then scale to mean norm 0.5, where the CLI had centre then scale to 1). It
changes the data, hence every number, of the commands in ``DATA_DEFAULTS_CHANGED``; their pre-change outputs are kept
in ``golden/before_data_defaults/`` and must still be reproduced byte for byte when the old defaults are given as
flags (so nothing but the defaults changed); their current outputs are the golden files.
A third rule changed on purpose since: the lab's extra pairs (issue 41: |x| ≠ |y| pairs at the grid's smallest and
middle r with the shorter side alternating, the extra pairs run with 4× the trials, each row states its trials) and
three new report keys (``closed_form_unequal``: the closed-form test's power at |x| ≠ |y|; ``rotation`` and
``direction_dependent``: the rotation test, not run for an isotropic estimator such as trig). It changes
``check_trig`` in the fields of ``AUDIT_RULE_CHANGED`` only: its output before that change is kept in
``golden/before_audit_rule/`` (the seed-rule test compares against it), its current output is the golden file.
A fourth rule changed on purpose (2026-11-28): a Gram row's z against its closed form is corrected for the skewness
of its repeats (``rfviz.verdicts.skew_corrected_z``). It changes ``z_vs_closed_form`` of ``gram_iris`` only; the
output before it is kept in ``golden/before_skew_rule/``.
"""

from __future__ import annotations

import contextlib
import io
import json
import operator
import re
from collections.abc import Callable
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


# command -> the JSON paths whose numbers are sampled, so the seed rule changed them (nothing else may differ)
SEED_RULE_CHANGED: dict[str, str] = {
    "mse_trig": r"^/mc/",
    "downstream_ridge_synthetic": r"^/rows\[\d+\]/(error|stderr)$|^/spearman_kernel_vs_downstream$",
    "gram_iris": r"^/results\[\d+\]/(attention_l1|attention_l1_stderr|frobenius_sq_mc|stderr|z_vs_closed_form)$",
    "check_trig": r"^/(bias|closed_form)/(kurtosis|p|z)\b|^/closed_form/(detectable_rel_error|verdict)$"
                  r"|^/extra_pairs\[\d+\]/(cf_z|z)$|^/summary$",
}


# command -> the JSON paths the skewness-corrected z changed (nothing else may differ)
SKEW_RULE_CHANGED: dict[str, str] = {"gram_iris": r"^/results\[\d+\]/z_vs_closed_form$"}

# command -> the flags that give the data defaults it had before issue 39
DATA_DEFAULTS_CHANGED: dict[str, list[str]] = {
    "gram_iris": ["--preprocess", "center,scale", "--scale", "1"],
    "rank_estimators_wine": ["--preprocess", "center,scale", "--scale", "1"],
}

# command -> the JSON paths the lab's extra-pair rule and new report keys changed (issue 41; nothing else may differ)
AUDIT_RULE_CHANGED: dict[str, str] = {
    "check_trig": r"^/extra_pairs\[\d+\]/(cf_z|z|trials|norm_x|norm_y)$|^/closed_form/(detectable_rel_error|verdict)$"
                  r"|^/(closed_form_unequal|rotation|direction_dependent)$",
}


def differing_paths(before: object, after: object, path: str = "",
                    same: Callable[[object, object], bool] = operator.eq) -> list[str]:
    """The JSON paths (``/key[i]/...``) where two parsed documents differ (a key present in one only counts); two
    leaves are equal when ``same`` says so."""
    if isinstance(before, dict) and isinstance(after, dict):
        return [p for k in sorted(set(before) | set(after))
                for p in ([f"{path}/{k}"] if k not in before or k not in after
                          else differing_paths(before[k], after[k], f"{path}/{k}", same))]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [p for i, (x, y) in enumerate(zip(before, after, strict=True))
                for p in differing_paths(x, y, f"{path}[{i}]", same)]
    return [] if same(before, after) else [path]


ROUNDING = 1e-9  # relative: another machine's BLAS and CPU move the last digits of a float (1e-15), nothing else


def _same_up_to_rounding(before: object, after: object) -> bool:
    """Equal, except that two floats may differ by ``ROUNDING`` relative (a bool or int must be equal)."""
    if isinstance(before, float) and isinstance(after, float):
        return before == after or abs(before - after) <= ROUNDING * max(abs(before), abs(after))
    return before == after


def rounding_paths(before: object, after: object) -> list[str]:
    """The JSON paths where two parsed documents differ by more than rounding (see ``differing_paths``)."""
    return differing_paths(before, after, same=_same_up_to_rounding)


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
    if stdout == expected:
        return
    changed = rounding_paths(json.loads(expected), json.loads(stdout))
    assert not changed, f"rfviz {' '.join(COMMANDS[name])}: differs from golden/{name}.json at {changed}"
    assert stdout.splitlines()[0] == expected.splitlines()[0]  # the layout too, up to the last digits


@pytest.mark.parametrize("name", sorted(SEED_RULE_CHANGED))
def test_the_seed_rule_changed_only_sampled_numbers(name: str) -> None:
    before = json.loads((GOLDEN / "before_seed_rule" / f"{name}.json").read_text())
    later = GOLDEN / "before_audit_rule" / f"{name}.json"  # the output the seed rule gave, before issue 41's change
    folder = GOLDEN / "before_data_defaults" if name in DATA_DEFAULTS_CHANGED else GOLDEN  # the seed rule's output
    after = json.loads((later if later.exists() else folder / f"{name}.json").read_text())
    changed = differing_paths(before, after)
    assert changed, f"{name}: the seed rule changed nothing; its pre-change golden file should be the golden file"
    unexpected = [p for p in changed if not re.search(SEED_RULE_CHANGED[name], p)]
    assert not unexpected, f"{name}: fields other than sampled numbers changed: {unexpected}"


@pytest.mark.parametrize("name", sorted(DATA_DEFAULTS_CHANGED))
def test_the_data_defaults_changed_only_the_defaults(name: str) -> None:
    code, stdout = run_cli(COMMANDS[name][:-1] + DATA_DEFAULTS_CHANGED[name] + ["--json"])
    assert code == 0
    before = json.loads((GOLDEN / "before_data_defaults" / f"{name}.json").read_text())
    # sampled numbers only (gram_iris's Monte Carlo, whose last digits main itself no longer reproduces: see
    # test_cli_json_matches_golden[gram_iris] on main at bfccbf1); everything else byte for byte as before
    changed = [p for p in rounding_paths(before, json.loads(stdout))
               if not (name in SEED_RULE_CHANGED and re.search(SEED_RULE_CHANGED[name], p))]
    assert not changed, f"{name}: with the old defaults as flags, fields other than sampled numbers changed: {changed}"
    now = json.loads((GOLDEN / f"{name}.json").read_text())
    assert now["data"]["preprocess"] == ["standardize", "scale"] and now["data"]["scale"] == 0.5


# (folder of the outputs before the rule, the changed paths per command) of the rules that changed a golden file
RULE_CHANGES = {"audit": ("before_audit_rule", AUDIT_RULE_CHANGED), "skew": ("before_skew_rule", SKEW_RULE_CHANGED)}


@pytest.mark.parametrize(("rule", "name"), [(r, n) for r, (_, paths) in RULE_CHANGES.items() for n in sorted(paths)])
def test_a_rule_change_changed_only_its_fields(rule: str, name: str) -> None:
    folder, paths = RULE_CHANGES[rule]
    before = json.loads((GOLDEN / folder / f"{name}.json").read_text())
    after = json.loads((GOLDEN / f"{name}.json").read_text())
    changed = differing_paths(before, after)
    assert changed, f"{name}: the {rule} rule changed nothing; its pre-change golden file should be the golden file"
    unexpected = [p for p in changed if not re.search(paths[name], p)]
    assert not unexpected, f"{name}: fields the {rule} rule does not govern changed: {unexpected}"


if __name__ == "__main__":  # how the golden files were written (on main before the change; SEED_RULE_CHANGED after it)
    for key, argv in COMMANDS.items():
        rc, text = run_cli(argv)
        assert rc == 0, (key, rc)
        (GOLDEN / f"{key}.json").write_text(text)
