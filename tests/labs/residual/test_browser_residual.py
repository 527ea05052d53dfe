"""The residual page's trained mode in real headless Chromium: the mode buttons switch the page
and the link, and on a phone both figures fit, with panel titles that do not run into each
other and chart text of at least 14 px, in both languages."""

from __future__ import annotations

import time

import pytest

from benchmarks.live import READY
from tests.browser_util import open_page

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
FIGURES = (".st-key-trained_figure .js-plotly-plot", ".st-key-coordinates_figure .js-plotly-plot")
# The smallest text of every chart as Plotly laid it out: its font, every axis's ticks and title,
# the panel titles, the legend where there is one.
FONTS = r"""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => {
  const l = p._fullLayout;
  const sizes = [l.font.size, ...(l.annotations || []).map(a => a.font.size)];
  for (const [key, axis] of Object.entries(l)) {
    if (!/^[xy]axis\d*$/.test(key) || !axis.visible) continue;
    if (axis.showticklabels && axis.tickfont) sizes.push(axis.tickfont.size);
    if (axis.title && axis.title.text && axis.title.font) sizes.push(axis.title.font.size);
  }
  if (l.showlegend !== false && l.legend) sizes.push(l.legend.font.size);
  return Math.min(...sizes);
})"""
# The boxes of the trained figure's panel titles, as drawn.
TITLES = """() => Array.from(
  document.querySelectorAll('.st-key-trained_figure .annotation-text')
).map(t => { const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"""


@pytest.fixture(scope="module", autouse=True)
def routed(app_url, browser) -> None:
    """Open the landing page first: a server's first deep link reruns through the router once
    (ui.frame.ensure_router; see tests/labs/training/test_browser_training.py)."""
    page, _ = open_page(browser, f"{app_url}/")
    page.close()


def overlapping(boxes: list[list[float]]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, a in enumerate(boxes)
        for j, b in enumerate(boxes[i + 1 :], start=i + 1)
        if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
    ]


@pytest.mark.parametrize("lang", ["en", "id"])
def test_trained_mode_fits_a_phone(app_url: str, browser, lang: str) -> None:
    page, outside = open_page(browser, f"{app_url}/residual?mode=trained&lang={lang}", **PHONE)
    for selector in FIGURES:
        page.wait_for_selector(selector, timeout=90_000)
    collapse = page.locator("[data-testid='stSidebarCollapseButton'] button")
    if collapse.count() and collapse.first.is_visible():
        collapse.first.click()  # read the page as a phone shows it after closing the sidebar
        time.sleep(1.0)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    assert min(page.evaluate(FONTS)) >= 14
    titles = page.evaluate(TITLES)
    assert len(titles) == 6 and not overlapping(titles), titles
    assert outside == []
    page.close()


def test_mode_buttons_switch_the_page_and_the_link(app_url: str, browser) -> None:
    page, _ = open_page(browser, f"{app_url}/residual?lang=en", width=1366, height=900)
    page.wait_for_selector(".st-key-layers_figure .js-plotly-plot", timeout=90_000)
    # A row of radio buttons to a screen reader, named by their labels.
    page.get_by_role("radio", name="Trained models").click()
    page.wait_for_selector(FIGURES[0], timeout=90_000)
    page.wait_for_selector(READY, timeout=90_000)
    assert "mode=trained" in page.url
    assert page.locator(".st-key-layers_figure").count() == 0
    page.get_by_role("radio", name="Synthetic trunk").click()
    page.wait_for_selector(".st-key-layers_figure .js-plotly-plot", timeout=90_000)
    assert "mode=trained" not in page.url
    page.close()
