"""The guided lesson's sentences, every step rechecked from its documented setting.

Each ``ref_<step>`` rebuilds the step's example from its recipe (the lesson's x is the seed-3
normal draw plus 1.5; other draws come from their own seeded streams) with torch.nn.functional,
autograd or plain float64 numpy, and returns the option its numbers make true with the numbers the
step's texts quote. A claim's fields must match those numbers, its answer the option, and an
explanation is shown only where the option is the one it was written for.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from core.defaults import EPS_LADDER
from labkit.claims import Claim
from labs.lesson.model import lesson_step
from labs.lesson.numerics import EPS_CURVE_SCALES
from labs.lesson.options import EXPLAINED, OPTIONS, STEP_IDS
from tests.claims import oracle
from tests.claims.oracle import (
    check_lines_words,
    check_pair_words,
    check_point_words,
    check_series_words,
    pair_keys,
)

STATES = st.fixed_dictionaries({"step": st.integers(1, len(STEP_IDS))})
EPS = 1e-6
D = 8
SAME = 1e-4  # "unchanged" in the lesson's options: far above eps effects, far below a change
TOL = 1e-9  # the invariance lab's line between rounding and a change
# The option each explanation is written for (what its texts assert): metadata of the texts,
# not a number the core computes.
WRITTEN_FOR = EXPLAINED
# A normalised vector of width 8 has entries of order 1 (its length is sqrt(8)): a number that
# is rounding of such entries is compared in ulps of that size, not relative to itself.
ENTRY = math.sqrt(D)
ROUNDING_LEVEL = {
    "mean_layer": ENTRY,
    "change_layer": ENTRY,
    "change_rms": ENTRY,
    "flip_rms": ENTRY,
    "flip_layer": ENTRY,
    "neg_change_rms": ENTRY,
    "neg_change_layer": ENTRY,
    "coord_change_rms": ENTRY,
    "coord_change_layer": ENTRY,
    "layer_a": ENTRY,
    "rms_b": ENTRY,
    "asked_layer": ENTRY,
    "asked_rms": ENTRY,
    "res_layer": ENTRY,
    "res_rms": ENTRY,
    "worst_layer": 1.0,
    "least_rms": 1.0,
    "cos_layer": 1.0,
    "cos_rms": 1.0,
}


def view(state: dict):
    return lesson_step(STEP_IDS[state["step"] - 1])


def x_lesson() -> np.ndarray:
    return np.random.default_rng(3).standard_normal(D) + 1.5


def rms(a: np.ndarray, eps: float = EPS) -> np.ndarray:
    return oracle.f_norm("rms", a, eps)


def layer(a: np.ndarray, eps: float = EPS) -> np.ndarray:
    return oracle.f_norm("layer", a, eps)


def which(rms_same: bool, layer_same: bool) -> str:
    """The shared options' ids: which norm's output is unchanged."""
    names = {(True, True): "both", (True, False): "rms", (False, True): "layer"}
    return names.get((rms_same, layer_same), "neither")


def cos_ones(v: np.ndarray) -> float:
    return float(np.sum(v) / (np.linalg.norm(v) * math.sqrt(v.size)))


def ref_centre() -> tuple[str | None, dict]:
    x = x_lesson()
    mean, root = np.mean(x), math.sqrt(np.mean(x**2))
    y_rms, y_layer = rms(x), layer(x)
    # The explanation equates sqrt(mean(x^2) + eps) with RMS(x) to four digits.
    assert abs(math.sqrt(np.mean(x**2) + EPS) / root - 1) < 5e-5
    options = {"zero": 0.0, "ratio": mean / root, "mean": mean, "one": 1.0}
    letter = next((k for k, v in options.items() if abs(v - np.mean(y_rms)) <= SAME), None)
    numbers = {"mean_x": mean, "rms_x": root, "std_x": np.std(x), "mean_rms": np.mean(y_rms)}
    numbers.update(mean_layer=np.mean(y_layer), rms_rms=math.sqrt(np.mean(y_rms**2)))
    numbers.update(rms_layer=math.sqrt(np.mean(y_layer**2)), d=D, eps=EPS)
    return letter, numbers


def ref_identity() -> tuple[str | None, dict]:
    x, c = x_lesson(), 3.0
    numbers = {"c": c}
    for when, v in (("before", x), ("after", x + c)):
        numbers[f"rms2_{when}"] = np.mean(v**2)
        numbers[f"var_{when}"] = np.var(v)
        numbers[f"mean2_{when}"] = np.mean(v) ** 2
        # The identity the bars show: RMS^2 = Var + mu^2.
        assert math.isclose(np.mean(v**2), np.var(v) + np.mean(v) ** 2, rel_tol=1e-12)
    moved = [
        not math.isclose(numbers[f"{q}_before"], numbers[f"{q}_after"], rel_tol=SAME)
        for q in ("rms2", "var")
    ]
    names = {(True, False): "rms2", (False, True): "var", (True, True): "both"}
    return names.get(tuple(moved), "neither"), numbers


def _changed(x_after: np.ndarray, size: float) -> tuple[str, dict]:
    x = x_lesson()
    ch = {n: float(np.max(np.abs(f(x_after) - f(x)))) for n, f in (("rms", rms), ("layer", layer))}
    numbers = {"size": size, "change_rms": ch["rms"], "change_layer": ch["layer"]}
    numbers.update(mean_x=np.mean(x), mean_after=np.mean(x_after), eps=EPS)
    return which(ch["rms"] < SAME, ch["layer"] < SAME), numbers


def ref_rescale() -> tuple[str | None, dict]:
    return _changed(10.0 * x_lesson(), 10.0)


def ref_shift() -> tuple[str | None, dict]:
    x = x_lesson()
    # "every coordinate pulled towards the same value": RMSNorm's output spreads less.
    assert np.std(rms(x + 3.0)) < np.std(rms(x))
    return _changed(x + 3.0, 3.0)


def ref_scales() -> tuple[str | None, dict]:
    x = x_lesson()
    s = np.exp(np.random.default_rng([3, 2]).uniform(math.log(0.5), math.log(2.0), D))
    numbers = {"factor": -10.0, "s_min": s.min(), "s_max": s.max()}
    for n, f in (("rms", rms), ("layer", layer)):
        numbers[f"flip_{n}"] = float(np.max(np.abs(f(-10.0 * x) + f(x))))
        numbers[f"neg_change_{n}"] = float(np.max(np.abs(f(-10.0 * x) - f(x))))
        numbers[f"coord_change_{n}"] = float(np.max(np.abs(f(s * x) - f(x))))
    flips = max(numbers["flip_rms"], numbers["flip_layer"]) < SAME
    keeps = max(numbers["neg_change_rms"], numbers["neg_change_layer"]) < SAME
    effect = "flip" if flips else ("keep" if keeps else "other")
    cancelled = sum(numbers[f"coord_change_{n}"] < SAME for n in ("rms", "layer"))
    s_effect = {2: "both", 0: "neither"}.get(cancelled, "one")
    table = {
        ("keep", "both"): "keep_cancel",
        ("flip", "neither"): "flip_move",
        ("keep", "neither"): "keep_move",
        ("flip", "both"): "flip_cancel",
    }
    return table.get((effect, s_effect)), numbers


def ref_sweep() -> tuple[str | None, dict]:
    x, c = x_lesson(), 50.0
    far, plain = rms(x + c), rms(x)
    energy = float(np.sum(far) ** 2 / (D * np.sum(far**2)))
    cos_far = float(far @ plain / (np.linalg.norm(far) * np.linalg.norm(plain)))
    offsets = np.linspace(-c, c, 201)
    shifted, base = layer(x + offsets[:, None]), layer(x)
    cos_layer = shifted @ base / (np.linalg.norm(shifted, axis=-1) * np.linalg.norm(base))
    if energy > 0.99:
        letter = "ones"
    elif cos_far > 0.99:
        letter = "back"
    else:
        letter = "zero" if math.sqrt(np.mean(far**2)) < 0.01 else None
    numbers = {"c_max": c, "energy_far": energy, "cos_far": cos_far}
    numbers.update(layer_cos_min=np.min(cos_layer), spread_far=np.std(far))
    numbers.update(spread_x=np.std(plain), energy_x=cos_ones(x) ** 2)
    return letter, numbers


def plane_point(v: np.ndarray) -> tuple[float, float]:
    """(component along 1, length of the rest), as the plane draws a vector."""
    a = np.sum(v) / math.sqrt(v.size)
    return float(a), float(np.linalg.norm(v - np.mean(v)))


def ref_plane() -> tuple[str | None, dict]:
    x = x_lesson()
    points = {"x": plane_point(x), "rms": plane_point(rms(x)), "layer": plane_point(layer(x))}
    angle = {k: math.degrees(math.atan2(b, a)) for k, (a, b) in points.items()}
    on_x = tuple(abs(angle[k] - angle["x"]) < 1e-6 for k in ("rms", "layer"))
    square = tuple(abs(angle[k] - 90.0) < 1e-6 for k in ("rms", "layer"))
    table = {
        ((False, False), (True, True)): "both_square",
        ((True, False), (False, True)): "rms_on_x",
        ((False, True), (True, False)): "layer_on_x",
        ((True, True), (False, False)): "both_on_x",
    }
    numbers = {"radius": math.sqrt(D)}
    for k, (a, b) in points.items():
        numbers[f"{k}_a"], numbers[f"{k}_b"], numbers[f"angle_{k}"] = a, b, angle[k]
    numbers["len_rms"], numbers["len_layer"] = (math.hypot(*points[k]) for k in ("rms", "layer"))
    return table.get((on_x, square)), numbers


def ref_recenter() -> tuple[str | None, dict]:
    a, a2 = oracle.preactivations(3, "dataset_recenter", 1.0)
    ch = oracle.changes(3, "dataset_recenter", 1.0)
    shift = a2[0] - a[0]
    # The same shift for every case, to the rounding of the preactivations.
    gap = np.max(np.abs(a2 - a - shift))
    assert gap <= oracle.ulps(16, max(np.max(np.abs(a)), np.max(np.abs(a2)))), gap
    numbers = {"res_rms": np.max(ch["rms"]), "res_layer": np.max(ch["layer"])}
    numbers.update(shift_mean=np.mean(shift), shift_spread=np.std(shift))
    numbers.update(shift_angle=math.degrees(math.acos(abs(cos_ones(shift)))))
    moved = (ch["rms"] + ch["layer"]).tolist()
    numbers["case"] = moved.index(max(moved))
    return which(numbers["res_rms"] < TOL, numbers["res_layer"] < TOL), numbers


def ref_table() -> tuple[str | None, dict]:
    layer_res, rms_res = oracle.residuals(3, "weight_matrix_recenter", 2.0)
    found = {t: oracle.residuals(3, t, 2.0) for t in oracle.TRANSFORM_IDS}
    as_paper = {t: (r[0] < TOL, r[1] < TOL) == oracle.EXPECTED[t] for t, r in found.items()}
    agree = sum(as_paper[t] for t in oracle.TRANSFORM_IDS[: oracle.PAPER_ROWS])
    # The pattern the explanation reads off the whole table, the two extra rows included.
    assert all(as_paper.values()), as_paper
    np.testing.assert_allclose(found["negative_rescale"], 2.0, rtol=1e-9)
    numbers = {"asked_rms": rms_res, "asked_layer": layer_res, "tol": TOL}
    numbers.update(agree=agree, total=oracle.PAPER_ROWS, cases=16, inputs=8, units=8)
    return which(rms_res < TOL, layer_res < TOL), numbers


def ref_eps() -> tuple[str | None, dict]:
    x = 1e-3 * x_lesson()
    ms = np.mean(x**2)
    inside, outside = math.sqrt(ms / (ms + EPS)), math.sqrt(ms) / (math.sqrt(ms) + EPS)
    clamp = math.sqrt(ms) * math.sqrt(D) / max(math.sqrt(ms * D), EPS)  # F.normalize times sqrt(d)
    gap = abs(inside - outside) / outside
    # "For ordinary activations all curves reach 1": at the curves' largest input RMS.
    big = 10.0 * x_lesson()
    for placement_rms in (rms(big, EPS), big / (np.sqrt(np.mean(big**2)) + EPS)):
        assert abs(math.sqrt(np.mean(placement_rms**2)) - 1) < 1e-6
    numbers = {"rms_x": math.sqrt(ms), "mean_square_x": ms, "out_inside": inside}
    numbers.update(out_outside=outside, out_clamp=clamp, gap_pct=gap, visible_pct=0.01, eps=EPS)
    return ("yes" if gap > 0.01 else "no"), numbers


@cache
def precision_case() -> dict[str, np.ndarray]:
    """The precision step's x (float32), its float64 RMSNorm rounded once, the float32 results
    of dividing by the root and of multiplying by its reciprocal, and the first's ulps."""
    x = np.random.default_rng(3).standard_normal(4096).astype(np.float32)
    x64 = x.astype(np.float64)
    exact = (x64 / np.sqrt(np.sum(x64**2) / x.size + EPS)).astype(np.float32)
    root = np.sqrt(np.float32(np.mean(np.square(x))) + np.float32(EPS))
    divided, multiplied = x / root, x * (np.float32(1) / root)
    spacing = np.spacing(np.abs(exact)).astype(np.float64)
    ulps = np.rint(np.abs(divided.astype(np.float64) - exact) / spacing)
    return {"x": x, "exact": exact, "divided": divided, "multiplied": multiplied, "ulps": ulps}


def ref_precision() -> tuple[str | None, dict]:
    case = precision_case()
    x, exact, divided, ulps = (case[k] for k in ("x", "exact", "divided", "ulps"))
    multiplied, x64 = case["multiplied"], case["x"].astype(np.float64)
    n_diff = int(np.count_nonzero(divided != exact))
    max_rel = float(np.max(np.abs(divided.astype(np.float64) - exact) / np.abs(exact)))
    if n_diff == 0:
        letter = "identical"
    elif ulps.max() <= 4:
        letter = "ulps"
    else:
        letter = "visible" if max_rel > 0.01 else None
    numbers = {"d": 4096, "n_diff": n_diff, "n_same": 4096 - n_diff, "worst_ulps": ulps.max()}
    numbers.update(n_diff_mul=int(np.count_nonzero(multiplied != exact)), max_rel=max_rel)
    numbers.update(mean_x=np.mean(x64), visible_pct=0.01)
    numbers["mean_square"] = float(np.mean(np.square(x)))
    numbers["reduction_exact"] = bool(np.mean(np.square(x)) == np.float32(np.mean(x64**2)))
    return letter, numbers


@cache
def gradient_cosines() -> dict[str, list[float]]:
    """cos(dL/dx, 1) of each norm for every eps of the ladder, by autograd."""
    x = torch.tensor(x_lesson())
    g = torch.from_numpy(np.random.default_rng([3, 1]).standard_normal(D))
    cos = {"rms": [], "layer": []}
    for eps in EPS_LADDER:
        for name, norm in (
            ("rms", F.rms_norm),
            ("layer", F.layer_norm),
        ):
            xx = x.clone().requires_grad_(True)
            (norm(xx, (D,), eps=eps) @ g).backward()  # autograd: x.grad = J^T g
            cos[name].append(cos_ones(xx.grad.numpy()))
    return cos


def ref_gradient() -> tuple[str | None, dict]:
    cos = gradient_cosines()
    worst_layer = max(abs(c) for c in cos["layer"])
    least_rms = min(abs(c) for c in cos["rms"])
    numbers = {"worst_layer": worst_layer, "least_rms": least_rms, "eps": EPS}
    numbers.update(cos_rms=cos["rms"][EPS_LADDER.index(EPS)], eps_max=EPS_LADDER[-1])
    # "Rounding level": far below anything a component along 1 would leave.
    level = oracle.ulps(4096, 1.0)  # a cosine is of order 1
    return which(least_rms < level, worst_layer < level), numbers


def ref_residual() -> tuple[str | None, dict]:
    t = oracle.trunk(24, 256, 0.5, 0, 1e-5)
    tok = {n: oracle.token_cosine(t[n]["p"][-1]) for n in ("rms", "layer")}
    cos = {n: float(np.mean(oracle.cosines(t[n]["z"][-1], np.ones(256)))) for n in tok}
    gap = tok["rms"] - tok["layer"]
    if abs(gap) >= 0.1:
        letter = "rms" if gap > 0 else "layer"
    else:
        letter = "alike" if min(tok.values()) >= 0.5 else "apart"
    numbers = {"tok_rms": tok["rms"], "tok_layer": tok["layer"], "cos_rms": cos["rms"]}
    numbers.update(cos_layer=cos["layer"], offset_rms=np.mean(t["rms"]["h"][-1]), total=12.0)
    numbers.update(layers=24, d=256, drift=0.5, n=8)
    return letter, numbers


def ref_gain() -> tuple[str | None, dict]:
    x = x_lesson()
    w = 0.1 * np.random.default_rng([3, 3]).standard_normal(D)
    meant, loaded = rms(x) * (1 + w), rms(x) * w
    ratio = math.sqrt(np.mean(loaded**2) / np.mean(meant**2))
    flips = int(np.count_nonzero(np.sign(loaded) != np.sign(meant)))
    assert flips == np.count_nonzero(w < 0)  # "the coordinates with w < 0 flip sign"
    cos = loaded @ meant / (np.linalg.norm(loaded) * np.linalg.norm(meant))
    # The options: nearly the same (every coordinate within 5 % of the largest), the same
    # direction only shorter, or much smaller with signs flipped.
    verdicts = {
        "nearly": bool(np.all(np.abs(loaded - meant) <= 0.05 * np.abs(meant).max())),
        "shorter": bool(cos >= 1 - SAME),
        "flipped": bool(ratio < 0.5 and flips > 0),
    }
    letter = next((k for k, true in verdicts.items() if true), None)
    numbers = {"w_min": w.min(), "w_max": w.max(), "ratio": ratio, "flips": flips, "d": D}
    numbers.update(rms_meant=math.sqrt(np.mean(meant**2)), negative=int(np.sum(w < 0)))
    numbers["rms_loaded"] = math.sqrt(np.mean(loaded**2))
    return letter, numbers


REFS = {step: globals()[f"ref_{step}"] for step in STEP_IDS}


@cache
def reference(step: int) -> tuple[str | None, dict]:
    return REFS[STEP_IDS[step - 1]]()


def check_fields(state: dict, claim: Claim) -> None:
    """Every number the reference computes and the claim carries must agree."""
    _, numbers = reference(state["step"])
    for name, value in numbers.items():
        if name in claim.fields:
            shown = claim.fields[name]
            tol = 1e-6 * abs(value) + oracle.ulps(64, ROUNDING_LEVEL.get(name, 0.0))
            assert abs(shown - value) <= tol, (name, shown, value)


def check_answer(state: dict, claim: Claim) -> None:
    step_id = STEP_IDS[state["step"] - 1]
    option, _ = reference(state["step"])
    if claim.key == "lesson.answer_none":
        assert option is None
        return
    assert claim.fields["option"] == option, (step_id, option)
    # The letter is the option's place among those the page shows, A first.
    assert claim.fields["letter"] == "ABCD"[OPTIONS[step_id].index(option)], (step_id, option)


def check_explain(state: dict, claim: Claim) -> None:
    step_id = STEP_IDS[state["step"] - 1]
    letter, _ = reference(state["step"])
    written = claim.key == f"lesson.{step_id}_explain"
    assert written == (letter == WRITTEN_FOR[step_id]), (claim.key, letter)
    check_fields(state, claim)


def check_reduction(state: dict, claim: Claim) -> None:
    _, numbers = reference(state["step"])
    exact = claim.key == "lesson.precision_reduction_exact"
    assert exact == numbers["reduction_exact"]
    np.testing.assert_allclose(claim.fields["mean_square"], numbers["mean_square"], rtol=1e-7)


# --- the figures' words: from what each figure draws, that rechecked from the step's recipe ----
#
# A figure is ``{"where": positions, name: values}``: one norm's (or one quantity's) values per
# position, or a grid with one line per row of ``rows``. ``figure(step)`` rebuilds it here;
# ``drawn(result)`` reads it off the arrays the page draws, which must agree with it before the
# summary is checked against them.

# The steps whose figure draws two arrays side by side, named in the step's arrays.
PAIRED = dict(
    centre="y_rms y_layer", identity="before after", table="rms layer", gain="meant loaded"
)
SCALE_ROWS, PLACEMENTS = ("neg", "coord"), "inside outside clamp".split()
# The residual trunk's weights are drawn in float32 and the two computations sum in different
# orders: its cosines agree to this. Everything else is float64 from the same inputs.
TRUNK_RTOL = 1e-6


def _apart(after: np.ndarray, before: np.ndarray) -> np.ndarray:
    return np.abs(np.asarray(after, dtype=float) - np.asarray(before, dtype=float))


def _identity_bars(v: np.ndarray) -> list[float]:
    """RMS^2, Var and mu^2 of v, in the order the bars' arrays hold them."""
    return [float(np.mean(v**2)), float(np.var(v)), float(np.mean(v)) ** 2]


def _curve(scale: float, placement: str) -> float:
    """Output RMS of RMSNorm for an input of RMS ``scale`` under one eps placement."""
    if placement == "inside":
        return scale / math.sqrt(scale**2 + EPS)
    if placement == "outside":
        return scale / (scale + EPS)
    return scale * math.sqrt(D) / max(scale * math.sqrt(D), EPS)  # F.normalize times sqrt(d)


@cache
def figure(step: int) -> dict:
    """What step ``step``'s figure draws, from the step's recipe."""
    step_id, x = STEP_IDS[step - 1], x_lesson()
    coords = list(range(D))
    changed = {"rescale": 10.0 * x, "shift": x + 3.0}
    if step_id == "centre":
        return {"where": coords, "rms": rms(x), "layer": layer(x)}
    if step_id == "identity":
        return {"where": [0, 1, 2], "rms": _identity_bars(x), "layer": _identity_bars(x + 3.0)}
    if step_id in changed:
        after = changed[step_id]
        return {"where": coords, "rms": _apart(rms(after), rms(x)),
                "layer": _apart(layer(after), layer(x))}  # fmt: skip
    if step_id == "recenter":
        a, a2 = oracle.preactivations(3, "dataset_recenter", 1.0)
        after, before = (v[reference(step)[1]["case"]] for v in (a2, a))
        return {"where": coords, "rms": _apart(rms(after, 0.0), rms(before, 0.0)),
                "layer": _apart(layer(after, 0.0), layer(before, 0.0))}  # fmt: skip
    if step_id == "scales":
        s = np.exp(np.random.default_rng([3, 2]).uniform(math.log(0.5), math.log(2.0), D))
        grids = {
            n: np.stack([_apart(f(-10.0 * x), f(x)), _apart(f(s * x), f(x))])
            for n, f in (("rms", rms), ("layer", layer))
        }
        return {"where": coords, "rows": SCALE_ROWS, **grids}
    if step_id == "sweep":
        offsets = np.linspace(-50.0, 50.0, 201)
        out = {"where": list(offsets)}
        for n, f in (("rms", rms), ("layer", layer)):
            shifted, base = f(x + offsets[:, None]), f(x)
            out[n] = shifted @ base / (np.linalg.norm(shifted, axis=-1) * np.linalg.norm(base))
        return out
    if step_id == "plane":
        return {n: plane_point(v) for n, v in (("x", x), ("rms", rms(x)), ("layer", layer(x)))}
    if step_id == "table":
        found = [oracle.residuals(3, t, 2.0) for t in oracle.TRANSFORM_IDS]
        return {"where": list(range(len(found))), "rms": [r for _, r in found],
                "layer": [lay for lay, _ in found]}  # fmt: skip
    if step_id == "eps":
        scales = EPS_CURVE_SCALES * math.sqrt(np.mean(x**2))
        curves = {p: [_curve(v, p) for v in scales] for p in PLACEMENTS}
        return {"where": list(scales), "rows": ("curve",), **curves}
    if step_id == "precision":
        counts = np.bincount(precision_case()["ulps"].astype(int))
        return {"where": list(range(counts.size)), "counts": counts}
    if step_id == "gradient":
        keep = [i for i, eps in enumerate(EPS_LADDER) if eps > 0]
        cos = gradient_cosines()
        return {"where": [EPS_LADDER[i] for i in keep],
                **{n: [abs(cos[n][i]) for i in keep] for n in ("rms", "layer")}}  # fmt: skip
    if step_id == "residual":
        t = oracle.trunk(24, 256, 0.5, 0, 1e-5)
        ones = np.ones(256)
        out = {"where": list(range(25))}
        for n in ("rms", "layer"):
            out[f"ones_{n}"] = [float(np.mean(oracle.cosines(z, ones))) for z in t[n]["z"]]
            out[f"tokens_{n}"] = [oracle.token_cosine(p) for p in t[n]["p"]]
        return out
    w = 0.1 * np.random.default_rng([3, 3]).standard_normal(D)
    return {"where": coords, "rms": rms(x) * (1 + w), "layer": rms(x) * w}


def drawn(step: int) -> dict:
    """The same figure read off the arrays the page draws."""
    r = view({"step": step})
    step_id, a = r.step_id, r.arrays
    if step_id in PAIRED:
        first, second = PAIRED[step_id].split()
        return {"where": list(range(len(a[first]))), "rms": a[first], "layer": a[second]}
    if step_id in ("rescale", "shift", "recenter"):
        return {"where": list(range(D)), "rms": _apart(a["rms_after"], a["rms_before"]),
                "layer": _apart(a["layer_after"], a["layer_before"])}  # fmt: skip
    if step_id == "scales":
        grids = {n: np.stack([_apart(a[f"{c}_{n}_after"], a[f"{c}_{n}_before"])
                              for c in SCALE_ROWS]) for n in ("rms", "layer")}  # fmt: skip
        return {"where": list(range(D)), "rows": SCALE_ROWS, **grids}
    if step_id == "sweep":
        return {"where": list(a["offsets"]), "rms": a["rms_cosine"], "layer": a["layer_cosine"]}
    if step_id == "plane":
        return {"x": a["point"], "rms": a["rms"], "layer": a["layer"]}
    if step_id == "eps":
        return {"where": list(a["input_rms"]), "rows": ("curve",), **{p: a[p] for p in PLACEMENTS}}
    if step_id == "precision":
        return {"where": list(a["ulps"]), "counts": a["counts"]}
    if step_id == "gradient":
        keep = a["eps"] > 0
        return {"where": list(a["eps"][keep]), "rms": a["rms"][keep], "layer": a["layer"][keep]}
    panels = (("ones", "input_cos_ones"), ("tokens", "token_cosine"))
    readings = {f"{panel}_{n}": a[f"{n}_readings"][q] for n in ("rms", "layer")
                for panel, q in panels}  # fmt: skip
    return {"where": list(a["layers"]), **readings}


def _agree(mine: dict, shown: dict, step_id: str) -> None:
    """The drawn figure is the recipe's, to float64 rounding (the trunk's: TRUNK_RTOL). Its
    values are made from operands of order 1 or more (unit-RMS outputs, cosines), so rounding is
    measured in ulps of the largest of them, not of a small difference such as a move of 1e-7."""
    assert set(mine) == set(shown), (step_id, sorted(mine), sorted(shown))
    rtol = TRUNK_RTOL if step_id == "residual" else 1e-9
    numeric = {k: np.asarray(v, dtype=float) for k, v in mine.items() if k != "rows"}
    atol = oracle.ulps(4096, max(1.0, *(float(np.max(np.abs(v))) for v in numeric.values())))
    if "rows" in mine:
        assert tuple(mine["rows"]) == tuple(shown["rows"])
    for name, ours in numeric.items():
        theirs = np.asarray(shown[name], dtype=float)
        np.testing.assert_allclose(theirs, ours, rtol=rtol, atol=atol, err_msg=f"{step_id} {name}")


def check_figure(state: dict, claim: Claim) -> None:
    """A figure's summary, from what it draws; what it draws, from the step's recipe."""
    step_id = STEP_IDS[state["step"] - 1]
    shown = drawn(state["step"])
    _agree(figure(state["step"]), shown, step_id)
    chart = claim.fields.get("chart", claim.key)
    if step_id == "plane":
        (xa, xb), radius = shown["x"], claim.fields["radius"]
        assert math.isclose(radius, math.sqrt(D), rel_tol=1e-12), radius  # the circle of sqrt(d)
        check_point_words(claim, shown["rms"], shown["layer"], xa=xa, xb=xb, radius=radius)
    elif step_id in ("scales", "eps"):
        grids = {k: v for k, v in shown.items() if k not in ("where", "rows")}
        check_lines_words(claim, shown["rows"], shown["where"], grids)
    elif step_id == "precision":
        check_series_words(claim, shown["where"], shown["counts"])
    elif step_id == "residual":
        panel = "ones" if chart.startswith("residual.") else "tokens"
        check_pair_words(claim, shown["where"], shown[f"{panel}_rms"], shown[f"{panel}_layer"])
    else:
        check_pair_words(claim, shown["where"], shown["rms"], shown["layer"])


# Every key a figure's summary can have: the lesson's own, and those of the pages whose
# figures the lesson draws.
FIGURE_KEYS = (
    *(f"lesson.{s}_words{e}" for s in (*PAIRED, "gradient", "residual", "precision")
      for e in ("", "_equal")),
    "lesson.scales_words", "lesson.eps_words", "lesson.eps_words_clamp_flat",
    *pair_keys("lesson.gradient_words"),
    *pair_keys("invariance.before_after_words"), *pair_keys("invariance.sweep_words"),
    "explorer.plane_words", "explorer.plane_words_not_finite",
    *pair_keys("residual.figure_input_cos_ones"),
    "charts.not_finite", "charts.no_finite", "charts.lines_no_finite", "charts.no_finite_values",
)  # fmt: skip


CHECKS = {
    "lesson.answer": check_answer,
    "lesson.answer_none": check_answer,
    "lesson.explain_other": check_explain,
    **{f"lesson.{s}_caption": check_fields for s in STEP_IDS},
    **{f"lesson.{s}_explain": check_explain for s in STEP_IDS},
    "lesson.precision_reduction_exact": check_reduction,
    "lesson.precision_reduction_rounds": check_reduction,
    **dict.fromkeys(FIGURE_KEYS, check_figure),
}
