r"""Attention over normalised keys: the projection and the scaling of Brody, Alon & Yahav (2023).

"On the Expressivity Role of LayerNorm in Transformers' Attention" (Findings of ACL 2023,
arXiv:2305.02582). A handful of keys :math:`k_1, \dots, k_n` in d = 2 or 3, one query q, and

.. math:: s_i = \frac{q \cdot k_i}{\sqrt{d}}, \qquad a = \operatorname{softmax}(s)

over three versions of the keys: as drawn ("raw"), after RMSNorm and after LayerNorm, both with
gain 1, no bias and eps = 0, so that the geometry is exact. LayerNorm's keys are ⟂ 1, so a query
q ∥ 1 scores them all 0 (the projection). A key is *un-selectable* when it lies in the convex
hull of the other keys (the scaling); distinct points on a sphere are all vertices of their hull,
so neither norm leaves a key un-selectable unless keys coincide (LayerNorm at d = 2 sends every
key to (1, −1) or (−1, 1)). ``labs.attention.key_geometry`` computes the geometry; this module
makes the page's state."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labkit.chart_words import series_words
from labkit.claims import Claim, at_most, both, pick
from labs.attention.key_geometry import (
    MAX_KEYS,
    MIN_KEYS,
    KeySet,
    attention,
    key_sets,
    query_direction,
)

SCORE_FORMULA = (
    r"s_i = \frac{q \cdot k_i}{\sqrt{d}}, \qquad "
    r"a_i = \frac{e^{s_i}}{\sum_{j=1}^{n} e^{s_j}}"
)

DIMS = (2, 3)
SPREAD_RANGE = (0.1, 5.0)
OFFSET_RANGE = (-10.0, 10.0)
LENGTH_LADDER = (0.5, 1.0, 2.0, 3.0, 5.0, 8.0)
CASES = ("raw", "rms", "layer")

# Relative tolerances for "every key has norm sqrt(d)", "every key is ⟂ 1", "these weights tie"
# and "every score is equal": float64 rounding leaves about 1e-15 of the quantity's scale.
NORM_TOL = 1e-9
PLANE_TOL = 1e-9
TIE_TOL = 1e-9
UNIFORM_TOL = 1e-9
# How close to 1 (radians) the best query must be to count as the closed form q ∥ 1.
ANGLE_TOL = 1e-6


@dataclass(frozen=True)
class CaseView:
    """A key set under the chosen query. ``named``: the keys the case's sentences single out
    (from 0), those with the most weight under the chosen query and at the whole-degree best
    direction (none where every key ties); the figures label only these. The un-selectable keys,
    named as a set, are marked by their cross instead: with an offset they crowd into a corner,
    where their labels piled up."""

    keyset: KeySet
    weights: np.ndarray  # (n,)
    named: tuple[int, ...] = ()


@dataclass(frozen=True)
class Sandbox:
    """The page's whole state: keys, query, attention in each case, and the claims."""

    d: int
    n: int
    length: float
    direction: np.ndarray  # (d,) unit query direction
    query: np.ndarray  # (d,)
    cases: dict[str, CaseView]
    claims: dict[str, Claim]


# --- the page's state and its sentences ------------------------------------------------------


def key_names(indices) -> str:
    """``k1, k4``: keys named from 1, as the figures label them."""
    return ", ".join(f"k{int(i) + 1}" for i in indices)


def _check_args(d: int, n: int, spread: float, offset: float, length: float) -> None:
    if d not in DIMS:
        raise ValueError(f"d must be one of {DIMS} (got {d!r})")
    if not MIN_KEYS <= n <= MAX_KEYS:
        raise ValueError(f"n must be in [{MIN_KEYS}, {MAX_KEYS}] (got {n!r})")
    if not SPREAD_RANGE[0] <= spread <= SPREAD_RANGE[1]:
        raise ValueError(f"spread must be in {SPREAD_RANGE} (got {spread!r})")
    if not OFFSET_RANGE[0] <= offset <= OFFSET_RANGE[1]:
        raise ValueError(f"offset must be in {OFFSET_RANGE} (got {offset!r})")
    if not (math.isfinite(length) and length > 0):
        raise ValueError(f"length must be a finite number > 0 (got {length!r})")


def _band_claim(
    values: np.ndarray, target: float, noise: float, keys: tuple[str, str], **fields: float
) -> Claim:
    """``keys[0]`` when every value lies within ``noise`` of ``target``, else ``keys[1]``; both
    texts get ``fields``, the largest gap ``dev`` and the range ``lo``, ``hi``."""
    dev = float(np.max(np.abs(values - target)))
    return pick(
        at_most(dev, noise),
        *keys,
        noise=noise,
        **fields,
        dev=dev,
        lo=float(values.min()),
        hi=float(values.max()),
    )


def _geometry_claims(case: str, ks: KeySet, d: int, n: int) -> dict[str, Claim]:
    """Norms (scaling), the component along 1 (projection) and which keys can be selected."""
    root_d = math.sqrt(d)
    scale = float(np.max(ks.norms))
    claims = {
        f"norms_{case}": _band_claim(
            ks.norms,
            root_d,
            NORM_TOL * root_d,
            ("attention.norms_equal", "attention.norms_range"),
            root_d=root_d,
        ),
        f"plane_{case}": _band_claim(
            ks.along_ones, 0.0, PLANE_TOL * scale, ("attention.plane_in", "attention.plane_out")
        ),
    }
    hidden = ks.unselectable
    claims[f"select_{case}"] = (
        Claim("attention.select_some", {"count": len(hidden), "n": n, "keys": key_names(hidden)})
        if hidden
        else Claim("attention.select_all", {"n": n})
    )
    return claims


def _most_weight(weights: np.ndarray) -> tuple[str, np.ndarray]:
    """The keys with the most weight (ties within TIE_TOL) and how to say it: "uniform" when
    they are all of them, "one" or "tied"."""
    tied = np.flatnonzero(weights >= float(weights.max()) * (1.0 - TIE_TOL))
    if len(tied) == len(weights):
        return "uniform", tied
    return ("one" if len(tied) == 1 else "tied"), tied


def _named(kind: str, tied: np.ndarray) -> list[int]:
    """The keys a most-weight sentence names: none when every key ties."""
    return [] if kind == "uniform" else [int(i) for i in tied]


def _top_claim(weights: np.ndarray) -> tuple[Claim, list[int]]:
    """Which key the chosen query attends to most (ties named as ties), and the keys named."""
    kind, tied = _most_weight(weights)
    fields = {"w_pct": float(weights.max())}
    if kind != "uniform":
        fields["key" if kind == "one" else "keys"] = key_names(tied)
    return Claim(f"attention.top_{kind}", fields), _named(kind, tied)


def _dial_claim(ks: KeySet, d: int, length: float) -> tuple[Claim, list[int]]:
    """Attention where "point the query here" turns the query (the best direction in whole
    degrees): what the top-weight line will say once it is pressed, and the keys it names."""
    angle, turn = ks.best.dial
    scores, weights = attention(ks.keys, length * query_direction(d, angle, turn))
    kind, tied = _most_weight(weights)
    fields = {"angle": angle, "turn": turn, "spread": float(scores.max() - scores.min())}
    fields |= {"w_pct": float(weights.max()), "w_min_pct": float(weights.min())}
    if kind != "uniform":
        fields["key" if kind == "one" else "keys"] = key_names(tied)
    turned = "_turn" if d == 3 and angle not in (0, 180) else ""
    noise = UNIFORM_TOL * length * float(np.max(ks.norms)) / math.sqrt(d)
    return Claim(f"attention.dial_{kind}{turned}", fields, noise), _named(kind, tied)


def _uniform_claim(ks: KeySet, d: int, length: float) -> Claim:
    """How equal the best unit direction makes the scores."""
    best = ks.best
    tol = UNIFORM_TOL * length * float(np.max(ks.norms)) / math.sqrt(d)
    exact = at_most(best.spread, tol)
    fields = {"angle": best.angle, "turn": best.turn, "spread": best.spread, "length": length}
    fields |= {"ratio": math.exp(best.spread), "w_min_pct": float(best.weights.min())}
    fields |= {"w_max_pct": float(best.weights.max()), "w_pct": 1.0 / len(best.weights)}
    # The turn around 1 names a direction only at d = 3 and away from ±1.
    turned = "_turn" if d == 3 and best.angle not in (0.0, 180.0) else ""
    return pick(
        exact,
        f"attention.uniform_exact{turned}",
        f"attention.uniform_close{turned}",
        noise=tol,
        **fields,
    )


def _layer_claims(ks: KeySet, d: int, length: float) -> dict[str, Claim]:
    """LayerNorm's closed form q ∥ 1, and at d = 2 its two points ±(1, −1)."""
    best = ks.best
    tol = UNIFORM_TOL * length * float(np.max(ks.norms)) / math.sqrt(d)
    closed = both(at_most(math.radians(abs(best.angle)), ANGLE_TOL), at_most(best.spread, tol))
    claims = {
        "closed_form": pick(
            closed,
            "attention.layer_closed_form",
            "attention.layer_closed_form_off",
            noise=tol,
            angle=abs(best.angle),
            spread=best.spread,
        )
    }
    if d == 2:
        point = np.array([1.0, -1.0])
        to_first = np.linalg.norm(ks.keys - point, axis=1)  # (n, 2) -> (n,)
        to_second = np.linalg.norm(ks.keys + point, axis=1)
        dev = float(np.max(np.minimum(to_first, to_second)))
        first = int(np.sum(to_first <= to_second))
        claims["two_points"] = pick(
            at_most(dev, NORM_TOL * math.sqrt(d)),
            "attention.layer_two_points",
            "attention.layer_two_points_off",
            noise=NORM_TOL * math.sqrt(d),
            first=first,
            second=len(ks.keys) - first,
            dev=dev,
        )
    return claims


def _percent(claims: dict[str, Claim]) -> dict[str, Claim]:
    """A chart of weights' summary with its extremes as percentages (``lo_pct``, ``hi_pct``), as
    the bars' axis and the page's other sentences write weights."""
    out = dict(claims)
    words = claims["words"]
    out["words"] = Claim(
        words.key,
        {(f"{k}_pct" if k in ("lo", "hi") else k): v for k, v in words.fields.items()},
        words.noise,
    )
    return out


def _chart_claims(case: str, view: CaseView) -> dict[str, Claim]:
    """Each of the case's charts' caption and accessible name (``labkit.chart_words``), by key
    k1, k2, …: the keys' norms (equal up to NORM_TOL), the weights under the chosen query and at
    the most uniform direction (equal up to TIE_TOL, as the most-weight sentences tie them).
    Slots ``keys_<case>``, ``weights_<case>``, ``best_<case>``, and ``…_not_finite``."""
    ks = view.keyset
    where = [f"k{i + 1}" for i in range(len(ks.keys))]
    charts = {
        "keys": series_words("attention.keys_words", where, ks.norms, rtol=NORM_TOL),
        "weights": _percent(
            series_words("attention.weights_words", where, view.weights, rtol=TIE_TOL)
        ),
        "best": _percent(
            series_words("attention.best_words", where, ks.best.weights, rtol=TIE_TOL)
        ),
    }
    return {
        f"{chart}_{case}" if slot == "words" else f"{chart}_{case}_{slot}": claim
        for chart, words in charts.items()
        for slot, claim in words.items()
    }


def attention_sandbox(
    *,
    d: int,
    n: int,
    seed: int,
    spread: float,
    offset: float,
    angle: float,
    turn: float,
    length: float,
) -> Sandbox:
    """Keys, the query, attention over raw, RMSNorm and LayerNorm keys, and the claims.

    Claims by slot: ``norms_<case>``, ``plane_<case>``, ``select_<case>``, ``top_<case>``,
    ``uniform_<case>`` and ``dial_<case>`` for each case in :data:`CASES`, and its charts'
    summaries (:func:`_chart_claims`); ``closed_form``; ``two_points`` at d = 2."""
    _check_args(d, n, spread, offset, length)
    if not (math.isfinite(angle) and math.isfinite(turn)):
        raise ValueError(f"angle and turn must be finite (got {angle!r}, {turn!r})")
    direction = query_direction(d, angle, turn)
    query = length * direction
    cases: dict[str, CaseView] = {}
    claims: dict[str, Claim] = {}
    for ks in key_sets(d, n, int(seed), float(spread), float(offset), float(length)):
        _, weights = attention(ks.keys, query)
        claims.update(_geometry_claims(ks.case, ks, d, n))
        claims[f"top_{ks.case}"], top = _top_claim(weights)
        claims[f"uniform_{ks.case}"] = _uniform_claim(ks, d, length)
        claims[f"dial_{ks.case}"], dial = _dial_claim(ks, d, length)
        named = tuple(sorted({*top, *dial}))
        cases[ks.case] = CaseView(ks, weights, named)
        claims.update(_chart_claims(ks.case, cases[ks.case]))
    claims.update(_layer_claims(cases["layer"].keyset, d, length))
    return Sandbox(d, n, float(length), direction, query, cases, claims)
