"""Correctness of core.fast against torch.nn.functional, and a smoke run of core.bench."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from core.fast import layer_norm_fast, rms_norm_fast

REPO_ROOT = Path(__file__).resolve().parents[1]

# Agreement required of the fast path: a few float32 ulps of O(1) outputs, and far below any
# visible difference in float64.
TOLERANCE = {torch.float32: 1e-6, torch.float64: 1e-12}


def _random(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _assert_close(actual: torch.Tensor, desired: torch.Tensor) -> None:
    assert actual.shape == desired.shape
    assert actual.dtype == desired.dtype
    tol = TOLERANCE[desired.dtype]
    np.testing.assert_allclose(
        actual.detach().numpy(), desired.detach().numpy(), rtol=tol, atol=tol
    )


SHAPES = [(9,), (1, 64), (7, 33), (513, 100), (3, 5, 16), (2, 3, 4, 9)]
DTYPES = [torch.float32, torch.float64]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_weight", [False, True])
def test_rms_norm_fast_matches_functional(shape, dtype, with_weight):
    d = shape[-1]
    x = _random(shape, dtype, seed=1)
    weight = _random((d,), dtype, seed=2) if with_weight else None
    _assert_close(rms_norm_fast(x, weight, 1e-6), F.rms_norm(x, (d,), weight, 1e-6))


@settings(max_examples=60, deadline=None)
@given(
    batch=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    d=st.integers(1, 70),
    eps=st.sampled_from([0.0, 1e-6, 1e-2]),
    with_weight=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_rms_norm_fast_matches_functional_on_random_shapes(batch, d, eps, with_weight, seed):
    x = _random((*batch, d), torch.float64, seed)
    weight = _random((d,), torch.float64, seed + 1) if with_weight else None
    _assert_close(rms_norm_fast(x, weight, eps), F.rms_norm(x, (d,), weight, eps))


def test_rms_norm_fast_handles_non_contiguous_input():
    x = _random((40, 24), torch.float32, seed=3).t()  # (24, 40), rows strided in memory
    assert not x.is_contiguous()
    _assert_close(rms_norm_fast(x), F.rms_norm(x, (40,), None, 1e-6))


def test_rms_norm_fast_handles_zero_rows():
    x = torch.empty(0, 8)
    assert rms_norm_fast(x).shape == (0, 8)


def test_rms_norm_fast_default_eps_is_the_rms_norm_convention():
    x = _random((6, 10), torch.float64, seed=4) * 1e-3  # small enough for eps to matter
    _assert_close(rms_norm_fast(x), F.rms_norm(x, (10,), None, 1e-6))


# PyTorch warns that a weight of another dtype rules out its fused kernel; the fallback is its call.
@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight:UserWarning")
def test_rms_norm_fast_other_dtypes_match_functional():
    x = _random((4, 16), torch.float32, seed=7)
    _assert_close(rms_norm_fast(x), F.rms_norm(x, (16,), None, 1e-6))
    half = x.to(torch.bfloat16)
    torch.testing.assert_close(rms_norm_fast(half), F.rms_norm(half, (16,), None, 1e-6))
    wide_weight = _random((16,), torch.float64, seed=14)  # dtype differs from x
    _assert_close(rms_norm_fast(x, wide_weight), F.rms_norm(x, (16,), wide_weight, 1e-6))


def test_rms_norm_fast_gradients_match_functional():
    x = _random((9, 12), torch.float64, seed=8).requires_grad_()
    weight = _random((12,), torch.float64, seed=9).requires_grad_()
    upstream = _random((9, 12), torch.float64, seed=10)
    rms_norm_fast(x, weight).backward(upstream)
    got = (x.grad.clone(), weight.grad.clone())
    x.grad, weight.grad = None, None
    F.rms_norm(x, (12,), weight, 1e-6).backward(upstream)
    _assert_close(got[0], x.grad)
    _assert_close(got[1], weight.grad)


def test_rms_norm_fast_rejects_bad_inputs():
    with pytest.raises(ValueError, match="shape"):
        rms_norm_fast(torch.ones(3, 4), torch.ones(5))
    with pytest.raises(ValueError, match="dimension"):
        rms_norm_fast(torch.tensor(1.0))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_fast_matches_functional(shape, dtype, affine):
    d = shape[-1]
    x = _random(shape, dtype, seed=11) * 3 + 2  # a nonzero mean for LayerNorm to remove
    weight = _random((d,), dtype, seed=12) if affine else None
    bias = _random((d,), dtype, seed=13) if affine else None
    _assert_close(layer_norm_fast(x, weight, bias), F.layer_norm(x, (d,), weight, bias, 1e-5))


def test_layer_norm_fast_rejects_scalar():
    with pytest.raises(ValueError, match="dimension"):
        layer_norm_fast(torch.tensor(1.0))


def test_importing_core_does_not_load_torch_or_fast():
    code = "import sys, core; print('torch' in sys.modules, 'core.fast' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_bench_cli_prints_the_table():
    done = subprocess.run(
        [sys.executable, "-m", "core.bench", "--rows", "64", "--cols", "256", "--repeats", "2"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "(64, 256) float32 on cpu" in out
    for label in ["x.clone()", "core.rms_norm", "F.rms_norm", "core.layer_norm", "F.layer_norm"]:
        assert label in out
    assert "vs copy" in out and "core vs F" in out
    # The copy is the unit of the ratio column.
    clone_line = next(line for line in out.splitlines() if "x.clone()" in line)
    assert clone_line.rstrip().endswith("1.00x")


def test_bench_cli_rejects_non_positive_sizes():
    done = subprocess.run(
        [sys.executable, "-m", "core.bench", "--rows", "0"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "positive" in done.stderr
