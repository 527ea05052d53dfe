"""Each preset bit for bit against its upstream: the real module where transformers or torch has
it, else a transcription of the upstream source, in float32, bfloat16, float16 and float64."""

import dataclasses
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers.models.deepseek_v3.configuration_deepseek_v3 import DeepseekV3Config
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
    DeepseekV3Attention,
    DeepseekV3RMSNorm,
)
from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
from transformers.models.gpt_oss.configuration_gpt_oss import GptOssConfig
from transformers.models.gpt_oss.modeling_gpt_oss import GptOssRMSNorm
from transformers.models.llama.modeling_llama import LlamaRMSNorm
from transformers.models.llama4.configuration_llama4 import Llama4TextConfig
from transformers.models.llama4.modeling_llama4 import Llama4TextL2Norm
from transformers.models.olmo.modeling_olmo import OlmoLayerNorm
from transformers.models.olmo2.modeling_olmo2 import Olmo2RMSNorm
from transformers.models.qwen3.configuration_qwen3 import Qwen3Config
from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm
from transformers.models.qwen3_next.modeling_qwen3_next import (
    Qwen3NextRMSNorm,
    Qwen3NextRMSNormGated,
)
from transformers.models.t5.modeling_t5 import T5LayerNorm

from core import (
    PRESETS,
    NormWarning,
    Preset,
    gated_rms_norm,
    get_preset,
    layer_norm,
    preset_names,
    rms_norm,
)
from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS, NORMALIZE_EPS, PAPER_EPS
from core.knobs import CASTS, EPS_PLACEMENTS, GAIN_MODES
from core.norms import rms_norm_reference, rms_norm_report

SEED = 1234
D = 256
DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64]
# A checkpoint loaded in a dtype holds weights in it; a module built in float32 and fed another
# dtype holds float32 ones. The casts differ between the two, so both are checked.
WEIGHT_DTYPES = ["input", torch.float32]
# Row scales from float16 underflow to a d = 256, scale-100 row whose float16 squares overflow.
SCALES = [1e-4, 1.0, 3.0, 100.0]


def _inputs(dtype, seed=SEED, scale=3.0):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(8, D, generator=gen) * scale + 0.5 * scale).to(dtype)
    w = torch.randn(D, generator=gen)
    b = torch.randn(D, generator=gen)
    return x, w, b


def _weight_dtype(choice, dtype):
    return dtype if choice == "input" else choice


def _module(cls, weight, dtype, *args):
    module = cls(D, *args).to(dtype)
    with torch.no_grad():
        module.weight.copy_(weight)
    return module


def _assert_bit_equal(ours, theirs):
    assert ours.dtype == theirs.dtype
    diff = (ours.double() - theirs.double()).abs().max().item()
    assert torch.equal(ours, theirs), f"max |ours - theirs| = {diff}"


# ---------------------------------------------------------------- transcriptions ---------------


def _paper_rmsnorm(x, scale, eps=PAPER_EPS, p=-1.0, offset=None):
    """RMSNorm.forward of rmsnorm_torch.py in bzhangGo/rmsnorm, transcribed op for op."""
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
    return scale * x_normed if offset is None else scale * x_normed + offset


def _x_transformers_rmsnorm(x, g, unit_offset=False):
    """RMSNorm.forward of x_transformers/x_transformers.py (lucidrains/x-transformers, 2026-08):
    ``self.scale = dim ** 0.5``, ``gamma = self.g + float(self.unit_offset)``, then
    ``F.normalize(x, dim=-1) * self.scale * gamma``, transcribed op for op."""
    gamma = g + float(unit_offset)
    return F.normalize(x, dim=-1) * x.shape[-1] ** 0.5 * gamma


def _transformer_engine_formula(x, gamma, eps=DEFAULT_LAYER_EPS):
    """Transformer Engine's documented RMSNorm with zero_centered_gamma, in float32."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * (1 + gamma.float())
    return y.to(x.dtype)


# ---------------------------------------------------------------- the real modules -------------

HF_MODULES = {
    "llama": (LlamaRMSNorm, 1.0),
    "gemma": (GemmaRMSNorm, 0.1),  # a zero-centred weight: small values around 0
    "t5": (T5LayerNorm, 1.0),
    "olmo2": (Olmo2RMSNorm, 1.0),
    "qwen3": (Qwen3RMSNorm, 1.0),
    "qwen3-next": (Qwen3NextRMSNorm, 0.1),  # zero-centred, as Gemma's
    "deepseek-v3": (DeepseekV3RMSNorm, 1.0),
    "gpt-oss": (GptOssRMSNorm, 1.0),
}


@pytest.mark.parametrize("name", sorted(HF_MODULES))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight_dtype", WEIGHT_DTYPES)
def test_hf_rms_presets_bit_for_bit(name, dtype, weight_dtype):
    cls, weight_scale = HF_MODULES[name]
    x, w, _ = _inputs(dtype)
    eps = get_preset(name).eps
    module = _module(cls, weight_scale * w, _weight_dtype(weight_dtype, dtype), eps)
    with torch.no_grad():
        theirs = module(x)
    _assert_bit_equal(rms_norm(x, module.weight.detach(), preset=name), theirs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", SCALES)
def test_llama4_qk_preset_bit_for_bit(dtype, scale):
    # Llama 4's queries and keys, (batch, heads, positions, head_dim): no weight.
    x = (torch.randn(2, 4, 8, 128, generator=torch.Generator().manual_seed(SEED)) * scale).to(dtype)
    with torch.no_grad():
        theirs = Llama4TextL2Norm(get_preset("llama4-qk").eps)(x)
    _assert_bit_equal(rms_norm(x, preset="llama4-qk"), theirs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight_dtype", WEIGHT_DTYPES)
def test_qwen3_next_gated_rms_norm_bit_for_bit(dtype, weight_dtype):
    x, w, _ = _inputs(dtype)
    gate = torch.randn(x.shape, generator=torch.Generator().manual_seed(SEED + 1)).to(dtype)
    module = _module(Qwen3NextRMSNormGated, w, _weight_dtype(weight_dtype, dtype), 1e-6)
    with torch.no_grad():
        theirs = module(x, gate)
    ours = gated_rms_norm(x, gate, module.weight.detach())
    _assert_bit_equal(ours, theirs)
    plain = rms_norm(x, module.weight.detach(), preset="qwen3")
    assert not torch.equal(ours, plain.to(dtype))  # the gate acted
    ours_np = gated_rms_norm(x.double().numpy(), gate.double().numpy(), w.double().numpy())
    expected = rms_norm_reference(x.double(), w.double()) * _silu64(gate.double().numpy())
    np.testing.assert_allclose(ours_np, expected, rtol=1e-5, atol=1e-6)


def _silu64(z):
    return z / (1.0 + np.exp(-z))


def test_what_the_new_presets_say_of_transformers_holds_in_the_pinned_version():
    """The eps, widths and module defaults the notes quote, read from transformers itself."""
    # A preset's eps is its module's default; the notes name the config's where it differs.
    assert get_preset("gpt-oss").eps == GptOssRMSNorm(8).variance_epsilon == 1e-6
    assert GptOssConfig().rms_norm_eps == 1e-5 and "GptOssConfig defaults to 1e-5" in (
        get_preset("gpt-oss").notes
    )
    llama4 = Llama4TextConfig()
    assert get_preset("llama4-qk").eps == Llama4TextL2Norm().eps == 1e-6
    assert llama4.rms_norm_eps == 1e-5 and llama4.use_qk_norm
    qwen3 = Qwen3Config()
    assert (qwen3.head_dim, qwen3.rms_norm_eps, get_preset("qwen3").eps) == (128, 1e-6, 1e-6)
    config = DeepseekV3Config(
        hidden_size=64, num_attention_heads=2, q_lora_rank=16, kv_lora_rank=8,
        qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=8, rms_norm_eps=1e-3,
    )  # fmt: skip
    attention = DeepseekV3Attention(config, layer_idx=0)
    # The latent norms ignore the config's eps: the module's default, 1e-6, always.
    assert attention.q_a_layernorm.variance_epsilon == 1e-6
    assert attention.kv_a_layernorm.variance_epsilon == 1e-6
    assert (DeepseekV3Config().q_lora_rank, DeepseekV3Config().kv_lora_rank) == (1536, 512)
    for name in ("qwen3", "deepseek-v3", "gpt-oss", "llama4-qk"):
        assert "1e-6" in get_preset(name).notes or "1e-5" in get_preset(name).notes


def test_olmo2_float64_model_multiplies_the_weight_in_float64():
    # Olmo2RMSNorm: (weight * hidden_states).to(input_dtype), hidden_states in float32; a float64
    # weight promotes the product to float64 before the cast.
    x, _, _ = _inputs(torch.float64)
    w = torch.randn(D, generator=torch.Generator().manual_seed(SEED), dtype=torch.float64)
    module = _module(Olmo2RMSNorm, w, torch.float64, DEFAULT_RMS_EPS)
    with torch.no_grad():
        theirs = module(x)
    ours = rms_norm(x, w, preset="olmo2")
    _assert_bit_equal(ours, theirs)
    xf = x.float()
    xhat = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + DEFAULT_RMS_EPS)
    weight_cast_to_float32 = (w.float() * xhat).double()  # what cast="after" would give
    assert not torch.equal(ours, weight_cast_to_float32)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight_dtype", WEIGHT_DTYPES)
def test_torch_rms_preset_bit_for_bit(dtype, weight_dtype):
    x, w, _ = _inputs(dtype)
    module = _module(torch.nn.RMSNorm, w, _weight_dtype(weight_dtype, dtype), None)
    with warnings.catch_warnings():
        # torch warns that a weight of another dtype than x rules out its fused kernel.
        warnings.filterwarnings("ignore", "Mismatch dtype", UserWarning)
        with torch.no_grad():
            theirs = module(x)
        ours = rms_norm(x, module.weight.detach(), preset="torch")
    _assert_bit_equal(ours, theirs)
    _assert_bit_equal(rms_norm(x, preset="torch"), F.rms_norm(x, (D,)))


# torch.nn.LayerNorm refuses a float32 weight with a float64 input (tested separately below).
LAYER_CASES = [
    (dtype, wd)
    for dtype in DTYPES
    for wd in WEIGHT_DTYPES
    if (dtype, wd) != (torch.float64, torch.float32)
]


@pytest.mark.parametrize("dtype,weight_dtype", LAYER_CASES)
def test_torch_layer_preset_bit_for_bit(dtype, weight_dtype):
    x, w, b = _inputs(dtype)
    wd = _weight_dtype(weight_dtype, dtype)
    module = torch.nn.LayerNorm(D)
    with torch.no_grad():
        module.weight.copy_(w)
        module.bias.copy_(b)
        theirs = module.to(wd)(x)
    ours = layer_norm(x, module.weight.detach(), module.bias.detach(), preset="torch")
    _assert_bit_equal(ours, theirs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_olmo_layer_preset_bit_for_bit(dtype):
    x, _, _ = _inputs(dtype)
    _assert_bit_equal(layer_norm(x, preset="olmo"), OlmoLayerNorm(D)(x))


def test_torch_layer_preset_outside_torch_dtypes_uses_the_two_pass_formula():
    # A float64 x with a float32 weight: torch raises, the core computes the formula in float64.
    x, w, b = _inputs(torch.float64)
    ours = layer_norm(x, w, b, preset="torch")
    expected = F.layer_norm(x, (D,), w.double(), b.double())
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- transcribed upstreams --------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight_dtype", WEIGHT_DTYPES)
@pytest.mark.parametrize("scale", SCALES)
def test_paper_preset_bit_for_bit(dtype, weight_dtype, scale):
    x, w, b = _inputs(dtype, scale=scale)
    wt, bt = (a.to(_weight_dtype(weight_dtype, dtype)) for a in (w, b))
    _assert_bit_equal(rms_norm(x, wt, preset="paper"), _paper_rmsnorm(x, wt))
    # p * d = 64 is an integer, where ceil and the paper's int agree.
    _assert_bit_equal(rms_norm(x, wt, preset="paper", partial=0.25), _paper_rmsnorm(x, wt, p=0.25))
    _assert_bit_equal(rms_norm(x, wt, bt, preset="paper"), _paper_rmsnorm(x, wt, offset=bt))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weight_dtype", WEIGHT_DTYPES)
@pytest.mark.parametrize("scale", SCALES)
def test_x_transformers_preset_bit_for_bit(dtype, weight_dtype, scale):
    x, w, _ = _inputs(dtype, scale=scale)
    g = w.to(_weight_dtype(weight_dtype, dtype))
    _assert_bit_equal(rms_norm(x, g, preset="x-transformers"), _x_transformers_rmsnorm(x, g))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_x_transformers_preset_where_the_clamp_acts(dtype):
    # Rows of norm below eps = 1e-12 (float16 cannot hold them: see the zero-row test below).
    x, w, _ = _inputs(dtype, scale=1e-15)
    assert (x.double().norm(dim=-1) < NORMALIZE_EPS).all()
    _assert_bit_equal(rms_norm(x, w, preset="x-transformers"), _x_transformers_rmsnorm(x, w))


def test_paper_preset_float16_at_scale_100_is_finite_like_its_code():
    # The squares of 100 overflow float16, but x.norm() accumulates them in float32.
    x = torch.full((1, 4096), 100.0, dtype=torch.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NormWarning)
        ours = rms_norm(x, torch.ones(4096, dtype=torch.float16), preset="paper")
    assert torch.isfinite(ours).all()
    _assert_bit_equal(ours, _paper_rmsnorm(x, torch.ones(4096, dtype=torch.float16)))


def test_x_transformers_zero_row_in_float16_is_zero_with_a_warning_where_upstream_is_nan():
    # eps = 1e-12 rounds to 0 in float16: upstream divides 0 by 0; the core says so and gives 0.
    x = torch.zeros(2, D, dtype=torch.float16)
    assert torch.isnan(_x_transformers_rmsnorm(x, torch.ones(D))).all()
    with pytest.warns(NormWarning) as record:
        ours = rms_norm(x, torch.ones(D), preset="x-transformers")
    assert [w.message.message.code for w in record] == ["zero_vector_eps_lost"]
    assert torch.equal(ours, torch.zeros(2, D))


@pytest.mark.parametrize("dtype", DTYPES)
def test_transformer_engine_preset_matches_its_formula(dtype):
    x, w, _ = _inputs(dtype)
    gamma = (0.1 * w).to(dtype)
    _assert_bit_equal(
        rms_norm(x, gamma, preset="transformer-engine"), _transformer_engine_formula(x, gamma)
    )


# ---------------------------------------------------------------- numpy input ------------------


@pytest.mark.parametrize("kind", ["rms", "layer"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_input_agrees_with_torch_input_to_rounding(kind, dtype):
    # The same steps in numpy: another summation order and rsqrt, so equal to rounding only, and
    # most presets reduce in float32 whatever the input: a few float32 ulps.
    tol = 2e-6
    x, w, b = _inputs(torch.float64)
    xn, wn, bn = (a.numpy().astype(dtype) for a in (x, w, b))
    norm = rms_norm if kind == "rms" else layer_norm
    args = (wn, bn) if kind == "layer" else (wn,)
    for name in preset_names(kind):
        ours = norm(xn, *args, preset=name)
        theirs = norm(torch.from_numpy(xn), *(torch.from_numpy(a) for a in args), preset=name)
        assert isinstance(ours, np.ndarray), name
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=tol, atol=tol, err_msg=name)


def test_kernel_presets_say_that_the_kernel_computed_the_output():
    x, w, b = _inputs(torch.float32)
    codes = [n.code for n in rms_norm_report(x, w, preset="torch").notes]
    assert "kernel_used" in codes
    codes = [n.code for n in rms_norm_report(x, w, preset="torch", eps_placement="outside").notes]
    assert "kernel_used" not in codes


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
        "qwen3",
        "qwen3-next",
        "deepseek-v3",
        "gpt-oss",
        "llama4-qk",
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


def test_eps_values_come_from_one_place():
    assert get_preset("llama").eps == DEFAULT_RMS_EPS
    assert get_preset("torch", "layer").eps == DEFAULT_LAYER_EPS
    assert get_preset("paper").eps == PAPER_EPS
    assert get_preset("x-transformers").eps == NORMALIZE_EPS


@pytest.mark.parametrize("key", sorted(PRESETS))
def test_every_preset_is_complete(key):
    p = PRESETS[key]
    assert key == f"{p.kind}:{p.name}"
    assert p.eps_placement in EPS_PLACEMENTS
    assert p.gain_mode in GAIN_MODES
    assert p.cast in (*CASTS, "t5", "promote")
    assert p.reduction_dtype in (None, "opmath", "float32")
    assert p.kernel in (None, "rms_norm" if p.kind == "rms" else "layer_norm")
    assert p.eps is None or p.eps > 0
    assert p.formula.startswith("y = ") and p.source and p.title and p.notes
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.eps = 1.0  # type: ignore[misc]
    assert isinstance(p, Preset)


def test_eps_sources_are_named_precisely():
    paper = get_preset("paper")
    assert "rmsnorm_torch.py" in paper.title and "rmsnorm_torch.py" in paper.notes
    assert "inside the root" in paper.notes  # the TensorFlow and Theano code
    assert "1e-5" in get_preset("olmo2").notes and "Olmo2Config" in get_preset("olmo2").notes
    assert "opmath" in get_preset("torch").notes and "input's" not in get_preset("torch").notes


def test_torch_preset_eps_none_resolves_from_the_compute_dtype():
    x = np.ones((1, 4), dtype=np.float32)
    assert rms_norm_report(x, preset="torch").eps == float(np.finfo(np.float32).eps)
    half = rms_norm_report(torch.ones(1, 4, dtype=torch.float16), preset="torch")
    assert half.eps == float(np.finfo(np.float32).eps)
    assert rms_norm_report(x.astype(np.float64), preset="torch").eps == float(
        np.finfo(np.float64).eps
    )
