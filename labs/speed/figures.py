"""Figures for the speed lab: time and achieved bandwidth against the swept size, and pRMSNorm."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit import style

# Copy grey, RMSNorm vermillion, LayerNorm blue (the app's colours); composite forms dashed and
# open-marked, fused ones solid and filled, so the technique reads without colour too.
COLORS = {"copy": style.INPUT, "rms": style.RMS, "layer": style.LAYER}
MARKERS = {"copy": "circle", "rms": "diamond", "layer": "square"}
DASHES = {"copy": "dot", "composite": "dash", "fused": "solid"}


def _style(kernel: str) -> tuple[str, dict]:
    """A kernel id's colour (``rms_fused``), and its dash and marker as ``style.line`` keywords."""
    norm, _, technique = kernel.partition("_")
    symbol = MARKERS[norm] + ("-open" if technique == "composite" else "")
    return COLORS[norm], {"dash": DASHES[technique or "copy"], "symbol": symbol}


def _spread(y: np.ndarray, lo: np.ndarray, hi: np.ndarray, **options: object) -> dict:
    """Error bars from ``lo`` to ``hi`` around ``y`` (the middle half of the rounds)."""
    return {"type": "data", "symmetric": False, "array": hi - y, "arrayminus": y - lo, **options}


def decade_ticks(values: np.ndarray, number: Callable[[float], str]) -> dict:
    """Tick values at every power of ten the data spans, written by ``number``: a log axis with
    one label per decade, none in between."""
    finite = values[np.isfinite(values) & (values > 0)]
    if not finite.size:
        return {}
    lo, hi = math.floor(math.log10(finite.min())), math.ceil(math.log10(finite.max()))
    ticks = [10.0**k for k in range(lo, hi + 1)]
    return {"tickvals": ticks, "ticktext": [number(t) for t in ticks]}


def _sweep_figure(
    sizes: np.ndarray,
    values: Mapping[str, np.ndarray],
    spread: Mapping[str, tuple[np.ndarray, np.ndarray]] | None,
    labels: Mapping[str, str],
    *,
    y_title: str,
    number: Callable[[float], str],
    unit: str,
) -> go.Figure:
    fig = go.Figure(layout=style.layout(height=460))
    hover = f"{labels['size']} = %{{x}}<br>%{{y:.4g}} {unit}"
    for kernel, series in values.items():
        colour, marks = _style(kernel)
        error = None
        if spread is not None:
            error = _spread(series, *spread[kernel], color=colour, thickness=1.5, width=4)
        name = labels[kernel]
        trace = style.line(sizes, series, name, colour, width=2, size=10, hover=hover, **marks)
        fig.add_trace(trace.update(error_y=error))
    shown = np.concatenate([np.asarray(v, dtype=float) for v in values.values()])
    fig.update_xaxes(
        title_text=labels["size"], type="log", tickvals=sizes, ticktext=[str(int(s)) for s in sizes]
    )
    fig.update_yaxes(title_text=y_title, type="log", **decade_ticks(shown, number))
    # Many kernels: the legend goes under the plot, where it can take two rows.
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.25, "x": 0})
    fig.update_layout(margin={"t": 20, "b": 150})
    return fig


def time_figure(
    sizes: np.ndarray,
    median_ms: Mapping[str, np.ndarray],
    spread_ms: Mapping[str, tuple[np.ndarray, np.ndarray]],
    labels: Mapping[str, str],
    number: Callable[[float], str],
) -> go.Figure:
    """Median time per call (ms, log axis) of each kernel against the swept size (log axis),
    with the middle half of the rounds (``spread_ms[kernel]`` = (25 %, 75 %)) as error bars."""
    return _sweep_figure(
        sizes, median_ms, spread_ms, labels, y_title=labels["time"], number=number, unit="ms"
    )


def bandwidth_figure(
    sizes: np.ndarray,
    gb_per_s: Mapping[str, np.ndarray],
    labels: Mapping[str, str],
    number: Callable[[float], str],
) -> go.Figure:
    """Achieved GB/s (one read and one write of x over the median time) against the size.

    The copy line is the memory system's ceiling for this traffic; a kernel far below it spends
    its time on extra passes, not on arithmetic."""
    return _sweep_figure(
        sizes, gb_per_s, None, labels, y_title=labels["bandwidth"], number=number, unit="GB/s"
    )


def partial_figure(
    partials: np.ndarray,
    ratio: np.ndarray,
    spread: tuple[np.ndarray, np.ndarray],
    error: np.ndarray,
    labels: Mapping[str, str],
    number: Callable[[float], str],
) -> go.Figure:
    """pRMSNorm against p: time as a multiple of the full RMS's (with the middle half of the
    rounds), and the median error of the RMS estimate, side by side."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.16)
    # pRMSNorm is a composite RMSNorm, and drawn like one.
    colour, marks = _style("rms_composite")
    hover = "p = %{x}<br>%{y:.3g}×<extra></extra>"
    ratios = style.line(
        partials, ratio, labels["ratio"], colour, size=10, hovertemplate=hover, **marks
    )
    fig.add_trace(ratios.update(error_y=_spread(ratio, *spread)), row=1, col=1)
    hover = "p = %{x}<br>%{y:.3g}<extra></extra>"
    errors = style.line(
        partials, error, labels["error"], style.ACCENT, size=10, hovertemplate=hover
    )
    fig.add_trace(errors, row=1, col=2)
    ticks = {"tickvals": partials, "ticktext": [number(p) for p in partials]}
    for col in (1, 2):
        fig.update_xaxes(type="log", title_text=labels["p"], row=1, col=col, **ticks)
    fig.update_yaxes(title_text=labels["ratio"], row=1, col=1)
    fig.update_yaxes(title_text=labels["error"], row=1, col=2)
    style.base_layout(fig, height=420)
    fig.update_layout(showlegend=False, margin={"t": 20})
    return fig
