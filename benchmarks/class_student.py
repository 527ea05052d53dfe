"""One student of ``benchmarks.classroom``: a Streamlit session of the guided lesson over the
websocket, as a student's browser holds it (its seat cookie, the proxy's), that joins a class,
answers, reconnects when its worker dies, and runs the page's live fragment on the browser's
timer until the teacher's reveal shows."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import time
from urllib.parse import urlencode

from websockets.exceptions import ConnectionClosed

from benchmarks.st_private import protos
from benchmarks.ws_visitor import Cookies, Run, fetch_page, open_stream, receive_run
from labs.lesson.class_section import SEAT_COOKIE
from labs.lesson.options import OPTIONS, STEP_IDS, letter
from serve.config import BUSY_MARKER, RETRY_S

ANSWER_TIMEOUT_S = 60.0
# A dropped student tries again every RECONNECT_S for RECOVER_TIMEOUT_S (a restart and HAProxy's
# checks); a run that did not say "recorded" (too fast, the store down) is sent again after
# RESEND_S; a student recorded before the kill watches DROP_GRACE_S after it for a drop.
RECONNECT_S, RECOVER_TIMEOUT_S, RESEND_S, DROP_GRACE_S = 0.2, 90.0, 0.5, 3.0
PAGE = "lesson"
PICK = f"pick_{STEP_IDS[0]}"
RECORDED = re.compile(r"\*\*(\w)\*\* is recorded")
REVEALED = re.compile(r"The numbers say \*\*\w\*\*")  # the step's answer, once revealed


def said_recorded(run: Run) -> str | None:
    """The letter the page says is recorded, if it says so."""
    found = [m.group(1) for body in run.alerts if (m := RECORDED.search(body))]
    return found[0] if found else None


class Student:
    """One student: a Streamlit session over the websocket with a browser's cookies (its seat
    token, kept for its life, and the proxy's); reconnects when its worker dies."""

    def __init__(self, base_url: str, code: str, source: str | None = None) -> None:
        self.base_url, self.code, self.source = base_url, code, source  # source: its address
        self.token = secrets.token_hex(16)
        self.cookies = Cookies()
        self.cookies.values[SEAT_COOKIE] = self.token
        self.conn, self.shown = None, Run()
        self.page, self.shown_at = "", 0.0  # the page's script hash, when its run ended
        self.live = ("", 0.0)  # the live fragment's id and period
        self.drawn: list[str] = []  # alerts of runs that finished early (the browser shows them)
        self.option: str | None = None  # the pick sent: the radio's label
        self.choice: str | None = None  # its option id, as the store holds it
        self.told: str | None = None  # the option the page said is recorded
        self.reconnects, self.reconnect_s, self.busy = 0, 0.0, 0
        self.cut_s: float | None = None  # an answer cut by a drop: seconds until recorded
        self.live_tasks: list[asyncio.Task] = []  # the page's timer and reads once settled
        self.ticks: list[float] = []  # when the timer asked for a run
        self.saw_at: float | None = None  # when the page showed the reveal

    @property
    def connected(self) -> bool:
        from websockets.protocol import State

        return self.conn is not None and self.conn.state is State.OPEN

    async def open(self, timeout_s: float, *, page: bool = True) -> None:
        """The page (waiting out the proxy's busy page; not on a reconnect, as the browser does
        not fetch it then), a websocket, and a run with the pick held, all with the cookies."""
        deadline = time.monotonic() + timeout_s
        await self.close()
        url = f"{self.base_url}/{PAGE}?{urlencode({'class': self.code, 'lang': 'en'})}"
        while page:
            status, headers, body = await asyncio.to_thread(
                fetch_page, url, self.cookies.header(), max(1.0, deadline - time.monotonic())
            )
            self.cookies.update(headers)
            if status == 200:
                break
            if status != 503 or BUSY_MARKER not in body or time.monotonic() > deadline:
                raise RuntimeError(f"the page answered {status}")
            self.busy += 1
            await asyncio.sleep(float(headers.get("Retry-After") or RETRY_S))
        left = max(1.0, deadline - time.monotonic())
        self.conn = await open_stream(self.base_url, self.cookies, left, source=self.source)
        await asyncio.wait_for(self.rerun(), max(1.0, deadline - time.monotonic()))

    async def send(self, fragment: str = "") -> None:
        """Ask for a run with the radio's value as the browser holds it (once picked): of the
        page, or the timed run of its live ``fragment`` (which reruns the page when the class
        moved)."""
        msg = protos().BackMsg()
        state = msg.rerun_script
        state.query_string = urlencode({"class": self.code, "lang": "en"})
        if fragment:  # as the browser's timer sends it: the page by its hash, the fragment's id
            state.page_script_hash, state.fragment_id = self.page, fragment
            state.is_auto_rerun = True
        else:
            state.page_name = PAGE
        if self.option is not None:
            pick = protos().WidgetState(id=self.shown.ids[PICK], string_value=self.option)
            state.widget_states.widgets.append(pick)
        state.context_info.locale, state.context_info.timezone = "en-US", "UTC"
        await self.conn.send(msg.SerializeToString())

    async def receive(self) -> None:
        """The next run to finish; one of the page (not of the fragment alone) is what it shows."""
        run = await receive_run(self.conn, self.note)
        if run.ids:
            self.shown, self.shown_at = run, time.monotonic()

    async def rerun(self) -> None:
        """A run of the page, which must show the pick."""
        await self.send()
        await self.receive()
        if PICK not in self.shown.ids:
            raise RuntimeError(f"no {PICK} on the page: {self.shown.exceptions[:1]}")

    def note(self, kind: str, msg) -> None:
        """The page's hash (as the browser's address bar holds it), and the live fragment's id
        and period (the browser's timer), from the page's run."""
        if kind == "navigation":
            self.page = msg.navigation.page_script_hash
        elif kind == "finished_early":  # its elements stay on the browser's page
            self.drawn.extend(msg.alerts)
        elif kind == "auto_rerun":
            self.live = (msg.auto_rerun.fragment_id, msg.auto_rerun.interval)

    async def see_reveal(self, seen: list[float], give_up: float) -> None:
        """Read every run that comes, as the browser does, while the live fragment runs on the
        browser's timer, until the page shows the step's answer (a run that finished early
        showed what it drew) or ``give_up`` (a monotonic time); then note when. The page stays
        live, its timer and runs going on, until the student closes it (it loads the worker)."""
        self.live_tasks.append(asyncio.create_task(self.timer()))
        try:
            while not REVEALED.search(" ".join([*self.drawn, *self.shown.alerts])):
                left = give_up - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                try:
                    await asyncio.wait_for(self.receive(), left)
                except ConnectionClosed:  # moved to another worker: the browser reconnects
                    await self.reconnect()
                    self.live_tasks.append(asyncio.create_task(self.timer()))
        except TimeoutError:  # what the page last showed says why
            said = " | ".join(a[:80] for a in self.shown.alerts)
            raise RuntimeError(f"no reveal; live {self.live}; the page said: {said}") from None
        self.saw_at = time.monotonic()
        seen.append(self.saw_at)
        self.live_tasks.append(asyncio.create_task(self.read_on()))

    async def timer(self) -> None:
        """The browser's timer: every period from the page's last run, no missed tick sent."""
        tick = self.shown_at
        while True:
            tick = max(tick, self.shown_at) + self.live[1]
            late = time.monotonic() - tick
            await asyncio.sleep(max(0.0, -late))
            if late <= 0 and self.connected:
                self.ticks.append(time.monotonic())
                await self.send(self.live[0])

    async def read_on(self) -> None:
        with contextlib.suppress(Exception):  # the connection closed
            while True:
                await self.receive()

    async def reconnect(self) -> None:
        """The websocket again, with the pick held, as often as it takes (bounded)."""
        self.reconnects += 1
        start = time.monotonic()
        while True:
            try:
                await self.open(RECOVER_TIMEOUT_S, page=False)
                self.reconnect_s = max(self.reconnect_s, time.monotonic() - start)
                return
            except Exception as exc:  # refused, reset, a run cut short: again
                if time.monotonic() > start + RECOVER_TIMEOUT_S:
                    raise RuntimeError(f"no reconnect: {type(exc).__name__}: {exc}") from exc
                await asyncio.sleep(RECONNECT_S)

    async def dropped(self, within_s: float) -> bool:
        """Whether the connection is closed, or closes within ``within_s``."""
        if self.connected:
            try:
                await asyncio.wait_for(self.conn.wait_closed(), within_s)
            except TimeoutError:
                return False
        return True

    async def answer(self, at: float, choice: int) -> float:
        """Idle until ``at`` (a dropped connection opened again at once), pick option
        ``choice`` of step 1, run the page until it says "recorded": the seconds that took."""
        while (left := at - time.monotonic()) > 0:
            if await self.dropped(left):
                await self.reconnect()
        self.option = self.shown.options[PICK][choice]
        self.choice = OPTIONS[STEP_IDS[0]][choice]
        start, deadline = time.perf_counter(), time.monotonic() + ANSWER_TIMEOUT_S
        await self.run_pick()
        while said_recorded(self.shown) is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"not recorded: {self.shown.alerts[-2:]}")
            await asyncio.sleep(RESEND_S)
            await self.run_pick()
        seconds = time.perf_counter() - start
        self.check_told()
        self.cut_s = None if self.cut_s is None else seconds
        return seconds

    async def run_pick(self) -> None:
        """A run with the pick; a worker that died under it is a reconnect with the pick."""
        try:
            await asyncio.wait_for(self.rerun(), ANSWER_TIMEOUT_S)
        except Exception:
            if self.connected:
                raise
            self.cut_s = 0.0
            await self.reconnect()

    def check_told(self) -> None:
        said = said_recorded(self.shown)
        if said != letter(STEP_IDS[0], self.choice):
            raise RuntimeError(f"picked {self.choice}, the page says {said} is recorded")
        self.told = self.choice

    async def stay(self, killed: asyncio.Event, kill_at: list[float]) -> None:
        """Recorded: stay on the page through the kill; after a drop, a reconnect, where the
        page must still say the same answer is recorded."""
        await killed.wait()
        left = (kill_at or [0.0])[0] + DROP_GRACE_S - time.monotonic()
        if left > 0 and await self.dropped(left) or not self.connected:
            await self.reconnect()
            self.check_told()

    async def close(self) -> None:
        for task in self.live_tasks:
            task.cancel()
        if self.conn is not None:
            await self.conn.close()
