"""The guided lesson as a class: the teacher's controls, the board, a student's seat.

``/lesson?class=new`` starts a class and rewrites the link to ``?class=<CODE>&teacher=<KEY>``:
the teacher's private control page. ``/lesson?class=<CODE>`` is a student's page; the same link
with ``controls=hidden`` (the presenter view) is the board for the projector, which holds no key
and takes no seat. A student's seat is the ``normlab_seat`` cookie (a random token the browser
keeps for every class; the store gets a hash of it with the class's code), so a reload, a second
tab, the join link opened again and a worker failover keep one seat and its answers.

Each step runs peer instruction (``serve.classroom.store``): vote, the spread and a discussion,
a second vote, the reveal. What a student picks is kept by the page and sent until the store has
it: a pick the store refused while it was down is sent again on the next run, and the page's
watch reruns it every ``LIVE_S`` seconds until then.
"""

from __future__ import annotations

import csv
import hashlib
import io
import secrets
import time
from dataclasses import dataclass, field, replace

import segno
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from core.lab.lesson_options import OPTIONS, STEP_IDS, letter
from serve.classroom.backends import open_store
from serve.classroom.codes import normal_code
from serve.classroom.store import ROUND_OF, ClassError, ClassState, ClassStore, Limits
from ui.frame import CONTROLS, readable
from ui.i18n import Translator
from ui.params import echo
from ui.st_private import set_query_param
from viz.classroom import counts_figure

CLASS_KEY = "class"
TEACHER_KEY = "teacher"
NEW = "new"
SEAT_COOKIE = "normlab_seat"
# A seat cookie lives as long as the longest class could.
SEAT_COOKIE_S = 7 * 24 * 3600
# Session keys: the class this session is in, its last known state (kept through an outage), the
# seat token, the follow switch, the last word on each step's answer, recent send times.
SEAT = "_class_seat"
LAST = "_class_last"
TOKEN = "_class_token"
FOLLOW = "class_follow"
SAID = "_class_said"
TIMES = "_class_times"
ENDED = "_class_ended"
ENTERED = "_class_entered"
# Set while the whole page runs a live fragment in place: only the fragment's own timed reruns may
# rerun the page (a rerun from inside the page's run would loop as fast as it runs).
IN_PAGE = "_class_in_page"
# A student's answers per second past which one is not sent: a person changing their mind
# clicks a few times a second at most; a script hammering the store clicks far more.
ANSWERS_PER_S = 3
# The rate limit's clock (a name of its own, so a test can stop it without stopping time).
clock = time.monotonic
# A step's right option (its id) and its words as the page shows them; None where the numbers
# leave no option right.
Answer = tuple[str | None, str | None]
# How often the teacher's counts and a student's view of the class refresh.
LIVE_S = 2.0
# The board's QR code, shown 400 px wide: more than a third of a 1080 px board's height, readable
# from the back of a room. Drawn at least that wide, so no browser enlarges it into a blur.
QR_WIDTH = 400


@dataclass(frozen=True)
class Seat:
    """Where this session sits in a class: the teacher (with the key), the board, or a student
    (with a seat and the answers the store holds for it)."""

    store: ClassStore
    state: ClassState
    key: str | None = None  # the teacher's key
    seat: str | None = None  # a student's seat id in the store
    number: int = 0
    recorded: dict[tuple[int, int], str] = field(default_factory=dict)
    down: bool = False  # the state is the last one known: the store did not answer

    @property
    def code(self) -> str:
        return self.state.code

    @property
    def teacher(self) -> bool:
        return self.key is not None

    @property
    def student(self) -> bool:
        return self.seat is not None


def notice(tr: Translator, code: str, raw: str = "") -> str:
    """The sentence for a store error ``code`` (``classroom.error_<code>``)."""
    limits = Limits.from_env()
    limit = {
        "classes_full": limits.classes,
        "client_classes": limits.client_classes,
        "client_seats": limits.client_seats,
        "client_guesses": limits.client_guesses,
    }.get(code, limits.students)
    hours = limits.lifetime_s / 3600.0
    return tr(f"classroom.error_{code}", code=echo(raw), limit=limit, hours=hours)


def client_address() -> str:
    """The visitor's address: the TCP peer, or behind the launcher's HAProxy the address it
    forwards (the server trusts ``X-Forwarded-For`` from loopback only)."""
    address = st.context.ip_address
    return address if isinstance(address, str) and address else "local"


def seat_token() -> str:
    """This browser's seat token: its cookie, or a new one the page stores in the cookie."""
    token = st.context.cookies.get(SEAT_COOKIE, "")
    if isinstance(token, str) and len(token) == 32 and all(c in "0123456789abcdef" for c in token):
        st.session_state[TOKEN] = token
        return token
    token = st.session_state.setdefault(TOKEN, secrets.token_hex(16))
    cookie = f"{SEAT_COOKIE}={token}; path=/; max-age={SEAT_COOKIE_S}; SameSite=Lax"
    st.html(f"<script>document.cookie = '{cookie}';</script>", unsafe_allow_javascript=True)
    return token


def seat_id(token: str, code: str) -> str:
    """The seat as the store knows it: a hash of the token with the class, so the store cannot
    link one browser's seats in two classes."""
    return hashlib.sha256(f"{code}:{token}".encode()).hexdigest()[:32]


def open_class(tr: Translator) -> Seat | None:
    """The class the link names, started if it says ``new``; None (with a notice where the link
    asked for a class) when the lesson runs alone."""
    raw = st.query_params.get(CLASS_KEY)
    before = st.session_state.pop(SEAT, None)
    if raw is None:
        if st.session_state.pop(ENDED, False):
            st.success(tr("classroom.ended"))
        return None
    client = client_address()
    try:
        store = open_store()
        if raw.strip().lower() == NEW:
            code, key = store.create(client)
            st.query_params[CLASS_KEY] = code
            st.query_params[TEACHER_KEY] = key
        else:
            code, key = normal_code(raw), st.query_params.get(TEACHER_KEY)
            if before is None or before[0] != code:
                _check_code(store, code, client)
        state = store.state(code)
        if key is not None and not store.is_teacher(code, key):
            st.warning(notice(tr, "not_teacher", code))
            del st.query_params[TEACHER_KEY]
            key = None
        seat = Seat(store, state, key)
        if key is None and st.query_params.get(CONTROLS.key) != "hidden":  # not the board
            seat_of = seat_id(seat_token(), code)
            number = store.join(code, seat_of, client)
            seat = replace(seat, seat=seat_of, number=number, recorded=store.answers(code, seat_of))
    except ClassError as err:
        if err.code == "down" and before is not None and before[0] == raw.strip().upper():
            seat = replace(st.session_state[LAST], down=True)
            st.warning(notice(tr, "down_kept", seat.code))
        else:
            st.warning(notice(tr, err.code, raw))
            return None
    st.session_state[SEAT] = (seat.code, seat.key)
    st.session_state[LAST] = seat
    return seat


def _check_code(store: ClassStore, code: str | None, client: str) -> None:
    """A code this session has not opened yet: refused outright for a client that guessed too
    many, counted as a guess when it names no live class."""
    if store.guessed_too_often(client):
        raise ClassError("client_guesses")
    try:
        if code is None:
            raise ClassError("unknown")
        store.state(code)
    except ClassError as err:
        if err.code == "unknown":
            store.guess(client)
        raise


def following() -> bool:
    return st.session_state.get(FOLLOW, True)


def sync(seat: Seat | None, revealed: dict[str, bool], answers: dict[str, str | None]) -> None:
    """Before the step control is drawn: a following student's page (and the board) opens the
    class's step; the class's reveals are this session's; a student's recorded answers fill the
    picks the page does not hold (after a reload)."""
    if seat is None:
        return
    if st.session_state.get(ENTERED) != seat.code:  # what was answered alone is not the class's
        st.session_state[ENTERED] = seat.code
        revealed.clear()
        answers.clear()
        for key in (SAID, *(f"pick_{step_id}" for step_id in STEP_IDS)):
            st.session_state.pop(key, None)
    for step in seat.state.revealed:
        revealed[STEP_IDS[step - 1]] = True
    if not seat.teacher and (following() or not seat.student):
        if st.session_state.get("step") != seat.state.step:
            st.session_state["step"] = seat.state.step
            set_query_param("step", str(seat.state.step))
    for step, step_id in enumerate(STEP_IDS, start=1):
        latest = seat.recorded.get((step, 2), seat.recorded.get((step, 1)))
        if latest is not None and answers.get(step_id) is None:
            answers[step_id] = latest


def send(seat: Seat | None, answers: dict[str, str | None]) -> None:
    """Every pick of an open step the store does not hold yet, sent now: committed before the
    page says "recorded"; refused while the store is down, and sent again on the next run."""
    if seat is None or not seat.student or seat.down:
        return
    said = st.session_state.setdefault(SAID, {})
    for step, step_id in enumerate(STEP_IDS, start=1):
        pick, round = answers.get(step_id), ROUND_OF.get(seat.state.phase(step))
        if pick is None or round is None or seat.recorded.get((step, round)) == pick:
            continue
        now = clock()
        recent = [t for t in st.session_state.get(TIMES, []) if now - t < 1.0]
        if len(recent) >= ANSWERS_PER_S:
            said[step_id] = "too_fast"
            continue
        st.session_state[TIMES] = [*recent, now]
        try:
            round = seat.store.answer(seat.code, seat.seat, step, pick)
        except ClassError as err:
            said[step_id] = err.code
            continue
        seat.recorded[(step, round)] = pick
        said.pop(step_id, None)


def answer_status(
    seat: Seat | None, step: int, answers: dict[str, str | None], tr: Translator
) -> None:
    """Under a student's options: where the step's vote stands and whether the pick is
    recorded, or why not (a pick kept while the store is down gets a button that sends it)."""
    if seat is None or not seat.student:
        return
    step_id, phase = STEP_IDS[step - 1], seat.state.phase(step)
    if phase != "vote":
        st.caption(tr(f"classroom.student_{phase}"))
    what = st.session_state.get(SAID, {}).get(step_id)
    pick, round = answers.get(step_id), ROUND_OF.get(phase)
    pending = pick is not None and round is not None and seat.recorded.get((step, round)) != pick
    if pending and (seat.down or what == "down"):
        st.warning(tr("classroom.kept"))
        st.button(tr("classroom.send_again"), key="class_resend")
        return
    if what is not None and what != "down" and (pending or what == "closed"):
        st.warning(notice(tr, what, seat.code))
        return
    round = round or (2 if (step, 2) in seat.recorded else 1)
    if (step, round) in seat.recorded:
        chosen = letter(step_id, seat.recorded[(step, round)])
        st.success(tr(f"classroom.recorded_{round}", letter=chosen))


def locked(seat: Seat | None, step: int) -> bool:
    """Whether this page may not pick on ``step``: the teacher and the board never answer, a
    student only while the step's vote is open."""
    if seat is None:
        return False
    return not seat.student or seat.state.phase(step) not in ROUND_OF


def controls(seat: Seat, step: int, tr: Translator) -> None:
    """The teacher's buttons for the step's next phase (the reveal from any phase before it)."""
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
    try:
        seat.store.set_phase(seat.code, seat.key, step, phase)
    except ClassError as err:
        st.session_state[SAID] = {STEP_IDS[step - 1]: err.code}


def lead(seat: Seat | None, step: int) -> None:
    """The teacher's open step is the class's step."""
    if seat is None or not seat.teacher or seat.state.step == step:
        return
    try:
        seat.store.set_step(seat.code, seat.key, step)
    except ClassError:
        pass  # the live panel says the store is down


def results(seat: Seat, step: int, tr: Translator, answer: Answer) -> None:
    """What the class may see of ``step`` now: during the first vote how many answered; then
    the spread of the first vote; after the reveal the answer, both votes side by side with it
    marked, and how many moved to it and away from it."""
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
    mark = correct if phase == "revealed" else None
    # A second vote happened where it is open or has answers (it starts from the first's).
    twice = answered[1] > 0 or phase == "vote2"
    places = st.columns(2) if twice else [st.container()]
    for round, place in enumerate(places, start=1):
        with place:
            st.markdown(f"**{tr(f'classroom.round_{round}')}**")
            distribution(seat, step, round, rounds, tr, correct=mark)
    if phase == "revealed" and twice and correct is not None:
        both = [p for p in rounds.values() if None not in p]
        up = sum(a != correct and b == correct for a, b in both)
        down = sum(a == correct and b != correct for a, b in both)
        st.markdown(tr("classroom.moves", up=up, down=down, n=len(both)))
    if phase == "vote2":
        st.markdown(tr("classroom.answered_2", n=answered[1], total=seat.state.students))


def distribution(seat: Seat, step: int, round: int, rounds: dict, tr: Translator, *,
                 correct: str | None) -> None:  # fmt: skip
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
        readable(counts_figure(letters, numbers, labels, correct=index)),
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
    """The class's answers as counts, no ids: step, round, option, count."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["step", "round", "option", "count"])
    writer.writerows(seat.store.export(seat.code, seat.key))
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


def board_panel(seat: Seat, step: int, answer: Answer, tr: Translator) -> DeltaGenerator:
    """The projector's view: the join link's QR code and the live class beside the step (drawn
    by the page in the container returned); no key, no seat."""
    link = join_link(seat.code)
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.image(qr_png(link), caption=tr("classroom.qr_caption"), width=QR_WIDTH)
        st.markdown(tr("classroom.board_join", code=seat.code))
        st.code(link, language=None, wrap_lines=True)
    with right:
        in_page(live, seat, step, answer, tr)
    return right


@st.fragment(run_every=LIVE_S)
def live(seat: Seat, step: int, answer: Answer, tr: Translator) -> None:
    """Redrawn every ``LIVE_S`` seconds on its own; the whole page reruns when the class moves
    on (a new step for the board, a new phase for both)."""
    try:
        state = seat.store.state(seat.code)
        if _moved(seat, state, step) and not st.session_state.get(IN_PAGE):
            st.rerun(scope="app")
        results(replace(seat, state=state), step, tr, answer)
    except ClassError as err:
        st.warning(notice(tr, err.code, seat.code))


def _moved(seat: Seat, state: ClassState, step: int) -> bool:
    follows = not seat.teacher and (following() or not seat.student)
    return (
        (follows and state.step != step)
        or state.phase(step) != seat.state.phase(step)
        or state.revealed != seat.state.revealed
        or seat.down
    )


def student_panel(seat: Seat, step: int, tr: Translator) -> None:
    """Which class and seat this is, the follow switch, and a watch that reruns the page when
    the teacher moves on or changes the step's phase, or when a kept pick can be sent."""
    st.info(tr("classroom.student_intro", code=seat.code, seat=seat.number))
    st.toggle(tr("classroom.follow"), value=True, key=FOLLOW, help=tr("classroom.follow_help"))
    in_page(watch, seat, step)


def in_page(fragment, *args) -> None:
    """Draw a live fragment as part of the page's run (see ``IN_PAGE``)."""
    st.session_state[IN_PAGE] = True
    try:
        fragment(*args)
    finally:
        st.session_state[IN_PAGE] = False


@st.fragment(run_every=LIVE_S)
def watch(seat: Seat, step: int) -> None:
    try:
        state = seat.store.state(seat.code)
    except ClassError:
        return  # the page says so; the next call may answer
    unsent = {"down", "too_fast"} & set(st.session_state.get(SAID, {}).values())
    if (_moved(seat, state, step) or unsent) and not st.session_state.get(IN_PAGE):
        st.rerun(scope="app")


def class_result(seat: Seat | None, step: int, tr: Translator, correct: str | None) -> None:
    """After the teacher's reveal, a student sees how the class answered."""
    if seat is None or not seat.student or step not in seat.state.revealed:
        return
    st.markdown(f"**{tr('classroom.class_heading')}**")
    try:
        results(seat, step, tr, (correct, None))  # the verdict above says the answer
    except ClassError as err:
        st.warning(notice(tr, err.code, seat.code))
