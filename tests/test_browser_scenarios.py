"""Every page's main job, done in real headless Chromium as a person does it.

On each page the scenario types into every text box, moves a slider with the arrow keys,
switches a select box and presses the page's buttons (a live training run with the fewest
steps). After every step: no exception or error box on the page, no uncaught browser error,
no traceback in the server's log, and the tab's link, opened in a fresh browser context, shows
the same widget values and the same text. At the end the share dialog's link is the tab's, and
the presenter's view (``controls=hidden&text=large``) of the last state draws without a
failure. AppTest drives widgets by key and skips the browser's link binding; this is what it
cannot see.

One server (its log read after every step) and one browser for the whole file.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest

from tests.apptest_util import page_params
from tests.browser_util import WIDGETS, ServerLog, Tab, Visit, logged_app
from ui.i18n import t
from ui.params import TextParam

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory, browser) -> Iterator[tuple[str, ServerLog]]:
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    with logged_app(log) as url:
        # The landing page first: a fresh server's very first request, if it is a deep link,
        # runs that page once outside the router.
        tab = Tab(browser, []).load(f"{url}/")
        tab.settle()
        tab.context.close()
        yield url, ServerLog(log)


def visit(server, browser, name: str, query: str = "", **kwargs) -> Visit:
    """``name``'s page opened in English at ``query``; its steps' logs start here."""
    url, log = server
    log.new_problems()
    params = tuple(p.key for p in page_params(name))
    path = "" if name == "explorer" else name
    link = f"{path}?lang=en" + (f"&{query}" if query else "")
    return Visit(browser, url, log, params, **kwargs).open(link)


def en(key: str) -> str:
    return t(key, "en")


def test_explorer(server, browser) -> None:
    v = visit(server, browser, "explorer")
    v.type_text("seed", "5")
    v.select("dist", "uniform")
    v.slide("offset")
    v.segment("backend", "torch")
    v.type_text("x_typed", "1, 2, 3, -4")
    v.finish()


LESSON_STEP = """() => Array.from(document.querySelectorAll(
    '[data-testid="stMain"] [data-testid="stProgress"], [data-testid="stMain"] h3'))
  .map(e => e.innerText).join('\\n')"""


def lesson_step(page) -> str:
    return page.evaluate(LESSON_STEP)


def test_lesson(server, browser) -> None:
    # The answers and reveals (and a revealed step's figure) live in the session: a link
    # carries the step, and the step's title is what it must show again.
    v = visit(server, browser, "lesson", reads=lesson_step, charts=False)
    v.slide("step")
    # The right answer: a wrong one is shown in an error box, as it should be.
    lesson = importlib.import_module("pages.lesson")
    step = lesson.compute(lesson.STEP_IDS[1])
    right = step.options.index(step.correct)
    options = v.page.locator("[data-testid='stRadio'] label:has(input[type='radio'])")
    option = options.nth(right)
    v.step(f"predict option {right + 1}", option.click)
    v.press(en("lesson.reveal"))
    v.press(en("lesson.next"))
    v.press(en("lesson.previous"))
    v.finish()


def test_invariance(server, browser) -> None:
    v = visit(server, browser, "invariance")
    v.select("transform", en("invariance.t_shift_ones"))
    v.slide("size", arrow="ArrowLeft")
    v.type_text("seed", "3")
    v.finish()


def test_residual(server, browser) -> None:
    v = visit(server, browser, "residual")
    v.slide("layers", arrow="ArrowLeft")
    v.type_text("d", "64")
    v.segment("mode", en("residual.mode_trained"))
    v.select("prompt", en("residual.prompt_code"))
    v.finish()


def test_precision(server, browser) -> None:
    v = visit(server, browser, "precision")
    v.type_text("d", "32")
    v.select("placement", en("precision.placement_option_outside"))
    v.slide("eps")
    v.finish()


def test_contracts(server, browser) -> None:
    v = visit(server, browser, "contracts")
    v.select("a", en("lesson.preset_t5"))
    v.segment("checkpoint", "b")
    v.type_text("d", "32")
    v.slide("scale", arrow="ArrowLeft")
    v.press(en("contracts.mistake_eps"))
    v.finish()


def test_backward(server, browser) -> None:
    v = visit(server, browser, "backward")
    v.type_text("d", "5")
    v.slide("offset")
    v.select("grad", en("backward.grad_option_x"))
    v.finish()


def test_attention(server, browser) -> None:
    v = visit(server, browser, "attention")
    v.slide("n", arrow="ArrowLeft")
    v.type_text("seed", "8")
    v.press(en("attention.use_best"), key="use_layer")
    v.segment("d", "2")
    v.finish()


def test_speed(server, browser) -> None:
    # The smallest measurement: numpy, a small width and batch, one repeat.
    v = visit(server, browser, "speed", "d=128&batch=2&impl=numpy&repeats=1")
    v.select("sweep", en("speed.sweep_option_batch"))
    v.slide("d", arrow="ArrowLeft")
    v.type_text("repeats", "2")
    # The measurement lives in this session; a link carries its settings.
    v.press(en("speed.measure"), reproduce=WIDGETS)
    v.finish()


def test_training(server, browser) -> None:
    # The smallest live run: the narrowest and shallowest model, the fewest steps.
    v = visit(server, browser, "training", "layer=false&width=16&depth=1&steps=10")
    v.tick("nonorm")
    v.slide("lr", arrow="ArrowLeft")
    v.type_text("seed", "3")
    # The run lives in this session; a link carries its settings.
    v.press(en("training.train"), reproduce=WIDGETS)
    v.finish()


def test_inspector(server, browser) -> None:
    v = visit(server, browser, "inspector")
    v.select("compare", en("inspector.option_none"))
    v.select("model", "LayerNorm (seed 0)")
    v.finish()


def test_inspector_own_text(server, browser) -> None:
    """The models read the visitor's own sentence (its box's key is the page's text parameter,
    which must not be the app-wide ``text`` of the presenter's view)."""
    key = next(p.key for p in page_params("inspector") if isinstance(p, TextParam))
    v = visit(server, browser, "inspector", "compare=none")
    v.type_text(key, "The cat sat on the mat.")
    assert "The cat sat on the mat." in v.page.locator("[data-testid='stCode']").first.inner_text()
    v.finish()
