"""labkit.style.readable: every text of a figure at least 14 px, enlarged alike with text=large, and
nothing else about the figure changed."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from labkit import style
from labkit.style import FONT_SIZE, LARGE_TEXT_SCALE, MIN_FONT_SIZE, readable


def two_panels() -> go.Figure:
    fig = make_subplots(rows=1, cols=2, subplot_titles=("left", "right"))
    fig.add_trace(go.Scatter(x=np.arange(5), y=np.arange(5.0) ** 2, name="a"), row=1, col=1)
    fig.add_trace(go.Bar(x=["p", "q"], y=[1, 2], text=["1", "2"], name="b"), row=1, col=2)
    fig.update_layout(style.layout(title="Title"))
    fig.update_yaxes(tickfont={"size": 12}, row=1, col=1)  # smaller than allowed
    fig.update_xaxes(title={"text": "big", "font": {"size": 24}}, row=1, col=2)
    fig.update_annotations(font_color=style.RMS)
    return fig


@pytest.mark.parametrize("large", [False, True])
def test_every_text_reaches_the_size_of_the_view(large: bool) -> None:
    scale = LARGE_TEXT_SCALE if large else 1.0
    fig = readable(two_panels(), large=large)
    layout = fig.layout
    # Left to Streamlit's theme (12.75 px): the base size, scaled.
    for font in (layout.legend.font, layout.xaxis.tickfont, layout.xaxis2.tickfont):
        assert font.size == pytest.approx(FONT_SIZE * scale)
    assert layout.yaxis.tickfont.size == pytest.approx(MIN_FONT_SIZE * scale)  # raised
    assert layout.xaxis2.title.font.size == pytest.approx(24 * scale)  # kept, scaled
    assert layout.title.font.size == pytest.approx((FONT_SIZE + 3) * scale)
    assert [a.font.size for a in layout.annotations] == [pytest.approx(FONT_SIZE * scale)] * 2
    assert fig.data[1].textfont.size == pytest.approx(FONT_SIZE * scale)
    # Ticks and titles in the dark figure colour; subplot titles keep their own colour.
    assert layout.xaxis.tickfont.color == style.TEXT
    assert {a.font.color for a in layout.annotations} == {style.RMS}


def test_nothing_but_the_fonts_changes() -> None:
    before = two_panels()
    after = readable(before, large=True)
    assert before.layout.legend.font.size is None  # the figure passed in is left as it was
    assert np.array_equal(after.data[0].y, before.data[0].y)
    assert [t.name for t in after.data] == ["a", "b"]
    assert after.layout.height == before.layout.height
    assert after.layout.legend.orientation == "h"
    assert after.layout.xaxis2.title.text == "big"
    assert [a.text for a in after.layout.annotations] == ["left", "right"]


def test_a_3d_scene_gets_readable_axes_and_no_2d_axes() -> None:
    fig = go.Figure(
        go.Scatter3d(x=[0, 1], y=[0, 1], z=[0, 1], text=["k1", "k2"], mode="markers+text"),
        layout=style.layout(scene={"xaxis": {"title": {"text": "x₁"}}}),
    )
    fig = readable(fig, large=True)
    scene = fig.layout.scene
    for axis in (scene.xaxis, scene.yaxis, scene.zaxis):
        assert axis.tickfont.size == pytest.approx(FONT_SIZE * LARGE_TEXT_SCALE)
    assert scene.xaxis.title.text == "x₁"
    assert fig.data[0].textfont.size == pytest.approx(FONT_SIZE * LARGE_TEXT_SCALE)
    assert "xaxis" not in fig.layout.to_plotly_json()


def test_colour_bars_are_readable() -> None:
    fig = readable(go.Figure(go.Heatmap(z=[[0, 1], [1, 0]])))
    assert fig.data[0].colorbar.tickfont.size == FONT_SIZE


@pytest.mark.parametrize("large", [False, True])
def test_a_legend_name_too_long_for_a_phone_breaks_at_spaces(large: bool) -> None:
    """Lesson step 6's Indonesian legend ran off a 390 px phone: a name longer than a phone's
    legend row is drawn over lines (``<br>`` at spaces), in the same words; short names and
    hidden entries stay as they are."""
    long = "LayerNorm: kosinus dengan keluarannya pada c = 0"
    fig = go.Figure(
        [
            go.Scatter(y=[1, 2], name=long),
            go.Scatter(y=[2, 1], name="RMSNorm(x)"),
            go.Scatter(y=[0, 1], name=long, showlegend=False),
        ]
    )
    out = readable(fig, large=large)
    lines = out.data[0].name.split("<br>")
    size = out.layout.legend.font.size
    assert len(lines) >= 2 and " ".join(lines) == long
    assert all(len(line) * 0.5 * size <= style.PHONE_LEGEND_PX for line in lines)
    assert out.data[1].name == "RMSNorm(x)" and out.data[2].name == long
