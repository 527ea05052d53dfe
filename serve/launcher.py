"""Start N Streamlit workers on loopback and HAProxy in front of them; restart a worker that dies.

The launcher is the parent of every process it starts, all in its process group: a SIGTERM or
SIGINT to it (or to the group) stops HAProxy and the workers. A worker that exits for any reason
is started again on the same port (HAProxy's side of a failover: docs/serving.md). The run folder
holds ``haproxy.cfg``, the busy pages, HAProxy's stats socket and ``state.json`` (each worker's
name, port, pid and restarts), rewritten on every change."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from serve import bundle
from serve.config import Plan, worker_name, write_run_files

ROOT = Path(__file__).resolve().parent.parent
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
# A cold start imports streamlit; the first session imports numpy, torch and plotly. On a busy
# two-core machine the server needs a while before it answers.
HEALTH_TIMEOUT_S = 90.0
HEALTH_POLL_S = 0.3
# How often the launcher looks for a worker that exited.
WATCH_S = 0.2
# A process gets this long to exit on SIGTERM before SIGKILL.
STOP_GRACE_S = 10.0
# A worker that dies within this many seconds of its start waits before the next one, twice as
# long each time up to MAX_BACKOFF_S, so a crash loop leaves the CPU to the workers that serve.
QUICK_EXIT_S = 10.0
MAX_BACKOFF_S = 30.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on at the moment of asking."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def is_healthy(base_url: str, timeout: float = 2.0) -> bool:
    """Whether ``base_url`` answers ``ok`` on ``/_stcore/health``."""
    try:
        with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=timeout) as resp:
            return resp.read().decode().strip() == "ok"
    except OSError:
        return False


def wait_for_health(base_url: str, timeout: float = HEALTH_TIMEOUT_S) -> None:
    """Return once ``base_url`` answers ``/_stcore/health``; raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_healthy(base_url):
            return
        time.sleep(HEALTH_POLL_S)
    raise TimeoutError(f"{base_url} did not answer /_stcore/health within {timeout:.0f} s")


def worker_command(port: int, address: str = "127.0.0.1") -> list[str]:
    """``streamlit run app.py`` headless on ``address:port``, with this interpreter."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.port",
        str(port),
        "--server.address",
        address,
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]


def log(message: str) -> None:
    print(f"serve: {message}", file=sys.stderr, flush=True)


@dataclass
class Worker:
    """One Streamlit process behind the proxy, and when it is due to start again."""

    name: str
    port: int
    proc: subprocess.Popen | None = None
    started: float = 0.0
    restarts: int = 0
    backoff_s: float = 0.0
    due: float | None = None  # a restart is pending: start again at this time

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class Launcher:
    """The workers and HAProxy of one ``python -m serve``; ``run`` blocks until told to stop."""

    def __init__(self, plan: Plan, run_dir: Path) -> None:
        self.plan, self.run_dir = plan, run_dir
        self.workers = [Worker(worker_name(i), port) for i, port in enumerate(plan.worker_ports)]
        self.proxy: subprocess.Popen | None = None
        self.bundle: bundle.ThreadingHTTPServer | None = None
        self.packed = threading.Event()  # the bundle's text is all packed (state.json says so)
        self.packed_noted = False
        self.stopping = threading.Event()
        # One secret for every worker, so a token or cookie signed by one is valid on another
        # after a visitor moves (Streamlit makes a random one per process otherwise).
        self.env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "STREAMLIT_SERVER_COOKIE_SECRET": os.environ.get(
                "STREAMLIT_SERVER_COOKIE_SECRET", secrets.token_hex(32)
            ),
        }

    def start_worker(self, worker: Worker) -> None:
        # Streamlit's banner names the worker's own port, which visitors must not use.
        worker.proc = subprocess.Popen(
            worker_command(worker.port), cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL
        )
        worker.started = time.monotonic()

    def start(self) -> None:
        """Workers first, then HAProxy once they answer (or the health timeout passed)."""
        if self.plan.bundle_port:
            self.bundle = bundle.start(self.plan.bundle_port, self.note_packed)
        config = write_run_files(self.plan, self.run_dir)
        checked = subprocess.run(
            [HAPROXY, "-c", "-q", "-f", str(config)], capture_output=True, text=True
        )
        if checked.returncode != 0:
            raise RuntimeError(f"HAProxy rejects {config}:\n{checked.stdout}{checked.stderr}")
        for worker in self.workers:
            self.start_worker(worker)
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        for worker in self.workers:
            try:
                wait_for_health(worker.url, timeout=max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                log(f"worker {worker.name} (port {worker.port}) is not answering yet")
        self.proxy = subprocess.Popen([HAPROXY, "-db", "-f", str(config)], env=self.env)
        self.write_state()

    def note_packed(self, files: int, seconds: float) -> None:
        log(f"the bundle's {files} scripts and styles are packed ({seconds:.0f} s)")
        self.packed.set()

    def watch(self) -> None:
        """Note workers that exited, and start those whose wait is over."""
        if self.packed.is_set() and not self.packed_noted:
            self.packed_noted = True
            self.write_state()
        now = time.monotonic()
        for worker in self.workers:
            if worker.due is None and worker.proc.poll() is not None:
                if now - worker.started < QUICK_EXIT_S:
                    worker.backoff_s = min(MAX_BACKOFF_S, max(1.0, 2 * worker.backoff_s))
                else:
                    worker.backoff_s = 0.0
                worker.due = now + worker.backoff_s
                log(
                    f"worker {worker.name} (pid {worker.proc.pid}, port {worker.port}) exited "
                    f"with {worker.proc.returncode}; starting it again in {worker.backoff_s:.0f} s"
                )
            if worker.due is not None and now >= worker.due and not self.stopping.is_set():
                self.start_worker(worker)
                worker.restarts += 1
                worker.due = None
                self.write_state()

    def run(self) -> int:
        """Watch until ``stopping`` is set (0) or HAProxy exits (1); stop everything either way."""
        try:
            self.start()
            while not self.stopping.wait(WATCH_S):
                if self.proxy.poll() is not None:
                    log(f"HAProxy exited with {self.proxy.returncode}")
                    return 1
                self.watch()
            return 0
        finally:
            self.stop()

    def stop(self) -> None:
        self.stopping.set()
        if self.bundle is not None:
            self.bundle.shutdown()
            self.bundle.server_close()
        procs = [p for p in [self.proxy, *(w.proc for w in self.workers)] if p is not None]
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def state(self) -> dict:
        return {
            "proxy": {"address": self.plan.address, "port": self.plan.port, "pid": self.proxy.pid},
            "seats": self.plan.seats,
            "bundle_packed": self.packed.is_set(),
            "workers": {
                w.name: {"port": w.port, "pid": w.proc.pid, "restarts": w.restarts}
                for w in self.workers
            },
        }

    def write_state(self) -> None:
        """``state.json`` in the run folder, replaced whole so a reader never sees half of it."""
        path = self.run_dir / "state.json"
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(self.state(), indent=2))
        partial.replace(path)


def read_state(run_dir: Path) -> dict:
    """The launcher's ``state.json``: proxy, seats, and each worker's port, pid and restarts."""
    return json.loads((Path(run_dir) / "state.json").read_text())
