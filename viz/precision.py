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


def _reference(
    fig: go.Figure, x: list[float], y: list[float], name: str, colour: str, dash: str
) -> None:
    """A labelled reference line drawn as a trace: shapes and annotations on log axes take
    log10 coordinates, a trace takes data values like every other series."""
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            name=name,
            mode="lines",
            line={"color": colour, "dash": dash, "width": 1.5},
            hovertemplate=name + "<extra></extra>",
        )
    )


def _eps_colour(index: int) -> str:
    palette = (style.ACCENT, *style.EXTRA[:2], style.LAYER, style.RMS)
    return palette[index % len(palette)]


def norm_vs_scale_figure(
    scales: np.ndarray,
    norms: Mapping[str, np.ndarray],
    eps_text: Sequence[str],
    sqrt_d: float,
    labels: Mapping[str, str],
) -> go.Figure:
    """``norms[placement]`` has shape (E, S): one line per eps (``eps_text`` names them), solid
    inside, dashed outside."""
    fig = go.Figure()
    for placement, grid in norms.items():
        for i, eps in enumerate(eps_text):
            name = f"ε = {eps} · {labels[placement]}"
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
    _reference(fig, [scales[0], scales[-1]], [sqrt_d, sqrt_d], labels["sqrt_d"], style.MUTED, "dot")
    # Every other decade on x: 13 decade labels crowd a phone's width.
    fig.update_xaxes(type="log", title_text=labels["scale"], exponentformat="power", dtick=2)
    fig.update_yaxes(type="log", title_text=labels["norm"], exponentformat="power", dtick=1)
    style.base_layout(fig, height=520)
    fig.update_layout(margin={"t": 110})
    return fig


def matched_figure(
    scales: np.ndarray,
    curves: Mapping[str, np.ndarray],
    names: Mapping[str, str],
    knee: float | None,
    sqrt_d: float,
    labels: Mapping[str, str],
) -> go.Figure:
    """The inside curve for eps and the outside one for sqrt(eps), with the shared knee marked.

    ``curves`` and ``names`` are keyed by placement; ``knee`` is None when eps = 0.
    """
    fig = go.Figure()
    for placement, values in curves.items():
        fig.add_trace(
            go.Scatter(
                x=scales,
                y=values,
                name=names[placement],
                mode="lines",
                line={
                    "color": style.RMS if placement == "inside" else style.LAYER,
                    "dash": PLACEMENT_DASH[placement],
                    "width": 3,
                },
                hovertemplate="s = %{x:.3g}<br>‖y‖ = %{y:.4g}<extra></extra>",
            )
        )
    _reference(fig, [scales[0], scales[-1]], [sqrt_d, sqrt_d], labels["sqrt_d"], style.MUTED, "dot")
    if knee is not None:
        low = float(np.nanmin(np.concatenate(list(curves.values()))))
        _reference(
            fig, [knee, knee], [max(low, 1e-300), sqrt_d], labels["knee"], style.ACCENT, "dash"
        )
    # Every other decade on x: 13 decade labels crowd a phone's width.
    fig.update_xaxes(type="log", title_text=labels["scale"], exponentformat="power", dtick=2)
    fig.update_yaxes(type="log", title_text=labels["norm"], exponentformat="power", dtick=1)
    style.base_layout(fig, height=440)
    return fig


def error_vs_scale_figure(
    scales: np.ndarray,
    errors: Mapping[str, np.ndarray],
    limits: Mapping[str, float],
    chosen: float,
    labels: Mapping[str, str],
) -> go.Figure:
    """Relative output error per dtype against scale; vertical lines at the float16 limits
    (``limits`` "sum" and "square", either may be absent)."""
    fig = go.Figure()
    shown = np.concatenate([np.maximum(e, ERROR_FLOOR) for e in errors.values()])
    shown = shown[np.isfinite(shown)]
    # Vertical lines run over the errors drawn, up to an error of 1 (an output lost entirely).
    span = [float(shown.min()) if shown.size else ERROR_FLOOR, 1.0]
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
        value = limits.get(key, np.inf)
        if np.isfinite(value):
            _reference(fig, [value, value], span, labels[f"limit_{key}"], style.RMS, dash)
    _reference(fig, [chosen, chosen], span, labels["chosen"], style.MUTED, "solid")
    # Every other decade on x: 13 decade labels crowd a phone's width.
    fig.update_xaxes(type="log", title_text=labels["scale"], exponentformat="power", dtick=2)
    fig.update_yaxes(type="log", title_text=labels["error"], exponentformat="power", dtick=1)
    style.base_layout(fig, height=480)
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
                line={
                    "color": DTYPE_COLOURS[dtype],
                    "width": 2.5,
                    "dash": "dot" if dtype == "float64" else "solid",
                },
                hovertemplate="i = %{x}<br>%{y:.6g}<extra>" + dtype + "</extra>",
            )
        )
    length = max(v.shape[-1] for v in sums.values())
    limit = [float16_max, float16_max]
    _reference(fig, [1, length], limit, labels["float16_max"], style.RMS, "dash")
    fig.update_xaxes(title_text=labels["index"])
    fig.update_yaxes(type="log", title_text=labels["partial_sum"], exponentformat="power", dtick=1)
    style.base_layout(fig, height=460)
    return fig
