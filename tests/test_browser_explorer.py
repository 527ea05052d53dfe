"""The explorer in real headless Chromium: it loads, a control moves, the charts follow."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import READY, open_page

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("NORMLAB_SHOTS", Path(__file__).resolve().parent.parent / "artifacts"))

# The y values of the RMSNorm and LayerNorm traces in the coordinates chart (key "coords").
READ_OUTPUTS = """() => {
  const plot = document.querySelector('.st-key-coords .js-plotly-plot');
  if (!plot || !plot._fullData) return null;
  const pick = name => Array.from(plot._fullData.find(t => t.name === name).y);
  return {rms: pick('RMSNorm(x)'), layer: pick('LayerNorm(x)')};
}"""


def wait_for_charts(page) -> dict:
    page.wait_for_function(f"({READ_OUTPUTS})() !== null", timeout=90_000)
    return page.evaluate(READ_OUTPUTS)


def test_explorer_responds_to_a_control(app_url: str, browser) -> None:
    page, outside = open_page(browser, f"{app_url}/?d=12&seed=3", height=1400)
    before = wait_for_charts(page)
    assert len(before["rms"]) == 12

    slider = page.get_by_role("slider").nth(0)  # the first slider in the sidebar: offset
    slider.focus()
    for _ in range(20):
        slider.press("ArrowRight")  # 20 steps of 0.1: offset 2.0
    page.wait_for_function(
        f"(() => {{ const o = ({READ_OUTPUTS})(); "
        f"return o && o.rms[0] !== {before['rms'][0]}; }})()",
        timeout=90_000,
    )
    page.wait_for_selector(READY, timeout=90_000)
    after = page.evaluate(READ_OUTPUTS)

    # RMSNorm moved with the offset; LayerNorm cancelled it.
    assert max(abs(a - b) for a, b in zip(after["rms"], before["rms"], strict=False)) > 0.1
    assert max(abs(a - b) for a, b in zip(after["layer"], before["layer"], strict=False)) < 1e-9
    assert "offset=2" in page.url

    assert page.locator("[data-testid='stException']").count() == 0
    assert outside == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    time.sleep(1.0)
    page.screenshot(path=str(SHOTS / "explorer.png"), full_page=True)
    page.close()


def test_link_opens_in_indonesian_with_the_3d_view(app_url: str, browser) -> None:
    page, outside = open_page(browser, f"{app_url}/?d=3&lang=id&eps=0.1", height=2600)
    wait_for_charts(page)
    assert page.get_by_text("RMSNorm dan LayerNorm, berdampingan").count() == 1
    page.wait_for_function(
        """() => Array.from(document.querySelectorAll('.js-plotly-plot')).some(
             p => p._fullData && p._fullData.some(t => t.type === 'surface'))""",
        timeout=90_000,
    )
    assert page.locator("[data-testid='stException']").count() == 0
    assert outside == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "explorer-id-3d.png"), full_page=True)
    page.close()


def test_saved_view_downloads_and_restores(app_url: str, browser, tmp_path) -> None:
    page, outside = open_page(browser, f"{app_url}/?d=7&offset=1.5&seed=9", height=1400)
    saved = wait_for_charts(page)
    with page.expect_download(timeout=90_000) as info:
        page.get_by_role("button", name="Whole view (JSON)").click()
    path = tmp_path / "view.json"
    info.value.save_as(path)
    page.close()

    page, outside_again = open_page(browser, f"{app_url}/", height=1400)
    assert len(wait_for_charts(page)["rms"]) == 16
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    page.wait_for_function(
        f"(() => {{ const o = ({READ_OUTPUTS})(); return o && o.rms.length === 7; }})()",
        timeout=90_000,
    )
    page.wait_for_selector(READY, timeout=90_000)
    restored = page.evaluate(READ_OUTPUTS)
    assert restored["rms"] == saved["rms"]
    assert page.get_by_text("The saved view was restored.").count() == 1
    assert outside == [] and outside_again == []
    page.close()
