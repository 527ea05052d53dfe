"""Opening the class store this host is set up for (the backends import ``store`` for the
interface; this module chooses between them, so neither imports the other)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from serve.classroom.redis_store import RedisStore
from serve.classroom.sqlite_store import SqliteStore
from serve.classroom.store import (
    DATA_ENV,
    DEFAULT_DATA_DIR,
    STORE_ENV,
    ClassError,
    ClassStore,
    Lesson,
    Limits,
)


def open_store(lesson: Lesson, env: Mapping[str, str] = os.environ) -> ClassStore:
    """The store this host is set up for, of classes that follow ``lesson`` (each step's option
    ids, hashable: one store per lesson): Redis where ``NORMLAB_CLASS_STORE`` names one, else
    SQLite under ``NORMLAB_DATA_DIR``. One per process and setting; raises ``down`` if it cannot
    be opened."""
    url = env.get(STORE_ENV, "").strip()
    limits = Limits.from_env(env)
    if url.startswith(("redis://", "rediss://", "unix://")):
        return _redis(url, limits, lesson)
    if url and url != "sqlite":
        raise ClassError("down", f"{STORE_ENV} names no store this app knows")
    data_dir = Path(env.get(DATA_ENV, "").strip() or DEFAULT_DATA_DIR).resolve()
    return _sqlite(str(data_dir), limits, lesson)


@lru_cache(maxsize=8)
def _sqlite(data_dir: str, limits: Limits, lesson: Lesson) -> ClassStore:
    return SqliteStore(data_dir, limits, lesson)


@lru_cache(maxsize=8)
def _redis(url: str, limits: Limits, lesson: Lesson) -> ClassStore:
    return RedisStore(url, limits, lesson)
