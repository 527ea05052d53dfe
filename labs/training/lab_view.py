r"""The training lab: the shipped runs and a visitor's live runs, as the page shows them.

``training_view(runs)`` takes runs as plain records (``run_record`` of a ``TrainResult``, or the
shipped ``curves.json`` entries) and returns everything the page shows.

A live run (``train_live``) trains one seed per chosen variant: one run per server process at a
time (``TRAIN_LINE``), one torch thread, a wall-clock cap (``live_seconds``) and a work cap
``LIVE_WORK`` in token-parameters, which bounds the CPU a run takes whatever the machine's speed.
Memory is bounded by the settings' limits (``max_parameters()``) and the reference's batch."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from core.defaults import DEFAULT_LAYER_EPS, EPS_LADDER, ladder_upto
from core.device import torch_threads
from labs.training import curves
from labs.training.claims import later_claims, run_claims, share_noise
from labs.training.dyt_claims import VERSUS, alpha_claims, versus
from labs.training.model import BLOCK_LAYOUTS, NORM_KINDS, QK_NORMS
from labs.training.reference import REFERENCE, load_reference
from labs.training.run_cache import Line
from labs.training.train import TrainConfig, TrainResult, train_together

# What a visitor may choose. Widths are multiples of the reference's 4 heads; the largest model
# (width 128, 6 blocks) has 1.26 M weights: with AdamW's two moments and the gradients, 20 MB.
LIVE_WIDTHS = (16, 32, 48, 64, 96, 128)
LIVE_DEPTHS = (1, 6)
LIVE_STEPS = (10, 3000)
LIVE_LRS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1)
LIVE_TAUS = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)  # QK-Clip's cap, Kimi K2's 100 inside
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
# labs.training.reference), and the other core stays free for the other visitors.
LIVE_THREADS = 1
# Validations per live run (about), and the forward-timing repeats once a run completes (even).
LIVE_VALIDATIONS = 20
LIVE_TIMING_REPEATS = 6
# One live training per host, in turn: two at once would each time the other's load.
TRAIN_LINE = Line()


def live_seconds() -> float:
    """The wall-clock cap of a live run: ``NORMLAB_TRAIN_SECONDS`` if it is a number within
    ``SECONDS_LIMITS`` (clamped into them), else ``DEFAULT_SECONDS``."""
    try:
        value = float(os.environ.get(SECONDS_ENV, ""))
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
    placement: str = "pre",
    qk_norm: str = "off",
    tau: float = 100.0,
) -> list[TrainConfig]:
    """One config per norm, the reference's batches and heads, the visitor's architecture (the
    norms' ``placement``, ``qk_norm`` and ``tau`` alike for every variant); the work cap is shared
    equally, the wall-clock cap holds for each (they run side by side)."""
    norms = [n for n in NORM_KINDS if n in norms]
    shape = {"n_layer": int(depth), "n_embd": int(width), "eps": float(eps)}
    norm = norms[0] if norms else "rms"
    model = replace(REFERENCE.model, norm=norm, placement=placement, qk_norm=qk_norm, **shape)
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
        tau=float(tau),
    )
    return [replace(config, model=replace(model, norm=n)) for n in norms]


def _norm_weights(kind: str, d: int) -> int:
    """One norm layer's weights: LayerNorm's gain and bias, RMSNorm's gain, DyT's gain, bias and
    alpha, Derf's and its shift, none for the identity."""
    return {"layer": 2 * d, "rms": d, "none": 0, "dyt": 2 * d + 1, "derf": 2 * d + 2}[kind]


def max_parameters() -> int:
    """Weights of the largest model a visitor can ask for: the widest and deepest, with the
    heaviest norm in the placement with the most norm layers (four a block and a final one) and
    the heaviest norm on every head's queries and keys."""
    d, n_layer = max(LIVE_WIDTHS), LIVE_DEPTHS[1]
    d_head = d // REFERENCE.model.n_head
    vocab, block = REFERENCE.model.vocab_size, REFERENCE.model.block_size
    stream = max(_norm_weights(n, d) for n in NORM_KINDS)
    qk = 2 * max(_norm_weights(n, d_head) for n in QK_NORMS if n in NORM_KINDS)
    per_block = max(sum(w is not None for _, w in layout) for layout in BLOCK_LAYOUTS.values())
    blocks = n_layer * (12 * d * d + per_block * stream + qk)  # 4d² + 8d²
    return 2 * vocab * d + block * d + blocks + stream


def train_live(
    configs: Sequence[TrainConfig],
    callback: Callable[[list[TrainResult]], bool | None] | None = None,
) -> list[TrainResult]:
    """``train_together`` on ``LIVE_THREADS`` torch threads, in the caller's turn on the line."""
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


def recorded_operations(kind: str, d: int = 8, kernel: str = "lab") -> int:
    """How many operations autograd records for one norm layer of ``labs.training.model`` computed
    with ``kernel`` (its backward graph's nodes, the leaves' gradient sinks not counted): with the
    lab's kernel the fused LayerNorm is one, the composite RMSNorm one per step of its formula,
    the identity none."""
    import torch

    from labs.training.model import Norm

    layer = Norm(kind, d, DEFAULT_LAYER_EPS, "final", kernel)
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


def training_view(
    records: Sequence[Mapping[str, Any]],
    *,
    reference_spread: float | None = None,
    machine: Mapping[str, Any] | None = None,
    live: bool = False,
) -> curves.TrainingView:
    """The page state for ``records`` (at least one run; one or more seeds of each norm).

    ``reference_spread`` is the shipped runs' seed spread, quoted where these runs have one
    seed each; ``machine`` (the shipped runs' ``curves.json`` entry) adds the sentence on the
    machine the timings come from; ``live`` adds the sentence on how the training stopped."""
    if not records:
        raise ValueError("training_view needs at least one run")
    runs = curves.in_order(curves.run_curves(r) for r in records)
    step, seconds = curves.equal_step(runs), curves.equal_seconds(runs)
    norms = curves.summaries(runs, step, seconds)
    operations = {n: recorded_operations(n) for n in norms}
    ratio = None
    if "rms" in norms and "layer" in norms:
        ratio = norms["rms"].median_step_ms / norms["layer"].median_step_ms
    noise = share_noise(runs)
    alphas = tuple(s for key in curves.LEARNED if (s := curves.alpha_summary(runs, *key)))
    view = curves.TrainingView(runs, norms, step, seconds, operations, ratio, noise, {}, alphas)
    claims = run_claims(view, reference_spread=reference_spread, machine=machine, live=live)
    claims |= later_claims(records) if machine is not None else {}
    claims |= {slot: c for slot, args in VERSUS.items() if (c := versus(view, *args))}
    return replace(view, claims=claims | alpha_claims(alphas))


def reference_view() -> curves.TrainingView:
    """The shipped runs (``assets/train/curves.json``) as the page shows them."""
    data = load_reference()
    return training_view(data["runs"], machine=data["machine"])


def reference_spread(view: curves.TrainingView) -> float | None:
    """The larger seed spread of RMSNorm and LayerNorm in ``view`` (None with one seed)."""
    spreads = [view.norms[n].spread for n in ("rms", "layer") if n in view.norms]
    if len(spreads) < 2 or any(len(view.norms[n].seeds) < 2 for n in ("rms", "layer")):
        return None
    return max(spreads)


_LAST: tuple = (None, ())  # the last records drawn in this process, and their curves


def live_curves(records: Sequence[Mapping[str, Any]]) -> tuple[curves.RunCurves, ...]:
    """The curves of runs still training (``run_record``, for the growing chart), without the
    comparisons. Kept for the last records: the visitors of a worker who watch one run draw the
    same drawing (``run_cache.Watched.shown`` reads each once)."""
    global _LAST
    last = _LAST
    if last[0] is not records:
        last = _LAST = (records, curves.in_order(curves.run_curves(r) for r in records))
    return last[1]
