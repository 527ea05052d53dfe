"""The residual stream of trained models: the synthetic trunk's readings, on shipped checkpoints.

``trained_view`` takes the same readings of the stream as ``labs.residual.model``'s synthetic trunk
from the models that ship in ``assets/train`` (RMSNorm, LayerNorm and no norm, trained from the
same seed), through ``labs.training.activations``: there no drift is imposed, and the readings
show what training wrote."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit.chart_words import pair_words, peak_words, series_words
from labkit.claims import Claim, at_least, at_most, both, pick

TRAINED_NORMS = ("rms", "layer", "none")  # RMSNorm first, as on every page
TRAINED_QUANTITIES = (
    "stream_mean",
    "stream_cos_ones",
    "stream_share_ones",
    "stream_rms",
    "outlier_ratio",
    "shift_loss",
)
# The offset is a small part of the stream while mean² stays under a tenth of RMS² (|cos| < 0.32)
# on average over the tokens; the synthetic trunk at its default link passes 0.9 within 24 blocks.
SMALL_SHARE = 0.1
# A loss change below this (nats per byte) is the float32 forward pass's rounding, about 1e-7
# here; a norm that reads the component along 1 moves the loss by tenths of a nat.
INVISIBLE = 1e-5
# A coordinate whose mean magnitude is ten times the median one carries the stream on its own.
DOMINANT = 10.0


@dataclass(frozen=True)
class TrainedView:
    r"""The residual page's trained mode for one link: three shipped models read on one text.

    ``readings[norm][quantity]`` has shape (L + 1,), index l the stream :math:`h_l` entering
    block l (l = 0: the embeddings; l = L: what the final norm reads), each the mean over the
    tokens: ``stream_mean`` (the offset), ``stream_cos_ones``, ``stream_share_ones``
    (:math:`\mu^2/\mathrm{RMS}^2`, the share of the energy along 1), ``stream_rms``,
    ``outlier_ratio`` (largest mean :math:`|h_i|` over the median one) and ``shift_loss`` (the
    loss on the text with :math:`h_l + \mathrm{RMS}_l\mathbf 1`, minus the loss without).
    ``relative_magnitude[norm]`` (L + 1, d) is every coordinate's mean :math:`|h_i|` over that
    layer's median; ``outlier_dims[norm]`` (L + 1, k) the k largest, largest first. ``loss`` is
    each model's loss on the text and ``val_loss`` its final validation loss, nats per byte."""

    seed: int
    text: str
    prompt: str
    layers: np.ndarray
    readings: dict[str, dict[str, np.ndarray]]
    last: dict[str, dict[str, float]]
    relative_magnitude: dict[str, np.ndarray]
    outlier_dims: dict[str, np.ndarray]
    loss: dict[str, float]
    val_loss: dict[str, float]
    d: int
    tokens: int
    block_size: int
    steps: int
    claims: dict[str, Claim]


def _trained_readings(reading) -> dict[str, np.ndarray]:
    """One ``ShippedReading`` as the page's quantities, each (L + 1,)."""
    r, shift = reading.readings, reading.shift
    return {
        "stream_mean": r.mean,
        "stream_cos_ones": r.cos_ones,
        "stream_share_ones": r.mean_share,
        "stream_rms": r.rms,
        "outlier_ratio": r.outlier_ratio,
        "shift_loss": shift.shifted_loss - shift.loss,
    }


def _model_claims(shipped: dict, seed: int) -> dict[str, Claim]:
    """What the three models are, and their loss on validation data and on the text."""
    chosen = {norm: shipped[norm, seed] for norm in TRAINED_NORMS}
    model = chosen["rms"].config["model"]
    steps = chosen["rms"].config["training"]["steps_done"]
    fields = {"layers": model["n_layer"], "d": model["n_embd"], "steps": steps, "seed": seed}
    fields |= {f"val_{n}": r.config["training"]["final_val_loss"] for n, r in chosen.items()}
    text = {"tokens": chosen["rms"].readings.tokens, "block": model["block_size"]}
    text |= {f"loss_{n}": r.shift.loss for n, r in chosen.items()}
    return {
        "model": Claim("residual.trained_model_caption", fields),
        "text": Claim("residual.trained_text_loss", text),
    }


def _offset_claims(shipped: dict, readings: dict) -> dict[str, Claim]:
    """How large the offset is, and which model's is larger: layer by layer and seed by seed."""
    mean = {n: readings[n]["stream_mean"] for n in TRAINED_NORMS}
    share = np.array([readings[n]["stream_share_ones"] for n in TRAINED_NORMS])  # (3, L + 1)
    cos = np.array([readings[n]["stream_cos_ones"] for n in TRAINED_NORMS])
    wins = np.abs(mean["rms"]) > np.abs(mean["layer"])  # (L + 1,)
    seeds = sorted({s for _, s in shipped})
    seed_wins = sum(
        abs(shipped["rms", s].readings.mean[-1]) > abs(shipped["layer", s].readings.mean[-1])
        for s in seeds
    )
    return {
        "small": pick(
            at_most(np.max(share), SMALL_SHARE),
            "residual.trained_offset_small",
            "residual.trained_offset_large",
            max_share_pct=float(np.max(share)),
            max_cos=float(np.max(np.abs(cos))),
        ),
        "offset": pick(
            bool(wins[-1]),
            "residual.trained_offset_rms_larger",
            "residual.trained_offset_rms_not_larger",
            **{f"offset_{n}": float(mean[n][-1]) for n in TRAINED_NORMS},
            layers_rms=int(np.sum(wins)),
            readings=int(wins.size),
            seeds_rms=int(seed_wins),
            seeds=len(seeds),
        ),
    }


def _share_claims(readings: dict, d: int) -> dict[str, Claim]:
    """The share of RMS² that is mean²: RMSNorm against LayerNorm, and against chance (1/d)."""
    share = {n: readings[n]["stream_share_ones"] for n in TRAINED_NORMS}
    wins = share["rms"] > share["layer"]
    last = {f"share_{n}_pct": float(share[n][-1]) for n in TRAINED_NORMS}
    return {
        "share": pick(
            bool(np.all(wins)),
            "residual.trained_share_rms_everywhere",
            "residual.trained_share_rms_some",
            **last,
            layers_rms=int(np.sum(wins)),
            readings=int(wins.size),
            random_pct=1.0 / d,
        ),
        "chance": pick(
            float(np.max(share["layer"])) < 1.0 / d,
            "residual.trained_layer_below_chance",
            "residual.trained_layer_not_below_chance",
            max_layer_pct=float(np.max(share["layer"])),
            random_pct=1.0 / d,
            min_rms_pct=float(np.min(share["rms"])),
            max_rms_pct=float(np.max(share["rms"])),
        ),
    }


def _shift_claim(readings: dict) -> Claim:
    """Whether shifting the stream along 1 moves each model's loss."""
    change = {n: float(np.max(np.abs(readings[n]["shift_loss"]))) for n in TRAINED_NORMS}
    verdict = both(
        at_most(change["layer"], INVISIBLE),
        at_least(min(change["rms"], change["none"]), 100 * INVISIBLE),
    )
    return pick(
        verdict,
        "residual.trained_shift_invisible",
        "residual.trained_shift_numbers",
        **{f"change_{n}": change[n] for n in TRAINED_NORMS},
    )


def _outlier_claims(readings: dict, dims: dict) -> dict[str, Claim]:
    """How far the largest coordinate stands out, and which coordinates the models share."""
    ratio = {n: readings[n]["outlier_ratio"] for n in TRAINED_NORMS}
    largest = float(max(np.max(r) for r in ratio.values()))
    top = {n: set(dims[n][-1].tolist()) for n in TRAINED_NORMS}
    return {
        "outliers": pick(
            at_most(largest, DOMINANT),
            "residual.trained_outliers_mild",
            "residual.trained_outliers_dominant",
            **{f"ratio_{n}": float(ratio[n][-1]) for n in TRAINED_NORMS},
            max_ratio=largest,
        ),
        "dims": Claim(
            "residual.trained_dims_shared",
            {
                "shared_layer": len(top["rms"] & top["layer"]),
                "shared_none": len(top["rms"] & top["none"]),
                "k": len(top["rms"]),
            },
        ),
    }


def _chart_words(layers: np.ndarray, readings: dict, relative: dict) -> dict[str, Claim]:
    """The figures' summaries (``labkit.chart_words``): the loss change when the stream is
    shifted along 1, by layer, RMSNorm's model beside LayerNorm's and then the model without a
    norm; each model's largest coordinate over its layer's median in the heat maps."""
    where = list(layers)
    loss = {n: readings[n]["shift_loss"] for n in TRAINED_NORMS}
    pair = pair_words("residual.trained_figure_words", where, loss["rms"], loss["layer"])
    claims = {f"trained_figure_{slot}": claim for slot, claim in pair.items()}
    alone = series_words("residual.trained_figure_none", where, loss["none"])
    claims |= {f"trained_figure_none_{slot}": claim for slot, claim in alone.items()}
    peaks = peak_words("residual.coordinates_words", relative)
    return claims | {f"coordinates_{slot}": claim for slot, claim in peaks.items()}


def trained_view(*, seed: int, text: str) -> TrainedView:
    """The shipped models trained from ``seed`` (one of ``SHIPPED_SEEDS``), read on ``TEXTS[text]``
    from ``labs.training.activations``, with every claim the page makes about them."""
    from labs.training.activations import SHIPPED_SEEDS, TEXTS, read_shipped

    if isinstance(seed, bool) or seed not in SHIPPED_SEEDS:
        raise ValueError(f"seed must be one of {list(SHIPPED_SEEDS)}; got {seed!r}")
    if text not in TEXTS:
        raise ValueError(f"text must be one of {list(TEXTS)}; got {text!r}")
    shipped = {(r.norm, r.seed): r for r in read_shipped(TEXTS[text])}
    chosen = {n: shipped[n, seed] for n in TRAINED_NORMS}
    readings = {n: _trained_readings(r) for n, r in chosen.items()}
    first = chosen["rms"].readings
    dims = {n: r.readings.outlier_dims for n, r in chosen.items()}
    claims = {**_model_claims(shipped, seed), **_offset_claims(shipped, readings)}
    claims |= {**_share_claims(readings, first.d), "shift": _shift_claim(readings)}
    claims |= _outlier_claims(readings, dims)
    claims["table"] = Claim("residual.trained_table_caption", {"tokens": first.tokens})
    relative = {
        n: r.readings.magnitude / np.median(r.readings.magnitude, axis=-1, keepdims=True)
        for n, r in chosen.items()
    }
    claims |= _chart_words(first.layers, readings, relative)
    return TrainedView(
        seed=int(seed),
        text=text,
        prompt=TEXTS[text],
        layers=first.layers,
        readings=readings,
        last={n: {q: float(v[-1]) for q, v in r.items()} for n, r in readings.items()},
        relative_magnitude=relative,
        outlier_dims=dims,
        loss={n: r.shift.loss for n, r in chosen.items()},
        val_loss={n: float(r.config["training"]["final_val_loss"]) for n, r in chosen.items()},
        d=first.d,
        tokens=first.tokens,
        block_size=int(chosen["rms"].config["model"]["block_size"]),
        steps=int(chosen["rms"].config["training"]["steps_done"]),
        claims=claims,
    )
