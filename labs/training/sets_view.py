"""The three shipped sets (``labs.training.sets``) as the training page shows them: the arrays its
figures draw and the sentences their numbers make true (``labs.training.sets_claims``).

``placement_view(data)``, ``qknorm_view(data)`` and ``data_view(data)`` read a set; a file that
is not the grid it says (the same validation steps, a run for every mode, learning rate and
seed) is refused with a ``ValueError`` that says what is missing."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from labkit.claims import Claim
from labs.training.corpus import load_corpus
from labs.training.model import PLACEMENTS
from labs.training.sets import DATA_NORMS, QKNORM_MODES, load_set
from labs.training.sets_claims import data_claims, placement_claims, qknorm_claims
from labs.training.train import val_windows


@dataclass(frozen=True)
class PlacementView:
    """The placement set. Arrays are per placement (in ``PLACEMENTS``' order), a row per seed."""

    placements: tuple[str, ...]
    seeds: dict[str, tuple[int, ...]]
    n_layer: int
    val_steps: np.ndarray  # (V,), every run's
    val_loss: dict[str, np.ndarray]  # (seeds, V)
    hidden_rms: dict[str, np.ndarray]  # (seeds, L + 1): after the embedding, then each block
    final_loss: dict[str, np.ndarray]  # (seeds,): at val_steps[-1]
    growth: dict[str, np.ndarray]  # (seeds,): RMS after block L over RMS after block 1
    setup: dict[str, Any]
    claims: dict[str, Claim]


@dataclass(frozen=True)
class QKNormView:
    """The QK-norm set: per mode (in ``QKNORM_MODES``' order) a (seeds, learning rates) grid."""

    modes: tuple[str, ...]
    lrs: np.ndarray  # (R,), ascending
    seeds: tuple[int, ...]
    peak_logit: dict[str, np.ndarray]  # largest over the run's validations (finite ones)
    final_loss: dict[str, np.ndarray]
    setup: dict[str, Any]
    claims: dict[str, Claim]


@dataclass(frozen=True)
class DataView:
    """The data set: runs by kind ``<norm>_<slice>`` (``DATA_NORMS`` by ``small``, ``large``), a
    row per seed in ``seeds``' order."""

    sizes: dict[str, int]  # bytes trained on, by slice
    seeds: tuple[int, ...]
    val_steps: np.ndarray  # (V,), every run's
    val_loss: dict[str, np.ndarray]  # (seeds, V), by kind
    saturated: dict[str, np.ndarray]  # (seeds, DyT layers): DyT's saturated share, by slice
    floor: dict[str, float]  # what byte counts alone score, by slice ({} for another corpus)
    setup: dict[str, Any]
    claims: dict[str, Claim]


def peak(values: Sequence[float]) -> float:
    """The largest finite value (NaN when none is finite): a run's largest attention logit over
    its validations, up to where it diverged."""
    finite = [v for v in values if math.isfinite(v)]
    return max(finite) if finite else math.nan


def _setup(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The settings the runs share, for the section's caption: the model's and the run's (the
    first run's learning rate, where they differ), the seeds per variant and a head's width."""
    config = runs[0]["config"]
    model = config["model"]
    shared = {**model, **{k: v for k, v in config.items() if k != "model"}}
    seeds = {int(r["seed"]) for r in runs}
    return shared | {"n_seeds": len(seeds), "d_head": model["n_embd"] // model["n_head"]}


def _common_steps(runs: Sequence[Mapping[str, Any]]) -> np.ndarray:
    steps = [tuple(run["val_steps"]) for run in runs]
    if not steps or any(s != steps[0] for s in steps) or not steps[0]:
        raise ValueError("every run of a set must be validated at the same steps, at least once")
    return np.asarray(steps[0], dtype=int)


def placement_view(data: Mapping[str, Any]) -> PlacementView:
    """The page's view of a placement set (``labs.training.sets.load_set("placement")``)."""
    runs = list(data["runs"])
    val_steps = _common_steps(runs)
    placements = tuple(p for p in PLACEMENTS if any(r["placement"] == p for r in runs))
    depths = {len(row) for r in runs for row in r["val_hidden_rms"]}
    if len(depths) != 1 or any(len(r["val_hidden_rms"]) != val_steps.size for r in runs):
        raise ValueError("every run needs the stream's RMS at every validation, one length")
    n_layer = depths.pop() - 1
    seeds, val_loss, hidden, growth = {}, {}, {}, {}
    for p in placements:
        mine = sorted((r for r in runs if r["placement"] == p), key=lambda r: r["seed"])
        seeds[p] = tuple(int(r["seed"]) for r in mine)
        if len(set(seeds[p])) != len(seeds[p]):
            raise ValueError(f"placement {p!r} has a seed twice")
        val_loss[p] = np.array([r["val_loss"] for r in mine], dtype=float)
        hidden[p] = np.array([r["val_hidden_rms"][-1] for r in mine], dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            growth[p] = hidden[p][:, -1] / hidden[p][:, 1] if n_layer >= 1 else np.full(0, 0.0)
    final = {p: val_loss[p][:, -1] for p in placements}
    view = PlacementView(
        placements, seeds, n_layer, val_steps, val_loss, hidden, final, growth, _setup(runs), {}
    )
    return replace(view, claims=placement_claims(view))


def qknorm_view(data: Mapping[str, Any]) -> QKNormView:
    """The page's view of a QK-norm set (``labs.training.sets.load_set("qknorm")``)."""
    runs = [r for r in data["runs"] if r["qk_norm"] in QKNORM_MODES]
    _common_steps(runs)
    modes = tuple(m for m in QKNORM_MODES if any(r["qk_norm"] == m for r in runs))
    lrs = sorted({float(r["lr"]) for r in runs})
    seeds = sorted({int(r["seed"]) for r in runs})
    cells = {(r["qk_norm"], float(r["lr"]), int(r["seed"])): r for r in runs}
    taus = {r["config"]["tau"] for r in runs if r["qk_norm"] == "clip"}
    if len(taus) > 1:
        raise ValueError("every QK-Clip run of a set needs the same tau")
    if len(cells) != len(runs) or len(cells) != len(modes) * len(lrs) * len(seeds):
        raise ValueError("the QK-norm set needs one run for every mode, learning rate and seed")
    grids: dict[str, dict[str, np.ndarray]] = {"peak": {}, "loss": {}}
    for m in modes:
        rows = [[cells[(m, lr, s)] for lr in lrs] for s in seeds]
        grids["peak"][m] = np.array([[peak(r["val_max_logit"]) for r in row] for row in rows])
        grids["loss"][m] = np.array([[r["val_loss"][-1] for r in row] for row in rows])
    setup = _setup(runs) | {"tau": taus.pop() if taus else None}
    view = QKNormView(modes, np.array(lrs), tuple(seeds), grids["peak"], grids["loss"], setup, {})
    return replace(view, claims=qknorm_claims(view))


def data_view(data: Mapping[str, Any]) -> DataView:
    """The page's view of a data set (``labs.training.sets.load_set("data")``)."""
    runs = [r for r in data["runs"] if r["norm"] in DATA_NORMS]
    val_steps = _common_steps(runs)
    whole = int(data["data"]["train_bytes"])
    cells = {(r["norm"], min(r["train_bytes"] or whole, whole), int(r["seed"])): r for r in runs}
    seeds = sorted({seed for _, _, seed in cells})
    sizes = dict(zip(("small", "large"), sorted({size for _, size, _ in cells}), strict=False))
    grid = len(DATA_NORMS) * 2 * len(seeds)
    if len(sizes) != 2 or not len(cells) == len(runs) == grid or sizes["large"] != whole:
        raise ValueError("the data set needs one run for every norm, seed, a slice and the whole")
    val_loss, saturated = {}, {}
    for slice_, size in sizes.items():
        for norm in DATA_NORMS:
            rows = [cells[(norm, size, seed)]["val_loss"] for seed in seeds]
            val_loss[f"{norm}_{slice_}"] = np.array(rows, dtype=float)
        saturated[slice_] = [cells[("dyt", size, seed)]["saturated"] for seed in seeds]
    if len({len(row) for rows in saturated.values() for row in rows}) != 1:
        raise ValueError("every DyT run of the data set needs a saturated share for each layer")
    saturated = {slice_: np.array(rows, dtype=float) for slice_, rows in saturated.items()}
    setup = _setup(runs) | {"whole": whole, **sizes}
    corpus = load_corpus()
    floor = {}
    if data["data"].get("sha256") == corpus.sha256:  # the text these runs read
        model = runs[0]["config"]["model"]
        targets = val_windows(corpus.val, model["block_size"], runs[0]["config"]["eval_windows"])
        floor = {
            k: byte_floor(corpus.train[:size], targets[1].numpy()) for k, size in sizes.items()
        }
    view = DataView(sizes, tuple(seeds), val_steps, val_loss, saturated, floor, setup, {})
    return replace(view, claims=data_claims(view))


def byte_floor(train: np.ndarray, targets: np.ndarray) -> float:
    """The mean cross-entropy (nats per byte) of ``targets`` under the byte frequencies of
    ``train``, each count plus one (so no byte has probability 0): what a model that knows only
    how often each byte occurs scores."""
    counts = np.bincount(train, minlength=256) + 1.0
    return float(-np.mean(np.log(counts / counts.sum())[targets]))


def shipped_placement_view() -> PlacementView:
    """The shipped placement set (``assets/train/placement.json``)."""
    return placement_view(load_set("placement"))


def shipped_qknorm_view() -> QKNormView:
    """The shipped QK-norm set (``assets/train/qknorm.json``)."""
    return qknorm_view(load_set("qknorm"))


def shipped_data_view() -> DataView:
    """The shipped data set (``assets/train/data.json``)."""
    return data_view(load_set("data"))
