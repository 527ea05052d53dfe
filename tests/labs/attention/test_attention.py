"""labs.attention.model against brute force, closed forms and torch.

Un-selectable keys (a linear program per key) are checked against many query directions: a key
is selectable exactly when some direction scores it strictly above every other key. The most
uniform query (an exact enumeration) is checked against dense sampling, against shapes whose
width is known, and, for LayerNorm's keys, against the closed form q ∥ 1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, settings
from hypothesis import strategies as st

from labs.attention.key_geometry import (
    MAX_KEYS,
    MIN_KEYS,
    attention,
    best_query,
    direction_angles,
    draw_keys,
    normalised,
    query_direction,
    selection_margins,
)
from labs.attention.model import CASES, attention_sandbox
from tests.hypothesis_util import examples
from ui.i18n import t

# Directions sampled for the brute-force checks: a circle, and a Fibonacci sphere.
CIRCLE = 100_000
SPHERE = 200_000
# A key is "strictly top" in a sampled direction when it beats the runner-up by this much
# (relative to the keys' size), so rounding cannot make a tie look like a win.
WIN = 1e-9


def circle(count: int = CIRCLE) -> np.ndarray:
    t = np.linspace(0.0, 2.0 * math.pi, count, endpoint=False)
    return np.stack([np.cos(t), np.sin(t)], axis=1)


def sphere(count: int = SPHERE) -> np.ndarray:
    i = np.arange(count) + 0.5
    z = 1.0 - 2.0 * i / count
    r = np.sqrt(1.0 - z**2)
    phi = i * math.pi * (3.0 - math.sqrt(5.0))
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def winners(keys: np.ndarray) -> set[int]:
    """Keys that some sampled direction scores strictly above all the others."""
    dirs = circle() if keys.shape[1] == 2 else sphere()
    found: set[int] = set()
    scale = float(np.max(np.linalg.norm(keys - keys.mean(axis=0), axis=1)))
    for chunk in np.array_split(dirs, 20):
        scores = chunk @ keys.T  # (m, n)
        order = np.sort(scores, axis=1)
        strict = order[:, -1] - order[:, -2] > WIN * scale
        found |= set(np.argmax(scores[strict], axis=1).tolist())
    return found


BRUTE_STATES = [
    # (d, n, seed, spread, offset)
    (2, 7, 0, 1.0, 0.0),
    (2, 12, 3, 2.0, 5.0),
    (2, 5, 11, 0.1, -10.0),
    (3, 7, 7, 1.0, 0.0),
    (3, 12, 5, 1.0, 2.0),
    (3, 9, 19, 0.5, -4.0),
]
# Hypothesis draws of draw_keys's arguments, for the properties that hold at any of them.
KEY_DRAWS = {
    "d": st.sampled_from((2, 3)),
    "n": st.integers(MIN_KEYS, MAX_KEYS),
    "seed": st.integers(0, 2**31 - 1),
    "spread": st.floats(0.1, 5.0),
    "offset": st.floats(-10.0, 10.0),
}


@pytest.mark.parametrize("d,n,seed,spread,offset", BRUTE_STATES)
def test_unselectable_keys_agree_with_brute_force(d, n, seed, spread, offset) -> None:
    box = attention_sandbox(
        d=d, n=n, seed=seed, spread=spread, offset=offset, angle=0, turn=0, length=1.0
    )
    for case in CASES:
        ks = box.cases[case].keyset
        selectable = set(range(n)) - set(ks.unselectable)
        assert winners(ks.keys) == selectable, (case, ks.unselectable)


def test_brute_force_states_include_unselectable_and_tied_keys() -> None:
    """The states above are not all easy: raw keys inside the hull, LayerNorm's d = 2 ties."""
    hidden = {
        (d, case): len(
            attention_sandbox(d=d, n=n, seed=s, spread=sp, offset=o, angle=0, turn=0, length=1.0)
            .cases[case]
            .keyset.unselectable
        )
        for d, n, s, sp, o in BRUTE_STATES
        for case in CASES
    }
    assert hidden[(2, "raw")] > 0 and hidden[(3, "raw")] > 0
    assert hidden[(2, "layer")] > 0  # keys stacked on (1, -1) or (-1, 1)
    assert hidden[(3, "rms")] == hidden[(3, "layer")] == 0


def test_a_key_at_the_centre_of_a_square_is_unselectable() -> None:
    square = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [0.0, 0.0]])
    margins = selection_margins(square)
    assert margins[4] <= 1e-12
    assert np.all(margins[:4] > 0.1)
    # On an edge counts too: the midpoint of two keys always scores their average.
    edge = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    assert selection_margins(edge)[3] <= 1e-12


def test_coincident_keys_are_unselectable_and_a_lone_one_is_not() -> None:
    keys = np.array([[1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    margins = selection_margins(keys)
    assert margins[0] <= 1e-12 and margins[1] <= 1e-12 and margins[2] > 0.1


def test_two_keys_a_hair_apart_on_a_circle_are_both_selectable() -> None:
    """The margin shrinks linearly with the gap, so keys 1e-6 rad apart are told apart; keys at
    one point are not."""
    angles = np.array([0.3, 1.5, 2.9, 4.0, 5.2, 0.3 + 1e-6])
    keys = math.sqrt(2) * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    margins = selection_margins(keys)
    assert np.all(margins > 1e-7)
    keys[5] = keys[0]
    margins = selection_margins(keys)
    assert margins[0] <= 1e-12 and margins[5] <= 1e-12 and np.all(margins[1:5] > 0.1)


# --- the most uniform query ------------------------------------------------------------------


def sampled_min_width(keys: np.ndarray) -> float:
    dirs = circle() if keys.shape[1] == 2 else sphere()
    proj = dirs @ keys.T
    return float(np.min(proj.max(axis=1) - proj.min(axis=1)))


def test_known_widths_are_found_exactly() -> None:
    # Regular tetrahedron with edge 2√2: its width is attained between two opposite edges
    # (edge / √2 = 2), a direction no face normal gives.
    tetra = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])
    best = best_query(tetra, length=math.sqrt(3))
    assert best.width == pytest.approx(2.0, abs=1e-12)
    assert best.spread == pytest.approx(2.0, abs=1e-12)  # length · width / √d
    # A 3-4-5 right triangle: the smallest of its heights, 12/5, perpendicular to the hypotenuse.
    tri = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    assert best_query(tri, length=1.0).width == pytest.approx(2.4, abs=1e-12)
    # Cube corners: width 2 (the side), along an axis.
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    assert best_query(cube, length=1.0).width == pytest.approx(2.0, abs=1e-12)


@pytest.mark.parametrize("d,n,seed,spread,offset", BRUTE_STATES)
def test_best_query_beats_every_sampled_direction(d, n, seed, spread, offset) -> None:
    for case, keys in normalised(draw_keys(d, n, seed, spread, offset)).items():
        best = best_query(keys, length=1.0)
        sampled = sampled_min_width(keys)
        # Exact: never worse than a sample, and samples get close to it.
        assert best.width <= sampled + 1e-12, case
        # A sample is at most about `gap` radians from the best direction, and turning by δ
        # changes a width by at most 2 δ max|k|.
        gap = 2 * math.pi / CIRCLE if d == 2 else 2 * math.sqrt(4 * math.pi / SPHERE)
        assert sampled - best.width <= 2 * gap * np.max(np.linalg.norm(keys, axis=1)), case
        proj = keys @ best.direction
        assert proj.max() - proj.min() == pytest.approx(best.width, abs=1e-12)


@settings(max_examples=examples(40), deadline=None)
@given(**KEY_DRAWS, length=st.sampled_from((0.5, 3.0, 8.0)))
@example(d=2, n=4, seed=4, spread=0.1015625, offset=8.0, length=0.5)
@example(d=2, n=4, seed=4, spread=0.125, offset=1.0, length=8.0)
def test_layer_norm_best_query_is_the_closed_form(d, n, seed, spread, offset, length) -> None:
    layer = normalised(draw_keys(d, n, seed, spread, offset))["layer"]
    best = best_query(layer, length)
    np.testing.assert_allclose(best.direction, np.ones(d) / math.sqrt(d), atol=1e-12)
    assert best.angle == 0.0 and best.turn == 0.0
    # Centring (offset + spread * z) loses about |offset| / spread of the keys' precision, so the
    # rounding left in the scores grows with it (d = 2, offset 8, spread 0.1: 1.4e-12).
    rounding = 1e-12 * (1 + abs(offset) / spread)
    assert best.spread <= rounding * length * math.sqrt(d)
    np.testing.assert_allclose(best.weights, np.full(n, 1.0 / n), rtol=rounding * length)


def test_three_keys_in_three_dimensions_always_admit_uniform_attention() -> None:
    """Three points span a plane: its normal scores all three equally, raw or normalised."""
    box = attention_sandbox(d=3, n=3, seed=2, spread=1.0, offset=1.0, angle=0, turn=0, length=5)
    for case in CASES:
        assert box.cases[case].keyset.best.spread <= 1e-12 * 5 * 10
        assert box.claims[f"uniform_{case}"].key.startswith("attention.uniform_exact")


# --- keys, queries, attention ----------------------------------------------------------------


def test_keys_follow_the_documented_draw_and_torch_norms() -> None:
    z = np.random.default_rng(5).standard_normal((MAX_KEYS, 3))
    raw = draw_keys(3, 4, 5, 2.0, -1.5)
    np.testing.assert_array_equal(raw, 2.0 * z[:4, :3] - 1.5)
    # One more key, or one fewer dimension, keeps the others.
    np.testing.assert_array_equal(draw_keys(3, 5, 5, 2.0, -1.5)[:4], raw)
    np.testing.assert_array_equal(draw_keys(2, 4, 5, 2.0, -1.5), raw[:, :2])
    versions = normalised(raw)
    t = torch.from_numpy(raw)
    np.testing.assert_allclose(versions["rms"], F.rms_norm(t, (3,), eps=0.0).numpy(), atol=1e-14)
    np.testing.assert_allclose(
        versions["layer"], F.layer_norm(t, (3,), eps=0.0).numpy(), atol=1e-14
    )


@given(
    d=st.sampled_from((2, 3)),
    angle=st.floats(-180.0, 180.0),
    turn=st.floats(-180.0, 180.0),
)
def test_query_angles_round_trip(d, angle, turn) -> None:
    u = query_direction(d, angle, turn)
    assert np.linalg.norm(u) == pytest.approx(1.0, abs=1e-14)
    back = query_direction(d, *direction_angles(u))
    np.testing.assert_allclose(back, u, atol=1e-12)
    assert math.cos(math.radians(angle)) == pytest.approx(u.sum() / math.sqrt(d), abs=1e-12)


def test_angle_zero_is_the_ones_direction() -> None:
    for d in (2, 3):
        np.testing.assert_allclose(query_direction(d, 0, 77), np.ones(d) / math.sqrt(d))
    np.testing.assert_allclose(query_direction(2, 90, 0), [-1 / math.sqrt(2), 1 / math.sqrt(2)])


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_eps_sentence_names_what_each_norm_shrinks_by(lang: str) -> None:
    """With eps > 0 a key's norm is sqrt(d) r / sqrt(r^2 + eps): r its RMS under RMSNorm, the
    standard deviation of its coordinates under LayerNorm. The page says so, not "spread"."""
    text = t("attention.explain_eps", lang)
    assert "√d · r/√(r² + ε)" in text
    assert "RMS" in text and ("standard deviation" in text or "simpangan baku" in text)
    assert "small spread" not in text and "sebaran kecil" not in text
    eps, d = 0.01, 3
    # A key with a small spread around a large offset: a large RMS, a small standard deviation.
    keys = torch.tensor(
        [[10.05, 9.9, 10.02], [0.05, -0.08, 0.02], [3.0, -1.0, 2.0]], dtype=torch.float64
    )
    rms = keys.square().mean(dim=1).sqrt()
    std = keys.std(dim=1, correction=0)
    for out, r in (
        (F.rms_norm(keys, (d,), eps=eps), rms),
        (F.layer_norm(keys, (d,), eps=eps), std),
    ):
        np.testing.assert_allclose(
            out.norm(dim=1).numpy(),
            (math.sqrt(d) * r / (r.square() + eps).sqrt()).numpy(),
            rtol=1e-12,
        )
    # The first key: RMSNorm keeps it on the sphere to 5e-5, LayerNorm pulls it well inside.
    assert F.rms_norm(keys, (d,), eps=eps)[0].norm() > math.sqrt(d) * (1 - 1e-4)
    assert F.layer_norm(keys, (d,), eps=eps)[0].norm() < 0.8 * math.sqrt(d)


def test_attention_is_scaled_dot_product_softmax() -> None:
    keys = draw_keys(3, 6, 1, 1.5, 0.5)
    q = np.array([0.3, -2.0, 1.1])
    scores, weights = attention(keys, q)
    expected = torch.softmax(torch.from_numpy(keys @ q) / math.sqrt(3), dim=0).numpy()
    np.testing.assert_allclose(weights, expected, rtol=1e-13)
    np.testing.assert_allclose(scores, keys @ q / math.sqrt(3), rtol=1e-15)


@settings(max_examples=examples(25), deadline=None)
@given(**KEY_DRAWS)
def test_offset_and_spread_change_neither_layer_norm_nor_which_raw_keys_hide(
    d, n, seed, spread, offset
) -> None:
    base = normalised(draw_keys(d, n, seed, 1.0, 0.0))
    moved = normalised(draw_keys(d, n, seed, spread, offset))
    # LayerNorm cancels both (eps = 0), up to the rounding of x − mean at |offset| / spread.
    np.testing.assert_allclose(
        moved["layer"], base["layer"], atol=1e-13 * (1 + abs(offset) / spread)
    )
    hidden = [selection_margins(v["raw"]) <= 1e-9 for v in (base, moved)]
    np.testing.assert_array_equal(hidden[0], hidden[1])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"d": 4},
        {"n": 2},
        {"n": MAX_KEYS + 1},
        {"spread": 0.0},
        {"offset": 11.0},
        {"length": 0.0},
        {"length": math.inf},
        {"angle": math.nan},
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs) -> None:
    args = {"d": 3, "n": 5, "seed": 0, "spread": 1.0, "offset": 0.0, "angle": 0, "turn": 0}
    args["length"] = 1.0
    args.update(kwargs)
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=name):
        attention_sandbox(**args)
