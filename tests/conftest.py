"""Shared fixtures: a live app server and a headless browser (pyproject.toml puts the
repository root on the import path)."""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Under pytest-xdist each test process is a host of its own: its own temporary folder, so the
# host-wide lock of the inspector's model loads (a file there) is not held by the other
# process's tests, and the servers a test starts inherit the same folder.
if worker := os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["TMPDIR"] = tempfile.mkdtemp(prefix=f"normlab-tests-{worker}-")
    tempfile.tempdir = None
    # The test processes are the parallelism: one compute thread each for torch (OpenMP) and
    # numpy (OpenBLAS), inherited by the servers they start. With a thread pool per process on
    # top, the two processes and their servers asked for several times the cores, and the pools'
    # threads spun waiting for one another.
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")

# Finished live training runs are kept for the next visitor (labs.training.run_cache): a test
# trains afresh, not from a run an earlier test or an earlier session of the suite left.
os.environ["NORMLAB_RUN_CACHE"] = tempfile.mkdtemp(prefix="normlab-runs-")

import streamlit.components.v2.manifest_scanner as component_scanner
from hypothesis import settings

from benchmarks.live import CHROMIUM, chromium
from tests.browser_util import live_app
from tests.hypothesis_util import QUICK_EXAMPLES

# Each new AppTest looks through every installed distribution for Streamlit components (a quarter
# of a second on this machine, for each of the suite's thousands of AppTests); the installed
# packages do not change while the tests run, so each test process looks once.
component_scanner.scan_component_manifests = functools.cache(
    component_scanner.scan_component_manifests
)


@pytest.fixture(scope="session")
def app_url() -> Iterator[str]:
    """A real ``streamlit run app.py`` on a free loopback port, for the browser tests."""
    with live_app() as url:
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's headless Chromium driven by Playwright; skipped where it is not installed."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def scenario_server(tmp_path_factory, browser) -> Iterator[tuple[str, object]]:
    """A logged app server for one browser-scenario file (``tests.scenario_util.serve``): each
    file its own, so the two files run side by side."""
    from tests.scenario_util import serve

    yield from serve(tmp_path_factory, browser)


# ---------------------------------------------------------------------------------------------
# Hypothesis: two profiles. "full" is Hypothesis's own (100 examples a test, and every test's own
# ``max_examples``); "quick" runs a fifth of that. The quick loop (``-m "not slow"``) loads
# "quick", any other run "full": a plain ``python -m pytest``, as CI runs it, is the whole check.
# NORMLAB_HYPOTHESIS=quick|full chooses either, and Hypothesis's --hypothesis-profile wins over
# both. A test with a count of its own writes it ``max_examples=examples(N)``
# (tests/hypothesis_util.py): N under "full", the same fifth of N under "quick". A failure
# Hypothesis once found is replayed from its example database (.hypothesis/) under either.
settings.register_profile("full", settings.get_profile("default"))
settings.register_profile("quick", max_examples=QUICK_EXAMPLES)


def _quick_loop(config: pytest.Config) -> bool:
    """Whether this run leaves the slow tests out: ``not slow`` in its ``-m``."""
    return "not slow" in " ".join((config.getoption("markexpr", "") or "").split())


def pytest_configure(config: pytest.Config) -> None:
    # Hypothesis's own plugin loads --hypothesis-profile after this, so that option wins.
    profile = os.environ.get("NORMLAB_HYPOTHESIS") or ("quick" if _quick_loop(config) else "full")
    settings.load_profile(profile)
    config.stash[DURATIONS] = _read_durations(config)
    if getattr(config, "cache", None) is not None and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Durations(config), "normlab-durations")


# ---------------------------------------------------------------------------------------------
# Scheduling: ``--dist loadfile --no-loadscope-reorder`` hands whole files to the two processes in
# collection order, and a long file handed out last keeps one process busy while the other has
# nothing left to do. So the files go out longest first: longest by what their selected tests
# took the last time they ran, from a cache every run updates (.pytest_cache/v/normlab/durations,
# seconds by test id). A fresh clone (as CI runs) has no cache: there a test takes its file's
# share of the seconds a whole run recorded (tests/durations.json: file -> [seconds, tests],
# written by a full run with NORMLAB_WRITE_DURATIONS=1). Else a test is guessed from its markers.
DURATIONS_KEY = "normlab/durations"
DURATIONS = pytest.StashKey[dict[str, float]]()
RECORDED = Path(__file__).with_name("durations.json")
GUESS_S = {"browser": 8.0, "slow": 3.0}
GUESS_OTHER_S = 0.1


def _read_durations(config: pytest.Config) -> dict[str, float]:
    if hasattr(config, "workerinput"):
        # An xdist worker takes the controller's copy: were each to read the cache, a run ending
        # elsewhere between their two collections could give them two orders.
        return config.workerinput.get("normlab_durations", {})
    cache = getattr(config, "cache", None)  # absent under -p no:cacheprovider
    found = cache.get(DURATIONS_KEY, {}) if cache is not None else {}
    return found if isinstance(found, dict) else {}


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    node.workerinput["normlab_durations"] = node.config.stash[DURATIONS]


class _Durations:
    """Adds up each test's setup, call and teardown (in xdist's controller: the workers' reports)
    and writes them into the cache when the run ends."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.ran: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.ran[report.nodeid] = self.ran.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self) -> None:
        cache = self.config.cache
        if not self.ran:
            return
        # What ran now replaces what the cache had for it; tests whose file is gone are dropped.
        merged = {**cache.get(DURATIONS_KEY, {}), **{k: round(v, 3) for k, v in self.ran.items()}}
        root = self.config.rootpath
        merged = {k: v for k, v in merged.items() if (root / k.split("::")[0]).exists()}
        cache.set(DURATIONS_KEY, merged)
        if os.environ.get("NORMLAB_WRITE_DURATIONS"):
            files: dict[str, list] = {}
            for test, seconds in sorted(self.ran.items()):
                entry = files.setdefault(test.split("::")[0], [0.0, 0])
                entry[0], entry[1] = round(entry[0] + seconds, 1), entry[1] + 1
            lines = (f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(files.items()))
            RECORDED.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def _recorded() -> dict[str, list]:
    return json.loads(RECORDED.read_text()) if RECORDED.exists() else {}


def _seconds(item: pytest.Item, known: dict[str, float], recorded: dict[str, list]) -> float:
    if item.nodeid in known:
        return known[item.nodeid]
    if (file := recorded.get(item.nodeid.split("::")[0])) and file[1]:
        return file[0] / file[1]
    return next(
        (s for marker, s in GUESS_S.items() if item.get_closest_marker(marker)), GUESS_OTHER_S
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A browser test starts a server and Chromium, so it is ``slow`` too: ``-m "not slow"``
    leaves every browser test out of the quick loop. (This runs before ``-m`` deselects.)"""
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def longest_files_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The selected tests (this runs after ``-m`` and ``-k``), their files longest first; each
    file's tests keep their order."""
    known = config.stash.get(DURATIONS, {})
    recorded = {} if known else _recorded()
    total: dict[Path, float] = {}
    for item in items:
        total[item.path] = total.get(item.path, 0.0) + _seconds(item, known, recorded)
    first = {path: i for i, path in reversed(list(enumerate(item.path for item in items)))}
    items.sort(key=lambda item: (-total[item.path], first[item.path]))
