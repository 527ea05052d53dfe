"""Memory that comes back: sessions opened and closed, one after another, against one worker.

``python -m benchmarks.sessions`` sends visitors to one ``streamlit run app.py`` in waves of
``--wave``: each opens the explorer over the websocket (a session of its own, its run, its charts),
moves the offset slider once and closes its tab. It prints the worker's resident memory (VmRSS in
/proc) after every ``--every`` sessions, and again once the server has dropped the closed tabs'
sessions (it keeps them ``server.disconnectedSessionTTL``, 120 s by default, for a page that lost
its connection to resume). Target: the last RSS within 10 % of the first. A run: docs/serving.md."""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from benchmarks import live
from benchmarks.target import rss_bytes
from benchmarks.ws_visitor import WsVisitor
from serve.launcher import wait_for_health

TARGET = 0.10
STEP_TIMEOUT_S, LOAD_TIMEOUT_S = 60.0, 120.0


async def wave(url: str, first: int, size: int) -> list[str]:
    """``size`` visitors at once, each opening, moving the slider once and leaving; their errors."""
    crowd = [WsVisitor(first + i, url, STEP_TIMEOUT_S, LOAD_TIMEOUT_S, 0.0) for i in range(size)]
    await asyncio.gather(*(visitor.run(1) for visitor in crowd))
    return [error for visitor in crowd for error in visitor.errors]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sessions", description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--wave", type=int, default=10)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--ttl", type=int, default=120, help="server.disconnectedSessionTTL, s")
    parser.add_argument("--idle", type=int, default=10, help="s to wait beyond the TTL")
    args = parser.parse_args(argv)
    print(f"Start: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    port = live.free_port()
    env = {"STREAMLIT_SERVER_DISCONNECTED_SESSION_TTL": str(args.ttl)}
    proc = live.start_server(live.streamlit_command(port), port, env=env)
    url = f"http://127.0.0.1:{port}"
    errors: list[str] = []
    base = last = 0.0
    try:
        wait_for_health(url)
        start = time.monotonic()
        print("| sessions | RSS MB | seconds |\n| ---: | ---: | ---: |")
        for first in range(0, args.sessions, args.wave):
            errors += asyncio.run(wave(url, first, args.wave))
            done = first + args.wave
            if done % args.every == 0:
                rss = rss_bytes([proc.pid]) / 2**20
                if done == args.every:
                    base = rss
                print(f"| {done} | {rss:.0f} | {time.monotonic() - start:.0f} |", flush=True)
        # Streamlit drops a closed session at its next cleanup after the TTL: wait it out.
        time.sleep(args.ttl + args.idle)
        asyncio.run(wave(url, args.sessions, 1))  # a visit after the wait
        last = rss_bytes([proc.pid]) / 2**20
        print(f"| {args.sessions + 1}, after {args.ttl + args.idle} s idle | {last:.0f} | |")
    finally:
        live.stop_server(proc)
    print(*(f"error: {e}" for e in errors[:10]), sep="\n")
    ok = not errors and last <= base * (1 + TARGET)
    print(
        f"{'PASS' if ok else 'FAIL'}: RSS after {args.sessions} sessions {last:.0f} MB, "
        f"{last / base - 1:+.1%} of {base:.0f} MB after {args.every} (target <= {TARGET:+.0%}); "
        f"{len(errors)} errors"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
