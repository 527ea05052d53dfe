"""Figures for the invariance lab: one case before and after a change, the shift sweep, the loss."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import style

Pair = tuple[np.ndarray, np.ndarray]


def _line(
    y: np.ndarray, *, name: str, color: str, dash: str, symbol: str, legend: bool, group: str
) -> go.Scatter:
    return go.Scatter(
        x=np.arange(y.shape[-1]),
        y=y,
        name=name,
        mode="lines+markers",
        marker={"color": color, "symbol": symbol, "size": 9},
        line={"color": color, "dash": dash, "width": 2},
        legendgroup=group,
        showlegend=legend,
        hovertemplate="i = %{x}<br>%{y:.5g}<extra>" + name + "</extra>",
    )


def before_after_figure(pre: Pair, layer: Pair, rms: Pair, labels: Mapping[str, str]) -> go.Figure:
    """Three panels for one case: the pre-activation, LayerNorm and RMSNorm, before and after.

    Before is a solid line with filled markers, after a dashed line with open markers, in the
    series' colour, so an invariant norm shows the dashed line lying on the solid one.
    """
    return _paired_panels(
        ((pre, style.INPUT, "input"), (layer, style.LAYER, "layer"), (rms, style.RMS, "rms")),
        (labels["pre"], labels["layer"], labels["rms"]),
        ((labels["before"], "solid"), (labels["after"], "dash")),
        labels,
        shared_yaxes=False,
        spacing=0.07,
        margin_top=120,
        legend_y=1.12,
    )


def _paired_panels(
    panels: tuple[tuple[Pair, str, str], ...],
    titles: tuple[str, ...],
    styles: tuple[tuple[str, str], tuple[str, str]],
    labels: Mapping[str, str],
    *,
    shared_yaxes: bool,
    spacing: float,
    margin_top: int,
    legend_y: float,
) -> go.Figure:
    """One panel per ``(pair, colour, kind)``, each pair drawn as two lines in the panel's
    colour: the first with filled markers, the second with open ones, dashed as ``styles``
    says. The legend has one neutral entry per line style instead of one per panel."""
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        shared_yaxes=shared_yaxes,
        horizontal_spacing=spacing,
        subplot_titles=titles,
    )
    for col, (pair, color, kind) in enumerate(panels, start=1):
        symbols = (style.SYMBOLS[kind], style.SYMBOLS[kind] + "-open")
        for values, (name, dash), symbol in zip(pair, styles, symbols, strict=True):
            fig.add_trace(
                _line(
                    values,
                    name=name,
                    color=color,
                    dash=dash,
                    symbol=symbol,
                    legend=False,
                    group=name,
                ),
                row=1,
                col=col,
            )
        fig.add_hline(y=0, line={"color": style.MUTED, "width": 1}, row=1, col=col)
        fig.update_xaxes(title_text=labels["coordinate"], row=1, col=col)
    for name, dash in styles:
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                name=name,
                mode="lines",
                line={"color": style.INPUT, "dash": dash, "width": 2},
            )
        )
    fig.update_yaxes(title_text=labels["value"], row=1, col=1)
    style.base_layout(fig, height=420)
    fig.update_layout(margin={"t": margin_top}, legend={"y": legend_y})
    return fig


def sweep_figure(
    offsets: np.ndarray,
    rms_cosine: np.ndarray,
    layer_cosine: np.ndarray,
    energy: np.ndarray,
    labels: Mapping[str, str],
) -> go.Figure:
    """Cosine between norm(x + c 1) and norm(x) against c for both norms, and RMSNorm's share
    of output energy along 1, on one axis (all three live in [-1, 1])."""
    fig = go.Figure()
    series = (
        (layer_cosine, labels["layer_cos"], style.LAYER, "dash"),
        (rms_cosine, labels["rms_cos"], style.RMS, "solid"),
        (energy, labels["energy"], style.ACCENT, "dot"),
    )
    for values, name, color, dash in series:
        fig.add_trace(
            go.Scatter(
                x=offsets,
                y=values,
                name=name,
                mode="lines",
                line={"color": color, "dash": dash, "width": 3},
                hovertemplate="c = %{x:.4g}<br>%{y:.4f}<extra>" + name + "</extra>",
            )
        )
    fig.add_hline(y=0, line={"color": style.MUTED, "width": 1})
    fig.add_vline(x=0, line={"color": style.MUTED, "width": 1})
    fig.update_xaxes(title_text=labels["offset"])
    fig.update_yaxes(title_text=labels["cosine"], range=[-1.08, 1.08])
    return style.base_layout(fig, height=420)


def collapse_figure(
    offsets: np.ndarray,
    spread: np.ndarray,
    dist_rms: np.ndarray,
    dist_layer: np.ndarray,
    labels: Mapping[str, str],
) -> go.Figure:
    """Log-log: RMSNorm's spread around its mean and the distance between two cases' images
    fall like 1/c; LayerNorm's distance stays put. A dotted 1/c line is the reference slope."""
    fig = go.Figure()
    series = (
        (dist_layer, labels["dist_layer"], style.LAYER, "dash"),
        (dist_rms, labels["dist_rms"], style.RMS, "solid"),
        (spread, labels["spread"], style.RMS, "dot"),
    )
    for values, name, color, dash in series:
        fig.add_trace(
            go.Scatter(
                x=offsets,
                y=values,
                name=name,
                mode="lines",
                line={"color": color, "dash": dash, "width": 3},
                hovertemplate="c = %{x:.4g}<br>%{y:.4g}<extra>" + name + "</extra>",
            )
        )
    # Anchored at the last point of the distance curve so the eye compares slopes, not levels;
    # drawn over the last decade only, where the 1/c regime holds.
    tail = offsets >= offsets[-1] / 10
    fig.add_trace(
        go.Scatter(
            x=offsets[tail],
            y=dist_rms[-1] * offsets[-1] / offsets[tail],
            name=labels["slope"],
            mode="lines",
            line={"color": style.MUTED, "dash": "dot", "width": 2},
            hoverinfo="skip",
        )
    )
    fig.update_xaxes(title_text=labels["offset"], type="log")
    fig.update_yaxes(title_text=labels["amount"], type="log")
    style.base_layout(fig, height=440)
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
        spacing=0.06,
        margin_top=110,
        legend_y=1.14,
    )
