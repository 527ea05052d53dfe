r"""Fast RMSNorm and LayerNorm on the CPU, and the table of kernels the speed lab times.

``KERNELS[(norm, technique)]`` is ``fn(x, weight, bias, eps) -> y`` on torch CPU tensors
(``weight``/``bias`` of shape (d,) or None). ``"composite"``: torch's eager operations, one
full-size temporary per step (``F.rms_norm`` on the CPU is exactly this). ``"fused"``: one numba
kernel (:mod:`core._fused`) that reads each row once and writes it once; float32 and float64 only,
outside autograd (a ``ValueError`` says so for anything else). ``core.rms_norm`` /
``core.layer_norm`` take the fused kernels on plain torch calls (:func:`plain_norm`) of at least
``FUSED_MIN_ELEMENTS``. docs/speed.md, "The kernels", says why numba, how its threads run, how
close both techniques come to PyTorch's kernels and the measurements behind the choices below."""

from __future__ import annotations

import functools
import math
import mmap
import os
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

FUSED_DTYPES = (torch.float32, torch.float64)

# Below this many elements (1 MiB of float32) the work takes well under a millisecond: a fused
# kernel runs in the calling thread, and the entry points leave such inputs to torch, so that a
# small call never pays numba's start (about a second, once per process).
FUSED_MIN_ELEMENTS = 1 << 18
# An output of at least STREAM_MIN_BYTES, in rows of at least STREAM_MIN_ROW_BYTES, that already
# exists or is on huge pages is written with non-temporal stores, which skip the read an ordinary
# store makes first (docs/speed.md, "Reads for ownership").
STREAM_MIN_BYTES = 1 << 23
STREAM_MIN_ROW_BYTES = 512
# A fresh output of at least HUGE_MIN_BYTES is a mapping of its own that the OS may back with
# transparent huge pages (:func:`fresh`): one fault per 2 MiB instead of 512 (docs/speed.md).
HUGE_PAGE = 1 << 21
HUGE_MIN_BYTES = 1 << 23
# Chunks per thread: enough that a thread slowed by another process leaves its share to the
# others, few enough that handing them out costs nothing next to a row's work.
_CHUNKS_PER_THREAD = 8
# numba's pool must not be entered from two threads at once, and the server calls from many.
_LOCK = threading.Lock()

Tensor = torch.Tensor
Param = torch.Tensor | None  # a weight or bias of shape (d,), or None
Kernel = Callable[[Tensor, Param, Param, float], Tensor]


@functools.cache
def available_cores() -> int:
    """Cores this process may run on: its CPU affinity, capped by a cgroup v2 CPU quota."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return cores
    if quota == "max":
        return cores
    return max(1, min(cores, math.ceil(int(quota) / int(period))))


# ---------------------------------------------------------------- composite (torch eager) -------


def composite_norm(kind: str, x: Tensor, weight: Param, bias: Param, eps: float) -> Tensor:
    """RMSNorm or LayerNorm from torch operations, each a full pass over x: F.rms_norm's CPU
    recipe (x * rsqrt(mean(x^2) + eps) * w), centred first for LayerNorm, plus the bias."""
    centred = x if kind == "rms" else x - x.mean(-1, keepdim=True)  # (..., d) - (..., 1)
    y = centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + eps)  # (..., d) -> (..., 1)
    y = y if weight is None else y * weight
    return y if bias is None else y + bias


# ---------------------------------------------------------------- fused (numba) -----------------


def fusable(x: Tensor, *params: Param) -> bool:
    """Whether the fused kernels take ``x`` with these weight/bias: a float32/float64 CPU tensor
    of shape (..., d) with d > 0, parameters of its dtype and shape (d,), and no autograd."""
    if x.device.type != "cpu" or x.dtype not in FUSED_DTYPES or x.dim() == 0 or x.shape[-1] == 0:
        return False
    d = x.shape[-1]
    for p in params:
        if p is not None and (p.dtype != x.dtype or p.device != x.device or p.shape != (d,)):
            return False
    needs_grad = any(t is not None and t.requires_grad for t in (x, *params))
    return not (torch.is_grad_enabled() and needs_grad)


def as_rows(t: Tensor, d: int | None = None) -> np.ndarray:
    """``t`` as a C-contiguous (n, d) numpy view, a copy only if ``t`` is strided."""
    return t.detach().contiguous().view(-1, t.shape[-1] if d is None else d).numpy()


def as_vector(p: Param) -> np.ndarray | None:
    return None if p is None else p.detach().contiguous().numpy()


def _launch(kind: str, *args: object, stream: bool) -> None:
    """Run the fused kernel of ``kind`` on ``args``: in this thread for a small input, else on
    this process's cores, one parallel launch at a time; ``stream``: non-temporal stores."""
    from core import _fused

    x = args[0]
    if x.size < FUSED_MIN_ELEMENTS or x.shape[0] == 1 or available_cores() == 1:
        (_fused.rms_serial if kind == "rms" else _fused.layer_serial)(*args, stream)
        return
    import numba

    with _LOCK:
        if "NUMBA_THREADING_LAYER" not in os.environ:
            # Threads that sleep between launches: OpenMP's spin-waiting threads would take
            # the cores from torch's own OpenMP pool right after each launch.
            numba.config.THREADING_LAYER = "workqueue"
        threads = min(available_cores(), numba.config.NUMBA_NUM_THREADS)
        numba.set_num_threads(threads)
        blocks = min(x.shape[0], threads * _CHUNKS_PER_THREAD)
        with numba.parallel_chunksize(1):  # one block at a time, to whichever thread is free
            (_fused.rms_parallel if kind == "rms" else _fused.layer_parallel)(*args, stream, blocks)


def fused_norm(
    kind: str, x: Tensor, weight: Param, bias: Param, eps: float, *, out: Tensor | None = None
) -> tuple[Tensor, tuple[np.ndarray, ...]]:
    """The fused kernel of ``kind`` ("rms" or "layer") and its per-row statistics.

    Returns ``y`` (``out`` when given, else :func:`fresh`) and, per row, ``(inv_rms,)`` for
    RMSNorm or ``(mean, rstd)`` for LayerNorm, so a caller can tell a finite result from one that
    met inf or nan without another pass over x. A large output is streamed
    (``STREAM_MIN_BYTES``): the same bits, no longer in cache."""
    if not fusable(x, weight, bias):
        raise ValueError(
            "the fused kernels take float32/float64 CPU tensors with weight and bias of the same "
            f"dtype and shape (d,), outside autograd (got x {x.dtype} on {x.device})"
        )
    if out is not None and not (
        out.shape == x.shape and out.dtype == x.dtype and out.is_contiguous() and fusable(out)
    ):
        raise ValueError(
            f"out must be a contiguous CPU tensor of x's shape {tuple(x.shape)} and dtype {x.dtype}"
        )
    d = x.shape[-1]
    xs = as_rows(x, d)
    stream = (
        (out is not None or _huge(xs.nbytes))
        and xs.nbytes >= STREAM_MIN_BYTES
        and xs.shape[1] * xs.itemsize >= STREAM_MIN_ROW_BYTES
    )
    out = fresh(x.shape, x.dtype) if out is None else out
    stats = tuple(np.empty(xs.shape[0], dtype=xs.dtype) for _ in range(1 if kind == "rms" else 2))
    args = (xs, as_vector(weight), as_vector(bias), float(eps), as_rows(out, d), *stats)
    _launch(kind, *args, stream=stream)
    return out, stats


def fresh(shape: tuple[int, ...], dtype: torch.dtype) -> Tensor:
    """An uninitialised CPU tensor: torch's own allocation, or for ``HUGE_MIN_BYTES`` or more on
    Linux, memory of its own mapping that the operating system may back with 2 MiB pages."""
    nbytes = math.prod(shape) * dtype.itemsize
    if not _huge(nbytes):
        return torch.empty(shape, dtype=dtype)
    # A private anonymous mapping (a shared one is backed by shmem, whose huge pages are off by
    # default), a huge page longer so that the data can start on a huge-page boundary.
    mapping = mmap.mmap(-1, nbytes + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    start = -np.frombuffer(mapping, dtype=np.uint8, count=1).ctypes.data % HUGE_PAGE
    mapping.madvise(mmap.MADV_HUGEPAGE, start, nbytes - nbytes % HUGE_PAGE or HUGE_PAGE)
    data = np.frombuffer(mapping, dtype=np.uint8, count=nbytes, offset=start)
    # The tensor holds the array, the array the mapping: the last of them to go unmaps it.
    return torch.from_numpy(data).view(dtype).view(shape)


def _huge(nbytes: int) -> bool:
    """Whether :func:`fresh` maps ``nbytes`` on its own, asking for huge pages."""
    return nbytes >= HUGE_MIN_BYTES and hasattr(mmap, "MADV_HUGEPAGE")


def fused(kind: str, x: Tensor, weight: Param, bias: Param, eps: float) -> Tensor:
    """The fused kernel's output alone."""
    return fused_norm(kind, x, weight, bias, eps)[0]


KERNELS: dict[tuple[str, str], Kernel] = {
    (kind, technique): functools.partial(compute, kind)
    for kind in ("rms", "layer")
    for technique, compute in (("composite", composite_norm), ("fused", fused))
}


# ---------------------------------------------------------------- core.norms' plain calls -------


def plain_norm(kind: str, x: Tensor, weight: Param, bias: Param, eps: float) -> Tensor | None:
    """The output for ``core.norms``' plain torch calls, or None for the general path.

    A large float32/float64 CPU input outside autograd takes the fused kernel. Otherwise a
    LayerNorm of float32/float64 tensors takes torch's own fused kernel (one autograd node, on
    any device), and an RMSNorm takes the general path, which is F.rms_norm's own composite on
    the CPU. None also when a row's statistic is not a positive finite number (nan or inf in x,
    an overflow), so that the general path can raise or report exactly what happened."""
    if not eps > 0 or x.dim() == 0 or x.shape[-1] == 0:
        return None
    if x.numel() >= FUSED_MIN_ELEMENTS and fusable(x, weight, bias):
        y, stats = fused_norm(kind, x, weight, bias, eps)
        return y if _positive_finite(stats[-1]) and bool(np.isfinite(stats[0]).all()) else None
    same = all(p is None or (p.dtype == x.dtype and p.device == x.device) for p in (weight, bias))
    if kind == "rms" or x.dtype not in FUSED_DTYPES or not same:
        return None
    # native_layer_norm is the kernel behind F.layer_norm; it also returns the row statistics.
    y, mean, rstd = torch.native_layer_norm(x, (x.shape[-1],), weight, bias, eps)
    ok = bool(torch.isfinite(mean).all()) and _positive_finite(rstd.detach().cpu().numpy())
    return y if ok else None


def _positive_finite(scale: np.ndarray) -> bool:
    # 1/RMS and 1/std are at most 1/sqrt(eps); 0 only if a sum overflowed, nan for nan in x.
    return bool(np.isfinite(scale).all() and (scale > 0).all())
