r"""The S-shaped norms in the training lab, DyT and Derf: their loss beside the norms' and the
scalars each layer learned.

DyT computes :math:`g \odot \tanh(\alpha x) + b` and Derf :math:`g \odot \operatorname{erf}(\alpha
x + s) + b` (``labs.training.model``), with no statistic of the row, so neither is counted as a
norm: ``versus`` compares each one's loss at the equal step with the better norm's, and
Derf's with DyT's, a difference only beyond the seed spread; ``alpha_claims`` reads each layer's
final :math:`\alpha` (and Derf's :math:`s`; ``labs.training.curves.alpha_summaries``): the
chart's words, and whether the mean moved from its start by more than the seeds spread,
:math:`|\bar\alpha_l - \alpha_0| > \max_s \alpha_{l,s} - \min_s \alpha_{l,s}`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from labkit.chart_words import runs_words
from labkit.claims import Claim, at_most
from labs.training.curves import AlphaSummary, NormSummary, TrainingView
from labs.training.model import NORM_CLASSES

# The norms DyT and Derf are compared with: the two that compute a statistic of the row.
NORMS = ("rms", "layer")
# How the sentences write each learned scalar.
SYMBOLS = {"alpha": "α", "shift": "s"}
# The S-shaped norms' comparisons, by slot: the variant, what it is compared with, the texts.
VERSUS = {"dyt": ("dyt", NORMS, "s_norm"), "derf": ("derf", NORMS, "s_norm")}
VERSUS["derf_dyt"] = ("derf", ("dyt",), "derf_dyt")


def alpha_claims(summaries: tuple[AlphaSummary, ...]) -> dict[str, Claim]:
    """Per learned scalar (its chart ``<param>_<norm>``): the chart's words (slots
    ``chart_<chart>_<norm>`` and ``chart_<chart>_not_finite``) and, when every value is finite,
    whether it moved (slot ``<chart>``)."""
    claims = {}
    for s in summaries:
        chart = f"{s.param}_{s.norm}"
        lines = [(seed, s.layers, row) for seed, row in zip(s.seeds, s.values, strict=True)]
        keys, groups = {s.norm: f"training.{s.param}_words_{s.norm}"}, {s.norm: lines}
        words = runs_words(keys, groups, chart=f"training.{chart}", not_finite="charts.not_finite")
        claims |= {f"chart_{chart}_{slot}": claim for slot, claim in words.items()}
        if np.isfinite(s.values).all():
            claims[chart] = _moved_claim(s)
            if claims[chart].key != "training.learned_moved_all" and len(s.seeds) > 1:
                claims |= {f"{chart}_each": each} if (each := _each_claim(s)) else {}
    return claims


def _each_claim(s: AlphaSummary) -> Claim | None:
    """Where the means did not all move: whether every run's value still left its start (the
    smallest and largest distance), and in how many layers the seeds moved it both ways, which
    pulls a layer's mean back toward the start. None where some value did not move at all."""
    away = np.abs(s.values - s.init)
    if not away.min() > 0:
        return None
    both = int(np.sum(np.any(s.values > s.init, axis=0) & np.any(s.values < s.init, axis=0)))
    fields = {"variant": NORM_CLASSES[s.norm], "param": SYMBOLS[s.param], "init": s.init}
    fields |= {"seeds": len(s.seeds), "layers": len(s.layers), "mixed": both}
    fields |= {"lo": float(away.min()), "hi": float(away.max())}
    return Claim(f"training.learned_each_{'mixed' if both else 'same'}", fields)


def _moved_claim(s: AlphaSummary) -> Claim:
    names = list(s.layers)
    fields: dict[str, Any] = {"init": s.init, "layers": len(names)}
    fields |= {"variant": NORM_CLASSES[s.norm], "param": SYMBOLS[s.param]}
    if len(s.seeds) < 2:
        row = s.values[0]
        lo, hi = int(np.argmin(row)), int(np.argmax(row))
        fields |= {"lo": float(row[lo]), "lo_layer": names[lo]}
        fields |= {"hi": float(row[hi]), "hi_layer": names[hi]}
        return Claim("training.learned_one_seed", fields)
    move = np.abs(s.mean - s.init)
    # A layer moved when its mean left the initial value by more than its seeds lie apart.
    moved = [not at_most(m, spread).holds for m, spread in zip(move, s.spread, strict=True)]
    fields["seeds"] = len(s.seeds)
    if all(moved):
        lo, hi = int(np.argmin(s.mean)), int(np.argmax(s.mean))
        fields |= {"lo": float(s.mean[lo]), "lo_layer": names[lo]}
        fields |= {"hi": float(s.mean[hi]), "hi_layer": names[hi], "spread": float(s.spread.max())}
        return Claim("training.learned_moved_all", fields)
    # The farthest layer is named beside the layers that moved, so it is one of them (a layer
    # whose mean went farther but whose seeds lie farther apart still did not move); where none
    # moved, it is the farthest of all.
    far = max((i for i, m in enumerate(moved) if m or not any(moved)), key=lambda i: move[i])
    fields |= {"far_layer": names[far], "far_mean": float(s.mean[far])}
    fields["far_spread"] = float(s.spread[far])
    if not any(moved):
        return Claim("training.learned_moved_none", fields)
    near = min((i for i, m in enumerate(moved) if not m), key=lambda i: move[i])
    fields |= {"moved": sum(moved), "still": len(moved) - sum(moved), "near_layer": names[near]}
    fields |= {"near_mean": float(s.mean[near]), "near_spread": float(s.spread[near])}
    return Claim("training.learned_moved_some", fields)


def _finite_at_step(summary: NormSummary) -> bool:
    return summary.finite and math.isfinite(summary.mean_at_step)


def versus(view: TrainingView, norm: str, others: tuple[str, ...], text: str) -> Claim | None:
    """``norm`` against the lowest of ``others`` trained beside it, at the equal step (after
    step 0, both finite), in the texts ``training.<text>_*``; None where there is no such pair."""
    mine = view.norms.get(norm)
    norms = [view.norms[n] for n in others if n in view.norms and _finite_at_step(view.norms[n])]
    if view.equal_step <= 0 or mine is None or not norms or not _finite_at_step(mine):
        return None
    best = min(norms, key=lambda s: s.mean_at_step)
    gap = abs(mine.mean_at_step - best.mean_at_step)
    fields: dict[str, Any] = {"step": view.equal_step, "loss": mine.mean_at_step}
    fields |= {"variant": NORM_CLASSES[norm], "best": NORM_CLASSES[best.norm]}
    fields |= {"best_loss": best.mean_at_step, "gap": gap}
    if min(len(mine.seeds), len(best.seeds)) < 2:
        return Claim(f"training.{text}_one_seed", fields)
    by_seed = dict(zip(best.seeds, best.at_step, strict=True))
    paired = [
        (s, a, by_seed[s]) for s, a in zip(mine.seeds, mine.at_step, strict=True) if s in by_seed
    ]
    spread = max(mine.spread, best.spread)
    fields |= {
        "spread": spread,
        "wins": int(sum(a < b for _, a, b in paired)),
        "pairs": len(paired),
    }
    # The closest pair of runs, so that a seed's win by a hair reads as one.
    close_seed, a, b = min(paired, key=lambda pair: abs(pair[1] - pair[2]), default=(-1, 0.0, 0.0))
    fields |= {"close_seed": close_seed, "closest": abs(a - b)}
    if at_most(gap, spread).holds:  # the seeds alone move the loss as much as the variant
        return Claim(f"training.{text}_within_spread", fields)
    lower = mine.mean_at_step < best.mean_at_step
    return Claim(f"training.{text}_{'lower' if lower else 'higher'}", fields)
