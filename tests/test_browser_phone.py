"""The presenter's first screen and a phone held sideways, in real headless Chromium.

The checks that every page fits a phone in Indonesian (the constants below: nothing wider than
its box, no CSS that breaks words anywhere, which split "Implementasi" into "Implem" and "entasi"
in a table, no word drawn on two lines, a title of at most four lines, the explorer's first move
above its chart) run in ``tests/test_browser_phone_charts.py``, in the same visit as its charts.

- Presenter (``controls=hidden&text=large``): the explorer's first screen, on a projector
  (1280x720) and on a phone, shows the top of the chart, with enlarged text, and the offset
  slider that moves it (beside the chart on the projector).

Screenshots go to ``NORMLAB_SHOTS`` (default ``artifacts/``), under ``phone/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labkit.style import LARGE_TEXT_SCALE, MIN_FONT_SIZE
from tests.browser_util import Tab, failures

pytestmark = pytest.mark.browser

SHOTS = Path(os.environ.get("NORMLAB_SHOTS", Path(__file__).resolve().parent.parent / "artifacts"))
# Whole pages too (a second or two each) when a folder for screenshots is named.
WHOLE = "NORMLAB_SHOTS" in os.environ
PHONE = (390, 844)
PROJECTOR = (1280, 720)
PRESENTER = "controls=hidden&text=large"

# Elements wider than their own box (they scroll or clip inside it) or sticking out of the main
# block's sides, as "what: how many pixels" (one pixel of rounding is allowed).
TOO_WIDE = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const bounds = main.getBoundingClientRect();
  const kinds = {
    main: '[data-testid="stMainBlockContainer"]',
    table: '[data-testid="stTable"], [data-testid="stTable"] table, '
      + '[data-testid="stMarkdownContainer"] table',
    dataframe: '[data-testid="stDataFrame"] .dvn-scroller',  // the grid that scrolls
    figure: '[data-testid="stPlotlyChart"], [data-testid="stMain"] .js-plotly-plot',
    code: '[data-testid="stCode"] pre',
  };
  const out = [];
  for (const [kind, selector] of Object.entries(kinds)) {
    document.querySelectorAll(selector).forEach(e => {
      const box = e.getBoundingClientRect();
      if (box.width === 0) return;  // not shown (a closed expander)
      const label = `${kind} "${e.innerText.trim().slice(0, 40)}"`;
      if (e.scrollWidth > e.clientWidth + 1) {
        out.push(`${label}: ${e.scrollWidth - e.clientWidth} px wider than its box`);
      }
      const out_by = Math.max(bounds.left - box.left, box.right - bounds.right);
      if (out_by > 1) out.push(`${label}: ${Math.round(out_by)} px outside the page`);
    });
  }
  return out;
}"""
# Elements of the main area whose computed style lets a word break anywhere: also where the
# word would fit a line of its own, and (through a table's narrowest width) squeezing a column
# to a few letters. ``overflow-wrap: break-word`` breaks only a word longer than a whole line.
BREAKING_CSS = """() => {
  const out = new Set();
  document.querySelectorAll('[data-testid="stMain"] *').forEach(e => {
    const s = getComputedStyle(e);
    const how = [s.wordBreak === 'break-all' && 'word-break: break-all',
                 s.wordBreak === 'break-word' && 'word-break: break-word',
                 s.overflowWrap === 'anywhere' && 'overflow-wrap: anywhere'].filter(Boolean);
    if (how.length && e.innerText && e.innerText.trim()) {
      const box = e.closest('[data-testid]');
      out.add(`${how.join(', ')} on ${e.tagName.toLowerCase()} in ${box && box.dataset.testid}`);
    }
  });
  return Array.from(out);
}"""
# Words of the main area's text drawn on two lines (a break inside the word, not at a space,
# a hyphen, a slash or a zero-width space); the charts' and formulas' text is Plotly's and
# KaTeX's, and code breaks a name longer than a phone's line where it must.
SPLIT_WORDS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT, {
    acceptNode: n => n.parentElement.closest('.js-plotly-plot, .katex, svg, pre')
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT});
  const out = [], range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of node.textContent.matchAll(/[^\\s\\-\u2010-\u2014/\u200b]{2,}/g)) {
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set(Array.from(range.getClientRects(), r => Math.round(r.top)));
      if (tops.size > 1) out.push(`the word "${m[0]}" split over ${tops.size} lines`);
    }
  }
  return out;
}"""
# The explorer's first move, the offset slider, sits in the page (not the sidebar, which on a
# phone covers the page when open) above the chart it moves.
FIRST_MOVE_ABOVE_CHART = """() => {
  const slider = document.querySelector('[data-testid="stMain"] .st-key-offset');
  const chart = document.querySelector('.st-key-coords');
  return Boolean(slider && chart
    && slider.getBoundingClientRect().bottom <= chart.getBoundingClientRect().top);
}"""
# The top of the first chart, in pixels from the top of the window, and the window's height.
FIRST_CHART = """() => {
  const chart = document.querySelector('[data-testid="stMain"] [data-testid="stPlotlyChart"]');
  return chart && {top: chart.getBoundingClientRect().top, height: window.innerHeight,
                   font: chart.querySelector('.js-plotly-plot')._fullLayout.xaxis.tickfont.size};
}"""


# Streamlit scrolls its main block, not the document: the page's full height is that block's.
CONTENT_HEIGHT = """() => Math.max(...Array.from(
  document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"]'),
  e => e.scrollHeight))"""


def shoot(tab: Tab, name: str, *, whole: bool = False) -> None:
    """The first screen as a visitor sees it and, with ``whole``, the whole page at the same
    width (the window grown to the page's height for a moment)."""
    folder = SHOTS / "phone"
    folder.mkdir(parents=True, exist_ok=True)
    page = tab.page
    page.screenshot(path=str(folder / f"{name}.png"))
    if whole:
        size = page.viewport_size
        tall = min(int(page.evaluate(CONTENT_HEIGHT)) + 50, 16_000)
        page.set_viewport_size({"width": size["width"], "height": tall})
        page.wait_for_timeout(800)  # Plotly redraws for the new height
        page.screenshot(path=str(folder / f"{name}-full.png"), full_page=True)
        page.set_viewport_size(size)


# A title of more than four lines, which pushes the page's first move below the first screen.
LONG_TITLE = """() => {
  const h = document.querySelector('[data-testid="stMain"] h1');
  const line = parseFloat(getComputedStyle(h).lineHeight);
  const lines = Math.round(h.getBoundingClientRect().height / line);
  return lines > 4 ? [`title: ${lines} lines`] : [];
}"""


@pytest.mark.parametrize("size", [PROJECTOR, PHONE], ids=["projector", "phone"])
def test_the_presenters_first_screen_shows_the_chart(app_url: str, browser, size) -> None:
    errors: list[str] = []
    tab = Tab(browser, errors, *size).load(f"{app_url}/?lang=id&{PRESENTER}")
    tab.settle()
    chart = tab.page.evaluate(FIRST_CHART)
    shoot(tab, f"presenter-{size[0]}")
    assert chart is not None
    # A quarter of the window at least shows the chart: its legend and the start of the plot.
    assert chart["top"] < chart["height"] * 3 / 4, chart
    assert chart["font"] >= MIN_FONT_SIZE * LARGE_TEXT_SCALE - 0.5, chart
    # The offset, the page's experiment, is in the page: beside the chart on a projector's first
    # screen, under it on a phone; and it moves (the link follows).
    offset = tab.page.locator("[data-testid='stMain'] .st-key-offset")
    box = offset.bounding_box()
    assert size == PHONE or box["y"] + box["height"] <= size[1], box
    offset.get_by_role("slider").press("ArrowRight")
    tab.page.wait_for_function("location.search.includes('offset=0.1')", timeout=60_000)
    assert failures(tab.page) == [] and errors == []
    tab.context.close()


def test_the_presenters_tables_fit_a_phone(app_url: str, browser) -> None:
    """Large text on a phone leaves a table at the phone's own size: at 22 px the inspector's
    placement table ran 37 px off the screen, the contracts page's settings 83 px."""
    errors: list[str] = []
    tab = Tab(browser, errors, *PHONE).load(f"{app_url}/inspector?lang=id&{PRESENTER}")
    tab.settle()
    shoot(tab, "presenter-tables")
    assert tab.page.locator("[data-testid='stTable']").count()
    assert [p for p in tab.page.evaluate(TOO_WIDE) if p.startswith("table")] == []
    assert errors == []
    tab.context.close()


def test_a_phone_held_sideways_opens_with_the_sidebar_closed(app_url: str, browser) -> None:
    """844 x 390 is wide enough for Streamlit to open the sidebar, over 38 % of the width of a
    screen 390 px tall: the page opens with it closed, and its button opens it."""
    page = browser.new_page(viewport={"width": 844, "height": 390}, is_mobile=True, has_touch=True)
    page.goto(f"{app_url}/invariance?lang=id")
    closed = "() => document.querySelector('[data-testid=stSidebar]')?.dataset.collapsed === 'true'"
    page.wait_for_function(closed, timeout=60_000)
    page.close()
