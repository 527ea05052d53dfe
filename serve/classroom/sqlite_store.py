"""The class store on one host: one SQLite file in WAL mode that every worker opens."""

from __future__ import annotations

import os
import queue
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from serve.classroom.codes import new_code, new_key
from serve.classroom.store import (
    CODE_TRIES,
    CREATE_WINDOW_S,
    GUESS_WINDOW_S,
    ROUND_OF,
    SCHEMA_VERSION,
    ClassError,
    ClassState,
    ClassStore,
    Lesson,
    Limits,
    key_hash,
)

SQLITE_FILE = f"classes-v{SCHEMA_VERSION}.sqlite3"
# How long a write waits for another worker's transaction before the store counts as down.
BUSY_TIMEOUT_S = 10.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY, key TEXT NOT NULL, created REAL NOT NULL, step INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS phases (
    code TEXT NOT NULL, step INTEGER NOT NULL, phase TEXT NOT NULL, PRIMARY KEY (code, step));
CREATE TABLE IF NOT EXISTS seats (
    code TEXT NOT NULL, seat TEXT NOT NULL, number INTEGER NOT NULL, PRIMARY KEY (code, seat));
CREATE TABLE IF NOT EXISTS answers (
    code TEXT NOT NULL, seat TEXT NOT NULL, step INTEGER NOT NULL, round INTEGER NOT NULL,
    option TEXT NOT NULL, PRIMARY KEY (code, seat, step, round));
CREATE TABLE IF NOT EXISTS hits (
    kind TEXT NOT NULL, client TEXT NOT NULL, window INTEGER NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (kind, client, window));
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ended (code TEXT PRIMARY KEY, at REAL NOT NULL);
"""
CLASS_TABLES = ("phases", "seats", "answers", "classes")


class SqliteStore(ClassStore):
    """One SQLite file in WAL mode: readers never wait for the writer, and each write is one
    ``BEGIN IMMEDIATE`` transaction with ``synchronous=FULL``, so a committed answer survives the
    process that wrote it. Connections wait idle for the next call of any thread; a file that
    vanished (deleted by hand, a cleaned folder) is made again with its schema on the next call."""

    def __init__(
        self, data_dir: Path | str, limits: Limits, lesson: Lesson, **kwargs: object
    ) -> None:
        super().__init__(limits, lesson, **kwargs)
        self.path = Path(data_dir) / SQLITE_FILE
        self._idle: queue.SimpleQueue = queue.SimpleQueue()  # (connection, pid, inode)
        self._give(*self._take())

    def _take(self) -> tuple[sqlite3.Connection, int]:
        """An idle connection of this process to the file as it is now (and its inode), or a
        new one. Streamlit runs each script run in a thread of its own: a connection per thread
        was a new one, with its pragmas, on every run of every student's page."""
        while True:
            try:
                con, pid, inode = self._idle.get_nowait()
            except queue.Empty:
                break
            if pid != os.getpid():
                continue  # another process's (forked): not this one's to use or close
            try:
                if os.stat(self.path).st_ino == inode:
                    return con, inode
            except OSError:
                pass  # the file is gone: open (and so make) a new one
            con.close()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            con.execute("PRAGMA journal_mode = WAL")
            con.execute("PRAGMA synchronous = FULL")
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                con.executescript(SCHEMA + f"PRAGMA user_version = {SCHEMA_VERSION};")
            elif version != SCHEMA_VERSION:
                raise sqlite3.DatabaseError(f"schema version {version} in {self.path}")
            return con, os.stat(self.path).st_ino
        except (OSError, sqlite3.Error) as err:
            raise self.down(err) from err

    def _give(self, con: sqlite3.Connection, inode: int) -> None:
        self._idle.put((con, os.getpid(), inode))

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A connection for one read or one write, back to the idle ones afterwards (closed
        where SQLite failed)."""
        con, inode = self._take()
        try:
            yield con
        except sqlite3.Error:
            con.close()
            raise
        except BaseException:
            self._give(con, inode)
            raise
        self._give(con, inode)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        try:
            with self._connection() as con:
                con.execute("BEGIN IMMEDIATE")
                try:
                    yield con
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
        except sqlite3.Error as err:
            raise self.down(err) from err
        self.up()

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            with self._connection() as con:
                rows = con.execute(sql, args).fetchall()
        except sqlite3.Error as err:
            raise self.down(err) from err
        self.up()
        return rows

    def _live(self, con: sqlite3.Connection, code: str) -> tuple:
        row = con.execute("SELECT created, step FROM classes WHERE code = ?", (code,)).fetchone()
        if row is None or self.expired(row[0]):
            ended = con.execute("SELECT 1 FROM ended WHERE code = ?", (code,)).fetchone()
            raise ClassError("ended" if ended else "unknown")
        return row

    def _salt(self, con: sqlite3.Connection) -> str:
        con.execute("INSERT OR IGNORE INTO meta VALUES ('salt', ?)", (secrets.token_hex(16),))
        return con.execute("SELECT value FROM meta WHERE name = 'salt'").fetchone()[0]

    def _hit(self, con, kind: str, client: str, window: int) -> int:
        """Count one more ``kind`` for ``client`` in ``window``; the count so far."""
        who = self.client_id(client, self._salt(con))
        con.execute(
            "INSERT INTO hits VALUES (?, ?, ?, 1) ON CONFLICT DO UPDATE SET n = n + 1",
            (kind, who, window),
        )
        sql = "SELECT n FROM hits WHERE kind = ? AND client = ? AND window = ?"
        return con.execute(sql, (kind, who, window)).fetchone()[0]

    def create(self, client: str, key: str | None = None) -> tuple[str, str]:
        now, key = self.clock(), key or new_key()
        with self._write() as con:
            old = now - self.limits.lifetime_s
            for table in CLASS_TABLES:
                con.execute(
                    f"DELETE FROM {table} WHERE code IN "
                    "(SELECT code FROM classes WHERE created <= ?)",
                    (old,),
                )
            con.execute("DELETE FROM ended WHERE at <= ?", (old,))
            con.execute("DELETE FROM hits WHERE kind NOT LIKE 'seat:%' AND window < ?",
                        (self.window(CREATE_WINDOW_S),))  # fmt: skip
            con.execute("DELETE FROM hits WHERE kind LIKE 'seat:%' AND kind NOT IN "
                        "(SELECT 'seat:' || code FROM classes)")  # fmt: skip
            made = con.execute("SELECT code FROM classes WHERE key = ?", (key_hash(key),))
            if made := made.fetchone():
                return made[0], key
            (live,) = con.execute("SELECT COUNT(*) FROM classes").fetchone()
            if live >= self.limits.classes:
                raise ClassError("classes_full")
            hits = self._hit(con, "create", client, self.window(CREATE_WINDOW_S))
            if hits > self.limits.client_classes:
                raise ClassError("client_classes")
            for _ in range(CODE_TRIES):
                code = new_code()
                inserted = con.execute(
                    "INSERT OR IGNORE INTO classes VALUES (?, ?, ?, 1)", (code, key_hash(key), now)
                )
                if inserted.rowcount:
                    return code, key
        raise ClassError("down", "no free code")

    def guess(self, client: str) -> None:
        with self._write() as con:
            hits = self._hit(con, "guess", client, self.window(GUESS_WINDOW_S))
        if hits > self.limits.client_guesses:
            raise ClassError("client_guesses")

    def guessed_too_often(self, client: str) -> bool:
        salt = self._read("SELECT value FROM meta WHERE name = 'salt'")
        found = salt and self._read(
            "SELECT n FROM hits WHERE kind = 'guess' AND client = ? AND window = ?",
            (self.client_id(client, salt[0][0]), self.window(GUESS_WINDOW_S)),
        )
        return bool(found) and found[0][0] >= self.limits.client_guesses

    def state(self, code: str) -> ClassState:
        code = self.check_code(code)
        rows = self._read("SELECT created, step FROM classes WHERE code = ?", (code,))
        if not rows or self.expired(rows[0][0]):
            ended = self._read("SELECT 1 FROM ended WHERE code = ?", (code,))
            raise ClassError("ended" if ended else "unknown")
        phases = dict(self._read("SELECT step, phase FROM phases WHERE code = ?", (code,)))
        ((students,),) = self._read("SELECT COUNT(*) FROM seats WHERE code = ?", (code,))
        created, step = rows[0]
        return ClassState(code, step, phases, students, created)

    def key_hash(self, code: str) -> str:
        rows = self._read("SELECT key, created FROM classes WHERE code = ?", (code,))
        if not rows or self.expired(rows[0][1]):
            raise ClassError("unknown")
        return rows[0][0]

    def set_step(self, code: str, key: str, step: int) -> None:
        code, step = self.teacher(code, key), self.check_step(step)
        with self._write() as con:
            self._live(con, code)
            con.execute("UPDATE classes SET step = ? WHERE code = ?", (step, code))

    def set_phase(self, code: str, key: str, step: int, phase: str) -> None:
        code, step = self.teacher(code, key), self.check_step(step)
        with self._write() as con:
            self._live(con, code)
            found = con.execute(
                "SELECT step, phase FROM phases WHERE code = ? AND step = ?", (code, step)
            ).fetchall()
            phase = self.next_phase(ClassState(code, step, dict(found)), step, phase)
            con.execute("INSERT OR REPLACE INTO phases VALUES (?, ?, ?)", (code, step, phase))
            if phase == "vote2":
                con.execute(
                    "INSERT OR IGNORE INTO answers SELECT code, seat, step, 2, option "
                    "FROM answers WHERE code = ? AND step = ? AND round = 1",
                    (code, step),
                )

    def end(self, code: str, key: str) -> None:
        code = self.teacher(code, key)
        with self._write() as con:
            for table in CLASS_TABLES:
                con.execute(f"DELETE FROM {table} WHERE code = ?", (code,))
            con.execute("DELETE FROM hits WHERE kind = ?", (f"seat:{code}",))
            con.execute("INSERT OR REPLACE INTO ended VALUES (?, ?)", (code, self.clock()))

    def join(self, code: str, seat: str, client: str) -> int:
        code, seat = self.check_code(code), self.check_seat(seat)
        sql = "SELECT number FROM seats WHERE code = ? AND seat = ?"
        if known := self._read(sql, (code, seat)):  # a seat taken before: no write (no fsync)
            self.key_hash(code)  # (and its class still runs: one read)
            return known[0][0]
        with self._write() as con:
            self._live(con, code)
            known = con.execute(
                "SELECT number FROM seats WHERE code = ? AND seat = ?", (code, seat)
            ).fetchone()
            if known:
                return known[0]
            (count,) = con.execute("SELECT COUNT(*) FROM seats WHERE code = ?", (code,)).fetchone()
            if count >= self.limits.students:
                raise ClassError("students_full")
            if self._hit(con, f"seat:{code}", client, 0) > self.limits.client_seats:
                raise ClassError("client_seats")
            (number,) = con.execute(
                "SELECT COALESCE(MAX(number), 0) + 1 FROM seats WHERE code = ?", (code,)
            ).fetchone()
            con.execute("INSERT INTO seats VALUES (?, ?, ?)", (code, seat, number))
            return number

    def answer(self, code: str, seat: str, step: int, option: str) -> int:
        code = self.check_code(code)
        self.check_answer(seat, step, option)
        with self._write() as con:
            self._live(con, code)
            if not con.execute(
                "SELECT 1 FROM seats WHERE code = ? AND seat = ?", (code, seat)
            ).fetchone():
                raise ClassError("bad_student")
            found = con.execute(
                "SELECT phase FROM phases WHERE code = ? AND step = ?", (code, step)
            ).fetchone()
            round = ROUND_OF.get(found[0] if found else "vote")
            if round is None:
                raise ClassError("closed")
            con.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)",
                (code, seat, step, round, option),
            )
            return round

    def has_seat(self, code: str, seat: str) -> bool:
        sql = "SELECT 1 FROM seats WHERE code = ? AND seat = ?"
        return bool(self._read(sql, (self.check_code(code), seat)))

    def answers(self, code: str, seat: str) -> dict[tuple[int, int], str]:
        code = self.check_code(code)
        rows = self._read(
            "SELECT step, round, option FROM answers WHERE code = ? AND seat = ?", (code, seat)
        )
        return {(step, round): option for step, round, option in rows}

    def rounds(self, code: str, step: int) -> dict[int, tuple[str | None, str | None]]:
        code, step = self.check_code(code), self.check_step(step)
        self.state(code)
        rows = self._read(
            "SELECT s.number, a.round, a.option FROM answers a JOIN seats s "
            "ON s.code = a.code AND s.seat = a.seat WHERE a.code = ? AND a.step = ?",
            (code, step),
        )
        found: dict[int, list[str | None]] = {}
        for number, round, option in rows:
            found.setdefault(number, [None, None])[round - 1] = option
        return {number: (pair[0], pair[1]) for number, pair in sorted(found.items())}
