"""The guided lesson as a class: the teacher's panel, a student's answers, the live counts.

``/lesson?class=new`` starts a class and rewrites the link to ``?class=<CODE>&teacher=<KEY>``:
the teacher's page. ``/lesson?class=<CODE>`` is a student's. Neither parameter is a page
``Param``: they are not controls, and a share link must never carry the key. The store is
:mod:`serve.classroom.store`; every failure of it is a notice, and the lesson goes on alone.
"""

from __future__ import annotations

import io
import secrets
import time
from dataclasses import dataclass

import segno
import streamlit as st

from core.lab.lesson_options import OPTIONS, STEP_IDS, letter
from serve.classroom.backends import open_store
from serve.classroom.codes import normal_code
from serve.classroom.store import ClassError, ClassState, ClassStore, Limits
from ui.frame import readable
from ui.i18n import Translator
from ui.params import echo
from ui.st_private import set_query_param
from viz.classroom import counts_figure

CLASS_KEY = "class"
TEACHER_KEY = "teacher"
NEW = "new"
# Session keys: the class this session is in (code, teacher's key or None), the student id the
# session made up, the follow switch, the last word on each step's answer, recent answer times.
SEAT = "_class_seat"
STUDENT = "_class_student"
FOLLOW = "class_follow"
SAID = "_class_said"
TIMES = "_class_times"
# A student's answers per second past which one is not recorded: a person changing their mind
# clicks a few times a second at most; a script hammering the store clicks far more.
ANSWERS_PER_S = 3
# The rate limit's clock (a name of its own, so a test can stop it without stopping time).
clock = time.monotonic
# How often the teacher's counts and a student's view of the class refresh.
LIVE_S = 2.0
# The teacher's answers chart and QR code: wide enough to read from the back of a room.
QR_SCALE = 6


@dataclass(frozen=True)
class Seat:
    """Where this session sits in a class."""

    store: ClassStore
    state: ClassState
    key: str | None  # the teacher's key; None for a student

    @property
    def code(self) -> str:
        return self.state.code

    @property
    def teacher(self) -> bool:
        return self.key is not None


def notice(tr: Translator, code: str, raw: str = "") -> str:
    """The sentence for a store error ``code`` (``classroom.error_<code>``)."""
    limits = Limits.from_env()
    limit = limits.classes if code == "classes_full" else limits.students
    hours = limits.lifetime_s / 3600.0
    return tr(f"classroom.error_{code}", code=echo(raw), limit=limit, hours=hours)


def open_class(tr: Translator) -> Seat | None:
    """The class the link names, started if it says ``new``; None (with a notice where the link
    asked for a class) when the lesson runs alone."""
    raw = st.query_params.get(CLASS_KEY)
    st.session_state.pop(SEAT, None)
    if raw is None:
        return None
    try:
        store = open_store()
        if raw.strip().lower() == NEW:
            code, key = store.create()
            st.query_params[CLASS_KEY] = code
            st.query_params[TEACHER_KEY] = key
        else:
            code, key = normal_code(raw), st.query_params.get(TEACHER_KEY)
            if code is None:
                raise ClassError("unknown")
        state = store.state(code)
        if key is not None and not store.is_teacher(code, key):
            st.warning(notice(tr, "not_teacher", code))
            del st.query_params[TEACHER_KEY]
            key = None
        if key is None:
            store.join(code, st.session_state.setdefault(STUDENT, secrets.token_hex(8)))
            state = store.state(code)
    except ClassError as err:
        st.warning(notice(tr, err.code, raw))
        return None
    st.session_state[SEAT] = (code, key)
    return Seat(store, state, key)


def following() -> bool:
    return st.session_state.get(FOLLOW, True)


def sync(seat: Seat | None, revealed: dict[str, bool]) -> None:
    """Before the step control is drawn: a following student's page opens the class's step;
    the class's reveals are this session's reveals."""
    if seat is None:
        return
    for step in seat.state.revealed:
        revealed[STEP_IDS[step - 1]] = True
    if not seat.teacher and following() and st.session_state.get("step") != seat.state.step:
        st.session_state["step"] = seat.state.step
        set_query_param("step", str(seat.state.step))


def lead(seat: Seat | None, step: int) -> None:
    """The teacher's open step is the class's step."""
    if seat is None or not seat.teacher or seat.state.step == step:
        return
    try:
        seat.store.set_step(seat.code, seat.key, step)
    except ClassError:
        pass  # the live panel below says the store is down


def record(step_id: str, option: str) -> None:
    """A student's pick (a radio's ``on_change``): committed to the store before the page says
    "recorded"."""
    seat = st.session_state.get(SEAT)
    if seat is None or seat[1] is not None:
        return
    now = clock()
    recent = [t for t in st.session_state.get(TIMES, []) if now - t < 1.0]
    said = st.session_state.setdefault(SAID, {})
    if len(recent) >= ANSWERS_PER_S:
        said[step_id] = ("warning", "too_fast")
        return
    st.session_state[TIMES] = [*recent, now]
    step = STEP_IDS.index(step_id) + 1
    try:
        open_store().answer(seat[0], st.session_state.get(STUDENT, ""), step, option)
    except ClassError as err:
        said[step_id] = ("warning", err.code)
        return
    said[step_id] = ("success", option)


def answer_status(seat: Seat | None, step_id: str, tr: Translator) -> None:
    """Under a student's options: "recorded", or why not."""
    if seat is None or seat.teacher:
        return
    said = st.session_state.get(SAID, {}).get(step_id)
    if said is None:
        return
    kind, what = said
    if kind == "success":
        st.success(tr("classroom.recorded", letter=letter(step_id, what)))
    else:
        st.warning(notice(tr, what, seat.code))


def reveal_control(seat: Seat, step: int, revealed: dict[str, bool], tr: Translator) -> None:
    """In class, the reveal is the teacher's: a button on the teacher's page, a sentence on a
    following student's (a student at their own pace keeps the lesson's own button)."""
    if not seat.teacher:
        st.caption(tr("classroom.wait_reveal"))
        return
    st.button(
        tr("classroom.reveal_class"),
        key="class_reveal",
        type="primary",
        on_click=_reveal_class,
        args=(seat, step, revealed),
    )


def _reveal_class(seat: Seat, step: int, revealed: dict[str, bool]) -> None:
    try:
        seat.store.reveal(seat.code, seat.key, step)
    except ClassError as err:
        st.session_state[SAID] = {STEP_IDS[step - 1]: ("warning", err.code)}
        return
    revealed[STEP_IDS[step - 1]] = True


def owns_reveal(seat: Seat | None) -> bool:
    """Whether the class, not this visitor, decides when the current step is revealed."""
    return seat is not None and (seat.teacher or following())


def distribution(seat: Seat, step: int, tr: Translator, *, correct: str | None) -> None:
    """The class's answers to ``step``: a bar per option and the same counts as text."""
    step_id = STEP_IDS[step - 1]
    options = OPTIONS[step_id]
    counts = seat.store.counts(seat.code, step)
    letters = [letter(step_id, o) for o in options]
    numbers = [counts[o] for o in options]
    text = " · ".join(f"{a}: {n}" for a, n in zip(letters, numbers, strict=True))
    labels = {"option": tr("classroom.axis_option"), "count": tr("classroom.axis_count")}
    index = options.index(correct) if correct in options else None
    st.plotly_chart(
        readable(counts_figure(letters, numbers, labels, correct=index)),
        key=f"class_counts_{step_id}",
        alt=tr("classroom.chart_alt", k=step, counts=text),
    )
    st.markdown(tr("classroom.answers_text", counts=text, total=sum(numbers)))


def class_result(seat: Seat | None, step: int, tr: Translator, *, correct: str | None) -> None:
    """After the teacher's reveal, a student sees how the class answered (the teacher's panel has
    it; a student who revealed a step alone, at their own pace, sees it when the class does)."""
    if seat is None or seat.teacher or step not in seat.state.revealed:
        return
    st.markdown(f"**{tr('classroom.class_heading')}**")
    try:
        distribution(seat, step, tr, correct=correct)
    except ClassError as err:
        st.warning(notice(tr, err.code, seat.code))


@st.cache_data(max_entries=256, show_spinner=False)
def qr_png(link: str) -> bytes:
    """The join link's QR code as a PNG, made here (segno), nothing fetched."""
    buffer = io.BytesIO()
    segno.make(link, error="m").save(buffer, kind="png", scale=QR_SCALE, border=2)
    return buffer.getvalue()


def join_link(code: str) -> str:
    base = (st.context.url or "").split("?", 1)[0] or "/lesson"
    return f"{base}?{CLASS_KEY}={code}"


def teacher_panel(seat: Seat, step: int, tr: Translator) -> None:
    """The join link (copyable), its QR code, and the live head count and answers."""
    st.subheader(tr("classroom.teacher_heading", code=seat.code))
    st.markdown(tr("classroom.teacher_intro"))
    link = join_link(seat.code)
    left, right = st.columns([1, 1])
    with left:
        st.markdown(tr("classroom.join_label"))
        st.code(link, language=None, wrap_lines=True)
        st.image(qr_png(link), caption=tr("classroom.qr_caption"), width=240)
    with right:
        live_counts(seat, step, tr)


@st.fragment(run_every=LIVE_S)
def live_counts(seat: Seat, step: int, tr: Translator) -> None:
    """Redrawn every ``LIVE_S`` seconds on its own, the rest of the page left as it is."""
    try:
        state = seat.store.state(seat.code)
        st.markdown(tr("classroom.joined", n=state.students))
        st.markdown(f"**{tr('classroom.answers_heading', k=step)}**")
        distribution(seat, step, tr, correct=None)
    except ClassError as err:
        st.warning(notice(tr, err.code, seat.code))


def student_panel(seat: Seat, step: int, tr: Translator) -> None:
    """Which class this is, the follow switch, and a watch that reruns the page when the
    teacher moves on or reveals."""
    st.info(tr("classroom.student_intro", code=seat.code))
    st.toggle(tr("classroom.follow"), value=True, key=FOLLOW, help=tr("classroom.follow_help"))
    watch(seat, step)


@st.fragment(run_every=LIVE_S)
def watch(seat: Seat, step: int) -> None:
    try:
        state = seat.store.state(seat.code)
    except ClassError:
        return  # the page said so when it opened; the lesson goes on
    moved = following() and state.step != step
    if moved or state.revealed != seat.state.revealed:
        st.rerun(scope="app")
