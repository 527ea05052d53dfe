"""Speed lab, measuring: time RMSNorm, LayerNorm and a copy over widths and batches, within a cap.

A norm moves the same traffic as a copy, so a copy is the floor and each norm's time is a
multiple of it, decided by how the norm is written (:func:`labs.speed.kernels.kernel_table`).
Medians come from interleaved rounds in a rotating order, ratios taken round by round. It runs
inside a public demo, so it is bounded by the limits below and one measurement per process at a
time; it counts the calls and elements it processed, so tests bound the work without timing."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.defaults import MAX_WIDTH
from labs.speed.kernels import (
    PARTIALS,
    Kernel,
    kernel_table,
    partial_kernels,
    partial_size,
    seeded_tensors,
)

# A batch of 4096 rows is a typical token count; the widths go up to Llama-3 70B's 8192.
MAX_BATCH = 4096
# One float32 tensor of 8 MiB is 2M elements (e.g. 512 x 4096), still far beyond a core's own
# caches. The composite LayerNorm keeps x, its output and about four full-size temporaries alive
# at once, and the allocator keeps freed blocks for the next call, so a run at this cap grows
# the server by about a hundred MB, inside the 200 MB a shared demo gives one visitor.
MAX_TENSOR_BYTES = 8 << 20
# One run of the lab holds the CPU for at most this long; the sweep stops where it is then.
TIME_CAP_S = 2.0

IMPLEMENTATIONS = ("numpy", "torch")
DTYPES = ("float32", "float64")
# What times the page reads: time.perf_counter, or a fake clock a test puts here.
CLOCK: Callable[[], float] = time.perf_counter


# --- measuring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """One kernel at one shape: the seconds of every timed round, in round order.

    Round i of every kernel at a shape ran in the same interleaved round, so ratios are taken
    sample by sample. ``bytes_moved`` counts one read of x and one write of y (weight and bias
    are d values, negligible next to batch * d)."""

    kernel: str
    batch: int
    width: int
    samples: tuple[float, ...]
    bytes_moved: int

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples)

    @property
    def gb_per_s(self) -> float:
        return self.bytes_moved / self.median_s / 1e9


@dataclass(frozen=True)
class SpeedRun:
    """Everything one run measured, and what it had to leave out.

    ``complete`` is False when the time cap stopped the sweep; ``skipped`` lists the (batch,
    width) points over ``MAX_TENSOR_BYTES``; ``unmeasured`` those the cap left untouched.
    ``partial`` holds the pRMSNorm kernels at the largest shape (kernel ``"p=<p>"``), empty when
    the cap came first, and ``partial_error[p]`` the median over rows of
    |RMS from ceil(p d) coordinates / full RMS - 1> on the tensor timed. ``calls`` and
    ``elements`` count the timed calls and the elements they processed."""

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
    labels: dict[str, str] = field(default_factory=dict)
    partial: tuple[Measurement, ...] = ()
    partial_error: dict[float, float] = field(default_factory=dict)
    calls: int = 0
    elements: int = 0

    def at(self, batch: int, width: int) -> dict[str, Measurement]:
        """The measurements of one shape, by kernel name."""
        return {m.kernel: m for m in self.measurements if (m.batch, m.width) == (batch, width)}

    def shapes(self) -> list[tuple[int, int]]:
        """The (batch, width) points measured, in sweep order."""
        return list(dict.fromkeys((m.batch, m.width) for m in self.measurements))

    def partial_by_p(self) -> dict[float, Measurement]:
        return {float(m.kernel.removeprefix("p=")): m for m in self.partial}


def _check(name: str, values: Sequence[int], hi: int) -> list[int]:
    checked = [int(v) for v in values]
    if not checked or any(not 1 <= v <= hi for v in checked):
        raise ValueError(f"{name} must be a non-empty list of integers from 1 to {hi}: {values}")
    return checked


def _check_choices(implementation: str, device: str, dtype: str, repeats: int) -> None:
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


class _Session:
    """The clock, the deadline and the work counters of one run."""

    def __init__(self, clock: Callable[[], float], cap: float, device: str) -> None:
        self.clock, self.device = clock, device
        self.start = clock()
        self.deadline = self.start + cap
        self.calls = self.elements = 0

    def expired(self) -> bool:
        return self.clock() >= self.deadline

    def time(self, fn: Callable[[], Any], elements: int) -> float:
        """Seconds for one call; on CUDA the GPU is waited for before and after."""
        sync = _cuda_sync() if self.device == "cuda" else None
        if sync:
            sync()
        t0 = self.clock()
        result = fn()
        if sync:
            sync()
        elapsed = self.clock() - t0
        # Freed after the clock stops, so deallocation is not charged to the kernel.
        del result
        self.calls += 1
        self.elements += elements
        return elapsed


def _cuda_sync() -> Callable[[], None]:
    import torch

    return torch.cuda.synchronize


def _rounds(
    cases: dict[str, Callable[[], Any]], repeats: int, session: _Session, elements: int
) -> dict[str, list[float]] | None:
    """One warm-up call per case, then ``repeats`` rounds in a rotating order. None when the
    deadline cut them short (a half-measured shape is dropped). No tensor here requires a
    gradient, so torch records no autograd history without no_grad."""
    names = list(cases)
    samples: dict[str, list[float]] = {k: [] for k in names}
    calls = [(None, k) for k in names] + [
        (i, k) for i in range(repeats) for k in names[i % len(names) :] + names[: i % len(names)]
    ]
    for round_index, name in calls:
        if session.expired():
            return None
        elapsed = session.time(cases[name], elements)
        if round_index is not None:
            samples[name].append(elapsed)
    return samples


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
    clock: Callable[[], float] | None = None,
) -> SpeedRun:
    """Time every kernel of ``kernel_table`` for every (batch, width) pair, then pRMSNorm for
    every p of ``PARTIALS`` at the largest shape measured, all within ``time_cap_s``.

    Each shape gets one warm-up call per kernel, then ``repeats`` interleaved rounds. ``clock``
    (default ``CLOCK``) is read before every call: when the cap is reached the run stops, keeps
    the shapes finished so far and reports ``complete=False``. ``progress(done, total)`` is
    called after each shape and after the pRMSNorm step. Raises ValueError for sizes out of
    range, an unknown implementation, dtype or device, or one that is not available."""
    widths, batches = _check("widths", widths, MAX_WIDTH), _check("batches", batches, MAX_BATCH)
    _check_choices(implementation, device, dtype, repeats)
    todo, skipped = shapes_within_cap(widths, batches, dtype)
    table = kernel_table(implementation, device)
    _compile(table, implementation, device, dtype)
    session = _Session(clock or CLOCK, time_cap_s, device)
    setup = (implementation, device, dtype, repeats, seed)
    total = len(todo) + 1

    def report(done: int) -> None:
        if progress is not None:
            progress(done, total)

    measurements, done = _measure_shapes(todo, table, setup, session, report)
    partial, errors = (), {}
    if done:
        largest = max(todo[:done], key=lambda s: s[0] * s[1])
        partial, errors = _measure_partial(*setup, largest, session)
        report(total)
    return SpeedRun(
        implementation=implementation,
        device=device,
        dtype=dtype,
        threads=_threads(implementation),
        repeats=repeats,
        time_cap_s=time_cap_s,
        elapsed_s=session.clock() - session.start,
        complete=done == len(todo) and bool(partial),
        measurements=tuple(measurements),
        skipped=skipped,
        unmeasured=tuple(todo[done:]),
        labels={name: kernel.label for name, kernel in table.items()},
        partial=partial,
        partial_error=errors,
        calls=session.calls,
        elements=session.elements,
    )


def _compile(table: dict[str, Kernel], implementation: str, device: str, dtype: str) -> None:
    """Run every kernel once on a tiny tensor before the clock starts: numba compiles a fused
    kernel on its first call (about a second, once per process), which is not the kernel's time
    and must not use up the visitor's time cap."""
    tensors = seeded_tensors(implementation, device, dtype, 1, 8, 0)
    for kernel in table.values():
        kernel.build(*tensors)()


def shapes_within_cap(
    widths: Sequence[int], batches: Sequence[int], dtype: str
) -> tuple[list[tuple[int, int]], tuple[tuple[int, int], ...]]:
    """The (batch, width) shapes within ``MAX_TENSOR_BYTES`` per tensor, and those over it."""
    itemsize = np.dtype(dtype).itemsize
    shapes = [(b, w) for b in batches for w in widths]
    over = tuple(s for s in shapes if s[0] * s[1] * itemsize > MAX_TENSOR_BYTES)
    return [s for s in shapes if s not in over], over


def _measure_shapes(
    todo: Sequence[tuple[int, int]],
    table: dict[str, Kernel],
    setup: tuple[str, str, str, int, int],
    session: _Session,
    report: Callable[[int], None],
) -> tuple[list[Measurement], int]:
    """Every kernel at every shape in ``todo``, until the deadline; the shapes finished."""
    implementation, device, dtype, repeats, seed = setup
    itemsize = np.dtype(dtype).itemsize
    measurements: list[Measurement] = []
    done = 0
    for batch, width in todo:
        tensors = seeded_tensors(implementation, device, dtype, batch, width, seed)
        cases = {name: kernel.build(*tensors) for name, kernel in table.items()}
        samples = _rounds(cases, repeats, session, batch * width)
        if samples is None:
            break
        moved = 2 * batch * width * itemsize
        measurements += [Measurement(k, batch, width, tuple(v), moved) for k, v in samples.items()]
        done += 1
        report(done)
    return measurements, done


def _threads(implementation: str) -> int:
    if implementation != "torch":
        return 1
    import torch

    return torch.get_num_threads()


def _measure_partial(
    implementation: str,
    device: str,
    dtype: str,
    repeats: int,
    seed: int,
    shape: tuple[int, int],
    session: _Session,
) -> tuple[tuple[Measurement, ...], dict[float, float]]:
    """pRMSNorm at ``shape`` for every p, interleaved; the RMS estimate's error on the same x."""
    batch, width = shape
    tensors = seeded_tensors(implementation, device, dtype, batch, width, seed)
    builders = partial_kernels(implementation, width)
    cases = {f"p={p}": build(*tensors) for p, build in builders.items()}
    samples = _rounds(cases, repeats, session, batch * width)
    if samples is None:
        return (), {}
    moved = 2 * batch * width * np.dtype(dtype).itemsize
    x = _as_numpy(tensors[0])
    full = np.sqrt(np.mean(np.square(x), axis=-1))  # (b, d) -> (b,)
    errors = {}
    for p in PARTIALS:
        k = partial_size(p, width)
        estimate = np.sqrt(np.mean(np.square(x[:, :k]), axis=-1))  # (b, k) -> (b,)
        errors[p] = float(np.median(np.abs(estimate / full - 1.0)))
    kept = tuple(Measurement(k, batch, width, tuple(v), moved) for k, v in samples.items())
    return kept, errors


def _as_numpy(a: Any) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a.astype(np.float64)
    return a.detach().to("cpu").double().numpy()
