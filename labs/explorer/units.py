"""The float64 statistics of x behind every explanation, and the tolerances of the verdicts.

RMS(x) has no eps in it; the roots with eps are the denominators the norms divide by. Every
tolerance is relative to the quantities it compares (a typed x may be 1e-15 or 1e15)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# Tolerances of the verdicts. Directions are compared in float64 on unit vectors.
COS_TOL = 1e-9
# "Negligible": eps shrinks a radius by less than 0.05 %, so the factor, quoted to three
# digits, reads 100 % (a "visible" one reads 99.9 % or less: one quote never gives both).
RADIUS_TOL = 5e-4
# pRMSNorm's estimate "close" to RMS(x).
PARTIAL_RTOL = 0.05
# x is "constant to within rounding" when its spread is below a few float64 ulps of its RMS.
FLAT_ULPS = 4.0
U64 = float(np.finfo(np.float64).eps)
# A float64 sum of d terms is off by at most about d ulps of the sum of their sizes (recursive
# summation; numpy's pairwise sum does better): twice that is where a mean is rounding.
SUM_ULPS = 2.0
# A vector computed from x - mu and a division carries a few ulps of |x| + |mu| per coordinate.
VECTOR_ULPS = 64.0


@dataclass(frozen=True)
class Units:
    """Float64 statistics of the computed x and its normalised vectors before gain and bias."""

    mean: float
    var: float
    ms: float  # mean(x^2) over all d coordinates
    ms_k: float  # mean(x^2) over the first k (pRMSNorm)
    k: int
    rms: float  # RMS(x) = sqrt(mean(x^2)), no eps
    std: float  # sqrt(Var(x)), no eps
    rms_k: float  # the RMS of the first k coordinates, no eps
    den_k: float  # sqrt(ms_k + eps): what RMSNorm divides by
    den_full: float  # sqrt(ms + eps): what the plain RMSNorm (p = 1) divides by
    den_layer: float  # sqrt(var + eps): what LayerNorm divides by
    ratio: float  # mu / RMS(x), computed scale-free (0 for x = 0)
    mean_noise: float  # the float64 rounding level of mu
    unit_rms: np.ndarray  # x / den_k, RMSNorm's x_hat
    unit_full: np.ndarray  # x / den_full (the same vector when k = d)
    unit_layer: np.ndarray  # (x - mu) / den_layer, LayerNorm's x_hat
    layer_noise: float  # the rounding level of each coordinate of unit_layer
    flat: bool  # x constant to within float64 rounding (x = 0 included)
    mean_over_spread: float  # |mu| / sqrt(Var(x)), computed scale-free (inf for a constant x)


def units_of(
    x: np.ndarray, eps: float, k: int, unit_rms: np.ndarray, unit_layer: np.ndarray
) -> Units:
    """The float64 statistics behind every explanation, beside the norms' own normalised vectors.

    ``unit_rms`` and ``unit_layer`` are the reports' ``x_hat`` (:class:`core.steps.NormReport`):
    x over RMSNorm's denominator (its first k coordinates') and x - mu over LayerNorm's. The
    statistics here are taken as the norms take them, of x / max|x| (of the first k coordinates
    over their own largest), so that no square of a tiny or huge x underflows or overflows. Only
    pRMSNorm (k < d) divides x once more, by the full RMSNorm's denominator: ``unit_full``, the
    plain RMSNorm the partial and centring sentences compare against."""
    top = _top(x)
    xs = x / top if top > 0 else x
    mean_s = float(np.mean(xs))
    var_s = float(np.mean((xs - mean_s) ** 2))  # (d,) -> ()
    ms_s = float(np.mean(xs**2))  # (d,) -> ()
    head = x[:k]
    top_k = _top(head)
    ms_k_h = float(np.mean((head / top_k) ** 2)) if top_k > 0 else 0.0  # (k,) -> ()
    mean, rms, std = top * mean_s, top * math.sqrt(ms_s), top * math.sqrt(var_s)
    rms_k = top_k * math.sqrt(ms_k_h)
    root_eps = math.sqrt(eps)
    den_k, den_full, den_layer = (math.hypot(r, root_eps) for r in (rms_k, rms, std))
    d = x.shape[-1]
    return Units(
        mean=mean,
        var=std * std,
        ms=rms * rms,
        ms_k=rms_k * rms_k,
        k=k,
        rms=rms,
        std=std,
        rms_k=rms_k,
        den_k=den_k,
        den_full=den_full,
        den_layer=den_layer,
        ratio=mean_s / math.sqrt(ms_s) if ms_s > 0 else 0.0,
        mean_noise=sum_noise(x),
        unit_rms=unit_rms,
        unit_full=unit_rms if k == d else divide(x, den_full),
        unit_layer=unit_layer,
        layer_noise=ratio_or_zero(VECTOR_ULPS * U64 * (top + abs(mean)), den_layer),
        flat=var_s <= (FLAT_ULPS * U64) ** 2 * ms_s,
        mean_over_spread=abs(mean_s) / math.sqrt(var_s) if var_s > 0 else math.inf,
    )


def _top(v: np.ndarray) -> float:
    return float(np.max(np.abs(v)))


def divide(num: np.ndarray, den: float) -> np.ndarray:
    """num / den with the core's 0/0 = 0 convention (a nonzero over 0 stays infinite)."""
    if den > 0:
        return num / den
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num == 0, 0.0, num / den)


def sum_noise(values: np.ndarray) -> float:
    """The float64 rounding level of the mean of ``values``: SUM_ULPS * d ulps of mean|v|."""
    with np.errstate(invalid="ignore"):
        size = float(np.mean(np.abs(values)))
    return SUM_ULPS * values.shape[-1] * U64 * size if math.isfinite(size) else 0.0


def stat_noise(values: np.ndarray) -> dict[str, float]:
    """The float64 rounding level of the statistics of ``values`` the table shows: the mean's;
    the variance's, from centred values each off by up to that and an ulp of the largest; the
    cosine with 1's, the mean's over the RMS. A statistic below its level reads ≈ 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        top, std = float(np.max(np.abs(values))), float(np.std(values))
        rms = float(np.sqrt(np.mean(np.square(values))))
    mean = sum_noise(values)
    delta = mean + U64 * top
    out = {"mean": mean, "variance": delta * (2 * std + delta)}
    out["cos_ones"] = ratio_or_zero(mean, rms)
    return {k: v if math.isfinite(v) else 0.0 for k, v in out.items()}


def ratio_or_zero(num: float, den: float) -> float:
    """num / den, 0 where the denominator is 0 (nothing was divided, nothing rounded)."""
    return num / den if den > 0 else 0.0


def unit_scale(v: np.ndarray) -> np.ndarray:
    top = float(np.max(np.abs(v)))
    return v / top if top > 0 else v


def length(v: np.ndarray) -> float:
    """‖v‖ without underflow or overflow in the squares (a gain of 1e-300 is a valid link)."""
    top = float(np.max(np.abs(v)))
    if top == 0 or not math.isfinite(top):
        return top
    return top * float(np.linalg.norm(v / top))
