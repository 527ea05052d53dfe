r"""Epsilon and precision: how eps bends the output norm, and what low-precision sums do.

RMSNorm's output norm is :math:`\sqrt{d}` only while the mean square dominates eps:

.. math:: \lVert y \rVert_2 = \sqrt{d}\,\frac{r}{\sqrt{r^{2} + \epsilon}} \ \text{(inside)},
    \qquad \sqrt{d}\,\frac{r}{r + \epsilon} \ \text{(outside)}, \qquad r = \mathrm{RMS}(x)

The helpers here sweep that over input scales, measure a reduction done in float32, float16 or
bfloat16 against float64, and replay a sum of squares whose running total is rounded to a low
precision after every step (the way a hand-written loop or a naive kernel keeps it), which is
where float16 overflows at 65504 and bfloat16 stops growing.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core._backend import FLOAT_NAMES, HALF_NAMES
from core.device import torch_available
from core.inputs import make_input
from core.norms import NormWarning, rms_norm, rms_norm_report

NORM_FORMULA_INSIDE = r"\lVert y \rVert_2 = \sqrt{d}\,\frac{r}{\sqrt{r^{2} + \epsilon}}"
NORM_FORMULA_OUTSIDE = r"\lVert y \rVert_2 = \sqrt{d}\,\frac{r}{r + \epsilon}"

# The largest finite float16: (2 - 2^-10) * 2^15. A square or a sum above it is inf.
FLOAT16_MAX = 65504.0
# Placements whose knee has a closed form in the RMS alone ("clamp" also depends on d).
KNEE_PLACEMENTS = ("inside", "outside")
# bfloat16 keeps the top 16 bits of a float32; rounding to nearest even adds this before the cut.
_BF16_HALF_ULP = 0x7FFF
_BF16_MASK = np.uint32(0xFFFF0000)


def output_norm_vs_scale(
    d: int,
    scales: Sequence[float] | np.ndarray,
    eps_list: Sequence[float],
    *,
    placement: str = "inside",
    seed: int = 0,
) -> np.ndarray:
    """``||RMSNorm(s z)||_2`` for every eps and scale s, with ``z`` a seeded normal draw.

    One batched call per eps: the scaled inputs form a (S, d) matrix. Returns shape (E, S),
    float64.
    """
    scales = np.asarray(scales, dtype=np.float64)
    z = make_input(d, dist="normal", seed=seed)
    x = scales[:, None] * z[None, :]  # (S, d)
    norms = np.empty((len(eps_list), scales.size))
    for row, eps in enumerate(eps_list):
        y = rms_norm(x, eps=eps, eps_placement=placement)
        norms[row] = np.linalg.norm(y, axis=-1)  # (S, d) -> (S,)
    return norms


def eps_knee(eps: float, *, placement: str = "inside", rms: float = 1.0) -> float:
    r"""The input scale at which eps weighs as much as the statistic it is added to.

    Inside the root that is :math:`s^2 r^2 = \epsilon` (the output norm is then
    :math:`\sqrt{d/2}`); outside it is :math:`s r = \epsilon` (norm :math:`\sqrt{d}/2`). ``rms``
    is the RMS of the unscaled input.
    """
    if placement not in KNEE_PLACEMENTS:
        raise ValueError(f"placement must be one of {list(KNEE_PLACEMENTS)} (got {placement!r})")
    if eps < 0 or rms <= 0:
        raise ValueError(f"eps must be >= 0 and rms > 0 (got eps={eps}, rms={rms})")
    return math.sqrt(eps) / rms if placement == "inside" else eps / rms


@dataclass
class ReductionError:
    """One dtype's RMSNorm against the float64 one, per row of the input.

    ``mean_square``: the mean square the norm divided by, as computed in ``dtype`` (inf where it
    overflowed); ``mean_square_error``: its relative error; ``output_error``:
    ``||y - y_64|| / ||y_64||``; ``overflow``: rows whose mean square is not finite. All (S,).
    """

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
    bfloat16 need torch. Overflow is recorded in ``overflow``, not raised as a warning.
    """
    x = np.asarray(x, dtype=np.float64)
    for dtype in dtypes:
        if dtype not in FLOAT_NAMES:
            raise ValueError(f"dtypes must be among {list(FLOAT_NAMES)} (got {dtype!r})")
        if dtype in HALF_NAMES and not torch_available():
            raise ValueError(f"a {dtype} reduction needs torch, which is not installed")
    reference = rms_norm_report(x, eps=eps, reduction_dtype="float64")
    y_ref = reference.output
    ms_ref = reference.mean_square[..., 0]
    ref_norm = np.linalg.norm(y_ref, axis=-1)  # (S, d) -> (S,)
    out: dict[str, ReductionError] = {}
    for dtype in dtypes:
        with warnings.catch_warnings():
            # The overflow is the lesson; it is returned in ``overflow`` instead.
            warnings.simplefilter("ignore", NormWarning)
            rep = rms_norm_report(x, eps=eps, reduction_dtype=dtype)
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

    ``square``: the largest square passes 65504 (a mean accumulated in float32, as torch's
    kernels do, overflows here). ``sum``: the sum of squares passes 65504 (a sum kept in
    float16, or ``x.pow(2).sum()`` whose result is float16, overflows here).
    """

    square: float
    sum: float


def float16_overflow_scales(z: np.ndarray) -> Float16Limits:
    """The two overflow thresholds for the input ``s z``, shape of ``z`` (d,)."""
    z = np.asarray(z, dtype=np.float64)
    peak = float(np.max(np.abs(z)))
    total = float(np.sum(np.square(z)))  # (d,) -> ()
    if peak == 0:
        return Float16Limits(math.inf, math.inf)
    return Float16Limits(math.sqrt(FLOAT16_MAX) / peak, math.sqrt(FLOAT16_MAX / total))


def round_bfloat16(a: np.ndarray) -> np.ndarray:
    """Round to the nearest bfloat16 (ties to even), returned as float32 values.

    bfloat16 is the upper half of a float32, so rounding adds half an ulp of the kept part (plus
    the lowest kept bit, for ties to even) and clears the lower 16 bits; inf stays inf and
    values beyond bfloat16's largest finite number become inf, as in torch.
    """
    bits = np.asarray(a, dtype=np.float32).view(np.uint32)
    lowest_kept = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(_BF16_HALF_ULP) + lowest_kept) & _BF16_MASK
    return rounded.view(np.float32)


def running_sum_of_squares(x: np.ndarray, dtype: str) -> np.ndarray:
    """Partial sums of ``x_i^2`` with every square and every partial sum rounded to ``dtype``.

    This is a sequential loop that keeps its running total in ``dtype``, the way a hand-written
    kernel might, not what torch's reductions do (they accumulate half inputs in float32).
    Shape (..., d) -> (..., d), float64 values; a partial sum past the dtype's range is inf.
    Pure numpy: float16 is native, bfloat16 is emulated with :func:`round_bfloat16`.
    """
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
