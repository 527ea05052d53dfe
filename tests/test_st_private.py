"""The Streamlit internals NormLab relies on still exist and still do what ui.st_private needs.

If a Streamlit upgrade breaks this, the link checks would silently let a bound widget take a raw
link value over the corrected one; this test fails first, by name.
"""

from __future__ import annotations

from streamlit.runtime.state import get_session_state
from streamlit.runtime.state.query_params import QueryParams
from streamlit.testing.v1 import AppTest


def test_query_params_can_refresh_the_initial_snapshot():
    assert callable(get_session_state)
    assert callable(getattr(QueryParams, "set_initial_query_params_from_current", None))
    assert callable(getattr(QueryParams, "set_corrected_value", None))


def _page() -> None:
    import streamlit as st

    from ui.st_private import set_query_param

    if st.query_params.get("d") == "7.5":
        set_query_param("d", "8")
        st.session_state["d"] = 8
    st.number_input("d", min_value=2, max_value=10, value=4, key="d", bind="query-params")


def test_a_replaced_link_value_reaches_its_bound_widget_and_the_url():
    at = AppTest.from_function(_page)
    at.query_params["d"] = "7.5"
    at.run()
    assert not at.exception
    assert at.number_input(key="d").value == 8
    assert at.query_params["d"] == "8"
