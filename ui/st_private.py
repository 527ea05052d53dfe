"""The one place that touches Streamlit's private API (Streamlit is pinned in requirements.txt).

A bound widget (``bind="query-params"``) seeds itself from a snapshot of the query string taken
at page load. When a link value has to be corrected (``d=7.5`` becomes 8 with a notice), deleting
it through ``st.query_params`` leaves the snapshot in place, and the widget would still take the
raw value Streamlit can read (7) over the corrected one in ``st.session_state``. Streamlit has no
public way to refresh that snapshot; the call below is the one it uses itself after a page
switch. ``tests/test_st_private.py`` fails loudly if an upgrade removes or changes it.
"""

from __future__ import annotations

from streamlit.runtime.state import get_session_state


def drop_query_param(key: str) -> None:
    """Remove ``key`` from the URL and from the snapshot bound widgets are seeded from."""
    with get_session_state().query_params() as qp:
        del qp[key]
        qp.set_initial_query_params_from_current()
