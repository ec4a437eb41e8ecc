"""rfviz home page: ``streamlit run app.py``. Pages live in pages/ (see the navigation)."""

import streamlit as st

import rfviz

st.set_page_config(page_title="rfviz: random-feature atlas", layout="wide")
st.title("rfviz: the atlas of random-feature kernel estimators")
st.markdown(
    "Explore how the mean squared error of random-feature estimators of the softmax, Gaussian and "
    "dot-product kernels moves with their parameters, analytic and sampled side by side."
)
st.subheader("Estimators")
st.dataframe(
    [{"name": c.name, "title": c.title, "reference": c.reference} for c in rfviz.REGISTRY.values()],
    hide_index=True,
)
