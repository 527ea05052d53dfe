"""The websocket visitor of ``benchmarks.load``: a Streamlit session over the server's websocket.

``WsVisitor`` speaks Streamlit's protocol on ``/_stcore/stream`` as the browser's frontend does,
with the cookies a browser keeps: it fetches the page first, waits while a proxy answers with its
busy page, and sends the cookies it was given with every request. When its connection drops (its
worker died), it reconnects as the frontend does, sends only the link of the view it had, and
checks that the same view comes back. The pieces of the protocol it uses (the address, the
subprotocol, widget ids, what a run shows, the cookie jar, the page fetch, the websocket) serve
``benchmarks.classroom`` too."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlencode, urlsplit

import numpy as np

from benchmarks.st_private import protos
from benchmarks.visitors import NoEffect, Visitor, WorkerLost
from serve.config import BUSY_MARKER, RETRY_S

# The explorer's offset slider: its stops, one step apart; each move is one step, so every run
# misses the cache. A select slider: the browser sends the name of the stop it holds.
OFFSET_STEP = 0.1
# A reconnecting visitor tries again this often, as Streamlit's frontend does at first.
RECONNECT_S = 0.2

# Streamlit's websocket route and the subprotocol its frontend asks for. The server reads an XSRF
# token there only to trust a login cookie, and lets in a client that sends no Origin header, so
# this client sends neither and gets the session a browser gets.
STREAM_PATH = "/_stcore/stream"
SUBPROTOCOL = "streamlit"
# Every widget's id is "$$ID-<hash>-<key>" for a widget given a key, as all the explorer's are.
WIDGET_ID_PREFIX = "$$ID-"
# The explorer's coordinates chart, and the widgets the interactions move.
CHART_KEY, OFFSET_KEY, WIDTH_KEY = "coords", "offset", "d"
# The landing page's url path is empty; the cycle calls it by its name.
HOME = "explorer"


def chart_state(spec: str) -> tuple[int, float] | None:
    """Length and first value of the RMSNorm trace in a Plotly figure's JSON, as the browser
    client reads them from the drawn chart."""
    for trace in json.loads(spec).get("data", []):
        if trace.get("name") == "RMSNorm(x)":
            y = trace["y"]
            # Plotly sends numpy arrays as typed binary: {"dtype": "f8", "bdata": base64}.
            if isinstance(y, dict):
                values = np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"])
            else:
                values = np.asarray(y, dtype=np.float64)
            return (int(values.size), float(values[0])) if values.size else None
    return None


@dataclass
class Run:
    """What the server sent for one script run: the page, widget ids by key, the chart, the
    alerts' and the markdown's texts and each radio's options (by key)."""

    page: str = ""
    ids: dict[str, str] = field(default_factory=dict)
    chart: tuple[int, float] | None = None
    exceptions: list[str] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)
    markdown: list[str] = field(default_factory=list)
    options: dict[str, list[str]] = field(default_factory=dict)

    def take(self, element) -> None:
        """Note what matters in one ``Element`` proto of a ``new_element`` delta."""
        kind = element.WhichOneof("type")
        if kind == "exception":
            self.exceptions.append(element.exception.message)
            return
        if kind == "alert":
            self.alerts.append(element.alert.body)
            return
        if kind == "markdown":
            self.markdown.append(element.markdown.body)
            return
        widget_id = getattr(getattr(element, kind), "id", "")
        if not (isinstance(widget_id, str) and widget_id.startswith(WIDGET_ID_PREFIX)):
            return
        key = widget_id.split("-", 2)[2]
        self.ids[key] = widget_id
        if kind == "plotly_chart" and key == CHART_KEY:
            self.chart = chart_state(element.plotly_chart.spec)
        elif kind == "radio":
            self.options[key] = list(element.radio.options)


@dataclass(frozen=True)
class View:
    """What a visitor last saw in full: its link's parameters, the page, the chart."""

    params: dict
    page: str
    chart: tuple[int, float] | None


class Cookies:
    """The cookies a browser would keep for the one host: the proxy's and the app's."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def update(self, headers) -> None:
        """Take every ``Set-Cookie`` of a response (``http.client`` or ``websockets`` headers)."""
        for line in headers.get_all("Set-Cookie") or []:
            jar = SimpleCookie()
            jar.load(line)
            self.values.update({name: morsel.value for name, morsel in jar.items()})

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def header(self) -> dict[str, str]:
        """The ``Cookie`` request header, or nothing before the first cookie."""
        if not self.values:
            return {}
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.values.items())}


def fetch_page(url: str, headers: dict[str, str], timeout: float) -> tuple[int, object, str]:
    """GET ``url`` as a browser's address bar does: status, response headers, body."""
    request = urllib.request.Request(url, headers={"Accept": "text/html", **headers})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.status, resp.headers, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read().decode(errors="replace")


def ws_url(base_url: str) -> str:
    """The websocket address of the app at ``base_url`` (http -> ws, https -> wss)."""
    parts = urlsplit(base_url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}{STREAM_PATH}"


async def open_stream(base_url: str, cookies: Cookies, timeout_s: float, source: str | None = None):
    """A websocket to the app at ``base_url`` with ``cookies``, which keep the ones its answer
    sets (the proxy's), from the loopback address ``source`` if given."""
    from websockets.asyncio.client import connect

    conn = await connect(
        ws_url(base_url),
        subprotocols=[SUBPROTOCOL],
        additional_headers=cookies.header(),
        # A run's charts may pass the client's 1 MiB default; the server bounds its messages.
        max_size=None,
        open_timeout=timeout_s,
        # At the deadline a busy server may not answer the closing handshake soon.
        close_timeout=1.0,
        proxy=None,
        **({"local_addr": (source, 0)} if source else {}),
    )
    cookies.update(conn.response.headers)
    return conn


async def receive_run(conn, note: Callable[[str, object], None] | None = None) -> Run:
    """Read ``ForwardMsg`` from ``conn`` until a run (of the page, or of a fragment) finishes:
    what that run showed. A run stopped early for a rerun is followed by a new one, and only the
    last counts; ``note`` is told of every other message (its type, the message), and of a run
    that finished early (``"finished_early"``, the ``Run``: a browser keeps what it drew)."""
    ForwardMsg = protos().ForwardMsg  # noqa: N806

    run = Run()
    while True:
        msg = ForwardMsg()
        msg.ParseFromString(await conn.recv())
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            run = Run(page=msg.new_session.page_script_hash)
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            run.take(msg.delta.new_element)
        elif kind == "script_finished":
            status = msg.script_finished
            if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                if note is not None:
                    note("finished_early", run)
                continue
            done = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
            if status not in done:
                name = ForwardMsg.ScriptFinishedStatus.Name(status)
                raise NoEffect(f"the script finished with {name}")
            return run
        elif note is not None:
            note(kind, msg)


class WsVisitor(Visitor):
    """A visitor as a Streamlit session over the websocket, speaking the frontend's protocol.

    Like the browser, it sends a ``rerun_script`` ``BackMsg`` carrying a ``ClientState``: the page
    (``page_script_hash``), the link's query string and the values of the widgets it moved
    (``widget_states``), and it reads ``ForwardMsg`` until ``script_finished``. Widget ids come
    from the ``new_element`` deltas of the run before, found by the key at their end."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """``Visitor``'s arguments; no cookies, connection or page seen yet."""
        super().__init__(*args, **kwargs)
        self.cookies = Cookies()
        self.conn = None
        self.pages: dict[str, str] = {}  # url path (HOME for the landing page) -> script hash
        self.shown = Run()
        self.params: dict[str, object] = {}
        self.view = View({}, "", None)

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None

    async def run(self, interactions: int) -> None:
        """The interactions, then leave: closing the tab frees the seat for the next visitor."""
        try:
            await super().run(interactions)
        finally:
            await self.close()

    async def arrive(self) -> None:
        """Fetch the page until the answer is the app's, waiting out the proxy's busy pages."""
        deadline = time.monotonic() + self.load_timeout_s
        url = f"{self.base_url}/?{urlencode(self.params)}"
        first_busy = None
        while True:
            start = time.monotonic()
            status, headers, body = await asyncio.to_thread(
                fetch_page, url, self.cookies.header(), self.load_timeout_s
            )
            self.cookies.update(headers)
            if status == 200:
                break
            if status != 503 or BUSY_MARKER not in body:
                raise NoEffect(f"the page answered {status}")
            # The busy page: note how fast it came, then retry when it says, as it does itself.
            self.busy_answers.append(time.monotonic() - start)
            first_busy = first_busy or start
            wait = float(headers.get("Retry-After") or RETRY_S)
            if time.monotonic() + wait > deadline:
                raise NoEffect(f"no seat within {self.load_timeout_s:.0f} s (busy throughout)")
            await asyncio.sleep(wait)
        if first_busy is not None:
            self.busy_wait_s = time.monotonic() - first_busy

    async def connect(self, timeout_s: float) -> None:
        """A new websocket, with the cookies kept so far; keeps the ones its answer sets."""
        await self.close()
        self.conn = await open_stream(self.base_url, self.cookies, timeout_s)

    async def open(self) -> None:
        """The first load: every visitor arrives at once, so it gets ``load_timeout``. A load
        whose worker dies under it starts again, as the browser's reconnect does."""
        # The link a visitor opens: the same width for all, a seed each.
        self.params = {"lang": "en", "d": 64, "seed": self.number, OFFSET_KEY: 0.0}
        deadline = time.monotonic() + self.load_timeout_s
        lost = False
        while True:
            await self.arrive()
            try:
                await self.connect(self.load_timeout_s)
                await self.rerun(timeout_s=max(1.0, deadline - time.monotonic()))
                break
            except WorkerLost:
                if time.monotonic() > deadline:
                    raise
                lost = True
        if self.shown.chart is None:
            raise self.no_chart()
        self.remember()
        if lost:
            self.restored_at.append(time.monotonic())

    def remember(self) -> None:
        """The view as it stands after a finished run: what a reconnect must bring back."""
        self.view = View(dict(self.params), self.shown.page, self.shown.chart)

    def no_chart(self) -> NoEffect:
        """The error for a run of the explorer without its chart, with the run's exception."""
        shown = "; ".join(self.shown.exceptions)
        return NoEffect("the explorer drew no chart" + (f" ({shown[:120]})" if shown else ""))

    async def rerun(
        self, *, page: str = "", widgets: Sequence = (), timeout_s: float | None = None
    ) -> float:
        """Ask for a run and wait for its end; the seconds from sending to ``script_finished``."""
        from websockets.exceptions import ConnectionClosed

        msg = protos().BackMsg()
        state = msg.rerun_script
        state.query_string = urlencode(self.params)
        state.page_script_hash = page
        state.widget_states.widgets.extend(widgets)
        state.context_info.locale = "en-US"
        state.context_info.timezone = "UTC"
        start = time.perf_counter()
        try:
            await self.conn.send(msg.SerializeToString())
            self.shown = await asyncio.wait_for(
                receive_run(self.conn, self.note),
                timeout_s if timeout_s is not None else self.step_timeout_s,
            )
        except ConnectionClosed as exc:
            raise WorkerLost(str(exc)) from exc
        return time.perf_counter() - start

    def note(self, kind: str, msg) -> None:
        """What the server says besides a run: the app's pages, and a source changed on disk."""
        if kind == "navigation":
            self.pages = {
                (p.url_pathname or HOME): p.page_script_hash for p in msg.navigation.app_pages
            }
        elif kind == "session_event" and msg.session_event.script_changed_on_disk:
            self.source_changed = True

    async def think(self) -> bool:
        """Read the page; a browser notices a closed websocket at once, and so does this one."""
        from websockets.protocol import State

        pause = self.pause()
        if pause <= 0:
            return self.conn.state is State.CLOSED
        try:
            await asyncio.wait_for(self.conn.wait_closed(), pause)
        except TimeoutError:
            return False
        return True

    async def recover(self) -> None:
        """Reconnect, send the link of the last full view (no widget values), and check that
        the same page and chart come back; ``restored_at`` notes when they did."""
        deadline = time.monotonic() + self.step_timeout_s
        self.params = dict(self.view.params)
        while True:
            try:
                await self.connect(self.step_timeout_s)
                await self.rerun(page=self.view.page)
                break
            # Refused, reset, the proxy's 503 while no worker is up, a run cut short: again.
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise NoEffect(
                        f"no reconnect within {self.step_timeout_s:.0f} s: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                await asyncio.sleep(RECONNECT_S)
        if (self.shown.page, self.shown.chart) != (self.view.page, self.view.chart):
            raise NoEffect(
                f"the view came back different: page {self.shown.page[:8]} chart "
                f"{self.shown.chart}, was page {self.view.page[:8]} chart {self.view.chart}"
            )
        self.restored_at.append(time.monotonic())

    def explorer_widgets(self) -> list:
        """The moved widgets' values, as the browser sends every widget value it holds."""
        WidgetState = protos().WidgetState  # noqa: N806

        ids = self.shown.ids
        return [
            WidgetState(id=ids[OFFSET_KEY], string_array_value={"data": [self.offset_stop()]}),
            WidgetState(id=ids[WIDTH_KEY], double_value=float(self.params[WIDTH_KEY])),
        ]

    def offset_stop(self) -> str:
        """The offset's stop as the browser's select slider sends it: its name on the page, in
        the visitor's language (English: ``-0.3``)."""
        return f"{self.params[OFFSET_KEY]:.1f}"

    async def slider(self) -> None:
        before = self.shown.chart
        # One step right; the link follows a bound widget, as the address bar does.
        self.params[OFFSET_KEY] = round(self.params[OFFSET_KEY] + OFFSET_STEP, 1)
        sent_id = self.shown.ids[OFFSET_KEY]
        self.latencies.append(await self.rerun(widgets=self.explorer_widgets()))
        if self.shown.chart is None:
            raise self.no_chart()
        if self.shown.chart == before:
            # A new id means the server did not know the one sent, so it kept the old value.
            renamed = self.shown.ids.get(OFFSET_KEY) != sent_id
            raise NoEffect(
                f"the chart did not change for offset = {self.params[OFFSET_KEY]}"
                + (" (the slider's widget id changed)" if renamed else "")
            )
        self.remember()

    async def width_change(self) -> None:
        d = self.next_width(self.params[WIDTH_KEY])
        self.params[WIDTH_KEY] = d
        self.latencies.append(await self.rerun(widgets=self.explorer_widgets()))
        if self.shown.chart is None:
            raise self.no_chart()
        if self.shown.chart[0] != d:
            raise NoEffect(f"the chart does not have d = {d}")
        self.remember()

    async def switch(self, topic: str) -> None:
        # A click on a navigation link: the page's hash, and the new page's widgets from the link.
        target = self.pages[topic]
        self.latencies.append(await self.rerun(page=target))
        if self.shown.page != target:
            raise NoEffect(f"the server ran another page than {topic}")
        if topic == HOME and self.shown.chart is None:
            raise self.no_chart()
        self.remember()

    async def shows_exception(self) -> bool:
        return bool(self.shown.exceptions)
