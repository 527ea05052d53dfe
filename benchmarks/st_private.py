"""The benchmarks' one adapter to Streamlit's private API (the app's own is ``ui/st_private.py``).

What the benchmarks need below Streamlit's public API, each in one place, so that a Streamlit
upgrade that moves it breaks here and nowhere else:

- ``shared_script_cache``: AppTest runs that share one script cache, as a server's sessions do
  (AppTest makes a fresh ``ScriptCache`` for every run, which would add each page's compilation
  to every timed interaction);
- ``protos``: the websocket protocol's message classes, for visitors that speak it directly;
- ``REPLAY_PAGE``: a script that sends a recorded page's messages again, as they were."""

from __future__ import annotations

import base64
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


# What a page sends that draws it: its elements and blocks, its page links, its page settings.
REPLAYED = ("delta", "navigation", "page_config_changed")

# A Streamlit script that sends again, in order, the messages a page sent on its first visit
# (``replay_<d>.txt`` beside it, one base64 ``ForwardMsg`` a line, ``?d=`` picking the file):
# the same elements, blocks and page links, with none of the page's Python work. Its first render
# is Streamlit's and the browser's own cost for exactly what the page shows.
REPLAY_PAGE = """import base64
from pathlib import Path

import streamlit as st
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

context = get_script_run_ctx()
recorded = Path(__file__).with_name(f"replay_{int(st.query_params.get('d', '16'))}.txt")
for line in recorded.read_text().splitlines():
    message = ForwardMsg.FromString(base64.b64decode(line))
    message.ClearField("hash")  # Streamlit hashes each message again as it sends it
    context.enqueue(message)
"""


def replayable(frames: list[bytes]) -> str:
    """The messages of a page's visit (raw websocket frames) that ``REPLAY_PAGE`` sends again, as
    its file's text."""
    ForwardMsg = protos().ForwardMsg
    kept = [f for f in frames if ForwardMsg.FromString(f).WhichOneof("type") in REPLAYED]
    return "".join(base64.b64encode(f).decode() + "\n" for f in kept)
