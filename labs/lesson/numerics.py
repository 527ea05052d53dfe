"""The guided lesson's steps about numbers and training: where eps sits, float32 rounding, the
gradient, the residual stream and the stored gain."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from core.defaults import DEFAULT_LAYER_EPS, EPS_LADDER
from core.inputs import make_input
from core.jacobian import layer_norm_jacobian, rms_norm_jacobian
from core.knobs import EPS_PLACEMENTS
from core.norms import rms_norm
from core.stats import vector_stats
from labkit.claims import pick
from labs.lesson.example import (
    LESSON_EPS,
    LESSON_SEED,
    LESSON_WIDTH,
    NOISE,
    SAME_TOL,
    Measured,
    lesson_vector,
    max_change,
    which_unchanged,
)
from labs.residual.model import residual_view

# Shrinks x to RMS about 1.5e-3, where mean(x^2) is about 2e-6: comparable to eps = 1e-6, so
# where eps sits decides the output.
TINY_SCALE = 1e-3
# Input RMS values for the eps-placement curves: from far below sqrt(eps) to far above it.
EPS_CURVE_SCALES = np.logspace(-5, 1, 121)
# A relative difference of output RMS above this is one a reader would notice in a plot.
VISIBLE_CHANGE = 0.01

# A real hidden size (Llama-3 8B) of plain normal draws.
PRECISION_WIDTH = 4096
# Differences up to this many units in the last place of float32 are rounding, not a different
# formula; a relative difference above VISIBLE_CHANGE would be visible.
ULP_LIMIT = 4

# The residual step: the residual page's defaults.
RESIDUAL_SETTING = {"layers": 24, "d": 256, "drift": 0.5, "seed": 0, "eps": DEFAULT_LAYER_EPS}
# Mean token cosines that differ by at least this differ; at least ALIKE_LEVEL is "alike".
TOKENS_APART = 0.1
ALIKE_LEVEL = 0.5

# The stored weights w of the gain step: small values around 0 (gain 1 + w means about 1).
GAIN_SPREAD = 0.1
# "Nearly the same output": no coordinate moves by more than this share of the largest output.
NEARLY = 0.05


def _eps() -> Measured:
    base = lesson_vector()
    x = TINY_SCALE * base
    out_rms = {
        p: vector_stats(rms_norm(x, eps=LESSON_EPS, eps_placement=p)).rms for p in EPS_PLACEMENTS
    }
    batch = EPS_CURVE_SCALES[:, None] * base  # (k, d): one scaled copy of x per row
    curves = {
        p: np.sqrt(np.mean(rms_norm(batch, eps=LESSON_EPS, eps_placement=p) ** 2, axis=-1))
        for p in EPS_PLACEMENTS
    }  # (k, d) -> (k,)
    gap = abs(out_rms["inside"] - out_rms["outside"]) / out_rms["outside"]
    numbers = {"eps": LESSON_EPS, "rms_x": vector_stats(x).rms}
    numbers |= {"mean_square_x": vector_stats(x).second_moment, "out_inside": out_rms["inside"]}
    numbers |= {"out_outside": out_rms["outside"], "out_clamp": out_rms["clamp"], "gap_pct": gap}
    numbers["visible_pct"] = VISIBLE_CHANGE
    return Measured(
        "yes" if gap > VISIBLE_CHANGE else "no",
        numbers,
        {"input_rms": EPS_CURVE_SCALES * vector_stats(base).rms, **curves},
    )


def _ulps(y: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Distance of float32 ``y`` from float32 ``exact`` in units in the last place of exact."""
    gap = np.abs(y.astype(np.float64) - exact.astype(np.float64))
    return np.rint(gap / np.spacing(np.abs(exact)).astype(np.float64)).astype(np.int64)


def precision_outputs(x: np.ndarray, eps: float) -> dict[str, np.ndarray]:
    """RMSNorm of a float32 ``x`` three ways (numpy):

    - ``divide``: every step in float32, mean of squares, root, then x divided by the root;
    - ``multiply``: the same, but x times the float32 reciprocal of the root (as rsqrt code does);
    - ``exact``: every step in float64, rounded to float32 once at the end."""
    eps32 = np.float32(eps)
    mean_square = np.mean(x * x)  # float32 throughout: (d,) -> ()
    root = np.sqrt(mean_square + eps32)
    x64 = x.astype(np.float64)
    return {
        "divide": x / root,
        "multiply": x * (np.float32(1.0) / root),
        "exact": (x64 / np.sqrt(np.mean(x64 * x64) + eps)).astype(np.float32),
        "mean_square": np.array([mean_square, np.float32(np.mean(x64 * x64))]),
    }


def _precision() -> Measured:
    x = make_input(PRECISION_WIDTH, seed=LESSON_SEED).astype(np.float32)
    y = precision_outputs(x, LESSON_EPS)
    ulps = {k: _ulps(y[k], y["exact"]) for k in ("divide", "multiply")}
    rel = np.abs(y["divide"].astype(np.float64) - y["exact"]) / np.abs(y["exact"])
    n_diff, worst = int(np.count_nonzero(ulps["divide"])), int(ulps["divide"].max())
    max_rel = float(np.max(rel))
    if n_diff == 0:
        correct = "identical"
    elif worst <= ULP_LIMIT:
        correct = "ulps"
    else:
        correct = "visible" if max_rel > VISIBLE_CHANGE else None
    counts = np.bincount(ulps["divide"])
    numbers = {"d": PRECISION_WIDTH, "n_diff": n_diff, "n_same": PRECISION_WIDTH - n_diff}
    numbers |= {"n_diff_mul": int(np.count_nonzero(ulps["multiply"])), "worst_ulps": worst}
    numbers |= {"max_rel": max_rel, "mean_x": float(np.mean(x)), "visible_pct": VISIBLE_CHANGE}
    reduction = pick(
        bool(y["mean_square"][0] == y["mean_square"][1]),
        "lesson.precision_reduction_exact",
        "lesson.precision_reduction_rounds",
        mean_square=float(y["mean_square"][0]),
    )
    arrays = {"ulps": np.arange(counts.size), "counts": counts}
    return Measured(correct, numbers, arrays, claims={"detail": reduction})


def upstream_gradient() -> np.ndarray:
    """The gradient step's g = dL/dy: standard normal, (8,), its own seeded stream."""
    return np.random.default_rng([LESSON_SEED, 1]).standard_normal(LESSON_WIDTH)


def _gradient() -> Measured:
    x, g = lesson_vector(), upstream_gradient()
    eps_values = np.array(EPS_LADDER)  # 0 first, then a log ladder up to 10
    cos = {"rms": [], "layer": []}
    for eps in eps_values:
        for name, jacobian in (("rms", rms_norm_jacobian), ("layer", layer_norm_jacobian)):
            grad = jacobian(x, eps=float(eps)).T @ g  # the input gradient dL/dx: (d,)
            cos[name].append(float(np.sum(grad) / (np.linalg.norm(grad) * math.sqrt(grad.size))))
    arrays = {k: np.abs(np.array(v)) for k, v in cos.items()}
    worst_layer = float(np.max(arrays["layer"]))
    least_rms = float(np.min(arrays["rms"]))
    numbers = {"worst_layer": worst_layer, "least_rms": least_rms}
    numbers |= {"cos_rms": cos["rms"][EPS_LADDER.index(LESSON_EPS)], "eps": LESSON_EPS}
    numbers["eps_max"] = float(eps_values[-1])
    return Measured(
        which_unchanged(least_rms < NOISE, worst_layer < NOISE),
        numbers,
        {"eps": eps_values, **arrays},
    )


def _residual() -> Measured:
    view = residual_view(**RESIDUAL_SETTING)
    rms, layer = view.last["rms"]["token_cosine"], view.last["layer"]["token_cosine"]
    if rms - layer >= TOKENS_APART:
        correct = "rms"
    elif layer - rms >= TOKENS_APART:
        correct = "layer"
    else:
        correct = "alike" if min(rms, layer) >= ALIKE_LEVEL else "apart"
    numbers = {**{k: float(v) for k, v in RESIDUAL_SETTING.items()}, "n": view.n, "tok_rms": rms}
    numbers |= {"tok_layer": layer, "cos_rms": view.last["rms"]["input_cos_ones"]}
    numbers["cos_layer"] = view.last["layer"]["input_cos_ones"]
    numbers["offset_rms"] = view.last["rms"]["stream_mean"]
    numbers["total"] = RESIDUAL_SETTING["layers"] * RESIDUAL_SETTING["drift"]
    numbers["apart"] = TOKENS_APART
    return Measured(
        correct,
        numbers,
        {"layers": view.layers, **{f"{n}_readings": view.readings[n] for n in ("rms", "layer")}},
    )


def stored_weight() -> np.ndarray:
    """The gain step's stored w: small normal values around 0, (8,), its own seeded stream."""
    return GAIN_SPREAD * np.random.default_rng([LESSON_SEED, 3]).standard_normal(LESSON_WIDTH)


def _gain() -> Measured:
    x, w = lesson_vector(), stored_weight()
    meant = rms_norm(x, w, eps=LESSON_EPS, gain_mode="offset")  # gain 1 + w
    loaded = rms_norm(x, w, eps=LESSON_EPS, gain_mode="direct")  # gain w
    flips = int(np.count_nonzero(np.sign(loaded) != np.sign(meant)))
    ratio = vector_stats(loaded).rms / vector_stats(meant).rms
    cos = float(np.dot(loaded, meant) / (np.linalg.norm(loaded) * np.linalg.norm(meant)))
    # Options: nearly the same, the same direction only shorter, or much smaller, signs flipped.
    if max_change(loaded, meant) <= NEARLY * float(np.max(np.abs(meant))):
        correct = "nearly"
    elif cos >= 1 - SAME_TOL:
        correct = "shorter"
    else:
        correct = "flipped" if ratio < 0.5 and flips > 0 else None
    numbers = {"w_min": float(w.min()), "w_max": float(w.max())}
    numbers |= {"rms_meant": vector_stats(meant).rms, "rms_loaded": vector_stats(loaded).rms}
    numbers |= {"ratio": ratio, "flips": flips, "d": LESSON_WIDTH}
    numbers["negative"] = int(np.count_nonzero(w < 0))
    return Measured(correct, numbers, {"x": x, "meant": meant, "loaded": loaded})


# The steps this module computes, by id.
NUMERIC_STEPS: dict[str, Callable[[], Measured]] = {
    "eps": _eps,
    "precision": _precision,
    "gradient": _gradient,
    "residual": _residual,
    "gain": _gain,
}
