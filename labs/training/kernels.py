r"""How the training lab's norm layers compute: one function per (norm, kernel).

``norm_function(kind, kernel)`` returns ``fn(x, weight, bias, eps) -> y`` on torch tensors that
autograd differentiates (``bias`` None for RMSNorm, and may be None for LayerNorm). Every kernel
computes the same function; they differ in how many operations autograd records:

- ``"lab"``: what the shipped checkpoints were trained with, :func:`core.norms.rms_norm` and
  :func:`core.norms.layer_norm`: RMSNorm as separate torch operations, LayerNorm as PyTorch's
  fused kernel (so a step-time ratio measures implementations as much as norms);
- ``"ops"``: both as separate torch operations (:mod:`core.fast`'s "composite"; 6 and 9);
- ``"fused"``: both as one ``torch.autograd.Function``: forward :func:`core.fast.fused_norm`,
  backward the closed form of :mod:`labs.training.fused_backward`; float32/float64 CPU only."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from core.fast import as_rows, as_vector, composite_norm, fused_norm
from core.norms import layer_norm, rms_norm

NormFunction = Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None, float], torch.Tensor]


class _FusedRMS(torch.autograd.Function):
    """RMSNorm through the fused numba kernels, forward and backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        y, (inv_rms,) = fused_norm("rms", x.detach(), weight.detach(), None, eps)
        ctx.save_for_backward(x, weight, torch.from_numpy(inv_rms))
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        from labs.training.fused_backward import rms_backward

        x, weight, inv_rms = ctx.saved_tensors
        dx, dweight = torch.empty(x.shape, dtype=x.dtype), torch.zeros_like(weight)
        rows, grads, dxs = (as_rows(t) for t in (x, grad, dx))
        rms_backward(rows, as_vector(weight), inv_rms.numpy(), grads, dxs, dweight.numpy())
        return dx, dweight, None


class _FusedLayer(torch.autograd.Function):
    """LayerNorm through the fused numba kernels, forward and backward; ``bias`` may be None."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps: float) -> torch.Tensor:
        detached = None if bias is None else bias.detach()
        y, (mean, rstd) = fused_norm("layer", x.detach(), weight.detach(), detached, eps)
        ctx.save_for_backward(x, weight, torch.from_numpy(mean), torch.from_numpy(rstd))
        ctx.has_bias = bias is not None
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        from labs.training.fused_backward import layer_backward

        x, weight, mean, rstd = ctx.saved_tensors
        dx, dweight = torch.empty(x.shape, dtype=x.dtype), torch.zeros_like(weight)
        dbias = torch.zeros_like(weight) if ctx.has_bias else None
        sums = (dweight.numpy(), None if dbias is None else dbias.numpy())
        rows, grads, dxs = (as_rows(t) for t in (x, grad, dx))
        layer_backward(rows, as_vector(weight), mean.numpy(), rstd.numpy(), grads, dxs, *sums)
        return dx, dweight, dbias, None


_FUNCTIONS: dict[tuple[str, str], NormFunction] = {
    ("rms", "lab"): lambda x, w, b, eps: rms_norm(x, w, eps=eps),
    ("layer", "lab"): lambda x, w, b, eps: layer_norm(x, w, b, eps=eps),
    ("rms", "ops"): lambda x, w, b, eps: composite_norm("rms", x, w, None, eps),
    ("layer", "ops"): functools.partial(composite_norm, "layer"),
    ("rms", "fused"): lambda x, w, b, eps: _FusedRMS.apply(x, w, float(eps)),
    ("layer", "fused"): lambda x, w, b, eps: _FusedLayer.apply(x, w, b, float(eps)),
}
KERNELS = tuple(dict.fromkeys(kernel for _, kernel in _FUNCTIONS))


def norm_function(kind: str, kernel: str = "lab") -> NormFunction:
    """The function that computes norm ``kind`` ("rms" or "layer") with ``kernel``."""
    try:
        return _FUNCTIONS[(kind, kernel)]
    except KeyError:
        raise ValueError(
            f"kernel must be one of {list(KERNELS)} for norm {kind!r} (got {kernel!r})"
        ) from None
