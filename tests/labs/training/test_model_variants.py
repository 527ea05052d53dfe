"""labs.training.model's variants beyond the shipped pre-norm: DyT against its formula and
gradcheck, QK norms per head, the five placements built and computed as named (against the
forward pass tests/model_util.py writes from the state dict; Output-LN against transformers'
Olmo2DecoderLayer), QK-Clip, the probe's readings, and the checkpoints and configs of the new
fields."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from core.device import torch_threads
from labs.training.model import (
    GPT,
    MODEL_NORMS,
    NORM_CLASSES,
    PLACEMENTS,
    QK_NORMS,
    CausalSelfAttention,
    ModelConfig,
    Norm,
    curve_params,
    describe,
    dyt,
    probe,
    qk_clip,
)
from labs.training.store import load_checkpoint, read_config, save_checkpoint
from labs.training.train import TrainConfig, train
from tests.model_util import norm_of, perturbed, queries_keys, record_io, reference_forward

SMALL = dict(n_layer=2, n_head=2, n_embd=8, block_size=8)
COMBOS = list(itertools.product(MODEL_NORMS, PLACEMENTS, QK_NORMS))


@pytest.fixture(autouse=True)
def one_thread():
    """Tensors this small gain nothing from a second thread, and on a busy machine every
    operation would wait for it to be scheduled."""
    with torch_threads(1):
        yield


def small(norm: str = "rms", **overrides) -> ModelConfig:
    return ModelConfig(norm=norm, **{**SMALL, **overrides})


# --- DyT ------------------------------------------------------------------------------------------


def _s_shaped(kind: str, curve, **scalars: float) -> Norm:
    """A float64 ``kind`` layer with ``scalars`` (alpha, shift) and seeded weight and bias, held
    to ``w_j * curve(x) + b_j`` written coordinate by coordinate with the standard library."""
    layer = Norm(kind, 5, 1e-5, "final").double()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, value in scalars.items():
            getattr(layer, name).fill_(value)
        layer.weight.copy_(torch.randn(5, generator=gen, dtype=torch.float64))
        layer.bias.copy_(torch.randn(5, generator=gen, dtype=torch.float64))
    x = 2.0 * torch.randn(3, 4, 5, generator=gen, dtype=torch.float64)
    y = layer(x).detach().numpy()
    w, b = layer.weight.tolist(), layer.bias.tolist()
    expected = [
        [[w[j] * curve(v) + b[j] for j, v in enumerate(row)] for row in rows] for rows in x.tolist()
    ]
    np.testing.assert_allclose(y, expected, rtol=1e-14, atol=1e-15)
    return layer


def test_dyt_is_weight_tanh_alpha_x_plus_bias_float64() -> None:
    layer = _s_shaped("dyt", lambda v: math.tanh(1.7 * v), alpha=1.7)
    assert layer.eps == 1e-5 and "eps" not in layer.extra_repr()  # DyT reads no eps


def test_dyt_gradcheck_float64() -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    alpha = torch.tensor([0.8], dtype=torch.float64, requires_grad=True)
    weight, bias = (
        torch.randn(4, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(2)
    )
    assert torch.autograd.gradcheck(dyt, (x, alpha, weight, bias))
    # And the layer's own parameters get those gradients.
    layer = Norm("dyt", 4, 1e-5, "final").double()
    layer(x).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layer.parameters())


def test_dyt_alpha_starts_at_the_configured_value_and_draws_nothing() -> None:
    base = GPT(small("layer"), seed=3).state_dict()
    for alpha in (0.5, 2.0):
        model = GPT(small("dyt", dyt_alpha=alpha), seed=3)
        sd = model.state_dict()
        assert curve_params(model) == [alpha] * (2 * SMALL["n_layer"] + 1)
        for name, tensor in base.items():
            assert torch.equal(sd[name], tensor), name
    assert curve_params(GPT(small("rms"))) is None
    assert curve_params(GPT(small("dyt", dyt_alpha=2.0))) == [2.0] * 5  # unseeded too


# --- Derf -----------------------------------------------------------------------------------------


def test_derf_is_weight_erf_alpha_x_plus_shift_plus_bias_float64() -> None:
    layer = _s_shaped("derf", lambda v: math.erf(1.3 * v - 0.4), alpha=1.3, shift=-0.4)
    assert "eps" not in layer.extra_repr() and "Derf" in layer.extra_repr()


def test_derf_gradcheck_float64() -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    layer = Norm("derf", 4, 1e-5, "final").double()
    names = ("alpha", "shift", "weight", "bias")
    values = [torch.tensor([0.8]), torch.tensor([0.3]), *(torch.randn(4, generator=gen),) * 2]
    values = [v.double().requires_grad_() for v in values]

    def call(x, *params):
        return torch.func.functional_call(layer, dict(zip(names, params, strict=True)), (x,))

    assert torch.autograd.gradcheck(call, (x, *values))
    layer(x).sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layer.parameters())


def test_derf_starts_at_alpha_and_zero_shift_and_draws_nothing() -> None:
    base = GPT(small("layer"), seed=3).state_dict()
    model = GPT(small("derf", dyt_alpha=0.75), seed=3)
    sd = model.state_dict()
    n = 2 * SMALL["n_layer"] + 1
    assert curve_params(model) == [0.75] * n and curve_params(model, "shift") == [0.0] * n
    assert curve_params(GPT(small("dyt")), "shift") is None
    assert set(base) < set(sd) and len(set(sd) - set(base)) == 2 * n
    for name, tensor in base.items():
        assert torch.equal(sd[name], tensor), name


# --- QK norm --------------------------------------------------------------------------------------


def qk_rows(kind: str, seed: int = 2):
    """(raw q, k; normalised q, k) of a fresh attention in float64, gains 1 and biases 0."""
    config = small("rms", qk_norm=kind, n_embd=12, n_head=3, eps=1e-12)
    attn = CausalSelfAttention(config).double()
    x = 3.0 * torch.randn(2, 5, 12, generator=torch.Generator().manual_seed(seed)).double()
    with torch.no_grad():
        qkv = attn.c_attn(x)
        q, k, v = attn.heads(qkv)
        raw_q, raw_k, raw_v = (z.reshape(2, 5, 3, 4).transpose(1, 2) for z in qkv.split(12, -1))
    assert torch.equal(v, raw_v)  # values are never normalised
    return (raw_q, raw_k), (q, k), config.eps


def test_qk_rms_norm_gives_every_head_row_unit_rms() -> None:
    raw, normed, eps = qk_rows("rms")
    for r, n in zip(raw, normed, strict=True):
        ms = r.pow(2).mean(-1)  # (b, h, t, d_head) -> (b, h, t)
        np.testing.assert_allclose(n.pow(2).mean(-1).sqrt(), (ms / (ms + eps)).sqrt(), rtol=1e-13)
        np.testing.assert_allclose(n.pow(2).mean(-1).sqrt(), 1.0, rtol=1e-9)


def test_qk_layer_norm_gives_every_head_row_zero_mean_unit_std() -> None:
    raw, normed, eps = qk_rows("layer")
    for r, n in zip(raw, normed, strict=True):
        var = r.var(-1, unbiased=False)
        np.testing.assert_allclose(n.mean(-1), 0.0, atol=1e-14)
        np.testing.assert_allclose(
            n.std(-1, unbiased=False), (var / (var + eps)).sqrt(), rtol=1e-12
        )
        assert not np.allclose(r.mean(-1), 0.0, atol=1e-3)  # the raw rows were not centred


@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_attention_with_qk_norm_gradcheck_float64(kind: str) -> None:
    config = small("rms", qk_norm=kind, n_embd=4, n_head=2)
    attn = CausalSelfAttention(config).double()
    names = [name for name, _ in attn.named_parameters()]
    assert {"q_norm.weight", "k_norm.weight"} <= set(names)
    assert attn.q_norm.weight.shape == (2,)  # one gain per head coordinate, shared by the heads
    gen = torch.Generator().manual_seed(4)
    params = [
        (p.detach() + 0.3 * torch.randn(p.shape, generator=gen, dtype=p.dtype)).requires_grad_()
        for _, p in attn.named_parameters()
    ]
    x = torch.randn(1, 3, 4, generator=gen, dtype=torch.float64, requires_grad=True)

    def forward(x, *values):
        return torch.func.functional_call(attn, dict(zip(names, values, strict=True)), (x,))

    assert torch.autograd.gradcheck(forward, (x, *params))


# --- The placements ---------------------------------------------------------------------------


LAYOUT = {
    "pre": ["ln_1", "attn", "ln_2", "mlp"],
    "post": ["attn", "ln_1", "mlp", "ln_2"],
    "peri": ["ln_1", "attn", "ln_1_out", "ln_2", "mlp", "ln_2_out"],
    "output": ["attn", "ln_1_out", "mlp", "ln_2_out"],
    "scaled": ["ln_1", "attn", "ln_2", "mlp"],
}
WHERE = {
    "pre": {"ln_1": "pre-attention", "ln_2": "pre-MLP"},
    "post": {"ln_1": "post-attention", "ln_2": "post-MLP"},
    "peri": {
        "ln_1": "pre-attention",
        "ln_1_out": "attention output",
        "ln_2": "pre-MLP",
        "ln_2_out": "MLP output",
    },
    "output": {"ln_1_out": "attention output", "ln_2_out": "MLP output"},
    "scaled": {"ln_1": "pre-attention", "ln_2": "pre-MLP"},
}


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_each_placement_builds_the_modules_it_names(placement: str) -> None:
    model = GPT(small("layer", placement=placement, qk_norm="rms"))
    for block in model.blocks:
        assert [name for name, _ in block.named_children()] == LAYOUT[placement]
        for name, where in WHERE[placement].items():
            assert getattr(block, name).where == where
    assert (model.ln_f is None) == (placement == "post")
    qk = ["attn.q_norm", "attn.k_norm"]
    order = [m for n in LAYOUT[placement] if n != "mlp" for m in (qk if n == "attn" else [n])]
    expected = [f"blocks.{i}.{n}" for i in range(SMALL["n_layer"]) for n in order]
    expected += [] if placement == "post" else ["ln_f"]
    assert [name for name, _ in model.norms()] == expected  # forward order


def block_io(model: GPT, idx) -> dict[str, tuple]:
    """(input, output) of every module of block 0, the block itself, ln_f and lm_head."""
    modules = {f"b.{n}": m for n, m in model.blocks[0].named_children()}
    modules |= {"block": model.blocks[0], "last": model.blocks[-1], "head": model.lm_head}
    if model.ln_f is not None:
        modules["ln_f"] = model.ln_f
    return record_io(model, idx, modules)


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_each_placement_wires_its_sublayers_as_named(placement: str) -> None:
    """What each sublayer reads and what the block returns, exactly: post-norm's attention
    reads the raw stream (no pre-norm), peri-norm normalises both input and output."""
    model = perturbed(GPT(small("rms", placement=placement), seed=0)).double()
    idx = torch.randint(256, (2, 8), generator=torch.Generator().manual_seed(5))
    io = block_io(model, idx)
    h = io["block"][0]

    def equal(a, b):
        assert torch.equal(a, b)

    if placement in ("pre", "scaled"):  # block 0: LayerNorm Scaling's factor 1/sqrt(1)
        equal(io["b.ln_1"][0], h)
        equal(io["b.attn"][0], io["b.ln_1"][1])
        equal(io["b.ln_2"][0], h + io["b.attn"][1])
        equal(io["b.mlp"][0], io["b.ln_2"][1])
        equal(io["block"][1], io["b.ln_2"][0] + io["b.mlp"][1])
    elif placement == "post":
        equal(io["b.attn"][0], h)
        equal(io["b.ln_1"][0], h + io["b.attn"][1])
        equal(io["b.mlp"][0], io["b.ln_1"][1])
        equal(io["b.ln_2"][0], io["b.ln_1"][1] + io["b.mlp"][1])
        equal(io["block"][1], io["b.ln_2"][1])
    elif placement == "output":
        equal(io["b.attn"][0], h)
        equal(io["b.ln_1_out"][0], io["b.attn"][1])
        equal(io["b.mlp"][0], h + io["b.ln_1_out"][1])
        equal(io["b.ln_2_out"][0], io["b.mlp"][1])
        equal(io["block"][1], io["b.mlp"][0] + io["b.ln_2_out"][1])
    else:
        equal(io["b.ln_1"][0], h)
        equal(io["b.attn"][0], io["b.ln_1"][1])
        equal(io["b.ln_1_out"][0], io["b.attn"][1])
        equal(io["b.ln_2"][0], h + io["b.ln_1_out"][1])
        equal(io["b.mlp"][0], io["b.ln_2"][1])
        equal(io["b.ln_2_out"][0], io["b.mlp"][1])
        equal(io["block"][1], io["b.ln_2"][0] + io["b.ln_2_out"][1])
    if placement == "post":
        equal(io["head"][0], io["last"][1])  # no final norm
    else:
        equal(io["ln_f"][0], io["last"][1])
        equal(io["head"][0], io["ln_f"][1])


@pytest.mark.parametrize(("norm", "placement", "qk_norm"), COMBOS)
def test_forward_matches_the_state_dict_forward_float64(norm, placement, qk_norm) -> None:
    config = small(norm, placement=placement, qk_norm=qk_norm)
    model = perturbed(GPT(config, seed=0)).double()
    idx = torch.randint(256, (2, 8), generator=torch.Generator().manual_seed(6))
    sd = {k: v.detach() for k, v in model.state_dict().items()}
    expected, streams = reference_forward(config, sd, idx)
    with probe(model) as reading:
        logits, _ = model(idx)
    np.testing.assert_allclose(logits.detach(), expected, rtol=1e-10, atol=1e-10)
    # The probe: the streams' RMS, and the largest |q.k| / sqrt(d_head) over causal pairs.
    rms = [float(s.pow(2).mean().sqrt()) for s in streams]
    np.testing.assert_allclose(reading.hidden_rms(), rms, rtol=1e-12)
    top = 0.0
    t = idx.shape[1]
    for i in range(config.n_layer):
        p, h = f"blocks.{i}", streams[i]
        if placement not in ("post", "output"):
            h = norm_of(norm, h, sd, f"{p}.ln_1", config.eps)
            h = h / math.sqrt(i + 1) if placement == "scaled" else h
        q, k, _ = queries_keys(config, sd, p, h)
        logit = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        top = max(
            top, float(logit[..., torch.tril(torch.ones(t, t, dtype=torch.bool))].abs().max())
        )
    np.testing.assert_allclose(reading.max_logit(), top, rtol=1e-12)


def test_output_norm_orders_a_block_as_olmo_2s_decoder_layer() -> None:
    """transformers' Olmo2DecoderLayer (pinned in requirements-dev.txt), given this block's
    attention and MLP in place of its own and this block's gains in its two RMSNorms, computes
    the block: the same sublayers and norms in the same order, h + norm(f(h)). What stays apart
    is OLMo 2's attention (RMSNorm over the whole q and k projections, not per head; rotary
    positions) and its SwiGLU MLP."""
    from transformers import Olmo2Config
    from transformers.models.olmo2.modeling_olmo2 import Olmo2DecoderLayer

    config = small("rms", placement="output")
    block = perturbed(GPT(config, seed=0)).double().blocks[0]
    olmo_config = Olmo2Config(
        hidden_size=config.n_embd, intermediate_size=4 * config.n_embd,
        num_attention_heads=config.n_head, num_key_value_heads=config.n_head,
        rms_norm_eps=config.eps,
    )  # fmt: skip
    olmo = Olmo2DecoderLayer(olmo_config, layer_idx=0).double()
    assert olmo.self_attn.q_norm.weight.shape == olmo.self_attn.k_norm.weight.shape == (8,)

    class Attention(torch.nn.Module):  # OLMo 2's attention returns (output, weights)
        def forward(self, hidden_states, **_):
            return block.attn(hidden_states), None

    olmo.self_attn, olmo.mlp = Attention(), block.mlp
    with torch.no_grad():
        olmo.post_attention_layernorm.weight.copy_(block.ln_1_out.weight)
        olmo.post_feedforward_layernorm.weight.copy_(block.ln_2_out.weight)
        h = torch.randn(2, 8, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
        # Olmo2RMSNorm computes in float32 whatever the input's dtype.
        np.testing.assert_allclose(olmo(h), block(h), rtol=1e-5, atol=1e-6)
        assert not torch.allclose(
            olmo(h), GPT(small("rms", placement="peri")).double().blocks[0](h)
        )


def causal_tops(config: ModelConfig, sd: dict, idx) -> torch.Tensor:
    """Each block's and head's largest |q . k| / sqrt(d_head) over causal pairs, from the state
    dict (pre-norm): (blocks, heads)."""
    _, streams = reference_forward(config, sd, idx)
    tops = []
    for i in range(config.n_layer):
        h = norm_of(config.norm, streams[i], sd, f"blocks.{i}.ln_1", config.eps)
        q, k, _ = queries_keys(config, sd, f"blocks.{i}", h)
        logit = (q @ k.transpose(-1, -2)).abs() / math.sqrt(q.shape[-1])
        causal = torch.tril(torch.ones(idx.shape[1], idx.shape[1], dtype=torch.bool))
        tops.append(logit.masked_fill(~causal, 0.0).amax(dim=(0, 2, 3)))
    return torch.stack(tops)


def test_qk_clip_scales_each_head_above_tau_down_to_tau() -> None:
    """After a training pass QK-Clip multiplies the query and key rows of each head whose largest
    causal logit S on that batch exceeded tau by sqrt(tau / S) (Kimi K2's rule), and changes no
    other weight: block 0, whose input the clip does not change, then reaches tau exactly in
    every clipped head on the same batch."""
    model = perturbed(GPT(small("rms", qk_norm="clip"), seed=0), scale=1.0).double()
    idx = torch.randint(256, (2, 8), generator=torch.Generator().manual_seed(4))
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    tops = causal_tops(model.config, before, idx)
    tau = float(tops[0].min() + tops[0].max()) / 2  # some heads of block 0 above it, some not
    with torch.no_grad():
        model(idx)  # an evaluation pass reads nothing
    qk_clip(model, tau)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    model(idx)  # a training pass
    qk_clip(model, tau)
    after = model.state_dict()
    d, d_head = SMALL["n_embd"], SMALL["n_embd"] // SMALL["n_head"]
    for i, gamma in enumerate((tau / tops).clamp(max=1.0).sqrt()):
        rows = torch.cat([gamma.repeat_interleave(d_head)] * 2 + [torch.ones(d, dtype=gamma.dtype)])
        name = f"blocks.{i}.attn.c_attn.weight"
        np.testing.assert_allclose(after[name], before[name] * rows[:, None], rtol=1e-14)
    assert all(torch.equal(v, before[k]) for k, v in after.items() if "c_attn" not in k)
    assert 0 < int((tops[0] > tau).sum()) < SMALL["n_head"]
    expected = tops[0].clamp(max=tau)
    np.testing.assert_allclose(causal_tops(model.config, after, idx)[0], expected, rtol=1e-12)


def test_a_training_step_clips_with_qk_clip_only() -> None:
    base = TrainConfig(model=small("rms"), steps=3, eval_every=3, timing_repeats=0, lr=0.1)
    plain = train(base)
    clipped = train(replace(base, model=replace(base.model, qk_norm="clip"), tau=1e-3))
    loose = train(replace(base, model=replace(base.model, qk_norm="clip"), tau=1e6))
    assert loose.val_loss == plain.val_loss and loose.val_max_logit == plain.val_max_logit
    assert clipped.val_max_logit[0] == plain.val_max_logit[0]  # before any step
    assert clipped.val_max_logit[-1] < plain.val_max_logit[-1] / 5
    for tau in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="tau must be a finite number > 0"):
            replace(base, tau=tau)


def test_the_probe_ignores_future_pairs_and_adds_up_every_pass() -> None:
    """Block 0 sees two tokens whose only non-zero query-key product is a future pair (query
    at position 0, key at position 1): its largest causal logit is 0."""
    model = GPT(small("rms"), seed=0)
    with torch.no_grad():
        model.wpe.weight.zero_()
        model.wte.weight.zero_()
        model.wte.weight[1, 0] = 1.0  # token 1: along coordinate 0
        model.wte.weight[2, 1] = 1.0  # token 2: along coordinate 1
        w = model.blocks[0].attn.c_attn.weight
        w.zero_()
        w[0, 0] = 1.0  # head 0's first query coordinate reads coordinate 0
        w[SMALL["n_embd"], 1] = 1.0  # head 0's first key coordinate reads coordinate 1
    idx = torch.tensor([[1, 2]])
    sd = {k: v.detach() for k, v in model.state_dict().items()}
    h = norm_of("rms", sd["wte.weight"][idx], sd, "blocks.0.ln_1", model.config.eps)
    q, k, _ = queries_keys(model.config, sd, "blocks.0", h)
    products = (q @ k.transpose(-1, -2))[0, 0]  # head 0: (t, t)
    assert float(products[0, 1]) > 1.0 and float(products.tril().abs().max()) == 0.0
    with probe(model) as reading:
        model(idx)
    assert reading.logits[0] == 0.0
    with probe(model) as reading:
        model(idx)
        model(idx)
    assert len(reading.logits) == 2 * SMALL["n_layer"]
    assert reading.counts == [2 * idx.numel() * SMALL["n_embd"]] * (SMALL["n_layer"] + 1)


def test_post_norm_streams_leave_each_block_normalised() -> None:
    model = GPT(small("rms", placement="post", eps=1e-12), seed=0)
    idx = torch.randint(256, (4, 8), generator=torch.Generator().manual_seed(7))
    with probe(model) as reading:
        model(idx)
    rms = reading.hidden_rms()
    assert rms[0] < 0.1  # the embedding: N(0, 0.02) rows
    np.testing.assert_allclose(rms[1:], 1.0, rtol=1e-5)  # RMSNorm with gains 1 at the end


# --- describe, checkpoints, configs -------------------------------------------------------------


@pytest.mark.parametrize(("norm", "placement", "qk_norm"), COMBOS)
def test_describe_lists_exactly_the_norms_that_exist(norm, placement, qk_norm) -> None:
    config = small(norm, placement=placement, qk_norm=qk_norm)
    info, model = describe(config), GPT(config)
    layers = info["norm_layers"]
    assert [n["name"] for n in layers] == [name for name, _ in model.norms()]
    assert [n["where"] for n in layers] == [m.where for _, m in model.norms()]
    assert [n["class"] for n in layers] == [NORM_CLASSES[m.kind] for _, m in model.norms()]
    assert ("final" in [n["where"] for n in layers]) == (placement != "post")
    state = model.state_dict()
    for layer in layers:
        params = {k.rsplit(".", 1)[1] for k in state if k.startswith(layer["name"] + ".")}
        assert params == set(layer["params"])
    assert (info["placement"], info["qk_norm"], info["dyt_alpha"]) == (placement, qk_norm, 0.5)
    assert f"{placement}-norm" in info["architecture"]


@pytest.mark.parametrize(
    "config",
    [
        small("dyt", placement="peri", qk_norm="layer", dyt_alpha=0.75),
        small("rms", placement="post", qk_norm="rms"),
    ],
)
def test_new_fields_round_trip_through_checkpoint_and_config(tmp_path, config) -> None:
    model = perturbed(GPT(config, seed=1))
    path = tmp_path / "m.safetensors"
    save_checkpoint(model, path)
    loaded, stored = load_checkpoint(path)
    assert loaded.config == config
    assert read_config(path)["model"]["placement"] == config.placement
    idx = torch.randint(256, (2, 8), generator=torch.Generator().manual_seed(0))
    assert torch.equal(loaded(idx)[0], model.eval()(idx)[0])
    train_config = TrainConfig(model=config, steps=3)
    assert TrainConfig.from_dict(json.loads(json.dumps(train_config.as_dict()))) == train_config


def test_an_old_config_without_the_new_fields_reads_as_todays_model() -> None:
    old = TrainConfig().as_dict()
    old["model"] = {
        k: v for k, v in old["model"].items() if k not in ("placement", "qk_norm", "dyt_alpha")
    }
    config = TrainConfig.from_dict(old)
    assert (config.model.placement, config.model.qk_norm, config.model.dyt_alpha) == (
        "pre",
        "off",
        0.5,
    )
    assert config == TrainConfig()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (dict(norm="batch"), r"norm must be one of \['layer', 'rms', 'none', 'dyt', 'derf'\]"),
        (
            dict(placement="middle"),
            r"placement must be one of \['pre', 'post', 'peri', 'output', 'scaled'\]",
        ),
        (dict(placement=None), r"placement must be one of"),
        (dict(qk_norm="dyt"), r"qk_norm must be one of \['off', 'rms', 'layer', 'clip'\]"),
        (dict(qk_norm=True), r"qk_norm must be one of"),
        (dict(dyt_alpha=0.0), r"dyt_alpha must be a finite number > 0"),
        (dict(dyt_alpha=float("nan")), r"dyt_alpha must be a finite number > 0"),
        (dict(dyt_alpha="0.5"), r"dyt_alpha must be a finite number > 0"),
        (dict(dyt_alpha=True), r"dyt_alpha must be a finite number > 0"),
    ],
)
def test_bad_values_name_the_field_and_what_is_allowed(bad: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        replace(small(), **bad)
