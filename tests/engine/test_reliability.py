"""Heavy-tail-aware Monte Carlo (issue 12 items 1-2, issue 14 item 6): ``MCResult.reliable``/``warning``.

A reliable sampled MSE agrees with the closed form (|z| < 4) for every registered estimator at benign points and
several seeds; the issue's heavy-tailed examples come out unreliable, not as disagreements; precision loss and
exactness are reported as such; the Hill tail index separates light from heavy tails.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rfviz.cli import main as cli_main
from rfviz.diagnostics import Moments, assess_mse, assess_trials, hill_tail_index
from rfviz.engine import monte_carlo
from rfviz.estimators.base import REGISTRY, create
from rfviz.geometry import embed_pair

BENIGN_R = (0.3, 0.6)
BENIGN_THETA = (math.pi / 3, 2 * math.pi / 3)
D = 4
LIGHT_TAILED = ("trig", "positive", "positive_antithetic", "oprf")


def _closed_form_names() -> list[str]:
    names = []
    for name in sorted(REGISTRY):
        try:
            est = create(name)
            est.check_dimension(D)
        except Exception:  # estimators needing other parameters or dimensions are covered elsewhere
            continue
        if est.closed_form_available():
            names.append(name)
    return names


@pytest.mark.slow
@pytest.mark.parametrize("name", _closed_form_names())
def test_reliable_implies_agreement_with_the_closed_form(name):
    est = create(name)
    rr, tt = np.meshgrid(BENIGN_R, BENIGN_THETA)
    x, y = est.grid_pairs(rr, tt, D)
    x, y = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
    log_mse = est.log_mse(x, y, D)
    n_reliable = 0
    for seed in (1, 2, 3):
        res = monte_carlo(est, x, y, d=D, trials=1000, seed=seed, device="cpu")
        assert res.reliable is not None and res.warning is not None
        z = np.asarray(res.z_against(log_mse), float)
        exact = (res.rel_mse == 0) & (res.rel_mse_stderr == 0)
        ok = res.reliable & ~exact
        n_reliable += int(ok.sum())
        assert np.all(np.abs(z[ok]) < 4), (name, seed, z, res.warning)
        assert all((w is None) == bool(r) for w, r in zip(res.warning, res.reliable, strict=True))
    if name in LIGHT_TAILED:  # not a vacuous test: these must have reliable points to compare
        assert n_reliable > 0, f"{name}: no reliable benign point at 1000 trials"


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_issue_gerf_example_is_unreliable_not_a_disagreement(seed, capsys):
    assert cli_main(["mse", "gerf", "r=2", "theta=0", "d=16", "m=10", "--trials", "2000", "--seed", str(seed),
                     "--device", "cpu", "--json"]) == 0
    mc = json.loads(capsys.readouterr().out)["mc"]
    # GERF has a closed-form fourth moment: theory says ±10 % needs ~1e10 trials here (issue 22), whatever the
    # sample shows; the z divides by the predicted standard error (the sampled one is far too small)
    assert mc["reliable"] is False and "closed-form fourth moment" in mc["warning"]
    assert mc["agreement"] == "unreliable"
    assert mc["z_vs_closed_form"] is not None and abs(mc["z_vs_closed_form"]) < 4


@pytest.mark.slow
def test_readme_simplex_example_is_a_real_heavy_tail_not_a_confident_disagreement(capsys):
    # Measured: at 100 000 trials (seeds 5, 6) the sampled MSE agrees with the closed form (z = 0.47, -2.2), so
    # the 5000-trial shortfall is a heavy tail (Hill index ≈ 1.1-1.5), not a wrong formula.
    for seed in (0, 1):
        cli_main(["mse", "positive", "coupling=simplex", "d=16", "m=16", "r=0.8", "theta=1", "--trials", "5000",
                  "--seed", str(seed), "--device", "cpu", "--json"])
        mc = json.loads(capsys.readouterr().out)["mc"]
        assert mc["agreement"] != "disagrees", mc


def test_exact_points_are_reliable_with_zero_bias_z(capsys):
    cli_main(["mse", "trig", "r=1", "theta=0", "d=4", "m=4", "--trials", "200", "--device", "cpu", "--json"])
    mc = json.loads(capsys.readouterr().out)["mc"]
    # exact at round-off (rfviz.verdicts): its own word, not tested, so no z against the closed form
    assert mc["reliable"] is True and mc["bias_z"] == 0.0 and mc["z_vs_closed_form"] is None
    assert mc["agreement"] == "exact"


def test_underflow_is_reported_as_precision_loss():
    # Every estimate 0 while K ≠ 0: the sampled MSE is just K², which must not be reported as reliable.
    rep = assess_trials(100, np.array([1.0, 0.5]), np.array([0.0, 10.0]), np.zeros((2, 32)),
                        underflow=np.array([True, False]))
    assert not rep.reliable[0] and "precision loss" in rep.warning[0] and math.isinf(rep.trials_needed[0])


def test_infinite_fourth_moment_is_unreliable_whatever_the_sample_says():
    rng = np.random.default_rng(0)
    e = rng.exponential(size=4000)
    top = np.sort(e)[-32:]
    light = assess_trials(e.size, np.array([e.mean()]), np.array([((e - e.mean()) ** 2).sum()]), top[None])
    assert light.reliable[0] and light.tail_index[0] > 2
    told = assess_trials(e.size, np.array([e.mean()]), np.array([((e - e.mean()) ** 2).sum()]), top[None],
                         fourth_moment_finite=np.array([False]))
    assert not told.reliable[0] and "fourth moment" in told.warning[0]


def test_gerf_fourth_moment_hook_follows_crt():
    from rfviz.geometry import PairStats
    x, y = embed_pair(1.0, 1.0, 4, "canonical")
    stats = PairStats.of(x[None], y[None])
    assert bool(np.all(create("gerf", A=0.05).fourth_moment_finite(stats)))
    assert not bool(np.any(create("gerf", A=0.07).fourth_moment_finite(stats)))
    assert create("trig").fourth_moment_finite(stats) is None


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [1.0, 3.0])
def test_hill_tail_index_recovers_a_pareto_tail(alpha):
    rng = np.random.default_rng(1)
    x = rng.pareto(alpha, size=(200, 20000)) + 1.0
    top = -np.sort(-x, axis=1)[:, :33]
    est = hill_tail_index(top)
    assert abs(np.median(est) - alpha) < 0.15 * alpha


def test_trials_needed_scales_the_relative_standard_error_to_ten_percent():
    rng = np.random.default_rng(2)
    e = rng.exponential(size=1000)
    rep = assess_trials(e.size, np.array([e.mean()]), np.array([((e - e.mean()) ** 2).sum()]),
                        np.sort(e)[-32:][None])
    rel = math.sqrt(e.var(ddof=1) / e.size) / e.mean()
    assert rep.trials_needed[0] == pytest.approx(math.ceil(e.size * (rel / 0.1) ** 2))


def test_assess_mse_api_is_unchanged():
    assert assess_mse(Moments(100, 0.0, 0.0)).reliable
    assert not assess_mse(Moments(1, 1.0, 0.0)).reliable


@pytest.mark.slow
def test_results_keep_reliability_through_reshape_and_stack():
    from rfviz.engine import monte_carlo_grid, sweep
    res = monte_carlo_grid(create("trig", m=4), [0.5, 1.0], [0.5, 1.0, 1.5], 4, trials=200, device="cpu")
    assert res.reliable.shape == (3, 2) and res.warning.shape == (3, 2) and res.trials_needed.shape == (3, 2)
    x, y = embed_pair(0.5, 1.0, 4, "canonical")
    sw = sweep("trig", "m", [2, 4], None, x, y, trials=200, device="cpu")
    assert sw.reliable.shape == (2,)


@pytest.mark.slow
def test_figures_draw_heavy_tailed_points_hollow_not_as_disagreements():
    from rfviz.compute import explorer as ex
    from rfviz.figures import explorer as fx
    from rfviz.figures.common import lines
    # gerf at r = 2, θ = 0 (the issue's example, d = 16): heavy-tailed, so no red cross, a hollow circle instead.
    r, theta = np.array([0.3, 2.0]), np.array([0.0, 1.0])
    s = ex.sampled_surface("gerf", {"m": 10}, "softmax", 16, r, theta, trials=2000, seed=1, device="cpu")
    assert s.unreliable >= 1 and not s.reliable_mask[1, 0]
    assert not s.disagree_mask[~s.reliable_mask].any()
    rr, tt = np.meshgrid(r, theta, indexing="ij")
    fig = fx.heatmap_figure(r, theta, {"gerf": s.log10_mse}, "log10_mse",
                            {"gerf": (rr[s.disagree_mask], tt[s.disagree_mask])},
                            heavy={"gerf": (rr[~s.reliable_mask], tt[~s.reliable_mask])})
    hollow = [t for t in fig.data if t.type == "scatter" and t.marker.symbol == "circle-open"]
    assert hollow and fx.HEAVY_LABEL in hollow[0].name
    assert "±10 %" in fx.trials_guidance(5000.0, 1000) and "no number" in fx.trials_guidance(math.inf, 1000)
    pts = {"a": (np.arange(3.0), np.ones(3), np.full(3, 0.1), np.array([True, False, True]))}
    names = [t.name for t in lines(np.arange(3.0), {"a": np.ones(3)}, xlabel="x", ylabel="y", points=pts).data]
    assert "a (sampled ±2 SE)" in names and "a (sampled, heavy-tailed: unreliable)" in names


@pytest.mark.slow
def test_engine_flags_estimates_that_all_underflow():
    import torch

    from rfviz.estimators.hrf import Positive

    class Underflows(Positive):  # not registered: every estimate is 0 (as if e^{-big} underflowed)
        def _estimate_softmax(self, samples, x, y, log_scale):
            return torch.zeros(samples["w"].shape[0] if "w" in samples else next(iter(samples.values())).shape[0],
                               x.shape[0], dtype=x.dtype)

    x, y = embed_pair(0.5, 1.0, 4, "canonical")
    res = monte_carlo(Underflows(m=4), x, y, trials=256, device="cpu")
    assert not res.reliable[0] and "precision loss" in res.warning[0]
    assert res.rel_mse[0] == pytest.approx(res.target[0] ** 2)  # the confident K² the flag warns about
