"""Speed benchmark of the norms: composite vs fused kernels, torch's own, the core's public calls
and plain copies, as multiples of ``x.clone()``.

docs/speed.md, "The kernels", lists the cases. Every case is timed in one run with its rounds
interleaved in a shuffled order; each case's median is reported with its spread (fastest to
slowest round), so that one slow round cannot set a headline."""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS
from core.fast import KERNELS, available_cores, fresh, fused_norm
from core.norms import layer_norm, rms_norm

DEFAULT_ROWS = 4096
DEFAULT_COLS = 4096
# 15 rounds of ten cases at the default size: enough for a stable median (the spread printed
# beside it says whether it was) without keeping a shared machine busy long (``time python -m
# benchmarks.bench`` says how long here).
DEFAULT_REPEATS = 15
# The targets for the fused RMSNorm on the CPU: at most this many times a copy into memory
# allocated as its output is (a large one on huge pages, where x.clone()'s has 4 KiB); into fresh
# memory no slower than torch's fused F.layer_norm; into an existing buffer at most this many
# times buffer.copy_(x), the memory system's limit for one read and one write of x.
TARGET_VS_CLONE = 1.1
TARGET_VS_LAYER_NORM = 1.0
TARGET_INTO_BUFFER = 1.15

_DTYPES = {"float32": torch.float32, "float64": torch.float64}

Case = tuple[str, str, Callable[[], torch.Tensor]]


@dataclass(frozen=True)
class Timing:
    """One case: its median time, the rate it implies and its time as multiples of the copy."""

    group: str
    label: str
    median_s: float
    gb_per_s: float
    vs_clone: float
    fastest_vs_clone: float
    slowest_vs_clone: float
    vs_device_copy: float  # share of buffer.copy_(x)'s GB/s


@dataclass(frozen=True)
class BenchResult:
    """Everything one run measured, ready to print."""

    shape: tuple[int, int]
    dtype: torch.dtype
    device: torch.device
    device_name: str
    threads: int
    repeats: int
    timings: list[Timing]
    agreement: dict[str, float]  # max |y - torch's| / max |torch's|, per kernel

    def timing(self, label: str) -> Timing:
        return next(t for t in self.timings if t.label == label)


def cases(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, device_type: str
) -> list[Case]:
    """The cases timed on ``device_type`` ("cpu" or "cuda"), on the given tensors.

    Every norm gets a weight, and LayerNorm a bias, as inside a model layer. The fused numba
    kernels run on the CPU only; on CUDA torch's own functions are the fused kernels."""
    buffer = torch.empty_like(x)
    shape = (x.shape[-1],)
    techniques = ("composite", "fused") if device_type == "cpu" else ("composite",)
    torch_own = {
        "rms": lambda: F.rms_norm(x, shape, weight, DEFAULT_RMS_EPS),
        "layer": lambda: F.layer_norm(x, shape, weight, bias, DEFAULT_LAYER_EPS),
    }
    core_own = {
        "rms": lambda: rms_norm(x, weight, eps=DEFAULT_RMS_EPS),
        "layer": lambda: layer_norm(x, weight, bias, eps=DEFAULT_LAYER_EPS),
    }
    listed: list[Case] = [
        ("copy", "x.clone()", x.clone),
        ("copy", "buffer.copy_(x)", lambda: buffer.copy_(x)),
    ]
    if device_type == "cpu":
        # The floor for the fused kernels' fresh outputs: a copy into memory allocated as theirs
        # is (core.fast.fresh: huge pages for a large one), where x.clone() takes torch's.
        listed.append(("copy", "copy into fresh", lambda: fresh(x.shape, x.dtype).copy_(x)))
    for norm, eps in (("rms", DEFAULT_RMS_EPS), ("layer", DEFAULT_LAYER_EPS)):
        b = bias if norm == "layer" else None
        for technique in techniques:
            kernel = KERNELS[(norm, technique)]
            listed.append(
                (norm, f"{technique} {norm}", lambda k=kernel, b=b, e=eps: k(x, weight, b, e))
            )
        if device_type == "cpu":
            into = lambda n=norm, b=b, e=eps: fused_norm(n, x, weight, b, e, out=buffer)[0]  # noqa: E731
            listed.append((norm, f"fused {norm}, buffer", into))
        listed.append((norm, f"F.{norm}_norm", torch_own[norm]))
        listed.append((norm, f"core.{norm}_norm", core_own[norm]))
    return listed


def _timer(device: torch.device) -> Callable[[Callable[[], torch.Tensor]], float]:
    """Seconds for one call; the result is freed only after the clock stops."""
    if device.type == "cuda":

        def time_cuda(fn: Callable[[], torch.Tensor]) -> float:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device)
            start.record()
            result = fn()
            end.record()
            end.synchronize()
            del result
            return start.elapsed_time(end) / 1e3  # events report milliseconds

        return time_cuda

    def time_host(fn: Callable[[], torch.Tensor]) -> float:
        start = time.perf_counter()
        result = fn()  # noqa: F841 - kept alive: freeing the output is not part of the kernel
        return time.perf_counter() - start

    return time_host


def interleaved_samples(
    listed: Sequence[Case], repeats: int, clock: Callable[[Callable[[], torch.Tensor]], float]
) -> dict[str, list[float]]:
    """``repeats`` rounds; each runs every case once, in an order shuffled afresh each round
    (seeded, so a run can be repeated). A fixed or rotated order would put each case after the
    same neighbour every round, and what a case leaves behind shows in the next one's time:
    torch's OpenMP threads keep spinning for a few milliseconds after a torch operation and take
    a core from a numba kernel started then."""
    samples: dict[str, list[float]] = {label: [] for _, label, _ in listed}
    order = list(listed)
    for round_index in range(repeats):
        random.Random(round_index).shuffle(order)
        for _, label, fn in order:
            samples[label].append(clock(fn))
    return samples


def summarise(listed: Sequence[Case], samples: dict[str, list[float]], nbytes: int) -> list[Timing]:
    """Medians, GB/s and ratios. ``nbytes`` is one read plus one write of x: the least traffic
    of any out-of-place elementwise kernel, so GB/s compares kernels with the copy directly."""
    medians = {label: statistics.median(times) for label, times in samples.items()}
    clone, device_copy = medians["x.clone()"], medians["buffer.copy_(x)"]
    return [
        Timing(
            group=group,
            label=label,
            median_s=medians[label],
            gb_per_s=nbytes / medians[label] / 1e9,
            vs_clone=medians[label] / clone,
            fastest_vs_clone=min(samples[label]) / clone,
            slowest_vs_clone=max(samples[label]) / clone,
            vs_device_copy=device_copy / medians[label],
        )
        for group, label, _ in listed
    ]


def _agreement(listed: Sequence[Case]) -> dict[str, float]:
    """Each norm kernel's largest difference from torch's own, relative to its largest value."""
    # Cloned: the ", buffer" cases all write into one buffer.
    outputs = {label: fn().clone() for group, label, fn in listed if group != "copy"}
    result = {}
    for label, y in outputs.items():
        ref = outputs["F.rms_norm" if "rms" in label else "F.layer_norm"]
        result[label] = ((y - ref).abs().max() / ref.abs().max()).item()
    return result


def run_benchmark(
    rows: int = DEFAULT_ROWS,
    cols: int = DEFAULT_COLS,
    *,
    repeats: int = DEFAULT_REPEATS,
    device: str = "cpu",
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
) -> BenchResult:
    """Time every case on a (rows, cols) tensor drawn from ``seed``."""
    dev = torch.device(device)
    generator = torch.Generator().manual_seed(seed)
    x, weight, bias = (
        torch.randn(shape, generator=generator, dtype=dtype).to(dev)
        for shape in ((rows, cols), (cols,), (cols,))
    )
    listed = cases(x, weight, bias, dev.type)
    with torch.no_grad():
        agreement = _agreement(listed)  # doubles as the warm-up (and the fused kernels' compile)
        samples = interleaved_samples(listed, repeats, _timer(dev))
    return BenchResult(
        shape=(rows, cols),
        dtype=dtype,
        device=dev,
        device_name=torch.cuda.get_device_name(dev) if dev.type == "cuda" else "",
        threads=available_cores() if dev.type == "cpu" else 0,
        repeats=repeats,
        timings=summarise(listed, samples, 2 * x.numel() * x.element_size()),
        agreement=agreement,
    )


def format_table(result: BenchResult) -> str:
    """The benchmark as a plain-text table with the ratios under it."""
    dtype_name = str(result.dtype).removeprefix("torch.")
    cuda = result.device.type == "cuda"
    where = (
        f"{result.device} ({result.device_name})"
        if cuda
        else f"{result.device} ({result.threads} cores for the fused kernels, "
        f"torch {torch.get_num_threads()} threads)"
    )
    extra = f" {'% of copy_':>10}" if cuda else ""
    lines = [
        f"NormLab speed benchmark: x of shape {result.shape} {dtype_name} on {where}, "
        f"torch {torch.__version__}",
        f"{result.repeats} interleaved rounds, medians; norms get a weight (LayerNorm also a "
        "bias); GB/s counts one read and one write of x",
        "",
        f"{'':6} {'case':18} {'median ms':>10} {'GB/s':>8} {'x clone':>8} {'spread':>13}{extra}",
    ]
    for t in result.timings:
        spread = f"{t.fastest_vs_clone:.2f}-{t.slowest_vs_clone:.2f}"
        share = f" {100 * t.vs_device_copy:9.0f}%" if cuda else ""
        lines.append(
            f"{t.group:6} {t.label:18} {t.median_s * 1e3:10.3f} {t.gb_per_s:8.1f} "
            f"{t.vs_clone:7.2f}x {spread:>13}{share}"
        )
    lines += ["", *_headlines(result)]
    return "\n".join(lines)


@dataclass(frozen=True)
class CpuRatios:
    """The fused kernels' headline ratios on the CPU, each a median over another's."""

    vs_layer_norm: float  # fused RMSNorm / F.layer_norm
    vs_fresh_copy: float  # fused RMSNorm / a copy into memory allocated alike
    vs_fused_layer: float  # fused RMSNorm / fused LayerNorm
    rms_into_buffer: float  # fused RMSNorm into a buffer / buffer.copy_(x)
    layer_into_buffer: float  # fused LayerNorm into a buffer / buffer.copy_(x)


def cpu_ratios(result: BenchResult) -> CpuRatios:
    """The ratios the text table and the Markdown verdicts both state."""
    median = {t.label: t.median_s for t in result.timings}
    copy_ = median["buffer.copy_(x)"]
    return CpuRatios(
        vs_layer_norm=median["fused rms"] / median["F.layer_norm"],
        vs_fresh_copy=median["fused rms"] / median["copy into fresh"],
        vs_fused_layer=median["fused rms"] / median["fused layer"],
        rms_into_buffer=median["fused rms, buffer"] / copy_,
        layer_into_buffer=median["fused layer, buffer"] / copy_,
    )


def _headlines(result: BenchResult) -> list[str]:
    lines = []
    if result.device.type == "cpu":
        r = cpu_ratios(result)
        lines += [
            f"fused rms takes {r.vs_layer_norm:.2f}x as long as F.layer_norm, "
            f"{r.vs_fused_layer:.2f}x as long as fused layer, "
            f"{r.vs_fresh_copy:.2f}x as long as a copy into fresh memory allocated alike",
            "the kernels alone, writing into an existing buffer (no page faults), as multiples of "
            f"buffer.copy_(x): fused rms {r.rms_into_buffer:.2f}x, "
            f"fused layer {r.layer_into_buffer:.2f}x",
            f"target: fused rms into fresh memory <= {TARGET_VS_LAYER_NORM:.2f}x F.layer_norm: "
            f"{r.vs_layer_norm:.2f}x ({_held(r.vs_layer_norm <= TARGET_VS_LAYER_NORM)})",
            f"target: fused rms into an existing buffer <= {TARGET_INTO_BUFFER:.2f}x "
            f"buffer.copy_(x): {r.rms_into_buffer:.2f}x "
            f"({_held(r.rms_into_buffer <= TARGET_INTO_BUFFER)})",
        ]
    diffs = ", ".join(f"{label} {value:.1e}" for label, value in result.agreement.items())
    return [*lines, f"max |y - torch's| / max |torch's|: {diffs}"]


def markdown(result: BenchResult) -> str:
    """The benchmark as docs/speed.md's Markdown: the table, then each target with its verdict."""
    dtype_name = str(result.dtype).removeprefix("torch.")
    cuda = result.device.type == "cuda"
    where = result.device_name if cuda else f"{result.threads} CPU cores"
    lines = [
        f"`python -m benchmarks.bench`: ({result.shape[0]}, {result.shape[1]}) {dtype_name} on "
        f"{where}, torch {torch.__version__}, {result.repeats} interleaved rounds, each case's "
        "median and its spread (fastest to slowest round) as multiples of `x.clone()`'s median.",
        "",
        "| case | median ms | GB/s | × `x.clone()` | spread |" + (" % of copy |" if cuda else ""),
        "| --- | ---: | ---: | ---: | ---: |" + (" ---: |" if cuda else ""),
    ]
    for t in result.timings:
        share = f" {100 * t.vs_device_copy:.0f} % |" if cuda else ""
        lines.append(
            f"| `{t.label}` | {t.median_s * 1e3:.2f} | {t.gb_per_s:.1f} | {t.vs_clone:.2f} | "
            f"{t.fastest_vs_clone:.2f}–{t.slowest_vs_clone:.2f} |{share}"
        )
    if not cuda:
        lines += ["", *(f"- {line}" for line in _verdicts(result))]
    return "\n".join(lines)


def _verdicts(result: BenchResult) -> list[str]:
    """The CPU targets, each with the ratio measured in this run and whether it holds."""
    vs_clone, r = result.timing("fused rms").vs_clone, cpu_ratios(result)
    return [
        f"fused RMSNorm ≤ {TARGET_VS_CLONE}× a copy into fresh memory allocated as its output is "
        f"(`copy into fresh`): {r.vs_fresh_copy:.2f}× "
        f"({_held(r.vs_fresh_copy <= TARGET_VS_CLONE)}); against `x.clone()`, whose output "
        f"takes torch's allocation, {vs_clone:.2f}×",
        f"fused RMSNorm into fresh memory no slower than `F.layer_norm`: {r.vs_layer_norm:.2f}× "
        f"its time ({_held(r.vs_layer_norm <= TARGET_VS_LAYER_NORM)})",
        f"fused RMSNorm into an existing buffer ≤ {TARGET_INTO_BUFFER}× `buffer.copy_(x)`: "
        f"{r.rms_into_buffer:.2f}× ({_held(r.rms_into_buffer <= TARGET_INTO_BUFFER)})",
        f"fused RMSNorm against the fused LayerNorm written the same way: "
        f"{r.vs_fused_layer:.2f}× its time",
        f"the kernels alone, into an existing buffer (no page faults), against "
        f"`buffer.copy_(x)`: RMSNorm {r.rms_into_buffer:.2f}×, LayerNorm "
        f"{r.layer_into_buffer:.2f}×",
    ]


def _held(ok: bool) -> str:
    return "met" if ok else "not met"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: parse flags, run the benchmark, print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench",
        description="Time RMSNorm and LayerNorm kernels (composite, fused, torch) against copies.",
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
    from benchmarks.app import load_line

    print(f"Start: {load_line()}", flush=True)
    result = run_benchmark(
        args.rows, args.cols, repeats=args.repeats, device=args.device, dtype=_DTYPES[args.dtype]
    )
    print(format_table(result))
    print(f"End: {load_line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
