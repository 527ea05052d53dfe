r"""What the three shipped sets say, in sentences: the claims (``labkit.claims``) of the placement,
QK-norm and data sections, each chosen by a verdict computed from a view's numbers
(``labs.training.sets_view``, whose types these functions read without naming them, as that
module imports this one). Text keys are ``training_sets.*``.

One rule runs through them: a variant is called lower, or a stream growing, only where every seed
agrees or the gap between the means exceeds the seeds' spread (max − min); each function says what
it compares. Placement reads the residual stream's RMS :math:`r_0, \dots, r_L` at the last
validation (growth :math:`r_L / r_1`, band :math:`\max_{l \ge 1} r_l / \min_{l \ge 1} r_l`), QK norm
each run's peak attention logit, the data set the validation curves and DyT's saturated shares."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from labkit.chart_words import runs_words
from labkit.claims import Claim, at_most
from labs.training.sets import SATURATION

NAMES = {"pre": "Pre-LN", "post": "Post-LN", "peri": "Peri-LN"}
NAMES |= {"output": "Output-LN", "scaled": "LN Scaling", "rms": "RMSNorm", "dyt": "DyT"}
# A stream whose RMS over blocks 1 to L stays within this factor is "within a band": a quarter
# more from its lowest block to its highest, a change a reader of a log-scaled chart can see.
BAND = 1.25
# The pairs of placements whose final losses are compared, in the page's order.
PAIRS = (("pre", "post"), ("pre", "peri"), ("peri", "post"), ("pre", "output"), ("pre", "scaled"))
PREFIX = "training_sets."


def _finite(values: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(values)))


def loss_pair(a: np.ndarray, b: np.ndarray, sided: bool = False) -> tuple[str, dict[str, Any]]:
    """Two variants' final losses over their seeds (finite): ``beyond`` (the gap between the
    means exceeds the larger max − min), ``within`` (the spread covers the gap) or ``one_seed``,
    with the means, the gap and the spread; ``lower`` says whether ``a``'s mean is the lower.
    ``sided``: ``lower`` or ``higher`` (``a``'s mean against ``b``'s) in place of ``beyond``."""
    mean_a, mean_b = float(np.mean(a)), float(np.mean(b))
    fields: dict[str, Any] = {"a_loss": mean_a, "b_loss": mean_b, "gap": abs(mean_a - mean_b)}
    if min(a.size, b.size) < 2:
        return "one_seed", fields
    spread = max(float(np.ptp(a)), float(np.ptp(b)))
    fields |= {"spread": spread, "lower": mean_a < mean_b}
    if at_most(abs(mean_a - mean_b), spread):
        return "within", fields
    return ("lower" if fields.pop("lower") else "higher") if sided else "beyond", fields


# --- Placement --------------------------------------------------------------------------------


def _depth_claim(p: str, rms: np.ndarray, n_layer: int) -> Claim:
    """Whether placement ``p``'s stream grows with depth after block 1 (module docstring)."""
    name = NAMES[p]
    blocks = rms[:, 1:]
    if not (_finite(rms) and np.all(blocks > 0)):
        return Claim(f"{PREFIX}place_depth_unreadable", {"name": name})
    first, last = blocks[:, 0], blocks[:, -1]
    growth = last / first
    bands = blocks.max(axis=1) / blocks.min(axis=1)
    fields = {
        "name": name,
        "blocks": n_layer,
        "emb": float(np.mean(rms[:, 0])),
        "first": float(np.mean(first)),
        "last": float(np.mean(last)),
        "lo": float(blocks.min()),
        "hi": float(blocks.max()),
        "band": float(bands.max()),
        "limit": BAND,
        "factor_lo": float(growth.min()),
        "factor_hi": float(growth.max()),
    }
    key = "grows" if np.all(last > first) else "shrinks" if np.all(last < first) else "mixed"
    if at_most(float(bands.max()), BAND):
        key += "_within"
    return Claim(f"{PREFIX}place_depth_{key}", fields)


def _growth_claim(view: Any, a: str, b: str) -> Claim | None:
    """Placement ``a``'s growth from block 1 to block L against ``b``'s, ranges apart or not."""
    if not {a, b} <= set(view.placements):
        return None
    ga, gb = view.growth[a], view.growth[b]
    if not (_finite(ga) and _finite(gb)) or min(ga.size, gb.size) == 0:
        return None
    fields = {"blocks": view.n_layer, "a": NAMES[a], "b": NAMES[b]}
    fields |= {"a_lo": float(ga.min()), "a_hi": float(ga.max())}
    fields |= {"b_lo": float(gb.min()), "b_hi": float(gb.max())}
    kind = "a_more" if ga.min() > gb.max() else "b_more" if gb.min() > ga.max() else "overlap"
    return Claim(f"{PREFIX}place_growth_{kind}", fields)


def _loss_claim(view: Any, a: str, b: str) -> Claim | None:
    if not (_finite(view.val_loss[a]) and _finite(view.val_loss[b])):
        return None  # the diverged placement's own sentence says why
    kind, fields = loss_pair(view.final_loss[a], view.final_loss[b])
    fields |= {"a": NAMES[a], "b": NAMES[b], "step": int(view.val_steps[-1])}
    if kind == "beyond":
        lower = fields.pop("lower")
        winner, loser = (a, b) if lower else (b, a)
        losses = (fields["a_loss"], fields["b_loss"])
        fields |= {"winner": NAMES[winner], "loser": NAMES[loser]}
        fields |= {"w_loss": min(losses), "l_loss": max(losses)}
    fields.pop("lower", None)
    return Claim(f"{PREFIX}place_loss_{kind}", fields)


def placement_claims(view: Any) -> dict[str, Claim]:
    """The placement section's sentences, by slot: ``depth_<p>``, ``growth_<p>``, ``diverged_<p>``,
    ``loss_<a>_<b>``, and the two charts' words ``chart_loss_*`` and ``chart_rms_*``."""
    claims: dict[str, Claim] = {}
    for p in view.placements:
        if not _finite(view.val_loss[p]):
            claims[f"diverged_{p}"] = Claim(f"{PREFIX}place_diverged", {"name": NAMES[p]})
    if view.n_layer >= 2:
        for p in view.placements:
            claims[f"depth_{p}"] = _depth_claim(p, view.hidden_rms[p], view.n_layer)
        for p in ("peri", "output", "scaled"):
            if (growth := _growth_claim(view, "pre", p)) is not None:
                claims[f"growth_{p}"] = growth
    for a, b in PAIRS:
        if a in view.placements and b in view.placements:
            claim = _loss_claim(view, a, b)
            if claim is not None:
                claims[f"loss_{a}_{b}"] = claim
    claims |= _chart_words("place", "loss", view.val_steps, view.seeds, view.val_loss)
    positions = np.arange(view.n_layer + 1)
    return claims | _chart_words("place", "rms", positions, view.seeds, view.hidden_rms)


def _chart_words(stem: str, chart: str, x: np.ndarray, seeds: dict, grids: dict) -> dict:
    """A chart's words (``runs_words``), in slots ``chart_<chart>_*``: every variant of
    ``seeds`` (variant -> its seeds) with a line per seed, its row of ``grids`` against ``x``."""
    groups = {v: [(s, x, row) for s, row in zip(seeds[v], grids[v], strict=True)] for v in seeds}
    keys = {v: f"{PREFIX}{stem}_{chart}_words_{v}" for v in seeds}
    words = runs_words(keys, groups, chart=f"{PREFIX}{stem}_{chart}")
    return {f"chart_{chart}_{slot}": claim for slot, claim in words.items()}


# --- QK norm ----------------------------------------------------------------------------------


def _comparable(view: Any) -> np.ndarray:
    """The learning rates at which every run of both modes has a finite, positive peak."""
    off, rms = view.peak_logit["off"], view.peak_logit["rms"]
    ok = np.all(np.isfinite(off), axis=0) & np.all(np.isfinite(rms), axis=0)
    return ok & np.all(rms > 0, axis=0) & np.all(off > 0, axis=0)


def _rise_claim(view: Any, ok: np.ndarray) -> Claim | None:
    """The plain model's mean peak over the seeds against the learning rate: rising at every
    step up, or not; QK norm's beside it."""
    if np.count_nonzero(ok) < 2:
        return None
    lrs = view.lrs[ok]
    fields = {"lr_lo": float(lrs[0]), "lr_hi": float(lrs[-1])}
    for mode in ("off", "rms"):
        mean = view.peak_logit[mode][:, ok].mean(axis=0)
        fields |= {f"{mode}_first": float(mean[0]), f"{mode}_last": float(mean[-1])}
        fields[f"{mode}_ratio"] = float(mean[-1] / mean[0])
    rising = bool(np.all(np.diff(view.peak_logit["off"][:, ok].mean(axis=0)) > 0))
    return Claim(f"{PREFIX}qk_rise" if rising else f"{PREFIX}qk_rise_not_in_order", fields)


def _blowup_claim(view: Any, ok: np.ndarray) -> Claim:
    """The largest factor by which every plain run's peak exceeds every QK-norm run's, at one
    learning rate, and the smallest learning rate where that factor exceeds 1."""
    off, rms = view.peak_logit["off"], view.peak_logit["rms"]
    factors = np.full(view.lrs.size, np.nan)
    factors[ok] = off[:, ok].min(axis=0) / rms[:, ok].max(axis=0)
    above = np.flatnonzero(ok & (np.nan_to_num(factors, nan=0.0) > 1.0))
    if not above.size:
        return Claim(f"{PREFIX}qk_blowup_none", {})
    best = int(above[np.argmax(factors[above])])
    first = int(above[0])
    fields = {"lr": float(view.lrs[best]), "off_lo": float(off[:, best].min())}
    fields |= {"off_hi": float(off[:, best].max()), "rms_hi": float(rms[:, best].max())}
    fields |= {"factor": float(factors[best]), "first_lr": float(view.lrs[first])}
    return Claim(f"{PREFIX}qk_blowup", fields | {"first_factor": float(factors[first])})


def _clip_claim(view: Any) -> Claim | None:
    """QK-Clip's largest logit against its cap tau: how many learning rates a clipped run and a
    plain run went above it at, and the clipped runs' largest, where, and the plain runs' there."""
    clip, off, tau = view.peak_logit["clip"], view.peak_logit["off"], view.setup["tau"]
    if not (_finite(clip) and _finite(off)):
        return None
    top = clip.max(axis=0)
    i = int(np.argmax(top))
    fields = {"tau": tau, "n": view.lrs.size, "over": int(np.count_nonzero(top > tau))}
    fields |= {"off_over": int(np.count_nonzero(off.max(axis=0) > tau)), "lr": float(view.lrs[i])}
    fields |= {"clip_hi": float(top[i]), "off_hi": float(off[:, i].max())}
    return Claim(f"{PREFIX}qk_clip_{'over' if fields['over'] else 'capped'}", fields)


def _lr_loss_claim(view: Any, i: int, mode: str) -> Claim:
    """The final losses with ``mode`` (``rms`` or ``clip``) and without, at learning rate i."""
    off, mine = view.final_loss["off"][:, i], view.final_loss[mode][:, i]
    lr = float(view.lrs[i])
    if not (_finite(off) and _finite(mine)):
        return Claim(f"{PREFIX}qk_{mode}_loss_diverged", {"lr": lr})
    kind, pair = loss_pair(mine, off, sided=True)
    fields = {"lr": lr, "off_loss": pair["b_loss"], f"{mode}_loss": pair["a_loss"]}
    fields |= {k: pair[k] for k in ("gap", "spread") if k in pair}  # no spread with one seed
    return Claim(f"{PREFIX}qk_{mode}_loss_{kind}", fields)


def _best_claim(view: Any) -> Claim | None:
    """Each mode's learning rate with the lowest mean final loss over the seeds (rates where a
    run diverged left out; the first of equal means); QK-Clip's too where it was trained."""
    fields: dict[str, float] = {}
    for mode in view.modes:
        loss = view.final_loss[mode]
        finite = np.all(np.isfinite(loss), axis=0)
        if not finite.any():
            return None
        means = np.full(view.lrs.size, np.inf)
        means[finite] = loss[:, finite].mean(axis=0)
        i = int(np.argmin(means))
        fields |= {f"{mode}_lr": float(view.lrs[i]), f"{mode}_loss": float(means[i])}
    return Claim(f"{PREFIX}qk_best" + ("_clip" if "clip" in view.modes else ""), fields)


def qknorm_claims(view: Any) -> dict[str, Claim]:
    """The QK-norm section's sentences, by slot: ``rise``, ``blowup``, ``clip``, ``rms_loss_<i>``
    and ``clip_loss_<i>`` (one per learning rate, ascending), ``best``, and the two charts' words
    ``chart_logit_*`` and ``chart_loss_*``."""
    claims: dict[str, Claim] = {}
    if {"off", "rms"} <= set(view.modes):
        ok = _comparable(view)
        rise = _rise_claim(view, ok)
        if rise is not None:
            claims["rise"] = rise
        claims["blowup"] = _blowup_claim(view, ok)
        if "clip" in view.modes and (clip := _clip_claim(view)) is not None:
            claims["clip"] = clip
        for mode in view.modes[1:]:  # rms, clip
            claims |= {
                f"{mode}_loss_{i}": _lr_loss_claim(view, i, mode) for i in range(view.lrs.size)
            }
        best = _best_claim(view)
        if best is not None:
            claims["best"] = best
    seeds = {m: view.seeds for m in view.modes}
    claims |= _chart_words("qk", "logit", view.lrs, seeds, view.peak_logit)
    return claims | _chart_words("qk", "loss", view.lrs, seeds, view.final_loss)


# --- DyT's data regime ------------------------------------------------------------------------


def _gap_claim(view: Any, slice_: str) -> tuple[Claim, str]:
    """DyT's final losses against RMSNorm's on one slice, and the verdict: ``lower``,
    ``higher`` (DyT's mean, beyond the spread), ``within``, ``one_seed`` or ``diverged``."""
    dyt, rms = view.val_loss[f"dyt_{slice_}"][:, -1], view.val_loss[f"rms_{slice_}"][:, -1]
    fields: dict[str, Any] = {"size": view.sizes[slice_], "step": int(view.val_steps[-1])}
    if not (_finite(dyt) and _finite(rms)):
        return Claim(f"{PREFIX}data_gap_diverged", fields), "diverged"
    kind, pair = loss_pair(dyt, rms, sided=True)
    fields |= {"dyt_loss": pair["a_loss"], "rms_loss": pair["b_loss"], "gap": pair["gap"]}
    fields |= {k: pair[k] for k in ("spread",) if k in pair}
    return Claim(f"{PREFIX}data_gap_{kind}", fields), kind


def _data_rise_claim(view: Any, kind: str) -> Claim | None:
    """A run kind's mean validation loss against its lowest: ``falling`` (lowest at the last
    validation), ``never_fell`` (lowest at the first), with one seed ``one_seed``, else ``rose``
    (ended above its lowest by more than its seeds' final losses lie apart) or ``held``."""
    loss = view.val_loss[kind]
    if not _finite(loss):
        return None
    norm, slice_ = kind.split("_")
    mean, spread = loss.mean(axis=0), float(np.ptp(loss[:, -1]))
    i = int(np.argmin(mean))
    fields = {"name": NAMES[norm], "size": view.sizes[slice_], "lo": float(mean[i])}
    fields |= {"lo_step": int(view.val_steps[i]), "last": float(mean[-1]), "spread": spread}
    fields |= {"rise": float(mean[-1] - mean[i]), "step": int(view.val_steps[-1])}
    if i == mean.size - 1:
        key = "falling"
    elif i == 0:
        key = "never_fell"
    elif len(view.seeds) < 2:
        key = "rise_one_seed"
    else:
        key = "rose" if fields["rise"] > spread else "held"
    return Claim(f"{PREFIX}data_{key}", fields)


def _best_data_claim(view: Any, slice_: str) -> Claim | None:
    """DyT against RMSNorm on one slice, each at the validation where its mean over the seeds
    was lowest (as if stopped there): the seeds' losses at those steps, weighed by ``loss_pair``."""
    rows = {n: view.val_loss[f"{n}_{slice_}"] for n in ("dyt", "rms")}
    if not all(_finite(grid) for grid in rows.values()):
        return None
    at = {n: int(np.argmin(grid.mean(axis=0))) for n, grid in rows.items()}
    if min(at.values()) == view.val_steps.size - 1:
        return None  # both lowest at the end: the final losses' sentence says it all
    kind, pair = loss_pair(rows["dyt"][:, at["dyt"]], rows["rms"][:, at["rms"]], sided=True)
    fields = {"size": view.sizes[slice_], "dyt_loss": pair["a_loss"], "rms_loss": pair["b_loss"]}
    fields |= {f"{n}_step": int(view.val_steps[i]) for n, i in at.items()}
    fields |= {k: pair[k] for k in ("gap", "spread") if k in pair}
    return Claim(f"{PREFIX}data_best_{kind}", fields)


def _saturation_claim(view: Any) -> Claim | None:
    """DyT's saturated share averaged over its layers, small slice against large, and the layers
    where every seed's share is higher with one slice than every seed's with the other."""
    small, large = view.saturated["small"], view.saturated["large"]
    if small.size == 0 or not (_finite(small) and _finite(large)):
        return None
    by_seed = {"small": small.mean(axis=1), "large": large.mean(axis=1)}
    fields: dict[str, Any] = {"layers": small.shape[1], "limit": SATURATION}
    for slice_, shares in by_seed.items():
        fields |= {slice_: view.sizes[slice_], f"{slice_}_pct": float(shares.mean())}
        fields |= {f"{slice_}_lo_pct": float(shares.min()), f"{slice_}_hi_pct": float(shares.max())}
    fields["more_small"] = int(np.sum(small.min(axis=0) > large.max(axis=0)))
    fields["more_large"] = int(np.sum(large.min(axis=0) > small.max(axis=0)))
    few, many = by_seed["small"], by_seed["large"]
    key = "more_small" if few.min() > many.max() else "overlap"
    key = "more_large" if many.min() > few.max() else key
    return Claim(f"{PREFIX}data_sat_{key if len(view.seeds) > 1 else 'one_seed'}", fields)


def _floor_claim(view: Any, slice_: str) -> Claim | None:
    """DyT's mean final loss against what byte counts alone score (``view.floor``): below or
    above it, with RMSNorm's beside it."""
    dyt, rms = (view.val_loss[f"{n}_{slice_}"][:, -1] for n in ("dyt", "rms"))
    floor = view.floor.get(slice_)
    if floor is None or not (_finite(dyt) and _finite(rms)):
        return None
    fields = {"size": view.sizes[slice_], "floor": floor, "dyt_loss": float(dyt.mean())}
    fields |= {"rms_loss": float(rms.mean()), "gap": abs(float(dyt.mean()) - floor)}
    return Claim(f"{PREFIX}data_floor_{'below' if dyt.mean() < floor else 'above'}", fields)


def data_claims(view: Any) -> dict[str, Claim]:
    """The data section's sentences, by slot: ``gap_small``, ``gap_large``, ``sign`` (where both
    gaps have one), ``best_<slice>``, ``floor_<slice>``, ``rise_<kind>``, ``saturation``, and the
    two charts' words ``chart_loss_*`` and ``chart_sat_*``."""
    claims: dict[str, Claim] = {}
    verdicts = []
    for slice_ in ("small", "large"):
        claims[f"gap_{slice_}"], verdict = _gap_claim(view, slice_)
        verdicts.append(verdict)
    if "diverged" not in verdicts and "one_seed" not in verdicts:
        settled = set(verdicts) <= {"lower", "higher"}
        key = ("flips_" if verdicts[0] != verdicts[1] else "holds_") + verdicts[0]
        fields = {"small": view.sizes["small"], "large": view.sizes["large"]}
        claims["sign"] = Claim(f"{PREFIX}data_sign_{key if settled else 'unsettled'}", fields)
    for slice_ in ("small", "large"):
        if (best := _best_data_claim(view, slice_)) is not None:
            claims[f"best_{slice_}"] = best
        if (floor := _floor_claim(view, slice_)) is not None:
            claims[f"floor_{slice_}"] = floor
    # DyT ahead on less data at the end, RMSNorm ahead there at each one's lowest: the sign
    # changed because RMSNorm's loss rose, which the sentence must say.
    best_small = claims.get("best_small", Claim("")).key.rsplit("_", 1)[-1]
    if claims.get("sign", Claim("")).key.endswith("flips_lower") and best_small == "higher":
        claims["sign"] = replace(claims["sign"], key=f"{PREFIX}data_sign_flips_lower_overfit")
    for kind in view.val_loss:
        if (rise := _data_rise_claim(view, kind)) is not None:
            claims[f"rise_{kind}"] = rise
    if (saturation := _saturation_claim(view)) is not None:
        claims["saturation"] = saturation
    seeds = dict.fromkeys(view.val_loss, view.seeds)
    claims |= _chart_words("data", "loss", view.val_steps, seeds, view.val_loss)
    layers = np.arange(1, view.saturated["small"].shape[1] + 1)
    percent = {slice_: 100 * shares for slice_, shares in view.saturated.items()}
    seeds = dict.fromkeys(percent, view.seeds)
    return claims | _chart_words("data", "sat", layers, seeds, percent)
