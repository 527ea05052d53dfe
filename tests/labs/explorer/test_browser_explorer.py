"""The explorer in real headless Chromium: it loads, a control moves, the charts follow, a saved
view restores, and on a phone its metrics sit two to a row and its Data tables fit (screenshots in
``artifacts/``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from benchmarks.live import CHARTS_DRAWN, READY, SMALLEST_FIGURE_FONT
from tests.browser_util import open_page
from ui.chart import DATA_KEY

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("NORMLAB_SHOTS", Path(__file__).resolve().parents[3] / "artifacts"))

# The y values of the RMSNorm and LayerNorm traces in the coordinates chart (key "coords").
READ_OUTPUTS = """() => {
  const plot = document.querySelector('.st-key-coords .js-plotly-plot');
  if (!plot || !plot._fullData) return null;
  const pick = name => Array.from(plot._fullData.find(t => t.name === name).y);
  return {rms: pick('RMSNorm(x)'), layer: pick('LayerNorm(x)')};
}"""

# A Data table's grid (``st.dataframe``), and the ones wider than their box: "scroll > box" px.
GRID = '[data-testid="stDataFrame"] .dvn-scroller'
WIDER_GRIDS = f"""() => Array.from(document.querySelectorAll('{GRID}'))
  .filter(g => g.scrollWidth > g.clientWidth + 1)
  .map(g => `${{g.scrollWidth}} > ${{g.clientWidth}}`)"""


def wait_for_charts(page) -> dict:
    page.wait_for_function(f"({READ_OUTPUTS})() !== null", timeout=90_000)
    return page.evaluate(READ_OUTPUTS)


def settle(page) -> None:
    page.wait_for_selector(READY, timeout=90_000)
    page.wait_for_function(CHARTS_DRAWN, timeout=90_000)
    time.sleep(1.0)


def test_explorer_responds_to_a_control(app_url: str, browser) -> None:
    page, outside = open_page(browser, f"{app_url}/?d=12&seed=3", height=1400)
    before = wait_for_charts(page)
    assert len(before["rms"]) == 12

    # The first move's control, in the page above the chart.
    slider = page.locator(".st-key-offset").get_by_role("slider")
    slider.focus()
    for _ in range(20):
        slider.press("ArrowRight")  # 20 steps of 0.1: offset 2.0
    # Each press starts a run and cuts short the one before: what counts is the last. The link
    # follows the run that used it, so the page has caught up with the thumb when both say 2.
    try:
        page.wait_for_function("location.search.includes('offset=2')", timeout=90_000)
    except PlaywrightTimeout:
        pytest.fail(
            f"the thumb reads {slider.get_attribute('aria-valuetext')} but the link is "
            f"{page.url} 90 s after the last key press"
        )
    page.wait_for_selector(READY, timeout=90_000)
    page.wait_for_function(
        f"(() => {{ const o = ({READ_OUTPUTS})(); "
        f"return o && o.rms[0] !== {before['rms'][0]}; }})()",
        timeout=90_000,
    )
    after = page.evaluate(READ_OUTPUTS)

    # RMSNorm moved with the offset; LayerNorm cancelled it (float32 on the chart).
    assert max(abs(a - b) for a, b in zip(after["rms"], before["rms"], strict=False)) > 0.1
    assert max(abs(a - b) for a, b in zip(after["layer"], before["layer"], strict=False)) < 1e-6
    assert "offset=2" in page.url
    assert page.locator("[data-testid='stException']").count() == 0
    assert outside == []
    page.close()


@pytest.mark.parametrize("lang", ["en", "id"])
def test_phone_shows_the_metrics_two_to_a_row(app_url: str, browser, lang: str) -> None:
    """On a phone the five metrics sit two, two and one to a row, and nothing scrolls sideways,
    at a state with large offsets (the laptop and presenter views of every page, in both
    languages, are ``tests/test_a11y.py``'s)."""
    size = {"width": 390, "height": 844}
    page = browser.new_page(viewport=size)
    page.goto(f"{app_url}/?d=3&offset=1.5&eps=0.1&lang={lang}")
    settle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    smallest = page.evaluate(SMALLEST_FIGURE_FONT)
    assert smallest is not None and smallest >= 14, smallest
    tops = page.evaluate(
        "Array.from(document.querySelectorAll('[data-testid=\"stMetric\"]'))"
        ".map(m => Math.round(m.getBoundingClientRect().top))"
    )
    assert len(tops) == 5 and len(set(tops)) == 3, tops  # two, two, one
    # Each chart's Data table fits the phone: no column cut off behind a sideways scroll.
    for summary in page.locator(f"[class*='st-key-{DATA_KEY}'] summary").all():
        summary.click()
    page.wait_for_function(f"document.querySelectorAll('{GRID}').length === 3", timeout=90_000)
    settle(page)
    assert page.evaluate(WIDER_GRIDS) == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    # Streamlit scrolls inside its main block, not the document: grow the window to show it all.
    tall = page.evaluate(
        "Math.max(...Array.from(document.querySelectorAll('*')).map(e => e.scrollHeight))"
    )
    page.set_viewport_size({"width": size["width"], "height": min(int(tall) + 50, 16000)})
    time.sleep(2.0)
    page.screenshot(path=str(SHOTS / f"explorer-phone-{lang}.png"), full_page=True)
    page.close()


def test_saved_view_downloads_and_restores(app_url: str, browser, tmp_path) -> None:
    page, outside = open_page(browser, f"{app_url}/?d=7&offset=1.5&seed=9", height=1400)
    saved = wait_for_charts(page)
    assert page.get_by_role("button", name="Whole view (JSON)").count() == 0  # in the dialog
    page.get_by_role("button", name="Link, downloads and restore").click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for(timeout=30_000)
    assert "d=7" in dialog.locator("[data-testid='stCode']").first.inner_text()
    with page.expect_download(timeout=90_000) as info:
        page.get_by_role("button", name="Whole view (JSON)").click()
    path = tmp_path / "view.json"
    info.value.save_as(path)
    page.close()

    page, outside_again = open_page(browser, f"{app_url}/", height=1400)
    assert len(wait_for_charts(page)["rms"]) == 16
    page.get_by_role("button", name="Link, downloads and restore").click()
    page.get_by_role("dialog").wait_for(timeout=30_000)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    page.wait_for_function(
        f"(() => {{ const o = ({READ_OUTPUTS})(); return o && o.rms.length === 7; }})()",
        timeout=90_000,
    )
    page.wait_for_selector(READY, timeout=90_000)
    restored = page.evaluate(READ_OUTPUTS)
    assert restored["rms"] == saved["rms"]
    assert page.get_by_text("The saved view was restored.").count() == 1
    assert page.get_by_role("dialog").count() == 0  # the whole page ran again, the dialog closed
    assert outside == [] and outside_again == []
    page.close()
