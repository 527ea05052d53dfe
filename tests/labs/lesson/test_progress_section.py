"""The solo lesson's progress in its link (``labs.lesson.progress_section``): a pick and a reveal
reach the link and the share box's link, the link opened in a fresh session shows the same
progress, and a malformed value is told, corrected and leaves the page working."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from labs.lesson.model import lesson_step
from labs.lesson.options import OPTIONS, STEP_IDS
from labs.lesson.progress_section import read
from tests.apptest_util import figures, open_app, open_page_alone, open_share
from ui.i18n import t
from ui.params import echo

N = len(STEP_IDS)
# The letters each step shows its options under, written out here rather than computed.
LETTERS = {s: "ABCD"[: len(options)] for s, options in OPTIONS.items()}


def letter_of(step_id: str, option: str) -> str:
    return LETTERS[step_id][OPTIONS[step_id].index(option)]


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


def notices(at: AppTest) -> str:
    return "\n".join(w.value for w in at.warning)


def test_a_pick_and_a_reveal_reach_the_link_and_a_fresh_session_shows_them() -> None:
    at = open_page_alone("lesson")
    assert "progress" not in at.query_params  # nothing predicted: the link has no progress
    right = lesson_step("centre").correct
    at.radio(key="pick_centre").set_value(right).run()
    assert at.query_params["progress"] == letter_of("centre", right).lower() + "-" * (N - 1)
    at.button(key="reveal_centre").click().run()
    at.slider(key="step").set_value(3).run()
    wrong = next(o for o in OPTIONS["rescale"] if o != lesson_step("rescale").correct)
    at.radio(key="pick_rescale").set_value(wrong).run()
    expected = letter_of("centre", right) + "-" + letter_of("rescale", wrong).lower()
    expected += "-" * (N - 3)
    assert at.query_params["progress"] == expected
    score = t("lesson.score", "en", right=1, revealed=1, n=N)
    assert score in captions(at)

    shared = [c.value for c in open_share(at).code if "step=" in c.value][0]  # its plain link
    query = {k: v[0] for k, v in parse_qs(urlsplit(shared).query).items()}
    assert query["progress"] == expected and query["step"] == "3"

    fresh = open_app("lesson", **query)  # a reload, or the link opened anywhere
    assert not fresh.exception and not fresh.warning
    assert fresh.query_params["progress"] == expected
    assert score in captions(fresh)
    radio = fresh.radio(key="pick_rescale")
    assert radio.value == wrong and not radio.disabled  # picked, not revealed
    assert not fresh.button(key="reveal_rescale").disabled
    fresh.slider(key="step").set_value(1).run()
    at.slider(key="step").set_value(1).run()
    radio = fresh.radio(key="pick_centre")
    assert radio.value == right and radio.disabled  # revealed: the verdict and the figure
    assert [s.value for s in fresh.success] == [s.value for s in at.success] != []
    assert figures(fresh) == figures(at) and len(figures(fresh)) == 1


def test_every_step_revealed_comes_back_from_the_link() -> None:
    """Capital C on every step that has a third option: each is revealed with C as its pick."""
    link = "".join("C" if len(LETTERS[s]) > 2 else "-" for s in STEP_IDS)
    at = open_app("lesson", progress=link)
    assert not at.exception and not at.warning
    steps = [s for s in STEP_IDS if len(LETTERS[s]) > 2]
    right = sum(OPTIONS[s][2] == lesson_step(s).correct for s in steps)
    assert t("lesson.score", "en", right=right, revealed=len(steps), n=N) in captions(at)
    assert at.radio(key="pick_centre").value == OPTIONS["centre"][2]
    assert read(link) == ({s: OPTIONS[s][2] for s in steps}, dict.fromkeys(steps, True))


@pytest.mark.parametrize(
    ("raw", "kept", "lang"),
    [
        ("", "-" * N, "en"),
        ("b", "b" + "-" * (N - 1), "id"),  # one character per step, all fourteen
        ("x<b>`", "--b" + "-" * (N - 3), "en"),  # each character on its own
        ("D" * 20, "".join("D" if len(LETTERS[s]) > 3 else "-" for s in STEP_IDS), "id"),
    ],
)
def test_a_malformed_progress_is_told_corrected_and_the_page_works(
    raw: str, kept: str, lang: str
) -> None:
    at = open_app("lesson", progress=raw, lang=lang)
    assert not at.exception
    allowed = "`-`, `a`–`d`, `A`–`D`"
    fields = {"key": "progress", "raw": echo(raw), "allowed": allowed, "value": f"`{kept}`"}
    assert t("common.param_unknown_choice", lang, **fields) in notices(at)
    assert t("lesson.progress_link", lang) in captions(at)
    assert at.query_params.get("progress") == (None if set(kept) == {"-"} else kept)
    # The page still predicts and reveals (the sweep: open in every case here), and the link
    # follows.
    at.slider(key="step").set_value(6).run()
    at.radio(key="pick_sweep").set_value(OPTIONS["sweep"][0]).run()
    at.button(key="reveal_sweep").click().run()
    assert not at.exception and len(figures(at)) == 1
    assert at.query_params["progress"] == kept[:5] + "A" + kept[6:]
