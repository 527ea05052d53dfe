"""core.speedlab: bookkeeping, caps and the lock, on tiny sizes."""

import threading
import time

import numpy as np
import pytest

from core import speedlab
from core.speedlab import (
    KERNELS,
    MAX_TENSOR_BYTES,
    exclusive,
    kernels_for,
    measure,
    saving,
    sweep_points,
)


@pytest.mark.parametrize("implementation", ["numpy", "torch"])
def test_bookkeeping(implementation):
    run = measure([8, 32], [2, 4], implementation=implementation, repeats=3, time_cap_s=10.0)
    assert run.complete and not run.skipped and not run.unmeasured
    assert run.shapes() == [(2, 8), (2, 32), (4, 8), (4, 32)]
    kernels = kernels_for(implementation, "cpu")
    assert len(run.measurements) == 4 * len(kernels)
    for batch, width in run.shapes():
        at = run.at(batch, width)
        assert tuple(at) == kernels
        np.testing.assert_allclose(at["copy"].vs_copy, 1.0, rtol=0)
        for m in at.values():
            assert m.samples == 3
            assert m.bytes_moved == 2 * batch * width * 4  # float32: read x, write y
            np.testing.assert_allclose(m.gb_per_s, m.bytes_moved / m.median_s / 1e9, rtol=1e-12)
            np.testing.assert_allclose(m.vs_copy, m.median_s / at["copy"].median_s, rtol=1e-12)


def test_kernels_per_implementation():
    assert kernels_for("torch", "cpu") == KERNELS
    assert "rms_fast" not in kernels_for("numpy", "cpu")
    assert "rms_fast" not in kernels_for("torch", "cuda")


def test_numpy_kernels_compute_the_norms():
    """The timed numpy expressions are the norms themselves, checked against core.norms."""
    from core import layer_norm, rms_norm

    cases = speedlab._numpy_cases(3, 16, "float64", np.random.default_rng(0))
    x = cases["copy"]()
    weight_rms = cases["rms"]() / rms_norm(x, eps=speedlab.RMS_EPS)
    # Every row is scaled by the same weight, so the ratio is constant down each column.
    np.testing.assert_allclose(weight_rms, np.broadcast_to(weight_rms[0], x.shape), rtol=1e-12)
    unit = layer_norm(x, eps=speedlab.LAYER_EPS)
    layer = cases["layer"]()
    # layer = unit * w + b: two rows determine w and b; the third must agree.
    w = (layer[0] - layer[1]) / (unit[0] - unit[1])
    b = layer[0] - unit[0] * w
    np.testing.assert_allclose(layer[2], unit[2] * w + b, rtol=1e-10, atol=1e-12)


def test_memory_cap_skips_large_shapes():
    too_wide = MAX_TENSOR_BYTES // 4 // 2048 * 2  # float32 elements per row over the cap
    run = measure([too_wide, 8], [2048], repeats=1, time_cap_s=5.0)
    assert run.skipped == ((2048, too_wide),)
    assert run.shapes() == [(2048, 8)]


def test_time_cap_stops_the_sweep():
    cap = 0.05
    widths = [1024, 2048, 4096]
    t0 = time.perf_counter()
    run = measure(widths, [256, 512, 1024], repeats=50, time_cap_s=cap)
    wall = time.perf_counter() - t0
    assert not run.complete
    assert run.unmeasured
    assert len(run.shapes()) + len(run.unmeasured) == 9
    # The clock is checked before every call, so the overrun is at most one call (~10 ms here)
    # plus the setup of one shape.
    assert wall < cap + 0.5


def test_zero_cap_measures_nothing():
    run = measure([8], [2], time_cap_s=0.0)
    assert run.measurements == () and not run.complete and run.unmeasured == ((2, 8),)


def test_progress_reports_each_shape():
    seen = []
    measure([8, 16], [2], repeats=1, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]


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
    assert not speedlab.MEASURE_LOCK.locked()


def test_lock_released_after_an_error():
    with pytest.raises(RuntimeError), exclusive() as ok:
        assert ok
        raise RuntimeError("boom")
    assert not speedlab.MEASURE_LOCK.locked()


def test_sweep_points_and_saving():
    assert sweep_points(64, 8192) == [64, 128, 256, 512, 1024, 2048, 4096, 8192]
    assert sweep_points(1, 4096) == [1, 4, 16, 64, 256, 1024, 4096]
    assert sweep_points(64, 100) == [64, 100]
    assert sweep_points(256, 256) == [256]
    np.testing.assert_allclose(saving(0.93, 1.0), 0.07)
    np.testing.assert_allclose(saving(2.0, 1.0), -1.0)


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
