"""The training lab's data set (DyT and RMSNorm on a small and a large slice of the text): its
sentences recomputed from the set's raw records with the standard library (``math.fsum``, plain
loops, sorting).

States: the shipped set (``assets/train/data.json``, read here with json), and synthetic records
drawn by hypothesis: one to three seeds, one to four validations, one to seven DyT layers; losses
that tie, lie close, cross or are not finite; saturated shares that tie between the slices, sit
at 0 and 1, or are not finite.

Each check reads the records it was given (``state["data"]``), never the view's arrays.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from functools import cache

from hypothesis import strategies as st

from labs.training.runs import REFERENCE_DIR
from labs.training.sets import SET_FILES
from labs.training.sets_view import data_view
from tests.claims.oracle import check_runs_words

NAMES = {"rms": "RMSNorm", "dyt": "DyT"}
KINDS = ("rms_small", "dyt_small", "rms_large", "dyt_large")
PREFIX = "training_sets.data_"
# Two float64 computations of one quantity in different orders: a few units in the last place.
RTOL = 16 * 2.0**-52


@cache
def shipped() -> dict:
    return json.loads((REFERENCE_DIR / SET_FILES["data"]).read_text())


BAD = st.sampled_from([math.nan, math.inf])


def _value(lo: float, hi: float, ties: tuple[float, ...]) -> st.SearchStrategy:
    return st.one_of(st.sampled_from(ties), st.floats(lo, hi))


@st.composite
def synthetic(draw) -> dict:
    seeds = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True))
    n_val, layers = draw(st.integers(1, 4)), draw(st.integers(1, 7))
    whole = draw(st.sampled_from([419646, 5000]))
    small = draw(st.sampled_from([4096, 1000]))
    steps = [25 * i for i in range(n_val)]
    runs = []
    for size in (small, draw(st.sampled_from([None, whole, whole + 1]))):
        shares = [draw(_value(0.0, 1.0, (0.0, 0.5, 1.0))) for _ in range(layers)]
        for norm in ("rms", "dyt"):
            shift = draw(st.sampled_from([0.0, 0.0, 0.001, 0.5, -0.5]))
            for seed in seeds:
                loss = [draw(_value(1.0, 7.0, (3.0, 3.001))) + shift for _ in steps]
                if draw(st.sampled_from([False] * 9 + [True])):
                    loss[draw(st.integers(0, n_val - 1))] = draw(BAD)
                own = [v + draw(st.sampled_from([0.0, 0.0, 0.01, -0.2])) for v in shares]
                if draw(st.sampled_from([False] * 11 + [True])):
                    own[draw(st.integers(0, layers - 1))] = draw(BAD)
                config = {"model": {"n_layer": 3, "n_embd": 48, "n_head": 4}, "steps": steps[-1]}
                runs.append({"norm": norm, "train_bytes": size, "seed": seed, "config": config,
                             "val_steps": steps, "val_loss": loss,
                             "saturated": own if norm == "dyt" else []})  # fmt: skip
    return {"data": {"data": {"train_bytes": whole}, "runs": runs}}


STATES = st.one_of(st.just({"data": "shipped"}), synthetic())


def data_of(state: dict) -> dict:
    return shipped() if state["data"] == "shipped" else state["data"]


def view(state: dict):
    return data_view(data_of(state))


# --- The truth, from the records ---------------------------------------------------------------


def near(shown: float, expected: float, scale: float = 0.0) -> None:
    tol = RTOL * max(abs(expected), abs(scale))
    assert shown == expected or abs(shown - expected) <= tol, (shown, expected)


def finite(values) -> bool:
    return all(math.isfinite(v) for v in values)


def mean(values) -> float:
    values = list(values)
    return math.fsum(values) / len(values)


def sizes(state: dict) -> dict[str, int]:
    """The bytes each slice trained on (a run asking for more than the text has gets all of it)."""
    used = sorted({trained_on(state, r) for r in data_of(state)["runs"]})
    return {"small": used[0], "large": used[-1]}


def trained_on(state: dict, run: dict) -> int:
    whole = data_of(state)["data"]["train_bytes"]
    return whole if run["train_bytes"] is None else min(run["train_bytes"], whole)


def runs(state: dict, kind: str) -> list[dict]:
    """The runs of one kind (``<norm>_<slice>``), by seed."""
    norm, slice_ = kind.split("_")
    size = sizes(state)[slice_]
    chosen = [
        r for r in data_of(state)["runs"] if r["norm"] == norm and trained_on(state, r) == size
    ]
    return sorted(chosen, key=lambda r: r["seed"])


def last_step(state: dict) -> int:
    return data_of(state)["runs"][0]["val_steps"][-1]


def above(x: float, threshold: float, scale: float) -> set[bool]:
    """Whether ``x > threshold``: {True}, {False}, or both within rounding of it."""
    tol = RTOL * max(abs(scale), abs(x), abs(threshold))
    return {True} if x > threshold + tol else {False} if x <= threshold - tol else {True, False}


def gap_truth(state: dict, slice_: str) -> tuple[set[str], dict]:
    """DyT's final losses against RMSNorm's on one slice: the verdicts the numbers allow (more
    than one where a comparison is within rounding) and the numbers."""
    dyt = [r["val_loss"][-1] for r in runs(state, f"dyt_{slice_}")]
    rms = [r["val_loss"][-1] for r in runs(state, f"rms_{slice_}")]
    if not (finite(dyt) and finite(rms)):
        return {"diverged"}, {}
    truth = {"dyt_loss": mean(dyt), "rms_loss": mean(rms)}
    truth["gap"] = abs(truth["dyt_loss"] - truth["rms_loss"])
    if min(len(dyt), len(rms)) < 2:
        return {"one_seed"}, truth
    truth["spread"] = max(max(dyt) - min(dyt), max(rms) - min(rms))
    scale = max(abs(truth["dyt_loss"]), abs(truth["rms_loss"]))
    kinds = set()
    for beyond in above(truth["gap"], truth["spread"], scale):
        if not beyond:
            kinds.add("within")
        else:
            lower = above(truth["rms_loss"], truth["dyt_loss"], scale)
            kinds |= {"lower" if is_lower else "higher" for is_lower in lower}
    return kinds, truth


# --- Checks ------------------------------------------------------------------------------------


def check_gap(state: dict, claim) -> None:
    f = claim.fields
    (slice_,) = [s for s, size in sizes(state).items() if size == f["size"]]
    assert f["step"] == last_step(state)
    kinds, truth = gap_truth(state, slice_)
    assert claim.key.removeprefix(f"{PREFIX}gap_") in kinds, (claim.key, kinds)
    scale = max([abs(v) for v in truth.values()] or [0.0])
    for name, value in truth.items():
        near(f[name], value, scale)


def check_sign(state: dict, claim) -> None:
    f = claim.fields
    assert (f["small"], f["large"]) == (sizes(state)["small"], sizes(state)["large"])
    small, large = gap_truth(state, "small")[0], gap_truth(state, "large")[0]
    assert not (small | large) & {"diverged", "one_seed"}
    allowed = set()
    for a in small:
        for b in large:
            settled = {a, b} <= {"lower", "higher"}
            change = "flips" if a != b else "holds"
            allowed.add(f"{PREFIX}sign_{change}_{a}" if settled else f"{PREFIX}sign_unsettled")
    if claim.key.endswith("_overfit"):
        # DyT ahead on the small slice at the end, RMSNorm ahead there at each one's lowest mean:
        # RMSNorm's lowest < DyT's lowest <= DyT's last < RMSNorm's last, so RMSNorm's rose.
        curves = {n: mean_curve(state, f"{n}_small") for n in ("dyt", "rms")}
        assert min(curves["rms"]) < min(curves["dyt"]) and curves["rms"][-1] > min(curves["rms"])
        claim = type(claim)(claim.key.removesuffix("_overfit"), claim.fields)
    assert claim.key in allowed, (claim.key, allowed)


def check_rise(state: dict, claim) -> None:
    f = claim.fields
    ((norm, _),) = [(n, name) for n, name in NAMES.items() if name == f["name"]]
    (slice_,) = [s for s, size in sizes(state).items() if size == f["size"]]
    chosen = runs(state, f"{norm}_{slice_}")
    assert all(finite(r["val_loss"]) for r in chosen)
    steps = chosen[0]["val_steps"]
    curve = [mean(r["val_loss"][i] for r in chosen) for i in range(len(steps))]
    lowest = min(curve)
    finals = [r["val_loss"][-1] for r in chosen]
    spread, rise = max(finals) - min(finals), curve[-1] - lowest
    assert f["lo_step"] in steps and f["step"] == steps[-1]
    near(curve[steps.index(f["lo_step"])], lowest)  # the lowest, or a tie within rounding
    near(f["lo"], lowest)
    near(f["last"], curve[-1])
    near(f["rise"], rise, curve[-1])
    near(f["spread"], spread, max(finals))
    key = claim.key.removeprefix(PREFIX)
    lowest_at = [i for i, v in enumerate(curve) if abs(v - lowest) <= RTOL * abs(lowest)]
    if key == "falling":  # the lowest (or a tie within rounding) at the last validation
        assert len(steps) - 1 in lowest_at and f["lo_step"] == steps[-1]
        return
    assert len(steps) - 1 not in lowest_at or len(lowest_at) > 1
    if key == "never_fell":
        assert 0 in lowest_at and f["lo_step"] == steps[0]
        return
    assert f["lo_step"] not in (steps[0], steps[-1])
    if key == "rise_one_seed":
        assert len(chosen) == 1
        return
    assert len(chosen) >= 2
    tol = RTOL * max(abs(v) for v in curve)
    if abs(rise - spread) > tol:
        assert key == ("rose" if rise > spread else "held")


def check_best(state: dict, claim) -> None:
    """Each norm at the validation where its mean over the seeds is lowest (a tie within rounding
    may pick either), the seeds' losses there weighed as the final ones are."""
    f = claim.fields
    (slice_,) = [s for s, size in sizes(state).items() if size == f["size"]]
    at, cols = {}, {}
    for norm in ("dyt", "rms"):
        chosen = runs(state, f"{norm}_{slice_}")
        assert all(finite(r["val_loss"]) for r in chosen)
        steps = chosen[0]["val_steps"]
        curve = [mean(r["val_loss"][i] for r in chosen) for i in range(len(steps))]
        assert f[f"{norm}_step"] in steps
        at[norm] = steps.index(f[f"{norm}_step"])
        near(curve[at[norm]], min(curve))
        cols[norm] = [r["val_loss"][at[norm]] for r in chosen]
    truth = {"dyt_loss": mean(cols["dyt"]), "rms_loss": mean(cols["rms"])}
    truth["gap"] = abs(truth["dyt_loss"] - truth["rms_loss"])
    scale = max(abs(truth["dyt_loss"]), abs(truth["rms_loss"]))
    for name, value in truth.items():
        near(f[name], value, scale)
    kind = claim.key.removeprefix(f"{PREFIX}best_")
    if kind == "one_seed":
        assert min(len(c) for c in cols.values()) == 1
        return
    spread = max(max(c) - min(c) for c in cols.values())
    near(f["spread"], spread, scale)
    beyond = above(truth["gap"], spread, scale)
    assert (kind != "within") in beyond
    if kind != "within":
        lower = above(truth["rms_loss"], truth["dyt_loss"], scale)
        assert (kind == "lower") in lower


def mean_curve(state: dict, kind: str) -> list[float]:
    chosen = runs(state, kind)
    return [mean(r["val_loss"][i] for r in chosen) for i in range(len(chosen[0]["val_steps"]))]


@cache
def corpus() -> tuple[bytes, bytes, str]:
    """The training text as the page describes it: Python's help topics in name order, joined by
    a blank line, as UTF-8; the first 90 % train, the rest validate; and its SHA-256."""
    from pydoc_data.topics import topics

    text = "\n\n".join(topics[name] for name in sorted(topics)).encode("utf-8")
    cut = round(len(text) * 0.9)
    return text[:cut], text[cut:], hashlib.sha256(text).hexdigest()


def check_floor(state: dict, claim) -> None:
    """Byte counts of the slice (each plus one) scored on the validation windows' targets: 128
    windows of 65 bytes, evenly spaced from the first byte to the last whole window."""
    f = claim.fields
    train, val, digest = corpus()
    assert data_of(state)["data"]["sha256"] == digest
    (slice_,) = [s for s, size in sizes(state).items() if size == f["size"]]
    counts = Counter(train[: f["size"]])
    total = f["size"] + 256
    starts = [round(i * (len(val) - 65) / 127) for i in range(128)]
    targets = [b for start in starts for b in val[start + 1 : start + 65]]
    floor = -math.fsum(math.log((counts[b] + 1) / total) for b in targets) / len(targets)
    near(f["floor"], floor, 1e6)  # float32-free, but summed in another order: 1e-9 relative
    dyt = mean(r["val_loss"][-1] for r in runs(state, f"dyt_{slice_}"))
    rms = mean(r["val_loss"][-1] for r in runs(state, f"rms_{slice_}"))
    near(f["dyt_loss"], dyt)
    near(f["rms_loss"], rms)
    near(f["gap"], abs(dyt - floor), 1e6)
    assert claim.key == f"{PREFIX}floor_{'below' if dyt < floor else 'above'}"


def shares(state: dict, slice_: str) -> list[list[float]]:
    return [r["saturated"] for r in runs(state, f"dyt_{slice_}")]


def check_saturation(state: dict, claim) -> None:
    f = claim.fields
    rows = {s: shares(state, s) for s in ("small", "large")}
    assert all(finite(row) for grid in rows.values() for row in grid)
    layers = len(rows["small"][0])
    assert f["layers"] == layers and f["limit"] == 2.0
    by_seed = {s: [mean(row) for row in grid] for s, grid in rows.items()}
    for s, values in by_seed.items():
        assert f[s] == sizes(state)[s]
        near(f[f"{s}_pct"], mean(values))
        near(f[f"{s}_lo_pct"], min(values))
        near(f[f"{s}_hi_pct"], max(values))
    column = {s: [[row[i] for row in grid] for i in range(layers)] for s, grid in rows.items()}
    pairs = list(zip(column["small"], column["large"], strict=True))
    assert f["more_small"] == sum(min(a) > max(b) for a, b in pairs)
    assert f["more_large"] == sum(min(b) > max(a) for a, b in pairs)
    if claim.key.endswith("one_seed"):
        assert len(rows["small"]) == 1
        return
    few, many = by_seed["small"], by_seed["large"]
    more_few, more_many = above(min(few), max(many), 1.0), above(min(many), max(few), 1.0)
    allowed = {f"{PREFIX}sat_more_small" for x in more_few if x}
    allowed |= {f"{PREFIX}sat_more_large" for x in more_many if x}
    if False in more_few and False in more_many:
        allowed.add(f"{PREFIX}sat_overlap")
    assert claim.key in allowed, (claim.key, allowed)


def check_words(state: dict, claim) -> None:
    """Either chart's words (or the count it cannot draw): the loss of every run against its
    validation step, or DyT's saturated share in percent against its layer (from 1)."""
    chart = claim.fields.get("chart", claim.key).removeprefix(PREFIX).split("_")[0]
    if chart == "loss":
        groups = {k: [(r["seed"], r["val_steps"], r["val_loss"]) for r in runs(state, k)]
                  for k in KINDS}  # fmt: skip
    else:
        groups = {
            s: [(r["seed"], range(1, len(r["saturated"]) + 1), [100 * v for v in r["saturated"]])
                for r in runs(state, f"dyt_{s}")]
            for s in ("small", "large")
        }  # fmt: skip
    check_runs_words(claim, groups)


CHECKS = {
    "charts.not_finite": check_words,
    **{f"{PREFIX}loss_words_{k}": check_words for k in KINDS},
    **{f"{PREFIX}sat_words_{s}": check_words for s in ("small", "large")},
    **{f"{PREFIX}gap_{k}": check_gap for k in ("lower", "higher", "within", "one_seed")},
    f"{PREFIX}gap_diverged": check_gap,
    **{
        f"{PREFIX}sign_{c}_{d}": check_sign for c in ("flips", "holds") for d in ("lower", "higher")
    },
    f"{PREFIX}sign_unsettled": check_sign,
    **{f"{PREFIX}best_{k}": check_best for k in ("lower", "higher", "within", "one_seed")},
    **{f"{PREFIX}{k}": check_rise for k in ("rose", "held", "falling", "never_fell")},
    f"{PREFIX}rise_one_seed": check_rise,
    **{f"{PREFIX}floor_{k}": check_floor for k in ("below", "above")},
    f"{PREFIX}sign_flips_lower_overfit": check_sign,
    **{
        f"{PREFIX}sat_{k}": check_saturation
        for k in ("more_small", "more_large", "overlap", "one_seed")
    },
}
