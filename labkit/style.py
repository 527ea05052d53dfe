"""Colours and layout shared by every figure.

The palette is Okabe & Ito's (2008), chosen so that the three series stay distinguishable with
any common colour-vision deficiency; the series also differ in marker shape and dash."""

import base64
import math
import re
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go

INPUT = "#555555"  # grey: the raw vector
RMS = "#D55E00"  # vermillion: RMSNorm
LAYER = "#0072B2"  # blue: LayerNorm
ACCENT = "#009E73"  # bluish green: reference lines and the all-ones direction
MUTED = "#999999"
EXTRA = ("#E69F00", "#56B4E9", "#CC79A7", "#F0E442")

# Symbols Scatter3d knows too, so the 3D view uses the same ones.
SYMBOLS = {"input": "circle", "rms": "diamond", "layer": "square"}
DASHES = {"input": "dot", "rms": "solid", "layer": "dash"}

FONT_SIZE = 16


def layout(*, title: str = "", height: int = 420, **extra: object) -> dict:
    """Large type and a legend above the plot, as a layout dict for ``go.Figure(layout=...)``.

    Passing the layout to the constructor costs about a millisecond; ``update_layout`` on a
    built figure costs several, on every rerun of every page."""
    return {
        "title": {"text": title, "font": {"size": FONT_SIZE + 3}},
        "height": height,
        "font": {"size": FONT_SIZE},
        # No Plotly template: Streamlit's chart theme styles the figure in the browser, and
        # validating a template costs about 15 ms per figure.
        "margin": {"l": 60, "r": 20, "t": 70 if title else 30, "b": 50},
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        "hoverlabel": {"font_size": FONT_SIZE},
        **extra,
    }


def base_layout(fig: go.Figure, *, title: str = "", height: int = 420) -> go.Figure:
    """``layout`` applied to a figure that is already built."""
    fig.update_layout(layout(title=title, height=height))
    return fig


def line(
    x: object,
    y: object,
    name: str | None,
    color: str,
    *,
    kind: str | None = None,
    dash: str | None = None,
    symbol: str | None = None,
    width: float | None = None,
    size: float | None = None,
    hover: str | None = None,
    **extra: object,
) -> go.Scatter:
    """One series as a line in ``color``, with markers of that colour where ``size`` is given.

    ``kind`` ("input", "rms", "layer") gives the marker symbol and dash of ``SYMBOLS`` and
    ``DASHES`` where ``symbol`` and ``dash`` do not. ``hover`` is the hover text, shown in a box
    named after the series; pass ``hovertemplate`` instead for another box. Options left None
    are Plotly's defaults; ``extra`` (error bars, legend groups, another ``mode``) goes to
    ``go.Scatter`` as it is."""
    if kind is not None:
        dash, symbol = dash or DASHES[kind], symbol or SYMBOLS[kind]
    marker = None if size is None else _given(color=color, symbol=symbol, size=size)
    if hover is not None:
        extra["hovertemplate"] = f"{hover}<extra>{name}</extra>"
    extra.setdefault("mode", "lines" if marker is None else "lines+markers")
    stroke = _given(color=color, dash=dash, width=width)
    return go.Scatter(x=x, y=y, name=name, line=stroke, marker=marker, **extra)


def _given(**options: object) -> dict:
    """``options`` without those left None."""
    return {k: v for k, v in options.items() if v is not None}


# plotly.js's typed arrays, by numpy dtype: Plotly's JSON sends a numpy array as one of these.
TYPED_ARRAYS = {
    "int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4", "uint32": "u4",
    "float32": "f4", "float64": "f8",
}  # fmt: skip


def typed(values: object) -> object:
    """A 1-D numpy array as Plotly's JSON writes it, ``{"dtype": "f4", "bdata": <base64>}``;
    anything else (lists, other dtypes, more dimensions, empty) as it is, for Plotly to write.

    Written here once, not by Plotly on every ``Figure.to_dict`` (which Streamlit calls for
    every chart on every run): Plotly checks and copies each array through narwhals first, about
    0.1 ms per array, which for the explorer's charts was more than encoding them."""
    if not isinstance(values, np.ndarray):
        return values
    code = TYPED_ARRAYS.get(values.dtype.name)
    if code is None or values.ndim != 1 or values.size == 0:
        return values
    return {"dtype": code, "bdata": base64.b64encode(np.ascontiguousarray(values)).decode("ascii")}


def chart_config(file_name: str) -> dict:
    """Plotly's toolbar: PNG download at twice the screen resolution, no vendor logo."""
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": file_name, "scale": 2},
    }


# ``?text=large`` sets the page's root font to 22 px against the usual 16; figures grow alike.
LARGE_TEXT_SCALE = 22 / 16
# No figure text below this at normal size: ticks, legends, titles, annotations, labels.
MIN_FONT_SIZE = 14
# A phone's plot area (390 px: the page's 356 px less the figure's margins), in px.
PHONE_PLOT_PX = 280
# A phone's legend row (the page's 356 px less an entry's line symbol), in px: a longer name
# breaks at a space rather than run off the screen.
PHONE_LEGEND_PX = 316
# Figure text over white at 12.6:1. Streamlit's chart theme writes ticks and axis titles in a
# grey of 3.7:1, too faint on a projector.
TEXT = "#333333"


def readable(
    fig: go.Figure,
    *,
    large: bool = False,
    separators: str = ".,",
    localise: Callable[[str], str] | None = None,
) -> go.Figure:
    """``fig`` with every text at least ``MIN_FONT_SIZE`` px, times ``LARGE_TEXT_SCALE`` when
    ``large``: ticks and axis titles (2D and 3D), legend, title, annotations (subplot titles),
    hover labels, colour bars and labels drawn on traces.

    A size the figure set itself is kept (raised to the minimum). One left to Streamlit's chart
    theme (ticks and legends at 12.75 px) becomes the figure's base size (``FONT_SIZE`` unless
    its layout says otherwise). Pages call it once per figure through ``ui.frame.readable``.

    Numbers follow the page's language: ``separators`` (Plotly's decimal mark, then its digit
    group separator) writes hover labels and automatic ticks, and ``localise`` rewrites tick
    labels the figure wrote itself (``ticktext``), so ``0,05`` is a tick in Indonesian.

    Returns a new figure built from the edited layout: setting the same fonts property by
    property on the built figure costs five to ten times as long."""
    layout = fig.layout.to_plotly_json()
    layout["separators"] = separators
    # The new figure gets the default template back without validating it again.
    layout.pop("template", None)
    sized = _Sizer(LARGE_TEXT_SCALE if large else 1.0, (layout.get("font") or {}).get("size"))
    layout["font"] = sized.font(layout.get("font"))
    for key in ("legend", "hoverlabel"):
        layout[key] = {**layout.get(key, {}), "font": sized.font(layout.get(key, {}).get("font"))}
    title = layout.get("title") or {}
    if title.get("text"):
        title["font"] = sized.font(title.get("font"), sized.base + 3)
    kinds = {trace.type for trace in fig.data}
    if kinds - _THREE_D:  # 2D traces: their axes, also those the layout does not name
        layout.setdefault("xaxis", {})
        layout.setdefault("yaxis", {})
    if kinds & _THREE_D:
        layout.setdefault("scene", {})
    for name in list(layout):
        if _AXIS.match(name):
            plot = (layout.get("height") or 450) - 100  # the plot's height, about
            layout[name] = _fit(_ticks(sized.axis(layout[name]), localise), name, plot)
        elif _SCENE.match(name):
            scene = layout[name]
            scene.update(
                {k: _ticks(sized.axis(scene.get(k)), localise) for k in ("xaxis", "yaxis", "zaxis")}
            )
    for note in layout.get("annotations", ()):
        note["font"] = sized.font(note.get("font"), colour=False)  # perhaps its series' colour
    out = go.Figure(data=fig.data, layout=layout)
    legend_size = layout["legend"]["font"]["size"]
    for trace in out.data:
        sized.trace(trace)
        if trace.name and trace.showlegend is not False:
            named = wrap(trace.name, PHONE_LEGEND_PX, legend_size)
            if named != trace.name:
                trace.name = named
    return out


def wrap(text: str, width: float, size: float = FONT_SIZE) -> str:
    """``text`` in lines (``<br>``) of at most ``width`` px at ``size`` px, broken at spaces
    (a character of Source Sans is about half an em wide)."""
    most, lines = max(int(width / (0.5 * size)), 8), []
    if len(text) <= most or "<br>" in text:
        return text
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= most:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def _fit(axis: dict, name: str, height: float) -> dict:
    """A 2D axis whose title wraps to its length on a phone, the margin grown for its lines."""
    title, (lo, hi) = axis["title"], axis.get("domain") or (0, 1)
    length = (PHONE_PLOT_PX if name[0] == "x" else height) * (hi - lo)
    text = title.get("text")
    if isinstance(text, str) and text != (wrapped := wrap(text, length, title["font"]["size"])):
        axis.update(title={**title, "text": wrapped}, automargin=True)
    return axis


def _ticks(axis: dict, localise: Callable[[str], str] | None) -> dict:
    """``axis`` with its own tick labels (``ticktext``) written by ``localise``."""
    text = axis.get("ticktext")
    if localise is not None and text is not None:
        axis["ticktext"] = [localise(t) if isinstance(t, str) else t for t in text]
    return axis


# Trace types drawn in a 3D scene rather than on x and y axes.
_THREE_D = {"scatter3d", "surface", "mesh3d", "cone", "streamtube", "isosurface", "volume"}
_AXIS = re.compile(r"[xy]axis\d*$")
_SCENE = re.compile(r"scene\d*$")


class _Sizer:
    """Fonts for ``readable``: a size the figure gave kept (at least the minimum), scaled."""

    def __init__(self, scale: float, base: float | None) -> None:
        self.scale, self.base = scale, base or FONT_SIZE

    def font(self, font: dict | None, default: float | None = None, *, colour: bool = True):
        font = dict(font or {})
        size = font.get("size", self.base if default is None else default)
        font["size"] = max(size, MIN_FONT_SIZE) * self.scale
        if colour:
            font.setdefault("color", TEXT)
        return font

    def axis(self, axis: dict | None) -> dict:
        axis = dict(axis or {})
        title = axis.get("title") or {}
        axis["tickfont"] = self.font(axis.get("tickfont"))
        axis["title"] = {**title, "font": self.font(title.get("font"))}
        return axis

    def trace(self, trace: object) -> None:
        """Labels drawn on the trace (text mode, bar labels) and its colour bar: few traces
        have them, so these are set on the built figure."""
        if "textfont" in trace and trace.text is not None:
            trace.textfont.size = self.font(trace.textfont.to_plotly_json())["size"]
        if "colorbar" in trace and trace.showscale is not False:
            bar = trace.colorbar
            bar.tickfont = self.font(bar.tickfont.to_plotly_json())
            bar.title.font = self.font(bar.title.font.to_plotly_json())


def _tick_text(value: float) -> str:
    """A tick label written as ``ui.fmt.num`` writes numbers: ``20``, ``0.05``, ``1e-5``."""
    if 1e-3 <= value < 1e5:
        return f"{value:.4g}"
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def log_ticks(lo: float, hi: float, *, most: int = 8) -> dict:
    """Ticks for a log axis over [lo, hi] (both > 0), as ``update_xaxes`` keywords.

    Every label is the whole number (``20``, never a bare ``2`` standing for 20): steps of
    1-2-5 where at most ``most`` fit, else every decade, or every few decades on a long axis."""
    low, high = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    inside = [lo * (1 - 1e-9), hi * (1 + 1e-9)]
    for mantissas in ((1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 5), (1,)):
        values = [m * 10.0**e for e in range(low, high + 1) for m in mantissas]
        values = [v for v in values if inside[0] <= v <= inside[1]]
        if len(values) <= most:
            break
    else:
        step = math.ceil((high - low + 1) / most)
        values = [10.0**e for e in range(low, high + 1, step)]
    return {"tickvals": values, "ticktext": [_tick_text(v) for v in values]}
