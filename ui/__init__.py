"""Streamlit-side helpers shared by the pages: texts, link parameters, page frame."""
