"""Words for the guided lesson's figures: each step's summary, its caption and accessible name.

Every summary is read off the arrays the step's figure draws (``labkit.chart_words``): each
norm's extremes and where the two part, before and after side by side, a line's or bars'
extremes, or where each point of the plane sits. The steps that draw what another page draws
say it in that page's words."""

from __future__ import annotations

import numpy as np

from core.knobs import EPS_PLACEMENTS
from labkit.chart_words import (
    ROUNDING,
    lines_words,
    pair_words,
    point_words,
    rounding_of,
    series_words,
)
from labkit.claims import Claim
from labs.residual.model import SUMMARY_NOISE

# The steps whose figure draws one case before and after a change, as the invariance lab does.
BEFORE_AFTER = ("rescale", "shift", "recenter")
# The steps whose figure draws two series at the same positions: (first, second) in ``arrays``.
PAIRS = {
    "centre": ("y_rms", "y_layer"),
    "identity": ("before", "after"),
    "table": ("rms", "layer"),
    "gain": ("meant", "loaded"),
}
# The changes the scales step draws, one row of panels each, by their prefix in ``arrays``.
SCALE_CHANGES = ("neg", "coord")


def moves(arrays: dict[str, np.ndarray], norm: str, prefix: str = "") -> np.ndarray:
    """|after - before| per coordinate of one norm's outputs: how far the change moves them."""
    return np.abs(arrays[f"{prefix}{norm}_after"] - arrays[f"{prefix}{norm}_before"])


def chart_words(
    step_id: str, a: dict[str, np.ndarray], numbers: dict[str, float]
) -> dict[str, Claim]:
    """The summary of step ``step_id``'s figure from ``a``, the arrays it draws: ``{"words":
    claim}`` (the residual step's second panel adds ``tokens_words``), with ``not_finite`` where
    a drawn value is not finite."""
    key = f"lesson.{step_id}_words"
    if step_id == "plane":
        claim = point_words(
            "explorer.plane_words",
            a["rms"],
            a["layer"],
            noise=rounding_of(a["rms"], a["layer"]),
            xa=float(a["point"][0]),
            xb=float(a["point"][1]),
            radius=numbers["radius"],
        )
        return {"words": claim}
    if step_id in BEFORE_AFTER:
        key, where = "invariance.before_after_words", range(a["rms_after"].size)
        outputs = [a[f"{n}_{when}"] for n in ("rms", "layer") for when in ("before", "after")]
        noise = rounding_of(*outputs)
        return pair_words(key, where, moves(a, "rms"), moves(a, "layer"), noise=noise)
    if step_id == "scales":
        grids = {
            n: np.stack([moves(a, n, f"{change}_") for change in SCALE_CHANGES])
            for n in ("rms", "layer")
        }
        return lines_words(key, SCALE_CHANGES, range(a["s"].size), grids)
    if step_id == "sweep":
        where = list(a["offsets"])
        cosines = a["rms_cosine"], a["layer_cosine"]
        return pair_words("invariance.sweep_words", where, *cosines, noise=ROUNDING)
    if step_id == "eps":
        curves = {p: a[p] for p in EPS_PLACEMENTS}  # one curve each: a group of one line
        noise = rounding_of(*curves.values())
        return lines_words(key, ("curve",), list(a["input_rms"]), curves, noise=noise)
    if step_id == "precision":
        return series_words(key, list(a["ulps"]), a["counts"])
    if step_id == "gradient":
        keep = a["eps"] > 0  # a log axis has no place for eps = 0: the figure leaves it out
        cosines = a["rms"][keep], a["layer"][keep]
        return pair_words(key, list(a["eps"][keep]), *cosines, noise=ROUNDING)
    if step_id == "residual":
        layers, rms, layer = list(a["layers"]), a["rms_readings"], a["layer_readings"]
        ones = pair_words(
            "residual.figure_input_cos_ones",
            layers,
            rms["input_cos_ones"],
            layer["input_cos_ones"],
            noise=SUMMARY_NOISE["input_cos_ones"],
        )
        tokens = pair_words(key, layers, rms["token_cosine"], layer["token_cosine"], noise=ROUNDING)
        return ones | {f"tokens_{slot}": claim for slot, claim in tokens.items()}
    first, second = PAIRS[step_id]
    return pair_words(key, range(a[first].size), a[first], a[second])
