r"""The training lab: the shipped runs and a visitor's live runs, in numbers and in sentences.

``training_view(runs)`` takes runs as plain records (``run_record`` of a ``TrainResult``, or the
shipped ``curves.json`` entries) and returns everything the page shows: the curves thinned for
the browser, each norm's final validation loss over the seeds, the time per step, the norms'
share of a forward pass, and the claims (``core.lab.claims``) that state what these numbers say:

- loss at equal steps: the validation loss at the last validation step every run reached;
- loss at equal time: each run's last validation within the shortest run's training time,
  where a validation after step s counts the seconds of its first s steps;
- whether the seed-to-seed spread of that loss (max - min over one norm's seeds, the larger of
  the two norms) exceeds the gap between the norms' means;
- time per step: the median over every step of a norm's runs, and how consistent the ratio
  is: RMSNorm over LayerNorm, seed by seed and in consecutive parts of the steps; which norm is
  faster is said only when at least ``MIN_PAIRS`` such comparisons all agree (a sign test);
- the norms' share of a forward pass, :math:`(t_{norm} - t_{identity}) / t_{norm}`, timed by
  ``core.training.train.time_forward`` with the norms and with the identity in their place; the
  variant without a norm times one computation twice, so its largest :math:`|share|` is the timing
  noise, and a share is quoted, or two compared, only beyond it (a share is never shown negative);
- the RMSNorm paper's 7-64 % (Zhang & Sennrich 2019) beside this machine's saving
  :math:`1 - \tilde t_{RMS} / \tilde t_{Layer}`.

A live run trains one seed per chosen variant with ``train_live``: one run per server process
at a time (``TRAIN_LOCK`` with ``core.lab.speed.exclusive``), one torch thread, a wall-clock cap
(``live_seconds``, 30 s unless ``NORMLAB_TRAIN_SECONDS`` says otherwise) and a work cap
``LIVE_WORK`` in token-parameters shared among the variants, which bounds the CPU a run takes
whatever the machine's speed. Memory is bounded by the settings' limits: at most
``max_parameters()`` weights, and the reference's batch of 16 windows of 64 bytes.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from core.defaults import DEFAULT_LAYER_EPS, EPS_LADDER, ladder_upto
from core.device import torch_threads
from core.lab.claims import Claim, at_most
from core.lab.speed import PAPER_SAVING
from core.training.model import NORM_CLASSES, NORM_KINDS, ModelConfig
from core.training.runs import REFERENCE, load_reference
from core.training.train import STOP_REASONS, TrainConfig, TrainResult, train_together

__all__ = [
    "DEFAULT_SECONDS",
    "LIVE_DEFAULTS",
    "LIVE_DEPTHS",
    "LIVE_EPS",
    "LIVE_LRS",
    "LIVE_STEPS",
    "LIVE_THREADS",
    "LIVE_WIDTHS",
    "LIVE_WORK",
    "MAX_POINTS",
    "MIN_PAIRS",
    "SECONDS_ENV",
    "TRAIN_LOCK",
    "NormSummary",
    "Progress",
    "RunCurves",
    "TrainingView",
    "live_configs",
    "live_curves",
    "live_seconds",
    "max_parameters",
    "progress",
    "recorded_operations",
    "reference_spread",
    "reference_view",
    "run_record",
    "shown_share",
    "train_live",
    "training_view",
]

# What a visitor may choose. Widths are multiples of the reference's 4 heads; the largest model
# (width 128, 6 blocks) has 1.26 M weights: with AdamW's two moments and the gradients, 20 MB.
LIVE_WIDTHS = (16, 32, 48, 64, 96, 128)
LIVE_DEPTHS = (1, 6)
LIVE_STEPS = (10, 3000)
LIVE_LRS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1)
# ModelConfig needs eps > 0; up to 1, far past any row's mean square at initialisation.
LIVE_EPS = ladder_upto(EPS_LADDER, 1.0, lo=1e-12)
LIVE_DEFAULTS = {"width": 48, "depth": 2, "eps": DEFAULT_LAYER_EPS, "lr": 3e-3, "steps": 200}
# A shared demo gives one visitor half a minute of CPU; a server can say otherwise.
SECONDS_ENV = "NORMLAB_TRAIN_SECONDS"
DEFAULT_SECONDS = 30.0
SECONDS_LIMITS = (1.0, 600.0)
# Token-parameters for all chosen variants together: about one shipped reference run (2.0e11),
# which at the largest model is 80 steps of each of three variants.
LIVE_WORK = 2e11
# One thread: on a shared two-core machine a second thread makes each step wait for it (see
# core.training.runs), and the other core stays free for the other visitors.
LIVE_THREADS = 1
# Validations per live run (about), and the forward-timing repeats once a run completes.
LIVE_VALIDATIONS = 20
LIVE_TIMING_REPEATS = 5
# Points per curve sent to the browser: training losses are averaged over bins of steps.
MAX_POINTS = 150
# Paired step-time comparisons needed before a sentence says which norm's step is faster: if the
# norms cost the same, each comparison falls either side of 1 with even odds, and all k agree by
# chance with probability 2^(1 - k): 3.1 % at k = 6 (a two-sided sign test below 5 %), 6.3 % at 5.
MIN_PAIRS = 6

# One live training per server process: two at once would each time the other's load, and
# queued runs would stack up CPU work that nobody waits for.
TRAIN_LOCK = threading.Lock()


def live_seconds() -> float:
    """The wall-clock cap of a live run: ``NORMLAB_TRAIN_SECONDS`` if it is a number within
    ``SECONDS_LIMITS`` (clamped into them), else ``DEFAULT_SECONDS``."""
    raw = os.environ.get(SECONDS_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_SECONDS
    if not math.isfinite(value):
        return DEFAULT_SECONDS
    return min(max(value, SECONDS_LIMITS[0]), SECONDS_LIMITS[1])


def live_configs(
    norms: Sequence[str],
    *,
    width: int,
    depth: int,
    eps: float,
    lr: float,
    steps: int,
    seed: int,
    max_seconds: float,
    max_work: float = LIVE_WORK,
) -> list[TrainConfig]:
    """One config per norm, the reference's batches and heads, the visitor's architecture; the
    work cap is shared equally, the wall-clock cap holds for each (they run side by side)."""
    norms = [n for n in NORM_KINDS if n in norms]
    base = REFERENCE.model
    model = ModelConfig(
        norm=norms[0] if norms else "rms",
        n_layer=int(depth),
        n_head=base.n_head,
        n_embd=int(width),
        block_size=base.block_size,
        eps=float(eps),
    )
    config = replace(
        REFERENCE,
        model=model,
        steps=int(steps),
        lr=float(lr),
        min_lr=float(lr) / 10,
        warmup=min(REFERENCE.warmup, int(steps) // 10),
        eval_every=max(1, math.ceil(int(steps) / LIVE_VALIDATIONS)),
        timing_repeats=LIVE_TIMING_REPEATS,
        seed=int(seed),
        max_seconds=float(max_seconds),
        max_work=float(max_work) / max(1, len(norms)),
    )
    return [replace(config, model=replace(model, norm=n)) for n in norms]


def max_parameters() -> int:
    """Weights of the largest model a visitor can ask for (widest, deepest, with norms)."""
    d, n_layer = max(LIVE_WIDTHS), LIVE_DEPTHS[1]
    vocab, block = REFERENCE.model.vocab_size, REFERENCE.model.block_size
    per_block = 12 * d * d + 4 * d  # attention 4 d^2, MLP 8 d^2, two LayerNorms 2 d each
    return 2 * vocab * d + block * d + n_layer * per_block + 2 * d


def train_live(
    configs: Sequence[TrainConfig],
    callback: Callable[[list[TrainResult]], bool | None] | None = None,
) -> list[TrainResult]:
    """``train_together`` on ``LIVE_THREADS`` torch threads. The caller holds ``TRAIN_LOCK``."""
    with torch_threads(LIVE_THREADS):
        return train_together(configs, callback=callback)


def run_record(result: TrainResult) -> dict[str, Any]:
    """A result as the plain record ``training_view`` reads (no model): norm, seed, curves."""
    return {"norm": result.config.model.norm, "seed": result.config.seed, **result.curves()}


@dataclass(frozen=True)
class Progress:
    """How far a live training is: the largest of its step, time and work fractions."""

    fraction: float
    steps_done: int
    steps: int
    seconds: float
    max_seconds: float | None


def progress(results: Sequence[TrainResult], seconds: float) -> Progress:
    """The progress of runs trained together, ``seconds`` after they started."""
    config = results[0].config
    done = min(r.steps_done for r in results)
    parts = [done / max(1, config.steps)]
    if config.max_seconds:
        parts.append(seconds / config.max_seconds)
    if config.max_work:
        parts.append(max(r.work for r in results) / config.max_work)
    return Progress(min(1.0, max(parts)), done, config.steps, seconds, config.max_seconds)


def recorded_operations(kind: str, d: int = 8) -> int:
    """How many operations autograd records for one norm layer of ``core.training.model`` (its
    backward graph's nodes, the leaves' gradient sinks not counted): the fused LayerNorm is one, the
    composite RMSNorm one per step of its formula, the identity none."""
    import torch

    from core.training.model import Norm

    layer = Norm(kind, d, DEFAULT_LAYER_EPS, "final")
    x = torch.randn(2, 3, d, generator=torch.Generator().manual_seed(0), requires_grad=True)
    y = layer(x)
    seen, stack = set(), [y.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack += [parent for parent, _ in node.next_functions]
    return sum(type(node).__name__ != "AccumulateGrad" for node in seen)


@dataclass(frozen=True)
class RunCurves:
    """One run as the figures draw it. Training losses are averaged over bins of steps (at
    most ``MAX_POINTS`` a run); validation losses are all there. Seconds count training steps
    only: a validation after step s sits at the seconds of the first s steps."""

    norm: str
    seed: int
    steps: int
    steps_done: int
    stopped_by: str  # one of core.training.train.STOP_REASONS, or "interrupted"
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
    shares: tuple[float | None, ...]
    finite: bool


@dataclass(frozen=True)
class TrainingView:
    """Everything the training page shows for one set of runs."""

    runs: tuple[RunCurves, ...]
    norms: dict[str, NormSummary]
    equal_step: int
    equal_seconds: float
    operations: dict[str, int]
    time_ratio: float | None  # RMSNorm's median step over LayerNorm's
    share_noise: float | None  # the no-norm variant's largest |share| (None: not timed)
    claims: dict[str, Claim]


def _binned(values: np.ndarray, size: int) -> np.ndarray:
    """Means over consecutive bins of ``size`` (the last bin may be shorter)."""
    if values.size == 0:
        return values
    edges = np.arange(0, values.size, size)
    return np.add.reduceat(values, edges) / np.diff(np.append(edges, values.size))


def _curves(record: Mapping[str, Any]) -> RunCurves:
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
    )


def _equal_step(runs: Sequence[RunCurves]) -> int:
    """The last validation step every run reached (0 when they share no later one)."""
    common = set.intersection(*(set(r.val_steps.tolist()) for r in runs))
    return max(common) if common else 0


def _equal_seconds(runs: Sequence[RunCurves]) -> float:
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


def _spread(values: np.ndarray) -> float:
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
        spread=_spread(at_step),
        lowest=float(np.min(at_step)),
        highest=float(np.max(at_step)),
        median_step_ms=float(np.median(steps) * 1e3) if steps.size else math.nan,
        shares=tuple(r.norm_share for r in runs),
        finite=all(r.finite for r in runs),
    )


def training_view(
    records: Sequence[Mapping[str, Any]],
    *,
    reference_spread: float | None = None,
    machine: Mapping[str, Any] | None = None,
    live: bool = False,
) -> TrainingView:
    """The page state for ``records`` (at least one run; one or more seeds of each norm).

    ``reference_spread`` is the shipped runs' seed spread, quoted where these runs have one
    seed each; ``machine`` (the shipped runs' ``curves.json`` entry) adds the sentence on the
    machine the timings come from; ``live`` adds the sentence on how the training stopped.
    """
    if not records:
        raise ValueError("training_view needs at least one run")
    runs = tuple(sorted((_curves(r) for r in records), key=lambda r: (_order(r.norm), r.seed)))
    step, seconds = _equal_step(runs), _equal_seconds(runs)
    norms = {
        n: _summary(n, [r for r in runs if r.norm == n], step, seconds)
        for n in sorted(NORM_KINDS, key=_order)
        if any(r.norm == n for r in runs)
    }
    operations = {n: recorded_operations(n) for n in norms}
    ratio = None
    if "rms" in norms and "layer" in norms:
        ratio = norms["rms"].median_step_ms / norms["layer"].median_step_ms
    noise = _share_noise(runs)
    view = TrainingView(runs, norms, step, seconds, operations, ratio, noise, {})
    claims = _loss_claims(view, reference_spread)
    claims.update(_time_claims(view))
    if machine is not None:
        claims["machine"] = _machine_claim(machine)
    if live:
        claims["stopped"] = _stopped_claim(runs)
    return replace(view, claims=claims)


def _order(norm: str) -> int:
    # RMSNorm first, then LayerNorm, on every page; the variant without a norm last.
    return ("rms", "layer", "none").index(norm)


def reference_view() -> TrainingView:
    """The shipped runs (``assets/train/curves.json``) as the page shows them."""
    data = load_reference()
    return training_view(data["runs"], machine=data["machine"])


def reference_spread(view: TrainingView) -> float | None:
    """The larger seed spread of RMSNorm and LayerNorm in ``view`` (None with one seed)."""
    spreads = [view.norms[n].spread for n in ("rms", "layer") if n in view.norms]
    if len(spreads) < 2 or any(len(view.norms[n].seeds) < 2 for n in ("rms", "layer")):
        return None
    return max(spreads)


# --- The sentences -----------------------------------------------------------------------------


def _pair(view: TrainingView) -> tuple[NormSummary, NormSummary] | None:
    """RMSNorm and LayerNorm, when both were trained."""
    if "rms" in view.norms and "layer" in view.norms:
        return view.norms["rms"], view.norms["layer"]
    return None


def _comparable(*summaries: NormSummary, field: str) -> bool:
    return all(s.finite and math.isfinite(getattr(s, field)) for s in summaries)


def _loss_claims(view: TrainingView, ref_spread: float | None) -> dict[str, Claim]:
    claims = {
        f"diverged_{n}": Claim(f"training.diverged_{n}", {})
        for n, s in view.norms.items()
        if not s.finite
    }
    pair = _pair(view)
    if pair is not None and _comparable(*pair, field="mean_at_step"):
        claims["steps"] = _gap_claim(*pair, "steps", view.equal_step, step=view.equal_step)
        claims["spread"] = _spread_claim(view, *pair, ref_spread)
    if pair is not None and _comparable(*pair, field="mean_at_time"):
        reached = max(int(pair[0].at_time_steps.max()), int(pair[1].at_time_steps.max()))
        claims["time"] = _gap_claim(*pair, "time", reached, seconds=view.equal_seconds)
    none = _none_claim(view)
    if none is not None:
        claims["none"] = none
    return claims


def _gap_claim(
    rms: NormSummary, layer: NormSummary, kind: str, reached: int, **where: float
) -> Claim:
    """Which norm's mean validation loss is lower at the equal step or time (``kind``). At the
    equal time, with several seeds, also whether the gap exceeds the seeds' spread there."""
    field = "mean_at_step" if kind == "steps" else "mean_at_time"
    a, b = getattr(rms, field), getattr(layer, field)
    if reached <= 0:
        return Claim(f"training.{kind}_untrained", dict(where))
    if a == b:
        return Claim(f"training.{kind}_tie", {**where, "loss": a})
    winner, loser = (rms, layer) if a < b else (layer, rms)
    fields = {
        **where,
        "winner": NORM_CLASSES[winner.norm],
        "loser": NORM_CLASSES[loser.norm],
        "w_loss": min(a, b),
        "l_loss": max(a, b),
        "gap": abs(a - b),
    }
    if kind == "steps" or min(len(rms.seeds), len(layer.seeds)) < 2:
        return Claim(f"training.{kind}_gap", fields)
    spread = max(_spread(rms.at_time), _spread(layer.at_time))
    within = at_most(abs(a - b), spread)
    return Claim(
        "training.time_gap_within_spread" if within else "training.time_gap_beyond_spread",
        {**fields, "spread": spread},
    )


def _spread_claim(
    view: TrainingView, rms: NormSummary, layer: NormSummary, ref_spread: float | None
) -> Claim:
    """Is the seed-to-seed spread larger than the gap between the norms' means?"""
    if min(len(rms.seeds), len(layer.seeds)) < 2:
        if ref_spread is None:
            return Claim("training.spread_unknown", {})
        return Claim("training.spread_one_seed", {"ref_spread": ref_spread})
    gap = abs(rms.mean_at_step - layer.mean_at_step)
    spread = max(rms.spread, layer.spread)
    by_seed = dict(zip(layer.seeds, layer.at_step, strict=True))
    paired = [(a, by_seed[s]) for s, a in zip(rms.seeds, rms.at_step, strict=True) if s in by_seed]
    # "The spread is at least the gap": the seeds alone move the loss as much as the norm.
    verdict = at_most(gap, spread)
    return Claim(
        "training.spread_exceeds_gap" if verdict else "training.gap_exceeds_spread",
        {
            "step": view.equal_step,
            "gap": gap,
            "spread": spread,
            "wins": int(sum(a < b for a, b in paired)),
            "pairs": len(paired),
        },
    )


def _none_claim(view: TrainingView) -> Claim | None:
    """The variant without a norm against the better of the norms trained beside it, once the
    runs share a validation after step 0 (as the comparison at equal steps)."""
    none = view.norms.get("none")
    if view.equal_step <= 0:  # at step 0 the variants differ only by their initial weights
        return None
    others = [
        view.norms[n]
        for n in ("rms", "layer")
        if n in view.norms and _comparable(view.norms[n], field="mean_at_step")
    ]
    if none is None or not others or not _comparable(none, field="mean_at_step"):
        return None
    best = min(others, key=lambda s: s.mean_at_step)
    diff = none.mean_at_step - best.mean_at_step
    key = "none_higher" if diff > 0 else "none_lower" if diff < 0 else "none_tie"
    return Claim(
        f"training.{key}",
        {
            "step": view.equal_step,
            "none_loss": none.mean_at_step,
            "best": NORM_CLASSES[best.norm],
            "best_loss": best.mean_at_step,
            "diff": abs(diff),
        },
    )


def _parts(n: int, parts: int) -> list[tuple[int, int]]:
    """``n`` steps in ``parts`` consecutive runs of steps, as ``numpy.array_split`` cuts them
    (the first ``n % parts`` one step longer)."""
    edges = np.cumsum([0] + [len(p) for p in np.array_split(np.arange(n), parts)])
    return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))


def _paired_ratios(rms: Sequence[RunCurves], layer: Sequence[RunCurves]) -> list[float]:
    """RMSNorm's median step time over LayerNorm's, per seed trained with both and per part of
    the steps both runs of that seed did: each seed's steps are cut into enough consecutive parts
    that all seeds together give ``MIN_PAIRS`` comparisons (at least two parts a seed, at most
    one a step). The parts show a load that changed during a run."""
    by_seed = {r.seed: r for r in layer}
    paired = [(a, by_seed[a.seed]) for a in rms if a.seed in by_seed]
    parts = max(2, math.ceil(MIN_PAIRS / max(1, len(paired))))
    ratios = []
    for a, b in paired:
        n = min(a.steps_done, b.steps_done)
        for lo, hi in _parts(n, min(parts, n)) if n >= 2 else ():
            ta, tb = np.median(a.step_seconds[lo:hi]), np.median(b.step_seconds[lo:hi])
            if tb > 0 and math.isfinite(ta / tb):
                ratios.append(float(ta / tb))
    return ratios


def _step_order(ratios: Sequence[float]) -> str:
    """``slower`` or ``faster`` when every paired ratio lies on that side of 1 and there are
    ``MIN_PAIRS`` of them; ``few`` when they agree but are fewer; ``mixed`` otherwise."""
    if all(r > 1 for r in ratios):
        side = "slower"
    elif all(r < 1 for r in ratios):
        side = "faster"
    else:
        return "mixed"
    return side if len(ratios) >= MIN_PAIRS else "few"


def _time_claims(view: TrainingView) -> dict[str, Claim]:
    if _pair(view) is None:
        return {}
    rms = [r for r in view.runs if r.norm == "rms"]
    layer = [r for r in view.runs if r.norm == "layer"]
    noise = _share_noise(view.runs)
    claims = {"share": _share_claim(rms, layer, noise)}
    if noise is not None:
        claims["noise"] = Claim("training.noise", {"noise_pct": noise})
    ratios = _paired_ratios(rms, layer)
    ratio = view.time_ratio
    if not (ratios and ratio is not None and math.isfinite(ratio) and ratio > 0):
        return claims
    order = _step_order(ratios)
    claims["step_time"] = Claim(
        f"training.step_time_{order}",
        {
            "ratio": ratio,
            "rms_ms": view.norms["rms"].median_step_ms,
            "layer_ms": view.norms["layer"].median_step_ms,
            "lo": min(ratios),
            "hi": max(ratios),
            "pairs": len(ratios),
            "chance_pct": 2.0 ** (1 - len(ratios)),
        },
    )
    claims["paper"] = _paper_claim(ratio, order)
    # A question about RMSNorm's cost only where a timing beyond its noise shows that cost: the
    # steps, or (when the steps do not settle it) the norms' share of a forward pass.
    share_larger = claims["share"].key == "training.share_rms_larger"
    if order == "slower" or (order in ("few", "mixed") and share_larger):
        why = "training.why_slower"
    elif order == "faster":
        why = "training.why_not_slower"
    else:
        return claims
    ops = {"rms_ops": view.operations["rms"], "layer_ops": view.operations["layer"]}
    claims["why"] = Claim(why, ops)
    return claims


def _paper_claim(ratio: float, order: str) -> Claim:
    """This machine's saving beside the paper's 7-64 %, when the timings settle its sign."""
    saving = 1.0 - ratio
    lo, hi = PAPER_SAVING
    fields = {"ratio": ratio, "paper_lo_pct": lo, "paper_hi_pct": hi}
    if order not in ("slower", "faster") or (order == "slower") != (saving < 0):
        return Claim("training.paper_unresolved", fields)
    if saving < 0:
        key = "paper_slower"
    elif saving < lo:
        key = "paper_below"
    elif saving <= hi:
        key = "paper_within"
    else:
        key = "paper_above"
    return Claim(f"training.{key}", {**fields, "saving_pct": abs(saving)})


def _share_noise(runs: Sequence[RunCurves]) -> float | None:
    """The timing noise of a share: the variant without a norm times the same computation
    twice, so its largest ``|share|`` is what noise alone makes (None when it was not timed)."""
    readings = [abs(r.norm_share) for r in runs if r.norm == "none" and _measured(r.norm_share)]
    return max(readings) if readings else None


def _measured(share: float | None) -> bool:
    return share is not None and math.isfinite(share)


def shown_share(share: float | None, noise: float | None) -> float | None:
    """A run's share of a forward pass as the page shows it: only when the pass without the
    norms was faster by more than the timing noise (0 when unmeasured), so never below it."""
    if not _measured(share) or share <= (noise or 0.0):
        return None
    return share


def _share_claim(
    rms: Sequence[RunCurves], layer: Sequence[RunCurves], noise: float | None
) -> Claim:
    """The norms' share of a forward pass with RMSNorm and with LayerNorm, seed by seed, held
    to the timing noise: a share is quoted only above it, and one norm's share is called
    larger only where every seed's difference exceeds it."""
    by_seed = {r.seed: r.norm_share for r in layer}
    pairs = [
        (a.norm_share, by_seed[a.seed])
        for a in rms
        if _measured(a.norm_share) and _measured(by_seed.get(a.seed))
    ]
    if not pairs:
        return Claim("training.share_unmeasured", {})
    shares = np.array(pairs)
    if any(shown_share(s, noise) is None for s in shares.ravel()):
        return Claim("training.share_noisy", {"pairs": len(pairs)})
    fields = {
        "rms_pct": float(np.median(shares[:, 0])),
        "layer_pct": float(np.median(shares[:, 1])),
        "pairs": len(pairs),
    }
    if noise is None:
        return Claim("training.share_uncompared", fields)
    fields["noise_pct"] = noise
    diff = shares[:, 0] - shares[:, 1]
    if (diff > noise).all():
        key = "rms_larger"
    elif (diff < -noise).all():
        key = "layer_larger"
    elif (np.abs(diff) > noise).all():
        key = "mixed"
    else:
        key = "close"
    return Claim(f"training.share_{key}", fields)


def _machine_claim(machine: Mapping[str, Any]) -> Claim:
    """Where the shipped timings come from: the cores, the threads and the 1-minute load
    average at the start and the end. A load average above the core count means that on
    average more tasks were ready to run than there were cores, so some waited for one: the
    timings were taken under contention. At or below it, they were not on average."""
    before, after = machine["load_average_before"][0], machine["load_average_after"][0]
    cpus = machine["cpu_count"]
    contended = max(before, after) > cpus
    return Claim(
        f"training.machine_{'contended' if contended else 'uncontended'}",
        {
            "cpus": cpus,
            "threads": machine["threads"],
            "before": float(before),
            "after": float(after),
            "minutes": round(float(machine["total_seconds"]) / 60, 1),
        },
    )


def _stopped_claim(runs: Sequence[RunCurves]) -> Claim:
    """How a live training ended: every step done, a cap, or the page interrupted it."""
    reasons = {r.stopped_by for r in runs}
    fields = {"done": min(r.steps_done for r in runs), "steps": max(r.steps for r in runs)}
    if reasons & {"interrupted", "callback"}:
        return Claim("training.stopped_interrupted", fields)
    if "wall_clock" in reasons:
        cap = max(r.max_seconds or 0.0 for r in runs)
        return Claim("training.stopped_wall_clock", {**fields, "cap": cap})
    if "work" in reasons:
        return Claim("training.stopped_work", fields)
    return Claim("training.stopped_steps", fields)


def live_curves(results: Sequence[TrainResult]) -> tuple[RunCurves, ...]:
    """The curves of runs still training (for the growing chart), without the comparisons."""
    runs = (_curves(run_record(r)) for r in results)
    return tuple(sorted(runs, key=lambda r: (_order(r.norm), r.seed)))
