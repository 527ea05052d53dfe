"""The training runs as the page draws and compares them: each run's curves thinned for the
browser (``RunCurves``), each norm's losses over its seeds at the common comparison points
(``NormSummary``), DyT's and Derf's learned scalars over their seeds (``AlphaSummary``), and the
page state that gathers them with its sentences (``TrainingView``).

The comparison points: the loss at equal steps is the validation loss at the last validation
step every run reached; the loss at equal time is each run's last validation within the shortest
run's training time, where a validation after step s counts the seconds of its first s steps."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from labkit.claims import Claim
from labs.training.model import DEFAULT_DERF_SHIFT, NORM_CLASSES, S_NORMS, ModelConfig, describe
from labs.training.train import STOP_REASONS

# Points per curve sent to the browser: training losses are averaged over bins of steps.
MAX_POINTS = 150
# The learned scalars of the S-shaped norms, by (norm, param), and the record field of each.
LEARNED = {("dyt", "alpha"): "dyt_alpha", ("derf", "alpha"): "dyt_alpha"}
LEARNED[("derf", "shift")] = "derf_shift"


@dataclass(frozen=True)
class RunCurves:
    """One run as the figures draw it: training losses averaged over bins of steps (at most
    ``MAX_POINTS`` a run), every validation loss; seconds count training steps only."""

    norm: str
    seed: int
    steps: int
    steps_done: int
    stopped_by: str  # one of labs.training.train.STOP_REASONS, or "interrupted"
    train_steps: np.ndarray
    train_seconds: np.ndarray
    train_loss: np.ndarray
    val_steps: np.ndarray
    val_seconds: np.ndarray
    val_loss: np.ndarray
    step_seconds: np.ndarray  # every step, for the time comparisons
    median_step_ms: float  # NaN before the first step
    norm_share: float | None  # the raw reading: timing noise can make it negative
    finite: bool  # every loss it recorded is a finite number
    max_seconds: float | None
    max_work: float | None
    qk_norm: str = "off"  # on every head's queries and keys (off, rms, layer), or QK-Clip
    # An S-shaped norm's (DyT's, Derf's) alpha at the end, per layer (``dyt_layers``, forward
    # order), and Derf's shift; None: not recorded.
    dyt_alpha: np.ndarray | None = None
    dyt_layers: tuple[str, ...] = ()
    dyt_init: float | None = None
    derf_shift: np.ndarray | None = None

    @property
    def label(self) -> str:
        return NORM_CLASSES[self.norm]


@dataclass(frozen=True)
class NormSummary:
    """One norm over its seeds, at the common comparison points (NaN where not reached)."""

    norm: str
    seeds: tuple[int, ...]
    at_step: np.ndarray  # validation loss at the equal step, per seed
    at_time: np.ndarray  # validation loss at the equal time, per seed
    at_time_steps: np.ndarray  # the step of that validation, per seed (-1 if none)
    mean_at_step: float
    mean_at_time: float
    spread: float  # max - min of at_step over the seeds (0 for one seed)
    lowest: float  # min and max of at_step over the seeds
    highest: float
    median_step_ms: float
    finite: bool


@dataclass(frozen=True)
class AlphaSummary:
    """Every run's final ``param`` of the S-shaped ``norm`` (``LEARNED``), by seed (rows) and
    layer (columns, forward order)."""

    norm: str
    param: str
    layers: tuple[str, ...]
    seeds: tuple[int, ...]
    values: np.ndarray  # (seeds, layers)
    init: float
    mean: np.ndarray  # (layers,) over the seeds
    spread: np.ndarray  # (layers,) max - min over the seeds; NaN where a value is not finite


def alpha_summary(runs: Sequence[RunCurves], norm: str, param: str) -> AlphaSummary | None:
    """The ``norm`` runs that recorded their ``param`` (None if none did); every one must have
    the layers and initial alpha of the first."""
    field = LEARNED[(norm, param)]
    mine = [r for r in runs if r.norm == norm and getattr(r, field) is not None]
    if not mine:
        return None
    layers, init = mine[0].dyt_layers, mine[0].dyt_init
    if any(r.dyt_layers != layers or r.dyt_init != init for r in mine):
        raise ValueError(f"the {norm} runs do not share their layers and initial alpha")
    values = np.array([getattr(r, field) for r in mine], dtype=float).reshape(len(mine), -1)
    return AlphaSummary(
        norm=norm,
        param=param,
        layers=layers,
        seeds=tuple(r.seed for r in mine),
        values=values,
        init=init if param == "alpha" else DEFAULT_DERF_SHIFT,
        mean=values.mean(axis=0),
        spread=np.array([seed_spread(values[:, i]) for i in range(len(layers))]),
    )


@dataclass(frozen=True)
class TrainingView:
    """Everything the training page shows for one set of runs."""

    runs: tuple[RunCurves, ...]
    norms: dict[str, NormSummary]
    equal_step: int
    equal_seconds: float
    operations: dict[str, int]
    time_ratio: float | None  # RMSNorm's median step over LayerNorm's
    share_noise: float | None  # at least the timing noise (claims.share_noise; None: not timed)
    claims: dict[str, Claim]
    alphas: tuple[AlphaSummary, ...] = ()  # DyT's and Derf's learned scalars, where recorded


def _binned(values: np.ndarray, size: int) -> np.ndarray:
    """Means over consecutive bins of ``size`` (the last bin may be shorter)."""
    if values.size == 0:
        return values
    edges = np.arange(0, values.size, size)
    return np.add.reduceat(values, edges) / np.diff(np.append(edges, values.size))


def dyt_layers(model: Mapping[str, Any]) -> tuple[tuple[str, ...], float]:
    """The layers of a model's block norm (a run's ``config["model"]``) in forward order, each
    named by its module without the ``blocks.`` prefix (``0.ln_1``, ``ln_f``), and the initial
    alpha of its S-shaped norm."""
    config = ModelConfig(
        **{k: v for k, v in model.items() if k in ModelConfig.__dataclass_fields__}
    )
    names = [
        layer["name"].removeprefix("blocks.")
        for layer in describe(config)["norm_layers"]
        if layer["class"] == NORM_CLASSES[config.norm]
    ]
    return tuple(names), float(config.dyt_alpha)


def _alphas(record: Mapping[str, Any]) -> dict[str, Any]:
    """An S-shaped norm's recorded alpha (and Derf's shift) with its layers; nothing for another
    run, or one without it."""
    if record["norm"] not in S_NORMS:
        return {}
    layers, init = dyt_layers(record["config"]["model"])
    found = {k: np.asarray(record[k], dtype=float) for k in LEARNED.values() if record.get(k)}
    if any(v.size != len(layers) for v in found.values()):
        raise ValueError(f"{list(map(len, found.values()))} values for {len(layers)} layers")
    return found | {"dyt_layers": layers, "dyt_init": init}


def run_curves(record: Mapping[str, Any]) -> RunCurves:
    loss = np.asarray(record["train_loss"], dtype=float)
    step_s = np.asarray(record["step_seconds"], dtype=float)
    elapsed = np.asarray(record["elapsed_seconds"], dtype=float)
    val_steps = np.asarray(record["val_steps"], dtype=int)
    val_loss = np.asarray(record["val_loss"], dtype=float)
    size = max(1, math.ceil(loss.size / MAX_POINTS))
    stopped = record.get("stopped_by")
    forward, identity = record.get("forward_seconds"), record.get("forward_identity_seconds")
    share = None if forward is None or identity is None or forward <= 0 else 1 - identity / forward
    return RunCurves(
        norm=record["norm"],
        seed=int(record["seed"]),
        steps=int(record["config"]["steps"]),
        steps_done=int(loss.size),
        stopped_by=stopped if stopped in STOP_REASONS else "interrupted",
        train_steps=_binned(np.arange(loss.size, dtype=float), size),
        train_seconds=_binned(elapsed - step_s, size),
        train_loss=_binned(loss, size),
        val_steps=val_steps,
        val_seconds=np.array([elapsed[s - 1] if s > 0 else 0.0 for s in val_steps]),
        val_loss=val_loss,
        step_seconds=step_s,
        median_step_ms=float(np.median(step_s) * 1e3) if step_s.size else math.nan,
        norm_share=share,
        finite=bool(np.isfinite(loss).all() and np.isfinite(val_loss).all()),
        max_seconds=record["config"].get("max_seconds"),
        max_work=record["config"].get("max_work"),
        qk_norm=record["config"]["model"].get("qk_norm", "off"),
        **_alphas(record),
    )


def equal_step(runs: Sequence[RunCurves]) -> int:
    """The last validation step every run reached (0 when they share no later one)."""
    common = set.intersection(*(set(r.val_steps.tolist()) for r in runs))
    return max(common) if common else 0


def equal_seconds(runs: Sequence[RunCurves]) -> float:
    """The shortest run's training time at its last validation."""
    return min(float(r.val_seconds[-1]) if r.val_seconds.size else 0.0 for r in runs)


def _loss_at_step(run: RunCurves, step: int) -> float:
    hits = np.flatnonzero(run.val_steps == step)
    return float(run.val_loss[hits[0]]) if hits.size else math.nan


def _at_seconds(run: RunCurves, seconds: float) -> tuple[float, int]:
    """The run's last validation taken within ``seconds`` of training: (loss, step)."""
    within = np.flatnonzero(run.val_seconds <= seconds)
    if not within.size:
        return math.nan, -1
    return float(run.val_loss[within[-1]]), int(run.val_steps[within[-1]])


def seed_spread(values: np.ndarray) -> float:
    """max - min; NaN when a value is not finite (a diverged run has no spread to speak of)."""
    return float(np.ptp(values)) if np.isfinite(values).all() else math.nan


def _summary(norm: str, runs: Sequence[RunCurves], step: int, seconds: float) -> NormSummary:
    at_step = np.array([_loss_at_step(r, step) for r in runs])
    timed = [_at_seconds(r, seconds) for r in runs]
    at_time = np.array([loss for loss, _ in timed])
    steps = np.concatenate([r.step_seconds for r in runs])
    return NormSummary(
        norm=norm,
        seeds=tuple(r.seed for r in runs),
        at_step=at_step,
        at_time=at_time,
        at_time_steps=np.array([step for _, step in timed]),
        mean_at_step=float(np.mean(at_step)),
        mean_at_time=float(np.mean(at_time)),
        spread=seed_spread(at_step),
        lowest=float(np.min(at_step)),
        highest=float(np.max(at_step)),
        median_step_ms=float(np.median(steps) * 1e3) if steps.size else math.nan,
        finite=all(r.finite for r in runs),
    )


# RMSNorm first, then LayerNorm, DyT and Derf, on every page; the variant without a norm last.
PAGE_ORDER = ("rms", "layer", "dyt", "derf", "none")


def in_order(runs: Iterable[RunCurves]) -> tuple[RunCurves, ...]:
    """``runs`` in the page's order: by norm, then by seed."""
    return tuple(sorted(runs, key=lambda r: (PAGE_ORDER.index(r.norm), r.seed)))


def summaries(runs: Sequence[RunCurves], step: int, seconds: float) -> dict[str, NormSummary]:
    """Each norm trained in ``runs``, over its seeds, at ``step`` and at ``seconds``."""
    return {
        n: _summary(n, [r for r in runs if r.norm == n], step, seconds)
        for n in PAGE_ORDER
        if any(r.norm == n for r in runs)
    }
