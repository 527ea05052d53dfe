"""Every page in real headless Chromium as a laptop, a phone, a projector and a keyboard meet it.

- Laptop (1366x900), every page in one language (the one its phone visit does not use, so
  that axe audits each page in both): axe-core finds no serious or critical
  violation of WCAG 2.1 A/AA, every chart has its alt text, figure text is at least 14 px
  (read from Plotly's resolved layout), no metric is cut off, nothing scrolls sideways, no
  exception is shown and the browser asks no other host for anything (the app works offline).
- Phone (390x844), every page in the other language: the same axe audit, the sidebar starts
  closed, metrics sit at least two to a row, no chart toolbar over a legend, figure text at least
  14 px, no sideways scrolling (``phone_problems``, run in the visits of
  ``tests/test_browser_phone_charts.py``).
- Presenter (1920x1080, ``controls=hidden&text=large``): every page's, in
  ``tests/test_browser_scenarios*.py`` (the view of each scenario's last state).
- Keyboard: a slider, a select box, a segmented control, a radio group and a button, reached
  with Tab and worked with the arrow keys, Enter and Space.

One server and one browser for the whole file; each page is visited once per viewport. With
``NORMLAB_SHOTS=<folder>`` every visit also saves a full-page screenshot there.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from benchmarks.live import READY
from labkit.style import MIN_FONT_SIZE
from tests.browser_util import CUT_METRICS, SMALLEST_FONTS, is_local, open_page
from ui.i18n import t
from ui.nav import PAGES

pytestmark = pytest.mark.browser

NAMES = [spec.name for spec in PAGES]
LAPTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
AXE_OPTIONS = {
    "runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
    "resultTypes": ["violations"],
}
SEVERE = ("serious", "critical")
SHOTS = os.environ.get("NORMLAB_SHOTS")

# Every Plotly chart the script sent has been drawn.
CHARTS_DRAWN = """() => {
  const boxes = document.querySelectorAll('[data-testid="stPlotlyChart"]');
  const plots = document.querySelectorAll('.js-plotly-plot');
  return plots.length === boxes.length && Array.from(plots).every(p => p._fullLayout);
}"""
# Groups of metrics that share a row container: how many sit on the group's first row.
METRICS_ON_FIRST_ROW = """() => {
  const groups = new Map();
  document.querySelectorAll('[data-testid="stMetric"]').forEach(m => {
    const row = m.closest('[data-testid="stHorizontalBlock"], [data-testid="stLayoutWrapper"]')
      || m.parentElement;
    if (!groups.has(row)) groups.set(row, []);
    groups.get(row).push(Math.round(m.getBoundingClientRect().top));
  });
  return Array.from(groups.values()).filter(tops => tops.length > 1)
    .map(tops => tops.filter(top => top === Math.min(...tops)).length);
}"""
# Whether a chart's Plotly toolbar covers part of its legend (a hidden toolbar has no size).
TOOLBAR_OVER_LEGEND = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).some(p => {
  const bar = p.querySelector('.modebar'), legend = p.querySelector('.legend');
  if (!bar || !legend) return false;
  const a = bar.getBoundingClientRect(), b = legend.getBoundingClientRect();
  return a.width > 0 && a.height > 0
    && a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
})"""


@pytest.fixture(scope="module", autouse=True)
def routed(app_url, browser) -> None:
    """Open the landing page first, as the other browser tests do: a fresh server's very first
    request, if it is a deep link, runs that page once outside the router."""
    page, _ = open_page(browser, f"{app_url}/")
    page.close()


@pytest.fixture(scope="module")
def axe():
    from axe_playwright_python.sync_playwright import Axe

    return Axe()


def url(app_url: str, name: str, query: str) -> str:
    path = "" if name == "explorer" else name
    return f"{app_url}/{path}?{query}"


def settle(page) -> None:
    """The script has finished, every chart is drawn, every web font has loaded, and the page
    stayed so for a moment (a first visit may rerun once through the router, and charts mount
    after the script ends). Until KaTeX's fonts arrive a formula is laid out in a fallback font,
    which may stick out of its box: on a busy machine axe once found two formulas scrollable, and
    unfinished fonts are the likeliest cause found (it did not happen again in isolation). Two
    looks 300 ms apart must agree."""
    charts = -1
    for _ in range(30):
        page.wait_for_selector(READY, timeout=90_000)
        page.wait_for_function(CHARTS_DRAWN, timeout=90_000)
        page.wait_for_function("document.fonts.status === 'loaded'", timeout=90_000)
        drawn = page.locator("[data-testid='stPlotlyChart']").count()
        page.wait_for_timeout(300)
        if drawn == charts and page.locator(READY).count() == 1:
            return
        charts = drawn
    raise AssertionError("the page kept changing")


def visit(browser, address: str, size: dict):
    page = browser.new_page(viewport=size)
    outside: list[str] = []
    page.on("request", lambda req: outside.append(req.url) if not is_local(req.url) else None)
    page.goto(address)
    settle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    return page, outside


def severe_violations(axe, page, again: bool = True) -> list[str]:
    """axe-core's serious and critical WCAG 2.1 A/AA violations, one line per rule; found ones
    are looked for again a second later, and only those still there count (under load CI twice
    caught two of the contracts page's formulas scrollable for a moment, a layout not yet at
    rest, never reproduced in isolation; a real violation stays)."""
    found = axe.run(page, options=AXE_OPTIONS).response["violations"]
    lines = [
        f"{v['id']} ({v['impact']}, {len(v['nodes'])} nodes): {v['nodes'][0]['html'][:120]}"
        for v in found
        if v["impact"] in SEVERE
    ]
    if lines and again:
        page.wait_for_timeout(1000)
        return severe_violations(axe, page, again=False)
    return lines


def overflow(page) -> int:
    """How far the page is wider than the window (0 or less: no sideways scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def unnamed_charts(page) -> int:
    """Charts without alt text (Streamlit writes ``alt`` as the figure's aria-label)."""
    return page.evaluate(
        "Array.from(document.querySelectorAll('[data-testid=\"stPlotlyChart\"]'))"
        ".filter(c => !(c.getAttribute('aria-label') || '').trim()).length"
    )


def shoot(page, name: str) -> None:
    """A full-page screenshot when ``NORMLAB_SHOTS`` names a folder (Streamlit scrolls inside
    its main block, so the window grows to the page's height first)."""
    if not SHOTS:
        return
    Path(SHOTS).mkdir(parents=True, exist_ok=True)
    tall = page.evaluate(
        "Math.max(...Array.from(document.querySelectorAll('*')).map(e => e.scrollHeight))"
    )
    width = page.viewport_size["width"]
    page.set_viewport_size({"width": width, "height": min(int(tall) + 50, 16000)})
    time.sleep(1.5)
    page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


@pytest.mark.parametrize("name", NAMES)
def test_laptop_page_is_accessible_and_readable(app_url, browser, axe, name) -> None:
    lang = "id" if phone_lang(name) == "en" else "en"
    page, outside = visit(browser, url(app_url, name, f"lang={lang}"), LAPTOP)
    assert severe_violations(axe, page) == []
    assert unnamed_charts(page) == 0
    smallest = page.evaluate(SMALLEST_FONTS)
    assert all(size >= MIN_FONT_SIZE for size in smallest), smallest
    assert overflow(page) <= 0
    assert page.evaluate(CUT_METRICS) == []
    assert outside == []
    shoot(page, f"{name}-laptop-{lang}")
    page.close()


def phone_lang(name: str) -> str:
    """The language a page's phone visit is audited in: the other one than its laptop visit's."""
    return ("en", "id")[NAMES.index(name) % 2]


def phone_problems(page, axe, lang: str) -> list[str]:
    """A page on a phone, as sentences: its sidebar starts closed with the button that opens it
    named in the page's language, axe finds nothing serious, nothing scrolls sideways, figure
    text is at least 14 px, metrics sit at least two to a row, none is cut off and no chart
    toolbar covers a legend. ``tests/test_browser_phone_charts.py`` calls it in the visit it
    makes of each page in ``phone_lang``."""
    settle(page)
    out = severe_violations(axe, page)
    if page.locator("[data-testid='stSidebar']").get_attribute("data-collapsed") != "true":
        out.append("the sidebar starts open")
    if not page.get_by_role("button", name=t("chrome.expand_sidebar", lang)).is_visible():
        out.append("no button opens the sidebar")
    if overflow(page) > 0:
        out.append(f"the page scrolls sideways by {overflow(page)} px")
    if min(page.evaluate(SMALLEST_FONTS), default=MIN_FONT_SIZE) < MIN_FONT_SIZE:
        out.append(f"figure text of {page.evaluate(SMALLEST_FONTS)} px")
    if not all(n >= 2 for n in page.evaluate(METRICS_ON_FIRST_ROW)):
        out.append("a metric alone on its row")
    out += [f"cut off: {text}" for text in page.evaluate(CUT_METRICS)]
    if page.evaluate(TOOLBAR_OVER_LEGEND):
        out.append("a chart's toolbar covers its legend")
    return out


# Where the keyboard is: the widget key of the focused element's container, and its state.
FOCUS = """() => {
  const e = document.activeElement;
  const box = e && e.closest('[class*="st-key-"]');
  const key = box ? box.className.match(/st-key-(\\S+)/)[1] : null;
  return {key, tag: e ? e.tagName : null, role: e ? e.getAttribute('role') : null};
}"""


# The option a focused select box's open list marks active (where Enter would choose).
ACTIVE_OPTION = """() => {
  const id = document.activeElement.getAttribute('aria-activedescendant');
  const option = id && document.getElementById(id);
  return option ? option.innerText.trim() : null;
}"""


def tab_to(page, key: str, *, back: bool = False, most: int = 60) -> dict:
    """Press Tab (Shift+Tab with ``back``) until the widget keyed ``key`` has the focus."""
    for _ in range(most):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        focus = page.evaluate(FOCUS)
        if focus["key"] == key:
            return focus
    raise AssertionError(f"{key} not reached with {'Shift+' if back else ''}Tab")


def wait_for_link(page, part: str) -> None:
    try:
        page.wait_for_function(f"() => location.search.includes({part!r})", timeout=60_000)
    except PlaywrightTimeout:
        raise AssertionError(f"{part} not in the address after 60 s: {page.url}") from None
    settle(page)


def open_list(page, key: str) -> None:
    """Open the focused select box ``key``'s list with ArrowDown. Once in a few full runs on a
    busy machine the list never opened (a rerun redrawing the box as the key arrived, it
    seems); a person would press the key again, and so does this, every 10 s, for a minute."""
    listbox = page.get_by_role("listbox")
    for _ in range(6):
        focus = page.evaluate(FOCUS)
        if focus["key"] != key:
            tab_to(page, key, back=True)
        page.keyboard.press("ArrowDown")
        try:
            listbox.wait_for(timeout=10_000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"{key}'s list did not open with ArrowDown; focus: {page.evaluate(FOCUS)}")


def choose_with_keys(page, key: str, option: str) -> None:
    """Shift+Tab back to the select box ``key``, open it with ArrowDown, move down to
    ``option`` and press Enter; the link must then carry it. Once in a few full runs of this file
    on a busy machine the choice never reached the link (the cause is not known); a person
    whose choice did not take would open the list again, and so does this, once."""
    for attempt in range(2):
        focus = page.evaluate(FOCUS)  # after an Escape the box still has the focus
        assert (focus if focus["key"] == key else tab_to(page, key, back=True))["role"] == (
            "combobox"
        )
        open_list(page, key)
        # On a busy machine the list opens late, and a key pressed before it moves nothing:
        # move down until the option the list marks active is the one wanted.
        for _ in range(8):
            if page.evaluate(ACTIVE_OPTION) == option:
                break
            page.keyboard.press("ArrowDown")
        assert page.evaluate(ACTIVE_OPTION) == option
        page.keyboard.press("Enter")
        try:
            page.wait_for_function(
                f"() => location.search.includes('{key}={option}')", timeout=30_000
            )
        except PlaywrightTimeout:
            if attempt:
                raise AssertionError(f"{key}={option} not in the address: {page.url}") from None
            page.keyboard.press("Escape")
            continue
        settle(page)
        return


def test_slider_select_and_segmented_control_work_from_the_keyboard(app_url, browser) -> None:
    page, _ = visit(browser, url(app_url, "explorer", "lang=en"), LAPTOP)
    assert tab_to(page, "offset")["tag"] == "INPUT"
    for _ in range(3):
        page.keyboard.press("ArrowRight")  # steps of 0.1
    wait_for_link(page, "offset=0.3")
    # The offset sits in the page, after the sidebar: back up into the sidebar's controls.
    choose_with_keys(page, "dist", "spike")
    # The language: a segmented control, back up the sidebar above the controls.
    assert tab_to(page, "lang", back=True)["role"] == "radio"
    page.keyboard.press("ArrowRight")  # to "id", from "en" or already there
    page.keyboard.press("Space")
    wait_for_link(page, "lang=id")
    assert page.locator("h1").inner_text() == t("explorer.title", "id")
    assert "offset=0.3" in page.url and "dist=spike" in page.url
    # The slider's stop now reads in Indonesian, to a screen reader too.
    offset = page.locator(".st-key-offset")
    assert offset.locator("input[type='range']").get_attribute("aria-valuetext") == "0,3"
    assert offset.get_by_test_id("stSliderThumbValue").inner_text().strip() == "0,3"
    page.close()


def test_radio_and_button_work_from_the_keyboard(app_url, browser) -> None:
    page, _ = visit(browser, url(app_url, "lesson", "step=5&lang=en"), LAPTOP)
    assert page.locator("[data-testid='stPlotlyChart']").count() == 0
    assert tab_to(page, "pick_shift")["tag"] == "INPUT"
    page.keyboard.press("ArrowDown")  # picks a prediction
    settle(page)
    assert tab_to(page, "reveal_shift")["tag"] == "BUTTON"
    page.keyboard.press("Space")
    page.wait_for_selector("[data-testid='stPlotlyChart']", timeout=90_000)
    settle(page)
    # The revealed figure has its alt text and readable type.
    assert unnamed_charts(page) == 0
    assert min(page.evaluate(SMALLEST_FONTS)) >= MIN_FONT_SIZE
    page.close()


# A code block's text ends left of its copy button (the pre's content box, without its padding).
COPY_CLEAR_OF_TEXT = """b => {
  const pre = b.closest('[data-testid="stCode"]').querySelector('pre');
  const right = pre.getBoundingClientRect().right - parseFloat(getComputedStyle(pre).paddingRight);
  return right <= b.getBoundingClientRect().left;
}"""


@pytest.mark.parametrize(("lang", "size"), [("id", LAPTOP), ("en", PHONE)])
def test_share_dialog_opens_from_the_keyboard_and_is_accessible(app_url, browser, axe, lang, size):
    # The explorer's dialog holds the most: the link, the presenter builder, downloads, upload.
    page, outside = visit(browser, url(app_url, "explorer", f"lang={lang}"), size)
    assert page.get_by_role("dialog").count() == 0
    page.locator(".st-key-_share_open button").focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    dialog.wait_for(timeout=60_000)
    page.wait_for_selector("[data-testid='stFileUploaderDropzoneInput']", state="attached")
    # The dialog points to the links' copy buttons: they show without a pointer over the box.
    copy = dialog.locator("[data-testid='stCode'] button")
    copy.nth(1).wait_for(timeout=60_000)  # a code block's code loads after the dialog opens
    assert copy.count() == 2
    for i in range(copy.count()):
        assert copy.nth(i).is_visible()
        assert copy.nth(i).evaluate("b => getComputedStyle(b).opacity") == "1"
        assert copy.nth(i).evaluate(COPY_CLEAR_OF_TEXT), "the link's text runs under its button"
    assert severe_violations(axe, page) == []
    assert overflow(page) <= 0
    assert dialog.locator("[data-testid='stDownloadButton']").count() == 5  # and the plane
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached", timeout=30_000)
    assert outside == []
    page.close()
