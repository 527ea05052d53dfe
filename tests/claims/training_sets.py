"""The training lab's two sets (placement, QK norm): their sentences recomputed from the sets' raw
records with the standard library (``math.fsum``, plain loops).

States: the shipped sets (``assets/train/placement.json`` and ``qknorm.json``, read here with
json), and synthetic records drawn by hypothesis. Placement: one to five placements, one to
three seeds, 2 to 5 blocks, streams whose RMS stays flat, grows, shrinks or wanders from block to
block (a seed of its own now and then, ties, zeros and values that are not finite), losses that
tie, lie close or diverge. QK norm: the plain mode, QK norm and QK-Clip or some of them, one to
four learning rates, one to three seeds, logits that rise with the learning rate or wander (the
clipped ones around their tau, ties included), zeros and NaN, losses that tie or diverge.

Each check reads the records it was given (``state["data"]``), never the view's arrays.
"""

from __future__ import annotations

import json
import math
from functools import cache

from hypothesis import strategies as st

from labs.training.runs import REFERENCE_DIR
from labs.training.sets import SET_FILES
from labs.training.sets_claims import BAND
from labs.training.sets_view import placement_view, qknorm_view
from tests.claims.oracle import check_runs_words

NAMES = {"pre": "Pre-LN", "post": "Post-LN", "peri": "Peri-LN", "output": "Output-LN"}
NAMES["scaled"] = "LN Scaling"
ORDER = ("pre", "post", "peri", "output", "scaled")
MODES = ("off", "rms", "clip")
# Two float64 computations of one quantity in different orders: a few units in the last place.
RTOL = 16 * 2.0**-52


# --- States -------------------------------------------------------------------------------------


@cache
def shipped(name: str) -> dict:
    return json.loads((REFERENCE_DIR / SET_FILES[name]).read_text())


def _value(lo: float, hi: float, ties: tuple[float, ...]) -> st.SearchStrategy:
    return st.one_of(st.sampled_from(ties), st.floats(lo, hi))


BAD = st.sampled_from([math.nan, math.inf, -math.inf, 0.0])


@st.composite
def stream(draw, n_layer: int, profile: str) -> list[float]:
    """The RMS after the embedding and after each of ``n_layer`` blocks."""
    emb = draw(_value(0.01, 1.0, (0.03, 0.1)))
    first = draw(_value(0.05, 10.0, (1.0, 2.0)))
    if profile == "flat":
        steps = [draw(_value(0.9, 1.1, (1.0,))) for _ in range(n_layer - 1)]
    elif profile == "up":
        steps = [draw(_value(1.0, 1.6, (1.0, 1.25))) for _ in range(n_layer - 1)]
    elif profile == "down":
        steps = [draw(_value(0.6, 1.0, (1.0, 0.8))) for _ in range(n_layer - 1)]
    else:
        steps = [draw(_value(0.3, 3.0, (1.0,))) for _ in range(n_layer - 1)]
    blocks = [first]
    for factor in steps:
        blocks.append(blocks[-1] * factor)
    rms = [emb, *blocks]
    if draw(st.sampled_from([False] * 9 + [True])):
        rms[draw(st.integers(0, n_layer))] = draw(BAD)
    return rms


PROFILES = st.sampled_from(["flat", "up", "down", "wander"])


def _record(kind: str, value: str, seed: int, lr: float, curves: dict, tau: float = 10.0) -> dict:
    """A run as ``labs.training.sets`` writes it (the fields the view reads)."""
    model = {"n_layer": len(curves["rms"][-1]) - 1, "n_embd": 48, "n_head": 4}
    model |= {"placement": "pre", "qk_norm": "off", kind: value}
    return {
        "placement": model["placement"],
        "qk_norm": model["qk_norm"],
        "lr": lr,
        "seed": seed,
        "config": {
            "model": model,
            "steps": curves["steps"][-1],
            "lr": lr,
            "batch_size": 16,
            "tau": tau,
        },  # fmt: skip
        "val_steps": curves["steps"],
        "val_loss": curves["loss"],
        "val_max_logit": curves["logit"],
        "val_hidden_rms": curves["rms"],
    }


@st.composite
def placement_data(draw) -> dict:
    placements = draw(st.lists(st.sampled_from(ORDER), min_size=1, max_size=5, unique=True))
    seeds = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True))
    n_layer, n_val = draw(st.integers(2, 5)), draw(st.integers(1, 4))
    steps = [10 * i for i in range(n_val)]
    base = {
        s: draw(st.lists(_value(1.0, 6.0, (2.0,)), min_size=n_val, max_size=n_val)) for s in seeds
    }
    runs = []
    for p in placements:
        profile, offset = draw(PROFILES), draw(_value(-0.5, 0.5, (0.0, 0.001)))
        for seed in seeds:
            own = draw(st.sampled_from([False] * 5 + [True]))  # a seed unlike the others
            rms = [draw(stream(n_layer, draw(PROFILES) if own else profile)) for _ in steps]
            loss = [v + offset + draw(st.sampled_from([0.0, 0.0, 0.002, 0.3])) for v in base[seed]]
            if draw(st.sampled_from([False] * 9 + [True])):
                loss[draw(st.integers(0, n_val - 1))] = draw(BAD)
            curves = {"steps": steps, "loss": loss, "rms": rms, "logit": [1.0] * n_val}
            runs.append(_record("placement", p, seed, 3e-3, curves))
    return {"set": "placement", "data": {"runs": runs}}


LRS = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 0.3)


@st.composite
def qknorm_data(draw) -> dict:
    modes = draw(st.sampled_from([MODES, MODES, MODES[:2], ("off", "clip"), ("off",), ("rms",)]))
    tau = draw(st.sampled_from([3.0, 10.0, 30.0]))
    lrs = sorted(draw(st.lists(st.sampled_from(LRS), min_size=1, max_size=4, unique=True)))
    seeds = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True))
    n_val = draw(st.integers(1, 4))
    rising = draw(st.booleans())
    base = {s: draw(_value(1.5, 4.0, (2.0,))) for s in seeds}
    runs = []
    for mode in modes:
        shift = draw(st.sampled_from([0.0, 0.3, -0.3]))
        for i, lr in enumerate(lrs):
            for seed in seeds:
                if mode == "off" and rising:
                    top = draw(_value(1.0, 3.0, (2.0,))) * 10.0**i
                elif mode == "clip":
                    top = draw(_value(tau / 2, tau * 2, (tau,)))
                else:
                    top = draw(_value(0.5, 50.0, (4.0, 3.0)))
                logit = [top * draw(_value(0.1, 1.0, (1.0,))) for _ in range(n_val)]
                if draw(st.sampled_from([False] * 9 + [True])):
                    logit[draw(st.integers(0, n_val - 1))] = draw(BAD)
                loss = [draw(_value(1.5, 4.0, (2.0, 2.001))) for _ in range(n_val)]
                loss[-1] = base[seed] + shift + draw(st.sampled_from([0.0, 0.01, 0.2]))
                if draw(st.sampled_from([False] * 11 + [True])):
                    loss[-1] = draw(BAD)
                curves = {"steps": list(range(n_val)), "loss": loss, "logit": logit}
                curves["rms"] = [[0.1, 1.0, 1.0]] * n_val
                runs.append(_record("qk_norm", mode, seed, lr, curves, tau))
    return {"set": "qknorm", "data": {"runs": runs}}


STATES = st.one_of(
    st.sampled_from(["placement", "qknorm"]).map(lambda n: {"set": n, "data": "shipped"}),
    placement_data(),
    qknorm_data(),
)


def data_of(state: dict) -> dict:
    return shipped(state["set"]) if state["data"] == "shipped" else state["data"]


def view(state: dict):
    data = data_of(state)
    return placement_view(data) if state["set"] == "placement" else qknorm_view(data)


# --- The truth, from the records ---------------------------------------------------------------


def near(shown: float, expected: float, scale: float = 0.0) -> None:
    tol = RTOL * max(abs(expected), abs(scale))
    assert shown == expected or abs(shown - expected) <= tol, (shown, expected)


def sides(x: float, threshold: float, scale: float = 1.0) -> set[bool]:
    """Whether ``x > threshold``: {True}, {False}, or both within rounding of it."""
    tol = RTOL * max(abs(scale), abs(x), abs(threshold))
    if x > threshold + tol:
        return {True}
    if x <= threshold - tol:
        return {False}
    return {True, False}


def finite(values) -> bool:
    return all(math.isfinite(v) for v in values)


def mean(values) -> float:
    values = list(values)
    return math.fsum(values) / len(values)


def runs_of(state: dict, **where) -> list[dict]:
    """The runs with these fields, by seed."""
    runs = [r for r in data_of(state)["runs"] if all(r[k] == v for k, v in where.items())]
    return sorted(runs, key=lambda r: r["seed"])


def placements(state: dict) -> list[str]:
    return [p for p in ORDER if runs_of(state, placement=p)]


# --- Checks: placement ------------------------------------------------------------------------


def check_place_words(state: dict, claim) -> None:
    chart = claim.fields.get("chart", claim.key).removeprefix("training_sets.place_")
    chart = chart.split("_words")[0]
    groups = {}
    for p in placements(state):
        lines = []
        for r in runs_of(state, placement=p):
            if chart == "loss":
                lines.append((r["seed"], r["val_steps"], r["val_loss"]))
            else:
                final = r["val_hidden_rms"][-1]
                lines.append((r["seed"], list(range(len(final))), final))
        groups[p] = lines
    check_runs_words(claim, groups)


def last_block_growth(run: dict) -> tuple[float, float, float, float]:
    """(RMS after block 1, after the last block, last / first, highest / lowest block)."""
    blocks = run["val_hidden_rms"][-1][1:]
    return blocks[0], blocks[-1], blocks[-1] / blocks[0], max(blocks) / min(blocks)


def readable(run: dict) -> bool:
    rms = run["val_hidden_rms"][-1]
    return finite(rms) and all(v > 0 for v in rms[1:])


def check_depth(state: dict, claim) -> None:
    f = claim.fields
    (p,) = [p for p in ORDER if NAMES[p] == f["name"]]
    runs = runs_of(state, placement=p)
    n_layer = len(runs[0]["val_hidden_rms"][-1]) - 1
    assert n_layer >= 2
    if claim.key == "training_sets.place_depth_unreadable":
        assert not all(readable(r) for r in runs)
        return
    assert all(readable(r) for r in runs)
    rows = [last_block_growth(r) for r in runs]
    every = [v for r in runs for v in r["val_hidden_rms"][-1][1:]]
    assert f["blocks"] == n_layer and f["limit"] == BAND
    near(f["emb"], mean(r["val_hidden_rms"][-1][0] for r in runs))
    near(f["first"], mean(row[0] for row in rows))
    near(f["last"], mean(row[1] for row in rows))
    assert (f["lo"], f["hi"]) == (min(every), max(every))
    near(f["band"], max(row[3] for row in rows))
    near(f["factor_lo"], min(row[2] for row in rows))
    near(f["factor_hi"], max(row[2] for row in rows))
    outside = sides(max(row[3] for row in rows), BAND)
    kind = claim.key.removeprefix("training_sets.place_depth_")
    assert (False if kind.endswith("_within") else True) in outside, (kind, outside)
    up = all(row[1] > row[0] for row in rows)
    down = all(row[1] < row[0] for row in rows)
    direction = "grows" if up else "shrinks" if down else "mixed"
    assert kind.removesuffix("_within") == direction, (kind, rows)


def check_growth(state: dict, claim) -> None:
    """Two placements' growth from block 1 to the last, named by ``a`` and ``b``."""
    f = claim.fields
    factors = {}
    for side in ("a", "b"):
        (p,) = [p for p in ORDER if NAMES[p] == f[side]]
        runs = runs_of(state, placement=p)
        assert runs
        factors[side] = [r["val_hidden_rms"][-1][-1] / r["val_hidden_rms"][-1][1] for r in runs]
        assert finite(factors[side])
        near(f[f"{side}_lo"], min(factors[side]))
        near(f[f"{side}_hi"], max(factors[side]))
        assert f["blocks"] == len(runs[0]["val_hidden_rms"][-1]) - 1
    assert f["a"] != f["b"]
    a_more = min(factors["a"]) > max(factors["b"])
    b_more = min(factors["b"]) > max(factors["a"])
    expected = "a_more" if a_more else "b_more" if b_more else "overlap"
    assert claim.key == f"training_sets.place_growth_{expected}"


def pair_truth(a: list[float], b: list[float]) -> dict:
    """Two variants' final losses: the means, the gap and the larger max - min."""
    mean_a, mean_b = mean(a), mean(b)
    return {
        "a_loss": mean_a,
        "b_loss": mean_b,
        "gap": abs(mean_a - mean_b),
        "spread": max(max(a) - min(a), max(b) - min(b)),
        "seeds": min(len(a), len(b)),
    }


def check_place_loss(state: dict, claim) -> None:
    f = claim.fields
    kind = claim.key.removeprefix("training_sets.place_loss_")
    shown = (f["winner"], f["loser"]) if kind == "beyond" else (f["a"], f["b"])
    pair = [p for name in shown for p in ORDER if NAMES[p] == name]
    assert len(set(pair)) == 2, shown
    finals = {}
    for p in pair:
        runs = runs_of(state, placement=p)
        assert all(finite(r["val_loss"]) for r in runs)
        finals[p] = [r["val_loss"][-1] for r in runs]
    assert f["step"] == data_of(state)["runs"][0]["val_steps"][-1]
    truth = pair_truth(finals[pair[0]], finals[pair[1]])
    scale = max(abs(truth["a_loss"]), abs(truth["b_loss"]))
    if kind == "one_seed":
        assert truth["seeds"] == 1
        near(f["a_loss"], truth["a_loss"])
        near(f["b_loss"], truth["b_loss"])
        near(f["gap"], truth["gap"], scale)
        return
    assert truth["seeds"] >= 2
    near(f["spread"], truth["spread"])
    near(f["gap"], truth["gap"], scale)
    beyond = sides(truth["gap"], truth["spread"], scale)
    assert (kind == "beyond") in beyond
    if kind == "within":
        near(f["a_loss"], truth["a_loss"])
        near(f["b_loss"], truth["b_loss"])
        return
    means = {NAMES[pair[0]]: truth["a_loss"], NAMES[pair[1]]: truth["b_loss"]}
    assert means[f["winner"]] < means[f["loser"]]
    near(f["w_loss"], means[f["winner"]])
    near(f["l_loss"], means[f["loser"]])


def check_place_diverged(state: dict, claim) -> None:
    (p,) = [p for p in ORDER if NAMES[p] == claim.fields["name"]]
    assert not all(finite(r["val_loss"]) for r in runs_of(state, placement=p))


# --- Checks: QK norm ----------------------------------------------------------------------------


def qk_lrs(state: dict) -> list[float]:
    return sorted({r["lr"] for r in data_of(state)["runs"] if r["qk_norm"] in MODES})


def run_peak(run: dict) -> float:
    """A run's largest attention logit over its validations, up to where it diverged."""
    best = math.nan
    for v in run["val_max_logit"]:
        if math.isfinite(v) and not best >= v:
            best = v
    return best


def peaks(state: dict, mode: str, lr: float) -> list[float]:
    return [run_peak(r) for r in runs_of(state, qk_norm=mode, lr=lr)]


def finals(state: dict, mode: str, lr: float) -> list[float]:
    return [r["val_loss"][-1] for r in runs_of(state, qk_norm=mode, lr=lr)]


def check_qk_words(state: dict, claim) -> None:
    chart = claim.fields.get("chart", claim.key).removeprefix("training_sets.qk_")
    chart = chart.split("_words")[0]
    groups = {}
    for mode in MODES:
        if not any(r["qk_norm"] == mode for r in data_of(state)["runs"]):
            continue
        lines = []
        for seed in sorted({r["seed"] for r in data_of(state)["runs"]}):
            row = []
            for lr in qk_lrs(state):
                (run,) = runs_of(state, qk_norm=mode, lr=lr, seed=seed)
                row.append(run_peak(run) if chart == "logit" else run["val_loss"][-1])
            lines.append((seed, qk_lrs(state), row))
        groups[mode] = lines
    check_runs_words(claim, groups)


def comparable(state: dict) -> list[float]:
    """The learning rates where every run of both modes has a finite, positive peak."""
    return [
        lr
        for lr in qk_lrs(state)
        if all(math.isfinite(v) and v > 0 for m in MODES[:2] for v in peaks(state, m, lr))
    ]


def check_rise(state: dict, claim) -> None:
    lrs, f = comparable(state), claim.fields
    assert len(lrs) >= 2
    off = [mean(peaks(state, "off", lr)) for lr in lrs]
    rms = [mean(peaks(state, "rms", lr)) for lr in lrs]
    assert (f["lr_lo"], f["lr_hi"]) == (lrs[0], lrs[-1])
    for name, values in (("off", off), ("rms", rms)):
        near(f[f"{name}_first"], values[0])
        near(f[f"{name}_last"], values[-1])
        near(f[f"{name}_ratio"], values[-1] / values[0])
    rising = all(later > earlier for earlier, later in zip(off, off[1:], strict=False))
    assert claim.key == (
        "training_sets.qk_rise" if rising else "training_sets.qk_rise_not_in_order"
    )


def check_blowup(state: dict, claim) -> None:
    """Every plain run's peak over every QK-norm run's peak, at each comparable rate."""
    factors = {
        lr: min(peaks(state, "off", lr)) / max(peaks(state, "rms", lr)) for lr in comparable(state)
    }
    above = {lr: x for lr, x in factors.items() if x > 1}
    if claim.key == "training_sets.qk_blowup_none":
        assert not above, above
        return
    f = claim.fields
    top = max(above.values())
    best = min(lr for lr, x in above.items() if x == top)
    assert f["lr"] == best and f["first_lr"] == min(above)
    near(f["factor"], top)
    near(f["first_factor"], above[min(above)])
    assert (f["off_lo"], f["off_hi"]) == (
        min(peaks(state, "off", best)),
        max(peaks(state, "off", best)),
    )
    assert f["rms_hi"] == max(peaks(state, "rms", best))


def check_clip(state: dict, claim) -> None:
    """QK-Clip's peaks against its tau, and the plain runs' at the same learning rates."""
    f, lrs = claim.fields, qk_lrs(state)
    (tau,) = {r["config"]["tau"] for r in runs_of(state, qk_norm="clip")}
    clip = {lr: peaks(state, "clip", lr) for lr in lrs}
    off = {lr: peaks(state, "off", lr) for lr in lrs}
    assert all(finite(values) for values in [*clip.values(), *off.values()])
    tops = {lr: max(values) for lr, values in clip.items()}
    lr = min(lr for lr, top in tops.items() if top == max(tops.values()))
    over = sum(top > tau for top in tops.values())
    off_over = sum(max(values) > tau for values in off.values())
    assert f == {"tau": tau, "n": len(lrs), "over": over, "off_over": off_over, "lr": lr,
                 "clip_hi": tops[lr], "off_hi": max(off[lr])}  # fmt: skip
    assert claim.key == f"training_sets.qk_clip_{'over' if over else 'capped'}"


def check_qk_loss(state: dict, claim) -> None:
    f = claim.fields
    lr = f["lr"]
    assert lr in qk_lrs(state)
    mode, kind = claim.key.removeprefix("training_sets.qk_").split("_loss_")
    off, mine = finals(state, "off", lr), finals(state, mode, lr)
    if kind == "diverged":
        assert not (finite(off) and finite(mine))
        return
    assert finite(off) and finite(mine)
    truth = pair_truth(mine, off)
    scale = max(abs(truth["a_loss"]), abs(truth["b_loss"]))
    near(f[f"{mode}_loss"], truth["a_loss"])
    near(f["off_loss"], truth["b_loss"])
    near(f["gap"], truth["gap"], scale)
    if kind == "one_seed":
        assert truth["seeds"] == 1
        return
    assert truth["seeds"] >= 2
    near(f["spread"], truth["spread"])
    beyond = sides(truth["gap"], truth["spread"], scale)
    assert (kind != "within") in beyond
    if kind == "lower":
        assert truth["a_loss"] < truth["b_loss"]
    elif kind == "higher":
        assert truth["a_loss"] > truth["b_loss"]


def check_best(state: dict, claim) -> None:
    f = claim.fields
    for mode in MODES if claim.key.endswith("_clip") else MODES[:2]:
        means = {lr: mean(finals(state, mode, lr)) for lr in qk_lrs(state)
                 if finite(finals(state, mode, lr))}  # fmt: skip
        assert means
        lowest = min(means.values())
        assert f[f"{mode}_lr"] == min(lr for lr, m in means.items() if m == lowest)
        near(f[f"{mode}_loss"], lowest)


def check_not_finite(state: dict, claim) -> None:
    """A chart's count of the values it cannot draw."""
    (check_place_words if state["set"] == "placement" else check_qk_words)(state, claim)


CHECKS = {
    "charts.not_finite": check_not_finite,
    **{
        f"training_sets.place_{c}_words_{p}": check_place_words
        for c in ("loss", "rms")
        for p in ORDER
    },
    **{
        f"training_sets.place_depth_{k}": check_depth
        for d in ("grows", "shrinks", "mixed")
        for k in (d, f"{d}_within")
    },
    "training_sets.place_depth_unreadable": check_depth,
    **{f"training_sets.place_growth_{k}": check_growth for k in ("a_more", "b_more", "overlap")},
    **{f"training_sets.place_loss_{k}": check_place_loss for k in ("beyond", "within", "one_seed")},
    "training_sets.place_diverged": check_place_diverged,
    **{f"training_sets.qk_{c}_words_{m}": check_qk_words for c in ("logit", "loss") for m in MODES},
    "training_sets.qk_rise": check_rise,
    "training_sets.qk_rise_not_in_order": check_rise,
    "training_sets.qk_blowup": check_blowup,
    "training_sets.qk_blowup_none": check_blowup,
    "training_sets.qk_clip_capped": check_clip,
    "training_sets.qk_clip_over": check_clip,
    **{
        f"training_sets.qk_{m}_loss_{k}": check_qk_loss
        for m in ("rms", "clip")
        for k in ("lower", "higher", "within", "one_seed", "diverged")
    },
    "training_sets.qk_best": check_best,
    "training_sets.qk_best_clip": check_best,
}
