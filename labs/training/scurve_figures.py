"""Figures for the training lab's S-curve view: one norm layer's input against its output before
the gain, with the fitted tanh and the straight line through the same points; and the R² of both
fits, layer by layer, for the RMSNorm and the LayerNorm model.

The points are drawn with WebGL (``Scattergl``): a few thousand per chart. The curves are WebGL
lines too, so that they are drawn over the points in trace order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from labkit import style
from labs.training.figures import COLORS, sized_axis, sized_layout

# The fitted tanh in dark grey over the points, the line in green and dashed beside it.
FIT_COLOR = style.TEXT
LINE_COLOR = style.ACCENT
ERF_COLOR = style.EXTRA[0]  # Derf's erf dotted, in Derf's colour on the training charts
POINT_SIZE = 4
POINT_OPACITY = 0.35
# Room beyond the points on the output axis: the straight line leaves the cloud at its ends, and
# the view follows the points, not the line.
Y_PAD = 0.08


def scurve_figure(
    x: np.ndarray,
    y: np.ndarray,
    fits: Mapping[str, np.ndarray],
    line_y: np.ndarray,
    names: Mapping[str, str],
    norm: str,
    *,
    height: int = 380,
) -> go.Figure:
    """The points (x, y), in increasing x, in ``norm``'s colour; the fitted curves at the same x
    (``fits``: "tanh", "erf", each where fitted) and the straight line (``line_y``).

    ``names``: ``points``, ``tanh``, ``erf`` and ``line`` (the traces), ``x_axis``, ``y_axis``."""
    hover = "x = %{x:.4g}<br>ŷ = %{y:.4g}<extra>%{fullData.name}</extra>"
    traces = [
        go.Scattergl(
            x=x,
            y=y,
            mode="markers",
            name=names["points"],
            marker={"color": COLORS[norm], "size": POINT_SIZE, "opacity": POINT_OPACITY},
            hovertemplate=hover,
        )
    ]
    curves = (
        ("tanh", fits.get("tanh"), {"color": FIT_COLOR, "width": 3}),
        ("erf", fits.get("erf"), {"color": ERF_COLOR, "width": 2, "dash": "dot"}),
        ("line", line_y, {"color": LINE_COLOR, "width": 2.5, "dash": "dash"}),
    )
    traces += [
        go.Scattergl(x=x, y=curve, mode="lines", name=names[key], line=line, hovertemplate=hover)
        for key, curve, line in curves
        if curve is not None
    ]
    lo, hi = float(np.min(y)), float(np.max(y))
    pad = Y_PAD * (hi - lo) if hi > lo else 1.0
    layout = sized_layout(height)
    layout["margin"] = {**layout["margin"], "l": 56, "r": 12}
    layout["xaxis"] = sized_axis(names["x_axis"], zeroline=True)
    layout["yaxis"] = sized_axis(names["y_axis"], zeroline=True, range=[lo - pad, hi + pad])
    return go.Figure(data=traces, layout=layout)


def r2_figure(
    layers: Sequence[str],
    r2: Mapping[str, Mapping[str, Sequence[float]]],
    names: Mapping[str, str],
    *,
    height: int = 480,
) -> go.Figure:
    """R² by norm layer: ``r2[norm][form]`` for each norm ("rms", "layer") and each fitted form (the
    keys of ``names["forms"]``, the first drawn solid, the others dotted); ``names`` also names the
    norms, ``layer_axis`` and ``r2_axis``. Each trace is called ``"{norm}, {form}"``. Tall enough
    that, on a phone, four legend rows and the layers' names turned upright leave the plot room."""
    forms = list(names["forms"])
    traces = []
    for norm, by_form in r2.items():
        for form in forms:
            first = form == forms[0]
            traces.append(
                go.Scatter(
                    x=list(layers),
                    y=by_form[form],
                    name=trace_name(names[norm], form),
                    mode="lines+markers",
                    line={"color": COLORS[norm], "width": 2.5, "dash": "solid" if first else "dot"},
                    marker={"color": COLORS[norm], "symbol": style.SYMBOLS[norm], "size": 8},
                    opacity=1.0 if first else 0.75,
                    hovertemplate="%{x}: R² = %{y:.4g}<extra>%{fullData.name}</extra>",
                )
            )
    layout = sized_layout(height)
    layout["xaxis"] = sized_axis(names["layer_axis"], type="category")
    layout["yaxis"] = sized_axis(names["r2_axis"])
    return go.Figure(data=traces, layout=layout)


def trace_name(norm: str, form: str) -> str:
    """The name of one line of the R² chart: the norm, then the fitted form."""
    return f"{norm}, {form}"
