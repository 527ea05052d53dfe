"""Every page's main job, done in real headless Chromium as a person does it.

On each page the scenario types into every text box, moves a slider with the arrow keys,
switches a select box and presses the page's buttons (a live training run with the fewest
steps). After every step: no exception or error box on the page, no uncaught browser error,
no traceback in the server's log. At the end the last step's link and the share dialog's,
each opened in a fresh browser context, show the same widget values and the same text (the
steps add up, so that link carries every widget the scenario moved), and the presenter's view
(``controls=hidden&text=large``) of the last state draws without a failure, on a 1920x1080
projector: no sidebar, no save, upload or share box, no sentence pointing to a hidden control,
figure text enlarged with the page's, nothing cut off or scrolling sideways
(``tests.browser_util.presenter_problems``). AppTest drives
widgets by key and skips the browser's link binding; this is what it cannot see.

One server per file (its log read after every step) and one browser. The pages from the
explorer to precision are here, the rest in ``test_browser_scenarios_more.py``: the two files
run side by side.
"""

from __future__ import annotations

import importlib

import pytest

from tests.scenario_util import TYPED_VECTOR, said, visit

pytestmark = pytest.mark.browser


def test_explorer(scenario_server, browser) -> None:
    v = visit(scenario_server, browser, "explorer")
    v.type_text("seed", "5")
    v.select("dist", said("explorer.dist_option_uniform"))
    v.slide("offset")
    v.segment("backend", "torch")
    v.type_text("x_typed", TYPED_VECTOR)
    v.finish()


def test_lesson(scenario_server, browser) -> None:
    # The link carries the step and the answers and reveals (``progress``): opened afresh it
    # shows the same page, the revealed step's figure and verdict included.
    v = visit(scenario_server, browser, "lesson")
    v.slide("step")
    # The right answer: a wrong one is shown in an error box, as it should be.
    lesson = importlib.import_module("pages.lesson")
    step = lesson.compute(lesson.STEP_IDS[1])
    right = step.options.index(step.correct)
    options = v.page.locator("[data-testid='stRadio'] label:has(input[type='radio'])")
    option = v.reach(options.nth(right))
    v.step(f"predict option {right + 1}", option.click)
    v.press(said("lesson.reveal"))
    v.press(said("lesson.next"))
    v.press(said("lesson.previous"))
    v.finish()


def test_invariance(scenario_server, browser) -> None:
    v = visit(scenario_server, browser, "invariance")
    v.select("transform", said("invariance.t_shift_ones"))
    v.slide("size", arrow="ArrowLeft")
    v.type_text("seed", "3")
    v.finish()


def test_residual(scenario_server, browser) -> None:
    v = visit(scenario_server, browser, "residual")
    v.slide("layers", arrow="ArrowLeft")
    v.type_text("d", "64")
    v.segment("mode", said("residual.mode_trained"))
    v.select("prompt", said("residual.prompt_code"))
    v.finish()


def test_precision(scenario_server, browser) -> None:
    v = visit(scenario_server, browser, "precision")
    v.type_text("d", "32")
    v.select("placement", said("precision.placement_option_outside"))
    v.slide("eps")
    v.finish()
