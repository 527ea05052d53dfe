"""The training lab in real headless Chromium: the shipped curves are on screen at once, and a
live run of a few seconds grows its curves while it trains, then shows its own comparison."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from benchmarks.live import READY
from tests.browser_util import open_page

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("NORMLAB_SHOTS", Path(__file__).resolve().parents[3] / "artifacts"))
# Small enough to finish in a few seconds on a busy two-core machine, long enough for several
# redraws of the growing chart (every 0.5 s).
LIVE = "width=16&depth=1&steps=300"

# Points of every trace in the charts whose container class starts with ``prefix``.
POINTS = """(prefix) => {
  const selector = `[class*="st-key-${prefix}"] .js-plotly-plot`;
  const plots = Array.from(document.querySelectorAll(selector));
  return plots.map(p => (p._fullData || []).reduce((n, t) => n + (t.x ? t.x.length : 0), 0));
}"""
# Font sizes of every chart's text, as Plotly laid it out.
FONTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => {
  const l = p._fullLayout;
  return Math.min(l.font.size, l.xaxis.tickfont.size, l.yaxis.tickfont.size, l.legend.font.size);
})"""


@pytest.fixture(scope="module", autouse=True)
def routed(app_url, browser) -> None:
    """Open the landing page first, as test_offline does: a server whose very first visitor
    follows a deep link reruns that page once through the router (ui.frame.ensure_router), and
    then sets the page's Material icon as the favicon, which the browser fetches from
    fonts.gstatic.com (every page with such an icon does; not this page's doing)."""
    page, _ = open_page(browser, f"{app_url}/")
    page.close()


def shipped_points(page) -> list[int]:
    page.wait_for_selector(".st-key-shipped_step .js-plotly-plot", timeout=90_000)
    page.wait_for_function(f"({POINTS})('shipped_step')[0] > 0", timeout=90_000)
    return page.evaluate(POINTS, "shipped_step")


def growing_points(page) -> int:
    counts = page.evaluate(POINTS, "growing_")
    return max(counts) if counts else 0


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name))


@pytest.mark.parametrize(("lang", "button"), [("en", "Train"), ("id", "Latih")])
def test_shipped_curves_at_once_and_a_live_run_grows(app_url, browser, lang, button) -> None:
    # A seed per language: the same settings twice would be served the first run, not trained.
    seed = {"en": 1, "id": 2}[lang]
    page, outside = open_page(
        browser, f"{app_url}/training?lang={lang}&{LIVE}&seed={seed}", width=1366
    )
    # Twelve runs (four variants, three seeds), each with its 31 validation points and a binned
    # training curve: drawn without a click.
    assert shipped_points(page)[0] > 12 * 31
    assert min(page.evaluate(FONTS)) >= 14
    shot(page, f"training-{lang}-1366.png")

    page.get_by_role("button", name=button).click()
    page.wait_for_function(f"({POINTS})('growing_').some(n => n > 0)", timeout=90_000)
    first = growing_points(page)
    shot(page, f"training-{lang}-1366-during.png")
    # The same chart, redrawn with more points while the training runs.
    page.wait_for_function(
        f"({POINTS})('growing_').some(n => n > {first})", timeout=60_000, polling=100
    )

    page.wait_for_selector(".st-key-live_step .js-plotly-plot", timeout=120_000)
    page.wait_for_selector(READY, timeout=120_000)
    assert page.evaluate(POINTS, "live_step")[0] > 0
    assert page.evaluate(POINTS, "growing_") == []  # the growing chart gave way to the result
    assert page.locator("[data-testid='stException']").count() == 0
    time.sleep(1.0)
    shot(page, f"training-{lang}-1366-after.png")
    assert outside == []
    page.close()
