"""labs.training.run_cache: finished runs kept on disk, and the line of visitors who train."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from labs.training import run_cache
from labs.training.run_cache import Line


def test_a_finished_run_is_kept_under_its_settings_and_the_oldest_go(monkeypatch, tmp_path):
    monkeypatch.setenv(run_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(run_cache, "KEEP", 2)
    keys = [run_cache.run_key({"seed": s, "width": 16}) for s in range(3)]
    assert len(set(keys)) == 3 and run_cache.run_key({"width": 16, "seed": 0}) == keys[0]
    for i, key in enumerate(keys):
        assert run_cache.load(key) is None
        run_cache.store(key, [{"norm": "rms", "seed": i}])
        time.sleep(0.01)  # distinct modification times
    assert run_cache.load(keys[0]) is None  # the oldest went
    assert run_cache.load(keys[2]) == [{"norm": "rms", "seed": 2}]
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".json"]


@pytest.fixture(autouse=True)
def line_folder(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(run_cache.CACHE_ENV, str(tmp_path))


def test_the_line_trains_one_at_a_time_first_come_first_served() -> None:
    line, order, places = Line(limit=8), [], {}

    def visitor(name: str, key: str) -> None:
        with line.turn(key, lambda ahead: places.setdefault(name, ahead)) as turn:
            assert turn
            order.append(name)
            time.sleep(0.2)

    threads = []
    for name in "abc":
        threads.append(threading.Thread(target=visitor, args=(name, name)))
        threads[-1].start()
        time.sleep(0.05)  # a, then b, then c join the line
    while line.same("a") is None and not order:
        time.sleep(0.01)
    for thread in threads:
        thread.join()
    assert order == ["a", "b", "c"]
    assert places.get("c", 0) >= 1  # c was told someone was ahead


def test_a_full_line_refuses_and_a_visitor_who_leaves_gives_up_the_place() -> None:
    line = Line(limit=1)
    release, inside, stop_b = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with line.turn("a", lambda ahead: None):
            inside.set()
            release.wait(5)

    def b_waits(ahead: int) -> None:
        if stop_b.is_set():
            raise RuntimeError("the page stopped")

    def second() -> None:
        with pytest.raises(RuntimeError):
            with line.turn("b", b_waits):
                pass

    holder, waiter = threading.Thread(target=first), threading.Thread(target=second)
    holder.start()
    inside.wait(5)
    waiter.start()
    while len(line.tickets()) < 2:
        time.sleep(0.01)
    with line.turn("c", lambda ahead: None) as turn:  # one waits already: c is refused
        assert turn is None
    stop_b.set()  # b's page stops while it waits: its place goes at once
    waiter.join(5)
    assert len(line.tickets()) == 1
    turns = []

    def fourth() -> None:
        with line.turn("d", lambda ahead: None) as turn:
            turns.append(turn)

    later = threading.Thread(target=fourth)
    later.start()  # b's place is free: d waits in it
    while len(line.tickets()) < 2:
        time.sleep(0.01)
    release.set()
    holder.join(5)
    later.join(5)
    assert turns and turns[0] is not None and not line.tickets()


def test_a_visitor_with_the_same_settings_sees_what_the_training_visitor_drew() -> None:
    line = Line()
    with line.turn("a", lambda ahead: None) as training:
        watched = line.same("a")
        assert watched is not None and watched.shown is None and not watched.wait(0.01)
        training.show({"records": [], "progress": {"fraction": 0.5}})  # what its page drew
        assert watched.shown == {"records": [], "progress": {"fraction": 0.5}}
    assert watched.wait(0.01) and line.same("a") is None and not line.tickets()


# Another worker of the host: it takes the line for "theirs", shows what its page drew, then
# trains until its stdin closes (or it is killed).
WORKER = textwrap.dedent("""
    import sys
    from labs.training.run_cache import Line
    with Line().turn("theirs", lambda ahead: None) as training:
        training.show({"records": [], "progress": {"fraction": 0.25}})
        print("training", flush=True)
        sys.stdin.read()
""")


def other_worker() -> subprocess.Popen:
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout.readline() == "training\n"
    return worker


def test_the_line_and_the_run_training_now_are_shared_by_every_worker_of_a_host() -> None:
    worker, line, places = other_worker(), Line(), []
    watched = line.same("theirs")  # a visitor here with the same settings watches that run
    assert watched is not None and watched.shown == {"records": [], "progress": {"fraction": 0.25}}
    assert not watched.wait(0.3)
    done = threading.Event()

    def mine() -> None:  # other settings: this visitor waits for the other worker's run
        with line.turn("mine", places.append) as turn:
            assert turn
            done.set()

    waiting = threading.Thread(target=mine)
    waiting.start()
    time.sleep(1.5)
    assert places and places[0] == 1 and not done.is_set()
    worker.communicate("")  # the other run ends
    waiting.join(5)
    assert done.is_set() and watched.wait(0.01) and not line.tickets()


def test_a_worker_that_dies_training_leaves_the_line_within_its_stale_time(monkeypatch) -> None:
    monkeypatch.setattr(run_cache, "STALE_S", 2.0)
    worker = other_worker()
    worker.kill()  # its files stay behind, no longer refreshed
    worker.wait()
    line, started = Line(), time.monotonic()
    assert line.same("theirs") is not None
    with line.turn("mine", lambda ahead: None) as turn:
        assert turn and 1.0 < time.monotonic() - started < 2.0 + 2 * run_cache.POLL_S
    assert line.same("theirs") is None and not line.tickets()
