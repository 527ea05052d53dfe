"""ui.params: how a raw link value becomes a valid one, and what the notice says; and the page
registry's link names: no page parameter takes a name the whole app reads."""

import math
from collections import Counter
from collections.abc import Sequence

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest_util import APP, TIMEOUT, open_app, page_params
from ui.fmt import link
from ui.frame import APP_KEYS, CONTROLS, LANG_KEY, TEXT_SIZE
from ui.i18n import LANGUAGES
from ui.nav import PAGES
from ui.params import (
    ChoiceParam,
    FloatParam,
    IntParam,
    LadderParam,
    Notice,
    Param,
    TextParam,
    echo,
)
from ui.st_private import reserved_link_keys

D = IntParam("d", 16, 2, 8192)
OFFSET = FloatParam("offset", 0.0, -20.0, 20.0)
STEPPED = FloatParam("offset", 0.0, -20.0, 20.0, step=0.1)
GAIN = FloatParam("gain", 1.0, -4.0, 4.0, step=0.05)
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
        (STEPPED, "0.3", 0.3, None),
        (STEPPED, "-0.3000000001", -0.3, None),
        (STEPPED, "0.33", 0.3, "snapped"),
        (STEPPED, "-0.36", -0.4, "snapped"),
        (STEPPED, "25", 20.0, "above"),
        (GAIN, "1.7", 1.7, None),
        (GAIN, "0.35", 0.35, None),
        (GAIN, "0.36", 0.35, "snapped"),
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


def test_a_step_gives_round_stops_from_lo_to_hi() -> None:
    stops = STEPPED.stops()
    assert len(stops) == 401 and (stops[0], stops[-1]) == (-20.0, 20.0)
    # Each stop is the decimal it names, as the link writes it (not 0.30000000000000004).
    assert all(v == float(f"{v:.1f}") for v in stops)
    assert stops[203] == 0.3 and link(stops[203]) == "0.3"
    assert math.copysign(1.0, stops[200]) == 1.0  # 0, never -0
    assert (STEPPED.decimals, GAIN.decimals, OFFSET.decimals) == (1, 2, 0)
    assert GAIN.stops()[47] == -1.65 and OFFSET.stops() == () and OFFSET.nearest(0.33) == 0.33


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


# --- The page registry: no page's link parameter takes a name the whole app reads ----------------


def clashes(params: Sequence[Param]) -> list[str]:
    """What is wrong with one page's ``PARAMS``: a key the app reads on every page (compared
    as Streamlit compares ``embed``, ignoring case), or a key declared twice."""
    reserved = {key.lower() for key in APP_KEYS}
    keys = [p.key for p in params]
    problems = [f"{k!r} is an app-wide link parameter" for k in keys if k.lower() in reserved]
    problems += [f"{k!r} is declared {n} times" for k, n in Counter(keys).items() if n > 1]
    return problems


@pytest.mark.parametrize("spec", PAGES, ids=lambda spec: spec.name)
def test_no_page_param_reuses_an_app_wide_name_or_its_own(spec) -> None:
    params = page_params(spec.name)
    assert params and all(isinstance(p, Param) for p in params)
    assert clashes(params) == []


def test_the_app_wide_names_are_the_ones_the_app_reads() -> None:
    assert {CONTROLS.key, TEXT_SIZE.key, *reserved_link_keys()} <= set(APP_KEYS)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page("pages/lesson.py")
    at.run()
    assert at.segmented_control(key=LANG_KEY).value in LANGUAGES


@pytest.mark.parametrize(
    ("params", "count"),
    [
        ((TextParam("text", ""),), 1),
        ((TextParam("prompt", ""), ChoiceParam("Lang", "en")), 1),
        ((IntParam("d", 4), FloatParam("d", 1.0)), 1),
        ((TextParam("prompt", ""), D), 0),
    ],
)
def test_the_registry_rule_can_fail(params: tuple, count: int) -> None:
    assert len(clashes(params)) == count


# --- A corrected link value stays in the address, so a link copied from it shows the same view ---

NUMERIC_PAGES = [
    spec
    for spec in PAGES
    if any(isinstance(p, (IntParam, FloatParam)) for p in page_params(spec.name))
]
# Beyond every bound of every page (the seed's 2**31 - 1 included), as a typed link might be.
BEYOND = {"above": "9" * 20, "below": "-" + "9" * 20}


@pytest.mark.parametrize("side", sorted(BEYOND))
@pytest.mark.parametrize("spec", NUMERIC_PAGES, ids=lambda spec: spec.name)
def test_a_clamped_link_value_stays_in_the_address(spec, side: str) -> None:
    """Every number of a page out of range at once: each is clamped, named in a notice, and the
    address then carries the clamped value, so a shared link reproduces the view. A clamped
    value equal to the default may be left out: the page shows it without the parameter."""
    params = [p for p in page_params(spec.name) if isinstance(p, (IntParam, FloatParam))]
    at = open_app(spec.name, **{p.key: BEYOND[side] for p in params})
    assert not at.exception
    notices = " ".join(w.value for w in at.warning)
    for p in params:
        limit = p.hi if side == "above" else p.lo
        assert at.session_state[p.key] == limit, p.key
        assert f"`{p.key}`" in notices, p.key
        shown = at.query_params.get(p.key)
        if limit == p.default:
            assert shown in (None, p.serialise(limit)), p.key
        else:
            assert shown == p.serialise(limit), (p.key, shown)


@pytest.mark.parametrize(
    ("key", "raw", "shown"),
    [
        ("d", "99999", "8192"),  # clamped, with a notice
        ("d", "64.4", "64"),  # rounded, with a notice
        ("offset", "1e3", "20"),  # a float clamped
        ("eps", "1e-3", "0.001"),  # another spelling of a ladder value: no notice
        ("dist", "SPIKE", "spike"),  # another spelling of a choice: no notice
        ("d", "abc", None),  # the default: a bound widget leaves it out
    ],
)
def test_the_address_carries_the_value_the_explorer_uses(key: str, raw: str, shown) -> None:
    at = open_app("explorer", **{key: raw})
    assert not at.exception
    assert at.query_params.get(key) == shown
    param = {p.key: p for p in page_params("explorer")}[key]
    expected = param.default if shown is None else param.parse(shown)[0]
    assert at.session_state[key] == expected


@pytest.mark.parametrize(
    ("param", "raw", "words"),
    [
        (IntParam("trained_seed", 0, 0, 2), "abc", ("0", "2")),
        (FloatParam("offset", 0.0, -20.0, 20.0), "1e999", ("-20", "20")),
        (LadderParam("eps", 1e-5, (1e-8, 1e-5, 0.25)), "x", ("1e-8", "0.25", "0,25")),
    ],
)
def test_a_value_that_is_no_number_is_told_what_is_allowed(param, raw: str, words) -> None:
    """The notice names the parameter and the range it takes, in the page's language."""
    value, problem = param.parse(raw)
    assert value == param.default and problem is not None
    english = Notice(param.key, raw, problem).text("en")
    indonesian = Notice(param.key, raw, problem).text("id")
    assert f"`{param.key}`" in english and "allowed" in english
    assert "diizinkan" in indonesian
    lo, hi = words[0], words[1]
    assert f"{lo} to {hi}" in english
    assert f"{lo} sampai {words[-1]}" in indonesian


@pytest.mark.parametrize(
    ("page", "link"),
    [
        ("attention", {"offset": "10"}),
        ("attention", {"eps": "0.3"}),
        ("precision", {"scale": "10"}),
        ("backward", {"offset": "0.3", "eps": "0.01"}),
        ("explorer", {"dist": "SPIKE"}),
    ],
)
def test_a_page_opened_from_another_reads_the_link_as_if_opened_directly(page, link) -> None:
    """Pages share keys with other value sets (the explorer's offset is any number, the
    attention sandbox's a stop on its slider): a link opened on the landing page (or the lesson,
    for the explorer) and then the page, as the sidebar does, sets the page's controls as the
    link opened on that page does, with the same notices, not the other page's values snapped
    to a first stop."""
    direct = open_app(page, lang="en", **link)
    via = open_app("lesson" if page == "explorer" else None, lang="en", **link)
    via.switch_page(f"pages/{page}.py")
    via.run()
    assert not direct.exception and not via.exception
    keys = [p.key for p in page_params(page)]

    def values(at: AppTest) -> dict:
        return {k: at.session_state[k] for k in keys if k in at.session_state}

    assert values(via) == values(direct)
    assert [w.value for w in via.warning] == [w.value for w in direct.warning]
