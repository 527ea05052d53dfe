"""The training lab's fair-kernels sentences, recomputed from the measurement's raw record with the
standard library (``statistics``, ``fractions``) and from the model itself (autograd's graph of a
norm layer, the norm layers of a model).

States: the shipped measurement (``assets/train/kernels.json``, read here with json), and
synthetic records drawn by hypothesis: the four fair variants and, where the model has it, DyT;
2 to 60 compared steps after 0 to 5 not compared; step and layer times that share a machine's
load with a factor per variant (equal times and ties included), or drawn on their own; machines
under any load.
"""

from __future__ import annotations

import json
import math
import statistics
from fractions import Fraction
from functools import cache

from hypothesis import strategies as st

from labs.speed.model import PAPER_SAVING
from labs.training.claims import MIN_PAIRS
from labs.training.fair import KERNELS_FILE
from labs.training.fair_view import kernel_view
from labs.training.model import GPT, ModelConfig, Norm
from labs.training.runs import REFERENCE_DIR
from tests.claims.training import autograd_nodes

KERNELS = ("ops", "fused")
NORMS = ("rms", "layer")
# A sentence that names the faster norm needs its parts to agree by chance less than 5 % of the
# time if the norms cost the same.
SIGNIFICANCE = Fraction(1, 20)
# Two float64 computations of one quantity in different orders: a few units in the last place.
RTOL = 16 * 2.0**-52
UNIT = {"step": 1e3, "layer": 1e6}  # ms and µs
FIELD = {"step": "step_seconds", "layer": "layer_seconds"}


# --- States -------------------------------------------------------------------------------------


@cache
def shipped() -> dict:
    return json.loads((REFERENCE_DIR / KERNELS_FILE).read_text())


@cache
def _variants() -> list[tuple[str, str]]:
    """The fair variants, and DyT where the model builds it."""
    try:
        extra = [("dyt", "lab")] if ModelConfig(norm="dyt") else []
    except ValueError:
        extra = []
    return [(n, k) for k in KERNELS for n in NORMS] + extra


FACTORS = st.one_of(st.sampled_from([0.5, 0.9, 1.0, 1.0, 1.1, 2.0]), st.floats(0.2, 5.0))
LOADS = st.one_of(st.sampled_from([0.0, 1.0, 2.0, 2.01, 10.6]), st.floats(0, 99))
MACHINES = st.fixed_dictionaries(
    {
        "cpu_count": st.sampled_from([1, 2, 16]),
        "threads": st.just(1),
        "load_average_before": st.lists(LOADS, min_size=3, max_size=3),
        "load_average_after": st.lists(LOADS, min_size=3, max_size=3),
        "total_seconds": st.floats(0.0, 900.0),
    }
)


@st.composite
def synthetic(draw) -> dict:
    """A record of the shape ``python -m labs.training.fair`` writes."""
    warmup, n = draw(st.integers(0, 5)), draw(st.integers(2, 60))
    times = st.lists(st.floats(1e-5, 0.3), min_size=warmup + n, max_size=warmup + n)
    load = {what: draw(times) for what in FIELD}
    variants = []
    for norm, kernel in draw(st.sampled_from([_variants(), _variants()[:4]])):
        own = draw(st.sampled_from([False] * 5 + [True]))  # times of its own, not the load's
        variant = {"norm": norm, "kernel": kernel, "autograd_nodes": graph_nodes(norm, kernel)}
        for what, field in FIELD.items():
            factor = draw(FACTORS)
            variant[field] = draw(times) if own else [factor * t for t in load[what]]
        variant["final_train_loss"] = 2.5
        variants.append(variant)
    record = {
        **{k: shipped()[k] for k in ("model", "batch_size", "norm_layers")},
        "machine": draw(MACHINES),
        "seed": draw(st.integers(0, 3)),
        "warmup_steps": warmup,
        "variants": variants,
    }
    return {"record": record}


STATES = st.one_of(st.just({"record": "shipped"}), synthetic())


def record_of(state: dict) -> dict:
    return shipped() if state["record"] == "shipped" else state["record"]


def view(state: dict):
    return kernel_view(record_of(state))


# --- The truth, from the record ----------------------------------------------------------------


def near(shown: float, expected: float) -> None:
    assert abs(shown - expected) <= RTOL * abs(expected) or shown == expected, (shown, expected)


def variant(state: dict, norm: str, kernel: str | None = None) -> dict:
    found = [
        v
        for v in record_of(state)["variants"]
        if v["norm"] == norm and (kernel is None or v["kernel"] == kernel)
    ]
    assert len(found) == 1, (norm, kernel)
    return found[0]


def has_dyt(state: dict) -> bool:
    return any(v["norm"] == "dyt" for v in record_of(state)["variants"])


def compared(state: dict, v: dict, what: str) -> list[float]:
    """The times after the warm-up."""
    return v[FIELD[what]][record_of(state)["warmup_steps"] :]


def median(state: dict, v: dict, what: str) -> float:
    return statistics.median(compared(state, v, what))


def part_ratios(a: list[float], b: list[float]) -> list[float]:
    """One run each: the times cut into MIN_PAIRS runs of consecutive entries (fewer when there
    are fewer entries, the longer parts first), a's median over b's in each part."""
    n = min(len(a), len(b))
    k = min(max(2, MIN_PAIRS), n)
    out, start = [], 0
    for i in range(k):
        stop = start + n // k + (1 if i < n % k else 0)
        ta, tb = statistics.median(a[start:stop]), statistics.median(b[start:stop])
        if tb > 0 and math.isfinite(ta / tb):
            out.append(ta / tb)
        start = stop
    return out


def orders(ratios: list[float]) -> set[str]:
    """The orders the sentence may state: all above 1, all below, neither; ratios within
    rounding of 1 allow either side."""
    enough = 2 * Fraction(1, 2) ** len(ratios) <= SIGNIFICANCE
    out = set()
    if all(r > 1 - RTOL for r in ratios):
        out.add("slower" if enough else "few")
    if all(r < 1 + RTOL for r in ratios):
        out.add("faster" if enough else "few")
    if not (all(r > 1 + RTOL for r in ratios) or all(r < 1 - RTOL for r in ratios)):
        out.add("mixed")
    return out


def comparison(state: dict, kernel: str, what: str) -> tuple[float, list[float]]:
    rms, layer = variant(state, "rms", kernel), variant(state, "layer", kernel)
    ratio = median(state, rms, what) / median(state, layer, what)
    return ratio, part_ratios(compared(state, rms, what), compared(state, layer, what))


# --- Checks ---------------------------------------------------------------------------------------


def check_words(state: dict, claim) -> None:
    what = "step" if claim.key.startswith("training.fair_step") else "layer"
    assert claim.key.endswith("_dyt") == has_dyt(state)
    for kernel in KERNELS:
        for norm in NORMS:
            v = variant(state, norm, kernel)
            near(claim.fields[f"{norm}_{kernel}"], UNIT[what] * median(state, v, what))
    if has_dyt(state):
        near(claim.fields["dyt"], UNIT[what] * median(state, variant(state, "dyt"), what))


@cache
def graph_nodes(norm: str, kernel: str) -> int:
    """The backward graph of one norm layer with this kernel, walked recursively: its nodes
    but the gradient sinks of the leaves."""
    return len(autograd_nodes(norm, kernel))


def check_graph(state: dict, claim) -> None:
    assert claim.key.endswith("_dyt") == has_dyt(state)
    expected = {f"{n}_{k}": graph_nodes(n, k) for k in KERNELS for n in NORMS}
    if has_dyt(state):
        expected["dyt"] = graph_nodes("dyt", variant(state, "dyt")["kernel"])
    assert dict(claim.fields) == expected
    # Separate operations: RMSNorm's pow, mean, add, rsqrt, mul, mul; LayerNorm's centring
    # (mean, sub) and bias (add) on top. Fused: one node each.
    assert (expected["rms_ops"], expected["layer_ops"]) == (6, 9)
    assert (expected["rms_fused"], expected["layer_fused"]) == (1, 1)
    # DyT, weight * tanh(alpha * x) + bias: mul, tanh, mul, add.
    assert expected.get("dyt", 4) == 4


def check_timing(state: dict, claim) -> None:
    """A step's or the layer's RMSNorm / LayerNorm with one kernel, and its parts."""
    what = "step" if claim.key.startswith("training.fair_step") else "layer"
    f, unit = claim.fields, "ms" if what == "step" else "us"
    ratio, parts = comparison(state, f["kernel"], what)
    near(f["ratio"], ratio)
    near(f[f"rms_{unit}"], UNIT[what] * median(state, variant(state, "rms", f["kernel"]), what))
    near(f[f"layer_{unit}"], UNIT[what] * median(state, variant(state, "layer", f["kernel"]), what))
    assert f["pairs"] == len(parts) >= 2
    near(f["lo"], min(parts))
    near(f["hi"], max(parts))
    assert Fraction(f["chance_pct"]) == 2 * Fraction(1, 2) ** len(parts)
    assert claim.key.rsplit("_", 1)[-1] in orders(parts), (claim.key, parts)


def paper_keys(saving: float, parts: list[float]) -> set[str]:
    """The sentences that fit: beside the paper's range where the parts settle the sign of the
    saving (the side they agree on is the side of the medians' ratio), unresolved otherwise."""
    lo, hi = PAPER_SAVING
    keys = set()
    for order in orders(parts):
        if (order, saving < 0) in (("slower", True), ("faster", False)):
            keys.add(
                "slower"
                if saving < 0
                else "below"
                if saving < lo
                else "within"
                if saving <= hi
                else "above"
            )
        else:
            keys.add("unresolved")
    return keys


def check_paper(state: dict, claim) -> None:
    f = claim.fields
    what = "step" if claim.key.startswith("training.fair_step") else "layer"
    ratio, parts = comparison(state, f["kernel"], what)
    assert (f["paper_lo_pct"], f["paper_hi_pct"]) == PAPER_SAVING == (0.07, 0.64)
    near(f["ratio"], ratio)
    key = claim.key.rsplit("_paper_", 1)[1]
    assert key in paper_keys(1 - ratio, parts), (key, ratio, parts)
    if key != "unresolved":
        near(f["saving_pct"], abs(1 - ratio))


def norm_layers(state: dict) -> int:
    """The norm layers of the model the record was measured with, counted in the model."""
    shape = {k: record_of(state)["model"][k] for k in ("n_layer", "n_head", "n_embd", "block_size")}
    model = GPT(ModelConfig(**shape, norm="rms"))
    return sum(isinstance(m, Norm) for m in model.modules())


def check_share(state: dict, claim) -> None:
    layers = norm_layers(state)
    assert claim.fields["layers"] == record_of(state)["norm_layers"] == layers
    for kernel in KERNELS:
        for norm in NORMS:
            v = variant(state, norm, kernel)
            share = layers * median(state, v, "layer") / median(state, v, "step")
            near(claim.fields[f"{norm}_{kernel}_pct"], share)


def check_dyt(state: dict, claim) -> None:
    if claim.key == "training.fair_dyt_unmeasured":
        assert not has_dyt(state)
        return
    dyt = compared(state, variant(state, "dyt"), "step")
    f, kinds = claim.fields, []
    for norm in NORMS:
        other = compared(state, variant(state, norm, "ops"), "step")
        near(f[f"{norm}_ms"], 1e3 * statistics.median(other))
        near(f[f"{norm}_ratio"], statistics.median(dyt) / statistics.median(other))
        kinds.append(orders(part_ratios(dyt, other)))
        assert f["pairs"] == len(part_ratios(dyt, other))
    near(f["dyt_ms"], 1e3 * statistics.median(dyt))
    # Faster or slower only where the parts with both norms agree on that side.
    possible = {a if a == b and a in ("faster", "slower") else "unsettled"
                for a in kinds[0] for b in kinds[1]}  # fmt: skip
    assert claim.key.removeprefix("training.fair_dyt_") in possible, (claim.key, kinds)


def check_machine(state: dict, claim) -> None:
    """A 1-minute load average above the core count: tasks waited for a core."""
    machine, f = record_of(state)["machine"], claim.fields
    before, after = machine["load_average_before"][0], machine["load_average_after"][0]
    assert (f["before"], f["after"]) == (before, after)
    assert f["cpus"] == machine["cpu_count"] and f["threads"] == machine["threads"]
    assert abs(f["minutes"] - machine["total_seconds"] / 60) <= 0.05
    waited = max(before, after) > machine["cpu_count"]
    assert claim.key == f"training.machine_{'contended' if waited else 'uncontended'}"


CHECKS = {
    **{
        f"training.fair_{what}_words{dyt}": check_words
        for what in ("step", "layer")
        for dyt in ("", "_dyt")
    },
    "training.fair_graph": check_graph,
    "training.fair_graph_dyt": check_graph,
    **{
        f"training.fair_{what}_{order}": check_timing
        for what in ("step", "layer")
        for order in ("slower", "faster", "mixed", "few")
    },
    **{
        f"training.fair_{what}_paper_{k}": check_paper
        for what in ("step", "layer")
        for k in ("within", "below", "above", "slower", "unresolved")
    },
    "training.fair_share": check_share,
    **{
        f"training.fair_dyt_{k}": check_dyt for k in ("faster", "slower", "unsettled", "unmeasured")
    },
    "training.machine_contended": check_machine,
    "training.machine_uncontended": check_machine,
}
