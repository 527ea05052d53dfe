"""The speed lab's sentences, checked against the raw samples of the run they describe.

A run's times come from its clock. Here the clock is a seeded random one (every reading moves
it on by a random step), so a state reproduces its run exactly, the verdicts vary from state to
state (faster, slower, no difference, too few rounds, a cap that cuts the sweep), and nothing
depends on this machine's load. The checks take the samples of that run and recompute the
medians, the quartiles (``statistics.quantiles``) and the ratios the sentences quote.
"""

from __future__ import annotations

import math
import statistics
from functools import cache

import numpy as np
from hypothesis import strategies as st

from core.speedlab import measure, speed_view, sweep_points

PAPER_P = 0.0625
MIB = 8

_COMMON = {
    "impl": st.sampled_from(["numpy", "torch"]),
    "sweep": st.sampled_from(["width", "batch"]),
    "repeats": st.one_of(st.sampled_from([1, 2, 3, 15]), st.integers(1, 15)),
    "clock_seed": st.integers(0, 2**16),
}
STATES = st.one_of(
    st.fixed_dictionaries(
        {
            **_COMMON,
            "d": st.sampled_from([64, 128, 256]),
            "batch": st.sampled_from([1, 2, 8]),
            # In clock units (a mean step of 1): a cap that cuts the sweep, or none.
            "cap": st.sampled_from([1e9, 40.0, 150.0]),
        }
    ),
    # The largest sizes a link can ask for: the ones over the memory cap are left out, and a
    # short cap keeps the rest to a few calls.
    st.fixed_dictionaries(
        {**_COMMON, "d": st.just(8192), "batch": st.just(4096), "cap": st.just(40.0)}
    ),
)


class RandomClock:
    """A clock that moves on by an exponential step (mean 1) at every reading."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.now = 0.0

    def __call__(self) -> float:
        self.now += float(self.rng.exponential(1.0))
        return self.now


def _sizes(state: dict) -> tuple[list[int], list[int]]:
    if state["sweep"] == "width":
        return sweep_points(64, state["d"]), [state["batch"]]
    return [state["d"]], sweep_points(1, state["batch"])


@cache
def _run(items: tuple):
    state = dict(items)
    widths, batches = _sizes(state)
    return measure(
        widths,
        batches,
        implementation=state["impl"],
        dtype="float32",
        repeats=state["repeats"],
        time_cap_s=state["cap"],
        clock=RandomClock(state["clock_seed"]),
    )


def run_of(state: dict):
    return _run(tuple(sorted(state.items())))


def view(state: dict):
    return speed_view(run_of(state), state["sweep"])


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return median, q1, q3


def ratio_of(num, den) -> tuple[float, float, float]:
    return quartiles([a / b for a, b in zip(num.samples, den.samples, strict=True)])


def near(shown: float, expected: float, rtol: float = 1e-9) -> None:
    assert math.isclose(shown, expected, rel_tol=rtol, abs_tol=1e-15), (shown, expected)


def largest(run) -> tuple[int, int]:
    return max(run.shapes(), key=lambda s: s[0] * s[1])


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
    shape = largest(run)
    at = run.at(*shape)
    median, q1, q3 = ratio_of(at[f"rms_{technique}"], at[f"layer_{technique}"])
    near(f["ratio"], median)
    near(f["q1"], q1)
    near(f["q3"], q3)
    assert f["rounds"] == state["repeats"] == len(at["copy"].samples)
    assert f["shape"] == f"{shape[0]} × {shape[1]}"
    assert claim.key.endswith("_" + word(q1, q3, f["rounds"]))


def check_range(state: dict, claim) -> None:
    run, f = run_of(state), claim.fields
    technique = technique_of(claim)
    medians = [
        ratio_of(run.at(*s)[f"rms_{technique}"], run.at(*s)[f"layer_{technique}"])[0]
        for s in run.shapes()
    ]
    assert f["count"] == len(medians) > 1
    near(f["lo"], min(medians))
    near(f["hi"], max(medians))


def check_copy(state: dict, claim) -> None:
    run, f = run_of(state), claim.fields
    technique = technique_of(claim)
    b, w = largest(run)
    at = run.at(b, w)
    near(f["copy_gbs"], 2 * b * w * 4 / statistics.median(at["copy"].samples) / 1e9)
    near(f["rms_x"], ratio_of(at[f"rms_{technique}"], at["copy"])[0])
    near(f["layer_x"], ratio_of(at[f"layer_{technique}"], at["copy"])[0])


def check_partial(state: dict, claim) -> None:
    run, f = run_of(state), claim.fields
    by_p = {m.kernel: m for m in run.partial}
    median, q1, q3 = ratio_of(by_p[f"p={PAPER_P}"], by_p["p=1.0"])
    near(f["ratio"], median)
    near(f["q1"], q1)
    near(f["q3"], q3)
    b, d = largest(run)
    assert (f["d"], f["k"], f["p_pct"]) == (d, math.ceil(PAPER_P * d), PAPER_P)
    assert claim.key.endswith("_" + word(q1, q3, f["rounds"]))
    # The RMS error: rebuild the timed tensor the way the run seeds it.
    x = np.random.default_rng([0, b, d]).standard_normal((b, d)).astype(np.float32)
    x = x.astype(np.float64)
    full = np.sqrt((x * x).mean(axis=1))
    part = np.sqrt((x[:, : f["k"]] ** 2).mean(axis=1))
    near(f["err_pct"], float(np.median(np.abs(part / full - 1))), rtol=1e-9)


def check_capped(state: dict, claim) -> None:
    run, f = run_of(state), claim.fields
    widths, batches = _sizes(state)
    planned = [(b, w) for b in batches for w in widths if b * w * 4 <= MIB << 20]
    assert f["cap"] == state["cap"]
    if claim.key == "speed.capped":
        missing = [s for s in planned if s not in run.shapes()]
        assert missing and f["shapes"] == ", ".join(f"{b} × {w}" for b, w in missing)
    else:
        assert run.shapes() == planned and not run.partial


def check_skipped(state: dict, claim) -> None:
    widths, batches = _sizes(state)
    over = [(b, w) for b in batches for w in widths if b * w * 4 > MIB << 20]
    assert over and claim.fields["mib"] == MIB
    assert claim.fields["shapes"] == ", ".join(f"{b} × {w}" for b, w in over)


CHECKS = {
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
