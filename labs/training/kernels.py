r"""How the training lab's norm layers compute: one function per (norm, kernel).

``norm_function(kind, kernel)`` returns ``fn(x, weight, bias, eps) -> y`` on torch tensors that
autograd differentiates (``bias`` None for RMSNorm, and may be None for LayerNorm). Every kernel
computes the same function; they differ in how many operations autograd records:

- ``"lab"``: what the shipped checkpoints were trained with, :func:`core.norms.rms_norm` and
  :func:`core.norms.layer_norm`: RMSNorm as separate torch operations, LayerNorm as PyTorch's
  fused kernel (so a step-time ratio measures implementations as much as norms);
- ``"ops"``: both as separate torch operations (:mod:`core.fast`'s "composite"; 6 and 9);
- ``"fused"``: both as one ``torch.autograd.Function``: forward :func:`core.fast.fused_norm`,
  backward the closed form of :mod:`labs.training.fused_backward`; float32/float64 CPU only.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import torch

from core.fast import composite_norm, fused_norm
from core.norms import layer_norm, rms_norm

NormFunction = Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None, float], torch.Tensor]


def _lab_rms(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, eps: float):
    return rms_norm(x, weight, eps=eps)


def _lab_layer(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, eps: float):
    return layer_norm(x, weight, bias, eps=eps)


def _rows(t: torch.Tensor) -> np.ndarray:
    """``t`` as a C-contiguous (n, d) numpy view (a copy only where ``t`` is strided)."""
    return t.detach().contiguous().view(-1, t.shape[-1]).numpy()


def _vector(t: torch.Tensor) -> np.ndarray:
    return t.detach().contiguous().numpy()


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
        rms_backward(
            _rows(x), _vector(weight), inv_rms.numpy(), _rows(grad), _rows(dx), dweight.numpy()
        )
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
        layer_backward(
            _rows(x), _vector(weight), mean.numpy(), rstd.numpy(), _rows(grad), _rows(dx), *sums
        )
        return dx, dweight, dbias, None


def _fused_rms(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, eps: float):
    return _FusedRMS.apply(x, weight, float(eps))


def _fused_layer(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, eps: float):
    return _FusedLayer.apply(x, weight, bias, float(eps))


def _ops_rms(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, eps: float):
    return composite_norm("rms", x, weight, None, eps)


_FUNCTIONS: dict[tuple[str, str], NormFunction] = {
    ("rms", "lab"): _lab_rms,
    ("layer", "lab"): _lab_layer,
    ("rms", "ops"): _ops_rms,
    ("layer", "ops"): functools.partial(composite_norm, "layer"),
    ("rms", "fused"): _fused_rms,
    ("layer", "fused"): _fused_layer,
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
