"""The training lab's sentences, recomputed from the runs' raw records with plain numpy.

States: the shipped runs (``assets/train/curves.json``), one real tiny live training of the
three variants, and synthetic ``TrainResult``s drawn by hypothesis: one to three variants, one
to three seeds, runs cut short at any step (none at all included), losses that diverge, equal
losses and equal step times (ties), forward timings present or missing, every stop reason.
Each check reads the records it was given (``state["records"]``), never the view's arrays.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import cache

import numpy as np
import torch
from hypothesis import strategies as st

from core.model import NORM_KINDS, ModelConfig, Norm
from core.reference import CURVES_FILE, REFERENCE_DIR
from core.speedlab import PAPER_SAVING
from core.train import TrainConfig, TrainResult, train_together
from core.training_view import reference_view, run_record, training_view

NAMES = {"rms": "RMSNorm", "layer": "LayerNorm", "none": "Identity"}
TINY = TrainConfig(
    model=ModelConfig(norm="rms", n_layer=1, n_head=2, n_embd=16, block_size=16),
    steps=6,
    batch_size=4,
    warmup=2,
    eval_every=3,
    eval_windows=4,
    timing_repeats=2,
)


@cache
def shipped() -> dict:
    return json.loads((REFERENCE_DIR / CURVES_FILE).read_text())


@cache
def tiny_live() -> tuple:
    configs = [replace(TINY, model=replace(TINY.model, norm=n)) for n in NORM_KINDS]
    return tuple(run_record(r) for r in train_together(configs))


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
    }


@st.composite
def synthetic_result(draw, norm: str, seed: int, base: dict, shape: dict) -> TrainResult:
    steps, every = shape["steps"], shape["every"]
    # Mostly the common length (runs trained together), sometimes cut short on their own.
    done = shape["done"] if draw(st.integers(0, 3)) else draw(st.integers(0, steps))
    val_steps = [s for s in range(done + 1) if s % every == 0 or s == steps]
    factor, offset = shape["factor"][norm], shape["offset"][norm]
    seconds = [factor * t for t in base["seconds"][:done]]
    train_loss = [offset + v for v in base["train"][:done]]
    val_loss = [offset + v for v in base["val"][: len(val_steps)]]
    if draw(st.sampled_from([False] * 7 + [True])):  # a run of its own, unlike its seed's others
        seconds = draw(_floats(1e-4, 0.2, done, (0.01,)))
        val_loss = draw(_floats(0.5, 6.0, len(val_steps), (1.5,)))
    if val_loss and draw(st.sampled_from([False] * 8 + [True])):
        val_loss[-1] = draw(st.sampled_from([math.nan, math.inf]))
    stopped = "steps" if done == steps else draw(st.sampled_from(["wall_clock", "work", None]))
    timed = stopped == "steps" and draw(st.sampled_from([True, True, False]))
    forward = draw(st.floats(1e-3, 0.1))
    config = TrainConfig(
        model=ModelConfig(norm=norm, n_layer=1, n_head=2, n_embd=8, block_size=8),
        steps=steps,
        warmup=0,
        eval_every=every,
        seed=seed,
        max_seconds=shape["cap"],
    )
    return TrainResult(
        config=config,
        parameters=100,
        train_loss=train_loss,
        step_seconds=seconds,
        elapsed_seconds=np.cumsum(seconds).tolist(),
        val_steps=val_steps,
        val_loss=val_loss,
        stopped_by=stopped,
        forward_seconds=forward if timed else None,
        forward_identity_seconds=forward * (1 - draw(SHARES[norm])) if timed else None,
    )


FACTORS = st.one_of(st.sampled_from([0.3, 0.5, 0.8, 0.95, 1.0, 1.2, 2.0]), st.floats(0.1, 10.0))
OFFSETS = st.one_of(st.sampled_from([0.0, 0.002, 0.01, 0.5]), st.floats(-0.5, 0.5))
# The norms' share of a forward pass: typical values (the variant without a norm times noise)
# and anything from -50 % to 90 %.
SHARES = {
    norm: st.one_of(st.sampled_from(typical), st.floats(-0.5, 0.9))
    for norm, typical in {
        "rms": (0.4, 0.3),
        "layer": (0.2, 0.1),
        "none": (0.0, 0.01, -0.01),
    }.items()
}
MACHINES = st.fixed_dictionaries(
    {
        "cpu_count": st.integers(1, 64),
        "threads": st.integers(1, 8),
        "load_average_before": st.lists(st.sampled_from([0.0, 1.0, 2.5]), min_size=3, max_size=3),
        "load_average_after": st.lists(st.sampled_from([0.0, 1.0, 8.0]), min_size=3, max_size=3),
        "total_seconds": st.floats(0.0, 3600.0),
    }
)


@st.composite
def synthetic(draw) -> dict:
    norms = draw(st.lists(st.sampled_from(NORM_KINDS), min_size=1, max_size=3, unique=True))
    seeds = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True))
    steps, every = draw(st.integers(1, 30)), draw(st.integers(1, 12))
    shape = {
        "steps": steps,
        "every": every,
        "done": draw(st.one_of(st.just(steps), st.integers(0, steps))),
        "cap": draw(st.one_of(st.none(), st.floats(1.0, 60.0))),
        "factor": {n: draw(FACTORS) for n in NORM_KINDS},
        "offset": {n: draw(OFFSETS) for n in NORM_KINDS},
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
        run_record(draw(synthetic_result(norm, seed, bases[seed], shape)))
        for norm in norms
        for seed in seeds
    ]
    return {
        "records": records,
        "ref_spread": draw(st.one_of(st.none(), st.floats(0.0, 1.0))),
        "live": draw(st.booleans()),
        "machine": draw(st.one_of(st.none(), MACHINES)),
    }


def _named(name: str) -> dict:
    if name == "shipped":
        data = shipped()
        return {"records": data["runs"], "machine": data["machine"], "live": False, "shipped": 1}
    return {"records": list(tiny_live()), "machine": None, "live": True, "ref_spread": 0.04}


STATES = st.one_of(st.sampled_from(["shipped", "tiny_live"]).map(_named), synthetic())


def view(state: dict):
    if state.get("shipped"):
        return reference_view()
    return training_view(
        state["records"],
        reference_spread=state.get("ref_spread"),
        machine=state["machine"],
        live=state["live"],
    )


# --- The truth, from the records --------------------------------------------------------------


def runs_of(state: dict, norm: str) -> list[dict]:
    return [r for r in state["records"] if r["norm"] == norm]


def finite(runs: list[dict]) -> bool:
    return all(
        np.isfinite(r["train_loss"]).all() and np.isfinite(r["val_loss"]).all() for r in runs
    )


def equal_step(state: dict) -> int:
    common = None
    for r in state["records"]:
        common = set(r["val_steps"]) if common is None else common & set(r["val_steps"])
    return max(common) if common else 0


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


def near(shown: float, expected: float, rtol: float = 1e-12) -> None:
    assert math.isclose(shown, expected, rel_tol=rtol, abs_tol=1e-15), (shown, expected)


def mean_at(state: dict, norm: str, kind: str) -> float:
    runs = runs_of(state, norm)
    if kind == "steps":
        return float(np.mean([at_step(r, equal_step(state)) for r in runs]))
    return float(np.mean([at_time(r, equal_seconds(state))[0] for r in runs]))


# --- Checks -----------------------------------------------------------------------------------


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
    if claim.key.endswith("_tie"):
        assert a == b and f["loss"] == a
        return
    assert a != b
    assert (f["winner"], f["loser"]) == (
        ("RMSNorm", "LayerNorm") if a < b else ("LayerNorm", "RMSNorm")
    )
    near(f["w_loss"], min(a, b))
    near(f["l_loss"], max(a, b))
    near(f["gap"], abs(a - b), rtol=1e-9)
    if claim.key in ("training.time_gap_within_spread", "training.time_gap_beyond_spread"):
        T = equal_seconds(state)
        spread = max(
            np.ptp([at_time(r, T)[0] for r in runs_of(state, n)]) for n in ("rms", "layer")
        )
        near(f["spread"], spread)
        assert (abs(a - b) <= spread) == claim.key.endswith("within_spread")
        assert min(len(runs_of(state, n)) for n in ("rms", "layer")) >= 2
    elif kind == "time":
        assert min(len(runs_of(state, n)) for n in ("rms", "layer")) == 1


def check_untrained(state: dict, claim) -> None:
    _both_finite(state, "steps" if "steps" in claim.key else "time")
    if claim.key == "training.steps_untrained":
        assert equal_step(state) == 0
    else:
        T = equal_seconds(state)
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
    spread = max(np.ptp([at_step(r, step) for r in runs]) for runs in (rms, layer))
    near(f["spread"], spread)
    near(f["gap"], abs(a - b), rtol=1e-9)
    assert f["step"] == step
    assert (abs(a - b) <= spread) == (claim.key == "training.spread_exceeds_gap")
    by_seed = {r["seed"]: at_step(r, step) for r in layer}
    pairs = [(at_step(r, step), by_seed[r["seed"]]) for r in rms if r["seed"] in by_seed]
    assert f["pairs"] == len(pairs) and f["wins"] == sum(x < y for x, y in pairs)


def check_none(state: dict, claim) -> None:
    none = runs_of(state, "none")
    assert none and finite(none)
    others = {
        n: mean_at(state, n, "steps")
        for n in ("rms", "layer")
        if runs_of(state, n) and finite(runs_of(state, n))
    }
    others = {n: v for n, v in others.items() if math.isfinite(v)}
    best = min(others, key=others.get)
    mine = mean_at(state, "none", "steps")
    f = claim.fields
    assert f["best"] == NAMES[best]
    near(f["none_loss"], mine)
    near(f["best_loss"], others[best])
    expected = "higher" if mine > others[best] else "lower" if mine < others[best] else "tie"
    assert claim.key == f"training.none_{expected}"
    near(f["diff"], abs(mine - others[best]), rtol=1e-9)


def check_diverged(state: dict, claim) -> None:
    norm = claim.key.rsplit("_", 1)[-1]
    assert not finite(runs_of(state, norm))


def paired_ratios(state: dict) -> list[float]:
    layer = {r["seed"]: r for r in runs_of(state, "layer")}
    out = []
    for a in runs_of(state, "rms"):
        b = layer.get(a["seed"])
        if b is None:
            continue
        n = min(len(a["step_seconds"]), len(b["step_seconds"]))
        if n < 2:
            continue
        for lo, hi in ((0, n // 2), (n // 2, n)):
            out.append(np.median(a["step_seconds"][lo:hi]) / np.median(b["step_seconds"][lo:hi]))
    return out


def pooled_ms(state: dict, norm: str) -> float:
    return 1e3 * float(np.median(sum((r["step_seconds"] for r in runs_of(state, norm)), [])))


def check_step_time(state: dict, claim) -> None:
    f, ratios = claim.fields, paired_ratios(state)
    ratio = pooled_ms(state, "rms") / pooled_ms(state, "layer")
    near(f["rms_ms"], pooled_ms(state, "rms"))
    near(f["layer_ms"], pooled_ms(state, "layer"))
    near(f["ratio"], ratio, rtol=1e-9)
    assert f["pairs"] == len(ratios) >= 2
    near(f["lo"], min(ratios))
    near(f["hi"], max(ratios))
    order = "slower" if min(ratios) > 1 else "faster" if max(ratios) < 1 else "mixed"
    assert claim.key == f"training.step_time_{order}"


def shares(state: dict) -> list[tuple[float, float]]:
    def share(r):
        fwd, ident = r.get("forward_seconds"), r.get("forward_identity_seconds")
        return None if fwd is None or ident is None else (fwd - ident) / fwd

    layer = {r["seed"]: share(r) for r in runs_of(state, "layer")}
    return [
        (share(r), layer[r["seed"]])
        for r in runs_of(state, "rms")
        if share(r) is not None and layer.get(r["seed"]) is not None
    ]


def check_share(state: dict, claim) -> None:
    pairs = shares(state)
    if claim.key == "training.share_unmeasured":
        assert not pairs
        return
    f = claim.fields
    assert f["pairs"] == len(pairs) >= 1
    near(f["rms_pct"], float(np.median([a for a, _ in pairs])), rtol=1e-9)
    near(f["layer_pct"], float(np.median([b for _, b in pairs])), rtol=1e-9)
    larger = (
        "rms_larger" if all(a > b for a, b in pairs)
        else "layer_larger" if all(a < b for a, b in pairs)
        else "mixed"
    )  # fmt: skip
    assert claim.key == f"training.share_{larger}"


def share_of(run: dict) -> float | None:
    fwd, ident = run.get("forward_seconds"), run.get("forward_identity_seconds")
    return None if fwd is None or ident is None else (fwd - ident) / fwd


def check_noise(state: dict, claim) -> None:
    noise = [share_of(r) for r in runs_of(state, "none") if share_of(r) is not None]
    f = claim.fields
    assert noise
    near(f["lo_pct"], min(noise), rtol=1e-9)
    near(f["hi_pct"], max(noise), rtol=1e-9)
    diffs = [abs(a - b) for a, b in shares(state)]
    if claim.key == "training.noise_only":
        assert not diffs
        return
    near(f["diff_pct"], min(diffs), rtol=1e-9)
    below = max(abs(v) for v in noise) < min(diffs)
    assert claim.key == ("training.noise_below" if below else "training.noise_above")


def autograd_nodes(kind: str) -> list[str]:
    """The backward graph of one norm layer, walked recursively (names, gradient sinks out)."""
    x = torch.arange(1.0, 9.0).reshape(1, 2, 4).requires_grad_()
    layer = Norm(kind, 4, 1e-5, "final")
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
    ratio = pooled_ms(state, "rms") / pooled_ms(state, "layer")
    pairs = shares(state)
    slower = ratio > 1 or (bool(pairs) and all(a > b for a, b in pairs))
    assert (claim.key == "training.why_slower") == slower


def check_paper(state: dict, claim) -> None:
    f, ratios = claim.fields, paired_ratios(state)
    ratio = pooled_ms(state, "rms") / pooled_ms(state, "layer")
    saving = 1 - ratio
    assert (f["paper_lo_pct"], f["paper_hi_pct"]) == PAPER_SAVING == (0.07, 0.64)
    near(f["ratio"], ratio, rtol=1e-9)
    all_slower, all_faster = min(ratios) > 1, max(ratios) < 1
    if claim.key == "training.paper_unresolved":
        assert not (all_slower and saving < 0) and not (all_faster and saving >= 0)
        return
    near(f["saving_pct"], abs(saving), rtol=1e-9)
    if claim.key == "training.paper_slower":
        assert saving < 0 and all_slower
        return
    assert saving >= 0 and all_faster
    lo, hi = PAPER_SAVING
    expected = "below" if saving < lo else "within" if saving <= hi else "above"
    assert claim.key == f"training.paper_{expected}"


def check_machine(state: dict, claim) -> None:
    machine = state["machine"]
    f = claim.fields
    before, after = machine["load_average_before"][0], machine["load_average_after"][0]
    assert (f["before"], f["after"]) == (before, after)
    assert f["cpus"] == machine["cpu_count"] and f["threads"] == machine["threads"]
    assert abs(f["minutes"] - machine["total_seconds"] / 60) <= 0.05
    expected = "rose" if after > before else "fell" if after < before else "same"
    assert claim.key == f"training.machine_load_{expected}"


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


CHECKS = {
    **{f"training.{k}": check_gap for k in ("steps_gap", "steps_tie", "time_gap", "time_tie")},
    "training.time_gap_within_spread": check_gap,
    "training.time_gap_beyond_spread": check_gap,
    "training.steps_untrained": check_untrained,
    "training.time_untrained": check_untrained,
    **{
        f"training.{k}": check_spread
        for k in ("spread_exceeds_gap", "gap_exceeds_spread", "spread_one_seed", "spread_unknown")
    },
    **{f"training.none_{k}": check_none for k in ("higher", "lower", "tie")},
    **{f"training.diverged_{n}": check_diverged for n in NORM_KINDS},
    **{f"training.step_time_{k}": check_step_time for k in ("slower", "faster", "mixed")},
    **{
        f"training.share_{k}": check_share
        for k in ("rms_larger", "layer_larger", "mixed", "unmeasured")
    },
    **{f"training.noise_{k}": check_noise for k in ("only", "below", "above")},
    "training.why_slower": check_why,
    "training.why_not_slower": check_why,
    **{
        f"training.paper_{k}": check_paper
        for k in ("within", "below", "above", "slower", "unresolved")
    },
    **{f"training.machine_load_{k}": check_machine for k in ("rose", "fell", "same")},
    **{
        f"training.stopped_{k}": check_stopped
        for k in ("steps", "wall_clock", "work", "interrupted")
    },
}
