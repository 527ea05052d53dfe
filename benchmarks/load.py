"""A class opening the demo at once: N visitors, each making M interactions, against one server.

Run ``python -m benchmarks.load --visitors 20 --interactions 20 --timeout 300``. What it drives:

(default)
    ``streamlit run app.py`` on a free loopback port: one process.
``--workers N``
    The launcher, ``python -m serve --workers N``: N Streamlit workers behind HAProxy on a free
    loopback port, ``--seats`` visitors each.
``--url URL``
    A server already running anywhere; nothing is started and no memory is measured.

The visitors (``benchmarks/visitors.py``) each open the explorer from their own link and repeat
the same cycle of interactions, pausing ``--think`` seconds (default 1.0, scaled by a seeded
factor in [0.5, 1.5]) before each one; ``--think 0`` sends every interaction the moment the last
one finished, a stress test rather than a class. ``--client ws`` (the default) speaks Streamlit's
websocket protocol and keeps the proxy's cookie as a browser does; ``--client browser`` uses
headless Chromium pages instead. An interaction's latency runs from the message sent (or key
pressed) until the run has finished with the result in place. Errors are exceptions shown on a
page, runs that did not finish successfully, JavaScript errors, lost connections, interactions
that did not finish within ``--step-timeout``, and visitors who found no seat within
``--load-timeout``. A source edit during the run reloads modules under the running sessions, so
such a run is reported and does not pass.

Failover: ``--kill-after S`` (with ``--workers`` of 2 or more) sends SIGKILL, S seconds after
every visitor has loaded the page, to the worker whose cookie most visitors hold. Its visitors
reconnect, send the link of the view they had (no widget values) and check that the same page
and chart come back. The report counts the interactions in flight when the worker died, the
views restored, the longest time from the kill to a restored view, and when the launcher had
the worker answering again.

Overload: with more visitors than seats, the proxy answers new visitors with its busy page; a
visitor waits what its ``Retry-After`` says and tries again, as the page does itself. The report
counts the busy answers, the slowest of them (a clear answer, not a hung page) and the longest
wait for a seat.

Capacity: ``--sweep 10,20,30`` runs once per visitor count and prints the largest count that
kept 0 errors and p95 <= 1 s. Memory is the resident set of the process started and all its
children (launcher, HAProxy, workers), sampled every 0.2 s from ``/proc``. A global deadline
bounds every run; at the deadline every visitor stops and the server is killed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.live import (
    CHROMIUM,
    CHROMIUM_ARGS,
    free_port,
    start_server,
    stop_server,
    streamlit_command,
    wait_for_health,
)
from benchmarks.visitors import (
    DEFAULT_THINK_S,
    THINK_JITTER,
    BrowserVisitor,
    Visitor,
    WsVisitor,
    chart_state,
)
from serve.config import COOKIE, DEFAULT_SEATS
from serve.launcher import is_healthy, read_state

__all__ = ["CHROMIUM", "THINK_JITTER", "Report", "WsVisitor", "chart_state", "main", "run_load"]

CLIENTS = ("ws", "browser")

# Targets from the project issues, on the 2-core reference box: 20 visitors x 20 interactions on
# one process, 40 x 20 on the launcher with two workers.
TARGET_P95_S = 1.0
TARGET_ERRORS = 0
# 800 MB for one process; the launcher gets 400 MB per worker plus 400 MB (1.2 GB for two).
RSS_PER_WORKER_MB = 400.0
RSS_PERIOD_S = 0.2
# After the global deadline the server gets this long to exit on SIGTERM before SIGKILL.
SHUTDOWN_GRACE_S = 5.0
# How often the failover run asks whether the killed worker answers again.
BACK_POLL_S = 0.2


def rss_target_mb(workers: int) -> float:
    """The memory target: one process (``workers`` 0) or the launcher with ``workers``."""
    return RSS_PER_WORKER_MB * (max(workers, 1) + 1)


@dataclass
class Report:
    visitors: int
    interactions_planned: int
    client: str = "ws"
    think_s: float = DEFAULT_THINK_S
    # "streamlit run app.py", "launcher, N workers" or the URL driven.
    target: str = "streamlit run app.py"
    workers: int = 0
    seats: int = 0
    interactions_done: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    p50_s: float = float("nan")
    p95_s: float = float("nan")
    max_s: float = float("nan")
    # NaN when the server was not started here (``--url``).
    peak_rss_mb: float = float("nan")
    rss_target_mb: float = rss_target_mb(0)
    wall_s: float = 0.0
    deadline_hit: bool = False
    # Sessions the server told that the app's sources changed on disk during the run.
    source_changes: int = 0
    # Overload: busy pages answered, to how many visitors, the slowest answer, the longest wait.
    busy_answers: int = 0
    busy_visitors: int = 0
    busy_answer_max_s: float = float("nan")
    busy_wait_max_s: float = 0.0
    # Failover: the worker killed, the visitors it held, what happened to them.
    killed: str = ""
    killed_holding: int = 0
    moved_visitors: int = 0
    failed_in_flight: int = 0
    failed_samples: list[str] = field(default_factory=list)
    views_restored: int = 0
    recovery_max_s: float = float("nan")
    worker_back_s: float = float("nan")
    # The launcher's log: workers restarted, HAProxy's servers marked DOWN or UP.
    launcher_events: list[str] = field(default_factory=list)
    passed: bool = False

    def lines(self) -> list[str]:
        verdict = "PASS" if self.passed else "FAIL"
        if self.think_s > 0:
            jitter = f"+-{THINK_JITTER:.0%}"
            think = f"{self.think_s:g} s {jitter} before each interaction (not in the latency)"
        else:
            think = "0 s (stress test: each interaction sent as the last one finished)"
        if math.isnan(self.peak_rss_mb):
            rss = "not measured (a server this script did not start)"
        else:
            rss = (
                f"{self.peak_rss_mb:.0f} MB, all processes (target <= {self.rss_target_mb:.0f} MB)"
            )
        lines = [
            f"target        {self.target}",
            f"client        {self.client}",
            f"visitors      {self.visitors}",
            f"think time    {think}",
            f"interactions  {self.interactions_done} of {self.interactions_planned}",
            f"errors        {self.errors} (target {TARGET_ERRORS})",
            f"latency p50   {self.p50_s * 1e3:.0f} ms",
            f"latency p95   {self.p95_s * 1e3:.0f} ms (target <= {TARGET_P95_S * 1e3:.0f} ms)",
            f"latency max   {self.max_s * 1e3:.0f} ms",
            f"peak RSS      {rss}",
            f"wall time     {self.wall_s:.1f} s" + (" (deadline hit)" if self.deadline_hit else ""),
        ]
        if self.busy_answers:
            lines.append(
                f"busy answers  {self.busy_answers} to {self.busy_visitors} visitors, slowest "
                f"{self.busy_answer_max_s * 1e3:.0f} ms; longest wait for a seat "
                f"{self.busy_wait_max_s:.1f} s"
            )
        if self.killed:
            lines += [
                f"failover      killed {self.killed}, which held {self.killed_holding} visitors; "
                f"{self.failed_in_flight} interactions failed in flight",
                f"              {self.views_restored} views restored, {self.moved_visitors} "
                f"visitors moved; longest kill-to-restored-view {self.recovery_max_s:.2f} s; "
                f"{self.killed} answering again after {self.worker_back_s:.1f} s",
            ]
        downs = sum(" is DOWN" in event for event in self.launcher_events)
        if self.launcher_events:
            lines.append(
                f"launcher log  {len(self.launcher_events)} events, {downs} servers marked DOWN"
            )
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


class Failover:
    """``after_s`` seconds after every visitor's first load, SIGKILL the worker whose cookie
    most visitors hold, then time how long the launcher takes to have it answering again."""

    def __init__(self, run_dir: Path, after_s: float) -> None:
        self.run_dir, self.after_s = run_dir, after_s
        self.killed, self.holding = "", 0
        self.kill_at = self.back_s = float("nan")

    async def __call__(self, crowd: Sequence[WsVisitor]) -> None:
        await asyncio.gather(*(v.loaded.wait() for v in crowd))
        await asyncio.sleep(self.after_s)
        workers = read_state(self.run_dir)["workers"]
        # Visitors still connected: one that finished its interactions has left.
        holders = Counter(v.cookies.get(COOKIE) for v in crowd if v.conn is not None)
        self.killed = max(workers, key=lambda name: holders[name])
        self.holding = holders[self.killed]
        os.kill(workers[self.killed]["pid"], signal.SIGKILL)
        self.kill_at = time.monotonic()
        url = f"http://127.0.0.1:{workers[self.killed]['port']}"
        while not await asyncio.to_thread(is_healthy, url):
            await asyncio.sleep(BACK_POLL_S)
        self.back_s = time.monotonic() - self.kill_at


async def until_deadline(
    crowd: Sequence[Visitor], interactions: int, deadline: float, extra: Sequence = ()
) -> bool:
    """Run every visitor (and ``extra`` coroutines) at once; whether ``deadline`` stopped them."""
    remaining = max(1.0, deadline - time.monotonic())
    try:
        await asyncio.wait_for(
            asyncio.gather(*(v.run(interactions) for v in crowd), *extra), timeout=remaining
        )
    except TimeoutError:
        return True
    return False


@asynccontextmanager
async def ws_crowd(
    base_url: str, visitors: int, timeouts: tuple[float, float], think_s: float
) -> AsyncIterator[list[WsVisitor]]:
    """Websocket visitors; their connections are closed on leaving."""
    crowd = [WsVisitor(number, base_url, *timeouts, think_s) for number in range(visitors)]
    try:
        yield crowd
    finally:
        await asyncio.gather(*(v.close() for v in crowd), return_exceptions=True)


@asynccontextmanager
async def browser_crowd(
    base_url: str, visitors: int, timeouts: tuple[float, float], think_s: float
) -> AsyncIterator[list[BrowserVisitor]]:
    """Visitors in headless Chromium, a browser context each; the browser closes on leaving."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            crowd = []
            for number in range(visitors):
                context = await browser.new_context(viewport={"width": 1280, "height": 900})
                crowd.append(BrowserVisitor(context, number, base_url, *timeouts, think_s))
            yield crowd
        finally:
            await browser.close()


# The visitors of each of CLIENTS.
CROWDS = {"ws": ws_crowd, "browser": browser_crowd}


async def drive_crowd(
    client: str,
    base_url: str,
    visitors: int,
    interactions: int,
    timeouts: tuple[float, float],
    deadline: float,
    think_s: float,
    failover: Failover | None = None,
) -> tuple[list[Visitor], bool]:
    """Run every visitor of ``client``'s class at once until done or ``deadline`` (and
    ``failover`` beside them; the command line allows it with the ws client only); ``timeouts``
    are (step, load) s."""
    async with CROWDS[client](base_url, visitors, timeouts, think_s) as crowd:
        extra = [failover(crowd)] if failover is not None else []
        return crowd, await until_deadline(crowd, interactions, deadline, extra)


def summarise(
    report: Report, crowd: Sequence, interactions: int, failover: Failover | None = None
) -> Report:
    """Fill ``report`` from each visitor's latencies, errors, failures, busy answers."""
    latencies = np.array([s for v in crowd for s in v.latencies])
    errors = [e for v in crowd for e in v.errors]
    failed = [f for v in crowd for f in getattr(v, "failed", [])]
    report.source_changes = sum(bool(getattr(v, "source_changed", False)) for v in crowd)
    unfinished = report.visitors * interactions - len(latencies) - len(errors) - len(failed)
    report.interactions_done = len(latencies)
    # Interactions never reached (deadline, a visitor that could not load) are errors too.
    report.errors = len(errors) + max(0, unfinished)
    report.error_samples = errors[:10]
    if latencies.size:
        report.p50_s = float(np.percentile(latencies, 50))
        report.p95_s = float(np.percentile(latencies, 95))
        report.max_s = float(latencies.max())
    busy = [getattr(v, "busy_answers", []) for v in crowd]
    report.busy_answers = sum(len(b) for b in busy)
    report.busy_visitors = sum(bool(b) for b in busy)
    if report.busy_answers:
        report.busy_answer_max_s = max(max(b) for b in busy if b)
        report.busy_wait_max_s = max(getattr(v, "busy_wait_s", 0.0) for v in crowd)
    if failover is not None:
        summarise_failover(report, crowd, failed, failover)
    report.passed = (
        report.errors <= TARGET_ERRORS
        and latencies.size > 0
        and report.p95_s <= TARGET_P95_S
        and not report.peak_rss_mb > report.rss_target_mb  # NaN (not measured) passes
        and not report.source_changes
        and (failover is None or report.moved_visitors > 0)
    )
    return report


def summarise_failover(
    report: Report, crowd: Sequence, failed: list[str], failover: Failover
) -> None:
    restored = [t for v in crowd for t in getattr(v, "restored_at", [])]
    report.killed, report.killed_holding = failover.killed, failover.holding
    report.failed_in_flight, report.failed_samples = len(failed), failed[:10]
    report.views_restored = len(restored)
    report.moved_visitors = sum(bool(getattr(v, "restored_at", [])) for v in crowd)
    after_kill = [t - failover.kill_at for t in restored if t >= failover.kill_at]
    report.recovery_max_s = max(after_kill, default=float("nan"))
    report.worker_back_s = failover.back_s


def start_target(workers: int, seats: int, port: int) -> tuple[subprocess.Popen, Path | None]:
    """``streamlit run app.py``, or the launcher with ``workers`` and its run folder."""
    if not workers:
        return start_server(streamlit_command(port), port, own_session=True), None
    run_dir = Path(tempfile.mkdtemp(prefix="normlab-load-"))
    command = [sys.executable, "-m", "serve", "--workers", str(workers), "--seats", str(seats)]
    command += ["--port", str(port), "--address", "127.0.0.1", "--run-dir", str(run_dir)]
    # The launcher's log (workers restarted, HAProxy's servers going DOWN and UP) for the report.
    log = run_dir / "launcher.log"
    return start_server(command, port, own_session=True, log=log), run_dir


def launcher_events(log: Path) -> list[str]:
    """The launcher's restarts and HAProxy's servers going DOWN or coming UP, from its log."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return []
    keep = re.compile(r"Server sessions/\S+ is (DOWN|UP)|exited with")
    return [line.strip() for line in lines if keep.search(line)]


def wait_until_ready(base_url: str, run_dir: Path | None, deadline: float) -> None:
    """The launcher writes ``state.json`` once its workers answer and HAProxy runs."""
    while run_dir is not None and not (run_dir / "state.json").exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the launcher did not start before the deadline")
        time.sleep(0.2)
    wait_for_health(base_url, timeout=max(0.0, deadline - time.monotonic()))


@dataclass
class Options:
    """How to run: the client, the pauses, the timeouts, the target and the failover."""

    client: str = "ws"
    think_s: float = DEFAULT_THINK_S
    step_timeout_s: float = 30.0
    load_timeout_s: float = 120.0
    url: str | None = None
    workers: int = 0
    seats: int = DEFAULT_SEATS
    kill_after_s: float | None = None


def run_load(
    visitors: int, interactions: int, timeout_s: float, options: Options | None = None
) -> Report:
    """Start the target (unless ``options.url``), let the class in, report."""
    opts = options or Options()
    start = time.monotonic()
    deadline = start + timeout_s
    report = Report(
        visitors=visitors,
        interactions_planned=visitors * interactions,
        client=opts.client,
        think_s=opts.think_s,
        target=opts.url or describe_target(opts.workers, opts.seats),
        workers=opts.workers,
        seats=opts.seats if opts.workers else 0,
        rss_target_mb=rss_target_mb(opts.workers),
    )
    if opts.url:
        crowd, failover = drive(
            opts, opts.url.rstrip("/"), None, visitors, interactions, deadline, report
        )
        return finish(report, crowd, interactions, failover, start)
    port = free_port()
    server, run_dir = start_target(opts.workers, opts.seats, port)
    sampler = RssSampler(server.pid)
    sampler.start()
    # Whatever happens to the event loop, the server does not outlive the deadline by much.
    watchdog = threading.Timer(
        timeout_s + 2 * SHUTDOWN_GRACE_S, lambda: stop_server(server, grace_s=SHUTDOWN_GRACE_S)
    )
    watchdog.daemon = True
    watchdog.start()
    crowd, failover = [], None
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_until_ready(base_url, run_dir, deadline)
        crowd, failover = drive(opts, base_url, run_dir, visitors, interactions, deadline, report)
    finally:
        watchdog.cancel()
        sampler.stop.set()
        sampler.join()
        stop_server(server, grace_s=SHUTDOWN_GRACE_S)
        if run_dir is not None:
            report.launcher_events = launcher_events(run_dir / "launcher.log")
            shutil.rmtree(run_dir, ignore_errors=True)
    report.peak_rss_mb = sampler.peak / (1 << 20)
    return finish(report, crowd, interactions, failover, start)


def describe_target(workers: int, seats: int) -> str:
    if not workers:
        return "streamlit run app.py (one process)"
    return f"python -m serve: {workers} workers behind HAProxy, {seats} seats each"


def drive(
    opts: Options,
    base_url: str,
    run_dir: Path | None,
    visitors: int,
    interactions: int,
    deadline: float,
    report: Report | None = None,
) -> tuple[list[Visitor], Failover | None]:
    """The class at ``base_url`` until done or ``deadline``; notes a deadline hit in ``report``."""
    failover = None
    if opts.kill_after_s is not None and run_dir is not None:
        failover = Failover(run_dir, opts.kill_after_s)
    crowd, hit = asyncio.run(
        drive_crowd(
            opts.client,
            base_url,
            visitors,
            interactions,
            (opts.step_timeout_s, opts.load_timeout_s),
            deadline,
            opts.think_s,
            failover,
        )
    )
    if report is not None:
        report.deadline_hit = hit
    return crowd, failover


def finish(
    report: Report, crowd: Sequence, interactions: int, failover: Failover | None, start: float
) -> Report:
    report.wall_s = time.monotonic() - start
    return summarise(report, crowd, interactions, failover)


def sweep(counts: list[int], interactions: int, timeout_s: float, opts: Options) -> list[Report]:
    """One run per visitor count; prints a row each and the largest count that passed."""
    reports = []
    print("visitors  errors  p50 ms  p95 ms  peak RSS MB  result")
    for count in counts:
        report = run_load(count, interactions, timeout_s, opts)
        reports.append(report)
        print(
            f"{count:8d}  {report.errors:6d}  {report.p50_s * 1e3:6.0f}  "
            f"{report.p95_s * 1e3:6.0f}  {report.peak_rss_mb:11.0f}  "
            + ("PASS" if report.passed else "FAIL"),
            flush=True,
        )
    capacity = 0
    for report in reports:
        if not report.passed:
            break
        capacity = report.visitors
    print(f"capacity: {capacity} visitors at 0 errors and p95 <= {TARGET_P95_S * 1e3:.0f} ms")
    return reports


def parse(argv: list[str] | None) -> argparse.Namespace:
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
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--url", help="drive a server already running at this address")
    target.add_argument(
        "--workers", type=int, default=0, help="start the launcher with this many workers"
    )
    parser.add_argument(
        "--seats",
        type=int,
        default=DEFAULT_SEATS,
        help="with --workers: visitors per worker before the busy page (default %(default)s)",
    )
    parser.add_argument(
        "--kill-after",
        type=float,
        help="with --workers >= 2: SIGKILL the busiest worker this many seconds after the "
        "first loads",
    )
    parser.add_argument(
        "--sweep", help="comma-separated visitor counts: one run each, and the capacity"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="global deadline, seconds")
    parser.add_argument(
        "--step-timeout",
        type=float,
        default=30.0,
        help="seconds one interaction (or a reconnect) may take before it counts as an error",
    )
    parser.add_argument(
        "--load-timeout",
        type=float,
        default=120.0,
        help="seconds the first load (all visitors at once, busy pages included) may take",
    )
    parser.add_argument("--json", type=Path, help="also write the report(s) as JSON here")
    args = parser.parse_args(argv)
    if args.client == "browser" and not Path(CHROMIUM).exists():
        parser.error(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    if args.visitors < 1 or args.interactions < 1 or args.workers < 0 or args.seats < 1:
        parser.error("--visitors, --interactions and --seats must be at least 1")
    if args.think < 0:
        parser.error("--think must not be negative")
    if args.kill_after is not None and (args.workers < 2 or args.client != "ws"):
        parser.error("--kill-after needs --workers 2 or more and the ws client")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    opts = Options(
        client=args.client,
        think_s=args.think,
        step_timeout_s=args.step_timeout,
        load_timeout_s=args.load_timeout,
        url=args.url,
        workers=args.workers,
        seats=args.seats,
        kill_after_s=args.kill_after,
    )
    if args.sweep:
        counts = [int(c) for c in args.sweep.split(",")]
        reports = sweep(counts, args.interactions, args.timeout, opts)
        if args.json is not None:
            args.json.write_text(json.dumps([asdict(r) for r in reports], indent=2))
        return 0
    report = run_load(args.visitors, args.interactions, args.timeout, opts)
    print("\n".join(report.lines()))
    for sample in report.error_samples:
        print(f"  {sample}")
    for sample in report.failed_samples:
        print(f"  failed in flight: {sample}")
    for event in report.launcher_events[:20]:
        print(f"  launcher: {event}")
    if args.json is not None:
        args.json.write_text(json.dumps(asdict(report), indent=2))
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
