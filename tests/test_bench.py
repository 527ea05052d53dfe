"""benchmarks.bench: the ratios it computes, its CUDA table (exercised on the CPU) and a smoke
run of its command line. No timing is asserted."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks.bench import (
    BenchResult,
    cases,
    format_table,
    interleaved_samples,
    main,
    markdown,
    summarise,
)

REPO_ROOT = Path(__file__).resolve().parents[1]


def _tensors(rows=8, cols=32):
    gen = torch.Generator().manual_seed(0)
    return tuple(torch.randn(shape, generator=gen) for shape in ((rows, cols), (cols,), (cols,)))


def _result(device, timings, *, device_name="", threads=0, agreement=None):
    """A BenchResult of three rounds on (8, 32) float32 with the given timings."""
    return BenchResult(
        shape=(8, 32),
        dtype=torch.float32,
        device=torch.device(device),
        device_name=device_name,
        threads=threads,
        repeats=3,
        timings=timings,
        agreement=agreement or {},
    )


def _fake_clock(seconds_by_call):
    """A clock that runs the case and reports the next scripted duration."""
    durations = iter(seconds_by_call)

    def clock(fn):
        fn()
        return next(durations)

    return clock


def test_cpu_cases_cover_both_techniques_torch_and_core():
    labels = [label for _, label, _ in cases(*_tensors(), "cpu")]
    assert labels == [
        "x.clone()",
        "buffer.copy_(x)",
        "copy into fresh",
        "composite rms",
        "fused rms",
        "fused rms, buffer",
        "F.rms_norm",
        "core.rms_norm",
        "composite layer",
        "fused layer",
        "fused layer, buffer",
        "F.layer_norm",
        "core.layer_norm",
    ]


def test_cuda_cases_run_and_summarise_on_cpu_tensors():
    # The CUDA table has no numba kernels; its cases and its share-of-copy column are computed
    # the same way on any device, so CPU tensors exercise them.
    listed = cases(*_tensors(), "cuda")
    assert [label for _, label, _ in listed if "fused" in label] == []
    ran = interleaved_samples(listed, 1, _fake_clock([0.0] * len(listed)))  # each case runs
    assert set(ran) == {label for _, label, _ in listed}
    # Case i takes (i + 1) ms in each of three rounds: the clone 1 ms, buffer.copy_ 2 ms.
    samples = {label: [(i + 1) * 1e-3] * 3 for i, (_, label, _) in enumerate(listed)}
    timings = summarise(listed, samples, nbytes=2_000_000)
    clone, device_copy = timings[0], timings[1]
    assert clone.vs_clone == 1.0 and clone.gb_per_s == pytest.approx(2.0)
    assert device_copy.vs_device_copy == 1.0
    assert timings[3].vs_clone == pytest.approx(4.0)
    assert timings[3].vs_device_copy == pytest.approx(0.5)
    result = _result("cuda", timings, device_name="a GPU", agreement={"core.rms_norm": 1e-7})
    table = format_table(result)
    assert "cuda (a GPU)" in table and "% of copy_" in table
    f_rms_norm = next(line for line in table.splitlines() if "F.rms_norm" in line)
    assert f_rms_norm.endswith(" 50%")  # 4 ms against buffer.copy_'s 2 ms


def test_interleaving_shuffles_the_order_and_times_every_case_each_round():
    listed = [("g", label, lambda label=label: order.append(label)) for label in "abcdef"]
    order: list[str] = []
    samples = interleaved_samples(listed, 12, _fake_clock([0.0] * 72))
    rounds = ["".join(order[i : i + 6]) for i in range(0, 72, 6)]
    assert all(sorted(r) == list("abcdef") for r in rounds)  # every case once a round
    assert all(len(times) == 12 for times in samples.values())
    # Not the same neighbour every round: "b" follows at least three different cases.
    before_b = {r[r.index("b") - 1] for r in rounds if not r.startswith("b")}
    assert len(before_b) >= 3
    again: list[str] = []
    interleaved_samples(
        [("g", c, lambda c=c: again.append(c)) for c in "abcdef"], 12, _fake_clock([0.0] * 72)
    )
    assert again == order  # seeded: a run can be repeated


def test_summary_ratios_and_spread():
    listed = [("copy", "x.clone()", None), ("copy", "buffer.copy_(x)", None), ("rms", "k", None)]
    samples = {
        "x.clone()": [2.0, 1.0, 3.0],
        "buffer.copy_(x)": [1.0, 1.0, 1.0],
        "k": [4.0, 2.0, 6.0],
    }
    k = summarise(listed, samples, nbytes=4_000_000_000)[2]
    assert (k.median_s, k.vs_clone, k.fastest_vs_clone, k.slowest_vs_clone) == (4.0, 2.0, 1.0, 3.0)
    assert k.gb_per_s == 1.0


def test_cli_prints_the_table(capsys):
    assert main(["--rows", "64", "--cols", "256", "--repeats", "2"]) == 0
    out = capsys.readouterr().out
    assert "(64, 256) float32 on cpu" in out
    lines = out.splitlines()
    assert lines[0].startswith("Start: load average ")
    assert lines[-1].startswith("End: load average ")
    for label in ["x.clone()", "fused rms", "composite layer", "F.rms_norm", "core.layer_norm"]:
        assert label in out
    clone_line = next(line for line in out.splitlines() if "x.clone()" in line)
    assert " 1.00x " in clone_line  # the copy is the unit of the ratio column
    assert "as long as F.layer_norm" in out and "max |y - torch's|" in out
    assert "as long as a copy into fresh memory allocated alike" in out
    assert "the kernels alone" in out and "fused rms, buffer" in out
    # Both kernel targets, each with its ratio and its verdict.
    for target in ("<= 1.00x F.layer_norm: ", "<= 1.15x buffer.copy_(x): "):
        line = next(line for line in out.splitlines() if target in line)
        assert line.startswith("target: fused rms") and line.endswith(("(met)", "(not met)"))
    # The fused kernels that write into the one shared buffer are each checked on their own.
    agreement = out.split("max |y - torch's| / max |torch's|: ")[1]
    assert "fused rms, buffer" in agreement and "fused layer, buffer" in agreement


def test_cli_rejects_non_positive_sizes(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--rows", "0"])
    assert stop.value.code == 2
    assert "positive" in capsys.readouterr().err


@pytest.mark.slow  # a fresh interpreter imports torch: several seconds on a busy machine
def test_module_runs_as_a_script():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "python -m benchmarks.bench" in done.stdout


def _cpu_result(ms_by_label):
    """A CPU BenchResult whose cases take the given milliseconds in each of three rounds."""
    listed = cases(*_tensors(), "cpu")
    samples = {label: [ms_by_label[label] * 1e-3] * 3 for _, label, _ in listed}
    return _result("cpu", summarise(listed, samples, nbytes=2_000_000), threads=2)


def test_markdown_has_a_row_per_case_and_the_verdicts_follow_the_ratios():
    ms = {label: 10.0 for _, label, _ in cases(*_tensors(), "cpu")}
    ms.update({"buffer.copy_(x)": 4.0, "fused rms, buffer": 5.0, "fused layer, buffer": 6.0})
    ms.update({"fused rms": 10.5, "F.layer_norm": 11.0, "fused layer": 12.0})
    text = markdown(_cpu_result(ms))
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(ms)
    assert "| `fused rms` | 10.50 | 0.2 | 1.05 | 1.05–1.05 |" in rows
    assert "fused RMSNorm ≤ 1.1× a copy into fresh memory" in text
    assert "(`copy into fresh`): 1.05× (met); against `x.clone()`" in text
    assert "no slower than `F.layer_norm`: 0.95× its time (met)" in text
    assert "into an existing buffer ≤ 1.15× `buffer.copy_(x)`: 1.25× (not met)" in text
    assert "written the same way: 0.88× its time" in text
    assert "RMSNorm 1.25×, LayerNorm 1.50×" in text
    # Equal to F.layer_norm is no slower; 1.15× the copy is within its bound.
    ms.update({"fused rms": 11.0, "fused rms, buffer": 4.6})
    text = markdown(_cpu_result(ms))
    assert "1.00× its time (met)" in text and "`buffer.copy_(x)`: 1.15× (met)" in text
    # Slower than every bound: the verdicts turn.
    ms.update({"fused rms": 11.5, "fused rms, buffer": 4.8})
    text = markdown(_cpu_result(ms))
    assert "(`copy into fresh`): 1.15× (not met); against `x.clone()`" in text
    assert "1.15× (not met)" in text and "1.05× its time (not met)" in text
    assert "`buffer.copy_(x)`: 1.20× (not met)" in text


@pytest.mark.browser
@pytest.mark.slow  # two servers and a browser: several seconds
def test_wire_launcher_sends_fewer_bytes_than_plain_streamlit(capsys):
    # One page on both servers: the launcher's gzip must show on the wire, and the table print
    # (not waiting for its Zopfli pass: a low-priority thread, on a machine the suite keeps busy).
    from benchmarks import wire
    from benchmarks.live import CHROMIUM
    from tests.serve_util import need_debian, need_haproxy

    need_debian(CHROMIUM, "chromium")
    need_haproxy()
    assert wire.main(["--pages", "lesson", "--unpacked"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| lesson | "))
    files, plain_mb, proxy_mb, ratio = row.split(" | ")[1:5]
    assert int(files) > 10 and 0 < float(proxy_mb) < float(plain_mb)
    assert float(ratio) < 1.0
    assert "| page | files | MB plain | MB via launcher | ratio |" in out
    assert "lesson via the launcher" in out and ("PASS: " in out or "FAIL: " in out)


@pytest.mark.slow  # a server, a few sessions, and the closed sessions' TTL waited out
def test_sessions_prints_the_rss_after_each_hundred_and_after_the_ttl(capsys):
    from benchmarks import sessions

    own_thread(
        sessions.main,
        ["--sessions", "4", "--wave", "2", "--every", "2", "--ttl", "0", "--idle", "1"],
    )
    out = capsys.readouterr().out
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| ")][2:]
    assert [row[0] for row in rows] == ["| 2", "| 4", "| 5, after 1 s idle"]
    assert all(float(row[1]) > 50 for row in rows)  # a Streamlit worker's MB
    assert "; 0 errors" in out and ("PASS: " in out or "FAIL: " in out)


@pytest.mark.slow  # a server and one small training
def test_train_class_trains_once_for_students_pressing_together(capsys):
    from benchmarks import train_class

    assert own_thread(train_class.main, ["--students", "2"]) == 0
    out = capsys.readouterr().out
    assert "students: 2, workers: 1; trainings run: 1; results shown: 2" in out


def own_thread(main, argv: list[str]) -> int:
    """``main(argv)`` in a thread of its own: a browser test in this process leaves Playwright's
    sync API holding this thread's event loop, where ``asyncio.run`` refuses to start."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(main, argv).result()
