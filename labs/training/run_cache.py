"""A class pressing Train: finished live runs kept on disk (their records, keyed by every
setting they depend on), and a first-come line for the rest (docs/training.md, Live runs)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CACHE_ENV = "NORMLAB_RUN_CACHE"
KEEP = 64  # finished runs kept on disk: a run's records are about 100 kB
LINE_MAX = 8  # visitors waiting for a run with other settings; one more is told it is full


def folder() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path(tempfile.gettempdir()) / "normlab-runs")


def run_key(settings: Mapping[str, Any]) -> str:
    """The name of a run with ``settings`` (every setting it depends on, the cap included)."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load(key: str) -> list[dict] | None:
    try:
        return json.loads((folder() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def store(key: str, records: list[dict]) -> None:
    """Keep a finished run (written whole, then renamed: a reader never sees half a file); drop
    the oldest beyond ``KEEP``. A disk that refuses is not the visitor's problem: not kept."""
    try:
        folder().mkdir(parents=True, exist_ok=True)
        partial = folder() / f"{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        partial.write_text(json.dumps(records))
        os.replace(partial, folder() / f"{key}.json")
        kept = sorted(folder().glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in kept[:-KEEP]:
            old.unlink(missing_ok=True)
    except OSError:
        return


class Training:
    """The run training now with one key: set ``done`` when it ends; ``shown`` is what the
    visitor training it last drew (its curves and progress), for the visitors who watch it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.shown: Any = None


class Line:
    """One training at a time in this process; visitors wait their turn in order."""

    def __init__(self, limit: int = LINE_MAX) -> None:
        self.limit = limit
        self._cond = threading.Condition()
        self._next = self._serving = 0  # tickets handed out, and the one training now
        self._gone: set[int] = set()  # tickets whose visitor left the line
        self._running: dict[str, Training] = {}

    def same(self, key: str) -> Training | None:
        """The run with these settings training now."""
        with self._cond:
            return self._running.get(key)

    def _take(self) -> int | None:
        with self._cond:
            if self._next - self._serving > self.limit:
                return None
            self._next += 1
            return self._next - 1

    def _advance(self) -> None:
        """The next ticket's turn (holding the condition), past those whose visitor left."""
        self._serving += 1
        while self._serving in self._gone:
            self._gone.remove(self._serving)
            self._serving += 1
        self._cond.notify_all()

    @contextmanager
    def turn(self, key: str, on_wait: Callable[[int], None]) -> Iterator[Training | None]:
        """Wait for this visitor's turn (``on_wait(ahead)`` each second in the line), then yield
        the run to train; None at once when ``limit`` visitors already wait. A visitor who
        leaves the line (the page stopped while waiting) gives up the place."""
        ticket = self._take()
        if ticket is None:
            yield None
            return
        try:
            with self._cond:
                while ticket != self._serving:
                    self._cond.wait(timeout=1.0)
                    if ticket != self._serving:
                        on_wait(ticket - self._serving)
                training = self._running[key] = Training()
        except BaseException:
            with self._cond:
                self._advance() if ticket == self._serving else self._gone.add(ticket)
            raise
        try:
            yield training
        finally:
            with self._cond:
                del self._running[key]
                training.done.set()
                self._advance()
