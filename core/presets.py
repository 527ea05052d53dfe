r"""Presets: the contract knobs of real RMSNorm / LayerNorm implementations, one per upstream.

Each preset fixes what the upstream code fixes: eps, where eps sits, the dtype of the reduction,
whether the stored weight is the gain itself or an offset from 1, and how the result is cast back
to the input dtype around the weight multiply. ``rms_norm(x, w, preset="llama")`` then
reproduces ``LlamaRMSNorm`` bit for bit on torch tensors, in float32, float16, bfloat16 and
float64 (tests/test_presets.py checks each preset against the real module where transformers or
torch has it, else against a transcription of the upstream source). On numpy arrays the same
steps run in numpy (no torch import), which agrees with the torch result to rounding only: pass
tensors where the bits matter.

A :class:`Preset` lists only what differs from the defaults below: eps 1e-6, eps inside the root,
a float32 reduction, the weight as the gain, one cast to the input dtype at the end, a weight and
no bias. Values that appear only in presets, never as explicit keywords:

- ``reduction_dtype="opmath"``: float32 for float16 / bfloat16 inputs, otherwise the input dtype
  (PyTorch's "opmath" type, in which its own norms compute).
- ``cast="t5"`` and ``cast="promote"``: T5's and OLMo 2's rules, as the two presets' notes say
  (:func:`core.steps._gain_and_cast` applies them).
- ``kernel``: the torch function that *is* the upstream computation; on torch, with the preset's
  own knobs, the core calls it, so the numbers are the kernel's on every device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS, NORMALIZE_EPS, PAPER_EPS


@dataclass(frozen=True)
class Preset:
    """The resolved knobs of one upstream implementation.

    ``eps=None`` means the upstream rule ``torch.finfo(dtype).eps`` of the reduction dtype
    (``torch.nn.RMSNorm(eps=None)``). ``reduction_dtype=None`` means the input's own dtype."""

    name: str
    title: str
    formula: str
    source: str
    notes: str
    kind: str = "rms"  # or "layer"
    eps: float | None = DEFAULT_RMS_EPS
    eps_placement: str = "inside"
    reduction_dtype: str | None = "float32"
    gain_mode: str = "direct"
    cast: str = "after"
    has_weight: bool = True
    has_bias: bool = False
    kernel: str | None = None  # "rms_norm" or "layer_norm": torch.nn.functional's, called as is


def _fp32_formula(outer: str) -> str:
    """The formula of a preset that normalises a float32 copy of x: XHAT in ``outer`` is it."""
    xhat = (
        r"\tilde{x}\,\operatorname{rsqrt}\!\left(\tfrac{1}{d}\textstyle\sum_j \tilde{x}_j^{2}"
        r" + \epsilon\right)"
    )
    return "y = " + outer.replace("XHAT", xhat) + r",\quad \tilde{x} = \operatorname{fp32}(x)"


def _transformers(name: str, label: str, module: str, **fields: Any) -> Preset:
    """A preset whose upstream is ``module`` in transformers' ``models/<package>`` package (the
    name's, with underscores; ``qwen3-next``: ``qwen3_next``)."""
    package = fields.pop("package", name.replace("-", "_"))
    source = f"transformers/models/{package}/modeling_{package}.py: {module}"
    return Preset(name=name, title=f"{label} ({module})", source=source, **fields)


def _config_eps(default_of: str) -> str:
    """The sentence of a preset whose eps a checkpoint's config overrides (1e-6 by default)."""
    return (
        "The checkpoint's config (rms_norm_eps) decides eps; 1e-6 is the default of " + default_of
    )


# The three orders of transformers' RMSNorms around the float32 normalisation (XHAT): cast to
# x's dtype, then the weight (Llama); the weight in float32, then the cast (OLMo 2, gpt-oss);
# the zero-centred gain in float32, then the cast (Gemma, Qwen3-Next).
_LLAMA_FORMULA = _fp32_formula(r"w \odot \operatorname{cast}_{x}\!\left(XHAT\right)")
_PROMOTE_FORMULA = _fp32_formula(r"\operatorname{cast}_{x}\!\left(w \odot XHAT\right)")
_OFFSET_FORMULA = _fp32_formula(
    r"\operatorname{cast}_{x}\!\left((1 + \operatorname{fp32}(w)) \odot XHAT\right)"
)
# An upstream that casts nothing: x's dtype throughout, the weight's dtype by type promotion.
_UNCAST = {"reduction_dtype": None, "cast": "before"}
_ALL = (
    Preset(
        name="torch",
        title="torch.nn.RMSNorm",
        eps=None,
        reduction_dtype="opmath",
        kernel="rms_norm",
        formula=(
            r"y = \operatorname{cast}_{x}\!\left(w \odot \tilde{x}\,"
            r"\operatorname{rsqrt}\!\left(\tfrac{1}{d}\textstyle\sum_j \tilde{x}_j^{2}"
            r" + \epsilon\right)\right),\quad \tilde{x} = \operatorname{opmath}(x),\quad"
            r" \epsilon = \operatorname{finfo}(\tilde{x}).\mathrm{eps}"
        ),
        source="torch/nn/modules/normalization.py: RMSNorm (torch.nn.functional.rms_norm)",
        notes=(
            "On torch tensors, computed by F.rms_norm itself. eps=None takes the machine "
            "epsilon of the opmath type, as the torch 2.13 docs say: float32's for float16, "
            "bfloat16 and float32 inputs, float64's for float64. On the CPU F.rms_norm is a "
            "composite of torch operations in that type, cast once at the end; on CUDA a fused "
            "kernel."
        ),
    ),
    _transformers(
        "llama",
        "Llama",
        "LlamaRMSNorm",
        cast="before",
        formula=_LLAMA_FORMULA,
        notes=(
            "Normalises in float32, casts back to the input dtype, then multiplies by the "
            "weight, so the product is rounded in half precision when the weight is half. "
            + _config_eps("LlamaRMSNorm and LlamaConfig.")
        ),
    ),
    _transformers(
        "gemma",
        "Gemma",
        "GemmaRMSNorm",
        gain_mode="offset",
        formula=_OFFSET_FORMULA,
        notes=(
            "The stored weight is zero-centred (initialised to 0, gain 1 + w) and the whole "
            "computation stays in float32 until one cast at the end."
        ),
    ),
    _transformers(
        "t5",
        "T5",
        "T5LayerNorm",
        cast="t5",
        formula=(
            r"y = w \odot \operatorname{cast}_{w}\!\left(x\,\operatorname{rsqrt}\!\left("
            r"\tfrac{1}{d}\textstyle\sum_j \operatorname{fp32}(x_j)^{2} + \epsilon\right)\right),"
            r"\quad \operatorname{cast}_{w} \text{ only for a half-precision } w"
        ),
        notes=(
            "Despite its name an RMSNorm. The variance is accumulated in float32; the result is "
            "cast to the weight's dtype only when that is float16 or bfloat16."
        ),
    ),
    _transformers(
        "olmo2",
        "OLMo 2",
        "Olmo2RMSNorm",
        cast="promote",
        formula=_PROMOTE_FORMULA,
        notes=(
            "Like Llama, except that the weight multiplies the float32 result before the single "
            "cast back to the input dtype (in float64 when the weight is float64). "
            + _config_eps("Olmo2RMSNorm, while transformers' Olmo2Config defaults to 1e-5.")
        ),
    ),
    _transformers(
        "qwen3",
        "Qwen3",
        "Qwen3RMSNorm",
        cast="before",
        formula=_LLAMA_FORMULA,
        notes=(
            "Llama's operations. Qwen3 also normalises each attention head's queries and keys "
            "with this module (q_norm and k_norm, over head_dim: 128 by default), before RoPE. "
            + _config_eps("Qwen3RMSNorm and Qwen3Config.")
        ),
    ),
    _transformers(
        "qwen3-next",
        "Qwen3-Next",
        "Qwen3NextRMSNorm",
        gain_mode="offset",
        formula=_OFFSET_FORMULA,
        notes=(
            "Gemma's contract: a zero-centred weight (initialised to 0, gain 1 + w), float32 "
            "until one cast at the end, for every layer's norms and full attention's q and k. "
            "The output of its linear attention (over the value heads) is normalised by "
            "Qwen3NextRMSNormGated instead: a weight that is the gain itself (initialised to 1), "
            "Llama's order, then times silu of the gate in float32, then a cast to the input "
            "dtype (core.gated_rms_norm computes it)."
        ),
    ),
    _transformers(
        "deepseek-v3",
        "DeepSeek V3",
        "DeepseekV3RMSNorm",
        cast="before",
        formula=_LLAMA_FORMULA,
        notes=(
            "Llama's operations. Besides the stream it normalises the compressed latents of its "
            "attention: q_a_layernorm (width q_lora_rank, 1536 by default) and kv_a_layernorm "
            "(kv_lora_rank, 512). transformers builds those two without the config's eps, so "
            "they use the module's default, 1e-6, whatever rms_norm_eps says."
        ),
    ),
    _transformers(
        "gpt-oss",
        "gpt-oss",
        "GptOssRMSNorm",
        cast="promote",
        formula=_PROMOTE_FORMULA,
        notes=(
            "The weight multiplies the float32 result, then one cast to the input dtype: "
            "(w * x).to(dtype), as in OLMo 2. "
            + _config_eps("GptOssRMSNorm, while GptOssConfig defaults to 1e-5.")
        ),
    ),
    _transformers(
        "llama4-qk",
        "Llama 4",
        "Llama4TextL2Norm",
        package="llama4",
        has_weight=False,
        formula=_fp32_formula(r"\operatorname{cast}_{x}\!\left(XHAT\right)"),
        notes=(
            "An RMS normalisation without a weight, in float32, cast back once. Llama 4 applies "
            "it to every head's queries and keys after RoPE, in the layers that use RoPE "
            "(use_qk_norm; by default every fourth layer has neither; the 128-expert model has "
            "none), with the config's rms_norm_eps: 1e-6 is the module's default, 1e-5 "
            "Llama4TextConfig's."
        ),
    ),
    Preset(
        name="transformer-engine",
        title="Transformer Engine (RMSNorm, zero_centered_gamma=True)",
        eps=DEFAULT_LAYER_EPS,  # Transformer Engine's RMSNorm default, like nn.LayerNorm's
        gain_mode="offset",
        formula=_fp32_formula(r"\operatorname{cast}_{x}\!\left((1 + \gamma) \odot XHAT\right)"),
        source="transformer_engine/pytorch/module/rmsnorm.py: RMSNorm",
        notes=(
            "A fused CUDA kernel computing in float32 with a zero-centred gamma (gain 1 + gamma) "
            "and eps 1e-5. Transformer Engine is not installed here: this preset follows its "
            "documented formula, with torch's float32 operations, not the kernel's own order."
        ),
    ),
    Preset(
        name="paper",
        title="RMSNorm paper's PyTorch code (rmsnorm_torch.py)",
        eps=PAPER_EPS,
        eps_placement="outside",
        **_UNCAST,
        formula=r"y = g \odot \frac{x}{\lVert x \rVert_2 / \sqrt{d} + \epsilon}",
        source="bzhangGo/rmsnorm: rmsnorm_torch.py: RMSNorm",
        notes=(
            "rmsnorm_torch.py adds eps to the RMS, outside the square root; the paper's "
            "equations have no eps, and its TensorFlow and Theano code put eps inside the root. "
            "The RMS is x.norm(2) / sqrt(d) in the input dtype (torch accumulates the norm of a "
            "float16 or bfloat16 x in float32 and rounds it once), and the float32 weight then "
            "promotes a half result to float32. Its optional bias ('offset') is off by default."
        ),
    ),
    Preset(
        name="x-transformers",
        title="x-transformers (RMSNorm via F.normalize)",
        eps=NORMALIZE_EPS,
        eps_placement="clamp",
        **_UNCAST,
        formula=r"y = g \odot \sqrt{d}\,\frac{x}{\max(\lVert x \rVert_2,\ \epsilon)}",
        source="lucidrains/x-transformers: x_transformers/x_transformers.py: RMSNorm",
        notes=(
            "F.normalize(x, dim=-1) * sqrt(d) * g: the norm is clamped below at F.normalize's "
            "eps (1e-12), so eps bounds the norm, not the mean square. Everything runs in the "
            "input dtype (the norm of a half x accumulates in float32), and the float32 g then "
            "promotes a half result to float32."
        ),
    ),
    Preset(
        name="torch",
        kind="layer",
        title="torch.nn.LayerNorm",
        eps=DEFAULT_LAYER_EPS,
        reduction_dtype="opmath",
        has_bias=True,
        kernel="layer_norm",
        formula=(
            r"y = \operatorname{cast}_{x}\!\left(w \odot \frac{\tilde{x} - \mu}"
            r"{\sqrt{\sigma^{2} + \epsilon}} + b\right),\quad \tilde{x} = \operatorname{opmath}(x)"
        ),
        source="torch/nn/modules/normalization.py: LayerNorm (torch.nn.functional.layer_norm)",
        notes=(
            "On torch tensors, computed by F.layer_norm itself, bit for bit: one fused kernel "
            "(Welford moments, fused multiply-adds) in the opmath type. On numpy arrays, where "
            "torch refuses the dtypes (a weight neither x's dtype nor float32 for a half x) and "
            "where a row is 0/0, the core's two-pass formula takes over: a few float32 ulps "
            "from the kernel."
        ),
    ),
    Preset(
        name="olmo",
        kind="layer",
        title="OLMo 1 (non-parametric LayerNorm)",
        eps=DEFAULT_LAYER_EPS,
        has_weight=False,
        kernel="layer_norm",
        formula=(
            r"y = \operatorname{cast}_{x}\!\left(\frac{\tilde{x} - \mu}{\sqrt{\sigma^{2} + "
            r"\epsilon}}\right),\quad \tilde{x} = \operatorname{fp32}(x)"
        ),
        source="transformers/models/olmo/modeling_olmo.py: OlmoLayerNorm",
        notes=(
            "No weight and no bias: F.layer_norm on the float32 copy of x, cast back to the "
            "input dtype, computed by that same kernel call on torch tensors."
        ),
    ),
)

PRESETS: dict[str, Preset] = {f"{p.kind}:{p.name}": p for p in _ALL}

KINDS = ("rms", "layer")


def preset_names(kind: str) -> list[str]:
    """Names of the presets of one kind ("rms" or "layer"), in display order."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)} (got {kind!r})")
    return [p.name for p in _ALL if p.kind == kind]


def get_preset(name: str, kind: str = "rms") -> Preset:
    """The preset called ``name`` ("llama" or "rms:llama") among those of ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)} (got {kind!r})")
    key = name if ":" in name else f"{kind}:{name}"
    preset = PRESETS.get(key)
    if preset is None or preset.kind != kind:
        raise ValueError(
            f"preset must be one of {preset_names(kind)} for kind {kind!r} (got {name!r})"
        )
    return preset
