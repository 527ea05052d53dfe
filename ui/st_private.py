"""The one place that touches Streamlit's private API (Streamlit is pinned in requirements.txt).

A bound widget (``bind="query-params"``) seeds itself from a snapshot of the query string taken
at page load. When a link value has to be corrected (``d=7.5`` becomes 8 with a notice), deleting
it through ``st.query_params`` leaves the snapshot in place, and the widget would still take the
raw value Streamlit can read (7) over the corrected one in ``st.session_state``. Streamlit has no
public way to refresh that snapshot; the call below is the one it uses itself after a page
switch. ``tests/test_st_private.py`` fails loudly if an upgrade removes or changes it.

A corrected value goes back into the URL the same way Streamlit writes a value it clamped itself
(``set_corrected_value``): bound or not, so the address reproduces the view.
"""

from __future__ import annotations

from streamlit.runtime.state import get_session_state


def drop_query_param(key: str) -> None:
    """Remove ``key`` from the URL and from the snapshot bound widgets are seeded from."""
    with get_session_state().query_params() as qp:
        del qp[key]
        qp.set_initial_query_params_from_current()


def set_query_param(key: str, value: str) -> None:
    """Put ``value`` in the URL for ``key`` (bound to a widget or not) and in the snapshot bound
    widgets are seeded from."""
    with get_session_state().query_params() as qp:
        qp.set_corrected_value(key, value, "string_value")
        qp.set_initial_query_params_from_current()
