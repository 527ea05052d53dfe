"""The attention sandbox in real headless Chromium: the plane view's figure type, a slider driven
by the keyboard, and the presenter view's own sentences (every size and both languages at the
default state are ``tests/test_a11y.py``'s)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.live import READY
from tests.browser_util import open_page
from ui.i18n import t

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("NORMLAB_SHOTS", Path(__file__).resolve().parents[3] / "artifacts"))
CHARTS = 9  # three keys figures, three bar charts under the query, three at the best query

# Every Plotly chart's smallest text: ticks and axis titles (2D axes or 3D scene axes) and the
# key labels drawn beside the markers.
FONT_SIZES = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => {
  const L = p._fullLayout, sizes = [];
  for (const name of ['xaxis', 'yaxis']) {
    if (L[name] && L[name].visible !== false) {
      sizes.push(L[name].tickfont.size, L[name].title.font.size);
    }
  }
  if (L.scene) {
    for (const name of ['xaxis', 'yaxis', 'zaxis']) sizes.push(L.scene[name].title.font.size);
  }
  for (const tr of p._fullData) {
    if (tr.textfont && tr.text) sizes.push(tr.textfont.size);
  }
  return Math.min(...sizes);
})"""
CHARTS_READY = f"""() => {{
  const plots = document.querySelectorAll('.js-plotly-plot');
  return plots.length >= {CHARTS} && Array.from(plots).every(p => p._fullLayout);
}}"""
WEIGHTS = """key => {
  const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  return plot && plot._fullData ? Array.from(plot._fullData[0].y) : null;
}"""


@pytest.fixture(scope="module", autouse=True)
def routed(app_url, browser) -> None:
    """Open the landing page once first, as test_offline does: it runs the router, which
    registers every page's url path. (A deep link as a fresh server's very first request is
    run outside the router once, and Streamlit then fetches the page's icon as the favicon
    from fonts.gstatic.com; that is the app's frame, not this page.)"""
    page, _ = open_page(browser, f"{app_url}/")
    page.close()


def load(browser, url: str, *, width: int = 1366, height: int = 2600):
    page, outside = open_page(browser, url, width=width, height=height)
    page.wait_for_function(CHARTS_READY, timeout=90_000)
    assert page.locator("[data-testid='stException']").count() == 0
    return page, outside


def no_sideways_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def shoot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.wait_for_timeout(800)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_the_plane_view_reads_with_large_enough_figure_text(app_url, browser) -> None:
    """d = 2 draws the keys in the plane (the default d = 3 in space, in both languages and at
    every size, is ``tests/test_a11y.py``'s)."""
    lang, d = "id", "2"
    page, outside = load(browser, f"{app_url}/attention?lang={lang}&d={d}")
    assert page.get_by_text(t("attention.title", lang)).count() == 1
    assert page.get_by_text(t("attention.keys_heading", lang)).count() == 1
    assert min(page.evaluate(FONT_SIZES)) >= 14
    assert no_sideways_scroll(page)
    assert outside == []
    shoot(page, f"attention-{lang}-d{d}")
    page.close()


def test_turning_the_query_onto_one_by_keyboard_makes_layer_norm_uniform(app_url, browser) -> None:
    # In the plane (d=2): the same weights, drawn in SVG, not three WebGL scenes per rerun.
    page, outside = load(browser, f"{app_url}/attention?lang=en&angle=5&d=2")
    before = page.evaluate(WEIGHTS, "weights_layer")
    assert max(before) - min(before) > 1e-3
    slider = page.locator(".st-key-angle input[type='range']")
    slider.focus()
    for _ in range(5):
        slider.press("ArrowLeft")  # 5 steps of 1°: the angle from 1 becomes 0
    page.wait_for_function(
        f"(() => {{ const w = ({WEIGHTS})('weights_layer'); "
        "return w && Math.max(...w) - Math.min(...w) < 1e-9; })()",
        timeout=90_000,
    )
    page.wait_for_selector(READY, timeout=90_000)
    after = page.evaluate(WEIGHTS, "weights_layer")
    assert all(abs(w - 1 / len(after)) < 1e-9 for w in after)
    rms = page.evaluate(WEIGHTS, "weights_rms")
    assert max(rms) - min(rms) > 1e-3  # RMSNorm's keys are not ⟂ 1
    assert "angle=0" in page.url
    assert outside == []
    page.close()


def test_presenter_view_shows_figures_and_sentences_only_with_larger_type(app_url, browser) -> None:
    url = f"{app_url}/attention?lang=en&controls=hidden&text=large"
    page, outside = load(browser, url, width=1920, height=3000)
    assert page.locator("section[data-testid='stSidebar']").is_hidden()
    assert page.locator(".st-key-use_layer").count() == 0
    assert page.get_by_text(t("common.share_heading", "en")).count() == 0
    assert page.get_by_text(t("attention.uniform_heading", "en")).count() == 1
    assert min(page.evaluate(FONT_SIZES)) >= 18
    assert no_sideways_scroll(page)
    assert outside == []
    shoot(page, "attention-presenter")
    page.close()
