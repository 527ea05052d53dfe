"""A class answering one step of the guided lesson together, through the launcher.

Run ``python -m benchmarks.classroom --workers 2 --class 60`` (``--store redis://...``,
``--kill-mid-vote``; ``--workers 0`` runs one ``streamlit run app.py`` instead of the launcher).
docs/serving.md, "The class store", says what a run does and what its report counts: answers
lost and counted twice (target 0), the head count, the teacher's page complete (target 3 s) and
the p95 answer (target 1 s), of the answers the kill did not cut (those are reported apart)."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from benchmarks import live
from benchmarks.class_student import (
    ANSWER_TIMEOUT_S,
    PAGE,
    RECOVER_TIMEOUT_S,
    Student,
)
from benchmarks.target import wait_until_ready
from labs.lesson.class_section import seat_id
from labs.lesson.options import LESSON
from serve.classroom.backends import open_store
from serve.config import COOKIE
from serve.launcher import read_state

TARGET_LOST = TARGET_TWICE = 0
TARGET_TEACHER_S, TARGET_P95_S, TARGET_REVEAL_S = 3.0, 1.0, 2.0
DEFAULT_WINDOW_S, SEED = 10.0, 25
# The students' first loads arrive together on a cold server; their answers are what is timed.
JOIN_TIMEOUT_S, TEACHER_TIMEOUT_S, READY_TIMEOUT_S = 180.0, 30.0, 180.0
REVEAL_TIMEOUT_S = 120.0  # a settled student waits this long for the teacher's reveal
# The server log's lines worth reporting: restarts, HAProxy's servers down or up, the store.
EVENTS = re.compile(r"Server sessions/\S+ is (DOWN|UP)|exited with|class store|Traceback")


@dataclass
class Report:
    students: int
    workers: int
    store: str
    window_s: float
    recorded: int = 0
    lost: int = 0
    counted_twice: int = 0
    head_count: int = 0
    killed: str = ""
    reconnected: int = 0
    reconnect_max_s: float = math.nan
    busy: int = 0  # reconnected students who met the proxy's busy page
    cut: int = 0  # answers in flight when the worker died, recorded after a reconnect
    cut_max_s: float = math.nan
    p95_s: float = math.nan
    max_s: float = math.nan
    teacher_complete_s: float = math.nan
    saw_reveal: int = 0  # students whose page showed the answer the teacher revealed
    reveal_s: float = math.nan  # from the teacher's click until the last of them saw it
    pushed: int = 0  # of them, seen before their timer asked again (a late rerun counts as asked)
    errors: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)

    def passed(self) -> bool:
        return (
            not self.errors
            and self.recorded == self.head_count == self.students
            and self.lost <= TARGET_LOST
            and self.counted_twice <= TARGET_TWICE
            and self.teacher_complete_s <= TARGET_TEACHER_S
            and self.p95_s <= TARGET_P95_S
            and self.saw_reveal == self.students
            and self.reveal_s <= TARGET_REVEAL_S
        )

    def lines(self) -> list[str]:
        kill = [
            f"killed mid-vote: {self.killed}",
            f"reconnected: {self.reconnected} students (slowest {self.reconnect_max_s:.2f} s, "
            f"{self.busy} met the busy page); answers cut by the kill: {self.cut} "
            f"(recorded within {self.cut_max_s:.2f} s)",
        ]
        return [
            f"class of {self.students} on {self.workers} worker(s), store {self.store}, "
            f"answers within {self.window_s:g} s",
            f"recorded: {self.recorded}/{self.students}",
            f"answers lost: {self.lost} (target {TARGET_LOST})",
            f"counted twice: {self.counted_twice} (target {TARGET_TWICE})",
            f"head count: {self.head_count} (target {self.students})",
            *(kill if self.killed else []),
            f"teacher's counts complete after the last answer: {self.teacher_complete_s:.2f} s "
            f"(target {TARGET_TEACHER_S:g} s)",
            f"answer latency: p95 {self.p95_s:.3f} s, max {self.max_s:.3f} s "
            f"(target p95 {TARGET_P95_S:g} s)",
            f"the teacher's reveal reached {self.saw_reveal}/{self.students} students, the last "
            f"after {self.reveal_s:.2f} s (target {TARGET_REVEAL_S:g} s); {self.pushed} saw it "
            "before their page's timer asked",
            *(f"error: {e}" for e in self.errors[:10]),
            *(f"server: {e}" for e in self.events[:20]),
            "PASS" if self.passed() else "FAIL",
        ]


@dataclass
class Outcome:
    """The students, the latencies of answers no kill cut, errors, when the last "recorded"
    arrived, which worker was killed, how many students are settled (recorded, through the kill,
    or failed) and when each saw the reveal."""

    crowd: list[Student] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    last_recorded: float = 0.0
    killed: str = ""
    settled: threading.Event = field(default_factory=threading.Event)
    seen: list[float] = field(default_factory=list)


async def answer_together(
    out: Outcome, base_url: str, code: str, students: int, window_s: float, run_dir: Path | None
) -> None:
    """Every student joins, then answers at a seeded moment within ``window_s``; with
    ``run_dir`` (the launcher's) the busiest worker is killed once half are recorded. Once all
    are settled (``out.settled``), each runs its live fragment until it sees the reveal."""
    rng = random.Random(SEED)
    out.crowd = [Student(base_url, code) for _ in range(students)]
    joined = await asyncio.gather(
        *(s.open(JOIN_TIMEOUT_S) for s in out.crowd), return_exceptions=True
    )
    out.errors += [f"join: {type(e).__name__}: {e}"[:160] for e in joined if e is not None]
    ready = [s for s, e in zip(out.crowd, joined, strict=True) if e is None]
    killed, kill_at, settled = asyncio.Event(), [], []
    start = time.monotonic()

    async def one(student: Student, at: float, choice: int) -> None:
        try:
            seconds = await student.answer(start + at, choice)
            if student.cut_s is None:
                out.latencies.append(seconds)
            out.last_recorded = max(out.last_recorded, time.monotonic())
            await student.stay(killed, kill_at)
        except Exception as exc:  # one student's failure is a reported error, not a crash
            out.errors.append(f"student: {type(exc).__name__}: {exc}"[:200])
            return
        finally:
            settled.append(student)
            if len(settled) == len(ready):
                out.settled.set()
        try:
            await student.see_reveal(out.seen, time.monotonic() + REVEAL_TIMEOUT_S)
        except Exception as exc:
            out.errors.append(f"reveal: {type(exc).__name__}: {exc}"[:200])

    async def kill() -> None:
        try:
            while sum(s.told is not None for s in ready) < len(ready) / 2:
                if time.monotonic() > start + window_s + ANSWER_TIMEOUT_S:
                    raise RuntimeError("half the class was never recorded")
                await asyncio.sleep(0.01)
            out.killed = kill_busiest(run_dir, ready)
            kill_at.append(time.monotonic())
        except Exception as exc:  # reported; the students go on
            out.errors.append(f"kill: {type(exc).__name__}: {exc}")
        finally:
            killed.set()

    plan = [(rng.uniform(0, window_s), rng.randrange(4)) for _ in ready]
    if run_dir is None:
        killed.set()
    if not ready:
        out.settled.set()
    crowd = [one(s, at, c) for s, (at, c) in zip(ready, plan, strict=True)]
    await asyncio.gather(*crowd, *([kill()] if run_dir is not None else []))
    await asyncio.gather(*(s.close() for s in out.crowd), return_exceptions=True)


def kill_busiest(run_dir: Path, crowd: list[Student]) -> str:
    """SIGKILL the worker whose cookie most connected students hold (the first on a tie)."""
    workers = read_state(run_dir)["workers"]
    holders = Counter(s.cookies.get(COOKIE) for s in crowd if s.connected)
    name = max(workers, key=lambda n: holders[n])
    os.kill(workers[name]["pid"], signal.SIGKILL)
    told = sum(s.told is not None for s in crowd)
    return (
        f"worker {name} (pid {workers[name]['pid']}) holding {holders[name]} of "
        f"{len(crowd)} students, after {told} were recorded"
    )


def start_app(
    workers: int, students: int, env: dict[str, str | None], packed: bool = True
) -> tuple[object, str, Path]:
    """The launcher (or one ``streamlit run`` for 0 workers) on a free port, with ``env``;
    ``packed``: ready once its Zopfli pass is done (a test's small class need not wait)."""
    port = live.free_port()
    run_dir = Path(tempfile.mkdtemp(prefix="normlab-class-"))
    if workers:
        seats = math.ceil((students + 1) / workers) + 2
        command = [sys.executable, "-m", "serve", "--workers", str(workers), "--seats", str(seats)]
        command += ["--port", str(port), "--address", "127.0.0.1", "--run-dir", str(run_dir)]
    else:
        command = live.streamlit_command(port)
    proc = live.start_server(command, port, own_session=True, log=run_dir / "server.log", env=env)
    url = f"http://127.0.0.1:{port}"
    wait_until_ready(url, run_dir if workers else None, time.monotonic() + READY_TIMEOUT_S, packed)
    return proc, url, run_dir


def run_class(
    students: int,
    workers: int,
    window_s: float,
    store: str | None,
    kill: bool = False,
    packed: bool = True,
) -> Report:
    """Start the app, run the class (``kill``: a worker killed mid-vote), measure; everything
    stopped afterwards, the server log's restarts, servers down and up, store failures kept."""
    data_dir = tempfile.mkdtemp(prefix="normlab-class-store-")
    env = {"NORMLAB_DATA_DIR": data_dir, "NORMLAB_CLASS_STORE": store}
    env["NORMLAB_CLIENT_CLASSES"] = "1e6"  # a Redis store outlives the run: a class a run adds up
    proc, url, run_dir = start_app(workers, students, env, packed)
    try:
        with live.chromium() as browser:
            report = measure(url, browser, students, window_s, env, run_dir if kill else None)
            report.workers = workers
    finally:
        live.stop_server(proc)
        log = (run_dir / "server.log").read_text(errors="replace").splitlines()
        shutil.rmtree(run_dir, ignore_errors=True)
        shutil.rmtree(data_dir, ignore_errors=True)
    report.events = [line.strip() for line in log if EVENTS.search(line)]
    return report


def measure(
    url: str, browser, students: int, window_s: float, env: dict, kill_in: Path | None = None
) -> Report:
    """One class on the app at ``url`` (whose store ``env`` names), the teacher's page opened in
    ``browser`` (Playwright, sync): the figures of the report. ``kill_in``, the launcher's run
    folder, has its busiest worker killed once half the class is recorded. Once every student is
    settled and the teacher's counts are complete, the teacher shows the answer to the class."""
    report = Report(students, 0, env.get("NORMLAB_CLASS_STORE") or "sqlite", window_s)
    teacher = browser.new_page(viewport={"width": 1400, "height": 1400})
    teacher.goto(f"{url}/{PAGE}?class=new&lang=en")
    teacher.wait_for_selector(live.READY, timeout=READY_TIMEOUT_S * 1000)
    teacher.wait_for_function("location.search.includes('teacher=')")
    code = teacher.evaluate("new URLSearchParams(location.search).get('class')")
    outcome = Outcome()
    # Playwright's sync API holds this thread's event loop: the students run in a thread of theirs.
    work = answer_together(outcome, url, code, students, window_s, kill_in)
    thread = threading.Thread(target=asyncio.run, args=(work,))
    thread.start()
    outcome.settled.wait(JOIN_TIMEOUT_S + window_s + RECOVER_TIMEOUT_S + ANSWER_TIMEOUT_S)
    told = sum(s.told is not None for s in outcome.crowd)
    if told:
        report.teacher_complete_s = measure_teacher(teacher, told, outcome.last_recorded)
    teacher.locator(".st-key-class_revealed button").click()
    revealed_at = time.monotonic()
    thread.join()
    teacher.close()
    summarise(report, outcome, code, env)
    report.saw_reveal = len(outcome.seen)
    report.reveal_s = max(outcome.seen, default=math.inf) - revealed_at
    report.pushed = sum(
        s.saw_at is not None and not any(revealed_at < t < s.saw_at for t in s.ticks)
        for s in outcome.crowd
    )
    return report


def measure_teacher(teacher, answers: int, last_recorded: float) -> float:
    """From the last "recorded" to the teacher's page, as it stands, counting every answer."""
    try:
        teacher.wait_for_function(
            "n => document.body.innerText.includes(`Answered so far: ${n} of`)",
            arg=answers,
            timeout=TEACHER_TIMEOUT_S * 1000,
            polling=50,
        )
    except Exception:  # not within the timeout: reported as never
        return math.inf
    return time.monotonic() - last_recorded


def check_store(
    told: Mapping[str, str], held: Mapping[str, str | None], total: int
) -> tuple[int, int]:
    """(lost, counted twice): the seats told their option is recorded that hold another or
    none; the answers the store counts beyond one per seat of the class that holds one."""
    lost = sum(held.get(seat) != option for seat, option in told.items())
    return lost, max(0, total - sum(option is not None for option in held.values()))


def summarise(report: Report, outcome: Outcome, code: str, env: dict) -> None:
    """What the students were told against what the store holds, seat by seat; latencies."""
    report.errors, report.killed = outcome.errors, outcome.killed
    store = open_store(LESSON, {k: v for k, v in env.items() if v is not None})
    seats = {s.token: seat_id(s.token, code) for s in outcome.crowd}
    told = {seats[s.token]: s.told for s in outcome.crowd if s.told is not None}
    held = {seat: store.answers(code, seat).get((1, 1)) for seat in seats.values()}
    report.recorded = len(told)
    report.lost, report.counted_twice = check_store(told, held, sum(store.counts(code, 1).values()))
    report.head_count = store.state(code).students
    moved = [s for s in outcome.crowd if s.reconnects]
    report.reconnected, report.busy = len(moved), sum(s.busy > 0 for s in moved)
    report.reconnect_max_s = max((s.reconnect_s for s in moved), default=math.nan)
    cut = [s.cut_s for s in outcome.crowd if s.cut_s is not None and s.told is not None]
    report.cut, report.cut_max_s = len(cut), max(cut, default=math.nan)
    if outcome.latencies:
        report.p95_s = float(np.percentile(outcome.latencies, 95))
        report.max_s = float(max(outcome.latencies))


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--class", dest="students", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--window", type=float, default=DEFAULT_WINDOW_S)
    parser.add_argument("--store", default=None, help="redis://host:port/db (default: SQLite)")
    parser.add_argument(
        "--kill-mid-vote",
        action="store_true",
        help="SIGKILL the worker holding the most students once half are recorded (2+ workers)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)
    if args.kill_mid_vote and args.workers < 2:
        parser.error("--kill-mid-vote needs --workers 2 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    report = run_class(args.students, args.workers, args.window, args.store, args.kill_mid_vote)
    print("\n".join(report.lines()))
    if args.json is not None:
        args.json.write_text(json.dumps(asdict(report), indent=2))
    return 0 if report.passed() else 1


if __name__ == "__main__":
    sys.exit(main())
