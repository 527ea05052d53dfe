"""labs.training.train, corpus, store, reference and runs: determinism, the caps, the checkpoint
round trip, and the shipped reference runs (which must reproduce on this CPU)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace

import numpy as np
import pytest
import torch

import labs.training.train as train_module
from core.device import torch_threads
from labs.training.corpus import VAL_FRACTION, corpus_text, decode, encode, load_corpus
from labs.training.fair import measure
from labs.training.model import GPT, MODEL_NORMS, PLACEMENTS, QK_NORMS, ModelConfig
from labs.training.reference import (
    CURVES_FILE,
    REFERENCE,
    REFERENCE_DIR,
    SUMMARY_FILE,
    load_reference,
    reference_summary,
)
from labs.training.runs import (
    CHECKPOINT_NORMS,
    REFERENCE_NORMS,
    REFERENCE_SEEDS,
    SETS,
    checkpoint_path,
    make_set,
    run_reference,
)
from labs.training.store import load_checkpoint, read_config, save_checkpoint
from labs.training.train import (
    Batches,
    TrainConfig,
    TrainResult,
    evaluate,
    evaluate_probed,
    learning_rate,
    start,
    stream_seeds,
    time_forward,
    train,
    train_step,
    train_together,
    val_windows,
)

# A tiny run: one layer of width 16, batches of 4 windows of 16 bytes, 12 steps, 8 validation
# windows.
TINY = TrainConfig(
    model=ModelConfig(norm="rms", n_layer=1, n_head=2, n_embd=16, block_size=16),
    steps=12,
    batch_size=4,
    warmup=3,
    eval_every=4,
    eval_windows=8,
    timing_repeats=2,
)
# Nine checkpoints of about 450 kB (CHECKPOINT_NORMS x REFERENCE_SEEDS) and the curves: the
# issue's budget for the shipped files.
ASSET_BUDGET = 5 * 1024 * 1024


def tiny(**overrides) -> TrainConfig:
    return replace(TINY, **overrides)


def test_corpus_is_pydoc_topics_split_once() -> None:
    corpus = load_corpus()
    from pydoc_data.topics import topics

    text = corpus_text()
    names = sorted(topics)
    assert text.startswith(topics[names[0]]) and text.endswith(topics[names[-1]])
    assert all(topics[name] in text for name in names)
    data = encode(text)
    assert corpus.train.size + corpus.val.size == data.size
    np.testing.assert_array_equal(np.concatenate([corpus.train, corpus.val]), data)
    assert corpus.val.size == pytest.approx(VAL_FRACTION * data.size, abs=1)
    assert decode(encode("naïve — ok")) == "naïve — ok"
    assert len(corpus.sha256) == 64
    with pytest.raises(ValueError):
        corpus.train[0] = 0  # read-only: no run can change another's data


def test_stream_seeds_differ_and_repeat() -> None:
    assert stream_seeds(0) == stream_seeds(0)
    assert len(set(stream_seeds(0)) | set(stream_seeds(1))) == 4


def test_batches_are_shifted_windows_in_seeded_order() -> None:
    data = load_corpus().train
    a, b = Batches(data, 4, 16, seed=3), Batches(data, 4, 16, seed=3)
    for _ in range(3):
        (xa, ya), (xb, yb) = a.next(), b.next()
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
        assert torch.equal(xa[:, 1:], ya[:, :-1])
    x, y = Batches(data, 4, 16, seed=4).next()
    assert not torch.equal(x, xa)
    # Every window is a slice of the text.
    row = x[0].numpy()
    starts = np.flatnonzero(np.lib.stride_tricks.sliding_window_view(data, 16).__eq__(row).all(1))
    assert starts.size >= 1


def test_val_windows_are_fixed_and_cover_the_split() -> None:
    val = load_corpus().val
    x, y = val_windows(val, 16, 8)
    assert x.shape == (8, 16)
    np.testing.assert_array_equal(x[0].numpy(), val[:16])
    np.testing.assert_array_equal(y[-1].numpy(), val[-16:])


def test_learning_rate_warms_up_then_decays_to_min() -> None:
    config = tiny(steps=100, warmup=10, lr=1e-2, min_lr=1e-3)
    assert learning_rate(0, config) == pytest.approx(1e-3)
    assert learning_rate(9, config) == pytest.approx(1e-2)
    assert learning_rate(10, config) == pytest.approx(1e-2)
    assert learning_rate(55, config) == pytest.approx(5.5e-3)
    assert learning_rate(100, config) == pytest.approx(1e-3)


def test_a_run_is_deterministic_and_variants_share_start_and_batches() -> None:
    first, again = train(TINY), train(TINY)
    assert first.stopped_by == "steps" and first.steps_done == TINY.steps
    assert first.train_loss == again.train_loss and first.val_loss == again.val_loss
    assert first.val_steps == [0, 4, 8, 12]
    assert len(first.step_seconds) == len(first.elapsed_seconds) == TINY.steps
    np.testing.assert_allclose(np.diff(first.elapsed_seconds), first.step_seconds[1:], atol=1e-12)
    assert first.forward_seconds > 0 and first.forward_identity_seconds > 0
    # Same seed, other norm: same batches, same non-norm start, so step 0's inputs agree.
    layer = replace(TINY, model=replace(TINY.model, norm="layer"))
    model_r, _, batches_r = start(TINY)
    model_l, _, batches_l = start(layer)
    assert torch.equal(batches_r.next()[0], batches_l.next()[0])
    assert torch.equal(model_r.state_dict()["wte.weight"], model_l.state_dict()["wte.weight"])


def step_work(config: TrainConfig, parameters: int) -> int:
    return config.batch_size * config.model.block_size * parameters


def test_work_cap_stops_at_the_same_step_however_slow_the_steps() -> None:
    parameters = GPT(TINY.model).num_params()
    eval_work = TINY.eval_windows * TINY.model.block_size * parameters
    # Room for the initial validation and 5.5 steps: 5 steps run, the 6th does not fit.
    cap = eval_work + 5.5 * step_work(TINY, parameters)
    fast = train(tiny(max_work=cap, eval_every=100))

    def slow(result) -> None:
        time.sleep(0.02)

    slowed = train(tiny(max_work=cap, eval_every=100), callback=slow)
    for result in (fast, slowed):
        assert result.stopped_by == "work"
        assert result.steps_done == 5
        assert result.work == eval_work + 5 * step_work(TINY, parameters) <= cap
        assert result.val_steps == [0]
        assert result.norm_share is None  # the timing passes did not fit either
    assert fast.train_loss == slowed.train_loss


def test_work_cap_zero_runs_nothing_and_keeps_an_empty_result() -> None:
    result = train(tiny(max_work=0))
    assert result.stopped_by == "work"
    assert result.steps_done == 0 and result.val_loss == [] and result.work == 0
    assert result.val_max_logit == [] and result.hidden_rms is None and result.max_logit is None
    assert result.model is not None


def test_wall_clock_cap_stops_a_run_and_keeps_what_it_reached() -> None:
    def slow(result) -> None:
        time.sleep(0.05)

    config = tiny(steps=10_000, max_seconds=0.5)
    result = train(config, callback=slow)
    assert result.stopped_by == "wall_clock"
    assert 0 < result.steps_done < config.steps
    assert len(result.train_loss) == len(result.step_seconds) == result.steps_done
    assert result.val_steps[0] == 0 and result.val_steps[-1] <= result.steps_done
    # What it reached is what the same run cut by work at the same point reaches: nothing of
    # the kept curve was lost or changed by the stop.
    same_point = train(replace(config, max_seconds=None, max_work=result.work))
    assert same_point.stopped_by == "work"
    assert same_point.train_loss == result.train_loss
    assert same_point.val_loss == result.val_loss
    assert result.model is not None


def test_callback_sees_the_growing_result_and_can_stop_it() -> None:
    seen: list[int] = []

    def stop_after_three(result) -> bool | None:
        seen.append(result.steps_done)
        return False if result.steps_done == 3 else None

    result = train(TINY, callback=stop_after_three)
    assert result.stopped_by == "callback" and result.steps_done == 3
    assert seen == [0, 1, 2, 3]


def test_runs_trained_together_are_the_runs_trained_alone() -> None:
    configs = [replace(TINY, model=replace(TINY.model, norm=n)) for n in REFERENCE_NORMS]
    rounds: list[list[int]] = []
    together = train_together(
        configs, callback=lambda rs: rounds.append([r.steps_done for r in rs])
    )
    for config, result in zip(configs, together, strict=True):
        alone = train(config)
        assert result.config == config and result.stopped_by == "steps"
        assert result.train_loss == alone.train_loss and result.val_loss == alone.val_loss
        assert result.val_steps == alone.val_steps and result.work == alone.work
        assert result.val_max_logit == alone.val_max_logit
        assert result.hidden_rms == alone.hidden_rms and result.max_logit == alone.max_logit
        assert result.forward_seconds is not None
    # Step by step in turn: after each round every run has done the same number of steps.
    assert all(len(set(done)) == 1 for done in rounds)
    assert rounds[-1] == [TINY.steps] * len(configs)


def test_runs_trained_together_stop_together() -> None:
    configs = [
        replace(TINY, steps=10_000, max_seconds=2.0, model=replace(TINY.model, norm=n))
        for n in ("rms", "layer")
    ]
    results = train_together(configs, callback=lambda rs: time.sleep(0.02))
    assert [r.stopped_by for r in results] == ["wall_clock", "wall_clock"]
    done = [r.steps_done for r in results]
    assert 0 < min(done) and max(done) - min(done) <= 1
    uncapped = [replace(c, max_seconds=None) for c in configs]
    stopped = train_together(uncapped, callback=lambda rs: False if rs[0].steps_done == 2 else None)
    assert [r.stopped_by for r in stopped] == ["callback", "callback"]
    assert [r.steps_done for r in stopped] == [2, 2]


def test_runs_trained_together_take_turns_going_first(monkeypatch) -> None:
    """Live runs stepped LayerNorm first in every round, right after the chart was redrawn: the
    first step of a round paid for the redraw, always the same run's. Each round now starts one
    run later: over the rounds every run goes first equally often, and each does one piece."""
    pieces: list[str] = []

    class Recorder:
        def __init__(self, config, corpus) -> None:
            self.result = TrainResult(config=config, parameters=1)

        def advance(self) -> bool:
            if pieces.count(self.result.config.model.norm) == 6:
                self.result.stopped_by = "steps"
                return False
            pieces.append(self.result.config.model.norm)
            return True

        def finish(self) -> TrainResult:
            return self.result

    monkeypatch.setattr(train_module, "_Run", Recorder)
    norms = ("layer", "rms", "none")
    train_together([tiny(model=replace(TINY.model, norm=n)) for n in norms], corpus=object())
    rounds = [pieces[i : i + 3] for i in range(0, len(pieces), 3)]
    assert len(rounds) == 6 and all(sorted(r) == sorted(norms) for r in rounds)
    assert [r[0] for r in rounds] == ["layer", "rms", "none"] * 2


def test_time_forward_alternates_which_pass_goes_first() -> None:
    """The pass with the norms went first in every repeat, so a load that rose during the
    timing fell on the pass without them. Now the two alternate which leads: after the warm-up
    pair, each leads in half of an even number of repeats."""
    model = GPT(TINY.model, seed=0)
    layer = model.norms()[0][1]
    bypassed: list[bool] = []
    model.register_forward_pre_hook(lambda module, args: bypassed.append(layer.bypass))
    x = torch.zeros(1, TINY.model.block_size, dtype=torch.long)
    with_norm, without = time_forward(model, x, 4)
    assert with_norm > 0 and without > 0
    pairs = [bypassed[i : i + 2] for i in range(0, len(bypassed), 2)]
    assert pairs == [[False, True], [True, False], [False, True], [True, False], [False, True]]


@pytest.mark.parametrize(
    "bad",
    [
        dict(steps=-1),
        dict(batch_size=0),
        dict(lr=1e-3, min_lr=1e-2),
        dict(max_seconds=-1.0),
        dict(max_work=float("inf")),
        dict(eval_every=0),
    ],
)
def test_train_config_rejects_bad_values(bad: dict) -> None:
    with pytest.raises(ValueError):
        tiny(**bad)


def test_train_config_round_trips_through_json() -> None:
    config = tiny(max_seconds=3.0, seed=4)
    assert TrainConfig.from_dict(json.loads(json.dumps(config.as_dict()))) == config


def test_checkpoint_round_trip(tmp_path) -> None:
    model, _, _ = start(replace(TINY, model=replace(TINY.model, norm="layer")))
    path = tmp_path / "m.safetensors"
    config = save_checkpoint(model, path, extra={"training": {"seed": 0}})
    loaded, loaded_config = load_checkpoint(path)
    assert loaded_config == config == json.loads(path.with_suffix(".json").read_text())
    assert read_config(path)["model"]["norm_class"] == "LayerNorm"
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name
    idx = torch.randint(256, (2, 16), generator=torch.Generator().manual_seed(0))
    assert torch.equal(loaded(idx)[0], model(idx)[0])
    with pytest.raises(ValueError, match="safetensors"):
        save_checkpoint(model, tmp_path / "m.pt")


# The new variants: DyT, the placements, QK norms, and what a run reads at its end.

# Two steps, validations after 0 and 2 steps on 4 windows, no timing.
SMOKE = tiny(steps=2, batch_size=2, warmup=1, eval_every=2, eval_windows=4, timing_repeats=0)


def smoke(**model: object) -> TrainConfig:
    """A SMOKE run of two blocks of width 16, with the model's fields in ``model``."""
    return replace(SMOKE, model=replace(SMOKE.model, n_layer=2, **model))


def norm_count(config: ModelConfig) -> int:
    per_block = {"pre": 2, "post": 2, "peri": 4, "output": 2, "scaled": 2}[config.placement]
    final = config.placement != "post"
    return config.n_layer * per_block + final


def test_every_variant_trains_and_records_its_readings() -> None:
    configs = [
        smoke(norm=n, placement=p, qk_norm=q)
        for n in MODEL_NORMS
        for p in PLACEMENTS
        for q in QK_NORMS
    ]
    with torch_threads(1):
        results = train_together(configs)
    for config, result in zip(configs, results, strict=True):
        name = (config.model.norm, config.model.placement, config.model.qk_norm)
        assert result.stopped_by == "steps" and result.steps_done == 2, name
        assert np.all(np.isfinite(result.train_loss + result.val_loss)), name
        assert result.val_steps == [0, 2] and len(result.val_max_logit) == 2, name
        assert len(result.hidden_rms) == config.model.n_layer + 1, name
        assert all(math.isfinite(v) and v > 0 for v in result.hidden_rms), name
        assert math.isfinite(result.max_logit) and result.max_logit == result.val_max_logit[-1]
        if config.model.norm in ("dyt", "derf"):
            kind = config.model.norm
            alphas = [float(m.alpha.detach()) for _, m in result.model.norms() if m.kind == kind]
            assert result.dyt_alpha == alphas and len(alphas) == norm_count(config.model), name
            assert all(a != 0.5 for a in alphas), name  # learnt: two steps moved every alpha
        else:
            assert result.dyt_alpha is None, name
        shifts = [float(m.shift.detach()) for _, m in result.model.norms() if m.kind == "derf"]
        assert result.derf_shift == (shifts or None), name
        assert config.model.norm != "derf" or all(s != 0.0 for s in shifts), name
        record = json.loads(json.dumps(result.curves()))
        assert record["config"]["model"]["placement"] == config.model.placement
        assert TrainConfig.from_dict(record["config"]) == config
        for key in ("hidden_rms", "max_logit", "val_max_logit", "dyt_alpha", "derf_shift"):
            assert record[key] == getattr(result, key), (name, key)


def test_the_readings_are_the_last_validations_and_leave_the_loss_unchanged() -> None:
    config = smoke(norm="dyt", placement="peri")
    with torch_threads(1):
        result = train(config)
        windows = val_windows(load_corpus().val, config.model.block_size, config.eval_windows)
        loss, read = evaluate_probed(result.model, windows)
        assert loss == evaluate(result.model, windows) == result.val_loss[-1]  # bit for bit
    assert read["hidden_rms"] == result.hidden_rms and read["max_logit"] == result.max_logit
    # The shipped records carry the readings; a record made before them (no readings, none of
    # the newer model fields) stays readable with the default fields.
    run = load_reference()["runs"][0]
    assert len(run["hidden_rms"]) == run["config"]["model"]["n_layer"] + 1
    assert run["max_logit"] == run["val_max_logit"][-1]
    newer = ("kernel", "placement", "qk_norm", "dyt_alpha")  # the model fields added since
    older = {k: v for k, v in run["config"]["model"].items() if k not in newer}
    config = TrainConfig.from_dict({**run["config"], "model": older})
    assert config == TrainConfig.from_dict(run["config"]) and config.model.placement == "pre"


# The shipped reference runs.


@pytest.fixture(scope="module")
def reference() -> dict:
    return load_reference()


def test_shipped_files_are_complete_and_within_budget(reference) -> None:
    runs = reference["runs"]
    assert sorted((r["norm"], r["seed"]) for r in runs) == sorted(
        (n, s) for n in REFERENCE_NORMS for s in REFERENCE_SEEDS
    )
    files = list(REFERENCE_DIR.iterdir())
    assert sum(f.stat().st_size for f in files) <= ASSET_BUDGET
    assert {CURVES_FILE, SUMMARY_FILE} <= {f.name for f in files}
    for run in runs:
        config = TrainConfig.from_dict(run["config"])
        assert config == replace(
            REFERENCE, model=replace(REFERENCE.model, norm=run["norm"]), seed=run["seed"]
        )
        assert run["stopped_by"] == "steps" and run["steps_done"] == config.steps
        assert len(run["train_loss"]) == len(run["step_seconds"]) == config.steps
        assert run["val_steps"][0] == 0 and run["val_steps"][-1] == config.steps
        assert (run["dyt_alpha"] is not None) == (run["norm"] in ("dyt", "derf"))
        assert (run.get("derf_shift") is not None) == (run["norm"] == "derf")
        path = checkpoint_path(run["norm"], run["seed"])
        if run["norm"] in CHECKPOINT_NORMS:
            assert path.name == run["checkpoint"] and path.with_suffix(".json").exists()
        else:
            assert run["checkpoint"] is None and not path.exists()
            assert not path.with_suffix(".json").exists()
    summary = json.loads((REFERENCE_DIR / SUMMARY_FILE).read_text())
    for key in ("winner", "runner_up", "ranking", "gap", "spread", "gap_exceeds_spread"):
        assert summary[key] == reference["summary"][key], key


def test_shipped_data_is_this_pythons_corpus(reference) -> None:
    # The reference runs read pydoc_data.topics of the Python that made them; another release
    # ships other text, and then `python -m labs.training.runs` must be run again.
    assert reference["data"]["sha256"] == load_corpus().sha256, reference["data"]["python"]


@pytest.fixture
def reference_threads(reference):
    """The runs' thread count: Adam's first update is about lr * sign(gradient), so a gradient
    near 0 summed in another order (another thread count) can move a weight by lr."""
    threads = torch.get_num_threads()
    torch.set_num_threads(reference["machine"]["threads"])
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("norm", REFERENCE_NORMS)
def test_one_reference_step_reproduces_the_saved_losses(reference, reference_threads, norm) -> None:
    run = next(r for r in reference["runs"] if r["norm"] == norm and r["seed"] == 0)
    config = TrainConfig.from_dict(run["config"])
    model, optimizer, batches = start(config)
    loss0 = train_step(
        model, optimizer, *batches.next(), learning_rate(0, config), config.grad_clip
    )
    _, loss1 = model(*batches.next())
    assert abs(loss0 - run["train_loss"][0]) <= 1e-6
    assert abs(loss1.item() - run["train_loss"][1]) <= 1e-6


@pytest.mark.parametrize("norm", CHECKPOINT_NORMS)
def test_shipped_checkpoints_reproduce_their_final_validation_loss(reference, norm) -> None:
    for run in (r for r in reference["runs"] if r["norm"] == norm):
        model, config = load_checkpoint(checkpoint_path(norm, run["seed"]))
        assert config["model"]["norm"] == norm and config["training"]["seed"] == run["seed"]
        assert config["data"]["sha256"] == reference["data"]["sha256"]
        windows = val_windows(load_corpus().val, model.config.block_size, REFERENCE.eval_windows)
        loss = evaluate(model, windows)
        assert abs(loss - run["val_loss"][-1]) <= 1e-6
        assert abs(loss - config["training"]["final_val_loss"]) <= 1e-6


def test_reference_summary_compares_means_spread_and_pairs() -> None:
    def run(norm, seed, final):
        return {
            "norm": norm,
            "seed": seed,
            "val_loss": [5.0, final],
            "step_seconds": [0.01],
            "forward_seconds": 0.004,
            "forward_identity_seconds": 0.003,
            "norm_share": 0.25,
        }

    runs = [run("layer", s, f) for s, f in enumerate([1.50, 1.52, 1.51])]
    runs += [run("rms", s, f) for s, f in enumerate([1.49, 1.50, 1.48])]
    runs += [run("none", s, f) for s, f in enumerate([1.9, 1.8, 1.85])]
    summary = reference_summary(runs)
    assert summary["ranking"] == ["rms", "layer", "none"]
    assert summary["gap"] == pytest.approx(0.02)
    assert summary["spread"] == pytest.approx(0.02)
    assert summary["gap_exceeds_spread"] is False  # 0.02 is not more than 0.02
    assert summary["every_seed_separated"] is False  # rms seed 1 (1.50) = layer seed 0
    np.testing.assert_allclose(summary["paired_gaps"], [0.01, 0.02, 0.03])
    assert summary["per_norm"]["rms"]["std"] == pytest.approx(0.01)
    assert summary["rms_time_saving"] == pytest.approx(0.0)


def test_every_shipped_set_names_the_function_that_makes_it() -> None:
    assert SETS["norms"] is run_reference and SETS["kernels"] is measure
    with pytest.raises(ValueError, match="set must be one of"):
        make_set("batch", "/nonexistent")


def test_one_variant_trains_alone_and_merges_into_the_set(tmp_path) -> None:
    """``--norms derf``: Derf's seed-0 run replaced, every other run and the set's machine kept
    as they were, the new run with its own machine; no checkpoint written for Derf."""
    shipped = json.loads((REFERENCE_DIR / CURVES_FILE).read_text())
    (tmp_path / CURVES_FILE).write_text(json.dumps(shipped))
    run_reference(tmp_path, steps=2, seeds=[0], norms=["derf"], log=lambda _line: None)
    merged = json.loads((tmp_path / CURVES_FILE).read_text())
    assert merged["machine"] == shipped["machine"]
    pairs = [(r["norm"], r["seed"]) for r in merged["runs"]]
    assert pairs == [(r["norm"], r["seed"]) for r in shipped["runs"]]
    for old, new in zip(shipped["runs"], merged["runs"], strict=True):
        if (new["norm"], new["seed"]) != ("derf", 0):
            assert new == old
    new = next(r for r in merged["runs"] if (r["norm"], r["seed"]) == ("derf", 0))
    assert new["steps_done"] == 2 and new["machine"]["threads"] == 1
    assert len(new["derf_shift"]) == len(new["dyt_alpha"]) == 7
    assert {p.name for p in tmp_path.iterdir()} == {CURVES_FILE, SUMMARY_FILE}


@pytest.mark.slow
def test_reference_script_writes_every_file(tmp_path) -> None:
    summary = run_reference(tmp_path, threads=1, steps=2, seeds=[5], log=lambda _line: None)
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {CURVES_FILE, SUMMARY_FILE} | {
        f"{n}-seed5.{ext}" for n in CHECKPOINT_NORMS for ext in ("safetensors", "json")
    }
    loaded = load_reference(tmp_path)
    assert loaded["summary"]["ranking"] == summary["ranking"]
    assert [r["norm"] for r in loaded["runs"]] == list(REFERENCE_NORMS)
    assert [r["steps_done"] for r in loaded["runs"]] == [2] * len(REFERENCE_NORMS)
    assert [r["checkpoint"] for r in loaded["runs"]] == [
        f"{n}-seed5.safetensors" if n in CHECKPOINT_NORMS else None for n in REFERENCE_NORMS
    ]
    # Every record has the shipped records' keys: the shipped set is what this code writes (the
    # runs made before Derf have no derf_shift, and the runs merged in since carry their machine).
    shipped, later = load_reference()["runs"], {"derf_shift", "machine"}
    assert {frozenset(r) - later for r in loaded["runs"]} == {frozenset(r) - later for r in shipped}
    assert {frozenset(r["config"]["model"]) for r in shipped} >= {  # the newest runs' fields
        frozenset(r["config"]["model"]) for r in loaded["runs"]
    }
    config = read_config(tmp_path / "rms-seed5.safetensors")
    assert config["training"]["steps"] == 2 and config["training"]["seed"] == 5
    assert config["data"]["split"] == "first 90% train, last 10% val"
    assert config["model"]["norm_layers"][0]["where"] == "pre-attention"
