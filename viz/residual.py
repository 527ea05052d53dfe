"""Figures for the residual stream: per-layer readings of both trunks on shared axes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import style

COLUMNS = 2


def layers_figure(
    layers: np.ndarray,
    readings: Mapping[str, Mapping[str, np.ndarray]],
    panels: Sequence[str],
    labels: Mapping[str, str],
) -> go.Figure:
    """One panel per quantity in ``panels``, reading against layer index, both norms per panel.

    ``readings[norm][quantity]`` has the same length as ``layers``; ``labels`` names the norms
    ("layer", "rms"), the x axis ("layer_axis") and every quantity in ``panels`` (short: two
    panel titles share a phone's width).
    """
    rows = math.ceil(len(panels) / COLUMNS)
    fig = make_subplots(
        rows=rows,
        cols=COLUMNS,
        shared_xaxes=True,
        vertical_spacing=0.1,
        horizontal_spacing=0.1,
        subplot_titles=[labels[q] for q in panels],
    )
    series = (("rms", style.RMS, "solid"), ("layer", style.LAYER, "dash"))
    # Markers only while they stay apart; a 48-layer line reads better without them.
    mode = "lines+markers" if len(layers) <= 25 else "lines"
    for index, quantity in enumerate(panels):
        row, col = index // COLUMNS + 1, index % COLUMNS + 1
        for norm, color, dash in series:
            fig.add_trace(
                go.Scatter(
                    x=layers,
                    y=readings[norm][quantity],
                    name=labels[norm],
                    mode=mode,
                    marker={"color": color, "symbol": style.SYMBOLS[norm], "size": 7},
                    line={"color": color, "dash": dash, "width": 2.5},
                    legendgroup=norm,
                    showlegend=index == 0,
                    hovertemplate="l = %{x}<br>%{y:.4g}<extra>" + labels[norm] + "</extra>",
                ),
                row=row,
                col=col,
            )
        # Every panel includes 0 so that a flat reading (the norm's length, sqrt(d)) looks flat
        # instead of being zoomed in on its last digits.
        fig.update_yaxes(rangemode="tozero", row=row, col=col)
        if row == rows:
            fig.update_xaxes(title_text=labels["layer_axis"], row=row, col=col)
    height, top, bottom = 300 * rows + 130, 130, 50
    style.base_layout(fig, height=height)
    fig.update_annotations(font_size=style.FONT_SIZE)
    # The legend goes above the subplot titles: 55 px above the plot area.
    fig.update_layout(
        margin={"t": top, "b": bottom}, legend={"y": 1 + 55 / (height - top - bottom)}
    )
    return fig
