r"""How the training lab's norm layers compute: one function per (norm, kernel).

``norm_function(kind, kernel)`` returns ``fn(x, weight, bias, eps) -> y`` on torch tensors that
autograd differentiates (``bias`` is None for RMSNorm). The kernels:

- ``"lab"``: what the shipped checkpoints were trained with, :func:`core.norms.rms_norm` and
  :func:`core.norms.layer_norm` on a tensor that needs gradients: RMSNorm as separate torch
  operations, LayerNorm as PyTorch's one fused kernel. A step-time ratio between the two then
  measures two implementations as much as two norms.

Every kernel computes the same function; the kernels differ only in how many operations (and
passes over memory) autograd records.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from core.norms import layer_norm, rms_norm

__all__ = ["KERNELS", "NormFunction", "norm_function"]

NormFunction = Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None, float], torch.Tensor]


def _lab_rms(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, eps: float):
    return rms_norm(x, weight, eps=eps)


def _lab_layer(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, eps: float):
    return layer_norm(x, weight, bias, eps=eps)


_FUNCTIONS: dict[tuple[str, str], NormFunction] = {
    ("rms", "lab"): _lab_rms,
    ("layer", "lab"): _lab_layer,
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
