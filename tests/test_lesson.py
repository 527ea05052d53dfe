"""core.lesson: each step's numbers against independent formulas, and the verdicts they give."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.invariance import TRANSFORMS
from core.lesson import (
    LESSON_EPS,
    OPTIONS,
    RESCALE_FACTOR,
    SHIFT_C,
    STEP_IDS,
    TINY_SCALE,
    ULP_LIMIT,
    _which,
    lesson_step,
    lesson_vector,
)


def test_every_step_has_options_and_a_correct_answer_among_them() -> None:
    assert 8 <= len(STEP_IDS) <= 10
    for step_id in STEP_IDS:
        r = lesson_step(step_id)
        assert r.step_id == step_id
        assert r.correct in OPTIONS[step_id]
        assert all(math.isfinite(v) for v in r.numbers.values()), step_id


def test_unknown_step_is_refused() -> None:
    with pytest.raises(ValueError, match="step_id"):
        lesson_step("nope")


@pytest.mark.parametrize(
    ("rms_same", "layer_same", "letter"),
    [(True, True, "A"), (True, False, "B"), (False, True, "C"), (False, False, "D")],
)
def test_shared_options_map_both_measurements(rms_same: bool, layer_same: bool, letter: str):
    assert _which(rms_same, layer_same) == letter


def test_lesson_vector_is_seeded_and_off_centre() -> None:
    x = lesson_vector()
    np.testing.assert_array_equal(x, lesson_vector())
    # Off centre by more than its spread's third: the mean is visible in every figure.
    assert np.mean(x) > np.std(x) / 3


def test_centre_matches_the_formulas() -> None:
    x = lesson_vector()
    r = lesson_step("centre")
    rms = math.sqrt(np.mean(x**2) + LESSON_EPS)
    np.testing.assert_allclose(r.arrays["y_rms"], x / rms, rtol=1e-14)
    np.testing.assert_allclose(r.numbers["mean_rms"], np.mean(x) / rms, rtol=1e-13)
    np.testing.assert_allclose(r.numbers["mean_layer"], 0.0, atol=1e-15)
    assert r.correct == "B"


def test_identity_only_the_second_moment_moves() -> None:
    x = lesson_vector()
    n = lesson_step("identity").numbers
    var = np.mean((x - np.mean(x)) ** 2)
    np.testing.assert_allclose([n["var_before"], n["var_after"]], var, rtol=1e-12)
    np.testing.assert_allclose(n["rms2_after"], var + (np.mean(x) + SHIFT_C) ** 2, rtol=1e-12)
    assert lesson_step("identity").correct == "A"


def test_rescale_is_cancelled_by_both_and_shift_only_by_layernorm() -> None:
    rescale, shift = lesson_step("rescale"), lesson_step("shift")
    assert rescale.numbers["size"] == RESCALE_FACTOR
    # Only eps is not rescaled: the change is of order eps / Var(x).
    assert rescale.numbers["change_rms"] < 10 * LESSON_EPS
    assert rescale.numbers["change_layer"] < 10 * LESSON_EPS
    assert rescale.correct == "A"
    assert shift.numbers["change_layer"] < 1e-12
    assert shift.numbers["change_rms"] > 0.1
    assert shift.correct == "C"


def test_sweep_turns_rmsnorm_onto_the_ones_direction() -> None:
    r = lesson_step("sweep")
    x = lesson_vector()
    y = x + r.numbers["c_max"]
    y = y / math.sqrt(np.mean(y**2) + LESSON_EPS)
    along = np.mean(y) ** 2 * y.size / np.sum(y**2)  # <y, 1/sqrt(d)>^2 / |y|^2
    np.testing.assert_allclose(r.numbers["energy_far"], along, rtol=1e-12)
    np.testing.assert_allclose(r.arrays["layer_cosine"], 1.0, atol=1e-12)
    assert r.correct == "B"


def test_plane_layernorm_on_the_axis_rmsnorm_on_the_ray() -> None:
    n = lesson_step("plane").numbers
    x = lesson_vector()
    np.testing.assert_allclose(n["x_a"], np.sum(x) / math.sqrt(x.size), rtol=1e-13)
    np.testing.assert_allclose(n["layer_a"], 0.0, atol=1e-12)
    np.testing.assert_allclose(n["rms_b"] / n["rms_a"], n["x_b"] / n["x_a"], rtol=1e-12)
    assert lesson_step("plane").correct == "B"


def test_table_agrees_with_the_paper() -> None:
    r = lesson_step("table")
    assert [row["id"] for row in r.rows] == list(TRANSFORMS)
    for row in r.rows:
        if row["in_paper"]:
            assert row["layer_invariant"] == row["paper_layer"], row["id"]
            assert row["rms_invariant"] == row["paper_rms"], row["id"]
    assert r.correct == "C"  # weight-matrix re-centring: LayerNorm only, as Table 1 says


def test_eps_placement_matches_the_two_formulas() -> None:
    n = lesson_step("eps").numbers
    x = TINY_SCALE * lesson_vector()
    ms = np.mean(x**2)
    np.testing.assert_allclose(n["out_inside"], math.sqrt(ms / (ms + LESSON_EPS)), rtol=1e-12)
    np.testing.assert_allclose(
        n["out_outside"], math.sqrt(ms) / (math.sqrt(ms) + LESSON_EPS), rtol=1e-12
    )
    assert lesson_step("eps").correct == "B"


def test_precision_differences_are_last_bit_only() -> None:
    r = lesson_step("precision")
    n = r.numbers
    assert n["n_same"] + n["n_diff"] == n["d"] == np.sum(r.arrays["counts"])
    assert n["n_diff"] > 0
    assert n["worst_ulps"] <= ULP_LIMIT
    assert n["max_rel"] < ULP_LIMIT * np.finfo(np.float32).eps
    assert r.correct == "B"


def test_gain_zero_loaded_as_direct_gain_is_all_zeros() -> None:
    r = lesson_step("gain")
    np.testing.assert_array_equal(r.arrays["loaded"], 0.0)
    np.testing.assert_allclose(r.numbers["rms_meant"], 1.0, rtol=1e-6)
    assert r.correct == "B"
