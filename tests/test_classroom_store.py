"""The class store, both backends: answers counted, replaced and never lost (60 writers in two
processes, a writer killed mid-class), every argument checked, bounds and expiry, a store down."""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labs.lesson.options import LESSON
from serve.classroom.backends import open_store
from serve.classroom.codes import ALPHABET, CODE_LENGTH, KEY_BYTES, new_code, new_key, normal_code
from serve.classroom.redis_store import RedisStore
from serve.classroom.sqlite_store import SQLITE_FILE, SqliteStore
from serve.classroom.store import (
    SCHEMA_VERSION,
    ClassError,
    ClassStore,
    Limits,
)
from tests.classroom_util import final_option, redis_server, seat, start_writer

BACKENDS = ("sqlite", "redis")
DEFAULT = Limits()


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path) -> Iterator[tuple[str, Callable[..., ClassStore]]]:
    """(where the store lives, a factory of stores there with given limits)."""
    if request.param == "sqlite":
        yield str(tmp_path), lambda limits=DEFAULT: SqliteStore(tmp_path, limits, LESSON)
        return
    url = request.getfixturevalue("redis_url")
    store = RedisStore(url, Limits(), LESSON)
    store.client.flushdb()
    yield url, lambda limits=DEFAULT: RedisStore(url, limits, LESSON)


def error(call: Callable[[], object]) -> str:
    with pytest.raises(ClassError) as caught:
        call()
    return caught.value.code


def test_codes_have_no_look_alikes_and_keys_carry_128_bits() -> None:
    assert not set("0O1IL") & set(ALPHABET)
    codes = {new_code() for _ in range(200)}
    assert len(codes) == 200
    assert all(len(c) >= 6 and set(c) <= set(ALPHABET) and normal_code(c) == c for c in codes)
    assert normal_code(f"  {next(iter(codes)).lower()} ") == next(iter(codes))
    assert normal_code("ABC0EF") is None and normal_code("ABCDEFG") is None
    assert KEY_BYTES * 8 >= 128 and len({new_key() for _ in range(50)}) == 50
    assert CODE_LENGTH >= 6


def S(name: str) -> str:
    return seat(name)


def joined(store: ClassStore, code: str, *names: str, client: str = "10.0.0.1") -> None:
    for name in names:
        store.join(code, S(name), client)


def test_answers_are_counted_and_a_second_answer_replaces_the_first(backend) -> None:
    _, make = backend
    store = make()
    code, _ = store.create("t")
    assert store.join(code, S("s1"), "a") == 1 and store.join(code, S("s1"), "b") == 1
    joined(store, code, "s2", "s3")
    store.answer(code, S("s1"), 1, "zero")
    store.answer(code, S("s2"), 1, "ratio")
    assert store.answer(code, S("s1"), 1, "ratio") == 1  # changed their mind: replaced
    store.answer(code, S("s3"), 2, "both")
    assert store.counts(code, 1) == {"zero": 0, "one": 0, "mean": 0, "ratio": 2}
    assert sum(store.counts(code, 2).values()) == 1
    assert store.answers(code, S("s1")) == {(1, 1): "ratio"}
    state = store.state(code)
    assert (state.step, state.revealed, state.students) == (1, frozenset(), 3)
    # A code is read as typed from a projector: any case, spaces around it.
    assert store.state(f" {code.lower()} ").students == 3
    # A seat must have joined before it answers.
    assert error(lambda: store.answer(code, S("s9"), 1, "zero")) == "bad_student"


def test_peer_instruction_rounds_and_only_the_key_leads(backend) -> None:
    _, make = backend
    store = make()
    code, key = store.create("t")
    other_code, other_key = store.create("t")
    assert store.is_teacher(code, key) and not store.is_teacher(code, other_key)
    for wrong in ("", key[:-1], key + "x", other_key, "x" * 10_000):
        assert error(lambda w=wrong: store.set_step(code, w, 3)) == "not_teacher"
        assert error(lambda w=wrong: store.set_phase(code, w, 1, "revealed")) == "not_teacher"
        assert error(lambda w=wrong: store.end(code, w)) == "not_teacher"
    joined(store, code, "a", "b", "c")
    for name, option in (("a", "zero"), ("b", "ratio"), ("c", "mean")):
        store.answer(code, S(name), 1, option)
    store.set_phase(code, key, 1, "discuss")
    assert error(lambda: store.answer(code, S("a"), 1, "one")) == "closed"
    assert error(lambda: store.set_phase(code, key, 1, "vote")) == "bad_phase"  # no way back
    assert error(lambda: store.set_phase(code, key, 1, "later")) == "bad_phase"
    store.set_phase(code, key, 1, "vote2")  # starts from each seat's first answer
    assert store.counts(code, 1, 2) == store.counts(code, 1, 1)
    assert store.answer(code, S("a"), 1, "ratio") == 2
    assert store.counts(code, 1, 1) == {"zero": 1, "one": 0, "mean": 1, "ratio": 1}
    assert store.counts(code, 1, 2) == {"zero": 0, "one": 0, "mean": 1, "ratio": 2}
    assert store.rounds(code, 1) == {
        1: ("zero", "ratio"),
        2: ("ratio", "ratio"),
        3: ("mean", "mean"),
    }
    store.set_step(code, key, 4)
    store.set_phase(code, key, 1, "revealed")
    assert error(lambda: store.answer(code, S("b"), 1, "zero")) == "closed"
    state = store.state(code)
    assert state.step == 4 and state.revealed == {1} and state.phase(2) == "vote"
    # A step revealed straight from the first vote has one round.
    store.answer(code, S("a"), 2, "var")
    store.set_phase(code, key, 2, "revealed")
    assert store.rounds(code, 2) == {1: ("var", None)}
    assert store.export(code, key) == [
        *((1, 1, o, n) for o, n in store.counts(code, 1, 1).items()),
        *((1, 2, o, n) for o, n in store.counts(code, 1, 2).items()),
        *((2, 1, o, n) for o, n in store.counts(code, 2, 1).items()),
    ]
    assert error(lambda: store.export(code, other_key)) == "not_teacher"
    assert store.state(other_code).step == 1  # the other class is untouched


@pytest.mark.parametrize(
    ("step", "option", "code"),
    [
        (0, "zero", "bad_step"),
        (len(LESSON) + 1, "zero", "bad_step"),
        ("1", "zero", "bad_step"),
        (True, "zero", "bad_step"),
        (None, "zero", "bad_step"),
        (1.0, "zero", "bad_step"),
        (1, "both", "bad_option"),  # an option of another step
        (1, "ZERO", "bad_option"),
        (1, "", "bad_option"),
        (1, None, "bad_option"),
    ],
)
def test_every_answer_is_checked_against_the_lesson(backend, step, option, code) -> None:
    _, make = backend
    store = make()
    live, _ = store.create("t")
    joined(store, live, "s1")
    assert error(lambda: store.answer(live, S("s1"), step, option)) == code
    assert store.answers(live, S("s1")) == {}  # nothing was written


def test_unknown_codes_and_seat_ids_are_refused(backend) -> None:
    _, make = backend
    store = make()
    live, _ = store.create("t")
    for code in ("", "new", "ABCDE", "ABCDEFG", "A1B2C3", "'; DROP TABLE classes; --", None, 7):
        assert error(lambda c=code: store.state(c)) == "unknown"
        assert error(lambda c=code: store.answer(c, S("s1"), 1, "zero")) == "unknown"
    missing = next(c for c in iter(new_code, None) if c != live)
    assert error(lambda: store.state(missing)) == "unknown"
    assert error(lambda: store.join(missing, S("s1"), "x")) == "unknown"
    for bad in ("", "x" * 33, "s1", "ab" * 15 + "-!", None):
        assert error(lambda b=bad: store.join(live, b, "x")) == "bad_student"


def test_students_and_live_classes_are_bounded(backend) -> None:
    _, make = backend
    store = make(Limits(students=3, classes=2))
    code, key = store.create("t")
    joined(store, code, "a", "b", "c")
    assert error(lambda: store.join(code, S("d"), "y")) == "students_full"
    assert store.join(code, S("a"), "y") == 1  # a student already in keeps their seat
    store.create("t")
    assert error(lambda: store.create("u")) == "classes_full"
    assert store.has_seat(code, S("a")) and not store.has_seat(code, S("z"))
    store.end(code, key)  # an ended class frees its place, and says so
    assert error(lambda: store.state(code)) == "ended"
    assert error(lambda: store.join(code, S("a"), "y")) == "ended"
    store.create("u")


def test_limits_per_client(backend) -> None:
    _, make = backend
    store = make(Limits(client_classes=3, client_seats=5, client_guesses=4))
    codes = [store.create("10.0.0.1")[0] for _ in range(3)]
    assert error(lambda: store.create("10.0.0.1")) == "client_classes"
    store.create("10.0.0.2")  # another address still gets a class
    code = codes[0]
    # 520 throwaway seats from one address: five are seated, the rest refused.
    refused = 0
    for n in range(520):
        try:
            store.join(code, S(f"flood-{n}"), "10.9.9.9")
        except ClassError as err:
            assert err.code == "client_seats"
            refused += 1
    assert refused == 515
    joined(store, code, *(f"real-{n}" for n in range(5)), client="10.0.0.7")
    assert error(lambda: store.join(code, S("real-5"), "10.0.0.7")) == "client_seats"
    assert store.state(code).students == 10
    for n in range(20):
        store.join(code, S(f"home-{n}"), f"192.0.2.{n}")
    assert store.state(code).students == 30
    # Unknown codes: counted per client; past the limit, refused.
    assert not store.guessed_too_often("10.5.5.5")
    for _ in range(4):
        store.guess("10.5.5.5")
    assert store.guessed_too_often("10.5.5.5") and not store.guessed_too_often("10.5.5.6")
    assert error(lambda: store.guess("10.5.5.5")) == "client_guesses"


def test_a_class_made_again_with_its_key_is_the_same_class(backend) -> None:
    """A retry of a creation whose answer was lost: the class made, not a second one (nor a
    second count against the client's limit); once ended, the key starts a new one."""
    _, make = backend
    store = make(Limits(client_classes=2))
    key = new_key()
    code, _ = store.create("10.0.0.1", key)
    assert store.create("10.0.0.1", key) == (code, key)
    store.create("10.0.0.1")  # the second of two, so the retry above was not counted
    store.end(code, key)
    fresh, _ = store.create("10.0.0.2", key)
    assert fresh != code and store.state(fresh).students == 0


def test_no_address_is_stored(backend) -> None:
    where, make = backend
    store = make()
    code, key = store.create("203.0.113.9")
    store.join(code, S("a"), "203.0.113.9")
    store.guess("203.0.113.9")
    if isinstance(store, RedisStore):
        dump = " ".join(f"{k} {store.client.dump(k)!r}" for k in store.client.scan_iter("*"))
    else:
        dump = (store.path.parent / SQLITE_FILE).read_bytes().decode("latin-1")
        dump += "".join(p.read_bytes().decode("latin-1") for p in store.path.parent.glob("*-wal"))
    assert "203.0.113.9" not in dump and key not in dump and S("a") in dump


def test_a_class_ends_after_its_lifetime_and_frees_its_place(backend) -> None:
    _, make = backend
    store = make(Limits(lifetime_s=1.0, classes=1))
    code, key = store.create("t")
    joined(store, code, "a")
    store.answer(code, S("a"), 1, "zero")
    assert error(lambda: store.create("t")) == "classes_full"
    time.sleep(1.1)
    assert error(lambda: store.state(code)) == "unknown"
    assert error(lambda: store.answer(code, S("a"), 1, "one")) == "unknown"
    assert error(lambda: store.set_phase(code, key, 1, "revealed")) == "unknown"
    fresh, _ = store.create("t")  # the ended class no longer counts
    assert store.state(fresh).students == 0


def test_sixty_writers_in_two_processes_lose_no_answer(backend) -> None:
    where, make = backend
    store = make()
    code, _ = store.create("t")
    steps, per_process = 4, 30
    writers = [start_writer(where, code, f"p{i}", per_process, steps) for i in range(2)]
    acks = [line for w in writers for line in w.stdout]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    assert len(acks) == 2 * per_process * steps * 2
    assert store.state(code).students == 60
    for step in range(1, steps + 1):
        options = LESSON[step - 1]
        expected = dict.fromkeys(options, 0)
        for number in range(per_process):
            expected[final_option(options, number, step)] += 2
        assert store.counts(code, step) == expected, step


def test_a_killed_writer_keeps_every_acknowledged_answer(backend) -> None:
    where, make = backend
    store = make()
    code, _ = store.create("t")
    writer = start_writer(where, code, "k", 20, len(LESSON))
    acked: dict[tuple[str, int], str] = {}
    for line in writer.stdout:
        _, name, step, option = line.split()
        acked[(name, int(step))] = option
        if len(acked) >= 60:
            os.kill(writer.pid, signal.SIGKILL)  # mid-class: its threads are still writing
            break
    writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL
    assert len(acked) < 20 * len(LESSON)  # killed mid-writing, not after the last answer
    reopened = make()  # another process's view: nothing was held in the dead one
    for (name, step), option in acked.items():
        final = final_option(LESSON[step - 1], int(name.split("-")[1]), step)
        # The last answer acknowledged, or the student's next one (sent, not yet acknowledged).
        assert stored_answer(reopened, code, name, step) in (option, final), (name, step)
    assert reopened.state(code).students >= len({name for name, _ in acked})


def stored_answer(store: ClassStore, code: str, student: str, step: int) -> str | None:
    """One student's answer to ``step`` as the store holds it."""
    return store.answers(code, seat(student)).get((step, 1))


def test_a_store_that_is_down_says_so(tmp_path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert error(lambda: SqliteStore(blocked, Limits(), LESSON)) == "down"
    closed = f"redis://127.0.0.1:{_closed_port()}/0"
    store = RedisStore(closed, Limits(), LESSON)
    assert error(lambda: store.create("t")) == "down"
    assert error(lambda: store.state("ABCDEF")) == "down"
    assert error(lambda: open_store(LESSON, {"NORMLAB_CLASS_STORE": "ftp://x"})) == "down"


def _closed_port() -> int:
    from benchmarks.live import free_port

    return free_port()  # nothing listens there


def test_a_file_of_another_schema_version_is_not_misread(tmp_path) -> None:
    con = sqlite3.connect(tmp_path / SQLITE_FILE)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    assert error(lambda: SqliteStore(tmp_path, Limits(), LESSON)) == "down"


def test_the_default_store_is_sqlite_in_wal_mode_under_the_data_dir(tmp_path) -> None:
    store = open_store(LESSON, {"NORMLAB_DATA_DIR": str(tmp_path / "new" / "dir")})
    assert isinstance(store, SqliteStore)
    code, _ = store.create("t")
    path = tmp_path / "new" / "dir" / SQLITE_FILE
    assert path.exists()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # No names or addresses: the tables hold codes, hashes, random ids, steps and option ids.
    columns = {
        table: [row[1] for row in con.execute(f"PRAGMA table_info({table})")]
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    assert columns == {
        "classes": ["code", "key", "created", "step"],
        "phases": ["code", "step", "phase"],
        "seats": ["code", "seat", "number"],
        "answers": ["code", "seat", "step", "round", "option"],
        "hits": ["kind", "client", "window", "n"],
        "meta": ["name", "value"],
        "ended": ["code", "at"],
    }
    assert store.state(code).step == 1


@pytest.mark.parametrize(
    ("env", "limits"),
    [
        ({}, Limits(24 * 3600.0, 500, 200, 10, 150, 20)),
        ({"NORMLAB_CLASS_HOURS": "2", "NORMLAB_CLASS_STUDENTS": "40"}, Limits(7200.0, 40, 200)),
        ({"NORMLAB_CLIENT_SEATS": "400", "NORMLAB_CLIENT_CLASSES": "0"}, Limits(client_seats=400)),
        ({"NORMLAB_CLASSES": "nan", "NORMLAB_CLASS_STUDENTS": "-3"}, Limits()),
        ({"NORMLAB_CLASS_HOURS": "inf", "NORMLAB_CLASSES": "abc"}, Limits()),
    ],
)
def test_bounds_come_from_the_environment(env: dict, limits: Limits) -> None:
    assert Limits.from_env(env) == limits
    assert math.isfinite(Limits.from_env(env).lifetime_s)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    step=st.one_of(st.integers(-5, 20), st.text(max_size=5), st.none()), option=st.text(max_size=12)
)
def test_fuzzed_answers_are_recorded_or_refused_with_a_reason(tmp_path, step, option) -> None:
    store = _fuzz_store(tmp_path)
    code, _ = store.create("t")
    store.join(code, S("s"), "t")
    valid = isinstance(step, int) and 1 <= step <= len(LESSON) and option in LESSON[step - 1]
    try:
        store.answer(code, S("s"), step, option)
    except ClassError as err:
        assert not valid and err.code in ("bad_step", "bad_option")
    else:
        assert valid and store.counts(code, step)[option] == 1


_FUZZ: dict[str, SqliteStore] = {}


def _fuzz_store(tmp_path) -> SqliteStore:
    key = str(tmp_path)
    if key not in _FUZZ:
        _FUZZ[key] = SqliteStore(tmp_path, Limits(classes=10_000, client_classes=10_000), LESSON)
    return _FUZZ[key]


def test_vanished_files_are_made_again_and_each_failure_is_logged_once(tmp_path, caplog) -> None:
    store = SqliteStore(tmp_path, Limits(), LESSON)
    code, _ = store.create("t")
    for path in tmp_path.glob(SQLITE_FILE + "*"):
        path.unlink()  # a cleaned folder, under a running worker
    assert error(lambda: store.state(code)) == "unknown"  # the class is gone, the store is not
    fresh, key = store.create("t")
    store.join(fresh, S("a"), "t")
    assert store.answer(fresh, S("a"), 1, "zero") == 1
    caplog.set_level("WARNING", logger="normlab.classroom")
    down = RedisStore(f"redis://127.0.0.1:{_closed_port()}/0", Limits(), LESSON)
    for _ in range(3):
        assert error(lambda: down.state("ABCDEF")) == "down"
    failures = [r for r in caplog.records if "failed" in r.getMessage()]
    assert len(failures) == 1 and "ConnectionError" in failures[0].getMessage()


def test_sqlite_runs_in_new_threads_share_idle_connections(tmp_path, monkeypatch) -> None:
    """Streamlit runs each script run in a thread of its own: a store call from a new thread
    takes an idle connection rather than opening one (with its pragmas) per run."""
    import threading

    store = open_store(LESSON, {"NORMLAB_DATA_DIR": str(tmp_path)})
    code, _ = store.create("teacher")
    opened: list[object] = []
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: opened.append(a) or connect(*a, **k))
    for _ in range(5):  # five page runs, one after another, each in a new thread
        run = threading.Thread(
            target=lambda: store.join(code, seat("s"), "127.0.0.1") and store.state(code)
        )
        run.start()
        run.join()
    assert opened == [] and store.state(code).students == 1
