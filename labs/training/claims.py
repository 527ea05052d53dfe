r"""What the training runs say, in sentences: the claims (``labkit.claims``) of the training
page, each chosen by a verdict computed from a ``TrainingView``'s numbers: the seed spread of
the loss against the gap between the norms; time per step, a side named only when at least
``MIN_PAIRS`` paired comparisons agree (a sign test); the norms' share of a forward pass,
:math:`(t_{norm} - t_{identity}) / t_{norm}`, quoted only beyond the timing noise (``share_noise``);
the RMSNorm paper's 7-64 % (Zhang & Sennrich 2019) beside this machine's saving
:math:`1 - \tilde t_{RMS} / \tilde t_{Layer}`; the machine; each chart's words."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from labkit.chart_words import runs_words
from labkit.claims import Claim, at_most
from labs.speed.model import PAPER_SAVING
from labs.training.curves import NormSummary, RunCurves, TrainingView, seed_spread
from labs.training.model import NORM_CLASSES


class Timed(Protocol):
    """A run's step times as the paired comparisons read them."""

    seed: int
    steps_done: int
    step_seconds: np.ndarray


# Paired step-time comparisons needed before a sentence says which norm's step is faster: if the
# norms cost the same, each comparison falls either side of 1 with even odds, and all k agree by
# chance with probability 2^(1 - k): 3.1 % at k = 6 (a two-sided sign test below 5 %), 6.3 % at 5.
MIN_PAIRS = 6


def run_claims(
    view: TrainingView,
    *,
    reference_spread: float | None = None,
    machine: Mapping[str, Any] | None = None,
    live: bool = False,
) -> dict[str, Claim]:
    """The sentences of ``view`` (its ``claims`` field is not read): the losses, quoting
    ``reference_spread`` where the runs have one seed each; the timings; the machine of the
    shipped runs when ``machine`` is given; how the training stopped when ``live``."""
    claims = _loss_claims(view, reference_spread)
    claims.update(_time_claims(view))
    claims.update(chart_claims(view, claims.get("share")))
    if machine is not None:
        claims["machine"] = machine_claim(machine)
    if live:
        claims["stopped"] = _stopped_claim(view.runs)
    return {s: _named(c, view.runs) if s.endswith("none") else c for s, c in claims.items()}


def _named(claim: Claim, runs: Sequence[RunCurves]) -> Claim:
    """A claim about the variant without a norm, named by what it computes: where it still
    normalises every head's queries and keys, the text ``<key>_qk`` naming that QK norm."""
    qk = {r.qk_norm for r in runs if r.norm == "none"} - {"off", "clip"}
    return Claim(f"{claim.key}_qk", {**claim.fields, "qk": NORM_CLASSES[qk.pop()]}) if qk else claim


def _pair(view: TrainingView) -> tuple[NormSummary, NormSummary] | None:
    """RMSNorm and LayerNorm, when both were trained."""
    if "rms" in view.norms and "layer" in view.norms:
        return view.norms["rms"], view.norms["layer"]
    return None


def _comparable(*summaries: NormSummary, field: str) -> bool:
    return all(s.finite and math.isfinite(getattr(s, field)) for s in summaries)


def _loss_claims(view: TrainingView, ref_spread: float | None) -> dict[str, Claim]:
    claims = {
        f"diverged_{n}": Claim(f"training.diverged_{n}", {})
        for n, s in view.norms.items()
        if not s.finite
    }
    pair = _pair(view)
    if pair is not None and _comparable(*pair, field="mean_at_step"):
        claims["steps"] = _gap_claim(*pair, "steps", view.equal_step, step=view.equal_step)
        claims["spread"] = _spread_claim(view, *pair, ref_spread)
    if pair is not None and _comparable(*pair, field="mean_at_time"):
        reached = max(int(pair[0].at_time_steps.max()), int(pair[1].at_time_steps.max()))
        claims["time"] = _gap_claim(*pair, "time", reached, seconds=view.equal_seconds)
    if (none := _none_claim(view)) is not None:
        claims["none"] = none
    return claims


def _gap_claim(
    rms: NormSummary, layer: NormSummary, kind: str, reached: int, **where: float
) -> Claim:
    """Which norm's mean validation loss is lower at the equal step or time (``kind``). At the
    equal time, with several seeds, also whether the gap exceeds the seeds' spread there."""
    field = "mean_at_step" if kind == "steps" else "mean_at_time"
    a, b = getattr(rms, field), getattr(layer, field)
    if reached <= 0:  # at 0 s some run validated only at step 0: there is no time to compare at
        untrained = "unvalidated" if where.get("seconds") == 0 else "untrained"
        return Claim(f"training.{kind}_{untrained}", dict(where))
    if a == b:
        return Claim(f"training.{kind}_tie", {**where, "loss": a})
    winner, loser = (rms, layer) if a < b else (layer, rms)
    names = {"winner": NORM_CLASSES[winner.norm], "loser": NORM_CLASSES[loser.norm]}
    fields = {**where, **names, "w_loss": min(a, b), "l_loss": max(a, b), "gap": abs(a - b)}
    if kind == "steps" or min(len(rms.seeds), len(layer.seeds)) < 2:
        return Claim(f"training.{kind}_gap", fields)
    spread = max(seed_spread(rms.at_time), seed_spread(layer.at_time))
    side = "within" if at_most(abs(a - b), spread) else "beyond"
    return Claim(f"training.time_gap_{side}_spread", {**fields, "spread": spread})


def _spread_claim(
    view: TrainingView, rms: NormSummary, layer: NormSummary, ref_spread: float | None
) -> Claim:
    """Is the seed-to-seed spread larger than the gap between the norms' means?"""
    if min(len(rms.seeds), len(layer.seeds)) < 2:
        if ref_spread is None:
            return Claim("training.spread_unknown", {})
        return Claim("training.spread_one_seed", {"ref_spread": ref_spread})
    gap = abs(rms.mean_at_step - layer.mean_at_step)
    spread = max(rms.spread, layer.spread)
    by_seed = dict(zip(layer.seeds, layer.at_step, strict=True))
    paired = [(a, by_seed[s]) for s, a in zip(rms.seeds, rms.at_step, strict=True) if s in by_seed]
    # "The spread is at least the gap": the seeds alone move the loss as much as the norm.
    verdict = at_most(gap, spread)
    fields = {"step": view.equal_step, "gap": gap, "spread": spread}
    fields |= {"wins": int(sum(a < b for a, b in paired)), "pairs": len(paired)}
    key = "training.spread_exceeds_gap" if verdict else "training.gap_exceeds_spread"
    return Claim(key, fields)


def _none_claim(view: TrainingView) -> Claim | None:
    """The variant without a norm against the better of the norms trained beside it, once the
    runs share a validation after step 0 (as the comparison at equal steps). The norms are
    RMSNorm and LayerNorm: DyT computes no statistic of the row, and ``labs.training.dyt_claims``
    compares it with the same norm."""
    none = view.norms.get("none")
    if view.equal_step <= 0:  # at step 0 the variants differ only by their initial weights
        return None
    pair = [view.norms[n] for n in ("rms", "layer") if n in view.norms]
    others = [s for s in pair if _comparable(s, field="mean_at_step")]
    if none is None or not others or not _comparable(none, field="mean_at_step"):
        return None
    best = min(others, key=lambda s: s.mean_at_step)
    diff = none.mean_at_step - best.mean_at_step
    key = "none_higher" if diff > 0 else "none_lower" if diff < 0 else "none_tie"
    fields = {"step": view.equal_step, "none_loss": none.mean_at_step}
    fields |= {"best": NORM_CLASSES[best.norm], "best_loss": best.mean_at_step, "diff": abs(diff)}
    return Claim(f"training.{key}", fields)


def _parts(n: int, parts: int) -> list[tuple[int, int]]:
    """``n`` steps in ``parts`` consecutive runs of steps, as ``numpy.array_split`` cuts them
    (the first ``n % parts`` one step longer)."""
    edges = np.cumsum([0] + [len(p) for p in np.array_split(np.arange(n), parts)])
    return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))


def paired_ratios(rms: Sequence[Timed], layer: Sequence[Timed]) -> list[float]:
    """RMSNorm's median step time over LayerNorm's (or any variant's over another's), per seed
    trained with both and per part of the steps both runs of that seed did: each seed's steps
    are cut into enough consecutive parts that all seeds together give ``MIN_PAIRS``
    comparisons (at least two parts a seed, at most one a step). The parts show a load that
    changed during a run. A run is anything with ``seed``, ``steps_done`` and
    ``step_seconds`` (a ``RunCurves``, a ``labs.training.fair_view.Series``)."""
    by_seed = {r.seed: r for r in layer}
    paired = [(a, by_seed[a.seed]) for a in rms if a.seed in by_seed]
    parts = max(2, math.ceil(MIN_PAIRS / max(1, len(paired))))
    ratios = []
    for a, b in paired:
        n = min(a.steps_done, b.steps_done)
        for lo, hi in _parts(n, min(parts, n)) if n >= 2 else ():
            ta, tb = np.median(a.step_seconds[lo:hi]), np.median(b.step_seconds[lo:hi])
            if tb > 0 and math.isfinite(ta / tb):
                ratios.append(float(ta / tb))
    return ratios


def step_order(ratios: Sequence[float], center: float = 1.0) -> str:
    """``slower`` or ``faster`` when every ratio lies on that side of ``center`` (0 for differences)
    and there are ``MIN_PAIRS`` of them; ``few`` when they agree but are fewer; else ``mixed``."""
    if all(r > center for r in ratios):
        side = "slower"
    elif all(r < center for r in ratios):
        side = "faster"
    else:
        return "mixed"
    return side if len(ratios) >= MIN_PAIRS else "few"


def _time_claims(view: TrainingView) -> dict[str, Claim]:
    if _pair(view) is None:
        return {}
    rms = [r for r in view.runs if r.norm == "rms"]
    layer = [r for r in view.runs if r.norm == "layer"]
    noise = share_noise(view.runs)
    claims = {"share": _share_claim(rms, layer, noise)}
    if noise is not None:
        claims["noise"] = _noise_claim(view.runs, noise)
    ratios = paired_ratios(rms, layer)
    ratio = view.time_ratio
    if not (ratios and ratio is not None and math.isfinite(ratio) and ratio > 0):
        return claims
    order = step_order(ratios)
    ms = {f"{norm}_ms": view.norms[norm].median_step_ms for norm in ("rms", "layer")}
    fields = {"ratio": ratio, **ms, "lo": min(ratios), "hi": max(ratios), "pairs": len(ratios)}
    fields["chance_pct"] = 2.0 ** (1 - len(ratios))
    claims["step_time"] = Claim(f"training.step_time_{order}", fields)
    claims["paper"] = paper_claim(ratio, order)
    # A question about RMSNorm's cost only where a timing beyond its noise shows that cost: the
    # steps, or (when the steps do not settle it) the norms' share of a forward pass.
    share_larger = claims["share"].key == "training.share_rms_larger"
    if order == "slower" or (order in ("few", "mixed") and share_larger):
        why = "training.why_slower"
    elif order == "faster":
        why = "training.why_not_slower"
    else:
        return claims
    ops = {"rms_ops": view.operations["rms"], "layer_ops": view.operations["layer"]}
    return claims | {"why": Claim(why, ops)}


def paper_claim(ratio: float, order: str, *, prefix: str = "training.paper") -> Claim:
    """This machine's saving beside the paper's 7-64 %, when the timings settle its sign: the
    text ``{prefix}_{slower, below, within, above}``, or ``{prefix}_unresolved``."""
    saving = 1.0 - ratio
    lo, hi = PAPER_SAVING
    fields = {"ratio": ratio, "paper_lo_pct": lo, "paper_hi_pct": hi}
    if order not in ("slower", "faster") or (order == "slower") != (saving < 0):
        return Claim(f"{prefix}_unresolved", fields)
    if saving < lo:  # lo > 0: a negative saving is below it too
        key = "slower" if saving < 0 else "below"
    else:
        key = "within" if saving <= hi else "above"
    return Claim(f"{prefix}_{key}", {**fields, "saving_pct": abs(saving)})


def share_noise(runs: Sequence[RunCurves]) -> float | None:
    """The timing noise of a share, at least: the largest ``|share|`` of a run timing one
    computation twice (no norm, no QK norm) and of a negative share; None where neither is."""
    timed = [r.norm_share for r in runs if _measured(r.norm_share)]
    same = [abs(r.norm_share) for r in runs if _same_work(r)]
    return max(same + [-s for s in timed if s < 0], default=None)


def _same_work(run: RunCurves) -> bool:
    return run.norm == "none" and run.qk_norm == "off" and _measured(run.norm_share)


def _noise_claim(runs: Sequence[RunCurves], noise: float) -> Claim:
    """Where the noise was read: one computation timed twice (``noise``), beyond it a negative
    share (``noise_slower``), or a negative share alone (``noise_unpaired``)."""
    same = max((abs(r.norm_share) for r in runs if _same_work(r)), default=None)
    timed = [r.norm_share for r in runs if _measured(r.norm_share)]
    fields = {"noise_pct": noise, "slower": sum(s < 0 for s in timed), "timed": len(timed)}
    if same is None:
        return Claim("training.noise_unpaired", fields)
    key = "training.noise" if same >= noise else "training.noise_slower"
    return Claim(key, fields | {"same_pct": same})


def _measured(share: float | None) -> bool:
    return share is not None and math.isfinite(share)


def shown_share(share: float | None, noise: float | None) -> float | None:
    """A run's share of a forward pass as the page shows it: only when the pass without the
    norms was faster by more than the timing noise, so never below it; none where the noise
    was not measured."""
    if noise is None or not _measured(share) or share <= noise:
        return None
    return share


def drawn_shares(view: TrainingView, share: Claim | None) -> list[float | None]:
    """Each run's share as the share chart draws it: ``shown_share`` for a variant with a norm,
    and none where the sentence ``share`` says these timings give the norms no share."""
    noisy = share is not None and share.key == "training.share_noisy"
    return [
        None if noisy or r.norm == "none" else shown_share(r.norm_share, view.share_noise)
        for r in view.runs
    ]


def _share_claim(
    rms: Sequence[RunCurves], layer: Sequence[RunCurves], noise: float | None
) -> Claim:
    """The norms' share of a forward pass with RMSNorm and with LayerNorm, seed by seed, held
    to the timing noise: a share is quoted only above it, and one norm's share is called larger
    only where every seed's difference exceeds it one way, in ``MIN_PAIRS`` seeds (a sign test)."""
    by_seed = {r.seed: r.norm_share for r in layer}
    pairs = [
        (a.norm_share, by_seed[a.seed])
        for a in rms
        if _measured(a.norm_share) and _measured(by_seed.get(a.seed))
    ]
    if not pairs:
        return Claim("training.share_unmeasured", {})
    if noise is None:  # no share is quoted where no noise says what a share beyond it is
        return Claim("training.share_uncompared", {"pairs": len(pairs)})
    shares = np.array(pairs)
    if any(shown_share(s, noise) is None for s in shares.ravel()):
        return Claim("training.share_noisy", {"pairs": len(pairs)})
    rms_pct, layer_pct = (float(np.median(column)) for column in shares.T)
    fields = {"rms_pct": rms_pct, "layer_pct": layer_pct, "pairs": len(pairs), "noise_pct": noise}
    diff = shares[:, 0] - shares[:, 1]
    order = "close" if (np.abs(diff) <= noise).any() else step_order(diff, center=0.0)
    key = {"slower": "rms_larger", "faster": "layer_larger"}.get(order, order)
    if key == "few":
        fields |= {"larger": NORM_CLASSES["rms" if diff[0] > 0 else "layer"]}
        fields |= {"chance_pct": 2.0 ** (1 - len(pairs))}
    return Claim(f"training.share_{key}", fields)


def machine_claim(machine: Mapping[str, Any], variants: str | None = None) -> Claim:
    """Where the shipped timings come from: the cores, the threads and the 1-minute load average at
    the start and the end. A load average above the core count means that on average more tasks were
    ready to run than there were cores, so some waited for one: the timings were taken under
    contention. At or below it, they were not on average. With ``variants``, the sentence on the
    runs of those variants, trained later in a session of their own (``machine_later_*``)."""
    before, after = machine["load_average_before"][0], machine["load_average_after"][0]
    cpus = machine["cpu_count"]
    contended = max(before, after) > cpus
    fields = {"cpus": cpus, "threads": machine["threads"], "before": float(before)}
    fields |= {"after": float(after), "minutes": round(float(machine["total_seconds"]) / 60, 1)}
    key = "machine_later" if variants else "machine"
    fields |= {"variants": variants} if variants else {}
    return Claim(f"training.{key}_{'contended' if contended else 'uncontended'}", fields)


def later_claims(records: Sequence[Mapping[str, Any]]) -> dict[str, Claim]:
    """The runs merged into the shipped set afterwards, each record with its own ``machine``:
    one sentence per variant and session (slot ``machine_later_<i>``), naming its seeds."""
    sessions: dict[tuple, tuple[Mapping[str, Any], list[int]]] = {}
    for r in (r for r in records if "machine" in r):
        key = (r["norm"], *sorted((k, str(v)) for k, v in r["machine"].items()))
        sessions.setdefault(key, (r["machine"], []))[1].append(r["seed"])
    claims = {}
    for i, (key, (machine, seeds)) in enumerate(sessions.items()):
        claim = machine_claim(machine, NORM_CLASSES[key[0]])
        seeds_named = {"seeds": ", ".join(map(str, sorted(seeds)))}
        claims[f"machine_later_{i}"] = replace(claim, fields={**claim.fields, **seeds_named})
    return claims


def _stopped_claim(runs: Sequence[RunCurves]) -> Claim:
    """How a live training ended: every step done, a cap, or the page interrupted it."""
    reasons = {r.stopped_by for r in runs}
    fields = {"done": min(r.steps_done for r in runs), "steps": max(r.steps for r in runs)}
    if reasons & {"interrupted", "callback"}:
        return Claim("training.stopped_interrupted", fields)
    if "wall_clock" in reasons:
        cap = max(r.max_seconds or 0.0 for r in runs)
        return Claim("training.stopped_wall_clock", {**fields, "cap": cap})
    if "work" in reasons:
        return Claim("training.stopped_work", fields)
    return Claim("training.stopped_steps", fields)


def chart_claims(view: TrainingView, share: Claim | None = None) -> dict[str, Claim]:
    """The words of the page's five charts, in slots ``chart_<chart>_<variant>`` (and
    ``chart_<chart>_not_finite``): the validation losses against the step and the seconds (each
    run a line named by its seed), the losses at the equal step, the median step times and the
    shares of a forward pass drawn (each variant's bars, by seed; ``drawn_shares``, in percent
    as the chart draws them). A variant with one point drawn has the words ``<key>_one``."""
    by_norm = {n: [r for r in view.runs if r.norm == n] for n in view.norms}
    charts = {
        f"loss_{x}": {
            n: [(r.seed, r.val_steps if x == "step" else r.val_seconds, r.val_loss) for r in runs]
            for n, runs in by_norm.items()
        }
        for x in ("step", "seconds")
    }
    charts["finals"] = {n: [(n, s.seeds, s.at_step)] for n, s in view.norms.items()}
    charts["ms"] = {
        n: [(n, [r.seed for r in runs], [r.median_step_ms for r in runs])]
        for n, runs in by_norm.items()
    }
    shares: dict[str, list] = {}
    for r, s in zip(view.runs, drawn_shares(view, share), strict=True):
        if s is not None:
            shares.setdefault(r.norm, []).append((r.seed, 100 * s))
    charts["share"] = {n: [(n, *zip(*pairs, strict=True))] for n, pairs in shares.items()}
    claims = {}
    for chart, groups in charts.items():
        keys = {n: f"training.{chart}_words_{n}" for n in groups}
        count = "training.val_not_finite" if chart.startswith("loss") else "charts.not_finite"
        words = runs_words(keys, groups, chart=f"training.{chart}", not_finite=count)
        for slot, claim in words.items():
            one = slot in groups and sum(int(np.isfinite(v).sum()) for *_, v in groups[slot]) == 1
            claims[f"chart_{chart}_{slot}"] = Claim(claim.key + "_one" * one, claim.fields)
    return claims
