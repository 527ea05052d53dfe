"""The speed lab (labs.speed.model, timing, speed_kernels): the kernels compute the norms, the
bookkeeping and the caps count work, the summaries and verdicts follow the samples, and the lock
is exclusive. No test reads a wall clock: the time cap is driven by a fake clock and bounded by
counted calls and elements."""

import math
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core import rms_norm
from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS
from labkit.lock import MEASURE_LOCK, exclusive
from labs.speed import timing
from labs.speed.kernels import (
    KERNELS,
    PARTIALS,
    kernel_table,
    partial_kernels,
    partial_size,
    seeded_tensors,
)
from labs.speed.model import (
    paired_ratio,
    plan,
    speed_view,
    sweep_points,
    verdict_word,
)
from labs.speed.timing import (
    MAX_TENSOR_BYTES,
    Measurement,
    SpeedRun,
    measure,
)


class TickClock:
    """A clock that moves on by ``step`` at every reading."""

    def __init__(self, step: float = 1.0) -> None:
        self.step, self.now = step, 0.0

    def __call__(self) -> float:
        now, self.now = self.now, self.now + self.step
        return now


@pytest.mark.parametrize("implementation", ["numpy", "torch"])
def test_bookkeeping_counts_every_call(implementation):
    run = measure(
        [8, 32], [2, 4], implementation=implementation, repeats=3, clock=TickClock(), time_cap_s=1e9
    )
    assert run.complete and not run.skipped and not run.unmeasured
    assert run.shapes() == [(2, 8), (2, 32), (4, 8), (4, 32)]
    kernels = tuple(kernel_table(implementation, "cpu"))
    assert len(run.measurements) == 4 * len(kernels)
    for batch, width in run.shapes():
        at = run.at(batch, width)
        assert tuple(at) == kernels
        for m in at.values():
            # Every reading moves the fake clock by 1, so every call lasts exactly 1.
            assert m.samples == (1.0, 1.0, 1.0)
            assert m.bytes_moved == 2 * batch * width * 4  # float32: read x, write y
            assert m.gb_per_s == m.bytes_moved / 1.0 / 1e9
    # One warm-up and three rounds per kernel and shape, then the same for every p at 4 x 32.
    shapes_calls = 4 * len(kernels) * 4
    assert run.calls == shapes_calls + len(PARTIALS) * 4
    assert run.elements == len(kernels) * 4 * (16 + 64 + 32 + 128) + len(PARTIALS) * 4 * 128
    assert [m.kernel for m in run.partial] == [f"p={p}" for p in PARTIALS]


def _tensors(d: int = 48, dtype=torch.float64):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(5, d, generator=gen, dtype=dtype) * 2 + 0.5
    return x, torch.randn(d, generator=gen, dtype=dtype), torch.randn(d, generator=gen, dtype=dtype)


@pytest.mark.parametrize("implementation", ["numpy", "torch"])
def test_kernels_compute_the_norms(implementation):
    """Every timed kernel is the norm itself, checked against torch.nn.functional in float64."""
    x, w, b = _tensors()
    rms = F.rms_norm(x, (48,), w, DEFAULT_RMS_EPS)
    layer = F.layer_norm(x, (48,), w, b, DEFAULT_LAYER_EPS)
    expected = {"copy": x, "rms_composite": rms, "layer_composite": layer}
    expected.update(rms_fused=rms, layer_fused=layer)
    tensors = (x, w, b) if implementation == "torch" else tuple(t.numpy() for t in (x, w, b))
    for name, kernel in kernel_table(implementation, "cpu").items():
        got = np.asarray(kernel.build(*tensors)())
        np.testing.assert_allclose(got, expected[name].numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("implementation", ["numpy", "torch"])
def test_partial_kernels_are_prmsnorm(implementation):
    """pRMSNorm as timed: the RMS from the first ceil(p d) coordinates, as core.rms_norm takes
    it; p = 1 is the full RMS."""
    x, w, b = _tensors(d=100)
    tensors = (x, w, b) if implementation == "torch" else tuple(t.numpy() for t in (x, w, b))
    for p, build in partial_kernels(implementation, 100).items():
        got = np.asarray(build(*tensors)())
        want = rms_norm(x.numpy(), w.numpy(), eps=DEFAULT_RMS_EPS, partial=p)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # ceil, not the paper's int: 6.25 % of 100 is 6.25, so 7 coordinates (its code takes 6).
    assert partial_size(0.0625, 100) == 7 and math.floor(0.0625 * 100) == 6
    assert partial_size(0.0625, 4096) == 256 and partial_size(0.0625, 2) == 1


def test_partial_error_is_the_rms_estimate_error():
    run = measure([64], [8], repeats=1, clock=TickClock(), time_cap_s=1e9)
    x = seeded_tensors("numpy", "cpu", "float32", 8, 64, 0)[0].astype(np.float64)
    full = np.sqrt(np.mean(x**2, axis=1))
    for p in PARTIALS:
        k = partial_size(p, 64)
        est = np.sqrt(np.mean(x[:, :k] ** 2, axis=1))
        np.testing.assert_allclose(run.partial_error[p], np.median(np.abs(est / full - 1)))
    assert run.partial_error[1.0] == 0.0


def test_memory_cap_skips_large_shapes():
    too_wide = MAX_TENSOR_BYTES // 4 // 2048 * 2  # float32 elements per row over the cap
    run = measure([too_wide, 8], [2048], repeats=1, clock=TickClock(), time_cap_s=1e9)
    assert run.skipped == ((2048, too_wide),)
    assert run.shapes() == [(2048, 8)]


def test_time_cap_stops_the_sweep_after_a_counted_number_of_calls():
    """Three clock readings per call (one before it, two around it): with a step of 1 and a cap
    of 30, the k-th call starts at reading 1 + 3 (k - 1) < 30, so exactly 10 calls run. With
    repeats=1 a shape takes 3 warm-ups + 3 rounds = 6 calls: one shape is finished, the second
    is cut short and dropped."""
    run = measure([8, 16, 32], [2], repeats=1, time_cap_s=30, clock=TickClock())
    assert run.calls == 10 and run.elements == 6 * 16 + 4 * 32
    assert not run.complete
    assert run.shapes() == [(2, 8)] and run.unmeasured == ((2, 16), (2, 32))
    assert run.partial == ()


def test_zero_cap_measures_nothing():
    run = measure([8], [2], time_cap_s=0.0, clock=TickClock())
    assert run.measurements == () and not run.complete and run.unmeasured == ((2, 8),)
    assert run.calls == 0 and run.elements == 0


def test_progress_reports_each_shape_and_the_partial_step():
    seen = []
    measure(
        [8, 16],
        [2],
        repeats=1,
        clock=TickClock(),
        time_cap_s=1e9,
        progress=lambda d, t: seen.append((d, t)),
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_lock_is_exclusive_and_released():
    with exclusive() as first:
        assert first
        result = []
        worker = threading.Thread(target=lambda: result.append(exclusive().__enter__()))
        worker.start()
        worker.join()
        assert result == [False]
    with exclusive() as again:
        assert again
    assert not MEASURE_LOCK.locked()


def test_lock_released_after_an_error():
    with pytest.raises(RuntimeError), exclusive() as ok:
        assert ok
        raise RuntimeError("boom")
    assert not MEASURE_LOCK.locked()


def test_sweep_points():
    assert sweep_points(64, 8192) == [64, 128, 256, 512, 1024, 2048, 4096, 8192]
    assert sweep_points(1, 4096) == [1, 4, 16, 64, 256, 1024, 4096]
    assert sweep_points(64, 100) == [64, 100]
    assert sweep_points(256, 256) == [256]


def _m(kernel: str, samples: tuple[float, ...]) -> Measurement:
    return Measurement(kernel, 4, 64, samples, 2 * 4 * 64 * 4)


def test_ratios_are_taken_round_by_round_and_one_outlier_cannot_set_them():
    rms = _m("rms_composite", (1.0, 1.0, 1.0, 1.0, 50.0))  # one round hit by a burst of load
    layer = _m("layer_composite", (2.0, 2.0, 2.0, 2.0, 2.0))
    median, q1, q3 = paired_ratio(rms, layer)
    assert (median, q1, q3) == (0.5, 0.5, 0.5)
    assert verdict_word(q1, q3, 5) == "faster"
    assert verdict_word(0.9, 1.1, 5) == "same"
    assert verdict_word(1.01, 1.2, 5) == "slower"
    assert verdict_word(0.1, 0.2, 2) == "few"


def _run(samples: dict[str, tuple[float, ...]]) -> SpeedRun:
    return SpeedRun(
        implementation="torch",
        device="cpu",
        dtype="float32",
        threads=1,
        repeats=len(samples["copy"]),
        time_cap_s=2.0,
        elapsed_s=1.0,
        complete=True,
        measurements=tuple(_m(k, v) for k, v in samples.items()),
        skipped=(),
        unmeasured=(),
    )


@pytest.mark.parametrize(
    ("rms", "layer", "word"),
    [
        ((1.0, 1.1, 0.9, 1.0), (2.0, 2.0, 2.0, 2.0), "faster"),
        ((3.0, 3.0, 3.0, 3.0), (2.0, 2.0, 2.0, 2.0), "slower"),
        ((1.9, 2.1, 2.0, 2.0), (2.0, 2.0, 2.0, 2.0), "same"),
        ((1.0, 1.0), (2.0, 2.0), "few"),
    ],
)
def test_headline_says_what_the_rounds_say(rms, layer, word):
    n = len(rms)
    view = speed_view(
        _run(
            {
                "copy": (1.0,) * n,
                "rms_composite": rms,
                "layer_composite": layer,
                "rms_fused": rms,
                "layer_fused": layer,
            }
        ),
        "width",
    )
    for technique in ("composite", "fused"):
        claim = view.claims[f"headline_{technique}"]
        assert claim.key == f"speed.headline_{technique}_{word}"
        ratios = np.array(rms) / np.array(layer)
        np.testing.assert_allclose(claim.fields["ratio"], np.median(ratios))


def test_plan_lists_what_measure_will_time():
    p = plan("width", 8192, 4096, "torch", "cpu", "float32")
    assert p.shapes == tuple((4096, w) for w in (64, 128, 256, 512))
    assert p.skipped == ((4096, 1024), (4096, 2048), (4096, 4096), (4096, 8192))
    assert p.partial_shape == (4096, 512)
    assert tuple(p.kernels) == KERNELS
    assert tuple(plan("batch", 64, 8, "numpy", "cpu", "float64").kernels) == KERNELS[:3]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"widths": [0], "batches": [1]}, "widths"),
        ({"widths": [8193], "batches": [1]}, "widths"),
        ({"widths": [8], "batches": [4097]}, "batches"),
        ({"widths": [8], "batches": [1], "implementation": "jax"}, "implementation"),
        ({"widths": [8], "batches": [1], "dtype": "float16"}, "dtype"),
        ({"widths": [8], "batches": [1], "repeats": 0}, "repeats"),
        ({"widths": [8], "batches": [1], "device": "cuda"}, "cpu only"),
        ({"widths": [8], "batches": [1], "implementation": "torch", "device": "tpu"}, "device"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        measure(**kwargs)


def test_the_cuda_table_and_timer_without_a_gpu(monkeypatch):
    """The CUDA path's kernels and timer, run on the CPU: the table times F.rms_norm (fused on
    CUDA) against F.layer_norm, and every timed call waits for the device before and after."""
    x, w, b = _tensors()
    table = kernel_table("torch", "cuda")
    assert table["rms_fused"].label == "rms_fused_torch"  # torch's own fused kernel on a GPU
    rms = F.rms_norm(x, (48,), w, DEFAULT_RMS_EPS)
    np.testing.assert_allclose(table["rms_fused"].build(x, w, b)().numpy(), rms.numpy(), rtol=1e-12)
    waits = []
    monkeypatch.setattr(timing, "_cuda_sync", lambda: lambda: waits.append(1))
    session = timing._Session(TickClock(), 1e9, "cuda")
    assert session.time(lambda: None, 10) == 1.0
    assert len(waits) == 2 and session.calls == 1 and session.elements == 10
