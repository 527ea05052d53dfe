"""The report of ``benchmarks.load``: its targets, the numbers of one run and their verdict.

``summarise`` fills a ``Report`` from what each visitor kept (latencies, errors, interactions
lost in flight, views restored, busy pages); ``Report.lines`` is what the command prints."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from benchmarks.target import Failover
from benchmarks.visitors import DEFAULT_THINK_S, THINK_JITTER

# Targets from the project issues, on the 2-core reference box: 20 visitors x 20 interactions on
# one process, 40 x 20 on the launcher with two workers.
TARGET_P95_S = 1.0
TARGET_ERRORS = 0
# 800 MB for one process; the launcher gets 400 MB per worker plus 400 MB (1.2 GB for two).
RSS_PER_WORKER_MB = 400.0


def rss_target_mb(workers: int) -> float:
    """The memory target: one process (``workers`` 0) or the launcher with ``workers``."""
    return RSS_PER_WORKER_MB * (max(workers, 1) + 1)


@dataclass
class Report:
    visitors: int
    interactions_planned: int
    client: str = "ws"
    think_s: float = DEFAULT_THINK_S
    # "streamlit run app.py", "launcher, N workers" or the URL driven.
    target: str = "streamlit run app.py"
    workers: int = 0
    seats: int = 0
    interactions_done: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    p50_s: float = float("nan")
    p95_s: float = float("nan")
    max_s: float = float("nan")
    # NaN when the server was not started here (``--url``).
    peak_rss_mb: float = float("nan")
    rss_target_mb: float = rss_target_mb(0)
    wall_s: float = 0.0
    deadline_hit: bool = False
    # Sessions the server told that the app's sources changed on disk during the run.
    source_changes: int = 0
    # Overload: busy pages answered, to how many visitors, the slowest answer, the longest wait.
    busy_answers: int = 0
    busy_visitors: int = 0
    busy_answer_max_s: float = float("nan")
    busy_wait_max_s: float = 0.0
    # Failover: the worker killed, the visitors it held, what happened to them.
    killed: str = ""
    killed_holding: int = 0
    moved_visitors: int = 0
    failed_in_flight: int = 0
    failed_samples: list[str] = field(default_factory=list)
    views_restored: int = 0
    recovery_max_s: float = float("nan")
    worker_back_s: float = float("nan")
    # The launcher's log: workers restarted, HAProxy's servers marked DOWN or UP.
    launcher_events: list[str] = field(default_factory=list)
    passed: bool = False

    def lines(self) -> list[str]:
        verdict = "PASS" if self.passed else "FAIL"
        if self.think_s > 0:
            jitter = f"+-{THINK_JITTER:.0%}"
            think = f"{self.think_s:g} s {jitter} before each interaction (not in the latency)"
        else:
            think = "0 s (stress test: each interaction sent as the last one finished)"
        if math.isnan(self.peak_rss_mb):
            rss = "not measured (a server this script did not start)"
        else:
            rss = (
                f"{self.peak_rss_mb:.0f} MB, all processes (target <= {self.rss_target_mb:.0f} MB)"
            )
        lines = [
            f"target        {self.target}",
            f"client        {self.client}",
            f"visitors      {self.visitors}",
            f"think time    {think}",
            f"interactions  {self.interactions_done} of {self.interactions_planned}",
            f"errors        {self.errors} (target {TARGET_ERRORS})",
            f"latency p50   {self.p50_s * 1e3:.0f} ms",
            f"latency p95   {self.p95_s * 1e3:.0f} ms (target <= {TARGET_P95_S * 1e3:.0f} ms)",
            f"latency max   {self.max_s * 1e3:.0f} ms",
            f"peak RSS      {rss}",
            f"wall time     {self.wall_s:.1f} s" + (" (deadline hit)" if self.deadline_hit else ""),
        ]
        if self.busy_answers:
            lines.append(
                f"busy answers  {self.busy_answers} to {self.busy_visitors} visitors, slowest "
                f"{self.busy_answer_max_s * 1e3:.0f} ms; longest wait for a seat "
                f"{self.busy_wait_max_s:.1f} s"
            )
        if self.killed:
            lines += [
                f"failover      killed {self.killed}, which held {self.killed_holding} visitors; "
                f"{self.failed_in_flight} interactions failed in flight",
                f"              {self.views_restored} views restored, {self.moved_visitors} "
                f"visitors moved; longest kill-to-restored-view {self.recovery_max_s:.2f} s; "
                f"{self.killed} answering again after {self.worker_back_s:.1f} s",
            ]
        downs = sum(" is DOWN" in event for event in self.launcher_events)
        if self.launcher_events:
            lines.append(
                f"launcher log  {len(self.launcher_events)} events, {downs} servers marked DOWN"
            )
        if self.source_changes:
            lines.append(
                f"sources       changed on disk during the run ({self.source_changes} sessions "
                "told): errors and latencies are not the app's own"
            )
        return [*lines, f"result        {verdict}"]


def summarise(
    report: Report, crowd: Sequence, interactions: int, failover: Failover | None = None
) -> Report:
    """Fill ``report`` from each visitor's latencies, errors, failures, busy answers."""
    latencies = np.array([s for v in crowd for s in v.latencies])
    errors = [e for v in crowd for e in v.errors]
    failed = [f for v in crowd for f in getattr(v, "failed", [])]
    report.source_changes = sum(bool(getattr(v, "source_changed", False)) for v in crowd)
    unfinished = report.visitors * interactions - len(latencies) - len(errors) - len(failed)
    report.interactions_done = len(latencies)
    # Interactions never reached (deadline, a visitor that could not load) are errors too.
    report.errors = len(errors) + max(0, unfinished)
    report.error_samples = errors[:10]
    if latencies.size:
        report.p50_s = float(np.percentile(latencies, 50))
        report.p95_s = float(np.percentile(latencies, 95))
        report.max_s = float(latencies.max())
    busy = [getattr(v, "busy_answers", []) for v in crowd]
    report.busy_answers = sum(len(b) for b in busy)
    report.busy_visitors = sum(bool(b) for b in busy)
    if report.busy_answers:
        report.busy_answer_max_s = max(max(b) for b in busy if b)
        report.busy_wait_max_s = max(getattr(v, "busy_wait_s", 0.0) for v in crowd)
    if failover is not None:
        summarise_failover(report, crowd, failed, failover)
    report.passed = (
        report.errors <= TARGET_ERRORS
        and latencies.size > 0
        and report.p95_s <= TARGET_P95_S
        and not report.peak_rss_mb > report.rss_target_mb  # NaN (not measured) passes
        and not report.source_changes
        and (failover is None or report.moved_visitors > 0)
    )
    return report


def summarise_failover(
    report: Report, crowd: Sequence, failed: list[str], failover: Failover
) -> None:
    restored = [t for v in crowd for t in getattr(v, "restored_at", [])]
    report.killed, report.killed_holding = failover.killed, failover.holding
    report.failed_in_flight, report.failed_samples = len(failed), failed[:10]
    report.views_restored = len(restored)
    report.moved_visitors = sum(bool(getattr(v, "restored_at", [])) for v in crowd)
    after_kill = [t - failover.kill_at for t in restored if t >= failover.kill_at]
    report.recovery_max_s = max(after_kill, default=float("nan"))
    report.worker_back_s = failover.back_s
