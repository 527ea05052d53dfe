"""Figures for the training lab's three sets: each variant's seeds as a shaded band from the
lowest to the highest, with the mean over the seeds as a line on it.

A series is a mapping with ``name`` (the legend's), ``band`` (the band's hover name), ``kind``
(its colour, dash and marker: a placement, a QK-norm mode, or a norm on a slice of the data set:
the norm's colour, dotted on the small slice), ``x`` and, one value per x,
``lo``, ``hi`` and ``mean``. The placements and the QK-norm modes get colours of the palette the
norms do not use (every model here has RMSNorm), and differ by dash and marker too."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from labkit import style
from labs.training.figures import sized_axis, sized_layout

COLORS = {
    "pre": style.EXTRA[0],
    "post": style.EXTRA[1],
    "peri": style.EXTRA[2],
    "output": style.EXTRA[3],
    "scaled": style.ACCENT,
    "off": style.INPUT,
    "rms": style.RMS,
    "clip": style.ACCENT,
}
DASHES = {"pre": "solid", "post": "dot", "peri": "dash", "output": "dashdot", "scaled": "longdash"}
DASHES |= {"off": "dot", "rms": "solid", "clip": "dash"}
MARKERS = {"pre": "circle", "post": "square", "peri": "diamond", "output": "triangle-up"}
MARKERS |= {"scaled": "x", "off": "circle", "rms": "diamond", "clip": "square"}
for slice_, dash in (("small", "dot"), ("large", "solid")):
    for norm, color, marker in (("rms", style.RMS, "diamond"), ("dyt", style.EXTRA[2], "x")):
        COLORS[f"{norm}_{slice_}"], DASHES[f"{norm}_{slice_}"] = color, dash
        MARKERS[f"{norm}_{slice_}"] = marker if slice_ == "large" else "circle"
    COLORS[slice_], DASHES[slice_], MARKERS[slice_] = style.EXTRA[2], dash, "x"
# How opaque a band of seeds is: its lines show through.
BAND_ALPHA = 0.22


def _rgba(color: str, alpha: float) -> str:
    red, green, blue = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


# Ticks of a log axis, per decade, by how many decades it spans: Plotly's own minor labels
# ("2", "5" between 0.1 and 1) read as numbers of their own.
LADDERS = (
    (4.0, (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)),
    (40.0, (1.0, 2.0, 5.0)),
    (2000.0, (1.0, 3.0)),
    (math.inf, (1.0,)),
)
# A log axis reaches this far (in decades) beyond its extreme values: markers stay whole.
LOG_PAD = 0.08


def log_ticks(values: np.ndarray) -> dict:
    """A log axis over the positive finite ``values``: its range, padded, and ticks from the
    ladder that fits its span (none given where fewer than two fall inside)."""
    shown = values[np.isfinite(values) & (values > 0)]
    if shown.size == 0:
        return {"type": "log"}
    lo, hi = float(shown.min()), float(shown.max())
    ladder = next(steps for span, steps in LADDERS if hi / lo <= span)
    ticks = [
        float(f"{step * 10.0**decade:.12g}")
        for decade in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
        for step in ladder
        if lo / 10**LOG_PAD <= step * 10.0**decade <= hi * 10**LOG_PAD
    ]
    axis = {"type": "log", "range": [math.log10(lo) - LOG_PAD, math.log10(hi) + LOG_PAD]}
    return axis | ({"tickvals": ticks} if len(ticks) >= 2 else {})


def _axis(title: str, log: bool, values: np.ndarray, **extra: object) -> dict:
    return sized_axis(title, **(log_ticks(values) if log else {}) | extra)


def _traces(series: Mapping) -> list[go.Scatter]:
    """A series' band (a closed outline: the highest seed forward, the lowest back) and its mean."""
    kind, name = series["kind"], series["name"]
    x = np.asarray(series["x"], dtype=float)
    lo, hi = (np.asarray(series[k], dtype=float) for k in ("lo", "hi"))
    band = go.Scatter(
        x=np.concatenate([x, x[::-1]]),
        y=np.concatenate([hi, lo[::-1]]),
        name=series["band"],
        legendgroup=kind,
        showlegend=False,
        mode="lines",
        fill="toself",
        fillcolor=_rgba(COLORS[kind], BAND_ALPHA),
        line={"width": 0, "color": COLORS[kind]},
        hovertemplate=f"{series['band']}: %{{x:.4g}}, %{{y:.4g}}<extra></extra>",
    )
    mean = go.Scatter(
        x=x,
        y=np.asarray(series["mean"], dtype=float),
        name=name,
        legendgroup=kind,
        mode="lines+markers",
        line={"color": COLORS[kind], "dash": DASHES[kind], "width": 2.5},
        marker={"color": COLORS[kind], "symbol": MARKERS[kind], "size": 7},
        hovertemplate=f"{name}: %{{x:.4g}}, %{{y:.4g}}<extra></extra>",
    )
    return [band, mean]


def spread_figure(
    series: Sequence[Mapping],
    *,
    x_title: str,
    y_title: str,
    log_x: bool = False,
    log_y: bool = False,
    whole_x: bool = False,
    height: int = 400,
) -> go.Figure:
    """Every series' band of seeds and mean line. A log x axis has a tick at every x drawn (the
    learning rates); ``whole_x``: a tick at every integer x (the positions in the stream)."""
    layout = sized_layout(height)
    xs = np.concatenate([np.asarray(s["x"], dtype=float) for s in series] or [np.ones(1)])
    ys = np.concatenate(
        [np.asarray(s[k], dtype=float) for s in series for k in ("lo", "hi")] or [np.ones(1)]
    )
    x_extra: dict = {"dtick": 1} if whole_x else {}
    if log_x:
        x_extra = {"tickvals": sorted(set(xs[np.isfinite(xs) & (xs > 0)].tolist()))}
    layout["xaxis"] = _axis(x_title, log_x, xs, **x_extra)
    layout["yaxis"] = _axis(y_title, log_y, ys)
    return go.Figure(data=[t for s in series for t in _traces(s)], layout=layout)
