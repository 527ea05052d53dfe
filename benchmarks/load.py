"""A class opening the demo at once: N visitors in headless Chromium, each making M interactions.

Run ``python -m benchmarks.load --visitors 20 --interactions 20 --timeout 300``. The script starts
``streamlit run app.py`` on a free loopback port, opens one Chromium with one context per visitor
(Playwright's async API: its sync API may not be shared across threads) and lets every visitor
work through the same cycle of interactions on the explorer: the offset slider one step to the
right (arrow key), a new width ``d`` typed in, a switch to the guided lesson and back.

An interaction's latency runs from the key press or click until the page shows its result (the
chart's values changed, or the other page's title) and Streamlit reports the script finished.
Errors are exceptions shown on a page, JavaScript errors, and interactions that did not finish
within ``--step-timeout``. The server's resident memory (with any child processes) is sampled
every 0.2 s from ``/proc``. The report gives errors, p50, p95 and max latency and peak RSS, and
PASS or FAIL against the targets. A global deadline bounds the whole run; at the deadline every
visitor stops and the server and browser are killed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from playwright.async_api import TimeoutError as PlaywrightTimeout
from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ui.i18n import t  # noqa: E402  (the repository root is on the path only from here)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
READY = "[data-testid='stApp'][data-test-script-state='notRunning']"
EXCEPTION = "[data-testid='stException']"

# Targets from the project issue, for 20 visitors x 20 interactions on the 2-core reference box.
TARGET_P95_S = 1.0
TARGET_PEAK_RSS_MB = 800.0
TARGET_ERRORS = 0
RSS_PERIOD_S = 0.2
# After the global deadline the server gets this long to exit on SIGTERM before SIGKILL.
SHUTDOWN_GRACE_S = 5.0

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


@dataclass
class Report:
    visitors: int
    interactions_planned: int
    interactions_done: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    p50_s: float = float("nan")
    p95_s: float = float("nan")
    max_s: float = float("nan")
    peak_rss_mb: float = 0.0
    wall_s: float = 0.0
    deadline_hit: bool = False
    passed: bool = False

    def lines(self) -> list[str]:
        verdict = "PASS" if self.passed else "FAIL"
        return [
            f"visitors      {self.visitors}",
            f"interactions  {self.interactions_done} of {self.interactions_planned}",
            f"errors        {self.errors} (target {TARGET_ERRORS})",
            f"latency p50   {self.p50_s * 1e3:.0f} ms",
            f"latency p95   {self.p95_s * 1e3:.0f} ms (target <= {TARGET_P95_S * 1e3:.0f} ms)",
            f"latency max   {self.max_s * 1e3:.0f} ms",
            f"peak RSS      {self.peak_rss_mb:.0f} MB (target <= {TARGET_PEAK_RSS_MB:.0f} MB)",
            f"wall time     {self.wall_s:.1f} s" + (" (deadline hit)" if self.deadline_hit else ""),
            f"result        {verdict}",
        ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_health(base_url: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=2) as resp:
                if resp.read().decode().strip() == "ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{base_url} did not answer /_stcore/health before the deadline")


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


def start_server(port: int) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # A session of its own, so the whole group can be signalled at the end.
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=SHUTDOWN_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class Visitor:
    """One person in the class: a browser context on the explorer, and their latencies."""

    def __init__(
        self, number: int, context, base_url: str, step_timeout_s: float, load_timeout_s: float
    ) -> None:
        self.number, self.context, self.base_url = number, context, base_url
        self.timeout_ms = step_timeout_s * 1e3
        self.load_timeout_ms = load_timeout_s * 1e3
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.page = None
        self.width = 0

    def error(self, what: str) -> None:
        self.errors.append(f"visitor {self.number}: {what}")

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

    async def act(self, kind: str) -> None:
        if kind == "slider":
            await self.slider()
        elif kind == "width":
            await self.width_change()
        else:
            await self.switch(kind)

    async def run(self, interactions: int) -> None:
        try:
            await self.open()
        except Exception as exc:  # any failure to load is this visitor's error
            self.error(f"first load failed: {type(exc).__name__}")
            return
        for i in range(interactions):
            kind = CYCLE[i % len(CYCLE)]
            try:
                await self.act(kind)
            except Exception as exc:  # a timeout or a lost page counts as an error
                self.error(f"{kind} #{i + 1} failed: {type(exc).__name__}: {str(exc)[:120]}")
                # Back to a known state, so one failure does not cascade into the rest.
                try:
                    await self.open()
                except Exception:  # the page is gone: this visitor stops
                    return
                continue
            if await self.page.locator(EXCEPTION).count():
                self.error(f"{kind} #{i + 1}: the page shows an exception")


async def drive(
    base_url: str,
    visitors: int,
    interactions: int,
    timeouts: tuple[float, float],
    deadline: float,
) -> tuple[list[Visitor], bool]:
    """Run every visitor at once until done or ``deadline``; ``timeouts`` are (step, load) s."""
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            crowd = []
            for number in range(visitors):
                context = await browser.new_context(viewport={"width": 1280, "height": 900})
                crowd.append(Visitor(number, context, base_url, *timeouts))
            remaining = max(1.0, deadline - time.monotonic())
            try:
                await asyncio.wait_for(
                    asyncio.gather(*(v.run(interactions) for v in crowd)), timeout=remaining
                )
                hit = False
            except TimeoutError:
                hit = True
        finally:
            await browser.close()
    return crowd, hit


def summarise(report: Report, crowd: list[Visitor], interactions: int) -> Report:
    latencies = np.array([s for v in crowd for s in v.latencies])
    errors = [e for v in crowd for e in v.errors]
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
    )
    return report


def run_load(
    visitors: int,
    interactions: int,
    timeout_s: float,
    *,
    step_timeout_s: float = 30.0,
    load_timeout_s: float = 120.0,
) -> Report:
    start = time.monotonic()
    deadline = start + timeout_s
    report = Report(visitors=visitors, interactions_planned=visitors * interactions)
    port = free_port()
    server = start_server(port)
    sampler = RssSampler(server.pid)
    sampler.start()
    # Whatever happens to the event loop, the server does not outlive the deadline by much.
    watchdog = threading.Timer(timeout_s + 2 * SHUTDOWN_GRACE_S, lambda: stop_server(server))
    watchdog.daemon = True
    watchdog.start()
    crowd: list[Visitor] = []
    try:
        base_url = f"http://127.0.0.1:{port}"
        wait_for_health(base_url, deadline)
        crowd, report.deadline_hit = asyncio.run(
            drive(base_url, visitors, interactions, (step_timeout_s, load_timeout_s), deadline)
        )
    finally:
        watchdog.cancel()
        sampler.stop.set()
        sampler.join()
        stop_server(server)
    report.peak_rss_mb = sampler.peak / (1 << 20)
    report.wall_s = time.monotonic() - start
    return summarise(report, crowd, interactions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visitors", type=int, default=20)
    parser.add_argument("--interactions", type=int, default=20)
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
    if not Path(CHROMIUM).exists():
        parser.error(f"{CHROMIUM} is not installed (apt-get install -y chromium)")
    if args.visitors < 1 or args.interactions < 1:
        parser.error("--visitors and --interactions must be at least 1")
    report = run_load(
        args.visitors,
        args.interactions,
        args.timeout,
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
