"""The speed lab's sentences, checked against the samples of the run they describe.

The subject is ``speed_view``: it reads a :class:`SpeedRun` and says what it shows. The run here
is built from the link state, not timed: the shapes of the sweep (those over the memory cap
left out, the last ones cut by a time cap that the state places), and for every kernel a
seeded log-normal sample per round around a kernel's own factor, so that the verdicts vary from
state to state (faster, slower, no difference, too few rounds) and nothing depends on this
machine's load. pRMSNorm's errors are those of the tensor the lab times (seeded by shape),
computed with torch. The checks read that run as the page shows it (its samples, its shapes)
and recompute the medians and quartiles (``statistics.quantiles``), the ratios, the rates and
the lists of shapes the sentences quote.
"""

from __future__ import annotations

import math
import statistics
from functools import cache

import numpy as np
import torch
from hypothesis import strategies as st

from labs.speed.kernels import KERNELS, PARTIALS
from labs.speed.model import MIN_SWEEP_BATCH, MIN_SWEEP_WIDTH, PAPER_PARTIAL, speed_view
from labs.speed.timing import MAX_TENSOR_BYTES, Measurement, SpeedRun
from tests.claims.oracle import check_lines_words, check_pair_words

MIB = 8

_COMMON = {
    "dtype": st.sampled_from(["float32", "float64"]),
    "sweep": st.sampled_from(["width", "batch"]),
    "repeats": st.one_of(st.sampled_from([1, 2, 3, 15]), st.integers(1, 15)),
    "seed": st.integers(0, 2**16),
    # RMSNorm's time over LayerNorm's, and pRMSNorm's at 6.25 % over the full RMS, before noise.
    "rms_over_layer": st.sampled_from([0.5, 0.9, 1.0, 1.1, 2.0]),
    "partial_over_full": st.sampled_from([0.5, 1.0, 2.0]),
    # The spread of the log-normal noise per round.
    "noise": st.sampled_from([0.0, 0.02, 0.3]),
    "cap": st.sampled_from([0.5, 2.0]),
    # How many of the planned shapes the time cap lets through (None: all, and pRMSNorm too).
    "done": st.one_of(st.none(), st.integers(0, 14)),
}
STATES = st.one_of(
    st.fixed_dictionaries(
        {**_COMMON, "d": st.sampled_from([64, 128, 256]), "batch": st.sampled_from([1, 2, 8])}
    ),
    # The largest sizes a link can ask for: the ones over the memory cap are left out.
    st.fixed_dictionaries({**_COMMON, "d": st.just(8192), "batch": st.just(4096)}),
)


def _doublings(lo: int, hi: int) -> list[int]:
    """lo, 2 lo, 4 lo, … below hi, then hi."""
    points = [lo]
    while points[-1] * 2 < hi:
        points.append(points[-1] * 2)
    return [p for p in points if p < hi] + [hi]


def planned(state: dict) -> list[tuple[int, int]]:
    """The (batch, width) shapes of the sweep, in order."""
    if state["sweep"] == "width":
        return [(state["batch"], w) for w in _doublings(MIN_SWEEP_WIDTH, state["d"])]
    return [(b, state["d"]) for b in _doublings(MIN_SWEEP_BATCH, state["batch"])]


def itemsize(state: dict) -> int:
    return 4 if state["dtype"] == "float32" else 8


def over_cap(state: dict) -> list[tuple[int, int]]:
    return [(b, w) for b, w in planned(state) if b * w * itemsize(state) > MIB * 2**20]


def _rounds(rng, state: dict, factor: float, size: int) -> tuple[float, ...]:
    """Seconds of each round: 1 ns an element times ``factor``, times log-normal noise."""
    noise = rng.lognormal(0.0, state["noise"], state["repeats"]) if state["noise"] else 1.0
    return tuple(float(v) for v in np.broadcast_to(size * 1e-9 * factor * noise, state["repeats"]))


def _partial_errors(batch: int, width: int, dtype: str) -> dict[float, float]:
    """Median over rows of |RMS of the first ceil(p d) coordinates / RMS - 1|, on the tensor the
    lab times at this shape (``default_rng([0, batch, width])``), in float64."""
    x = np.random.default_rng([0, batch, width]).standard_normal((batch, width)).astype(dtype)
    t = torch.from_numpy(x.astype(np.float64))
    full = torch.linalg.vector_norm(t, dim=1) / math.sqrt(width)
    errors = {}
    for p in PARTIALS:
        k = max(1, math.ceil(round(p * width, 9)))
        part = torch.linalg.vector_norm(t[:, :k], dim=1) / math.sqrt(k)
        errors[p] = float(torch.quantile((part / full - 1).abs(), 0.5).item())
    return errors


@cache
def _run(items: tuple) -> SpeedRun:
    state = dict(items)
    rng = np.random.default_rng(state["seed"])
    skipped = over_cap(state)
    todo = [s for s in planned(state) if s not in skipped]
    done = len(todo) if state["done"] is None else min(state["done"], len(todo))
    factors = {"copy": 1.0, "rms_composite": 4.0, "rms_fused": 1.5}
    factors["layer_composite"] = factors["rms_composite"] / state["rms_over_layer"]
    factors["layer_fused"] = factors["rms_fused"] / state["rms_over_layer"]
    measurements = []
    for b, w in todo[:done]:
        moved = 2 * b * w * itemsize(state)
        for kernel in KERNELS:
            samples = _rounds(rng, state, factors[kernel], b * w)
            measurements.append(Measurement(kernel, b, w, samples, moved))
    partial, errors = (), {}
    if done and state["done"] is None:
        b, w = max(todo, key=lambda s: s[0] * s[1])
        moved = 2 * b * w * itemsize(state)
        partial = tuple(
            Measurement(
                f"p={p}",
                b,
                w,
                _rounds(rng, state, 2.0 * (state["partial_over_full"] if p < 1 else 1.0), b * w),
                moved,
            )
            for p in PARTIALS
        )
        errors = _partial_errors(b, w, state["dtype"])
    return SpeedRun(
        implementation="numpy",
        device="cpu",
        dtype=state["dtype"],
        threads=1,
        repeats=state["repeats"],
        time_cap_s=state["cap"],
        elapsed_s=state["cap"] if done < len(todo) else state["cap"] / 2,
        complete=done == len(todo) and bool(partial),
        measurements=tuple(measurements),
        skipped=tuple(skipped),
        unmeasured=tuple(todo[done:]),
        labels={k: k for k in KERNELS},
        partial=partial,
        partial_error=errors,
    )


def run_of(state: dict) -> SpeedRun:
    return _run(tuple(sorted(state.items())))


def view(state: dict):
    return speed_view(run_of(state), state["sweep"])


# --- what the page shows, read back from the run ----------------------------------------------


def samples(run: SpeedRun, kernel: str, shape: tuple[int, int]) -> list[float]:
    (found,) = [m for m in run.measurements if (m.kernel, (m.batch, m.width)) == (kernel, shape)]
    return list(found.samples)


def partial_samples(run: SpeedRun, p: float) -> list[float]:
    (found,) = [m for m in run.partial if float(m.kernel.split("=")[1]) == p]
    return list(found.samples)


def shapes(run: SpeedRun) -> list[tuple[int, int]]:
    return sorted({(m.batch, m.width) for m in run.measurements}, key=lambda s: s[0] * s[1])


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return median, q1, q3


def ratio_of(num: list[float], den: list[float]) -> tuple[float, float, float]:
    """Median and quartiles of the round-by-round ratios."""
    return quartiles([a / b for a, b in zip(num, den, strict=True)])


def near(shown: float, expected: float, rtol: float = 1e-9) -> None:
    assert math.isclose(shown, expected, rel_tol=rtol), (shown, expected)


def word(q1: float, q3: float, rounds: int) -> str:
    if rounds < 3:
        return "few"
    return "faster" if q3 < 1 else "slower" if q1 > 1 else "same"


def technique_of(claim) -> str:
    """The pair of kernels a sentence speaks of: "composite" or "fused"."""
    return claim.key.removeprefix("speed.").split("_")[1]


def check_headline(state: dict, claim) -> None:
    run, f = run_of(state), claim.fields
    technique = technique_of(claim)
    shape = shapes(run)[-1]
    median, q1, q3 = ratio_of(
        samples(run, f"rms_{technique}", shape), samples(run, f"layer_{technique}", shape)
    )
    near(f["ratio"], median)
    near(f["q1"], q1)
    near(f["q3"], q3)
    assert f["rounds"] == state["repeats"] == len(samples(run, "copy", shape))
    assert f["shape"] == f"{shape[0]} × {shape[1]}"
    assert claim.key.endswith("_" + word(q1, q3, f["rounds"]))


def check_range(state: dict, claim) -> None:
    run, f = run_of(state), claim.fields
    technique = technique_of(claim)
    medians = [
        ratio_of(samples(run, f"rms_{technique}", s), samples(run, f"layer_{technique}", s))[0]
        for s in shapes(run)
    ]
    assert f["count"] == len(medians) > 1
    near(f["lo"], min(medians))
    near(f["hi"], max(medians))


def check_copy(state: dict, claim) -> None:
    run, f = run_of(state), claim.fields
    technique = technique_of(claim)
    b, w = shape = shapes(run)[-1]
    copy = samples(run, "copy", shape)
    near(f["copy_gbs"], 2 * b * w * itemsize(state) / statistics.median(copy) / 1e9)
    near(f["rms_x"], ratio_of(samples(run, f"rms_{technique}", shape), copy)[0])
    near(f["layer_x"], ratio_of(samples(run, f"layer_{technique}", shape), copy)[0])


def check_partial(state: dict, claim) -> None:
    run, f = run_of(state), claim.fields
    median, q1, q3 = ratio_of(partial_samples(run, PAPER_PARTIAL), partial_samples(run, 1.0))
    near(f["ratio"], median)
    near(f["q1"], q1)
    near(f["q3"], q3)
    b, d = shapes(run)[-1]
    assert f["shape"] == f"{b} × {d}"
    # k: the smallest count of coordinates that is at least p of d.
    k = next(k for k in range(1, d + 1) if k >= PAPER_PARTIAL * d)
    assert (f["d"], f["k"], f["p_pct"]) == (d, k, PAPER_PARTIAL)
    assert claim.key.endswith("_" + word(q1, q3, f["rounds"]))
    # The RMS error: rebuild the timed tensor the way the lab seeds it, in float64 numpy.
    x = np.random.default_rng([0, b, d]).standard_normal((b, d)).astype(state["dtype"])
    x = x.astype(np.float64)
    full = np.sqrt((x * x).mean(axis=1))
    part = np.sqrt((x[:, :k] ** 2).mean(axis=1))
    near(f["err_pct"], float(np.median(np.abs(part / full - 1))), rtol=1e-9)


def _shape_list(listed: list[tuple[int, int]]) -> str:
    return ", ".join(f"{b} × {w}" for b, w in listed)


def check_capped(state: dict, claim) -> None:
    run, f = run_of(state), claim.fields
    fits = [s for s in planned(state) if s not in over_cap(state)]
    assert f["cap"] == state["cap"]
    measured = set(shapes(run))
    if claim.key == "speed.capped":
        missing = [s for s in fits if s not in measured]
        assert missing and f["shapes"] == _shape_list(missing)
    else:
        assert measured == set(fits) and not run.partial


def check_skipped(state: dict, claim) -> None:
    over = over_cap(state)
    assert over and claim.fields["mib"] == MIB == MAX_TENSOR_BYTES / 2**20
    assert claim.fields["shapes"] == _shape_list(over)


# --- the charts' words, from the samples of the run each chart draws -------------------------


def _rms_error(state: dict, b: int, d: int, p: float) -> float:
    """The median over rows of |RMS of the first k = ceil(p d) coordinates / RMS - 1|."""
    x = np.random.default_rng([0, b, d]).standard_normal((b, d)).astype(state["dtype"])
    x = x.astype(np.float64)
    k = next(k for k in range(1, d + 1) if k >= p * d)
    full = np.sqrt((x * x).mean(axis=1))
    return float(np.median(np.abs(np.sqrt((x[:, :k] ** 2).mean(axis=1)) / full - 1)))


def check_chart_words(state: dict, claim) -> None:
    """Each norm's median time (or rate) per shape from the samples (``statistics.median``),
    against the time and bandwidth charts' sentences; pRMSNorm's median ratios and RMS errors
    against p (in percent) for its chart's."""
    run = run_of(state)
    chart = claim.fields.get("chart", claim.key).removeprefix("speed.").removesuffix("_equal")
    if chart == "partial_words":
        series = {
            "ratio": [
                ratio_of(partial_samples(run, p), partial_samples(run, 1.0))[0] for p in PARTIALS
            ],
            "err": [100 * _rms_error(state, *shapes(run)[-1], p) for p in PARTIALS],
        }
        check_lines_words(claim, [0], [100 * p for p in PARTIALS], series, rtol=1e-9)
        return
    kind, technique, _ = chart.split("_")
    where = [f"{b} × {w}" for b, w in shapes(run)]

    def drawn(kernel: str) -> list[float]:
        medians = [statistics.median(samples(run, kernel, s)) for s in shapes(run)]
        if kind == "time":
            return [1e3 * m for m in medians]
        pairs = zip(shapes(run), medians, strict=True)
        return [2 * b * w * itemsize(state) / m / 1e9 for (b, w), m in pairs]

    rms, layer = drawn(f"rms_{technique}"), drawn(f"layer_{technique}")
    check_pair_words(claim, where, rms, layer, rtol=1e-12)


CHECKS = {
    "charts.not_finite": check_chart_words,
    "charts.no_finite": check_chart_words,
    "charts.lines_no_finite": check_chart_words,
    **{
        f"speed.{c}_{t}_words{e}": check_chart_words
        for c in ("time", "bandwidth")
        for t in ("composite", "fused")
        for e in ("", "_equal")
    },
    "speed.partial_words": check_chart_words,
    **{
        f"speed.headline_{t}_{w}": check_headline
        for t in ("composite", "fused")
        for w in ("faster", "slower", "same", "few")
    },
    **{f"speed.range_{t}": check_range for t in ("composite", "fused")},
    **{f"speed.copy_{t}": check_copy for t in ("composite", "fused")},
    **{f"speed.partial_{w}": check_partial for w in ("faster", "slower", "same", "few")},
    "speed.capped": check_capped,
    "speed.capped_partial": check_capped,
    "speed.skipped": check_skipped,
}
