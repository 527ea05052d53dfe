"""Figures for the precision lesson: output norm against scale, error per dtype, running sums."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from labkit import style

PLACEMENT_DASH = {"inside": "solid", "outside": "dash"}
# One colour per eps, in turn.
EPS_COLOURS = (style.ACCENT, *style.EXTRA[:2], style.LAYER, style.RMS)
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


def _log_axes(fig: go.Figure, labels: Mapping[str, str], y: str, *, height: int) -> None:
    """Scale on a log x axis, every other decade labelled (13 crowd a phone), ``labels[y]`` on a
    log y axis; the base layout at ``height``."""
    fig.update_xaxes(type="log", title_text=labels["scale"], exponentformat="power", dtick=2)
    fig.update_yaxes(type="log", title_text=labels[y], exponentformat="power", dtick=1)
    style.base_layout(fig, height=height)


def _reference(
    fig: go.Figure, x: list[float], y: list[float], name: str, colour: str, dash: str
) -> None:
    """A labelled reference line drawn as a trace: shapes and annotations on log axes take
    log10 coordinates, a trace takes data values like every other series."""
    hover = name + "<extra></extra>"
    fig.add_trace(style.line(x, y, name, colour, dash=dash, width=1.5, hovertemplate=hover))


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
    hover = "s = %{x:.3g}<br>‖y‖ = %{y:.4g}"
    for placement, grid in norms.items():
        for i, eps in enumerate(eps_text):
            name = f"ε = {eps} · {labels[placement]}"
            dash = PLACEMENT_DASH[placement]
            colour = EPS_COLOURS[i % len(EPS_COLOURS)]
            trace = style.line(scales, grid[i], name, colour, dash=dash, width=2.5, hover=hover)
            fig.add_trace(trace)
    _reference(fig, [scales[0], scales[-1]], [sqrt_d, sqrt_d], labels["sqrt_d"], style.MUTED, "dot")
    _log_axes(fig, labels, "norm", height=520)
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

    ``curves`` and ``names`` are keyed by placement; ``knee`` is None when eps = 0."""
    fig = go.Figure()
    hover = "s = %{x:.3g}<br>‖y‖ = %{y:.4g}<extra></extra>"
    for placement, values in curves.items():
        colour = style.RMS if placement == "inside" else style.LAYER
        dash = PLACEMENT_DASH[placement]
        trace = style.line(
            scales, values, names[placement], colour, dash=dash, width=3, hovertemplate=hover
        )
        fig.add_trace(trace)
    _reference(fig, [scales[0], scales[-1]], [sqrt_d, sqrt_d], labels["sqrt_d"], style.MUTED, "dot")
    if knee is not None:
        low = float(np.nanmin(np.concatenate(list(curves.values()))))
        _reference(
            fig, [knee, knee], [max(low, 1e-300), sqrt_d], labels["knee"], style.ACCENT, "dash"
        )
    _log_axes(fig, labels, "norm", height=440)
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
    hover = "s = %{x:.3g}<br>%{y:.3g}"
    for dtype, err in errors.items():
        shown, symbol = np.maximum(err, ERROR_FLOOR), DTYPE_SYMBOLS[dtype]
        trace = style.line(
            scales, shown, dtype, DTYPE_COLOURS[dtype], width=2, symbol=symbol, size=6, hover=hover
        )
        fig.add_trace(trace)
    for key, dash in (("sum", "dot"), ("square", "dash")):
        value = limits.get(key, np.inf)
        if np.isfinite(value):
            _reference(fig, [value, value], span, labels[f"limit_{key}"], style.RMS, dash)
    _reference(fig, [chosen, chosen], span, labels["chosen"], style.MUTED, "solid")
    _log_axes(fig, labels, "error", height=480)
    return fig


# The four accumulators' running sums often coincide for most of their length. Each gets a dash,
# a marker and a width of its own, drawn widest first so that every line shows around those over
# it, with its markers at other coordinates (each accumulator shifted by one more).
SUM_DASHES = {"float64": "solid", "float32": "dash", "float16": "dot", "bfloat16": "dashdot"}
SUM_WIDTHS = {"float64": 8.0, "float32": 5.5, "float16": 3.5, "bfloat16": 2.0}
SUM_MARKERS = 8  # about this many markers per line
SUM_MARKER_SIZE = 9


def running_sum_figure(
    sums: Mapping[str, np.ndarray], float16_max: float, labels: Mapping[str, str]
) -> go.Figure:
    """Partial sums of squares against the coordinate index, one line per accumulator dtype."""
    fig = go.Figure()
    hover = "i = %{x}<br>%{y:.6g}"
    length = max(v.shape[-1] for v in sums.values())
    step = max(len(SUM_DASHES), -(-length // SUM_MARKERS))
    ordered = sorted(sums, key=lambda dtype: -SUM_WIDTHS[dtype])
    for phase, dtype in enumerate(ordered):
        values = sums[dtype]
        index = np.arange(1, values.shape[-1] + 1)
        shown = np.where(np.isfinite(values), values, np.nan)
        # Markers only at this accumulator's own coordinates: the others' do not cover them.
        sizes = np.where((index - 1) % step == phase % step, SUM_MARKER_SIZE, 0)
        trace = style.line(
            index,
            shown,
            dtype,
            DTYPE_COLOURS[dtype],
            dash=SUM_DASHES[dtype],
            symbol=DTYPE_SYMBOLS[dtype],
            width=SUM_WIDTHS[dtype],
            size=sizes,
            hover=hover,
        )
        fig.add_trace(trace)
    limit = [float16_max, float16_max]
    _reference(fig, [1, length], limit, labels["float16_max"], style.RMS, "dash")
    fig.update_xaxes(title_text=labels["index"])
    fig.update_yaxes(type="log", title_text=labels["partial_sum"], exponentformat="power", dtick=1)
    style.base_layout(fig, height=460)
    # Legend symbols at one size: a line's markers are 0 between its own coordinates.
    fig.update_layout(legend={"itemsizing": "constant"})
    return fig
