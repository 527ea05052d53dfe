"""Helpers for the class tests: Debian's redis-server on a free loopback port (or a clean skip),
and a writer process that answers for many students and prints each acknowledged answer."""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.live import free_port
from tests.serve_util import need_debian

REDIS_SERVER = "/usr/bin/redis-server"
ROOT = Path(__file__).resolve().parent.parent


def need_redis() -> None:
    need_debian(REDIS_SERVER, "redis-server")


@contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway redis-server on 127.0.0.1 (nothing saved to disk); yields its URL."""
    import redis

    need_redis()
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="normlab-redis-")
    proc = subprocess.Popen(
        [
            REDIS_SERVER,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        wait_for_redis(redis.Redis.from_url(url), proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def wait_for_redis(client, proc: subprocess.Popen, timeout_s: float = 20.0) -> None:
    """Until ``client`` reaches the redis-server ``proc`` started (loading its file counts as
    not yet; a refused password is raised at once)."""
    import redis

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.ping()
            return
        except redis.exceptions.AuthenticationError:  # a ConnectionError, but final
            raise
        except (redis.exceptions.ConnectionError, redis.exceptions.BusyLoadingError):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.05)


def store_env(where: str) -> dict[str, str]:
    """The environment that points ``open_store`` at ``where``: a Redis URL or a folder."""
    if where.startswith("redis://"):
        return {"NORMLAB_CLASS_STORE": where}
    return {"NORMLAB_DATA_DIR": where}


def start_writer(where: str, code: str, prefix: str, students: int, steps: int) -> subprocess.Popen:
    """``python -m tests.classroom_util``: ``students`` threads answering ``steps`` steps each
    (every answer twice, the second replacing the first), one ``ack`` line per answer stored."""
    command = [sys.executable, "-m", "tests.classroom_util", where, code, prefix]
    command += [str(students), str(steps)]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, bufsize=1)


def seat(name: str) -> str:
    """A seat token as a page makes one (32 hex digits), named for a test's student."""
    return hashlib.md5(name.encode()).hexdigest()


def final_option(options: tuple[str, ...], student: int, step: int) -> str:
    """The answer a writer's student leaves on a step (its first answer is another option)."""
    return options[(student + step) % len(options)]


def _writer(argv: list[str]) -> None:
    from labs.lesson.options import LESSON
    from serve.classroom.backends import open_store

    parser = argparse.ArgumentParser()
    for name in ("where", "code", "prefix"):
        parser.add_argument(name)
    parser.add_argument("students", type=int)
    parser.add_argument("steps", type=int)
    args = parser.parse_args(argv)
    store = open_store(LESSON, store_env(args.where))
    lock = threading.Lock()

    def student(number: int) -> None:
        name = f"{args.prefix}-{number}"
        store.join(args.code, seat(name), "writer")
        for step in range(1, args.steps + 1):
            options = LESSON[step - 1]
            final = final_option(options, number, step)
            first = options[(options.index(final) + 1) % len(options)]
            for option in (first, final):
                store.answer(args.code, seat(name), step, option)
                with lock:
                    print("ack", name, step, option, flush=True)

    threads = [threading.Thread(target=student, args=(n,)) for n in range(args.students)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    _writer(sys.argv[1:])
