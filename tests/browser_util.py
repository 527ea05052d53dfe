"""Driving a page the way a person does, in real headless Chromium, and checking after each step
that nothing failed and that the page's link reproduces what is on screen.

A :class:`Visit` is one page in one browser tab. Each interaction (typing, a slider's arrow key,
a select box, a button) waits until the script run it caused has finished and the charts are
drawn, then checks the step: no exception or error box on the page, no uncaught browser error,
no traceback in the server's log. At :meth:`Visit.finish` the link of the last step, and the
share dialog's, opened in a fresh browser context (no cookies, no session), show the same widget
values and the same text. The steps' changes add up, so the last link carries every widget the
visit moved; a step's own link is checked only where it differs from the share dialog's (each
fresh page costs a second or more of both cores).
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from benchmarks.live import (
    READY,
    free_port,
    start_server,
    stop_server,
    streamlit_command,
    wait_for_health,
)
from benchmarks.st_private import protos
from labkit.style import MIN_FONT_SIZE
from ui.i18n import t

ForwardMsg = protos().ForwardMsg
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
TIMEOUT_MS = 120_000
# A run cut short by the next one (a second key press): the next one's end is what counts.
EARLY = ForwardMsg.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN
EXCEPTION = "[data-testid='stException']"
ERROR_BOX = "[data-testid='stAlertContentError']"
PRESENTER = "controls=hidden&text=large"
# What a step's link must reproduce in a fresh browser: the widgets and the page's text, the
# widgets only (the step's result lives in the session, as a measurement does), or nothing.
VIEW, WIDGETS, NOTHING = "view", "widgets", "nothing"
# What a server's log shows when a script run fails (Streamlit logs every uncaught exception of
# a page with its traceback, whatever the browser is shown).
LOG_PROBLEM = re.compile(r"Traceback|Uncaught app|Exception|\bERROR\b")

# Every element's code has loaded and every chart the script sent is drawn (none is fine).
CHARTS_DRAWN = """() => {
  if (document.querySelector('[data-testid^="stSkeleton"], [data-testid="stAppSkeleton"]')) {
    return false;  // an element whose code is still loading
  }
  const boxes = document.querySelectorAll('[data-testid="stPlotlyChart"]');
  const plots = document.querySelectorAll('.js-plotly-plot');
  return plots.length === boxes.length
    && Array.from(plots).every(p => p._fullData && p._fullData.length > 0);
}"""
# The value every keyed widget holds, by its key: a text box's text, a select box's choice, the
# pressed button of a segmented control, a checkbox's tick, a slider's position (a select
# slider's is the index of its option).
WIDGET_VALUES = """() => {
  const out = {};
  document.querySelectorAll('[data-testid="stElementContainer"][class*="st-key-"]')
    .forEach(box => {
      const key = Array.from(box.classList).find(c => c.startsWith('st-key-')).slice(7);
      const q = s => box.querySelector(s);
      let value;
      if (q('[role="slider"]')) {
        value = Array.from(box.querySelectorAll('[role="slider"]'))
          .map(s => s.getAttribute('aria-valuetext') || s.getAttribute('aria-valuenow'))
          .join(' – ');
      } else if (q('[data-testid="stButtonGroup"]')) {
        value = Array.from(box.querySelectorAll('[aria-checked="true"]'))
          .map(b => b.innerText.trim()).join(', ');
      } else if (q('[data-testid="stRadio"]')) {
        const on = q('input[type="radio"]:checked');
        value = on ? on.closest('label').innerText.trim() : null;
      } else if (q('input[type="checkbox"]')) {
        value = q('input[type="checkbox"]').checked;
      } else if (q('input[role="combobox"]')) {
        value = q('input[role="combobox"]').value;
      } else if (q('input, textarea')) {
        value = q('input, textarea').value;
      } else {
        return;  // a button, a chart, a container: nothing a link carries
      }
      out[key] = value;
    });
  return out;
}"""
# The main area's text, line by line, without progress boxes (st.status), which report work this
# server did once, such as loading a model, that a second visitor finds done; and without the
# charts' own text, whose tick labels Plotly picks for the chart's size in pixels and the moment
# it is drawn (the charts' data are compared as CHART_DATA).
MAIN_TEXT = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const icons = ['Check', 'Error', 'Spinner'].map(s => `[data-testid="stExpanderIcon${s}"]`);
  const hide = document.createElement('style');
  hide.textContent = '.js-plotly-plot { display: none !important; }';
  document.head.appendChild(hide);
  let text = main.innerText;
  hide.remove();
  main.querySelectorAll(`[data-testid="stExpander"]:has(${icons.join(',')})`)
    .forEach(box => { text = text.replace(box.innerText, ''); });
  return text.split('\\n').filter(line => line.trim()).join('\\n');
}"""
# The smallest text of each chart as Plotly laid it out after Streamlit's theme: base font,
# legend, title, 2D and 3D axes (ticks and titles), annotations, trace labels, colour bars.
SMALLEST_FONTS = r"""() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => {
  const L = p._fullLayout, sizes = [L.font.size];
  const font = f => { if (f && f.size) sizes.push(f.size); };
  const axis = a => {
    if (!a || a.visible === false) return;
    if (a.showticklabels !== false) font(a.tickfont);
    if (a.title && a.title.text) font(a.title.font);
  };
  if (L.showlegend !== false && p._fullData.some(t => t.showlegend)) font(L.legend.font);
  if (L.title && L.title.text) font(L.title.font);
  Object.keys(L).filter(k => /^[xy]axis\d*$/.test(k)).forEach(k => axis(L[k]));
  Object.keys(L).filter(k => /^scene\d*$/.test(k))
    .forEach(s => ['xaxis', 'yaxis', 'zaxis'].forEach(k => axis(L[s][k])));
  (L.annotations || []).filter(a => a.text && a.visible !== false).forEach(a => font(a.font));
  p._fullData.filter(t => t.visible !== false).forEach(t => {
    if (t.text && t.text.length && (!t.mode || t.mode.includes('text'))) font(t.textfont);
    if (t.colorbar && t.showscale) font(t.colorbar.tickfont);
  });
  return Math.min(...sizes);
})"""
# Metric labels, values and deltas cut off with an ellipsis (wider than their box).
CUT_METRICS = """() => Array.from(document.querySelectorAll(
    '[data-testid="stMetric"] [data-testid="stMarkdownContainer"]'))
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"""
# Sentences that send a reader to the controls, which the presenter view hides.
POINTING = {
    "en": ("on the left", "in the sidebar", "of the controls", "First move"),
    "id": (
        "di kiri",
        "bilah samping",
        "panel kontrol",
        "sidebar",
        "bagian atas kontrol",
        "Langkah pertama",
    ),
}


# Every chart's traces in the main area: name and coordinates, as Plotly holds them.
CHART_DATA = """() => Array.from(
    document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot'),
    p => (p._fullData || []).map(t => JSON.stringify([t.name, t.x, t.y, t.z])))"""


@contextmanager
def logged_app(log: Path, env: dict[str, str | None] | None = None) -> Iterator[str]:
    """``streamlit run app.py`` on a free loopback port, its output written to ``log``."""
    log.write_bytes(b"")
    with live_app(env=env, log=log) as url:
        yield url


class ServerLog:
    """The server's log, read from where the last reading stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.last = ""

    def new_problems(self) -> list[str]:
        """The lines since the last reading that name a traceback or an error (the whole new
        text, without colour codes, stays in ``last`` for a failure's message)."""
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        self.last = re.sub(r"\x1b\[[0-9;]*m", "", data.decode("utf-8", "replace"))
        return [line for line in self.last.splitlines() if LOG_PROBLEM.search(line)]


class Runs:
    """Counts the script runs a tab's server finished, read from the websocket's messages (a
    quick run flips the page's script state to "running" and back within one frame, which
    the page's attribute may never show)."""

    def __init__(self, page) -> None:
        self.finished = 0
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload: bytes | str) -> None:
        if isinstance(payload, str):
            return
        msg = ForwardMsg.FromString(payload)
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished != EARLY:
            self.finished += 1


def differ(want: dict | str, got: dict | str) -> str:
    """What ``got`` shows other than ``want``: widget values by key, or the lines of text."""
    if isinstance(want, dict):
        keys = sorted(set(want) | set(got))
        return ", ".join(
            f"{k}={got.get(k)!r} (was {want.get(k)!r})" for k in keys if want.get(k) != got.get(k)
        )
    lines = difflib.unified_diff(want.splitlines(), got.splitlines(), lineterm="", n=0)
    return "\n".join(list(lines)[2:])


def settle(page, runs: Runs | None = None, before: int | None = None) -> None:
    """Wait until a run finished after ``before`` finished runs (if given), the app is idle and
    every chart is drawn, and it stayed so (a run may cause one more, e.g. a corrected link
    value, or the router's first run)."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while True:
        if runs is not None and before is not None:
            while runs.finished <= before:
                assert time.monotonic() < deadline, "no script run finished"
                page.wait_for_timeout(25)
        page.wait_for_selector(READY, timeout=TIMEOUT_MS)
        page.wait_for_function(CHARTS_DRAWN, timeout=TIMEOUT_MS, polling=100)
        if runs is None:
            return
        before = runs.finished
        # A rerun Streamlit queued at the end of a run starts within a few frames.
        page.wait_for_timeout(150)
        if runs.finished == before and page.locator(READY).count() == 1:
            return


def failures(page) -> list[str]:
    """The exception and error boxes on the page, as text."""
    boxes = page.locator(f"{EXCEPTION}, {ERROR_BOX}")
    return [boxes.nth(i).inner_text()[:500] for i in range(boxes.count())]


@dataclass
class Snapshot:
    """What a step showed: the link, the linked widgets' values and the page's text."""

    step: str
    url: str
    widgets: dict
    text: str | None
    charts: list | None = None


class Tab:
    """A browser tab in a context of its own (no cookies, no session shared with other tabs),
    counting its script runs; uncaught browser errors go to ``errors``."""

    def __init__(self, browser, errors: list[str], width: int = 1366, height: int = 900) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.context.new_page()
        self.runs = Runs(self.page)
        self.page.on("pageerror", lambda err: errors.append(f"{self.page.url}: {err}"))

    def load(self, url: str) -> Tab:
        """Start loading ``url``; :meth:`settle` waits for it."""
        self.page.goto(url, wait_until="commit")
        return self

    def settle(self, before: int = 0) -> None:
        """Wait for a run after ``before`` finished runs (0: the first run of a fresh load)."""
        settle(self.page, self.runs, before)


# The page's own text grows from 17 to 22 px with text=large; figure text must grow alike.
LARGE_MIN_FONT = MIN_FONT_SIZE * 22 / 17


def presenter_problems(page, base: str, lang: str, *, projector: bool = True) -> list[str]:
    """The presenter's view (``PRESENTER``) as sentences: no sidebar, no save, upload or share
    box, no sentence pointing to a hidden control, nothing cut off or scrolling sideways, and on
    a projector figure text enlarged with the page's text."""
    page.wait_for_function("document.fonts.status === 'loaded'", timeout=TIMEOUT_MS)
    out = [
        f"a {box} is shown"
        for box in ("stFileUploader", "stDownloadButton", "stSidebar")
        if page.locator(f"[data-testid='{box}']").first.is_visible()
    ]
    # No share box: no link to this app in a code box (a page may show other code).
    if page.locator("[data-testid='stCode']").filter(has_text=base).count():
        out.append("the share box is shown")
    text = page.evaluate(MAIN_TEXT)
    out += [
        f"says {words!r}"
        for words in (t("common.share_heading", lang), t("common.save_heading", lang))
        if words in text
    ]
    out += [f"points to the controls: {p!r}" for p in POINTING[lang] if p.lower() in text.lower()]
    smallest = page.evaluate(SMALLEST_FONTS)
    if projector and not all(size >= LARGE_MIN_FONT for size in smallest):
        out.append(f"figure text of {smallest} px")
    out += [f"cut off: {words}" for words in page.evaluate(CUT_METRICS)]
    if (wider := page.evaluate("document.documentElement.scrollWidth - window.innerWidth")) > 0:
        out.append(f"scrolls sideways by {wider} px")
    return out


def _on_screen(locator) -> bool:
    """Whether the element is drawn, with width, and not pushed off the left edge (a closed
    sidebar)."""
    box = locator.bounding_box() if locator.is_visible() else None
    return box is not None and box["x"] >= 0 and box["width"] > 0


# The widest window that is a phone's (Streamlit collapses the sidebar below 640 px).
PHONE_WIDTH = 640


@dataclass
class Visit:
    """One page, driven step by step; see the module docstring."""

    browser: object
    base: str
    log: ServerLog
    params: tuple[str, ...]
    # The part of the page's text a link must reproduce (all of the main area by default).
    reads: Callable[[object], str] = field(default=lambda page: page.evaluate(MAIN_TEXT))
    # Whether a link must reproduce the charts' data too.
    charts: bool = True
    tab: Tab | None = None
    errors: list[str] = field(default_factory=list)
    pending: list[tuple[Snapshot, Tab]] = field(default_factory=list)
    # The last step's snapshot, whose link finish() opens in a fresh tab.
    latest: Snapshot | None = None
    # What the last step's link must reproduce.
    mode: str = VIEW
    # The window every tab of the visit opens (a phone: 390 x 844, its sidebar closed).
    width: int = 1366
    height: int = 900

    @property
    def page(self):
        return self.tab.page

    def open(self, path: str) -> Visit:
        self.tab = self.new_tab(f"{self.base}/{path}")
        self.tab.settle()
        self.check("open")
        return self

    # --- Steps ------------------------------------------------------------------------------

    def step(self, name: str, action: Callable[[], None], *, reproduce: str = VIEW) -> None:
        """Do ``action``, wait for the run it causes, check the page (and later its link:
        ``reproduce`` is VIEW, WIDGETS for a step whose result lives in the session only, such
        as a measurement, or NOTHING)."""
        before = self.tab.runs.finished
        action()
        self.tab.settle(before)
        self.check(name, reproduce=reproduce)

    def new_tab(self, url: str, width: int | None = None, height: int | None = None) -> Tab:
        size = (width or self.width, height or self.height)
        return Tab(self.browser, self.errors, *size).load(url)

    def reach(self, locator):
        """``locator``, as a person on a phone reaches it: the sidebar opened where it holds it
        and is closed (Streamlit closes it after some changes), closed where it covers the page.
        """
        if self.width > PHONE_WIDTH:
            return locator
        target = locator.first
        in_sidebar = target.evaluate("el => !!el.closest('[data-testid=\"stSidebar\"]')")
        opener = self.page.locator("[data-testid='stExpandSidebarButton']")
        closer = self.page.locator("[data-testid='stSidebarCollapseButton'] button")
        if in_sidebar and not _on_screen(target) and opener.is_visible():
            opener.click()
        elif not in_sidebar and _on_screen(self.page.locator("[data-testid='stSidebar']")):
            closer.click()
        else:
            return locator
        # The sidebar slides: wait until it is open (or closed) as the target needs.
        self.page.wait_for_function(
            """open => (document.querySelector('[data-testid="stSidebar"]')
                .getBoundingClientRect().left >= 0) === open""",
            arg=in_sidebar,
            timeout=TIMEOUT_MS,
        )
        self.page.wait_for_timeout(400)  # the slide's end
        return locator

    def widget(self, key: str):
        return self.reach(self.page.locator(f".st-key-{key}"))

    def type_text(self, key: str, text: str) -> None:
        box = self.widget(key).locator("input, textarea").first
        self.step(f"type {text!r} into {key}", lambda: (box.fill(text), box.press("Enter")))

    def slide(self, key: str, presses: int = 1, arrow: str = "ArrowRight") -> None:
        thumb = self.widget(key).get_by_role("slider").first

        def move() -> None:
            thumb.focus()
            for _ in range(presses):
                thumb.press(arrow)

        self.step(f"{arrow} x{presses} on {key}", move)

    def select(self, key: str, option: str) -> None:
        box = self.widget(key).locator("input[role='combobox']")

        def choose() -> None:
            # A rerun that ends just as the list opens can close it again: open it anew.
            for _ in range(3):
                box.click()
                try:
                    self.page.get_by_role("option", name=option, exact=True).click(timeout=5_000)
                    return
                except PlaywrightTimeout:
                    self.page.keyboard.press("Escape")
            raise AssertionError(f"{key}: the option {option!r} could not be chosen")

        self.step(f"choose {option!r} in {key}", choose)

    def segment(self, key: str, option: str) -> None:
        button = self.widget(key).get_by_role("radio", name=option, exact=True)
        self.step(f"press {option!r} of {key}", button.click)

    def tick(self, key: str) -> None:
        self.step(f"tick {key}", self.widget(key).locator("label").first.click)

    def press(self, name: str, *, key: str | None = None, **kwargs: object) -> None:
        """Press the button labelled ``name`` (the one keyed ``key`` where several are)."""
        scope = self.page if key is None else self.widget(key)
        button = self.reach(scope.get_by_role("button", name=name, exact=True))
        self.step(f"press {name!r}", button.click, **kwargs)

    # --- Checks -----------------------------------------------------------------------------

    def snapshot(self, name: str, page=None) -> Snapshot:
        page = page or self.page
        values = page.evaluate(WIDGET_VALUES)
        linked = {k: v for k, v in values.items() if k in self.params or k == "lang"}
        charts = page.evaluate(CHART_DATA) if self.charts else None
        return Snapshot(name, page.url, linked, self.reads(page), charts)

    def check(self, name: str, *, reproduce: str = VIEW) -> None:
        """No failure now; the link, opened fresh, is compared at :meth:`finish`."""
        problems = self.log.new_problems()
        shown = failures(self.page)
        assert shown == [], f"after {name}: {shown}; the server logged:\n{self.log.last[-4000:]}"
        assert self.errors == [], f"after {name}: browser errors {self.errors}"
        assert problems == [], f"after {name}: the server logged:\n{self.log.last[-4000:]}"
        if reproduce != NOTHING:
            self.mode = reproduce
            shot = self.snapshot(name)
            if reproduce != VIEW:
                shot.text = shot.charts = None
            self.latest = shot

    def share_link(self) -> str:
        """The link the share dialog offers (the dialog opened with its button, then closed)."""
        before = self.tab.runs.finished
        self.reach(self.page.locator(".st-key-_share_open button")).click()
        dialog = self.page.get_by_role("dialog")
        dialog.wait_for(timeout=TIMEOUT_MS)
        self.tab.settle(before)
        link = dialog.locator("[data-testid='stCode']").first.inner_text().strip()
        self.check("open the share dialog", reproduce=NOTHING)
        self.page.keyboard.press("Escape")
        dialog.wait_for(state="detached", timeout=TIMEOUT_MS)
        return link

    def finish(self) -> None:
        """The last step's link and the share dialog's reproduce the view in fresh tabs; the
        presenter's view of the last state draws without a failure."""
        final = self.snapshot("the last step")
        if self.mode != VIEW:
            final.text = final.charts = None
        final.url = self.share_link()
        final.step = "the share dialog's link"
        last = self.latest
        if last is not None and parse_qs(urlsplit(last.url).query) != parse_qs(
            urlsplit(final.url).query
        ):
            self.pending.append((last, self.new_tab(last.url)))
        self.pending.append((final, self.new_tab(final.url)))
        url = self.page.url
        # A projector, or the phone itself.
        screen = (1920, 1080) if self.width > PHONE_WIDTH else (self.width, self.height)
        presenter = self.new_tab(url + ("&" if "?" in url else "?") + PRESENTER, *screen)

        for shot, fresh in self.pending:
            fresh.settle()
            again = self.snapshot(shot.step, fresh.page)
            where = f"after {shot.step}, the link {shot.url} in a fresh browser"
            changed = differ(shot.widgets, again.widgets)
            assert again.widgets == shot.widgets, f"{where} set {changed}"
            if shot.text is not None:
                assert again.text == shot.text, f"{where} shows {differ(shot.text, again.text)}"
                assert again.charts == shot.charts, f"{where} draws other chart data"
            assert failures(fresh.page) == [], f"{where} shows {failures(fresh.page)}"
            fresh.context.close()
        self.pending.clear()

        presenter.settle()
        assert failures(presenter.page) == [], f"presenter view: {failures(presenter.page)}"
        lang = parse_qs(urlsplit(url).query)["lang"][0]
        found = presenter_problems(presenter.page, self.base, lang, projector=screen[0] > 1000)
        assert found == [], f"presenter view: {found}"
        # The hidden controls are still built, from the same link: the same values.
        hidden = self.snapshot("the presenter's view", presenter.page).widgets
        assert hidden, "the presenter's view built no controls"
        assert hidden == {k: final.widgets.get(k) for k in hidden}, "the presenter's view set " + (
            differ({k: final.widgets.get(k) for k in hidden}, hidden)
        )
        assert self.log.new_problems() == [], f"the server logged:\n{self.log.last[-4000:]}"
        presenter.context.close()
        self.tab.context.close()
        assert self.errors == [], f"browser errors {self.errors}"


def is_local(url: str) -> bool:
    """Whether a request stays on this machine (data: and blob: URLs never leave it)."""
    if url.startswith(("data:", "blob:", "about:")):
        return True
    host = url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
    return host in LOCAL_HOSTS or url.split("://", 1)[-1].startswith("[::1]")


def open_page(browser: object, url: str, *, width: int = 1400, height: int = 1000):
    """A new page at ``url`` after the script has finished; returns (page, outside requests)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    outside: list[str] = []
    page.on("request", lambda req: None if is_local(req.url) else outside.append(req.url))
    page.goto(url)
    page.wait_for_selector(READY, timeout=60_000)
    return page, outside


@contextmanager
def live_app(
    *, env: Mapping[str, str | None] | None = None, log: Path | None = None
) -> Iterator[str]:
    """``streamlit run app.py`` on a free loopback port (``env`` and ``log`` as ``start_server``
    takes them): yields its URL once it answers the health check, and stops it on leaving."""
    port = free_port()
    proc = start_server(streamlit_command(port), port, log=log, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url)
        yield url
    finally:
        stop_server(proc)
