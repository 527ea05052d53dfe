"""The Streamlit internals NormLab relies on still exist and still do what ui.st_private needs.

If a Streamlit upgrade breaks this, the link checks would silently let a bound widget take a raw
link value over the corrected one; this test fails first, by name.
"""

from __future__ import annotations

import types

from streamlit.runtime.state import get_session_state
from streamlit.runtime.state.query_params import QueryParams
from streamlit.testing.v1 import AppTest


def test_query_params_can_refresh_the_initial_snapshot():
    assert callable(get_session_state)
    assert callable(getattr(QueryParams, "set_initial_query_params_from_current", None))
    assert callable(getattr(QueryParams, "set_corrected_value", None))
    assert callable(getattr(QueryParams, "get_binding_for_param", None))
    assert callable(getattr(QueryParams, "unbind_widget", None))


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


def _two_views() -> None:
    import streamlit as st

    from ui.st_private import keep_in_link

    keep_in_link(["a", "b"])
    if st.segmented_control("view", ["one", "two"], default="one", key="view") == "one":
        st.number_input("a", value=0, key="a", bind="query-params")
    else:
        st.number_input("b", value=0, key="b", bind="query-params")


def test_a_widget_not_drawn_keeps_its_link_value_and_takes_it_back_when_drawn_again():
    """Without ``keep_in_link`` Streamlit drops ``a`` from the URL while view two shows."""
    at = AppTest.from_function(_two_views)
    at.query_params.update({"a": "3", "b": "5"})
    at.run()
    assert at.number_input(key="a").value == 3
    at.button_group(key="view").set_value("two").run()
    assert at.number_input(key="b").value == 5
    assert (at.query_params["a"], at.query_params["b"]) == ("3", "5")
    at.button_group(key="view").set_value("one").run()
    assert at.number_input(key="a").value == 3
    assert (at.query_params["a"], at.query_params["b"]) == ("3", "5")


def _explorer_specs() -> list[dict]:
    """The explorer's figure specs: coordinates at d = 3 (every point, negative gain) and
    d = 4096 (an envelope), the plane, and the sphere's 2-D surfaces."""
    from core.inputs import make_input
    from labs.explorer import explore
    from labs.explorer.figures import coordinates_spec, plane_spec, sphere_spec

    names = {k: k for k in ("input", "outputs", "x", "rms", "layer", "coordinate", "value",
                            "axis_a", "axis_b", "circle", "ray", "x_short", "sphere", "plane",
                            "circle3d", "ones")}  # fmt: skip
    specs = []
    for d, gain in ((3, -1.5), (4096, 1.0)):
        v = explore(make_input(d, offset=0.5), eps=1e-5, gain=gain)
        series = {k: (s.index, s.values) for k, s in v.chart.items()}
        specs.append(coordinates_spec(series, {k: s.mean for k, s in v.chart.items()}, names, d=d))
        specs.append(plane_spec(v.plane.point, v.plane.rms, v.plane.layer, v.plane.radius, names))
        if v.sphere is not None:
            s = v.sphere
            specs.append(sphere_spec(s.plane, s.circle, s.sphere, (s.point, s.rms, s.layer), names))
    return specs


def test_a_spec_reaches_plotly_chart_as_the_figure_built_from_it_would():
    """What Streamlit sends for ``plotly_spec(spec)`` is what it sends for the go.Figure built
    from the same dicts: the same data and layout, typed arrays, Plotly's default template."""
    import json

    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.basedatatypes import BaseFigure

    from ui.st_private import plotly_spec, written

    specs = _explorer_specs()
    assert len(specs) == 5
    for spec in specs:
        fig = go.Figure(data=spec["data"], layout=spec["layout"], _validate=False)
        want = json.loads(pio.to_json(fig.to_dict(), validate=False))
        adapted = plotly_spec(spec)
        assert isinstance(adapted, BaseFigure)  # Streamlit's check before to_dict()
        got = json.loads(pio.to_json(adapted.to_dict(), validate=False))
        assert got == want
        assert "template" in got["layout"] and "template" not in spec["layout"]
        assert adapted.to_dict()["layout"] is not spec["layout"]  # the spec is never changed
        # A spec written once for many runs (a class's figures) sends the same, without a copy.
        shared = written(spec)
        assert plotly_spec(shared).to_dict() is shared
        assert json.loads(pio.to_json(plotly_spec(shared).to_dict(), validate=False)) == want


def _two_charts() -> None:
    import json

    import plotly.graph_objects as go
    import streamlit as st

    from ui.st_private import plotly_spec

    spec = json.loads(st.query_params["spec"])
    fig = go.Figure(data=spec["data"], layout=spec["layout"], _validate=False)
    st.plotly_chart(fig, key="figure")
    st.plotly_chart(plotly_spec(spec), key="spec")


def test_plotly_chart_takes_a_spec():
    import json

    at = AppTest.from_function(_two_charts)
    at.query_params["spec"] = json.dumps(
        {"data": [{"type": "scatter", "x": [0, 1], "y": [2, 3]}], "layout": {"height": 300}}
    )
    at.run()
    assert not at.exception
    figure, spec = (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
    assert spec == figure and spec["data"][0]["y"] == [2, 3]


def _pending_page() -> None:
    import streamlit as st

    from ui.st_private import widget_value_pending

    before = widget_value_pending("size")
    st.select_slider("size", options=(1, 2, 3), key="size")
    st.text(f"pending before the widget: {before}; after: {widget_value_pending('size')}")


def test_a_widget_drawn_or_unknown_has_no_pending_value():
    # A value sent before its widget is drawn (a reconnect to another server process) is
    # tested end to end in tests/test_serve_browser.py; here the internals it reads exist.
    at = AppTest.from_function(_pending_page).run()
    assert at.text[0].value == "pending before the widget: False; after: False"
    at.select_slider(key="size").set_value(3).run()
    assert at.text[0].value == "pending before the widget: False; after: False"
    widgets = at.session_state._state._state._new_widget_state
    assert isinstance(widgets.states, dict) and isinstance(widgets.widget_metadata, dict)


class _Stopped:
    """A script runner whose run has ended (its requests stopped) and whose end the event loop
    has not handled yet."""

    def __init__(self) -> None:
        from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

        self._requests = type("Requests", (), {"_state": ScriptRequestType.STOP})()


class _Loop:
    def __init__(self) -> None:
        self.later: list[tuple] = []

    def call_later(self, delay, callback, *args) -> None:
        self.later.append((delay, callback, args))


def test_a_fragment_run_waits_for_the_last_run_to_be_handled(monkeypatch) -> None:
    """A timed fragment's rerun request that arrives after the session's last run ended, but
    before the event loop handled its end, is held (Streamlit would start a new runner and drop
    the old run's pending messages: the page would lose the end of what it drew), and goes on
    once that run is handled; other requests go on at once. The premise is checked too:
    Streamlit still ignores a runner's events once another runner is current."""
    import inspect

    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.runtime.app_session import AppSession

    from ui import st_private

    assert "sender is not self._scriptrunner" in inspect.getsource(
        AppSession._handle_scriptrunner_event_on_event_loop
    )
    passed: list[ClientState | None] = []
    monkeypatch.setattr(AppSession, "request_rerun", lambda self, state: passed.append(state))
    st_private.finish_runs_before_fragments()
    st_private.finish_runs_before_fragments()  # installed once
    request = AppSession.request_rerun
    assert request.holds_fragments
    session = type("Session", (), {})()
    session._event_loop, session._scriptrunner = _Loop(), _Stopped()
    timer, full = ClientState(fragment_id="watch", is_auto_rerun=True), ClientState()
    request(session, full)
    assert passed == [full]
    request(session, timer)
    assert passed == [full] and len(session._event_loop.later) == 1
    delay, again, args = session._event_loop.later.pop()
    again(*args)  # still not handled: held again
    assert passed == [full] and len(session._event_loop.later) == 1
    session._scriptrunner = None  # the loop handled the run's end
    _, again, args = session._event_loop.later.pop()
    again(*args)
    assert passed == [full, timer] and delay == st_private.HOLD_S


def test_the_emoji_table_is_compiled_when_the_app_starts() -> None:
    """Streamlit compiles its emoji pattern (23,000 characters) on the first alert with a
    non-ASCII body: in a class, the first reveal, on every page at once. Importing the adapter
    (``app.py`` does, first) compiles it instead; and ``st.error`` still goes through it."""
    import inspect
    import subprocess
    import sys

    from streamlit.string_util import extract_leading_emoji

    assert "streamlit.emojis" in inspect.getsource(extract_leading_emoji)
    probe = "import sys, ui.st_private; print('streamlit.emojis' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True"]


def test_sessions_are_rerun_at_rest_as_streamlit_reruns_on_save(monkeypatch) -> None:
    """A session at rest reruns with the client state its last run left (Streamlit's own
    rerun-on-save, which keeps every widget as it stands: the state carries no widget values and
    those given are merged), ``RINGING`` at a time; a session mid-run is asked once at rest; one
    no longer due (it reran on its own) is not asked; a closed one, or one now on another page
    than the run that asks, is reported. Without a server (AppTest) nothing happens."""
    import inspect

    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.runtime import Runtime
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
    from streamlit.runtime.state.session_state import SessionState

    from ui import st_private

    assert "self.request_rerun(self._client_state)" in inspect.getsource(AppSession)
    # A session's last client state names the page its last run ran.
    assert "state.page_script_hash = ctx.page_script_hash" in inspect.getsource(ScriptRunner)
    assert "for state in widget_states.widgets:" in inspect.getsource(
        SessionState.set_widgets_from_proto
    )
    st_private.rerun_at_rest(["x"], bool, print)  # no server in this process: nothing
    soon, later, gone = [], [], []
    loop = type("Loop", (), {})()
    loop.call_soon_threadsafe = lambda f, *args: soon.append((f, args))
    loop.call_later = lambda delay, f, *args: later.append((delay, f, args))

    def session(name: str):
        s, where = type("Session", (), {})(), "other" if name == "away" else "lesson"
        s._scriptrunner, s.asked = (object() if name == "busy" else None), []
        s._client_state = types.SimpleNamespace(page_script_hash=where)
        s.request_rerun = lambda state: (s.asked.append(state), setattr(s, "_scriptrunner", 1))
        return s

    names = ["rest1", "busy", "done", "away", "rest2", "rest3"]
    sessions = {name: session(name) for name in names}
    manager = type("Manager", (), {})()
    manager.get_active_session_info = lambda i: (
        type("Info", (), {"session": sessions[i]})() if i in sessions else None
    )
    runtime = type("Runtime", (), {"_session_mgr": manager})()
    runtime._get_async_objs = lambda: type("Objs", (), {"eventloop": loop})()
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: True))
    monkeypatch.setattr(Runtime, "instance", classmethod(lambda cls: runtime))
    monkeypatch.setattr(st_private, "RINGING", 2)
    ctx = types.SimpleNamespace(page_script_hash="lesson")
    monkeypatch.setattr(st_private, "get_script_run_ctx", lambda: ctx)
    st_private.rerun_at_rest([*names, "closed"], lambda i: i != "done", gone.append)
    assert later == [] and sessions["rest1"].asked == []  # nothing before the loop runs it

    def asked() -> list[str]:
        return [name for name in names if sessions[name].asked]

    f, args = soon.pop()
    f(*args)
    assert asked() == ["rest1", "rest2"] and gone == ["away"]  # two at once; the rest wait
    for name in ("rest1", "busy"):  # their runs ended
        sessions[name]._scriptrunner = None
    delay, f, args = later.pop()
    f(*args)
    assert delay == st_private.HOLD_S and asked() == ["rest1", "busy", "rest2"]
    sessions["rest2"]._scriptrunner = None
    delay, f, args = later.pop()
    f(*args)
    assert asked() == ["rest1", "busy", "rest2", "rest3"] and gone == ["away"]
    for name in ("busy", "rest3"):
        sessions[name]._scriptrunner = None
    delay, f, args = later.pop()
    f(*args)
    assert gone == ["away", "closed"] and later == []
    assert all(sessions[name].asked == [sessions[name]._client_state] for name in asked())
