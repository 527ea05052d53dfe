"""The residual lab: a residual stream through both norms, and what reaches the next layer."""
