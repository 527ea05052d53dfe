"""Every page's main job in real headless Chromium, continued from
``test_browser_scenarios.py`` (its docstring says what each step checks): contracts, backward,
attention, speed, training and the inspector, with a server of their own.
"""

from __future__ import annotations

import pytest

from tests.browser_util import WIDGETS
from tests.scenario_util import said, visit

pytestmark = pytest.mark.browser


def test_contracts(scenario_server, browser) -> None:
    v = visit(scenario_server, browser, "contracts")
    v.select("a", said("lesson.preset_t5"))
    v.segment("checkpoint", "b")
    v.type_text("d", "32")
    v.slide("scale", arrow="ArrowLeft")
    v.press(said("contracts.mistake_eps"))
    v.finish()


def test_backward(scenario_server, browser) -> None:
    v = visit(scenario_server, browser, "backward")
    v.type_text("d", "5")
    v.slide("offset")
    v.select("grad", said("backward.grad_option_x"))
    v.finish()


def test_attention(scenario_server, browser) -> None:
    v = visit(scenario_server, browser, "attention")
    # The plane first: every later step, and the fresh tabs that check the link, then draw SVG,
    # not the sandbox's three WebGL scenes (seconds each in a browser without a GPU).
    v.segment("d", "2")
    v.slide("n", arrow="ArrowLeft")
    v.type_text("seed", "8")
    v.press(said("attention.use_best"), key="use_layer")
    v.finish()


def test_speed(scenario_server, browser) -> None:
    # The smallest measurement: numpy, a small width and batch, one repeat.
    v = visit(scenario_server, browser, "speed", "d=128&batch=2&impl=numpy&repeats=1")
    v.select("sweep", said("speed.sweep_option_batch"))
    v.slide("d", arrow="ArrowLeft")
    v.type_text("repeats", "2")
    # The measurement lives in this session; a link carries its settings.
    v.press(said("speed.measure"), reproduce=WIDGETS)
    v.finish()


def test_training(scenario_server, browser) -> None:
    # The smallest live run: the narrowest and shallowest model, the fewest steps.
    v = visit(scenario_server, browser, "training", "layer=false&width=16&depth=1&steps=10")
    v.tick("nonorm")
    v.slide("lr", arrow="ArrowLeft")
    v.type_text("seed", "3")
    # The run lives in this session; a link carries its settings.
    v.press(said("training.train"), reproduce=WIDGETS)
    v.finish()


def test_inspector(scenario_server, browser) -> None:
    v = visit(scenario_server, browser, "inspector")
    v.select("compare", said("inspector.option_none"))
    v.select("model", "LayerNorm (seed 0)")
    v.finish()
