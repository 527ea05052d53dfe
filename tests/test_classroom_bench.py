"""The class benchmark (``benchmarks/classroom.py``): its pass rule, and the benchmark in small
(``tests/test_browser_classroom.py`` runs it on its server: four students answering within a
second, the teacher's page in headless Chromium)."""

from __future__ import annotations

from benchmarks.classroom import Report, parse


def test_the_report_fails_on_a_lost_answer_or_a_slow_teacher() -> None:
    good = Report(60, 2, "sqlite", 10.0, recorded=60, lost=0, p95_s=0.5, teacher_complete_s=2.0)
    assert good.passed()
    bad = [{"lost": 1}, {"teacher_complete_s": 3.5}, {"p95_s": 1.2}, {"recorded": 59}]
    bad += [{"errors": ["answer: not recorded"]}, {"teacher_complete_s": float("inf")}]
    for change in bad:
        assert not Report(**{**good.__dict__, **change}).passed(), change
    assert "answers lost: 1 (target 0)" in Report(**{**good.__dict__, "lost": 1}).lines()


def test_the_issue_s_command_line_is_the_default() -> None:
    args = parse(["--workers", "2", "--class", "60"])
    assert (args.workers, args.students, args.window, args.store) == (2, 60, 10.0, None)
