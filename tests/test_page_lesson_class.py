"""The guided lesson as a class, driven with AppTest: a teacher and three students (separate
sessions sharing the store) through SQLite and through Redis; bad codes, keys and steps fuzzed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from core.lab.lesson_options import OPTIONS, STEP_IDS, letter
from serve.classroom.backends import open_store
from serve.classroom.codes import ALPHABET, normal_code
from serve.classroom.store import ClassError, Limits
from tests.apptest_util import open_page_alone
from tests.classroom_util import redis_server, store_env
from ui import classroom
from ui.i18n import t
from ui.params import echo

STORE_VARS = ("NORMLAB_CLASS_STORE", "NORMLAB_DATA_DIR")


@pytest.fixture(scope="module")
def sqlite_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("classes"))


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("fuzz"))


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "redis"])
def where(request) -> Iterator[str]:
    """The store every session of the test reaches, through the environment as a host sets it."""
    place = request.getfixturevalue("sqlite_dir" if request.param == "sqlite" else "redis_url")
    with pytest.MonkeyPatch.context() as mp:
        for name in STORE_VARS:
            mp.delenv(name, raising=False)
        for name, value in store_env(place).items():
            mp.setenv(name, value)
        yield place


def lesson(lang: str = "en", **query: str) -> AppTest:
    return open_page_alone("lesson", lang=lang, **query)


def warnings(at: AppTest) -> str:
    return "\n".join(w.value for w in at.warning)


def page_text(at: AppTest) -> str:
    kinds = ("markdown", "caption", "info", "success", "warning", "code")
    return "\n".join(str(e.value) for kind in kinds for e in at.get(kind))


def class_counts(at: AppTest, step: int = 1) -> str:
    """The teacher's counts as text: 'A: n · B: n ...'."""
    step_id = STEP_IDS[step - 1]
    heads = [f"{letter(step_id, o)}: " for o in OPTIONS[step_id]]
    found = [m.value for m in at.markdown if all(h in m.value for h in heads)]
    assert len(found) == 1, [m.value for m in at.markdown]
    return found[0]


def start_class() -> tuple[AppTest, str, str]:
    teacher = lesson(**{"class": "new"})
    code, key = teacher.query_params["class"], teacher.query_params["teacher"]
    assert normal_code(code) == code and len(key) >= 22
    return teacher, code, key


def test_a_teacher_and_three_students(where: str) -> None:
    teacher, code, key = start_class()
    assert not teacher.warning
    # The join link, with a copy button, and its QR code; the teacher's key is in neither.
    assert [c.value for c in teacher.code][0].endswith(f"/lesson?class={code}")
    assert len(teacher.get("image")) == 1
    assert key not in page_text(teacher)
    assert class_counts(teacher).endswith("(answers: 0)")
    picks = ["zero", "ratio", "ratio"]
    students = []
    for pick in picks:
        student = lesson(**{"class": code})
        assert "teacher" not in student.query_params
        assert not student.get("button") or not any(b.key == "class_reveal" for b in student.button)
        student.radio(key="pick_centre").set_value(pick).run()
        recorded = t("classroom.recorded", "en", letter=letter("centre", pick))
        assert [s.value for s in student.success] == [recorded]
        students.append(student)
    # The first student changes their mind before the reveal: replaced, not added.
    students[0].radio(key="pick_centre").set_value("mean").run()
    teacher.run()
    assert t("classroom.joined", "en", n=3) in page_text(teacher)
    assert class_counts(teacher) == "A: 0 · B: 0 · C: 1 · D: 2 (answers: 3)"
    assert open_store().counts(code, 1) == {"zero": 0, "one": 0, "mean": 1, "ratio": 2}
    # The teacher reveals; every student sees the answer and the class's distribution.
    teacher.button(key="class_reveal").click().run()
    assert not teacher.exception
    for student in students:
        student.run()
        assert student.radio(key="pick_centre").disabled
        assert len(student.get("plotly_chart")) == 2  # the class's answers and the step's figure
        assert "A: 0 · B: 0 · C: 1 · D: 2 (answers: 3)" in page_text(student)
    # A change after the reveal is refused by the store, whatever the page does.
    assert open_store().state(code).revealed == {1}
    with pytest.raises(ClassError, match="closed"):
        open_store().answer(code, students[0].session_state[classroom.STUDENT], 1, "zero")
    # The teacher moves on; a following student's page opens the same step.
    teacher.button(key="next").click().run()
    assert open_store().state(code).step == 2
    students[1].run()
    assert students[1].slider(key="step").value == 2
    assert students[1].query_params["step"] == "2"
    # A student at their own pace stays where they are, and has the lesson's own reveal.
    students[2].toggle(key=classroom.FOLLOW).set_value(False).run()
    students[2].slider(key="step").set_value(5).run()
    teacher.run()
    students[2].run()
    assert students[2].slider(key="step").value == 5
    assert students[2].button(key="reveal_shift").disabled  # no prediction yet


def test_a_wrong_key_leads_nothing_and_is_told(where: str) -> None:
    teacher, code, key = start_class()
    impostor = lesson(**{"class": code, "teacher": key[:-2] + "xx"})
    assert t("classroom.error_not_teacher", "en", code=echo(code)) in warnings(impostor)
    assert "teacher" not in impostor.query_params
    assert not any(b.key == "class_reveal" for b in impostor.button)
    impostor.slider(key="step").set_value(4).run()
    assert open_store().state(code).step == 1  # a student's own step moves nobody


@pytest.mark.parametrize("lang", ["en", "id"])
def test_an_unknown_code_is_a_notice_in_the_pages_language(where: str, lang: str) -> None:
    at = lesson(lang, **{"class": "ZZZZZZ"})
    hours = Limits.from_env().lifetime_s / 3600
    assert t("classroom.error_unknown", lang, code=echo("ZZZZZZ"), hours=hours) in warnings(at)
    # The lesson works on its own: predict and reveal as always.
    at.radio(key="pick_centre").set_value("ratio").run()
    at.button(key="reveal_centre").click().run()
    assert len(at.get("plotly_chart")) == 1 and not at.exception


def test_a_store_that_is_down_leaves_the_lesson_working(monkeypatch) -> None:
    from benchmarks.live import free_port

    monkeypatch.setenv("NORMLAB_CLASS_STORE", f"redis://127.0.0.1:{free_port()}/0")
    at = lesson(**{"class": "new"})
    assert t("classroom.error_down", "en") in warnings(at)
    assert at.query_params["class"] == "new"  # no class was made, so no key either
    at.radio(key="pick_centre").set_value("ratio").run()
    at.button(key="reveal_centre").click().run()
    assert len(at.get("plotly_chart")) == 1 and not at.exception


def test_answers_past_a_few_a_second_are_not_recorded(where: str, monkeypatch) -> None:
    _, code, _ = start_class()
    student = lesson(**{"class": code})
    monkeypatch.setattr(classroom, "clock", lambda: 1000.0)  # every click at once
    for pick in ("zero", "one", "mean", "ratio"):
        student.radio(key="pick_centre").set_value(pick).run()
    assert t("classroom.error_too_fast", "en") in warnings(student)
    assert open_store().counts(code, 1)["mean"] == 1  # the third stands, the fourth did not


CODES = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=ALPHABET + "01OIL", min_size=5, max_size=7),
    st.sampled_from(["new ", "NEW", "", " ", "%00", "<b>x</b>", "`x`", "a" * 300]),
)
KEYS = st.one_of(st.none(), st.text(max_size=80))
STEPS = st.one_of(st.none(), st.text(max_size=8), st.integers(-3, 20).map(str))


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(code=CODES, key=KEYS, step=STEPS)
def test_fuzzed_links_give_a_notice_never_a_crash(fuzz_dir, code, key, step) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NORMLAB_DATA_DIR", fuzz_dir)
        mp.delenv("NORMLAB_CLASS_STORE", raising=False)
        fuzzed_link(code, key, step)


def fuzzed_link(code: str, key: str | None, step: str | None) -> None:
    query = {"class": code} | ({"teacher": key} if key is not None else {})
    query |= {"step": step} if step is not None else {}
    at = lesson(**query)  # asserts no exception
    if code.strip().lower() == "new":
        assert normal_code(at.query_params["class"]) is not None
    else:  # malformed, or well-formed but no live class
        assert t("classroom.error_unknown", "en", code=echo(code), hours=24) in warnings(at)
    assert 1 <= at.slider(key="step").value <= len(STEP_IDS)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=st.text(max_size=80), step=st.integers(-3, 20).map(str))
def test_fuzzed_keys_on_a_live_class_lead_nothing(fuzz_dir, key: str, step: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NORMLAB_DATA_DIR", fuzz_dir)
        mp.delenv("NORMLAB_CLASS_STORE", raising=False)
        store = open_store()
        code, real = store.create()
        at = lesson(**{"class": code, "teacher": key, "step": step})
        assert t("classroom.error_not_teacher", "en", code=echo(code)) in warnings(at)
        assert store.state(code).step == 1 and not store.state(code).revealed
        assert real not in page_text(at)


def test_a_class_in_indonesian_shows_no_english(where: str) -> None:
    from tests.test_glossary import english_on_page

    teacher = lesson("id", **{"class": "new"})
    student = lesson("id", **{"class": teacher.query_params["class"]})
    student.radio(key="pick_centre").set_value("ratio").run()
    assert t("classroom.recorded", "id", letter="D") in page_text(student)
    teacher.button(key="class_reveal").click().run()
    student.run()
    for at in (teacher, student):
        assert not at.exception
        assert english_on_page(at) == []
