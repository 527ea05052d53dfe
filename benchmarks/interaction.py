"""Server time of one explorer interaction, interleaved across apps, as ratios measured in one run.

docs/speed.md, "Where one interaction's time goes", says what it runs and records. The workers
take turns, one interaction each, so that every app meets the same load."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.app import DEFAULT_D, SLIDER_FLOOR, TARGET_INTERACTION_S, load_line
from benchmarks.live import ROOT

DEFAULT_INTERACTIONS = 40
WARM_UP = 3

# The probe the timed script reports to: a module of its own, so that the worker (which imports
# the checkout it runs) needs nothing of this checkout's code.
PROBE = "TIMES = []\n"
_TIMED = """
import time
import _interaction_probe as probe
code = probe.CODE
wall, cpu = time.perf_counter(), time.thread_time()
exec(code, {{"__name__": "__main__", "__file__": {path!r}}})
probe.TIMES.append((time.perf_counter() - wall, time.thread_time() - cpu))
"""
# One worker: its app in AppTest; reads an offset per line ("same": no change), runs the app with
# it, answers with the script's wall and CPU seconds as JSON.
WORKER = """
import json, sys
from pathlib import Path
sys.path.insert(0, {probe_dir!r})
import _interaction_probe as probe
from streamlit.testing.v1 import AppTest
from benchmarks.st_private import shared_script_cache
path = {path!r}
probe.CODE = compile(Path(path).read_text(), path, "exec")
with shared_script_cache():
    at = AppTest.from_string({timed!r}, default_timeout=300)
    at.query_params["d"] = {d!r}
    at.run()
    # The explorer's offset: a select slider (a st.slider at commits before its stops).
    kind = "select_slider" if any(e.key == "offset" for e in at.select_slider) else "slider"
    slider = (lambda: getattr(at, kind)(key="offset")) if {explorer!r} else (lambda: at.slider[0])
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "same":
            slider().set_value(float(line))
        at.run()
        if at.exception:
            raise SystemExit(at.exception[0].value)
        print(json.dumps(probe.TIMES[-1]), flush=True)
"""


class Worker:
    """An app in AppTest in a process of its own, run from ``root``."""

    def __init__(self, root: Path, path: Path, d: int, explorer: bool, probe_dir: Path) -> None:
        timed = _TIMED.format(path=str(path))
        code = WORKER.format(
            probe_dir=str(probe_dir), path=str(path), timed=timed, d=str(d), explorer=explorer
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        if self._line() != "ready":
            raise RuntimeError(f"the worker for {path} did not start")

    def _line(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"a worker stopped (exit status {self.proc.wait()})")
        return line.strip()

    def interact(self, offset: float | None) -> tuple[float, float]:
        """One run with the slider at ``offset`` (None: a rerun that changes nothing)."""
        self.proc.stdin.write(f"{'same' if offset is None else offset}\n")
        self.proc.stdin.flush()
        wall, cpu = json.loads(self._line())
        return wall, cpu

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure(d: int, interactions: int, baseline: Path | None) -> dict[str, dict[str, list]]:
    """Seconds (wall, CPU) per run of each app, the apps asked in turn: for each app, the runs
    that moved the slider ("moved") and the reruns that changed nothing ("same")."""
    folder = Path(tempfile.mkdtemp(prefix="normlab-interaction-"))
    (folder / "_interaction_probe.py").write_text(PROBE)
    (folder / "floor_slider.py").write_text(SLIDER_FLOOR)
    apps = {"explorer": (ROOT, ROOT / "app.py", True)}
    if baseline is not None:
        apps["baseline"] = (baseline, baseline / "app.py", True)
    apps["floor"] = (ROOT, folder / "floor_slider.py", False)
    workers = {
        name: Worker(root, path, d, explorer, folder)
        for name, (root, path, explorer) in apps.items()
    }
    times = {kind: {name: [] for name in workers} for kind in ("moved", "same")}
    try:
        for i in range(WARM_UP + interactions):
            # Distinct offsets, so that each run computes afresh instead of hitting the cache.
            offset = round(0.1 * (i + 1), 1)
            # In turn, the order reversed every other round: no app always follows the same one.
            order = list(workers.items())
            for name, worker in order if i % 2 else order[::-1]:
                for kind, value in (("moved", offset), ("same", None)):
                    sample = worker.interact(value)
                    if i >= WARM_UP:
                        times[kind][name].append(sample)
    finally:
        for worker in workers.values():
            worker.close()
    return times


def report(d: int, times: dict[str, dict[str, list]]) -> str:
    """Medians, ranges and ratios, with the 15 ms target's verdict on the wall time."""
    moved = times["moved"]
    lines = [f"Server time per interaction, d = {d}: {len(moved['floor'])} rounds, apps in turn"]
    for kind, label in (("moved", "the offset slider moved"), ("same", "a rerun, nothing changed")):
        lines.append(f"{label}:")
        medians = {}
        for name, samples in times[kind].items():
            for which, k in (("wall", 0), ("CPU", 1)):
                values = [s[k] for s in samples]
                medians[name, which] = statistics.median(values)
                lines.append(
                    f"  {name:9s} {which:4s} median {1e3 * medians[name, which]:6.1f} ms "
                    f"(min {1e3 * min(values):6.1f}, max {1e3 * max(values):6.1f})"
                )
        for which in ("wall", "CPU"):
            lines.append(f"  {which:4s} ratios: " + ", ".join(_ratios(medians, which)))
    wall = statistics.median(s[0] for s in moved["explorer"])
    verdict = "met" if wall <= TARGET_INTERACTION_S else "not met"
    lines.append(
        f"target: the explorer's median wall time per interaction <= "
        f"{1e3 * TARGET_INTERACTION_S:.0f} ms: {1e3 * wall:.1f} ms, {verdict}"
    )
    return "\n".join(lines)


def _ratios(medians: dict, which: str) -> list[str]:
    pairs = [("explorer", "floor")]
    if ("baseline", which) in medians:
        pairs += [("baseline", "floor"), ("explorer", "baseline")]
    return [f"{a} / {b} {medians[a, which] / medians[b, which]:.2f}" for a, b in pairs]


def markdown(d: int, times: dict[str, dict[str, list]]) -> str:
    """The run as docs/speed.md's table: medians in ms (ranges in brackets) and ratios."""
    lines = [
        f"`python -m benchmarks.interaction`: d = {d}, {len(times['moved']['floor'])} rounds, "
        "the apps in turn; medians, ranges in brackets.",
        "",
        "| run | app | wall time | × floor | CPU time | × floor | target ≤ "
        f"{1e3 * TARGET_INTERACTION_S:.0f} ms (wall) |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for kind, label in (("moved", "offset moved"), ("same", "rerun, no change")):
        runs = times[kind]
        floor = [statistics.median(s[k] for s in runs["floor"]) for k in (0, 1)]
        for name, samples in runs.items():
            cells = []
            for k in (0, 1):
                values = [1e3 * s[k] for s in samples]
                med = statistics.median(values)
                cells += [f"{med:.1f} ms ({min(values):.1f}–{max(values):.1f})"]
                cells += [f"{med / 1e3 / floor[k]:.2f}"]
            verdict = ""
            if kind == "moved" and name != "floor":
                held = statistics.median(s[0] for s in samples) <= TARGET_INTERACTION_S
                verdict = "met" if held else "not met"
            lines.append(f"| {label} | {name} | " + " | ".join(cells) + f" | {verdict} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=DEFAULT_D)
    parser.add_argument("--interactions", type=int, default=DEFAULT_INTERACTIONS)
    parser.add_argument("--baseline", type=Path, help="another checkout, timed in the same rounds")
    parser.add_argument("--markdown", action="store_true", help="also the run as Markdown")
    args = parser.parse_args(argv)
    print(f"Start: {load_line()}", flush=True)
    times = measure(args.d, args.interactions, args.baseline)
    print(report(args.d, times))
    if args.markdown:
        print(markdown(args.d, times))
    print(f"End: {load_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
