"""Figures for the precision lesson: output norm against scale, error per dtype, running sums."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from viz import style

PLACEMENT_DASH = {"inside": "solid", "outside": "dash"}
# One colour per dtype, kept across both dtype figures so a reader matches them at a glance.
DTYPE_COLOURS = {
    "float64": style.INPUT,
    "float32": style.LAYER,
    "float16": style.RMS,
    "bfloat16": style.EXTRA[2],
}
DTYPE_SYMBOLS = {"float64": "circle", "float32": "square", "float16": "diamond", "bfloat16": "x"}
# Errors below this are drawn at it: a log axis cannot show an exact 0.
ERROR_FLOOR = 1e-17


def _eps_colour(index: int) -> str:
    palette = (style.ACCENT, *style.EXTRA[:2], style.LAYER, style.RMS)
    return palette[index % len(palette)]


def norm_vs_scale_figure(
    scales: np.ndarray,
    norms: Mapping[str, np.ndarray],
    eps_list: Sequence[float],
    sqrt_d: float,
    labels: Mapping[str, str],
) -> go.Figure:
    """``norms[placement]`` has shape (E, S): one line per eps, solid inside, dashed outside."""
    fig = go.Figure()
    for placement, grid in norms.items():
        for i, eps in enumerate(eps_list):
            name = f"ε = {eps:g} · {labels[placement]}"
            fig.add_trace(
                go.Scatter(
                    x=scales,
                    y=grid[i],
                    name=name,
                    mode="lines",
                    line={"color": _eps_colour(i), "dash": PLACEMENT_DASH[placement], "width": 2.5},
                    hovertemplate="s = %{x:.3g}<br>‖y‖ = %{y:.4g}<extra>" + name + "</extra>",
                )
            )
    fig.add_hline(
        y=sqrt_d,
        line={"color": style.MUTED, "dash": "dot", "width": 1.5},
        annotation_text=labels["sqrt_d"],
        annotation_position="bottom right",
    )
    fig.update_xaxes(type="log", title_text=labels["scale"], exponentformat="power")
    fig.update_yaxes(type="log", title_text=labels["norm"], exponentformat="power")
    style.base_layout(fig, height=520)
    fig.update_layout(margin={"t": 110})
    return fig


def error_vs_scale_figure(
    scales: np.ndarray,
    errors: Mapping[str, np.ndarray],
    limits: Mapping[str, float],
    chosen: float,
    labels: Mapping[str, str],
) -> go.Figure:
    """Relative output error per dtype against scale; vertical lines at the float16 limits."""
    fig = go.Figure()
    for dtype, err in errors.items():
        fig.add_trace(
            go.Scatter(
                x=scales,
                y=np.maximum(err, ERROR_FLOOR),
                name=dtype,
                mode="lines+markers",
                marker={"color": DTYPE_COLOURS[dtype], "symbol": DTYPE_SYMBOLS[dtype], "size": 6},
                line={"color": DTYPE_COLOURS[dtype], "width": 2},
                hovertemplate="s = %{x:.3g}<br>%{y:.3g}<extra>" + dtype + "</extra>",
            )
        )
    for key, dash in (("sum", "dot"), ("square", "dash")):
        value = limits[key]
        if np.isfinite(value):
            fig.add_vline(
                x=value,
                line={"color": style.RMS, "dash": dash, "width": 1.5},
                annotation_text=labels[f"limit_{key}"],
                annotation_position="top left" if key == "sum" else "top right",
            )
    fig.add_vline(x=chosen, line={"color": style.MUTED, "width": 3})
    fig.update_xaxes(type="log", title_text=labels["scale"], exponentformat="power")
    fig.update_yaxes(type="log", title_text=labels["error"], exponentformat="power")
    style.base_layout(fig, height=480)
    fig.update_layout(margin={"t": 110})
    return fig


def running_sum_figure(
    sums: Mapping[str, np.ndarray], float16_max: float, labels: Mapping[str, str]
) -> go.Figure:
    """Partial sums of squares against the coordinate index, one line per accumulator dtype."""
    fig = go.Figure()
    for dtype, values in sums.items():
        index = np.arange(1, values.shape[-1] + 1)
        shown = np.where(np.isfinite(values), values, np.nan)
        fig.add_trace(
            go.Scatter(
                x=index,
                y=shown,
                name=dtype,
                mode="lines",
                line={"color": DTYPE_COLOURS[dtype], "width": 2.5,
                      "dash": "dot" if dtype == "float64" else "solid"},
                hovertemplate="i = %{x}<br>%{y:.6g}<extra>" + dtype + "</extra>",
            )
        )
    fig.add_hline(
        y=float16_max,
        line={"color": style.RMS, "dash": "dash", "width": 1.5},
        annotation_text=labels["float16_max"],
        annotation_position="top left",
    )
    fig.update_xaxes(title_text=labels["index"])
    fig.update_yaxes(type="log", title_text=labels["partial_sum"], exponentformat="power")
    style.base_layout(fig, height=460)
    return fig
