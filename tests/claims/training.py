"""The training lab's sentences, recomputed from the runs' raw records with the standard library.

States: the shipped runs (``assets/train/curves.json``, read here with json); a live training of
three variants at the link ``?steps=40&width=16&depth=1&nonorm=true&lr=0.01``, and one of all four
with peri-norm and RMSNorm on the queries and keys at ``...&dyt=true&placement=peri&qk_norm=rms``,
as the page recorded them (``training_live.json`` and ``training_live_dyt.json`` beside this
file); and synthetic records drawn by hypothesis: one to four variants, one to three seeds, runs
cut short at any step (none at all included), losses that diverge, equal losses and equal step
times (ties), forward timings present, missing or slower without the norms (timing noise), every
stop reason, machines under any load, DyT's final alpha per layer in every placement (equal
to its initial value, equal across seeds, not finite, or not recorded), and every QK norm (the
variant without a block norm then still normalises queries and keys, and is named so).

Each check reads the records it was given (``state["records"]``), never the view's arrays, and
recomputes with ``statistics``, ``math.fsum`` and ``fractions``: medians, means, the paired
step-time comparisons and their sign test, the shares of a forward pass and their noise.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from dataclasses import replace
from fractions import Fraction
from functools import cache
from pathlib import Path

import torch
from hypothesis import strategies as st

from labs.speed.model import PAPER_SAVING
from labs.training.claims import MIN_PAIRS
from labs.training.lab_view import training_view
from labs.training.model import NORM_KINDS, Norm
from labs.training.runs import CURVES_FILE, REFERENCE_DIR
from tests.claims.oracle import check_runs_words

NAMES = {"rms": "RMSNorm", "layer": "LayerNorm", "none": "Identity", "dyt": "DyT", "derf": "Derf"}
LIVE_FILE = Path(__file__).with_name("training_live.json")
LIVE_DYT_FILE = Path(__file__).with_name("training_live_dyt.json")
# DyT's alpha at initialisation where a record does not name it (the paper's default).
DYT_INIT = 0.5
# A timing sentence that names the faster norm needs its comparisons to agree by chance less
# often than the usual 5 % if the norms cost the same.
SIGNIFICANCE = Fraction(1, 20)
# Relative rounding allowed between two float64 computations of one quantity written in
# different orders (a mean as fsum / n against a pairwise sum, a share as (f - i) / f against
# 1 - i / f): a few units in the last place of the operands.
RTOL = 16 * 2.0**-52


# --- States -------------------------------------------------------------------------------------


@cache
def shipped() -> dict:
    return json.loads((REFERENCE_DIR / CURVES_FILE).read_text())


@cache
def recorded_live(path: Path = LIVE_FILE) -> dict:
    return json.loads(path.read_text())


def dyt_layer_names(model: dict) -> list[str]:
    """The DyT layers of a model, in the order the forward pass meets them: per block the norm
    before attention (and after it, in peri-norm), then before the MLP (and after it), written
    ``i.ln_1`` ... as the modules are named; the final ``ln_f`` unless the layout is post-norm
    (post-norm's ``ln_1`` and ``ln_2`` follow the sublayers, under the same names; output-norm has
    the output norms alone)."""
    placement = model.get("placement", "pre")
    per_block = ["ln_1", "ln_2"]
    if placement == "peri":
        per_block = ["ln_1", "ln_1_out", "ln_2", "ln_2_out"]
    elif placement == "output":
        per_block = ["ln_1_out", "ln_2_out"]
    names = [f"{i}.{name}" for i in range(model.get("n_layer", 2)) for name in per_block]
    return names if placement == "post" else [*names, "ln_f"]


def make_record(norm: str, seed: int, shape: dict, run: dict) -> dict:
    """A run as the page receives it (``TrainResult.curves`` with the norm and the seed)."""
    done, every, steps = len(run["train"]), shape["every"], shape["steps"]
    val_steps = [s for s in range(done + 1) if s % every == 0 or s == steps]
    forward, identity = run["forward"]
    return {
        "norm": norm,
        "seed": seed,
        "dyt_alpha": run.get("alpha") if norm in ("dyt", "derf") else None,
        "derf_shift": run.get("shift") if norm == "derf" else None,
        "config": {
            "model": {"norm": norm, **shape["model"]},
            "steps": steps,
            "eval_every": every,
            "seed": seed,
            "max_seconds": shape["cap"],
            "max_work": None,
        },
        "steps_done": done,
        "train_loss": run["train"],
        "step_seconds": run["seconds"],
        "elapsed_seconds": list(itertools.accumulate(run["seconds"])),
        "val_steps": val_steps,
        "val_loss": run["val"][: len(val_steps)],
        "stopped_by": run["stopped"],
        "forward_seconds": forward,
        "forward_identity_seconds": identity,
        "norm_share": None if forward is None else (forward - identity) / forward,
    }


def _floats(lo: float, hi: float, n: int, ties: tuple[float, ...]) -> st.SearchStrategy:
    value = st.one_of(st.sampled_from(ties), st.floats(lo, hi))
    return st.lists(value, min_size=n, max_size=n)


@st.composite
def seed_base(draw, steps: int, n_val: int) -> dict:
    """What the runs of one seed share before each norm's factor and offset: step times (same
    load), training and validation losses (same batches)."""
    return {
        "seconds": draw(_floats(1e-4, 0.2, steps, (0.01, 0.02))),
        "train": draw(_floats(0.5, 6.0, steps, (1.5, 2.0))),
        "val": draw(_floats(0.5, 6.0, n_val, (1.5, 2.0))),
        # DyT's final alpha, per layer (as many as the largest model has): at its initial value,
        # near it, or anywhere.
        "alpha": draw(_floats(-1.0, 3.0, 13, (0.5, 0.25, 0.52, 0.48, 1.0))),
        # Derf's final shift, per layer: at its initial 0, near it, or anywhere.
        "shift": draw(_floats(-1.0, 1.0, 13, (0.0, 0.02, -0.02, 0.05))),
    }


# The norms' share of a forward pass: typical values (the variant without a norm times noise),
# anything from -70 % (the pass without the norms timed slower) to 90 % (noise from -30 %).
SHARES = {
    norm: st.one_of(st.sampled_from(typical), st.floats(-0.3 if norm == "none" else -0.7, 0.9))
    for norm, typical in {
        "rms": (0.4, 0.3, 0.15, 0.05),
        "layer": (0.2, 0.1, 0.35, -0.663),
        "none": (0.0, 0.01, -0.01, -0.1),
        "dyt": (0.1, 0.05, 0.3, -0.2),
        "derf": (0.15, 0.05, 0.3, -0.2),
    }.items()
}


@st.composite
def dyt_alpha(draw, base: dict, shape: dict, key: str = "alpha") -> list[float] | None:
    """A DyT or Derf run's final alpha (or Derf's shift, ``key``) per layer: its seed's (the same
    for every seed, or a little off), its own, with a value that is not finite, or not recorded
    (None)."""
    n = len(dyt_layer_names(shape["model"]))
    alpha = [a + draw(st.sampled_from([0.0, 0.0, 1e-3])) for a in base[key][:n]]
    if draw(st.sampled_from([False] * 6 + [True])):
        alpha = draw(_floats(-1.0, 3.0, n, (0.5, 0.25)))
    if draw(st.sampled_from([False] * 12 + [True])):
        alpha[draw(st.integers(0, n - 1))] = draw(st.sampled_from([math.nan, math.inf]))
    return None if draw(st.sampled_from([False] * 9 + [True])) else alpha


@st.composite
def synthetic_run(draw, norm: str, base: dict, shape: dict) -> dict:
    steps, complete = shape["steps"], shape["complete"]
    # Mostly the common length (runs trained together), sometimes cut short on their own.
    done = shape["done"] if complete or draw(st.integers(0, 3)) else draw(st.integers(0, steps))
    factor, offset = shape["factor"][norm], shape["offset"][norm]
    seconds = [factor * t for t in base["seconds"][:done]]
    val = [offset + v for v in base["val"]]
    if draw(st.sampled_from([False] * 7 + [True])):  # a run of its own, unlike its seed's others
        seconds = draw(_floats(1e-4, 0.2, done, (0.01,)))
        val = draw(_floats(0.5, 6.0, len(base["val"]), (1.5,)))
    n_val = len([s for s in range(done + 1) if s % shape["every"] == 0 or s == steps])
    if n_val and draw(st.sampled_from([False] * 8 + [True])):
        val[n_val - 1] = draw(st.sampled_from([math.nan, math.inf]))
    stopped = "steps" if done == steps else draw(st.sampled_from(["wall_clock", "work", None]))
    timed = stopped == "steps" and (complete or draw(st.sampled_from([True] * 4 + [False])))
    forward = draw(st.floats(1e-4, 0.1))
    return {
        "alpha": draw(dyt_alpha(base, shape)) if norm in ("dyt", "derf") else None,
        "shift": draw(dyt_alpha(base, shape, "shift")) if norm == "derf" else None,
        "train": [offset + v for v in base["train"][:done]],
        "seconds": seconds,
        "val": val,
        "stopped": stopped,
        "forward": (forward, forward * (1 - draw(SHARES[norm]))) if timed else (None, None),
    }


FACTORS = st.one_of(st.sampled_from([0.3, 0.5, 0.8, 0.95, 1.0, 1.2, 2.0]), st.floats(0.1, 10.0))
OFFSETS = st.one_of(st.sampled_from([0.0, 0.002, 0.01, 0.5]), st.floats(-0.5, 0.5))
LOADS = st.one_of(st.sampled_from([0.0, 0.64, 0.99, 1.0, 2.0, 2.01, 4.0, 8.5]), st.floats(0, 99))
MACHINES = st.fixed_dictionaries(
    {
        "cpu_count": st.sampled_from([1, 2, 4, 64]),
        "threads": st.integers(1, 8),
        "load_average_before": st.lists(LOADS, min_size=3, max_size=3),
        "load_average_after": st.lists(LOADS, min_size=3, max_size=3),
        "total_seconds": st.floats(0.0, 3600.0),
    }
)


# The architecture of the synthetic runs: 1 to 3 blocks in every placement (13 DyT layers at
# most: 3 peri-norm blocks of four and the final one), the initial alpha stated or not.
MODELS = st.fixed_dictionaries(
    {
        "n_layer": st.integers(1, 3),
        "placement": st.sampled_from(["pre", "post", "peri", "output", "scaled"]),
    },
    optional={
        "dyt_alpha": st.sampled_from([0.5, 0.25, 1.0]),
        "qk_norm": st.sampled_from(["off", "rms", "layer", "clip"]),
    },
)


@st.composite
def synthetic(draw, complete: bool = False) -> dict:
    """Runs of any shape; ``complete``: every variant, two, three or six seeds (enough for one
    norm's share to be named the larger), every run finished and timed (the states where the
    timing sentences compare the norms)."""
    if complete:
        seeds = draw(st.sampled_from([[0, 1], [0, 1, 2], [3, 1, 4], [0, 1, 2, 3, 4, 5]]))
        norms = list(NORM_KINDS)
    else:
        norms = draw(st.lists(st.sampled_from(NORM_KINDS), min_size=1, max_size=4, unique=True))
        seeds = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True))
    steps, every = draw(st.integers(1, 30)), draw(st.integers(1, 12))
    shape = {
        "steps": steps,
        "every": every,
        "complete": complete,
        "done": steps if complete else draw(st.one_of(st.just(steps), st.integers(0, steps))),
        "cap": draw(st.one_of(st.none(), st.floats(1.0, 60.0))),
        "factor": {n: draw(FACTORS) for n in NORM_KINDS},
        "offset": {n: draw(OFFSETS) for n in NORM_KINDS},
        "model": draw(MODELS),
    }
    n_val = len([s for s in range(steps + 1) if s % every == 0 or s == steps])
    bases = {seed: draw(seed_base(steps, n_val)) for seed in seeds}
    if draw(st.booleans()):
        # Seeds that land close together: the gap between norms can exceed their spread.
        first = bases[seeds[0]]
        for seed in seeds:
            jitter = draw(st.sampled_from([0.0, 0.001, 0.003]))
            bases[seed] = {**first, "val": [v + jitter for v in first["val"]]}
    records = [
        make_record(norm, seed, shape, draw(synthetic_run(norm, bases[seed], shape)))
        for norm in norms
        for seed in seeds
    ]
    if draw(st.booleans()):  # a variant's runs merged in later, from a session of their own
        later = draw(MACHINES)
        records = [{**r, "machine": later} if r["norm"] == norms[-1] else r for r in records]
    return {
        "records": records,
        "ref_spread": draw(st.one_of(st.none(), st.floats(0.0, 1.0))),
        "live": draw(st.booleans()),
        "machine": draw(st.one_of(st.none(), MACHINES)),
    }


def _named(name: str) -> dict:
    if name == "shipped":
        data = shipped()
        return {"records": data["runs"], "machine": data["machine"], "live": False}
    live = recorded_live(LIVE_DYT_FILE if name == "recorded_live_dyt" else LIVE_FILE)
    return {"records": live["runs"], "machine": None, "live": True, "ref_spread": live["spread"]}


STATES = st.one_of(
    st.sampled_from(["shipped", "recorded_live", "recorded_live_dyt"]).map(_named),
    synthetic(),
    synthetic(complete=True),
)


def view(state: dict):
    """The page's view of these records: the shipped runs with their machine, or a live run."""
    return training_view(
        state["records"],
        reference_spread=state.get("ref_spread"),
        machine=state["machine"],
        live=state["live"],
    )


# --- The truth, from the records --------------------------------------------------------------


def near(shown: float, expected: float, scale: float = 0.0) -> None:
    """Equal up to rounding relative to the larger of ``expected`` and ``scale`` (the operands
    a difference was taken of)."""
    tol = RTOL * max(abs(expected), abs(scale))
    assert abs(shown - expected) <= tol or shown == expected, (shown, expected)


def sides(x: float, threshold: float, scale: float = 1.0) -> set[bool]:
    """Whether ``x > threshold``: {True}, {False}, or both when within rounding of it."""
    tol = RTOL * scale
    if x > threshold + tol:
        return {True}
    if x <= threshold - tol:
        return {False}
    return {True, False}


def runs_of(state: dict, norm: str) -> list[dict]:
    return [r for r in state["records"] if r["norm"] == norm]


def finite(runs: list[dict]) -> bool:
    return all(math.isfinite(v) for r in runs for v in r["train_loss"] + r["val_loss"])


def mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def equal_step(state: dict) -> int:
    """The last validation step that every run has."""
    first, *others = (r["val_steps"] for r in state["records"])
    shared = [s for s in first if all(s in steps for steps in others)]
    return shared[-1] if shared else 0


def val_time(run: dict, step: int) -> float:
    return run["elapsed_seconds"][step - 1] if step > 0 else 0.0


def equal_seconds(state: dict) -> float:
    return min(val_time(r, r["val_steps"][-1]) if r["val_steps"] else 0.0 for r in state["records"])


def at_step(run: dict, step: int) -> float:
    return run["val_loss"][run["val_steps"].index(step)] if step in run["val_steps"] else math.nan


def at_time(run: dict, seconds: float) -> tuple[float, int]:
    best = (math.nan, -1)
    for step, loss in zip(run["val_steps"], run["val_loss"], strict=True):
        if val_time(run, step) <= seconds:
            best = (loss, step)
    return best


def mean_at(state: dict, norm: str, kind: str) -> float:
    runs = runs_of(state, norm)
    if kind == "steps":
        return mean([at_step(r, equal_step(state)) for r in runs])
    return mean([at_time(r, equal_seconds(state))[0] for r in runs])


def span(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[-1] - ordered[0]


# --- Checks: losses -----------------------------------------------------------------------------


def _both_finite(state: dict, kind: str) -> tuple[float, float]:
    a, b = mean_at(state, "rms", kind), mean_at(state, "layer", kind)
    assert finite(runs_of(state, "rms")) and finite(runs_of(state, "layer"))
    assert math.isfinite(a) and math.isfinite(b)
    return a, b


def check_gap(state: dict, claim) -> None:
    kind = "steps" if claim.key.startswith("training.steps") else "time"
    a, b = _both_finite(state, kind)
    f = claim.fields
    if kind == "steps":
        assert f["step"] == equal_step(state) > 0
    else:
        near(f["seconds"], equal_seconds(state))
        reached = [at_time(r, equal_seconds(state))[1] for n in ("rms", "layer")
                   for r in runs_of(state, n)]  # fmt: skip
        assert max(reached) > 0
    scale = max(abs(a), abs(b))
    lower = sides(b, a, scale)  # whether RMSNorm's loss is the lower (both within rounding)
    if claim.key.endswith("_tie"):
        assert sides(abs(a - b), 0.0, scale) != {True}
        near(f["loss"], a)
        return
    assert sides(abs(a - b), 0.0, scale) != {False}
    winners = {("RMSNorm", "LayerNorm") if rms else ("LayerNorm", "RMSNorm") for rms in lower}
    assert (f["winner"], f["loser"]) in winners
    near(f["w_loss"], min(a, b))
    near(f["l_loss"], max(a, b))
    near(f["gap"], abs(a - b), scale=scale)
    if claim.key in ("training.time_gap_within_spread", "training.time_gap_beyond_spread"):
        T = equal_seconds(state)
        spread = max(span([at_time(r, T)[0] for r in runs_of(state, n)]) for n in ("rms", "layer"))
        near(f["spread"], spread)
        assert (not claim.key.endswith("within_spread")) in sides(abs(a - b), spread, scale)
        assert min(len(runs_of(state, n)) for n in ("rms", "layer")) >= 2
    elif kind == "time":
        assert min(len(runs_of(state, n)) for n in ("rms", "layer")) == 1


def check_untrained(state: dict, claim) -> None:
    _both_finite(state, "steps" if "steps" in claim.key else "time")
    if claim.key == "training.steps_untrained":
        assert equal_step(state) == 0
    elif claim.key == "training.time_unvalidated":
        # Some run stopped before its first validation after step 0 (it has no step to quote a
        # time at, so the runs share none).
        assert equal_seconds(state) == 0
        assert any(
            not [s for s in r["val_steps"] if s > 0] and len(r["train_loss"]) < r["config"]["steps"]
            for r in state["records"]
        )
    else:
        T = equal_seconds(state)
        assert T > 0
        near(claim.fields["seconds"], T)
        assert all(at_time(r, T)[1] <= 0 for n in ("rms", "layer") for r in runs_of(state, n))


def check_spread(state: dict, claim) -> None:
    a, b = _both_finite(state, "steps")
    rms, layer = runs_of(state, "rms"), runs_of(state, "layer")
    f = claim.fields
    if claim.key in ("training.spread_one_seed", "training.spread_unknown"):
        assert min(len(rms), len(layer)) == 1
        if claim.key == "training.spread_one_seed":
            near(f["ref_spread"], state["ref_spread"])
        else:
            assert state.get("ref_spread") is None
        return
    step = equal_step(state)
    spread = max(span([at_step(r, step) for r in runs]) for runs in (rms, layer))
    near(f["spread"], spread)
    near(f["gap"], abs(a - b), scale=max(abs(a), abs(b)))
    assert f["step"] == step
    beyond = sides(abs(a - b), spread, max(abs(a), abs(b)))
    assert (claim.key == "training.gap_exceeds_spread") in beyond
    by_seed = {r["seed"]: at_step(r, step) for r in layer}
    pairs = [(at_step(r, step), by_seed[r["seed"]]) for r in rms if r["seed"] in by_seed]
    assert f["pairs"] == len(pairs) and f["wins"] == sum(x < y for x, y in pairs)


def check_none(state: dict, claim) -> None:
    none = runs_of(state, "none")
    assert none and finite(none)
    assert equal_step(state) > 0  # a comparison after training, not of the initial weights
    best, theirs = best_norm(state, claim)
    f = claim.fields
    mine = mean_at(state, "none", "steps")
    near(f["none_loss"], mine)
    near(f["best_loss"], theirs)
    scale = max(abs(mine), abs(theirs))
    expected = {
        "higher" if up else "lower" if down else "tie"
        for up in sides(mine, theirs, scale)
        for down in sides(theirs, mine, scale)
        if not (up and down)
    }
    assert claim.key.removeprefix("training.none_") in expected, expected
    near(f["diff"], abs(mine - theirs), scale=scale)


def best_norm(state: dict, claim) -> tuple[str, float]:
    """The better of RMSNorm and LayerNorm by mean validation loss at the equal step (either,
    where their means agree within rounding), as the claim names it, and that mean."""
    means = {
        n: mean_at(state, n, "steps")
        for n in ("rms", "layer")
        if runs_of(state, n) and finite(runs_of(state, n))
    }
    means = {n: v for n, v in means.items() if math.isfinite(v)}
    lowest = min(means.values())
    best = {NAMES[n]: n for n, v in means.items() if sides(v, lowest, abs(lowest)) != {True}}
    assert claim.fields["best"] in best, (claim.fields["best"], means)
    return best[claim.fields["best"]], means[best[claim.fields["best"]]]


def check_diverged(state: dict, claim) -> None:
    norm = claim.key.rsplit("_", 1)[-1]
    assert not finite(runs_of(state, norm))


# --- Checks: time -------------------------------------------------------------------------------


def consecutive_parts(n: int, parts: int) -> list[tuple[int, int]]:
    """``n`` steps in ``parts`` runs of consecutive steps, the longer ones first."""
    size, longer = divmod(n, parts)
    bounds, lo = [], 0
    for i in range(parts):
        hi = lo + size + (i < longer)
        bounds.append((lo, hi))
        lo = hi
    return bounds


def paired_ratios(state: dict) -> list[float]:
    """Per seed with both norms, RMSNorm's median step over LayerNorm's in each part of the
    steps both did; as many parts a seed as give ``MIN_PAIRS`` comparisons in all (two at
    least, one step each at most)."""
    layer = {r["seed"]: r for r in runs_of(state, "layer")}
    both = [(a, layer[a["seed"]]) for a in runs_of(state, "rms") if a["seed"] in layer]
    parts = max(2, -(-MIN_PAIRS // max(1, len(both))))
    out = []
    for a, b in both:
        n = min(len(a["step_seconds"]), len(b["step_seconds"]))
        if n < 2:
            continue
        for lo, hi in consecutive_parts(n, min(parts, n)):
            ta = statistics.median(a["step_seconds"][lo:hi])
            tb = statistics.median(b["step_seconds"][lo:hi])
            if tb > 0 and math.isfinite(ta / tb):
                out.append(ta / tb)
    return out


def chance_all_agree(k: int) -> Fraction:
    """If the norms cost the same, each comparison falls either side with even odds: all ``k``
    on one side (either side) with probability 2 / 2^k."""
    return 2 * Fraction(1, 2) ** k


def step_order(ratios: list[float]) -> str:
    if ratios and min(ratios) > 1:
        side = "slower"
    elif ratios and max(ratios) < 1:
        side = "faster"
    else:
        return "mixed"
    return side if chance_all_agree(len(ratios)) <= SIGNIFICANCE else "few"


def pooled_ms(state: dict, norm: str) -> float:
    every = [t for r in runs_of(state, norm) for t in r["step_seconds"]]
    return 1e3 * statistics.median(every)


def check_step_time(state: dict, claim) -> None:
    f, ratios = claim.fields, paired_ratios(state)
    near(f["rms_ms"], pooled_ms(state, "rms"))
    near(f["layer_ms"], pooled_ms(state, "layer"))
    near(f["ratio"], pooled_ms(state, "rms") / pooled_ms(state, "layer"))
    assert f["pairs"] == len(ratios) >= 2
    near(f["lo"], min(ratios))
    near(f["hi"], max(ratios))
    assert Fraction(f["chance_pct"]) == chance_all_agree(len(ratios))
    assert claim.key == f"training.step_time_{step_order(ratios)}"


def share_of(run: dict) -> float | None:
    """(t with the norms - t with the identity) / t with the norms, from the two timings."""
    fwd, ident = run.get("forward_seconds"), run.get("forward_identity_seconds")
    if fwd is None or ident is None or not fwd > 0:
        return None
    value = (fwd - ident) / fwd
    return value if math.isfinite(value) else None


def share_pairs(state: dict) -> list[tuple[float, float]]:
    layer = {r["seed"]: share_of(r) for r in runs_of(state, "layer")}
    return [
        (share_of(r), layer[r["seed"]])
        for r in runs_of(state, "rms")
        if share_of(r) is not None and layer.get(r["seed"]) is not None
    ]


def qk_of(run: dict) -> str:
    return run["config"]["model"].get("qk_norm", "off")


def noise_readings(state: dict) -> tuple[list[float], list[float], int]:
    """What tells the timing noise: the |share| of each run that times one computation twice (no
    norm layer, no QK norm), the magnitude of each negative share (the pass without the norms
    did no more work, yet took longer), and how many runs were timed."""
    shares = [(r, share_of(r)) for r in state["records"]]
    timed = [(r, s) for r, s in shares if s is not None]
    same = [abs(s) for r, s in timed if r["norm"] == "none" and qk_of(r) == "off"]
    return same, [-s for _, s in timed if s < 0], len(timed)


def timing_noise(state: dict) -> float | None:
    """At least the noise: the largest of those readings (None without one)."""
    same, slower, _ = noise_readings(state)
    return max(same + slower) if same + slower else None


def share_keys(state: dict) -> set[str]:
    """The share sentences that fit the records (more than one where a share or a difference
    lies within rounding of the noise)."""
    pairs, noise = share_pairs(state), timing_noise(state)
    if not pairs:
        return {"unmeasured"}
    if noise is None:  # no share quoted without a noise to hold it to
        return {"uncompared"}
    floor = noise
    above = [sides(s, floor) for pair in pairs for s in pair]
    keys = {"noisy"} if any(False in a for a in above) else set()
    if not all(True in a for a in above):
        return keys
    classes = []
    for a, b in pairs:
        options = {
            "+" if up else "-" if down else "0"
            for up in sides(a - b, noise)
            for down in sides(b - a, noise)
            if not (up and down)
        }
        classes.append(options)
    # One norm is named only where every seed's difference is beyond the noise the same way and
    # that many seeds would agree by chance no more often than SIGNIFICANCE: else "few".
    named = chance_all_agree(len(pairs)) <= SIGNIFICANCE
    for combo in itertools.product(*classes):
        if set(combo) == {"+"}:
            keys.add("rms_larger" if named else "few_rms")
        elif set(combo) == {"-"}:
            keys.add("layer_larger" if named else "few_layer")
        elif "0" in combo:
            keys.add("close")
        else:
            keys.add("mixed")
    return keys


def check_share(state: dict, claim) -> None:
    kind = claim.key.removeprefix("training.share_")
    if kind == "few":
        kind = {"RMSNorm": "few_rms", "LayerNorm": "few_layer"}[claim.fields["larger"]]
        assert Fraction(claim.fields["chance_pct"]) == chance_all_agree(claim.fields["pairs"])
    assert kind in share_keys(state), (kind, share_keys(state))
    if kind == "unmeasured":
        return
    pairs, f = share_pairs(state), claim.fields
    assert f["pairs"] == len(pairs) >= 1
    if kind in ("noisy", "uncompared"):
        return
    near(f["rms_pct"], statistics.median(a for a, _ in pairs), scale=1.0)
    near(f["layer_pct"], statistics.median(b for _, b in pairs), scale=1.0)
    assert f["rms_pct"] > 0 and f["layer_pct"] > 0  # a share is never shown negative
    near(f["noise_pct"], timing_noise(state), scale=1.0)


def check_noise(state: dict, claim) -> None:
    """The noise quoted, and where it was read: one computation timed twice, which a negative
    share may exceed (both may be said within rounding of each other), or a negative share
    alone, where no run timed one computation twice."""
    noise, (same, slower, timed), f = timing_noise(state), noise_readings(state), claim.fields
    assert noise is not None
    near(f["noise_pct"], noise, scale=1.0)
    assert f["noise_pct"] >= 0 and f["timed"] == timed and f["slower"] == len(slower)
    if claim.key == "training.noise_unpaired":
        assert not same and slower
        return
    near(f["same_pct"], max(same), scale=1.0)
    beyond = sides(max(slower, default=0.0), max(same), 1.0)  # a negative share above the rest
    assert (claim.key == "training.noise_slower") in beyond, (claim.key, same, slower)


def autograd_nodes(kind: str, kernel: str = "lab") -> list[str]:
    """The backward graph of one norm layer computed with ``kernel``, walked recursively (names,
    gradient sinks out)."""
    x = torch.arange(1.0, 9.0).reshape(1, 2, 4).requires_grad_()
    layer = Norm(kind, 4, 1e-5, "final", kernel)
    names, seen = [], set()

    def walk(node) -> None:
        if node is None or node in seen:
            return
        seen.add(node)
        names.append(type(node).__name__)
        for parent, _ in node.next_functions:
            walk(parent)

    walk(layer(x).grad_fn)
    return [n for n in names if n != "AccumulateGrad"]


def check_why(state: dict, claim) -> None:
    rms, layer = autograd_nodes("rms"), autograd_nodes("layer")
    assert layer == ["NativeLayerNormBackward0"], layer  # PyTorch's fused kernel
    assert claim.fields == {"rms_ops": len(rms), "layer_ops": len(layer)}
    assert len(rms) > len(layer)
    order = step_order(paired_ratios(state))
    if claim.key == "training.why_slower":
        # Asked only where a timing beyond its noise shows RMSNorm costing more.
        assert order == "slower" or (order != "faster" and "rms_larger" in share_keys(state))
    else:
        assert order == "faster"


def check_paper(state: dict, claim) -> None:
    f = claim.fields
    ratio = pooled_ms(state, "rms") / pooled_ms(state, "layer")
    saving = 1 - ratio
    assert (f["paper_lo_pct"], f["paper_hi_pct"]) == PAPER_SAVING == (0.07, 0.64)
    near(f["ratio"], ratio)
    order = step_order(paired_ratios(state))
    settled = (order == "slower" and saving < 0) or (order == "faster" and saving >= 0)
    if claim.key == "training.paper_unresolved":
        assert not settled
        return
    assert settled
    near(f["saving_pct"], abs(saving), scale=1.0)
    if claim.key == "training.paper_slower":
        assert saving < 0
        return
    lo, hi = PAPER_SAVING
    expected = "below" if saving < lo else "within" if saving <= hi else "above"
    assert claim.key == f"training.paper_{expected}"


def check_machine(state: dict, claim) -> None:
    """A 1-minute load average above the core count: tasks waited for a core. A sentence on runs
    merged in later names every variant whose records carry that session's machine, and no
    other; its numbers are that machine's."""
    machine, f = state["machine"], claim.fields
    if claim.key.startswith("training.machine_later_"):
        # The seeds named are every run of that variant carrying one session's machine, whose
        # numbers the sentence quotes.
        seeds = [int(x) for x in f["seeds"].split(", ")]
        mine = [r for r in state["records"] if NAMES[r["norm"]] == f["variants"]]
        machine = next(r["machine"] for r in mine if r["seed"] == seeds[0] and "machine" in r)
        assert sorted(r["seed"] for r in mine if r.get("machine") == machine) == seeds
        kind = claim.key.removeprefix("training.machine_later_")
        claim = type(claim)(f"training.machine_{kind}", f)
    before, after = machine["load_average_before"][0], machine["load_average_after"][0]
    assert (f["before"], f["after"]) == (before, after)
    assert f["cpus"] == machine["cpu_count"] and f["threads"] == machine["threads"]
    assert abs(f["minutes"] - machine["total_seconds"] / 60) <= 0.05  # rounded to 0.1
    waited = before > machine["cpu_count"] or after > machine["cpu_count"]
    assert claim.key == ("training.machine_contended" if waited else "training.machine_uncontended")


def check_stopped(state: dict, claim) -> None:
    records = state["records"]
    f = claim.fields
    assert f["done"] == min(len(r["train_loss"]) for r in records)
    assert f["steps"] == max(r["config"]["steps"] for r in records)
    reasons = {r["stopped_by"] for r in records}
    if claim.key == "training.stopped_interrupted":
        assert reasons & {None, "callback"}
    elif claim.key == "training.stopped_wall_clock":
        assert "wall_clock" in reasons and not reasons & {None, "callback"}
        assert f["cap"] == max(r["config"]["max_seconds"] or 0.0 for r in records)
    elif claim.key == "training.stopped_work":
        assert "work" in reasons and not reasons & {None, "callback", "wall_clock"}
    else:
        assert reasons == {"steps"} and f["done"] == f["steps"]


# --- Checks: the charts' words ------------------------------------------------------------------


def drawn_groups(state: dict, chart: str) -> dict:
    """What a chart draws, per variant trained, as (label, positions, values) lines: each run's
    validation losses against its steps or its seconds; each variant's losses at the equal step,
    median step times (ms) and shares (%) by seed."""
    norms = [n for n in NORM_KINDS if runs_of(state, n)]
    if chart in ("loss_step", "loss_seconds"):
        return {
            n: [
                (
                    r["seed"],
                    r["val_steps"]
                    if chart == "loss_step"
                    else [val_time(r, s) for s in r["val_steps"]],
                    r["val_loss"],
                )
                for r in runs_of(state, n)
            ]
            for n in norms
        }
    if chart == "finals":
        step = equal_step(state)
        return {
            n: [
                (
                    n,
                    [r["seed"] for r in runs_of(state, n)],
                    [at_step(r, step) for r in runs_of(state, n)],
                )
            ]
            for n in norms
        }
    if chart == "ms":
        return {
            n: [
                (
                    n,
                    [r["seed"] for r in runs_of(state, n)],
                    [
                        1e3 * statistics.median(r["step_seconds"])
                        if r["step_seconds"]
                        else math.nan
                        for r in runs_of(state, n)
                    ],
                )
            ]
            for n in norms
        }
    if chart.startswith(("alpha_", "shift_")):  # one S-shaped norm's scalar, per layer
        param, norm = chart.split("_")
        return {norm: [(r["seed"], dyt_layer_names(r["config"]["model"]), r[FIELDS[param]])
                       for r in alpha_runs(state, norm, param)]}  # fmt: skip
    raise AssertionError(chart)


def check_share_words(state: dict, claim, one: bool) -> None:
    """The shares drawn: a run's share, in percent, where the pass without the norms was faster
    by more than the timing noise (none where it is not measured), and none where the sentence
    says the timings give no share. A share within rounding of that floor may be drawn or not;
    one clearly above it must lie within the quoted extremes, and each extreme is the share of
    the seed it names; ``one`` point drawn, or several."""
    norm = claim.key.removeprefix("training.share_words_")
    if runs_of(state, "rms") and runs_of(state, "layer"):
        assert share_keys(state) != {"noisy"}, share_keys(state)
    noise = timing_noise(state)
    assert noise is not None  # no share is drawn where the noise was not measured
    floor = noise
    shares = {r["seed"]: share_of(r) for r in runs_of(state, norm)}
    shares = {seed: s for seed, s in shares.items() if s is not None}
    maybe = {seed: s for seed, s in shares.items() if True in sides(s, floor)}
    sure = {seed: s for seed, s in maybe.items() if sides(s, floor) == {True}}
    f = claim.fields
    assert f["lo_line"] == f["hi_line"] == norm
    for end in ("lo", "hi"):
        assert f[f"{end}_at"] in maybe, (end, f, shares, floor)
        near(f[end], 100 * maybe[f[f"{end}_at"]], scale=100.0)
        assert f[end] > 0  # a share is never drawn negative
    for s in sure.values():
        assert f["lo"] <= 100 * s + 100 * RTOL and f["hi"] >= 100 * s - 100 * RTOL
    assert len(sure) <= 1 <= len(maybe) if one else len(maybe) >= 2, (one, shares, floor)


# --- Checks: DyT ------------------------------------------------------------------------------


# The record field of each learned scalar, and its value at initialisation where none is named.
FIELDS = {"alpha": "dyt_alpha", "shift": "derf_shift"}
SYMBOLS = {"α": "alpha", "s": "shift"}
BY_NAME = {name: norm for norm, name in NAMES.items()}


def alpha_runs(state: dict, norm: str, param: str) -> list[dict]:
    """The ``norm`` runs that recorded their final ``param``."""
    return [r for r in runs_of(state, norm) if r.get(FIELDS[param]) is not None]


def check_each(state: dict, claim) -> None:
    """Every run's final value against its start: the nearest and farthest, none at the start,
    and the layers where one seed's is above the start and another's below."""
    f = claim.fields
    norm, param = BY_NAME[f["variant"]], SYMBOLS[f["param"]]
    runs = alpha_runs(state, norm, param)
    model = runs[0]["config"]["model"]
    init = model.get("dyt_alpha", DYT_INIT) if param == "alpha" else 0.0
    layers = len(dyt_layer_names(model))
    table = [[r[FIELDS[param]][i] for r in runs] for i in range(layers)]  # layers x seeds
    away = [abs(v - init) for row in table for v in row]
    assert (f["init"], f["seeds"], f["layers"]) == (init, len(runs), layers)
    assert min(away) > 0 and f["lo"] == min(away) and f["hi"] == max(away)
    mixed = sum(1 for row in table if max(row) > init > min(row))
    assert f["mixed"] == mixed
    assert claim.key == f"training.learned_each_{'mixed' if mixed else 'same'}"


def check_alpha(state: dict, claim) -> None:
    """Per layer, the mean alpha over the seeds (``fsum``) against its initial value, and the
    seeds' spread (max - min) there: a layer moved when the mean left the initial value by more
    than the spread. Within rounding of that line, either verdict may be shown."""
    f = claim.fields
    norm, param = BY_NAME[f["variant"]], SYMBOLS[f["param"]]
    assert norm in ("dyt", "derf") and (param == "alpha" or norm == "derf")
    runs = alpha_runs(state, norm, param)
    assert runs
    model = runs[0]["config"]["model"]
    names = dyt_layer_names(model)
    init = model.get("dyt_alpha", DYT_INIT) if param == "alpha" else 0.0
    table = [[r[FIELDS[param]][i] for r in runs] for i in range(len(names))]  # layers x seeds
    assert all(math.isfinite(a) for row in table for a in row)
    assert f["init"] == init and f["layers"] == len(names)
    if claim.key == "training.learned_one_seed":
        assert len(runs) == 1
        ends = {"lo": min(row[0] for row in table), "hi": max(row[0] for row in table)}
        for end, value in ends.items():
            assert f[end] == value and table[names.index(f[f"{end}_layer"])][0] == value
        return
    assert f["seeds"] == len(runs) >= 2
    means = [mean(row) for row in table]
    spreads = [span(row) for row in table]
    moves = [abs(m - init) for m in means]
    scales = [max(abs(m), abs(init), *map(abs, row)) for m, row in zip(means, table, strict=True)]
    moved = [sides(m, sp, sc) for m, sp, sc in zip(moves, spreads, scales, strict=True)]
    kind = claim.key.removeprefix("training.learned_moved_")
    if kind == "all":
        assert all(True in m for m in moved)
        for end, pick in (("lo", min), ("hi", max)):
            near(f[end], pick(means), max(scales))
            near(means[names.index(f[f"{end}_layer"])], pick(means), max(scales))
        near(f["spread"], max(spreads), max(scales))
        return
    far = names.index(f["far_layer"])
    near(f["far_mean"], means[far], max(scales))
    near(f["far_spread"], spreads[far], max(scales))
    if kind == "none":
        assert all(False in m for m in moved)
        assert moves[far] >= max(moves) - RTOL * max(scales), (f, moves)
        return
    assert kind == "some"
    # The farthest is named among the layers that moved: it moved, and no layer that surely
    # moved went farther.
    assert True in moved[far], (f, moves, spreads)
    surely_moved = [moves[i] for i, m in enumerate(moved) if m == {True}]
    assert moves[far] >= max(surely_moved, default=0.0) - RTOL * max(scales), (f, moves)
    surely, maybe = sum(m == {True} for m in moved), sum(True in m for m in moved)
    assert surely <= f["moved"] <= maybe and f["moved"] + f["still"] == len(names)
    assert 0 < f["moved"] < len(names)
    near_ = names.index(f["near_layer"])
    assert False in moved[near_]
    still = [moves[i] for i, m in enumerate(moved) if False in m]
    assert moves[near_] <= min(still) + RTOL * max(scales)
    near(f["near_mean"], means[near_], max(scales))
    near(f["near_spread"], spreads[near_], max(scales))


def check_versus(state: dict, claim) -> None:
    """DyT's or Derf's mean validation loss at the equal step against the lower of RMSNorm's
    and LayerNorm's (either, where they agree within rounding), or Derf's against DyT's, the gap
    against the seeds' spread."""
    step, f = equal_step(state), claim.fields
    assert step > 0 and f["step"] == step
    derf_dyt = claim.key.startswith("training.derf_dyt_")
    norm = "derf" if derf_dyt else BY_NAME[f["variant"]]
    assert f["variant"] == NAMES[norm] and norm in ("dyt", "derf")
    mine_runs = runs_of(state, norm)
    assert mine_runs and finite(mine_runs)
    mine = mean_at(state, norm, "steps")
    if derf_dyt:
        best, theirs = "dyt", mean_at(state, "dyt", "steps")
        assert f["best"] == "DyT" and finite(runs_of(state, "dyt")) and math.isfinite(theirs)
    else:
        best, theirs = best_norm(state, claim)
    near(f["loss"], mine)
    near(f["best_loss"], theirs)
    scale = max(abs(mine), abs(theirs))
    near(f["gap"], abs(mine - theirs), scale=scale)
    kind = claim.key.split("_dyt_" if derf_dyt else "s_norm_", 1)[1]
    if kind == "one_seed":
        assert min(len(mine_runs), len(runs_of(state, best))) == 1
        return
    assert min(len(mine_runs), len(runs_of(state, best))) >= 2
    spread = max(span([at_step(r, step) for r in runs_of(state, n)]) for n in (norm, best))
    near(f["spread"], spread)
    by_seed = {r["seed"]: at_step(r, step) for r in runs_of(state, best)}
    pairs = [(at_step(r, step), by_seed[r["seed"]]) for r in mine_runs if r["seed"] in by_seed]
    assert f["pairs"] == len(pairs) and f["wins"] == sum(x < y for x, y in pairs)
    gaps = {r["seed"]: abs(at_step(r, step) - by_seed[r["seed"]]) for r in mine_runs
            if r["seed"] in by_seed}  # fmt: skip
    assert f["closest"] == min(gaps.values()) == gaps[f["close_seed"]]
    beyond = sides(abs(mine - theirs), spread, scale)
    if kind == "within_spread":
        assert False in beyond
        return
    assert True in beyond
    lower = sides(theirs, mine, scale)  # whether this variant's mean is the lower
    assert (kind == "lower") in lower, (claim.key, mine, theirs)


def check_chart_words(state: dict, claim) -> None:
    """Each variant's extremes as the chart draws them, recomputed from the records (the
    medians by ``statistics``), and the count of values not drawn. A variant with one value
    drawn has the words ``<key>_one`` (that value, as lowest and highest), else the extremes."""
    one = claim.key.endswith("_one")
    claim = replace(claim, key=claim.key.removesuffix("_one"))
    chart = claim.fields.get("chart", claim.key).removeprefix("training.")
    chart = chart.split("_words_")[0]
    if chart in ("alpha", "shift"):  # one chart per S-shaped norm and scalar
        chart = f"{chart}_{claim.key.rsplit('_', 1)[-1]}"
    if chart == "share":
        check_share_words(state, claim, one)
        return
    groups = drawn_groups(state, chart)
    check_runs_words(claim, groups, rtol=RTOL if chart == "ms" else 0.0)
    if claim.key.startswith("training.finals"):
        assert claim.fields["lo_line"] == claim.fields["hi_line"]
    if "count" not in claim.fields and not chart.startswith(("alpha", "shift")):
        norm = claim.key.rsplit("_", 1)[-1]
        drawn = [v for *_, values in groups[norm] for v in values if math.isfinite(v)]
        assert (len(drawn) == 1) == one, (claim.key, one, drawn)


def check_named(state: dict, claim) -> None:
    """A sentence about the variant without a norm names what it computes: where it still
    normalises every head's queries and keys, the text ``<key>_qk`` with that QK norm's name;
    else the plain text. Then the plain text's check."""
    qk = {qk_of(r) for r in runs_of(state, "none")}
    if claim.key.endswith("_qk"):
        assert len(qk) == 1 and claim.fields["qk"] == NAMES[qk.pop()], (qk, claim.fields)
    else:
        assert qk <= {"off", "clip"}, qk  # QK-Clip normalises nothing
    fields = {k: v for k, v in claim.fields.items() if k != "qk"}
    plain = replace(claim, key=claim.key.removesuffix("_qk"), fields=fields)
    PLAIN[plain.key](state, plain)


CHECKS = {
    "training.val_not_finite": check_chart_words,
    "charts.not_finite": check_chart_words,
    **{
        f"training.{chart}_words_{n}{one}": check_chart_words
        for chart in ("loss_step", "loss_seconds", "finals", "ms")
        for n in NORM_KINDS
        for one in ("", "_one")
    },
    **{
        f"training.share_words_{n}{one}": check_chart_words
        for n in ("rms", "layer", "dyt", "derf")
        for one in ("", "_one")
    },
    **{f"training.{k}": check_chart_words for k in ("alpha_words_dyt", "alpha_words_derf")},
    "training.shift_words_derf": check_chart_words,
    **{f"training.learned_{k}": check_alpha for k in ("one_seed", "moved_all", "moved_some")},
    "training.learned_moved_none": check_alpha,
    **{f"training.learned_each_{k}": check_each for k in ("mixed", "same")},
    **{
        f"training.{text}_{k}": check_versus
        for text in ("s_norm", "derf_dyt")
        for k in ("within_spread", "lower", "higher", "one_seed")
    },
    **{f"training.{k}": check_gap for k in ("steps_gap", "steps_tie", "time_gap", "time_tie")},
    "training.time_gap_within_spread": check_gap,
    "training.time_gap_beyond_spread": check_gap,
    "training.steps_untrained": check_untrained,
    "training.time_untrained": check_untrained,
    "training.time_unvalidated": check_untrained,
    **{
        f"training.{k}": check_spread
        for k in ("spread_exceeds_gap", "gap_exceeds_spread", "spread_one_seed", "spread_unknown")
    },
    **{f"training.none_{k}": check_none for k in ("higher", "lower", "tie")},
    **{f"training.diverged_{n}": check_diverged for n in NORM_KINDS},
    **{f"training.step_time_{k}": check_step_time for k in ("slower", "faster", "mixed", "few")},
    **{
        f"training.share_{k}": check_share
        for k in (
            "rms_larger",
            "layer_larger",
            "mixed",
            "close",
            "few",
            "uncompared",
            "noisy",
            "unmeasured",
        )
    },  # fmt: skip
    **{f"training.noise{k}": check_noise for k in ("", "_slower", "_unpaired")},
    "training.why_slower": check_why,
    "training.why_not_slower": check_why,
    **{
        f"training.paper_{k}": check_paper
        for k in ("within", "below", "above", "slower", "unresolved")
    },
    **{f"training.machine_{k}": check_machine for k in ("contended", "uncontended")},
    **{f"training.machine_later_{k}": check_machine for k in ("contended", "uncontended")},
    **{
        f"training.stopped_{k}": check_stopped
        for k in ("steps", "wall_clock", "work", "interrupted")
    },
}
# The sentences naming the variant without a norm (``words_none``, ``diverged_none``, ``none_*``;
# not ``alpha_moved_none``): each checked by ``check_named``, which names it, then by its own.
PLAIN = {
    key: check
    for key, check in CHECKS.items()
    if key.endswith(("words_none", "words_none_one", "diverged_none")) or "training.none_" in key
}
CHECKS |= {key + qk: check_named for key in PLAIN for qk in ("", "_qk")}
