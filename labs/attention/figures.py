"""Figures for the attention sandbox: keys in the plane or in space, and attention weights.

Each figure shows one version of the keys (raw, RMSNorm, LayerNorm). Only the keys the page's
sentences single out carry a label (twelve labels, or keys pressed together by an offset, piled up
into an unreadable cluster); every key shows its name on hover. No legend: the page explains the
marks once, above the columns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from labkit import style

UNSELECTABLE = "#111111"
# Key markers by view (d) and by whether the key is un-selectable. Plotly draws 3D markers as font
# glyphs and "x" is missing from common fonts (an empty box), so 3D views mark un-selectable keys
# with a diamond; 3D marker sizes are in other units. A white edge keeps touching 2D markers apart.
EDGE = {"color": "white", "width": 1}
KEY_MARKERS = {
    2: {
        False: {"symbol": "circle", "size": 12, "line": EDGE},
        True: {"symbol": "x", "size": 14, "line": EDGE},
    },
    3: {False: {"symbol": "circle", "size": 6}, True: {"symbol": "diamond", "size": 7}},
}
# Keys closer than this (relative to the panel) are drawn as one point with a joint label.
SAME_POINT = 1e-9
SPHERE_LINES = 7


def _groups(keys: np.ndarray, scale: float) -> list[list[int]]:
    """Indices of keys that sit at one point (LayerNorm at d = 2 stacks them)."""
    groups: list[list[int]] = []
    for i, key in enumerate(keys):
        for group in groups:
            if np.linalg.norm(keys[group[0]] - key) <= SAME_POINT * scale:
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


def _key_points(
    keys: np.ndarray, unselectable: Sequence[int], named: Sequence[int], scale: float
) -> list[dict]:
    """One marker per point: position, joint name (on hover), joint label (the ``named`` keys
    there, or nothing) and whether it is un-selectable."""
    return [
        {
            "at": keys[group[0]],
            "name": ", ".join(f"k{i + 1}" for i in group),
            "label": ", ".join(f"k{i + 1}" for i in group if i in named),
            "hidden": group[0] in unselectable,
        }
        for group in _groups(keys, scale)
    ]


# Figure type in px (ticks, axis titles, key labels), set because Streamlit's chart theme writes
# ticks at 0.75 rem. ``?text=large`` enlarges them all alike (``labkit.style.readable``).
FONTS = {"tick": 14, "title": 16, "key": 15}


def _axis_fonts(size: dict[str, int], title: str) -> dict:
    return {
        "tickfont": {"size": size["tick"]},
        "title": {"text": title, "font": {"size": size["title"]}},
    }


def _extent(keys: np.ndarray, radius: float | None) -> float:
    reach = float(np.max(np.abs(keys))) if keys.size else 1.0
    return 1.3 * max(reach, radius or 0.0, 1e-9)


# --- d = 2 ---------------------------------------------------------------------------------------


def _plane_traces(keys, hull, color, radius, plane, extent) -> list[go.Scatter]:
    traces = []
    if len(hull) >= 3:
        loop = np.append(hull, hull[0])
        traces.append(
            go.Scatter(
                x=keys[loop, 0],
                y=keys[loop, 1],
                name="hull",
                fill="toself",
                fillcolor=color,
                opacity=0.15,
                mode="lines",
                line={"color": color, "width": 1},
                hoverinfo="skip",
            )
        )
    if radius:
        t = np.linspace(0.0, 2.0 * np.pi, 181)
        traces.append(
            go.Scatter(
                x=radius * np.cos(t),
                y=radius * np.sin(t),
                mode="lines",
                line={"color": style.MUTED, "dash": "dot", "width": 1.5},
                hoverinfo="skip",
            )
        )
    span = np.array([-extent, extent])
    traces.append(_line(span, span, style.ACCENT, "dash"))  # direction 1
    if plane:
        traces.append(_line(span, -span, style.LAYER, "dot"))  # the line ⟂ 1
    return traces


def _line(x, y, color, dash) -> go.Scatter:
    return style.line(x, y, None, color, dash=dash, width=1.5, hoverinfo="skip")


def _key_markers(points: list[dict], color: str, size: dict[str, int], d: int) -> list:
    """The keys as labelled markers in the view of ``d`` = 2 or 3: selectable keys in the
    case's colour, un-selectable ones black, one trace each where there are any."""
    axes = "xyz"[:d]
    hover = "%{customdata}<br>(" + ", ".join(f"%{{{a}:.3f}}" for a in axes) + ")<extra></extra>"
    traces = []
    for hidden in (False, True):
        chosen = [p for p in points if p["hidden"] == hidden]
        if not chosen:
            continue
        at = np.array([p["at"] for p in chosen])
        # In the plane labels lean towards the origin; in space they sit above the marker.
        where = [_text_position(a) for a in at] if d == 2 else "top center"
        traces.append(
            (go.Scatter if d == 2 else go.Scatter3d)(
                **dict(zip(axes, at.T, strict=True)),
                name="unselectable" if hidden else "selectable",
                mode="markers+text",
                text=[p["label"] for p in chosen],
                customdata=[p["name"] for p in chosen],
                textposition=where,
                textfont={"size": size["key"]},
                marker={**KEY_MARKERS[d][hidden], "color": UNSELECTABLE if hidden else color},
                hovertemplate=hover,
            )
        )
    return traces


def _text_position(at: np.ndarray) -> str:
    """Labels lean towards the origin, so a key near the edge keeps its label inside the plot."""
    return f"{'top' if at[1] >= 0 else 'bottom'} {'right' if at[0] < 0 else 'left'}"


def _figure_2d(keys, hull, points, direction, color, radius, plane, height, size) -> go.Figure:
    extent = _extent(keys, radius)
    tip = 0.85 * extent * direction
    traces = _plane_traces(keys, hull, color, radius, plane, extent)
    query = _line([0.0, tip[0]], [0.0, tip[1]], style.EXTRA[0], "solid")
    query.update(name="query", line_width=2.5)
    traces.append(query)
    traces += _key_markers(points, color, size, 2)
    arrow = {"x": tip[0], "y": tip[1], "ax": 0.0, "ay": 0.0, "xref": "x", "yref": "y", "axref": "x"}
    arrow |= {"ayref": "y", "showarrow": True, "arrowhead": 3, "arrowsize": 1.6, "arrowwidth": 2.5}
    arrow |= {"arrowcolor": style.EXTRA[0], "text": ""}
    axis = {"range": [-extent, extent], "zeroline": True, "showgrid": True}
    return go.Figure(
        data=traces,
        layout=style.layout(
            height=height,
            showlegend=False,
            margin={"l": 50, "r": 10, "t": 20, "b": 40},
            xaxis={**axis, **_axis_fonts(size, "x₁"), "constrain": "domain"},
            yaxis={**axis, **_axis_fonts(size, "x₂"), "scaleanchor": "x", "scaleratio": 1},
            annotations=[arrow],
        ),
    )


# --- d = 3 ---------------------------------------------------------------------------------------


def _sphere_traces(radius: float) -> list[go.Scatter3d]:
    t = np.linspace(0.0, 2.0 * np.pi, 73)
    lines = []
    for lat in np.linspace(-60.0, 60.0, 5):
        r, z = radius * np.cos(np.radians(lat)), radius * np.sin(np.radians(lat))
        lines.append((r * np.cos(t), r * np.sin(t), np.full_like(t, z)))
    for lon in np.linspace(0.0, 180.0, SPHERE_LINES, endpoint=False):
        c, s = np.cos(np.radians(lon)), np.sin(np.radians(lon))
        lines.append((radius * np.cos(t) * c, radius * np.cos(t) * s, radius * np.sin(t)))
    return [
        go.Scatter3d(
            x=x, y=y, z=z, mode="lines", line={"color": "#bbbbbb", "width": 1}, hoverinfo="skip"
        )
        for x, y, z in lines
    ]


def _plane_3d(extent: float) -> go.Mesh3d:
    """A disc of the plane ⟂ 1, radius ``extent``."""
    e1 = np.array([-1.0, 1.0, 0.0]) / np.sqrt(2.0)
    e2 = np.array([-1.0, -1.0, 2.0]) / np.sqrt(6.0)
    t = np.linspace(0.0, 2.0 * np.pi, 49)[:-1]
    ring = extent * (np.cos(t)[:, None] * e1 + np.sin(t)[:, None] * e2)  # (48, 3)
    pts = np.vstack([np.zeros((1, 3)), ring])
    m = len(ring)
    return go.Mesh3d(
        x=pts[:, 0],
        y=pts[:, 1],
        z=pts[:, 2],
        i=np.zeros(m, dtype=int),
        j=np.arange(1, m + 1),
        k=np.r_[np.arange(2, m + 1), 1],
        color=style.LAYER,
        opacity=0.12,
        hoverinfo="skip",
    )


def _figure_3d(keys, hull, points, direction, color, radius, plane, height, size) -> go.Figure:
    extent = _extent(keys, radius)
    traces: list = _sphere_traces(radius) if radius else []
    if plane:
        traces.append(_plane_3d(0.9 * extent))
    if len(hull):
        traces.append(
            go.Mesh3d(
                x=keys[:, 0],
                y=keys[:, 1],
                z=keys[:, 2],
                i=hull[:, 0],
                j=hull[:, 1],
                k=hull[:, 2],
                name="hull",
                color=color,
                opacity=0.15,
                hoverinfo="skip",
            )
        )
    ones = np.array([-extent, extent])
    traces.append(
        go.Scatter3d(
            x=ones, y=ones, z=ones, mode="lines", line={"color": style.ACCENT, "dash": "dash"}
        )
    )
    tip = 0.75 * extent * direction
    traces += _query_3d(tip)
    traces += _key_markers(points, color, size, 3)
    # No tick labels in space: from most viewpoints the three axes' numbers overlap, and the
    # lesson is in the shapes (the page gives the norms and components in words).
    axis = {"range": [-extent, extent], "showticklabels": False}
    scene = {
        "xaxis": {**axis, **_axis_fonts(size, "x₁")},
        "yaxis": {**axis, **_axis_fonts(size, "x₂")},
        "zaxis": {**axis, **_axis_fonts(size, "x₃")},
        "aspectmode": "cube",
        # Far enough out that the spheres and the axes' names stay whole in a third of a laptop.
        "camera": {"eye": {"x": 2.25, "y": -0.5, "z": 1.13}},
    }
    return go.Figure(
        data=traces,
        layout=style.layout(
            height=height, showlegend=False, margin={"l": 0, "r": 0, "t": 10, "b": 0}, scene=scene
        ),
    )


def _query_3d(tip: np.ndarray) -> list:
    """The query direction: a thick line from the origin and a cone as its arrowhead."""
    head = tip / max(float(np.linalg.norm(tip)), 1e-300)
    color = [[0.0, style.EXTRA[0]], [1.0, style.EXTRA[0]]]
    return [
        go.Scatter3d(
            name="query",
            x=[0.0, tip[0]],
            y=[0.0, tip[1]],
            z=[0.0, tip[2]],
            mode="lines",
            line={"color": style.EXTRA[0], "width": 8},
            hoverinfo="skip",
        ),
        go.Cone(
            x=[tip[0]],
            y=[tip[1]],
            z=[tip[2]],
            u=[head[0]],
            v=[head[1]],
            w=[head[2]],
            anchor="tip",
            sizemode="absolute",
            sizeref=0.18 * float(np.linalg.norm(tip)),
            colorscale=color,
            showscale=False,
            hoverinfo="skip",
        ),
    ]


# --- public --------------------------------------------------------------------------------------


def keys_figure(
    keys: np.ndarray,
    *,
    hull: np.ndarray,
    unselectable: Sequence[int],
    direction: np.ndarray,
    named: Sequence[int],
    color: str,
    radius: float | None = None,
    plane: bool = False,
    height: int = 400,
) -> go.Figure:
    """The keys (n, d) with their hull, the query direction and, for a normalised case, the
    circle or sphere of ``radius``; ``plane`` adds the line or plane ⟂ 1. Only the ``named``
    keys (indices from 0) are labelled; every key is named on hover."""
    scale = _extent(keys, radius)
    points = _key_points(keys, unselectable, named, scale)
    build = _figure_2d if keys.shape[1] == 2 else _figure_3d
    return build(keys, hull, points, direction, color, radius, plane, height, FONTS)


def weights_figure(
    weights: np.ndarray,
    *,
    unselectable: Sequence[int],
    color: str,
    labels: Mapping[str, str],
    height: int = 260,
) -> go.Figure:
    """Attention weights as bars (un-selectable keys hatched), with the uniform level 1/n."""
    n = len(weights)
    size = FONTS
    names = [f"k{i + 1}" for i in range(n)]
    hatch = ["x" if i in unselectable else "" for i in range(n)]
    bars = go.Bar(
        name="weights",
        x=names,
        y=weights,
        marker={"color": color, "pattern": {"shape": hatch, "fgcolor": UNSELECTABLE}},
        hovertemplate="%{x}: %{y:.1%}<extra></extra>",
    )
    uniform = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1.0 / n, "y1": 1.0 / n}
    uniform |= {"line": {"color": style.ACCENT, "dash": "dash", "width": 2}}
    return go.Figure(
        data=[bars],
        layout=style.layout(
            height=height,
            showlegend=False,
            margin={"l": 60, "r": 10, "t": 10, "b": 40},
            yaxis={"range": [0, 1], "tickformat": ".0%", **_axis_fonts(size, labels["weight"])},
            xaxis=_axis_fonts(size, labels["key"]),
            shapes=[uniform],
        ),
    )
