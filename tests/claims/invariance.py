"""The invariance lab's sentences, rechecked with torch.nn.functional in float64.

The setup is drawn here as the page documents it (one generator seeded with ``seed``: the batch,
the weights, then whatever the change draws), and every norm is ``F.rms_norm`` or
``F.layer_norm``, so nothing below calls ``labs.invariance.model``'s code except ``view``.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from core.defaults import DEFAULT_RMS_EPS
from labkit.claims import Claim
from labs.invariance.model import SHIFT_LADDER, SIZE_LADDER, invariance_lab
from tests.claims.oracle import (
    CASES,
    EXPECTED,
    PAPER_ROWS,
    TRANSFORM_IDS,
    UNITS,
    changes,
    chart_of,
    check_pair_words,
    f_norm,
    pair_keys,
    preactivations,
    residuals,
    ulps,
)

# The page's line between rounding and a change (its sentences quote it).
TOL = 1e-9
SWEEP_EPS = DEFAULT_RMS_EPS
NAMES = {"RMSNorm": "rms", "LayerNorm": "layer"}
N, D = CASES, UNITS
# Every normalised row has length sqrt(d) (eps = 0), so its entries are of order 1: the float64
# rounding the core's numpy and torch may part by is some ulps of that.
ROUNDING = ulps(64, math.sqrt(D))

_SEEDS = st.one_of(st.sampled_from((0, 1, 2**31 - 1)), st.integers(0, 2**31 - 1))
_ANY = st.fixed_dictionaries(
    {
        "transform": st.sampled_from(TRANSFORM_IDS),
        "size": st.sampled_from(SIZE_LADDER),
        "seed": _SEEDS,
        "c_max": st.sampled_from(SHIFT_LADDER),
    }
)
# The corners: the smallest and largest change with the smallest and largest offset.
_CORNERS = st.fixed_dictionaries(
    {
        "transform": st.sampled_from(TRANSFORM_IDS),
        "size": st.sampled_from((SIZE_LADDER[0], SIZE_LADDER[-1])),
        "seed": _SEEDS,
        "c_max": st.sampled_from((SHIFT_LADDER[0], SHIFT_LADDER[-1])),
    }
)
STATES = st.one_of(_ANY, _CORNERS)


def view(state: dict):
    return invariance_lab(**state)


def near(shown: float, value: float, rtol: float = 1e-9, atol: float = ROUNDING) -> None:
    """``shown`` within ``rtol`` of ``value`` or within ``atol`` (the operands' rounding)."""
    assert abs(shown - value) <= rtol * abs(value) + atol, (shown, value)


def shown_case(state: dict) -> tuple[int, dict[str, np.ndarray]]:
    ch = changes(state["seed"], state["transform"], state["size"])
    moved = ch["rms"] + ch["layer"]
    top = max(moved)
    # The first case within rounding of the largest change (case 0 when nothing moves).
    return next(i for i, v in enumerate(moved) if v >= top - TOL), ch


def check_case_intro(state: dict, claim: Claim) -> None:
    case, ch = shown_case(state)
    assert claim.fields["case"] == case and claim.fields["n"] == N
    moved = max(ch["rms"][case], ch["layer"][case]) > TOL
    assert moved == (claim.key == "invariance.case_intro_moved")


def check_case_norm(state: dict, claim: Claim) -> None:
    case, ch = shown_case(state)
    name = NAMES[claim.fields["norm"]]
    change, flip = ch[name][case], ch[f"{name}_flip"][case]
    near(claim.fields["change"], change)
    verdict = claim.key.rsplit("_", 1)[-1]
    assert (change <= TOL) == (verdict == "cancelled"), (change, claim.key)
    if verdict != "cancelled":
        assert (flip <= TOL) == (verdict == "flipped"), (flip, claim.key)


def check_why(state: dict, claim: Claim) -> None:
    transform = claim.fields["transform"]
    layer, rms = residuals(state["seed"], transform, state["size"])
    near(claim.fields["layer"], layer)
    near(claim.fields["rms"], rms)
    as_expected = (layer < TOL, rms < TOL) == EXPECTED[transform]
    assert as_expected == (claim.key == f"invariance.why_{transform}"), (claim.key, layer, rms)


def check_table(state: dict, claim: Claim) -> None:
    agree = 0
    for transform in TRANSFORM_IDS[:PAPER_ROWS]:
        layer, rms = residuals(state["seed"], transform, state["size"])
        agree += (layer < TOL, rms < TOL) == EXPECTED[transform]
    assert claim.fields["agree"] == agree and claim.fields["total"] == PAPER_ROWS
    assert claim.fields["tol"] == TOL
    assert (claim.fields["size"], claim.fields["seed"]) == (state["size"], state["seed"])


def case_vector(seed: int, case: int) -> np.ndarray:
    return preactivations(seed, "dataset_rescale", 1.0)[0][case]


def cosine_with_unshifted(name: str, x: np.ndarray, c: np.ndarray) -> np.ndarray:
    shifted, plain = f_norm(name, x + c[:, None], SWEEP_EPS), f_norm(name, x, SWEEP_EPS)
    dots = shifted @ plain
    return dots / (np.linalg.norm(shifted, axis=-1) * np.linalg.norm(plain))


def check_sweep_layer(state: dict, claim: Claim) -> None:
    x, c = case_vector(state["seed"], 0), state["c_max"]
    low = float(np.min(cosine_with_unshifted("layer", x, np.linspace(-c, c, 401))))
    near(claim.fields["low"], low)
    assert (low >= 1 - TOL) == (claim.key == "invariance.sweep_layer_flat")


def check_sweep_rms(state: dict, claim: Claim) -> None:
    x, c = case_vector(state["seed"], 0), state["c_max"]
    cos_neg, cos_far = cosine_with_unshifted("rms", x, np.array([-c, c]))
    y = f_norm("rms", x + c, SWEEP_EPS)
    energy = (np.sum(y) / math.sqrt(D) / np.linalg.norm(y)) ** 2  # cos(y, 1)^2
    near(claim.fields["cos_far"], cos_far)
    near(claim.fields["cos_neg"], cos_neg)
    near(claim.fields["energy_far"], energy)
    assert claim.fields["case"] == 0 and claim.fields["c"] == c


def check_sweep_limit(state: dict, claim: Claim) -> None:
    x, c = case_vector(state["seed"], 0), state["c_max"]
    root = np.linalg.norm(x) / math.sqrt(x.size)
    limit = math.fsum(x) / x.size / root  # cos(x, 1)
    near(claim.fields["limit"], limit)
    near(claim.fields["neg_limit"], -limit)
    # The limit itself: far out the cosine sits on it, up to the next term of its expansion in
    # RMS(x) / c and the rounding of x + c (relative 2^-53 of c, that is c / RMS(x) of x's ulps).
    far = 1e7 * root
    bound = 4 * root / far + ulps(64, far / root)
    far_cos = cosine_with_unshifted("rms", x, np.array([-far, far]))
    assert np.all(np.abs(far_cos - [-limit, limit]) <= bound), (far_cos, limit)
    gap = abs(cosine_with_unshifted("rms", x, np.array([c]))[0] - limit)
    near(claim.fields["gap"], gap)
    assert (gap <= 0.01) == (claim.key == "invariance.sweep_limit_reached")


def check_collapse(state: dict, claim: Claim) -> None:
    x, c = case_vector(state["seed"], 0), state["c_max"]
    spread = float(np.std(f_norm("rms", x + c, SWEEP_EPS)))
    mean = math.fsum(x) / x.size
    std = np.linalg.norm(x - mean) / math.sqrt(x.size)
    # The formula the sentence writes: RMS(x + c)^2 = Var(x) + (mean(x) + c)^2.
    exact = std / math.sqrt(std**2 + (mean + c) ** 2 + SWEEP_EPS)
    near(spread, exact)
    bound = std / abs(c + mean)
    near(claim.fields["spread"], spread)
    near(claim.fields["bound"], bound)
    near(claim.fields["off_pct"], abs(bound - spread) / spread)
    dominates = abs(spread - bound) <= 0.01 * bound
    assert dominates == (claim.key == "invariance.collapse_dominates")


def check_pair(state: dict, claim: Claim) -> None:
    seed, c = state["seed"], state["c_max"]
    a, b = case_vector(seed, 0), case_vector(seed, 1)
    dist = {}
    for name in ("rms", "layer"):
        for shift in (0.0, c):
            diff = f_norm(name, a + shift, SWEEP_EPS) - f_norm(name, b + shift, SWEEP_EPS)
            dist[name, shift] = float(np.linalg.norm(diff))
    near(claim.fields["dist"], dist["rms", c])
    near(claim.fields["dist0"], dist["rms", 0.0])
    near(claim.fields["dist_layer"], dist["layer", c], rtol=1e-7)
    kept = abs(dist["layer", c] - dist["layer", 0.0]) <= 1e-9 * dist["layer", 0.0]
    assert kept == (claim.key == "invariance.pair_kept")


# --- the charts' words: each from the arrays its chart draws -----------------------------------


def _apart(pair) -> list[float]:
    """|second - first| per coordinate, in Python floats."""
    return [abs(float(q) - float(p)) for p, q in zip(pair[0], pair[1], strict=True)]


def _chart_data(state: dict, chart: str) -> tuple[list, list, list, float | None]:
    """The chart's positions and values, and the size of what its values come from (the
    outputs a move is taken between; None: the values themselves)."""
    lab = view(state)
    case, shift = lab.case, lab.shift
    if chart == "before_after":
        rms, layer = _apart(case.outputs["rms"]), _apart(case.outputs["layer"])
        size = max(abs(float(v)) for pair in case.outputs.values() for y in pair for v in y)
        return list(range(len(rms))), rms, layer, size
    if chart == "sweep":
        sweep = shift.sweep
        return list(sweep["offsets"]), list(sweep["rms_cosine"]), list(sweep["layer_cosine"]), None
    if chart == "collapse":
        return list(shift.offsets), list(shift.dist_rms), list(shift.dist_layer), None
    rms, layer = _apart(shift.pair_rms), _apart(shift.pair_layer)
    size = max(abs(float(v)) for y in (*shift.pair_rms, *shift.pair_layer) for v in y)
    return list(range(len(rms))), rms, layer, size


def check_chart_words(state: dict, claim: Claim) -> None:
    chart = chart_of(claim.fields.get("chart", claim.key).removeprefix("invariance."))
    where, rms, layer, size = _chart_data(state, chart)
    check_pair_words(claim, where, rms, layer, scale=size)


CHECKS = {
    "charts.not_finite": check_chart_words,
    "charts.no_finite": check_chart_words,
    **{
        key: check_chart_words
        for chart in ("before_after", "sweep", "collapse", "pair")
        for key in pair_keys(f"invariance.{chart}_words")
    },
    "invariance.case_intro_moved": check_case_intro,
    "invariance.case_intro_still": check_case_intro,
    "invariance.case_cancelled": check_case_norm,
    "invariance.case_flipped": check_case_norm,
    "invariance.case_moved": check_case_norm,
    **{f"invariance.why_{t}": check_why for t in TRANSFORM_IDS},
    "invariance.why_unexpected": check_why,
    "invariance.table_caption": check_table,
    "invariance.sweep_layer_flat": check_sweep_layer,
    "invariance.sweep_layer_moves": check_sweep_layer,
    "invariance.sweep_rms": check_sweep_rms,
    "invariance.sweep_limit_reached": check_sweep_limit,
    "invariance.sweep_limit_not_yet": check_sweep_limit,
    "invariance.collapse_dominates": check_collapse,
    "invariance.collapse_not_yet": check_collapse,
    "invariance.pair_kept": check_pair,
    "invariance.pair_changed": check_pair,
}
