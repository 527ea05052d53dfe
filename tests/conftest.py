"""Shared fixtures: a live app server and a headless browser (pyproject.toml puts the
repository root on the import path)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Under pytest-xdist each test process is a host of its own: its own temporary folder, so the
# host-wide lock of the inspector's model loads (a file there) is not held by the other
# process's tests, and the servers a test starts inherit the same folder.
if worker := os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["TMPDIR"] = tempfile.mkdtemp(prefix=f"normlab-tests-{worker}-")
    tempfile.tempdir = None

# Test files import these from here; they live with the benchmarks, which start servers too.
from benchmarks.live import (
    CHARTS_DRAWN,
    CHROMIUM,
    CHROMIUM_ARGS,
    READY,
    SMALLEST_FIGURE_FONT,
    free_port,
    live_app,
    start_server,
    wait_for_health,
)

__all__ = [
    "CHARTS_DRAWN",
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "READY",
    "SMALLEST_FIGURE_FONT",
    "free_port",
    "is_local",
    "live_app",
    "open_page",
    "start_server",
    "wait_for_health",
]

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")


@pytest.fixture(scope="session")
def app_url() -> Iterator[str]:
    """A real ``streamlit run app.py`` on a free loopback port, for the browser tests."""
    with live_app() as url:
        yield url


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A browser test starts a server and Chromium, so it is ``slow`` too: ``-m "not slow"``
    leaves every browser test out of the quick loop."""
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
