"""The one place that touches Streamlit's private API (Streamlit is pinned in requirements.txt).

A bound widget (``bind="query-params"``) seeds itself from a snapshot of the query string taken
at page load. When a link value has to be corrected (``d=7.5`` becomes 8 with a notice), the
corrected value has to replace the raw one in the URL, so that the address reproduces the view,
and in that snapshot, or the widget would still take the raw value Streamlit can read (7) over the
corrected one in ``st.session_state``. ``st.query_params`` refuses to set a bound parameter, and
Streamlit has no public way to refresh the snapshot; the calls below are the ones it uses itself,
for a value it clamped (``set_corrected_value``) and after a page switch.
``tests/test_st_private.py`` fails loudly if an upgrade removes or changes them.
"""

from __future__ import annotations

from streamlit.runtime.state import get_session_state
from streamlit.runtime.state.query_params import EMBED_QUERY_PARAMS_KEYS


def set_query_param(key: str, value: str) -> None:
    """Put ``value`` in the URL for ``key`` (bound to a widget or not) and in the snapshot bound
    widgets are seeded from."""
    with get_session_state().query_params() as qp:
        qp.set_corrected_value(key, value, "string_value")
        qp.set_initial_query_params_from_current()


def reserved_link_keys() -> tuple[str, ...]:
    """The link parameters Streamlit keeps for itself (``embed``, ``embed_options``): no page may
    name a parameter of its own after them."""
    return tuple(sorted(EMBED_QUERY_PARAMS_KEYS))
