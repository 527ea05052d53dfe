"""Helpers for the launcher's tests: HAProxy present (or a clean skip), a launcher started and
stopped, and a websocket session with the proxy's cookie."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path

import pytest

from benchmarks.live import free_port, stop_server
from benchmarks.target import start_target, wait_until_ready
from serve.config import COOKIE
from serve.launcher import HAPROXY, read_state

# Two cold workers on a busy two-core machine.
READY_TIMEOUT_S = 120.0


def need_debian(path: str, package: str) -> None:
    """Skip where Debian's ``package`` (its program at ``path``) is not installed; in CI, which
    installs it with apt, fail instead."""
    if Path(path).exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{path} is missing; .ci/run installs it with apt")
    pytest.skip(f"Debian's {package} is not installed (apt-get install -y {package})")


def need_haproxy() -> None:
    need_debian(HAPROXY, "haproxy")


@dataclass
class Launched:
    """A running ``python -m serve``: its process, proxy address and run folder."""

    proc: object
    url: str
    run_dir: Path

    def state(self) -> dict:
        return read_state(self.run_dir)

    def worker_pid(self, name: str) -> int:
        return self.state()["workers"][name]["pid"]


@contextmanager
def launched(workers: int, seats: int, env: dict | None = None) -> Iterator[Launched]:
    """The launcher on a free loopback port, stopped (the whole process group) at the end."""
    need_haproxy()
    port = free_port()
    proc, run_dir = start_target(workers, seats, port, env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(url, run_dir, time.monotonic() + READY_TIMEOUT_S)
        yield Launched(proc, url, run_dir)
    finally:
        stop_server(proc)
        shutil.rmtree(run_dir, ignore_errors=True)


def worker_cookie(headers) -> str | None:
    """The worker named by the proxy's ``Set-Cookie`` in ``headers``, if it set one."""
    for line in headers.get_all("Set-Cookie") or []:
        jar = SimpleCookie()
        jar.load(line)
        if COOKIE in jar:
            return jar[COOKIE].value
    return None


def session(url: str, worker: str | None = None):
    """A Streamlit websocket through the proxy, carrying ``worker``'s cookie if given."""
    from websockets.sync.client import connect

    headers = {"Cookie": f"{COOKIE}={worker}"} if worker else {}
    return connect(
        url.replace("http://", "ws://") + "/_stcore/stream",
        subprotocols=["streamlit"],
        additional_headers=headers,
        open_timeout=30,
        proxy=None,
    )
