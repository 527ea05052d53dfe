"""The precision, contracts, backward and speed pages in real headless Chromium: they read on a
laptop, a phone and a projector (no horizontal scrolling, figure text at least 14 px, larger with
text=large), a translated button keeps the link's value, and Measure draws the speed lab's
charts."""

from __future__ import annotations

import time

import pytest
from conftest import CHARTS_DRAWN, READY, SMALLEST_FIGURE_FONT

pytestmark = pytest.mark.browser

VIEWS = {
    "laptop": ({"width": 1366, "height": 900}, "", 14),
    "phone": ({"width": 390, "height": 844}, "", 14),
    "presenter": ({"width": 1920, "height": 1080}, "&controls=hidden&text=large", 18),
}
PAGES = ("precision", "contracts", "backward", "speed")


def settle(page, charts: int = 1) -> None:
    """The script has finished and at least ``charts`` charts are drawn."""
    page.wait_for_selector(READY, timeout=90_000)
    page.wait_for_function(CHARTS_DRAWN, arg=charts, timeout=90_000)
    time.sleep(0.5)


@pytest.mark.parametrize("lang", ["en", "id"])
@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("name", PAGES)
def test_pages_fit_and_read(app_url: str, browser, name: str, view: str, lang: str) -> None:
    size, extra, smallest_allowed = VIEWS[view]
    page = browser.new_page(viewport=size)
    page.goto(f"{app_url}/{name}?lang={lang}{extra}")
    settle(page, 0 if name == "speed" else 1)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    smallest = page.evaluate(SMALLEST_FIGURE_FONT)
    if name != "speed":  # the speed lab draws nothing before Measure
        assert smallest is not None and smallest >= smallest_allowed, smallest
    if view == "presenter":
        for gone in ("stFileUploader", "stDownloadButton", "stCode"):
            assert page.locator(f"[data-testid='{gone}']").count() == 0
    page.close()


def test_a_translated_button_keeps_the_link_value(app_url: str, browser) -> None:
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{app_url}/precision?lang=id")
    settle(page)
    box = page.locator("[data-testid='stSelectbox']").filter(has_text="Kurva pada gambar 1")
    option = page.get_by_role("option").filter(has_text="di luar")
    for _ in range(3):  # a rerun right after the first load can close the list again
        box.locator("input").click()
        try:
            option.wait_for(timeout=5_000)
            break
        except Exception:
            time.sleep(1)
    option.click()
    page.wait_for_function("() => location.search.includes('placement=outside')", timeout=60_000)
    settle(page)
    assert "di+luar" not in page.url and "di%20luar" not in page.url
    page.close()


def test_measure_draws_the_speed_lab(app_url: str, browser) -> None:
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{app_url}/speed?lang=en&d=128&batch=2&impl=numpy&repeats=3")
    settle(page, 0)
    assert page.locator("[data-testid='stPlotlyChart']").count() == 0
    page.get_by_role("button", name="Measure").click()
    settle(page, 3)
    assert page.evaluate(SMALLEST_FIGURE_FONT) >= 14
    assert page.locator("[data-testid='stException']").count() == 0
    page.close()
