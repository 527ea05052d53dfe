"""The fair kernels' figure: each variant's median time as a bar, grouped by how the norms compute.

A bar is a mapping with ``norm`` ("rms", "layer" or "dyt"), ``group`` (the label of its place on
the x axis: the kernel, or DyT's own) and ``value``. RMSNorm and LayerNorm keep the training
lab's colours and hatching, DyT too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from labkit import style
from labs.training.figures import COLORS, PATTERNS, sized_axis, sized_layout

# DyT stands alone in its group: it shares RMSNorm's slot, so the groups keep two slots each, and
# is drawn centred, as wide as one of them (a group of two slots spans 0.8 of a category).
ALONE = {"offsetgroup": "rms", "width": 0.4, "offset": -0.2}


def kernel_bars(
    bars: Sequence[Mapping], labels: Mapping[str, str], *, y_title: str, height: int = 360
) -> go.Figure:
    """One trace per norm, its bars at their groups, side by side within a group."""
    traces = []
    for norm in dict.fromkeys(bar["norm"] for bar in bars):
        mine = [bar for bar in bars if bar["norm"] == norm]
        traces.append(
            go.Bar(
                x=[bar["group"] for bar in mine],
                y=[bar["value"] for bar in mine],
                name=labels[norm],
                marker={"color": COLORS[norm], "pattern": {"shape": PATTERNS[norm]}},
                hovertemplate=f"{labels[norm]}, %{{x}}: %{{y:.4g}}<extra></extra>",
                **(ALONE if norm == "dyt" else {"offsetgroup": norm}),
            )
        )
    layout = sized_layout(height)
    layout["barmode"] = "group"
    # Two-word groups on two lines: three groups fit a phone without their labels running together.
    groups = list(dict.fromkeys(bar["group"] for bar in bars))
    layout["xaxis"] = {
        "tickfont": {"size": style.FONT_SIZE},
        "tickangle": 0,
        "tickvals": groups,
        "ticktext": [g.replace(" ", "<br>") for g in groups],
    }
    layout["yaxis"] = sized_axis(y_title, zeroline=True, rangemode="tozero")
    return go.Figure(data=traces, layout=layout)
