"""Fuzz every page with hostile links: no exception, every notice names its parameter, and no
visitor text reaches the page as Markdown or HTML outside an inert code span.

The pages come from the registry ``ui.nav.PAGES`` and their link parameters from each page's
``PARAMS`` (importing a page draws nothing). A page added to the registry is fuzzed without
touching this file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from tests.apptest_util import page_params, shown_text
from tests.hypothesis_util import examples
from ui.i18n import LANGUAGES, t
from ui.nav import PAGES as NAV_PAGES

# Hundreds of hostile links through every page in AppTest: most of a minute of the suite, so
# not in the quick loop.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120


def param_kinds(name: str) -> dict[str, tuple[str, str | None]]:
    """``key -> (Param class, default as link text)`` for a page's PARAMS tuple."""
    return {p.key: (type(p).__name__, p.serialise(p.default)) for p in page_params(name)}


PAGES = [f"{spec.name}.py" for spec in NAV_PAGES]
PARAMS = {f"{spec.name}.py": param_kinds(spec.name) for spec in NAV_PAGES}

# Values no Int/Float/Ladder/Choice parameter accepts: each must produce a notice naming the key.
INVALID = (
    "1" * 60,
    "-" + "9" * 60,
    "1" * 5000,
    "1e309",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "",
    " ",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "![x](http://example.com/x.png)",
    "<b>bold</b>",
    "`code` **bold** $\\alpha$",
    "ünïcødé ✓ 𝔁 \u202e1",
    "a" * 5000,
    "0x10",
    "1,2",
    "1, " * 9000,
)
# Numbers in range for most parameters, and numbers out of range for all of them.
NUMBERS = ("1", "3", "0.5", "-1", "1e-5", "7.5", "-1e308", "99999")
FUZZ = settings(
    max_examples=examples(15),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
# What would make Markdown fetch, run or link something a visitor chose.
DANGEROUS = ("<script", "onerror", "javascript:", "![", "<img", "<b>")


def values_for(kind: str, default: str | None) -> st.SearchStrategy[str]:
    valid = [default] if default is not None else []
    return st.one_of(
        st.sampled_from(INVALID),
        st.sampled_from((*NUMBERS, *valid)),
        st.text(max_size=30),
    )


def open_page(file: str, lang: str, query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / file), default_timeout=TIMEOUT)
    at.session_state["lang"] = lang
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    return at


def outside_code_spans(text: str) -> str:
    return CODE_SPAN.sub(" ", text)


def notice_lines(at: AppTest, lang: str) -> list[str]:
    heading = t("common.notices_heading", lang)
    lines = []
    for warning in at.warning:
        if warning.value.startswith(f"**{heading}**"):
            lines += [line for line in warning.value.splitlines() if line.startswith("- ")]
    return lines


def check_page(at: AppTest, lang: str, query: dict[str, str], kinds: dict) -> None:
    assert not at.exception, [e.value for e in at.exception]
    lines = notice_lines(at, lang)
    for line in lines:
        assert any(f"`{key}`" in line for key in query), line
    for key, raw in query.items():
        kind = kinds[key][0]
        if kind != "TextParam" and raw in INVALID:
            assert any(f"`{key}`" in line for line in lines), (key, raw[:40], lines)
    for body in shown_text(at):
        bare = outside_code_spans(body).lower()
        for pattern in DANGEROUS:
            assert pattern not in bare, (pattern, body[:200])
    # Raw HTML is only ever the frame's own CSS: never anything from the link.
    raws = [raw for raw in query.values() if len(raw.strip()) >= 4]
    html = [element.proto.body for element in at.get("html")]
    html += [m.proto.body for m in at.get("markdown") if m.proto.allow_html]
    for body in html:
        for raw in raws:
            assert raw not in body, (raw[:40], body[:200])


@pytest.mark.parametrize("file", PAGES)
@FUZZ
@given(data=st.data())
def test_hostile_links_never_crash_or_leak(file: str, data) -> None:
    kinds = PARAMS[file]
    keys = data.draw(st.lists(st.sampled_from(sorted(kinds)), min_size=1, unique=True))
    query = {key: data.draw(values_for(*kinds[key]), label=key) for key in keys}
    lang = data.draw(st.sampled_from(list(LANGUAGES)))
    at = open_page(file, lang, query)
    check_page(at, lang, query, kinds)


@pytest.mark.parametrize("file", PAGES)
def test_every_parameter_hostile_at_once(file: str) -> None:
    """The worst link: every parameter of the page set to script text at the same time."""
    kinds = PARAMS[file]
    query = {key: "<script>alert(1)</script>" for key in kinds}
    at = open_page(file, "en", query)
    check_page(at, "en", query, kinds)
    for key, (kind, _) in kinds.items():
        if kind != "TextParam":
            assert key not in at.query_params or at.query_params[key] != query[key]


def test_every_page_declares_its_parameters() -> None:
    assert len(PAGES) >= 8
    for file, kinds in PARAMS.items():
        assert kinds, f"pages/{file} declares no link parameters"
        assert all(kind.endswith("Param") for kind, _ in kinds.values())


APP_KEYS = ("lang", "controls", "text", "embed")


@settings(max_examples=examples(8), deadline=None)
@given(
    query=st.dictionaries(
        st.sampled_from(APP_KEYS),
        st.one_of(st.sampled_from(INVALID), st.sampled_from(("id", "en", "hidden", "large"))),
        min_size=1,
    )
)
def test_hostile_router_parameters(query: dict[str, str]) -> None:
    """The router's own link options (language, presenter mode) through app.py."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    lang = at.session_state["lang"]
    assert lang in LANGUAGES
    lines = notice_lines(at, lang)
    for key in ("lang", "controls", "text"):
        if query.get(key) in INVALID:
            assert any(f"`{key}`" in line for line in lines), (key, lines)
    for body in shown_text(at):
        bare = outside_code_spans(body).lower()
        for pattern in DANGEROUS:
            assert pattern not in bare, (pattern, body[:200])
    for element in at.get("html"):
        for raw in query.values():
            if len(raw.strip()) >= 4:
                assert raw not in element.proto.body


@pytest.mark.parametrize("key,value", [("controls", "hidden"), ("text", "large")])
def test_a_view_option_given_twice_is_named_in_a_notice(key: str, value: str) -> None:
    """``?text=normal&text=large`` takes the last value, and says so, like widget parameters."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params[key] = ["normal" if key == "text" else "shown", value]
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    lines = notice_lines(at, at.session_state["lang"])
    assert any(f"`{key}`" in line for line in lines), lines
