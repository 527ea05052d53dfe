"""The guided lesson's steps about what each norm ignores: the centre, the second-moment identity,
rescaling, shifting along 1, the plane picture, recentring and Table 1."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from core.geometry import plane_images
from core.norms import layer_norm, rms_norm
from core.stats import second_moment_identity, vector_stats
from labkit.claims import Claim
from labs.invariance.model import shift_sweep
from labs.invariance.table import (
    TABLE_TOL,
    TRANSFORMS,
    invariance_table,
    output_change,
    transformed_setup,
)
from labs.lesson.example import (
    LESSON_EPS,
    LESSON_SEED,
    LESSON_WIDTH,
    SAME_TOL,
    Measured,
    lesson_vector,
    max_change,
    which_unchanged,
)

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
# What the page reads of each row of the invariance table.
TABLE_FIELDS = ("id", "rms_invariant", "layer_invariant", "paper_rms", "paper_layer")


def _matching(candidates: dict[str, float], measured: float, tol: float) -> str | None:
    """The first option whose value is within ``tol`` of ``measured``."""
    return next((k for k, v in candidates.items() if abs(v - measured) <= tol), None)


def _centre() -> Measured:
    x = lesson_vector()
    y_rms, y_layer = rms_norm(x, eps=LESSON_EPS), layer_norm(x, eps=LESSON_EPS)
    sx = vector_stats(x)
    mean_rms = float(np.mean(y_rms))
    ratio = sx.mean / sx.rms
    options = {"zero": 0.0, "ratio": ratio, "mean": sx.mean, "one": 1.0}
    numbers = {"d": LESSON_WIDTH, "mean_x": sx.mean, "rms_x": sx.rms}
    numbers |= {"std_x": math.sqrt(sx.variance), "ratio": ratio, "mean_rms": mean_rms}
    numbers |= {"mean_layer": float(np.mean(y_layer)), "rms_rms": vector_stats(y_rms).rms}
    numbers |= {"rms_layer": vector_stats(y_layer).rms, "eps": LESSON_EPS}
    return Measured(
        _matching(options, mean_rms, SAME_TOL),
        numbers,
        {"x": x, "y_rms": y_rms, "y_layer": y_layer},
    )


def _identity() -> Measured:
    x = lesson_vector()
    before = second_moment_identity(x)
    after = second_moment_identity(x + SHIFT_C)
    rms2_same = math.isclose(before[0], after[0], rel_tol=SAME_TOL)
    var_same = math.isclose(before[1], after[1], rel_tol=SAME_TOL)
    # Options: which of RMS^2 and Var changes (only rms2, only var, both or neither).
    changed = {(False, True): "rms2", (True, False): "var", (False, False): "both"}
    correct = changed.get((rms2_same, var_same), "neither")
    names = ("rms2", "var", "mean2")
    numbers = {f"{n}_before": v for n, v in zip(names, before, strict=True)}
    numbers.update({f"{n}_after": v for n, v in zip(names, after, strict=True)})
    numbers["c"] = SHIFT_C
    return Measured(correct, numbers, {"before": np.array(before), "after": np.array(after)})


def _pair(x: np.ndarray, x_after: np.ndarray, eps: float = LESSON_EPS) -> dict[str, np.ndarray]:
    """Both norms of x and of the changed x: ``rms_before``, ``rms_after``, ``layer_*``."""
    out = {}
    for name, norm in (("rms", rms_norm), ("layer", layer_norm)):
        out[f"{name}_before"], out[f"{name}_after"] = norm(x, eps=eps), norm(x_after, eps=eps)
    return out


def _transformed(x_after: np.ndarray, size: float) -> Measured:
    x = lesson_vector()
    outputs = _pair(x, x_after)
    change_rms = max_change(outputs["rms_after"], outputs["rms_before"])
    change_layer = max_change(outputs["layer_after"], outputs["layer_before"])
    numbers = {"size": size, "change_rms": change_rms, "change_layer": change_layer}
    numbers |= {"mean_x": float(np.mean(x)), "mean_after": float(np.mean(x_after))}
    numbers["eps"] = LESSON_EPS
    return Measured(
        which_unchanged(change_rms < SAME_TOL, change_layer < SAME_TOL),
        numbers,
        {"x": x, "x_after": x_after, **outputs},
    )


def coordinate_scale() -> np.ndarray:
    """The per-coordinate scale s of the scales step: log-uniform in ``COORD_SCALE``, (8,)."""
    lo, hi = np.log(COORD_SCALE)
    return np.exp(np.random.default_rng([LESSON_SEED, 2]).uniform(lo, hi, LESSON_WIDTH))


def _scales() -> Measured:
    x, s = lesson_vector(), coordinate_scale()
    neg, coord = _pair(x, NEGATIVE_FACTOR * x), _pair(x, s * x)
    numbers = {"factor": NEGATIVE_FACTOR, "s_min": float(s.min()), "s_max": float(s.max())}
    for name in ("rms", "layer"):
        before = neg[f"{name}_before"]
        numbers[f"neg_change_{name}"] = max_change(neg[f"{name}_after"], before)
        numbers[f"flip_{name}"] = float(np.max(np.abs(neg[f"{name}_after"] + before)))
        numbers[f"coord_change_{name}"] = max_change(coord[f"{name}_after"], before)
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
    return Measured(table.get((effect, tuple(coord_cancel))), numbers, {"s": s, **arrays})


def _sweep() -> Measured:
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
    numbers = {"c_max": SWEEP_LIMIT, "energy_far": energy_far, "cos_far": cos_far}
    numbers["layer_cos_min"] = float(np.min(sweep["layer_cosine"]))
    numbers["spread_far"] = float(np.std(far))
    numbers["spread_x"] = float(np.std(rms_norm(x, eps=LESSON_EPS)))
    numbers["energy_x"] = float(sweep["rms_energy_along_ones"][SWEEP_POINTS // 2])
    return Measured(correct, numbers, {k: np.asarray(v) for k, v in sweep.items()})


def _angle_from_ones(point: tuple[float, float]) -> float:
    """Degrees between a point (a, b) of the plane and the ones direction (the a axis)."""
    return math.degrees(math.atan2(point[1], point[0]))


def _plane() -> Measured:
    p = plane_images(lesson_vector(), eps_rms=LESSON_EPS, eps_layer=LESSON_EPS)
    angle_x, angle_rms, angle_layer = (_angle_from_ones(q) for q in (p.point, p.rms, p.layer))
    # Options: both at 90° (square to 1), one on x's angle and the other at 90°, or both on x's.
    on_x = [abs(a - angle_x) < ANGLE_TOL for a in (angle_rms, angle_layer)]
    square = [abs(a - 90.0) < ANGLE_TOL for a in (angle_rms, angle_layer)]
    table = {
        (False, False, True, True): "both_square",
        (True, False, False, True): "rms_on_x",
        (False, True, True, False): "layer_on_x",
        (True, True, False, False): "both_on_x",
    }
    numbers = {"x_a": p.point[0], "x_b": p.point[1], "rms_a": p.rms[0], "rms_b": p.rms[1]}
    numbers |= {"layer_a": p.layer[0], "layer_b": p.layer[1], "radius": p.radius}
    numbers |= {"angle_x": angle_x, "angle_rms": angle_rms, "angle_layer": angle_layer}
    numbers |= {"len_rms": math.hypot(*p.rms), "len_layer": math.hypot(*p.layer)}
    return Measured(
        table.get((*on_x, *square)),
        numbers,
        {"point": np.array(p.point), "rms": np.array(p.rms), "layer": np.array(p.layer)},
    )


def _recenter() -> Measured:
    before, after = transformed_setup("dataset_recenter", size=1.0, seed=LESSON_SEED)
    change = output_change(before, after, eps=0.0)  # per case, (n,) each
    shift = after.preactivations()[0] - before.preactivations()[0]  # W gamma, the same per case
    case = int(np.argmax(change["rms"] + change["layer"]))
    a_before, a_after = before.preactivations()[case], after.preactivations()[case]
    cos_ones = float(np.sum(shift) / (np.linalg.norm(shift) * math.sqrt(shift.size)))
    numbers = {"case": case, "res_rms": float(np.max(change["rms"]))}
    numbers |= {"res_layer": float(np.max(change["layer"])), "shift_mean": float(np.mean(shift))}
    numbers["shift_spread"] = float(np.std(shift))
    numbers["shift_angle"] = math.degrees(math.acos(min(1.0, abs(cos_ones))))
    return Measured(
        which_unchanged(np.max(change["rms"]) < TABLE_TOL, np.max(change["layer"]) < TABLE_TOL),
        numbers,
        {"shift": shift, **_pair(a_before, a_after, eps=0.0)},  # eps = 0, as the paper's table
    )


def _table() -> Measured:
    rows = invariance_table(seed=LESSON_SEED)
    asked = next(r for r in rows if r.id == "weight_matrix_recenter")
    in_paper = [r for r in rows if r.matches_paper is not None]
    # The explanation reads a pattern off every row: it holds only if every row is as algebra says.
    pattern = all(
        (r.layer_invariant, r.rms_invariant)
        == (TRANSFORMS[r.id].layer_invariant, TRANSFORMS[r.id].rms_invariant)
        for r in rows
    )
    other = {} if pattern else {"explain": Claim("lesson.explain_other", {})}
    numbers = {"asked_rms": asked.rms_residual, "asked_layer": asked.layer_residual, "cases": 16}
    numbers |= {"inputs": 8, "units": 8, "tol": TABLE_TOL}
    numbers |= {"agree": sum(bool(r.matches_paper) for r in in_paper), "total": len(in_paper)}
    return Measured(
        which_unchanged(asked.rms_invariant, asked.layer_invariant),
        numbers,
        {n: np.array([getattr(r, f"{n}_residual") for r in rows]) for n in ("rms", "layer")},
        [
            {k: getattr(r, k) for k in TABLE_FIELDS} | {"in_paper": TRANSFORMS[r.id].in_paper}
            for r in rows
        ],
        other,
    )


# The steps this module computes, by id.
GEOMETRY_STEPS: dict[str, Callable[[], Measured]] = {
    "centre": _centre,
    "identity": _identity,
    "rescale": lambda: _transformed(RESCALE_FACTOR * lesson_vector(), RESCALE_FACTOR),
    "scales": _scales,
    "shift": lambda: _transformed(lesson_vector() + SHIFT_C, SHIFT_C),
    "sweep": _sweep,
    "plane": _plane,
    "recenter": _recenter,
    "table": _table,
}
