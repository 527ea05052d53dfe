"""The speed lab's kernels: what one timed call runs, by id, in one table (:func:`kernel_table`).

Each norm is written two ways. **composite** is the textbook formula as separate whole-tensor
operations (square, mean, add, rsqrt, multiply, multiply), each a pass over memory with its own
temporary; **fused** reads each row once, normalises it while it sits in cache and writes it
once (``core.fast``'s numba kernels on the CPU, torch's own on CUDA). A plain copy of the same
tensor is the floor: on torch's CPU a copy into memory allocated as the fused kernels' outputs
are. pRMSNorm takes its RMS from the first ceil(p d) coordinates."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS
from core.norms import mean_square, rms_denominator

# The p of the sweep: halvings from the paper's 6.25 % up to the full RMS.
PARTIALS = (0.0625, 0.125, 0.25, 0.5, 1.0)
# p * d is rounded to this many decimals before ceil, as core.norms does.
_PARTIAL_DECIMALS = 9

# The kernels, in the order they are plotted and listed.
KERNELS = ("copy", "rms_composite", "layer_composite", "rms_fused", "layer_fused")


def partial_size(p: float, d: int) -> int:
    """pRMSNorm's k: the first ceil(p d) coordinates, at least 1 (as ``core.norms`` takes)."""
    return min(d, max(1, math.ceil(round(p * d, _PARTIAL_DECIMALS))))


# A kernel builder takes the tensors (x, weight, bias) and returns the zero-argument call timed.
Builder = Callable[[Any, Any, Any], Callable[[], Any]]


@dataclass(frozen=True)
class Kernel:
    """One timed case: ``label`` names its text on the page (``speed.kernel_<label>``)."""

    label: str
    build: Builder


def _numpy_rms(x: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """RMSNorm as separate numpy passes, the RMS from the first k coordinates."""
    return x / rms_denominator(x[..., :k], DEFAULT_RMS_EPS) * w  # (b, k) -> (b, 1)


def _numpy_layer(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """LayerNorm as separate numpy passes: its std is the RMS of the centred x."""
    centred = x - np.mean(x, axis=-1, keepdims=True)  # (b, d) -> (b, 1)
    return centred / rms_denominator(centred, DEFAULT_LAYER_EPS) * w + b


def _torch_partial(x: Any, w: Any, k: int) -> Any:
    """pRMSNorm written as ``core.fast``'s composite RMSNorm is, the statistic from k columns."""
    import torch

    return x * torch.rsqrt(mean_square(x[..., :k]) + DEFAULT_RMS_EPS) * w  # (b, k) -> (b, 1)


def _torch_norm(kind: str, technique: str, device: str) -> Builder:
    """``core.fast.KERNELS[(kind, technique)]``; on a GPU the fused ones are torch's own (the
    fused core kernels run on the CPU)."""
    eps = DEFAULT_RMS_EPS if kind == "rms" else DEFAULT_LAYER_EPS
    if technique == "fused" and device != "cpu":
        import torch.nn.functional as F

        if kind == "rms":
            return lambda x, w, b: lambda: F.rms_norm(x, (x.shape[-1],), w, eps)
        return lambda x, w, b: lambda: F.layer_norm(x, (x.shape[-1],), w, b, eps)
    from core.fast import KERNELS

    kernel = KERNELS[(kind, technique)]
    if kind == "rms":
        return lambda x, w, b: lambda: kernel(x, w, None, eps)
    return lambda x, w, b: lambda: kernel(x, w, b, eps)


def _fresh_copy(x: Any, w: Any, b: Any) -> Callable[[], Any]:
    """A copy of x into memory allocated as the CPU's fused kernels allocate their outputs
    (``core.fast.fresh``: huge pages for a large one), so that the floor pays what they pay."""
    from core.fast import fresh

    return lambda: fresh(x.shape, x.dtype).copy_(x)


def kernel_table(implementation: str, device: str) -> dict[str, Kernel]:
    """The kernels a run times, by id (``KERNELS`` order): numpy has only composites."""
    if implementation == "numpy":
        builders: dict[str, Builder] = {
            "copy": lambda x, w, b: x.copy,
            "rms_composite": lambda x, w, b: lambda: _numpy_rms(x, w, x.shape[-1]),
            "layer_composite": lambda x, w, b: lambda: _numpy_layer(x, w, b),
        }
        return {name: Kernel(name, build) for name, build in builders.items()}
    table = {"copy": Kernel("copy", lambda x, w, b: x.clone)}
    if device == "cpu":
        table["copy"] = Kernel("copy_fresh", _fresh_copy)
    for name in KERNELS[1:]:
        kind, technique = name.split("_")
        # A GPU's fused kernels are torch's: their own label says so.
        label = f"{name}_torch" if technique == "fused" and device != "cpu" else name
        table[name] = Kernel(label, _torch_norm(kind, technique, device))
    return table


def partial_kernels(implementation: str, d: int) -> dict[float, Builder]:
    """pRMSNorm as a composite, one builder per p (p = 1 is the full RMS)."""
    rms = _numpy_rms if implementation == "numpy" else _torch_partial

    def builder(k: int) -> Builder:
        return lambda x, w, b: lambda: rms(x, w, k)

    return {p: builder(partial_size(p, d)) for p in PARTIALS}


def seeded_tensors(
    implementation: str, device: str, dtype: str, batch: int, width: int, seed: int
) -> tuple[Any, Any, Any]:
    """x (batch, width), weight and bias (width,), seeded, on the device, in ``dtype``."""
    rng = np.random.default_rng([seed, batch, width])
    arrays = [rng.standard_normal(shape).astype(dtype) for shape in ((batch, width), width, width)]
    if implementation == "numpy":
        return tuple(arrays)
    import torch

    return tuple(torch.from_numpy(a).to(device) for a in arrays)
