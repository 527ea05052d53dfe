"""Presets: the contract knobs of real RMSNorm / LayerNorm implementations, one per upstream.

Each preset fixes what the upstream code fixes: eps, where eps sits, the dtype of the reduction,
whether the stored weight is the gain itself or an offset from 1, and whether the result is cast
back to the input dtype before or after the weight multiply. ``rms_norm(x, w, preset="llama")``
then reproduces ``LlamaRMSNorm`` bit for bit (see tests/test_presets.py for which presets are
checked against the real module and which against a transcription of the reference code).

Two values appear only in presets, never as explicit keywords:

- ``reduction_dtype="opmath"``: float32 for float16 / bfloat16 inputs, otherwise the input dtype
  (PyTorch's "opmath" upcast in its fused CPU/CUDA kernels).
- ``cast="t5"``: T5's rule. The variance is taken in float32, ``x * rsqrt(var + eps)`` follows
  type promotion, and the result is cast to the weight's dtype only when the weight is float16 or
  bfloat16; then ``weight * x`` follows type promotion again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    """The resolved knobs of one upstream implementation.

    ``eps=None`` means the upstream rule ``torch.finfo(dtype).eps`` of the reduction dtype
    (``torch.nn.RMSNorm(eps=None)``). ``reduction_dtype=None`` means the input's own dtype.
    """

    name: str
    kind: str  # "rms" or "layer"
    title: str
    eps: float | None
    eps_placement: str
    reduction_dtype: str | None
    gain_mode: str
    cast: str
    has_weight: bool
    has_bias: bool
    formula: str
    source: str
    notes: str


# Zhang & Sennrich (2019), reference code rmsnorm_torch.py: eps added to the RMS, outside the root.
PAPER_EPS = 1e-8
# torch.nn.functional.normalize's default eps, which x-transformers' RMSNorm inherits.
NORMALIZE_EPS = 1e-12
# rms_norm_eps in Llama, Gemma, T5 and OLMo-2 configs, and the default of their RMSNorm classes.
HF_RMS_EPS = 1e-6
# torch.nn.LayerNorm's default, kept by OLMo-1's LayerNorm and Transformer Engine's RMSNorm.
TORCH_LAYER_EPS = 1e-5

# Shared pieces of the float32 presets' formulas.
_RSQRT = (
    r"\operatorname{rsqrt}\!\left(\tfrac{1}{d}\textstyle\sum_j \tilde{x}_j^{2}"
    r" + \epsilon\right)"
)
_FP32 = r",\quad \tilde{x} = \operatorname{fp32}(x)"

_ALL = (
    Preset(
        name="torch",
        kind="rms",
        title="torch.nn.RMSNorm",
        eps=None,
        eps_placement="inside",
        reduction_dtype="opmath",
        gain_mode="direct",
        cast="after",
        has_weight=True,
        has_bias=False,
        formula=(
            r"y = \operatorname{cast}_{x}\!\left(w \odot \tilde{x}\,"
            r"\operatorname{rsqrt}\!\left(\tfrac{1}{d}\textstyle\sum_j \tilde{x}_j^{2}"
            r" + \epsilon\right)\right),\quad \tilde{x} = \operatorname{opmath}(x),\quad"
            r" \epsilon = \operatorname{finfo}(\tilde{x}).\mathrm{eps}"
        ),
        source="torch/nn/modules/normalization.py: RMSNorm (aten fused rms_norm kernel)",
        notes=(
            "eps=None takes the machine epsilon of the compute dtype: float32's for half inputs "
            "(the docs say the input's). With the weight in the input dtype the fused kernel "
            "multiplies by it in float32 and casts once at the end."
        ),
    ),
    Preset(
        name="llama",
        kind="rms",
        title="Llama (LlamaRMSNorm)",
        eps=HF_RMS_EPS,
        eps_placement="inside",
        reduction_dtype="float32",
        gain_mode="direct",
        cast="before",
        has_weight=True,
        has_bias=False,
        formula=r"y = w \odot \operatorname{cast}_{x}\!\left(\tilde{x}\,"
        + _RSQRT
        + r"\right)"
        + _FP32,
        source="transformers/models/llama/modeling_llama.py: LlamaRMSNorm",
        notes=(
            "Normalises in float32, casts back to the input dtype, then multiplies by the "
            "weight, so the product is rounded in half precision when the weight is half."
        ),
    ),
    Preset(
        name="gemma",
        kind="rms",
        title="Gemma (GemmaRMSNorm)",
        eps=HF_RMS_EPS,
        eps_placement="inside",
        reduction_dtype="float32",
        gain_mode="offset",
        cast="after",
        has_weight=True,
        has_bias=False,
        formula=r"y = \operatorname{cast}_{x}\!\left((1 + \operatorname{fp32}(w)) \odot \tilde{x}\,"
        + _RSQRT
        + r"\right)"
        + _FP32,
        source="transformers/models/gemma/modeling_gemma.py: GemmaRMSNorm",
        notes=(
            "The stored weight is zero-centred (initialised to 0, gain 1 + w) and the whole "
            "computation stays in float32 until one cast at the end."
        ),
    ),
    Preset(
        name="t5",
        kind="rms",
        title="T5 (T5LayerNorm)",
        eps=HF_RMS_EPS,
        eps_placement="inside",
        reduction_dtype="float32",
        gain_mode="direct",
        cast="t5",
        has_weight=True,
        has_bias=False,
        formula=(
            r"y = w \odot \operatorname{cast}_{w}\!\left(x\,\operatorname{rsqrt}\!\left("
            r"\tfrac{1}{d}\textstyle\sum_j \operatorname{fp32}(x_j)^{2} + \epsilon\right)\right),"
            r"\quad \operatorname{cast}_{w} \text{ only for a half-precision } w"
        ),
        source="transformers/models/t5/modeling_t5.py: T5LayerNorm",
        notes=(
            "Despite its name an RMSNorm. The variance is accumulated in float32; the result is "
            "cast to the weight's dtype only when that is float16 or bfloat16."
        ),
    ),
    Preset(
        name="olmo2",
        kind="rms",
        title="OLMo 2 (Olmo2RMSNorm)",
        eps=HF_RMS_EPS,
        eps_placement="inside",
        reduction_dtype="float32",
        gain_mode="direct",
        cast="after",
        has_weight=True,
        has_bias=False,
        formula=r"y = \operatorname{cast}_{x}\!\left(w \odot \tilde{x}\,"
        + _RSQRT
        + r"\right)"
        + _FP32,
        source="transformers/models/olmo2/modeling_olmo2.py: Olmo2RMSNorm",
        notes=(
            "Like Llama, except that the weight multiply happens in float32 before the single "
            "cast back to the input dtype."
        ),
    ),
    Preset(
        name="transformer-engine",
        kind="rms",
        title="Transformer Engine (RMSNorm, zero_centered_gamma=True)",
        eps=TORCH_LAYER_EPS,
        eps_placement="inside",
        reduction_dtype="float32",
        gain_mode="offset",
        cast="after",
        has_weight=True,
        has_bias=False,
        formula=r"y = \operatorname{cast}_{x}\!\left((1 + \gamma) \odot \tilde{x}\,"
        + _RSQRT
        + r"\right)"
        + _FP32,
        source="transformer_engine/pytorch/module/rmsnorm.py: RMSNorm",
        notes=(
            "Fused CUDA kernel computing in float32 with a zero-centred gamma (gain 1 + gamma) "
            "and eps 1e-5; mirrored here from its formula."
        ),
    ),
    Preset(
        name="paper",
        kind="rms",
        title="RMSNorm paper (Zhang & Sennrich, 2019)",
        eps=PAPER_EPS,
        eps_placement="outside",
        reduction_dtype=None,
        gain_mode="direct",
        cast="after",
        has_weight=True,
        has_bias=False,
        formula=r"y = g \odot \frac{x}{\lVert x \rVert_2 / \sqrt{d} + \epsilon}",
        source="bzhangGo/rmsnorm: rmsnorm_torch.py: RMSNorm",
        notes=(
            "eps is added to the RMS itself, outside the square root, and everything runs in "
            "the input dtype. Its optional bias ('offset') is off by default."
        ),
    ),
    Preset(
        name="x-transformers",
        kind="rms",
        title="x-transformers (F.normalize)",
        eps=NORMALIZE_EPS,
        eps_placement="clamp",
        reduction_dtype=None,
        gain_mode="direct",
        cast="after",
        has_weight=True,
        has_bias=False,
        formula=r"y = g \odot \sqrt{d}\,\frac{x}{\max(\lVert x \rVert_2,\ \epsilon)}",
        source="lucidrains/x-transformers: x_transformers/x_transformers.py: RMSNorm",
        notes=(
            "Unit-normalises with F.normalize (the norm clamped below at eps) and rescales by "
            "sqrt(d); eps therefore bounds the norm, not the mean square."
        ),
    ),
    Preset(
        name="torch",
        kind="layer",
        title="torch.nn.LayerNorm",
        eps=TORCH_LAYER_EPS,
        eps_placement="inside",
        reduction_dtype="opmath",
        gain_mode="direct",
        cast="after",
        has_weight=True,
        has_bias=True,
        formula=(
            r"y = \operatorname{cast}_{x}\!\left(w \odot \frac{\tilde{x} - \mu}"
            r"{\sqrt{\sigma^{2} + \epsilon}} + b\right),\quad \tilde{x} = \operatorname{opmath}(x)"
        ),
        source="torch/nn/modules/normalization.py: LayerNorm (aten layer_norm kernel)",
        notes=(
            "Half inputs are normalised, scaled and shifted in float32 and cast once. In "
            "float32 the kernel's Welford moments and fused multiply-adds differ from the "
            "two-pass formula by a few ulps."
        ),
    ),
    Preset(
        name="olmo",
        kind="layer",
        title="OLMo 1 (non-parametric LayerNorm)",
        eps=TORCH_LAYER_EPS,
        eps_placement="inside",
        reduction_dtype="float32",
        gain_mode="direct",
        cast="after",
        has_weight=False,
        has_bias=False,
        formula=(
            r"y = \operatorname{cast}_{x}\!\left(\frac{\tilde{x} - \mu}{\sqrt{\sigma^{2} + "
            r"\epsilon}}\right),\quad \tilde{x} = \operatorname{fp32}(x)"
        ),
        source="transformers/models/olmo/modeling_olmo.py: OlmoLayerNorm",
        notes="No weight and no bias: F.layer_norm on the float32 copy, cast back to the input.",
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
