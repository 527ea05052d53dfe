"""Colours and layout shared by every figure.

The palette is Okabe & Ito's (2008), chosen so that the three series stay distinguishable with
any common colour-vision deficiency; the series also differ in marker shape and dash.
"""

import math

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
    built figure costs several, on every rerun of every page.
    """
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


def chart_config(file_name: str) -> dict:
    """Plotly's toolbar: PNG download at twice the screen resolution, no vendor logo."""
    return {
        "displaylogo": False,
        "toImageButtonOptions": {"format": "png", "filename": file_name, "scale": 2},
    }


def _tick_text(value: float) -> str:
    """A tick label written as ``ui.fmt.num`` writes numbers: ``20``, ``0.05``, ``1e-5``."""
    if 1e-3 <= value < 1e5:
        return f"{value:.4g}"
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def log_ticks(lo: float, hi: float, *, most: int = 8) -> dict:
    """Ticks for a log axis over [lo, hi] (both > 0), as ``update_xaxes`` keywords.

    Every label is the whole number (``20``, never a bare ``2`` standing for 20): steps of
    1-2-5 where at most ``most`` fit, else every decade, or every few decades on a long axis.
    """
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
