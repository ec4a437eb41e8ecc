"""Plotly figure builders: pure functions (numpy in, plotly Figure out), no Streamlit.

``common`` holds shared building blocks; one module per app page (explorer, hybrid, gerf, coupling,
optimal_sampling, dot_product). Import the submodule you need: this package imports nothing by itself.
"""
