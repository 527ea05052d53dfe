"""The class store: one small interface (:class:`ClassStore`), two backends beside it,
``sqlite_store`` (one host, the default) and ``redis_store`` (several hosts).

A class is a join code, a hash of the teacher's key, the step the teacher has open, each step's
phase, the students' seats (a hashed browser token and a number, no names, no addresses) and
their answers. Each step runs peer instruction (Crouch and Mazur 2001), phases only forward:
``vote`` (round 1), ``discuss`` (closed, the spread shown), ``vote2`` (round 2), ``revealed``.
Every answer is checked against the lesson and committed before the call returns. The bounds,
the per-client limits and the environment variables that set them: docs/serving.md, "The class
store"; a call past one raises :class:`ClassError` with a code the page turns into a notice."""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from serve.classroom.codes import KEY_MAX_LEN, normal_code

STORE_ENV = "NORMLAB_CLASS_STORE"
DATA_ENV = "NORMLAB_DATA_DIR"
DEFAULT_DATA_DIR = ".normlab"
# The layout of the tables and of the Redis keys; a change of layout is a new version, which
# starts empty instead of misreading the old one.
SCHEMA_VERSION = 2
# A seat token as the page makes it: 32 hexadecimal digits (128 random bits).
SEAT_LEN = 32
# Codes tried before giving up on finding a free one (a clash has odds of 200 in 8.9e8).
CODE_TRIES = 8
PHASES = ("vote", "discuss", "vote2", "revealed")
# The round an answer goes to in each phase (None: closed).
ROUND_OF = {"vote": 1, "vote2": 2}
# The windows of the per-client limits, seconds.
CREATE_WINDOW_S = 3600.0
GUESS_WINDOW_S = 600.0

# The lesson a class follows: for step k (from 1), the ids of its options (the caller's, so the
# store knows no lesson: ``labs.lesson.options.LESSON``).
Lesson = tuple[tuple[str, ...], ...]  # hashable: one store is opened per lesson

log = logging.getLogger("normlab.classroom")


class ClassError(Exception):
    """What went wrong, as a code the page turns into a notice (``classroom.error_<code>``):
    ``unknown`` (no such class), ``ended`` (its teacher ended it), ``students_full``,
    ``classes_full``, ``bad_step``, ``bad_option``, ``bad_student``, ``bad_phase``, ``closed``
    (answers to the step are closed), ``not_teacher``, ``client_classes``, ``client_seats``,
    ``client_guesses``, ``down``."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code


@dataclass(frozen=True)
class Limits:
    lifetime_s: float = 24 * 3600.0
    students: int = 500
    classes: int = 200
    client_classes: int = 10
    client_seats: int = 150
    client_guesses: int = 20

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Limits:
        """The host's bounds; a missing, malformed or non-positive value keeps its default."""

        def read(name: str, default: float) -> float:
            try:
                value = float(env.get(name, ""))
            except ValueError:
                return default
            return value if math.isfinite(value) and value > 0 else default

        return cls(
            lifetime_s=read("NORMLAB_CLASS_HOURS", cls.lifetime_s / 3600.0) * 3600.0,
            **{
                name: int(read(var, getattr(cls, name)))
                for name, var in (
                    ("students", "NORMLAB_CLASS_STUDENTS"),
                    ("classes", "NORMLAB_CLASSES"),
                    ("client_classes", "NORMLAB_CLIENT_CLASSES"),
                    ("client_seats", "NORMLAB_CLIENT_SEATS"),
                    ("client_guesses", "NORMLAB_CLIENT_GUESSES"),
                )
            },
        )


@dataclass(frozen=True)
class ClassState:
    """A live class as every page reads it."""

    code: str
    step: int
    phases: Mapping[int, str] = field(default_factory=dict)  # steps past "vote"
    students: int = 0
    created: float = 0.0

    def phase(self, step: int) -> str:
        return self.phases.get(step, "vote")

    @property
    def revealed(self) -> frozenset[int]:
        return frozenset(s for s, p in self.phases.items() if p == "revealed")


def key_hash(key: str) -> str:
    """What the store keeps of the teacher's key: its SHA-256, never the key."""
    return hashlib.sha256(key.encode()).hexdigest()


class ClassStore(ABC):
    """Classes, seats and answers. Every method raises :class:`ClassError` on a bad argument, a
    bound reached, an unknown class or a store that is down."""

    def __init__(
        self, limits: Limits, lesson: Lesson, clock: Callable[[], float] = time.time
    ) -> None:
        self.limits = limits
        self.lesson = tuple(tuple(options) for options in lesson)
        self.clock = clock
        self._logged: str | None = None

    # -- what every backend checks the same way

    def check_step(self, step: object) -> int:
        if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= len(self.lesson):
            raise ClassError("bad_step", repr(step)[:40])
        return step

    def check_answer(self, seat: object, step: object, option: object) -> None:
        self.check_seat(seat)
        options = self.lesson[self.check_step(step) - 1]
        if not isinstance(option, str) or option not in options:
            raise ClassError("bad_option", repr(option)[:40])

    @staticmethod
    def check_seat(seat: object) -> str:
        if not isinstance(seat, str) or len(seat) != SEAT_LEN or not seat.isalnum():
            raise ClassError("bad_student")
        return seat

    @staticmethod
    def check_code(code: object) -> str:
        found = normal_code(code) if isinstance(code, str) else None
        if found is None:
            raise ClassError("unknown")
        return found

    def teacher(self, code: str, key: object) -> str:
        """The class's code if ``key`` is its teacher's (hashes compared in constant time)."""
        code = self.check_code(code)
        stored = self.key_hash(code)
        if not isinstance(key, str) or len(key) > KEY_MAX_LEN:
            raise ClassError("not_teacher")
        if not hmac.compare_digest(key_hash(key), stored):
            raise ClassError("not_teacher")
        return code

    def is_teacher(self, code: str, key: object) -> bool:
        try:
            self.teacher(code, key)
        except ClassError as err:
            if err.code == "not_teacher":
                return False
            raise
        return True

    def expired(self, created: float) -> bool:
        return self.clock() - created >= self.limits.lifetime_s

    def next_phase(self, state: ClassState, step: int, phase: object) -> str:
        """``phase`` if the step may move to it from where it is (forward only)."""
        if phase not in PHASES or PHASES.index(phase) <= PHASES.index(state.phase(step)):
            raise ClassError("bad_phase", repr(phase)[:40])
        return phase

    def client_id(self, client: str, salt: str) -> str:
        """A client address as the limits keep it: keyed by the store's own random salt, so the
        store holds no address."""
        return hmac.new(salt.encode(), client.encode(), hashlib.sha256).hexdigest()[:24]

    def window(self, length_s: float) -> int:
        return int(self.clock() // length_s)

    def down(self, err: BaseException) -> ClassError:
        """``down`` for ``err``, logged the first time this cause is seen in a row."""
        cause = f"{type(err).__name__}: {err}"
        if cause != self._logged:
            log.warning("class store %s failed: %s", type(self).__name__, cause)
            self._logged = cause
        return ClassError("down", str(err))

    def up(self) -> None:
        """A call went through: the next failure is logged again."""
        if self._logged is not None:
            log.warning("class store %s answers again", type(self).__name__)
            self._logged = None

    # -- the backend's part

    @abstractmethod
    def create(self, client: str, key: str | None = None) -> tuple[str, str]:
        """A new class for ``client`` (an address): (code, teacher's key). With ``key``, the
        live class made with that key if there is one: a retry makes no second class."""

    @abstractmethod
    def state(self, code: str) -> ClassState:
        """The class's step, phases and head count."""

    @abstractmethod
    def guess(self, client: str) -> None:
        """Count an unknown code ``client`` tried; ``client_guesses`` once past the limit."""

    @abstractmethod
    def guessed_too_often(self, client: str) -> bool:
        """Whether ``client`` is past the limit of unknown codes (nothing counted)."""

    @abstractmethod
    def key_hash(self, code: str) -> str:
        """The stored hash of a live class's key (for :meth:`teacher` only)."""

    @abstractmethod
    def set_step(self, code: str, key: str, step: int) -> None:
        """The teacher opens ``step`` for the class."""

    @abstractmethod
    def set_phase(self, code: str, key: str, step: int, phase: str) -> None:
        """The teacher moves ``step`` to ``phase``; ``vote2`` starts from each seat's first vote."""

    @abstractmethod
    def end(self, code: str, key: str) -> None:
        """The teacher ends the class: it and its answers are gone, its place free; its code
        says "ended" for the class's lifetime (a student's reload is not a guessed code)."""

    @abstractmethod
    def join(self, code: str, seat: str, client: str) -> int:
        """The seat's number in the class, given on its first join (``client_seats`` past the
        client's limit, ``students_full`` past the class's)."""

    @abstractmethod
    def answer(self, code: str, seat: str, step: int, option: str) -> int:
        """Record (or replace) a joined seat's answer in the step's open round; committed on
        return. Returns the round."""

    @abstractmethod
    def has_seat(self, code: str, seat: str) -> bool:
        """Whether ``seat`` has joined the class."""

    @abstractmethod
    def answers(self, code: str, seat: str) -> dict[tuple[int, int], str]:
        """A seat's answers by (step, round)."""

    @abstractmethod
    def rounds(self, code: str, step: int) -> dict[str, tuple[str | None, str | None]]:
        """Each seat's (round 1, round 2) answers to ``step``, by seat number."""

    def counts(self, code: str, step: int, round: int = 1) -> dict[str, int]:
        """How many students chose each option of ``step`` in ``round``, every option listed."""
        step = self.check_step(step)
        chosen = [pair[round - 1] for pair in self.rounds(code, step).values()]
        return {option: chosen.count(option) for option in self.lesson[step - 1]}

    def export(self, code: str, key: str) -> list[tuple[int, int, str, int]]:
        """(step, round, option, count) for every step and round that has answers."""
        code = self.teacher(code, key)
        rows = []
        for step in range(1, len(self.lesson) + 1):
            for round in (1, 2):
                counts = self.counts(code, step, round)
                if any(counts.values()):
                    rows += [(step, round, o, n) for o, n in counts.items()]
        return rows
