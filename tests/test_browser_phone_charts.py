"""Every chart on a phone (390x844), in English and in Indonesian, read from the SVG Plotly drew:
every page, and every step of the lesson with its figure revealed (an answer chosen, then the
reveal button). Two tabs work side by side, the pages in one and the lesson in the other.

- No two titles of a chart (the main title, axis titles, subplot titles and other annotations)
  overlap: two subplot titles side by side ran into each other ("RMSNorm(x) · x kali -1LayerNorm
  (x) · x kali -10").
- No title, axis title or tick label leaves the figure's box (the second row's subplot titles ran
  off both edges).
- A heatmap's cells are at least 12 px on each side (the backward page's 8x8 Jacobians drew
  9.6 px squares on an axis from -10 to 20).
- English only: the presenter's view on a 1920x1080 screen gives each panel of the explorer's
  coordinate chart a fifth of the screen's height or more (they were 130 px tall).
- Each page (the speed lab and the lesson's first step too) in the language of its phone audit
  (``tests.test_a11y.phone_problems``: axe, the closed sidebar, text sizes, metrics), which
  takes the language its laptop audit does not, so that axe reads every page in both.

3D scenes are drawn in WebGL, whose labels no SVG box shows; the speed lab draws its charts only
after a measurement, and is read without them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from axe_playwright_python.sync_playwright import Axe

from benchmarks.live import READY
from labs.lesson.options import STEP_IDS
from tests.test_a11y import phone_lang, phone_problems
from tests.test_browser_phone import (
    BREAKING_CSS,
    FIRST_MOVE_ABOVE_CHART,
    LONG_TITLE,
    SPLIT_WORDS,
    TOO_WIDE,
)
from ui.nav import PAGES

# The page-fit checks of every page in Indonesian, read in the same visit as its charts.
FITS = (TOO_WIDE, BREAKING_CSS, SPLIT_WORDS, LONG_TITLE)

pytestmark = pytest.mark.browser
AXE = Axe()

PHONE = {"width": 390, "height": 844}
SCREEN = {"width": 1920, "height": 1080}
PRESENTER = "controls=hidden&text=large"
TIMEOUT_MS = 60_000
MIN_CELL_PX = 12

# What is wrong with the charts of the main area, as sentences ("chart 2: ..."); one call reads
# every chart of the page.
PROBLEMS = """(minCell) => {
  const out = [];
  const box = e => e.getBoundingClientRect();
  const words = e => (e.textContent || '').trim().slice(0, 50);
  const shown = e => words(e) && box(e).width > 0;
  const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1
    && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const plots = document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot');
  plots.forEach((plot, n) => {
    const fig = box(plot.querySelector('.main-svg'));
    if (fig.width === 0) return;  // in a closed expander
    const where = `chart ${n + 1}`;
    const titles = Array.from(plot.querySelectorAll('.infolayer .gtitle, '
      + '.infolayer [class^="g-"][class$="title"] text, .annotation-text')).filter(shown);
    const ticks = Array.from(plot.querySelectorAll(
      '.xaxislayer-above text, .yaxislayer-above text')).filter(shown);
    for (const e of [...titles, ...ticks]) {
      const b = box(e);
      if (b.left < fig.left - 1 || b.right > fig.right + 1 || b.top < fig.top - 1
          || b.bottom > fig.bottom + 1) {
        out.push(`${where}: "${words(e)}" leaves the figure`);
      }
    }
    titles.forEach((a, i) => titles.slice(i + 1).forEach(b => {
      if (meet(box(a), box(b))) out.push(`${where}: "${words(a)}" overlaps "${words(b)}"`);
    }));
    const images = plot.querySelectorAll('.heatmaplayer image');
    (plot.calcdata || []).filter(cd => cd[0].trace.type === 'heatmap').forEach((cd, k) => {
      const z = cd[0].z, b = images[k] && box(images[k]);
      if (!b) return;
      const w = b.width / z[0].length, h = b.height / z.length;
      if (Math.min(w, h) < minCell) {
        out.push(`${where}: heatmap cells of ${w.toFixed(1)} x ${h.toFixed(1)} px`);
      }
    });
  });
  return out;
}"""
# The run has ended with an error box, or it has ended (READY), every element's code has loaded
# and every chart is drawn, ``least`` charts or more (before its run a fresh page is idle too).
DRAWN = """(least) => {
  if (document.querySelector('[data-testid="stException"]')) return true;
  if (!document.querySelector("$READY")) return false;
  if (document.querySelector('[data-testid^="stSkeleton"], [data-testid="stAppSkeleton"]')) {
    return false;
  }
  const boxes = document.querySelectorAll('[data-testid="stPlotlyChart"]');
  const plots = document.querySelectorAll('.js-plotly-plot');
  return boxes.length >= least && plots.length === boxes.length
    && Array.from(plots).every(p => p._fullData && p._fullData.length > 0);
}""".replace("$READY", READY)
# Pages drawn with something added to their link (the attention sandbox in the plane, whose
# charts are SVG; in space they are WebGL), and pages left out: the speed lab draws its charts
# only after a measurement.
QUERY = {"attention": "&d=2"}
LEFT_OUT = {"speed"}
# The lesson's steps up to this one in a tab of their own, the rest after the pages.
SPLIT = 11
# The heights of the plot areas of the first chart of the main area, in pixels.
PANEL_HEIGHTS = """() => {
  const L = document.querySelector('[data-testid="stMain"] .js-plotly-plot')._fullLayout;
  return Object.keys(L).filter(k => /^yaxis[0-9]*$/.test(k)).map(k => L[k]._length);
}"""


def _read(page, where: str, found: dict[str, list[str]], least: int = 1, fit: bool = False) -> None:
    """Wait until the run has ended and ``least`` charts or more are drawn, every one of them,
    then read the charts' problems; with ``fit``, the page's too (``tests/test_browser_phone``:
    nothing wider than its box, no CSS that breaks words, no word on two lines, a short title)."""
    page.wait_for_function(DRAWN, arg=least, timeout=TIMEOUT_MS)
    problems = page.evaluate(PROBLEMS, MIN_CELL_PX)
    if fit:
        problems += [p for check in FITS for p in page.evaluate(check)]
    if page.locator("[data-testid='stException']").count():
        problems.append("the page shows an exception")
    if problems:
        found[where] = problems


def _audit(page, where: str, lang: str, found: dict[str, list[str]]) -> None:
    """The page's phone audit (``tests.test_a11y.phone_problems``), in the visit made here."""
    if problems := phone_problems(page, AXE, lang):
        found.setdefault(where, []).extend(problems)


def _pages(page, url: str, lang: str, found: dict[str, list[str]]) -> Iterator[None]:
    """Every page that draws a chart when it opens, each loaded anew, then the lesson's last
    steps (yields while a page loads)."""
    for spec in PAGES:
        name = spec.name
        audit = phone_lang(name) == lang
        if name == "lesson" or (name in LEFT_OUT and not audit):
            continue
        path = "" if name == "explorer" else name
        page.goto(f"{url}/{path}?lang={lang}{QUERY.get(name, '')}", wait_until="commit")
        yield
        if name not in LEFT_OUT:
            _read(page, name, found, fit=lang == "id")
        if lang == "id" and name == "explorer" and not page.evaluate(FIRST_MOVE_ABOVE_CHART):
            found["explorer"] = ["the offset is not above the chart"]
        if audit:
            _audit(page, name, lang, found)
    yield from _lesson(page, url, lang, range(SPLIT + 1, len(STEP_IDS) + 1), found)


def _lesson(page, url: str, lang: str, steps: range, found: dict) -> Iterator[None]:
    """The lesson's ``steps`` in one session: choose the first answer, reveal, read the figure,
    then "Next" (yields while the next step loads)."""
    page.goto(f"{url}/lesson?lang={lang}&step={steps[0]}", wait_until="commit")
    for number in steps:
        step_id = STEP_IDS[number - 1]
        yield
        if number == 1 and phone_lang("lesson") == lang:
            page.wait_for_selector(f".st-key-pick_{step_id}")
            _audit(page, "lesson", lang, found)
        page.locator(f".st-key-pick_{step_id} label:has(input[type='radio'])").first.click()
        page.locator(f".st-key-reveal_{step_id} button:not([disabled])").click()
        page.wait_for_selector(f".st-key-fig_{step_id} .js-plotly-plot .main-svg")
        _read(page, f"lesson step {number}", found)
        if number < steps[-1]:
            page.locator(".st-key-next button").click()


def _side_by_side(*flows: Iterator[None]) -> None:
    """Run the flows in turns: while one tab waits for its server run and its drawing, the other
    tabs' runs go on (a third of the time of one tab after another on two cores)."""
    running = list(flows)
    while running:
        for flow in list(running):
            if next(flow, StopIteration) is StopIteration:
                running.remove(flow)


@pytest.fixture(scope="module")
def phones(browser) -> Iterator[tuple[list, list[str]]]:
    """Two tabs at a phone's size, each in a browser context of its own (a second tab of one
    context is drawn at a background tab's pace), for both languages; their browser errors."""
    errors: list[str] = []
    contexts = [browser.new_context(viewport=PHONE) for _ in range(2)]
    for context in contexts:
        context.set_default_timeout(TIMEOUT_MS)
        context.on("weberror", lambda err: errors.append(str(err.error)))
    yield [context.new_page() for context in contexts], errors
    for context in contexts:
        context.close()


@pytest.mark.parametrize("lang", ["en", "id"])
def test_charts_titles_labels_and_cells_fit_a_phone(app_url: str, phones, lang: str) -> None:
    tabs, errors = phones
    errors.clear()
    found: dict[str, list[str]] = {}
    _side_by_side(
        _pages(tabs[0], app_url, lang, found),
        _lesson(tabs[1], app_url, lang, range(1, SPLIT + 1), found),
    )
    if lang == "en":  # the presenter's view of the explorer, on a big screen
        tabs[0].set_viewport_size(SCREEN)
        tabs[0].goto(f"{app_url}/?lang=en&{PRESENTER}", wait_until="commit")
        _read(tabs[0], "presenter", found)
        heights = tabs[0].evaluate(PANEL_HEIGHTS)
        tabs[0].set_viewport_size(PHONE)
        if min(heights) < SCREEN["height"] / 5:
            found["presenter"] = [f"the coordinate panels are {heights} px tall"]
    assert found == {}, "\n".join(f"{where}: {p}" for where, ps in found.items() for p in ps)
    assert errors == []
