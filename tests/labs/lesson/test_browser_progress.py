"""The solo lesson's progress in real headless Chromium: a pick and a reveal reach the address bar,
and a reload of that address shows them again (AppTest skips the browser's link)."""

from __future__ import annotations

import pytest

from benchmarks.live import READY
from labs.lesson.model import lesson_step
from labs.lesson.options import OPTIONS, STEP_IDS
from tests.browser_util import open_page
from ui.i18n import t

pytestmark = pytest.mark.browser

TIMEOUT_MS = 90_000


def test_a_reload_keeps_the_pick_and_the_reveal(app_url: str, browser) -> None:
    page, _ = open_page(browser, f"{app_url}/lesson?step=5&lang=en", width=1366, height=900)
    option = OPTIONS["shift"][2]  # the third option, C
    page.locator("[data-testid='stRadio'] label:has(input[type='radio'])").nth(2).click()
    page.wait_for_function("location.search.includes('progress=')", timeout=TIMEOUT_MS)
    page.wait_for_selector(READY, timeout=TIMEOUT_MS)
    page.get_by_role("button", name="Reveal").click()
    page.wait_for_function("location.search.includes('progress=----C')", timeout=TIMEOUT_MS)
    right = int(option == lesson_step("shift").correct)
    score = t("lesson.score", "en", right=right, revealed=1, n=len(STEP_IDS))
    page.reload()
    page.wait_for_selector(".st-key-fig_shift .js-plotly-plot", timeout=TIMEOUT_MS)
    assert page.get_by_text(score, exact=True).count() == 1
    assert "progress=----C---------" in page.url
    page.close()
