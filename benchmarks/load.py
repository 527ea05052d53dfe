"""A class opening the demo at once: N visitors, each making M interactions, against one server.

Run ``python -m benchmarks.load --visitors 20 --interactions 20 --timeout 300``. By default it
runs ``streamlit run app.py`` on a free loopback port; ``--workers N`` runs the launcher
(``python -m serve``, N workers behind HAProxy, ``--seats`` visitors each); ``--url URL`` drives
a server already running (nothing started, no memory measured).

The visitors are ``benchmarks/visitors.py``'s, the server ``benchmarks/target.py``'s;
docs/serving.md describes the options (``--client``, ``--think``, ``--kill-after``, ``--sweep``)
and what the report counts. A global deadline bounds every run."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.browser_visitor import BrowserVisitor
from benchmarks.live import CHROMIUM, CHROMIUM_ARGS, free_port, stop_server
from benchmarks.load_report import TARGET_P95_S, Report, rss_target_mb, summarise
from benchmarks.target import (
    Failover,
    RssSampler,
    describe_target,
    launcher_events,
    start_target,
    wait_until_ready,
)
from benchmarks.visitors import DEFAULT_THINK_S, THINK_JITTER, Visitor
from benchmarks.ws_visitor import WsVisitor
from serve.config import DEFAULT_SEATS

CLIENTS = ("ws", "browser")
# After the global deadline the server gets this long to exit on SIGTERM before SIGKILL.
SHUTDOWN_GRACE_S = 5.0


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
    opts: Options,
    base_url: str,
    visitors: int,
    interactions: int,
    deadline: float,
    failover: Failover | None = None,
) -> tuple[list[Visitor], bool]:
    """Run every visitor of ``opts.client``'s class at once until done or ``deadline`` (and
    ``failover`` beside them; the command line allows it with the ws client only)."""
    timeouts = (opts.step_timeout_s, opts.load_timeout_s)
    async with CROWDS[opts.client](base_url, visitors, timeouts, opts.think_s) as crowd:
        extra = [failover(crowd)] if failover is not None else []
        return crowd, await until_deadline(crowd, interactions, deadline, extra)


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
    running = drive_crowd(opts, base_url, visitors, interactions, deadline, failover)
    crowd, hit = asyncio.run(running)
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
