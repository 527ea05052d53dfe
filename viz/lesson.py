"""Figures for the guided lesson: each takes the arrays of one step and a dict of labels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz import style

# A residual of exactly 0 has no place on a log axis; it is drawn at this floor, below float64
# rounding (about 1e-16 for unit-size outputs), and the hover text gives the true value.
LOG_FLOOR = 1e-18


def identity_figure(before: np.ndarray, after: np.ndarray, labels: Mapping[str, str]) -> go.Figure:
    """Stacked bars Var + mu^2 for x and for x + c·1, with RMS^2 marked on top of each.

    ``before`` and ``after`` are ``(rms2, var, mean2)`` as returned by
    ``core.stats.second_moment_identity``.
    """
    groups = [labels["before"], labels["after"]]
    fig = go.Figure()
    for index, name, color in ((1, labels["var"], style.LAYER), (2, labels["mean2"], style.ACCENT)):
        fig.add_trace(
            go.Bar(
                x=groups,
                y=[before[index], after[index]],
                name=name,
                marker_color=color,
                hovertemplate=name + ": %{y:.4g}<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=groups,
            y=[before[0], after[0]],
            name=labels["rms2"],
            mode="markers",
            marker={
                "color": style.RMS,
                "symbol": style.SYMBOLS["rms"],
                "size": 16,
                "line": {"color": "white", "width": 1.5},
            },
            hovertemplate=labels["rms2"] + ": %{y:.4g}<extra></extra>",
        )
    )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text=labels["value"])
    return style.base_layout(fig, height=420)


def before_after_figure(outputs: Mapping[str, np.ndarray], labels: Mapping[str, str]) -> go.Figure:
    """RMSNorm (left) and LayerNorm (right) of x and of the changed x, coordinate by coordinate.

    ``outputs`` holds ``rms_before``, ``rms_after``, ``layer_before``, ``layer_after``, each (d,).
    Where the norm ignores the change, the dashed "after" line runs through the "before" markers.
    """
    d = outputs["rms_before"].shape[-1]
    index = np.arange(d)
    fig = make_subplots(
        rows=1, cols=2, shared_yaxes=True, subplot_titles=(labels["rms"], labels["layer"])
    )
    for col, kind, color in ((1, "rms", style.RMS), (2, "layer", style.LAYER)):
        fig.add_trace(
            go.Scatter(
                x=index,
                y=outputs[f"{kind}_before"],
                name=f"{labels[kind]}: {labels['before']}",
                mode="markers",
                marker={"color": color, "symbol": style.SYMBOLS[kind], "size": 13},
                hovertemplate="i = %{x}<br>%{y:.5g}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                x=index,
                y=outputs[f"{kind}_after"],
                name=f"{labels[kind]}: {labels['after']}",
                mode="lines+markers",
                marker={"color": style.INPUT, "symbol": "x", "size": 8},
                line={"color": style.INPUT, "dash": "dash", "width": 2},
                hovertemplate="i = %{x}<br>%{y:.5g}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(title_text=labels["coordinate"], row=1, col=col)
    fig.update_yaxes(title_text=labels["value"], row=1, col=1)
    style.base_layout(fig, height=440)
    fig.update_layout(margin={"t": 110})
    return fig


def sweep_figure(sweep: Mapping[str, np.ndarray], labels: Mapping[str, str]) -> go.Figure:
    """Against the offset c: cosine of each output with its c = 0 output, and RMSNorm's share
    of energy along the ones direction (the arrays of ``core.invariance.shift_sweep``)."""
    c = sweep["offsets"]
    fig = go.Figure()
    for key, name, color, dash in (
        ("layer_cosine", labels["layer_cos"], style.LAYER, "dash"),
        ("rms_cosine", labels["rms_cos"], style.RMS, "solid"),
        ("rms_energy_along_ones", labels["energy"], style.ACCENT, "dot"),
    ):
        fig.add_trace(
            go.Scatter(
                x=c,
                y=sweep[key],
                name=name,
                mode="lines",
                line={"color": color, "dash": dash, "width": 3},
                hovertemplate="c = %{x:.3g}<br>%{y:.4f}<extra>" + name + "</extra>",
            )
        )
    fig.add_vline(x=0, line={"color": style.MUTED, "width": 1})
    fig.update_xaxes(title_text=labels["offset"])
    fig.update_yaxes(title_text=labels["value"], range=[-1.05, 1.05])
    return style.base_layout(fig, height=440)


def residual_figure(
    names: Sequence[str],
    rms: np.ndarray,
    layer: np.ndarray,
    tol: float,
    labels: Mapping[str, str],
) -> go.Figure:
    """Horizontal bars, log scale: how far each norm's output moves under each transformation.

    Bars left of the dotted ``tol`` line are invariances (rounding only).
    """
    fig = go.Figure()
    for values, kind, color in ((layer, "layer", style.LAYER), (rms, "rms", style.RMS)):
        fig.add_trace(
            go.Bar(
                y=list(names),
                x=np.maximum(values, LOG_FLOOR),
                customdata=values,
                orientation="h",
                name=labels[kind],
                marker_color=color,
                hovertemplate="%{y}<br>%{customdata:.3g}<extra>" + labels[kind] + "</extra>",
            )
        )
    fig.add_vline(x=tol, line={"color": style.INPUT, "dash": "dot", "width": 2})
    fig.update_layout(barmode="group")
    fig.update_xaxes(type="log", title_text=labels["residual"], exponentformat="power")
    fig.update_yaxes(autorange="reversed")
    style.base_layout(fig, height=520)
    fig.update_layout(margin={"l": 20})
    return fig


def eps_figure(
    input_rms: np.ndarray,
    curves: Mapping[str, np.ndarray],
    marked: float,
    labels: Mapping[str, str],
) -> go.Figure:
    """Output RMS of RMSNorm against input RMS (log scale), one curve per eps placement.

    ``curves`` maps a placement ("inside", "outside", "clamp") to output RMS values, one per
    entry of ``input_rms``; ``marked`` is the input RMS the step's question uses.
    """
    fig = go.Figure()
    looks = {
        "inside": (style.RMS, "solid"),
        "outside": (style.EXTRA[0], "dash"),
        "clamp": (style.EXTRA[1], "dot"),
    }
    for placement, values in curves.items():
        color, dash = looks[placement]
        fig.add_trace(
            go.Scatter(
                x=input_rms,
                y=values,
                name=labels[placement],
                mode="lines",
                line={"color": color, "dash": dash, "width": 3},
                hovertemplate="%{x:.3g} → %{y:.4f}<extra>" + labels[placement] + "</extra>",
            )
        )
    fig.add_vline(x=marked, line={"color": style.INPUT, "dash": "dot", "width": 2})
    fig.add_annotation(
        x=np.log10(marked),
        y=1.08,
        yref="y",
        text=labels["marked"],
        showarrow=False,
        xanchor="left",
        font={"color": style.INPUT},
    )
    fig.update_xaxes(type="log", title_text=labels["input_rms"], exponentformat="power")
    fig.update_yaxes(title_text=labels["output_rms"], range=[-0.05, 1.15])
    return style.base_layout(fig, height=440)


def ulp_figure(ulps: np.ndarray, counts: np.ndarray, labels: Mapping[str, str]) -> go.Figure:
    """How many coordinates differ by 0, 1, 2, ... units in the last place of float32."""
    fig = go.Figure(
        go.Bar(
            x=[str(u) for u in ulps],
            y=counts,
            marker_color=style.RMS,
            name=labels["count"],
            text=[str(c) for c in counts],
            textposition="outside",
            hovertemplate="%{x} ulp: %{y}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=labels["ulps"], type="category")
    fig.update_yaxes(title_text=labels["count"], range=[0, float(np.max(counts)) * 1.2])
    return style.base_layout(fig, height=400)


def gain_figure(meant: np.ndarray, loaded: np.ndarray, labels: Mapping[str, str]) -> go.Figure:
    """The output the checkpoint means (gain 1 + w) against the one a direct-gain loader gives."""
    index = np.arange(meant.shape[-1])
    fig = go.Figure()
    for values, key, color, kind in (
        (meant, "meant", style.RMS, "rms"),
        (loaded, "loaded", style.INPUT, "input"),
    ):
        fig.add_trace(
            go.Scatter(
                x=index,
                y=values,
                name=labels[key],
                mode="lines+markers",
                marker={"color": color, "symbol": style.SYMBOLS[kind], "size": 11},
                line={"color": color, "dash": style.DASHES[kind], "width": 2},
                hovertemplate="i = %{x}<br>%{y:.5g}<extra>" + labels[key] + "</extra>",
            )
        )
    fig.add_hline(y=0, line={"color": style.MUTED, "width": 1})
    fig.update_xaxes(title_text=labels["coordinate"])
    fig.update_yaxes(title_text=labels["value"])
    return style.base_layout(fig, height=400)
