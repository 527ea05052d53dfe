"""The guided lesson as a class: who this page is in the class, and a student's answers.

``/lesson?class=new`` starts a class and rewrites the link to ``?class=<CODE>&teacher=<KEY>``:
the teacher's private control page. ``/lesson?class=<CODE>`` is a student's page; the same link
with ``controls=hidden`` (the presenter view) is the board for the projector, which holds no key and
takes no seat (``labs.lesson.board_section`` draws the teacher's and the board's screens). A
student's seat is the ``normlab_seat`` cookie (a random token the browser keeps for every class; the
store gets a hash of it with the class's code), so a reload, a second tab, the join link opened
again and a worker failover keep one seat and its answers.

Each step runs peer instruction (``serve.classroom.store``). A pick is sent when this page made
it (the radio differs from what the page last saw recorded), and until the store has it: a pick
refused while the store was down is sent again on the next run, which the page's watch starts
within ``LIVE_S`` seconds. A page that made no pick shows what the store holds, so a second tab
never sends an answer the student has since changed."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass, field, replace

import streamlit as st

from labs.lesson.options import LESSON, STEP_IDS, letter
from serve.classroom.backends import open_store
from serve.classroom.codes import KEY_PATTERN, new_key, normal_code
from serve.classroom.store import ROUND_OF, ClassError, ClassState, ClassStore, Limits
from ui.frame import CONTROLS
from ui.i18n import Translator
from ui.params import echo
from ui.st_private import rerun_at_rest, session_id, set_query_param

CLASS_KEY = "class"
TEACHER_KEY = "teacher"
NEW = "new"
SEAT_COOKIE = "normlab_seat"
# A seat cookie lives as long as the longest class could.
SEAT_COOKIE_S = 7 * 24 * 3600
# Session keys: the class this session is in, its last known state (kept through an outage), the
# seat token, the follow switch, the last word on each step's answer, recent send times, the
# class entered, the recorded answer the page last showed per step, the step the teacher led.
SEAT = "_class_seat"
LAST = "_class_last"
TOKEN = "_class_token"
FOLLOW = "class_follow"
SAID = "_class_said"
TIMES = "_class_times"
ENDED = "_class_ended"
ENTERED = "_class_entered"
SEEN = "_class_seen"
SET_HERE = "_class_set_here"  # the radios whose value this run set through the session state
LED = "_class_led"
WAITED = "_class_waited"  # the class state whose rerun this page's watch left to a ring
# Set while the whole page runs a live fragment in place: only the fragment's own timed reruns may
# rerun the page (a rerun from inside the page's run would loop as fast as it runs).
IN_PAGE = "_class_in_page"
# A student's answers per second past which one waits: a person changing their mind clicks a
# few times a second at most; a script hammering the store clicks far more.
ANSWERS_PER_S = 3
# The rate limit's clock (a name of its own, so a test can stop it without stopping time).
clock = time.monotonic
# How often the teacher's counts and a student's view of the class refresh.
LIVE_S = 2.0
# This worker's pages of each class, by session: the step and phases each drew. The first page
# whose watch sees the class move reruns the others at once, not at their watches' next tick.
DRAWN: dict[str, dict[str, tuple]] = {}


def drawn(state: ClassState) -> tuple:
    return state.step, tuple(sorted(state.phases.items()))


def ring(state: ClassState) -> None:
    """This page saw the class move to ``state``: rerun the class's other pages here that drew
    it otherwise, each marked as asked (the next watch to see the move asks no more; a page
    that reruns on its own first is not asked again)."""
    pages, now, me = DRAWN.setdefault(state.code, {}), drawn(state), session_id()
    asked = ("asked", now)
    behind = [page for page, was in list(pages.items()) if was not in (now, asked) and page != me]
    pages.update(dict.fromkeys(behind, asked))
    rerun_at_rest(behind, lambda page: pages.get(page) == asked, lambda page: pages.pop(page, None))


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

    def latest(self, step: int) -> str | None:
        """The student's answer to ``step`` in its last round."""
        return self.recorded.get((step, 2), self.recorded.get((step, 1)))


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


def cookie_token() -> str | None:
    """The seat token this browser sent, if it sent a well-formed one."""
    token = st.context.cookies.get(SEAT_COOKIE, "")
    ok = isinstance(token, str) and len(token) == 32 and set(token) <= set("0123456789abcdef")
    return token if ok else None


def seat_token() -> str:
    """This browser's seat token: its cookie, or a new one the page stores in the cookie."""
    token = cookie_token()
    if token is not None:
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


def on_board() -> bool:
    return st.query_params.get(CONTROLS.key) == "hidden"


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
        store = open_store(LESSON)
        if raw.strip().lower() == NEW:  # the key goes in the link first: a retry or a reload
            key = st.query_params.get(TEACHER_KEY, "")  # of it makes no second class
            if not KEY_PATTERN.fullmatch(key):
                key = st.query_params[TEACHER_KEY] = new_key()
            code, key = store.create(client, key)
            st.query_params[CLASS_KEY] = code
        else:
            code, key = normal_code(raw), st.query_params.get(TEACHER_KEY)
            if before is None or before[0] != code:
                _check_code(store, code, key, client)
        state = store.state(code)
        if key is not None and not store.is_teacher(code, key):
            st.warning(notice(tr, "not_teacher", code))
            del st.query_params[TEACHER_KEY]
            key = None
        seat = Seat(store, state, key)
        if key is None and not on_board():
            seat_of = seat_id(seat_token(), code)
            number = store.join(code, seat_of, client)
            seat = replace(seat, seat=seat_of, number=number, recorded=store.answers(code, seat_of))
    except ClassError as err:
        if err.code == "down" and before is not None and before[0] == raw.strip().upper():
            seat = replace(st.session_state[LAST], down=True)
            st.warning(notice(tr, "down_kept", seat.code))
        elif err.code == "down":  # no seat yet, so no watch: this one waits for the store
            st.warning(notice(tr, "down_wait", raw))
            in_page(retry)
            return None
        else:
            st.warning(notice(tr, err.code, raw))
            return None
    st.session_state[SEAT] = (seat.code, seat.key)
    st.session_state[LAST] = seat
    if not seat.down:
        DRAWN.setdefault(seat.code, {})[session_id()] = drawn(seat.state)
    return seat


def _check_code(store: ClassStore, code: str | None, key: str | None, client: str) -> None:
    """A code this session has not opened yet. An address past the limit of unknown codes opens
    only a class it belongs to (the teacher's key, a seat this browser holds); a code that names
    no class, ended or live, counts as a guess."""
    if store.guessed_too_often(client) and not _belongs(store, code, key):
        raise ClassError("client_guesses")
    try:
        if code is None:
            raise ClassError("unknown")
        store.state(code)
    except ClassError as err:
        if err.code == "unknown":
            store.guess(client)
        raise


def _belongs(store: ClassStore, code: str | None, key: str | None) -> bool:
    token = cookie_token()
    try:
        if code is None:
            return False
        if key is not None:
            return store.is_teacher(code, key)
        return token is not None and store.has_seat(code, seat_id(token, code))
    except ClassError:
        return False


def following() -> bool:
    return st.session_state.get(FOLLOW, True)


def sync(seat: Seat | None, revealed: dict[str, bool], answers: dict[str, str | None]) -> None:
    """Before the step control is drawn: the class's step for a following student, the board
    and a teacher's page just opened (or moved by the teacher's other tab); the class's reveals;
    a student's recorded answers where this page made no pick of its own since it last saw them
    (after a reload, or changed in another tab)."""
    if seat is None:
        return
    if st.session_state.get(ENTERED) != seat.code:  # what was answered alone is not the class's
        st.session_state[ENTERED] = seat.code
        revealed.clear()
        answers.clear()
        for key in (SAID, SEEN, LED, *(f"pick_{step_id}" for step_id in STEP_IDS)):
            st.session_state.pop(key, None)
    for step in seat.state.revealed:
        revealed[STEP_IDS[step - 1]] = True
    led = st.session_state.get(LED)
    moved_by_other = seat.teacher and st.session_state.get("step") == led != seat.state.step
    if moved_by_other or (seat.teacher and led is None) or (not seat.teacher and following()):
        if st.session_state.get("step") != seat.state.step:
            st.session_state["step"] = seat.state.step
            set_query_param("step", str(seat.state.step))
    given = st.session_state[SET_HERE] = set()
    if not seat.student or seat.down:
        return
    seen = st.session_state.setdefault(SEEN, {})
    for step, step_id in enumerate(STEP_IDS, start=1):
        latest, key = seat.latest(step), f"pick_{step_id}"
        shown = st.session_state.get(key, answers.get(step_id))
        mine = shown is not None and shown != seen.get(step_id, latest)
        if not mine or seat.state.phase(step) not in ROUND_OF:
            answers[step_id] = seen[step_id] = latest
            if key in st.session_state and st.session_state[key] != latest:
                st.session_state[key] = latest  # the radio shows it (set through the state)
                given.add(key)


def send(seat: Seat | None, answers: dict[str, str | None]) -> None:
    """Every pick this page made on an open step that the store does not hold yet, sent now:
    committed before the page says "recorded"; refused while the store is down, and sent again
    on the next run."""
    if seat is None or not seat.student or seat.down:
        return
    said = st.session_state.setdefault(SAID, {})
    seen = st.session_state.setdefault(SEEN, {})
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
        seat.recorded[(step, round)] = seen[step_id] = pick
        said.pop(step_id, None)


def answer_status(
    seat: Seat | None, step: int, answers: dict[str, str | None], tr: Translator
) -> None:
    """Under a student's options: where the step's vote stands and whether the pick is
    recorded, or why not (a pick kept while the store is down gets a button that sends it)."""
    if seat is None or not seat.student:
        return
    step_id, phase = STEP_IDS[step - 1], seat.state.phase(step)
    if phase == "vote2" and (step, 1) not in seat.recorded:
        st.caption(tr("classroom.student_vote2_new"))
    elif phase != "vote":
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


def set_here(key: str) -> bool:
    """Whether this run gave the widget ``key`` its value (it then takes no default)."""
    return key in st.session_state.get(SET_HERE, ())


def closed(seat: Seat | None, step_id: str) -> bool:
    """Whether the class's vote on the step is closed (the discussion, the reveal)."""
    return seat is not None and seat.state.phase(STEP_IDS.index(step_id) + 1) not in ROUND_OF


def lead(seat: Seat | None, step: int) -> None:
    """The step the teacher opened here is the class's step."""
    if seat is None or not seat.teacher:
        return
    st.session_state[LED] = step
    if seat.state.step != step:
        try:
            seat.store.set_step(seat.code, seat.key, step)
            ring(seat.store.state(seat.code))
        except ClassError:
            pass  # the live panel says the store is down


def student_panel(seat: Seat, step: int, tr: Translator) -> None:
    """Which class and seat this is, the follow switch, and a watch that reruns the page when
    the class moves on, its answers change elsewhere or it ends, or a kept pick can be sent."""
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


def rerun_if(changed: bool) -> None:
    """Rerun the whole page from a live fragment's own timed run."""
    if changed and not st.session_state.get(IN_PAGE):
        st.rerun(scope="app")


def moved(seat: Seat, state: ClassState, step: int) -> bool:
    """Whether the class moved on from what this page drew: its step (where the page follows
    it), a phase, or the store answering again after an outage (then the others here rerun too).
    """
    follows = seat.teacher or not seat.student or following()
    went = (
        (follows and state.step != step)
        or state.phase(step) != seat.state.phase(step)
        or state.revealed != seat.state.revealed
        or seat.down
    )
    if went:
        ring(state)
    return went and not in_line(state)


def in_line(state: ClassState) -> bool:
    """Whether a ring has this page in line to rerun for ``state``: its first watch to see the
    move leaves the rerun to it (all at once, each run is slower), the next reruns it anyway."""
    now = drawn(state)
    first, st.session_state[WAITED] = st.session_state.get(WAITED) != now, now
    return first and DRAWN.get(state.code, {}).get(session_id()) == ("asked", now)


@st.fragment(run_every=LIVE_S)
def retry() -> None:
    """A page the store could not answer before it had a seat: rerun it once the store answers
    (a worker restarted mid-class, a store briefly away), so the student joins without a reload."""
    try:
        open_store(LESSON).guessed_too_often(client_address())  # a read that changes nothing
    except ClassError:
        return
    rerun_if(True)


@st.fragment(run_every=LIVE_S)
def watch(seat: Seat, step: int) -> None:
    if st.session_state.get(IN_PAGE):  # the page's run has just read the class
        return
    try:
        state = seat.store.state(seat.code)
        elsewhere = seat.store.answers(seat.code, seat.seat) != seat.recorded
    except ClassError as err:
        if err.code in ("unknown", "ended"):
            DRAWN.pop(seat.code, None)
        rerun_if(err.code in ("unknown", "ended"))  # the class ended: the page says so
        return  # down: the page says so; the next call may answer
    unsent = {"down", "too_fast"} & set(st.session_state.get(SAID, {}).values())
    rerun_if(moved(seat, state, step) or elsewhere or bool(unsent))
