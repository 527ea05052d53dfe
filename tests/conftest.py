"""Shared fixtures: the repository root on sys.path, a live app server, a headless browser."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Test files import these from here; they live with the benchmarks, which start servers too.
from benchmarks.live import (  # noqa: E402  (the repository root is on the path only from here)
    CHROMIUM,
    CHROMIUM_ARGS,
    READY,
    free_port,
    start_server,
    stop_server,
    streamlit_command,
    wait_for_health,
)

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "READY",
    "free_port",
    "is_local",
    "open_page",
    "start_server",
    "wait_for_health",
]

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")


@pytest.fixture(scope="session")
def app_url() -> Iterator[str]:
    """A real ``streamlit run app.py`` on a free loopback port, for the browser tests."""
    port = free_port()
    proc = start_server(streamlit_command(port), port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url)
        yield url
    finally:
        stop_server(proc)


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
