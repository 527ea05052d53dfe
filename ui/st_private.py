"""The one place that touches Streamlit's and Plotly's internals (pinned in requirements-base.txt).

A bound widget (``bind="query-params"``) seeds itself from a snapshot of the query string taken
at page load. A corrected link value (``d=7.5`` becomes 8 with a notice) has to replace the raw
one in the URL and in that snapshot, or the widget would take the raw value (7) over the
corrected one. ``st.query_params`` refuses to set a bound parameter and Streamlit has no public
way to refresh the snapshot; the calls below are the ones it uses itself.
``tests/test_st_private.py`` fails loudly if an upgrade removes or changes them."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable

import plotly.io as pio

# Streamlit's emoji table, a 23,000-character pattern compiled when an alert first has a
# non-ASCII body (in a class: the first answer revealed, every page at once): compiled here, first.
import streamlit.emojis  # noqa: F401
from _plotly_utils.utils import convert_to_base64
from plotly.basedatatypes import BaseFigure
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.runtime import Runtime
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from streamlit.runtime.state import get_session_state
from streamlit.runtime.state.query_params import EMBED_QUERY_PARAMS_KEYS


def set_query_param(key: str, value: str) -> None:
    """Put ``value`` in the URL for ``key`` (bound to a widget or not) and in the snapshot bound
    widgets are seeded from."""
    with get_session_state().query_params() as qp:
        qp.set_corrected_value(key, value, "string_value")
        qp.set_initial_query_params_from_current()


def keep_in_link(keys: Iterable[str]) -> None:
    """Keep ``keys`` in the URL through a run that does not draw their widgets.

    At the end of a run Streamlit drops from the URL every bound parameter whose widget the run did
    not draw (the settings of a page's other view), and a widget drawn again later seeds itself from
    the snapshot taken at page load. Released bindings leave the parameters alone (a widget drawn in
    this run binds itself again), and the refreshed snapshot seeds it from the URL as it stands."""
    with get_session_state().query_params() as qp:
        for key in keys:
            binding = qp.get_binding_for_param(key)
            if binding is not None:
                qp.unbind_widget(binding.widget_id)
        qp.set_initial_query_params_from_current()


def widget_value_pending(key: str) -> bool:
    """Whether the browser has sent a value for the widget keyed ``key`` that this session has
    not seen drawn: a session that began in the middle of a visit (the page reconnected to
    another server process) receives the widgets' values before any run has registered them,
    and ``st.session_state`` does not show them until the widget is drawn."""
    widgets = get_session_state()._state._new_widget_state
    suffix = f"-{key}"
    return any(
        wid.endswith(suffix) and wid not in widgets.widget_metadata for wid in widgets.states
    )


def reserved_link_keys() -> tuple[str, ...]:
    """The link parameters Streamlit keeps for itself (``embed``, ``embed_options``): no page may
    name a parameter of its own after them."""
    return tuple(sorted(EMBED_QUERY_PARAMS_KEYS))


def plotly_spec(spec: dict) -> BaseFigure:
    """A figure given as plain dicts (``{"data": [...], "layout": {...}}``), in the form
    ``st.plotly_chart`` takes, without building and validating a ``go.Figure`` (several times
    the cost of the rest of the call for the explorer's charts).

    Streamlit reads a figure only through its ``to_dict()``; the object returned here answers it
    with what ``go.Figure(data=..., layout=..., _validate=False)`` would and nothing else of a
    figure (``tests/test_st_private.py`` holds the two to the same JSON)."""
    return _Spec(spec)


class _Spec(BaseFigure):
    """``plotly_spec``'s object: a ``BaseFigure`` to Streamlit's type check, a spec inside."""

    def __init__(self, spec: dict) -> None:  # nothing of BaseFigure is built
        self.__dict__["_spec"] = spec

    def to_dict(self) -> dict:
        """The spec as ``BaseFigure.to_dict`` writes a figure; the template is shared, not
        copied (Streamlit only serialises what this returns); a ``written`` spec as it is."""
        return self._spec if isinstance(self._spec, _Written) else written(self._spec)


class _Written(dict):
    """A spec as ``_Spec.to_dict`` writes it, made once for every run that draws it alike."""


def written(spec: dict) -> dict:
    """``spec`` as ``_Spec.to_dict`` writes it (a copy: base64 arrays, the shared template)."""
    out = _Written(data=copy.deepcopy(spec["data"]), layout=copy.deepcopy(spec["layout"]))
    convert_to_base64(out)
    if out["layout"].get("template") is None and pio.templates.default is not None:
        out["layout"]["template"] = _template(pio.templates.default)
    return out


@functools.cache
def _template(name: str) -> dict:
    """Plotly's template ``name`` as a figure's ``to_dict`` writes it."""
    template = pio.templates[name].to_plotly_json()
    convert_to_base64(template)
    return template


HOLD_S, HOLD_TRIES = 0.005, 2000  # a held request looks again every HOLD_S, HOLD_TRIES times
RINGING = 2  # sessions rerun at once by ``rerun_at_rest``


def finish_runs_before_fragments() -> None:
    """Hold a fragment's rerun request (a timer's) while the session's last run has ended but
    the event loop has not handled its end yet: Streamlit would start a new runner at once and
    drop every message still pending from the old one (``AppSession`` ignores a runner no longer
    current), so on a busy server a page lost the end of what it had just drawn."""
    request = AppSession.request_rerun
    if getattr(request, "holds_fragments", False):
        return

    def request_rerun(self: AppSession, client_state, tries: int = 0) -> None:
        runner = self._scriptrunner
        ended = runner is not None and runner._requests._state is ScriptRequestType.STOP
        if client_state is not None and client_state.fragment_id and ended and tries < HOLD_TRIES:
            self._event_loop.call_later(HOLD_S, request_rerun, self, client_state, tries + 1)
        else:
            request(self, client_state)

    request_rerun.holds_fragments = True
    AppSession.request_rerun = request_rerun


def session_id() -> str:
    return get_script_run_ctx().session_id


def rerun_at_rest(
    session_ids: list[str], due: Callable[[str], bool], gone: Callable[[str], None]
) -> None:
    """Rerun each of these sessions of this server as Streamlit's rerun-on-save does: the link
    and widgets as its last run left them. On the event loop, where a browser's requests are
    handled, once the session is at rest (no run a rerun could cut short) and while ``due`` says
    it still needs one; ``gone`` is told of a session closed or now on another page than this
    run's. ``RINGING`` at a time: a hundred runs at once spend a third of the time switching."""
    if not session_ids or not Runtime.exists():  # none behind; or AppTest: no server
        return
    runtime, page = Runtime.instance(), get_script_run_ctx().page_script_hash
    loop = runtime._get_async_objs().eventloop

    def rerun(waiting: list[str], running: list[AppSession], tries: int) -> None:
        running, held = [s for s in running if s._scriptrunner is not None], []
        for index, session_id in enumerate(waiting):
            if len(running) >= RINGING:  # the rest wait, not looked up
                held += waiting[index:]
                break
            active = runtime._session_mgr.get_active_session_info(session_id)
            if active is None or active.session._client_state.page_script_hash != page:
                gone(session_id)
            elif not due(session_id):
                continue
            elif active.session._scriptrunner is None:
                active.session.request_rerun(active.session._client_state)
                running.append(active.session)
            else:
                held.append(session_id)
        if held and tries < HOLD_TRIES:
            loop.call_later(HOLD_S, rerun, held, running, tries + 1)

    loop.call_soon_threadsafe(rerun, session_ids, [], 0)
