"""Figure builders: plain functions that take arrays and labels and return Plotly figures."""
