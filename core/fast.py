"""Fast RMSNorm and LayerNorm over the last dimension, for the speed lesson.

Both functions return the same numbers as ``torch.nn.functional.rms_norm`` and
``torch.nn.functional.layer_norm`` (normalized over the last dimension only) and differ only in
how much memory traffic they cost on a CPU. ``python -m core.bench`` measures them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# RMSNorm in LLaMA and T5 style models ships with eps = 1e-6; nn.LayerNorm's default is 1e-5.
RMS_NORM_EPS = 1e-6
LAYER_NORM_EPS = 1e-5

_FAST_DTYPES = (torch.float32, torch.float64)


def _takes_fast_path(x: torch.Tensor, weight: torch.Tensor | None) -> bool:
    """Whether the CPU two-pass path applies; otherwise ``F.rms_norm`` does the work.

    The fast path updates tensors in place, which autograd cannot always replay, so inputs that
    need gradients go to ``F.rms_norm``, and so do mixed dtypes, and devices and dtypes where
    PyTorch already fuses the work.
    """
    if x.device.type != "cpu" or x.dtype not in _FAST_DTYPES:
        return False
    if weight is not None and (weight.dtype != x.dtype or weight.device != x.device):
        return False
    needs_grad = x.requires_grad or (weight is not None and weight.requires_grad)
    return not (torch.is_grad_enabled() and needs_grad)


def rms_norm_fast(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    eps: float = RMS_NORM_EPS,
) -> torch.Tensor:
    r"""RMSNorm over the last dimension with one fresh output tensor and no full-size temporary.

    .. math::
        y = \frac{x}{\sqrt{\frac{1}{d}\sum_{i=1}^{d} x_i^2 + \epsilon}} \odot w

    Pass structure on CPU, for float32 (4 bytes per element): pass 1 reduces each row to its
    norm with ``torch.linalg.vector_norm``, reading ``x`` (4 B) and writing only one number per
    row; pass 2 writes ``x * scale`` into the output (read 4 B, write 4 B); with a weight, pass 3
    multiplies the output by it in place (read 4 B, write 4 B). That is 12 B per element without a
    weight and 20 B with one, against 8 B for a copy, and exactly one freshly allocated
    full-size tensor, as in a copy. On a CPU the first write into fresh memory costs a page fault
    per 4 KiB page, which makes up about three quarters of ``x.clone()`` at (4096, 4096), so the
    allocation, not the extra passes, dominates: with a weight this path measures 1.2x to 1.35x
    a copy on the 2-core machine it was measured on.
    ``F.rms_norm`` on CPU is a composite (pow, mean, add, rsqrt, mul, mul) that allocates two
    full-size tensors and reads or writes 28 B per element, about 3.5x a copy.

    Cache-blocked rows (both passes on a block of rows while it sits in cache, so ``x`` is read
    once from memory) were measured and rejected: 5 to 10% faster on an idle 2-core machine and
    no faster with cheap (huge-page) allocation, but 1.5x to 8x slower than this path while other
    processes compete for the two cores, because every block adds three thread barriers.

    On CUDA, for other dtypes, or when autograd must record the operation, this calls
    ``F.rms_norm``, which is fused or differentiable there.

    Args:
        x: input of shape (..., d).
        weight: optional gain of shape (d,).
        eps: added to the mean square before the square root.

    Returns:
        Tensor of the shape and dtype of ``x``.
    """
    if x.dim() == 0:
        raise ValueError("rms_norm_fast needs at least one dimension to normalize over")
    d = x.shape[-1]
    if weight is not None and weight.shape != (d,):
        raise ValueError(f"weight must have shape ({d},), got {tuple(weight.shape)}")
    if not _takes_fast_path(x, weight):
        return F.rms_norm(x, (d,), weight, eps)
    return _rms_two_pass(x, weight, eps)[0]


def _rms_two_pass(
    x: torch.Tensor, weight: torch.Tensor | None, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fast path itself; also returns the per-row scale 1/RMS, shape (..., 1), so a caller
    can tell a finite result from one that met inf or nan without another pass over x."""
    # The norm, squared, is the sum of squares without a squared temporary; dividing it by d
    # gives the mean square that F.rms_norm uses, so results agree to rounding.
    norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)  # (..., d) -> (..., 1)
    scale = norm.square_().div_(x.shape[-1]).add_(eps).rsqrt_()
    y = x * scale
    if weight is not None:
        # Same order as F.rms_norm, (x * scale) * weight, and in place: no second output.
        y.mul_(weight)
    return y, scale


def plain_rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor | None:
    """``rms_norm_fast`` for ``core.norms``: None when the fast path does not apply or when a
    row's statistic is not a positive finite number (nan or inf in x, or an overflow), so the
    general path can raise or report exactly what happened."""
    if eps <= 0 or x.dim() == 0 or x.shape[-1] == 0 or not _takes_fast_path(x, weight):
        return None
    y, scale = _rms_two_pass(x, weight, eps)
    # With eps > 0 the scale is at most 1/sqrt(eps); it is 0 only if the sum of squares is
    # inf and nan only if x holds a nan.
    return y if bool(torch.isfinite(scale).all()) and bool((scale > 0).all()) else None


def plain_layer_norm(
    x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float
) -> torch.Tensor | None:
    """PyTorch's fused LayerNorm for ``core.norms``, None when it does not apply or when a row's
    mean or 1/std is not finite and positive (the general path then says why)."""
    if eps <= 0 or x.dim() == 0 or x.shape[-1] == 0 or x.dtype not in _FAST_DTYPES:
        return None
    if any(p is not None and (p.dtype != x.dtype or p.device != x.device) for p in (weight, bias)):
        return None
    # native_layer_norm is the kernel behind F.layer_norm; it also returns the row statistics.
    y, mean, rstd = torch.native_layer_norm(x, (x.shape[-1],), weight, bias, eps)
    ok = bool(torch.isfinite(mean).all()) and bool((rstd > 0).all() & torch.isfinite(rstd).all())
    return y if ok else None


def layer_norm_fast(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = LAYER_NORM_EPS,
) -> torch.Tensor:
    r"""LayerNorm over the last dimension, using PyTorch's fused kernel on every device.

    .. math::
        y = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} \odot w + b, \quad
        \mu = \frac{1}{d}\sum_{i=1}^{d} x_i, \quad
        \sigma^2 = \frac{1}{d}\sum_{i=1}^{d} (x_i - \mu)^2

    ``F.layer_norm`` is already one fused kernel on CPU and CUDA: it computes the mean and variance
    of a row and writes the output while that row is in cache, so each element is read once from
    main memory and written once, like a copy. A row-blocked eager version (mean, subtract,
    variance, scale, ``addcmul`` per block) measured about 20% slower at (4096, 4096) float32,
    because its five passes over each block cost more than the one fused loop.

    Args:
        x: input of shape (..., d).
        weight: optional gain of shape (d,).
        bias: optional shift of shape (d,).
        eps: added to the variance before the square root.

    Returns:
        Tensor of the shape and dtype of ``x``.
    """
    if x.dim() == 0:
        raise ValueError("layer_norm_fast needs at least one dimension to normalize over")
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)
