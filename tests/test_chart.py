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
