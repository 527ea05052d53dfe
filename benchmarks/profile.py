"""Profile explorer interactions at d = 4096 with py-spy: the offset slider moved again and again
through Streamlit's AppTest, each page script run as ``benchmarks.app`` times it (compiled once).

Run ``python -m benchmarks.profile [--seconds S] [--rate HZ] [--format flamegraph|raw|speedscope]
[-o FILE]`` (py-spy from requirements-dev.txt; it attaches to this process, so it may need root or
ptrace permission). The default writes docs/explorer-interaction.svg. py-spy samples every
thread: the script's own time is the tower under ``ScriptRunner._run_script_thread``, AppTest's
reading of the result the rest."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
D = 4096


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__)
    parser.add_argument("--seconds", type=int, default=14, help="how long py-spy samples")
    parser.add_argument("--rate", type=int, default=200, help="samples per second")
    parser.add_argument(
        "--format", default="flamegraph", choices=["flamegraph", "raw", "speedscope"]
    )
    parser.add_argument("-o", "--output", default="docs/explorer-interaction.svg")
    args = parser.parse_args(argv)

    from streamlit.testing.v1 import AppTest

    from benchmarks import app as bench
    from benchmarks.st_private import shared_script_cache

    with shared_script_cache():
        at = AppTest.from_string(
            bench._TIMED.format(path=str(ROOT / "app.py")), default_timeout=120
        )
        at.query_params["d"] = str(D)
        at.run()
        for offset in (0.1, 0.2, 0.3):  # warm: the fused kernels, caches, imports
            at.select_slider(key="offset").set_value(offset)
            at.run()
        bench.SCRIPT_TIMES.clear()
        spy = subprocess.Popen(
            ["py-spy", "record", "--pid", str(os.getpid()), "--rate", str(args.rate),
             "--duration", str(args.seconds), "--format", args.format, "-o", args.output,
             "--nonblocking"]
        )  # fmt: skip
        time.sleep(1.5)  # py-spy attaches
        start, moves = time.perf_counter(), 0
        while time.perf_counter() - start < args.seconds - 2:
            moves += 1
            # Distinct offsets in turn (0.1 ... 4.0, then -0.1 ... -4.0): each run misses the cache.
            offset = round(0.1 * (moves % 40 + 1) * (-1 if (moves // 40) % 2 else 1), 1)
            at.select_slider(key="offset").set_value(offset)
            at.run()
            if at.exception:
                raise RuntimeError(at.exception[0].value)
        spy.wait()
    print(
        f"{moves} interactions at d = {D}; the script's median "
        f"{1e3 * statistics.median(bench.SCRIPT_TIMES):.1f} ms; profile in {args.output}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
