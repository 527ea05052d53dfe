"""Figures for the residual stream: per-layer readings of several models on shared axes, and
the magnitude of every coordinate of the stream, layer by layer."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit import style

COLUMNS = 2
# Colour, dash and marker of each series: RMSNorm first, then LayerNorm, then no norm (grey,
# as the training lab draws it).
SERIES = {
    "rms": (style.RMS, "solid", style.SYMBOLS["rms"]),
    "layer": (style.LAYER, "dash", style.SYMBOLS["layer"]),
    "none": (style.INPUT, "dot", style.SYMBOLS["input"]),
}
# Cividis reads in order for every common colour-vision deficiency and in greyscale.
HEAT_SCALE = "Cividis"


# The colour bar's text at the figure's size (the page's ui.frame.readable sizes the rest).
TEXT = {"size": style.FONT_SIZE}


def layers_figure(
    layers: np.ndarray,
    readings: Mapping[str, Mapping[str, np.ndarray]],
    panels: Sequence[str],
    labels: Mapping[str, str],
    norms: Sequence[str] = ("rms", "layer"),
) -> go.Figure:
    """One panel per quantity in ``panels``, reading against layer index, every model per panel.

    ``readings[norm][quantity]`` has the same length as ``layers``, for each norm of ``norms``
    (keys of ``SERIES``); ``labels`` names the norms, the x axis ("layer_axis") and every
    quantity in ``panels`` (short: two panel titles share a phone's width)."""
    rows = math.ceil(len(panels) / COLUMNS)
    fig = make_subplots(
        rows=rows,
        cols=COLUMNS,
        shared_xaxes=True,
        vertical_spacing=0.1,
        horizontal_spacing=0.1,
        subplot_titles=[style.wrap(labels[q], 140) for q in panels],  # on a phone's half
    )
    # Markers only while they stay apart; a 48-layer line reads better without them.
    mode = "lines+markers" if len(layers) <= 25 else "lines"
    for index, quantity in enumerate(panels):
        row, col = index // COLUMNS + 1, index % COLUMNS + 1
        for norm in norms:
            color, dash, symbol = SERIES[norm]
            fig.add_trace(
                go.Scatter(
                    x=layers,
                    y=readings[norm][quantity],
                    name=labels[norm],
                    mode=mode,
                    marker={"color": color, "symbol": symbol, "size": 7},
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
    if len(layers) <= 8:
        # A few layers: a tick at each, never a half layer.
        fig.update_xaxes(tickmode="array", tickvals=list(layers))
    height, top, bottom = 300 * rows + 130, 130, 50
    style.base_layout(fig, height=height)
    # The legend goes above the subplot titles: 55 px above the plot area.
    fig.update_layout(
        margin={"t": top, "b": bottom}, legend={"y": 1 + 55 / (height - top - bottom)}
    )
    return fig


def coordinates_figure(
    relative: Mapping[str, np.ndarray], norms: Sequence[str], labels: Mapping[str, str]
) -> go.Figure:
    """One heat map per model, stacked: layer l (rows) against coordinate i (columns), coloured
    by the coordinate's mean magnitude over that layer's median coordinate.

    ``relative[norm]`` has shape (L + 1, d); ``labels`` names the norms, the axes
    ("layer_axis", "coordinate_axis") and the colour bar ("times_median"). One colour scale
    for every panel, from 0 to the largest value."""
    top = max(float(np.max(relative[n])) for n in norms)
    fig = make_subplots(
        rows=len(norms),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.12,
        subplot_titles=[labels[n] for n in norms],
    )
    for row, norm in enumerate(norms, start=1):
        z = np.asarray(relative[norm])
        fig.add_trace(
            go.Heatmap(
                z=z,
                name=labels[norm],
                x=np.arange(z.shape[1]),
                y=np.arange(z.shape[0]),
                coloraxis="coloraxis",
                hovertemplate="l = %{y}, i = %{x}<br>%{z:.3g}<extra>" + labels[norm] + "</extra>",
            ),
            row=row,
            col=1,
        )
        fig.update_yaxes(
            title_text=labels["layer_axis"],
            tickmode="array",
            tickvals=list(range(z.shape[0])),
            autorange="reversed",
            row=row,
            col=1,
        )
    fig.update_xaxes(title_text=labels["coordinate_axis"], row=len(norms), col=1)
    # The colour bar lies in the bottom margin, below the coordinate axis and its title.
    top_margin, bottom_margin = 60, 180
    height = 200 * len(norms) + top_margin + bottom_margin
    style.base_layout(fig, height=height)
    fig.update_layout(
        # 80 px on the left: the layer axis title beside its ticks.
        margin={"t": top_margin, "b": bottom_margin, "r": 20, "l": 80},
        coloraxis=_colour_axis(top, labels["times_median"], height - top_margin - bottom_margin),
    )
    return fig


def _colour_axis(top: float, title: str, plot_height: int) -> dict:
    """One colour scale from 0 to ``top``, its bar laid flat 110 px under the panels (which
    leaves their whole width to the coordinates)."""
    return {
        "colorscale": HEAT_SCALE,
        "cmin": 0.0,
        "cmax": top,
        "colorbar": {
            "title": {"text": title, "side": "top", "font": TEXT},
            "tickfont": TEXT,
            "orientation": "h",
            "y": -110 / plot_height,
            "yanchor": "top",
            "thickness": 14,
            "len": 1.0,
        },
    }
