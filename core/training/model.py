r"""A small decoder-only transformer whose one variable is the norm (nanoGPT's shape).

Three variants share everything but the norm layers:

- ``"layer"``: pre-norm with LayerNorm, :math:`g \odot (x - \mu) / \sqrt{\sigma^2 + \epsilon} + b`;
- ``"rms"``: pre-norm with RMSNorm, :math:`g \odot x / \sqrt{\overline{x^2} + \epsilon}`;
- ``"none"``: the identity where a norm would sit, which shows why norms exist.

Each block is :math:`h \leftarrow h + \mathrm{Attn}(\mathrm{norm}_1(h))`, then
:math:`h \leftarrow h + \mathrm{MLP}(\mathrm{norm}_2(h))`; a final norm reads the last stream
before the output head. The norms are :func:`core.norms.layer_norm` and
:func:`core.norms.rms_norm` on torch tensors, which autograd differentiates.

``init_weights`` draws every weight from one seeded generator in the order of the parameter
names; norm gains and biases start at ones and zeros and draw nothing, so two variants with the
same seed start from the same weights wherever their shapes agree.

This module imports torch at the top: only the training code imports it, never ``core``.
"""

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
from core.training.kernels import KERNELS, norm_function

__all__ = [
    "NORM_CLASSES",
    "NORM_KINDS",
    "GPT",
    "ModelConfig",
    "Norm",
    "describe",
    "init_weights",
    "norms_bypassed",
]

NORM_KINDS = ("layer", "rms", "none")
NORM_CLASSES = {"layer": "LayerNorm", "rms": "RMSNorm", "none": "Identity"}
# The learnable parameters of each norm class, as named in the state dict.
NORM_PARAMS = {"layer": ("weight", "bias"), "rms": ("weight",), "none": ()}
# Raw bytes: the vocabulary needs no file and covers any text, UTF-8 included.
BYTE_VOCAB = 256
# nanoGPT's init: N(0, 0.02) for every matrix; the projections that write into the residual
# stream get 0.02 / sqrt(2 L), so the stream's variance does not grow with depth (GPT-2 paper).
INIT_STD = 0.02
NORM_FORMULAS = {
    "layer": r"y = g \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + b",
    "rms": r"y = g \odot \frac{x}{\sqrt{\frac{1}{d}\sum_i x_i^2 + \epsilon}}",
    "none": r"y = x",
}


@dataclass(frozen=True)
class ModelConfig:
    """The architecture. ``eps`` is the same for LayerNorm and RMSNorm, so that the two differ
    only by centring (and LayerNorm's bias); by default torch.nn.LayerNorm's 1e-5."""

    norm: str = "rms"
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    block_size: int = 64
    vocab_size: int = BYTE_VOCAB
    eps: float = DEFAULT_LAYER_EPS
    # How the norm layers compute (``core.training.kernels``); "lab" is what the shipped runs use.
    kernel: str = "lab"

    def __post_init__(self) -> None:
        if self.norm not in NORM_KINDS:
            raise ValueError(f"norm must be one of {list(NORM_KINDS)} (got {self.norm!r})")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {list(KERNELS)} (got {self.kernel!r})")
        for name in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer (got {value!r})")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be a multiple of n_head")
        if not (isinstance(self.eps, float | int) and math.isfinite(self.eps) and self.eps > 0):
            raise ValueError(f"eps must be a finite number > 0 (got {self.eps!r})")


class Norm(nn.Module):
    """One norm layer: LayerNorm, RMSNorm or the identity, computed by ``core.norms``.

    ``where`` names its place ("pre-attention", "pre-MLP", "final"). ``bypass = True`` turns it
    into the identity with the weights kept, to time a forward pass without the norm.
    """

    def __init__(self, kind: str, d: int, eps: float, where: str, kernel: str = "lab") -> None:
        super().__init__()
        self.kind, self.eps, self.where, self.kernel = kind, float(eps), where, kernel
        self.bypass = False
        self.fn = norm_function(kind, kernel) if kind in ("layer", "rms") else None
        if kind in ("layer", "rms"):
            self.weight = nn.Parameter(torch.ones(d))
        if kind == "layer":
            self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "none" or self.bypass:
            return x
        return self.fn(x, self.weight, getattr(self, "bias", None), self.eps)

    def extra_repr(self) -> str:
        return f"{NORM_CLASSES[self.kind]}, eps={self.eps}, where={self.where!r}"


class CausalSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=False)  # q, k, v at once
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        # (b, t, c) -> (b, heads, t, c / heads)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=False)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.ln_1 = Norm(config.norm, config.n_embd, config.eps, "pre-attention", config.kernel)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = Norm(config.norm, config.n_embd, config.eps, "pre-MLP", config.kernel)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Token and position embeddings, ``n_layer`` blocks, a final norm and an output head.

    The head is not tied to the token embedding: with a 256-byte vocabulary it is a small share
    of the weights, and untied tensors save to safetensors as they are.
    """

    def __init__(self, config: ModelConfig, *, seed: int | None = None) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = Norm(config.norm, config.n_embd, config.eps, "final", config.kernel)
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
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss

    def norms(self) -> list[tuple[str, Norm]]:
        """Every norm layer with its module name, in the order the forward pass meets them."""
        return [(name, m) for name, m in self.named_modules() if isinstance(m, Norm)]

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def init_weights(model: GPT, seed: int) -> None:
    """Draw every non-norm weight from ``torch.Generator().manual_seed(seed)`` (nanoGPT's init).

    Parameters are visited in name order and norm parameters consume no draws, so a variant
    with another norm (or none) gets the same numbers in every tensor the two have in common.
    """
    generator = torch.Generator().manual_seed(seed)
    residual_std = INIT_STD / math.sqrt(2 * model.config.n_layer)
    norm_names = {f"{name}.{p}" for name, _ in model.norms() for p in ("weight", "bias")}
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name in norm_names:
                p.fill_(0.0 if name.endswith(".bias") else 1.0)
                continue
            std = residual_std if name.endswith("c_proj.weight") else INIT_STD
            p.normal_(0.0, std, generator=generator)


@contextmanager
def norms_bypassed(model: GPT) -> Iterator[GPT]:
    """Every norm layer of ``model`` acts as the identity inside the block (weights kept)."""
    layers = [m for _, m in model.norms()]
    try:
        for m in layers:
            m.bypass = True
        yield model
    finally:
        for m in layers:
            m.bypass = False


def describe(config: ModelConfig) -> dict[str, Any]:
    """The architecture as plain data: every field, the norm's class, and each norm's place.

    ``norm_layers`` lists, in forward order, the state-dict prefix of each norm, where it sits
    (pre-attention, pre-MLP or final), the block it belongs to (None for the final norm) and its
    parameters; the identity variant lists the same places with no parameters.
    """
    places: list[tuple[str, str, int | None]] = []
    for i in range(config.n_layer):
        places += [(f"blocks.{i}.ln_1", "pre-attention", i), (f"blocks.{i}.ln_2", "pre-MLP", i)]
    places.append(("ln_f", "final", None))
    return {
        **asdict(config),
        "architecture": "decoder-only transformer, pre-norm (nanoGPT layout)",
        "norm_class": NORM_CLASSES[config.norm],
        "norm_formula": NORM_FORMULAS[config.norm],
        "norm_layers": [
            {"name": name, "where": where, "block": block, "params": list(NORM_PARAMS[config.norm])}
            for name, where, block in places
        ],
        "mlp": "Linear(d, 4d) -> GELU -> Linear(4d, d), no biases",
        "attention": "causal multi-head, scaled dot product, no biases",
        "tied_embeddings": False,
        "positional": "learned absolute",
    }
