"""Each preset against the real module (bit for bit) or a transcription of its reference code."""

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
from transformers.models.llama.modeling_llama import LlamaRMSNorm
from transformers.models.olmo.modeling_olmo import OlmoLayerNorm
from transformers.models.olmo2.modeling_olmo2 import Olmo2RMSNorm
from transformers.models.t5.modeling_t5 import T5LayerNorm

from core import PRESETS, Preset, get_preset, layer_norm, preset_names, rms_norm
from core.norms import CASTS, EPS_PLACEMENTS, GAIN_MODES

SEED = 1234
D = 256
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
F32_TOL = 1e-6
# torch's LayerNorm kernel takes Welford moments and computes (x * rstd + (-mu * rstd)) * w + b
# with fused multiply-adds; the two-pass formula lands within a few float32 ulps of it.
LAYER_F32_TOL = 4e-6


def _inputs(dtype, seed=SEED):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(8, D, generator=gen) * 3 + 0.5).to(dtype)
    w = torch.randn(D, generator=gen)
    b = torch.randn(D, generator=gen)
    return x, w, b


def _module(cls, weight, *args):
    module = cls(D, *args)
    with torch.no_grad():
        module.weight.copy_(weight)
    return module


def _assert_bit_equal(ours, theirs):
    assert ours.dtype == theirs.dtype
    assert torch.equal(ours, theirs), (ours.double() - theirs.double()).abs().max().item()


HF_MODULES = [
    ("llama", lambda w: _module(LlamaRMSNorm, w, 1e-6)),
    ("gemma", lambda w: _module(GemmaRMSNorm, 0.1 * w, 1e-6)),
    ("t5", lambda w: _module(T5LayerNorm, w, 1e-6)),
    ("olmo2", lambda w: _module(Olmo2RMSNorm, w, 1e-6)),
]


@pytest.mark.parametrize("name,build", HF_MODULES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight_in_input_dtype", [True, False])
def test_hf_rms_presets_bit_for_bit(name, build, dtype, weight_in_input_dtype):
    # Both weight dtypes occur: a checkpoint loaded in bf16 holds bf16 weights, a module built
    # in float32 and fed half activations holds float32 ones; the casts differ between them.
    x, w, _ = _inputs(dtype)
    module = build(w)
    if weight_in_input_dtype:
        module = module.to(dtype)
    with torch.no_grad():
        theirs = module(x)
    _assert_bit_equal(rms_norm(x, module.weight.detach(), preset=name), theirs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_rms_preset_bit_for_bit(dtype):
    x, w, _ = _inputs(dtype)
    module = _module(torch.nn.RMSNorm, w, None).to(dtype)
    with torch.no_grad():
        theirs = module(x)
    _assert_bit_equal(rms_norm(x, module.weight.detach(), preset="torch"), theirs)
    _assert_bit_equal(rms_norm(x, preset="torch"), F.rms_norm(x, (D,)))


def _assert_within_one_ulp(ours, theirs):
    # LayerNorm is not bit for bit: the float32 kernel differs from the two-pass formula by a few
    # ulps (see LAYER_F32_TOL), which now and then flips the final rounding to half precision.
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(
        ours.float().numpy(), theirs.float().numpy(), rtol=torch.finfo(ours.dtype).eps, atol=0
    )
    assert (ours != theirs).double().mean().item() < 0.01


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("seed", [SEED, SEED + 1, SEED + 2])
def test_torch_layer_preset_within_one_ulp_in_half(dtype, seed):
    x, w, b = _inputs(dtype, seed)
    wt, bt = w.to(dtype), b.to(dtype)
    _assert_within_one_ulp(layer_norm(x, wt, bt, preset="torch"), F.layer_norm(x, (D,), wt, bt))


def test_torch_layer_preset_float32_within_ulps():
    x, w, b = _inputs(torch.float32)
    module = torch.nn.LayerNorm(D)
    with torch.no_grad():
        module.weight.copy_(w)
        module.bias.copy_(b)
        theirs = module(x)
    ours = layer_norm(x, w, b, preset="torch")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=LAYER_F32_TOL, atol=LAYER_F32_TOL)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("seed", [SEED, SEED + 1, SEED + 2])
def test_olmo_layer_preset_within_one_ulp_in_half(dtype, seed):
    x, _, _ = _inputs(dtype, seed)
    _assert_within_one_ulp(layer_norm(x, preset="olmo"), OlmoLayerNorm(D)(x))


def test_olmo_layer_preset_float32_within_ulps():
    x, _, _ = _inputs(torch.float32)
    np.testing.assert_allclose(
        layer_norm(x, preset="olmo").numpy(),
        OlmoLayerNorm(D)(x).numpy(),
        rtol=LAYER_F32_TOL,
        atol=LAYER_F32_TOL,
    )


def _paper_rmsnorm(x, scale, eps=1e-8, p=-1.0):
    """bzhangGo/rmsnorm rmsnorm_torch.py, RMSNorm.forward, transcribed."""
    d = x.shape[-1]
    if p < 0.0 or p > 1.0:
        norm_x = x.norm(2, dim=-1, keepdim=True)
        d_x = d
    else:
        partial_size = int(d * p)
        partial_x, _ = torch.split(x, [partial_size, d - partial_size], dim=-1)
        norm_x = partial_x.norm(2, dim=-1, keepdim=True)
        d_x = partial_size
    rms_x = norm_x * d_x ** (-1.0 / 2)
    x_normed = x / (rms_x + eps)
    return scale * x_normed


def _x_transformers_rmsnorm(x, g):
    """lucidrains/x-transformers RMSNorm.forward (unit_offset=False), transcribed."""
    return F.normalize(x, dim=-1) * (x.shape[-1] ** 0.5) * g


@pytest.mark.parametrize("dtype,tol", [(torch.float32, F32_TOL), (torch.float64, 1e-12)])
def test_paper_preset_matches_reference_code(dtype, tol):
    x, w, _ = _inputs(dtype)
    w = w.to(dtype)
    np.testing.assert_allclose(
        rms_norm(x, w, preset="paper").numpy(), _paper_rmsnorm(x, w).numpy(), rtol=tol, atol=tol
    )
    # p * d = 64 is an integer, where ceil and the paper's int agree.
    np.testing.assert_allclose(
        rms_norm(x, w, preset="paper", partial=0.25).numpy(),
        _paper_rmsnorm(x, w, p=0.25).numpy(),
        rtol=tol,
        atol=tol,
    )
    tiny = torch.full((2, D), 1e-9, dtype=dtype)
    np.testing.assert_allclose(
        rms_norm(tiny, w, preset="paper").numpy(),
        _paper_rmsnorm(tiny, w).numpy(),
        rtol=tol,
        atol=tol,
    )


@pytest.mark.parametrize("dtype,tol", [(torch.float32, F32_TOL), (torch.float64, 1e-12)])
def test_x_transformers_preset_matches_reference_code(dtype, tol):
    x, w, _ = _inputs(dtype)
    w = w.to(dtype)
    np.testing.assert_allclose(
        rms_norm(x, w, preset="x-transformers").numpy(),
        _x_transformers_rmsnorm(x, w).numpy(),
        rtol=tol,
        atol=tol,
    )
    tiny = torch.full((2, D), 1e-15, dtype=dtype)
    np.testing.assert_allclose(
        rms_norm(tiny, w, preset="x-transformers").numpy(),
        _x_transformers_rmsnorm(tiny, w).numpy(),
        rtol=tol,
        atol=1e-12,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_transformer_engine_preset_matches_its_formula(dtype):
    x, w, _ = _inputs(dtype)
    gamma = (0.1 * w).to(dtype)
    xf = x.float()
    expected = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * (1 + gamma.float())).to(
        dtype
    )
    _assert_bit_equal(rms_norm(x, gamma, preset="transformer-engine"), expected)


def test_numpy_input_agrees_with_torch_input():
    # Same algorithm, different summation order and rsqrt: equal to float32 rounding.
    x, w, _ = _inputs(torch.float32)
    for name in preset_names("rms"):
        np.testing.assert_allclose(
            rms_norm(x.numpy(), w.numpy(), preset=name),
            rms_norm(x, w, preset=name).numpy(),
            rtol=F32_TOL,
            atol=F32_TOL,
        )


def test_explicit_keywords_override_the_preset():
    x, w, _ = _inputs(torch.bfloat16)
    wb = w.to(torch.bfloat16)
    _assert_bit_equal(
        rms_norm(x, wb, preset="llama", cast="after"), rms_norm(x, wb, preset="olmo2")
    )
    assert not torch.equal(rms_norm(x, wb, preset="llama"), rms_norm(x, wb, preset="olmo2"))
    _assert_bit_equal(
        rms_norm(x, wb, preset="llama", eps=1e-3),
        rms_norm(x, wb, preset="olmo2", cast="before", eps=1e-3),
    )


# ---------------------------------------------------------------- the registry -----------------


def test_registry_and_lookup():
    assert preset_names("rms") == [
        "torch",
        "llama",
        "gemma",
        "t5",
        "olmo2",
        "transformer-engine",
        "paper",
        "x-transformers",
    ]
    assert preset_names("layer") == ["torch", "olmo"]
    assert get_preset("llama") is PRESETS["rms:llama"]
    assert get_preset("rms:gemma").gain_mode == "offset"
    assert get_preset("olmo", kind="layer").has_weight is False
    assert get_preset("torch", "layer") is not get_preset("torch", "rms")
    with pytest.raises(ValueError, match=r"preset must be one of .*'llama'"):
        get_preset("lama")
    with pytest.raises(ValueError, match="kind"):
        preset_names("batch")


@pytest.mark.parametrize("key", sorted(PRESETS))
def test_every_preset_is_complete(key):
    p = PRESETS[key]
    assert key == f"{p.kind}:{p.name}"
    assert p.eps_placement in EPS_PLACEMENTS
    assert p.gain_mode in GAIN_MODES
    assert p.cast in (*CASTS, "t5")
    assert p.reduction_dtype in (None, "opmath", "float32")
    assert p.eps is None or p.eps > 0
    assert p.formula.startswith("y = ") and p.source and p.title and p.notes
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.eps = 1.0  # type: ignore[misc]
    assert isinstance(p, Preset)


def test_torch_preset_eps_none_resolves_from_the_compute_dtype():
    from core import rms_norm_report

    x = np.ones((1, 4), dtype=np.float32)
    assert rms_norm_report(x, preset="torch").eps == float(np.finfo(np.float32).eps)
    half = rms_norm_report(torch.ones(1, 4, dtype=torch.float16), preset="torch")
    assert half.eps == float(np.finfo(np.float32).eps)
    assert rms_norm_report(x.astype(np.float64), preset="torch").eps == float(
        np.finfo(np.float64).eps
    )
