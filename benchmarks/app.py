"""Explorer speed against the floor of a bare Streamlit page, as ratios measured in one run.

Run ``python -m benchmarks.app``: server time per interaction at d = 4096 (AppTest, a new
``offset`` each run so that every run misses the cache) beside the *slider floor* app; first
render in headless Chromium at d = 16 and d = 4096 against the *floor page*; slider press to
redrawn chart at d = 4096 against the slider floor. docs/speed.md, "The explorer in a browser",
describes the floors and has the targets. Visits alternate, so a busy neighbour slows both; each
figure is a median over ``--repeats`` visits (or ``--presses``) with its spread."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.live import (
    CHARTS_DRAWN,
    CHROMIUM,
    READY,
    ROOT,
    chromium,
    free_port,
    start_server,
    stop_server,
    streamlit_command,
    wait_for_health,
)
from benchmarks.st_private import shared_script_cache

DEFAULT_D = 4096
DEFAULT_INTERACTIONS = 15
DEFAULT_REPEATS = 5
DEFAULT_PRESSES = 8
TARGET_INTERACTION_S = 0.015
TARGET_FIRST_RENDER = 1.3
TARGET_SLIDER = 1.0
# The browser run ends with the servers given this long to exit on SIGTERM before SIGKILL.
SHUTDOWN_GRACE_S = 20.0

FLOOR_PAGE = """import plotly.graph_objects as go
import streamlit as st

st.title("RMSNorm and LayerNorm, side by side")
st.latex(r"y_i = g_i \\, \\frac{x_i}{\\sqrt{\\frac{1}{d}\\sum_{j=1}^{d} x_j^{2} + \\epsilon}}")
st.plotly_chart(go.Figure(go.Scatter(x=[0, 1, 2, 3], y=[1, 3, 2, 4])), key="floor")
"""

SLIDER_FLOOR = """import numpy as np
import plotly.graph_objects as go
import streamlit as st

d = 4096
offset = st.slider("offset", -20.0, 20.0, 0.0, 0.1)
z = np.random.default_rng(0).standard_normal(d)
x = z + offset
rms = x / np.sqrt(np.mean(x * x))
layer = (x - x.mean()) / x.std()
i = np.arange(d)
fig = go.Figure(
    [
        go.Scattergl(x=i, y=v, mode="markers", name=name)
        for v, name in ((x, "x"), (rms, "RMSNorm(x)"), (layer, "LayerNorm(x)"))
    ]
)
st.plotly_chart(fig, key="coords")
"""

_FIRST_RMS = """() => {
  const plot = document.querySelector('.st-key-coords .js-plotly-plot');
  const trace = plot && plot._fullData && plot._fullData.find(t => t.name === 'RMSNorm(x)');
  return trace ? trace.y[0] : null;
}"""
# Resolves once two animation frames have begun: the frame that holds the new chart has been
# produced (Plotly updates ``_fullData`` before; docs/speed.md, "The slider").
_FRAME_DRAWN = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
# Before each press the page is left alone this long, as a person reads a chart before the next
# move: a press that lands while the last chart is still being drawn takes a time that depends on
# where it landed.
THINK_S = 1.0


# Runs the app (or the slider floor) in AppTest, timing the script itself so that AppTest's polling
# and tree parsing stay out of the figure. As on a server, each script compiles once: the entry
# script here, the pages in a cache the runs share (benchmarks.st_private.shared_script_cache).
_TIMED = """
import time
from benchmarks import app as bench
code = bench.compiled({path!r})
start = time.perf_counter()
exec(code, {{"__name__": "__main__", "__file__": {path!r}}})
bench.SCRIPT_TIMES.append(time.perf_counter() - start)
"""
SCRIPT_TIMES: list[float] = []
_COMPILED: dict[str, object] = {}


def compiled(path: str) -> object:
    """The code of the script at ``path``, compiled on first use."""
    if path not in _COMPILED:
        _COMPILED[path] = compile(Path(path).read_text(), path, "exec")
    return _COMPILED[path]


def server_time(d: int, interactions: int) -> dict[str, list[float]]:
    """Seconds of script time per interaction: the explorer and the slider floor, both run by
    Streamlit's AppTest (each press of the offset slider misses the cache), and core alone."""
    folder = floor_folder({"floor_slider.py": SLIDER_FLOOR})
    with shared_script_cache():
        return _interactions(d, interactions, folder / "floor_slider.py")


def _interactions(d: int, interactions: int, floor: Path) -> dict[str, list[float]]:
    from streamlit.testing.v1 import AppTest

    from benchmarks import app as timed  # this module even when run as __main__
    from core.inputs import make_input
    from labs.explorer import explore

    apps = {}
    for name, path in (("explorer", ROOT / "app.py"), ("floor", floor)):
        at = AppTest.from_string(_TIMED.format(path=str(path)), default_timeout=120)
        at.query_params["d"] = str(d)
        at.run()
        apps[name] = at
    times: dict[str, list[float]] = {"explorer": [], "floor": [], "core": []}
    for i in range(interactions):
        # Distinct offsets, so each run computes afresh instead of hitting the cache.
        offset = round(0.1 * (i + 1), 1)
        for name, at in apps.items():
            slider = at.select_slider(key="offset") if name == "explorer" else at.slider[0]
            slider.set_value(offset)
            timed.SCRIPT_TIMES.clear()
            at.run()
            if at.exception:
                raise RuntimeError(at.exception[0].value)
            times[name].append(timed.SCRIPT_TIMES[-1])
        x = make_input(d, offset=offset)
        start = time.perf_counter()
        explore(x, eps=1e-5)
        times["core"].append(time.perf_counter() - start)
    return times


def _serve(script: Path | None, root: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """Start ``app.py`` of the checkout ``root`` (script None) or a floor script; return
    (process, base URL) once it answers."""
    port = free_port()
    command = streamlit_command(port)
    if script is not None:
        command[command.index("app.py")] = str(script)
    server = start_server(command, port, cwd=root)
    url = f"http://127.0.0.1:{port}"
    wait_for_health(url)
    return server, url


def floor_folder(files: Mapping[str, str]) -> Path:
    """A fresh folder with the floor pages ``files`` (file name: source) written into it."""
    folder = Path(tempfile.mkdtemp(prefix="normlab-floor-"))
    for name, source in files.items():
        (folder / name).write_text(source)
    return folder


@contextmanager
def serve_floors(
    folder: Path, floors: Mapping[str, str], others: Mapping[str, Path] | None = None
) -> Iterator[dict[str, str]]:
    """``app.py`` as "app", each floor page (name: its file in ``folder``), then the ``app.py``
    of each other checkout (name: its root), started in that order: base URLs by name. All are
    stopped on leaving."""
    servers = {"app": _serve(None)}
    try:
        servers |= {name: _serve(folder / file) for name, file in floors.items()}
        servers |= {name: _serve(None, root) for name, root in (others or {}).items()}
        yield {name: url for name, (_, url) in servers.items()}
    finally:
        for server, _ in servers.values():
            stop_server(server, grace_s=SHUTDOWN_GRACE_S)


def _first_render(browser, url: str) -> float:
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector(READY, timeout=120_000)
    page.wait_for_function(CHARTS_DRAWN, timeout=120_000)
    seconds = time.perf_counter() - start
    context.close()
    return seconds


def _slider_presses(
    browser, url: str, presses: int, *, think_s: float = THINK_S
) -> tuple[list[float], list[float]]:
    """Seconds from each press of the first slider (ArrowRight) to the chart's new data in
    Plotly's model, and to the drawn frame that shows it."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector(READY, timeout=120_000)
    page.wait_for_function(CHARTS_DRAWN, timeout=120_000)
    # The explorer's first move, the mean offset above the chart; the floor page's one slider.
    offset = page.locator(".st-key-offset").get_by_role("slider")
    slider = offset if offset.count() else page.get_by_role("slider").first
    data, drawn = [], []
    for _ in range(presses):
        time.sleep(think_s)
        before = page.evaluate(_FIRST_RMS)
        slider.focus()
        start = time.perf_counter()
        slider.press("ArrowRight")
        page.wait_for_function(f"() => ({_FIRST_RMS})() !== {before}", timeout=120_000)
        data.append(time.perf_counter() - start)
        page.evaluate(_FRAME_DRAWN)
        drawn.append(time.perf_counter() - start)
        page.wait_for_selector(READY, timeout=120_000)
    context.close()
    return data, drawn


def browser_times(repeats: int, presses: int) -> dict[str, list[float]]:
    """First renders and slider latencies of the explorer and the floors, interleaved."""
    folder = floor_folder({"floor_page.py": FLOOR_PAGE, "floor_slider.py": SLIDER_FLOOR})
    floors = {"floor": "floor_page.py", "slider": "floor_slider.py"}
    out: dict[str, list[float]] = {}
    with serve_floors(folder, floors) as urls, chromium() as browser:
        visits: dict[str, Callable[[], float]] = {
            "floor": lambda: _first_render(browser, urls["floor"]),
            "explorer d=16": lambda: _first_render(browser, f"{urls['app']}/?d=16"),
            "explorer d=4096": lambda: _first_render(browser, f"{urls['app']}/?d=4096"),
            "explorer d=16 hidden": lambda: _first_render(
                browser, f"{urls['app']}/?d=16&controls=hidden"
            ),
        }
        for visit in visits.values():  # untimed: imports and caches warm up
            visit()
        for _ in range(repeats):
            for name, visit in visits.items():
                out.setdefault(name, []).append(visit())
        sliders = {"slider floor": urls["slider"], "slider explorer": f"{urls['app']}/?d=4096"}
        for _ in range(max(1, repeats // 2)):
            for name, url in sliders.items():
                data, drawn = _slider_presses(browser, url, presses)
                out.setdefault(name, []).extend(drawn)
                out.setdefault(f"{name} data", []).extend(data)
    return out


@dataclass(frozen=True)
class AppResult:
    """One run: seconds per sample, by measure. ``browser`` is empty when it was skipped."""

    d: int
    server: dict[str, list[float]]
    browser: dict[str, list[float]]

    def ratio(self, name: str, floor: str) -> float:
        """The median of ``name``'s browser samples over the median of ``floor``'s."""
        return _ratio(self.browser, name, floor)

    def server_ratio(self) -> float:
        """The explorer's median script time over the slider floor's."""
        return _ratio(self.server, "explorer", "floor")


def _ratio(samples: dict[str, list[float]], name: str, floor: str) -> float:
    return statistics.median(samples[name]) / statistics.median(samples[floor])


# First-render visits, their labels in the report, and whether each is held to the target. The
# projector's view (controls hidden) is there for comparison.
FIRST_RENDERS = (
    ("explorer d=16", "explorer, d = 16", True),
    ("explorer d=4096", "explorer, d = 4096", True),
    ("explorer d=16 hidden", "explorer, d = 16, controls hidden", False),
)


def measure(
    d: int, interactions: int, repeats: int, presses: int, *, browser: bool = True
) -> AppResult:
    """Server time, then (unless ``browser`` is False) the browser's timings."""
    server = server_time(d, interactions)
    return AppResult(d, server, browser_times(repeats, presses) if browser else {})


def _spread(values: list[float]) -> str:
    return (
        f"median {1000 * statistics.median(values):7.1f} ms "
        f"(min {1000 * min(values):6.1f}, max {1000 * max(values):6.1f}, n = {len(values)})"
    )


def _ms(values: list[float]) -> str:
    """Median and range in milliseconds, for the Markdown table."""
    med, low, high = (1000 * f(values) for f in (statistics.median, min, max))
    digits = 1 if med < 100 else 0
    return f"{med:.{digits}f} ms ({low:.{digits}f}–{high:.{digits}f})"


def _held(ok: bool) -> str:
    return "met" if ok else "not met"


def report(result: AppResult) -> str:
    """The run as plain text."""
    times = result.server
    explorer = statistics.median(times["explorer"])
    lines = [f"Server (script) time per interaction, d = {result.d}"]
    for name, label in (("explorer", "explorer"), ("floor", "slider floor"), ("core", "core")):
        lines.append(f"  {label:14s} {_spread(times[name])}")
    lines.append(
        f"  explorer: {explorer / TARGET_INTERACTION_S:.2f}x the 15 ms target; "
        f"{result.server_ratio():.2f}x the slider floor's script"
    )
    if not result.browser:
        lines.append("Browser timings skipped (no /usr/bin/chromium or --no-browser).")
        return "\n".join(lines)
    out = result.browser
    lines.append("Headless Chromium, warm servers, fresh context per visit")
    lines.append(f"  first render {'floor':22s} {_spread(out['floor'])}")
    for name, _, held in FIRST_RENDERS:
        target = f" (target <= {TARGET_FIRST_RENDER}x)" if held else ""
        lines.append(
            f"  first render {name:22s} {_spread(out[name])}  "
            f"{result.ratio(name, 'floor'):.2f}x the floor{target}"
        )
    lines.append(f"Slider press (after {THINK_S:g} s idle), d = 4096: to the chart's new data")
    lines.append(f"  slider floor           {_spread(out['slider floor data'])}")
    lines.append(
        f"  slider explorer d=4096 {_spread(out['slider explorer data'])}  "
        f"{result.ratio('slider explorer data', 'slider floor data'):.2f}x the floor"
    )
    lines.append("... and to the drawn frame")
    lines.append(f"  slider floor           {_spread(out['slider floor'])}")
    lines.append(
        f"  slider explorer d=4096 {_spread(out['slider explorer'])}  "
        f"{result.ratio('slider explorer', 'slider floor'):.2f}x the floor "
        f"(target <= {TARGET_SLIDER}x)"
    )
    return "\n".join(lines)


def markdown(result: AppResult) -> str:
    """The run as docs/speed.md's Markdown table, each target with its verdict."""
    explorer = statistics.median(result.server["explorer"])
    lines = [
        "`python -m benchmarks.app`: medians, with the range in brackets.",
        "",
        "| measure | NormLab | floor | ratio | target |",
        "| --- | ---: | ---: | ---: | --- |",
        f"| explorer script per interaction, d = {result.d} | {_ms(result.server['explorer'])} | "
        f"{_ms(result.server['floor'])} (slider floor's script; `labs.explorer` alone "
        f"{_ms(result.server['core'])}) | {result.server_ratio():.2f} | "
        f"≤ {1000 * TARGET_INTERACTION_S:.0f} ms: {_held(explorer <= TARGET_INTERACTION_S)} |",
    ]
    if result.browser:
        out = result.browser
        for name, label, held in FIRST_RENDERS:
            ratio = result.ratio(name, "floor")
            target = f"≤ {TARGET_FIRST_RENDER}×: {_held(ratio <= TARGET_FIRST_RENDER)}"
            lines.append(
                f"| first render, {label} | {_ms(out[name])} | {_ms(out['floor'])} "
                f"(floor page) | {ratio:.2f} | {target if held else 'none (for comparison)'} |"
            )
        ratio = result.ratio("slider explorer data", "slider floor data")
        lines.append(
            f"| slider press to the chart's new data (Plotly's model), d = 4096 | "
            f"{_ms(out['slider explorer data'])} | {_ms(out['slider floor data'])} "
            f"(slider floor) | {ratio:.2f} | none (for comparison) |"
        )
        ratio = result.ratio("slider explorer", "slider floor")
        lines.append(
            f"| slider press to the drawn frame, d = 4096 | {_ms(out['slider explorer'])} | "
            f"{_ms(out['slider floor'])} (slider floor) | {ratio:.2f} | "
            f"≤ {TARGET_SLIDER}×: {_held(ratio <= TARGET_SLIDER)} |"
        )
    return "\n".join(lines)


def load_line() -> str:
    """The machine's load averages and cores, printed at a benchmark's start and end."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=DEFAULT_D)
    parser.add_argument("--interactions", type=int, default=DEFAULT_INTERACTIONS)
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--presses", type=int, default=DEFAULT_PRESSES)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)

    print(f"Start: {load_line()}")
    browser = not args.no_browser and Path(CHROMIUM).exists()
    result = measure(args.d, args.interactions, args.repeats, args.presses, browser=browser)
    print(report(result))
    print(f"End: {load_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
