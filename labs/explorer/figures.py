"""Figures for the explorer: coordinates side by side, the (1, x_perp) plane, the d = 3 view.

Each is built as a spec, Plotly's plain dicts (``coordinates_spec``, ...), which the explorer
draws as it is; ``figure`` and the ``*_figure`` functions make Plotly figures of them."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from labkit import style

# Above this width markers stop being readable and SVG slows the tab: draw with WebGL, no markers.
# An envelope (a wide vector's min and max per group of coordinates) is one SVG line instead: the
# line between each group's extremes fills its band, and one SVG path redraws far faster than a
# WebGL canvas, which Streamlit creates afresh whenever the figure changes.
WEBGL_WIDTH = 512
# Above this width lines between neighbouring coordinates are noise; show points only.
LINE_WIDTH = 128
# The input arrow is drawn at most this many times the output radius, so that a huge x does not
# shrink the circle to a dot; the true length is given in the label.
ARROW_LIMIT = 2.5


def _text(size: float, *axes: str) -> dict:
    """Every text of a figure at ``size`` (at least 14 px at normal size), so that Streamlit's
    chart theme, whose ticks and legend are smaller, does not decide it."""
    font = {"size": size}
    out = {"font": font, "legend": {"font": font}, "hoverlabel": {"font": font}}
    for axis in axes:
        out[axis] = {"tickfont": font, "title": {"font": font}}
    return out


def _merge(base: dict, extra: dict) -> dict:
    """``base`` with ``extra`` merged in, nested dicts merged key by key."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def figure(spec: dict) -> go.Figure:
    """A Plotly figure from a spec of this module (``{"data": [...], "layout": {...}}``, plain
    dicts), for the lesson's steps and the explorer's HTML download; Plotly's validation adds
    1.2-2.5 ms a figure. The explorer's charts draw the specs unvalidated (``ui.chart.chart``),
    and tests/labs/explorer/test_page_explorer.py validates them."""
    return go.Figure(data=spec["data"], layout=spec["layout"])


def coordinates_figure(*args: object, **kwargs: object) -> go.Figure:
    """:func:`coordinates_spec` as a figure."""
    return figure(coordinates_spec(*args, **kwargs))


def plane_figure(*args: object, **kwargs: object) -> go.Figure:
    """:func:`plane_spec` as a figure."""
    return figure(plane_spec(*args, **kwargs))


def sphere_figure(*args: object, **kwargs: object) -> go.Figure:
    """:func:`sphere_spec` as a figure."""
    return figure(sphere_spec(*args, **kwargs))


def _series(
    index: np.ndarray, values: np.ndarray, *, name: str, color: str, kind: str, d: int, w: float
) -> dict:
    points, size = len(values), (8 if d <= LINE_WIDTH else 4) * w  # w: thicker on a projector
    enveloped = points < d
    marker = {"color": color, "symbol": style.SYMBOLS[kind], "size": size}
    mode = "lines+markers" if d <= LINE_WIDTH else "lines" if enveloped else "markers"
    dash = "solid" if enveloped else style.DASHES[kind]  # a band: a dash pattern would not show
    return {
        "type": "scattergl" if points > WEBGL_WIDTH and not enveloped else "scatter",
        "x": style.typed(index),
        "y": style.typed(values),
        "name": name,
        "mode": mode,
        "marker": marker,
        "line": {"color": color, "dash": dash, "width": (1 if enveloped else 2) * w},
        "opacity": 0.8 if enveloped else 1.0,  # overlapping bands stay visible
        "hovertemplate": "i = %{x}<br>%{y:.5g}<extra>" + name + "</extra>",
    }


def coordinates_spec(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
    means: Mapping[str, float],
    labels: Mapping[str, str],
    *,
    d: int,
    note: str = "",
    font_scale: float = 1.0,
) -> dict:
    """x on top; RMSNorm(x) and LayerNorm(x) below on one shared y axis; shared coordinate axis.

    ``series`` maps "x", "rms" and "layer" to (coordinate indices, values): every coordinate, or
    an envelope of them for a wide vector (then ``note`` says so on the chart). x keeps its own
    vertical scale because it can be orders of magnitude larger than the outputs; the two
    outputs share one so their difference (the offset that survives RMSNorm) is read directly.
    Dashed lines mark each output's mean (``means``). The two panels are laid out by hand (axis
    domains and layout shapes) because ``make_subplots`` and ``add_hline`` cost more than the
    rest of the page on every rerun at d = 4096."""
    # Larger type (the presenter's view): 1.65 times as tall, lines 1.4 times as thick.
    tall, w = 1 + (font_scale - 1) * 1.75, 1 + (font_scale - 1) * 1.1
    traces = [_series(*series["x"], name=labels["x"], color=style.INPUT, kind="input", d=d, w=w)]
    shapes = [_hline(0.0, style.MUTED, "solid", w)]
    for key, color in (("rms", style.RMS), ("layer", style.LAYER)):
        trace = _series(*series[key], name=labels[key], color=color, kind=key, d=d, w=w)
        trace["yaxis"] = "y2"
        traces.append(trace)
        if np.isfinite(means[key]):
            shapes.append(_hline(float(means[key]), color, "dash", 1.5 * w))
    size = style.FONT_SIZE * font_scale
    annotations = [
        _panel_title(labels["input"], 1.0, {"size": size}),
        _panel_title(labels["outputs"], 0.56, {"size": size}),
    ]
    if note:  # below the coordinate axis, in the figure itself (and in its PNG)
        annotations.append({**_panel_title(note, -0.16, {"size": size}), "yanchor": "top"})
    low = 130 if note else 50  # the bottom margin
    layout = {
        **style.layout(height=round((600 if note else 560) * tall)),
        # Whole coordinates only: no tick at i = 0.5 for a short vector.
        "xaxis": {
            "anchor": "y2",
            "title": {"text": labels["coordinate"]},
            "tickformat": "d",
            **({"dtick": 1} if d <= 16 else {}),
        },
        "yaxis": {"domain": [0.62, 1.0], "title": {"text": labels["value"]}},
        "yaxis2": {"domain": [0.0, 0.54], "title": {"text": labels["value"]}},
        "shapes": shapes,
        "annotations": annotations,
        # Panel titles sit at the left, so the legend goes above them, wrapping on a phone.
        "margin": {"l": 60, "r": 20, "t": 110 * font_scale, "b": low * font_scale},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.09, "x": 0},
    }
    return {"data": traces, "layout": _merge(layout, _text(size, "xaxis", "yaxis", "yaxis2"))}


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


def plane_spec(
    x_ab: tuple[float, float],
    rms_ab: tuple[float, float],
    layer_ab: tuple[float, float],
    radius: float,
    labels: Mapping[str, str],
    *,
    font_scale: float = 1.0,
) -> dict:
    """The plane spanned by u = 1/sqrt(d) (horizontal) and the part of x orthogonal to it.

    Every point is (a, b): a = <v, u>, b = <v, x_perp / |x_perp|>. RMSNorm slides x along its
    own ray onto the circle of radius sqrt(d)|g|; LayerNorm first drops a, landing on the
    vertical axis. A negative gain reflects both images through the origin, below the
    horizontal axis, so the lower half is drawn then too. Non-finite points are left out."""
    rms_ab, layer_ab = (p if np.all(np.isfinite(p)) else (None, None) for p in (rms_ab, layer_ab))
    lower = any(p[1] is not None and p[1] < 0 for p in (rms_ab, layer_ab))
    length = float(np.hypot(*x_ab))
    shown = 1.0
    if radius > 0 and length > ARROW_LIMIT * radius:
        shown = ARROW_LIMIT * radius / length
    tip = (x_ab[0] * shown, x_ab[1] * shown)
    reach = max(radius, length * shown) * 1.15 or 1.0
    cos, sin = _UNIT_CIRCLE[lower]
    traces = [
        _line(
            style.typed(radius * cos), style.typed(radius * sin), labels["circle"], style.MUTED, 2
        )
    ]
    if length > 0:
        ray = reach / length
        traces.append(_line([0, x_ab[0] * ray], [0, x_ab[1] * ray], labels["ray"], style.INPUT, 1))
    points = (
        (tip, labels["x"] if shown == 1.0 else labels["x_short"], style.INPUT, "input"),
        (rms_ab, labels["rms"], style.RMS, "rms"),
        (layer_ab, labels["layer"], style.LAYER, "layer"),
    )
    traces += [_point(ab, name, color, kind) for ab, name, color, kind in points]
    layout = _merge(
        _plane_layout(labels, tip, reach, lower),
        _text(style.FONT_SIZE * font_scale, "xaxis", "yaxis"),
    )
    return {"data": traces, "layout": layout}


# The output circle's points on the unit circle, by whether the lower half is drawn too.
_UNIT_CIRCLE = {
    lower: (np.cos(theta), np.sin(theta))
    for lower, theta in (
        (False, np.linspace(0.0, np.pi, 181)),
        (True, np.linspace(-np.pi, np.pi, 361)),
    )
}


def _line(x: object, y: object, name: str, color: str, width: float) -> dict:
    return {
        "type": "scatter", "x": x, "y": y, "mode": "lines", "name": name,
        "line": {"color": color, "dash": "dot", "width": width}, "hoverinfo": "skip",
    }  # fmt: skip


def _point(ab: tuple, name: str, color: str, kind: str) -> dict:
    marker = {"color": color, "size": 15, "symbol": style.SYMBOLS[kind]}
    return {
        "type": "scatter", "x": [ab[0]], "y": [ab[1]], "mode": "markers", "name": name,
        "marker": {**marker, "line": {"color": "white", "width": 1.5}},
        "hovertemplate": f"{name}<br>a = %{{x:.4g}}<br>b = %{{y:.4g}}<extra></extra>",
    }  # fmt: skip


def _plane_layout(labels: Mapping[str, str], tip: tuple, reach: float, lower: bool) -> dict:
    """Equal axis scales, the arrow to x and the vertical ones axis."""
    arrow = {
        "x": tip[0], "y": tip[1], "ax": 0, "ay": 0, "xref": "x", "yref": "y", "axref": "x",
        "ayref": "y", "showarrow": True, "arrowhead": 3, "arrowwidth": 2.5,
        "arrowcolor": style.INPUT, "text": "",
    }  # fmt: skip
    ones_axis = {
        "type": "line", "xref": "x", "x0": 0, "x1": 0, "yref": "y domain", "y0": 0, "y1": 1,
        "line": {"color": style.ACCENT, "width": 1},
    }  # fmt: skip
    return style.layout(
        height=520 if lower else 460,
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
            "range": [-reach if lower else -0.05 * reach, reach],
            "zeroline": True,
        },
    )


def sphere_spec(
    plane: tuple[np.ndarray, np.ndarray, np.ndarray],
    circle: np.ndarray,
    sphere: tuple[np.ndarray, np.ndarray, np.ndarray],
    points: tuple[np.ndarray, np.ndarray, np.ndarray],
    labels: Mapping[str, str],
    *,
    font_scale: float = 1.0,
) -> dict:
    """d = 3: RMSNorm's output sphere, the plane perpendicular to 1, LayerNorm's circle on it.

    ``plane`` and ``sphere`` are (X, Y, Z) mesh grids, ``circle`` is (n, 3), ``points`` is
    (x, RMSNorm(x), LayerNorm(x)), each (3,): the arrays of ``core.geometry.sphere_from``.
    The surfaces are faint and the points labelled, so that x inside the sphere stays visible."""
    x, y_rms, y_layer = points
    extent = max(float(np.max(np.abs(plane[0]))), float(np.linalg.norm(x)), 1e-9) * 1.05
    size = style.FONT_SIZE * font_scale
    traces = [
        _surface(sphere, labels["sphere"], style.RMS),
        _surface(plane, labels["plane"], style.LAYER),
        _line3d(circle.T, labels["circle3d"], style.LAYER, "solid"),
        _line3d(np.outer(np.ones(3) / np.sqrt(3.0), [-extent, extent]), labels["ones"],
                style.ACCENT, "dash"),
    ]  # fmt: skip
    ends = ((x, "x", style.INPUT, "input"), (y_rms, "rms", style.RMS, "rms"),
            (y_layer, "layer", style.LAYER, "layer"))  # fmt: skip
    # Of the two outputs, the one higher on the screen gets its label above its marker, the
    # other below: above both, near outputs wrote "LayerNorm(x)" over "RMSNorm(x)".
    up = np.array([0.0, 0.0, 1.0]) - _EYE[2] * _EYE
    high = "rms" if np.dot(y_rms, up) >= np.dot(y_layer, up) else "layer"
    for point, key, color, kind in ends:
        name, where = labels[key], "bottom center" if key not in ("x", high) else "top center"
        traces.append(
            {
                "type": "scatter3d", "x": [0, point[0]], "y": [0, point[1]], "z": [0, point[2]],
                "mode": "lines+markers+text", "name": name, "text": ["", name],
                "textposition": where, "textfont": {"size": size, "color": color},
                "marker": {"size": [0, 9], "color": color, "symbol": style.SYMBOLS[kind]},
                "line": {"color": color, "width": 7},
                "hovertemplate": name + "<br>(%{x:.3g}, %{y:.3g}, %{z:.3g})<extra></extra>",
            }
        )  # fmt: skip
    axis = {"range": [-extent, extent], "tickvals": sphere_ticks(extent),
            "tickfont": {"size": size}, "title": {"font": {"size": size}}}  # fmt: skip
    scene = {
        **{
            f"{a}axis": _merge(axis, {"title": {"text": f"x{i}"}})
            for a, i in zip("xyz", "₁₂₃", strict=True)
        },
        "aspectmode": "cube",
        # Across the all-ones axis, not along it: the plane ⟂ 1 and LayerNorm's circle at an angle.
        "camera": {"eye": {k: v * CAMERA_DISTANCE for k, v in CAMERA_EYE.items()}},
    }
    layout = _merge(style.layout(height=640, scene=scene), _text(size))
    return {"data": traces, "layout": layout}


# The 3D view's camera direction, and how far out it sits along it: at 1 the cube filled the
# frame, so that the bottom axis's ticks and title were cut off (on a phone, the sides too).
CAMERA_EYE = {"x": 1.45, "y": -1.1, "z": 0.55}
CAMERA_DISTANCE = 1.6
_EYE = np.array(list(CAMERA_EYE.values())) / np.linalg.norm(list(CAMERA_EYE.values()))
# Ticks of the 3D axes only this far out (times the half-width): three axes meet at each
# corner of the cube, and ticks at the ends wrote two equal labels ("-4", "-4") on each other.
TICK_REACH = 0.75


def sphere_ticks(extent: float) -> list[float]:
    """Three ticks, ``-t, 0, t``: ``t`` the largest one-digit multiple of a power of ten within
    ``TICK_REACH * extent`` (``extent`` > 0), clear of the cube's corners and of each other."""
    reach = TICK_REACH * extent
    exponent = math.floor(math.log10(reach))
    digit = math.floor(reach / 10.0**exponent * (1 + 1e-9))
    t = float(f"{digit}e{exponent}")  # 0.3, not 3 * 0.1 = 0.30000000000000004
    return [-t, 0.0, t]


def _surface(grids: tuple, name: str, color: str) -> dict:
    gx, gy, gz = grids
    return {
        "type": "surface", "x": gx, "y": gy, "z": gz, "opacity": 0.10, "showscale": False,
        "colorscale": [[0, color], [1, color]], "name": name, "showlegend": True,
        "hoverinfo": "skip",
    }  # fmt: skip


def _line3d(xyz: np.ndarray, name: str, color: str, dash: str) -> dict:
    return {
        "type": "scatter3d", "x": xyz[0], "y": xyz[1], "z": xyz[2], "mode": "lines",
        "name": name, "line": {"color": color, "width": 5, "dash": dash}, "hoverinfo": "skip",
    }  # fmt: skip
