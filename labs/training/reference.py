"""The shipped reference runs as the app reads them, and what every shipped set starts from.

``REFERENCE`` is the model and training every set varies, ``REFERENCE_DIR`` the folder the sets
are written to (``assets/train/``), ``machine_record`` the machine a set was made on, and
``load_reference`` the shipped curves with their summary. ``labs.training.runs`` makes the sets."""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from labs.training.model import MODEL_NORMS, ModelConfig
from labs.training.train import TrainConfig

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "assets" / "train"
CURVES_FILE = "curves.json"
SUMMARY_FILE = "summary.json"
# One thread: these matrices are too small to gain much from two, and while other processes
# share the cores a second thread makes each step wait for it (measured here: 22 ms a step with
# one thread, 130 ms with two, on a loaded two-core machine).
REFERENCE_THREADS = 1
LOSS_DECIMALS = 8
SECONDS_DECIMALS = 6


# 3 blocks of width 48: 110,592 float32 weights (442 kB) a checkpoint, so nine of them and the
# curves stay under 5 MB. How long the runs took, and the machine's cores and load average
# before and after, are recorded in curves.json ("machine").
_MODEL = ModelConfig(norm="rms", n_layer=3, n_head=4, n_embd=48, block_size=64)
REFERENCE = TrainConfig(model=_MODEL, steps=1500, batch_size=16, lr=3e-3, min_lr=3e-4, warmup=50)


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
    quantity for which the RMSNorm paper reports 7 % to 64 %."""
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
