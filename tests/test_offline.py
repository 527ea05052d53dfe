"""The app fetches nothing from outside its own server, on every page, in a real browser."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CHROMIUM, live_app, open_page

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


def test_no_page_requests_anything_from_another_host(app_url, browser, tmp_path) -> None:
    # The landing page first: it runs the router, which registers every page's url path.
    urls = [f"{app_url}/"] + [f"{app_url}/{path}" for path in page_paths()]
    outside: dict[str, list[str]] = {}
    broken: list[str] = []
    for url in urls:
        page, requests = open_page(browser, url, height=3000)
        try:
            page.wait_for_timeout(SETTLE_MS)
            name = url.removeprefix(app_url).strip("/") or "landing"
            page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True, timeout=90_000)
            if requests:
                outside[url] = sorted(set(requests))
            if page.locator("[data-testid='stException']").count():
                broken.append(url)
        finally:
            page.close()
    assert not outside, f"requests to other hosts: {outside}"
    assert not broken, f"pages showing an exception: {broken}"
    assert len(list(tmp_path.glob("*.png"))) == len(urls)


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
