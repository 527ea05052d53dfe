"""A class opening the demo at once: N visitors, each making M interactions, against one server.

Run ``python -m benchmarks.load --visitors 20 --interactions 20 --timeout 300``. The script starts
``streamlit run app.py`` on a free loopback port and lets every visitor work through the same cycle
of interactions on the explorer: the offset slider one step to the right, a new width ``d``, a
switch to the guided lesson and back. Before each interaction a visitor reads the page for
``--think`` seconds (default 1.0), scaled by a seeded random factor in [0.5, 1.5] so the class
does not click in lockstep; ``--think 0`` sends every interaction the moment the last one
finished, a stress test rather than a class. Two kinds of visitor (``--client``):

``ws`` (the default)
    A Streamlit session over the server's websocket (``/_stcore/stream``), sending the
    ``BackMsg`` a browser sends (a rerun with the page, the link's query string and the changed
    widget's value) and reading ``ForwardMsg`` until the run's ``script_finished``. No page is
    drawn, so on a small machine the measured time is the server's, not twenty renderers'.
``browser``
    Headless Chromium, one context per visitor (Playwright's async API: its sync API may not be
    shared across threads), pressing keys and clicking links as a person does.

An interaction's latency runs from the message sent (``ws``) or the key press or click
(``browser``) until the run has finished with the result in place: the chart's values changed, or
the other page shown; think time is not part of it. Errors are exceptions shown on a page, a run
that did not finish successfully, JavaScript errors, lost connections, and interactions that did
not finish within ``--step-timeout``. A ``ws`` visitor also notes the server's notice that the
app's sources changed on disk: a source edit during the run reloads modules under the running
sessions (a run may fail on a half-reloaded module, a widget may get a new id and drop the value
sent for the old one), so the report says so and such a run does not pass. The server's
resident memory (with any child processes) is sampled every 0.2 s from ``/proc``. The report
gives errors, p50, p95 and max latency and peak RSS, and PASS or FAIL against the targets. A
global deadline bounds the whole run; at the deadline every visitor stops and the server (and the
browser) are killed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.live import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    READY,
    free_port,
    start_server,
    stop_server,
    streamlit_command,
    wait_for_health,
)
from ui.i18n import t  # noqa: E402  (the repository root is on the path only from here)

EXCEPTION = "[data-testid='stException']"
CLIENTS = ("ws", "browser")

# Targets from the project issue, for 20 visitors x 20 interactions on the 2-core reference box.
TARGET_P95_S = 1.0
TARGET_PEAK_RSS_MB = 800.0
TARGET_ERRORS = 0
RSS_PERIOD_S = 0.2
# After the global deadline the server gets this long to exit on SIGTERM before SIGKILL.
SHUTDOWN_GRACE_S = 5.0
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


@dataclass
class Report:
    visitors: int
    interactions_planned: int
    client: str = "ws"
    think_s: float = DEFAULT_THINK_S
    interactions_done: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    p50_s: float = float("nan")
    p95_s: float = float("nan")
    max_s: float = float("nan")
    peak_rss_mb: float = 0.0
    wall_s: float = 0.0
    deadline_hit: bool = False
    # Sessions the server told that the app's sources changed on disk during the run.
    source_changes: int = 0
    passed: bool = False

    def lines(self) -> list[str]:
        verdict = "PASS" if self.passed else "FAIL"
        if self.think_s > 0:
            jitter = f"+-{THINK_JITTER:.0%}"
            think = f"{self.think_s:g} s {jitter} before each interaction (not in the latency)"
        else:
            think = "0 s (stress test: each interaction sent as the last one finished)"
        lines = [
            f"client        {self.client}",
            f"visitors      {self.visitors}",
            f"think time    {think}",
            f"interactions  {self.interactions_done} of {self.interactions_planned}",
            f"errors        {self.errors} (target {TARGET_ERRORS})",
            f"latency p50   {self.p50_s * 1e3:.0f} ms",
            f"latency p95   {self.p95_s * 1e3:.0f} ms (target <= {TARGET_P95_S * 1e3:.0f} ms)",
            f"latency max   {self.max_s * 1e3:.0f} ms",
            f"peak RSS      {self.peak_rss_mb:.0f} MB (target <= {TARGET_PEAK_RSS_MB:.0f} MB)",
            f"wall time     {self.wall_s:.1f} s" + (" (deadline hit)" if self.deadline_hit else ""),
        ]
        if self.source_changes:
            lines.append(
                f"sources       changed on disk during the run ({self.source_changes} sessions "
                "told): errors and latencies are not the app's own"
            )
        return [*lines, f"result        {verdict}"]


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from the parent ids in ``/proc/<pid>/stat``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The command name may contain spaces; the fields after its closing paren do not.
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = [pid], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        tree += children
        frontier = children
    return tree


def rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


class RssSampler(threading.Thread):
    """Peak resident memory of a process and its children, sampled every ``RSS_PERIOD_S``."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak = pid, 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_bytes(process_tree(self.pid)))
            self.stop.wait(RSS_PERIOD_S)


class Visitor(ABC):
    """One person in the class: the cycle of interactions, their latencies and their errors."""

    def __init__(self, number: int, think_s: float = DEFAULT_THINK_S) -> None:
        self.number = number
        self.think_s = think_s
        self.rng = np.random.default_rng((THINK_SEED, number))
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.source_changed = False

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

    async def run(self, interactions: int) -> None:
        try:
            await self.open()
        except Exception as exc:  # any failure to load is this visitor's error
            self.error(f"first load failed: {type(exc).__name__}: {str(exc)[:120]}")
            return
        for i in range(interactions):
            kind = CYCLE[i % len(CYCLE)]
            if self.think_s > 0:
                await asyncio.sleep(
                    self.think_s * self.rng.uniform(1 - THINK_JITTER, 1 + THINK_JITTER)
                )
            try:
                await self.act(kind)
            except Exception as exc:  # a timeout or a lost connection counts as an error
                self.error(f"{kind} #{i + 1} failed: {type(exc).__name__}: {str(exc)[:120]}")
                # Back to a known state, so one failure does not cascade into the rest.
                try:
                    await self.open()
                except Exception:  # the page is gone: this visitor stops
                    return
                continue
            if await self.shows_exception():
                self.error(f"{kind} #{i + 1}: the page shows an exception")


class BrowserVisitor(Visitor):
    """A visitor in a browser context of headless Chromium, pressing keys and clicking links."""

    def __init__(
        self,
        number: int,
        context,
        base_url: str,
        step_timeout_s: float,
        load_timeout_s: float,
        think_s: float = DEFAULT_THINK_S,
    ) -> None:
        super().__init__(number, think_s)
        self.context, self.base_url = context, base_url
        self.timeout_ms = step_timeout_s * 1e3
        self.load_timeout_ms = load_timeout_s * 1e3
        self.page = None
        self.width = 0

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
        # The next width in turn that differs from the one shown, so the chart must change.
        self.width += 1
        while WIDTHS[self.width % len(WIDTHS)] == before[0]:
            self.width += 1
        box = self.page.locator("[data-testid='stNumberInput'] input").nth(0)  # d
        await box.fill(str(WIDTHS[self.width % len(WIDTHS)]))
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


class WsVisitor(Visitor):
    """A visitor as a Streamlit session over the websocket, speaking the frontend's protocol.

    Like the browser, it sends a ``rerun_script`` ``BackMsg`` carrying a ``ClientState``: the page
    (``page_script_hash``), the link's query string and the values of the widgets it moved
    (``widget_states``), and it reads ``ForwardMsg`` until ``script_finished``. Widget ids come
    from the ``new_element`` deltas of the run before, found by the key at their end.
    """

    def __init__(
        self,
        number: int,
        ws_url: str,
        step_timeout_s: float,
        load_timeout_s: float,
        think_s: float = DEFAULT_THINK_S,
    ) -> None:
        super().__init__(number, think_s)
        self.ws_url = ws_url
        self.step_timeout_s, self.load_timeout_s = step_timeout_s, load_timeout_s
        self.conn = None
        self.pages: dict[str, str] = {}  # url path (HOME for the landing page) -> script hash
        self.shown = Run()
        self.params: dict[str, object] = {}
        self.width = 0

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None

    async def open(self) -> None:
        """The first load: every visitor connects at once, so it gets ``load_timeout``."""
        from websockets.asyncio.client import connect

        await self.close()
        self.conn = await connect(
            self.ws_url,
            subprotocols=[SUBPROTOCOL],
            # A run's charts may pass the client's 1 MiB default; the server bounds its messages.
            max_size=None,
            open_timeout=self.load_timeout_s,
            # At the deadline a busy server may not answer the closing handshake soon.
            close_timeout=1.0,
        )
        # The link a visitor opens: the same width for all, a seed each.
        self.params = {"lang": "en", "d": 64, "seed": self.number, OFFSET_KEY: 0.0}
        await self.rerun(timeout_s=self.load_timeout_s)
        if self.shown.chart is None:
            raise self.no_chart()

    def no_chart(self) -> NoEffect:
        """The error for a run of the explorer without its chart, with the run's exception."""
        shown = "; ".join(self.shown.exceptions)
        return NoEffect("the explorer drew no chart" + (f" ({shown[:120]})" if shown else ""))

    async def rerun(
        self, *, page: str = "", widgets: Sequence = (), timeout_s: float | None = None
    ) -> float:
        """Ask for a run and wait for its end; the seconds from sending to ``script_finished``."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = urlencode(self.params)
        state.page_script_hash = page
        state.widget_states.widgets.extend(widgets)
        state.context_info.locale = "en-US"
        state.context_info.timezone = "UTC"
        start = time.perf_counter()
        await self.conn.send(msg.SerializeToString())
        self.shown = await asyncio.wait_for(
            self.receive_run(), timeout_s if timeout_s is not None else self.step_timeout_s
        )
        return time.perf_counter() - start

    async def receive_run(self) -> Run:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

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

    def explorer_widgets(self) -> list:
        """The moved widgets' values, as the browser sends every widget value it holds."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

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

    async def width_change(self) -> None:
        # The next width in turn that differs from the one shown, so the chart must change.
        self.width += 1
        while WIDTHS[self.width % len(WIDTHS)] == self.params[WIDTH_KEY]:
            self.width += 1
        d = WIDTHS[self.width % len(WIDTHS)]
        self.params[WIDTH_KEY] = d
        self.latencies.append(await self.rerun(widgets=self.explorer_widgets()))
        if self.shown.chart is None:
            raise self.no_chart()
        if self.shown.chart[0] != d:
            raise NoEffect(f"the chart does not have d = {d}")

    async def switch(self, topic: str) -> None:
        # A click on a navigation link: the page's hash, and the new page's widgets from the link.
        target = self.pages[topic]
        self.latencies.append(await self.rerun(page=target))
        if self.shown.page != target:
            raise NoEffect(f"the server ran another page than {topic}")
        if topic == HOME and self.shown.chart is None:
            raise self.no_chart()

    async def shows_exception(self) -> bool:
        return bool(self.shown.exceptions)


async def until_deadline(crowd: Sequence[Visitor], interactions: int, deadline: float) -> bool:
    """Run every visitor at once; whether ``deadline`` stopped them before they were done."""
    remaining = max(1.0, deadline - time.monotonic())
    try:
        await asyncio.wait_for(
            asyncio.gather(*(v.run(interactions) for v in crowd)), timeout=remaining
        )
    except TimeoutError:
        return True
    return False


async def drive_ws(
    base_url: str,
    visitors: int,
    interactions: int,
    timeouts: tuple[float, float],
    deadline: float,
    think_s: float,
) -> tuple[list[WsVisitor], bool]:
    """Run every visitor at once until done or ``deadline``; ``timeouts`` are (step, load) s."""
    ws_url = "ws://" + base_url.split("://", 1)[1] + STREAM_PATH
    crowd = [WsVisitor(number, ws_url, *timeouts, think_s) for number in range(visitors)]
    try:
        hit = await until_deadline(crowd, interactions, deadline)
    finally:
        await asyncio.gather(*(v.close() for v in crowd), return_exceptions=True)
    return crowd, hit


async def drive_browser(
    base_url: str,
    visitors: int,
    interactions: int,
    timeouts: tuple[float, float],
    deadline: float,
    think_s: float,
) -> tuple[list[BrowserVisitor], bool]:
    """Run every visitor at once until done or ``deadline``; ``timeouts`` are (step, load) s."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            crowd = []
            for number in range(visitors):
                context = await browser.new_context(viewport={"width": 1280, "height": 900})
                crowd.append(BrowserVisitor(number, context, base_url, *timeouts, think_s))
            hit = await until_deadline(crowd, interactions, deadline)
        finally:
            await browser.close()
    return crowd, hit


def summarise(report: Report, crowd: Sequence, interactions: int) -> Report:
    """Fill ``report`` from each visitor's ``latencies`` and ``errors``."""
    latencies = np.array([s for v in crowd for s in v.latencies])
    errors = [e for v in crowd for e in v.errors]
    report.source_changes = sum(bool(getattr(v, "source_changed", False)) for v in crowd)
    unfinished = report.visitors * interactions - len(latencies) - len(errors)
    report.interactions_done = len(latencies)
    # Interactions never reached (deadline, a visitor that could not load) are errors too.
    report.errors = len(errors) + max(0, unfinished)
    report.error_samples = errors[:10]
    if latencies.size:
        report.p50_s = float(np.percentile(latencies, 50))
        report.p95_s = float(np.percentile(latencies, 95))
        report.max_s = float(latencies.max())
    report.passed = (
        report.errors <= TARGET_ERRORS
        and latencies.size > 0
        and report.p95_s <= TARGET_P95_S
        and report.peak_rss_mb <= TARGET_PEAK_RSS_MB
        and not report.source_changes
    )
    return report


def run_load(
    visitors: int,
    interactions: int,
    timeout_s: float,
    *,
    client: str = "ws",
    think_s: float = DEFAULT_THINK_S,
    step_timeout_s: float = 30.0,
    load_timeout_s: float = 120.0,
) -> Report:
    """Start the server, let the class in through ``client`` (``ws`` or ``browser``), report."""
    drive = {"ws": drive_ws, "browser": drive_browser}[client]
    start = time.monotonic()
    deadline = start + timeout_s
    report = Report(
        visitors=visitors,
        interactions_planned=visitors * interactions,
        client=client,
        think_s=think_s,
    )
    port = free_port()
    server = start_server(streamlit_command(port), port, own_session=True)
    sampler = RssSampler(server.pid)
    sampler.start()
    # Whatever happens to the event loop, the server does not outlive the deadline by much.
    watchdog = threading.Timer(
        timeout_s + 2 * SHUTDOWN_GRACE_S, lambda: stop_server(server, grace_s=SHUTDOWN_GRACE_S)
    )
    watchdog.daemon = True
    watchdog.start()
    crowd: list[Visitor] = []
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_for_health(base_url, timeout=max(0.0, deadline - time.monotonic()))
        crowd, report.deadline_hit = asyncio.run(
            drive(
                base_url,
                visitors,
                interactions,
                (step_timeout_s, load_timeout_s),
                deadline,
                think_s,
            )
        )
    finally:
        watchdog.cancel()
        sampler.stop.set()
        sampler.join()
        stop_server(server, grace_s=SHUTDOWN_GRACE_S)
    report.peak_rss_mb = sampler.peak / (1 << 20)
    report.wall_s = time.monotonic() - start
    return summarise(report, crowd, interactions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visitors", type=int, default=20)
    parser.add_argument("--interactions", type=int, default=20)
    parser.add_argument(
        "--client",
        choices=CLIENTS,
        default="ws",
        help="ws: Streamlit sessions over the websocket (the server's time); "
        "browser: headless Chromium (what a person waits, renderer included)",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=DEFAULT_THINK_S,
        help="seconds a visitor reads the page before each interaction, scaled by a seeded "
        f"random factor in [{1 - THINK_JITTER:g}, {1 + THINK_JITTER:g}]; 0 for a stress test",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="global deadline, seconds")
    parser.add_argument(
        "--step-timeout",
        type=float,
        default=30.0,
        help="seconds one interaction may take before it counts as an error",
    )
    parser.add_argument(
        "--load-timeout",
        type=float,
        default=120.0,
        help="seconds the first load (all visitors at once) may take",
    )
    parser.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    if args.client == "browser" and not Path(CHROMIUM).exists():
        parser.error(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    if args.visitors < 1 or args.interactions < 1:
        parser.error("--visitors and --interactions must be at least 1")
    if args.think < 0:
        parser.error("--think must not be negative")
    report = run_load(
        args.visitors,
        args.interactions,
        args.timeout,
        client=args.client,
        think_s=args.think,
        step_timeout_s=args.step_timeout,
        load_timeout_s=args.load_timeout,
    )
    print("\n".join(report.lines()))
    for sample in report.error_samples:
        print(f"  {sample}")
    if args.json is not None:
        args.json.write_text(json.dumps(asdict(report), indent=2))
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
