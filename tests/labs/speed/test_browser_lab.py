"""The lab pages in real headless Chromium: a translated option keeps the link's value, and
Measure draws the speed lab's charts with readable text. (How every page reads on a laptop, a
phone and a projector, in both languages, is ``tests/test_a11y.py``.)"""

from __future__ import annotations

import time

import pytest

from benchmarks.live import CHARTS_DRAWN, READY, SMALLEST_FIGURE_FONT

pytestmark = pytest.mark.browser


def settle(page, charts: int = 1) -> None:
    """The script has finished and at least ``charts`` charts are drawn."""
    page.wait_for_selector(READY, timeout=90_000)
    page.wait_for_function(CHARTS_DRAWN, arg=charts, timeout=90_000)
    time.sleep(0.5)


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
