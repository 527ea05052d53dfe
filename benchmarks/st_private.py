"""The benchmarks' one adapter to Streamlit's private API (the app's own is ``ui/st_private.py``).

What the benchmarks need below Streamlit's public API, each in one place, so that a Streamlit
upgrade that moves it breaks here and nowhere else:

- ``shared_script_cache``: AppTest runs that share one script cache, as a server's sessions do
  (AppTest makes a fresh ``ScriptCache`` for every run, which would add each page's compilation
  to every timed interaction);
- ``protos``: the websocket protocol's message classes, for visitors that speak it directly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import SimpleNamespace


@contextlib.contextmanager
def shared_script_cache() -> Iterator[None]:
    """AppTest runs in this block share one script cache; AppTest's own is restored after it."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import app_test

    shared = ScriptCache()
    fresh = app_test.ScriptCache
    app_test.ScriptCache = lambda: shared
    try:
        yield
    finally:
        app_test.ScriptCache = fresh


def protos() -> SimpleNamespace:
    """``BackMsg``, ``ForwardMsg`` and ``WidgetState``: the messages of Streamlit's websocket."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    return SimpleNamespace(BackMsg=BackMsg, ForwardMsg=ForwardMsg, WidgetState=WidgetState)
