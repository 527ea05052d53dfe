"""The reference runs that ship with the app: four norms (DyT among them), three seeds, one
small model.

``python -m core.training.runs`` (``--set norms``, the default) trains ``reference_configs()``
one after another (seed by seed, the norms in turn) and writes into ``assets/train/``
``curves.json`` (every run's settings and curves, ``TrainResult.curves``, and the machine),
``summary.json`` (``reference_summary``) and, for ``CHECKPOINT_NORMS``, each run's final weights
and config (``core.training.store``). Losses are rounded to ``LOSS_DECIMALS`` decimals (within
1e-8 of the float32 value) and seconds to microseconds. Other shipped measurements are the sets
named in ``SETS`` (``--set NAME``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from core.training.corpus import load_corpus
from core.training.model import MODEL_NORMS, ModelConfig
from core.training.store import save_checkpoint
from core.training.train import TrainConfig, TrainResult, stream_seeds, train

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "assets" / "train"
CURVES_FILE = "curves.json"
SUMMARY_FILE = "summary.json"
REFERENCE_SEEDS = (0, 1, 2)
# The norms the shipped runs train, in this order within each seed.
REFERENCE_NORMS = ("layer", "rms", "none", "dyt")
# The norms whose final weights are saved: the pages read these checkpoints (the residual page,
# the S-curve view) and no page reads DyT's, which would take assets/train past its 5 MiB.
CHECKPOINT_NORMS = ("layer", "rms", "none")
# One thread: these matrices are too small to gain much from two, and while other processes
# share the cores a second thread makes each step wait for it (measured here: 22 ms a step with
# one thread, 130 ms with two, on a loaded two-core machine).
REFERENCE_THREADS = 1
LOSS_DECIMALS = 8
SECONDS_DECIMALS = 6


def _reference_config() -> TrainConfig:
    # 3 blocks of width 48: 110,592 float32 weights (442 kB) a checkpoint, so nine of them and
    # the curves stay under 5 MB. How long the runs took, and the machine's cores and load
    # average before and after, are recorded in curves.json ("machine").
    model = ModelConfig(norm="rms", n_layer=3, n_head=4, n_embd=48, block_size=64)
    return TrainConfig(model=model, steps=1500, batch_size=16, lr=3e-3, min_lr=3e-4, warmup=50)


REFERENCE = _reference_config()


def reference_configs(
    *, steps: int | None = None, seeds: Sequence[int] = REFERENCE_SEEDS
) -> list[TrainConfig]:
    """``REFERENCE`` for every seed and ``REFERENCE_NORMS``, seed-major; ``steps`` overrides the
    length."""
    base = REFERENCE if steps is None else replace(REFERENCE, steps=steps)
    return [
        replace(base, model=replace(base.model, norm=norm), seed=seed)
        for seed in seeds
        for norm in REFERENCE_NORMS
    ]


def checkpoint_path(norm: str, seed: int, directory: str | Path = REFERENCE_DIR) -> Path:
    return Path(directory) / f"{norm}-seed{seed}.safetensors"


def machine_record(threads: int, started: float, load_before: Sequence[float]) -> dict[str, Any]:
    """The machine a set was made on: its threads, cores, torch, Python and platform, the set's
    seconds since ``started`` (``time.perf_counter``), and the load averages before (as read at
    the start) and now."""
    return {
        "threads": threads,
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.machine(),
        "total_seconds": round(time.perf_counter() - started, 1),
        "load_average_before": [round(v, 2) for v in load_before],
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
    }


def _compact_run(result: TrainResult, checkpoint: str | None) -> dict[str, Any]:
    """``result.curves()`` with rounded floats and the checkpoint's file name (``None``: no
    checkpoint saved)."""
    data = result.curves()
    for key in ("train_loss", "val_loss"):
        data[key] = [round(v, LOSS_DECIMALS) for v in data[key]]
    for key in ("step_seconds", "elapsed_seconds"):
        data[key] = [round(v, SECONDS_DECIMALS) for v in data[key]]
    return {
        "norm": result.config.model.norm,
        "seed": result.config.seed,
        "checkpoint": checkpoint,
        **data,
    }


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
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train every reference run with ``threads`` CPU threads; write the files; return the
    summary. Each run's loss and timing lines go to ``log``."""
    torch.set_num_threads(threads)
    directory = Path(directory)
    corpus = load_corpus()
    started, load_before = time.perf_counter(), os.getloadavg()
    runs = []
    for config in reference_configs(steps=steps, seeds=seeds):
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
    summary = {"machine": machine, "data": corpus.describe(), **reference_summary(runs)}
    (directory / CURVES_FILE).write_text(
        json.dumps(
            {"machine": machine, "data": corpus.describe(), "runs": runs}, separators=(",", ":")
        )
        + "\n"
    )
    (directory / SUMMARY_FILE).write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _norm_stats(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Final validation loss over the seeds, and the timings, of one norm's runs."""
    finals = np.array([run["val_loss"][-1] for run in runs])
    shares = [run["norm_share"] for run in runs if run["norm_share"] is not None]
    return {
        "seeds": [run["seed"] for run in runs],
        "final_val_loss": finals.tolist(),
        "mean": float(np.mean(finals)),
        "std": float(np.std(finals, ddof=1)) if finals.size > 1 else 0.0,
        "min": float(np.min(finals)),
        "max": float(np.max(finals)),
        "range": float(np.ptp(finals)),
        "median_step_seconds": float(np.median(np.concatenate([r["step_seconds"] for r in runs]))),
        "median_forward_seconds": float(np.median([r["forward_seconds"] for r in runs])),
        "median_forward_identity_seconds": float(
            np.median([r["forward_identity_seconds"] for r in runs])
        ),
        "median_norm_share": float(np.median(shares)) if shares else None,
    }


def reference_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per norm: final validation loss over the seeds and timings; then the comparison.

    ``winner`` has the lowest mean final validation loss, ``runner_up`` the next. ``gap`` is
    the difference of their means; ``spread`` the larger of the two ranges over seeds (max -
    min). ``paired_gaps`` are runner-up minus winner seed by seed (same weights at the start,
    same batches). ``rms_time_saving`` is 1 - (RMSNorm's median step time / LayerNorm's), the
    quantity for which the RMSNorm paper reports 7 % to 64 %.
    """
    norms = [n for n in MODEL_NORMS if any(run["norm"] == n for run in runs)]
    per_norm = {n: _norm_stats([run for run in runs if run["norm"] == n]) for n in norms}
    ranking = sorted(norms, key=lambda n: per_norm[n]["mean"])
    summary: dict[str, Any] = {"per_norm": per_norm, "ranking": ranking}
    if len(ranking) >= 2:
        best, second = per_norm[ranking[0]], per_norm[ranking[1]]
        by_seed = dict(zip(best["seeds"], best["final_val_loss"], strict=True))
        paired = [
            loss - by_seed[seed]
            for seed, loss in zip(second["seeds"], second["final_val_loss"], strict=True)
            if seed in by_seed
        ]
        spread = max(best["range"], second["range"])
        summary.update(
            winner=ranking[0],
            runner_up=ranking[1],
            gap=second["mean"] - best["mean"],
            spread=spread,
            gap_exceeds_spread=bool(second["mean"] - best["mean"] > spread),
            every_seed_separated=bool(best["max"] < second["min"]),
            paired_gaps=paired,
        )
    if "rms" in per_norm and "layer" in per_norm:
        ratio = per_norm["rms"]["median_step_seconds"] / per_norm["layer"]["median_step_seconds"]
        summary["rms_time_saving"] = 1.0 - ratio
    return summary


def load_reference(directory: str | Path = REFERENCE_DIR) -> dict[str, Any]:
    """The shipped curves (``curves.json``) with ``summary`` recomputed from them."""
    data = json.loads((Path(directory) / CURVES_FILE).read_text())
    return {**data, "summary": reference_summary(data["runs"])}


# The shipped sets: a name for ``--set`` -> "module:function". The function takes the output
# folder and the keywords ``threads`` and ``log`` (and ``steps``, ``seeds`` where the command line
# gives them), writes its files there and returns what it measured. A set's module is imported
# only when that set is made, so it may import this one (as ``core.training.fair`` does).
SETS = {
    "norms": "core.training.runs:run_reference",
    "kernels": "core.training.fair:measure",
    "placement": "core.training.sets:make_placement",
    "qknorm": "core.training.sets:make_qknorm",
}


def make_set(name: str, directory: str | Path = REFERENCE_DIR, **options: Any) -> dict[str, Any]:
    """Make the set ``name`` (a key of ``SETS``) into ``directory``."""
    if name not in SETS:
        raise ValueError(f"set must be one of {sorted(SETS)} (got {name!r})")
    module, function = SETS[name].split(":")
    return getattr(importlib.import_module(module), function)(directory, **options)


def main(argv: list[str] | None = None) -> None:
    """``python -m core.training.runs``: train a shipped set (the norms by default), write it."""
    parser = argparse.ArgumentParser(prog="python -m core.training.runs", description=main.__doc__)
    parser.add_argument("--set", default="norms", choices=sorted(SETS), help="which set to make")
    parser.add_argument("--out", default=str(REFERENCE_DIR), help="output folder")
    parser.add_argument(
        "--threads",
        type=int,
        default=REFERENCE_THREADS,
        help="torch CPU threads (default 1: on shared cores, two threads wait on each other)",
    )
    parser.add_argument("--steps", type=int, default=None, help="override the step count")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="override the seeds")
    args = parser.parse_args(argv)
    given = {k: v for k, v in (("steps", args.steps), ("seeds", args.seeds)) if v is not None}
    result = make_set(args.set, args.out, threads=args.threads, **given)
    print(json.dumps({k: v for k, v in result.items() if k not in ("data", "variants")}, indent=1))


if __name__ == "__main__":
    main()
