"""The class store: one small interface, two backends.

A class is a join code, the teacher's key, the step the teacher has open, the steps revealed to
the class, the students who joined (random ids a browser session made up: no names, no addresses)
and one answer per student per step. Every answer is checked against the lesson (the step exists,
the option is one of that step's) and is committed before the call returns, so a student told
"recorded" holds an answer that a killed worker cannot take back.

- ``sqlite_store.SqliteStore``, the default: one file in WAL mode under ``NORMLAB_DATA_DIR``
  (default ``.normlab/`` in the working directory), shared by every worker on the host; each
  write is one ``BEGIN IMMEDIATE`` transaction.
- ``redis_store.RedisStore``, where ``NORMLAB_CLASS_STORE=redis://host:port/db``: several hosts
  share one Redis; each write is one Lua script, which Redis runs atomically.

Bounds (environment variables, read by :meth:`Limits.from_env`): a class lives
``NORMLAB_CLASS_HOURS`` (24), takes ``NORMLAB_CLASS_STUDENTS`` (500) and a server holds
``NORMLAB_CLASSES`` (200) live classes. Past one, the call raises :class:`ClassError` with a code
the page turns into a notice; a store that cannot be reached raises the code ``down``.
"""

from __future__ import annotations

import math
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from core.lab.lesson_options import OPTIONS, STEP_IDS
from serve.classroom.codes import KEY_MAX_LEN, normal_code, same_key

STORE_ENV = "NORMLAB_CLASS_STORE"
DATA_ENV = "NORMLAB_DATA_DIR"
DEFAULT_DATA_DIR = ".normlab"
# The layout of the tables and of the Redis keys; a change of layout is a new version, which
# starts empty instead of misreading the old one.
SCHEMA_VERSION = 1
# The longest student id accepted (the page makes 16-character ones).
STUDENT_MAX_LEN = 64
# Codes tried before giving up on finding a free one (a clash has odds of 200 in 8.9e8).
CODE_TRIES = 8

# The lesson a class follows: for step k (from 1), the ids of its options.
LESSON: tuple[tuple[str, ...], ...] = tuple(OPTIONS[s] for s in STEP_IDS)


class ClassError(Exception):
    """What went wrong, as a code the page turns into a notice (``classroom.error_<code>``):
    ``unknown`` (no such class, or it ended), ``students_full``, ``classes_full``, ``bad_step``,
    ``bad_option``, ``bad_student``, ``closed`` (the step is revealed), ``not_teacher``, ``down``.
    """

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code


@dataclass(frozen=True)
class Limits:
    lifetime_s: float = 24 * 3600.0
    students: int = 500
    classes: int = 200

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Limits:
        """The bounds the host set; a missing, malformed or non-positive value keeps its
        default."""

        def read(name: str, default: float) -> float:
            try:
                value = float(env.get(name, ""))
            except ValueError:
                return default
            return value if math.isfinite(value) and value > 0 else default

        return cls(
            lifetime_s=read("NORMLAB_CLASS_HOURS", cls.lifetime_s / 3600.0) * 3600.0,
            students=int(read("NORMLAB_CLASS_STUDENTS", cls.students)),
            classes=int(read("NORMLAB_CLASSES", cls.classes)),
        )


@dataclass(frozen=True)
class ClassState:
    """A live class as every page reads it."""

    code: str
    step: int
    revealed: frozenset[int]
    students: int
    created: float


class ClassStore(ABC):
    """Classes and their answers. Every method raises :class:`ClassError` on a bad argument, a
    bound reached, an unknown class or a store that is down."""

    def __init__(
        self,
        limits: Limits,
        lesson: Sequence[Sequence[str]] = LESSON,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.limits = limits
        self.lesson = tuple(tuple(options) for options in lesson)
        self.clock = clock

    # -- what every backend checks the same way

    def check_step(self, step: object) -> int:
        if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= len(self.lesson):
            raise ClassError("bad_step", repr(step)[:40])
        return step

    def check_answer(self, student: object, step: object, option: object) -> None:
        self.check_student(student)
        options = self.lesson[self.check_step(step) - 1]
        if not isinstance(option, str) or option not in options:
            raise ClassError("bad_option", repr(option)[:40])

    @staticmethod
    def check_student(student: object) -> None:
        if not isinstance(student, str) or not 0 < len(student) <= STUDENT_MAX_LEN:
            raise ClassError("bad_student")

    @staticmethod
    def check_code(code: object) -> str:
        found = normal_code(code) if isinstance(code, str) else None
        if found is None:
            raise ClassError("unknown")
        return found

    def teacher(self, code: str, key: object) -> str:
        """The class's code if ``key`` is its teacher's key (constant-time compare)."""
        code = self.check_code(code)
        stored = self.teacher_key(code)
        if not isinstance(key, str) or len(key) > KEY_MAX_LEN or not same_key(key, stored):
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

    # -- the backend's part

    @abstractmethod
    def create(self) -> tuple[str, str]:
        """A new class: (code, teacher's key)."""

    @abstractmethod
    def state(self, code: str) -> ClassState:
        """The class's step, reveals and head count."""

    @abstractmethod
    def teacher_key(self, code: str) -> str:
        """The stored key of a live class (for :meth:`teacher` only)."""

    @abstractmethod
    def set_step(self, code: str, key: str, step: int) -> None:
        """The teacher opens ``step`` for the class."""

    @abstractmethod
    def reveal(self, code: str, key: str, step: int) -> None:
        """The teacher reveals ``step``'s answer; answers to it are closed from then on."""

    @abstractmethod
    def join(self, code: str, student: str) -> int:
        """Count ``student`` in (once); returns the head count."""

    @abstractmethod
    def answer(self, code: str, student: str, step: int, option: str) -> None:
        """Record (or replace) ``student``'s answer to ``step``; committed on return."""

    @abstractmethod
    def counts(self, code: str, step: int) -> dict[str, int]:
        """How many students chose each option of ``step``, every option listed."""
