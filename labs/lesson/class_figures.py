"""The class's answers to one step: a bar per option, in the lesson's order and letters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from labkit import style


def counts_figure(
    letters: Sequence[str],
    counts: Sequence[int],
    labels: Mapping[str, str],
    *,
    correct: int | None = None,
) -> go.Figure:
    """How many students chose each option. ``correct``: the index of the revealed answer,
    drawn in the accent colour (None before the reveal: every bar alike, no hint)."""
    colors = [
        style.ACCENT if index == correct else style.MUTED if correct is not None else style.LAYER
        for index in range(len(letters))
    ]
    top = max([*counts, 1])
    bars = go.Bar(
        x=list(letters),
        y=list(counts),
        marker_color=colors,
        text=[str(n) for n in counts],
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{x}: %{y}<extra></extra>",
    )
    return go.Figure(
        bars,
        layout=style.layout(
            height=260,
            showlegend=False,
            xaxis={"title": labels["option"]},
            # Whole students only, with room above the tallest bar for its number.
            yaxis={"title": labels["count"], "range": [0, top * 1.25], "dtick": max(1, top // 5)},
        ),
    )
