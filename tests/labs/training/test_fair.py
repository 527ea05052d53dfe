"""labs.training.fair and labs.training.fair_view: the interleaved measurement, its record, the
shipped measurement, and records the view refuses.

The measurement here times the kernels of separate operations only (numba's kernels are called
in tests/labs/training/test_kernels.py alone); the shipped record holds every variant.
"""

from __future__ import annotations

import copy
import json
import statistics

import numpy as np
import pytest

from labs.training.claims import MIN_PAIRS
from labs.training.fair import (
    DYT,
    FAIR_KERNELS,
    FAIR_NORMS,
    KERNELS_FILE,
    fair_variants,
    interleaved,
    load_kernels,
    measure,
)
from labs.training.fair_view import kernel_view
from labs.training.model import ModelConfig
from labs.training.runs import REFERENCE


def test_a_short_measurement_records_each_variant_and_writes_it(tmp_path) -> None:
    lines: list[str] = []
    variants = [("rms", "ops"), ("layer", "ops")]
    record = measure(tmp_path, steps=3, warmup=1, repeats=4, variants=variants, log=lines.append)
    assert load_kernels(tmp_path) == json.loads(json.dumps(record))
    assert (tmp_path / KERNELS_FILE).stat().st_size < 10_000
    assert [(v["norm"], v["kernel"]) for v in record["variants"]] == variants
    assert [v["autograd_nodes"] for v in record["variants"]] == [6, 9]
    assert record["norm_layers"] == 2 * REFERENCE.model.n_layer + 1
    assert record["model"]["n_embd"] == REFERENCE.model.n_embd == 48
    for v in record["variants"]:
        assert len(v["step_seconds"]) == 4 and len(v["layer_seconds"]) == 5
        assert all(t > 0 for t in v["step_seconds"] + v["layer_seconds"])
    # The same initial weights and batches: four steps leave the two norms' losses close.
    losses = [v["final_train_loss"] for v in record["variants"]]
    assert abs(losses[0] - losses[1]) < 0.05
    machine = record["machine"]
    assert machine["threads"] == 1 and len(machine["load_average_before"]) == 3
    assert len(lines) == 2 and "ms a step" in lines[0]


def test_each_round_runs_every_variant_once_in_a_shuffled_order() -> None:
    calls: list[tuple[int, int]] = []
    work = [lambda r, i=i: calls.append((r, i)) for i in range(4)]
    seconds = interleaved(work, 30, np.random.default_rng(0))
    assert [len(s) for s in seconds] == [30] * 4
    rounds = [[i for r, i in calls if r == k] for k in range(30)]
    assert all(sorted(order) == [0, 1, 2, 3] for order in rounds)
    assert len({tuple(order) for order in rounds}) > 5  # not one fixed order
    assert {order[0] for order in rounds} == {0, 1, 2, 3}  # each variant sometimes first


def test_dyt_is_measured_where_the_model_builds_it() -> None:
    try:
        builds = ModelConfig(norm=DYT).norm == DYT
    except ValueError:
        builds = False
    expected = [(n, k) for k in FAIR_KERNELS for n in FAIR_NORMS] + [(DYT, "lab")] * builds
    assert fair_variants() == expected


def test_the_shipped_measurement_compares_every_fair_variant() -> None:
    record = load_kernels()
    view = kernel_view(record)
    assert {(n, k) for k in FAIR_KERNELS for n in FAIR_NORMS} <= set(view.timings)
    warmup = record["warmup_steps"]
    for v in record["variants"]:
        assert len(v["step_seconds"]) - warmup >= 50 * MIN_PAIRS
        timing = view.timings[(v["norm"], v["kernel"])]
        assert timing.step_ms == pytest.approx(1e3 * statistics.median(v["step_seconds"][warmup:]))
    for kernel in FAIR_KERNELS:
        assert len(view.paired[("step", kernel)]) == MIN_PAIRS
        rms, layer = (view.timings[(n, kernel)] for n in FAIR_NORMS)
        assert (rms.autograd_nodes, layer.autograd_nodes) == ((6, 9) if kernel == "ops" else (1, 1))
    # Both kernels train the same model: after every step the same loss, up to float32 rounding
    # carried through the steps.
    finals = {(v["norm"], v["kernel"]): v["final_train_loss"] for v in record["variants"]}
    for norm in FAIR_NORMS:
        assert finals[(norm, "ops")] == pytest.approx(finals[(norm, "fused")], abs=1e-3)
    assert view.setup["steps"] == len(record["variants"][0]["step_seconds"]) - warmup


def _broken(change) -> dict:
    record = copy.deepcopy(load_kernels())
    change(record)
    return record


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r["variants"].pop(2), r"lacks \['rms/fused'\]"),
        (lambda r: r.update(warmup_steps=len(r["variants"][0]["step_seconds"]) - 1), "at least 2"),
        (lambda r: r["variants"][1]["layer_seconds"].__setitem__(-1, -1.0), "layer/ops layer"),
        (lambda r: r["variants"][0]["step_seconds"].__setitem__(-1, float("nan")), "rms/ops step"),
    ],
)
def test_a_record_the_view_cannot_compare_is_refused_by_name(change, message) -> None:
    with pytest.raises(ValueError, match=message):
        kernel_view(_broken(change))
