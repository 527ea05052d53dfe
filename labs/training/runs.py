"""Making the reference runs that ship with the app: five variants (DyT and Derf among them),
three seeds, one small model (``labs.training.reference.REFERENCE``).

``python -m labs.training.runs`` (``--set norms``, the default) trains ``reference_configs()``
and writes into ``assets/train/`` ``curves.json``, ``summary.json`` and, for
``CHECKPOINT_NORMS``, each run's final weights and config (``labs.training.store``). Losses are
rounded to ``LOSS_DECIMALS`` decimals (within 1e-8 of the float32 value). Other shipped
measurements are the sets named in ``SETS`` (``--set NAME``); this module imports them; they, and
the app, read the reference and the shipped files from ``labs.training.reference``."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from labs.training.corpus import load_corpus
from labs.training.fair import measure
from labs.training.reference import (
    CURVES_FILE,
    LOSS_DECIMALS,
    REFERENCE,
    REFERENCE_DIR,
    REFERENCE_THREADS,
    SECONDS_DECIMALS,
    SUMMARY_FILE,
    machine_record,
    reference_summary,
)
from labs.training.sets import make_data, make_placement, make_qknorm
from labs.training.store import save_checkpoint
from labs.training.train import TrainConfig, TrainResult, stream_seeds, train

REFERENCE_SEEDS = (0, 1, 2)
# The norms the shipped runs train, in this order within each seed.
REFERENCE_NORMS = ("layer", "rms", "none", "dyt", "derf")
# The norms whose final weights are saved: the pages read these checkpoints (the residual page,
# the S-curve view) and no page reads DyT's or Derf's, which would take assets/train past 5 MiB.
CHECKPOINT_NORMS = ("layer", "rms", "none")


def reference_configs(
    *, steps: int | None = None, seeds: Sequence[int] = REFERENCE_SEEDS
) -> list[TrainConfig]:
    """``REFERENCE`` per seed and ``REFERENCE_NORMS``, seed-major; ``steps`` sets the length."""
    base = REFERENCE if steps is None else replace(REFERENCE, steps=steps)
    return [
        replace(base, model=replace(base.model, norm=norm), seed=seed)
        for seed in seeds
        for norm in REFERENCE_NORMS
    ]


def checkpoint_path(norm: str, seed: int, directory: str | Path = REFERENCE_DIR) -> Path:
    return Path(directory) / f"{norm}-seed{seed}.safetensors"


def _compact_run(result: TrainResult, checkpoint: str | None) -> dict[str, Any]:
    """``result.curves()`` with rounded floats and the checkpoint's file name (``None``: no
    checkpoint saved)."""
    data = result.curves()
    for key in ("train_loss", "val_loss"):
        data[key] = [round(v, LOSS_DECIMALS) for v in data[key]]
    for key in ("step_seconds", "elapsed_seconds"):
        data[key] = [round(v, SECONDS_DECIMALS) for v in data[key]]
    run = {"norm": result.config.model.norm, "seed": result.config.seed, "checkpoint": checkpoint}
    return run | data


def _checkpoint_extra(result: TrainResult, corpus: Any, threads: int) -> dict[str, Any]:
    config = result.config
    init_seed, data_seed = stream_seeds(config.seed)
    training = {k: v for k, v in config.as_dict().items() if k != "model"}
    return {
        "training": {
            **training,
            "optimizer": "AdamW (weight decay on matrices and embeddings only)",
            "schedule": "linear warm-up, then cosine from lr to min_lr",
            "init_seed": init_seed,
            "data_seed": data_seed,
            "steps_done": result.steps_done,
            "stopped_by": result.stopped_by,
            "final_val_loss": round(result.val_loss[-1], LOSS_DECIMALS),
            "final_val_step": result.val_steps[-1],
            "threads": threads,
        },
        "data": corpus.describe(),
    }


def run_reference(
    directory: str | Path = REFERENCE_DIR,
    *,
    threads: int = REFERENCE_THREADS,
    steps: int | None = None,
    seeds: Sequence[int] = REFERENCE_SEEDS,
    norms: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train every reference run with ``threads`` CPU threads; write the files; return the
    summary. Each run's loss and timing lines go to ``log``. ``norms``: train those alone, merged
    into the set in ``directory`` (its other runs and machine kept, each new run with its own)."""
    torch.set_num_threads(threads)
    directory = Path(directory)
    corpus = load_corpus()
    started, load_before = time.perf_counter(), os.getloadavg()
    runs = []
    for config in reference_configs(steps=steps, seeds=seeds):
        if config.model.norm not in (norms or REFERENCE_NORMS):
            continue
        result = train(config, corpus=corpus)
        checkpoint = None
        if config.model.norm in CHECKPOINT_NORMS:
            path = checkpoint_path(config.model.norm, config.seed, directory)
            save_checkpoint(result.model, path, extra=_checkpoint_extra(result, corpus, threads))
            checkpoint = path.name
        runs.append(_compact_run(result, checkpoint))
        log(
            f"{config.model.norm:>5} seed {config.seed}: val {result.val_loss[-1]:.4f} after "
            f"{result.steps_done} steps, {1e3 * np.median(result.step_seconds):.2f} ms/step, "
            f"norm share {result.norm_share:.3f}, {result.wall_seconds:.1f} s"
        )
    machine = machine_record(threads, started, load_before)
    if norms is not None:
        old = json.loads((directory / CURVES_FILE).read_text())
        new = {(run["norm"], run["seed"]) for run in runs}
        kept = [run for run in old["runs"] if (run["norm"], run["seed"]) not in new]
        runs = [{**run, "machine": machine} for run in runs] + kept
        runs.sort(key=lambda run: (run["seed"], REFERENCE_NORMS.index(run["norm"])))
        machine = old["machine"]
    summary = {"machine": machine, "data": corpus.describe(), **reference_summary(runs)}
    curves = {"machine": machine, "data": corpus.describe(), "runs": runs}
    (directory / CURVES_FILE).write_text(json.dumps(curves, separators=(",", ":")) + "\n")
    (directory / SUMMARY_FILE).write_text(json.dumps(summary, indent=1) + "\n")
    return summary


# The shipped sets, by their name for ``--set``. Each function takes the output folder and the
# keywords ``threads`` and ``log`` (and ``steps``, ``seeds`` where the command line gives them),
# writes its files there and returns what it measured.
SETS: dict[str, Callable[..., dict[str, Any]]] = {
    "norms": run_reference,
    "kernels": measure,
    "placement": make_placement,
    "qknorm": make_qknorm,
    "data": make_data,
}


def make_set(name: str, directory: str | Path = REFERENCE_DIR, **options: Any) -> dict[str, Any]:
    """Make the set ``name`` (a key of ``SETS``) into ``directory``."""
    if name not in SETS:
        raise ValueError(f"set must be one of {sorted(SETS)} (got {name!r})")
    return SETS[name](directory, **options)


def main(argv: list[str] | None = None) -> None:
    """``python -m labs.training.runs``: train a shipped set (the norms by default), write it."""
    parser = argparse.ArgumentParser(prog="python -m labs.training.runs", description=main.__doc__)
    parser.add_argument("--set", default="norms", choices=sorted(SETS), help="which set to make")
    parser.add_argument("--out", default=str(REFERENCE_DIR), help="output folder")
    threads = "torch CPU threads (default 1: on shared cores, two threads wait on each other)"
    parser.add_argument("--threads", type=int, default=REFERENCE_THREADS, help=threads)
    parser.add_argument("--steps", type=int, default=None, help="override the step count")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="override the seeds")
    merge = "train these variants alone and merge them into the set in --out (--set norms)"
    parser.add_argument("--norms", nargs="+", choices=REFERENCE_NORMS, help=merge)
    args = parser.parse_args(argv)
    given = {k: v for k, v in vars(args).items() if k in ("steps", "seeds", "norms")}
    given = {k: v for k, v in given.items() if v is not None}
    result = make_set(args.set, args.out, threads=args.threads, **given)
    print(json.dumps({k: v for k, v in result.items() if k not in ("data", "variants")}, indent=1))


if __name__ == "__main__":
    main()
