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

from benchmarks.live import (
    CHROMIUM,
    CHROMIUM_ARGS,
    live_app,
)


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A browser test starts a server and Chromium, so it is ``slow`` too: ``-m "not slow"``
    leaves every browser test out of the quick loop."""
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
