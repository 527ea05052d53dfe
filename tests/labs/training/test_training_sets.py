"""The two sets beyond the two norms (labs.training.sets, sets_view, sets_claims): a quick run of
each writes the file it documents and reads back into the page's view; hand-made records reach
every sentence's branch, each checked by its independent oracle (tests/claims/training_sets.py);
a file that is not a grid is refused."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from labs.training.model import PLACEMENTS
from labs.training.runs import SETS
from labs.training.sets import (
    PLACEMENT,
    QKNORM,
    QKNORM_MODES,
    QKNORM_TAU,
    SET_FILES,
    load_set,
    make_placement,
    make_qknorm,
    placement_configs,
    qknorm_configs,
)
from labs.training.sets_view import placement_view, qknorm_view
from labs.training.train import TrainConfig
from tests.claims.training_sets import CHECKS
from ui.i18n import translator


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> dict:
    """Both sets, two steps each: one seed, and one learning rate for QK norm."""
    out = tmp_path_factory.mktemp("sets")
    made = {
        "placement": make_placement(out, steps=2, seeds=(0,), log=lambda _: None),
        "qknorm": make_qknorm(out, steps=2, seeds=(0,), lrs=(3e-2,), log=lambda _: None),
    }
    return {"dir": out, "made": made}


def test_a_quick_run_writes_the_file_it_documents(quick) -> None:
    for name, expected in (("placement", 5), ("qknorm", 3)):
        path = quick["dir"] / SET_FILES[name]
        assert quick["made"][name]["file"] == str(path) and quick["made"][name]["runs"] == expected
        data = json.loads(path.read_text())
        assert data["set"] == name and len(data["runs"]) == expected
        machine = data["machine"]
        assert machine["threads"] == 1 and len(machine["load_average_before"]) == 3
        assert machine["total_seconds"] > 0 and data["data"]["source"] == "pydoc_data.topics"
        for run in data["runs"]:
            n_layer = run["config"]["model"]["n_layer"]
            assert run["stopped_by"] == "steps" and run["steps_done"] == 2
            assert run["val_steps"] == [0, 1, 2]
            assert len(run["val_loss"]) == len(run["val_max_logit"]) == 3
            assert [len(row) for row in run["val_hidden_rms"]] == [n_layer + 1] * 3
            for value in run["val_max_logit"] + [v for row in run["val_hidden_rms"] for v in row]:
                assert float(f"{value:.7g}") == value  # seven significant digits
            assert all(round(v, 8) == v for v in run["val_loss"])
    placement = load_set("placement", quick["dir"])
    assert {r["placement"] for r in placement["runs"]} == set(PLACEMENTS)
    assert {r["config"]["model"]["n_layer"] for r in placement["runs"]} == {PLACEMENT.model.n_layer}
    qk = load_set("qknorm", quick["dir"])
    assert [(r["qk_norm"], r["lr"]) for r in qk["runs"]] == [(m, 3e-2) for m in QKNORM_MODES]
    assert {r["config"]["tau"] for r in qk["runs"]} == {QKNORM_TAU}
    assert {r["config"]["model"]["n_layer"] for r in qk["runs"]} == {QKNORM.model.n_layer}


def test_the_quick_sets_read_into_the_pages_view(quick) -> None:
    view = placement_view(load_set("placement", quick["dir"]))
    assert view.placements == PLACEMENTS and view.n_layer == 8
    assert view.hidden_rms["peri"].shape == (1, 9) and view.val_loss["pre"].shape == (1, 3)
    assert view.claims["loss_pre_post"].key == "training_sets.place_loss_one_seed"
    qk = qknorm_view(load_set("qknorm", quick["dir"]))
    assert qk.modes == ("off", "rms", "clip") and qk.lrs.tolist() == [3e-2]
    assert "rise" not in qk.claims  # one learning rate: no trend to state
    assert qk.claims["rms_loss_0"].key == "training_sets.qk_rms_loss_one_seed"
    assert qk.claims["clip_loss_0"].key == "training_sets.qk_clip_loss_one_seed"
    assert qk.setup["tau"] == QKNORM_TAU


def test_the_runs_script_makes_both_sets() -> None:
    assert SETS["placement"] is make_placement and SETS["qknorm"] is make_qknorm


@pytest.mark.parametrize("name", ["placement", "qknorm"])
def test_the_shipped_sets_are_what_the_script_trains_with_three_seeds(name: str) -> None:
    """Every variant (and learning rate) of a shipped set has at least three seeds, as every new
    variant must, and the file holds the runs the script's configs describe, in their order."""
    runs = load_set(name)["runs"]
    configs = (placement_configs if name == "placement" else qknorm_configs)()
    assert [TrainConfig.from_dict(r["config"]) for r in runs] == configs
    seeds: dict[tuple, set] = {}
    for r in runs:
        seeds.setdefault((r["placement"], r["qk_norm"], r["lr"]), set()).add(r["seed"])
    assert min(len(s) for s in seeds.values()) >= 3, seeds


# --- Every branch, from records made by hand --------------------------------------------------


def run(kind: str, value: str, seed: int, loss: list, rms: list, logit: list, lr=3e-3) -> dict:
    model = {"n_layer": len(rms) - 1, "n_embd": 48, "n_head": 4, "placement": "pre"}
    model |= {"qk_norm": "off", kind: value}
    steps = list(range(len(loss)))
    return {
        "placement": model["placement"],
        "qk_norm": model["qk_norm"],
        "lr": lr,
        "seed": seed,
        "config": {"model": model, "steps": steps[-1], "lr": lr, "tau": 10.0},
        "val_steps": steps,
        "val_loss": loss,
        "val_max_logit": logit,
        "val_hidden_rms": [rms] * len(loss),
    }


STREAMS = {
    "grows": [[0.1, 1.0, 1.5, 2.0], [0.1, 1.0, 2.0, 3.0]],
    "grows_within": [[0.1, 1.0, 1.05, 1.1], [0.1, 1.0, 1.1, 1.2]],
    "shrinks": [[0.1, 2.0, 1.5, 1.0], [0.1, 3.0, 2.0, 1.0]],
    "shrinks_within": [[0.1, 1.2, 1.1, 1.0], [0.1, 1.1, 1.05, 1.0]],
    "mixed": [[0.1, 1.0, 3.0, 2.0], [0.1, 2.0, 3.0, 1.0]],
    "mixed_within": [[0.1, 1.0, 1.1, 1.05], [0.1, 1.1, 1.2, 1.0]],
    "unreadable": [[0.1, 1.0, math.nan, 1.0], [0.1, 0.0, 1.0, 1.0]],
}


def check(state: dict, claim) -> None:
    CHECKS[claim.key](state, claim)
    for lang in ("en", "id"):
        assert translator(lang).claim(claim)


@pytest.mark.parametrize("kind", sorted(STREAMS))
def test_every_depth_sentence_is_reached_and_holds(kind: str) -> None:
    losses = {"pre": [5.5, 2.0], "peri": [5.5, 2.5]}
    runs = [
        run("placement", p, seed, [v + 0.01 * seed for v in losses[p]], rms, [1.0, 2.0])
        for p, streams in (("pre", STREAMS[kind]), ("peri", STREAMS["grows"]))
        for seed, rms in enumerate(streams)
    ]
    state = {"set": "placement", "data": {"runs": runs}}
    view = placement_view(state["data"])
    assert view.claims["depth_pre"].key == f"training_sets.place_depth_{kind}"
    assert view.claims["loss_pre_peri"].key == "training_sets.place_loss_beyond"
    for claim in view.claims.values():
        check(state, claim)


@pytest.mark.parametrize(
    ("pre_loss", "peri_loss", "seeds", "loss_key", "growth_key"),
    [
        ([2.0, 2.1], [2.05, 2.15], 2, "within", "growth_b_more"),
        ([2.0, math.nan], [2.0, 2.5], 2, None, "growth_b_more"),
        ([2.0], [2.3], 1, "one_seed", "growth_overlap"),
    ],
)
def test_loss_and_growth_sentences_follow_the_spread(
    pre_loss, peri_loss, seeds, loss_key, growth_key
) -> None:
    streams = {"pre": STREAMS["grows_within"], "peri": STREAMS["grows"]}
    if seeds == 1:
        streams = {"pre": [STREAMS["grows"][1]], "peri": [STREAMS["grows"][1]]}
    runs = [
        run("placement", p, seed, [5.5, loss], streams[p][seed], [1.0, 2.0])
        for p, losses in (("pre", pre_loss), ("peri", peri_loss))
        for seed, loss in enumerate(losses)
    ]
    state = {"set": "placement", "data": {"runs": runs}}
    claims = placement_view(state["data"]).claims
    assert claims["growth_peri"].key == f"training_sets.place_{growth_key}"
    if loss_key is None:
        assert "loss_pre_peri" not in claims
        assert claims["diverged_pre"].key == "training_sets.place_diverged"
    else:
        assert claims["loss_pre_peri"].key == f"training_sets.place_loss_{loss_key}"
    for claim in claims.values():
        check(state, claim)


def test_overlapping_growth_ranges_say_nothing_about_every_seed() -> None:
    """Seed by seed Pre-LN's stream grows more (1.2x and 3x against 1.1x and 2x), yet the ranges
    overlap: the sentence is the overlap one, and it must not say that neither grew more in
    every seed (it once did)."""
    streams = {
        "pre": [[0.1, 1.0, 1.1, 1.2], [0.1, 1.0, 2.0, 3.0]],
        "peri": [[0.1, 1.0, 1.05, 1.1], [0.1, 1.0, 1.5, 2.0]],
    }
    runs = [
        run("placement", p, seed, [5.5, 2.0 + 0.01 * seed], rms, [1.0, 2.0])
        for p, rows in streams.items()
        for seed, rms in enumerate(rows)
    ]
    state = {"set": "placement", "data": {"runs": runs}}
    view = placement_view(state["data"])
    assert np.all(view.growth["pre"] > view.growth["peri"])  # seed by seed
    claim = view.claims["growth_peri"]
    assert claim.key == "training_sets.place_growth_overlap"
    check(state, claim)
    assert "every seed" not in translator("en").claim(claim)
    assert "setiap seed" not in translator("id").claim(claim)


def qk_state(peaks: dict, losses: dict, lrs=(1e-3, 1e-2, 1e-1)) -> dict:
    """Runs of each mode of ``peaks``, two seeds: ``peaks[mode]`` and ``losses[mode]`` per seed
    and rate."""
    runs = [
        run("qk_norm", mode, seed, [5.5, losses[mode][seed][i]], [0.1, 1.0, 1.0],
            [1.0, peaks[mode][seed][i]], lr=lr)
        for mode in peaks
        for seed in (0, 1)
        for i, lr in enumerate(lrs)
    ]  # fmt: skip
    return {"set": "qknorm", "data": {"runs": runs}}


@pytest.mark.parametrize(
    ("off", "rms", "rise", "blowup"),
    [
        ([[3, 30, 3000], [4, 40, 5000]], [[4, 4, 9], [3, 5, 8]], "rise", "blowup"),
        ([[3, 30, 20], [4, 40, 25]], [[4, 4, 9], [3, 5, 8]], "rise_not_in_order", "blowup"),
        ([[3, 4, 5], [4, 5, 6]], [[9, 9, 9], [9, 9, 9]], "rise", "blowup_none"),
    ],
)
def test_the_logit_sentences_follow_the_peaks(off, rms, rise, blowup) -> None:
    losses = {
        "off": [[2.5, 2.2, 2.9], [2.52, 2.21, 2.95]],
        "rms": [[2.5, 2.3, 2.4], [2.6, 2.31, 2.41]],
    }
    state = qk_state({"off": off, "rms": rms}, losses)
    claims = qknorm_view(state["data"]).claims
    assert claims["rise"].key == f"training_sets.qk_{rise}"
    assert claims["blowup"].key == f"training_sets.qk_{blowup}"
    keys = [
        claims[f"rms_loss_{i}"].key.removeprefix("training_sets.qk_rms_loss_") for i in range(3)
    ]
    assert keys == ["within", "higher", "lower"]
    for claim in claims.values():
        check(state, claim)


def test_a_diverged_rate_is_named_and_left_out() -> None:
    peaks = {"off": [[3, 30, math.nan], [4, 40, 50]], "rms": [[4, 4, 9], [3, 5, 8]]}
    losses = {"off": [[2.5, 2.2, math.nan], [2.5, 2.2, 2.9]], "rms": [[2.5, 2.3, 2.4]] * 2}
    state = qk_state(peaks, losses)
    view = qknorm_view(state["data"])
    assert view.claims["rms_loss_2"].key == "training_sets.qk_rms_loss_diverged"
    assert view.claims["best"].fields["off_lr"] == 1e-2
    assert np.isnan(view.final_loss["off"][0, 2])
    for claim in view.claims.values():
        check(state, claim)


@pytest.mark.parametrize(
    ("clip", "key", "over"),
    [([[4, 9, 10], [3, 8, 10]], "capped", 0), ([[4, 9, 12], [3, 11, 10]], "over", 2)],
)
def test_the_clip_sentence_weighs_its_peaks_against_tau(clip, key, over) -> None:
    """tau = 10: a peak of exactly 10 is capped; the plain runs pass it at two rates."""
    peaks = {"off": [[3, 30, 3000], [4, 40, 5000]], "rms": [[4, 4, 9], [3, 5, 8]], "clip": clip}
    losses = {"off": [[2.5, 2.2, 2.9], [2.52, 2.21, 2.95]], "rms": [[2.5, 2.3, 2.4]] * 2}
    losses["clip"] = [[2.5, 2.25, math.nan], [2.6, 2.26, 2.5]]
    state = qk_state(peaks, losses)
    claims = qknorm_view(state["data"]).claims
    assert claims["clip"].key == f"training_sets.qk_clip_{key}"
    assert (claims["clip"].fields["over"], claims["clip"].fields["off_over"]) == (over, 2)
    keys = [
        claims[f"clip_loss_{i}"].key.removeprefix("training_sets.qk_clip_loss_") for i in range(3)
    ]
    assert keys == ["within", "higher", "diverged"]
    assert claims["best"].key == "training_sets.qk_best_clip"
    for claim in claims.values():
        check(state, claim)
    with pytest.raises(ValueError, match="the same tau"):
        runs = state["data"]["runs"]
        odd = {**runs[-1], "config": {**runs[-1]["config"], "tau": 3.0}}
        qknorm_view({"runs": [*runs[:-1], odd]})


def test_a_set_that_is_not_a_grid_is_refused() -> None:
    state = qk_state({"off": [[1, 2, 3]] * 2, "rms": [[1, 2, 3]] * 2}, {"off": [[2, 2, 2]] * 2,
                     "rms": [[2, 2, 2]] * 2})  # fmt: skip
    with pytest.raises(ValueError, match="one run for every mode"):
        qknorm_view({"runs": state["data"]["runs"][1:]})
    runs = state["data"]["runs"]
    runs[0] = {**runs[0], "val_steps": [0, 5]}
    with pytest.raises(ValueError, match="same steps"):
        qknorm_view({"runs": runs})
