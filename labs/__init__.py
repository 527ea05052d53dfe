"""One folder a lab: its model (no streamlit, no plotly), figures, sections and code snippet."""
