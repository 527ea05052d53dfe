"""ui.params: how a raw link value becomes a valid one, and what the notice says."""

import math

import pytest

from ui.fmt import link
from ui.params import (
    ChoiceParam,
    FloatParam,
    IntParam,
    LadderParam,
    TextParam,
    echo,
)

D = IntParam("d", 16, 2, 8192)
OFFSET = FloatParam("offset", 0.0, -20.0, 20.0)
EPS = LadderParam("eps", 1e-5, (0.0, 1e-8, 1e-6, 1e-5, 1e-3, 1.0))
DIST = ChoiceParam("dist", "normal", ("normal", "spike"))


@pytest.mark.parametrize(
    ("param", "raw", "value", "code"),
    [
        (D, "64", 64, None),
        (D, " 64 ", 64, None),
        (D, "64.0", 64, None),
        (D, "64.4", 64, "not_integer"),
        (D, "9" * 60, 8192, "above"),
        (D, "-5", 2, "below"),
        (D, "abc", 16, "not_number"),
        (D, "", 16, "not_number"),
        (D, "nan", 16, "not_number"),
        (D, "1e999", 16, "not_number"),
        (OFFSET, "1.5", 1.5, None),
        (OFFSET, "1e3", 20.0, "above"),
        (OFFSET, "-" + "9" * 60, -20.0, "below"),
        (OFFSET, "inf", 0.0, "not_finite"),
        (OFFSET, "NaN", 0.0, "not_finite"),
        (OFFSET, "0x10", 0.0, "not_number"),
        (EPS, "1e-5", 1e-5, None),
        (EPS, "0.00001", 1e-5, None),
        (EPS, "0", 0.0, None),
        (EPS, "2e-5", 1e-5, "snapped"),
        (EPS, "5e-7", 1e-6, "snapped"),
        (EPS, "-1", 0.0, "snapped"),
        (EPS, "1e300", 1.0, "snapped"),
        (DIST, "spike", "spike", None),
        (DIST, "SPIKE", "spike", None),
        (DIST, "<img src=x onerror=alert(1)>", "normal", "unknown_choice"),
    ],
)
def test_parse(param, raw: str, value, code: str | None) -> None:
    got, problem = param.parse(raw)
    assert got == value
    assert (problem.code if problem else None) == code


def test_text_is_kept_but_cut_at_its_limit() -> None:
    param = TextParam("x", "", max_len=10)
    assert param.parse("1, 2") == ("1, 2", None)
    value, problem = param.parse("1" * 11)
    assert value == "1" * 10 and problem.code == "too_long"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (1e-5, "1e-5"),
        (1e-12, "1e-12"),
        (0.001, "0.001"),
        (2.5, "2.5"),
        (-3.0, "-3"),
        (1e4, "10000"),
        (1e7, "1e7"),
    ],
)
def test_link_text_round_trips(value: float, text: str) -> None:
    assert link(value) == text
    assert math.isclose(float(text), value, rel_tol=1e-6)


def test_echo_is_inert_markdown() -> None:
    shown = echo("`](javascript:alert(1)) <script>\n" + "x" * 100)
    assert shown.startswith("`") and shown.endswith("`")
    assert shown.count("`") == 2
    assert len(shown) <= 42
    assert echo("") == "`(empty)`"
