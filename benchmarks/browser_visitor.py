"""The browser visitor of ``benchmarks.load``: headless Chromium pressing keys and clicking links.

``BrowserVisitor`` drives one browser context per visitor as a person does; an interaction's
latency runs from the key press or click until the run has finished with the new chart drawn."""

from __future__ import annotations

import time
from typing import Any

from benchmarks.live import READY
from benchmarks.visitors import Visitor
from ui.i18n import t

EXCEPTION = "[data-testid='stException']"
# The first Plotly chart's RMSNorm trace: its length and first value tell a redrawn chart apart.
CHART_STATE = """() => {
  const plot = document.querySelector('.js-plotly-plot');
  if (!plot || !plot._fullData) return null;
  const trace = plot._fullData.find(t => t.name === 'RMSNorm(x)');
  return trace ? [trace.y.length, trace.y[0]] : null;
}"""
# A slider's position as its thumb tells a screen reader (Streamlit's range input has no
# aria-valuenow: waiting for that to change waited out every press).
SLIDER_VALUE = "el => el.getAttribute('aria-valuetext') || el.getAttribute('aria-valuenow')"
# A key press the slider did not take (still being drawn) is repeated after this long, this often.
PRESS_WAIT_S = 2.0
PRESS_TRIES = 3


class BrowserVisitor(Visitor):
    """A visitor in a browser context of headless Chromium, pressing keys and clicking links."""

    def __init__(self, context, *args: Any, **kwargs: Any) -> None:
        """A ``Visitor`` (its arguments after ``context``) in the browser ``context``."""
        super().__init__(*args, **kwargs)
        self.context = context
        self.timeout_ms = self.step_timeout_s * 1e3
        self.load_timeout_ms = self.load_timeout_s * 1e3
        self.page = None

    async def chart(self):
        return await self.page.evaluate(CHART_STATE)

    async def chart_differs(self, before) -> None:
        await self.page.wait_for_function(
            f"(before) => {{ const now = ({CHART_STATE})(); "
            "return now !== null && JSON.stringify(now) !== JSON.stringify(before); }",
            arg=before,
            timeout=self.timeout_ms,
        )

    async def settled(self, timeout_ms: float | None = None) -> None:
        await self.page.wait_for_selector(READY, timeout=timeout_ms or self.timeout_ms)

    async def open(self) -> None:
        """The first load: the whole class fetches the app's scripts at once, so it gets the
        longer ``load_timeout`` and is not counted as an interaction."""
        if self.page is None:
            self.page = await self.context.new_page()
            self.page.on("pageerror", lambda exc: self.error(f"JavaScript error: {exc}"))
        url = f"{self.base_url}/?lang=en&d=64&seed={self.number}"
        await self.page.goto(url, wait_until="commit", timeout=self.load_timeout_ms)
        await self.settled(self.load_timeout_ms)
        await self.page.wait_for_function(
            f"({CHART_STATE})() !== null", timeout=self.load_timeout_ms
        )

    async def slider(self) -> None:
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        before = await self.chart()
        # The mean offset c, the page's first move (above the chart, not in the sidebar).
        slider = self.page.locator(".st-key-offset").get_by_role("slider")
        value = await slider.evaluate(SLIDER_VALUE)
        for _ in range(PRESS_TRIES):
            # A press that lands while the widget is still being drawn moves nothing; the
            # latency counts from the press the slider took.
            await slider.focus()
            start = time.perf_counter()
            await slider.press("ArrowRight")
            try:
                await self.page.wait_for_function(
                    f"([el, v]) => ({SLIDER_VALUE})(el) !== v",
                    arg=[await slider.element_handle(), value],
                    timeout=PRESS_WAIT_S * 1e3,
                )
                break
            except PlaywrightTimeout:
                continue
        await self.chart_differs(before)
        await self.settled()
        self.latencies.append(time.perf_counter() - start)

    async def width_change(self) -> None:
        before = await self.chart()
        box = self.page.locator(".st-key-d input")
        await box.fill(str(self.next_width(before[0])))
        start = time.perf_counter()
        await box.press("Enter")
        await self.chart_differs(before)
        await self.settled()
        self.latencies.append(time.perf_counter() - start)

    async def switch(self, topic: str) -> None:
        link = self.page.locator("[data-testid='stSidebarNavLink']").filter(
            has_text=t(f"{topic}.nav", "en")
        )
        start = time.perf_counter()
        await link.first.click()
        await self.page.get_by_role("heading", name=t(f"{topic}.title", "en")).first.wait_for(
            timeout=self.timeout_ms
        )
        await self.settled()
        if topic == "explorer":
            await self.page.wait_for_function(
                f"({CHART_STATE})() !== null", timeout=self.timeout_ms
            )
        self.latencies.append(time.perf_counter() - start)

    async def shows_exception(self) -> bool:
        return bool(await self.page.locator(EXCEPTION).count())
