"""Speed benchmark: the core's public rms_norm and layer_norm (which dispatch plain calls to
core.fast) against torch.nn.functional and a plain copy.

Run ``python -m core.bench [--rows R] [--cols C] [--repeats N] [--device cpu|cuda] [--dtype ...]``.

Normalizing a tensor is memory bound: it reads every element and writes every element, so a
copy of the same tensor is the floor, and the interesting number is each kernel's time as a
multiple of that copy. Machines are noisy, so all cases are timed in one run with their
repetitions interleaved (each round runs every case once, in a rotating order) and the median of
each case is reported.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.fast import LAYER_NORM_EPS, RMS_NORM_EPS
from core.norms import layer_norm, rms_norm

DEFAULT_ROWS = 4096
DEFAULT_COLS = 4096
# 15 rounds of six cases take about 3 s at the default size on a 2-core CPU: enough for a
# stable median without keeping a shared machine busy.
DEFAULT_REPEATS = 15

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True)
class Timing:
    """One benchmarked case: its median time and derived rates."""

    group: str
    label: str
    median_s: float
    gb_per_s: float
    vs_copy: float


@dataclass(frozen=True)
class BenchResult:
    """Everything one benchmark run measured, ready to print."""

    shape: tuple[int, int]
    dtype: torch.dtype
    device: torch.device
    threads: int
    repeats: int
    timings: list[Timing]
    rms_speedup: float
    layer_norm_speedup: float
    rms_max_abs_diff: float
    layer_norm_max_abs_diff: float


def _time_once(fn: Callable[[], torch.Tensor], device: torch.device) -> float:
    """Seconds for one call of ``fn``; the result is freed only after the clock stops."""
    if device.type == "cuda":
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(device)
        start.record()
        result = fn()
        end.record()
        end.synchronize()
        del result
        return start.elapsed_time(end) / 1e3  # events report milliseconds
    t0 = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - t0
    del result
    return elapsed


def run_benchmark(
    rows: int = DEFAULT_ROWS,
    cols: int = DEFAULT_COLS,
    *,
    repeats: int = DEFAULT_REPEATS,
    device: str = "cpu",
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
) -> BenchResult:
    """Time the core's norms, ``F.rms_norm``, ``F.layer_norm`` and copies of a (rows, cols) tensor.

    Every norm gets a weight, and LayerNorm a bias, as inside a model layer.
    """
    dev = torch.device(device)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=generator, dtype=dtype).to(dev)
    weight = torch.randn(cols, generator=generator, dtype=dtype).to(dev)
    bias = torch.randn(cols, generator=generator, dtype=dtype).to(dev)
    buffer = torch.empty_like(x)
    shape = (cols,)

    cases: list[tuple[str, str, Callable[[], torch.Tensor]]] = [
        ("copy", "x.clone()", lambda: x.clone()),
        ("copy", "buffer.copy_(x), no allocation", lambda: buffer.copy_(x)),
        ("core", "core.rms_norm", lambda: rms_norm(x, weight, eps=RMS_NORM_EPS)),
        ("torch", "F.rms_norm", lambda: F.rms_norm(x, shape, weight, RMS_NORM_EPS)),
        (
            "core",
            "core.layer_norm",
            lambda: layer_norm(x, weight, bias, eps=LAYER_NORM_EPS),
        ),
        ("torch", "F.layer_norm", lambda: F.layer_norm(x, shape, weight, bias, LAYER_NORM_EPS)),
    ]

    with torch.no_grad():
        # The warm-up outputs double as the agreement check printed under the table.
        warm = {label: fn() for _, label, fn in cases}
        rms_diff = (warm["core.rms_norm"] - warm["F.rms_norm"]).abs().max().item()
        ln_diff = (warm["core.layer_norm"] - warm["F.layer_norm"]).abs().max().item()
        del warm

        samples: dict[str, list[float]] = {label: [] for _, label, _ in cases}
        for round_index in range(repeats):
            shift = round_index % len(cases)
            for _, label, fn in cases[shift:] + cases[:shift]:
                samples[label].append(_time_once(fn, dev))

    medians = {label: statistics.median(times) for label, times in samples.items()}
    # Minimum traffic of any out-of-place elementwise op: read x once, write the result once.
    bytes_moved = 2 * x.numel() * x.element_size()
    copy_s = medians["x.clone()"]
    timings = [
        Timing(
            group,
            label,
            medians[label],
            bytes_moved / medians[label] / 1e9,
            medians[label] / copy_s,
        )
        for group, label, _ in cases
    ]
    return BenchResult(
        shape=(rows, cols),
        dtype=dtype,
        device=dev,
        threads=torch.get_num_threads(),
        repeats=repeats,
        timings=timings,
        rms_speedup=medians["F.rms_norm"] / medians["core.rms_norm"],
        layer_norm_speedup=medians["F.layer_norm"] / medians["core.layer_norm"],
        rms_max_abs_diff=rms_diff,
        layer_norm_max_abs_diff=ln_diff,
    )


def format_table(result: BenchResult) -> str:
    """The benchmark as a plain-text table with the ratios under it."""
    dtype_name = str(result.dtype).removeprefix("torch.")
    where = (
        f"{result.device} ({result.threads} threads)"
        if result.device.type == "cpu"
        else f"{result.device} ({torch.cuda.get_device_name(result.device)})"
    )
    lines = [
        f"NormLab speed benchmark: x of shape {result.shape} {dtype_name} on {where}, "
        f"torch {torch.__version__}",
        f"{result.repeats} interleaved rounds, medians; norms get a weight (LayerNorm also a "
        "bias); GB/s counts one read and one write of x",
        "",
        f"{'':6} {'case':32} {'median ms':>10} {'GB/s':>8} {'vs copy':>8}",
    ]
    for t in result.timings:
        lines.append(
            f"{t.group:6} {t.label:32} {t.median_s * 1e3:10.3f} {t.gb_per_s:8.1f} {t.vs_copy:7.2f}x"
        )
    lines += [
        "",
        f"core vs F (F time / core time): rms_norm {result.rms_speedup:.2f}x, "
        f"layer_norm {result.layer_norm_speedup:.2f}x",
        f"agreement, max |core - F|: rms_norm {result.rms_max_abs_diff:.1e}, "
        f"layer_norm {result.layer_norm_max_abs_diff:.1e}",
    ]
    return "\n".join(lines)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, run the benchmark, print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m core.bench",
        description="Time RMSNorm and LayerNorm (core fast path and torch) against a copy.",
    )
    parser.add_argument("--rows", type=_positive_int, default=DEFAULT_ROWS)
    parser.add_argument("--cols", type=_positive_int, default=DEFAULT_COLS)
    parser.add_argument(
        "--repeats",
        type=_positive_int,
        default=DEFAULT_REPEATS,
        help="interleaved timing rounds; each case's median is reported",
    )
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--dtype", choices=sorted(_DTYPES), default="float32")
    args = parser.parse_args(argv)

    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: CUDA is not available in this torch build")
    result = run_benchmark(
        args.rows,
        args.cols,
        repeats=args.repeats,
        device=args.device,
        dtype=_DTYPES[args.dtype],
    )
    print(format_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
