"""Figures for the checkpoint inspector: stored gains, and what each norm module receives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from labkit import style

# Colour by what the model's norms compute, dash and symbol by side (A solid, B dashed).
KIND_COLOURS = {"rms": style.RMS, "layer": style.LAYER}
SIDE_DASHES = {"a": "solid", "b": "dash"}
SIDE_SYMBOLS = {"a": style.SYMBOLS["rms"], "b": style.SYMBOLS["layer"]}
# Streamlit's chart theme writes ticks at 12.75 px unless a figure says otherwise; a projector
# needs 14 px at least.
SMALL_FONT = {"size": style.FONT_SIZE - 2}


def _axis(title: str, **extra: object) -> dict:
    return {"title": {"text": title}, "tickfont": SMALL_FONT, **extra}


def _layout(height: int, **extra: object) -> dict:
    """No Plotly title (the page writes it above the chart, where it wraps on a phone); room
    above the plot for a legend that wraps to a few rows."""
    layout = style.layout(height=height, **extra)
    layout["margin"]["t"] = 60
    layout["legend"].update(y=1.02, font=SMALL_FONT)
    return layout


@dataclass(frozen=True)
class Series:
    """One model's reading per norm module: ``y[i]`` at module ``i + 1`` called ``names[i]``."""

    label: str
    side: str
    kind: str
    y: np.ndarray
    names: Sequence[str]


def readings_figure(
    series: Sequence[Series],
    *,
    x_title: str,
    y_title: str,
    log_y: bool = False,
    percent: bool = False,
    height: int = 380,
) -> go.Figure:
    """The readings of each model against the module's place in the forward pass.

    ``log_y`` asks for a log axis, drawn only when the readings span two decades or more (a
    narrower log axis would show a single tick); ``percent`` writes fractions as percentages."""
    traces = []
    for s in series:
        colour = KIND_COLOURS.get(s.kind, style.INPUT)
        traces.append(
            go.Scatter(
                x=np.arange(1, len(s.y) + 1),
                y=s.y,
                name=s.label,
                mode="lines+markers" if len(s.y) <= 60 else "lines",
                customdata=list(s.names),
                line={"color": colour, "dash": SIDE_DASHES[s.side], "width": 2.5},
                marker={"color": colour, "symbol": SIDE_SYMBOLS[s.side], "size": 8},
                hovertemplate="%{customdata}<br>%{y:.4g}<extra>" + s.label + "</extra>",
            )
        )
    yaxis = _axis(y_title)
    values = np.concatenate([np.asarray(s.y, dtype=float) for s in series]) if series else []
    positive = [v for v in values if v > 0]
    if log_y and positive and max(positive) >= 100 * min(positive):
        # Ticks at powers of ten only, written 10^k: no crowded minor labels.
        yaxis.update(type="log", dtick=1, exponentformat="power")
    else:
        yaxis["rangemode"] = "tozero"
    if percent:
        yaxis["tickformat"] = ".1%"
    layout = _layout(height, xaxis=_axis(x_title, rangemode="tozero"), yaxis=yaxis)
    return go.Figure(traces, layout)


def gain_histogram(
    edges: np.ndarray,
    counts: Mapping[str, np.ndarray],
    *,
    x_title: str,
    y_title: str,
    marker: float | None = None,
    height: int = 360,
) -> go.Figure:
    """Stored norm weights in shared bins, one bar series per place (``counts`` by label),
    and a dotted line at ``marker`` (the value the convention starts from: 1 or 0)."""
    centres = (edges[:-1] + edges[1:]) / 2.0
    width = float(edges[1] - edges[0])
    colours = (style.RMS, style.LAYER, style.ACCENT, *style.EXTRA, style.MUTED)
    traces = [
        go.Bar(
            x=centres,
            y=values,
            width=width,
            name=label,
            marker={"color": colours[i % len(colours)]},
            opacity=0.75,
            hovertemplate="%{x:.4g}: %{y}<extra>" + label + "</extra>",
        )
        for i, (label, values) in enumerate(counts.items())
    ]
    line = {"color": style.INPUT, "dash": "dot", "width": 2}
    across = {"x0": marker, "x1": marker, "y0": 0, "y1": 1, "yref": "paper"}
    shapes = [] if marker is None else [{"type": "line", **across, "line": line}]
    layout = _layout(
        height, barmode="stack", xaxis=_axis(x_title), yaxis=_axis(y_title), shapes=shapes
    )
    layout["legend"]["traceorder"] = "normal"  # stacked bars list in reverse otherwise
    return go.Figure(traces, layout)
