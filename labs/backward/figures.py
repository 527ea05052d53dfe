"""Figures for the backward pass: both Jacobians as heatmaps, their spectra, gradients."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit import style

# Red for positive, blue for negative, white for zero: a diverging scale that stays readable
# with red-green colour blindness (it runs red to blue, never through green).
HEATMAP_SCALE = "RdBu_r"


def jacobian_figure(j_rms: np.ndarray, j_layer: np.ndarray, labels: Mapping[str, str]) -> go.Figure:
    """The two (d, d) Jacobians side by side on one colour scale centred at zero.

    Row i, column j is dy_i/dx_j. One shared range lets the reader compare magnitudes across
    the two panels; the diagonal is the 1/r or 1/sigma each coordinate passes on to itself."""
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=(labels["rms"], labels["layer"]), horizontal_spacing=0.06
    )
    reach = float(max(np.max(np.abs(j_rms)), np.max(np.abs(j_layer)))) or 1.0
    # The colour bar lies under both panels, so that on a phone they share the whole width.
    bar = {"title": {"text": labels["colorbar"], "side": "right"}, "orientation": "h", "len": 0.75}
    bar.update(thickness=14, yref="container", y=0, yanchor="bottom")
    for col, matrix, key in ((1, j_rms, "rms"), (2, j_layer, "layer")):
        fig.add_trace(
            go.Heatmap(
                z=matrix,
                name=labels[key],
                zmin=-reach,
                zmax=reach,
                zmid=0.0,
                colorscale=HEATMAP_SCALE,
                showscale=col == 2,
                colorbar=bar,
                hovertemplate=(
                    f"{labels['row']} %{{y}}<br>{labels['col']} %{{x}}<br>%{{z:.4g}}<extra></extra>"
                ),
            ),
            row=1,
            col=col,
        )
        # Square cells, the axes exactly the matrix: each panel shrinks to a square (towards the
        # other) instead of its range growing past the matrix. The rows are the first panel's.
        square = {"constrain": "domain", "row": 1, "col": col}
        fig.update_yaxes(autorange="reversed", scaleanchor=f"x{col}", **square)
        fig.update_yaxes(showticklabels=col == 1, **square)
        toward = "right" if col == 1 else "left"
        fig.update_xaxes(title_text=labels["col"], constraintoward=toward, **square)
    fig.update_yaxes(title_text=labels["row"], row=1, col=1)
    # Each title over its panel's inner edge, where the shrunken panels meet.
    left, right = fig.layout.annotations
    left.update(x=fig.layout.xaxis.domain[1], xanchor="right")
    right.update(x=fig.layout.xaxis2.domain[0], xanchor="left")
    # A phone's square at d = 8 (its panel is about 130 px wide), taller for more rows.
    plot = min(max(20 * j_rms.shape[0], 160), 560)
    style.base_layout(fig, height=plot + 180)
    fig.update_layout(margin={"t": 60, "b": 120, "l": 55, "r": 10})
    return fig


def spectrum_figure(
    eig_rms: np.ndarray, eig_layer: np.ndarray, labels: Mapping[str, str]
) -> go.Figure:
    """Eigenvalues of both Jacobians in ascending order; the zeros are the flattened directions."""
    fig = go.Figure()
    hover = "k = %{x}<br>λ = %{y:.4g}"
    for values, key, color in ((eig_rms, "rms", style.RMS), (eig_layer, "layer", style.LAYER)):
        index = np.arange(1, values.shape[-1] + 1)
        fig.add_trace(
            style.line(index, values, labels[key], color, kind=key, size=10, width=1.5, hover=hover)
        )
    fig.add_hline(y=0, line={"color": style.MUTED, "width": 1})
    fig.update_xaxes(title_text=labels["index"])
    fig.update_yaxes(title_text=labels["eigenvalue"], rangemode="tozero")
    return style.base_layout(fig, height=420)


def gradient_figure(
    upstream: np.ndarray, grad_rms: np.ndarray, grad_layer: np.ndarray, labels: Mapping[str, str]
) -> go.Figure:
    """The upstream gradient on top; the two input gradients J^T g below, on a shared axis."""
    d = upstream.shape[-1]
    index = np.arange(d)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.1,
        subplot_titles=(labels["upstream_title"], labels["input_grads"]),
    )
    series = (
        (upstream, "upstream", style.INPUT, "input", 1),
        (grad_rms, "rms", style.RMS, "rms", 2),
        (grad_layer, "layer", style.LAYER, "layer", 2),
    )
    hover = "i = %{x}<br>%{y:.4g}"
    for values, key, color, kind, row in series:
        trace = style.line(
            index, values, labels[key], color, kind=kind, size=8, width=2, hover=hover
        )
        fig.add_trace(trace, row=row, col=1)
    for row in (1, 2):
        fig.add_hline(y=0, line={"color": style.MUTED, "width": 1}, row=row, col=1)
        fig.update_yaxes(title_text=labels["value"], row=row, col=1)
    fig.update_xaxes(title_text=labels["coordinate"], row=2, col=1)
    style.base_layout(fig, height=620)
    # The legend sits above the first subplot title, clear of it.
    fig.update_layout(margin={"t": 130}, legend={"y": 1.12})
    return fig


# Room beside the bars for their labels, as a fraction of the bars' span on each side.
LABEL_ROOM = 0.55


def components_figure(
    parts: Mapping[str, tuple[float, float]],
    labels: Mapping[str, str],
    number: Callable[[float], str],
) -> go.Figure:
    """Grouped horizontal bars: each vector's component along the ones direction and along x.

    ``parts`` maps "upstream", "rms" and "layer" to (along ones, along x); ``number`` writes the
    values printed beside the bars (the app's one number format). Each bar has a row of its own, and
    its label sits past the bar's end in that row, so a label never covers a bar, however small its
    bar or long its neighbour; the value axis leaves room for the labels on both sides of zero."""
    fig = go.Figure()
    groups = [labels["along_ones"], labels["along_x"]]
    colors = {"upstream": style.INPUT, "rms": style.RMS, "layer": style.LAYER}
    patterns = {"upstream": "", "rms": "/", "layer": "."}
    every = []
    for key in ("upstream", "rms", "layer"):
        values = list(parts[key])
        every += values
        fig.add_trace(
            go.Bar(
                x=values,
                y=groups,
                orientation="h",
                name=labels[key],
                marker={"color": colors[key], "pattern": {"shape": patterns[key]}},
                text=[number(v) for v in values],
                textposition="outside",
                textangle=0,
                cliponaxis=False,
                hovertemplate="%{y}<br>%{x:.4g}<extra>" + labels[key] + "</extra>",
            )
        )
    fig.add_vline(x=0, line={"color": style.MUTED, "width": 1})
    lo, hi = min(0.0, *every), max(0.0, *every)
    room = LABEL_ROOM * ((hi - lo) or 1.0)
    fig.update_xaxes(title_text=labels["component"], range=[lo - room, hi + room])
    # The first group and the first vector at the top, as the legend reads.
    fig.update_yaxes(autorange="reversed")
    style.base_layout(fig, height=460)
    # Bar labels at the figure's size: Plotly would shrink an outside label to the bar's width.
    fig.update_layout(
        barmode="group", bargap=0.25, uniformtext={"minsize": style.FONT_SIZE, "mode": "show"}
    )
    return fig
