r"""The fair kernels' measurement (``labs.training.fair``) as the training page shows it, and its
sentences (``labkit.claims``), each chosen by a verdict computed from the record: medians of a
step and of the norm layer alone; per kernel RMSNorm's median over LayerNorm's, a side named only
where ``MIN_PAIRS`` parts agree (``labs.training.claims.paired_ratios``); the saving
:math:`1 - \tilde t_{RMS} / \tilde t_{Layer}` beside the paper's 7-64 %; the norm layers' share
of a step, :math:`n \, \tilde t_{layer} / \tilde t_{step}`; DyT beside the two norms; the
operations autograd records per layer, and the machine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from labkit.claims import Claim
from labs.training.claims import machine_claim, paired_ratios, paper_claim, step_order
from labs.training.fair import DYT, FAIR_KERNELS, FAIR_NORMS, load_kernels


@dataclass(frozen=True)
class Series:
    """Compared times of one variant (after the warm-up), as ``paired_ratios`` reads them."""

    seed: int
    step_seconds: np.ndarray

    @property
    def steps_done(self) -> int:
        return int(self.step_seconds.size)

    @property
    def median(self) -> float:
        return float(np.median(self.step_seconds))


@dataclass(frozen=True)
class Timing:
    """One variant: its training steps and its norm layer alone."""

    norm: str
    kernel: str
    autograd_nodes: int
    step: Series
    layer: Series

    @property
    def step_ms(self) -> float:
        return 1e3 * self.step.median


@dataclass(frozen=True)
class KernelView:
    """The measurement as the page shows it. ``ratios[(what, kernel)]`` is RMSNorm's median over
    LayerNorm's for ``what`` ("step" or "layer"), ``paired`` the same part by part; ``dyt`` is
    None where DyT was not measured."""

    timings: dict[tuple[str, str], Timing]
    ratios: dict[tuple[str, str], float]
    paired: dict[tuple[str, str], list[float]]
    dyt: Timing | None
    setup: dict[str, int]  # the model's size and the counts of steps and passes
    machine: Mapping[str, Any]
    claims: dict[str, Claim]


def _series(variant: Mapping[str, Any], field: str, warmup: int, seed: int) -> Series:
    values = np.asarray(variant[field], dtype=np.float64)[warmup:]
    if values.size < 2 or not (np.isfinite(values).all() and (values > 0).all()):
        name = f"{variant['norm']}/{variant['kernel']} {field}"
        raise ValueError(
            f"{name}: need at least 2 times after the warm-up, each a finite number of seconds > 0"
        )
    return Series(seed, values)


def _timings(record: Mapping[str, Any]) -> dict[tuple[str, str], Timing]:
    warmup, seed = int(record["warmup_steps"]), int(record["seed"])
    timings = {}
    for v in record["variants"]:
        key = (v["norm"], v["kernel"])
        step, layer = (_series(v, f, warmup, seed) for f in ("step_seconds", "layer_seconds"))
        timings[key] = Timing(*key, int(v["autograd_nodes"]), step, layer)
    missing = [f"{n}/{k}" for k in FAIR_KERNELS for n in FAIR_NORMS if (n, k) not in timings]
    if missing:
        raise ValueError(f"the measurement lacks {missing}")
    return timings


def kernel_view(record: Mapping[str, Any]) -> KernelView:
    """The page state for a record of ``labs.training.fair.measure``."""
    timings = _timings(record)
    dyt = next((t for (norm, _), t in timings.items() if norm == DYT), None)
    norm_layers = int(record["norm_layers"])
    ratios, paired = {}, {}
    claims = {
        f"{what}_words": _each(f"training.fair_{what}_words", timings, dyt, _median(what))
        for what in ("step", "layer")
    }
    # How many operations autograd records per norm layer, kernel by kernel.
    claims["graph"] = _each("training.fair_graph", timings, dyt, lambda t: t.autograd_nodes)
    for kernel in FAIR_KERNELS:
        rms, layer = timings[("rms", kernel)], timings[("layer", kernel)]
        for what in ("step", "layer"):
            a, b = getattr(rms, what), getattr(layer, what)
            ratio, parts = a.median / b.median, paired_ratios([a], [b])
            ratios[(what, kernel)], paired[(what, kernel)] = ratio, parts
            order = step_order(parts)
            unit, scale = _UNITS[what], _SCALE[what]
            medians = {f"rms_{unit}": scale * a.median, f"layer_{unit}": scale * b.median}
            fields = {"ratio": ratio, **medians, "lo": min(parts), "hi": max(parts)}
            fields |= {"pairs": len(parts), "chance_pct": 2.0 ** (1 - len(parts))}
            fields["kernel"] = kernel  # not in the text: the page says it above the sentence
            claims[f"{what}_{kernel}"] = Claim(f"training.fair_{what}_{order}", fields)
            paper = paper_claim(ratio, order, prefix=f"training.fair_{what}_paper")
            claims[f"{what}_paper_{kernel}"] = Claim(paper.key, {**paper.fields, "kernel": kernel})
    claims["share"] = _share(timings, norm_layers)
    if dyt is None:
        claims["dyt"] = Claim("training.fair_dyt_unmeasured", {})
    else:
        claims["dyt"] = _dyt_claim(dyt, timings[("rms", "ops")], timings[("layer", "ops")])
    claims["machine"] = machine_claim(record["machine"])
    first = next(iter(timings.values()))
    setup = {k: record["model"][k] for k in ("n_layer", "n_embd", "block_size")}
    setup |= {"batch_size": record["batch_size"], "warmup": int(record["warmup_steps"])}
    setup |= {"steps": first.step.steps_done, "repeats": first.layer.steps_done}
    return KernelView(timings, ratios, paired, dyt, setup, record["machine"], claims)


def shipped_kernel_view() -> KernelView:
    """The shipped measurement (``assets/train/kernels.json``) as the page shows it."""
    return kernel_view(load_kernels())


# Each timing in the unit the page quotes it in: a step in milliseconds, a layer in microseconds.
_UNITS = {"step": "ms", "layer": "us"}
_SCALE = {"step": 1e3, "layer": 1e6}


def _median(what: str) -> Callable[[Timing], float]:
    """A variant's median step (in ms) or layer (in microseconds), as a chart's words quote it."""
    return lambda t: _SCALE[what] * getattr(t, what).median


def _each(
    key: str, timings: Mapping[tuple[str, str], Timing], dyt: Timing | None, value: Callable
) -> Claim:
    """``value`` of every fair variant, and of DyT (the text ``<key>_dyt``) where measured."""
    fields = {f"{n}_{k}": value(timings[(n, k)]) for k in FAIR_KERNELS for n in FAIR_NORMS}
    if dyt is None:
        return Claim(key, fields)
    return Claim(f"{key}_dyt", {**fields, "dyt": value(dyt)})


def _share(timings: Mapping[tuple[str, str], Timing], norm_layers: int) -> Claim:
    """The model's norm layers, each timed alone, as a share of a median step."""
    fields = {
        f"{norm}_{kernel}_pct": norm_layers * t.layer.median / t.step.median
        for kernel in FAIR_KERNELS
        for norm in FAIR_NORMS
        for t in [timings[(norm, kernel)]]
    }
    return Claim("training.fair_share", {"layers": norm_layers, **fields})


def _dyt_claim(dyt: Timing, rms: Timing, layer: Timing) -> Claim:
    """DyT's median step beside the two norms as separate operations (DyT's own form): faster
    or slower only where the paired comparisons with both agree, by the sign test."""
    orders = {step_order(paired_ratios([dyt.step], [other.step])) for other in (rms, layer)}
    key = orders.pop() if len(orders) == 1 and orders <= {"faster", "slower"} else "unsettled"
    fields = {"dyt_ms": dyt.step_ms, "rms_ms": rms.step_ms, "layer_ms": layer.step_ms}
    fields |= {"rms_ratio": dyt.step.median / rms.step.median}
    fields |= {"layer_ratio": dyt.step.median / layer.step.median}
    fields["pairs"] = len(paired_ratios([dyt.step], [rms.step]))
    return Claim(f"training.fair_dyt_{key}", fields)
