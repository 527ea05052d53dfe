"""Shared fixtures: a live app server and a headless browser (pyproject.toml puts the
repository root on the import path)."""

from __future__ import annotations

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

from benchmarks.live import (
    CHROMIUM,
    CHROMIUM_ARGS,
    live_app,
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
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def scenario_server(tmp_path_factory, browser) -> Iterator[tuple[str, object]]:
    """A logged app server for one browser-scenario file (``tests.scenario_util.serve``): each
    file its own, so the two files run side by side."""
    from tests.scenario_util import serve

    yield from serve(tmp_path_factory, browser)


# The files that take longest, run first: ``--dist loadfile`` hands whole files to the two
# processes in collection order, and a long file handed out last keeps one process busy while
# the other has nothing left to do.
LONGEST_FIRST = (
    "test_browser_scenarios.py",
    "test_browser_scenarios_more.py",
    "test_claims.py",
    "test_numbers_agree.py",
    "test_load.py",
    "test_serve_browser.py",
    "test_a11y.py",
    "test_glossary.py",
    "test_browser_phone.py",
    "test_browser_inspector.py",
    "test_fuzz_pages.py",
    "test_browser_explorer.py",
    "test_browser_attention.py",
    "test_chart_words.py",
    "test_snippets.py",
    "test_browser_training.py",
    "test_browser_lessons.py",
    "test_browser_classroom.py",
    "test_browser_links.py",
    "test_serve.py",
    # Then the pages through AppTest and the training runs; the many quick files come last.
    "test_page_explorer.py",
    "test_training_view.py",
    "test_train.py",
    "test_page_training.py",
    "test_page_lesson.py",
    "test_page_inspector.py",
    "test_page_residual.py",
    "test_page_contracts.py",
    "test_page_backward.py",
    "test_page_attention.py",
    "test_page_precision.py",
    "test_page_invariance.py",
    "test_page_speed.py",
    "test_page_lesson_class.py",
    "test_params.py",
    "test_residual.py",
    "test_speedlab.py",
    "test_inspect.py",
    "test_explorer_findings.py",
    "test_locale.py",
    "test_presets.py",
    "test_precision.py",
    "test_bench_app.py",
    "test_browser_lab.py",
    "test_browser_residual.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (``LONGEST_FIRST``; the rest keep their order). A browser test
    starts a server and Chromium, so it is ``slow`` too: ``-m "not slow"`` leaves every browser
    test out of the quick loop."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
