"""Figures for the invariance lab: one case before and after a change, the shift sweep, the loss.

The guided lesson draws its shift sweep with :func:`sweep_figure` too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit import style

Pair = tuple[np.ndarray, np.ndarray]
# One curve: (y values, legend name, colour, dash).
Series = tuple[np.ndarray, str, str, str]


def curves(x: np.ndarray, series: Sequence[Series]) -> list[go.Scatter]:
    """Thick lines against ``x`` (the offset c), one per series, for a shared-axis figure."""
    hover = "c = %{x:.4g}<br>%{y:.4g}"
    return [
        style.line(x, values, name, color, dash=dash, width=3, hover=hover)
        for values, name, color, dash in series
    ]


def before_after_figure(pre: Pair, rms: Pair, layer: Pair, labels: Mapping[str, str]) -> go.Figure:
    """Three panels for one case: the pre-activation, RMSNorm and LayerNorm, before and after.

    Before is a solid line with filled markers, after a dashed line with open markers, in the
    series' colour, so an invariant norm shows the dashed line lying on the solid one."""
    return _paired_panels(
        ((pre, style.INPUT, "input"), (rms, style.RMS, "rms"), (layer, style.LAYER, "layer")),
        (labels["pre"], labels["rms"], labels["layer"]),
        ((labels["before"], "solid"), (labels["after"], "dash")),
        labels,
        shared_yaxes=False,
    )


def _paired_panels(
    panels: tuple[tuple[Pair, str, str], ...],
    titles: tuple[str, ...],
    styles: tuple[tuple[str, str], tuple[str, str]],
    labels: Mapping[str, str],
    *,
    shared_yaxes: bool,
) -> go.Figure:
    """One panel per ``(pair, colour, kind)``, each pair drawn as two lines in the panel's
    colour: the first with filled markers, the second with open ones, dashed as ``styles``
    says. The legend has one neutral entry per line style instead of one per panel."""
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        shared_yaxes=shared_yaxes,
        horizontal_spacing=0.07,
        subplot_titles=titles,
    )
    hover = "i = %{x}<br>%{y:.4g}"
    for col, (pair, color, kind) in enumerate(panels, start=1):
        symbols = (style.SYMBOLS[kind], style.SYMBOLS[kind] + "-open")
        for values, (name, dash), symbol in zip(pair, styles, symbols, strict=True):
            x = np.arange(values.shape[-1])
            trace = style.line(
                x, values, name, color, dash=dash, width=2, symbol=symbol, size=9, hover=hover
            )
            fig.add_trace(trace.update(legendgroup=name, showlegend=False), row=1, col=col)
        fig.add_hline(y=0, line={"color": style.MUTED, "width": 1}, row=1, col=col)
        fig.update_xaxes(title_text=labels["coordinate"], row=1, col=col)
    for name, dash in styles:
        fig.add_trace(style.line([None], [None], name, style.INPUT, dash=dash, width=2))
    fig.update_yaxes(title_text=labels["value"], row=1, col=1)
    style.base_layout(fig, height=440)
    # Subplot titles sit just above the panels; the legend goes above them. At the smallest
    # figure size three titles side by side fit a phone's width.
    fig.update_annotations(font_size=style.MIN_FONT_SIZE)
    fig.update_layout(margin={"t": 120}, legend={"y": 1.16})
    return fig


def sweep_figure(sweep: Mapping[str, np.ndarray], labels: Mapping[str, str]) -> go.Figure:
    """Cosine between norm(x + c 1) and norm(x) against c for both norms, and RMSNorm's share
    of output energy along 1, on one axis (all three live in [-1, 1]); the arrays are those of
    ``labs.invariance.model.shift_sweep``."""
    series = (
        (sweep["rms_cosine"], labels["rms_cos"], style.RMS, "solid"),
        (sweep["layer_cosine"], labels["layer_cos"], style.LAYER, "dash"),
        (sweep["rms_energy_along_ones"], labels["energy"], style.ACCENT, "dot"),
    )
    fig = go.Figure(curves(sweep["offsets"], series))
    fig.add_hline(y=0, line={"color": style.MUTED, "width": 1})
    fig.add_vline(x=0, line={"color": style.MUTED, "width": 1})
    fig.update_xaxes(title_text=labels["offset"])
    fig.update_yaxes(title_text=labels["cosine"], range=[-1.08, 1.08])
    style.base_layout(fig, height=460)
    # Three legend entries take two lines on a phone; keep them clear of the plot.
    fig.update_layout(margin={"t": 100})
    return fig


def collapse_figure(
    offsets: np.ndarray,
    spread: np.ndarray,
    dist_rms: np.ndarray,
    dist_layer: np.ndarray,
    labels: Mapping[str, str],
) -> go.Figure:
    """Log-log: RMSNorm's spread around its mean and the distance between two cases' images
    fall like 1/c; LayerNorm's distance stays put. A dotted 1/c line is the reference slope."""
    # Anchored at the last point of the distance curve so the eye compares slopes, not levels;
    # drawn over the last decade only, where the 1/c regime holds.
    tail = offsets >= offsets[-1] / 10
    slope = np.full(offsets.shape, np.nan)
    slope[tail] = dist_rms[-1] * offsets[-1] / offsets[tail]
    series = (
        (dist_rms, labels["dist_rms"], style.RMS, "solid"),
        (spread, labels["spread"], style.RMS, "dot"),
        (dist_layer, labels["dist_layer"], style.LAYER, "dash"),
        (slope, labels["slope"], style.MUTED, "dot"),
    )
    fig = go.Figure(curves(offsets, series))
    values = np.concatenate([spread, dist_rms, dist_layer])
    fig.update_xaxes(
        title_text=labels["offset"], type="log", **style.log_ticks(offsets[0], offsets[-1])
    )
    fig.update_yaxes(
        title_text=labels["amount"],
        type="log",
        **style.log_ticks(float(np.min(values)), float(np.max(values))),
    )
    style.base_layout(fig, height=460)
    fig.update_layout(margin={"t": 110})
    return fig


def pair_figure(rms: Pair, layer: Pair, labels: Mapping[str, str]) -> go.Figure:
    """Two cases after the same large shift: RMSNorm's images nearly coincide, LayerNorm's not."""
    return _paired_panels(
        ((rms, style.RMS, "rms"), (layer, style.LAYER, "layer")),
        (labels["rms_panel"], labels["layer_panel"]),
        ((labels["a"], "solid"), (labels["b"], "dot")),
        labels,
        shared_yaxes=True,
    )
