"""The attention sandbox's sentences, rechecked without ``labs.attention.model``'s code.

The keys are drawn here as the page documents them (k = spread · z + offset · 1, z the first n × d
block of a seeded (12, 3) normal sample) and normalised with ``F.rms_norm`` / ``F.layer_norm`` in
float64 (eps = 0). The query direction is rebuilt from its documented angles. Which keys can be
selected is checked with certificates found by non-negative least squares (a convex combination of
the other keys for an un-selectable key; a query that scores a selectable key strictly highest),
and "no direction does better" by sampling directions and polishing the best with Nelder-Mead;
``labs.attention.model`` uses a linear program and an exact enumeration instead.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st
from scipy.optimize import minimize, nnls

from labs.attention.key_geometry import MAX_KEYS, MIN_KEYS
from labs.attention.model import (
    LENGTH_LADDER,
    OFFSET_RANGE,
    SPREAD_RANGE,
    attention_sandbox,
)
from tests.claims.oracle import check_series_words

STATES = st.fixed_dictionaries(
    {
        "d": st.sampled_from((2, 3)),
        "n": st.one_of(st.sampled_from((MIN_KEYS, MAX_KEYS)), st.integers(MIN_KEYS, MAX_KEYS)),
        "seed": st.one_of(st.sampled_from((0, 7, 2**31 - 1)), st.integers(0, 2**31 - 1)),
        "spread": st.one_of(st.sampled_from(SPREAD_RANGE), st.floats(*SPREAD_RANGE)),
        "offset": st.one_of(
            st.sampled_from((OFFSET_RANGE[0], 0.0, OFFSET_RANGE[1])), st.floats(*OFFSET_RANGE)
        ),
        "angle": st.one_of(st.sampled_from((-180, -90, 0, 45, 90, 180)), st.integers(-180, 180)),
        "turn": st.one_of(st.sampled_from((-180, 0, 90, 180)), st.integers(-180, 180)),
        "length": st.sampled_from(LENGTH_LADDER),
    }
)
SLOT = re.compile(r"^(norms|plane|select|top|uniform|dial)_(raw|rms|layer)$")
# A chart's summary: the keys (their norms), the weights under the query, at the best direction.
CHART = re.compile(r"^(keys|weights|best)_(raw|rms|layer)(_not_finite)?$")
# Relative tolerances of the sentences' "equal", "⟂" and "tie" (the core's are 1e-9).
TOL = 1e-9
# An un-selectable key is within this distance of the other keys' hull (keys scaled to radius 1).
HULL_TOL = 1e-7
SAMPLES_2D, SAMPLES_3D = 3600, 6000


def view(state: dict):
    return attention_sandbox(**state)


# --- the page's objects, rebuilt ------------------------------------------------------------


def keys(state: dict) -> dict[str, np.ndarray]:
    d, n = state["d"], state["n"]
    z = np.random.default_rng(state["seed"]).standard_normal((MAX_KEYS, 3))[:n, :d]
    raw = torch.from_numpy(state["spread"] * z + state["offset"])
    return {
        "raw": raw.numpy(),
        "rms": F.rms_norm(raw, (d,), eps=0.0).numpy(),
        "layer": F.layer_norm(raw, (d,), eps=0.0).numpy(),
    }


def direction(d: int, angle: float, turn: float) -> np.ndarray:
    """cos θ · 1/√d + sin θ (cos φ e1 + sin φ e2), e1 = (−1, 1, 0)/√2, e2 = (−1, −1, 2)/√6."""
    theta, phi = math.radians(angle), math.radians(turn)
    if d == 2:
        c, s = math.cos(theta) / math.sqrt(2), math.sin(theta) / math.sqrt(2)
        return np.array([c - s, c + s])
    e1 = np.array([-1.0, 1.0, 0.0]) / math.sqrt(2)
    e2 = np.array([-1.0, -1.0, 2.0]) / math.sqrt(6)
    ones = np.ones(3) / math.sqrt(3)
    return math.cos(theta) * ones + math.sin(theta) * (math.cos(phi) * e1 + math.sin(phi) * e2)


def weights(k: np.ndarray, q: np.ndarray) -> np.ndarray:
    scores = torch.from_numpy(k @ q / math.sqrt(k.shape[1]))
    return torch.softmax(scores, dim=0).numpy()


def names(text: str) -> set[int]:
    return {int(name) - 1 for name in re.findall(r"k(\d+)", text)}


# --- certificates for "un-selectable" and "selectable" ----------------------------------------


def nearest_in_hull(points: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The point of conv(points) nearest x, by NNLS with a heavily weighted row Σλ = 1."""
    heavy = 1e4
    a = np.vstack([(points - x).T, heavy * np.ones(len(points))])
    b = np.r_[np.zeros(len(x)), heavy]
    lam, _ = nnls(a, b, maxiter=50 * len(points))
    lam = lam / lam.sum()
    return lam @ points


def wins(k: np.ndarray, i: int, q: np.ndarray) -> bool:
    """q scores key i strictly above every other key, in exact rational arithmetic."""
    exact = [[Fraction(float(v)) for v in row] for row in k]
    qq = [Fraction(float(v)) for v in q]
    score = [sum(a * b for a, b in zip(row, qq, strict=True)) for row in exact]
    return all(score[i] > s for j, s in enumerate(score) if j != i)


def selectable(k: np.ndarray, i: int) -> bool:
    """Some query scores key i strictly highest: q = x − p, p the point of the other keys' hull
    nearest x (keys centred and scaled), or, for keys of one norm, q = the key itself (a point of
    a sphere beats every other point of it in its own direction)."""
    if one_point(k):
        return False
    centred = k - k.mean(axis=0)
    unit = centred / max(np.max(np.linalg.norm(centred, axis=1)), 1e-300)
    others = np.delete(unit, i, axis=0)
    if wins(unit, i, unit[i] - nearest_in_hull(others, unit[i])):
        return True
    norms = np.linalg.norm(k, axis=1)
    return bool(np.ptp(norms) <= 1e-9 * norms.max()) and wins(k, i, k[i])


def one_point(k: np.ndarray) -> bool:
    """All keys at one point up to rounding (1e-9 of their norm)."""
    spread = np.max(np.linalg.norm(k - k.mean(axis=0), axis=1))
    return bool(spread <= 1e-9 * np.max(np.linalg.norm(k, axis=1)))


def in_hull(k: np.ndarray, i: int) -> bool:
    if one_point(k):
        return True
    centred = k - k.mean(axis=0)
    scale = np.max(np.linalg.norm(centred, axis=1))
    unit = centred / scale
    others = np.delete(unit, i, axis=0)
    return bool(np.linalg.norm(nearest_in_hull(others, unit[i]) - unit[i]) <= HULL_TOL)


# --- the most uniform unit query --------------------------------------------------------------


def spread_at(k: np.ndarray, u: np.ndarray, length: float) -> float:
    s = length * (k @ u) / math.sqrt(k.shape[1])
    return float(s.max() - s.min())


def _sphere(count: int) -> np.ndarray:
    i = np.arange(count) + 0.5
    z = 1 - 2 * i / count
    r = np.sqrt(1 - z**2)
    phi = i * math.pi * (3 - math.sqrt(5))
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def best_sampled(k: np.ndarray, length: float) -> float:
    """The smallest spread over sampled unit directions, each of the best five polished."""
    d = k.shape[1]
    if d == 2:
        t = np.linspace(0, math.pi, SAMPLES_2D, endpoint=False)
        dirs = np.stack([np.cos(t), np.sin(t)], axis=1)
    else:
        dirs = _sphere(SAMPLES_3D)
    proj = dirs @ k.T
    spreads = length * (proj.max(axis=1) - proj.min(axis=1)) / math.sqrt(d)
    best = float(spreads.min())
    for start in dirs[np.argsort(spreads)[:5]]:
        result = minimize(
            lambda v: spread_at(k, v / np.linalg.norm(v), length),
            start,
            method="Nelder-Mead",
            options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 4000},
        )
        best = min(best, float(result.fun))
    return best


# --- checks -----------------------------------------------------------------------------------


def assert_shown_equal(claim, name: str, value: float) -> None:
    """The field reads as ``value`` does: both at most the claim's noise (shown "≈ 0"), or
    equal to 9 digits."""
    shown = claim.fields[name]
    if shown <= claim.noise:
        assert abs(value) <= claim.noise, (name, shown, value, claim.noise)
    else:
        assert math.isclose(shown, value, rel_tol=1e-9), (name, shown, value)


def _norms(state, claim, equal: bool) -> None:
    k = keys(state)[state["_case"]]
    d = state["d"]
    norms = np.linalg.norm(k, axis=1)
    dev = float(np.max(np.abs(norms - math.sqrt(d))))
    assert math.isclose(claim.fields["root_d"], math.sqrt(d), rel_tol=1e-15)
    if equal:
        assert dev <= TOL * math.sqrt(d), dev
        assert_shown_equal(claim, "dev", dev)
    else:
        assert dev > 1e-12 * math.sqrt(d), dev
        assert math.isclose(claim.fields["lo"], norms.min(), rel_tol=1e-9)
        assert math.isclose(claim.fields["hi"], norms.max(), rel_tol=1e-9)


def _plane(state, claim, inside: bool) -> None:
    k = keys(state)[state["_case"]]
    along = k.sum(axis=1) / math.sqrt(state["d"])
    scale = float(np.max(np.linalg.norm(k, axis=1)))
    if inside:
        assert np.max(np.abs(along)) <= TOL * scale
        assert_shown_equal(claim, "dev", float(np.max(np.abs(along))))
    else:
        assert math.isclose(claim.fields["lo"], along.min(), rel_tol=1e-9, abs_tol=1e-12 * scale)
        assert math.isclose(claim.fields["hi"], along.max(), rel_tol=1e-9, abs_tol=1e-12 * scale)


def _select(state, claim, some: bool) -> None:
    k = keys(state)[state["_case"]]
    n = len(k)
    hidden = names(claim.fields["keys"]) if some else set()
    assert claim.fields["n"] == n
    if some:
        assert claim.fields["count"] == len(hidden) > 0
    for i in range(n):
        if i in hidden:
            assert in_hull(k, i), f"k{i + 1} is said to be un-selectable but lies off the hull"
        else:
            assert selectable(k, i), f"k{i + 1} is said to be selectable; no query found"


def _top(state, claim, kind: str) -> None:
    k = keys(state)[state["_case"]]
    q = state["length"] * direction(state["d"], state["angle"], state["turn"])
    w = weights(k, q)
    top = w.max()
    tied = set(np.flatnonzero(w >= top * (1 - TOL)).tolist())
    assert math.isclose(claim.fields["w_pct"], top, rel_tol=1e-9)
    if kind == "uniform":
        assert len(tied) == len(w)
    else:
        shown = names(claim.fields["key" if kind == "one" else "keys"])
        assert shown == tied, (shown, tied)
        assert (len(tied) == 1) == (kind == "one")
        assert len(tied) < len(w)


def _uniform(state, claim, exact: bool, turned: bool) -> None:
    k = keys(state)[state["_case"]]
    d, length = state["d"], state["length"]
    f = claim.fields
    if not turned and d == 3:
        assert f["angle"] in (0.0, 180.0), "a direction off ±1 at d = 3 needs its turn"
    u = direction(d, f["angle"], f["turn"] if turned else 0.0)
    spread = spread_at(k, u, length)
    scale = length * float(np.max(np.linalg.norm(k, axis=1))) / math.sqrt(d)
    w = weights(k, length * u)
    if exact:
        assert spread <= 10 * TOL * scale, spread
        assert math.isclose(f["w_pct"], 1 / len(k), rel_tol=1e-12)
        assert np.allclose(w, 1 / len(k), rtol=1e-8, atol=0)
        return
    assert spread > TOL * scale
    assert math.isclose(f["spread"], spread, rel_tol=1e-8, abs_tol=1e-12 * scale)
    assert math.isclose(f["ratio"], math.exp(spread), rel_tol=1e-7)
    assert math.isclose(f["w_max_pct"], w.max(), rel_tol=1e-7)
    assert math.isclose(f["w_min_pct"], w.min(), rel_tol=1e-7)
    assert math.isclose(f["length"], length)
    # "No direction does better": sampled and polished directions never beat it.
    assert best_sampled(k, length) >= spread - 1e-9 * scale


def _dial(state, claim, kind: str, turned: bool) -> None:
    """Attention at whole degrees: the nearest ones to the direction the sentence before it names
    (the button sets them), recomputed there."""
    case = state["_case"]
    k = keys(state)[case]
    d, length = state["d"], state["length"]
    f = claim.fields
    link = {key: value for key, value in state.items() if key != "_case"}
    best = view(link).claims[f"uniform_{case}"].fields
    for name in ("angle", "turn"):
        assert isinstance(f[name], int), (name, f[name])
        assert abs(f[name] - best[name]) <= 0.5, (name, f[name], best[name])
    assert turned == (d == 3 and f["angle"] not in (0, 180)), (d, f["angle"])
    q = length * direction(d, f["angle"], f["turn"])
    w = weights(k, q)
    scores = k @ q / math.sqrt(d)
    tied = set(np.flatnonzero(w >= w.max() * (1 - TOL)).tolist())
    assert math.isclose(f["w_pct"], w.max(), rel_tol=1e-9)
    assert math.isclose(f["w_min_pct"], w.min(), rel_tol=1e-9)
    if kind == "uniform":
        assert len(tied) == len(w), w
        return
    assert names(f["key" if kind == "one" else "keys"]) == tied, (f, tied)
    assert (len(tied) == 1) == (kind == "one") and len(tied) < len(w)
    assert_shown_equal(claim, "spread", float(np.ptp(scores)))


def _closed_form(state, claim, holds: bool) -> None:
    k = keys(state)["layer"]
    d, length = state["d"], state["length"]
    scale = length * float(np.max(np.linalg.norm(k, axis=1))) / math.sqrt(d)
    ones = np.ones(d) / math.sqrt(d)
    if holds:
        assert math.radians(claim.fields["angle"]) <= 1e-6
        assert np.max(np.abs(k.sum(axis=1))) <= TOL * math.sqrt(d) * np.max(np.abs(k))
        assert spread_at(k, ones, length) <= TOL * scale
    else:
        angle_off = math.radians(claim.fields["angle"]) > 1e-6
        assert angle_off or claim.fields["spread"] > TOL * scale


def _two_points(state, claim, holds: bool) -> None:
    k = keys(state)["layer"]
    assert state["d"] == 2
    point = np.array([1.0, -1.0])
    near_first = np.linalg.norm(k - point, axis=1)
    near_second = np.linalg.norm(k + point, axis=1)
    dev = np.max(np.minimum(near_first, near_second))
    if holds:
        assert dev <= TOL * math.sqrt(2)
        assert claim.fields["first"] == int(np.sum(near_first <= near_second))
        assert claim.fields["second"] == int(np.sum(near_first > near_second))
    else:
        assert dev > TOL * math.sqrt(2)
        assert math.isclose(claim.fields["dev"], dev, rel_tol=1e-9)


def _chart_words(state, claim) -> None:
    """A chart's summary, from the values the chart draws (the view's), each first checked
    against the documented keys: their norms, the weights under the link's query (torch's
    softmax), the weights in the direction the case's "most uniform" sentence names. Equal up
    to TOL, as the sentences about norms √d and tied weights are."""
    shown = view(state)
    found = [CHART.match(slot) for slot, c in shown.claims.items() if c == claim]
    found = [m for m in found if m]
    assert found, "the claim is not among the view's charts' claims"
    for match in found:
        chart, case = match.group(1), match.group(2)
        k = keys(state)[case]
        d, length = state["d"], state["length"]
        drawn_case = shown.cases[case]
        if chart == "keys":
            drawn = drawn_case.keyset.norms
            # Centring a key at offset -10 with spread 0.1 loses |offset| / spread of its digits.
            rtol = 1e-12 * max(1.0, abs(state["offset"]) / state["spread"])
            np.testing.assert_allclose(drawn, np.linalg.norm(k, axis=1), rtol=rtol)
        elif chart == "weights":
            drawn = drawn_case.weights
            q = length * direction(d, state["angle"], state["turn"])
            np.testing.assert_allclose(drawn, weights(k, q), rtol=1e-9)
        else:
            drawn = drawn_case.keyset.best.weights
            best = shown.claims[f"uniform_{case}"].fields
            q = length * direction(d, best["angle"], best["turn"])
            np.testing.assert_allclose(drawn, weights(k, q), rtol=1e-9)
        # The weights' extremes are quoted as percentages (lo_pct, hi_pct).
        fields = {name.removesuffix("_pct"): value for name, value in claim.fields.items()}
        as_series = type(claim)(claim.key, fields, claim.noise)
        check_series_words(as_series, [f"k{i + 1}" for i in range(len(k))], drawn, rtol=TOL)


def _per_case(check):
    """Wrap a per-case check: the slot (``top_rms``) names the case; find it in the view."""

    def run(state, claim):
        shown = view(state).claims
        cases = [SLOT.match(slot).group(2) for slot, c in shown.items() if c == claim]
        assert cases, "the claim is not among the view's claims"
        for case in cases:
            check({**state, "_case": case}, claim)

    return run


CHECKS = {
    **{
        f"attention.{chart}_words{equal}": _chart_words
        for chart in ("keys", "weights", "best")
        for equal in ("", "_equal")
    },
    "charts.not_finite": _chart_words,
    "charts.no_finite_values": _chart_words,
    "attention.norms_equal": _per_case(lambda s, c: _norms(s, c, True)),
    "attention.norms_range": _per_case(lambda s, c: _norms(s, c, False)),
    "attention.plane_in": _per_case(lambda s, c: _plane(s, c, True)),
    "attention.plane_out": _per_case(lambda s, c: _plane(s, c, False)),
    "attention.select_all": _per_case(lambda s, c: _select(s, c, False)),
    "attention.select_some": _per_case(lambda s, c: _select(s, c, True)),
    "attention.top_one": _per_case(lambda s, c: _top(s, c, "one")),
    "attention.top_tied": _per_case(lambda s, c: _top(s, c, "tied")),
    "attention.top_uniform": _per_case(lambda s, c: _top(s, c, "uniform")),
    "attention.uniform_exact": _per_case(lambda s, c: _uniform(s, c, True, False)),
    "attention.uniform_exact_turn": _per_case(lambda s, c: _uniform(s, c, True, True)),
    "attention.uniform_close": _per_case(lambda s, c: _uniform(s, c, False, False)),
    "attention.uniform_close_turn": _per_case(lambda s, c: _uniform(s, c, False, True)),
    **{
        f"attention.dial_{kind}{turn}": _per_case(
            lambda s, c, kind=kind, turned=bool(turn): _dial(s, c, kind, turned)
        )
        for kind in ("uniform", "one", "tied")
        for turn in ("", "_turn")
    },
    "attention.layer_closed_form": lambda s, c: _closed_form(s, c, True),
    "attention.layer_closed_form_off": lambda s, c: _closed_form(s, c, False),
    "attention.layer_two_points": lambda s, c: _two_points(s, c, True),
    "attention.layer_two_points_off": lambda s, c: _two_points(s, c, False),
}
