"""A class told "press Train": students open the training lab with the teacher's settings and
press Train at once, as websocket sessions of one ``streamlit run app.py`` (``--workers 2``:
of the launcher's workers, the students spread over them).

``python -m benchmarks.train_class --students 40`` counts the trainings the server ran (the
pages that trained rather than showed a run kept on disk, ``labs.training.run_cache``) and when
each student's run ended. Targets: one training, every other student served from the kept run,
the last result within 5 s of the first. docs/training.md has a run."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from benchmarks import live
from benchmarks.classroom import start_app
from benchmarks.st_private import protos
from benchmarks.ws_visitor import Cookies, Run, open_stream, receive_run
from ui.i18n import translator

# The teacher's settings: the lab's smallest live run.
LINK = {"lang": "en", "layer": "false", "width": 16, "depth": 1, "steps": 10}
TARGET_SPREAD_S = 5.0
TIMEOUT_S = 300.0


async def student(url: str, ready: list, went: asyncio.Event) -> tuple[Run, float]:
    """Open the lab (then say so in ``ready``), wait for the teacher's word, press Train: what
    the run showed and when (monotonic seconds) it ended."""
    conn = await open_stream(url, Cookies(), TIMEOUT_S)

    async def run(*widgets) -> Run:
        msg = protos().BackMsg()
        msg.rerun_script.query_string = urlencode(LINK)
        msg.rerun_script.page_name = "training"
        msg.rerun_script.widget_states.widgets.extend(widgets)
        await conn.send(msg.SerializeToString())
        return await asyncio.wait_for(receive_run(conn), TIMEOUT_S)

    try:
        opened = await run()
        ready.append(opened)
        await went.wait()
        press = protos().WidgetState(id=opened.ids["train"], trigger_value=True)
        return await run(press), time.monotonic()
    finally:
        await conn.close()


async def press_together(url: str, students: int) -> tuple[list, float]:
    """Every student opens the lab; once all have, they press Train together."""
    ready: list[Run] = []
    went = asyncio.Event()
    crowd = [asyncio.create_task(student(url, ready, went)) for _ in range(students)]
    while len(ready) < students and not any(t.done() for t in crowd):
        await asyncio.sleep(0.1)
    pressed = time.monotonic()
    went.set()
    return await asyncio.gather(*crowd, return_exceptions=True), pressed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.train_class", description=__doc__)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument(
        "--workers", type=int, default=0, help="serve through the launcher with this many workers"
    )
    args = parser.parse_args(argv)
    print(f"Start: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    cache = Path(tempfile.mkdtemp(prefix="normlab-train-class-"))
    proc, url, run_dir = start_app(args.workers, args.students, {"NORMLAB_RUN_CACHE": str(cache)})
    try:
        results, pressed = asyncio.run(press_together(url, args.students))
    finally:
        live.stop_server(proc)
        shutil.rmtree(run_dir, ignore_errors=True)
    errors = [repr(r)[:160] for r in results if isinstance(r, BaseException)]
    runs = [r for r in results if not isinstance(r, BaseException)]
    shown = [end - pressed for run, end in runs if "live_step" in run.ids]
    # A student whose page trained the run says nothing of a kept run (``training.cached``).
    trainings = sum(translator("en")("training.cached") not in run.markdown for run, _ in runs)
    spread = max(shown) - min(shown) if shown else float("nan")
    print(
        f"students: {args.students}, workers: {args.workers or 1}; trainings run: {trainings}; "
        f"results shown: {len(shown)}"
    )
    print(
        f"first result {min(shown, default=float('nan')):.1f} s after the press, last "
        f"{max(shown, default=float('nan')):.1f} s: {spread:.1f} s apart"
    )
    print(*(f"error: {e}" for e in errors[:5]), sep="\n")
    ok = not errors and trainings == 1 and len(shown) == args.students and spread <= TARGET_SPREAD_S
    print(
        f"{'PASS' if ok else 'FAIL'}: 1 training (ran {trainings}), {args.students} results "
        f"(shown {len(shown)}), the last within {TARGET_SPREAD_S:g} s of the first"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
