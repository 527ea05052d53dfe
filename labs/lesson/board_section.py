"""The class's shared screens: the teacher's private control page and the board for the projector
(``labs.lesson.class_section`` says who is who), and the class's results as everyone sees them.

The teacher's page has the phase buttons for the open step, the live class, and under *Manage
the class* the board's link, the join link, the CSV export and the end. The board shows the join
link's QR code, wide enough to scan from the back of a room, beside the step and the live class.
What the class sees of a step follows its phase: during the first vote how many answered; the
first vote's spread from the discussion on; both votes and who moved only once it is revealed."""

from __future__ import annotations

import csv
import io
import time

import segno
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from labs.lesson.class_figures import counts_figure
from labs.lesson.class_section import (
    CLASS_KEY,
    ENDED,
    LIVE_S,
    SAID,
    TEACHER_KEY,
    Seat,
    in_page,
    moved,
    notice,
    rerun_if,
    ring,
)
from labs.lesson.options import OPTIONS, STEP_IDS, letter
from serve.classroom.store import ClassError
from ui.frame import readable_spec
from ui.i18n import Translator
from ui.st_private import plotly_spec

# The board's QR code, shown 400 px wide: more than a third of a 1080 px board's height, readable
# from the back of a room. Drawn at least that wide, so no browser enlarges it into a blur.
QR_WIDTH = 400
# A step's right option (its id) and its words as the page shows them; None where the numbers
# leave no option right.
Answer = tuple[str | None, str | None]
# A phase button pressed this soon after the last phase change is a second click on the spot
# where the next phase's button has just appeared, not a decision: it is ignored.
PHASE_GAP_S = 1.5
MOVED_AT = "_class_moved_at"
clock = time.monotonic


def controls(seat: Seat, step: int, tr: Translator) -> None:
    """The teacher's buttons for the step's next phase (the answer from any phase before it)."""
    phase = seat.state.phase(step)
    for what in {st.session_state.get(SAID, {}).pop(k, None) for k in (STEP_IDS[step - 1], "end")}:
        if what is not None:  # a button pressed in the run before did not go through
            st.warning(notice(tr, what, seat.code))
    if phase == "revealed":
        st.caption(tr("classroom.revealed_class"))
        return
    nexts = {"vote": ("discuss", "revealed"), "discuss": ("vote2", "revealed")}
    with st.container(horizontal=True):
        for to in nexts.get(phase, ("revealed",)):
            st.button(
                tr(f"classroom.to_{to}"),
                key=f"class_{to}",
                type="primary" if to != "revealed" or phase == "vote2" else "secondary",
                on_click=_move,
                args=(seat, step, to),
            )


def _move(seat: Seat, step: int, phase: str) -> None:
    if clock() - st.session_state.get(MOVED_AT, -PHASE_GAP_S) < PHASE_GAP_S:
        return
    st.session_state[MOVED_AT] = clock()
    try:
        seat.store.set_phase(seat.code, seat.key, step, phase)
        ring(seat.store.state(seat.code))
    except ClassError as err:
        st.session_state[SAID] = {STEP_IDS[step - 1]: err.code}


def results(seat: Seat, step: int, tr: Translator, answer: Answer) -> None:
    """What the class may see of ``step`` now (see the module's docstring)."""
    phase = seat.state.phase(step)
    correct, words = answer
    if phase == "revealed" and words is not None:
        st.success(tr("classroom.answer", option=words))
    rounds = seat.store.rounds(seat.code, step)
    answered = [sum(pair[r] is not None for pair in rounds.values()) for r in (0, 1)]
    st.markdown(tr("classroom.joined", n=seat.state.students))
    if phase == "vote":
        st.markdown(tr("classroom.answered", n=answered[0], total=seat.state.students))
        return
    if phase == "discuss" and not seat.student:
        st.info(tr("classroom.board_discuss"))
    # Both votes once revealed, where the second was held (it starts from the first's answers).
    twice = phase == "revealed" and answered[1] > 0
    places = st.columns(2) if twice else [st.container()]
    mark = correct if phase == "revealed" else None
    for round, place in enumerate(places, start=1):
        with place:
            st.markdown(f"**{tr(f'classroom.round_{round}')}**")
            distribution(step, round, rounds, tr, mark)
    if twice and correct is not None:
        both = [p for p in rounds.values() if None not in p]
        up = sum(a != correct and b == correct for a, b in both)
        down = sum(a == correct and b != correct for a, b in both)
        st.markdown(tr("classroom.moves", up=up, down=down, n=len(both)))
    if phase == "vote2":
        st.markdown(tr("classroom.answered_2", n=answered[1], total=seat.state.students))


def distribution(step: int, round: int, rounds: dict, tr: Translator, correct: str | None) -> None:
    """The class's answers in one round: a bar per option and the same counts as text."""
    step_id = STEP_IDS[step - 1]
    options = OPTIONS[step_id]
    chosen = [pair[round - 1] for pair in rounds.values()]
    letters = [letter(step_id, o) for o in options]
    numbers = [chosen.count(o) for o in options]
    text = " · ".join(f"{a}: {n}" for a, n in zip(letters, numbers, strict=True))
    labels = {"option": tr("classroom.axis_option"), "count": tr("classroom.axis_count")}
    index = options.index(correct) if correct in options else None
    st.plotly_chart(
        plotly_spec(
            readable_spec(
                ("class_counts", *letters, *numbers, *labels.values(), index),
                lambda: counts_figure(letters, numbers, labels, correct=index),
            )
        ),
        key=f"class_counts_{step_id}_{round}",
        alt=tr("classroom.chart_alt", k=step, counts=text),
    )
    st.markdown(tr("classroom.answers_text", counts=text, total=sum(numbers)))


@st.cache_data(max_entries=256, show_spinner=False)
def qr_png(link: str) -> bytes:
    """The join link's QR code as a PNG, made here (segno), nothing fetched."""
    buffer, code = io.BytesIO(), segno.make(link, error="m")
    scale = -(-QR_WIDTH // code.symbol_size(scale=1, border=2)[0])
    code.save(buffer, kind="png", scale=scale, border=2)
    return buffer.getvalue()


def join_link(code: str, **more: str) -> str:
    base = (st.context.url or "").split("?", 1)[0] or "/lesson"
    return f"{base}?" + "&".join(f"{k}={v}" for k, v in {CLASS_KEY: code, **more}.items())


def teacher_panel(seat: Seat, step: int, answer: Answer, tr: Translator) -> None:
    """The teacher's private page: the step's phase buttons, the live class, the board's link,
    the join link, the export and the end of the class."""
    st.subheader(tr("classroom.teacher_heading", code=seat.code))
    st.markdown(tr("classroom.teacher_intro"))
    controls(seat, step, tr)
    in_page(live, seat, step, answer, tr)
    with st.expander(tr("classroom.manage")):
        board = join_link(seat.code, lang=tr.lang, controls="hidden", text="large")
        st.link_button(tr("classroom.open_board"), board, icon=":material/cast:")
        st.markdown(tr("classroom.join_label"))
        st.code(join_link(seat.code), language=None, wrap_lines=True)
        st.download_button(
            tr("classroom.export"),
            lambda: export_csv(seat),
            file_name=f"normlab-class-{seat.code}.csv",
            mime="text/csv",
            on_click="ignore",
            icon=":material/download:",
        )
        st.button(tr("classroom.end"), key="class_end", on_click=_end, args=(seat,))


def export_csv(seat: Seat) -> str:
    """The class's answers as counts, no ids: step, round, option (id and letter), count."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["step", "round", "option", "letter", "count"])
    for step, round, option, count in seat.store.export(seat.code, seat.key):
        writer.writerow([step, round, option, letter(STEP_IDS[step - 1], option), count])
    return out.getvalue()


def _end(seat: Seat) -> None:
    try:
        seat.store.end(seat.code, seat.key)
    except ClassError as err:
        st.session_state[SAID] = {"end": err.code}
        return
    for name in (CLASS_KEY, TEACHER_KEY):
        del st.query_params[name]
    st.session_state[ENDED] = True


def board_panel(seat: Seat, tr: Translator) -> DeltaGenerator:
    """The projector's view: the join link's QR code beside the step, which the page draws in
    the container returned (with the live class under its options); no key, no seat."""
    link = join_link(seat.code)
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.image(qr_png(link), caption=tr("classroom.qr_caption"), width=QR_WIDTH)
        st.markdown(tr("classroom.board_join", code=seat.code))
        st.code(link, language=None, wrap_lines=True)
    return right


def board_live(seat: Seat | None, step: int, answer: Answer, tr: Translator) -> None:
    """On the board, under the step's options: the live class."""
    if seat is not None and not seat.teacher and not seat.student:
        in_page(live, seat, step, answer, tr)


@st.fragment(run_every=LIVE_S)
def live(seat: Seat, step: int, answer: Answer, tr: Translator) -> None:
    """Redrawn every ``LIVE_S`` seconds on its own; the whole page reruns when the class moves
    on (a new step for the board, a new phase for both) or ends."""
    try:
        state = seat.store.state(seat.code)
        rerun_if(moved(seat, state, step))
        results(Seat(seat.store, state, seat.key), step, tr, answer)
    except ClassError as err:
        rerun_if(err.code in ("unknown", "ended"))
        st.warning(notice(tr, err.code, seat.code))


def class_result(seat: Seat | None, step: int, tr: Translator, correct: str | None) -> None:
    """After the teacher's reveal, a student sees how the class answered."""
    if seat is None or not seat.student or step not in seat.state.revealed:
        return
    st.markdown(f"**{tr('classroom.class_heading')}**")
    try:
        results(seat, step, tr, (correct, None))  # the verdict above says the answer
    except ClassError as err:
        st.warning(notice(tr, err.code, seat.code))
