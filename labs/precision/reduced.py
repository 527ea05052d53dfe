"""Low-precision reductions: RMSNorm with its mean square in float32, float16 or bfloat16 against
float64, where float16 overflows, and sums of squares kept in a low precision.

:func:`running_sum_of_squares` replays a sum of squares whose running total is rounded to a low
precision after every step, the way a hand-written loop keeps it (torch's own half-precision
``sum`` and ``mean`` accumulate in float32, :func:`torch_half_sum_of_squares`)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core._backend import FLOAT_NAMES, HALF_NAMES
from core.device import torch_available
from core.messages import NormWarning
from core.norms import rms_norm_report

# The largest finite float16: (2 - 2^-10) * 2^15.
FLOAT16_MAX = 65504.0
# The smallest number that rounds to inf in float16: 65504 plus half its ulp (32 / 2); the tie
# rounds to the even neighbour, 2^16, which is out of range. A square at or above it is inf.
FLOAT16_INF_FROM = 65520.0
# The x at which float16's square turns inf: x rounds to 256 from 256 - 1/16 up (ties to the
# even 256), and 256^2 = 65536 >= 65520, while 255.875^2 = 65472 is finite.
FLOAT16_SQUARE_INF_X = 255.9375
# The smallest positive float16 (a subnormal), and the smallest normal one: below 2^-14 float16
# keeps fewer than 11 significant bits.
FLOAT16_TINY = 2.0**-24
FLOAT16_MIN_NORMAL = 2.0**-14
# bfloat16 keeps the top 16 bits of a float32; rounding to nearest even adds this before the cut.
_BF16_HALF_ULP = 0x7FFF
_BF16_MASK = np.uint32(0xFFFF0000)


@dataclass
class ReductionError:
    """One dtype's RMSNorm against the float64 one, per row of the input.

    ``mean_square``: the mean square the norm divided by, as computed in ``dtype`` (inf where it
    overflowed); ``mean_square_error``: its relative error; ``output_error``:
    ``||y - y_64|| / ||y_64||``; ``overflow``: rows whose mean square is not finite. All (S,)."""

    dtype: str
    mean_square: np.ndarray
    mean_square_error: np.ndarray
    output_error: np.ndarray
    overflow: np.ndarray


def reduction_error(
    x: np.ndarray, dtypes: Sequence[str], *, eps: float = 1e-6
) -> dict[str, ReductionError]:
    """RMSNorm of ``x`` (shape (S, d), float64) with the reduction in each of ``dtypes``.

    The input is rounded into the reduction dtype, squared, averaged, normalised and scaled there
    (as ``rms_norm(..., reduction_dtype=dtype)`` does), then compared with float64. float16 and
    bfloat16 need torch. Overflow is recorded in ``overflow``, not raised as a warning."""
    x = np.asarray(x, dtype=np.float64)
    for dtype in dtypes:
        if dtype not in FLOAT_NAMES:
            raise ValueError(f"dtypes must be among {list(FLOAT_NAMES)} (got {dtype!r})")
        if dtype in HALF_NAMES and not torch_available():
            raise ValueError(f"a {dtype} reduction needs torch, which is not installed")
    with warnings.catch_warnings():
        # Overflow and 0/0 are the lesson; they show in ``overflow`` and the errors instead.
        warnings.simplefilter("ignore", NormWarning)
        reference = rms_norm_report(x, eps=eps, reduction_dtype="float64")
        reports = {dtype: rms_norm_report(x, eps=eps, reduction_dtype=dtype) for dtype in dtypes}
    y_ref = reference.output
    ms_ref = reference.mean_square[..., 0]
    ref_norm = np.linalg.norm(y_ref, axis=-1)  # (S, d) -> (S,)
    out: dict[str, ReductionError] = {}
    for dtype, rep in reports.items():
        y = np.asarray(rep.output, dtype=np.float64)
        ms = rep.mean_square[..., 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            ms_err = np.abs(ms - ms_ref) / ms_ref
            out_err = np.linalg.norm(y - y_ref, axis=-1) / ref_norm  # (S, d) -> (S,)
        out[dtype] = ReductionError(
            dtype=dtype,
            mean_square=ms,
            mean_square_error=ms_err,
            output_error=out_err,
            overflow=~np.isfinite(ms),
        )
    return out


@dataclass(frozen=True)
class Float16Limits:
    """Input scales s at which ``s z`` overflows float16 (``z`` the unscaled input).

    ``square``: the largest square reaches 65520 and rounds to inf (a mean accumulated in
    float32, as torch's kernels do, overflows here). ``sum``: the sum of squares reaches 65520
    (a sum whose result is float16, ``x.pow(2).sum()`` or a loop, overflows here)."""

    square: float
    sum: float


def _float16_sum_overflows(x: np.ndarray) -> bool:
    """Whether ``x.pow(2).sum()`` on a float16 copy of ``x`` is inf: each square rounded to
    float16, the sum kept in float32, the total rounded to float16 once (torch's reduction)."""
    with np.errstate(over="ignore"):
        squares = np.square(x.astype(np.float16)).astype(np.float32)
        total = np.sum(squares, dtype=np.float32)  # (d,) -> ()
        return not np.isfinite(np.float16(total))


def float16_overflow_scales(z: np.ndarray) -> Float16Limits:
    """The two overflow thresholds for the input ``s z``, shape of ``z`` (d,).

    ``square`` is exact (x rounds to 256 from ``FLOAT16_SQUARE_INF_X`` up); ``sum`` starts from
    the real-number estimate sqrt(65520 / sum z^2) and is refined by bisection on the float16
    arithmetic itself, since every square is rounded before it is summed."""
    z = np.asarray(z, dtype=np.float64)
    peak = float(np.max(np.abs(z)))
    if peak == 0:
        return Float16Limits(math.inf, math.inf)
    square = FLOAT16_SQUARE_INF_X / peak
    estimate = math.sqrt(FLOAT16_INF_FROM / float(np.sum(np.square(z))))  # (d,) -> ()
    lo, hi = 0.9 * estimate, min(1.1 * estimate, square)
    if _float16_sum_overflows(lo * z) or not _float16_sum_overflows(hi * z):
        return Float16Limits(square, estimate)
    for _ in range(40):  # (hi - lo) / estimate < 0.2 * 2^-40: far below 4 shown digits
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _float16_sum_overflows(mid * z) else (mid, hi)
    return Float16Limits(square, hi)


def round_bfloat16(a: np.ndarray) -> np.ndarray:
    """Round to the nearest bfloat16 (ties to even), returned as float32 values.

    bfloat16 is the upper half of a float32, so rounding adds half an ulp of the kept part (plus
    the lowest kept bit, for ties to even) and clears the lower 16 bits; inf stays inf and
    values beyond bfloat16's largest finite number become inf, as in torch."""
    bits = np.asarray(a, dtype=np.float32).view(np.uint32)
    lowest_kept = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(_BF16_HALF_ULP) + lowest_kept) & _BF16_MASK
    return rounded.view(np.float32)


def running_sum_of_squares(x: np.ndarray, dtype: str) -> np.ndarray:
    """Partial sums of ``x_i^2`` with every square and every partial sum rounded to ``dtype``.

    A hand-written loop's running total, not torch's reductions (see the module docstring).
    Shape (..., d) -> (..., d), float64 values, and a partial sum past the dtype's range is inf.
    Pure numpy: float16 is native, bfloat16 is emulated with :func:`round_bfloat16`."""
    if dtype not in FLOAT_NAMES:
        raise ValueError(f"dtype must be one of {list(FLOAT_NAMES)} (got {dtype!r})")
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype != "bfloat16":
            xs = x.astype(dtype)
            # add.accumulate stores each partial sum in the output dtype: one rounding per step.
            return np.add.accumulate(np.square(xs), axis=-1, dtype=dtype).astype(np.float64)
        squares = round_bfloat16(np.square(round_bfloat16(x)))
        sums = np.empty_like(squares)
        total = np.zeros(squares.shape[:-1], dtype=np.float32)
        for i in range(squares.shape[-1]):
            total = round_bfloat16(total + squares[..., i])
            sums[..., i] = total
    return sums.astype(np.float64)


def torch_half_sum_of_squares(x: np.ndarray, dtype: str) -> float:
    """``x.square().sum()`` on a ``dtype`` tensor, as torch computes it: the squares rounded to
    ``dtype``, accumulated in float32, the total rounded to ``dtype`` once."""
    import torch

    xt = torch.from_numpy(np.asarray(x, dtype=np.float64)).to(getattr(torch, dtype))
    return float(xt.square().sum())
