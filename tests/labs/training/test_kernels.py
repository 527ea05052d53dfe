"""labs.training.kernels: every kernel computes the "lab" kernel's function and gradients.

The fused autograd Functions are held to autograd's own numerical Jacobian in float64
(``torch.autograd.gradcheck``); in float32, forward outputs and the gradients of x, weight and
bias agree with the "lab" kernel (core.norms: separate operations for RMSNorm, PyTorch's fused
kernel for LayerNorm) to a tolerance relative to the largest value compared. This is the one
test module that calls the numba kernels (compiled on the first call, cached on disk).
"""

from __future__ import annotations

import pytest
import torch

from labs.training.kernels import KERNELS, norm_function
from labs.training.model import GPT, ModelConfig

WIDTHS = (1, 2, 48)
CASES = [("rms", False)] + [("layer", bias) for bias in (False, True)]
# float32 sums in another order than torch's: a few units of float32 rounding, times the width.
RTOL32 = 64 * torch.finfo(torch.float32).eps


def _inputs(d: int, bias: bool, dtype: torch.dtype, seed: int = 0):
    g = torch.Generator().manual_seed(seed + d)
    x = (3 * torch.randn(2, 3, d, generator=g, dtype=dtype) + 0.5).requires_grad_()
    weight = (1 + 0.5 * torch.randn(d, generator=g, dtype=dtype)).requires_grad_()
    b = torch.randn(d, generator=g, dtype=dtype).requires_grad_() if bias else None
    return x, weight, b


def _grads(kind: str, kernel: str, x, weight, bias, grad):
    y = norm_function(kind, kernel)(x, weight, bias, 1e-5)
    inputs = [x, weight] + ([bias] if bias is not None else [])
    return y, torch.autograd.grad(y, inputs, grad)


def test_the_kernels_are_lab_ops_and_fused() -> None:
    assert KERNELS == ("lab", "ops", "fused")
    with pytest.raises(ValueError, match="kernel must be one of"):
        norm_function("rms", "compiled")
    with pytest.raises(ValueError, match="kernel must be one of"):
        ModelConfig(kernel="compiled")


@pytest.mark.parametrize("d", WIDTHS)
@pytest.mark.parametrize(("kind", "bias"), CASES)
def test_the_fused_functions_pass_gradcheck_in_float64(kind: str, bias: bool, d: int) -> None:
    x, weight, b = _inputs(d, bias, torch.float64)
    fn = norm_function(kind, "fused")
    args = (x, weight) + ((b,) if b is not None else ())
    assert torch.autograd.gradcheck(
        lambda x, w, *rest: fn(x, w, rest[0] if rest else None, 1e-5), args
    )


def _scales(kind: str, x, weight, grad) -> dict[str, float]:
    """The size of the terms each compared value is a sum or difference of (float64): a
    gradient that cancels to rounding noise (d = 1, a row of equal values) is held to the
    rounding of its terms, not to its own size. dx = r (g w - ...), r = 1 / denominator; dw sums
    g x_hat over the rows, db sums g."""
    x, weight, grad = (t.detach().double() for t in (x, weight, grad))
    centred = x if kind == "rms" else x - x.mean(-1, keepdim=True)
    r = torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + 1e-5)  # (..., d) -> (..., 1)
    x_hat, gw = centred * r, (grad * weight).abs()
    return {
        "y": float((x_hat * weight).abs().max()),
        "dx": float((r * (gw + gw.mean(-1, keepdim=True))).max()),
        "dweight": float((grad.abs() * x_hat.abs()).sum((0, 1)).max()),
        "dbias": float(grad.abs().sum((0, 1)).max()),
    }


@pytest.mark.parametrize("kernel", ["ops", "fused"])
@pytest.mark.parametrize("d", WIDTHS)
@pytest.mark.parametrize(("kind", "bias"), CASES)
def test_each_kernel_agrees_with_lab_in_float32(kind: str, bias: bool, d: int, kernel: str) -> None:
    x, weight, b = _inputs(d, bias, torch.float32, seed=7)
    grad = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))
    want_y, want = _grads(kind, "lab", x, weight, b, grad)
    got_y, got = _grads(kind, kernel, x, weight, b, grad)
    assert got_y.dtype == torch.float32 and got_y.shape == x.shape
    scales = _scales(kind, x, weight, grad)
    names = ["dx", "dweight", "dbias"][: len(got)]
    for name, a, e in [("y", got_y, want_y), *zip(names, got, want, strict=True)]:
        atol = RTOL32 * (scales[name] or 1.0)
        torch.testing.assert_close(a, e, rtol=0, atol=atol, msg=f"{name} at d = {d}")


def test_a_model_with_each_kernel_computes_the_same_loss_and_gradients() -> None:
    """Two blocks of width 8, the same weights and batch: the losses agree to float32 rounding
    and so do the gradients of every weight."""
    x = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(1))
    results = {}
    for norm in ("rms", "layer"):
        for kernel in KERNELS:
            config = ModelConfig(
                norm=norm, n_layer=2, n_head=2, n_embd=8, block_size=16, kernel=kernel
            )
            model = GPT(config, seed=5)
            _, loss = model(x, x)
            loss.backward()
            results[(norm, kernel)] = (
                float(loss.detach()),
                {n: p.grad for n, p in model.named_parameters()},
            )
        lab_loss, lab_grads = results[(norm, "lab")]
        for kernel in ("ops", "fused"):
            loss, grads = results[(norm, kernel)]
            assert loss == pytest.approx(lab_loss, rel=1e-6)
            for name, g in grads.items():
                scale = float(lab_grads[name].abs().max()) or 1.0
                torch.testing.assert_close(g, lab_grads[name], rtol=0, atol=1e-4 * scale, msg=name)


def test_the_fused_kernels_take_a_strided_gradient_and_leave_inputs_alone() -> None:
    x, weight, b = _inputs(6, True, torch.float32)
    before = x.detach().clone()
    y = norm_function("layer", "fused")(x, weight, b, 1e-5)
    grad = torch.randn(6, 3, 2).transpose(0, 2)  # (2, 3, 6), not contiguous
    dx, dw, db = torch.autograd.grad(y, [x, weight, b], grad)
    _, (ex, ew, eb) = _grads("layer", "lab", x, weight, b, grad.contiguous())
    scales = _scales("layer", x, weight, grad)
    for name, a, e in (("dx", dx, ex), ("dweight", dw, ew), ("dbias", db, eb)):
        torch.testing.assert_close(a, e, rtol=0, atol=RTOL32 * scales[name], msg=name)
    assert torch.equal(x.detach(), before)
