"""The class store: one small interface, two backends.

A class is a join code, the teacher's key, the step the teacher has open, the steps revealed to
the class, the students who joined (random ids a browser session made up: no names, no addresses)
and one answer per student per step. Every answer is checked against the lesson (the step exists,
the option is one of that step's) and is committed before the call returns, so a student told
"recorded" holds an answer that a killed worker cannot take back.

- :class:`SqliteStore`, the default: one file in WAL mode under ``NORMLAB_DATA_DIR`` (default
  ``.normlab/`` in the working directory), shared by every worker on the host; each write is one
  ``BEGIN IMMEDIATE`` transaction.
- :class:`RedisStore`, where ``NORMLAB_CLASS_STORE=redis://host:port/db``: several hosts share
  one Redis; each write is one Lua script, which Redis runs atomically.

Bounds (environment variables, read by :meth:`Limits.from_env`): a class lives
``NORMLAB_CLASS_HOURS`` (24), takes ``NORMLAB_CLASS_STUDENTS`` (500) and a server holds
``NORMLAB_CLASSES`` (200) live classes. Past one, the call raises :class:`ClassError` with a code
the page turns into a notice; a store that cannot be reached raises the code ``down``.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from core.lesson import OPTIONS, STEP_IDS
from serve.classroom.codes import KEY_MAX_LEN, new_code, new_key, normal_code, same_key

STORE_ENV = "NORMLAB_CLASS_STORE"
DATA_ENV = "NORMLAB_DATA_DIR"
DEFAULT_DATA_DIR = ".normlab"
# The layout of the tables and of the Redis keys; a change of layout is a new version, which
# starts empty instead of misreading the old one.
SCHEMA_VERSION = 1
SQLITE_FILE = f"classes-v{SCHEMA_VERSION}.sqlite3"
REDIS_PREFIX = f"normlab:classroom:v{SCHEMA_VERSION}:"
# How long a write waits for another worker's transaction before the store counts as down.
BUSY_TIMEOUT_S = 10.0
REDIS_TIMEOUT_S = 2.0
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


# ---------------------------------------------------------------------------------------------
# SQLite: one file per host

SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY, key TEXT NOT NULL, created REAL NOT NULL, step INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS reveals (
    code TEXT NOT NULL, step INTEGER NOT NULL, PRIMARY KEY (code, step));
CREATE TABLE IF NOT EXISTS students (
    code TEXT NOT NULL, student TEXT NOT NULL, PRIMARY KEY (code, student));
CREATE TABLE IF NOT EXISTS answers (
    code TEXT NOT NULL, student TEXT NOT NULL, step INTEGER NOT NULL, option TEXT NOT NULL,
    PRIMARY KEY (code, student, step));
"""
CLASS_TABLES = ("reveals", "students", "answers", "classes")


class SqliteStore(ClassStore):
    """One SQLite file in WAL mode: readers never wait for the writer, and each write is one
    ``BEGIN IMMEDIATE`` transaction with ``synchronous=FULL``, so a committed answer survives the
    process that wrote it. One connection per thread and process."""

    def __init__(self, data_dir: Path | str, limits: Limits, **kwargs: object) -> None:
        super().__init__(limits, **kwargs)
        self.path = Path(data_dir) / SQLITE_FILE
        self._local = threading.local()
        con = self._connection()
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                con.executescript(SCHEMA + f"PRAGMA user_version = {SCHEMA_VERSION};")
        except sqlite3.Error as err:
            raise ClassError("down", str(err)) from err
        if version not in (0, SCHEMA_VERSION):
            raise ClassError("down", f"schema version {version} in {self.path}")

    def _connection(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is not None and self._local.pid == os.getpid():
            return con
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            con.execute("PRAGMA journal_mode = WAL")
            con.execute("PRAGMA synchronous = FULL")
        except (OSError, sqlite3.Error) as err:
            raise ClassError("down", str(err)) from err
        self._local.con, self._local.pid = con, os.getpid()
        return con

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        con = self._connection()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        except sqlite3.Error as err:
            raise ClassError("down", str(err)) from err

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            return self._connection().execute(sql, args).fetchall()
        except sqlite3.Error as err:
            raise ClassError("down", str(err)) from err

    def _live(self, con: sqlite3.Connection, code: str) -> tuple:
        row = con.execute(
            "SELECT key, created, step FROM classes WHERE code = ?", (code,)
        ).fetchone()
        if row is None or self.expired(row[1]):
            raise ClassError("unknown")
        return row

    def create(self) -> tuple[str, str]:
        now = self.clock()
        with self._write() as con:
            old = now - self.limits.lifetime_s
            for table in CLASS_TABLES:
                con.execute(
                    f"DELETE FROM {table} WHERE code IN "
                    "(SELECT code FROM classes WHERE created <= ?)",
                    (old,),
                )
            (live,) = con.execute("SELECT COUNT(*) FROM classes").fetchone()
            if live >= self.limits.classes:
                raise ClassError("classes_full")
            key = new_key()
            for _ in range(CODE_TRIES):
                code = new_code()
                inserted = con.execute(
                    "INSERT OR IGNORE INTO classes VALUES (?, ?, ?, 1)", (code, key, now)
                )
                if inserted.rowcount:
                    return code, key
        raise ClassError("down", "no free code")

    def state(self, code: str) -> ClassState:
        code = self.check_code(code)
        rows = self._read("SELECT created, step FROM classes WHERE code = ?", (code,))
        if not rows or self.expired(rows[0][0]):
            raise ClassError("unknown")
        revealed = self._read("SELECT step FROM reveals WHERE code = ?", (code,))
        ((students,),) = self._read("SELECT COUNT(*) FROM students WHERE code = ?", (code,))
        created, step = rows[0]
        return ClassState(code, step, frozenset(s for (s,) in revealed), students, created)

    def teacher_key(self, code: str) -> str:
        rows = self._read("SELECT key, created FROM classes WHERE code = ?", (code,))
        if not rows or self.expired(rows[0][1]):
            raise ClassError("unknown")
        return rows[0][0]

    def set_step(self, code: str, key: str, step: int) -> None:
        code, step = self.teacher(code, key), self.check_step(step)
        with self._write() as con:
            self._live(con, code)
            con.execute("UPDATE classes SET step = ? WHERE code = ?", (step, code))

    def reveal(self, code: str, key: str, step: int) -> None:
        code, step = self.teacher(code, key), self.check_step(step)
        with self._write() as con:
            self._live(con, code)
            con.execute("INSERT OR IGNORE INTO reveals VALUES (?, ?)", (code, step))

    def _join(self, con: sqlite3.Connection, code: str, student: str) -> int:
        (count,) = con.execute("SELECT COUNT(*) FROM students WHERE code = ?", (code,)).fetchone()
        known = con.execute(
            "SELECT 1 FROM students WHERE code = ? AND student = ?", (code, student)
        ).fetchone()
        if known:
            return count
        if count >= self.limits.students:
            raise ClassError("students_full")
        con.execute("INSERT INTO students VALUES (?, ?)", (code, student))
        return count + 1

    def join(self, code: str, student: str) -> int:
        code = self.check_code(code)
        self.check_student(student)
        with self._write() as con:
            self._live(con, code)
            return self._join(con, code, student)

    def answer(self, code: str, student: str, step: int, option: str) -> None:
        code = self.check_code(code)
        self.check_answer(student, step, option)
        with self._write() as con:
            self._live(con, code)
            closed = con.execute(
                "SELECT 1 FROM reveals WHERE code = ? AND step = ?", (code, step)
            ).fetchone()
            if closed:
                raise ClassError("closed")
            self._join(con, code, student)
            con.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", (code, student, step, option)
            )

    def counts(self, code: str, step: int) -> dict[str, int]:
        code, step = self.check_code(code), self.check_step(step)
        self.state(code)
        rows = self._read(
            "SELECT option, COUNT(*) FROM answers WHERE code = ? AND step = ? GROUP BY option",
            (code, step),
        )
        found = dict(rows)
        return {option: found.get(option, 0) for option in self.lesson[step - 1]}


# ---------------------------------------------------------------------------------------------
# Redis: several hosts

# KEYS: the live-classes index, the class. ARGV: now, lifetime (s), most classes, code, key.
CREATE_LUA = """
local now, lifetime = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - lifetime)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 'classes_full' end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'taken' end
redis.call('HSET', KEYS[2], 'key', ARGV[5], 'created', ARGV[1], 'step', 1)
redis.call('EXPIREAT', KEYS[2], math.ceil(now + lifetime))
redis.call('ZADD', KEYS[1], now, ARGV[4])
return 'ok'
"""
# KEYS: the class, its reveals, its students, the step's answers.
# ARGV: student, step, option ('' to join only), most students.
ANSWER_LUA = """
local ends = redis.call('EXPIRETIME', KEYS[1])
if ends < 0 then return 'unknown' end
if ARGV[3] ~= '' and redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 1 then return 'closed' end
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 0 then
  if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[4]) then return 'students_full' end
  redis.call('SADD', KEYS[3], ARGV[1])
  redis.call('EXPIREAT', KEYS[3], ends)
end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[4], ARGV[1], ARGV[3])
  redis.call('EXPIREAT', KEYS[4], ends)
end
return 'ok'
"""
# KEYS: the class, its reveals. ARGV: 'step' or 'reveal', the step.
TEACHER_LUA = """
local ends = redis.call('EXPIRETIME', KEYS[1])
if ends < 0 then return 'unknown' end
if ARGV[1] == 'step' then
  redis.call('HSET', KEYS[1], 'step', ARGV[2])
else
  redis.call('SADD', KEYS[2], ARGV[2])
  redis.call('EXPIREAT', KEYS[2], ends)
end
return 'ok'
"""


class RedisStore(ClassStore):
    """Redis (``redis://host:port/db``): a hash per class, sets of reveals and students and a
    hash of answers per step, each expiring with the class; every write is one Lua script."""

    def __init__(self, url: str, limits: Limits, **kwargs: object) -> None:
        super().__init__(limits, **kwargs)
        import redis

        self._errors = (redis.exceptions.RedisError, OSError)
        self.client = redis.Redis.from_url(
            url,
            socket_timeout=REDIS_TIMEOUT_S,
            socket_connect_timeout=REDIS_TIMEOUT_S,
            decode_responses=True,
        )
        self._create = self.client.register_script(CREATE_LUA)
        self._answer = self.client.register_script(ANSWER_LUA)
        self._teach = self.client.register_script(TEACHER_LUA)

    @staticmethod
    def key(code: str, *parts: object) -> str:
        return REDIS_PREFIX + ":".join(("class", code, *map(str, parts)))

    @contextmanager
    def _calls(self) -> Iterator[None]:
        try:
            yield
        except self._errors as err:
            raise ClassError("down", str(err)) from err

    @staticmethod
    def _outcome(result: str) -> None:
        if result != "ok":
            raise ClassError(result)

    def create(self) -> tuple[str, str]:
        key, index = new_key(), REDIS_PREFIX + "classes"
        args = [repr(self.clock()), repr(self.limits.lifetime_s), self.limits.classes]
        with self._calls():
            for _ in range(CODE_TRIES):
                code = new_code()
                result = self._create(keys=[index, self.key(code)], args=[*args, code, key])
                if result != "taken":
                    self._outcome(result)
                    return code, key
        raise ClassError("down", "no free code")

    def _hash(self, code: str) -> dict[str, str]:
        with self._calls():
            found = self.client.hgetall(self.key(code))
        if not found or self.expired(float(found["created"])):
            raise ClassError("unknown")
        return found

    def state(self, code: str) -> ClassState:
        code = self.check_code(code)
        found = self._hash(code)
        with self._calls():
            pipe = self.client.pipeline(transaction=True)
            pipe.smembers(self.key(code, "revealed"))
            pipe.scard(self.key(code, "students"))
            revealed, students = pipe.execute()
        steps = frozenset(int(s) for s in revealed)
        return ClassState(code, int(found["step"]), steps, students, float(found["created"]))

    def teacher_key(self, code: str) -> str:
        return self._hash(code)["key"]

    def _teacher_call(self, code: str, key: str, what: str, step: int) -> None:
        code, step = self.teacher(code, key), self.check_step(step)
        keys = [self.key(code), self.key(code, "revealed")]
        with self._calls():
            self._outcome(self._teach(keys=keys, args=[what, step]))

    def set_step(self, code: str, key: str, step: int) -> None:
        self._teacher_call(code, key, "step", step)

    def reveal(self, code: str, key: str, step: int) -> None:
        self._teacher_call(code, key, "reveal", step)

    def _student_call(self, code: str, student: str, step: int, option: str) -> None:
        keys = [
            self.key(code),
            self.key(code, "revealed"),
            self.key(code, "students"),
            self.key(code, "answers", step),
        ]
        with self._calls():
            result = self._answer(keys=keys, args=[student, step, option, self.limits.students])
        self._outcome(result)

    def join(self, code: str, student: str) -> int:
        code = self.check_code(code)
        self.check_student(student)
        self._hash(code)
        self._student_call(code, student, 0, "")
        return self.state(code).students

    def answer(self, code: str, student: str, step: int, option: str) -> None:
        code = self.check_code(code)
        self.check_answer(student, step, option)
        self._hash(code)
        self._student_call(code, student, step, option)

    def counts(self, code: str, step: int) -> dict[str, int]:
        code, step = self.check_code(code), self.check_step(step)
        self._hash(code)
        with self._calls():
            found = Counter(self.client.hvals(self.key(code, "answers", step)))
        return {option: found.get(option, 0) for option in self.lesson[step - 1]}


# ---------------------------------------------------------------------------------------------


def open_store(env: Mapping[str, str] = os.environ) -> ClassStore:
    """The store this host is set up for: Redis where ``NORMLAB_CLASS_STORE`` names one, else
    SQLite under ``NORMLAB_DATA_DIR``. One per process and setting; raises ``down`` if it cannot
    be opened."""
    url = env.get(STORE_ENV, "").strip()
    limits = Limits.from_env(env)
    if url.startswith(("redis://", "rediss://", "unix://")):
        return _redis(url, limits)
    if url and url != "sqlite":
        raise ClassError("down", f"{STORE_ENV} names no store this app knows")
    data_dir = Path(env.get(DATA_ENV, "").strip() or DEFAULT_DATA_DIR).resolve()
    return _sqlite(str(data_dir), limits)


@lru_cache(maxsize=8)
def _sqlite(data_dir: str, limits: Limits) -> SqliteStore:
    return SqliteStore(data_dir, limits)


@lru_cache(maxsize=8)
def _redis(url: str, limits: Limits) -> RedisStore:
    return RedisStore(url, limits)
