"""The guided lesson, the invariance lab and the residual stream in real headless Chromium: what
a person sees that AppTest cannot (the rendered log-axis labels, the last lesson step on a phone,
the lesson's buttons as drawn)."""

from __future__ import annotations

import pytest

from benchmarks.live import READY
from tests.browser_util import open_page

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
# The tick labels Plotly drew on the log axes of the invariance lab's collapse chart.
COLLAPSE_TICKS = """() => {
  const plot = document.querySelector('.st-key-collapse .js-plotly-plot');
  if (!plot) return null;
  return Array.from(plot.querySelectorAll('.xtick text, .ytick text')).map(t => t.textContent);
}"""


def overflow(page) -> int:
    """How far the page is wider than the window (0: no horizontal scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def test_log_axes_read_as_whole_numbers(app_url: str, browser) -> None:
    page, _ = open_page(browser, f"{app_url}/invariance?c_max=300&lang=en", height=1400)
    page.wait_for_function(f"({COLLAPSE_TICKS})() !== null", timeout=90_000)
    ticks = page.evaluate(COLLAPSE_TICKS)
    assert ticks, "no tick labels drawn"
    # Every label is a number as written (20, 0.5, 1e-5): no bare "2" standing for 20.
    values = [float(t.replace("\u2212", "-")) for t in ticks]
    assert {0.1, 1.0, 10.0, 100.0} <= set(values)
    page.close()


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_last_lesson_step_fits_a_phone(app_url: str, browser, lang: str) -> None:
    """The lesson's last step, its widest (each page's first view on a phone is
    ``tests/test_a11y.py``'s)."""
    page, _ = open_page(browser, f"{app_url}/lesson?step=14&lang={lang}", **PHONE)
    assert page.locator("[data-testid='stException']").count() == 0
    assert overflow(page) <= 0
    page.close()


def test_lesson_reveal_makes_next_the_primary_button(app_url: str, browser) -> None:
    page, _ = open_page(browser, f"{app_url}/lesson?step=5&lang=en", width=1366, height=900)
    primary = "[data-testid='stBaseButton-primary']"
    assert page.locator(primary).filter(has_text="Next").count() == 0
    page.locator("[data-testid='stRadio'] label").nth(2).click()
    page.wait_for_selector(READY, timeout=90_000)
    page.get_by_role("button", name="Reveal").click()
    page.wait_for_selector(".st-key-fig_shift .js-plotly-plot", timeout=90_000)
    assert page.locator(primary).filter(has_text="Next").count() == 1
    assert overflow(page) <= 0
    page.close()
