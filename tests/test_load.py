"""A short run of the load script (2 visitors x 3 interactions): it starts the app, drives real
headless Chromium, stops by itself and reports every number it promises."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import load

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parent.parent
# Two visitors cost a few seconds each on an idle machine; the deadline leaves room for a loaded
# one, and the subprocess limit is beyond the script's own deadline plus its shutdown grace.
DEADLINE_S = 150
LIMIT_S = DEADLINE_S + 60


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict]:
    if not Path(load.CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    out = tmp_path_factory.mktemp("load") / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.load",
            "--visitors",
            "2",
            "--interactions",
            "3",
            "--timeout",
            str(DEADLINE_S),
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )
    return done, json.loads(out.read_text())


def test_smoke_run_has_no_errors_and_reports_every_number(smoke) -> None:
    done, report = smoke
    # 0 is PASS, 1 is FAIL against the latency or memory targets (this machine may be loaded);
    # anything else is a crash of the script itself.
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert report["visitors"] == 2
    assert report["interactions_planned"] == 6
    assert report["interactions_done"] == 6
    assert report["errors"] == 0, report["error_samples"]
    assert not report["deadline_hit"]
    assert 0 < report["p50_s"] <= report["p95_s"] <= report["max_s"] < DEADLINE_S
    # A Streamlit server with numpy, torch and plotly loaded holds well over 50 MB.
    assert 50 < report["peak_rss_mb"] < 4096
    assert report["passed"] == (done.returncode == 0)
    for label in (
        "visitors",
        "errors",
        "latency p50",
        "latency p95",
        "latency max",
        "peak RSS",
        "result",
    ):
        assert label in done.stdout
    assert ("PASS" if report["passed"] else "FAIL") in done.stdout


def test_percentiles_and_verdict_follow_the_latencies() -> None:
    class Stub:
        def __init__(self, latencies: list[float], errors: list[str]) -> None:
            self.latencies, self.errors = latencies, errors

    crowd = [Stub([0.1, 0.2, 0.3, 0.4], []), Stub([0.5, 0.6, 0.7, 2.0], [])]
    report = load.summarise(load.Report(visitors=2, interactions_planned=8), crowd, 4)
    assert report.interactions_done == 8 and report.errors == 0
    assert math.isclose(report.p50_s, 0.45) and report.max_s == 2.0
    assert math.isclose(report.p95_s, 0.7 + 0.65 * (2.0 - 0.7))
    assert not report.passed  # p95 above 1 s
    crowd = [Stub([0.1, 0.2], ["visitor 0: slider #3 failed"]), Stub([], [])]
    report = load.summarise(load.Report(visitors=2, interactions_planned=6), crowd, 3)
    # One failed interaction and three never reached (the second visitor did not load).
    assert report.errors == 4 and not report.passed
