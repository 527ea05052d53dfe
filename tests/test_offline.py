"""The app fetches nothing from outside its own server, in a real browser: here a fresh server's
first request, a deep link; every page in both languages is checked the same way by the laptop
visits of ``tests/test_a11y.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.live import CHROMIUM
from tests.browser_util import live_app, open_page
from ui.nav import PAGES

ROOT = Path(__file__).resolve().parent.parent
# Charts load their bundle after the script has finished; give them time to ask for anything.
SETTLE_MS = 2_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
]


def page_paths() -> list[str]:
    """The url path of every page in the registry."""
    return [spec.name for spec in PAGES]


def test_pages_are_listed() -> None:
    paths = page_paths()
    assert paths and len(paths) == len(set(paths))
    assert "lesson" in paths


def test_a_deep_link_as_a_fresh_servers_first_request_stays_offline(browser) -> None:
    """The first request after a start runs the page without app.py until it reroutes itself;
    that run must not make a Material icon the favicon (fetched from Google's font servers)."""
    with live_app() as url:
        page, requests = open_page(browser, f"{url}/invariance?seed=5")
        try:
            page.wait_for_timeout(SETTLE_MS)
            assert page.locator("h1").first.inner_text().strip()
            assert not requests, sorted(set(requests))
        finally:
            page.close()
