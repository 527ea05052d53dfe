"""The guided lesson, driven as a visitor would: links, predictions, reveals, navigation."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from streamlit.testing.v1 import AppTest

from core import PRESETS
from labs.lesson.model import lesson_step
from labs.lesson.options import OPTIONS, STEP_IDS
from tests.apptest_util import assert_claims_shown, open_app
from ui.i18n import t
from ui.params import echo

N = len(STEP_IDS)


def open_lesson(**query: str) -> AppTest:
    at = open_app("lesson", **query)
    assert not at.exception
    return at


def heading(at: AppTest) -> str:
    return at.subheader[0].value


def predict_and_reveal(at: AppTest, step_id: str, answer: str) -> None:
    at.radio(key=f"pick_{step_id}").set_value(answer).run()
    assert not at.exception
    at.button(key=f"reveal_{step_id}").click().run()
    assert not at.exception


@pytest.mark.parametrize("lang", ["en", "id"])
def test_every_step_renders_and_reveals_in_both_languages(lang: str) -> None:
    at = open_lesson(lang=lang)
    for k, step_id in enumerate(STEP_IDS, start=1):
        at.slider(key="step").set_value(k).run()
        assert not at.exception, step_id
        assert heading(at) == f"{k}. {t(f'lesson.{step_id}_title', lang)}"
        assert at.button(key=f"reveal_{step_id}").disabled  # no prediction yet
        predict_and_reveal(at, step_id, OPTIONS[step_id][0])
        assert len(at.get("plotly_chart")) == 1, step_id
        verdicts = [e.value for e in at.success] + [e.value for e in at.error]
        assert len(verdicts) == 1, step_id
        # The page shows exactly the sentences the core chose for this step.
        assert_claims_shown(at, lesson_step(step_id).claims, lang)
        # Every text on the page came out of the catalogue with its fields filled in.
        texts = [m.value for m in at.markdown] + [c.value for c in at.caption]
        assert not any(re.search(r"(?<![A-Za-z])\{[a-z_]+\}", s) for s in texts), step_id


@pytest.mark.parametrize("k", range(1, N + 1))
def test_link_opens_the_step_it_names(k: int) -> None:
    at = open_lesson(step=str(k))
    assert at.slider(key="step").value == k
    assert heading(at) == f"{k}. {t(f'lesson.{STEP_IDS[k - 1]}_title', 'en')}"
    assert not at.warning


@pytest.mark.parametrize(
    ("raw", "opened", "code"),
    [("42", N, "param_above"), ("0", 1, "param_below"), ("abc", 1, "param_not_number")],
)
def test_bad_step_in_link_gives_a_notice_and_a_valid_step(raw: str, opened: int, code: str) -> None:
    at = open_lesson(step=raw)
    assert at.slider(key="step").value == opened
    assert heading(at).startswith(f"{opened}. ")
    notice = " ".join(w.value for w in at.warning)
    assert "`step`" in notice
    assert t("common.notices_heading", "en") in notice
    fields = {"key": "step", "raw": echo(raw), "value": opened, "limit": opened, "lo": 1, "hi": N}
    expected = t(f"common.{code}", "en", **fields)
    assert expected in notice


def test_next_is_the_primary_button_only_once_the_step_is_revealed() -> None:
    at = open_lesson(step="3")
    assert at.button(key="next").proto.type == "secondary"
    assert at.button(key="reveal_rescale").proto.type == "primary"
    predict_and_reveal(at, "rescale", OPTIONS["rescale"][0])
    assert at.button(key="next").proto.type == "primary"


@pytest.mark.parametrize("lang", ["en", "id"])
def test_sidebar_marks_read_as_words(lang: str) -> None:
    at = open_lesson(lang=lang)
    predict_and_reveal(at, "centre", lesson_step("centre").correct)
    marks = at.sidebar.markdown[-1].value
    assert "material" not in marks and "radio_button" not in marks
    assert t("lesson.mark_right", lang) in marks
    assert marks.count(t("lesson.mark_open", lang)) == N - 1


def test_presenter_view_keeps_the_step_and_its_buttons() -> None:
    at = open_lesson(step="5", controls="hidden")
    assert heading(at).startswith("5. ")
    predict_and_reveal(at, "shift", "layer")
    assert len(at.get("plotly_chart")) == 1
    assert not at.get("code")  # no share box
    # and no code section (drawn only when opened, so its code block alone would not tell)
    assert t("common.code_heading", "en") not in [e.label for e in at.expander]


def test_buttons_move_the_bound_step_and_answers_survive_navigation() -> None:
    at = open_lesson()
    assert at.button(key="previous").disabled
    predict_and_reveal(at, "centre", "mean")
    at.button(key="next").click().run()
    assert at.slider(key="step").value == 2
    assert at.query_params["step"] == "2"
    assert heading(at).startswith("2. ")
    at.button(key="previous").click().run()
    assert at.slider(key="step").value == 1
    # The prediction and the reveal are still there, and the prediction is now locked.
    radio = at.radio(key="pick_centre")
    assert radio.value == "mean" and radio.disabled
    # x's own mean is wrong: the numbers give RMSNorm's output the mean mu / RMS(x).
    assert len(at.error) == 1
    score = t("lesson.score", "en", right=0, revealed=1, n=N)
    assert score in [c.value for c in at.caption]


def test_verdicts_follow_the_core_numbers_and_the_score_counts_them() -> None:
    at = open_lesson(step=str(N))
    assert at.button(key="next").disabled
    right = 0
    for k, step_id in enumerate(STEP_IDS, start=1):
        at.slider(key="step").set_value(k).run()
        r = lesson_step(step_id)
        correct = r.correct
        # Right on even steps, wrong on odd ones: the score must count exactly the even ones.
        answer = correct if k % 2 == 0 else next(o for o in OPTIONS[step_id] if o != correct)
        right += answer == correct
        predict_and_reveal(at, step_id, answer)
        if answer == correct:
            assert len(at.success) == 1 and not at.error, step_id
            assert f"**{r.letter(correct)}**" in at.success[0].value
        else:
            assert len(at.error) == 1 and not at.success, step_id
            shown = at.error[0].value
            assert f"**{r.letter(answer)}**" in shown and f"**{r.letter(correct)}**" in shown
    assert right == N // 2
    assert at.info[0].value == t("lesson.finished", "en", right=right, n=N)


def shown_letter(text: str) -> str:
    """The letter an option is shown under, from its label or a verdict: ``**C** · ...``."""
    found = re.findall(r"\*\*([A-D])\*\* · ", text)
    assert len(found) == 1, text
    return found[0]


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_right_option_is_marked_right_and_no_letter_is_right_in_more_than_five_steps(
    lang: str,
) -> None:
    """Pick, on every step, the option the page itself marks right; always answering one letter
    must not pass the lesson, so over the fourteen steps no letter is the right one more than five
    times. A wrong pick, in a second session, is marked wrong and named by its letter."""
    at, wrong_at = open_lesson(lang=lang), open_lesson(lang=lang)
    right_letters: Counter[str] = Counter()
    for k, step_id in enumerate(STEP_IDS, start=1):
        r = lesson_step(step_id)
        at.slider(key="step").set_value(k).run()
        labels = at.radio(key=f"pick_{step_id}").options
        assert [shown_letter(label) for label in labels] == list("ABCD"[: len(labels)])
        predict_and_reveal(at, step_id, r.correct)
        assert len(at.success) == 1 and not at.error, step_id
        verdict = at.success[0].value
        assert verdict.startswith(t("lesson.verdict_right", lang)), step_id
        # The verdict names the right option as the radio shows it: same letter, same words.
        picked = labels[at.radio(key=f"pick_{step_id}").index]
        assert picked in verdict, step_id
        right_letters[shown_letter(picked)] += 1

        wrong = next(o for o in OPTIONS[step_id] if o != r.correct)
        wrong_at.slider(key="step").set_value(k).run()
        predict_and_reveal(wrong_at, step_id, wrong)
        assert len(wrong_at.error) == 1 and not wrong_at.success, step_id
        wrong_labels = wrong_at.radio(key=f"pick_{step_id}").options
        chosen = shown_letter(wrong_labels[wrong_at.radio(key=f"pick_{step_id}").index])
        assert wrong_at.error[0].value.startswith(t("lesson.verdict_wrong", lang, chosen=chosen)), (
            step_id
        )
        assert picked in wrong_at.error[0].value, step_id
    assert at.info[0].value == t("lesson.finished", lang, right=len(STEP_IDS), n=N)
    assert sum(right_letters.values()) == N
    assert max(right_letters.values()) <= 5, right_letters


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_presets_table_names_each_implementation_in_the_page_language(lang: str) -> None:
    at = open_lesson(step=str(N), lang=lang)
    predict_and_reveal(at, "gain", lesson_step("gain").correct)
    names = [str(name) for name in at.table[0].value.index]
    if lang == "id":
        assert not any("paper's" in name for name in names), names
    presets = [p for p in PRESETS.values() if p.kind == "rms"]
    assert names == [t(f"lesson.preset_{p.name}", lang) for p in presets]
    # The English names are the presets' own titles, so the two cannot drift apart.
    assert [t(f"lesson.preset_{p.name}", "en") for p in presets] == [p.title for p in presets]
