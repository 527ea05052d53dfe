"""Figures for the contracts lesson: two presets' outputs and their per-coordinate difference."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit import style

# Above this width per-point markers are unreadable: draw lines only.
MARKER_WIDTH = 128


def contract_figure(
    y_a: np.ndarray, y_b: np.ndarray, delta: np.ndarray, labels: Mapping[str, str]
) -> go.Figure:
    """Top: both outputs per coordinate on one axis. Bottom: Δ = y_B − y_A on its own axis,
    since a contract difference can be a million times smaller than the outputs."""
    d = y_a.shape[-1]
    index = np.arange(d)
    mode = "lines+markers" if d <= MARKER_WIDTH else "lines"
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.1,
        row_heights=[0.55, 0.45],
        subplot_titles=(labels["outputs"], labels["delta_title"]),
    )
    hover = "i = %{x}<br>%{y:.6g}"
    # Both sides are RMSNorms: neither takes LayerNorm's blue or RMSNorm's vermillion.
    for values, key, colour, kind in (
        (y_a, "a", style.EXTRA[1], "layer"),
        (y_b, "b", style.EXTRA[2], "rms"),
    ):
        trace = style.line(
            index, values, labels[key], colour, kind=kind, size=7, width=2, mode=mode, hover=hover
        )
        fig.add_trace(trace, row=1, col=1)
    fig.add_trace(
        go.Bar(
            x=index,
            y=delta,
            name=labels["delta"],
            marker={"color": style.ACCENT},
            hovertemplate="i = %{x}<br>Δ = %{y:.3g}<extra></extra>",
        ),
        row=2,
        col=1,
    )
    fig.update_xaxes(title_text=labels["coordinate"], row=2, col=1)
    fig.update_yaxes(title_text=labels["value"], row=1, col=1)
    fig.update_yaxes(title_text="Δ", exponentformat="power", row=2, col=1)
    style.base_layout(fig, height=640)
    # The legend goes under the plot: above it, it would sit on the first subplot's title.
    fig.update_layout(
        margin={"t": 50, "b": 120},
        bargap=0.1,
        legend={"orientation": "h", "yanchor": "top", "y": -0.12, "x": 0},
    )
    return fig
