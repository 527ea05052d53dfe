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

# Rows are processed in blocks of about this many bytes. A block and its output block (8 MiB
# together) stay in the shared L3 cache (32 MiB on the 2-core reference machine, 8 MiB or more on
# common desktop and server CPUs) between the two passes, while each block still holds about
# 100 us of work, so the ~10 us of per-block dispatch stays a small fraction. Measured at
# (4096, 4096) float32: 4 MiB was fastest; 1 MiB blocks cost about 10% more and one block for the
# whole tensor about 5% more.
BLOCK_BYTES = 4 << 20

# Tensors up to this size go to F.rms_norm: its temporaries then come from heap memory that is
# already mapped and sits in cache, and its one call costs less than our dozen small ones.
# Measured for float32 on the reference machine: at 256 KiB F.rms_norm takes 25 us and the
# blocked path 38 us; at 1 MiB F.rms_norm takes 690 us (fresh pages for each temporary) and the
# blocked path 68 us.
SMALL_BYTES = 256 << 10

_BLOCKED_DTYPES = (torch.float32, torch.float64)


def _use_blocked_path(x: torch.Tensor, weight: torch.Tensor | None) -> bool:
    """Whether the hand-blocked CPU path applies; otherwise PyTorch's own kernel is used.

    ``out=`` writes do not record autograd history, so inputs that need gradients go to
    ``F.rms_norm``, and so do small tensors, mixed dtypes, and devices and dtypes where PyTorch
    already fuses the work.
    """
    if x.device.type != "cpu" or x.dtype not in _BLOCKED_DTYPES:
        return False
    if x.numel() * x.element_size() <= SMALL_BYTES:
        return False
    if weight is not None and (weight.dtype != x.dtype or weight.device != x.device):
        return False
    needs_grad = x.requires_grad or (weight is not None and weight.requires_grad)
    return not (torch.is_grad_enabled() and needs_grad)


def rms_norm_fast(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    eps: float = RMS_NORM_EPS,
    *,
    block_bytes: int = BLOCK_BYTES,
) -> torch.Tensor:
    r"""RMSNorm over the last dimension with one read of ``x`` from main memory.

    .. math::
        y = \frac{x}{\sqrt{\frac{1}{d}\sum_{i=1}^{d} x_i^2 + \epsilon}} \odot w

    Pass structure: on a CPU the rows are cut into blocks of about ``block_bytes``. For each block,
    pass 1 reduces every row to its sum of squares (``torch.linalg.vector_norm``, no temporary)
    and pass 2 writes ``x * scale`` (then ``* weight``) into the output while the block is still
    in cache. Each element is therefore read once from main memory and written once, the same
    traffic as a copy (8 bytes per float32 element). ``F.rms_norm`` on CPU is a composite of
    separate full-tensor kernels (pow, mean, add, rsqrt, mul, mul): four reads and three writes
    per element, two of the writes into freshly allocated memory, which is why it costs about
    three copies. On CUDA, for other dtypes, for tensors of at most ``SMALL_BYTES``, or when
    autograd must record the operation, this calls ``F.rms_norm``, which is fused, cheaper or
    differentiable there.

    Args:
        x: input of shape (..., d), float32 or float64 for the blocked path.
        weight: optional gain of shape (d,).
        eps: added to the mean square before the square root.
        block_bytes: approximate bytes of ``x`` handled per block on the blocked path.

    Returns:
        Tensor of the shape and dtype of ``x``.
    """
    if x.dim() == 0:
        raise ValueError("rms_norm_fast needs at least one dimension to normalize over")
    d = x.shape[-1]
    if weight is not None and weight.shape != (d,):
        raise ValueError(f"weight must have shape ({d},), got {tuple(weight.shape)}")
    if not _use_blocked_path(x, weight):
        return F.rms_norm(x, (d,), weight, eps)

    rows_2d = x.contiguous().view(-1, d)  # (..., d) -> (n, d)
    out = torch.empty_like(rows_2d)
    rows_per_block = max(1, block_bytes // max(1, d * x.element_size()))
    for start in range(0, rows_2d.shape[0], rows_per_block):
        block = rows_2d[start : start + rows_per_block]
        out_block = out[start : start + rows_per_block]
        # The norm, squared, is the sum of squares without a squared temporary; dividing it by d
        # gives the mean square that F.rms_norm uses, so results agree to rounding.
        norm = torch.linalg.vector_norm(block, dim=-1, keepdim=True)  # (b, d) -> (b, 1)
        scale = norm.square_().div_(d).add_(eps).rsqrt_()
        torch.mul(block, scale, out=out_block)
        if weight is not None:
            # Same order as F.rms_norm, (x * scale) * weight, on a block still in cache.
            out_block.mul_(weight)
    return out.view_as(x)


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
