"""The invariance lab: what each norm cancels, a shift or a scale swept through both."""
