"""Figures for the speed lab: time and achieved bandwidth against the swept size."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from viz import style

# Copy grey, RMSNorm vermillion, LayerNorm blue (the app's colours); the two-pass RMSNorm in
# reddish purple, told apart from the vermillion also by its dash and marker.
COLORS = {"copy": style.INPUT, "rms": style.RMS, "layer": style.LAYER, "rms_fast": style.EXTRA[2]}
MARKERS = {"copy": "circle", "rms": "diamond", "layer": "square", "rms_fast": "triangle-up"}
DASHES = {"copy": "dot", "rms": "solid", "layer": "dash", "rms_fast": "dashdot"}


def _sweep_figure(
    sizes: np.ndarray,
    values: Mapping[str, np.ndarray],
    labels: Mapping[str, str],
    *,
    y_title: str,
    log_y: bool,
    unit: str,
) -> go.Figure:
    fig = go.Figure()
    for kernel, series in values.items():
        fig.add_trace(
            go.Scatter(
                x=sizes,
                y=series,
                mode="lines+markers",
                name=labels[kernel],
                marker={"color": COLORS[kernel], "symbol": MARKERS[kernel], "size": 9},
                line={"color": COLORS[kernel], "dash": DASHES[kernel], "width": 2},
                hovertemplate=(
                    f"{labels['size']} = %{{x}}<br>%{{y:.4g}} {unit}<extra>{labels[kernel]}</extra>"
                ),
            )
        )
    fig.update_xaxes(title_text=labels["size"], type="log", tickvals=sizes, ticktext=sizes)
    fig.update_yaxes(title_text=y_title, type="log" if log_y else "linear")
    return style.base_layout(fig, height=440)


def time_figure(
    sizes: np.ndarray, times_ms: Mapping[str, np.ndarray], labels: Mapping[str, str]
) -> go.Figure:
    """Median time per call (ms, log axis) of each kernel against the swept size (log axis)."""
    return _sweep_figure(sizes, times_ms, labels, y_title=labels["time"], log_y=True, unit="ms")


def bandwidth_figure(
    sizes: np.ndarray, gb_per_s: Mapping[str, np.ndarray], labels: Mapping[str, str]
) -> go.Figure:
    """Achieved GB/s (one read and one write of x over the median time) against the size.

    The copy line is the memory system's ceiling for this traffic; a kernel far below it spends
    its time on extra passes, not on arithmetic.
    """
    return _sweep_figure(
        sizes, gb_per_s, labels, y_title=labels["bandwidth"], log_y=False, unit="GB/s"
    )
