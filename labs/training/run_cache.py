"""A class pressing Train: finished live runs kept on disk (their records, keyed by every
setting they depend on), and a first-come line for the rest, shared by every worker of a host
through the same folder (docs/training.md, Live runs).

The line is a folder of tickets named in the order they were taken; the oldest live ticket
trains. A run training now is a file beside the kept runs (``<key>.live``) holding what its
page last drew, so a visitor on any worker watches it. Both are refreshed every ``BEAT_S``
seconds while their visitor is there: a file older than ``STALE_S`` was left by a worker that
died, and the line moves past it."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

CACHE_ENV = "NORMLAB_RUN_CACHE"
KEEP = 64  # finished runs kept on disk: a run's records are about 100 kB
LINE_MAX = 8  # visitors waiting for a run with other settings; one more is told it is full
BEAT_S = 1.0  # how often a waiting or training visitor refreshes its files
STALE_S = 10.0  # a file not refreshed this long was left by a worker that died
POLL_S = 0.25  # how often a waiting visitor looks at the line


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
    """Keep a finished run; drop the oldest beyond ``KEEP``. A disk that refuses is not the
    visitor's problem: not kept."""
    with suppress(OSError):
        folder().mkdir(parents=True, exist_ok=True)
        _write(folder() / f"{key}.json", json.dumps(records))
        kept = sorted(folder().glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in kept[:-KEEP]:
            old.unlink(missing_ok=True)


def _write(path: Path, text: str) -> None:
    """Written whole, then renamed: a reader never sees half a file."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    partial.write_text(text)
    os.replace(partial, path)


def _fresh(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime < STALE_S
    except OSError:
        return False


class Training:
    """The run training now with one key, as its file: ``show`` leaves there what the training
    visitor's page drew (plain data), for the visitors who watch it from any worker."""

    def __init__(self, key: str) -> None:
        self.path = folder() / f"{key}.live"

    def show(self, shown: Any) -> None:
        with suppress(OSError):  # the watchers see less; the run goes on
            _write(self.path, json.dumps(shown))


_READ: tuple = (None, None, None)  # the last drawing read in this process: path, inode, content


class Watched:
    """A run another visitor trains now: ``shown`` is what that page last drew (None before its
    first drawing), ``wait`` whether it ended."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def shown(self) -> Any:
        """Read once per process for each drawing (a drawing is a new file: a new inode)."""
        global _READ
        try:
            ino = self.path.stat().st_ino
            if _READ[:2] != (self.path, ino):
                _READ = (self.path, ino, json.loads(self.path.read_text()))
        except (OSError, ValueError):
            return None
        return _READ[2]

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds``; whether the run ended (or its worker died)."""
        deadline = time.monotonic() + seconds
        while _fresh(self.path):
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
        return True


class Line:
    """One training at a time on this host; visitors wait their turn in the order they came."""

    def __init__(self, limit: int = LINE_MAX) -> None:
        self.limit = limit

    @staticmethod
    def tickets() -> list[Path]:
        """The live tickets in order (stale ones, left by a worker that died, are removed)."""
        try:
            held = sorted((folder() / "line").glob("*.ticket"))
        except OSError:
            return []
        live = [t for t in held if _fresh(t)]
        for gone in set(held) - set(live):
            gone.unlink(missing_ok=True)
        return live

    def place(self, ticket: Path) -> int:
        """How many tickets are ahead of this one (one lost with its folder is retaken in place)."""
        live = self.tickets()
        if ticket not in live:
            with suppress(OSError):
                ticket.parent.mkdir(parents=True, exist_ok=True)
                ticket.touch()
            live = sorted({*live, ticket})
        return live.index(ticket)

    def same(self, key: str) -> Watched | None:
        """The run with these settings training now, on any worker."""
        path = folder() / f"{key}.live"
        return Watched(path) if _fresh(path) else None

    def _take(self) -> Path | None:
        """A ticket at the end of the line, or None if ``limit`` visitors already wait for the
        one training (taken first, then counted: two visitors taking at once both count)."""
        ticket = folder() / "line" / f"{time.time_ns():020d}-{uuid.uuid4().hex}.ticket"
        try:
            ticket.parent.mkdir(parents=True, exist_ok=True)
            ticket.touch()
        except OSError:
            return None
        if self.place(ticket) > self.limit:
            ticket.unlink(missing_ok=True)
            return None
        return ticket

    @contextmanager
    def turn(self, key: str, on_wait: Callable[[int], None]) -> Iterator[Training | None]:
        """Wait for this visitor's turn (``on_wait(ahead)`` each second in the line), then yield the
        run to train; None at once when ``limit`` visitors already wait. A visitor who leaves the
        line (the page stopped while waiting: ``on_wait`` raises) gives up the place."""
        ticket = self._take()
        if ticket is None:
            yield None
            return
        training, beating = Training(key), threading.Event()

        def beat() -> None:  # the ticket, and the run once it trains, stay fresh
            while not beating.wait(BEAT_S):
                for path in (ticket, training.path):
                    with suppress(OSError):
                        os.utime(path)

        threading.Thread(target=beat, daemon=True).start()
        try:
            told = (None, 0.0)
            while (ahead := self.place(ticket)) > 0:
                if ahead != told[0] or time.monotonic() - told[1] >= 1.0:
                    on_wait(ahead)
                    told = (ahead, time.monotonic())
                time.sleep(POLL_S)
            training.show(None)
            yield training
        finally:
            beating.set()
            training.path.unlink(missing_ok=True)
            ticket.unlink(missing_ok=True)
