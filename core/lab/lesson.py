"""The guided lesson's numbers: one worked example per step, and the answer the numbers make true.

Each step asks the reader to predict how RMSNorm and LayerNorm behave, then reveals the
computation that settles it. ``lesson_step(step_id)`` runs that computation with the rest of
``core`` and returns the step's options in the order they are shown (``options``; the letter of an
option is its position), the numbers the page quotes, the arrays its figure draws, ``correct``
(the option whose statement the measured numbers make true, None if none does) and the claims the
page shows: the answer, the figure's caption and the explanation. The answer key is a measurement,
so a change in the norms that broke a claim would change what the page says.

Most steps use the same seeded vector ``lesson_vector()``: width 8, standard-normal draws plus
a common offset, so that its mean is plainly not zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS, EPS_LADDER
from core.geometry import plane_images
from core.inputs import make_input
from core.jacobian import layer_norm_jacobian, rms_norm_jacobian
from core.lab.claims import Claim, pick
from core.lab.invariance import shift_sweep
from core.lab.invariance_table import (
    TABLE_TOL,
    TRANSFORMS,
    invariance_table,
    output_change,
    transformed_setup,
)
from core.lab.residual import residual_view
from core.norms import layer_norm, rms_norm
from core.stats import second_moment_identity, vector_stats

__all__ = [
    "EXPLAINED",
    "LESSON_EPS",
    "LETTERS",
    "MOST_PER_LETTER",
    "OPTIONS",
    "STEP_IDS",
    "StepResult",
    "lesson_step",
    "lesson_vector",
    "letter",
]

STEP_IDS: tuple[str, ...] = (
    "centre",
    "identity",
    "rescale",
    "scales",
    "shift",
    "sweep",
    "plane",
    "recenter",
    "table",
    "eps",
    "precision",
    "gradient",
    "residual",
    "gain",
)

# Every step's options, by id, in the order the page shows them: the letter a reader sees is the
# position (A, B, C, D). The order is fixed per step, so a link, a class and a printout all name
# the same letter, and it spreads the answers the numbers give over the letters: no letter is
# right in more than MOST_PER_LETTER steps, so a reader who always picks one letter learns nothing.
# "Which norm ignores the change?" steps share the ids both / rms / layer / neither.
OPTIONS: dict[str, tuple[str, ...]] = {
    "centre": ("zero", "one", "mean", "ratio"),
    "identity": ("var", "rms2", "both", "neither"),
    "rescale": ("rms", "layer", "both", "neither"),
    "scales": ("keep_cancel", "keep_move", "flip_move", "flip_cancel"),
    "shift": ("layer", "rms", "both", "neither"),
    "sweep": ("back", "zero", "ones"),
    "plane": ("both_square", "layer_on_x", "both_on_x", "rms_on_x"),
    "recenter": ("both", "neither", "rms", "layer"),
    "table": ("rms", "both", "neither", "layer"),
    "eps": ("yes", "no"),
    "precision": ("identical", "ulps", "visible"),
    "gradient": ("layer", "neither", "both", "rms"),
    "residual": ("rms", "layer", "alike", "apart"),
    "gain": ("nearly", "shorter", "flipped"),
}
LETTERS = "ABCD"
MOST_PER_LETTER = 5
# The option each step's explanation is written for. Where the numbers make another option true,
# the page shows ``lesson.explain_other`` instead of an explanation that would then be false.
EXPLAINED: dict[str, str] = {
    "centre": "ratio",
    "identity": "rms2",
    "rescale": "both",
    "scales": "flip_move",
    "shift": "layer",
    "sweep": "ones",
    "plane": "rms_on_x",
    "recenter": "neither",
    "table": "layer",
    "eps": "yes",
    "precision": "ulps",
    "gradient": "layer",
    "residual": "rms",
    "gain": "flipped",
}


def letter(step_id: str, option: str) -> str:
    """The letter option ``option`` of step ``step_id`` is shown under."""
    return LETTERS[OPTIONS[step_id].index(option)]


# Eight coordinates: each one stays readable in a figure and in the prose.
LESSON_WIDTH = 8
LESSON_SEED = 3
# A common offset about as large as the spread of the draws: the mean is then as visible as the
# pattern around it, which is exactly the part the two norms treat differently.
LESSON_OFFSET = 1.5
# The usual RMSNorm eps (Llama, T5, Gemma configs). Used by both norms so that they differ only
# in the centring.
LESSON_EPS = DEFAULT_RMS_EPS
# float64 rounding leaves about 1e-16 on unit-size numbers; a shown number below this reads "≈ 0".
NOISE = 1e-12

# A change below this (largest coordinate change of a unit-RMS output, or relative change of a
# statistic) counts as "unchanged". It sits far above what eps = 1e-6 moves under a rescale
# (about 1e-6 here) and far below a real change (0.1 or more at these sizes).
SAME_TOL = 1e-4

RESCALE_FACTOR = 10.0
NEGATIVE_FACTOR = -10.0
# The per-coordinate scale draws each factor log-uniformly between these.
COORD_SCALE = (0.5, 2.0)
SHIFT_C = 3.0
# The sweep's largest |c|: about 30 times the spread of x, where RMSNorm's output has turned
# almost entirely onto the ones direction.
SWEEP_LIMIT = 50.0
SWEEP_POINTS = 201
# "Almost entirely": the share of the output's energy along 1 that counts as pointing along it.
ALONG_ONES = 0.99
# Angles (degrees) that agree to this are the same angle.
ANGLE_TOL = 1e-6

# Shrinks x to RMS about 1.5e-3, where mean(x^2) is about 2e-6: comparable to eps = 1e-6, so
# where eps sits decides the output.
TINY_SCALE = 1e-3
# Input RMS values for the eps-placement curves: from far below sqrt(eps) to far above it.
EPS_CURVE_SCALES = np.logspace(-5, 1, 121)
EPS_PLACEMENTS = ("inside", "outside", "clamp")
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


@dataclass(frozen=True)
class StepResult:
    """What one lesson step shows.

    ``options`` are the option ids in the order they are shown, the first under the letter A;
    ``correct`` is the option id whose statement the numbers make true (None: no option is);
    ``numbers`` are plain floats the question, the options and the alt text quote; ``arrays`` are
    what the figure draws; ``rows`` are table rows; ``claims`` are the sentences that state facts
    about the numbers (slots ``answer``, ``caption``, ``explain`` and step-specific ones).
    """

    step_id: str
    options: tuple[str, ...]
    correct: str | None
    numbers: dict[str, float]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    rows: list[dict[str, object]] = field(default_factory=list)
    claims: dict[str, Claim] = field(default_factory=dict)

    def letter(self, option: str) -> str:
        """The letter ``option`` is shown under."""
        return LETTERS[self.options.index(option)]


@dataclass(frozen=True)
class _Measured:
    correct: str | None
    numbers: dict[str, float]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    rows: list[dict[str, object]] = field(default_factory=list)
    claims: dict[str, Claim] = field(default_factory=dict)


def lesson_vector() -> np.ndarray:
    """The lesson's x, shape (8,): seeded standard-normal draws plus the offset 1.5."""
    return make_input(LESSON_WIDTH, seed=LESSON_SEED, offset=LESSON_OFFSET)


def _which(rms_same: bool, layer_same: bool) -> str:
    """The shared options: which norm's output is unchanged (both, rms, layer or neither)."""
    if rms_same and layer_same:
        return "both"
    if rms_same:
        return "rms"
    if layer_same:
        return "layer"
    return "neither"


def _max_change(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)))


def _matching(candidates: dict[str, float], measured: float, tol: float) -> str | None:
    """The first option whose value is within ``tol`` of ``measured``."""
    return next((k for k, v in candidates.items() if abs(v - measured) <= tol), None)


def _centre() -> _Measured:
    x = lesson_vector()
    y_rms, y_layer = rms_norm(x, eps=LESSON_EPS), layer_norm(x, eps=LESSON_EPS)
    sx = vector_stats(x)
    mean_rms = float(np.mean(y_rms))
    ratio = sx.mean / sx.rms
    options = {"zero": 0.0, "ratio": ratio, "mean": sx.mean, "one": 1.0}
    return _Measured(
        _matching(options, mean_rms, SAME_TOL),
        {
            "d": LESSON_WIDTH,
            "mean_x": sx.mean,
            "rms_x": sx.rms,
            "std_x": math.sqrt(sx.variance),
            "ratio": ratio,
            "mean_rms": mean_rms,
            "mean_layer": float(np.mean(y_layer)),
            "rms_rms": vector_stats(y_rms).rms,
            "rms_layer": vector_stats(y_layer).rms,
            "eps": LESSON_EPS,
        },
        {"x": x, "y_rms": y_rms, "y_layer": y_layer},
    )


def _identity() -> _Measured:
    x = lesson_vector()
    before = second_moment_identity(x)
    after = second_moment_identity(x + SHIFT_C)
    rms2_same = math.isclose(before[0], after[0], rel_tol=SAME_TOL)
    var_same = math.isclose(before[1], after[1], rel_tol=SAME_TOL)
    # Options: which of RMS^2 and Var changes (only rms2, only var, both or neither).
    correct = {
        (False, True): "rms2",
        (True, False): "var",
        (False, False): "both",
        (True, True): "neither",
    }[(rms2_same, var_same)]
    names = ("rms2", "var", "mean2")
    numbers = {f"{n}_before": v for n, v in zip(names, before, strict=True)}
    numbers.update({f"{n}_after": v for n, v in zip(names, after, strict=True)})
    numbers["c"] = SHIFT_C
    return _Measured(correct, numbers, {"before": np.array(before), "after": np.array(after)})


def _pair(x: np.ndarray, x_after: np.ndarray) -> dict[str, np.ndarray]:
    """Both norms of x and of the changed x: ``rms_before``, ``rms_after``, ``layer_*``."""
    out = {}
    for name, norm in (("rms", rms_norm), ("layer", layer_norm)):
        out[f"{name}_before"] = norm(x, eps=LESSON_EPS)
        out[f"{name}_after"] = norm(x_after, eps=LESSON_EPS)
    return out


def _transformed(x_after: np.ndarray, size: float) -> _Measured:
    x = lesson_vector()
    outputs = _pair(x, x_after)
    change_rms = _max_change(outputs["rms_after"], outputs["rms_before"])
    change_layer = _max_change(outputs["layer_after"], outputs["layer_before"])
    return _Measured(
        _which(change_rms < SAME_TOL, change_layer < SAME_TOL),
        {
            "size": size,
            "change_rms": change_rms,
            "change_layer": change_layer,
            "mean_x": float(np.mean(x)),
            "mean_after": float(np.mean(x_after)),
            "eps": LESSON_EPS,
        },
        {"x": x, "x_after": x_after, **outputs},
    )


def coordinate_scale() -> np.ndarray:
    """The per-coordinate scale s of the scales step: log-uniform in ``COORD_SCALE``, (8,)."""
    lo, hi = np.log(COORD_SCALE)
    return np.exp(np.random.default_rng([LESSON_SEED, 2]).uniform(lo, hi, LESSON_WIDTH))


def _scales() -> _Measured:
    x, s = lesson_vector(), coordinate_scale()
    neg, coord = _pair(x, NEGATIVE_FACTOR * x), _pair(x, s * x)
    numbers = {"factor": NEGATIVE_FACTOR, "s_min": float(s.min()), "s_max": float(s.max())}
    for name in ("rms", "layer"):
        before = neg[f"{name}_before"]
        numbers[f"neg_change_{name}"] = _max_change(neg[f"{name}_after"], before)
        numbers[f"flip_{name}"] = float(np.max(np.abs(neg[f"{name}_after"] + before)))
        numbers[f"coord_change_{name}"] = _max_change(coord[f"{name}_after"], before)
    flips = max(numbers["flip_rms"], numbers["flip_layer"]) < SAME_TOL
    cancels = max(numbers["neg_change_rms"], numbers["neg_change_layer"]) < SAME_TOL
    coord_cancel = [numbers[f"coord_change_{n}"] < SAME_TOL for n in ("rms", "layer")]
    # Options: (what -10 does to both outputs, whether both or neither cancel s).
    table = {
        ("cancel", (True, True)): "keep_cancel",
        ("flip", (False, False)): "flip_move",
        ("cancel", (False, False)): "keep_move",
        ("flip", (True, True)): "flip_cancel",
    }
    effect = "flip" if flips else ("cancel" if cancels else "other")
    arrays = {f"neg_{k}": v for k, v in neg.items()} | {f"coord_{k}": v for k, v in coord.items()}
    return _Measured(table.get((effect, tuple(coord_cancel))), numbers, {"s": s, **arrays})


def _sweep() -> _Measured:
    x = lesson_vector()
    offsets = np.linspace(-SWEEP_LIMIT, SWEEP_LIMIT, SWEEP_POINTS)
    sweep = shift_sweep(x, offsets, eps=LESSON_EPS)
    far = rms_norm(x + SWEEP_LIMIT, eps=LESSON_EPS)
    energy_far = float(sweep["rms_energy_along_ones"][-1])
    cos_far = float(sweep["rms_cosine"][-1])
    if energy_far > ALONG_ONES:
        correct = "ones"
    elif cos_far > ALONG_ONES:
        correct = "back"
    else:
        correct = "zero" if vector_stats(far).rms < 1 - ALONG_ONES else None
    return _Measured(
        correct,
        {
            "c_max": SWEEP_LIMIT,
            "energy_far": energy_far,
            "cos_far": cos_far,
            "layer_cos_min": float(np.min(sweep["layer_cosine"])),
            "spread_far": float(np.std(far)),
            "spread_x": float(np.std(rms_norm(x, eps=LESSON_EPS))),
            "energy_x": float(sweep["rms_energy_along_ones"][SWEEP_POINTS // 2]),
        },
        {k: np.asarray(v) for k, v in sweep.items()},
    )


def _angle_from_ones(point: tuple[float, float]) -> float:
    """Degrees between a point (a, b) of the plane and the ones direction (the a axis)."""
    return math.degrees(math.atan2(point[1], point[0]))


def _plane() -> _Measured:
    p = plane_images(lesson_vector(), eps_rms=LESSON_EPS, eps_layer=LESSON_EPS)
    angle_x, angle_rms, angle_layer = (_angle_from_ones(q) for q in (p.point, p.rms, p.layer))
    # Options: both at 90° (square to 1), one of them on x's angle and the other at 90°, or both
    # on x's angle.
    on_x = [abs(a - angle_x) < ANGLE_TOL for a in (angle_rms, angle_layer)]
    square = [abs(a - 90.0) < ANGLE_TOL for a in (angle_rms, angle_layer)]
    table = {
        (False, False, True, True): "both_square",
        (True, False, False, True): "rms_on_x",
        (False, True, True, False): "layer_on_x",
        (True, True, False, False): "both_on_x",
    }
    return _Measured(
        table.get((*on_x, *square)),
        {
            "x_a": p.point[0],
            "x_b": p.point[1],
            "rms_a": p.rms[0],
            "rms_b": p.rms[1],
            "layer_a": p.layer[0],
            "layer_b": p.layer[1],
            "radius": p.radius,
            "angle_x": angle_x,
            "angle_rms": angle_rms,
            "angle_layer": angle_layer,
            "len_rms": math.hypot(*p.rms),
            "len_layer": math.hypot(*p.layer),
        },
        {"point": np.array(p.point), "rms": np.array(p.rms), "layer": np.array(p.layer)},
    )


def _recenter() -> _Measured:
    before, after = transformed_setup("dataset_recenter", size=1.0, seed=LESSON_SEED)
    change = output_change(before, after, eps=0.0)  # per case, (n,) each
    shift = after.preactivations()[0] - before.preactivations()[0]  # W gamma, the same per case
    case = int(np.argmax(change["rms"] + change["layer"]))
    a_before, a_after = before.preactivations()[case], after.preactivations()[case]
    cos_ones = float(np.sum(shift) / (np.linalg.norm(shift) * math.sqrt(shift.size)))
    return _Measured(
        _which(np.max(change["rms"]) < TABLE_TOL, np.max(change["layer"]) < TABLE_TOL),
        {
            "case": case,
            "res_rms": float(np.max(change["rms"])),
            "res_layer": float(np.max(change["layer"])),
            "shift_mean": float(np.mean(shift)),
            "shift_spread": float(np.std(shift)),
            "shift_angle": math.degrees(math.acos(min(1.0, abs(cos_ones)))),
        },
        {"shift": shift, **_pair_exact(a_before, a_after)},
    )


def _pair_exact(a: np.ndarray, a_after: np.ndarray) -> dict[str, np.ndarray]:
    """Both norms (eps = 0, as in the paper's table) of a pre-activation before and after."""
    out = {}
    for name, norm in (("rms", rms_norm), ("layer", layer_norm)):
        out[f"{name}_before"], out[f"{name}_after"] = norm(a, eps=0.0), norm(a_after, eps=0.0)
    return out


def _table() -> _Measured:
    rows = invariance_table(seed=LESSON_SEED)
    asked = next(r for r in rows if r.id == "weight_matrix_recenter")
    in_paper = [r for r in rows if r.matches_paper is not None]
    # The explanation reads a pattern off every row; it holds only where every row is as the
    # algebra says.
    pattern = all(
        (r.layer_invariant, r.rms_invariant)
        == (TRANSFORMS[r.id].layer_invariant, TRANSFORMS[r.id].rms_invariant)
        for r in rows
    )
    other = {} if pattern else {"explain": Claim("lesson.explain_other", {})}
    return _Measured(
        _which(asked.rms_invariant, asked.layer_invariant),
        {
            "asked_rms": asked.rms_residual,
            "asked_layer": asked.layer_residual,
            "cases": 16,
            "inputs": 8,
            "units": 8,
            "tol": TABLE_TOL,
            "agree": sum(bool(r.matches_paper) for r in in_paper),
            "total": len(in_paper),
        },
        {
            "rms": np.array([r.rms_residual for r in rows]),
            "layer": np.array([r.layer_residual for r in rows]),
        },
        [
            {
                "id": r.id,
                "rms_invariant": r.rms_invariant,
                "layer_invariant": r.layer_invariant,
                "paper_rms": r.paper_rms,
                "paper_layer": r.paper_layer,
                "in_paper": TRANSFORMS[r.id].in_paper,
            }
            for r in rows
        ],
        other,
    )


def _eps() -> _Measured:
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
    return _Measured(
        "yes" if gap > VISIBLE_CHANGE else "no",
        {
            "eps": LESSON_EPS,
            "rms_x": vector_stats(x).rms,
            "mean_square_x": vector_stats(x).second_moment,
            "out_inside": out_rms["inside"],
            "out_outside": out_rms["outside"],
            "out_clamp": out_rms["clamp"],
            "gap_pct": gap,
            "visible_pct": VISIBLE_CHANGE,
        },
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
    - ``exact``: every step in float64, rounded to float32 once at the end.
    """
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


def _precision() -> _Measured:
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
    same_reduction = bool(y["mean_square"][0] == y["mean_square"][1])
    counts = np.bincount(ulps["divide"])
    numbers = {
        "d": PRECISION_WIDTH,
        "n_diff": n_diff,
        "n_same": PRECISION_WIDTH - n_diff,
        "n_diff_mul": int(np.count_nonzero(ulps["multiply"])),
        "worst_ulps": worst,
        "max_rel": max_rel,
        "mean_x": float(np.mean(x)),
        "visible_pct": VISIBLE_CHANGE,
    }
    reduction = pick(
        same_reduction,
        "lesson.precision_reduction_exact",
        "lesson.precision_reduction_rounds",
        mean_square=float(y["mean_square"][0]),
    )
    return _Measured(
        correct,
        numbers,
        {"ulps": np.arange(counts.size), "counts": counts},
        claims={"detail": reduction},
    )


def upstream_gradient() -> np.ndarray:
    """The gradient step's g = dL/dy: standard normal, (8,), its own seeded stream."""
    return np.random.default_rng([LESSON_SEED, 1]).standard_normal(LESSON_WIDTH)


def _gradient() -> _Measured:
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
    return _Measured(
        _which(least_rms < NOISE, worst_layer < NOISE),
        {
            "worst_layer": worst_layer,
            "least_rms": least_rms,
            "cos_rms": cos["rms"][EPS_LADDER.index(LESSON_EPS)],
            "eps": LESSON_EPS,
            "eps_max": float(eps_values[-1]),
        },
        {"eps": eps_values, **arrays},
    )


def _residual() -> _Measured:
    view = residual_view(**RESIDUAL_SETTING)
    rms, layer = view.last["rms"]["token_cosine"], view.last["layer"]["token_cosine"]
    if rms - layer >= TOKENS_APART:
        correct = "rms"
    elif layer - rms >= TOKENS_APART:
        correct = "layer"
    else:
        correct = "alike" if min(rms, layer) >= ALIKE_LEVEL else "apart"
    return _Measured(
        correct,
        {
            **{k: float(v) for k, v in RESIDUAL_SETTING.items()},
            "n": view.n,
            "tok_rms": rms,
            "tok_layer": layer,
            "cos_rms": view.last["rms"]["input_cos_ones"],
            "cos_layer": view.last["layer"]["input_cos_ones"],
            "offset_rms": view.last["rms"]["stream_mean"],
            "total": RESIDUAL_SETTING["layers"] * RESIDUAL_SETTING["drift"],
            "apart": TOKENS_APART,
        },
        {"layers": view.layers, **{f"{n}_readings": view.readings[n] for n in ("rms", "layer")}},
    )


def stored_weight() -> np.ndarray:
    """The gain step's stored w: small normal values around 0, (8,), its own seeded stream."""
    return GAIN_SPREAD * np.random.default_rng([LESSON_SEED, 3]).standard_normal(LESSON_WIDTH)


def _gain() -> _Measured:
    x, w = lesson_vector(), stored_weight()
    meant = rms_norm(x, w, eps=LESSON_EPS, gain_mode="offset")  # gain 1 + w
    loaded = rms_norm(x, w, eps=LESSON_EPS, gain_mode="direct")  # gain w
    flips = int(np.count_nonzero(np.sign(loaded) != np.sign(meant)))
    ratio = vector_stats(loaded).rms / vector_stats(meant).rms
    cos = float(np.dot(loaded, meant) / (np.linalg.norm(loaded) * np.linalg.norm(meant)))
    # Options: nearly the same, the same direction only shorter, or much smaller with signs
    # flipped.
    if _max_change(loaded, meant) <= NEARLY * float(np.max(np.abs(meant))):
        correct = "nearly"
    elif cos >= 1 - SAME_TOL:
        correct = "shorter"
    else:
        correct = "flipped" if ratio < 0.5 and flips > 0 else None
    return _Measured(
        correct,
        {
            "w_min": float(w.min()),
            "w_max": float(w.max()),
            "rms_meant": vector_stats(meant).rms,
            "rms_loaded": vector_stats(loaded).rms,
            "ratio": ratio,
            "flips": flips,
            "d": LESSON_WIDTH,
            "negative": int(np.count_nonzero(w < 0)),
        },
        {"x": x, "meant": meant, "loaded": loaded},
    )


_BUILDERS: dict[str, Callable[[], _Measured]] = {
    "centre": _centre,
    "identity": _identity,
    "rescale": lambda: _transformed(RESCALE_FACTOR * lesson_vector(), RESCALE_FACTOR),
    "scales": _scales,
    "shift": lambda: _transformed(lesson_vector() + SHIFT_C, SHIFT_C),
    "sweep": _sweep,
    "plane": _plane,
    "recenter": _recenter,
    "table": _table,
    "eps": _eps,
    "precision": _precision,
    "gradient": _gradient,
    "residual": _residual,
    "gain": _gain,
}


def _claims(step_id: str, m: _Measured) -> dict[str, Claim]:
    """The answer, the caption and the explanation, then the step's own claims."""
    answer = (
        Claim("lesson.answer", {"letter": letter(step_id, m.correct), "option": m.correct})
        if m.correct is not None
        else Claim("lesson.answer_none", {})
    )
    explain = pick(
        m.correct == EXPLAINED[step_id],
        f"lesson.{step_id}_explain",
        "lesson.explain_other",
        noise=NOISE,
        **m.numbers,
    )
    caption = Claim(f"lesson.{step_id}_caption", m.numbers, NOISE)
    return {"answer": answer, "caption": caption, "explain": explain, **m.claims}


def lesson_step(step_id: str) -> StepResult:
    """Run the computation behind step ``step_id`` (one of ``STEP_IDS``)."""
    if step_id not in STEP_IDS:
        raise ValueError(f"step_id must be one of {', '.join(STEP_IDS)}; got {step_id!r}")
    m = _BUILDERS[step_id]()
    claims = _claims(step_id, m)
    return StepResult(step_id, OPTIONS[step_id], m.correct, m.numbers, m.arrays, m.rows, claims)
