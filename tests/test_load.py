"""Short runs of the load script: over the websocket (3 visitors x 5 interactions), in real
headless Chromium (2 x 3), and through the launcher with two workers: one killed under four
visitors, and a stress run with more visitors than seats. Each starts what it drives, stops by
itself and reports every number it promises; the pure parts (percentiles, verdict, reading the
chart, the cookie jar) are checked on their own."""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.live import CHROMIUM
from benchmarks.load import Options
from benchmarks.load_report import Report, rss_target_mb, summarise
from benchmarks.target import Failover
from benchmarks.visitors import THINK_JITTER
from benchmarks.ws_visitor import Cookies, WsVisitor, chart_state, ws_url
from serve.config import COOKIE, RETRY_S
from tests.serve_util import need_haproxy

ROOT = Path(__file__).resolve().parent.parent
# A few visitors cost a few seconds each on an idle machine; the deadline leaves room for a loaded
# one, and the subprocess limit is beyond the script's own deadline plus its shutdown grace.
DEADLINE_S = 150
LIMIT_S = DEADLINE_S + 60


def run_script(out: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.load", *args, "--timeout", str(DEADLINE_S)]
        + ["--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )
    assert out.exists(), done.stderr[-2000:]
    return done, json.loads(out.read_text())


def check_report(done: subprocess.CompletedProcess, report: dict, client: str, n: int, m: int):
    # 0 is PASS, 1 is FAIL against the latency or memory targets (this machine may be loaded);
    # anything else is a crash of the script itself.
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert report["client"] == client
    assert report["visitors"] == n
    assert report["interactions_planned"] == n * m
    assert report["interactions_done"] == n * m
    assert report["errors"] == 0, report["error_samples"]
    assert not report["deadline_hit"]
    assert 0 < report["p50_s"] <= report["p95_s"] <= report["max_s"] < DEADLINE_S
    # A Streamlit server with numpy, torch and plotly loaded holds well over 50 MB.
    assert 50 < report["peak_rss_mb"] < 4096
    assert report["rss_target_mb"] == rss_target_mb(report["workers"])
    assert report["passed"] == (done.returncode == 0)
    # Another edit of the app's sources during the run voids it (see load_report.Report).
    assert report["source_changes"] == 0
    for label in (
        "client",
        "visitors",
        "think time",
        "errors",
        "latency p50",
        "latency p95",
        "latency max",
        "peak RSS",
        "target",
        "result",
    ):
        assert label in done.stdout
    assert ("PASS" if report["passed"] else "FAIL") in done.stdout


def smoke(*args: str, haproxy: bool = False, chromium: bool = False):
    """A module fixture: one run of the load script with ``args``, as (process, report); skipped
    without HAProxy (``haproxy``) or Debian's Chromium (``chromium``)."""

    @pytest.fixture(scope="module")
    def run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict]:
        """The load script run once for this module: (process, report)."""
        if haproxy:
            need_haproxy()
        if chromium and not Path(CHROMIUM).exists():
            pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
        return run_script(tmp_path_factory.mktemp("load") / "report.json", *args)

    return run


# A short think time keeps the smoke run quick and still takes the pause's path.
ws_smoke = smoke("--visitors", "3", "--interactions", "5", "--think", "0.2")
browser_smoke = smoke(
    *("--client", "browser", "--visitors", "2", "--interactions", "3", "--think", "0"),
    chromium=True,
)
failover_smoke = smoke(
    *("--workers", "2", "--visitors", "4", "--interactions", "6", "--think", "0.5"),
    *("--kill-after", "1"),
    haproxy=True,
)
# Two workers of one seat each and four visitors who never pause: two wait for a seat.
overload_smoke = smoke(
    *("--workers", "2", "--seats", "1", "--visitors", "4", "--interactions", "3"),
    *("--think", "0"),
    haproxy=True,
)


@pytest.mark.slow
def test_failover_smoke_restores_every_moved_view(failover_smoke) -> None:
    done, report = failover_smoke
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert report["target"].startswith("python -m serve: 2 workers")
    assert report["killed"] in ("w1", "w2")
    # Everyone on the killed worker moved, and nobody was left with a broken page: a view that
    # did not come back would be an error.
    assert report["errors"] == 0, report["error_samples"]
    assert 1 <= report["moved_visitors"] <= report["killed_holding"]
    assert report["views_restored"] >= report["moved_visitors"]
    assert report["interactions_done"] + report["failed_in_flight"] == 4 * 6
    assert report["failed_in_flight"] <= report["moved_visitors"]
    assert 0 < report["recovery_max_s"] < DEADLINE_S
    assert 0 < report["worker_back_s"] < DEADLINE_S
    assert "failover      killed" in done.stdout


@pytest.mark.slow
def test_overload_smoke_answers_busy_at_once_and_seats_everyone_later(overload_smoke) -> None:
    done, report = overload_smoke
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert report["think_s"] == 0 and report["seats"] == 1
    assert report["busy_visitors"] == 2
    assert report["busy_answers"] >= 2
    # A clear answer, not a hung page: each busy page arrived (a request left waiting for a seat
    # would have run into the load timeout and counted as an error).
    assert 0 < report["busy_answer_max_s"] < Options().load_timeout_s
    # Each waiting visitor tried again when the page said, and got in.
    assert report["busy_wait_max_s"] >= RETRY_S
    assert report["errors"] == 0, report["error_samples"]
    assert report["interactions_done"] == 4 * 3
    assert "busy answers  " in done.stdout


@pytest.mark.slow
def test_ws_smoke_run_has_no_errors_and_reports_every_number(ws_smoke) -> None:
    done, report = ws_smoke
    check_report(done, report, "ws", 3, 5)
    assert "client        ws" in done.stdout
    assert report["think_s"] == 0.2 and "0.2 s +-50%" in done.stdout


@pytest.mark.slow
@pytest.mark.browser
def test_browser_smoke_run_has_no_errors_and_reports_every_number(browser_smoke) -> None:
    done, report = browser_smoke
    check_report(done, report, "browser", 2, 3)


def test_chart_state_reads_plotly_binary_and_plain_arrays() -> None:
    y = np.random.default_rng(0).normal(size=5)
    packed = {"dtype": "f8", "bdata": base64.b64encode(y.tobytes()).decode()}
    spec = {"data": [{"name": "x", "y": [9.0]}, {"name": "RMSNorm(x)", "y": packed}]}
    length, first = chart_state(json.dumps(spec))
    assert length == 5
    np.testing.assert_allclose(first, y[0], rtol=0, atol=0)
    plain = {"data": [{"name": "RMSNorm(x)", "y": y.tolist()}]}
    assert chart_state(json.dumps(plain)) == (5, float(y[0]))
    assert chart_state(json.dumps({"data": [{"name": "x", "y": [1.0]}]})) is None


def test_percentiles_and_verdict_follow_the_latencies() -> None:
    class Stub:
        def __init__(self, latencies: list[float], errors: list[str]) -> None:
            self.latencies, self.errors = latencies, errors

    crowd = [Stub([0.1, 0.2, 0.3, 0.4], []), Stub([0.5, 0.6, 0.7, 2.0], [])]
    report = summarise(Report(visitors=2, interactions_planned=8), crowd, 4)
    assert report.interactions_done == 8 and report.errors == 0
    assert math.isclose(report.p50_s, 0.45) and report.max_s == 2.0
    assert math.isclose(report.p95_s, 0.7 + 0.65 * (2.0 - 0.7))
    assert not report.passed  # p95 above 1 s
    crowd = [Stub([0.1, 0.2], ["visitor 0: slider #3 failed"]), Stub([], [])]
    report = summarise(Report(visitors=2, interactions_planned=6), crowd, 3)
    # One failed interaction and three never reached (the second visitor did not load).
    assert report.errors == 4 and not report.passed


def test_the_cookie_jar_keeps_what_the_proxy_and_the_app_set() -> None:
    from email.message import Message

    jar = Cookies()
    assert jar.header() == {}
    answer = Message()
    answer["Set-Cookie"] = f"{COOKIE}=w1; path=/; HttpOnly; SameSite=Lax"
    answer["Set-Cookie"] = "_streamlit_xsrf=2|ab|cd|1; Path=/; SameSite=Lax"
    jar.update(answer)
    assert jar.get(COOKIE) == "w1"
    # A redispatch sets the cookie again: the new worker replaces the old one.
    moved = Message()
    moved["Set-Cookie"] = f"{COOKIE}=w2; path=/"
    jar.update(moved)
    assert jar.header() == {"Cookie": f"{COOKIE}=w2; _streamlit_xsrf=2|ab|cd|1"}


def test_websocket_address_follows_the_page_address() -> None:
    assert ws_url("http://127.0.0.1:8501") == "ws://127.0.0.1:8501/_stcore/stream"
    assert ws_url("https://demo.example/normlab/") == "wss://demo.example/normlab/_stcore/stream"


def test_memory_target_grows_with_the_workers() -> None:
    assert rss_target_mb(0) == rss_target_mb(1) == 800
    assert rss_target_mb(2) == 1200


def test_failover_and_busy_numbers_reach_the_report() -> None:
    class Stub:
        def __init__(self, restored: list[float], failed: list[str], busy: list[float]) -> None:
            # Two interactions each: one visitor lost one in flight.
            self.latencies, self.errors = [0.1, 0.2][len(failed) :], []
            self.restored_at, self.failed, self.busy_answers = restored, failed, busy
            self.busy_wait_s = 5.5 if busy else 0.0

    failover = Failover(Path("."), 1.0)
    failover.killed, failover.holding, failover.kill_at, failover.back_s = "w1", 2, 100.0, 3.0
    crowd = [Stub([100.4], ["visitor 0: slider #2"], []), Stub([101.2], [], [0.01, 0.02])]
    crowd.append(Stub([], [], []))
    report = summarise(Report(visitors=3, interactions_planned=6), crowd, 2, failover=failover)
    assert report.failed_in_flight == 1 and report.errors == 0
    assert report.moved_visitors == 2 and report.views_restored == 2
    assert math.isclose(report.recovery_max_s, 1.2)
    assert report.busy_answers == 2 and report.busy_visitors == 1
    assert report.busy_answer_max_s == 0.02 and report.busy_wait_max_s == 5.5
    assert report.passed
    text = "\n".join(report.lines())
    assert "killed w1, which held 2 visitors; 1 interactions failed in flight" in text
    assert "busy answers  2 to 1 visitors" in text


def test_think_pauses_are_seeded_and_within_the_jitter() -> None:
    first, again = (
        WsVisitor(3, "ws://x", 1.0, 1.0, 2.0),
        WsVisitor(3, "ws://x", 1, 1, 2.0),
    )
    draws = first.rng.uniform(1 - THINK_JITTER, 1 + THINK_JITTER, size=50)
    np.testing.assert_allclose(
        draws, again.rng.uniform(1 - THINK_JITTER, 1 + THINK_JITTER, size=50), rtol=0
    )
    assert draws.min() >= 0.5 and draws.max() <= 1.5 and draws.std() > 0.1
    other = WsVisitor(4, "ws://x", 1.0, 1.0, 2.0).rng.uniform(size=50)
    assert not np.allclose(other, WsVisitor(3, "ws://x", 1, 1, 2.0).rng.uniform(size=50))


def test_a_run_during_a_source_edit_does_not_pass() -> None:
    class Stub:
        def __init__(self, changed: bool) -> None:
            self.latencies, self.errors, self.source_changed = [0.1, 0.2], [], changed

    report = summarise(Report(visitors=2, interactions_planned=4), [Stub(False)] * 2, 2)
    assert report.passed and report.source_changes == 0
    assert not any(line.startswith("sources") for line in report.lines())
    report = summarise(Report(visitors=2, interactions_planned=4), [Stub(True), Stub(False)], 2)
    assert not report.passed and report.source_changes == 1
    assert any(line.startswith("sources") for line in report.lines())


def test_a_page_switch_cut_short_is_made_again_after_the_view_comes_back() -> None:
    """The worker dies while the visitor switches back to the explorer: the view restored is
    the lesson it left, so the switch is made again before the next slider move (it moved the
    explorer's slider on the lesson page: KeyError 'offset', the harness's error, not the app's)."""
    import asyncio
    import threading

    from benchmarks.visitors import CYCLE, Visitor, WorkerLost

    class Fake(Visitor):
        page, lost = "explorer", False

        async def open(self) -> None:
            self.page = "explorer"

        async def slider(self) -> None:
            if self.page != "explorer":
                raise KeyError("offset")
            self.latencies.append(0.0)

        async def width_change(self) -> None:
            await self.slider()

        async def switch(self, topic: str) -> None:
            if topic == "explorer" and not self.lost:
                self.lost = True  # the worker dies in flight: the page stays the lesson
                raise WorkerLost
            self.page = topic
            self.latencies.append(0.0)

        async def recover(self) -> None:
            self.restored_at.append(0.0)

        async def shows_exception(self) -> bool:
            return False

    visitor = Fake(1, "http://x", 1.0, 1.0, think_s=0.0)
    # A thread of its own: a browser test in this process may have an event loop running here.
    runner = threading.Thread(target=lambda: asyncio.run(visitor.run(len(CYCLE))))
    runner.start()
    runner.join(30)
    assert visitor.errors == [] and len(visitor.failed) == 1 and visitor.page == "explorer"
