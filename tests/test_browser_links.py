"""Corrected link values in real headless Chromium: the address a visitor copies after a notice
carries the value the page uses, and reloading it shows the same view without the notice.
AppTest reads the server's query string; only a browser shows the address itself."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from benchmarks.live import READY
from tests.browser_util import open_page
from ui import chrome
from ui.i18n import t

pytestmark = pytest.mark.browser

WARNINGS = """() => Array.from(
  document.querySelectorAll('[data-testid="stAlertContentWarning"]'), e => e.innerText)"""
# The explorer's width box (a number input), holding the width in use.
D_BOX = ".st-key-d input"


def query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_a_clamped_width_stays_in_the_address_and_the_address_reproduces_it(
    app_url: str, browser
) -> None:
    page, outside = open_page(browser, f"{app_url}/explorer?d=99999&lang=en", height=1400)
    page.wait_for_function("() => location.search.includes('d=8192')", timeout=60_000)
    page.wait_for_selector(READY, timeout=90_000)
    assert query(page.url)["d"] == ["8192"]
    # The corrected value reaches the box in the run that follows the correction: the page is
    # idle for a moment between the two runs, so wait for the box rather than for the state.
    page.wait_for_function(f"() => document.querySelector({D_BOX!r})?.value === '8192'")
    page.wait_for_selector(READY, timeout=90_000)
    warnings = " ".join(page.evaluate(WARNINGS))
    assert t("common.notices_heading", "en") in warnings
    assert "99999" in warnings and "8192" in warnings

    # The address as it now reads, opened afresh: the same width, and nothing to correct.
    again, _ = open_page(browser, page.url, height=1400)
    again.wait_for_selector(READY, timeout=90_000)
    assert query(again.url)["d"] == ["8192"]
    # Before the first run's widgets arrive the page can read idle with the default in the box.
    again.wait_for_function(f"() => document.querySelector({D_BOX!r})?.value === '8192'")
    again.wait_for_selector(READY, timeout=90_000)
    assert again.evaluate(WARNINGS) == []
    assert outside == []
    page.close()
    again.close()


METRICS = """() => Object.fromEntries(Array.from(
  document.querySelectorAll('[data-testid="stMetric"]'),
  e => [e.querySelector('[data-testid="stMetricLabel"]').innerText.trim(),
        e.querySelector('[data-testid="stMetricValue"]').innerText.trim()]))"""
X_BOX = ".st-key-x_typed input"


def test_an_indonesian_vector_is_read_with_a_decimal_comma_and_linked_with_a_point(
    app_url: str, browser
) -> None:
    # The landing page opened by its name, as a shared link may write it: no "page not found".
    page, outside = open_page(browser, f"{app_url}/explorer?lang=id", height=1400)
    page.wait_for_selector(READY, timeout=90_000)
    assert page.locator("[role='dialog']").count() == 0
    box = page.locator(X_BOX)
    box.fill("1,5; 2,5; -0,5")
    box.press("Enter")
    page.wait_for_function("() => location.search.includes('x=1.5%2C2.5%2C-0.5')", timeout=60_000)
    page.wait_for_selector(READY, timeout=90_000)
    page.wait_for_function(f"() => ({METRICS})()['mean(x)'] === '1,167'", timeout=60_000)
    assert query(page.url)["x"] == ["1.5,2.5,-0.5"]
    # The same address in English: the same vector, written the English way.
    english = page.url.replace("lang=id", "lang=en")
    again, _ = open_page(browser, english, height=1400)
    again.wait_for_selector(READY, timeout=90_000)
    again.wait_for_function(f"() => ({METRICS})()['mean(x)'] === '1.167'", timeout=60_000)
    assert again.locator(X_BOX).input_value() == "1.5,2.5,-0.5"
    assert outside == []
    page.close()
    again.close()


def test_switching_a_pages_view_keeps_the_other_views_settings_in_the_address(
    app_url: str, browser
) -> None:
    """The training lab draws its runs' controls or its S-curve controls, never both. Streamlit
    drops from the address every bound parameter whose widget a run did not draw; the page keeps
    them, so the address copied in either view reproduces both, and a view drawn again shows
    what the visitor set there."""
    runs = {"seed": ["3"], "dyt": ["true"], "placement": ["peri"]}
    scurve = {"trained_seed": ["2"], "norm": ["layer"]}
    link = "&".join(f"{k}={v[0]}" for k, v in {**runs, **scurve}.items())
    page, outside = open_page(browser, f"{app_url}/training?lang=en&{link}", height=1000)
    page.wait_for_selector(READY, timeout=90_000)
    switch = page.locator(".st-key-view")

    def shown(name: str, view: str) -> None:
        switch.get_by_role("radio", name=name).click()
        page.wait_for_function(f"() => location.search.includes('view=scurve') === {view}")
        page.wait_for_selector(READY, timeout=90_000)
        got = query(page.url)
        assert {k: got.get(k) for k in {**runs, **scurve}} == {**runs, **scurve}, got

    shown(t("scurve.view_scurve", "en"), "true")
    assert page.locator(".st-key-trained_seed input").input_value() == "2"
    shown(t("scurve.view_runs", "en"), "false")
    assert page.locator(".st-key-seed input").input_value() == "3"
    assert page.locator(".st-key-dyt input").is_checked()
    shown(t("scurve.view_scurve", "en"), "true")
    assert page.locator(".st-key-trained_seed input").input_value() == "2"
    assert outside == []
    page.close()


ATTRIBUTES = """() => Array.from(document.querySelectorAll('[title],[aria-label],[data-title]'))
  .flatMap(e => ['title', 'aria-label', 'data-title'].map(a => e.getAttribute(a) || ''))"""
# Streamlit's dialog for a lost connection, as it writes it (1.67), with its code block.
CONNECTION_DIALOG = """() => document.body.insertAdjacentHTML('beforeend',
  '<section role="dialog"><h2>Connection error</h2><div><div>Is Streamlit still running? If you '
  + 'accidentally stopped Streamlit, just restart it in your terminal:</div>'
  + '<div data-testid="stErrorCodeBlock"><pre><code>streamlit run yourscript.py</code></pre></div>'
  + '</div></section>')"""


def test_the_page_language_is_the_documents_and_stays_in_the_address(app_url: str, browser):
    """An Indonesian browser opening a link without ``lang``: the address gains ``lang=id`` (a
    link copied from it opens in Indonesian anywhere) and ``<html lang>`` is ``id`` for screen
    readers, not Streamlit's ``en``; both follow a switch of language and a change of page."""
    context = browser.new_context(locale="id-ID", viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    lang = "() => document.documentElement.lang"
    page.goto(f"{app_url}/explorer?offset=0.3")
    page.wait_for_function("() => location.search.includes('lang=id')", timeout=60_000)
    page.wait_for_function(f"() => ({lang})() === 'id'", timeout=60_000)
    assert page.locator("h1").inner_text() == t("explorer.title", "id")
    # Streamlit's and Plotly's own words are in Indonesian too: the chart toolbar's tooltips, the
    # share dialog's upload box, and the dialog of a lost connection (its real markup, added).
    english = [w for w in chrome.words("id") if "{}" not in w and w not in chrome.words("en")]
    page.locator("[data-testid='stPlotlyChart']").first.hover()
    page.locator(".st-key-_share_open button").click()
    page.wait_for_selector("[role='dialog'] [data-testid='stFileUploader']", timeout=60_000)
    page.evaluate(CONNECTION_DIALOG)
    page.wait_for_function(f"() => !document.body.innerText.includes({english[-1]!r})")
    shown = page.evaluate(f"() => [document.body.innerText, ...({ATTRIBUTES})()].join('\\n')")
    assert not [w for w in english if w in shown.splitlines() or f"{w}\n" in shown], shown
    for word in ("Connection error", "Upload", "1MB per file", "streamlit run"):
        assert word not in shown
    page.keyboard.press("Escape")
    choice = page.locator("[data-testid='stSidebar'] [role='radio']")
    choice.filter(has_text="en").click()
    page.wait_for_function("() => location.search.includes('lang=en')", timeout=60_000)
    page.wait_for_function(f"() => ({lang})() === 'en'", timeout=60_000)
    choice.filter(has_text="en").click()  # the chosen language again: it stays chosen
    page.wait_for_selector(READY, timeout=90_000)
    page.wait_for_function("() => location.search.includes('lang=en')", timeout=60_000)
    assert page.locator("h1").inner_text() == t("explorer.title", "en")
    page.locator("[data-testid='stSidebarNav'] a[href$='/backward']").click()
    page.wait_for_function("() => location.pathname.endsWith('/backward')", timeout=60_000)
    page.wait_for_selector(READY, timeout=90_000)
    # The explorer's offset (any number) does not set the backward page's (a stop on a slider).
    assert query(page.url) == {"lang": ["en"]} and page.evaluate(lang) == "en"
    assert page.locator("h1").inner_text() == t("backward.title", "en")
    # A formula wider than its box scrolls, and then the keyboard reaches it; one that fits is
    # no tab stop.
    page.evaluate(FORMULAS)
    page.wait_for_function("() => document.getElementById('formula-400').tabIndex === 0")
    assert not page.evaluate("() => document.getElementById('formula-40').hasAttribute('tabindex')")
    context.close()


# Two formulas in a box 100 px wide: one of 40 px, one of 400 px.
FORMULAS = """() => [40, 400].forEach((width) => {
  const box = document.createElement('span');
  box.className = 'katex-display';
  box.id = `formula-${width}`;
  box.style.cssText = 'display: block; width: 100px; overflow-x: auto';
  box.innerHTML = `<span style="display: inline-block; width: ${width}px">x</span>`;
  document.body.append(box);
})"""
