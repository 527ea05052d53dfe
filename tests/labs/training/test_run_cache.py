"""labs.training.run_cache: finished runs kept on disk, and the line of visitors who train."""

from __future__ import annotations

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
    release, inside = threading.Event(), threading.Event()

    def first() -> None:
        with line.turn("a", lambda ahead: None):
            inside.set()
            release.wait(5)

    def leaves(ahead: int) -> None:
        raise RuntimeError("the page stopped")

    holder = threading.Thread(target=first)
    holder.start()
    inside.wait(5)
    with pytest.raises(RuntimeError):
        with line.turn("b", leaves):
            pass
    # b's place still counts until the line passes it: one waiting already, so c is refused.
    with line.turn("c", lambda ahead: None) as turn:
        assert turn is None
    release.set()
    holder.join()
    with line.turn("d", lambda ahead: None) as turn:  # the line moved past b's ticket
        assert turn


def test_a_visitor_with_the_same_settings_sees_what_the_training_visitor_drew() -> None:
    line = Line()
    with line.turn("a", lambda ahead: None) as training:
        watched = line.same("a")
        assert watched is training and watched.shown is None and not watched.done.is_set()
        training.shown = ("curves", "progress")  # what the training visitor's page last drew
        assert watched.shown == ("curves", "progress")
    assert watched.done.is_set() and line.same("a") is None
