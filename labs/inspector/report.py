"""The inspector page's state: each chosen model's contract, readings and claims, in one call.

:func:`inspect_side` loads one model (from the cache when it is there), reads its contract
(:mod:`labs.inspector.layers`), runs the prompt through it with hooks on every norm
(:mod:`labs.inspector.readings`) and chooses the sentences that are true of these numbers
(:mod:`labkit.claims`). :func:`inspect_view` does it for the models shown side by side."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from labkit.chart_words import pair_words, series_words
from labkit.claims import Claim, at_least, at_most, pick
from labs.inspector.layers import FORMULA_TOL, GainHistogram, ModelContract, read_contract
from labs.inspector.loading import LoadedModel, ModelFacts, Refusal, load
from labs.inspector.readings import MAX_TOKENS, NormReading, read_norm_inputs
from labs.inspector.sources import Catalog, ModelRef, Settings

# float64 rounding of mean(x²) against var + mean² on activations of order 1e±4.
IDENTITY_TOL = 1e-12
# Below this share of RMS², centring changes LayerNorm's denominator by under 0.5 %.
SMALL_SHARE = 0.01
# One coordinate "sets the denominator" when it carries at least half of its token's RMS².
DOMINANT_SHARE = 0.5
# Token ids of the traced pass that finds where each norm sits (any ids in the vocabulary).
TRACE_TOKENS = 8
# The page's charts of what the norms see: each one's text stem and the reading it draws per
# module (a NormReading field). The share is drawn, and quoted, in percent.
CHART_READINGS = (("share", "share"), ("rms", "rms"), ("top", "top_ratio"))
PERCENT_CHARTS = ("share",)


@dataclass(frozen=True)
class ModelSummary(ModelFacts):
    """A model's facts, and the link value, source kind and label that name it."""

    link: str
    source: str
    label: str


@dataclass(frozen=True)
class PromptRun:
    """The prompt as the model read it: ``tokens`` used of ``total`` (cut at ``limit``)."""

    tokens: int
    total: int
    limit: int


@dataclass(frozen=True)
class SideView:
    summary: ModelSummary
    contract: ModelContract
    prompt: PromptRun | None
    readings: tuple[NormReading, ...]
    claims: dict[str, Claim]


@dataclass(frozen=True)
class InspectorView:
    """The models shown, by side ("a", "b"), and every claim by slot ``<side>_<name>``."""

    sides: dict[str, SideView]
    claims: dict[str, Claim]


def _vocabulary(model: Any) -> int:
    import torch

    embedding = next(m for m in model.modules() if isinstance(m, torch.nn.Embedding))
    return int(embedding.num_embeddings)


def _contract(loaded: LoadedModel) -> ModelContract:
    """The contract, read once per loaded model."""
    import torch

    if "contract" not in loaded.memo:
        n = min(TRACE_TOKENS, _vocabulary(loaded.model), max(loaded.context, 1))
        ids = torch.arange(n, dtype=torch.long)[None]
        loaded.memo["contract"] = read_contract(loaded.model, ids, loaded.width)
    return loaded.memo["contract"]


def _summary(loaded: LoadedModel) -> ModelSummary:
    ref = loaded.ref
    facts = {f.name: getattr(loaded, f.name) for f in fields(ModelFacts)}
    return ModelSummary(link=ref.link, source=ref.kind, label=ref.label, **facts)


def _effective_gains(loaded: LoadedModel, contract: ModelContract) -> dict[str, Any]:
    """name -> the gain each module applies (w or 1 + w) as float64, or None."""
    from labs.inspector.places import norm_modules

    modules = dict(norm_modules(loaded.model))
    out: dict[str, Any] = {}
    for m in contract.modules:
        weight = getattr(modules[m.name], "weight", None)
        out[m.name] = None
        if weight is not None and m.gain in ("direct", "offset"):
            w = weight.detach().double().cpu().numpy().ravel()
            out[m.name] = 1.0 + w if m.gain == "offset" else w
    return out


def _readings(loaded: LoadedModel, contract: ModelContract, text: str):
    """(PromptRun, readings) for ``text``; (None, ()) when the model has no tokenizer."""
    if loaded.encode is None:
        return None, ()
    ids = loaded.encode(text)
    limit = max(1, min(MAX_TOKENS, loaded.context or MAX_TOKENS))
    used = ids[:limit]
    if not used:
        return PromptRun(0, 0, limit), ()
    places = {m.name: m.place for m in contract.modules}
    readings = read_norm_inputs(loaded.model, used, places, _effective_gains(loaded, contract))
    return PromptRun(len(used), len(ids), limit), tuple(readings)


# --- The sentences ------------------------------------------------------------------------------


def _contract_claim(contract: ModelContract) -> Claim:
    modules = contract.modules
    normalising = contract.normalising
    unknown = [m for m in modules if m.kind == "unknown"]
    if unknown:
        fields = {"unknown": len(unknown), "count": len(modules), "tol_pct": FORMULA_TOL}
        return Claim("inspector.contract_unknown", fields)
    if not normalising:
        return Claim("inspector.contract_identity", {"count": len(modules)})
    exact = [m for m in normalising if m.delta == 0.0]
    presets = ", ".join(dict.fromkeys(m.preset for m in exact if m.preset))
    worst = max(m.delta for m in normalising)
    return pick(
        at_most(worst, 0.0),
        "inspector.contract_exact",
        "inspector.contract_close",
        count=len(normalising),
        exact=len(exact),
        rest=len(normalising) - len(exact),
        presets=presets,
        delta=worst,
    )


def _gain_claim(contract: ModelContract) -> Claim:
    gains = {m.gain for m in contract.normalising if m.gain in ("direct", "offset")}
    if not gains:
        return Claim("inspector.gain_none")
    if len(gains) > 1:
        counts = [m.gain for m in contract.normalising]
        fields = {"direct": counts.count("direct"), "offset": counts.count("offset")}
        return Claim("inspector.gain_mixed", fields)
    fields = {"mean": contract.weight_mean, "std": contract.weight_std}
    if gains == {"offset"}:
        return Claim("inspector.gain_offset", {**fields, "gain": contract.gain_mean})
    return Claim("inspector.gain_direct", fields)


def _prompt_claim(prompt: PromptRun | None) -> Claim:
    if prompt is None:
        return Claim("inspector.prompt_no_tokenizer")
    if prompt.tokens == 0:
        return Claim("inspector.prompt_empty")
    return pick(
        prompt.tokens == prompt.total,
        "inspector.prompt_whole",
        "inspector.prompt_cut",
        tokens=prompt.tokens,
        total=prompt.total,
    )


def _reading_claims(readings: tuple[NormReading, ...], contract: ModelContract) -> dict:
    """The identity, the mean's share and the largest coordinate, over every norm read."""
    gap = max(r.identity_gap for r in readings)
    tokens = readings[0].tokens
    claims = {
        "identity": pick(
            at_most(gap, IDENTITY_TOL),
            "inspector.identity_holds",
            "inspector.identity_fails",
            norms=len(readings),
            tokens=tokens,
            gap=gap,
        )
    }
    largest = max(readings, key=lambda r: r.share)
    claims["share"] = pick(
        at_most(largest.share, SMALL_SHARE),
        "inspector.share_small",
        "inspector.share_large",
        name=largest.name,
        share_pct=largest.share,
    )
    top = max(readings, key=lambda r: r.top_share)
    claims["outlier"] = pick(
        at_least(top.top_share, DOMINANT_SHARE),
        "inspector.outlier_dominates",
        "inspector.outlier_spread",
        name=top.name,
        dim=top.top_dim,
        token=top.top_token,
        ratio=top.top_ratio,
        share_pct=top.top_share,
        width=top.width,
    )
    claims["treat"] = _treat_claim(top, contract)
    return claims


def _treat_claim(top: NormReading, contract: ModelContract) -> Claim:
    """How the module with the largest coordinate treats it."""
    kind = next(m.kind for m in contract.modules if m.name == top.name)
    if kind == "none":
        return Claim("inspector.treat_identity", {"out_ratio": top.out_ratio})
    if math.isnan(top.top_gain):
        return Claim("inspector.treat_nogain", {"out_ratio": top.out_ratio})
    fields = {"gain": top.top_gain, "median": top.gain_median, "out_ratio": top.out_ratio}
    return Claim("inspector.treat_gain", fields)


def _histogram_claim(hist: GainHistogram) -> Claim:
    """The gain histogram's summary: how many stored weights, their range, and the most that
    one bin holds (the first such bin, by its edges); one value when they are all equal."""
    totals = np.sum(list(hist.counts.values()), axis=0)  # (places, bins) -> (bins,)
    count = int(totals.sum())
    if hist.low == hist.high:
        return Claim("inspector.hist_words_same", {"count": count, "value": hist.low})
    peak = int(np.argmax(totals))
    fields = {"count": count, "lo": hist.low, "hi": hist.high, "peak": int(totals[peak])}
    fields |= {"peak_lo": float(hist.edges[peak]), "peak_hi": float(hist.edges[peak + 1])}
    return Claim("inspector.hist_words", fields)


def _claims(link: str, contract, prompt, readings) -> dict[str, Claim]:
    """Every sentence about one model; each carries the model's link value as ``model``."""
    claims = {"contract": _contract_claim(contract), "gain": _gain_claim(contract)}
    claims["prompt"] = _prompt_claim(prompt)
    if contract.histogram is not None:
        claims["hist"] = _histogram_claim(contract.histogram)
    if readings:
        claims.update(_reading_claims(readings, contract))
    return {slot: Claim(c.key, {**c.fields, "model": link}, c.noise) for slot, c in claims.items()}


def _in_percent(claim: Claim, chart: str) -> Claim:
    """A share chart's numbers quoted in percent (``_pct`` fields); positions as they are."""
    if chart not in PERCENT_CHARTS:
        return claim
    fields = {f"{k}_pct" if isinstance(v, float) else k: v for k, v in claim.fields.items()}
    return Claim(claim.key, fields, claim.noise)


def _chart_claims(sides: dict[str, SideView]) -> dict[str, Claim]:
    """The summaries of the charts of what the norms see (``labkit.chart_words``), by slot.

    Two models with the same norm modules (the shipped pair: one model trained with RMSNorm
    and with LayerNorm) make a pair: each one's extremes by module and where they part most
    (``<chart>_words``, A as ``rms_*``, B as ``layer_*``). Otherwise each model's own extremes
    (``<side>_<chart>_words``, with ``side``). Each carries the link values it speaks of."""
    read = {side: v for side, v in sides.items() if v.readings}
    names = {side: [r.name for r in v.readings] for side, v in read.items()}
    paired = len(read) == 2 and names["a"] == names["b"]
    claims: dict[str, Claim] = {}
    for chart, field in CHART_READINGS:
        values = {side: [getattr(r, field) for r in v.readings] for side, v in read.items()}
        found: dict[str, tuple[Claim, dict]] = {}
        if paired:
            words = pair_words(f"inspector.{chart}_pair", names["a"], values["a"], values["b"])
            links = {"model": read["a"].summary.link, "compare": read["b"].summary.link}
            found |= {f"{chart}_{slot}": (c, links) for slot, c in words.items()}
        else:
            for side, view in read.items():
                words = series_words(f"inspector.{chart}_side", names[side], values[side])
                links = {"side": side.upper(), "model": view.summary.link}
                found |= {f"{side}_{chart}_{slot}": (c, links) for slot, c in words.items()}
        for slot, (c, links) in found.items():
            claims[slot] = _in_percent(Claim(c.key, {**c.fields, **links}, c.noise), chart)
    return claims


# --- The page's one call ------------------------------------------------------------------------


def inspect_side(ref: ModelRef, settings: Settings, text: str) -> SideView:
    """Load ``ref`` (cached), read its contract and what its norms see on ``text``."""
    loaded = load(ref, settings)
    with loaded.lock:
        contract = _contract(loaded)
        prompt, readings = _readings(loaded, contract, text)
    claims = _claims(ref.link, contract, prompt, readings)
    return SideView(_summary(loaded), contract, prompt, readings, claims)


def inspect_view(links: dict[str, str], text: str, settings: Settings) -> InspectorView:
    """Each side's view, for the models ``links`` names (side -> link value). A link this
    server does not offer raises :class:`Refusal` ``unknown_model``."""
    catalog = Catalog(settings)
    sides: dict[str, SideView] = {}
    for side, link in links.items():
        ref = catalog.resolve(link)
        if ref is None:
            raise Refusal("unknown_model", link=link)
        sides[side] = inspect_side(ref, settings, text)
    claims = {f"{side}_{slot}": c for side, v in sides.items() for slot, c in v.claims.items()}
    return InspectorView(sides, claims | _chart_claims(sides))
