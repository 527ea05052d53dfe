"""core.fast: the composite and fused kernels against torch.nn.functional, within stated
tolerances, and the paths that must stay differentiable."""

import gc
import mmap
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from core import _fused, fast, layer_norm, rms_norm
from core.fast import KERNELS, available_cores, plain_norm
from tests.hypothesis_util import examples

REPO_ROOT = Path(__file__).resolve().parents[1]
FUSED_RMS, FUSED_LAYER = KERNELS[("rms", "fused")], KERNELS[("layer", "fused")]

# Agreement with torch's kernels: the fused kernels sum in float64 and in another order, so they
# differ from torch's float32 sums by a few float32 ulps of O(1) outputs; in float64 far below
# any visible difference.
TOLERANCE = {torch.float32: 2e-6, torch.float64: 1e-12}
SHAPES = [(9,), (1, 64), (1, 1), (7, 3), (7, 33), (513, 100), (3, 5, 16), (2048, 257)]
DTYPES = [torch.float32, torch.float64]


def _random(shape, dtype, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _assert_close(actual, desired):
    assert actual.shape == desired.shape
    assert actual.dtype == desired.dtype
    tol = TOLERANCE[desired.dtype]
    np.testing.assert_allclose(
        actual.detach().numpy(), desired.detach().numpy(), rtol=tol, atol=tol
    )


def _torch(norm, x, weight, bias, eps):
    """torch's own kernel, with a bias added after F.rms_norm (which has none)."""
    d = x.shape[-1]
    if norm == "layer":
        return F.layer_norm(x, (d,), weight, bias, eps)
    y = F.rms_norm(x, (d,), weight, eps)
    return y if bias is None else y + bias


def test_the_table_lists_both_techniques_for_both_norms():
    assert set(KERNELS) == {(n, t) for n in ("rms", "layer") for t in ("composite", "fused")}


@pytest.mark.parametrize("key", sorted(KERNELS))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("affine", [False, True])
def test_kernels_match_torch(key, shape, dtype, affine):
    d = shape[-1]
    x = _random(shape, dtype, seed=1) * 3 + 2  # a nonzero mean for LayerNorm to remove
    weight = _random((d,), dtype, seed=2) if affine else None
    bias = _random((d,), dtype, seed=3) if affine else None
    eps = 1e-6 if key[0] == "rms" else 1e-5
    _assert_close(KERNELS[key](x, weight, bias, eps), _torch(key[0], x, weight, bias, eps))


@pytest.mark.parametrize("norm", ["rms", "layer"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_kernels_take_non_contiguous_input(norm, dtype):
    x = _random((40, 24), dtype, seed=4).t()  # (24, 40), rows strided in memory
    assert not x.is_contiguous()
    w = _random((40,), dtype, seed=5)
    _assert_close(KERNELS[(norm, "fused")](x, w, None, 1e-5), _torch(norm, x, w, None, 1e-5))


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_parallel_and_serial_kernels_are_bit_identical(norm):
    # One row function serves both, so the threads cannot change a single bit.
    x = _random((1024, 300), torch.float32, seed=6)
    w = _random((300,), torch.float32, seed=7)
    assert x.numel() >= fast.FUSED_MIN_ELEMENTS
    parallel = KERNELS[(norm, "fused")](x, w, None, 1e-5)
    serial = torch.empty_like(x)
    stats = [np.empty(1024, np.float32) for _ in range(1 if norm == "rms" else 2)]
    kernel = _fused.rms_serial if norm == "rms" else _fused.layer_serial
    kernel(x.numpy(), w.numpy(), None, 1e-5, serial.numpy(), *stats, False)
    assert torch.equal(parallel, serial)


@pytest.mark.parametrize("norm", ["rms", "layer"])
@pytest.mark.parametrize("rows", [1, 2, 3, 17, 1024])
def test_pipelined_rows_and_blocks_change_no_bit(norm, rows):
    # Row i's output loop also sums row i+1; blocks restart the pipeline. Each row's result must
    # be the one a kernel taking that row alone computes, whatever the block count.
    x = _random((rows, 300), torch.float64, seed=9) * 3 + 2
    w, b = _random((300,), torch.float64, seed=10), _random((300,), torch.float64, seed=11)
    serial, parallel = (
        (_fused.rms_serial, _fused.rms_parallel)
        if norm == "rms"
        else (_fused.layer_serial, _fused.layer_parallel)
    )
    stats = 1 if norm == "rms" else 2

    def run(kernel, xs, stream, *blocks):
        out = np.empty_like(xs)
        row_stats = [np.empty(xs.shape[0]) for _ in range(stats)]
        kernel(xs, w.numpy(), b.numpy(), 1e-5, out, *row_stats, stream, *blocks)
        return out, row_stats

    alone = [run(serial, x.numpy()[i : i + 1], False) for i in range(rows)]
    for stream in (False, True):
        for kernel, blocks in [(serial, ()), (parallel, (1,)), (parallel, (min(rows, 5),))]:
            out, row_stats = run(kernel, x.numpy(), stream, *blocks)
            for i, (row_out, row_stat) in enumerate(alone):
                assert np.array_equal(out[i], row_out[0])
                assert all(s[i] == r[0] for s, r in zip(row_stats, row_stat, strict=True))


def test_fused_norm_writes_into_a_given_output_or_refuses_it():
    x = _random((600, 512), torch.float32, seed=12)
    out = torch.full_like(x, float("nan"))
    y, _ = fast.fused_norm("rms", x, None, None, 1e-6, out=out)
    assert y is out
    _assert_close(out, F.rms_norm(x, (512,), None, 1e-6))
    for bad in (
        torch.empty(600, 511),
        torch.empty(600, 512, dtype=torch.float64),
        torch.empty(512, 600).t(),
    ):
        with pytest.raises(ValueError, match="out must be a contiguous CPU tensor"):
            fast.fused_norm("rms", x, None, None, 1e-6, out=bad)


def _misaligned(shape, dtype, shift):
    """An empty contiguous tensor whose data starts ``shift`` values past a 64-byte boundary."""
    size = torch.tensor([], dtype=dtype).element_size()
    raw = torch.empty(int(np.prod(shape)) + 64 // size + shift, dtype=dtype)
    start = (-raw.data_ptr() % 64) // size + shift
    view = raw[start : start + int(np.prod(shape))].view(shape)
    assert view.data_ptr() % 64 == shift * size
    return view


@pytest.mark.parametrize("norm", ["rms", "layer"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
@pytest.mark.parametrize("shape", [(1, 5), (3, 16), (7, 33), (4, 100), (5, 4096), (65, 257)])
def test_streamed_stores_write_the_same_bits(norm, dtype, affine, shape):
    # The staging row and its non-temporal copy must reproduce the ordinary stores bit for bit,
    # wherever the output starts against a 64-byte line (head and tail stored one by one), for
    # rows shorter than a line, and in the serial and the parallel kernels.
    rows, d = shape
    x = _random(shape, dtype, seed=14) * 3 + 2
    w = _random((d,), dtype, seed=15) if affine != "none" else None
    b = _random((d,), dtype, seed=16) if affine == "both" else None
    expected, expected_stats = fast.fused_norm(norm, x, w, b, 1e-5)
    serial, parallel = (
        (_fused.rms_serial, _fused.rms_parallel)
        if norm == "rms"
        else (_fused.layer_serial, _fused.layer_parallel)
    )
    args = (x.numpy(), _vector(w), _vector(b), 1e-5)
    for shift in (0, 1, 3):
        for kernel, blocks in [(serial, ()), (parallel, (min(rows, 3),))]:
            out = _misaligned(shape, dtype, shift).fill_(float("nan"))
            stats = [np.empty(rows, x.numpy().dtype) for _ in expected_stats]
            kernel(*args, out.numpy(), *stats, True, *blocks)
            assert out.numpy().tobytes() == expected.numpy().tobytes(), (shift, blocks)
            for got, want in zip(stats, expected_stats, strict=True):
                assert got.tobytes() == want.tobytes()


def _vector(p):
    return None if p is None else p.numpy()


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_a_large_given_output_is_streamed_with_the_same_bits(norm):
    # fused_norm streams into an out of STREAM_MIN_BYTES or more: here one whose rows start 4
    # bytes past a line (d = 1031, odd), on the parallel kernel.
    rows, d = fast.STREAM_MIN_BYTES // (4 * 1031) + 1, 1031
    x = _random((rows, d), torch.float32, seed=17)
    w, b = _random((d,), torch.float32, seed=18), _random((d,), torch.float32, seed=19)
    b = b if norm == "layer" else None
    out = _misaligned((rows, d), torch.float32, 1).fill_(float("nan"))
    assert out.numel() * 4 >= fast.STREAM_MIN_BYTES
    y, stats = fast.fused_norm(norm, x, w, b, 1e-5, out=out)
    fresh, fresh_stats = fast.fused_norm(norm, x, w, b, 1e-5)
    assert y is out and out.numpy().tobytes() == fresh.numpy().tobytes()
    assert all(s.tobytes() == f.tobytes() for s, f in zip(stats, fresh_stats, strict=True))
    _assert_close(out, _torch(norm, x, w, b, 1e-5))


def test_only_a_large_output_in_long_rows_not_on_small_pages_is_streamed(monkeypatch):
    launched = []
    monkeypatch.setattr(fast, "_launch", lambda kind, *args, stream: launched.append(stream))
    rows = fast.STREAM_MIN_BYTES // fast.STREAM_MIN_ROW_BYTES
    x = torch.zeros(rows, fast.STREAM_MIN_ROW_BYTES // 4)  # exactly both bounds
    fast.fused_norm("rms", x, None, None, 1e-5, out=torch.empty_like(x))
    fast.fused_norm("layer", x, None, None, 1e-5, out=torch.empty_like(x))
    fast.fused_norm("rms", x[1:], None, None, 1e-5, out=torch.empty_like(x[1:]))  # a row less
    short = x.view(2 * rows, -1)  # as many bytes, in rows of half the bound
    fast.fused_norm("rms", short, None, None, 1e-5, out=torch.empty_like(short))
    assert launched == [True, True, False, False]
    fast.fused_norm("rms", x, None, None, 1e-5)  # fresh memory: huge pages where Linux has them
    monkeypatch.setattr(fast, "HUGE_MIN_BYTES", 1 << 62)
    fast.fused_norm("rms", x, None, None, 1e-5)  # fresh 4 KiB pages: ordinary stores
    assert launched[4:] == [hasattr(mmap, "MADV_HUGEPAGE"), False]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_large_fresh_output_is_its_own_huge_page_aligned_mapping(dtype):
    # (rows, d) with d odd: the size is no multiple of a huge page.
    rows, d = fast.HUGE_MIN_BYTES // (4 * 1031) + 3, 1031
    y = fast.fresh((rows, d), dtype)
    assert (y.shape, y.dtype, y.is_contiguous()) == ((rows, d), dtype, True)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        assert y.data_ptr() % fast.HUGE_PAGE == 0
    y.fill_(2.5)  # every byte of it can be written (a short mapping would fault here)
    assert float(y[-1, -1]) == 2.5 and float(y.sum()) == 2.5 * rows * d
    small = fast.fresh((4, d), dtype)  # torch's own allocation
    assert small.shape == (4, d) and small.untyped_storage().resizable()


def test_a_view_keeps_a_fresh_output_alive():
    y = fast.fresh((fast.HUGE_MIN_BYTES // 4096, 1024), torch.float32).fill_(1.5)
    row = y[-1]
    del y
    gc.collect()
    np.empty(fast.HUGE_MIN_BYTES // 4).fill(7.0)  # what a freed mapping would make room for
    assert row.tolist() == [1.5] * 1024


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_a_huge_page_output_holds_the_bits_of_torch_own_allocation(norm, monkeypatch):
    rows, d = fast.HUGE_MIN_BYTES // (4 * 1024) + 5, 1024
    x = _random((rows, d), torch.float32, seed=23)
    w, b = _random((d,), torch.float32, seed=24), _random((d,), torch.float32, seed=25)
    b = b if norm == "layer" else None
    y = fast.fused(norm, x, w, b, 1e-5)
    monkeypatch.setattr(fast, "HUGE_MIN_BYTES", 1 << 62)
    plain = fast.fused(norm, x, w, b, 1e-5)
    assert y.numpy().tobytes() == plain.numpy().tobytes()
    _assert_close(y, _torch(norm, x, w, b, 1e-5))


def test_fused_kernels_are_safe_from_many_threads():
    x = _random((1024, 512), torch.float32, seed=8)
    expected = F.rms_norm(x, (512,), None, 1e-6)
    with ThreadPoolExecutor(4) as pool:
        outputs = list(pool.map(lambda _: FUSED_RMS(x, None, None, 1e-6), range(8)))
    for y in outputs:
        _assert_close(y, expected)


@settings(max_examples=examples(60), deadline=None)
@given(
    batch=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    d=st.integers(1, 70),
    eps=st.sampled_from([0.0, 1e-6, 1e-2]),
    with_weight=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_core_rms_norm_matches_functional_on_random_shapes(batch, d, eps, with_weight, seed):
    x = _random((*batch, d), torch.float64, seed)
    weight = _random((d,), torch.float64, seed + 1) if with_weight else None
    _assert_close(rms_norm(x, weight, eps=eps), F.rms_norm(x, (d,), weight, eps))


def test_fused_kernels_handle_zero_rows():
    for norm in ("rms", "layer"):
        assert KERNELS[(norm, "fused")](torch.empty(0, 8), None, None, 1e-5).shape == (0, 8)


def test_fused_kernels_refuse_what_they_cannot_compute():
    for bad in (
        torch.ones(3, 4, dtype=torch.float16),  # half: torch's own kernels
        torch.ones(3, 4, requires_grad=True),  # autograd must record the operation
    ):
        with pytest.raises(ValueError, match="fused"):
            FUSED_RMS(bad, None, None, 1e-6)
    with pytest.raises(ValueError, match="fused"):
        FUSED_LAYER(torch.ones(3, 4), torch.ones(4, dtype=torch.float64), None, 1e-5)
    with torch.no_grad():
        assert fast.fusable(torch.ones(3, 4, requires_grad=True))


def test_core_norms_fall_back_to_torch_where_the_fused_kernels_do_not_apply():
    x = _random((4, 16), torch.float32, seed=9)
    half = x.to(torch.bfloat16)
    torch.testing.assert_close(rms_norm(half), F.rms_norm(half, (16,), None, 1e-6))
    torch.testing.assert_close(layer_norm(half), F.layer_norm(half, (16,)))


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_gradients_flow_through_the_core_norms(norm):
    x = _random((9, 12), torch.float64, seed=10).requires_grad_()
    weight = _random((12,), torch.float64, seed=11).requires_grad_()
    upstream = _random((9, 12), torch.float64, seed=12)
    ours = rms_norm(x, weight) if norm == "rms" else layer_norm(x, weight)
    ours.backward(upstream)
    got = (x.grad.clone(), weight.grad.clone())
    x.grad, weight.grad = None, None
    _torch(norm, x, weight, None, 1e-6 if norm == "rms" else 1e-5).backward(upstream)
    _assert_close(got[0], x.grad)
    _assert_close(got[1], weight.grad)


def _with_bad_row(value):
    x = torch.ones(1024, fast.FUSED_MIN_ELEMENTS // 1024)
    x[1] = value
    x[1, ::2] *= -1  # +-value: a spread for LayerNorm too
    return x


def test_plain_norm_leaves_bad_rows_to_the_general_path():
    # nan, inf, and 1e30, whose float32 squares overflow: the general path raises or warns.
    for norm in ("rms", "layer"):
        for bad in (float("nan"), float("inf"), 1e30):
            assert plain_norm(norm, _with_bad_row(bad), None, None, 1e-5) is None, (norm, bad)
        assert plain_norm(norm, _with_bad_row(1.0), None, None, 0.0) is None
        assert plain_norm(norm, _with_bad_row(1.0), None, None, 1e-5) is not None
    # Small inputs: torch's own LayerNorm kernel, and the general path (None) for RMSNorm.
    x = _random((3, 8), torch.float32, seed=13)
    assert torch.equal(plain_norm("layer", x, None, None, 1e-5), F.layer_norm(x, (8,)))
    assert plain_norm("rms", x, None, None, 1e-5) is None


def test_core_norms_reject_bad_input():
    with pytest.raises(ValueError, match="shape"):
        rms_norm(torch.ones(3, 4), torch.ones(5))
    with pytest.raises(ValueError, match="dimension"):
        rms_norm(torch.tensor(1.0))
    with pytest.raises(ValueError, match="dimension"):
        layer_norm(torch.tensor(1.0))


def test_available_cores_is_the_affinity_at_most():
    assert 1 <= available_cores() <= len(__import__("os").sched_getaffinity(0))


@pytest.mark.slow  # a fresh interpreter: a few seconds on a busy machine
def test_importing_core_loads_neither_torch_nor_numba():
    code = (
        "import sys, core; "
        "print(*(m in sys.modules for m in ('torch', 'numba', 'core.fast', 'core._fused')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"] * 4


_WAIT_POLICY_AT_TORCH_IMPORT = """
import os, sys
seen = []
def hook(event, args):
    if event == "import" and args[0] == "torch" and not seen:
        seen.append(os.environ.get("OMP_WAIT_POLICY"))
sys.addaudithook(hook)
import {module}
{after}
print(seen[0] if seen else "torch not imported")
"""


@pytest.mark.parametrize(
    ("module", "after"),
    [("ui.nav", "ui.nav.preload(lambda: __import__('pages.training'))"), ("benchmarks.bench", "")],
)
def test_torch_meets_passive_openmp_threads_in_the_app_and_the_benchmark(module, after) -> None:
    """Spinning OpenMP threads took a core from the fused kernels started after a torch
    operation (fused RMSNorm into a buffer 1.17-1.29x the copy, 1.01-1.14x with passive
    threads); libgomp reads the policy once, when torch loads it."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = _WAIT_POLICY_AT_TORCH_IMPORT.format(module=module, after=after)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "PASSIVE"
