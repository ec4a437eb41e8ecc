"""The floor of a classroom's browser work: a Streamlit app with nothing but the Hybrid page's r slider and its
λ chart (the same figure, from the same rfviz builders). ``python bench/bench_concurrency.py --app floor`` serves
it instead of app.py: what each browser spends here is what any Streamlit page drawing this Plotly chart costs a
browser per slider move, whatever the app around it does (not a test, not part of the app)."""

import streamlit as st

from rfviz.compute import hrf as ch
from rfviz.figures import hrf as fh

r = st.sidebar.slider("r (input length)", 0.1, 5.0, 1.0, step=0.05, key="hybrid-r")
st.plotly_chart(fh.lambda_figure(ch.lambda_columns("angular", r, 8, 1.0, 10), "angular"), width="stretch",
                key="hyb-lambda", config={"displaylogo": False, "responsive": True})
