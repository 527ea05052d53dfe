"""The class benchmark (``benchmarks/classroom.py``): its pass rule, the store checked seat by seat
(answers lost, counted twice, the head count) on a real store with no server, and the benchmark
in small through the launcher with a worker killed mid-vote
(``tests/labs/lesson/test_browser_classroom.py`` runs it on its own server without a kill)."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest

from benchmarks.class_student import Student, said_recorded
from benchmarks.classroom import (
    Outcome,
    Report,
    check_store,
    parse,
    run_class,
    summarise,
)
from benchmarks.live import CHROMIUM
from benchmarks.ws_visitor import Run
from labs.lesson.class_section import seat_id
from labs.lesson.options import LESSON, OPTIONS, STEP_IDS
from serve.classroom.backends import open_store
from tests.serve_util import need_haproxy

STEP = STEP_IDS[0]
GOOD = dict(recorded=60, head_count=60, lost=0, counted_twice=0, p95_s=0.5, teacher_complete_s=2.0)
GOOD.update(saw_reveal=60, reveal_s=1.5)


def test_the_report_fails_on_a_lost_answer_a_second_seat_or_a_slow_teacher() -> None:
    good = Report(60, 2, "sqlite", 10.0, **GOOD)
    assert good.passed()
    bad = [{"lost": 1}, {"teacher_complete_s": 3.5}, {"p95_s": 1.2}, {"recorded": 59}]
    bad += [{"errors": ["student: not recorded"]}, {"teacher_complete_s": float("inf")}]
    bad += [{"counted_twice": 1}, {"head_count": 61}, {"head_count": 59}]
    bad += [{"saw_reveal": 59}, {"reveal_s": 2.5}, {"reveal_s": float("inf")}]
    for change in bad:
        assert not Report(**{**good.__dict__, **change}).passed(), change
    lines = Report(**{**good.__dict__, "lost": 1, "counted_twice": 2, "head_count": 61}).lines()
    assert {"answers lost: 1 (target 0)", "counted twice: 2 (target 0)"} <= set(lines)
    assert "head count: 61 (target 60)" in lines and lines[-1] == "FAIL"
    assert not any(line.startswith("killed") for line in good.lines())
    killed = Report(**{**good.__dict__, "killed": "worker w1 (pid 7)", "reconnected": 30})
    assert killed.passed() and "killed mid-vote: worker w1 (pid 7)" in killed.lines()
    assert any(line.startswith("reconnected: 30 students") for line in killed.lines())


def test_lost_and_counted_twice_are_told_against_held_seat_by_seat() -> None:
    told = {"s1": "a", "s2": "b", "s3": "c"}
    assert check_store(told, {"s1": "a", "s2": "b", "s3": "c"}, total=3) == (0, 0)
    # Held under another option, or not at all: lost, even where the counts would add up.
    assert check_store(told, {"s1": "a", "s2": "c", "s3": None}, total=3) == (2, 1)
    assert check_store(told, {"s1": "a", "s2": "b", "s3": "c", "s4": None}, total=4) == (0, 1)


def test_the_page_s_recorded_line_gives_its_letter() -> None:
    run = Run(alerts=["You are in class **X**, seat 1.", "Your answer **C** is recorded."])
    assert said_recorded(run) == "C"
    assert (
        said_recorded(Run(alerts=["Not recorded yet: the class store cannot be reached."])) is None
    )


def class_with(tmp_path: Path, told: list[str | None], held: list[str | None]):
    """A class in a real store: a student per entry of ``told`` (what the page said), each
    seat holding its ``held`` answer (None: joined, no answer); (outcome, code, env, store)."""
    env = {"NORMLAB_DATA_DIR": str(tmp_path), "NORMLAB_CLASS_STORE": None}
    store = open_store(LESSON, {"NORMLAB_DATA_DIR": str(tmp_path)})
    code, _ = store.create("teacher")
    crowd = [Student("http://unused", code) for _ in told]
    for student, said, answer in zip(crowd, told, held, strict=True):
        student.told = said
        store.join(code, seat_id(student.token, code), "127.0.0.1")
        if answer is not None:
            store.answer(code, seat_id(student.token, code), 1, answer)
    return Outcome(crowd), code, env, store


def test_the_store_is_read_seat_by_seat(tmp_path: Path) -> None:
    a, b, c, _ = OPTIONS[STEP]
    outcome, code, env, _ = class_with(tmp_path, [a, b, c], [a, b, c])
    report = Report(3, 2, "sqlite", 1.0, p95_s=0.1, teacher_complete_s=1.0, saw_reveal=3)
    report.reveal_s = 1.0
    summarise(report, outcome, code, env)
    assert (report.recorded, report.lost, report.counted_twice, report.head_count) == (3, 0, 0, 3)
    assert report.passed()


def test_a_lost_answer_and_a_second_seat_fail(tmp_path: Path) -> None:
    a, b, c, _ = OPTIONS[STEP]
    # The second student's answer is not in its seat (another option), the third's is missing;
    # the first also got a second seat (a browser that lost its cookie), which answered.
    outcome, code, env, store = class_with(tmp_path, [a, b, c], [a, c, None])
    store.join(code, seat_id("f" * 32, code), "127.0.0.1")
    store.answer(code, seat_id("f" * 32, code), 1, a)
    report = Report(3, 2, "sqlite", 1.0, p95_s=0.1, teacher_complete_s=1.0)
    summarise(report, outcome, code, env)
    assert (report.lost, report.counted_twice, report.head_count) == (2, 1, 4)
    assert not report.passed()


def test_the_issue_s_command_line_is_the_default() -> None:
    args = parse(["--workers", "2", "--class", "60"])
    assert (args.workers, args.students, args.window, args.store) == (2, 60, 10.0, None)
    assert not args.kill_mid_vote and parse(["--kill-mid-vote"]).kill_mid_vote
    with pytest.raises(SystemExit):
        parse(["--workers", "1", "--kill-mid-vote"])


@pytest.mark.slow
@pytest.mark.browser
def test_a_worker_killed_mid_vote_loses_and_doubles_nothing() -> None:
    need_haproxy()
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    # In a thread of its own: Playwright's sync API may already hold this thread's event loop
    # (the session's browser, when this file shares its process with browser tests).
    box: list = []
    thread = threading.Thread(
        target=lambda: box.append(
            run_class(students=6, workers=2, window_s=3, store=None, kill=True, packed=False)
        )
    )
    thread.start()
    thread.join()
    report = box[0]
    assert report.errors == [], report.lines()
    assert report.killed.startswith("worker w"), report.lines()
    assert (report.recorded, report.lost, report.counted_twice, report.head_count) == (6, 0, 0, 6)
    assert report.reconnected >= 1
    assert any("exited with -9" in line for line in report.events), report.events
    assert math.isfinite(report.teacher_complete_s)
    # The teacher's reveal reached every student's page, through its live fragment's timed runs.
    assert report.saw_reveal == 6 and report.reveal_s < 30, report.lines()


class _Feed:
    """A websocket that hands out the given messages, then waits for more (none come)."""

    def __init__(self, messages: list) -> None:
        self.messages = [m.SerializeToString() for m in messages]

    async def recv(self) -> bytes:
        import asyncio

        if not self.messages:
            await asyncio.sleep(3600)
        return self.messages.pop(0)

    async def send(self, data: bytes) -> None:
        pass


def test_a_reveal_drawn_by_a_run_that_finished_early_is_seen() -> None:
    """Streamlit marks a run whose messages were still queued when the next run began as
    finished early for that rerun; the browser keeps what it drew. A student whose page drew
    the answer in such a run, then ran its timed fragment, has seen the reveal."""
    import asyncio
    import time

    from benchmarks.st_private import protos

    forward = protos().ForwardMsg

    def message(**fields) -> object:
        msg = forward()
        if "alert" in fields:
            msg.delta.new_element.alert.body = fields["alert"]
        elif "finished" in fields:
            msg.script_finished = fields["finished"]
        else:
            msg.new_session.page_script_hash = "lesson"
        return msg

    early, fragment = forward.FINISHED_EARLY_FOR_RERUN, forward.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
    student = Student("http://unused", "ABC123")
    student.live, student.shown_at = ("watch", 60.0), time.monotonic()
    student.conn = _Feed(
        [message(), message(alert="The numbers say **B**."), message(finished=early)]
        + [message(), message(finished=fragment)]
    )
    seen: list[float] = []

    async def watch() -> None:
        try:
            await student.see_reveal(seen, time.monotonic() + 30.0)
        finally:
            for task in student.live_tasks:
                task.cancel()

    reader = threading.Thread(target=asyncio.run, args=(watch(),))  # a loop of its own, as the
    reader.start()  # benchmark's students have (AppTest may leave one running in this thread)
    reader.join()
    assert len(seen) == 1
