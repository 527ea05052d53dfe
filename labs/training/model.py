r"""A small decoder-only transformer whose one variable is the norm (nanoGPT's shape).

The variants share everything but the norm layers (``ModelConfig.norm``, one of ``MODEL_NORMS``:
``"layer"``, ``"rms"``, ``"none"`` for the identity, and the S-shaped ``S_NORMS``: ``"dyt"`` for
Dynamic Tanh, :math:`g \odot \tanh(\alpha x) + b`, ``"derf"`` for Dynamic erf,
:math:`g \odot \operatorname{erf}(\alpha x + s) + b`) and where they sit
(``ModelConfig.placement``: ``"pre"``, ``"post"`` with no final norm, ``"peri"`` with the output
norms ``ln_1_out`` and ``ln_2_out``, ``"output"`` with those alone (OLMo 2's), ``"scaled"``:
pre-norm with block l's norms times 1/sqrt(l); docs/training.md describes them).
``ModelConfig.qk_norm`` normalises every head's query and key rows before the dot product (gains
shared by the heads), or ``"clip"`` rescales their weights after each step (``qk_clip``).
The norms are the core's, through ``labs.training.kernels.norm_function``. Two variants with the
same seed start from the same weights wherever their shapes agree (``init_weights``). This module
imports torch at the top: only the training code imports it, never ``core``."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from core.defaults import DEFAULT_LAYER_EPS
from labs.training.kernels import KERNELS, norm_function

# Every norm the model builds and trains.
MODEL_NORMS = ("layer", "rms", "none", "dyt", "derf")
# The norms the training page, its claims and the shipped runs iterate: all of them.
NORM_KINDS = MODEL_NORMS
NORM_CLASSES = {
    "layer": "LayerNorm", "rms": "RMSNorm", "none": "Identity", "dyt": "DyT", "derf": "Derf"
}  # fmt: skip
# The S-shaped norms: an elementwise curve with a learned scale alpha, no statistic of the row.
S_NORMS = ("dyt", "derf")
# The learnable parameters of each norm class, as named in the state dict.
NORM_PARAMS = {
    "layer": ("weight", "bias"),
    "rms": ("weight",),
    "none": (),
    "dyt": ("alpha", "weight", "bias"),
    "derf": ("alpha", "shift", "weight", "bias"),
}
PLACEMENTS = ("pre", "post", "peri", "output", "scaled")
QK_NORMS = ("off", "rms", "layer", "clip")
# DyT's alpha starts at 0.5, the paper's default (it tunes the start only for its LLaMA models);
# Derf's too, and its shift s at 0 (not checked against the Derf paper: docs/training.md).
DEFAULT_DYT_ALPHA = 0.5
DEFAULT_DERF_SHIFT = 0.0
# Raw bytes: the vocabulary needs no file and covers any text, UTF-8 included.
BYTE_VOCAB = 256
# nanoGPT's init: N(0, 0.02) for every matrix; the projections that write into the residual
# stream get 0.02 / sqrt(2 L), so the stream's variance does not grow with depth (GPT-2 paper).
INIT_STD = 0.02
NORM_FORMULAS = {
    "layer": r"y = g \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + b",
    "rms": r"y = g \odot \frac{x}{\sqrt{\frac{1}{d}\sum_i x_i^2 + \epsilon}}",
    "none": r"y = x",
    "dyt": r"y = g \odot \tanh(\alpha x) + b",
    "derf": r"y = g \odot \operatorname{erf}(\alpha x + s) + b",
}
# Each placement's block, in forward order: the sublayers and the norms with their places.
BLOCK_LAYOUTS = {
    "pre": (("ln_1", "pre-attention"), ("attn", None), ("ln_2", "pre-MLP"), ("mlp", None)),
    "post": (("attn", None), ("ln_1", "post-attention"), ("mlp", None), ("ln_2", "post-MLP")),
    "peri": (
        ("ln_1", "pre-attention"),
        ("attn", None),
        ("ln_1_out", "attention output"),
        ("ln_2", "pre-MLP"),
        ("mlp", None),
        ("ln_2_out", "MLP output"),
    ),
}
# OLMo 2's block: Peri-LN's without the norms before the sublayers; LayerNorm Scaling: Pre-LN's.
PERI = BLOCK_LAYOUTS["peri"]
BLOCK_LAYOUTS |= {"output": PERI[1:3] + PERI[4:], "scaled": BLOCK_LAYOUTS["pre"]}
ARCHITECTURES = {
    "pre": "decoder-only transformer, pre-norm (nanoGPT layout)",
    "post": "decoder-only transformer, post-norm (original Transformer), no final norm",
    "peri": "decoder-only transformer, peri-norm (Peri-LN: pre-norm plus sublayer-output norms)",
    "output": "decoder-only transformer, output-norm (OLMo 2: sublayer-output norms, final norm)",
    "scaled": "decoder-only transformer, scaled-norm (LayerNorm Scaling: pre-norm, / sqrt(layer))",
}


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)} (got {value!r})")


@dataclass(frozen=True)
class ModelConfig:
    """The architecture. ``eps`` is the same for LayerNorm and RMSNorm (and the QK norms), so
    that the two differ only by centring (and LayerNorm's bias); by default torch.nn.LayerNorm's
    1e-5. DyT and Derf have no eps; ``dyt_alpha`` is their alpha at initialisation."""

    norm: str = "rms"
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    block_size: int = 64
    vocab_size: int = BYTE_VOCAB
    eps: float = DEFAULT_LAYER_EPS
    # How the norm layers compute (``labs.training.kernels``); "lab" is what the shipped runs use.
    kernel: str = "lab"
    placement: str = "pre"
    qk_norm: str = "off"
    dyt_alpha: float = DEFAULT_DYT_ALPHA

    def __post_init__(self) -> None:
        _choice("norm", self.norm, MODEL_NORMS)
        _choice("placement", self.placement, PLACEMENTS)
        _choice("qk_norm", self.qk_norm, QK_NORMS)
        _choice("kernel", self.kernel, KERNELS)
        for name in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer (got {value!r})")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be a multiple of n_head")
        for name in ("eps", "dyt_alpha"):
            value = getattr(self, name)
            number = isinstance(value, float | int) and not isinstance(value, bool)
            if not (number and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0 (got {value!r})")


def dyt(x: torch.Tensor, alpha: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor):
    r"""Dynamic Tanh, :math:`y = g \odot \tanh(\alpha x) + b`: (..., d) -> (..., d)."""
    return weight * torch.tanh(alpha * x) + bias


class Norm(nn.Module):
    """One norm layer: LayerNorm, RMSNorm, DyT, Derf or the identity.

    ``where`` names its place ("pre-attention", "post-MLP", "attention output", "query",
    "final", ...). ``bypass = True`` turns it into the identity with the weights kept, to time a
    forward pass without the norm."""

    def __init__(
        self,
        kind: str,
        d: int,
        eps: float,
        where: str,
        kernel: str = "lab",
        alpha: float = DEFAULT_DYT_ALPHA,
    ) -> None:
        super().__init__()
        self.kind, self.eps, self.where, self.kernel = kind, float(eps), where, kernel
        self.bypass = False
        self.fn = norm_function(kind, kernel) if kind in ("layer", "rms") else None
        if kind in S_NORMS:
            # A (1,)-shaped scalar, as in the paper's code: safetensors and AdamW take it as is.
            self.alpha = nn.Parameter(torch.full((1,), float(alpha)))
        if kind == "derf":
            self.shift = nn.Parameter(torch.full((1,), DEFAULT_DERF_SHIFT))
        if kind != "none":
            self.weight = nn.Parameter(torch.ones(d))
        if kind not in ("rms", "none"):
            self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "none" or self.bypass:
            return x
        if self.kind == "dyt":
            return dyt(x, self.alpha, self.weight, self.bias)
        if self.kind == "derf":  # Dynamic erf (Chen et al. 2025): NORM_FORMULAS["derf"]
            return self.weight * torch.erf(self.alpha * x + self.shift) + self.bias
        return self.fn(x, self.weight, getattr(self, "bias", None), self.eps)

    def extra_repr(self) -> str:
        eps = "" if self.kind in S_NORMS else f", eps={self.eps}"  # DyT and Derf have none
        return f"{NORM_CLASSES[self.kind]}{eps}, where={self.where!r}"


class CausalSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=False)  # q, k, v at once
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=False)
        self.qk_norm, self.clip = config.qk_norm in ("rms", "layer"), config.qk_norm == "clip"
        self.step_logits: torch.Tensor | None = None  # the last training pass's, for qk_clip
        if self.qk_norm:
            d_head, kind = config.n_embd // config.n_head, config.qk_norm
            self.q_norm = Norm(kind, d_head, config.eps, "query", config.kernel)
            self.k_norm = Norm(kind, d_head, config.eps, "key", config.kernel)

    def heads(self, qkv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``c_attn``'s output as queries, keys (after the QK norms, if any) and values:
        (b, t, 3c) -> 3 x (b, heads, t, c / heads)."""
        b, t, c = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
        q, k, v = qkv.split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        return q, k, v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.heads(self.c_attn(x))
        if self.clip and torch.is_grad_enabled():
            self.step_logits = head_logits(q, k) / math.sqrt(q.shape[-1])
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


@torch.no_grad()
def head_logits(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Each head's largest |q . k| over causal pairs (key at or before the query), not divided by
    sqrt(d_head): (b, heads, t, d_head) twice -> (heads,)."""
    t = q.shape[-2]
    scores = (q @ k.transpose(-1, -2)).abs_()  # (b, h, t, t)
    future = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    # |logit| >= 0, so a zero in every future place leaves the causal maximum (or NaN).
    return scores.masked_fill_(future, 0.0).amax(dim=(0, 2, 3))


@torch.no_grad()
def qk_clip(model: GPT, tau: float) -> None:
    r"""QK-Clip (Kimi K2's MuonClip, arXiv 2507.20534), after an optimiser step: each head whose
    largest logit :math:`S_h = \max |q \cdot k| / \sqrt{d_{head}}` over the causal pairs of the
    step's batch (read in its forward pass, before the update) exceeded ``tau`` has its query
    and key rows of ``c_attn`` multiplied by :math:`\sqrt{\tau / S_h}`, which multiplies its
    logits by :math:`\tau / S_h`. Kimi K2 reads the largest signed logit; here its magnitude,
    as ``probe`` does. Nothing without ``qk_norm="clip"``."""
    for attn in (block.attn for block in model.blocks if block.attn.step_logits is not None):
        c, d_head = attn.c_attn.in_features, attn.c_attn.in_features // attn.n_head
        gamma = (tau / attn.step_logits).clamp(max=1.0).sqrt()  # (heads,)
        attn.c_attn.weight[: 2 * c] *= gamma.repeat_interleave(d_head).repeat(2)[:, None]


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=False)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x)))


def _stream_norm(config: ModelConfig, where: str) -> Norm:
    """A norm of the residual stream's width, of ``config.norm``'s kind."""
    return Norm(config.norm, config.n_embd, config.eps, where, config.kernel, config.dyt_alpha)


class Block(nn.Module):
    """One block in ``config.placement``'s layout (``BLOCK_LAYOUTS``); the modules are
    registered in forward order, so ``GPT.norms()`` lists them in the order they compute."""

    def __init__(self, config: ModelConfig, layer: int = 1) -> None:
        super().__init__()
        self.placement = config.placement
        # LayerNorm Scaling (arXiv 2502.05795): block l's norms (l from 1) times 1/sqrt(l).
        self.scale = 1 / math.sqrt(layer)
        for name, where in BLOCK_LAYOUTS[config.placement]:
            if name == "attn":
                self.attn = CausalSelfAttention(config)
            elif name == "mlp":
                self.mlp = MLP(config)
            else:
                setattr(self, name, _stream_norm(config, where))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.placement == "pre":
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))
        if self.placement == "post":
            x = self.ln_1(x + self.attn(x))
            return self.ln_2(x + self.mlp(x))
        if self.placement == "scaled":
            x = x + self.attn(self.ln_1(x) * self.scale)
            return x + self.mlp(self.ln_2(x) * self.scale)
        if self.placement == "output":  # OLMo 2
            x = x + self.ln_1_out(self.attn(x))
            return x + self.ln_2_out(self.mlp(x))
        x = x + self.ln_1_out(self.attn(self.ln_1(x)))
        return x + self.ln_2_out(self.mlp(self.ln_2(x)))


class GPT(nn.Module):
    """Token and position embeddings, ``n_layer`` blocks, a final norm (``ln_f``, None in the
    post-norm layout) and an output head.

    The head is not tied to the token embedding: with a 256-byte vocabulary it is a small share
    of the weights, and untied tensors save to safetensors as they are."""

    def __init__(self, config: ModelConfig, *, seed: int | None = None) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.blocks = nn.ModuleList(Block(config, i + 1) for i in range(config.n_layer))
        self.ln_f = _stream_norm(config, "final") if config.placement != "post" else None
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if seed is not None:
            init_weights(self, seed)

    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """The residual stream entering block 0: (b, t) byte ids -> (b, t, n_embd)."""
        t = idx.shape[1]
        if t > self.config.block_size:
            raise ValueError(f"sequence length {t} exceeds block_size {self.config.block_size}")
        return self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits (b, t, vocab) and, with targets (b, t), the mean cross-entropy in nats."""
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        if self.ln_f is not None:
            x = self.ln_f(x)
        logits = self.lm_head(x)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))

    def norms(self) -> list[tuple[str, Norm]]:
        """Every norm layer with its module name, in the order the forward pass meets them."""
        return [(name, m) for name, m in self.named_modules() if isinstance(m, Norm)]

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def init_weights(model: GPT, seed: int) -> None:
    """Draw every non-norm weight from ``torch.Generator().manual_seed(seed)`` (nanoGPT's init).

    Parameters are visited in name order and norm parameters consume no draws (gains 1, biases
    0, DyT's and Derf's alpha ``config.dyt_alpha``, Derf's shift ``DEFAULT_DERF_SHIFT``), so a
    variant with another norm, placement or QK norm gets the same numbers in every tensor the two
    have in common."""
    generator = torch.Generator().manual_seed(seed)
    residual_std = INIT_STD / math.sqrt(2 * model.config.n_layer)
    norm_fill = {"weight": 1.0, "bias": 0.0, "alpha": float(model.config.dyt_alpha)}
    norm_fill["shift"] = DEFAULT_DERF_SHIFT
    norm_names = {f"{name}.{p}": v for name, _ in model.norms() for p, v in norm_fill.items()}
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name in norm_names:
                p.fill_(norm_names[name])
                continue
            std = residual_std if name.endswith("c_proj.weight") else INIT_STD
            p.normal_(0.0, std, generator=generator)


@contextmanager
def norms_bypassed(model: GPT) -> Iterator[GPT]:
    """Every norm layer of ``model`` (QK norms, DyT and Derf included) acts as the identity inside
    the block (weights kept)."""
    layers = [m for _, m in model.norms()]
    try:
        for m in layers:
            m.bypass = True
        yield model
    finally:
        for m in layers:
            m.bypass = False


def curve_params(model: GPT, param: str = "alpha") -> list[float] | None:
    """Each S-shaped layer's (DyT's, Derf's) scalar ``param`` ("alpha", Derf's "shift") in
    forward order; None for a model without one."""
    values = [float(getattr(m, param).detach()[0]) for _, m in model.norms() if hasattr(m, param)]
    return values or None


class Probe:
    r"""What ``probe`` read during the forward passes it watched.

    ``hidden_rms()``: the RMS of the residual stream after the embedding and after each block
    (L + 1 values), each over every position and coordinate of every pass,
    :math:`\sqrt{\sum h^2 / N}`. ``max_logit()``: the largest
    :math:`|q \cdot k| / \sqrt{d_{head}}` over causal pairs (key at or before the query), heads
    and layers, with q and k as the attention uses them (after the QK norms, if any)."""

    def __init__(self, n_layer: int) -> None:
        self.sums = [0.0] * (n_layer + 1)
        self.counts = [0] * (n_layer + 1)
        self.logits: list[float] = []

    def stream(self, index: int, h: torch.Tensor) -> None:
        self.sums[index] += float(h.detach().square().sum(dtype=torch.float64))
        self.counts[index] += h.numel()

    def attention(self, attn: CausalSelfAttention, qkv: torch.Tensor) -> None:
        """From ``c_attn``'s output, as the attention reads it (no second matrix product)."""
        with torch.no_grad():
            q, k, _ = attn.heads(qkv)
            self.logits.append(float(head_logits(q, k).amax()) / math.sqrt(q.shape[-1]))

    def hidden_rms(self) -> list[float]:
        return [
            math.sqrt(s / n) if n else math.nan for s, n in zip(self.sums, self.counts, strict=True)
        ]

    def max_logit(self) -> float:
        """NaN if any pass met a NaN (or none was watched)."""
        if not self.logits or any(math.isnan(v) for v in self.logits):
            return math.nan
        return max(self.logits)


@contextmanager
def probe(model: GPT) -> Iterator[Probe]:
    """Hooks that fill a ``Probe`` during every forward pass inside the block; removed after.
    They read and change nothing, so the passes compute exactly what they would without them."""
    reading = Probe(len(model.blocks))
    handles = [model.blocks[0].register_forward_pre_hook(lambda _m, a: reading.stream(0, a[0]))]
    for i, block in enumerate(model.blocks):
        handles += [
            block.register_forward_hook(lambda _m, _a, out, i=i: reading.stream(i + 1, out)),
            block.attn.c_attn.register_forward_hook(
                lambda _m, _a, out, attn=block.attn: reading.attention(attn, out)
            ),
        ]
    try:
        yield reading
    finally:
        for handle in handles:
            handle.remove()


def describe(config: ModelConfig) -> dict[str, Any]:
    """The architecture as plain data: every field, the norm's class, and each norm's place.

    ``norm_layers`` lists, in forward order, the state-dict prefix of each norm, where it sits
    (``BLOCK_LAYOUTS``'s places, "query" and "key" for the QK norms, "final"), the block it
    belongs to (None for the final norm), its class and its parameters; the identity variant
    lists the same places with no parameters. A post-norm model has no final norm."""
    layers: list[dict[str, Any]] = []

    def add(name: str, where: str, block: int | None, kind: str) -> None:
        layer = {"name": name, "where": where, "block": block, "class": NORM_CLASSES[kind]}
        layers.append({**layer, "params": list(NORM_PARAMS[kind])})

    for i in range(config.n_layer):
        for name, where in BLOCK_LAYOUTS[config.placement]:
            if where is not None:
                add(f"blocks.{i}.{name}", where, i, config.norm)
            elif name == "attn" and config.qk_norm in ("rms", "layer"):
                add(f"blocks.{i}.attn.q_norm", "query", i, config.qk_norm)
                add(f"blocks.{i}.attn.k_norm", "key", i, config.qk_norm)
    if config.placement != "post":
        add("ln_f", "final", None, config.norm)
    return {
        **asdict(config),
        "architecture": ARCHITECTURES[config.placement],
        "norm_class": NORM_CLASSES[config.norm],
        "norm_formula": NORM_FORMULAS[config.norm],
        "norm_layers": layers,
        "qk_norm_class": NORM_CLASSES.get(config.qk_norm),
        "mlp": "Linear(d, 4d) -> GELU -> Linear(4d, d), no biases",
        "attention": "causal multi-head, scaled dot product, no biases",
        "tied_embeddings": False,
        "positional": "learned absolute",
    }
