"""Pure plotly figure builders (no Streamlit): one module per topic."""
