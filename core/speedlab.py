"""Speed lab: time RMSNorm, LayerNorm and a plain copy over widths and batch sizes, within a cap.

A norm reads every element of x and writes every element of y, the same traffic as a copy, so a
copy of the same tensor is the floor and each norm's time is reported as a multiple of it. What
decides the multiple is how the norm is implemented, not how many arithmetic operations it has:
``F.layer_norm`` is one fused kernel on CPU and CUDA, ``F.rms_norm`` on CPU is a composite of
several full-tensor kernels, ``core.fast.rms_norm_fast`` makes two passes with one fresh output,
and the numpy versions make one full pass (and one temporary) per operation.

The measurement runs inside a public demo, so it is bounded: widths up to ``MAX_WIDTH``, batches
up to ``MAX_BATCH``, at most ``MAX_TENSOR_BYTES`` per tensor, a total time cap checked before
every sample, and one measurement per process at a time (``exclusive``). torch is imported only
for the torch implementation; the numpy path needs numpy alone.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "IMPLEMENTATIONS",
    "KERNELS",
    "MAX_BATCH",
    "MAX_TENSOR_BYTES",
    "MAX_WIDTH",
    "MEASURE_LOCK",
    "PAPER_CITATION",
    "PAPER_SAVING",
    "TIME_CAP_S",
    "Measurement",
    "SpeedRun",
    "exclusive",
    "kernels_for",
    "measure",
    "saving",
    "sweep_points",
]

# Real hidden sizes reach 8192 (Llama-3 70B); a batch of 4096 rows is a typical token count.
MAX_WIDTH = 8192
MAX_BATCH = 4096
# One float32 tensor of 16 MiB is 4M elements (e.g. 1024 x 4096). The numpy LayerNorm keeps x,
# its output, a copy buffer and about three full-size temporaries alive at once, so the peak
# stays near 100 MiB, under the 200 MB a shared demo can give one visitor.
MAX_TENSOR_BYTES = 16 << 20
# One run of the lab holds the CPU for at most this long; the sweep stops where it is then.
TIME_CAP_S = 2.0
# Smallest sweep points: below these, Python call overhead, not memory, is what gets timed.
MIN_SWEEP_WIDTH = 64
MIN_SWEEP_BATCH = 1

# Zhang & Sennrich (2019), "Root Mean Square Layer Normalization", NeurIPS, abstract: RMSNorm
# "reduces the running time by 7%~64% on different models" compared with LayerNorm.
PAPER_SAVING = (0.07, 0.64)
PAPER_CITATION = "Zhang & Sennrich (2019), Root Mean Square Layer Normalization, NeurIPS"

# The same eps defaults as core.fast: LLaMA/T5 style RMSNorm, nn.LayerNorm.
RMS_EPS = 1e-6
LAYER_EPS = 1e-5

IMPLEMENTATIONS = ("numpy", "torch")
DTYPES = ("float32", "float64")

# Kernel names, in the order they are plotted. ``rms_fast`` is core.fast.rms_norm_fast, which
# only differs from F.rms_norm on the CPU.
KERNELS = ("copy", "rms", "layer", "rms_fast")

# Only one measurement may run per server process: two visitors timing at once would each
# measure the other's load, and queued runs would stack up CPU work nobody waits for.
MEASURE_LOCK = threading.Lock()


@contextmanager
def exclusive(lock: threading.Lock = MEASURE_LOCK) -> Iterator[bool]:
    """Try to take the measurement lock without waiting; yield whether it was taken.

    ``with exclusive() as ok:`` runs the body either way; when ``ok`` is False another
    measurement is running and the caller should say "busy" instead of measuring.
    """
    acquired = lock.acquire(blocking=False)
    try:
        yield acquired
    finally:
        if acquired:
            lock.release()


@dataclass(frozen=True)
class Measurement:
    """One kernel at one shape: median seconds over the samples taken, and derived rates.

    ``bytes_moved`` counts one read of x and one write of y (the weight and bias are d values,
    negligible next to batch * d); ``gb_per_s`` is that over the median; ``vs_copy`` is the median
    over the copy's median at the same shape.
    """

    kernel: str
    batch: int
    width: int
    samples: int
    median_s: float
    bytes_moved: int
    gb_per_s: float
    vs_copy: float


@dataclass(frozen=True)
class SpeedRun:
    """Everything one run measured, and what it had to leave out.

    ``complete`` is False when the time cap stopped the sweep; ``skipped`` lists the (batch,
    width) points over ``MAX_TENSOR_BYTES``; ``unmeasured`` those the cap left untouched.
    """

    implementation: str
    device: str
    dtype: str
    threads: int
    repeats: int
    time_cap_s: float
    elapsed_s: float
    complete: bool
    measurements: tuple[Measurement, ...]
    skipped: tuple[tuple[int, int], ...]
    unmeasured: tuple[tuple[int, int], ...]

    def at(self, batch: int, width: int) -> dict[str, Measurement]:
        """The measurements of one shape, by kernel name."""
        return {m.kernel: m for m in self.measurements if (m.batch, m.width) == (batch, width)}

    def shapes(self) -> list[tuple[int, int]]:
        """The (batch, width) points measured, in sweep order."""
        return list(dict.fromkeys((m.batch, m.width) for m in self.measurements))


def sweep_points(lo: int, hi: int, *, max_points: int = 8) -> list[int]:
    """Powers of two from ``lo`` to ``hi`` (both included), thinned to at most ``max_points``.

    ``hi`` is always the last point, so the largest size the visitor chose is measured.
    """
    if lo < 1 or hi < lo:
        raise ValueError(f"need 1 <= lo <= hi; got lo={lo}, hi={hi}")
    points = [1 << k for k in range(int(np.log2(lo)), int(np.log2(hi)) + 1)]
    points = [p for p in points if lo <= p < hi] + [hi]
    if len(points) > max_points:
        step = int(np.ceil((len(points) - 1) / (max_points - 1)))
        points = points[-1::-step][::-1]
    return points


def saving(rms_s: float, layer_s: float) -> float:
    """The running time RMSNorm saves against LayerNorm: ``1 - t_rms / t_layer``.

    Negative when RMSNorm is the slower one. The paper's 7 %-64 % is this number.
    """
    return 1.0 - rms_s / layer_s


def kernels_for(implementation: str, device: str) -> tuple[str, ...]:
    """The kernels a run times: the two-pass RMSNorm only where it differs (torch on CPU)."""
    if implementation == "torch" and device == "cpu":
        return KERNELS
    return KERNELS[:3]


def _numpy_cases(
    batch: int, width: int, dtype: str, rng: np.random.Generator
) -> dict[str, Callable[[], Any]]:
    x = rng.standard_normal((batch, width)).astype(dtype)
    weight = rng.standard_normal(width).astype(dtype)
    bias = rng.standard_normal(width).astype(dtype)
    eps_rms, eps_layer = np.asarray(RMS_EPS, dtype), np.asarray(LAYER_EPS, dtype)

    def rms() -> np.ndarray:
        mean_square = np.mean(x * x, axis=-1, keepdims=True)  # (b, d) -> (b, 1)
        return x / np.sqrt(mean_square + eps_rms) * weight

    def layer() -> np.ndarray:
        centred = x - np.mean(x, axis=-1, keepdims=True)  # (b, d) -> (b, 1)
        variance = np.mean(centred * centred, axis=-1, keepdims=True)  # (b, d) -> (b, 1)
        return centred / np.sqrt(variance + eps_layer) * weight + bias

    return {"copy": x.copy, "rms": rms, "layer": layer}


def _torch_cases(
    batch: int, width: int, dtype: str, device: str, seed: int
) -> dict[str, Callable[[], Any]]:
    import torch
    import torch.nn.functional as F

    from core.fast import rms_norm_fast

    generator = torch.Generator().manual_seed(seed)
    kind = getattr(torch, dtype)
    x = torch.randn(batch, width, generator=generator, dtype=kind).to(device)
    weight = torch.randn(width, generator=generator, dtype=kind).to(device)
    bias = torch.randn(width, generator=generator, dtype=kind).to(device)
    shape = (width,)
    cases = {
        "copy": x.clone,
        "rms": lambda: F.rms_norm(x, shape, weight, RMS_EPS),
        "layer": lambda: F.layer_norm(x, shape, weight, bias, LAYER_EPS),
    }
    if device == "cpu":
        cases["rms_fast"] = lambda: rms_norm_fast(x, weight, RMS_EPS)
    return cases


def _timer(device: str) -> Callable[[Callable[[], Any]], float]:
    """A function timing one call in seconds; on CUDA it waits for the GPU before and after."""
    if device == "cuda":
        import torch

        def time_cuda(fn: Callable[[], Any]) -> float:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            result = fn()
            torch.cuda.synchronize()
            elapsed = time.perf_counter() - t0
            del result
            return elapsed

        return time_cuda

    def time_host(fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - t0
        # Freed after the clock stops, so deallocation is not charged to the kernel.
        del result
        return elapsed

    return time_host


def _check(name: str, values: Sequence[int], hi: int) -> list[int]:
    checked = [int(v) for v in values]
    if not checked or any(not 1 <= v <= hi for v in checked):
        raise ValueError(f"{name} must be a non-empty list of integers from 1 to {hi}: {values}")
    return checked


def measure(
    widths: Sequence[int],
    batches: Sequence[int],
    *,
    implementation: str = "numpy",
    device: str = "cpu",
    dtype: str = "float32",
    repeats: int = 5,
    time_cap_s: float = TIME_CAP_S,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> SpeedRun:
    """Time copy, RMSNorm and LayerNorm for every (batch, width) pair, within ``time_cap_s``.

    Each shape gets one warm-up call per kernel, then ``repeats`` rounds in which every kernel
    runs once, in a rotating order so that drifting machine load falls on all kernels alike; the
    median of each kernel's samples is kept. The clock is checked before every call: when the cap
    is reached the run stops, keeps the shapes finished so far (a half-measured shape is dropped)
    and reports ``complete=False``. ``progress(done, total)`` is called after each shape.

    Raises ValueError for sizes out of range, an unknown implementation, dtype or device, and
    for torch or CUDA when they are not available.
    """
    widths = _check("widths", widths, MAX_WIDTH)
    batches = _check("batches", batches, MAX_BATCH)
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}; got {implementation!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}; got {dtype!r}")
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1; got {repeats}")
    if implementation == "numpy" and device != "cpu":
        raise ValueError(f"the numpy implementation runs on the cpu only; got device={device!r}")
    if implementation == "torch":
        from core.device import available_devices

        if device not in available_devices():
            raise ValueError(f"device {device!r} is not available; have {available_devices()}")

    itemsize = np.dtype(dtype).itemsize
    shapes = [(b, w) for b in batches for w in widths]
    skipped = tuple(s for s in shapes if s[0] * s[1] * itemsize > MAX_TENSOR_BYTES)
    todo = [s for s in shapes if s not in skipped]
    kernels = kernels_for(implementation, device)
    timer = _timer(device)
    rng = np.random.default_rng(seed)
    threads = 1
    if implementation == "torch":
        import torch

        threads = torch.get_num_threads()

    start = time.perf_counter()
    deadline = start + time_cap_s
    measurements: list[Measurement] = []
    done = 0
    for batch, width in todo:
        if time.perf_counter() >= deadline:
            break
        if implementation == "numpy":
            cases = _numpy_cases(batch, width, dtype, rng)
        else:
            cases = _torch_cases(batch, width, dtype, device, seed)
        samples = _sample(cases, kernels, repeats, timer, deadline)
        if samples is None:
            break
        measurements += _summarise(samples, batch, width, itemsize)
        done += 1
        if progress is not None:
            progress(done, len(todo))
    elapsed = time.perf_counter() - start
    return SpeedRun(
        implementation=implementation,
        device=device,
        dtype=dtype,
        threads=threads,
        repeats=repeats,
        time_cap_s=time_cap_s,
        elapsed_s=elapsed,
        complete=done == len(todo),
        measurements=tuple(measurements),
        skipped=skipped,
        unmeasured=tuple(todo[done:]),
    )


def _sample(
    cases: dict[str, Callable[[], Any]],
    kernels: Sequence[str],
    repeats: int,
    timer: Callable[[Callable[[], Any]], float],
    deadline: float,
) -> dict[str, list[float]] | None:
    """Warm-up plus ``repeats`` rotating rounds; None when the deadline cut the shape short.

    No tensor here requires a gradient, so torch records no autograd history without no_grad.
    """
    samples: dict[str, list[float]] = {k: [] for k in kernels}
    calls = [(None, k) for k in kernels] + [
        (round_index, k)
        for round_index in range(repeats)
        for k in kernels[round_index % len(kernels) :] + kernels[: round_index % len(kernels)]
    ]
    for round_index, kernel in calls:
        if time.perf_counter() >= deadline:
            return None
        elapsed = timer(cases[kernel])
        if round_index is not None:
            samples[kernel].append(elapsed)
    return samples


def _summarise(
    samples: dict[str, list[float]], batch: int, width: int, itemsize: int
) -> list[Measurement]:
    bytes_moved = 2 * batch * width * itemsize
    medians = {k: statistics.median(v) for k, v in samples.items()}
    return [
        Measurement(
            kernel=kernel,
            batch=batch,
            width=width,
            samples=len(times),
            median_s=medians[kernel],
            bytes_moved=bytes_moved,
            gb_per_s=bytes_moved / medians[kernel] / 1e9,
            vs_copy=medians[kernel] / medians["copy"],
        )
        for kernel, times in samples.items()
    ]
