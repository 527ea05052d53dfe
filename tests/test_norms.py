"""core.norms against torch.nn.functional, hand formulas and the properties that must hold."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core import (
    LAYER_FORMULA,
    RMS_FORMULA,
    NormReport,
    NormWarning,
    layer_norm,
    layer_norm_report,
    rms_norm,
    rms_norm_report,
)
from core.norms import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS

SEED = 20240607
F64_TOL = 1e-12
F32_TOL = 1e-6
SHAPES = [(16,), (3, 16), (2, 3, 7)]


def _data(shape, seed=SEED):
    rng = np.random.default_rng(seed)
    d = shape[-1]
    return rng.normal(1.0, 2.0, size=shape), rng.normal(size=d), rng.normal(size=d)


# ---------------------------------------------------------------- agreement with torch ---------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype,tol", [(torch.float64, F64_TOL), (torch.float32, F32_TOL)])
def test_rms_norm_matches_torch(shape, dtype, tol):
    x, w, _ = _data(shape)
    xt, wt = torch.tensor(x, dtype=dtype), torch.tensor(w, dtype=dtype)
    ref = F.rms_norm(xt, (shape[-1],), wt, eps=1e-6)
    out = rms_norm(xt, wt, eps=1e-6)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=tol, atol=tol)
    out_np = rms_norm(xt.numpy(), wt.numpy(), eps=1e-6)
    np.testing.assert_allclose(out_np, ref.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype,tol", [(torch.float64, F64_TOL), (torch.float32, F32_TOL)])
def test_layer_norm_matches_torch(shape, dtype, tol):
    x, w, b = _data(shape)
    xt, wt, bt = (torch.tensor(a, dtype=dtype) for a in (x, w, b))
    ref = F.layer_norm(xt, (shape[-1],), wt, bt, eps=1e-5)
    out = layer_norm(xt, wt, bt, eps=1e-5)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=tol, atol=tol)
    out_np = layer_norm(xt.numpy(), wt.numpy(), bt.numpy(), eps=1e-5)
    np.testing.assert_allclose(out_np, ref.numpy(), rtol=tol, atol=tol)


def test_rms_norm_plain_float32_torch_takes_the_fast_path():
    # A plain call on a float32 tensor goes to core.fast's two-pass kernel: the same numbers as
    # torch's kernel to float32 rounding (it sums squares through vector_norm), while the
    # "torch" preset reproduces torch's operation order bit for bit.
    x, w, _ = _data((4, 64))
    xt, wt = torch.tensor(x, dtype=torch.float32), torch.tensor(w, dtype=torch.float32)
    ref = F.rms_norm(xt, (64,), wt, eps=1e-6)
    np.testing.assert_allclose(
        rms_norm(xt, wt, eps=1e-6).numpy(), ref.numpy(), rtol=2e-6, atol=2e-6
    )
    assert torch.equal(rms_norm(xt, wt, eps=1e-6, preset="torch"), ref)


def test_plain_fast_paths_still_refuse_nan_and_inf():
    for bad in (float("nan"), float("inf")):
        x = torch.ones(3, 8)
        x[1, 2] = bad
        with pytest.raises(ValueError, match="x"):
            rms_norm(x)
        with pytest.raises(ValueError, match="x"):
            layer_norm(x)


def test_plain_layer_norm_equals_torch_kernel_exactly():
    x, w, b = _data((5, 33))
    xt, wt, bt = (torch.tensor(a, dtype=torch.float32) for a in (x, w, b))
    assert torch.equal(layer_norm(xt, wt, bt), F.layer_norm(xt, (33,), wt, bt, eps=1e-5))


def test_defaults_and_explicit_eps():
    x, _, _ = _data((8,))
    assert DEFAULT_RMS_EPS == 1e-6 and DEFAULT_LAYER_EPS == 1e-5
    assert rms_norm_report(x).eps == DEFAULT_RMS_EPS
    assert layer_norm_report(x).eps == DEFAULT_LAYER_EPS
    assert rms_norm_report(x, preset="paper").eps == 1e-8
    assert rms_norm_report(x, preset="paper", eps=0.25).eps == 0.25
    expected = x / np.sqrt(np.mean(x**2) + 0.25)
    np.testing.assert_allclose(rms_norm(x, eps=0.25), expected, rtol=F64_TOL)


# ---------------------------------------------------------------- knobs vs hand formulas -------


def test_eps_placements_match_their_formulas():
    x, w, _ = _data((3, 10))
    eps = 0.5  # large, so the placements differ visibly
    ms = np.mean(x**2, axis=-1, keepdims=True)
    inside = x / np.sqrt(ms + eps) * w
    outside = x / (np.sqrt(ms) + eps) * w
    clamp = x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), eps) * math.sqrt(10) * w
    np.testing.assert_allclose(rms_norm(x, w, eps=eps), inside, rtol=F64_TOL)
    np.testing.assert_allclose(
        rms_norm(x, w, eps=eps, eps_placement="outside"), outside, rtol=F64_TOL
    )
    np.testing.assert_allclose(rms_norm(x, w, eps=eps, eps_placement="clamp"), clamp, rtol=F64_TOL)
    tiny = np.full((1, 10), 1e-3)
    np.testing.assert_allclose(
        rms_norm(tiny, eps=eps, eps_placement="clamp"), tiny / eps * math.sqrt(10), rtol=F64_TOL
    )
    xc = x - x.mean(axis=-1, keepdims=True)
    std = np.sqrt(np.mean(xc**2, axis=-1, keepdims=True))
    np.testing.assert_allclose(
        layer_norm(x, eps=eps, eps_placement="outside"), xc / (std + eps), rtol=F64_TOL
    )


def test_offset_gain_is_one_plus_weight():
    x, w, _ = _data((2, 12))
    np.testing.assert_allclose(
        rms_norm(x, w, gain_mode="offset"), rms_norm(x, 1.0 + w), rtol=F64_TOL
    )
    np.testing.assert_allclose(rms_norm(x, gain_mode="offset"), rms_norm(x), rtol=F64_TOL)


def test_cast_before_and_after_round_differently_in_half():
    gen = torch.Generator().manual_seed(SEED)
    x = torch.randn(64, 256, generator=gen).to(torch.float16)
    w = (torch.randn(256, generator=gen) * 3).to(torch.float16)
    xf = x.float()
    xhat = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)
    after = rms_norm(x, w, reduction_dtype="float32", cast="after")
    before = rms_norm(x, w, reduction_dtype="float32", cast="before")
    assert torch.equal(after, (xhat * w.float()).half())
    assert torch.equal(before, xhat.half() * w)
    assert not torch.equal(after, before)


def test_partial_uses_ceil_of_p_times_d():
    x, _, _ = _data((4, 10))
    report = rms_norm_report(x, partial=0.25, eps=1e-6)
    k = 3  # ceil(2.5); the paper's int(2.5) would be 2
    rms = np.sqrt(np.mean(x[..., :k] ** 2, axis=-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(report.output, x / rms, rtol=F64_TOL)
    np.testing.assert_allclose(report.stat, rms, rtol=F64_TOL)
    assert report.settings["partial_size"] == k
    assert any("int(p*d) = 2" in note for note in report.notes)
    assert rms_norm_report(x, partial=0.7).settings["partial_size"] == 7


def test_reduction_dtype_float16_on_numpy_goes_through_torch():
    x, _, _ = _data((3, 32))
    report = rms_norm_report(x, reduction_dtype="float16")
    assert isinstance(report.output, np.ndarray) and report.output.dtype == np.float64
    xh = torch.tensor(x).half()
    ref = (xh * torch.rsqrt(xh.pow(2).mean(-1, keepdim=True) + 1e-6)).double().numpy()
    np.testing.assert_array_equal(report.output, ref)
    assert report.settings["reduction_dtype"] == "float16"
    assert report.settings["backend"] == "torch"


# ---------------------------------------------------------------- report -----------------------


def test_report_statistics():
    x, w, b = _data((2, 3, 9))
    report = rms_norm_report(x, w, eps=1e-3)
    assert isinstance(report, NormReport)
    for stat in (report.stat, report.mean, report.mean_square, report.variance):
        assert stat.shape == (2, 3, 1) and stat.dtype == np.float64
    ms = np.mean(x**2, axis=-1, keepdims=True)
    mu = x.mean(axis=-1, keepdims=True)
    np.testing.assert_allclose(report.mean_square, ms, rtol=F64_TOL)
    np.testing.assert_allclose(report.stat, np.sqrt(ms + 1e-3), rtol=F64_TOL)
    np.testing.assert_allclose(report.mean, mu, rtol=F64_TOL)
    np.testing.assert_allclose(
        report.variance, np.mean((x - mu) ** 2, axis=-1, keepdims=True), rtol=F64_TOL
    )
    np.testing.assert_allclose(report.output, rms_norm(x, w, eps=1e-3), rtol=0)
    assert report.settings["eps_placement"] == "inside" and report.settings["preset"] is None

    layer = layer_norm_report(x, w, b)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    np.testing.assert_allclose(layer.stat, np.sqrt(var + DEFAULT_LAYER_EPS), rtol=F64_TOL)
    np.testing.assert_allclose(layer.variance, var, rtol=F64_TOL)
    np.testing.assert_allclose(layer.mean_square, ms, rtol=F64_TOL)


def test_formulas_are_the_docstrings():
    assert RMS_FORMULA in rms_norm.__doc__
    assert LAYER_FORMULA in layer_norm.__doc__


# ---------------------------------------------------------------- kinds, dtypes, devices -------


def test_kind_in_kind_out():
    x, w, _ = _data((2, 8))
    assert isinstance(rms_norm(x.tolist()), np.ndarray)
    assert rms_norm(x.tolist()).dtype == np.float64
    assert rms_norm(x.astype(np.float32)).dtype == np.float32
    assert rms_norm([[1, 2, 3]]).dtype == np.float64
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        xt = torch.tensor(x, dtype=dtype)
        out = rms_norm(xt)
        assert isinstance(out, torch.Tensor) and out.dtype == dtype and out.device == xt.device
        out = layer_norm(xt)
        assert isinstance(out, torch.Tensor) and out.dtype == dtype
    moved = rms_norm(x, device="cpu")
    assert isinstance(moved, torch.Tensor) and moved.dtype == torch.float64
    np.testing.assert_allclose(moved.numpy(), rms_norm(x), rtol=F64_TOL)


# ---------------------------------------------------------------- warnings ---------------------


def test_float16_reduction_overflow_warns_and_notes():
    x = 300 * np.ones(64)
    with pytest.warns(NormWarning, match="overflowed to inf in float16"):
        report = rms_norm_report(x, reduction_dtype="float16")
    assert any("overflowed" in note for note in report.notes)
    assert np.isinf(report.mean_square).all()
    # rsqrt(inf) = 0: the honest float16 answer is 0, where float32 gives 1.
    np.testing.assert_array_equal(report.output, np.zeros(64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(
            rms_norm(x, reduction_dtype="float32"), np.ones(64), rtol=F32_TOL
        )


def test_zero_vector_with_zero_eps_is_zeros_with_warning():
    for placement in ("inside", "outside", "clamp"):
        with pytest.warns(NormWarning, match="zero vector"):
            report = rms_norm_report(np.zeros((2, 5)), eps=0.0, eps_placement=placement)
        np.testing.assert_array_equal(report.output, np.zeros((2, 5)))
        assert any("0/0" in note for note in report.notes)
    with pytest.warns(NormWarning, match="constant row"):
        out = layer_norm(torch.full((3, 4), 2.0), eps=0.0)
    assert torch.equal(out, torch.zeros(3, 4))


def test_zero_prefix_with_partial_gives_inf_and_says_so():
    with pytest.warns(NormWarning, match="divided by 0") as record:
        out = rms_norm([0.0, 0.0, 1.0, -2.0], eps=0.0, partial=0.5)
    assert not any("zero vector" in str(w.message) for w in record)
    np.testing.assert_array_equal(out, [0.0, 0.0, np.inf, -np.inf])


# ---------------------------------------------------------------- bad input --------------------

BAD_CALLS = [
    ("x", lambda: rms_norm([1.0, np.nan])),
    ("x", lambda: layer_norm(torch.tensor([1.0, float("inf")]))),
    ("x", lambda: rms_norm(np.zeros((2, 0)))),
    ("x", lambda: rms_norm(np.float64(3.0))),
    ("x", lambda: rms_norm(["a", "b"])),
    ("x", lambda: rms_norm(torch.arange(4))),
    ("x", lambda: rms_norm([np.inf, 1.0, 2.0, 3.0], partial=0.25)),
    ("eps", lambda: rms_norm([1.0, 2.0], eps=-1e-5)),
    ("eps", lambda: layer_norm([1.0, 2.0], eps=float("nan"))),
    ("partial", lambda: rms_norm([1.0, 2.0], partial=0)),
    ("partial", lambda: rms_norm([1.0, 2.0], partial=1.5)),
    ("preset", lambda: rms_norm([1.0, 2.0], preset="nope")),
    ("preset", lambda: layer_norm([1.0, 2.0], preset="llama")),
    ("reduction_dtype", lambda: rms_norm([1.0, 2.0], reduction_dtype="int8")),
    ("eps_placement", lambda: rms_norm([1.0, 2.0], eps_placement="under")),
    ("gain_mode", lambda: rms_norm([1.0, 2.0], gain_mode="scale")),
    ("cast", lambda: layer_norm([1.0, 2.0], cast="never")),
    ("device", lambda: rms_norm([1.0, 2.0], device="tpu")),
    ("weight", lambda: rms_norm([1.0, 2.0], [1.0, 2.0, 3.0])),
    ("weight", lambda: rms_norm([1.0, 2.0], np.ones((2, 2)))),
    ("bias", lambda: layer_norm([1.0, 2.0], None, [1.0, 2.0, 3.0])),
]


@pytest.mark.parametrize("name,call", BAD_CALLS)
def test_bad_input_raises_value_error_naming_the_parameter(name, call):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


def test_eps_message_shape():
    with pytest.raises(ValueError, match=r"^eps must be >= 0 \(got -1e-05\)$"):
        rms_norm([1.0, 2.0], eps=-1e-5)


# ---------------------------------------------------------------- properties -------------------


def _rows(min_d=2, max_d=16):
    finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
    return st.integers(min_d, max_d).flatmap(lambda d: arrays(np.float64, (3, d), elements=finite))


def _spread(x):
    # Rows whose spread is at rounding level make LayerNorm amplify noise; keep real signals.
    centred = x - x.mean(axis=-1, keepdims=True)
    return np.sqrt(np.mean(centred**2, axis=-1)).min() > 1e-3


@settings(max_examples=50, deadline=None)
@given(_rows(), st.floats(-100, 100))
def test_layer_norm_ignores_a_shift(x, c):
    assume(_spread(x))
    np.testing.assert_allclose(layer_norm(x + c), layer_norm(x), rtol=1e-6, atol=1e-6)


@settings(max_examples=50, deadline=None)
@given(_rows(), st.floats(1e-3, 1e3))
def test_both_ignore_a_positive_rescale_at_zero_eps(x, scale):
    assume(_spread(x))
    np.testing.assert_allclose(
        rms_norm(scale * x, eps=0.0), rms_norm(x, eps=0.0), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_allclose(
        layer_norm(scale * x, eps=0.0), layer_norm(x, eps=0.0), rtol=1e-9, atol=1e-9
    )


@settings(max_examples=50, deadline=None)
@given(_rows(), st.floats(-5, 5).filter(lambda g: abs(g) > 1e-3))
def test_output_norm_is_sqrt_d_times_gain(x, g):
    assume(_spread(x))
    d = x.shape[-1]
    for out in (rms_norm(x, g, eps=0.0), layer_norm(x, g, eps=0.0)):
        np.testing.assert_allclose(np.linalg.norm(out, axis=-1), math.sqrt(d) * abs(g), rtol=1e-9)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 32), st.sampled_from(["inside", "outside", "clamp"]))
def test_zero_vector_property(d, placement):
    with pytest.warns(NormWarning):
        out = rms_norm(np.zeros((2, d)), eps=0.0, eps_placement=placement)
    np.testing.assert_array_equal(out, np.zeros((2, d)))
    with pytest.warns(NormWarning):
        out = layer_norm(np.zeros((2, d)), eps=0.0, eps_placement=placement)
    np.testing.assert_array_equal(out, np.zeros((2, d)))


def test_weight_dtype_rules_and_strided_input():
    x, _, _ = _data((2, 4))
    x32 = x.astype(np.float32)
    # A list weight takes x's dtype, so cast="before" keeps float32; a float64 array promotes.
    assert rms_norm(x32, [1.0, 2.0, 3.0, 4.0], cast="before").dtype == np.float32
    assert rms_norm(x32, np.ones(4), cast="before").dtype == np.float64
    assert rms_norm(torch.tensor(x32), torch.arange(4), cast="before").dtype == torch.float32
    strided = x[:, ::-1]
    np.testing.assert_allclose(
        rms_norm(strided, reduction_dtype="bfloat16"),
        rms_norm(np.ascontiguousarray(strided), reduction_dtype="bfloat16"),
        rtol=0,
    )
