r"""The attention sandbox's keys and query, and what their geometry alone decides.

The keys are :math:`k = \text{spread} \cdot z + \text{offset} \cdot \mathbf{1}`, z the first n rows
and d columns of a (MAX_KEYS, 3) standard normal sample seeded with ``seed``, so that adding a
key or a dimension keeps the others. The query is :math:`q = \text{length} \cdot u` with

.. math:: u = \cos\theta \, \hat{\mathbf{1}}
    + \sin\theta \, (\cos\varphi \, e_1 + \sin\varphi \, e_2),

θ the angle from 1 and φ the turn around 1 (d = 3 only), :math:`\hat{\mathbf 1} = \mathbf
1/\sqrt d`, :math:`e_1 = (-1, 1, 0)/\sqrt2`, :math:`e_2 = (-1, -1, 2)/\sqrt6` (at d = 2,
:math:`e_1 = (-1, 1)/\sqrt2`, and θ runs over the whole circle).

Each version of the keys (raw, RMSNorm, LayerNorm) gets a :class:`KeySet`: the keys no query can
select (the scaling) and the query that makes the scores most equal (the projection)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, QhullError

from core.norms import layer_norm, rms_norm

MIN_KEYS, MAX_KEYS = 3, 12
# eps = 0 for both norms: the paper's decomposition has none, and with it every key lands at
# norm sqrt(d) exactly. An eps > 0 gives norm sqrt(d) r / sqrt(r^2 + eps), r the key's RMS for
# RMSNorm and the standard deviation of its coordinates for LayerNorm: a small r pulls it inside.
NORM_EPS = 0.0

# A key is un-selectable when its best margin (below) is at most this. The margin is measured on
# the keys centred and scaled to radius 1 (hull membership ignores both), so the tolerance is
# relative. It grows linearly with a key's distance from the others' hull (two keys δ apart on a
# circle: about 0.6 δ), so 1e-12 separates keys that coincide up to rounding (LayerNorm's at
# d = 2, about 1e-14 apart at the largest offset) from any two that the sample puts apart.
SELECT_TOL = 1e-12
# Keys whose centred cloud is smaller than this, relative to their norm, sit at one point.
SAME_POINT = 1e-9
# The page's angle and turn controls move in whole degrees, so "point the query here" can only
# set the best direction rounded to them; the sentence beside it quotes attention there.
DIAL_STEP = 1


@dataclass(frozen=True)
class BestQuery:
    """The unit direction u that makes the scores most equal, and attention along it."""

    direction: np.ndarray  # (d,)
    angle: float  # degrees from 1
    turn: float  # degrees around 1 (0 at d = 2)
    width: float  # max_i u·k_i − min_i u·k_i
    spread: float  # length · width / sqrt(d): max − min of the scores
    weights: np.ndarray  # (n,) softmax at q = length · u
    dial: tuple[int, int]  # (angle, turn) rounded to the controls' whole degrees


@dataclass(frozen=True)
class KeySet:
    """One version of the keys and what follows from their geometry alone."""

    case: str
    keys: np.ndarray  # (n, d)
    norms: np.ndarray  # (n,)
    along_ones: np.ndarray  # (n,) k · 1/sqrt(d)
    unselectable: tuple[int, ...]
    hull: np.ndarray  # for drawing: d = 2 vertex loop (m,), d = 3 triangles (f, 3); may be empty
    best: BestQuery


# --- keys and query --------------------------------------------------------------------------


def draw_keys(d: int, n: int, seed: int, spread: float, offset: float) -> np.ndarray:
    """spread · z + offset · 1, z the first n × d block of a seeded (MAX_KEYS, 3) normal sample."""
    z = np.random.default_rng(seed).standard_normal((MAX_KEYS, 3))[:n, :d]  # (n, d)
    return spread * z + offset


def normalised(raw: np.ndarray) -> dict[str, np.ndarray]:
    """The three versions of the keys, each (n, d): raw, RMSNorm, LayerNorm (eps = 0)."""
    return {
        "raw": raw,
        "rms": np.asarray(rms_norm(raw, eps=NORM_EPS)),
        "layer": np.asarray(layer_norm(raw, eps=NORM_EPS)),
    }


def plane_basis(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(1/sqrt(d), e_1, e_2): the ones direction and an orthonormal basis of the plane ⟂ 1."""
    ones = np.ones(d) / math.sqrt(d)
    if d == 2:
        return ones, np.array([-1.0, 1.0]) / math.sqrt(2.0), np.zeros(2)
    return (
        ones,
        np.array([-1.0, 1.0, 0.0]) / math.sqrt(2.0),
        np.array([-1.0, -1.0, 2.0]) / math.sqrt(6.0),
    )


def query_direction(d: int, angle: float, turn: float) -> np.ndarray:
    """The unit vector at ``angle`` degrees from 1 and ``turn`` degrees around it (d = 3)."""
    ones, e1, e2 = plane_basis(d)
    theta, phi = math.radians(angle), math.radians(turn if d == 3 else 0.0)
    return math.cos(theta) * ones + math.sin(theta) * (math.cos(phi) * e1 + math.sin(phi) * e2)


def direction_angles(u: np.ndarray) -> tuple[float, float]:
    """(angle, turn) in degrees of a unit vector: the inverse of :func:`query_direction`.

    A direction along ±1 up to rounding (1e-12) reads exactly 0° or 180°, turn 0°."""
    ones, e1, e2 = plane_basis(u.shape[-1])
    along, a, b = float(u @ ones), float(u @ e1), float(u @ e2)
    across = abs(a) if u.shape[-1] == 2 else math.hypot(a, b)
    if across <= 1e-12:
        return (0.0 if along > 0 else 180.0), 0.0
    if u.shape[-1] == 2:
        return math.degrees(math.atan2(a, along)), 0.0
    return math.degrees(math.atan2(across, along)), math.degrees(math.atan2(b, a))


def attention(keys: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scores q·k_i/sqrt(d) and their softmax: (n, d), (d,) -> (n,), (n,)."""
    scores = keys @ query / math.sqrt(keys.shape[-1])  # (n, d) @ (d,) -> (n,)
    shifted = np.exp(scores - scores.max())
    return scores, shifted / shifted.sum()


# --- scaling: which keys can be selected -----------------------------------------------------


def selection_margins(keys: np.ndarray) -> np.ndarray:
    """For each key, max over queries q in the box [-1, 1]^d of min_{j != i} q·(k_i − k_j).

    A linear program per key (HiGHS), on the keys centred and scaled to radius 1. Positive: some
    query scores key i strictly above every other key. At most 0: key i is in the convex hull of
    the others (the two are equivalent by the separating-hyperplane theorem)."""
    centred = keys - keys.mean(axis=0)  # (n, d)
    radius = float(np.max(np.linalg.norm(centred, axis=1)))
    n, d = keys.shape
    if radius <= SAME_POINT * float(np.max(np.linalg.norm(keys, axis=1))):
        # Every key at one point up to rounding (LayerNorm at d = 2 when all keys fall on one
        # side): they always tie. Scaled up, their rounding noise would look like a shape.
        return np.zeros(n)
    unit = centred / radius
    cost = np.zeros(d + 1)
    cost[-1] = -1.0  # maximise t
    bounds = [(-1.0, 1.0)] * d + [(None, None)]
    margins = np.empty(n)
    for i in range(n):
        diffs = unit[i] - np.delete(unit, i, axis=0)  # (n - 1, d)
        a_ub = np.hstack([-diffs, np.ones((n - 1, 1))])  # t − q·(k_i − k_j) <= 0
        result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(n - 1), bounds=bounds, method="highs")
        margins[i] = -result.fun
    return margins


def hull_for_drawing(keys: np.ndarray) -> np.ndarray:
    """The convex hull to draw: d = 2 its vertices in order, d = 3 its triangles (flat hulls
    such as LayerNorm's coplanar keys are joggled by Qhull); empty where there is none."""
    if len(np.unique(np.round(keys, 12), axis=0)) <= keys.shape[1]:
        return np.zeros((0,), dtype=int)
    try:
        hull = ConvexHull(keys, qhull_options="QJ")
    except (QhullError, ValueError):
        return np.zeros((0,), dtype=int)
    return np.asarray(hull.vertices if keys.shape[1] == 2 else hull.simplices)


# --- projection: the query that makes the scores most equal ----------------------------------


def _unit_rows(vectors: np.ndarray, scale: float) -> np.ndarray:
    lengths = np.linalg.norm(vectors, axis=1)  # (m, d) -> (m,)
    keep = lengths > 1e-12 * max(scale, 1e-300)
    return vectors[keep] / lengths[keep, None]


def candidate_directions(keys: np.ndarray) -> np.ndarray:
    """Unit directions among which the minimum width of the keys is attained, (m, d).

    The width max u·k − min u·k over unit u is smallest perpendicular to a hull edge at d = 2, and
    at d = 3 perpendicular to a face or to two edges (Houle & Toussaint, 1988). So the directions
    ⟂ every difference of two keys (d = 2), and the normals of every three keys and of every two
    differences (d = 3), contain the minimiser. 1 and the axes cover keys on one line or at one
    point (where every direction ⟂ that line is as good)."""
    d = keys.shape[1]
    diffs = np.array([keys[i] - keys[j] for i, j in combinations(range(len(keys)), 2)])
    axes = np.eye(d)
    if d == 2:
        found = diffs @ np.array([[0.0, 1.0], [-1.0, 0.0]])  # each difference turned by 90°
    else:
        pairs = np.array(list(combinations(range(len(diffs)), 2)))
        found = np.vstack(
            [np.cross(diffs[pairs[:, 0]], diffs[pairs[:, 1]])]
            + [np.cross(diffs, axis) for axis in axes]
        )
    scale = float(np.max(np.abs(diffs))) ** 2 if len(diffs) else 1.0
    # 1 first: where it ties with another direction (LayerNorm's keys), it is the one chosen.
    return np.vstack([np.ones((1, d)) / math.sqrt(d), axes, _unit_rows(found, scale)])


def best_query(keys: np.ndarray, length: float) -> BestQuery:
    """The unit direction minimising the score spread over unit queries, exactly (see
    :func:`candidate_directions`); among equally good ones, the closest to ±1."""
    n, d = keys.shape
    centred = keys - keys.mean(axis=0)  # widths ignore a common shift
    dirs = candidate_directions(centred)  # (m, d)
    proj = dirs @ centred.T  # (m, n)
    widths = proj.max(axis=1) - proj.min(axis=1)  # (m,)
    # Widths within rounding of the minimum tie (relative to the keys' norm: keys at one point tie).
    scale = max(float(np.max(np.linalg.norm(keys, axis=1))), 1e-300)
    good = widths <= widths.min() + 1e-12 * scale
    ones = np.ones(d) / math.sqrt(d)
    # Rounded, so that a normal equal to 1 up to rounding does not win over 1 itself.
    closeness = np.round(np.abs(dirs[good] @ ones), 12)
    choice = int(np.flatnonzero(good)[np.argmax(closeness)])
    u = dirs[choice] if dirs[choice] @ ones >= 0 else -dirs[choice]
    angle, turn = direction_angles(u)
    width = float(widths[choice])
    _, weights = attention(keys, length * u)
    spread = length * width / math.sqrt(d)
    dial = tuple(int(DIAL_STEP * round(a / DIAL_STEP)) for a in (angle, turn))
    return BestQuery(u, angle, turn, width, spread, weights, dial)


@lru_cache(maxsize=64)
def key_sets(d: int, n: int, seed: int, spread: float, offset: float, length: float) -> tuple:
    """The three :class:`KeySet` for one link's keys (cached: the query does not change them)."""
    sets = []
    for case, keys in normalised(draw_keys(d, n, seed, spread, offset)).items():
        keys.setflags(write=False)
        margins = selection_margins(keys)
        sets.append(
            KeySet(
                case=case,
                keys=keys,
                norms=np.linalg.norm(keys, axis=1),
                along_ones=keys.sum(axis=1) / math.sqrt(d),
                unselectable=tuple(int(i) for i in np.flatnonzero(margins <= SELECT_TOL)),
                hull=hull_for_drawing(keys),
                best=best_query(keys, length),
            )
        )
    return tuple(sets)
