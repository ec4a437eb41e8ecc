"""
rfviz in a notebook
===================

Every command of the ``rfviz`` program is a Python function that returns a small result object: the numbers are
attributes, ``to_dict()`` is exactly what the command prints with ``--json``, and the figure helpers return Plotly
figures, which show themselves in Jupyter. This page is executed when the documentation is built.
"""

# %%
# One estimator at one pair of inputs
# -----------------------------------
# The trigonometric estimator of the softmax kernel with ``m = 10`` projections, at the pair
# ``x = r·e1, y = r(cos θ·e1 + sin θ·e2)`` in R^4. The closed-form MSE is [HRF] Lemma 2.2
# (derived in the docs: derivations/positive-trig-mse).
import numpy as np

import rfviz
import rfviz.api

res = rfviz.mse("trig", r=1.0, theta=1.0, d=4, m=10)
print(f"K(x, y) = {res.kernel_value:.6f},  MSE = {res.mse:.6f},  log10 MSE = {res.log10_mse:.4f}")

# %%
# The same numbers as the command line's JSON (``rfviz mse trig r=1 theta=1 d=4 m=10 --json``):
res.to_dict()

# %%
# Monte Carlo beside the closed form
# ----------------------------------
# With ``trials`` the engine samples the estimator (on a CUDA GPU when there is one) and says whether the sampled
# MSE can be trusted (heavy tails: see the reliability rules).
res = rfviz.mse("positive_antithetic", r=0.5, theta=1.0, d=8, m=16, trials=4000, seed=0)
mc = res.mc
print(f"closed form {res.mse:.5f};  sampled {mc.mse:.5f} ± {mc.stderr:.5f};  z = {mc.z_vs_closed_form:+.2f};  "
      f"{mc.agreement}, reliable = {mc.reliable}")

# %%
# Where each estimator wins
# -------------------------
# Trig features are exact at θ = 0 and worst at θ = π; positive (++) features the other way round; the angular hybrid
# of [HRF] combines them (its MSE is the corrected eq. 47: derivations/hrf-angular-hybrid).
rfviz.mse_curve(["trig", "positive_antithetic", "hybrid_angular"], r=1.0, d=8, m=16)

# %%
# Coupled projections
# -------------------
# Orthogonal and simplex couplings of the projections ([SimRF]) lower the MSE of positive features. ``density``
# gives the law of ``|ω_i + ω_j|`` and the MSE ratio against iid projections.
coupled = rfviz.density("simplex", d=6, v=np.linspace(0.25, 2.0, 8))
print("MSE ratio simplex / iid (positive features):", np.round(coupled.mse_ratio_vs_iid["positive"], 4))
coupled.figure()

# %%
# Optimal sampling
# ----------------
# [OS] Thm 1: the importance-sampling density Ψ* that minimises the variance, against the Gaussian law of ω.
opt = rfviz.psi("positive", inputs="sphere", r=1.0, d=16)
print(f"V* = {opt.v_opt:.4g}, unweighted = {opt.v_plain:.4g}, gain = {opt.gain:.3g}")
opt.figure()

# %%
# A data set
# ----------
# The expected Gram-matrix error E‖K̂ − K‖²_F of estimators on the queries and keys of a data set, in closed form
# (``repeats=0``; with repeats, its Monte-Carlo twin). ``rfviz.api.gram`` is ``rfviz gram``.
gram = rfviz.api.gram(["trig", "positive_antithetic"], "wine", queries=32, keys=32, m=[16, 64], repeats=0)
for row in gram.results:
    print(f"{row['estimator']:>20}  m = {row['m']:>3}:  E|K̂ - K|²_F = {row['frobenius_sq_closed_form']:.4g}")
