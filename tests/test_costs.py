"""Cost bounds for a shared public demo: the worst link of every page stays within a work and
memory budget, every cache is bounded, and the speed lab measures for one visitor at a time.

The worst link sets every numeric parameter to a 60-digit number, which each page clamps to its
cap (widths, sweep sizes, layers, repeats at their maxima); a few pages get extra worst cases
for their choices. Each run starts from an empty cache, as the first visitor with that link
would. Work is counted, not timed (a shared machine makes seconds meaningless): the bytes the
run allocates (tracemalloc), the resident memory it adds, and the numbers its figures send to
the browser. Wall time is printed (``pytest -s``) for the record only; speed targets live in
``benchmarks/``.
"""

from __future__ import annotations

import ast
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from labkit.lock import MEASURE_LOCK
from labs.speed.timing import TIME_CAP_S
from tests.apptest_util import decode, figures, page_params
from ui.nav import PAGES as NAV_PAGES
from ui.params import FloatParam, IntParam, LadderParam

# Every page's worst link in AppTest, measured: a minute of the suite, so not in the quick loop.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 120
MEMORY_BUDGET_MB = 200.0
# Numbers all of a page's figures may send to the browser in one run: the explorer's chart at
# the widest d is an envelope of a few thousand points, sweeps have a few hundred points per
# series; a million numbers is ~10 MB of JSON, past what a phone on a classroom network takes.
FIGURE_NUMBER_BUDGET = 250_000
MB = 1 << 20
HUGE = "1" * 60


def numeric_params(file: str) -> list[str]:
    """Keys of the page's Int/Float/Ladder parameters (the ones a number can push to a cap)."""
    numeric = (IntParam, FloatParam, LadderParam)
    return [p.key for p in page_params(file.removesuffix(".py")) if isinstance(p, numeric)]


PAGES = [f"{spec.name}.py" for spec in NAV_PAGES]
# Choices that cost more than the defaults: torch in half precision, the speed lab's torch run.
EXTRA = {
    "explorer.py": [
        {"backend": "torch", "dtype": "float16"},
        {"x": ", ".join(f"{(-1) ** i * 1e150:g}" for i in range(8192))},
    ],
    "speed.py": [{"impl": "numpy", "sweep": "batch"}, {"impl": "torch", "sweep": "width"}],
}
CASES = [
    pytest.param(file, {**{k: HUGE for k in numeric_params(file)}, **extra}, id=f"{file}-{i}")
    for file in PAGES
    for i, extra in enumerate([{}, *EXTRA.get(file, [])])
]


class RssPeak:
    """The process's resident set size, sampled every 5 ms in a thread while a page runs (numpy
    reports its buffers to tracemalloc; torch's CPU allocator does not, RSS sees both)."""

    def __init__(self) -> None:
        self.peak = self.base = self.read()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @staticmethod
    def read() -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS in /proc/self/status")

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self.read())

    def __enter__(self) -> RssPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.read())


def run_page(file: str, query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / file), default_timeout=TIMEOUT)
    at.session_state["lang"] = "en"
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    if file == "speed.py":
        at.button(key="measure").click().run()
    return at


@pytest.fixture(scope="module", autouse=True)
def warm_imports() -> None:
    """Import torch, plotly and pandas once, so the first case does not pay for the imports."""
    for file in PAGES:
        run_page(file, {})


@pytest.mark.parametrize(("file", "query"), CASES)
def test_worst_link_stays_within_time_and_memory(file: str, query: dict[str, str]) -> None:
    st.cache_data.clear()
    start = time.perf_counter()
    at = run_page(file, query)
    wall = time.perf_counter() - start
    assert not at.exception, [e.value for e in at.exception]

    st.cache_data.clear()
    tracemalloc.start()
    try:
        with RssPeak() as rss:
            at = run_page(file, query)
        _, traced = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not at.exception
    grown = (rss.peak - rss.base) / MB
    sent = figure_numbers(at)
    print(
        f"\n{file} {sorted(query)}: wall {wall:.2f} s (not asserted), tracemalloc peak "
        f"{traced / MB:.1f} MB, RSS growth {grown:.1f} MB, figure numbers {sent}"
    )
    assert traced / MB < MEMORY_BUDGET_MB
    assert grown < MEMORY_BUDGET_MB
    assert sent <= FIGURE_NUMBER_BUDGET


def figure_numbers(at: AppTest) -> int:
    """How many numbers the run's Plotly figures carry (every array in every trace)."""
    total = 0
    for spec in figures(at).values():
        for trace in spec.get("data", []):
            for value in trace.values():
                if isinstance(value, dict) and "bdata" in value or isinstance(value, list):
                    total += decode_size(value)
    return total


def decode_size(values: object) -> int:
    try:
        return int(np.asarray(decode(values)).size)
    except (TypeError, ValueError):
        return 0


def cache_decorators(path: Path) -> list[ast.expr]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if isinstance(target, ast.Attribute) and target.attr in (
                    "cache_data",
                    "cache_resource",
                ):
                    found.append(deco)
    return found


def test_every_cache_is_bounded() -> None:
    files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *(ROOT / "ui").glob("*.py")]
    decorators = {path.name: cache_decorators(path) for path in files}
    assert sum(map(len, decorators.values())) >= len(PAGES) - 2
    for name, decos in decorators.items():
        for deco in decos:
            assert isinstance(deco, ast.Call), f"{name}: bare cache decorator, unbounded"
            keywords = {kw.arg for kw in deco.keywords}
            assert keywords & {"max_entries", "ttl"}, f"{name}:{deco.lineno} has no bound"


def test_speed_lab_runs_one_measurement_at_a_time() -> None:
    """While another visitor's measurement holds the lock, a click says busy and measures
    nothing."""
    assert MEASURE_LOCK.acquire(blocking=False)
    try:
        at = run_page("speed.py", {"d": "256", "batch": "16"})
    finally:
        MEASURE_LOCK.release()
    assert not at.exception
    assert any("another" in w.value.lower() or "busy" in w.value.lower() for w in at.warning)
    assert "_speed_result" not in at.session_state


class TickClock:
    """A clock that moves on by ``step`` seconds at every reading."""

    def __init__(self, step: float) -> None:
        self.step, self.now = step, 0.0

    def __call__(self) -> float:
        now, self.now = self.now, self.now + self.step
        return now


def test_speed_lab_stops_at_its_time_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cap is checked on the lab's clock before every call. With a clock that moves 1/8 s
    at each reading (one before a call, two around it), the 2 s cap allows exactly five calls
    however fast this machine is: the work is counted, not timed."""
    from labs.speed import timing

    monkeypatch.setattr(timing, "CLOCK", TickClock(0.125))
    at = run_page("speed.py", {"d": HUGE, "batch": HUGE, "repeats": HUGE, "impl": "numpy"})
    assert not at.exception
    run = at.session_state["_speed_result"]["view"].run
    assert run.time_cap_s == TIME_CAP_S == 2.0
    assert run.calls == 5 and not run.complete
    # Five calls on the first shape, 4096 rows of 64, and no shape finished.
    assert run.unmeasured[0] == (4096, 64) and run.elements == 5 * 4096 * 64
    assert run.measurements == () and run.partial == ()
