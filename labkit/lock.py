"""One measurement at a time per server process: the speed lab's timings and the training lab's
live runs each take a lock without waiting, and a visitor who finds it taken is told "busy"."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Only one measurement may run per server process: two visitors timing at once would each
# measure the other's load, and queued runs would stack up CPU work nobody waits for.
MEASURE_LOCK = threading.Lock()


@contextmanager
def exclusive(lock: threading.Lock = MEASURE_LOCK) -> Iterator[bool]:
    """Try to take the measurement lock without waiting; yield whether it was taken.

    ``with exclusive() as ok:`` runs the body either way; when ``ok`` is False another
    measurement is running and the caller should say "busy" instead of measuring."""
    acquired = lock.acquire(blocking=False)
    try:
        yield acquired
    finally:
        if acquired:
            lock.release()
