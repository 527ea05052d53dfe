"""Speed lab: time RMSNorm, LayerNorm and a plain copy over widths and batch sizes, within a cap.

A norm reads every element of x and writes every element of y, the same traffic as a copy, so a
copy of the same tensor is the floor and each norm's time is reported as a multiple of it. What
decides the multiple is how the norm is written, not how many arithmetic operations it has, so
each norm is timed two ways:

- **composite**: the textbook formula as separate whole-tensor operations (square, mean, add,
  rsqrt, multiply, multiply), each a pass over memory with its own temporary;
- **fused**: a kernel that reads each row once, normalises it while it sits in cache and
  writes it once (``core.fast``'s numba kernels on the CPU, torch's own on CUDA).

The kernels live in one table, :func:`kernel_table`. The same sweep then times pRMSNorm (the RMS
from the first ceil(p d) coordinates) against the full RMS at the largest shape.

Medians come from interleaved rounds: each round runs every kernel once, in a rotating order, so
a burst of load falls on all kernels alike, and ratios are taken round by round. The measurement
runs inside a public demo, so it is bounded: widths up to ``MAX_WIDTH``, batches up to
``MAX_BATCH``, at most ``MAX_TENSOR_BYTES`` per tensor, a total time cap checked on ``clock``
before every call, and one measurement per process at a time (``exclusive``). The run counts the
calls and elements it processed, so tests bound the work without timing anything.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS, MAX_WIDTH
from core.lab.claims import Claim
from core.norms import mean_square, rms_denominator

__all__ = [
    "IMPLEMENTATIONS",
    "MAX_BATCH",
    "MAX_TENSOR_BYTES",
    "MAX_WIDTH",
    "MEASURE_LOCK",
    "PAPER_CITATION",
    "PAPER_PARTIAL",
    "PAPER_SAVING",
    "PARTIALS",
    "TIME_CAP_S",
    "Measurement",
    "SpeedRun",
    "exclusive",
    "kernel_table",
    "measure",
    "partial_size",
    "sweep_points",
]

# A batch of 4096 rows is a typical token count; the widths go up to Llama-3 70B's 8192.
MAX_BATCH = 4096
# One float32 tensor of 8 MiB is 2M elements (e.g. 512 x 4096), still far beyond a core's own
# caches. The composite LayerNorm keeps x, its output and about four full-size temporaries alive
# at once, and the allocator keeps freed blocks for the next call, so a run at this cap grows
# the server by about a hundred MB, inside the 200 MB a shared demo gives one visitor.
MAX_TENSOR_BYTES = 8 << 20
# One run of the lab holds the CPU for at most this long; the sweep stops where it is then.
TIME_CAP_S = 2.0
# Smallest sweep points: below these, Python call overhead, not memory, is what gets timed.
MIN_SWEEP_WIDTH = 64
MIN_SWEEP_BATCH = 1

# Zhang & Sennrich (2019), "Root Mean Square Layer Normalization", NeurIPS, abstract: RMSNorm
# "reduces the running time by 7%~64% on different models" compared with LayerNorm.
PAPER_SAVING = (0.07, 0.64)
PAPER_CITATION = "Zhang & Sennrich (2019), Root Mean Square Layer Normalization, NeurIPS"
# The same paper's pRMSNorm: the RMS from p of the coordinates; p = 6.25 % is reported to work
# about as well as the full RMS.
PAPER_PARTIAL = 0.0625
# The p of the sweep: halvings from the paper's 6.25 % up to the full RMS.
PARTIALS = (0.0625, 0.125, 0.25, 0.5, 1.0)
# p * d is rounded to this many decimals before ceil, as core.norms does.
_PARTIAL_DECIMALS = 9

IMPLEMENTATIONS = ("numpy", "torch")
DTYPES = ("float32", "float64")
# The kernels, in the order they are plotted and listed; the pairs compared norm against norm.
KERNELS = ("copy", "rms_composite", "layer_composite", "rms_fused", "layer_fused")
PAIRS = (("rms_composite", "layer_composite"), ("rms_fused", "layer_fused"))
# What times the page reads: time.perf_counter, or a fake clock a test puts here.
CLOCK: Callable[[], float] = time.perf_counter

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


def partial_size(p: float, d: int) -> int:
    """pRMSNorm's k: the first ceil(p d) coordinates, at least 1 (as ``core.norms`` takes)."""
    return min(d, max(1, math.ceil(round(p * d, _PARTIAL_DECIMALS))))


# --- the kernels --------------------------------------------------------------------------------

# A kernel builder takes the tensors (x, weight, bias) and returns the zero-argument call timed.
Builder = Callable[[Any, Any, Any], Callable[[], Any]]


@dataclass(frozen=True)
class Kernel:
    """One timed case: ``label`` names its text on the page (``speed.kernel_<label>``)."""

    label: str
    build: Builder


def _numpy_rms(x: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """RMSNorm as separate numpy passes, the RMS from the first k coordinates."""
    return x / rms_denominator(x[..., :k], DEFAULT_RMS_EPS) * w  # (b, k) -> (b, 1)


def _numpy_layer(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """LayerNorm as separate numpy passes: its std is the RMS of the centred x."""
    centred = x - np.mean(x, axis=-1, keepdims=True)  # (b, d) -> (b, 1)
    return centred / rms_denominator(centred, DEFAULT_LAYER_EPS) * w + b


def _torch_partial(x: Any, w: Any, k: int) -> Any:
    """pRMSNorm written as ``core.fast``'s composite RMSNorm is, the statistic from k columns."""
    import torch

    return x * torch.rsqrt(mean_square(x[..., :k]) + DEFAULT_RMS_EPS) * w  # (b, k) -> (b, 1)


def _torch_norm(kind: str, technique: str, device: str) -> Builder:
    """``core.fast.KERNELS[(kind, technique)]``; on a GPU the fused ones are torch's own (the
    fused core kernels run on the CPU)."""
    eps = DEFAULT_RMS_EPS if kind == "rms" else DEFAULT_LAYER_EPS
    if technique == "fused" and device != "cpu":
        import torch.nn.functional as F

        if kind == "rms":
            return lambda x, w, b: lambda: F.rms_norm(x, (x.shape[-1],), w, eps)
        return lambda x, w, b: lambda: F.layer_norm(x, (x.shape[-1],), w, b, eps)
    from core.fast import KERNELS

    kernel = KERNELS[(kind, technique)]
    if kind == "rms":
        return lambda x, w, b: lambda: kernel(x, w, None, eps)
    return lambda x, w, b: lambda: kernel(x, w, b, eps)


def kernel_table(implementation: str, device: str) -> dict[str, Kernel]:
    """The kernels a run times, by id (``KERNELS`` order): numpy has only composites."""
    if implementation == "numpy":
        return {
            "copy": Kernel("copy", lambda x, w, b: x.copy),
            "rms_composite": Kernel(
                "rms_composite", lambda x, w, b: lambda: _numpy_rms(x, w, x.shape[-1])
            ),
            "layer_composite": Kernel(
                "layer_composite", lambda x, w, b: lambda: _numpy_layer(x, w, b)
            ),
        }
    table = {"copy": Kernel("copy", lambda x, w, b: x.clone)}
    for name in KERNELS[1:]:
        kind, technique = name.split("_")
        # A GPU's fused kernels are torch's: their own label says so.
        label = f"{name}_torch" if technique == "fused" and device != "cpu" else name
        table[name] = Kernel(label, _torch_norm(kind, technique, device))
    return table


def _partial_kernels(implementation: str, d: int) -> dict[float, Builder]:
    """pRMSNorm as a composite, one builder per p (p = 1 is the full RMS)."""
    rms = _numpy_rms if implementation == "numpy" else _torch_partial

    def builder(k: int) -> Builder:
        return lambda x, w, b: lambda: rms(x, w, k)

    return {p: builder(partial_size(p, d)) for p in PARTIALS}


def _tensors(
    implementation: str, device: str, dtype: str, batch: int, width: int, seed: int
) -> tuple[Any, Any, Any]:
    """x (batch, width), weight and bias (width,), seeded, on the device, in ``dtype``."""
    rng = np.random.default_rng([seed, batch, width])
    arrays = [rng.standard_normal(shape).astype(dtype) for shape in ((batch, width), width, width)]
    if implementation == "numpy":
        return tuple(arrays)
    import torch

    return tuple(torch.from_numpy(a).to(device) for a in arrays)


# --- measuring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """One kernel at one shape: the seconds of every timed round, in round order.

    Round i of every kernel at a shape ran in the same interleaved round, so ratios are taken
    sample by sample. ``bytes_moved`` counts one read of x and one write of y (weight and bias
    are d values, negligible next to batch * d).
    """

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
    ``elements`` count the timed calls and the elements they processed.
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
        """The pRMSNorm measurements by p."""
        return {float(m.kernel.removeprefix("p=")): m for m in self.partial}


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
    """One warm-up call per case, then ``repeats`` rounds in a rotating order; None when the
    deadline cut them short (a half-measured shape is dropped).

    No tensor here requires a gradient, so torch records no autograd history without no_grad.
    """
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
    range, an unknown implementation, dtype or device, or one that is not available.
    """
    widths, batches = _check("widths", widths, MAX_WIDTH), _check("batches", batches, MAX_BATCH)
    _check_choices(implementation, device, dtype, repeats)
    todo, skipped = _fits(widths, batches, dtype)
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
    tensors = _tensors(implementation, device, dtype, 1, 8, 0)
    for kernel in table.values():
        kernel.build(*tensors)()


def _fits(
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
        tensors = _tensors(implementation, device, dtype, batch, width, seed)
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
    tensors = _tensors(implementation, device, dtype, batch, width, seed)
    builders = _partial_kernels(implementation, width)
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


# --- the page: what a run will measure, and what one measured ----------------------------------

# With fewer rounds than this a median and its middle half say too little to call a winner.
MIN_ROUNDS_FOR_VERDICT = 3


@dataclass(frozen=True)
class Plan:
    """What pressing Measure will time: shapes (and those over the memory cap), kernels by id
    and label, the pRMSNorm p values and the shape they are timed at."""

    shapes: tuple[tuple[int, int], ...]
    skipped: tuple[tuple[int, int], ...]
    kernels: dict[str, str]
    partials: tuple[float, ...]
    partial_shape: tuple[int, int] | None
    bytes_largest: int


def sweep_sizes(sweep: str, d: int, batch: int) -> tuple[list[int], list[int]]:
    """The widths and batches of a sweep: one swept in powers of two, the other fixed."""
    if sweep == "width":
        return sweep_points(MIN_SWEEP_WIDTH, d), [batch]
    return [d], sweep_points(MIN_SWEEP_BATCH, batch)


def plan(sweep: str, d: int, batch: int, implementation: str, device: str, dtype: str) -> Plan:
    widths, batches = sweep_sizes(sweep, d, batch)
    itemsize = np.dtype(dtype).itemsize
    fits, over = _fits(widths, batches, dtype)
    largest = max(fits, key=lambda s: s[0] * s[1]) if fits else None
    table = kernel_table(implementation, device) if _backend_ready(implementation) else {}
    return Plan(
        shapes=tuple(fits),
        skipped=over,
        kernels={name: kernel.label for name, kernel in table.items()},
        partials=PARTIALS,
        partial_shape=largest,
        bytes_largest=2 * largest[0] * largest[1] * itemsize if largest else 0,
    )


def _backend_ready(implementation: str) -> bool:
    from core.device import torch_available

    return implementation == "numpy" or torch_available()


def paired_ratio(num: Measurement, den: Measurement) -> tuple[float, float, float]:
    """Round-by-round ``num / den``: the median and the quartiles (the middle half of rounds)."""
    ratios = np.asarray(num.samples) / np.asarray(den.samples)
    q1, median, q3 = np.percentile(ratios, [25, 50, 75])
    return float(median), float(q1), float(q3)


def verdict_word(q1: float, q3: float, rounds: int) -> str:
    """ "faster" when the middle half of the rounds sits below 1x, "slower" above, "same" when
    it spans 1x, "few" with fewer than ``MIN_ROUNDS_FOR_VERDICT`` rounds."""
    if rounds < MIN_ROUNDS_FOR_VERDICT:
        return "few"
    if q3 < 1.0:
        return "faster"
    if q1 > 1.0:
        return "slower"
    return "same"


@dataclass(frozen=True)
class SpeedView:
    """A run summarised for the page: per-kernel medians and quartiles over the swept size, and
    the claims its sentences make."""

    run: SpeedRun
    swept: str
    axis: np.ndarray  # the swept size at each measured shape
    median_ms: dict[str, np.ndarray]
    q1_ms: dict[str, np.ndarray]
    q3_ms: dict[str, np.ndarray]
    gb_per_s: dict[str, np.ndarray]
    largest: tuple[int, int] | None
    partial: dict[float, tuple[float, float, float]]
    claims: dict[str, Claim]


def shape_text(shapes: Sequence[tuple[int, int]]) -> str:
    """``batch × width`` shapes as the page lists them."""
    return ", ".join(f"{b} × {w}" for b, w in shapes)


def speed_view(run: SpeedRun, swept: str) -> SpeedView:
    """Medians, quartiles and rates per kernel along the sweep, and the claims."""
    shapes = run.shapes()
    index = 1 if swept == "width" else 0
    per = {k: [run.at(*s)[k] for s in shapes] for k in (run.at(*shapes[0]) if shapes else {})}

    def ms(q: float) -> dict[str, np.ndarray]:
        return {k: np.array([np.percentile(m.samples, q) * 1e3 for m in v]) for k, v in per.items()}

    largest = max(shapes, key=lambda s: s[0] * s[1]) if shapes else None
    base = run.partial_by_p() if run.partial else {}
    return SpeedView(
        run=run,
        swept=swept,
        axis=np.array([s[index] for s in shapes]),
        median_ms=ms(50),
        q1_ms=ms(25),
        q3_ms=ms(75),
        gb_per_s={k: np.array([m.gb_per_s for m in v]) for k, v in per.items()},
        largest=largest,
        partial={p: paired_ratio(m, base[1.0]) for p, m in base.items()},
        claims=_speed_claims(run, largest),
    )


def _speed_claims(run: SpeedRun, largest: tuple[int, int] | None) -> dict[str, Claim]:
    claims: dict[str, Claim] = {}
    if run.skipped:
        fields = {"mib": MAX_TENSOR_BYTES >> 20, "shapes": shape_text(run.skipped)}
        claims["skipped"] = Claim("speed.skipped", fields)
    if run.unmeasured:
        fields = {"cap": run.time_cap_s, "shapes": shape_text(run.unmeasured)}
        claims["capped"] = Claim("speed.capped", fields)
    elif not run.partial and largest is not None:
        claims["capped"] = Claim("speed.capped_partial", {"cap": run.time_cap_s})
    if largest is None:
        return claims
    at = run.at(*largest)
    for technique in ("composite", "fused"):
        rms, layer = f"rms_{technique}", f"layer_{technique}"
        if rms in at and layer in at:
            claims[f"headline_{technique}"] = _headline(technique, at[rms], at[layer], largest)
            claims[f"copy_{technique}"] = _against_copy(technique, at, largest)
            if len(run.shapes()) > 1:
                claims[f"range_{technique}"] = _range(technique, run)
    if run.partial:
        claims["partial"] = _partial_claim(run, largest)
    return claims


def _headline(
    technique: str, rms: Measurement, layer: Measurement, shape: tuple[int, int]
) -> Claim:
    ratio, q1, q3 = paired_ratio(rms, layer)
    word = verdict_word(q1, q3, len(rms.samples))
    fields = {"shape": shape_text([shape]), "ratio": ratio, "q1": q1, "q3": q3}
    return Claim(f"speed.headline_{technique}_{word}", {**fields, "rounds": len(rms.samples)})


def _against_copy(technique: str, at: dict[str, Measurement], shape: tuple[int, int]) -> Claim:
    copy = at["copy"]
    return Claim(
        f"speed.copy_{technique}",
        {
            "shape": shape_text([shape]),
            "copy_gbs": copy.gb_per_s,
            "rms_x": paired_ratio(at[f"rms_{technique}"], copy)[0],
            "layer_x": paired_ratio(at[f"layer_{technique}"], copy)[0],
        },
    )


def _range(technique: str, run: SpeedRun) -> Claim:
    ratios = [
        paired_ratio(run.at(*s)[f"rms_{technique}"], run.at(*s)[f"layer_{technique}"])[0]
        for s in run.shapes()
    ]
    fields = {"count": len(ratios), "lo": min(ratios), "hi": max(ratios)}
    return Claim(f"speed.range_{technique}", fields)


def _partial_claim(run: SpeedRun, shape: tuple[int, int]) -> Claim:
    by_p = run.partial_by_p()
    ratio, q1, q3 = paired_ratio(by_p[PAPER_PARTIAL], by_p[1.0])
    word = verdict_word(q1, q3, len(by_p[1.0].samples))
    return Claim(
        f"speed.partial_{word}",
        {
            "p_pct": PAPER_PARTIAL,
            "k": partial_size(PAPER_PARTIAL, shape[1]),
            "d": shape[1],
            "shape": shape_text([shape]),
            "ratio": ratio,
            "q1": q1,
            "q3": q3,
            "rounds": len(by_p[1.0].samples),
            "err_pct": run.partial_error[PAPER_PARTIAL],
        },
    )
