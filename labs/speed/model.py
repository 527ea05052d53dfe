"""Speed lab, the page: what a run will measure, what one measured, and the sentences about it.

The measuring itself is :func:`labs.speed.timing.measure`; the kernels it times are
``labs.speed.kernels``. Only one measurement runs per server process at a time
(:func:`labkit.lock.exclusive`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.device import torch_available
from labkit.chart_words import lines_words, pair_words
from labkit.claims import Claim
from labs.speed.kernels import PARTIALS, kernel_table, partial_size
from labs.speed.timing import MAX_TENSOR_BYTES, Measurement, SpeedRun, shapes_within_cap

# Smallest sweep points: below these, Python call overhead, not memory, is what gets timed.
MIN_SWEEP_WIDTH = 64
MIN_SWEEP_BATCH = 1

# Zhang & Sennrich (2019), "Root Mean Square Layer Normalization", NeurIPS, abstract: RMSNorm
# "reduces the running time by 7%~64% on different models" compared with LayerNorm.
PAPER_SAVING = (0.07, 0.64)
PAPER_CITATION = "Zhang & Sennrich (2019), Root Mean Square Layer Normalization, NeurIPS"
# The same paper's pRMSNorm: the RMS from p of the coordinates; p = 6.25 % is reported to work
# about as well as the full RMS.
PAPER_PARTIAL = 0.0625

# With fewer rounds than this a median and its middle half say too little to call a winner.
MIN_ROUNDS_FOR_VERDICT = 3


@dataclass(frozen=True)
class Plan:
    """What pressing Measure will time: shapes (and those over the memory cap), kernels by id
    and label, the pRMSNorm p values and the shape they are timed at."""

    shapes: tuple[tuple[int, int], ...]
    skipped: tuple[tuple[int, int], ...]
    kernels: dict[str, str]
    partials: tuple[float, ...]
    partial_shape: tuple[int, int] | None


def sweep_points(lo: int, hi: int, *, max_points: int = 8) -> list[int]:
    """Powers of two from ``lo`` to ``hi``, thinned to at most ``max_points``: ``hi`` is always
    the last, so the largest size the visitor chose is measured."""
    if lo < 1 or hi < lo:
        raise ValueError(f"need 1 <= lo <= hi; got lo={lo}, hi={hi}")
    points = [1 << k for k in range(int(np.log2(lo)), int(np.log2(hi)) + 1)]
    points = [p for p in points if lo <= p < hi] + [hi]
    if len(points) > max_points:
        step = int(np.ceil((len(points) - 1) / (max_points - 1)))
        points = points[-1::-step][::-1]
    return points


def sweep_sizes(sweep: str, d: int, batch: int) -> tuple[list[int], list[int]]:
    """The widths and batches of a sweep: one swept in powers of two, the other fixed."""
    if sweep == "width":
        return sweep_points(MIN_SWEEP_WIDTH, d), [batch]
    return [d], sweep_points(MIN_SWEEP_BATCH, batch)


def plan(sweep: str, d: int, batch: int, implementation: str, device: str, dtype: str) -> Plan:
    widths, batches = sweep_sizes(sweep, d, batch)
    fits, over = shapes_within_cap(widths, batches, dtype)
    largest = max(fits, key=lambda s: s[0] * s[1]) if fits else None
    ready = implementation == "numpy" or torch_available()
    table = kernel_table(implementation, device) if ready else {}
    return Plan(
        shapes=tuple(fits),
        skipped=over,
        kernels={name: kernel.label for name, kernel in table.items()},
        partials=PARTIALS,
        partial_shape=largest,
    )


def paired_ratio(num: Measurement, den: Measurement) -> tuple[float, float, float]:
    """Round-by-round ``num / den``: the median and the quartiles (the middle half of rounds)."""
    ratios = np.asarray(num.samples) / np.asarray(den.samples)
    q1, median, q3 = np.percentile(ratios, [25, 50, 75])
    return float(median), float(q1), float(q3)


def verdict_word(q1: float, q3: float, rounds: int) -> str:
    """ "faster" when the middle half of the rounds sits below 1x, "slower" above, "same" when
    it spans 1x, "few" with fewer than ``MIN_ROUNDS_FOR_VERDICT`` rounds."""
    if rounds < MIN_ROUNDS_FOR_VERDICT:
        return "few"
    if q3 < 1.0:
        return "faster"
    if q1 > 1.0:
        return "slower"
    return "same"


@dataclass(frozen=True)
class SpeedView:
    """A run summarised for the page: per-kernel medians and quartiles over the swept size, and
    the claims its sentences make."""

    run: SpeedRun
    swept: str
    axis: np.ndarray  # the swept size at each measured shape
    median_ms: dict[str, np.ndarray]
    q1_ms: dict[str, np.ndarray]
    q3_ms: dict[str, np.ndarray]
    gb_per_s: dict[str, np.ndarray]
    largest: tuple[int, int] | None
    partial: dict[float, tuple[float, float, float]]
    claims: dict[str, Claim]


def shape_text(shapes: Sequence[tuple[int, int]]) -> str:
    """``batch × width`` shapes as the page lists them."""
    return ", ".join(f"{b} × {w}" for b, w in shapes)


def speed_view(run: SpeedRun, swept: str) -> SpeedView:
    """Medians, quartiles and rates per kernel along the sweep, and the claims."""
    shapes = run.shapes()
    index = 1 if swept == "width" else 0
    per = {k: [run.at(*s)[k] for s in shapes] for k in (run.at(*shapes[0]) if shapes else {})}

    def ms(q: float) -> dict[str, np.ndarray]:
        return {k: np.array([np.percentile(m.samples, q) * 1e3 for m in v]) for k, v in per.items()}

    largest = max(shapes, key=lambda s: s[0] * s[1]) if shapes else None
    base = run.partial_by_p() if run.partial else {}
    median_ms = ms(50)
    gb_per_s = {k: np.array([m.gb_per_s for m in v]) for k, v in per.items()}
    partial = {p: paired_ratio(m, base[1.0]) for p, m in base.items()}
    words = _chart_words(run, median_ms, gb_per_s, partial)
    return SpeedView(
        run=run,
        swept=swept,
        axis=np.array([s[index] for s in shapes]),
        median_ms=median_ms,
        q1_ms=ms(25),
        q3_ms=ms(75),
        gb_per_s=gb_per_s,
        largest=largest,
        partial=partial,
        claims=_speed_claims(run, largest) | words,
    )


def _chart_words(
    run: SpeedRun,
    median_ms: dict[str, np.ndarray],
    gb_per_s: dict[str, np.ndarray],
    partial: dict[float, tuple[float, float, float]],
) -> dict[str, Claim]:
    """Each chart's summary, its caption and accessible name: per technique, each norm's
    smallest and largest median time (and rate) as measured, at which shape, and the shape where
    the two medians lie furthest apart; pRMSNorm's time ratio and RMS error against p."""
    where = [shape_text([s]) for s in run.shapes()]
    claims: dict[str, Claim] = {}
    for chart, values in (("time", median_ms), ("bandwidth", gb_per_s)):
        for technique in ("composite", "fused"):
            rms, layer = values.get(f"rms_{technique}"), values.get(f"layer_{technique}")
            if rms is not None and layer is not None and where:
                words = pair_words(f"speed.{chart}_{technique}_words", where, rms, layer)
                claims |= {f"{chart}_{technique}_{k}": c for k, c in words.items()}
    if partial:
        # p and the RMS error in percent, as the sentence writes them.
        ps = sorted(partial)
        series = {
            "ratio": np.array([partial[p][0] for p in ps]),
            "err": 100 * np.array([run.partial_error[p] for p in ps]),
        }
        words = lines_words("speed.partial_words", [0], [100 * p for p in ps], series)
        claims |= {f"partial_chart_{k}": c for k, c in words.items()}
    return claims


def _speed_claims(run: SpeedRun, largest: tuple[int, int] | None) -> dict[str, Claim]:
    claims: dict[str, Claim] = {}
    if run.skipped:
        fields = {"mib": MAX_TENSOR_BYTES >> 20, "shapes": shape_text(run.skipped)}
        claims["skipped"] = Claim("speed.skipped", fields)
    if run.unmeasured:
        fields = {"cap": run.time_cap_s, "shapes": shape_text(run.unmeasured)}
        claims["capped"] = Claim("speed.capped", fields)
    elif not run.partial and largest is not None:
        claims["capped"] = Claim("speed.capped_partial", {"cap": run.time_cap_s})
    if largest is None:
        return claims
    at = run.at(*largest)
    for technique in ("composite", "fused"):
        rms, layer = f"rms_{technique}", f"layer_{technique}"
        if rms in at and layer in at:
            claims[f"headline_{technique}"] = _headline(technique, at[rms], at[layer], largest)
            claims[f"copy_{technique}"] = _against_copy(technique, at, largest)
            if len(run.shapes()) > 1:
                claims[f"range_{technique}"] = _range(technique, run)
    if run.partial:
        claims["partial"] = _partial_claim(run, largest)
    return claims


def _headline(
    technique: str, rms: Measurement, layer: Measurement, shape: tuple[int, int]
) -> Claim:
    ratio, q1, q3 = paired_ratio(rms, layer)
    word = verdict_word(q1, q3, len(rms.samples))
    fields = {"shape": shape_text([shape]), "ratio": ratio, "q1": q1, "q3": q3}
    return Claim(f"speed.headline_{technique}_{word}", {**fields, "rounds": len(rms.samples)})


def _against_copy(technique: str, at: dict[str, Measurement], shape: tuple[int, int]) -> Claim:
    copy = at["copy"]
    fields = {f"{n}_x": paired_ratio(at[f"{n}_{technique}"], copy)[0] for n in ("rms", "layer")}
    fields |= {"shape": shape_text([shape]), "copy_gbs": copy.gb_per_s}
    return Claim(f"speed.copy_{technique}", fields)


def _range(technique: str, run: SpeedRun) -> Claim:
    ratios = [
        paired_ratio(run.at(*s)[f"rms_{technique}"], run.at(*s)[f"layer_{technique}"])[0]
        for s in run.shapes()
    ]
    fields = {"count": len(ratios), "lo": min(ratios), "hi": max(ratios)}
    return Claim(f"speed.range_{technique}", fields)


def _partial_claim(run: SpeedRun, shape: tuple[int, int]) -> Claim:
    by_p = run.partial_by_p()
    ratio, q1, q3 = paired_ratio(by_p[PAPER_PARTIAL], by_p[1.0])
    word = verdict_word(q1, q3, len(by_p[1.0].samples))
    fields = {"p_pct": PAPER_PARTIAL, "k": partial_size(PAPER_PARTIAL, shape[1]), "d": shape[1]}
    fields |= {"shape": shape_text([shape]), "ratio": ratio, "q1": q1, "q3": q3}
    fields |= {"rounds": len(by_p[1.0].samples), "err_pct": run.partial_error[PAPER_PARTIAL]}
    return Claim(f"speed.partial_{word}", fields)
