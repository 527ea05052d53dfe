r"""DyT in the training lab: its loss beside the norms' and the :math:`\alpha` each layer learned.

DyT (``labs.training.model.dyt``) computes :math:`g \odot \tanh(\alpha x) + b`, with no statistic
of the row, so it is not counted as a norm: ``dyt_claim`` compares its loss at the equal step with
the better norm's, a difference only beyond the seed spread; ``alpha_claims`` reads each layer's
final :math:`\alpha` (``labs.training.curves.alpha_summary``): the chart's words, and whether the
mean moved from its start by more than the seeds spread,
:math:`|\bar\alpha_l - \alpha_0| > \max_s \alpha_{l,s} - \min_s \alpha_{l,s}`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from labkit.chart_words import runs_words
from labkit.claims import Claim, at_most
from labs.training.curves import AlphaSummary, NormSummary, TrainingView
from labs.training.model import NORM_CLASSES

# The norms DyT is compared with: the two that compute a statistic of the row.
NORMS = ("rms", "layer")


def alpha_claims(summary: AlphaSummary | None) -> dict[str, Claim]:
    """The alpha chart's words (slots ``chart_alpha_dyt`` and ``chart_alpha_not_finite``) and,
    when every alpha is finite, whether it moved (slot ``alpha``)."""
    if summary is None:
        return {}
    lines = [
        (seed, summary.layers, row) for seed, row in zip(summary.seeds, summary.values, strict=True)
    ]
    keys, groups = {"dyt": "training.alpha_words_dyt"}, {"dyt": lines}
    words = runs_words(keys, groups, chart="training.alpha", not_finite="charts.not_finite")
    claims = {f"chart_alpha_{slot}": claim for slot, claim in words.items()}
    if np.isfinite(summary.values).all():
        claims["alpha"] = _moved_claim(summary)
    return claims


def _moved_claim(s: AlphaSummary) -> Claim:
    names = list(s.layers)
    fields: dict[str, Any] = {"init": s.init, "layers": len(names)}
    if len(s.seeds) < 2:
        row = s.values[0]
        lo, hi = int(np.argmin(row)), int(np.argmax(row))
        fields |= {"lo": float(row[lo]), "lo_layer": names[lo]}
        fields |= {"hi": float(row[hi]), "hi_layer": names[hi]}
        return Claim("training.alpha_one_seed", fields)
    move = np.abs(s.mean - s.init)
    # A layer moved when its mean left the initial value by more than its seeds lie apart.
    moved = [not at_most(m, spread).holds for m, spread in zip(move, s.spread, strict=True)]
    fields["seeds"] = len(s.seeds)
    if all(moved):
        lo, hi = int(np.argmin(s.mean)), int(np.argmax(s.mean))
        fields |= {"lo": float(s.mean[lo]), "lo_layer": names[lo]}
        fields |= {"hi": float(s.mean[hi]), "hi_layer": names[hi], "spread": float(s.spread.max())}
        return Claim("training.alpha_moved_all", fields)
    # The farthest layer is named beside the layers that moved, so it is one of them (a layer
    # whose mean went farther but whose seeds lie farther apart still did not move); where none
    # moved, it is the farthest of all.
    far = max((i for i, m in enumerate(moved) if m or not any(moved)), key=lambda i: move[i])
    fields |= {"far_layer": names[far], "far_mean": float(s.mean[far])}
    fields["far_spread"] = float(s.spread[far])
    if not any(moved):
        return Claim("training.alpha_moved_none", fields)
    near = min((i for i, m in enumerate(moved) if not m), key=lambda i: move[i])
    fields |= {"moved": sum(moved), "still": len(moved) - sum(moved), "near_layer": names[near]}
    fields |= {"near_mean": float(s.mean[near]), "near_spread": float(s.spread[near])}
    return Claim("training.alpha_moved_some", fields)


def _finite_at_step(summary: NormSummary) -> bool:
    return summary.finite and math.isfinite(summary.mean_at_step)


def dyt_claim(view: TrainingView) -> Claim | None:
    """DyT against the lower of the norms trained beside it, at the equal step (after step 0,
    both finite); None where there is no such pair."""
    dyt = view.norms.get("dyt")
    norms = [view.norms[n] for n in NORMS if n in view.norms and _finite_at_step(view.norms[n])]
    if view.equal_step <= 0 or dyt is None or not norms or not _finite_at_step(dyt):
        return None
    best = min(norms, key=lambda s: s.mean_at_step)
    gap = abs(dyt.mean_at_step - best.mean_at_step)
    fields: dict[str, Any] = {"step": view.equal_step, "dyt_loss": dyt.mean_at_step}
    fields |= {"best": NORM_CLASSES[best.norm], "best_loss": best.mean_at_step, "gap": gap}
    if min(len(dyt.seeds), len(best.seeds)) < 2:
        return Claim("training.dyt_one_seed", fields)
    by_seed = dict(zip(best.seeds, best.at_step, strict=True))
    paired = [(a, by_seed[s]) for s, a in zip(dyt.seeds, dyt.at_step, strict=True) if s in by_seed]
    spread = max(dyt.spread, best.spread)
    fields |= {"spread": spread, "wins": int(sum(a < b for a, b in paired)), "pairs": len(paired)}
    if at_most(gap, spread).holds:  # the seeds alone move the loss as much as the variant
        return Claim("training.dyt_within_spread", fields)
    lower = dyt.mean_at_step < best.mean_at_step
    return Claim("training.dyt_lower" if lower else "training.dyt_higher", fields)
