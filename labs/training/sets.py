r"""Three shipped sets beyond the two norms: where the norm sits, QK-norm against the step size,
and DyT against RMSNorm on little and on more data.

The first two train RMSNorm models of ``labs.training.model`` on the reference corpus, one torch
thread, and record at every validation the loss, the residual stream's RMS after the embedding
and each block (``hidden_rms``) and the largest attention logit: ``PLACEMENT`` (``pre``,
``post``, ``peri``, ``output`` and ``scaled`` norms) and ``QKNORM`` (``off``, ``rms`` and
``clip`` at every peak learning rate of ``QKNORM_LRS``). ``DATA`` trains RMSNorm and DyT models
on each slice of ``DATA_SLICES`` and records, at the end, the share of each DyT layer's inputs
it saturates (``saturated_shares``). ``python -m labs.training.runs --set placement``
(``qknorm``, ``data``) writes ``assets/train/placement.json`` (``qknorm.json``, ``data.json``),
as docs/training.md describes; float32 holds about seven significant digits, hence
``SIGNIFICANT``. ``load_set(name)`` reads a set back."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from core.device import torch_threads
from labs.training.corpus import load_corpus
from labs.training.reference import (
    LOSS_DECIMALS,
    REFERENCE,
    REFERENCE_DIR,
    REFERENCE_THREADS,
    machine_record,
)
from labs.training.train import TrainConfig, TrainResult, train, val_windows

SET_FILES = {"placement": "placement.json", "qknorm": "qknorm.json", "data": "data.json"}
SIGNIFICANT = 7
# Validations per run, about, when a test shortens a set (``steps``).
VALIDATIONS = 8

# Deep enough that the stream passes many residual additions (each placement adds to it, or
# renormalises it, 2 L times), short enough for five placements and three seeds in about a quarter
# of an hour on a loaded two-core machine. Peak learning rate, batches, width: the reference's.
PLACEMENT_DEPTH = 8
SET_PLACEMENTS = ("pre", "peri", "post", "output", "scaled")
PLACEMENT_SEEDS = (0, 1, 2)
_DEEP = replace(REFERENCE.model, n_layer=PLACEMENT_DEPTH)
PLACEMENT = replace(REFERENCE, model=_DEEP, steps=400, eval_every=50, timing_repeats=0)

# From the reference's 3e-3 up and down by about 3x a rung: at 1e-1 the plain model's attention
# logits reach thousands within a hundred steps (measured with short trials); the minimum of the
# cosine schedule is a tenth of the peak, as in the reference.
QKNORM_LRS = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
QKNORM_MODES = ("off", "rms", "clip")
QKNORM_SEEDS = (0, 1, 2)
# QK-Clip's cap: the plain runs' logits pass 10 from 1e-2 up (at most 9.98 at 3e-3, thousands at
# 1e-1), and QK norm's stay near it (at most 10.7 with seeds 0 and 1, 16 with seed 2 at 1e-1), so
# the clip acts at three rates and its cap compares with QK norm's. Kimi K2's 100: the two highest.
QKNORM_TAU = 10.0
QKNORM = replace(REFERENCE, steps=240, eval_every=40, timing_repeats=0, tau=QKNORM_TAU)

# DyT's data regime (Verma 2026: GPT-2-family models on 1M and on 118M tokens, about 1 : 118):
# the reference's model and run on the first 4 KiB of the training split (about a hundredth of
# it, each byte read some 370 times) and on all of it (about 3.7 times). An S-shaped layer's
# input counts as saturated where |alpha x| >= SATURATION, Verma's mark (tanh(2) = 0.964).
DATA_SLICES = (4096, None)
DATA_NORMS = ("rms", "dyt")
DATA_SEEDS = (0, 1, 2)
DATA = replace(REFERENCE, timing_repeats=0)
SATURATION = 2.0


def _shortened(config: TrainConfig, steps: int | None) -> TrainConfig:
    """``config`` with ``steps`` steps (a quick version for tests): about ``VALIDATIONS``
    validations, the warm-up at most a tenth of the steps."""
    if steps is None:
        return config
    steps, warmup = int(steps), min(config.warmup, int(steps) // 10)
    evals = max(1, math.ceil(steps / VALIDATIONS))
    return replace(config, steps=steps, eval_every=evals, warmup=warmup)


def placement_configs(
    *, steps: int | None = None, seeds: Sequence[int] = PLACEMENT_SEEDS
) -> list[TrainConfig]:
    """``PLACEMENT`` for every seed and placement of ``SET_PLACEMENTS``, seed-major."""
    base = _shortened(PLACEMENT, steps)
    return [
        replace(base, model=replace(base.model, placement=p), seed=seed)
        for seed in seeds
        for p in SET_PLACEMENTS
    ]


def qknorm_configs(
    *,
    steps: int | None = None,
    seeds: Sequence[int] = QKNORM_SEEDS,
    lrs: Sequence[float] = QKNORM_LRS,
) -> list[TrainConfig]:
    """``QKNORM`` for every seed, peak learning rate and QK-norm mode, seed-major."""
    base = _shortened(QKNORM, steps)
    return [
        replace(base, model=replace(base.model, qk_norm=mode), seed=seed, lr=lr, min_lr=lr / 10)
        for seed in seeds
        for lr in lrs
        for mode in QKNORM_MODES
    ]


def data_configs(
    *, steps: int | None = None, seeds: Sequence[int] = DATA_SEEDS
) -> list[TrainConfig]:
    """``DATA`` for every seed, slice of ``DATA_SLICES`` and norm of ``DATA_NORMS``, seed-major."""
    base = _shortened(DATA, steps)
    return [
        replace(base, model=replace(base.model, norm=norm), seed=seed, train_bytes=size)
        for seed in seeds
        for size in DATA_SLICES
        for norm in DATA_NORMS
    ]


def saturated_shares(model: Any, x: Any) -> list[float]:
    """Each DyT or Derf layer's share of its inputs on the windows ``x`` (b, t) whose curve
    argument, alpha x (plus Derf's shift), is at least ``SATURATION`` in magnitude, in forward
    order ([] without such layers)."""
    from labs.training.activations import capture

    layers = [(name, m) for name, m in model.norms() if hasattr(m, "alpha")]
    if not layers:  # no forward pass for nothing to read
        return []
    inputs = capture(model, [x], [(m, "input", name) for name, m in layers])
    shares = []
    for name, m in layers:
        shift = float(m.shift.detach()) if hasattr(m, "shift") else 0.0
        argument = float(m.alpha.detach()) * inputs[name] + shift
        shares.append(float(np.mean(np.abs(argument) >= SATURATION)))
    return shares


def _digits(value: float) -> float:
    """``value`` to ``SIGNIFICANT`` significant digits (NaN and infinities as they are)."""
    return float(f"{value:.{SIGNIFICANT}g}")


class _Recorder:
    """A ``train`` callback that keeps the stream's RMS of every validation (the result keeps
    only the last one's)."""

    def __init__(self) -> None:
        self.hidden_rms: list[list[float]] = []

    def __call__(self, result: TrainResult) -> None:
        if len(result.val_steps) > len(self.hidden_rms):
            self.hidden_rms.append(list(result.hidden_rms or []))


def set_record(result: TrainResult, hidden_rms: Sequence[Sequence[float]]) -> dict[str, Any]:
    """A run as the set files keep it: the variant, the settings, how it stopped and the
    validation curves, rounded (module docstring)."""
    config = result.config
    return {
        "norm": config.model.norm,
        "train_bytes": config.train_bytes,
        "placement": config.model.placement,
        "qk_norm": config.model.qk_norm,
        "lr": config.lr,
        "seed": config.seed,
        "config": config.as_dict(),
        "steps_done": result.steps_done,
        "stopped_by": result.stopped_by,
        "wall_seconds": round(result.wall_seconds, 3),
        "val_steps": list(result.val_steps),
        "val_loss": [round(v, LOSS_DECIMALS) for v in result.val_loss],
        "val_max_logit": [_digits(v) for v in result.val_max_logit],
        "val_hidden_rms": [[_digits(v) for v in row] for row in hidden_rms],
    }


def train_set(
    name: str,
    directory: str | Path = REFERENCE_DIR,
    *,
    threads: int = REFERENCE_THREADS,
    log: Callable[[str], None] = print,
    **options: Any,
) -> dict[str, Any]:
    """Train the set ``name`` (``options``: its configs function's ``steps``, ``seeds`` and, for
    ``qknorm``, ``lrs``) run after run, write its file into ``directory``, return its summary."""
    configs = CONFIGS[name](**options)
    corpus = load_corpus()
    windows = val_windows(corpus.val, configs[0].model.block_size, configs[0].eval_windows)[0]
    started, load_before = time.perf_counter(), os.getloadavg()
    runs = []
    with torch_threads(threads):
        for config in configs:
            recorder = _Recorder()
            result = train(config, corpus=corpus, callback=recorder)
            shares = saturated_shares(result.model, windows)
            runs.append(set_record(result, recorder.hidden_rms) | {"saturated": shares})
            model = config.model
            log(
                f"{name} {model.norm} {model.placement}/qk {model.qk_norm} lr {config.lr:g} "
                f"bytes {config.train_bytes} seed {config.seed}: val {result.val_loss[-1]:.4f}, "
                f"largest logit {max(result.val_max_logit):.4g}, {result.wall_seconds:.1f} s"
            )
    machine = machine_record(threads, started, load_before)
    data = {"set": name, "machine": machine, "data": corpus.describe(), "runs": runs}
    path = Path(directory) / SET_FILES[name]
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    return {"set": name, "file": str(path), "machine": machine, "runs": len(runs)}


CONFIGS = {"placement": placement_configs, "qknorm": qknorm_configs, "data": data_configs}
make_placement = partial(train_set, "placement")
make_qknorm = partial(train_set, "qknorm")
make_data = partial(train_set, "data")


def load_set(name: str, directory: str | Path = REFERENCE_DIR) -> dict[str, Any]:
    """The set ``name`` (a key of ``SET_FILES``) as written."""
    if name not in SET_FILES:
        raise ValueError(f"set must be one of {sorted(SET_FILES)} (got {name!r})")
    return json.loads((Path(directory) / SET_FILES[name]).read_text())
