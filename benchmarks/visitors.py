"""The visitors of ``benchmarks.load``: one person each, working through the same interactions.

Every visitor opens the explorer from its own link and repeats ``CYCLE``: the offset slider one
step to the right, a new width ``d``, a switch to the guided lesson and back. Before each
interaction it reads the page for ``think_s`` seconds, scaled by a seeded random factor in
[0.5, 1.5] so the class does not click in lockstep. Two kinds:

``WsVisitor``
    A Streamlit session over the server's websocket (``/_stcore/stream``), as the browser's
    frontend speaks it, with the cookies a browser keeps: it fetches the page first, waits while
    a proxy answers with its busy page, and sends the cookies it was given with every request.
    When its connection drops (its worker died), it reconnects as the frontend does, sends only
    the link of the view it had, and checks that the same view comes back.
``BrowserVisitor``
    Headless Chromium, one context per visitor, pressing keys and clicking links as a person.

An interaction's latency runs from the message sent (or the key press or click) until the run
has finished with the result in place; think time is not part of it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlencode, urlsplit

import numpy as np

from benchmarks.live import READY
from benchmarks.st_private import protos
from serve.config import BUSY_MARKER, RETRY_S
from ui.i18n import t

EXCEPTION = "[data-testid='stException']"
# The slider's step on the explorer; each move is one step, so every run misses the cache.
OFFSET_STEP = 0.1
# The first Plotly chart's RMSNorm trace: its length and first value tell a redrawn chart apart.
CHART_STATE = """() => {
  const plot = document.querySelector('.js-plotly-plot');
  if (!plot || !plot._fullData) return null;
  const trace = plot._fullData.find(t => t.name === 'RMSNorm(x)');
  return trace ? [trace.y.length, trace.y[0]] : null;
}"""
# Widths typed into the ``d`` box in turn: small enough that a redraw is quick, different so
# every change misses the cache of the visitor before.
WIDTHS = (48, 64, 96, 32)
# A key press the slider did not take (still being drawn) is repeated after this long, this often.
PRESS_WAIT_S = 2.0
PRESS_TRIES = 3
# One lap of what a visitor does; repeated until the interaction count is reached.
CYCLE = ("slider", "slider", "slider", "width", "slider", "lesson", "explorer", "slider")
# Reading the chart before the next move: a few seconds for a student, one by default so the
# run stays short; each pause is scaled by a factor drawn in [1 - JITTER, 1 + JITTER].
DEFAULT_THINK_S = 1.0
THINK_JITTER = 0.5
# With the visitor's number, seeds its pauses: the same class behaves the same in every run.
THINK_SEED = 20
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


class NoEffect(Exception):
    """A run that finished without the result the interaction asked for."""


class WorkerLost(Exception):
    """The visitor's connection closed under it: the worker that held its session is gone."""


class Visitor(ABC):
    """One person in the class: the cycle of interactions, their latencies and their errors.

    Besides ``latencies`` and ``errors`` it keeps, for the report: ``failed`` (interactions in
    flight when its worker died), ``restored_at`` (when each lost view came back, monotonic
    seconds), ``busy_answers`` (seconds each busy page took to arrive) and ``busy_wait_s``
    (from the first busy page to a seat).
    """

    def __init__(
        self,
        number: int,
        base_url: str,
        step_timeout_s: float,
        load_timeout_s: float,
        think_s: float = DEFAULT_THINK_S,
    ) -> None:
        self.number = number
        self.base_url = base_url.rstrip("/")
        self.step_timeout_s, self.load_timeout_s = step_timeout_s, load_timeout_s
        self.think_s = think_s
        # How far through WIDTHS its width changes have gone (``next_width``).
        self.width = 0
        self.rng = np.random.default_rng((THINK_SEED, number))
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.restored_at: list[float] = []
        self.busy_answers: list[float] = []
        self.busy_wait_s = 0.0
        self.source_changed = False
        # Set once the first load is over, whether it worked or not.
        self.loaded = asyncio.Event()

    def error(self, what: str) -> None:
        self.errors.append(f"visitor {self.number}: {what}")

    @abstractmethod
    async def open(self) -> None:
        """The explorer from the visitor's link, run to the end; not counted as an interaction."""

    async def act(self, kind: str) -> None:
        """One interaction of ``CYCLE``; appends its latency, raises if it did not take effect."""
        if kind == "slider":
            await self.slider()
        elif kind == "width":
            await self.width_change()
        else:
            await self.switch(kind)

    @abstractmethod
    async def slider(self) -> None:
        """Move the explorer's offset slider one step."""

    @abstractmethod
    async def width_change(self) -> None:
        """Type a new width d."""

    @abstractmethod
    async def switch(self, topic: str) -> None:
        """Go to the page ``topic`` (or back to the explorer)."""

    @abstractmethod
    async def shows_exception(self) -> bool:
        """Whether the page now shows an exception."""

    async def think(self) -> bool:
        """Read the page before the next interaction; whether the connection dropped meanwhile."""
        await asyncio.sleep(self.pause())
        return False

    def next_width(self, shown: int) -> int:
        """The next width in turn that differs from the one ``shown``, so the chart must change."""
        self.width += 1
        while WIDTHS[self.width % len(WIDTHS)] == shown:
            self.width += 1
        return WIDTHS[self.width % len(WIDTHS)]

    def pause(self) -> float:
        if self.think_s <= 0:
            return 0.0
        return self.think_s * self.rng.uniform(1 - THINK_JITTER, 1 + THINK_JITTER)

    async def recover(self) -> None:
        """Reconnect after ``WorkerLost`` and check that the same view came back."""
        raise NoEffect(f"{type(self).__name__} does not reconnect by itself")

    async def run(self, interactions: int) -> None:
        try:
            await self.open()
        except Exception as exc:  # any failure to load is this visitor's error
            self.error(f"first load failed: {type(exc).__name__}: {str(exc)[:120]}")
            return
        finally:
            self.loaded.set()
        for i in range(interactions):
            kind = CYCLE[i % len(CYCLE)]
            try:
                if await self.think():
                    await self.recover()  # moved while reading: nothing was in flight
            except Exception as exc:  # left with a broken page: this visitor stops
                self.error(f"view not restored before {kind} #{i + 1}: {str(exc)[:120]}")
                return
            try:
                await self.act(kind)
            except WorkerLost:
                self.failed.append(f"visitor {self.number}: {kind} #{i + 1}")
                try:
                    await self.recover()
                except Exception as exc:  # left with a broken page: this visitor stops
                    self.error(f"view not restored after {kind} #{i + 1}: {str(exc)[:120]}")
                    return
                continue
            except Exception as exc:  # a timeout or an interaction without effect
                self.error(f"{kind} #{i + 1} failed: {type(exc).__name__}: {str(exc)[:120]}")
                # Back to a known state, so one failure does not cascade into the rest.
                try:
                    await self.open()
                except Exception:  # the page is gone: this visitor stops
                    return
                continue
            if await self.shows_exception():
                self.error(f"{kind} #{i + 1}: the page shows an exception")


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
    """What the server sent for one script run: the page, widget ids by key, the chart."""

    page: str = ""
    ids: dict[str, str] = field(default_factory=dict)
    chart: tuple[int, float] | None = None
    exceptions: list[str] = field(default_factory=list)

    def take(self, element) -> None:
        """Note what matters in one ``Element`` proto of a ``new_element`` delta."""
        kind = element.WhichOneof("type")
        if kind == "exception":
            self.exceptions.append(element.exception.message)
            return
        widget_id = getattr(getattr(element, kind), "id", "")
        if not (isinstance(widget_id, str) and widget_id.startswith(WIDGET_ID_PREFIX)):
            return
        key = widget_id.split("-", 2)[2]
        self.ids[key] = widget_id
        if kind == "plotly_chart" and key == CHART_KEY:
            self.chart = chart_state(element.plotly_chart.spec)


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


class WsVisitor(Visitor):
    """A visitor as a Streamlit session over the websocket, speaking the frontend's protocol.

    Like the browser, it sends a ``rerun_script`` ``BackMsg`` carrying a ``ClientState``: the page
    (``page_script_hash``), the link's query string and the values of the widgets it moved
    (``widget_states``), and it reads ``ForwardMsg`` until ``script_finished``. Widget ids come
    from the ``new_element`` deltas of the run before, found by the key at their end.
    """

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
        from websockets.asyncio.client import connect

        await self.close()
        self.conn = await connect(
            ws_url(self.base_url),
            subprotocols=[SUBPROTOCOL],
            additional_headers=self.cookies.header(),
            # A run's charts may pass the client's 1 MiB default; the server bounds its messages.
            max_size=None,
            open_timeout=timeout_s,
            # At the deadline a busy server may not answer the closing handshake soon.
            close_timeout=1.0,
            proxy=None,
        )
        self.cookies.update(self.conn.response.headers)

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
                self.receive_run(), timeout_s if timeout_s is not None else self.step_timeout_s
            )
        except ConnectionClosed as exc:
            raise WorkerLost(str(exc)) from exc
        return time.perf_counter() - start

    async def receive_run(self) -> Run:
        ForwardMsg = protos().ForwardMsg  # noqa: N806

        run = Run()
        while True:
            msg = ForwardMsg()
            msg.ParseFromString(await self.conn.recv())
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                # A run stopped early for a rerun is followed by a new one; only the last counts.
                run = Run(page=msg.new_session.page_script_hash)
            elif kind == "navigation":
                self.pages = {
                    (p.url_pathname or HOME): p.page_script_hash for p in msg.navigation.app_pages
                }
            elif kind == "session_event" and msg.session_event.script_changed_on_disk:
                self.source_changed = True
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                run.take(msg.delta.new_element)
            elif kind == "script_finished":
                status = msg.script_finished
                if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue
                if status != ForwardMsg.FINISHED_SUCCESSFULLY:
                    name = ForwardMsg.ScriptFinishedStatus.Name(status)
                    raise NoEffect(f"the script finished with {name}")
                return run

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
            WidgetState(id=ids[OFFSET_KEY], double_array_value={"data": [self.params[OFFSET_KEY]]}),
            WidgetState(id=ids[WIDTH_KEY], double_value=float(self.params[WIDTH_KEY])),
        ]

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


class BrowserVisitor(Visitor):
    """A visitor in a browser context of headless Chromium, pressing keys and clicking links."""

    def __init__(self, context, *args: Any, **kwargs: Any) -> None:
        """A ``Visitor`` (its arguments after ``context``) in the browser ``context``."""
        super().__init__(*args, **kwargs)
        self.context = context
        self.timeout_ms = self.step_timeout_s * 1e3
        self.load_timeout_ms = self.load_timeout_s * 1e3
        self.page = None

    async def chart(self):
        return await self.page.evaluate(CHART_STATE)

    async def chart_differs(self, before) -> None:
        await self.page.wait_for_function(
            f"(before) => {{ const now = ({CHART_STATE})(); "
            "return now !== null && JSON.stringify(now) !== JSON.stringify(before); }",
            arg=before,
            timeout=self.timeout_ms,
        )

    async def settled(self, timeout_ms: float | None = None) -> None:
        await self.page.wait_for_selector(READY, timeout=timeout_ms or self.timeout_ms)

    async def open(self) -> None:
        """The first load: the whole class fetches the app's scripts at once, so it gets the
        longer ``load_timeout`` and is not counted as an interaction."""
        if self.page is None:
            self.page = await self.context.new_page()
            self.page.on("pageerror", lambda exc: self.error(f"JavaScript error: {exc}"))
        url = f"{self.base_url}/?lang=en&d=64&seed={self.number}"
        await self.page.goto(url, wait_until="commit", timeout=self.load_timeout_ms)
        await self.settled(self.load_timeout_ms)
        await self.page.wait_for_function(
            f"({CHART_STATE})() !== null", timeout=self.load_timeout_ms
        )

    async def slider(self) -> None:
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        before = await self.chart()
        slider = self.page.get_by_role("slider").nth(0)  # the sidebar's first: offset
        value = await slider.get_attribute("aria-valuenow")
        for _ in range(PRESS_TRIES):
            # A press that lands while the widget is still being drawn moves nothing; the
            # latency counts from the press the slider took.
            await slider.focus()
            start = time.perf_counter()
            await slider.press("ArrowRight")
            try:
                await self.page.wait_for_function(
                    "([el, v]) => el.getAttribute('aria-valuenow') !== v",
                    arg=[await slider.element_handle(), value],
                    timeout=PRESS_WAIT_S * 1e3,
                )
                break
            except PlaywrightTimeout:
                continue
        await self.chart_differs(before)
        await self.settled()
        self.latencies.append(time.perf_counter() - start)

    async def width_change(self) -> None:
        before = await self.chart()
        box = self.page.locator("[data-testid='stNumberInput'] input").nth(0)  # d
        await box.fill(str(self.next_width(before[0])))
        start = time.perf_counter()
        await box.press("Enter")
        await self.chart_differs(before)
        await self.settled()
        self.latencies.append(time.perf_counter() - start)

    async def switch(self, topic: str) -> None:
        link = self.page.locator("[data-testid='stSidebarNavLink']").filter(
            has_text=t(f"{topic}.nav", "en")
        )
        start = time.perf_counter()
        await link.first.click()
        await self.page.get_by_role("heading", name=t(f"{topic}.title", "en")).first.wait_for(
            timeout=self.timeout_ms
        )
        await self.settled()
        if topic == "explorer":
            await self.page.wait_for_function(
                f"({CHART_STATE})() !== null", timeout=self.timeout_ms
            )
        self.latencies.append(time.perf_counter() - start)

    async def shows_exception(self) -> bool:
        return bool(await self.page.locator(EXCEPTION).count())
