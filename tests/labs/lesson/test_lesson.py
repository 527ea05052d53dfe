"""labs.lesson.model: each step's numbers against independent formulas, and their verdicts."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import torch

from labs.invariance.table import TRANSFORMS
from labs.lesson.example import LESSON_EPS, lesson_vector, which_unchanged
from labs.lesson.geometry import RESCALE_FACTOR, SHIFT_C, coordinate_scale
from labs.lesson.model import lesson_step
from labs.lesson.numerics import (
    TINY_SCALE,
    precision_outputs,
    stored_weight,
    upstream_gradient,
)
from labs.lesson.options import EXPLAINED, MOST_PER_LETTER, OPTIONS, STEP_IDS, letter


def test_every_step_has_options_and_the_answer_its_explanation_was_written_for() -> None:
    assert len(STEP_IDS) == 14
    for step_id in STEP_IDS:
        r = lesson_step(step_id)
        assert r.step_id == step_id
        assert r.options == OPTIONS[step_id] and len(set(r.options)) == len(r.options)
        assert r.correct in r.options
        assert r.correct == EXPLAINED[step_id], step_id
        assert all(math.isfinite(v) for v in r.numbers.values()), step_id
        answer = r.claims["answer"].fields
        assert answer == {"letter": r.letter(r.correct), "option": r.correct}
        assert answer["letter"] == "ABCD"[r.options.index(r.correct)]
        assert r.claims["explain"].key == f"lesson.{step_id}_explain"


def test_no_letter_is_right_in_more_than_five_steps() -> None:
    """Always answering the same letter must not pass the lesson: over the fourteen steps each
    letter is the right one at most five times."""
    right = Counter(lesson_step(s).letter(lesson_step(s).correct) for s in STEP_IDS)
    assert sum(right.values()) == len(STEP_IDS)
    assert max(right.values()) <= MOST_PER_LETTER == 5, right


def test_letters_are_positions_in_the_fixed_order() -> None:
    r = lesson_step("centre")
    assert [r.letter(o) for o in r.options] == ["A", "B", "C", "D"]
    assert [letter("eps", o) for o in OPTIONS["eps"]] == ["A", "B"]


def test_unknown_step_is_refused() -> None:
    with pytest.raises(ValueError, match="step_id"):
        lesson_step("nope")


@pytest.mark.parametrize(
    ("rms_same", "layer_same", "option"),
    [(True, True, "both"), (True, False, "rms"), (False, True, "layer"), (False, False, "neither")],
)
def test_shared_options_map_both_measurements(rms_same: bool, layer_same: bool, option: str):
    assert which_unchanged(rms_same, layer_same) == option


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
    assert r.correct == "ratio"


def test_identity_only_the_second_moment_moves() -> None:
    x = lesson_vector()
    n = lesson_step("identity").numbers
    var = np.mean((x - np.mean(x)) ** 2)
    np.testing.assert_allclose([n["var_before"], n["var_after"]], var, rtol=1e-12)
    np.testing.assert_allclose(n["rms2_after"], var + (np.mean(x) + SHIFT_C) ** 2, rtol=1e-12)
    assert lesson_step("identity").correct == "rms2"


def test_rescale_is_cancelled_by_both_and_shift_only_by_layernorm() -> None:
    rescale, shift = lesson_step("rescale"), lesson_step("shift")
    assert rescale.numbers["size"] == RESCALE_FACTOR
    # Only eps is not rescaled: the change is of order eps / Var(x).
    assert rescale.numbers["change_rms"] < 10 * LESSON_EPS
    assert rescale.numbers["change_layer"] < 10 * LESSON_EPS
    assert rescale.correct == "both"
    assert shift.numbers["change_layer"] < 1e-12
    assert shift.numbers["change_rms"] > 0.1
    assert shift.correct == "layer"


def test_sweep_turns_rmsnorm_onto_the_ones_direction() -> None:
    r = lesson_step("sweep")
    x = lesson_vector()
    y = x + r.numbers["c_max"]
    y = y / math.sqrt(np.mean(y**2) + LESSON_EPS)
    along = np.mean(y) ** 2 * y.size / np.sum(y**2)  # <y, 1/sqrt(d)>^2 / |y|^2
    np.testing.assert_allclose(r.numbers["energy_far"], along, rtol=1e-12)
    np.testing.assert_allclose(r.arrays["layer_cosine"], 1.0, atol=1e-12)
    assert r.correct == "ones"


def test_plane_layernorm_on_the_axis_rmsnorm_on_the_ray() -> None:
    n = lesson_step("plane").numbers
    x = lesson_vector()
    np.testing.assert_allclose(n["x_a"], np.sum(x) / math.sqrt(x.size), rtol=1e-13)
    np.testing.assert_allclose(n["layer_a"], 0.0, atol=1e-12)
    np.testing.assert_allclose(n["rms_b"] / n["rms_a"], n["x_b"] / n["x_a"], rtol=1e-12)
    # Angles measured from 1, as on every page.
    cos = np.sum(x) / (np.linalg.norm(x) * math.sqrt(x.size))
    np.testing.assert_allclose(n["angle_x"], math.degrees(math.acos(cos)), rtol=1e-12)
    np.testing.assert_allclose(n["angle_layer"], 90.0, atol=1e-9)
    assert lesson_step("plane").correct == "rms_on_x"


def test_table_agrees_with_the_paper() -> None:
    r = lesson_step("table")
    assert [row["id"] for row in r.rows] == list(TRANSFORMS)
    for row in r.rows:
        if row["in_paper"]:
            assert row["layer_invariant"] == row["paper_layer"], row["id"]
            assert row["rms_invariant"] == row["paper_rms"], row["id"]
    assert r.correct == "layer"  # weight-matrix re-centring: LayerNorm only, as Table 1 says
    assert r.numbers["agree"] == r.numbers["total"] == 6


def test_eps_placement_matches_the_two_formulas() -> None:
    n = lesson_step("eps").numbers
    x = TINY_SCALE * lesson_vector()
    ms = np.mean(x**2)
    np.testing.assert_allclose(n["out_inside"], math.sqrt(ms / (ms + LESSON_EPS)), rtol=1e-12)
    np.testing.assert_allclose(
        n["out_outside"], math.sqrt(ms) / (math.sqrt(ms) + LESSON_EPS), rtol=1e-12
    )
    assert lesson_step("eps").correct == "yes"


def test_precision_is_the_compute_dtype_and_the_count_depends_on_the_implementation() -> None:
    r = lesson_step("precision")
    n = r.numbers
    assert n["n_same"] + n["n_diff"] == n["d"] == np.sum(r.arrays["counts"])
    assert n["n_diff"] > 0 and n["worst_ulps"] == 1
    # Dividing by the root and multiplying by its reciprocal change different outputs.
    assert n["n_diff_mul"] != n["n_diff"]
    assert r.claims["detail"].key == "lesson.precision_reduction_exact"
    assert r.correct == "ulps"


def test_precision_outputs_are_the_named_computations() -> None:
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    y = precision_outputs(x, 1e-6)
    assert y["divide"].dtype == y["multiply"].dtype == y["exact"].dtype == np.float32
    exact = torch.nn.functional.rms_norm(torch.from_numpy(x).double(), (64,), eps=1e-6)
    np.testing.assert_array_equal(y["exact"], exact.float().numpy())
    # torch's own float32 rsqrt-and-multiply (Llama's formula) on a CPU tensor.
    t = torch.from_numpy(x)
    llama = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6)
    np.testing.assert_allclose(y["multiply"], llama.numpy(), rtol=2e-7)


def test_gain_small_w_loaded_as_direct_gain_shrinks_and_flips() -> None:
    r = lesson_step("gain")
    x, w = lesson_vector(), stored_weight()
    y = x / np.sqrt(np.mean(x**2) + LESSON_EPS)
    np.testing.assert_allclose(r.arrays["meant"], (1 + w) * y, rtol=1e-12)
    np.testing.assert_allclose(r.arrays["loaded"], w * y, rtol=1e-12)
    assert r.numbers["flips"] == np.count_nonzero(w < 0) > 0
    assert r.numbers["ratio"] < 0.5
    assert r.correct == "flipped"


def test_scales_negative_flips_and_per_coordinate_breaks_both() -> None:
    r = lesson_step("scales")
    s = coordinate_scale()
    assert 0.5 <= s.min() and s.max() <= 2.0
    x = lesson_vector()
    for norm in ("rms", "layer"):
        np.testing.assert_allclose(
            r.arrays[f"neg_{norm}_after"], -r.arrays[f"neg_{norm}_before"], atol=1e-6
        )
        assert r.numbers[f"coord_change_{norm}"] > 0.1
    np.testing.assert_array_equal(r.arrays["coord_rms_before"], r.arrays["neg_rms_before"])
    assert r.correct == "flip_move" and x.shape == s.shape


def test_recenter_moves_both_norms_and_the_shift_is_not_along_ones() -> None:
    r = lesson_step("recenter")
    assert r.numbers["res_rms"] > 0.1 and r.numbers["res_layer"] > 0.1
    shift = r.arrays["shift"]
    np.testing.assert_allclose(r.numbers["shift_spread"], np.std(shift), rtol=1e-12)
    assert 10 < r.numbers["shift_angle"] < 90
    assert r.correct == "neither"


@pytest.mark.parametrize("eps", [0.0, 1e-6, 1.0])
def test_gradient_step_matches_autograd(eps: float) -> None:
    x, g = lesson_vector(), upstream_gradient()
    r = lesson_step("gradient")
    k = list(r.arrays["eps"]).index(eps)
    for name, norm in (
        ("rms", torch.nn.functional.rms_norm),
        ("layer", torch.nn.functional.layer_norm),
    ):
        xt = torch.tensor(x, requires_grad=True)
        (norm(xt, (8,), eps=eps) @ torch.from_numpy(g)).backward()
        grad = xt.grad.numpy()
        cos = abs(np.sum(grad)) / (np.linalg.norm(grad) * math.sqrt(8))
        np.testing.assert_allclose(r.arrays[name][k], cos, atol=1e-13, rtol=1e-9)
    assert r.arrays["layer"][k] < 1e-14 < 1e-3 < r.arrays["rms"][k]


def test_residual_step_is_the_residual_pages_default_state() -> None:
    from labs.residual.model import residual_view

    r = lesson_step("residual")
    view = residual_view(layers=24, d=256, drift=0.5, seed=0, eps=1e-5)
    assert r.numbers["tok_rms"] == view.last["rms"]["token_cosine"]
    assert r.numbers["tok_rms"] - r.numbers["tok_layer"] > 0.5
    assert r.correct == "rms"
