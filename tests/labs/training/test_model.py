"""labs.training.model: the forward pass against a plain implementation (tests/model_util.py),
the norm layers being the ones named, shared initial weights, and gradients through the core's
norms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from labs.training.model import (
    GPT,
    MODEL_NORMS,
    NORM_CLASSES,
    ModelConfig,
    Norm,
    describe,
    norms_bypassed,
)
from tests.model_util import perturbed, record_io, reference_forward

SMALL = dict(n_layer=2, n_head=4, n_embd=32, block_size=16)


def small(norm: str, **overrides) -> ModelConfig:
    return ModelConfig(norm=norm, **{**SMALL, **overrides})


@pytest.mark.parametrize("norm", MODEL_NORMS)
def test_forward_matches_plain_implementation_float64(norm: str) -> None:
    config = small(norm)
    model = perturbed(GPT(config, seed=0), scale=0.1).double()
    idx = torch.randint(256, (3, config.block_size), generator=torch.Generator().manual_seed(1))
    logits, _ = model(idx)
    sd = {k: v.detach() for k, v in model.state_dict().items()}
    expected, _ = reference_forward(config, sd, idx)
    np.testing.assert_allclose(logits.detach().numpy(), expected.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm", MODEL_NORMS)
def test_forward_matches_plain_implementation_float32_with_loss(norm: str) -> None:
    config = small(norm)
    model = perturbed(GPT(config, seed=0), scale=0.1)
    gen = torch.Generator().manual_seed(2)
    idx = torch.randint(256, (2, 11), generator=gen)  # shorter than block_size
    targets = torch.randint(256, (2, 11), generator=gen)
    logits, loss = model(idx, targets)
    sd = {k: v.detach() for k, v in model.state_dict().items()}
    expected, _ = reference_forward(config, sd, idx)
    # float32 through two blocks: differences of a few ulps of the logits' size.
    np.testing.assert_allclose(logits.detach().numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
    expected_loss = F.cross_entropy(expected.reshape(-1, 256), targets.reshape(-1))
    np.testing.assert_allclose(loss.item(), expected_loss.item(), rtol=1e-6)


def test_each_variant_norm_is_the_one_named() -> None:
    idx = torch.randint(256, (2, 16), generator=torch.Generator().manual_seed(3))
    for norm in MODEL_NORMS:
        model = GPT(small(norm), seed=0).double()
        seen = record_io(model, idx, dict(model.norms()))
        assert len(seen) == 2 * SMALL["n_layer"] + 1
        for name, (x, y) in seen.items():
            row_mean = y.mean(-1).abs().max().item()
            row_rms = y.pow(2).mean(-1).sqrt()
            if norm == "layer":
                assert row_mean < 1e-12, name  # LayerNorm centres every row
            elif norm == "dyt":
                # Fresh DyT: alpha 0.5, gain 1, bias 0.
                np.testing.assert_allclose(y.numpy(), torch.tanh(0.5 * x).numpy(), rtol=1e-15)
            elif norm == "derf":
                # Fresh Derf: alpha 0.5, shift 0, gain 1, bias 0.
                np.testing.assert_allclose(y.numpy(), torch.erf(0.5 * x).numpy(), rtol=1e-15)
            elif norm == "rms":
                # The embeddings' rows have a mean of about 1/sqrt(d) once divided by their RMS.
                assert row_mean > 0.05, name
                # RMS of the output: sqrt(ms / (ms + eps)) with ms the input's mean square.
                ms = x.pow(2).mean(-1)
                expected = (ms / (ms + model.config.eps)).sqrt()
                np.testing.assert_allclose(row_rms.numpy(), expected.numpy(), rtol=1e-12)
            else:
                assert torch.equal(x, y), name


@pytest.mark.parametrize("offset", [3.0, -7.5])
def test_layer_norm_rows_mean_zero_rms_norm_rows_not(offset: float) -> None:
    x = torch.randn(5, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    x = x + offset
    layer = Norm("layer", 32, 1e-5, "pre-attention").double()
    rms = Norm("rms", 32, 1e-5, "pre-attention").double()
    np.testing.assert_allclose(layer(x).mean(-1).detach().numpy(), 0.0, atol=1e-12)
    # RMSNorm keeps the offset's direction: the rows' mean is mu / RMS, near sign(offset).
    expected = (x.mean(-1) / x.pow(2).mean(-1).add(1e-5).sqrt()).numpy()
    np.testing.assert_allclose(rms(x).mean(-1).detach().numpy(), expected, rtol=1e-12)
    assert np.all(np.abs(expected) > 0.9)


def test_norm_layers_against_torch_functional() -> None:
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(4, 7, 24, generator=gen)
    for kind, functional in (
        ("rms", lambda m: F.rms_norm(x, (24,), m.weight, m.eps)),
        ("layer", lambda m: F.layer_norm(x, (24,), m.weight, m.bias, m.eps)),
    ):
        m = Norm(kind, 24, 1e-4, "final")
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(torch.randn(p.shape, generator=gen))
        torch.testing.assert_close(m(x), functional(m), rtol=1e-5, atol=1e-6)


def test_same_initial_weights_wherever_shapes_agree() -> None:
    states = {norm: GPT(small(norm), seed=7).state_dict() for norm in MODEL_NORMS}
    shared = set(states["none"])
    assert shared < set(states["rms"]) < set(states["layer"])
    for name in shared:
        for norm in ("rms", "layer"):
            assert torch.equal(states[norm][name], states["none"][name]), (norm, name)
    for name in set(states["rms"]) - shared:
        assert torch.equal(states["rms"][name], states["layer"][name]), name
        assert torch.equal(states["rms"][name], torch.ones(SMALL["n_embd"]))
    # DyT: LayerNorm's gains and biases, plus an alpha of 0.5 per layer; the rest the same.
    assert set(states["layer"]) < set(states["dyt"])
    for name in set(states["layer"]):
        assert torch.equal(states["dyt"][name], states["layer"][name]), name
    alphas = set(states["dyt"]) - set(states["layer"])
    assert len(alphas) == 2 * SMALL["n_layer"] + 1
    assert all(torch.equal(states["dyt"][name], torch.tensor([0.5])) for name in alphas)
    other = GPT(small("rms"), seed=8).state_dict()
    assert not torch.equal(other["wte.weight"], states["rms"]["wte.weight"])


def test_init_scales_follow_nanogpt() -> None:
    model = GPT(small("rms", n_embd=64, n_layer=4), seed=0)
    sd = model.state_dict()
    np.testing.assert_allclose(sd["blocks.0.mlp.c_fc.weight"].std().item(), 0.02, rtol=0.05)
    residual = 0.02 / math.sqrt(2 * 4)
    np.testing.assert_allclose(sd["blocks.3.attn.c_proj.weight"].std().item(), residual, rtol=0.1)


def test_norms_bypassed_gives_identity_and_restores() -> None:
    model = perturbed(GPT(small("layer"), seed=0), scale=0.1)
    idx = torch.randint(256, (1, 16), generator=torch.Generator().manual_seed(9))
    before, _ = model(idx)
    with norms_bypassed(model):
        bypassed, _ = model(idx)
        assert all(m.bypass for _, m in model.norms())
    reference = GPT(small("none"))
    reference.load_state_dict(model.state_dict(), strict=False)
    expected, _ = reference(idx)
    torch.testing.assert_close(bypassed, expected, rtol=0, atol=0)
    after, _ = model(idx)
    torch.testing.assert_close(after, before, rtol=0, atol=0)
    assert not torch.equal(before, bypassed)


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_gradients_through_core_norms_match_autograd_of_plain_model(norm: str) -> None:
    config = small(norm)
    model = perturbed(GPT(config, seed=0), scale=0.1).double()
    gen = torch.Generator().manual_seed(10)
    idx, targets = (torch.randint(256, (2, 16), generator=gen) for _ in range(2))
    _, loss = model(idx, targets)
    loss.backward()
    sd = {k: v.detach().clone().requires_grad_(True) for k, v in model.state_dict().items()}
    expected = F.cross_entropy(
        reference_forward(config, sd, idx)[0].reshape(-1, 256), targets.ravel()
    )
    expected.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), sd[name].grad.numpy(), rtol=1e-8, atol=1e-12)


def test_describe_names_every_norm_and_its_place() -> None:
    for norm in MODEL_NORMS:
        config = small(norm, eps=1e-6)
        info = describe(config)
        model = GPT(config)
        assert info["norm_class"] == NORM_CLASSES[norm]
        assert info["eps"] == 1e-6
        assert [n["name"] for n in info["norm_layers"]] == [name for name, _ in model.norms()]
        assert [n["where"] for n in info["norm_layers"]] == [m.where for _, m in model.norms()]
        assert [n["where"] for n in info["norm_layers"]][-1] == "final"
        state = model.state_dict()
        for layer in info["norm_layers"]:
            params = {k.rsplit(".", 1)[1] for k in state if k.startswith(layer["name"] + ".")}
            assert params == set(layer["params"])


@pytest.mark.parametrize(
    "bad",
    [
        dict(norm="batch"),
        dict(n_embd=30, n_head=4),
        dict(n_layer=0),
        dict(eps=0.0),
        dict(eps=float("nan")),
        dict(block_size=True),
    ],
)
def test_model_config_rejects_bad_values(bad: dict) -> None:
    with pytest.raises(ValueError):
        ModelConfig(**{**SMALL, **bad})


def test_sequence_longer_than_block_size_is_refused() -> None:
    model = GPT(small("rms"), seed=0)
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, SMALL["block_size"] + 1, dtype=torch.long))
