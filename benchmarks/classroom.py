"""A class answering one step of the guided lesson together, through the launcher.

Run ``python -m benchmarks.classroom --workers 2 --class 60``. It starts ``python -m serve
--workers 2`` on a free loopback port with a fresh class store (SQLite in a temporary folder, or
``--store redis://...``), opens the teacher's page ``/lesson?class=new`` in headless Chromium,
lets ``--class`` students join over Streamlit's websocket (as ``benchmarks.ws_visitor.WsVisitor``
speaks it), and has each of them pick an option of step 1 at a seeded random moment within
``--window`` seconds. It reports:

answers lost
    answers a student was told were recorded that the store does not hold (target 0);
teacher complete
    seconds from the last "recorded" until the teacher's page, never reloaded, shows every
    answer (its live counts refresh every 2 s; target 3 s);
p95 answer
    the 95th percentile of an answer: from the pick sent until the run that says "recorded" has
    finished (target 1 s).

``--workers 0`` runs one ``streamlit run app.py`` instead of the launcher (no HAProxy needed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

from benchmarks.live import (
    CHROMIUM,
    CHROMIUM_ARGS,
    READY,
    free_port,
    start_server,
    stop_server,
    streamlit_command,
)
from benchmarks.st_private import protos
from benchmarks.target import wait_until_ready
from benchmarks.ws_visitor import SUBPROTOCOL, WIDGET_ID_PREFIX, Cookies, fetch_page, ws_url
from core.lab.lesson_options import STEP_IDS
from serve.classroom.backends import open_store

TARGET_LOST = 0
TARGET_TEACHER_S = 3.0
TARGET_P95_S = 1.0
DEFAULT_WINDOW_S = 10.0
SEED = 25
# The students' first loads arrive together on a cold server; their answers are what is timed.
JOIN_TIMEOUT_S = 180.0
ANSWER_TIMEOUT_S = 60.0
TEACHER_TIMEOUT_S = 30.0
READY_TIMEOUT_S = 180.0
PAGE = "lesson"
PICK = f"pick_{STEP_IDS[0]}"
RECORDED = "is recorded"


@dataclass
class Report:
    students: int
    workers: int
    store: str
    window_s: float
    recorded: int = 0
    lost: int = 0
    p95_s: float = math.nan
    max_s: float = math.nan
    teacher_complete_s: float = math.nan
    errors: list[str] = field(default_factory=list)

    def passed(self) -> bool:
        return (
            not self.errors
            and self.recorded == self.students
            and self.lost <= TARGET_LOST
            and self.teacher_complete_s <= TARGET_TEACHER_S
            and self.p95_s <= TARGET_P95_S
        )

    def lines(self) -> list[str]:
        return [
            f"class of {self.students} on {self.workers} worker(s), store {self.store}, "
            f"answers within {self.window_s:g} s",
            f"recorded: {self.recorded}/{self.students}",
            f"answers lost: {self.lost} (target {TARGET_LOST})",
            f"teacher's counts complete after the last answer: {self.teacher_complete_s:.2f} s "
            f"(target {TARGET_TEACHER_S:g} s)",
            f"answer latency: p95 {self.p95_s:.3f} s, max {self.max_s:.3f} s "
            f"(target p95 {TARGET_P95_S:g} s)",
            *(f"error: {e}" for e in self.errors[:10]),
            "PASS" if self.passed() else "FAIL",
        ]


@dataclass
class Shown:
    """What one run sent: widget ids and the radio's options by key, alerts, exceptions."""

    ids: dict[str, str] = field(default_factory=dict)
    options: dict[str, list[str]] = field(default_factory=dict)
    alerts: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)

    def take(self, element) -> None:
        kind = element.WhichOneof("type")
        if kind == "exception":
            self.exceptions.append(element.exception.message)
        elif kind == "alert":
            self.alerts.append(element.alert.body)
        widget_id = getattr(getattr(element, kind), "id", "")
        if isinstance(widget_id, str) and widget_id.startswith(WIDGET_ID_PREFIX):
            key = widget_id.split("-", 2)[2]
            self.ids[key] = widget_id
            if kind == "radio":
                self.options[key] = list(element.radio.options)


class Student:
    """One student: a Streamlit session over the websocket, with the proxy's cookie."""

    def __init__(self, base_url: str, code: str) -> None:
        self.base_url, self.code = base_url, code
        self.cookies = Cookies()
        self.conn = None
        self.shown = Shown()

    async def join(self) -> None:
        from websockets.asyncio.client import connect

        query = urlencode({"class": self.code, "lang": "en"})
        status, headers, _ = await asyncio.to_thread(
            fetch_page, f"{self.base_url}/{PAGE}?{query}", {}, JOIN_TIMEOUT_S
        )
        if status != 200:
            raise RuntimeError(f"the page answered {status}")
        self.cookies.update(headers)
        self.conn = await connect(
            ws_url(self.base_url),
            subprotocols=[SUBPROTOCOL],
            additional_headers=self.cookies.header(),
            max_size=None,
            open_timeout=JOIN_TIMEOUT_S,
            close_timeout=1.0,
            proxy=None,
        )
        await asyncio.wait_for(self.rerun(), JOIN_TIMEOUT_S)
        if PICK not in self.shown.ids:
            raise RuntimeError(f"no {PICK} on the page: {self.shown.exceptions[:1]}")

    async def rerun(self, widgets: list | None = None) -> None:
        msg = protos().BackMsg()
        state = msg.rerun_script
        state.query_string = urlencode({"class": self.code, "lang": "en"})
        state.page_name = PAGE
        state.widget_states.widgets.extend(widgets or [])
        state.context_info.locale = "en-US"
        state.context_info.timezone = "UTC"
        await self.conn.send(msg.SerializeToString())
        self.shown = await self.receive()

    async def receive(self) -> Shown:
        ForwardMsg = protos().ForwardMsg  # noqa: N806

        shown = Shown()
        while True:
            msg = ForwardMsg()
            msg.ParseFromString(await self.conn.recv())
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                shown = Shown()
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                shown.take(msg.delta.new_element)
            elif kind == "script_finished":
                if msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    continue
                if msg.script_finished != ForwardMsg.FINISHED_SUCCESSFULLY:
                    raise RuntimeError(f"the run ended with status {msg.script_finished}")
                return shown

    async def answer(self, choice: int) -> tuple[float, str]:
        """Pick option ``choice`` of step 1; (seconds until the run finished, its option)."""
        option = self.shown.options[PICK][choice]
        pick = protos().WidgetState(id=self.shown.ids[PICK], string_value=option)
        start = time.perf_counter()
        await asyncio.wait_for(self.rerun([pick]), ANSWER_TIMEOUT_S)
        seconds = time.perf_counter() - start
        if not any(RECORDED in body for body in self.shown.alerts):
            raise RuntimeError(f"not recorded: {self.shown.alerts[:2]} {self.shown.exceptions[:1]}")
        return seconds, option

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()


@dataclass
class Outcome:
    """What the students saw: answers recorded (by option index), latencies, errors, and when
    the last "recorded" arrived."""

    recorded: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    last_recorded: float = 0.0


async def answer_together(base_url: str, code: str, students: int, window_s: float) -> Outcome:
    """Every student joins, then answers at a seeded moment within ``window_s``."""
    rng = random.Random(SEED)
    crowd = [Student(base_url, code) for _ in range(students)]
    out = Outcome()
    joined = await asyncio.gather(*(s.join() for s in crowd), return_exceptions=True)
    out.errors += [f"join: {type(e).__name__}: {e}"[:160] for e in joined if e is not None]
    ready = [s for s, e in zip(crowd, joined, strict=True) if e is None]
    start = time.monotonic()

    async def one(student: Student, at: float, choice: int) -> None:
        await asyncio.sleep(max(0.0, start + at - time.monotonic()))
        try:
            seconds, _ = await student.answer(choice)
        except Exception as exc:  # one student's failure is a reported error, not a crash
            out.errors.append(f"answer: {type(exc).__name__}: {exc}"[:160])
            return
        out.latencies.append(seconds)
        out.recorded.append(choice)
        out.last_recorded = max(out.last_recorded, time.monotonic())

    plan = [(rng.uniform(0, window_s), rng.randrange(4)) for _ in ready]
    await asyncio.gather(*(one(s, at, c) for s, (at, c) in zip(ready, plan, strict=True)))
    await asyncio.gather(*(s.close() for s in crowd), return_exceptions=True)
    return out


def start_app(workers: int, students: int, env: dict[str, str | None]) -> tuple[object, str, Path]:
    """The launcher (or one ``streamlit run`` for 0 workers) on a free port, with ``env``."""
    port = free_port()
    run_dir = Path(tempfile.mkdtemp(prefix="normlab-class-"))
    if workers:
        seats = math.ceil((students + 1) / workers) + 2
        command = [sys.executable, "-m", "serve", "--workers", str(workers), "--seats", str(seats)]
        command += ["--port", str(port), "--address", "127.0.0.1", "--run-dir", str(run_dir)]
    else:
        command = streamlit_command(port)
    proc = start_server(command, port, own_session=True, log=run_dir / "server.log", env=env)
    url = f"http://127.0.0.1:{port}"
    wait_until_ready(url, run_dir if workers else None, time.monotonic() + READY_TIMEOUT_S)
    return proc, url, run_dir


def teacher_sees(page, students: int) -> float:
    """Seconds until the teacher's page, as it stands, shows ``students`` answers."""
    start = time.monotonic()
    page.wait_for_function(
        "n => document.body.innerText.includes(`(answers: ${n})`)",
        arg=students,
        timeout=TEACHER_TIMEOUT_S * 1000,
        polling=50,
    )
    return time.monotonic() - start


def run_class(students: int, workers: int, window_s: float, store: str | None) -> Report:
    """Start the app, run the class, measure; everything stopped afterwards."""
    from playwright.sync_api import sync_playwright

    data_dir = tempfile.mkdtemp(prefix="normlab-class-store-")
    env = {"NORMLAB_DATA_DIR": data_dir, "NORMLAB_CLASS_STORE": store}
    proc, url, run_dir = start_app(workers, students, env)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            report = measure(url, browser, students, window_s, env)
            report.workers = workers
            browser.close()
    finally:
        stop_server(proc)
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.rmtree(data_dir, ignore_errors=True)
    return report


def measure(url: str, browser, students: int, window_s: float, env: dict) -> Report:
    """One class on the app at ``url`` (whose store ``env`` names), the teacher's page opened in
    ``browser`` (Playwright, sync): the figures of the report."""
    report = Report(students, 0, env.get("NORMLAB_CLASS_STORE") or "sqlite", window_s)
    teacher = browser.new_page(viewport={"width": 1400, "height": 1400})
    teacher.goto(f"{url}/{PAGE}?class=new&lang=en")
    teacher.wait_for_selector(READY, timeout=READY_TIMEOUT_S * 1000)
    teacher.wait_for_function("location.search.includes('teacher=')")
    code = teacher.evaluate("new URLSearchParams(location.search).get('class')")
    outcome = in_thread(answer_together(url, code, students, window_s))
    if outcome.recorded:
        report.teacher_complete_s = measure_teacher(teacher, outcome)
    teacher.close()
    summarise(report, outcome, code, env)
    return report


def measure_teacher(teacher, outcome: Outcome) -> float:
    """From the last "recorded" to the teacher's page showing every recorded answer."""
    try:
        teacher_sees(teacher, len(outcome.recorded))
    except Exception:  # not within the timeout: reported as never
        return math.inf
    return time.monotonic() - outcome.last_recorded


def in_thread(work) -> Outcome:
    """Run the students' event loop in a thread of its own (Playwright's sync API holds this
    thread's)."""
    box: list = []
    thread = threading.Thread(target=lambda: box.append(asyncio.run(work)))
    thread.start()
    thread.join()
    return box[0]


def summarise(report: Report, outcome: Outcome, code: str, env: dict) -> None:
    """Recorded answers against what the store holds; latencies; errors."""
    report.errors = outcome.errors
    report.recorded = len(outcome.recorded)
    stored = open_store({k: v for k, v in env.items() if v is not None}).counts(code, 1)
    held = list(stored.values())
    expected = np.bincount(outcome.recorded, minlength=len(held))
    report.lost = int(np.maximum(expected - np.asarray(held), 0).sum())
    if outcome.latencies:
        report.p95_s = float(np.percentile(outcome.latencies, 95))
        report.max_s = float(max(outcome.latencies))


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--class", dest="students", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--window", type=float, default=DEFAULT_WINDOW_S)
    parser.add_argument("--store", default=None, help="redis://host:port/db (default: SQLite)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    report = run_class(args.students, args.workers, args.window, args.store)
    print("\n".join(report.lines()))
    if args.json is not None:
        args.json.write_text(json.dumps(asdict(report), indent=2))
    return 0 if report.passed() else 1


if __name__ == "__main__":
    sys.exit(main())
