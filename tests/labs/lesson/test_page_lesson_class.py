"""The guided lesson as a class, driven with AppTest: a teacher and three students (separate
sessions sharing the store) through SQLite and through Redis; bad codes, keys and steps fuzzed."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from labkit import style
from labs.lesson import board_section, class_section
from labs.lesson.options import LESSON, OPTIONS, STEP_IDS, letter
from serve.classroom.backends import open_store
from serve.classroom.codes import ALPHABET, normal_code
from serve.classroom.store import ClassError, Limits
from tests.apptest_util import open_page_alone, open_share
from tests.classroom_util import redis_server, store_env
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
        # Every AppTest session has the address "local": the tests of the limits set their own.
        mp.setenv("NORMLAB_CLIENT_CLASSES", "10000")
        mp.setenv("NORMLAB_CLIENT_GUESSES", "10000")
        yield place


@pytest.fixture(autouse=True)
def deliberate_teacher(monkeypatch) -> None:
    """The tests press phase buttons faster than a person: no press is taken for a double
    click, except where a test says so."""
    monkeypatch.setattr(board_section, "PHASE_GAP_S", 0.0)


def lesson(lang: str = "en", **query: str) -> AppTest:
    return open_page_alone("lesson", lang=lang, **query)


def warnings(at: AppTest) -> str:
    return "\n".join(w.value for w in at.warning)


def page_text(at: AppTest) -> str:
    kinds = ("markdown", "caption", "info", "success", "warning", "code")
    return "\n".join(str(e.value) for kind in kinds for e in at.get(kind))


def class_counts(at: AppTest, step: int = 1) -> list[str]:
    """The class's counts as text, one per round shown: 'A: n · B: n ... (answers: n)'."""
    step_id = STEP_IDS[step - 1]
    heads = [f"{letter(step_id, o)}: " for o in OPTIONS[step_id]]
    return [m.value for m in at.markdown if all(h in m.value for h in heads)]


def start_class(lang: str = "en") -> tuple[AppTest, str, str]:
    teacher = lesson(lang, **{"class": "new"})
    code, key = teacher.query_params["class"], teacher.query_params["teacher"]
    assert normal_code(code) == code and len(key) >= 22
    return teacher, code, key


def pick(at: AppTest, option: str, step_id: str = "centre") -> AppTest:
    return at.radio(key=f"pick_{step_id}").set_value(option).run()


@pytest.fixture
def browser_of(monkeypatch):
    """Pages opened as one browser: the same seat cookie (AppTest sends no cookies)."""
    tokens: dict[int, str] = {}

    def same(token: str) -> None:
        monkeypatch.setattr(class_section, "cookie_token", lambda: tokens.setdefault(0, token))

    return same


def test_peer_instruction_for_a_teacher_and_five_students(where: str) -> None:
    teacher, code, key = start_class()
    assert not teacher.warning and not teacher.get("image")  # the QR code is the board's
    assert key not in page_text(teacher)
    firsts = ["zero", "ratio", "ratio", "mean", "one"]
    students = []
    for option in firsts:
        student = lesson(**{"class": code})
        assert "teacher" not in student.query_params
        assert not any(b.key.startswith("class_") for b in student.button if b.key)
        pick(student, option)
        recorded = t("classroom.recorded_1", "en", letter=letter("centre", option))
        assert [s.value for s in student.success] == [recorded]
        students.append(student)
    # Vote 1: the teacher sees how many answered, not the spread.
    teacher.run()
    assert t("classroom.answered", "en", n=5, total=5) in page_text(teacher)
    assert class_counts(teacher) == [] and not teacher.get("plotly_chart")
    # The spread and the discussion: answers closed.
    teacher.button(key="class_discuss").click().run()
    assert class_counts(teacher) == ["A: 1 · B: 1 · C: 1 · D: 2 (answers: 5)"]
    students[0].run()
    assert students[0].radio(key="pick_centre").disabled
    assert t("classroom.student_discuss", "en") in page_text(students[0])
    # Vote 2 starts from each first answer; three change their mind.
    teacher.button(key="class_vote2").click().run()
    seconds = ["ratio", "ratio", "zero", "ratio", "one"]
    for student, first, second in zip(students, firsts, seconds, strict=True):
        student.run()
        assert student.radio(key="pick_centre").value == first
        if second != first:
            pick(student, second)
        assert t("classroom.recorded_2", "en", letter=letter("centre", second)) in page_text(
            student
        )
    teacher.run()
    assert t("classroom.answered_2", "en", n=5, total=5) in page_text(teacher)
    # The reveal: both votes side by side, the right answer marked, who moved.
    teacher.button(key="class_revealed").click().run()
    assert not teacher.exception
    both = ["A: 1 · B: 1 · C: 1 · D: 2 (answers: 5)", "A: 1 · B: 1 · C: 0 · D: 3 (answers: 5)"]
    assert class_counts(teacher) == both
    # By hand: zero->ratio and mean->ratio went wrong to right, ratio->zero right to wrong.
    moves = t("classroom.moves", "en", up=2, down=1, n=5)
    assert moves in page_text(teacher)
    correct = OPTIONS["centre"].index("ratio")
    for chart in teacher.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        if spec["data"][0]["type"] == "bar" and len(spec["data"][0]["x"]) == 4:
            colors = spec["data"][0]["marker"]["color"]
            assert [c == style.ACCENT for c in colors] == [i == correct for i in range(4)]
    # The teacher answered nothing: the sidebar says "revealed", not "not right".
    assert t("lesson.mark_seen", "en") in page_text(teacher) + sidebar_text(teacher)
    assert t("lesson.mark_wrong", "en") not in sidebar_text(teacher)
    for student in students:
        student.run()
        assert student.radio(key="pick_centre").disabled
        assert class_counts(student) == both and moves in page_text(student)
    # The export: counts per step, round and option, as the store holds them.
    rows = list(csv.reader(io.StringIO(board_section.export_csv(classroom_seat(teacher)))))
    assert rows[0] == ["step", "round", "option", "letter", "count"]
    assert [tuple(r) for r in rows[1:]] == [
        (str(a), str(b), c, letter(STEP_IDS[a - 1], c), str(d))
        for a, b, c, d in open_store(LESSON).export(code, key)
    ]
    assert sum(int(r[4]) for r in rows[1:]) == 10
    # The teacher moves on; a following student's page opens the same step.
    teacher.button(key="next").click().run()
    assert open_store(LESSON).state(code).step == 2
    students[1].run()
    assert students[1].slider(key="step").value == 2
    assert students[1].query_params["step"] == "2"


def sidebar_text(at: AppTest) -> str:
    return "\n".join(str(m.value) for m in at.sidebar.markdown)


def classroom_seat(at: AppTest):
    """The teacher's seat as the page holds it, for the export."""
    code, key = at.session_state[class_section.SEAT]
    return class_section.Seat(open_store(LESSON), open_store(LESSON).state(code), key)


def test_a_student_cannot_reveal_ahead_of_the_teacher(where: str) -> None:
    teacher, code, key = start_class()
    student = lesson(**{"class": code})
    student.toggle(key=class_section.FOLLOW).set_value(False).run()
    student.slider(key="step").set_value(3).run()
    pick(student, "both", "rescale")
    assert not any(b.key and b.key.startswith("reveal_") for b in student.button)
    assert t("classroom.wait_reveal", "en") in page_text(student)
    seat = class_section.seat_id(student.session_state[class_section.TOKEN], code)
    assert open_store(LESSON).answers(code, seat) == {(3, 1): "both"}
    assert open_store(LESSON).state(code).revealed == frozenset()
    # After the teacher's reveal of step 1 the student may go back over it at their own pace.
    teacher.button(key="class_revealed").click().run()
    student.slider(key="step").set_value(1).run()
    assert student.radio(key="pick_centre").disabled
    assert len(student.get("plotly_chart")) >= 1  # the step's figure and the class's votes
    assert "A: 0 · B: 0 · C: 0 · D: 0 (answers: 0)" in class_counts(student)


def test_one_browser_keeps_one_seat(where: str, browser_of) -> None:
    """A pick, a reload, a second tab, the join link again: one seat, the last answer, shown."""
    _, code, _ = start_class()
    browser_of("a1" * 16)
    first = lesson(**{"class": code})
    pick(first, "zero")  # A
    reloaded = lesson(**{"class": code})  # a reload is a new session with the same cookie
    assert reloaded.radio(key="pick_centre").value == "zero"
    pick(reloaded, "mean")  # C
    for _ in range(2):  # a second tab; the join link closed and opened again
        again = lesson(**{"class": code})
        assert again.radio(key="pick_centre").value == "mean"
        assert t("classroom.recorded_1", "en", letter="C") in page_text(again)
    state = open_store(LESSON).state(code)
    assert state.students == 1
    assert open_store(LESSON).counts(code, 1) == {"zero": 0, "one": 0, "mean": 1, "ratio": 0}


def test_the_board_holds_no_key_and_takes_no_seat(where: str) -> None:
    teacher, code, key = start_class()
    board = lesson(**{"class": code, "controls": "hidden", "text": "large"})
    assert not board.exception and key not in page_text(board)
    assert "teacher" not in board.query_params and key not in str(dict(board.query_params))
    assert open_store(LESSON).state(code).students == 0
    assert not board.radio and "**D** · 0.6228" in page_text(board)  # the options as text
    (image,) = board.get("image")  # the QR code: 400 px shown, drawn at least that wide
    assert board_section.QR_WIDTH >= 1080 / 3
    png = board_section.qr_png(board_section.join_link(code))
    assert int.from_bytes(png[16:20], "big") >= board_section.QR_WIDTH  # the PNG's own width
    # The teacher's link to the board is the same view, without the key.
    buttons = [b for b in teacher.get("link_button")]
    assert any(f"class={code}" in b.proto.url and key not in b.proto.url for b in buttons)
    # The board follows the class: the teacher moves on and reveals.
    teacher.button(key="class_revealed").click().run()
    board.run()
    assert t("classroom.answered", "en", n=0, total=0) not in page_text(board)
    assert class_counts(board) == ["A: 0 · B: 0 · C: 0 · D: 0 (answers: 0)"]


def test_the_teacher_ends_the_class(where: str) -> None:
    teacher, code, _ = start_class()
    teacher.button(key="class_end").click().run()
    assert "class" not in teacher.query_params and "teacher" not in teacher.query_params
    assert t("classroom.ended", "en") in page_text(teacher)
    with pytest.raises(ClassError, match="ended"):
        open_store(LESSON).state(code)
    student = lesson(**{"class": code})  # a student who opens the link afterwards is told
    assert t("classroom.error_ended", "en", code=echo(code)) in warnings(student)


def test_new_classes_are_limited_per_client(where: str, monkeypatch) -> None:
    monkeypatch.setenv("NORMLAB_CLIENT_CLASSES", "5")
    monkeypatch.setattr(class_section, "client_address", lambda: "198.51.100.7")
    made = []
    for _ in range(50):
        at = lesson(**{"class": "new"})
        if at.query_params["class"] != "new":  # the teacher's key is in the link either way
            made.append(at.query_params["class"])
        else:
            assert t("classroom.error_client_classes", "en", limit=5) in warnings(at)
    assert len(made) == 5
    monkeypatch.setattr(class_section, "client_address", lambda: "198.51.100.8")
    assert lesson(**{"class": "new"}).query_params["class"] != "new"


def test_seats_and_guesses_are_limited_per_client(where: str, monkeypatch) -> None:
    monkeypatch.setenv("NORMLAB_CLIENT_SEATS", "3")
    monkeypatch.setenv("NORMLAB_CLIENT_GUESSES", "4")
    _, code, _ = start_class()
    monkeypatch.setattr(class_section, "client_address", lambda: "198.51.100.9")
    for _ in range(3):
        lesson(**{"class": code})
    flood = lesson(**{"class": code})
    assert t("classroom.error_client_seats", "en", code=echo(code), limit=3) in warnings(flood)
    monkeypatch.setattr(class_section, "client_address", lambda: "203.0.113.1")
    real = lesson(**{"class": code})
    pick(real, "ratio")
    assert open_store(LESSON).state(code).students == 4
    # Guessing codes: past the limit even a live code is refused, for that client only.
    for guess in ("AAAAAA", "BBBBBB", "CCCCCC", "DDDDDD"):
        lesson(**{"class": guess})
    refused = lesson(**{"class": code})
    assert t("classroom.error_client_guesses", "en", limit=4) in warnings(refused)
    monkeypatch.setattr(class_section, "client_address", lambda: "203.0.113.2")
    assert not lesson(**{"class": code}).warning


def test_a_wrong_key_leads_nothing_and_is_told(where: str) -> None:
    teacher, code, key = start_class()
    impostor = lesson(**{"class": code, "teacher": key[:-2] + "xx"})
    assert t("classroom.error_not_teacher", "en", code=echo(code)) in warnings(impostor)
    assert "teacher" not in impostor.query_params
    assert not any(b.key == "class_revealed" for b in impostor.button)
    impostor.toggle(key=class_section.FOLLOW).set_value(False).run()
    impostor.slider(key="step").set_value(4).run()
    assert open_store(LESSON).state(code).step == 1  # a student's own step moves nobody


@pytest.mark.parametrize("lang", ["en", "id"])
def test_an_unknown_code_is_a_notice_in_the_pages_language(where: str, lang: str) -> None:
    at = lesson(lang, **{"class": "ZZZZZZ"})
    hours = Limits.from_env().lifetime_s / 3600
    assert t("classroom.error_unknown", lang, code=echo("ZZZZZZ"), hours=hours) in warnings(at)
    # The lesson works on its own: predict and reveal as always.
    pick(at, "ratio")
    at.button(key="reveal_centre").click().run()
    assert len(at.get("plotly_chart")) == 1 and not at.exception


def test_a_store_that_is_down_leaves_the_lesson_working(monkeypatch) -> None:
    from benchmarks.live import free_port

    monkeypatch.setenv("NORMLAB_CLASS_STORE", f"redis://127.0.0.1:{free_port()}/0")
    at = lesson(**{"class": "new"})
    assert t("classroom.error_down_wait", "en") in warnings(at)
    assert at.query_params["class"] == "new"  # no class made (its key waits in the link)
    pick(at, "ratio")
    at.button(key="reveal_centre").click().run()
    assert len(at.get("plotly_chart")) == 1 and not at.exception


def test_a_class_made_whose_answer_was_lost_is_found_by_the_retry_and_a_reload(
    where: str, monkeypatch
) -> None:
    """The store made the class but its answer never came (a Redis call past its timeout): the
    page's own retry, and a reload of the link as it then stood, open that class; a second one
    would pass this network's limit of one."""
    monkeypatch.setenv("NORMLAB_CLIENT_CLASSES", "1")
    monkeypatch.setattr(class_section, "client_address", lambda: f"teacher-{where}")
    store = open_store(LESSON)
    made = type(store).create

    def lost(self, client: str, key: str | None = None):
        made(self, client, key)
        raise ClassError("down", "test: the answer was lost")

    with monkeypatch.context() as outage:
        outage.setattr(type(store), "create", lost)
        teacher = lesson(**{"class": "new"})
    assert t("classroom.error_down_wait", "en") in warnings(teacher)
    link = dict(teacher.query_params)
    teacher.run()  # the page's retry, once the store answers
    code = teacher.query_params["class"]
    assert normal_code(code) == code and not teacher.warning
    assert teacher.button(key="class_discuss")  # the teacher's page of the class made
    reloaded = lesson(**link)
    assert reloaded.query_params["class"] == code and not reloaded.warning


def test_a_pick_made_while_the_store_is_down_is_kept_and_sent(where: str, monkeypatch) -> None:
    teacher, code, _ = start_class()
    student = lesson(**{"class": code})
    store = open_store(LESSON)

    def down(*args, **kwargs):
        raise ClassError("down", "test")

    with monkeypatch.context() as outage:
        outage.setattr(type(store), "answer", down)
        outage.setattr(type(store), "state", down)
        pick(student, "ratio")
        assert t("classroom.kept", "en") in warnings(student)
        assert t("classroom.error_down_kept", "en", code=echo(code)) in warnings(student)
        assert student.info  # still in the class, following
    student.run()  # the watch reruns the page once the store answers
    assert t("classroom.recorded_1", "en", letter="D") in page_text(student)
    assert store.counts(code, 1)["ratio"] == 1
    teacher.button(key="next").click().run()
    student.run()
    assert student.slider(key="step").value == 2  # and it follows the teacher again


def test_answers_past_a_few_a_second_are_not_recorded(where: str, monkeypatch) -> None:
    _, code, _ = start_class()
    student = lesson(**{"class": code})
    monkeypatch.setattr(class_section, "clock", lambda: 1000.0)  # every click at once
    for option in ("zero", "one", "mean", "ratio"):
        pick(student, option)
    assert t("classroom.error_too_fast", "en") in warnings(student)
    assert open_store(LESSON).counts(code, 1)["mean"] == 1  # the third stands, the fourth waits
    monkeypatch.setattr(class_section, "clock", lambda: 1002.0)
    student.run()  # the page's watch reruns it: the fourth is sent, none lost
    assert open_store(LESSON).counts(code, 1)["ratio"] == 1 and not student.warning


def test_what_was_answered_alone_is_not_the_classs(where: str) -> None:
    _, code, _ = start_class()
    at = lesson()
    pick(at, "ratio")
    at.button(key="reveal_centre").click().run()
    assert at.query_params["progress"][0] == letter("centre", "ratio")  # alone, in the link
    at.query_params["class"] = code
    at.run()
    assert not at.radio(key="pick_centre").disabled  # not revealed: the class has not been
    assert at.radio(key="pick_centre").value is None
    assert "progress" not in at.query_params  # the class's answers are in its store
    assert open_store(LESSON).counts(code, 1) == dict.fromkeys(OPTIONS["centre"], 0)
    assert open_store(LESSON).state(code).students == 1


def test_a_class_link_reads_no_progress(where: str) -> None:
    """A class keeps its answers in the store, so ``progress`` is neither read, nor checked,
    nor kept in a class's link."""
    _, code, _ = start_class()
    student = lesson(**{"class": code, "progress": "C" + "x" * 20})
    assert t("common.notices_heading", "en") not in warnings(student)
    assert student.radio(key="pick_centre").value is None
    assert not student.radio(key="pick_centre").disabled
    assert "progress" not in student.query_params


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
        mp.setenv("NORMLAB_CLIENT_GUESSES", "100000")
        mp.setenv("NORMLAB_CLIENT_CLASSES", "100000")
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
        mp.setenv("NORMLAB_CLIENT_CLASSES", "100000")
        mp.delenv("NORMLAB_CLASS_STORE", raising=False)
        store = open_store(LESSON)
        code, real = store.create("fuzz")
        at = lesson(**{"class": code, "teacher": key, "step": step})
        assert t("classroom.error_not_teacher", "en", code=echo(code)) in warnings(at)
        assert store.state(code).step == 1 and not store.state(code).revealed
        assert real not in page_text(at)


def test_a_class_in_indonesian_shows_no_english(where: str) -> None:
    from tests.test_glossary import english_on_page

    teacher = lesson("id", **{"class": "new"})
    board = lesson("id", **{"class": teacher.query_params["class"], "controls": "hidden"})
    student = lesson("id", **{"class": teacher.query_params["class"]})
    pick(student, "ratio")
    assert t("classroom.recorded_1", "id", letter="D") in page_text(student)
    for phase in ("discuss", "vote2", "revealed"):
        teacher.button(key=f"class_{phase}").click().run()
        student.run()
        board.run()
        for at in (teacher, student, board):
            assert not at.exception
            assert english_on_page(at) == [], phase


def test_the_teachers_share_dialog_gives_the_join_link_and_the_board(where: str) -> None:
    from urllib.parse import parse_qs, urlsplit

    teacher, code, key = start_class()
    links = [c.value for c in open_share(teacher).code]
    assert links and all(key not in link for link in links)
    present = next(link for link in links if "controls=hidden" in link)
    query = {k: v[0] for k, v in parse_qs(urlsplit(present).query).items()}
    assert query["class"] == code and "teacher" not in query
    board = lesson(**query)  # the presenter link is the board: no seat taken
    assert board.get("image") and open_store(LESSON).state(code).students == 0


def test_a_stale_second_tab_shows_the_new_answer_and_never_sends_its_old_one(
    where: str, browser_of
) -> None:
    teacher, code, _ = start_class()
    browser_of("b2" * 16)
    first = lesson(**{"class": code})
    pick(first, "zero")  # A in the first tab
    second = lesson(**{"class": code})
    pick(second, "mean")  # C in the second tab, the same seat
    first.run()  # the first tab's next run: it shows C, and sends nothing
    assert first.radio(key="pick_centre").value == "mean"
    assert t("classroom.recorded_1", "en", letter="C") in page_text(first)
    teacher.button(key="class_discuss").click().run()
    teacher.button(key="class_vote2").click().run()
    first.run()
    assert open_store(LESSON).rounds(code, 1) == {1: ("mean", "mean")}


def test_the_teachers_link_opened_again_does_not_move_the_class(where: str) -> None:
    teacher, code, key = start_class()
    teacher.button(key="next").click().run()
    teacher.button(key="next").click().run()
    assert open_store(LESSON).state(code).step == 3
    again = lesson(**{"class": code, "teacher": key})  # no step in the link
    assert again.slider(key="step").value == 3 and open_store(LESSON).state(code).step == 3
    again.button(key="next").click().run()  # the second tab leads: the first follows
    teacher.run()
    assert teacher.slider(key="step").value == 4 and open_store(LESSON).state(code).step == 4


def test_a_second_click_on_a_phase_button_skips_nothing(where: str, monkeypatch) -> None:
    monkeypatch.setattr(board_section, "PHASE_GAP_S", 1.5)
    teacher, code, _ = start_class()
    teacher.button(key="class_discuss").click().run()
    teacher.button(key="class_vote2").click().run()  # at once: the same spot, a second click
    assert open_store(LESSON).state(code).phase(1) == "discuss"


def test_an_ended_class_is_not_a_guess_and_its_members_are_not_locked_out(
    where: str, monkeypatch, browser_of
) -> None:
    monkeypatch.setenv("NORMLAB_CLIENT_GUESSES", "3")
    monkeypatch.setattr(class_section, "client_address", lambda: "198.51.100.20")
    live_teacher, live_code, live_key = start_class()
    ended_teacher, ended_code, _ = start_class()
    browser_of("c3" * 16)
    lesson(**{"class": live_code})  # this browser takes a seat in the live class
    ended_teacher.button(key="class_end").click().run()
    for _ in range(5):  # students reloading the ended class: told so, not counted as guesses
        at = lesson(**{"class": ended_code})
        assert t("classroom.error_ended", "en", code=echo(ended_code)) in warnings(at)
    assert not lesson(**{"class": live_code}).warning
    for guess in ("AAAAAA", "BBBBBB", "CCCCCC"):  # now guesses, up to the limit
        lesson(**{"class": guess})
    refused = t("classroom.error_client_guesses", "en", limit=3)
    assert refused in warnings(lesson(**{"class": "DDDDDD"}))
    # The limit keeps out who guesses, not who belongs: the seated student and the teacher.
    assert not lesson(**{"class": live_code}).warning
    assert "teacher" in lesson(**{"class": live_code, "teacher": live_key}).query_params
    browser_of("d4" * 16)  # (the fixture keeps its first token: a new browser needs a new one)


def test_a_student_without_a_first_answer_is_asked_to_pick_in_the_second_vote(
    where: str,
) -> None:
    teacher, code, _ = start_class()
    late = lesson(**{"class": code})
    teacher.button(key="class_discuss").click().run()
    teacher.button(key="class_vote2").click().run()
    late.run()
    assert t("classroom.student_vote2_new", "en") in page_text(late)
    assert t("classroom.student_vote2", "en") not in page_text(late)


def test_a_page_that_sees_the_class_move_reruns_the_others_that_drew_it_otherwise(
    monkeypatch,
) -> None:
    """The ring: the pages of a class on this server that drew another step or phase are rerun
    (not the page that rang, not those that drew the new state), each once per move and not one
    that reran on its own first; a closed session leaves the class's list. A page in line leaves
    its rerun to the ring at the first watch that sees the move, and reruns itself at the next."""
    from serve.classroom.store import ClassState

    asked: list[tuple] = []
    me = ["me"]
    monkeypatch.setattr(class_section, "session_id", lambda: me[0])
    monkeypatch.setattr(class_section, "rerun_at_rest", lambda *args: asked.append(args))
    before = ClassState("ABCDEF", 1, {})
    after = ClassState("ABCDEF", 1, {1: "revealed"})
    was, now = class_section.drawn(before), class_section.drawn(after)
    pages = {"me": was, "a": was, "b": now, "c": was}
    monkeypatch.setitem(class_section.DRAWN, "ABCDEF", pages)
    class_section.ring(after)
    ids, due, gone = asked[-1]
    line = ("asked", now)
    assert ids == ["a", "c"] and pages == {"me": was, "a": line, "b": now, "c": line}
    assert due("a") and due("c") and not due("b")
    class_section.ring(after)  # a second page that sees the same move asks for no rerun
    assert asked[-1][0] == []
    monkeypatch.delitem(class_section.st.session_state, class_section.WAITED, raising=False)
    me[0] = "c"
    assert class_section.in_line(after) and not class_section.in_line(after)
    pages["a"] = now  # a's own run drew the move first: the ring no longer asks for it
    assert not due("a")
    me[0] = "b"
    assert not class_section.in_line(after)  # not in line: its watch reruns it
    gone("c")
    assert "c" not in pages
