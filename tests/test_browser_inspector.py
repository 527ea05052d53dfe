"""The checkpoint inspector in real headless Chromium: shipped and locally built models load,
the charts show both models, nothing leaves the machine, and the page fits a phone."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import live_app, open_page

from tests.inspector_fixture import tiny_dir
from ui.i18n import t

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("NORMLAB_SHOTS", Path(__file__).resolve().parent.parent / "artifacts"))
CHARTS = ("readings_share", "readings_rms", "readings_top", "gains_a")

# Trace names and the smallest font size of each readings chart, read from Plotly's own state.
READ_CHARTS = """(keys) => {
  const out = {};
  for (const key of keys) {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    if (!plot || !plot._fullLayout) return null;
    const L = plot._fullLayout;
    const sizes = {font: L.font?.size, title: L.title?.font?.size,
                   xtitle: L.xaxis?.title?.font?.size, xticks: L.xaxis?.tickfont?.size,
                   yticks: L.yaxis?.tickfont?.size, legend: L.legend?.font?.size};
    out[key] = {names: plot._fullData.map(t => t.name), sizes: sizes,
                font: Math.min(...Object.values(sizes).filter(v => v !== undefined))};
  }
  return out;
}"""
OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture(scope="module")
def inspector_url() -> Iterator[str]:
    """A server whose host lists the tiny local models (the hub stays off)."""
    with live_app(env={"NORMLAB_MODEL_DIRS": str(tiny_dir()), "NORMLAB_HUB": None}) as url:
        yield url


def wait_for_charts(page, keys=CHARTS) -> dict:
    page.wait_for_function(f"({READ_CHARTS})({list(keys)}) !== null", timeout=180_000)
    return page.evaluate(f"({READ_CHARTS})({list(keys)})")


# Streamlit scrolls its main block, not the document: the page's full height is that block's.
CONTENT_HEIGHT = """() => Math.max(...Array.from(
  document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"]'),
  e => e.scrollHeight))"""


def shot(page, name: str) -> None:
    """The viewport as the test saw it, then the whole page at the same width."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    time.sleep(1.0)  # let Plotly finish its transitions
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    width = page.viewport_size["width"]
    page.set_viewport_size({"width": width, "height": int(page.evaluate(CONTENT_HEIGHT)) + 50})
    time.sleep(1.5)
    page.screenshot(path=str(SHOTS / f"{name}-full.png"), full_page=True)


# One language each: the page's every size in both languages is tests/test_a11y.py's.
@pytest.mark.parametrize("lang", ["en"])
def test_the_shipped_pair_on_a_laptop(inspector_url: str, browser, lang: str) -> None:
    page, outside = open_page(
        browser, f"{inspector_url}/inspector?lang={lang}", width=1366, height=900
    )
    charts = wait_for_charts(page, CHARTS + ("gains_b",))
    assert charts["readings_share"]["names"] == ["A: rms-seed0", "B: layer-seed0"]
    assert all(chart["font"] >= 14 for chart in charts.values()), charts
    assert page.get_by_text(t("inspector.contract_heading", lang)).count() == 1
    hub_box = page.get_by_label(t("inspector.hub_label", lang))
    assert hub_box.is_disabled()
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.evaluate(OVERFLOW) <= 0
    assert outside == []
    shot(page, f"inspector-{lang}-1366")
    page.close()


@pytest.mark.parametrize("lang", ["id"])
def test_local_models_on_a_phone(inspector_url: str, browser, lang: str) -> None:
    query = f"model=local:tiny-gemma&compare=local:tiny-gpt2&lang={lang}"
    page, outside = open_page(browser, f"{inspector_url}/inspector?{query}", width=390, height=844)
    charts = wait_for_charts(page)
    assert charts["readings_share"]["names"] == ["A: tiny-gemma", "B: tiny-gpt2"]
    # A phone opens with the sidebar over the page: a reader closes it first.
    collapse = page.locator("[data-testid='stSidebarCollapseButton'] button")
    if collapse.count():
        collapse.first.click()
        page.wait_for_timeout(800)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.evaluate(OVERFLOW) <= 0
    assert outside == []
    shot(page, f"inspector-{lang}-390")
    page.close()


def test_a_first_load_leaves_its_progress_box_marked_done(inspector_url: str, browser) -> None:
    """tiny-olmo2 is opened by no other test here, so this visit loads it."""
    page, outside = open_page(
        browser, f"{inspector_url}/inspector?model=local:tiny-olmo2&compare=none&lang=en"
    )
    wait_for_charts(page)
    assert page.get_by_text(t("inspector.step_done", "en", name="tiny-olmo2")).count() == 1
    assert outside == []
    page.close()
