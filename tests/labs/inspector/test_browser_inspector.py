"""The checkpoint inspector in real headless Chromium: shipped and locally built models load,
the charts show both models, nothing leaves the machine, the page fits a phone, and a visitor's
own text runs and travels in the link."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from benchmarks.live import READY
from labs.inspector import Settings, inspect_view
from labs.inspector.readings import DEFAULT_PROMPT
from tests.browser_util import live_app, open_page
from tests.inspector_fixture import tiny_dir
from ui.i18n import t

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("NORMLAB_SHOTS", Path(__file__).resolve().parents[3] / "artifacts"))
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


# What a reader sees of the page's state: Streamlit's error boxes, the notices, the text the
# models read (the first code block) and the mean's share the first chart plots for model A.
PAGE_STATE = """() => {
  const code = document.querySelector('[data-testid="stMain"] [data-testid="stCode"] code');
  const plot = document.querySelector('.st-key-readings_share .js-plotly-plot');
  return {errors: Array.from(document.querySelectorAll(
            '[data-testid="stException"], [data-testid="stAlertContentError"]'), e => e.innerText),
          warnings: Array.from(document.querySelectorAll('[data-testid="stAlertContentWarning"]'),
            e => e.innerText),
          read: code ? code.innerText.trim() : null,
          share: plot && plot._fullData ? Array.from(plot._fullData[0].y) : null};
}"""


def shares(text: str) -> list[float]:
    view = inspect_view({"a": "local:tiny-llama"}, text, Settings(model_dirs=(tiny_dir(),)))
    return [r.share for r in view.sides["a"].readings]


def assert_shows(state: dict, typed: str) -> None:
    assert state["errors"] == [] and state["warnings"] == [], state
    assert state["read"] == typed
    # The chart's float64 values as JSON carries them: equal to a few ulps.
    pairs = zip(state["share"], shares(typed), strict=True)
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in pairs), state["share"]


def test_typed_text_runs_and_its_link_reproduces_it(inspector_url: str, browser) -> None:
    """Typing into "Your own text" reruns the page on that text (no error: the link name is
    the page's own), the URL carries it, and the URL opened afresh shows the same."""
    typed = "Hello class: norms divide by the RMS."
    assert shares(typed) != shares(DEFAULT_PROMPT)
    query = "model=local:tiny-llama&compare=none&lang=en"
    page, outside = open_page(browser, f"{inspector_url}/inspector?{query}")
    wait_for_charts(page, ("readings_share",))
    box = page.get_by_role("textbox", name=t("inspector.text_label", "en"))
    box.fill(typed)
    box.press("Enter")
    page.wait_for_function(
        f"(({PAGE_STATE})().read === {typed!r}) || ({PAGE_STATE})().errors.length > 0",
        timeout=120_000,
    )
    page.wait_for_selector(READY, timeout=120_000)
    assert page.evaluate(PAGE_STATE)["errors"] == []
    wait_for_charts(page, ("readings_share",))
    assert_shows(page.evaluate(PAGE_STATE), typed)
    link = page.url
    assert parse_qs(urlsplit(link).query)["prompt"] == [typed]
    assert "text" not in parse_qs(urlsplit(link).query)
    page.close()

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    fresh = context.new_page()
    fresh.goto(link)
    fresh.wait_for_selector(READY, timeout=60_000)
    wait_for_charts(fresh, ("readings_share",))
    # The text block is drawn after the chart: a run still under way has the one, not the other.
    fresh.wait_for_function(f"({PAGE_STATE})().read !== null", timeout=60_000)
    assert_shows(fresh.evaluate(PAGE_STATE), typed)
    assert fresh.get_by_role("textbox", name=t("inspector.text_label", "en")).input_value() == typed
    context.close()
    assert outside == []
