"""Shared fixtures: the repository root on sys.path, a live app server, a headless browser."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
READY = "[data-testid='stApp'][data-test-script-state='notRunning']"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_health(base_url: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=2) as resp:
                if resp.read().decode().strip() == "ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"{base_url} did not answer /_stcore/health within {timeout} s")


def start_server(command: list[str], port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


@pytest.fixture(scope="session")
def app_url() -> Iterator[str]:
    """A real ``streamlit run app.py`` on a free loopback port, for the browser tests."""
    port = free_port()
    proc = start_server(
        [
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
        ],
        port,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's headless Chromium driven by Playwright; skipped where it is not installed."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def is_local(url: str) -> bool:
    """Whether a request stays on this machine (data: and blob: URLs never leave it)."""
    if url.startswith(("data:", "blob:", "about:")):
        return True
    host = url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
    return host in LOCAL_HOSTS or url.split("://", 1)[-1].startswith("[::1]")


def open_page(browser: object, url: str, *, width: int = 1400, height: int = 1000):
    """A new page at ``url`` after the script has finished; returns (page, outside requests)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    outside: list[str] = []
    page.on("request", lambda req: None if is_local(req.url) else outside.append(req.url))
    page.goto(url)
    page.wait_for_selector(READY, timeout=60_000)
    return page, outside
