"""core.norms against torch.nn.functional, hand formulas and the properties that must hold."""

import math
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core import (
    NormReport,
    NormWarning,
    layer_norm,
    layer_norm_report,
    preset_names,
    rms_norm,
    rms_norm_report,
)
from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS
from core.fast import FUSED_MIN_ELEMENTS, KERNELS
from core.messages import TEXTS, Message
from core.norms import (
    layer_norm_reference,
    mean_square,
    rms_denominator,
    rms_norm_reference,
    std_denominator,
    variance,
)
from tests.hypothesis_util import examples

ROOT = Path(__file__).resolve().parents[1]
SEED = 20240607
F64_TOL = 1e-12
F32_TOL = 1e-6
SHAPES = [(16,), (3, 16), (2, 3, 7)]
# Large enough for a plain call to take the fused kernel (core.fast.FUSED_MIN_ELEMENTS).
LARGE = (1024, 256)


def _data(shape, seed=SEED):
    rng = np.random.default_rng(seed)
    d = shape[-1]
    return rng.normal(1.0, 2.0, size=shape), rng.normal(size=d), rng.normal(size=d)


# ---------------------------------------------------------------- the references ---------------


def test_references_are_the_formulas_by_hand():
    x, w, b = _data((3, 16))
    for row, out in zip(x, rms_norm_reference(x, w, eps=0.1), strict=True):
        rms = math.sqrt(sum(v * v for v in row) / 16 + 0.1)
        np.testing.assert_allclose(out, [v / rms * g for v, g in zip(row, w, strict=True)])
    for row, out in zip(x, layer_norm_reference(x, w, b, eps=0.1), strict=True):
        mu = sum(row) / 16
        sigma = math.sqrt(sum((v - mu) ** 2 for v in row) / 16 + 0.1)
        expected = [(v - mu) / sigma * g + c for v, g, c in zip(row, w, b, strict=True)]
        np.testing.assert_allclose(out, expected)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, F64_TOL), (torch.float32, F32_TOL)])
def test_references_agree_with_torch(dtype, tol):
    x, w, b = _data((4, 33))
    xt, wt, bt = (torch.tensor(a, dtype=dtype) for a in (x, w, b))
    np.testing.assert_allclose(
        rms_norm_reference(xt, wt), F.rms_norm(xt, (33,), wt, 1e-6).double(), rtol=tol, atol=tol
    )
    np.testing.assert_allclose(
        layer_norm_reference(xt, wt, bt),
        F.layer_norm(xt, (33,), wt, bt, 1e-5).double(),
        rtol=tol,
        atol=tol,
    )


def _every_path(kind, x, w, b, eps):
    """Each way the core computes a plain norm with a weight and a bias, by name; the names of
    float32 computations contain "32"."""
    norm, report = (rms_norm, rms_norm_report) if kind == "rms" else (layer_norm, layer_norm_report)
    xt, wt, bt = (torch.tensor(a) for a in (x, w, b))
    xf, wf, bf = (a.float() for a in (xt, wt, bt))
    paths = {
        "numpy float64": norm(x, w, b, eps=eps),
        "numpy float32": norm(x.astype(np.float32), w, b, eps=eps),
        "report": report(x, w, b, eps=eps).output,
        "torch general": norm(xt, wt, bt, eps=eps, device="cpu"),
        "fused float64": norm(xt, wt, bt, eps=eps),
        "fused float32": norm(xf, wf, bf, eps=eps),
        "torch float32 reduction": norm(xt, wt, bt, eps=eps, reduction_dtype="float32"),
        "offset gain": norm(x, w - 1.0, b, eps=eps, gain_mode="offset"),
        "cast before, float32": norm(xf, wf, bf, eps=eps, cast="before"),
        "composite kernel": KERNELS[(kind, "composite")](xt, wt, bt, eps),
        "fused kernel": KERNELS[(kind, "fused")](xt, wt, bt, eps),
    }
    if kind == "layer":
        paths["torch preset"] = norm(xt, wt, bt, eps=eps, preset="torch")
        paths["olmo preset, float32"] = norm(xt, eps=eps, preset="olmo") * wt + bt
    return paths


@pytest.mark.parametrize("eps", [0.0, 1e-6, 0.5])
@pytest.mark.parametrize("shape", [(16,), (1, 7), (5, 33), (2, 3, 64), LARGE])
def test_every_path_agrees_with_the_reference(shape, eps):
    # At eps = 0 plain calls go the general way (the fused path takes eps > 0); the kernels
    # called directly are checked at every eps.
    x, w, b = _data(shape)
    references = {
        "rms": rms_norm_reference(x, w, eps) + b,
        "layer": layer_norm_reference(x, w, b, eps),
    }
    for kind, ref in references.items():
        for name, out in _every_path(kind, x, w, b, eps).items():
            out = out.double().numpy() if isinstance(out, torch.Tensor) else out
            tol = F32_TOL if "32" in name else F64_TOL
            np.testing.assert_allclose(out, ref, rtol=tol, atol=tol, err_msg=f"{kind}: {name}")


def test_every_rms_preset_agrees_with_the_reference_at_its_own_eps():
    # Each preset's placement, precision and gain rule, against the textbook at float32 rounding.
    x, w, _ = _data((4, 64))
    for name in preset_names("rms"):
        report = rms_norm_report(x.astype(np.float32), w.astype(np.float32), preset=name)
        gain = 1.0 + w if report.settings["gain_mode"] == "offset" else w
        placement = report.settings["eps_placement"]
        eps = report.eps if placement == "inside" else 0.0  # outside/clamp: tiny eps, checked below
        expected = rms_norm_reference(x.astype(np.float32), gain.astype(np.float32), eps)
        np.testing.assert_allclose(report.output, expected, rtol=1e-5, atol=1e-5, err_msg=name)


def test_statistics_are_the_references_denominators():
    x, _, _ = _data((3, 9))
    ms = np.mean(x**2, axis=-1, keepdims=True)
    var = np.mean((x - x.mean(axis=-1, keepdims=True)) ** 2, axis=-1, keepdims=True)
    np.testing.assert_allclose(mean_square(x), ms, rtol=F64_TOL)
    np.testing.assert_allclose(variance(x), var, rtol=F64_TOL)
    np.testing.assert_allclose(rms_denominator(x, 0.1), np.sqrt(ms + 0.1), rtol=F64_TOL)
    np.testing.assert_allclose(std_denominator(x, 0.1), np.sqrt(var + 0.1), rtol=F64_TOL)
    np.testing.assert_allclose(rms_denominator(x), np.sqrt(ms + DEFAULT_RMS_EPS), rtol=F64_TOL)
    np.testing.assert_allclose(std_denominator(x), np.sqrt(var + DEFAULT_LAYER_EPS), rtol=F64_TOL)
    xt = torch.tensor(x)
    assert isinstance(rms_denominator(xt), torch.Tensor)
    np.testing.assert_allclose(std_denominator(xt).numpy(), std_denominator(x), rtol=F64_TOL)
    np.testing.assert_allclose(mean_square(x.tolist()), ms, rtol=F64_TOL)


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


@pytest.mark.parametrize("norm", ["rms", "layer"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_plain_large_calls_take_the_fused_kernel_and_presets_are_torchs_own(norm, dtype):
    assert LARGE[0] * LARGE[1] >= FUSED_MIN_ELEMENTS
    x, w, b = _data(LARGE)
    xt, wt, bt = (torch.tensor(a, dtype=dtype) for a in (x, w, b))
    plain = rms_norm(xt, wt, bt) if norm == "rms" else layer_norm(xt, wt, bt)
    assert torch.equal(plain, KERNELS[(norm, "fused")](xt, wt, bt, EPS[norm]))
    ref = _torch_rms(xt, wt, bt) if norm == "rms" else _torch_layer(xt, wt, bt)
    tol = F32_TOL if dtype == torch.float32 else F64_TOL
    np.testing.assert_allclose(plain.numpy(), ref.numpy(), rtol=tol, atol=tol)
    if norm == "rms":
        torch_own = F.rms_norm(xt, (LARGE[1],), wt, EPS[norm])
        assert torch.equal(rms_norm(xt, wt, preset="torch", eps=EPS[norm]), torch_own)
    else:
        assert torch.equal(layer_norm(xt, wt, bt, preset="torch"), ref)


def test_plain_small_calls_and_gradients_stay_on_torchs_operations():
    x, w, b = _data((4, 64))
    xt, wt, bt = (torch.tensor(a, dtype=torch.float32) for a in (x, w, b))
    assert torch.equal(rms_norm(xt, wt, eps=1e-6), F.rms_norm(xt, (64,), wt, eps=1e-6))
    assert torch.equal(layer_norm(xt, wt, bt), F.layer_norm(xt, (64,), wt, bt))
    # With autograd recording, LayerNorm is torch's fused kernel: a single backward node.
    y = layer_norm(xt.requires_grad_(), wt, bt)
    assert type(y.grad_fn).__name__.startswith("NativeLayerNorm")


def test_plain_fast_paths_still_refuse_nan_and_inf():
    for bad in (float("nan"), float("inf")):
        x = torch.ones(LARGE)
        x[1, 2] = bad
        with pytest.raises(ValueError, match="x"):
            rms_norm(x)
        with pytest.raises(ValueError, match="x"):
            layer_norm(x)


def test_plain_calls_that_need_a_gradient_stay_differentiable():
    x, w, b = _data((6, 20))
    upstream = torch.tensor(_data((6, 20), seed=SEED + 1)[0])
    for norm, ref in ((rms_norm, _torch_rms), (layer_norm, _torch_layer)):
        leaves = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
        norm(*leaves).backward(upstream)
        ours = [t.grad.clone() for t in leaves]
        for t in leaves:
            t.grad = None
        ref(*leaves).backward(upstream)
        for got, want in zip(ours, (t.grad for t in leaves), strict=True):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


EPS = {"rms": DEFAULT_RMS_EPS, "layer": DEFAULT_LAYER_EPS}


def _torch_rms(x, w, b):
    return F.rms_norm(x, (x.shape[-1],), w, DEFAULT_RMS_EPS) + b


def _torch_layer(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, DEFAULT_LAYER_EPS)


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
    (note,) = [n for n in report.notes if n.code == "partial"]
    assert note.fields == {"k": 3, "d": 10, "k_paper": 2} and "int(p*d) = 2" in str(note)
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


@pytest.mark.parametrize("placement", ["inside", "outside", "clamp"])
def test_report_x_hat_is_the_normalised_vector_before_gain_and_bias(placement):
    x, w, b = _data((2, 3, 9))
    for kind, report_of, options in (
        ("rms", rms_norm_report, {"partial": 1.0}),
        ("rms", rms_norm_report, {"partial": 0.5}),
        ("layer", layer_norm_report, {}),
    ):
        report = report_of(x, w, b, eps=1e-3, eps_placement=placement, **options)
        plain = report_of(x, eps=1e-3, eps_placement=placement, **options).output
        assert report.x_hat.shape == x.shape and report.x_hat.dtype == np.float64
        np.testing.assert_allclose(report.x_hat, plain, rtol=F64_TOL, atol=0, err_msg=kind)
    reference = layer_norm_reference(x, eps=1e-3)
    np.testing.assert_allclose(layer_norm_report(x, w, b, eps=1e-3).x_hat, reference, rtol=F64_TOL)


@pytest.mark.parametrize("scale", [1e-200, 1e200, 1e-310])
def test_report_x_hat_keeps_the_direction_of_a_tiny_or_huge_x(scale):
    # float64's own squares of these underflow or overflow; x_hat is computed in units of max|x|.
    x = np.array([3.0, -4.0, 0.0, 12.0])
    rms = np.array([3.0, -4.0, 0.0, 12.0]) / 6.5  # RMS(x) = sqrt(169 / 4) = 6.5
    mu = 11.0 / 4
    layer = (x - mu) / np.sqrt(np.mean((x - mu) ** 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NormWarning)
        got_rms = rms_norm_report(x * scale, eps=0.0).x_hat
        got_layer = layer_norm_report(x * scale, eps=0.0).x_hat
    np.testing.assert_allclose(got_rms, rms, rtol=1e-9)
    np.testing.assert_allclose(got_layer, layer, rtol=1e-9)


def test_report_x_hat_of_a_zero_vector_is_zero():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NormWarning)
        assert not np.any(rms_norm_report(np.zeros(5), eps=0.0).x_hat)
        assert not np.any(layer_norm_report(np.full(5, 2.5), eps=0.0).x_hat)


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


def test_each_formula_is_written_once_and_the_docstrings_name_it():
    core_sources = "".join(p.read_text() for p in (ROOT / "core").glob("*.py"))
    # The sums of the two constants, written nowhere else in the core.
    assert core_sources.count(r"\sum_{j=1}^{d} x_j") == 2
    for norm, name in ((rms_norm, "RMS_FORMULA"), (layer_norm, "LAYER_FORMULA")):
        assert f":data:`{name}`" in norm.__doc__
    for ref, name in ((rms_norm_reference, "RMS_FORMULA"), (layer_norm_reference, "LAYER_FORMULA")):
        assert f":data:`{name}`" in ref.__doc__


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


def _codes(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NormWarning)
        result = call()
    return result, [w.message.message.code for w in caught if w.category is NormWarning]


def test_float16_reduction_overflow_warns_and_notes():
    x = 300 * np.ones(64)
    report, codes = _codes(lambda: rms_norm_report(x, reduction_dtype="float16"))
    assert codes == ["overflow_square_rms"]
    assert Message("overflow_square_rms", {"dtype": "float16"}) in report.notes
    assert np.isinf(report.mean_square).all()
    # rsqrt(inf) = 0: the honest float16 answer is 0, where float32 gives 1.
    np.testing.assert_array_equal(report.output, np.zeros(64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(
            rms_norm(x, reduction_dtype="float32"), np.ones(64), rtol=F32_TOL
        )


@pytest.mark.parametrize(
    "code,call",
    [
        # One square beyond float32 (1e20² > 3.4e38) against every square finite but their sum.
        ("overflow_square_rms", lambda: rms_norm(np.full((1, 64), 1e20, np.float32))),
        ("overflow_sum_rms", lambda: rms_norm(np.full((1, 64), 1e19, np.float32))),
        ("overflow_sum_rms", lambda: rms_norm(torch.full((1, 64), 1e19), device="cpu")),
        (
            "overflow_square_layer",
            lambda: layer_norm(_alternating(300.0), reduction_dtype="float16"),
        ),
        ("overflow_sum_layer", lambda: layer_norm(_alternating(1e19).astype(np.float32))),
        ("overflow_mean_layer", lambda: layer_norm(np.full((1, 64), 1e38, np.float32))),
        # x.norm() of a float16 x is finite in float32, then too large for float16.
        (
            "overflow_norm_rms",
            lambda: rms_norm(torch.full((1, 4096), 2000.0).half(), preset="paper"),
        ),
        (
            "overflow_norm_layer",
            lambda: layer_norm(
                _alternating(2000.0, 4096), reduction_dtype="float16", eps_placement="clamp"
            ),
        ),
    ],
)
def test_overflow_says_which_step_overflowed(code, call):
    _, codes = _codes(call)
    assert codes == [code]


def test_an_output_beyond_the_dtype_is_named():
    # pRMSNorm reads a zero prefix: 1000 / sqrt(eps) is far beyond float16's 65504.
    out, codes = _codes(lambda: rms_norm(np.array([[0.0, 1000.0]], np.float16), partial=0.5))
    assert codes == ["overflow_output"] and np.isinf(out[0, 1])
    # A finite gain too large for float16: 2 * 40000.
    x = torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=torch.float16)
    w = torch.full((4,), 40000.0, dtype=torch.float16)
    out, codes = _codes(lambda: rms_norm(x, w, cast="before"))
    assert codes == ["overflow_output"] and torch.isinf(out[0, 0])


def _alternating(value, d=64):
    row = np.full((1, d), value)
    row[0, ::2] *= -1
    return row


def test_zero_vector_with_zero_eps_is_zeros_with_warning():
    for placement in ("inside", "outside", "clamp"):
        report, codes = _codes(
            lambda p=placement: rms_norm_report(np.zeros((2, 5)), eps=0.0, eps_placement=p)
        )
        assert codes == ["zero_vector"]
        np.testing.assert_array_equal(report.output, np.zeros((2, 5)))
        assert "0/0" in str(report.notes[-1])
    out, codes = _codes(lambda: layer_norm(torch.full((3, 4), 2.0), eps=0.0))
    assert codes == ["zero_variance"]
    assert torch.equal(out, torch.zeros(3, 4))


def test_an_eps_that_rounds_to_zero_is_named():
    out, codes = _codes(lambda: rms_norm(np.zeros((1, 8)), eps=1e-9, reduction_dtype="float16"))
    assert codes == ["zero_vector_eps_lost"]
    np.testing.assert_array_equal(out, np.zeros((1, 8)))
    _, codes = _codes(lambda: layer_norm(np.ones((1, 8)), eps=1e-9, reduction_dtype="float16"))
    assert codes == ["zero_variance_eps_lost"]


def test_zero_prefix_with_partial_gives_inf_and_says_so():
    out, codes = _codes(lambda: rms_norm([0.0, 0.0, 1.0, -2.0], eps=0.0, partial=0.5))
    assert codes == ["zero_stat_inf"]
    np.testing.assert_array_equal(out, [0.0, 0.0, np.inf, -np.inf])


def test_notes_are_coded_messages_in_english_and_hashable():
    report = rms_norm_report(np.ones(4), preset="llama")
    assert [n.code for n in report.notes] == ["eps_preset"]
    assert str(report.notes[0]) == "eps = 1e-6, from preset 'llama'."
    assert len(set(report.notes + report.notes)) == 1
    assert [n.code for n in rms_norm_report(np.ones(4)).notes] == ["eps_default_rms"]
    assert [n.code for n in layer_norm_report(np.ones(4), eps=0.5).notes] == ["eps_explicit"]
    assert "eps_finfo" in [n.code for n in rms_norm_report(np.ones(4), preset="torch").notes]
    bf16 = rms_norm_report(np.ones(4), reduction_dtype="bfloat16", cast="before")
    assert [n.code for n in bf16.notes] == ["numpy_half_reduction", "eps_default_rms"]
    codes = [n.code for n in layer_norm_report(np.ones(4), [1.0] * 4, preset="olmo").notes]
    assert "preset_no_weight" in codes


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


def test_unknown_keywords_are_type_errors_like_pythons():
    with pytest.raises(
        TypeError, match=r"rms_norm_report\(\) got an unexpected keyword .*'epsilon'"
    ):
        rms_norm_report([1.0, 2.0], epsilon=1e-5)
    with pytest.raises(TypeError, match="'partial'"):
        layer_norm_report([1.0, 2.0], partial=0.5)
    with pytest.raises(TypeError):
        rms_norm([1.0, 2.0], epsilon=1e-5)


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


@settings(max_examples=examples(50), deadline=None)
@given(_rows(), st.floats(-100, 100))
def test_layer_norm_ignores_a_shift(x, c):
    assume(_spread(x))
    np.testing.assert_allclose(layer_norm(x + c), layer_norm(x), rtol=1e-6, atol=1e-6)


@settings(max_examples=examples(50), deadline=None)
@given(_rows(), st.floats(1e-3, 1e3))
def test_both_ignore_a_positive_rescale_at_zero_eps(x, scale):
    assume(_spread(x))
    np.testing.assert_allclose(
        rms_norm(scale * x, eps=0.0), rms_norm(x, eps=0.0), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_allclose(
        layer_norm(scale * x, eps=0.0), layer_norm(x, eps=0.0), rtol=1e-9, atol=1e-9
    )


@settings(max_examples=examples(50), deadline=None)
@given(_rows(), st.floats(-5, 5).filter(lambda g: abs(g) > 1e-3))
def test_output_norm_is_sqrt_d_times_gain(x, g):
    assume(_spread(x))
    d = x.shape[-1]
    for out in (rms_norm(x, g, eps=0.0), layer_norm(x, g, eps=0.0)):
        np.testing.assert_allclose(np.linalg.norm(out, axis=-1), math.sqrt(d) * abs(g), rtol=1e-9)


@settings(max_examples=examples(25), deadline=None)
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


# ---------------------------------------------------------------- every message is reachable ---

# One call per code in assets/text/core.toml that makes the core say it: a new code needs a row.
MESSAGE_CALLS = {
    "eps_explicit": lambda: rms_norm_report([1.0, 2.0], eps=0.5),
    "eps_preset": lambda: rms_norm_report([1.0, 2.0], preset="llama"),
    "eps_finfo": lambda: rms_norm_report([1.0, 2.0], preset="torch"),
    "eps_default_rms": lambda: rms_norm_report([1.0, 2.0]),
    "eps_default_layer": lambda: layer_norm_report([1.0, 2.0]),
    "numpy_half_reduction": lambda: rms_norm_report([1.0, 2.0], reduction_dtype="float16"),
    "preset_no_weight": lambda: layer_norm_report([1.0, 2.0], [1.0, 1.0], preset="olmo"),
    "preset_no_bias": lambda: rms_norm_report([1.0, 2.0], None, [1.0, 1.0], preset="llama"),
    "partial": lambda: rms_norm_report([1.0, 2.0, 3.0], partial=0.5),
    "overflow_square_rms": lambda: rms_norm_report(np.full((1, 64), 1e20, np.float32)),
    "overflow_square_layer": lambda: layer_norm_report(
        _alternating(300.0), reduction_dtype="float16"
    ),
    "overflow_sum_rms": lambda: rms_norm_report(np.full((1, 64), 1e19, np.float32)),
    "overflow_sum_layer": lambda: layer_norm_report(_alternating(1e19).astype(np.float32)),
    "overflow_mean_layer": lambda: layer_norm_report(np.full((1, 64), 1e38, np.float32)),
    "overflow_norm_rms": lambda: rms_norm_report(
        torch.full((1, 4096), 2000.0).half(), preset="paper"
    ),
    "overflow_norm_layer": lambda: layer_norm_report(
        _alternating(2000.0, 4096), reduction_dtype="float16", eps_placement="clamp"
    ),
    "overflow_output": lambda: rms_norm_report(np.array([[0.0, 1e3]], np.float16), partial=0.5),
    "zero_vector": lambda: rms_norm_report(np.zeros(4), eps=0.0),
    "zero_variance": lambda: layer_norm_report(np.ones(4), eps=0.0),
    "zero_vector_eps_lost": lambda: rms_norm_report(
        np.zeros(4), eps=1e-9, reduction_dtype="float16"
    ),
    "zero_variance_eps_lost": lambda: layer_norm_report(
        np.ones(4), eps=1e-9, reduction_dtype="float16"
    ),
    "zero_stat_inf": lambda: rms_norm_report([0.0, 0.0, 1.0, -2.0], eps=0.0, partial=0.5),
    # T5 casts to a half weight's dtype: a bfloat16 result for a numpy caller.
    "bfloat16_widened": lambda: rms_norm_report(
        [1.0, 2.0], torch.ones(2, dtype=torch.bfloat16), preset="t5"
    ),
    "kernel_used": lambda: layer_norm_report(torch.ones(2, 4) * torch.arange(4), preset="torch"),
}


def test_every_message_code_has_a_call_that_says_it():
    with TEXTS.open("rb") as fh:
        assert set(MESSAGE_CALLS) == set(tomllib.load(fh))


@pytest.mark.parametrize("code", sorted(MESSAGE_CALLS))
def test_the_call_says_its_message_in_english(code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NormWarning)
        report = MESSAGE_CALLS[code]()
    (message,) = [n for n in report.notes if n.code == code]
    text = str(message)
    assert text and "{" not in text, text
