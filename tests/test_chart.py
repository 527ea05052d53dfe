"""ui.chart: figures built once per what they are drawn from, and Data tables written only when
their expander is open. (Each chart's words and data: tests/test_chart_words.py.)"""

from __future__ import annotations

import gc
import weakref

from streamlit.testing.v1 import AppTest

from ui import chart
from ui.chart import DATA_KEY, figure_for


class Source:
    """Something a figure is drawn from, as a page's cached computation returns it."""


def _builder(built: list) -> object:
    def build() -> dict:
        built.append(1)
        return {"data": [{"type": "scatter", "x": [1.5], "y": [2.5]}], "layout": {}}

    return build


def test_a_figure_is_built_once_per_source_key_and_language() -> None:
    built: list = []
    build, source = _builder(built), Source()
    fig = figure_for(source, ("coords", 1.0), build, lang="en")
    assert figure_for(source, ("coords", 1.0), build, lang="en") is fig and len(built) == 1
    assert fig["layout"]["separators"] == ".,"  # its numbers in the page's language
    indonesian = figure_for(source, ("coords", 1.0), build, lang="id")
    assert indonesian is not fig and indonesian["layout"]["separators"] == ",."
    assert figure_for(source, ("coords", 1.375), build, lang="en") is not fig
    assert figure_for(Source(), ("coords", 1.0), build, lang="en") is not fig
    assert len(built) == 4


def test_a_new_object_never_gets_the_figure_of_a_gone_one_at_its_address() -> None:
    gone = Source()
    ref = weakref.ref(gone)
    del gone
    gc.collect()
    assert ref() is None
    source = Source()
    # What the cache would hold had the gone object lived at the new one's address.
    chart._figures[(id(source), ("coords", 1.0), "en")] = (ref, {"stale": True})
    fig = figure_for(source, ("coords", 1.0), _builder([]), lang="en")
    assert "stale" not in fig and fig["data"][0]["y"] == [2.5]


def test_the_cache_keeps_the_most_recent_figures_only() -> None:
    sources = [Source() for _ in range(chart.FIGURES_KEPT + 5)]
    for source in sources:
        figure_for(source, "kept", _builder([]), lang="en")
    assert len(chart._figures) <= chart.FIGURES_KEPT


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
