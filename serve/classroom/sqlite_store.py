"""The class store on one host: one SQLite file in WAL mode that every worker opens."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from serve.classroom.codes import new_code, new_key
from serve.classroom.store import (
    CODE_TRIES,
    SCHEMA_VERSION,
    ClassError,
    ClassState,
    ClassStore,
    Limits,
)

SQLITE_FILE = f"classes-v{SCHEMA_VERSION}.sqlite3"
# How long a write waits for another worker's transaction before the store counts as down.
BUSY_TIMEOUT_S = 10.0

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
