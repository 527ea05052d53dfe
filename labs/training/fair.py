r"""The speed question asked fairly: RMSNorm against LayerNorm, both computed the same way.

``python -m labs.training.fair`` times the reference model's steps and its norm layer alone with
each norm through each kernel of :mod:`labs.training.kernels` that computes both alike (``"ops"``,
``"fused"``), DyT beside them, in a seeded order shuffled anew each round, and writes
``assets/train/kernels.json``; docs/training.md has the method and the shipped results."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.device import torch_threads
from labs.training.corpus import load_corpus
from labs.training.lab_view import recorded_operations
from labs.training.model import Norm
from labs.training.reference import (
    REFERENCE,
    REFERENCE_DIR,
    REFERENCE_THREADS,
    SECONDS_DECIMALS,
    machine_record,
)
from labs.training.train import TrainConfig, learning_rate, start, train_step

KERNELS_FILE = "kernels.json"
FAIR_KERNELS = ("ops", "fused")
FAIR_NORMS = ("rms", "layer")
DYT = "dyt"
# 300 compared steps cut into MIN_PAIRS = 6 parts of 50; with five variants about 1,600 steps
# in all, two to three minutes at 60-80 ms a step on a loaded two-core machine.
WARMUP_STEPS = 20
MEASURED_STEPS = 300
# A norm layer's forward and backward take a fraction of a millisecond: many more of them fit.
LAYER_REPEATS = 1200
FAIR_SEED = 0
# A layer's time is a few hundred microseconds: kept to a tenth of a microsecond.
LAYER_DECIMALS = 7


def fair_variants() -> list[tuple[str, str]]:
    """The (norm, kernel) pairs measured: each norm through each fair kernel, then DyT (its
    own operations; the kernel does not apply to it)."""
    return [(norm, kernel) for kernel in FAIR_KERNELS for norm in FAIR_NORMS] + [(DYT, "lab")]


def fair_configs(
    variants: Sequence[tuple[str, str]], *, steps: int, seed: int
) -> list[TrainConfig]:
    """``REFERENCE`` with each variant's norm and kernel, ``steps`` steps (the learning-rate
    schedule's length) and ``seed``."""
    base = replace(REFERENCE, steps=steps, seed=seed)
    return [replace(base, model=replace(base.model, norm=n, kernel=k)) for n, k in variants]


def interleaved(
    work: Sequence[Callable[[int], object]], rounds: int, rng: np.random.Generator
) -> list[list[float]]:
    """Seconds of ``work[i](r)`` for every round r, each round in a freshly shuffled order."""
    seconds: list[list[float]] = [[] for _ in work]
    for r in range(rounds):
        for i in rng.permutation(len(work)):
            t0 = time.perf_counter()
            work[i](r)
            seconds[i].append(time.perf_counter() - t0)
    return seconds


def _steps(configs: Sequence[TrainConfig]) -> tuple[list[Callable[[int], object]], list]:
    """Per variant, a training step on its next batch (step r at the schedule's rate for r),
    and the list its losses go to."""
    corpus = load_corpus()
    work, losses = [], []
    for config in configs:
        model, optimizer, batches = start(config, corpus)
        mine: list[float] = []

        def step(r, model=model, optimizer=optimizer, batches=batches, config=config, mine=mine):
            lr = learning_rate(r, config)
            mine.append(train_step(model, optimizer, *batches.next(), lr, config.grad_clip))

        work.append(step)
        losses.append(mine)
    return work, losses


def _layers(variants: Sequence[tuple[str, str]], seed: int) -> list[Callable[[int], object]]:
    """Per variant, one norm layer's forward and backward pass on the same activation (the
    reference's batch, block and width) and the same incoming gradient."""
    model = REFERENCE.model
    shape = (REFERENCE.batch_size, model.block_size, model.n_embd)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator).requires_grad_()
    grad = torch.randn(shape, generator=generator)
    work = []
    for norm, kernel in variants:
        layer = Norm(norm, model.n_embd, model.eps, "final", kernel)
        inputs = [x, *layer.parameters()]
        work.append(
            lambda r, layer=layer, inputs=inputs: torch.autograd.grad(layer(x), inputs, grad)
        )
    return work


def measure(
    directory: str | Path | None = REFERENCE_DIR,
    *,
    steps: int = MEASURED_STEPS,
    warmup: int = WARMUP_STEPS,
    repeats: int = LAYER_REPEATS,
    seed: int = FAIR_SEED,
    threads: int = REFERENCE_THREADS,
    variants: Sequence[tuple[str, str]] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Time the variants' training steps, then their norm layers alone, and return the record
    ``kernel_view`` reads; write it to ``directory / KERNELS_FILE`` unless ``directory`` is None."""
    variants = fair_variants() if variants is None else list(variants)
    configs = fair_configs(variants, steps=warmup + steps, seed=seed)
    rng = np.random.default_rng(seed)
    started, load_before = time.perf_counter(), os.getloadavg()
    with torch_threads(threads):
        work, losses = _steps(configs)
        step_seconds = interleaved(work, warmup + steps, rng)
        layer_seconds = interleaved(_layers(variants, seed), warmup + repeats, rng)
        nodes = [recorded_operations(norm, kernel=kernel) for norm, kernel in variants]
        norm_layers = len(start(configs[0])[0].norms())
    machine = machine_record(threads, started, load_before)
    model = {k: v for k, v in asdict(REFERENCE.model).items() if k not in ("norm", "kernel")}
    record = {
        "machine": machine,
        "model": model,
        "batch_size": REFERENCE.batch_size,
        "norm_layers": norm_layers,
        "seed": seed,
        "warmup_steps": warmup,
        "variants": [
            {
                "norm": norm,
                "kernel": kernel,
                "autograd_nodes": count,
                "final_train_loss": round(loss[-1], 6),
                "step_seconds": [round(s, SECONDS_DECIMALS) for s in steps_],
                "layer_seconds": [round(s, LAYER_DECIMALS) for s in layer],
            }
            for (norm, kernel), count, loss, steps_, layer in zip(
                variants, nodes, losses, step_seconds, layer_seconds, strict=True
            )
        ],
    }
    for v in record["variants"]:
        step_ms = 1e3 * np.median(v["step_seconds"][warmup:])
        layer_us = 1e6 * np.median(v["layer_seconds"][warmup:])
        log(f"{v['norm']:>5} {v['kernel']:>5}: {step_ms:.2f} ms a step, {layer_us:.1f} us a layer")
    if directory is not None:
        path = Path(directory) / KERNELS_FILE
        path.write_text(json.dumps(record, separators=(",", ":")) + "\n")
    return record


def load_kernels(directory: str | Path = REFERENCE_DIR) -> dict[str, Any]:
    """The shipped measurement, ``assets/train/kernels.json``."""
    return json.loads((Path(directory) / KERNELS_FILE).read_text())


def main(argv: list[str] | None = None) -> None:
    """``python -m labs.training.fair``: measure the fair kernels' times and write them."""
    parser = argparse.ArgumentParser(prog="python -m labs.training.fair", description=main.__doc__)
    parser.add_argument("--out", default=str(REFERENCE_DIR), help="output folder")
    parser.add_argument("--steps", type=int, default=MEASURED_STEPS, help="compared steps")
    parser.add_argument("--warmup", type=int, default=WARMUP_STEPS, help="steps not compared")
    parser.add_argument("--repeats", type=int, default=LAYER_REPEATS, help="layer passes")
    args = parser.parse_args(argv)
    record = measure(args.out, steps=args.steps, warmup=args.warmup, repeats=args.repeats)
    print(json.dumps(record["machine"], indent=1))


if __name__ == "__main__":
    main()
