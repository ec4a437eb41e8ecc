"""Compute layer: everything the figures draw is computed here (Monte Carlo through the engine, closed forms on
grids, statistics, uploaded files, estimator-catalog queries). rfviz.figures only draws what these functions return.
"""
