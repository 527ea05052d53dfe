"""Figures for the explorer: coordinates side by side, the (1, x_perp) plane, the d = 3 view."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from viz import style

# Above this width individual markers stop being readable and SVG slows the tab: draw with
# WebGL and without per-point markers.
WEBGL_WIDTH = 512
# Above this width lines between neighbouring coordinates are noise; show points only.
LINE_WIDTH = 128
# The input arrow is drawn at most this many times the output radius, so that a huge x does not
# shrink the circle to a dot; the true length is given in the label.
ARROW_LIMIT = 2.5


def _series(
    index: np.ndarray, values: np.ndarray, *, name: str, color: str, kind: str, d: int
) -> go.Scatter | go.Scattergl:
    trace = go.Scattergl if d > WEBGL_WIDTH else go.Scatter
    mode = "lines+markers" if d <= LINE_WIDTH else "markers"
    marker = {"color": color, "symbol": style.SYMBOLS[kind], "size": 8 if d <= LINE_WIDTH else 4}
    return trace(
        x=index,
        y=values,
        name=name,
        mode=mode,
        marker=marker,
        line={"color": color, "dash": style.DASHES[kind], "width": 2},
        hovertemplate="i = %{x}<br>%{y:.5g}<extra>" + name + "</extra>",
    )


def coordinates_figure(
    x: np.ndarray, y_rms: np.ndarray, y_layer: np.ndarray, labels: Mapping[str, str]
) -> go.Figure:
    """x on top; RMSNorm(x) and LayerNorm(x) below on one shared y axis; shared coordinate axis.

    x keeps its own vertical scale because it can be orders of magnitude larger than the
    outputs; the two outputs share one so their difference (the offset that survives RMSNorm)
    is read directly. Dashed lines mark each output's mean. The two panels are laid out by hand
    (axis domains and layout shapes) because ``make_subplots`` and ``add_hline`` cost more than
    the rest of the page on every rerun at d = 4096.
    """
    d = x.shape[-1]
    index = np.arange(d)
    traces = [_series(index, x, name=labels["x"], color=style.INPUT, kind="input", d=d)]
    shapes = [_hline(0.0, style.MUTED, "solid", 1)]
    for values, key, color in ((y_rms, "rms", style.RMS), (y_layer, "layer", style.LAYER)):
        trace = _series(index, values, name=labels[key], color=color, kind=key, d=d)
        trace.update(yaxis="y2")
        traces.append(trace)
        shapes.append(_hline(float(np.mean(values)), color, "dash", 1.5))
    title_font = {"size": style.FONT_SIZE}
    fig = go.Figure(
        data=traces,
        layout=style.layout(
            height=560,
            xaxis={"anchor": "y2", "title": {"text": labels["coordinate"]}},
            yaxis={"domain": [0.62, 1.0], "title": {"text": labels["value"]}},
            yaxis2={"domain": [0.0, 0.54], "title": {"text": labels["value"]}},
            shapes=shapes,
            annotations=[
                _panel_title(labels["input"], 1.0, title_font),
                _panel_title(labels["outputs"], 0.56, title_font),
            ],
            # Panel titles sit at the left, so the legend goes to the right above the plot.
            margin={"l": 60, "r": 20, "t": 70, "b": 50},
            legend={"orientation": "h", "yanchor": "bottom", "y": 1.06, "x": 1, "xanchor": "right"},
        ),
    )
    return fig


def _panel_title(text: str, y: float, font: dict) -> dict:
    """A panel's title, left-aligned just above the panel at paper height ``y``."""
    return {
        "text": text,
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "xanchor": "left",
        "y": y,
        "yanchor": "bottom",
        "showarrow": False,
        "font": font,
    }


def _hline(y: float, color: str, dash: str, width: float) -> dict:
    """A horizontal line across the lower panel at height ``y``."""
    return {
        "type": "line",
        "xref": "x domain",
        "x0": 0,
        "x1": 1,
        "yref": "y2",
        "y0": y,
        "y1": y,
        "line": {"color": color, "dash": dash, "width": width},
    }


def plane_figure(
    x_ab: tuple[float, float],
    rms_ab: tuple[float, float],
    layer_ab: tuple[float, float],
    radius: float,
    labels: Mapping[str, str],
) -> go.Figure:
    """The plane spanned by u = 1/sqrt(d) (horizontal) and the part of x orthogonal to it.

    Every point is (a, b): a = <v, u>, b = |v - a u|. RMSNorm slides x along its own ray onto
    the circle of radius sqrt(d)|g|; LayerNorm first drops a, landing on the vertical axis.
    """
    theta = np.linspace(0.0, np.pi, 181)
    traces = [
        {
            "type": "scatter",
            "x": radius * np.cos(theta),
            "y": radius * np.sin(theta),
            "mode": "lines",
            "name": labels["circle"],
            "line": {"color": style.MUTED, "dash": "dot", "width": 2},
            "hoverinfo": "skip",
        }
    ]
    length = float(np.hypot(*x_ab))
    shown = 1.0
    if radius > 0 and length > ARROW_LIMIT * radius:
        shown = ARROW_LIMIT * radius / length
    tip = (x_ab[0] * shown, x_ab[1] * shown)
    reach = max(radius, length * shown) * 1.15 or 1.0
    if length > 0:
        ray = reach / length
        traces.append(
            {
                "type": "scatter",
                "x": [0, x_ab[0] * ray],
                "y": [0, x_ab[1] * ray],
                "mode": "lines",
                "name": labels["ray"],
                "line": {"color": style.INPUT, "dash": "dot", "width": 1},
                "hoverinfo": "skip",
            }
        )
    points = (
        (tip, labels["x"] if shown == 1.0 else labels["x_short"], style.INPUT, "input"),
        (rms_ab, labels["rms"], style.RMS, "rms"),
        (layer_ab, labels["layer"], style.LAYER, "layer"),
    )
    for (a, b), name, color, kind in points:
        traces.append(
            {
                "type": "scatter",
                "x": [a],
                "y": [b],
                "mode": "markers",
                "name": name,
                "marker": {
                    "color": color,
                    "size": 15,
                    "symbol": style.SYMBOLS[kind],
                    "line": {"color": "white", "width": 1.5},
                },
                "hovertemplate": f"{name}<br>a = %{{x:.4g}}<br>b = %{{y:.4g}}<extra></extra>",
            }
        )
    arrow = {
        "x": tip[0],
        "y": tip[1],
        "ax": 0,
        "ay": 0,
        "xref": "x",
        "yref": "y",
        "axref": "x",
        "ayref": "y",
        "showarrow": True,
        "arrowhead": 3,
        "arrowwidth": 2.5,
        "arrowcolor": style.INPUT,
        "text": "",
    }
    ones_axis = {
        "type": "line",
        "xref": "x",
        "x0": 0,
        "x1": 0,
        "yref": "y domain",
        "y0": 0,
        "y1": 1,
        "line": {"color": style.ACCENT, "width": 1},
    }
    return go.Figure(
        data=traces,
        layout=style.layout(
            height=460,
            annotations=[arrow],
            shapes=[ones_axis],
            xaxis={
                "title": {"text": labels["axis_a"]},
                "range": [-reach, reach],
                "zeroline": False,
                "scaleanchor": "y",
                "scaleratio": 1,
            },
            yaxis={
                "title": {"text": labels["axis_b"]},
                "range": [-0.05 * reach, reach],
                "zeroline": True,
            },
        ),
    )


def sphere_figure(
    plane: tuple[np.ndarray, np.ndarray, np.ndarray],
    circle: np.ndarray,
    sphere: tuple[np.ndarray, np.ndarray, np.ndarray],
    points: tuple[np.ndarray, np.ndarray, np.ndarray],
    labels: Mapping[str, str],
) -> go.Figure:
    """d = 3: RMSNorm's output sphere, the plane perpendicular to 1, LayerNorm's circle on it.

    ``plane`` and ``sphere`` are (X, Y, Z) mesh grids, ``circle`` is (n, 3), ``points`` is
    (x, RMSNorm(x), LayerNorm(x)), each (3,): the arrays of ``core.geometry.sphere_3d``.
    """
    x, y_rms, y_layer = points
    extent = max(float(np.max(np.abs(plane[0]))), float(np.linalg.norm(x)), 1e-9) * 1.05
    fig = go.Figure()
    for (gx, gy, gz), name, color, opacity in (
        (sphere, labels["sphere"], style.RMS, 0.18),
        (plane, labels["plane"], style.LAYER, 0.15),
    ):
        fig.add_trace(
            go.Surface(
                x=gx,
                y=gy,
                z=gz,
                opacity=opacity,
                showscale=False,
                colorscale=[[0, color], [1, color]],
                name=name,
                showlegend=True,
                hoverinfo="skip",
            )
        )
    fig.add_trace(
        go.Scatter3d(
            x=circle[:, 0],
            y=circle[:, 1],
            z=circle[:, 2],
            mode="lines",
            name=labels["circle3d"],
            line={"color": style.LAYER, "width": 5},
            hoverinfo="skip",
        )
    )
    ones = np.outer(np.ones(3) / np.sqrt(3.0), [-extent, extent])
    fig.add_trace(
        go.Scatter3d(
            x=ones[0],
            y=ones[1],
            z=ones[2],
            mode="lines",
            name=labels["ones"],
            line={"color": style.ACCENT, "width": 4, "dash": "dash"},
            hoverinfo="skip",
        )
    )
    for point, name, color, kind in (
        (x, labels["x"], style.INPUT, "input"),
        (y_rms, labels["rms"], style.RMS, "rms"),
        (y_layer, labels["layer"], style.LAYER, "layer"),
    ):
        fig.add_trace(
            go.Scatter3d(
                x=[0, point[0]],
                y=[0, point[1]],
                z=[0, point[2]],
                mode="lines+markers",
                name=name,
                marker={"size": [0, 7], "color": color, "symbol": style.SYMBOLS[kind]},
                line={"color": color, "width": 5},
                hovertemplate=name + "<br>(%{x:.3g}, %{y:.3g}, %{z:.3g})<extra></extra>",
            )
        )
    axis = {"range": [-extent, extent]}
    fig.update_layout(
        scene={
            "xaxis": {**axis, "title": "x₁"},
            "yaxis": {**axis, "title": "x₂"},
            "zaxis": {**axis, "title": "x₃"},
            "aspectmode": "cube",
        },
        # Looking across the all-ones axis, not along it, so that the plane perpendicular
        # to 1 and LayerNorm's circle are seen at an angle rather than face-on.
        scene_camera={"eye": {"x": 1.45, "y": -1.1, "z": 0.55}},
    )
    return style.base_layout(fig, height=520)
