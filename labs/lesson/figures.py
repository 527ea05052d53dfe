"""Figures for the guided lesson: each takes the arrays of one step and a dict of labels.

Steps that show what another page shows use that page's figure (the coordinates and the plane
of the explorer, the shift sweep of the invariance lab, the per-layer panels of the residual
stream); the figures here are the lesson's own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit import style

# A value of exactly 0 has no place on a log axis; it is drawn at this floor, below float64
# rounding (about 1e-16 for unit-size numbers), and the hover text gives the true value.
LOG_FLOOR = 1e-18
NORMS = (("rms", style.RMS), ("layer", style.LAYER))  # RMSNorm first, as on every page


def identity_figure(before: np.ndarray, after: np.ndarray, labels: Mapping[str, str]) -> go.Figure:
    """Stacked bars Var + mu^2 for x and for x + c·1, with RMS^2 marked on top of each.

    ``before`` and ``after`` are ``(rms2, var, mean2)`` as returned by
    ``core.stats.second_moment_identity``."""
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


def _coordinates(values: np.ndarray, name: str, look: dict) -> go.Scatter:
    """One output drawn coordinate by coordinate; ``look`` sets mode, marker and line."""
    return go.Scatter(
        x=np.arange(values.shape[-1]),
        y=values,
        name=name,
        hovertemplate="i = %{x}<br>%{y:.4g}<extra>" + name + "</extra>",
        **look,
    )


def outputs_figure(
    rows: Sequence[tuple[str, Mapping[str, np.ndarray]]], labels: Mapping[str, str]
) -> go.Figure:
    """RMSNorm (left) and LayerNorm (right) of x and of a changed x, one row per change.

    Each row is ``(title, outputs)`` with ``outputs`` holding ``rms_before``, ``rms_after``,
    ``layer_before`` and ``layer_after``, each (d,). Where a norm ignores the change, the dashed
    "after" line runs through the "before" markers."""
    # Panels titled by their norm; a row by its change, across both, in lines that fit a phone.
    changes = [style.wrap(title, style.PHONE_PLOT_PX) for title, _ in rows]
    above = 24 * max(1 + c.count("<br>") for c in changes) if any(changes) else 0
    panel, gap = 300, 100 + above  # px: a panel, and the room for x's axis and the titles
    plot = panel * len(rows) + gap * (len(rows) - 1)
    titles, spacing = [labels[norm] for _ in rows for norm in ("rms", "layer")], gap / plot
    fig = make_subplots(
        rows=len(rows), cols=2, shared_yaxes=True, subplot_titles=titles, vertical_spacing=spacing
    )
    for r, change in enumerate(changes):
        top = 1 - r * (panel + gap) / plot
        fig.add_annotation(
            text=f"<b>{change}</b>", x=0.5, y=top + 28 / plot, xref="paper", yref="paper",
            yanchor="bottom", showarrow=False, visible=bool(change),
        )  # fmt: skip
    for r, (_, outputs) in enumerate(rows, start=1):
        for c, (norm, color) in enumerate(NORMS, start=1):
            before = {"mode": "markers"}
            before |= {"marker": {"color": color, "symbol": style.SYMBOLS[norm], "size": 13}}
            before |= {"showlegend": r == 1, "legendgroup": f"{norm}_before"}
            after = {"mode": "lines+markers"}
            after |= {"marker": {"color": style.INPUT, "symbol": "x", "size": 8}}
            after |= {"line": {"color": style.INPUT, "dash": "dash", "width": 2}}
            after |= {"showlegend": r == 1 and c == 1, "legendgroup": "after"}
            name = f"{labels[norm]}: {labels['before']}"
            fig.add_trace(_coordinates(outputs[f"{norm}_before"], name, before), row=r, col=c)
            fig.add_trace(
                _coordinates(outputs[f"{norm}_after"], labels["after"], after), row=r, col=c
            )
        fig.update_xaxes(title_text=labels["coordinate"], row=r)
        fig.update_yaxes(title_text=labels["value"], row=r, col=1)
    top = 130 + above
    style.base_layout(fig, height=plot + top + 50)
    fig.update_annotations(font_size=style.FONT_SIZE)
    # The legend goes above the titles: 55 px above the plot area, more with a row's title.
    fig.update_layout(margin={"t": top, "b": 50}, legend={"y": 1 + (55 + above) / plot})
    return fig


def residual_figure(
    names: Sequence[str], rms: np.ndarray, layer: np.ndarray, tol: float, labels: Mapping[str, str]
) -> go.Figure:
    """Horizontal bars, log scale: how far each norm's output moves under each transformation.

    Bars left of the dotted ``tol`` line are invariances (rounding only)."""
    fig = go.Figure()
    for values, norm, color in ((rms, "rms", style.RMS), (layer, "layer", style.LAYER)):
        fig.add_trace(
            go.Bar(
                y=list(names),
                x=np.maximum(values, LOG_FLOOR),
                customdata=values,
                orientation="h",
                name=labels[norm],
                marker_color=color,
                hovertemplate="%{y}<br>%{customdata:.3g}<extra>" + labels[norm] + "</extra>",
            )
        )
    fig.add_vline(x=tol, line={"color": style.INPUT, "dash": "dot", "width": 2})
    fig.update_layout(barmode="group")
    top = max(float(np.max(rms)), float(np.max(layer)), tol)
    # The changes' names on two lines, and the axis title in lines, fit the plot on a phone.
    title = style.wrap(labels["residual"], 200)
    fig.update_xaxes(type="log", title_text=title, **style.log_ticks(LOG_FLOOR, top))
    wrapped = [style.wrap(name, 150) for name in names]
    fig.update_yaxes(autorange="reversed", tickvals=list(names), ticktext=wrapped)
    style.base_layout(fig, height=560)
    fig.update_layout(margin={"l": 20})
    return fig


def lines_figure(
    x: np.ndarray,
    series: Sequence[tuple[np.ndarray, str, str, str]],
    labels: Mapping[str, str],
    *,
    log_y: bool = False,
) -> go.Figure:
    """Curves ``(y, name, colour, dash)`` against a log ``x`` axis labelled ``labels["x"]``."""
    fig = go.Figure(
        [
            go.Scatter(
                x=x,
                y=np.maximum(y, LOG_FLOOR) if log_y else y,
                customdata=y,
                name=name,
                mode="lines+markers" if x.size <= 20 else "lines",
                line={"color": color, "dash": dash, "width": 3},
                hovertemplate="%{x:.3g} → %{customdata:.4g}<extra>" + name + "</extra>",
            )
            for y, name, color, dash in series
        ]
    )
    fig.update_xaxes(type="log", title_text=labels["x"], **style.log_ticks(x.min(), x.max()))
    if log_y:
        values = np.concatenate([np.maximum(s[0], LOG_FLOOR) for s in series])
        fig.update_yaxes(type="log", **style.log_ticks(values.min(), values.max()))
    fig.update_yaxes(title_text=labels["y"])
    return style.base_layout(fig, height=440)


def eps_figure(
    input_rms: np.ndarray,
    curves: Mapping[str, np.ndarray],
    marked: float,
    labels: Mapping[str, str],
) -> go.Figure:
    """Output RMS of RMSNorm against input RMS (log scale), one curve per eps placement.

    ``curves`` maps a placement ("inside", "outside", "clamp") to output RMS values, one per
    entry of ``input_rms``; ``marked`` is the input RMS the step's question uses."""
    looks = {"inside": (style.RMS, "solid"), "outside": (style.EXTRA[0], "dash")}
    looks["clamp"] = (style.EXTRA[1], "dot")
    series = [(values, labels[p], *looks[p]) for p, values in curves.items()]
    fig = lines_figure(input_rms, series, {"x": labels["input_rms"], "y": labels["output_rms"]})
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
    fig.update_yaxes(range=[-0.05, 1.15])
    return fig


def gradient_figure(
    eps: np.ndarray, rms: np.ndarray, layer: np.ndarray, labels: Mapping[str, str]
) -> go.Figure:
    """|cos(dL/dx, 1)| of both norms against eps, log-log; eps = 0 has no place and is left
    out (the caption gives it)."""
    keep = eps > 0
    series = [
        (rms[keep], labels["rms"], style.RMS, "solid"),
        (layer[keep], labels["layer"], style.LAYER, "dash"),
    ]
    axes = {"x": labels["eps"], "y": labels["grad_cos"]}
    return lines_figure(eps[keep], series, axes, log_y=True)


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
    fig = go.Figure()
    for values, key, color, kind in (
        (meant, "meant", style.RMS, "rms"),
        (loaded, "loaded", style.INPUT, "input"),
    ):
        look = {"mode": "lines+markers"}
        look |= {"marker": {"color": color, "symbol": style.SYMBOLS[kind], "size": 11}}
        look |= {"line": {"color": color, "dash": style.DASHES[kind], "width": 2}}
        fig.add_trace(_coordinates(values, labels[key], look))
    fig.add_hline(y=0, line={"color": style.MUTED, "width": 1})
    fig.update_xaxes(title_text=labels["coordinate"])
    fig.update_yaxes(title_text=labels["value"])
    return style.base_layout(fig, height=420)
