"""The coordinates chart: its traces, and the min/max envelope of a wide vector."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.stats import VectorStats

# The coordinates chart is at most about 1,200 px wide: past 2 x CHART_BUCKETS coordinates it
# gets each bucket's smallest and largest value (a min/max envelope), which is all its pixels
# can show. Hover, export and statistics keep every exact value.
CHART_BUCKETS = 600
# float32 holds every number the chart can draw and hover (5 significant digits) exactly.
FLOAT32_SAFE = 1e37


@dataclass(frozen=True)
class Series:
    """One trace of the coordinates chart: coordinate indices and values, maybe an envelope."""

    index: np.ndarray
    values: np.ndarray
    mean: float


def envelope_width(d: int, buckets: int = CHART_BUCKETS) -> int:
    """Coordinates per group of a ``d``-wide chart's envelope (the last group may be shorter);
    0 when the chart shows every coordinate."""
    return 0 if d <= 2 * buckets else math.ceil(d / buckets)


def envelope(values: np.ndarray, buckets: int = CHART_BUCKETS) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates a chart of ``buckets`` columns can show: each bucket's min and max.

    Returns ``(index, values)`` in coordinate order; every value is an exact coordinate of
    ``values`` at its own index. Up to ``2 * buckets`` coordinates everything is kept.
    Non-finite coordinates are skipped unless a whole bucket is non-finite."""
    d = values.shape[-1]
    width = envelope_width(d, buckets)
    if not width:
        return np.arange(d), values
    rows = math.ceil(d / width)
    padded = np.concatenate([values, np.full(rows * width - d, values[-1])]).reshape(rows, width)
    if not np.all(np.isfinite(padded)):
        padded = np.where(np.isfinite(padded), padded, np.nan)
        padded[np.all(np.isnan(padded), axis=1), 0] = 0.0  # index 0 for an all-nan bucket
        lo, hi = np.nanargmin(padded, axis=1), np.nanargmax(padded, axis=1)
    else:
        lo, hi = np.argmin(padded, axis=1), np.argmax(padded, axis=1)
    start = np.arange(rows) * width
    pairs = np.stack([np.minimum(lo, hi), np.maximum(lo, hi)], axis=1) + start[:, None]
    keep = np.ones(pairs.shape, dtype=bool)
    keep[:, 1] = lo != hi  # a flat bucket gives one point
    index = np.minimum(pairs[keep], d - 1)
    return index, values[index]


def chart_of(
    x: np.ndarray, y_rms: np.ndarray, y_layer: np.ndarray, stats: dict[str, VectorStats]
) -> dict[str, Series]:
    """The three traces, enveloped past 2 x CHART_BUCKETS coordinates, in float32 where safe."""
    chart = {}
    for name, values in (("x", x), ("rms", y_rms), ("layer", y_layer)):
        index, shown = envelope(values)
        finite = shown[np.isfinite(shown)]
        if finite.size == 0 or np.max(np.abs(finite)) < FLOAT32_SAFE:
            shown = shown.astype(np.float32)
        chart[name] = Series(index.astype(np.int32), shown, stats[name].mean)
    return chart
