"""The guided lesson's numbers: one worked example per step, and the answer the numbers make true.

Each step asks the reader to predict how RMSNorm and LayerNorm behave, then reveals the
computation that settles it. ``lesson_step(step_id)`` runs that computation with the rest of
``core`` and returns the numbers the page quotes, the arrays its figure draws, and ``correct``:
the option whose statement the measured numbers make true. The answer key is a measurement, so
a change in the norms that broke a claim would change the verdict the page shows.

Every step uses the same seeded vector ``lesson_vector()``: width 8, standard-normal draws plus
a common offset, so that its mean is plainly not zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from core.geometry import plane_images
from core.inputs import make_input
from core.invariance import TRANSFORMS, invariance_table, shift_sweep
from core.norms import DEFAULT_RMS_EPS, layer_norm, rms_norm
from core.stats import second_moment_identity, vector_stats

__all__ = [
    "LESSON_EPS",
    "OPTIONS",
    "STEP_IDS",
    "StepResult",
    "lesson_step",
    "lesson_vector",
]

STEP_IDS: tuple[str, ...] = (
    "centre",
    "identity",
    "rescale",
    "shift",
    "sweep",
    "plane",
    "table",
    "eps",
    "precision",
    "gain",
)

# Every step's options. "Which norm ignores the change?" steps share one set of four.
_WHICH = ("A", "B", "C", "D")
OPTIONS: dict[str, tuple[str, ...]] = {
    "centre": ("A", "B", "C"),
    "identity": _WHICH,
    "rescale": _WHICH,
    "shift": _WHICH,
    "sweep": ("A", "B", "C"),
    "plane": ("A", "B", "C"),
    "table": _WHICH,
    "eps": ("A", "B"),
    "precision": ("A", "B", "C"),
    "gain": ("A", "B", "C"),
}

# Eight coordinates: each one stays readable in a figure and in the prose.
LESSON_WIDTH = 8
LESSON_SEED = 3
# A common offset about as large as the spread of the draws: the mean is then as visible as the
# pattern around it, which is exactly the part the two norms treat differently.
LESSON_OFFSET = 1.5
# The usual RMSNorm eps (Llama, T5, Gemma configs). Used by both norms so that they differ only
# in the centring.
LESSON_EPS = DEFAULT_RMS_EPS

# A change below this (largest coordinate change of a unit-RMS output, or relative change of a
# statistic) counts as "unchanged". It sits far above what eps = 1e-6 moves under a rescale
# (about 1e-6 here) and far below a real change (0.1 or more at these sizes).
SAME_TOL = 1e-4

RESCALE_FACTOR = 10.0
SHIFT_C = 3.0
# The sweep's largest |c|: about 30 times the spread of x, where RMSNorm's output has turned
# almost entirely onto the ones direction.
SWEEP_LIMIT = 50.0
SWEEP_POINTS = 201
# "Almost entirely": the share of the output's energy along 1 that counts as pointing along it.
ALONG_ONES = 0.99

# The invariance table's linear layer: a batch of 16 cases with 8 inputs into 8 units is the
# smallest that shows every row of the paper's table and still reads at a glance. Residuals
# below TABLE_TOL are rounding (float64 leaves about 1e-15).
TABLE_CASES = 16
TABLE_INPUTS = 8
TABLE_UNITS = 8
TABLE_TOL = 1e-9

# Shrinks x to RMS about 1.5e-3, where mean(x^2) is about 2e-6: comparable to eps = 1e-6, so
# where eps sits decides the output.
TINY_SCALE = 1e-3
# Input RMS values for the eps-placement curves: from far below sqrt(eps) to far above it.
EPS_CURVE_SCALES = np.logspace(-5, 1, 121)
EPS_PLACEMENTS = ("inside", "outside", "clamp")
# A relative difference of output RMS above this is one a reader would notice in a plot.
VISIBLE_CHANGE = 0.01

# A real hidden size (Llama-3 8B) and an offset that makes the sum of squares large, the setting
# where the reduction's precision shows in the last bits.
PRECISION_WIDTH = 4096
PRECISION_OFFSET = 30.0
# Differences up to this many units in the last place of float32 are rounding, not a different
# formula.
ULP_LIMIT = 4


@dataclass(frozen=True)
class StepResult:
    """What one lesson step shows.

    ``correct`` is the option id whose statement the numbers make true; ``numbers`` are plain
    floats the explanations quote; ``arrays`` are what the figure draws; ``rows`` are table rows.
    """

    step_id: str
    correct: str
    numbers: dict[str, float]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    rows: list[dict[str, object]] = field(default_factory=list)


def lesson_vector() -> np.ndarray:
    """The lesson's x, shape (8,): seeded standard-normal draws plus the offset 1.5."""
    return make_input(LESSON_WIDTH, seed=LESSON_SEED, offset=LESSON_OFFSET)


def _which(rms_same: bool, layer_same: bool) -> str:
    """The shared options: A both unchanged, B only RMSNorm, C only LayerNorm, D neither."""
    if rms_same and layer_same:
        return "A"
    if rms_same:
        return "B"
    if layer_same:
        return "C"
    return "D"


def _max_change(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)))


def _centre() -> StepResult:
    x = lesson_vector()
    y_rms = rms_norm(x, eps=LESSON_EPS)
    y_layer = layer_norm(x, eps=LESSON_EPS)
    sx = vector_stats(x)
    mean_rms = float(np.mean(y_rms))
    if abs(mean_rms) < SAME_TOL:
        correct = "A"
    else:
        correct = "B" if np.sign(mean_rms) == np.sign(sx.mean) else "C"
    return StepResult(
        "centre",
        correct,
        {
            "d": LESSON_WIDTH,
            "mean_x": sx.mean,
            "rms_x": sx.rms,
            "std_x": math.sqrt(sx.variance),
            "mean_rms": mean_rms,
            "mean_layer": float(np.mean(y_layer)),
            "rms_rms": vector_stats(y_rms).rms,
            "rms_layer": vector_stats(y_layer).rms,
        },
        {"x": x, "y_rms": y_rms, "y_layer": y_layer},
    )


def _identity() -> StepResult:
    x = lesson_vector()
    before = second_moment_identity(x)
    after = second_moment_identity(x + SHIFT_C)
    rms2_same = math.isclose(before[0], after[0], rel_tol=SAME_TOL)
    var_same = math.isclose(before[1], after[1], rel_tol=SAME_TOL)
    # Options: A only RMS^2 changes, B only Var changes, C both change, D neither.
    correct = {(False, True): "A", (True, False): "B", (False, False): "C", (True, True): "D"}[
        (rms2_same, var_same)
    ]
    names = ("rms2", "var", "mean2")
    numbers = {f"{n}_before": v for n, v in zip(names, before, strict=True)}
    numbers.update({f"{n}_after": v for n, v in zip(names, after, strict=True)})
    numbers["c"] = SHIFT_C
    return StepResult(
        "identity",
        correct,
        numbers,
        {"before": np.array(before), "after": np.array(after)},
    )


def _transformed(step_id: str, x_after: np.ndarray, size: float) -> StepResult:
    x = lesson_vector()
    outputs = {}
    for name, norm in (("rms", rms_norm), ("layer", layer_norm)):
        outputs[f"{name}_before"] = norm(x, eps=LESSON_EPS)
        outputs[f"{name}_after"] = norm(x_after, eps=LESSON_EPS)
    change_rms = _max_change(outputs["rms_after"], outputs["rms_before"])
    change_layer = _max_change(outputs["layer_after"], outputs["layer_before"])
    return StepResult(
        step_id,
        _which(change_rms < SAME_TOL, change_layer < SAME_TOL),
        {
            "size": size,
            "change_rms": change_rms,
            "change_layer": change_layer,
            "mean_x": float(np.mean(x)),
            "mean_after": float(np.mean(x_after)),
        },
        {"x": x, "x_after": x_after, **outputs},
    )


def _sweep() -> StepResult:
    x = lesson_vector()
    offsets = np.linspace(-SWEEP_LIMIT, SWEEP_LIMIT, SWEEP_POINTS)
    sweep = shift_sweep(x, offsets, eps=LESSON_EPS)
    far = rms_norm(x + SWEEP_LIMIT, eps=LESSON_EPS)
    energy_far = float(sweep["rms_energy_along_ones"][-1])
    cos_far = float(sweep["rms_cosine"][-1])
    if energy_far > ALONG_ONES:
        correct = "B"
    elif cos_far > ALONG_ONES:
        correct = "A"
    else:
        correct = "C"
    return StepResult(
        "sweep",
        correct,
        {
            "c_max": SWEEP_LIMIT,
            "energy_far": energy_far,
            "cos_far": cos_far,
            "layer_cos_min": float(np.min(sweep["layer_cosine"])),
            "spread_far": float(np.max(far) - np.min(far)),
            "energy_x": float(sweep["rms_energy_along_ones"][SWEEP_POINTS // 2]),
        },
        {k: np.asarray(v) for k, v in sweep.items()},
    )


def _plane() -> StepResult:
    x = lesson_vector()
    p = plane_images(x, eps_rms=LESSON_EPS, eps_layer=LESSON_EPS)
    angle_x = math.atan2(p.point[1], p.point[0])
    angle_rms = math.atan2(p.rms[1], p.rms[0])
    layer_on_axis = abs(p.layer[0]) < SAME_TOL * p.radius
    rms_on_ray = abs(angle_rms - angle_x) < SAME_TOL
    # Options: A the same point, B LayerNorm on the axis and RMSNorm on x's ray, C elsewhere.
    if np.allclose(p.rms, p.layer, rtol=0, atol=SAME_TOL * p.radius):
        correct = "A"
    elif layer_on_axis and rms_on_ray:
        correct = "B"
    else:
        correct = "C"
    return StepResult(
        "plane",
        correct,
        {
            "x_a": p.point[0],
            "x_b": p.point[1],
            "rms_a": p.rms[0],
            "rms_b": p.rms[1],
            "layer_a": p.layer[0],
            "layer_b": p.layer[1],
            "radius": p.radius,
            "angle_x": math.degrees(angle_x),
            "angle_rms": math.degrees(angle_rms),
        },
        {"point": np.array(p.point), "rms": np.array(p.rms), "layer": np.array(p.layer)},
    )


def _table() -> StepResult:
    rows = invariance_table(
        seed=LESSON_SEED, n=TABLE_CASES, m=TABLE_INPUTS, d=TABLE_UNITS, tol=TABLE_TOL
    )
    asked = next(r for r in rows if r.id == "weight_matrix_recenter")
    return StepResult(
        "table",
        _which(asked.rms_invariant, asked.layer_invariant),
        {
            "asked_rms": asked.rms_residual,
            "asked_layer": asked.layer_residual,
            "cases": TABLE_CASES,
            "inputs": TABLE_INPUTS,
            "units": TABLE_UNITS,
            "tol": TABLE_TOL,
        },
        {
            "rms": np.array([r.rms_residual for r in rows]),
            "layer": np.array([r.layer_residual for r in rows]),
        },
        [
            {
                "id": r.id,
                "rms_residual": r.rms_residual,
                "layer_residual": r.layer_residual,
                "rms_invariant": r.rms_invariant,
                "layer_invariant": r.layer_invariant,
                "paper_rms": r.paper_rms,
                "paper_layer": r.paper_layer,
                "in_paper": TRANSFORMS[r.id].in_paper,
            }
            for r in rows
        ],
    )


def _eps() -> StepResult:
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
    return StepResult(
        "eps",
        "B" if gap > VISIBLE_CHANGE else "A",
        {
            "eps": LESSON_EPS,
            "rms_x": vector_stats(x).rms,
            "mean_square_x": vector_stats(x).second_moment,
            "out_inside": out_rms["inside"],
            "out_outside": out_rms["outside"],
            "out_clamp": out_rms["clamp"],
            "gap_percent": 100.0 * gap,
            "visible_percent": 100.0 * VISIBLE_CHANGE,
        },
        {"input_rms": EPS_CURVE_SCALES * vector_stats(base).rms, **curves},
    )


def _precision() -> StepResult:
    x = make_input(PRECISION_WIDTH, seed=LESSON_SEED, offset=PRECISION_OFFSET).astype(np.float32)
    low = rms_norm(x, eps=LESSON_EPS, reduction_dtype="float32")
    high = rms_norm(x, eps=LESSON_EPS, reduction_dtype="float64")
    # Distance in float32 units in the last place of the float64-reduced (more exact) result.
    ulps = np.rint(np.abs(low.astype(np.float64) - high) / np.spacing(high)).astype(np.int64)
    n_diff = int(np.count_nonzero(ulps))
    worst = int(np.max(ulps))
    if n_diff == 0:
        correct = "A"
    else:
        correct = "B" if worst <= ULP_LIMIT else "C"
    counts = np.bincount(ulps)
    return StepResult(
        "precision",
        correct,
        {
            "d": PRECISION_WIDTH,
            "n_diff": n_diff,
            "n_same": PRECISION_WIDTH - n_diff,
            "worst_ulps": worst,
            "max_rel": float(np.max(np.abs(low.astype(np.float64) - high) / np.abs(high))),
            "mean_x": float(np.mean(x)),
        },
        {"ulps": np.arange(counts.size), "counts": counts},
    )


def _gain() -> StepResult:
    x = lesson_vector()
    # A freshly initialised zero-centred checkpoint stores w = 0, meaning gain 1 + w = 1.
    stored = np.zeros(LESSON_WIDTH)
    meant = rms_norm(x, stored, eps=LESSON_EPS, gain_mode="offset")
    loaded = rms_norm(x, stored, eps=LESSON_EPS, gain_mode="direct")
    # Options: A the intended output, B zeros, C some other output.
    if np.allclose(loaded, meant, rtol=0, atol=SAME_TOL):
        correct = "A"
    elif np.allclose(loaded, 0.0, rtol=0, atol=SAME_TOL):
        correct = "B"
    else:
        correct = "C"
    return StepResult(
        "gain",
        correct,
        {
            "rms_meant": vector_stats(meant).rms,
            "rms_loaded": vector_stats(loaded).rms,
            "change": _max_change(loaded, meant),
        },
        {"x": x, "meant": meant, "loaded": loaded},
    )


def lesson_step(step_id: str) -> StepResult:
    """Run the computation behind step ``step_id`` (one of ``STEP_IDS``)."""
    if step_id not in STEP_IDS:
        raise ValueError(f"step_id must be one of {', '.join(STEP_IDS)}; got {step_id!r}")
    if step_id == "rescale":
        return _transformed("rescale", RESCALE_FACTOR * lesson_vector(), RESCALE_FACTOR)
    if step_id == "shift":
        return _transformed("shift", lesson_vector() + SHIFT_C, SHIFT_C)
    builders = {
        "centre": _centre,
        "identity": _identity,
        "sweep": _sweep,
        "plane": _plane,
        "table": _table,
        "eps": _eps,
        "precision": _precision,
        "gain": _gain,
    }
    return builders[step_id]()
