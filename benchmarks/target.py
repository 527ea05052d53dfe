"""The server under load: started and stopped, its memory sampled, one of its workers killed.

The server is ``streamlit run app.py`` (one process) or the launcher, ``python -m serve --workers
N``, on a free loopback port. Memory is the resident set of the process started and all its
children (launcher, HAProxy, workers), sampled every ``RSS_PERIOD_S`` from ``/proc``."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from benchmarks.live import start_server, streamlit_command, wait_for_health
from benchmarks.ws_visitor import WsVisitor
from serve.config import COOKIE
from serve.launcher import is_healthy, read_state

RSS_PERIOD_S = 0.2
# How often the failover run asks whether the killed worker answers again.
BACK_POLL_S = 0.2


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


def start_target(
    workers: int, seats: int, port: int, env: dict[str, str | None] | None = None
) -> tuple[subprocess.Popen, Path | None]:
    """``streamlit run app.py``, or the launcher with ``workers`` and its run folder (``env`` as
    ``start_server`` takes it)."""
    if not workers:
        return start_server(streamlit_command(port), port, own_session=True, env=env), None
    run_dir = Path(tempfile.mkdtemp(prefix="normlab-load-"))
    command = [sys.executable, "-m", "serve", "--workers", str(workers), "--seats", str(seats)]
    command += ["--port", str(port), "--address", "127.0.0.1", "--run-dir", str(run_dir)]
    # The launcher's log (workers restarted, HAProxy's servers going DOWN and UP) for the report.
    log = run_dir / "launcher.log"
    return start_server(command, port, own_session=True, log=log, env=env), run_dir


def launcher_events(log: Path) -> list[str]:
    """The launcher's restarts and HAProxy's servers going DOWN or coming UP, from its log."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return []
    keep = re.compile(r"Server sessions/\S+ is (DOWN|UP)|exited with")
    return [line.strip() for line in lines if keep.search(line)]


def wait_until_ready(
    base_url: str, run_dir: Path | None, deadline: float, packed: bool = False
) -> None:
    """The launcher writes ``state.json`` once its workers answer and HAProxy runs; ``packed``:
    and its Zopfli pass is done, as for a class that meets a launcher started earlier."""
    while run_dir is not None and not (
        (run_dir / "state.json").exists() and (not packed or read_state(run_dir)["bundle_packed"])
    ):
        if time.monotonic() > deadline:
            raise TimeoutError("the launcher was not ready before the deadline")
        time.sleep(0.2)
    wait_for_health(base_url, timeout=max(0.0, deadline - time.monotonic()))


def describe_target(workers: int, seats: int) -> str:
    if not workers:
        return "streamlit run app.py (one process)"
    return f"python -m serve: {workers} workers behind HAProxy, {seats} seats each"
