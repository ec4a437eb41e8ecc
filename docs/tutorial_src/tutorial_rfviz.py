"""
rfviz in a notebook
===================

Closed forms, Monte Carlo and figures from Python.
"""

# %%
# Closed form of the trigonometric estimator's MSE at one pair of inputs.
import rfviz

est = rfviz.create("trig", m=10)
print(est)
