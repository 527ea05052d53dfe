"""DyT's data regime (labs.training.sets' data set, sets_view.data_view): a run trains on the
first ``train_bytes`` bytes alone; a quick set writes the file it documents and reads back into
the page's view; the shipped set is what the script trains, three seeds each; the saturated share
agrees with the layers' own outputs; a file that is not the grid is refused."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch

from labs.training.corpus import load_corpus
from labs.training.model import GPT
from labs.training.reference import CURVES_FILE, REFERENCE, REFERENCE_DIR
from labs.training.runs import SETS
from labs.training.sets import (
    DATA_NORMS,
    DATA_SLICES,
    SET_FILES,
    data_configs,
    load_set,
    make_data,
    saturated_shares,
)
from labs.training.sets_view import data_view
from labs.training.train import TrainConfig, start

CURVES = REFERENCE_DIR / CURVES_FILE


@pytest.mark.parametrize("bad", [True, 1.5, "4096", 65, 0, -1])
def test_a_slice_shorter_than_a_window_or_not_a_count_is_refused(bad) -> None:
    with pytest.raises(ValueError, match="train_bytes must be None or an integer > 65"):
        TrainConfig(train_bytes=bad)


def test_a_run_draws_its_batches_from_the_first_train_bytes_alone() -> None:
    """Every window of 200 batches lies inside the first 4,096 bytes: the bytes after them never
    appear at a window's start (the corpus's bytes there are not all alike, so a window drawn
    past the slice would show)."""
    corpus = load_corpus()
    config = replace(REFERENCE, train_bytes=4096)
    _, _, batches = start(config, corpus)
    first = torch.from_numpy(corpus.train[:4096].astype("int64"))
    windows = {tuple(first[i : i + 64].tolist()) for i in range(4096 - 64)}
    for _ in range(200):
        x, y = batches.next()
        assert all(tuple(row.tolist()) in windows for row in x)
        assert torch.equal(x[:, 1:], y[:, :-1])


def _outputs(model: GPT, x: torch.Tensor) -> list[torch.Tensor]:
    """Every S-shaped layer's output, read by forward hooks (not the inputs the set reads)."""
    seen: list[torch.Tensor] = []
    hooks = [m.register_forward_hook(lambda _m, _a, out: seen.append(out.detach()))
             for _, m in model.norms() if hasattr(m, "alpha")]  # fmt: skip
    with torch.no_grad():
        model(x)
    for hook in hooks:
        hook.remove()
    return seen


@pytest.mark.parametrize(("norm", "bound"), [("dyt", math.tanh(2.0)), ("derf", math.erf(2.0))])
def test_the_saturated_share_is_where_the_layers_output_is_past_its_curve_at_two(
    norm, bound
) -> None:
    """With gain 1 and bias 0 (as initialised) a layer's output is f(alpha x + s), and f is odd
    and increasing, so |alpha x + s| >= 2 exactly where |output| >= f(2). alpha and the shift
    are set so that some inputs saturate and some do not."""
    model = GPT(replace(REFERENCE.model, norm=norm), seed=3)
    for i, (_, m) in enumerate(model.norms()):
        m.alpha.data.fill_(40.0 * (i + 1))
        if hasattr(m, "shift"):
            m.shift.data.fill_(0.5)
    x = torch.from_numpy(load_corpus().val[: 8 * 64].astype("int64")).view(8, 64)
    shares = saturated_shares(model, x)
    expected = [float((out.abs() >= bound).double().mean()) for out in _outputs(model, x)]
    assert len(shares) == 2 * REFERENCE.model.n_layer + 1
    assert any(0.0 < s < 1.0 for s in shares)
    assert shares == pytest.approx(expected, abs=2 / x.numel())  # a point on the boundary
    assert saturated_shares(GPT(REFERENCE.model, seed=3), x) == []  # RMSNorm: no such layer


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("data")
    made = make_data(out, steps=2, seeds=(0,), log=lambda _: None)
    return {"dir": out, "made": made}


def test_a_quick_data_set_writes_the_file_it_documents(quick) -> None:
    assert SETS["data"] is make_data
    path = quick["dir"] / SET_FILES["data"]
    assert quick["made"]["file"] == str(path) and quick["made"]["runs"] == 4
    data = json.loads(path.read_text())
    cells = [(r["norm"], r["train_bytes"]) for r in data["runs"]]
    assert cells == [(n, size) for size in DATA_SLICES for n in DATA_NORMS]
    for run in data["runs"]:
        assert run["steps_done"] == 2 and run["val_steps"] == [0, 1, 2]
        layers = 2 * run["config"]["model"]["n_layer"] + 1
        assert len(run["saturated"]) == (layers if run["norm"] == "dyt" else 0)
        assert all(0.0 <= s <= 1.0 for s in run["saturated"])
    view = data_view(load_set("data", quick["dir"]))
    assert view.sizes == {"small": 4096, "large": data["data"]["train_bytes"]}
    assert view.saturated["small"].shape == (1, 7) and view.val_loss["dyt_large"].shape == (1, 3)
    assert view.claims["gap_small"].key == "training_sets.data_gap_one_seed"
    assert "sign" not in view.claims  # one seed: no spread to weigh a sign against


def test_the_shipped_data_set_is_what_the_script_trains_with_three_seeds() -> None:
    runs = load_set("data")["runs"]
    assert [r["config"] for r in runs] == [
        json.loads(json.dumps(c.as_dict())) for c in data_configs()
    ]
    seeds: dict[tuple, set] = {}
    for r in runs:
        seeds.setdefault((r["norm"], r["train_bytes"]), set()).add(r["seed"])
    assert len(seeds) == 4 and min(len(s) for s in seeds.values()) >= 3, seeds


def test_a_data_set_that_is_not_the_grid_is_refused() -> None:
    data = load_set("data")
    with pytest.raises(ValueError, match="one run for every norm, seed, a slice and the whole"):
        data_view({**data, "runs": data["runs"][1:]})
    small = [r for r in data["runs"] if r["train_bytes"] is not None]
    with pytest.raises(ValueError, match="a slice and the whole"):
        data_view({**data, "runs": small})
    # A 'large' slice short of the whole split: the caption would say "all ... bytes".
    short = [r | {"train_bytes": r["train_bytes"] or 200_000} for r in data["runs"]]
    with pytest.raises(ValueError, match="a slice and the whole"):
        data_view({**data, "runs": short})
    runs = [dict(r) for r in data["runs"]]
    runs[1]["saturated"] = runs[1]["saturated"][:-1]
    with pytest.raises(ValueError, match="saturated share for each layer"):
        data_view({**data, "runs": runs})


def test_the_large_slice_runs_repeat_the_shipped_reference_runs() -> None:
    """On the whole training split the data set's runs are the reference runs of the same norm
    and seed (the same model, batches and steps; only the timings are not repeated), so their
    validation losses agree to the last recorded digit."""
    reference = {(r["norm"], r["seed"]): r for r in json.loads(CURVES.read_text())["runs"]}
    large = [r for r in load_set("data")["runs"] if r["train_bytes"] is None]
    assert len(large) == 6
    for run in large:
        assert run["val_loss"] == reference[(run["norm"], run["seed"])]["val_loss"]
