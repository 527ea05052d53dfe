"""ui.chart: figures with their numbers in the page's language, and Data tables written only when
their expander is open. (Each chart's words and data: tests/test_chart_words.py.)"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from ui.chart import DATA_KEY, localised


def test_a_figure_gets_its_numbers_in_the_page_language() -> None:
    def build() -> dict:
        return {"data": [{"type": "scatter", "x": [1.5], "y": [2.5]}], "layout": {}}

    fig = localised(build(), "en")
    assert fig["layout"]["separators"] == ".," and fig["data"][0]["y"] == [2.5]
    assert localised(build(), "id")["layout"]["separators"] == ",."
    kept = {"data": [], "layout": {"separators": ", "}}
    assert localised(kept, "id")["layout"]["separators"] == ", "  # a figure's own marks stay


def _page() -> None:
    import streamlit as st

    from ui.chart import chart

    def table() -> dict:
        st.session_state["tables"] = st.session_state.get("tables", 0) + 1
        return {"i": [0, 1], "y": [0.5, 1.5]}

    spec = {"data": [{"type": "scatter", "x": [0, 1], "y": [0.5, 1.5]}], "layout": {}}
    chart(spec, key="c", title="T", words="W.", table=table, headers={"y": "y"}, lang="en")


def test_a_table_given_as_a_callable_is_written_only_when_its_expander_is_open() -> None:
    at = AppTest.from_function(_page)
    at.run()
    assert not at.exception and len(at.get("plotly_chart")) == 1
    assert "tables" not in at.session_state  # the table was not written
    assert not at.dataframe
    at.session_state[DATA_KEY + "c"] = True
    at.run()
    assert not at.exception
    assert at.session_state["tables"] == 1
    assert list(at.dataframe[0].value.columns) == ["i", "y"]


def test_a_norm_flat_up_to_rounding_is_named_flat_and_its_values_read_as_rounding() -> None:
    import numpy as np

    from labkit.chart_words import lines_words, pair_words
    from ui.i18n import translator

    where = [0, 1, 2]
    rms, layer = np.array([0.5, 1.0, 0.25]), np.array([0.0, 2e-16, 1e-16])
    assert pair_words("invariance.before_after_words", where, rms, layer)["words"].key == (
        "invariance.before_after_words"
    )  # no rounding level: every value is a value
    words = pair_words("invariance.before_after_words", where, rms, layer, noise=1e-12)["words"]
    assert words.key == "invariance.before_after_words_layer_flat"
    assert "≈ 0 at every coordinate" in translator("en").claim(words)
    both = pair_words("invariance.sweep_words", where, 1 + layer, 1 - layer, noise=1e-12)
    assert both["words"].key == "invariance.sweep_words_flat"
    apart = pair_words("invariance.sweep_words", where, rms, rms + 1e-13, noise=1e-12)
    assert apart["words"].key == "invariance.sweep_words_equal"
    curves = {"inside": rms, "outside": rms + 1, "clamp": 1 + layer}
    lines = lines_words("lesson.eps_words", ("curve",), where, curves, noise=1e-12)
    assert lines["words"].key == "lesson.eps_words_clamp_flat"
