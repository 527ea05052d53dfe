"""The GPT of labs.training.model written again from its state dict alone, for the model's tests:
the textbook norms, the five placements, QK norm per head, an explicit causal mask, softmax and
exact GELU."""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from labs.training.model import GPT, ModelConfig


def perturbed(model: GPT, seed: int = 5, scale: float = 0.2) -> GPT:
    """Every parameter moved by ``scale`` times a normal draw (gains, biases and alphas too), so
    no test passes because a gain is 1, a bias 0 or an alpha 0.5."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=generator, dtype=p.dtype))
    return model


def record_io(model: GPT, idx: torch.Tensor, modules: Mapping[str, torch.nn.Module]) -> dict:
    """(input, output) of each of ``modules``, by name, during one forward pass of ``idx``."""
    seen: dict[str, tuple] = {}
    handles = [
        m.register_forward_hook(lambda _m, a, out, n=n: seen.__setitem__(n, (a[0], out)))
        for n, m in modules.items()
    ]
    with torch.no_grad():
        model(idx)
    for handle in handles:
        handle.remove()
    return seen


def norm_of(kind: str, x, sd: dict, prefix: str, eps: float):
    """The textbook norms, one formula step per line; DyT and Derf as their papers write them."""
    if kind == "none":
        return x
    if kind == "dyt":
        return sd[f"{prefix}.weight"] * torch.tanh(sd[f"{prefix}.alpha"] * x) + sd[f"{prefix}.bias"]
    if kind == "derf":
        u = sd[f"{prefix}.alpha"] * x + sd[f"{prefix}.shift"]
        return sd[f"{prefix}.weight"] * torch.erf(u) + sd[f"{prefix}.bias"]
    if kind == "rms":
        ms = (x * x).mean(-1, keepdim=True)  # (..., d) -> (..., 1)
        return x / torch.sqrt(ms + eps) * sd[f"{prefix}.weight"]
    mu = x.mean(-1, keepdim=True)  # (..., d) -> (..., 1)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)  # (..., d) -> (..., 1)
    return (x - mu) / torch.sqrt(var + eps) * sd[f"{prefix}.weight"] + sd[f"{prefix}.bias"]


def queries_keys(config: ModelConfig, sd: dict, p: str, h):
    """(q, k, v), each (b, heads, t, d_head), q and k normalised per head when asked."""
    b, t, d = h.shape
    heads = config.n_head
    q, k, v = (h @ sd[f"{p}.attn.c_attn.weight"].T).split(d, dim=-1)
    q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
    if config.qk_norm in ("rms", "layer"):
        q = norm_of(config.qk_norm, q, sd, f"{p}.attn.q_norm", config.eps)
        k = norm_of(config.qk_norm, k, sd, f"{p}.attn.k_norm", config.eps)
    return q, k, v


def attention(config: ModelConfig, sd: dict, p: str, h):
    b, t, d = h.shape
    q, k, v = queries_keys(config, sd, p, h)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // config.n_head)
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    att = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return (att @ v).transpose(1, 2).reshape(b, t, d) @ sd[f"{p}.attn.c_proj.weight"].T


def mlp(sd: dict, p: str, h):
    hidden = h @ sd[f"{p}.mlp.c_fc.weight"].T
    hidden = 0.5 * hidden * (1.0 + torch.erf(hidden / math.sqrt(2.0)))  # exact GELU
    return hidden @ sd[f"{p}.mlp.c_proj.weight"].T


def reference_forward(config: ModelConfig, sd: dict, idx):
    """Logits (b, t, vocab) and the L + 1 streams (after the embedding, after each block)."""
    x = sd["wte.weight"][idx] + sd["wpe.weight"][: idx.shape[1]]
    streams = [x]
    for i in range(config.n_layer):
        p = f"blocks.{i}"

        def norm(name, h, p=p):
            return norm_of(config.norm, h, sd, f"{p}.{name}", config.eps)

        if config.placement in ("pre", "scaled"):
            s = 1 / math.sqrt(i + 1) if config.placement == "scaled" else 1.0  # LayerNorm Scaling
            x = x + attention(config, sd, p, s * norm("ln_1", x))
            x = x + mlp(sd, p, s * norm("ln_2", x))
        elif config.placement == "output":
            x = x + norm("ln_1_out", attention(config, sd, p, x))
            x = x + norm("ln_2_out", mlp(sd, p, x))
        elif config.placement == "post":
            x = norm("ln_1", x + attention(config, sd, p, x))
            x = norm("ln_2", x + mlp(sd, p, x))
        else:
            x = x + norm("ln_1_out", attention(config, sd, p, norm("ln_1", x)))
            x = x + norm("ln_2_out", mlp(sd, p, norm("ln_2", x)))
        streams.append(x)
    if config.placement != "post":
        x = norm_of(config.norm, x, sd, "ln_f", config.eps)
    return x @ sd["lm_head.weight"].T, streams
