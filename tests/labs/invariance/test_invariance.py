"""Tests for labs.invariance.model: Table 1 of Zhang & Sennrich (2019), computed."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from core.stats import vector_stats
from labs.invariance.model import CASE_A, invariance_lab, shift_sweep
from labs.invariance.table import (
    TABLE_TOL,
    TRANSFORMS,
    InvarianceRow,
    Transform,
    invariance_table,
    make_setup,
    output_change,
    transformed_setup,
)
from tests.claims.invariance import EXPECTED, PAPER_ROWS, TRANSFORM_IDS

# Table 1 of "Root Mean Square Layer Normalization" for its six changes, and what the algebra
# gives for the two extra rows: (LayerNorm invariant, RMSNorm invariant).
PAPER = {t: EXPECTED[t] for t in TRANSFORM_IDS[:PAPER_ROWS]}

# Rounding leaves about 1e-15 on an invariant pair; a genuine change at these sizes leaves more
# than 1e-2. Both bounds are orders of magnitude from the data, so neither can flake.
ROUNDING_BOUND = 1e-12
CHANGE_BOUND = 1e-2


def test_registry_ids_and_paper_claims():
    assert list(TRANSFORMS) == list(EXPECTED)
    for tid, t in TRANSFORMS.items():
        assert isinstance(t, Transform) and t.id == tid and t.title and t.description
        if tid in PAPER:
            assert t.in_paper and (t.paper_layer, t.paper_rms) == PAPER[tid]
        else:
            assert not t.in_paper and t.paper_layer is None and t.paper_rms is None


@pytest.mark.parametrize("seed, size", [(0, 2.0), (1, 0.5), (2, 3.0)])
def test_table_reproduces_the_paper(seed, size):
    rows = invariance_table(size=size, seed=seed)
    assert [r.id for r in rows] == list(EXPECTED)
    for row in rows:
        assert isinstance(row, InvarianceRow)
        assert (row.layer_invariant, row.rms_invariant) == EXPECTED[row.id], row
        assert row.matches_paper is (True if row.id in PAPER else None)
        for residual, invariant in (
            (row.layer_residual, row.layer_invariant),
            (row.rms_residual, row.rms_invariant),
        ):
            assert (residual < ROUNDING_BOUND) if invariant else (residual > CHANGE_BOUND)


def table_row(transform: str, **kwargs) -> InvarianceRow:
    return next(r for r in invariance_table(**kwargs) if r.id == transform)


def test_table_residual_is_the_worst_cases_change_by_the_reference_norms():
    kwargs = dict(size=1.5, seed=4, d=5, n=6, m=3)
    rows = {r.id: r for r in invariance_table(**kwargs)}
    for tid in TRANSFORMS:
        before, after = transformed_setup(tid, **kwargs)
        a, a2 = before.preactivations(), after.preactivations()
        for name, norm in (("layer", layer_norm_ref), ("rms", rms_norm_ref)):
            # The output rows have length sqrt(d), so the residual is scale-free, within [0, 2].
            worst = max(math.dist(y2, y) for y, y2 in zip(norm(a), norm(a2), strict=True))
            measured = getattr(rows[tid], f"{name}_residual")
            np.testing.assert_allclose(measured, worst / math.sqrt(5), atol=ROUNDING_BOUND)


def test_transform_objects_work_and_the_change_is_scale_free():
    # A sign flip of every output row moves each by 2 sqrt(d); the change reads 2.
    flip = Transform(
        "flip", "flip", "x' = -x", False, False, False, lambda s, size, rng: replace(s, x=-s.x)
    )
    change = output_change(*transformed_setup(flip, size=2.0, seed=0, d=6), eps=0.0)
    np.testing.assert_allclose(change["rms"], 2.0, rtol=1e-12)


def test_positive_eps_breaks_rescale_invariance_only_slightly():
    exact = table_row("dataset_rescale", size=3.0, eps=0.0).layer_residual
    with_eps = table_row("dataset_rescale", size=3.0, eps=1e-6).layer_residual
    assert exact < ROUNDING_BOUND
    # Pre-activations have variance about m = 8, so eps moves the output by about eps / 8.
    assert 1e-9 < with_eps < 1e-5


def test_transforms_change_what_they_say():
    rng_seed, size = 3, 2.5
    before = make_setup(n=5, m=4, d=6, seed=rng_seed)
    a = before.preactivations()
    assert a.shape == (5, 6)
    np.testing.assert_array_equal(before.bias, np.zeros(6))

    def delta(tid):
        after = TRANSFORMS[tid].apply(before, size, np.random.default_rng(rng_seed))
        return after.preactivations() - a

    # Weight-matrix recentering moves each case by one amount on every unit: a shift along 1.
    d_wr = delta("weight_matrix_recenter")
    np.testing.assert_allclose(np.std(d_wr, axis=1), 0.0, atol=1e-12)
    assert np.std(d_wr[:, 0]) > 0.1
    # Dataset recentering moves every case by the same vector, which is not along 1.
    d_dr = delta("dataset_recenter")
    np.testing.assert_allclose(np.std(d_dr, axis=0), 0.0, atol=1e-12)
    assert np.std(d_dr[0]) > 0.1
    # Weight-vector rescaling changes exactly one unit's column, by the factor size.
    d_wv = delta("weight_vector_rescale")
    changed = np.flatnonzero(np.any(d_wv != 0, axis=0))
    assert changed.size == 1
    np.testing.assert_allclose(d_wv[:, changed[0]], (size - 1) * a[:, changed[0]], rtol=1e-12)
    # Single-case rescaling changes exactly one case's row, by the factor size.
    d_sc = delta("single_case_rescale")
    changed = np.flatnonzero(np.any(d_sc != 0, axis=1))
    assert changed.size == 1
    np.testing.assert_allclose(d_sc[changed[0]], (size - 1) * a[changed[0]], rtol=1e-12)
    np.testing.assert_allclose(delta("weight_matrix_rescale"), (size - 1) * a, rtol=1e-12)
    np.testing.assert_allclose(delta("dataset_rescale"), (size - 1) * a, rtol=1e-12)
    np.testing.assert_allclose(delta("shift_ones"), size, rtol=1e-12)
    np.testing.assert_allclose(delta("negative_rescale"), (-size - 1) * a, rtol=1e-12)
    # The original setup is untouched by every transform.
    np.testing.assert_array_equal(before.preactivations(), a)


def test_make_setup_is_seeded():
    one, two = make_setup(seed=7), make_setup(seed=7)
    np.testing.assert_array_equal(one.x, two.x)
    np.testing.assert_array_equal(one.weight, two.weight)
    assert one.x.shape == (16, 8) and one.weight.shape == (8, 8)
    assert not np.array_equal(make_setup(seed=8).x, one.x)


def test_shift_sweep_layer_flat_rms_collapses():
    x = np.random.default_rng(5).normal(0.4, 1.0, size=8)
    offsets = np.array([-1e8, -30.0, -1.0, 0.0, 1.0, 30.0, 1e8])
    out = shift_sweep(x, offsets, eps=1e-6)
    assert set(out) == {"offsets", "rms_cosine", "layer_cosine", "rms_energy_along_ones"}
    for value in out.values():
        assert value.shape == offsets.shape
    np.testing.assert_array_equal(out["offsets"], offsets)
    # LayerNorm deletes the shift; at |c| = 1e8 float64 keeps x to about 1e-8 relative.
    np.testing.assert_allclose(out["layer_cosine"], 1.0, atol=1e-6)
    np.testing.assert_allclose(out["rms_cosine"][3], 1.0, rtol=1e-12)
    # At c = 0 the energy along 1 is cos^2 of x with 1; at huge |c| the output is +-1-ish, so
    # its cosine with RMSNorm(x) is +-cos(x, 1) and all its energy is along 1.
    cos_ones = vector_stats(x).cos_ones
    np.testing.assert_allclose(out["rms_energy_along_ones"][3], cos_ones**2, rtol=1e-10)
    np.testing.assert_allclose(out["rms_cosine"][[0, -1]], [-cos_ones, cos_ones], atol=1e-7)
    np.testing.assert_allclose(out["rms_energy_along_ones"][[0, -1]], 1.0, atol=1e-12)
    # Energy along 1 grows with |c| on both sides.
    energy = out["rms_energy_along_ones"]
    assert energy[4] < energy[5] < energy[6] and energy[2] < energy[1] < energy[0]


def test_shift_sweep_matches_one_offset_at_a_time_and_ignores_gain_sign():
    x = np.random.default_rng(6).normal(size=5)
    offsets = np.linspace(-4.0, 4.0, 9)
    batch = shift_sweep(x, offsets, eps=1e-3, gain=-2.0)
    plain = shift_sweep(x, offsets, eps=1e-3)
    for key in batch:
        np.testing.assert_allclose(batch[key], plain[key], rtol=1e-12)
    for i, c in enumerate(offsets):
        single = shift_sweep(x, [c], eps=1e-3)
        for key in batch:
            np.testing.assert_allclose(single[key][0], batch[key][i], rtol=1e-12)


def test_shift_sweep_zero_output_counts_as_no_direction():
    # x = -1 * 1 shifted by c = 1 is the zero vector: RMSNorm gives 0 (eps > 0), cosine 0.
    out = shift_sweep(np.full(4, -1.0), [1.0], eps=1e-6)
    assert out["rms_cosine"][0] == 0.0
    assert out["rms_energy_along_ones"][0] == 0.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: transformed_setup("flip", size=2.0, seed=0), "transform must be one of weight_"),
        (lambda: invariance_table(size=0.0), "size must be"),
        (lambda: invariance_table(size=-2.0), "size must be"),
        (lambda: invariance_table(size=math.nan), "size must be"),
        (lambda: invariance_table(eps=-1.0), "eps must be"),
        (lambda: invariance_table(n=0), "n must be an integer"),
        (lambda: invariance_table(m=1.5), "m must be an integer"),
        (lambda: invariance_table(d=1), "d must be an integer >= 2"),
        (lambda: invariance_lab(transform="flip", size=2.0, seed=0, c_max=1.0), "transform must"),
        (lambda: invariance_table(tol=0.0), "tol must be a finite number > 0"),
        (lambda: make_setup(d=True), "d must be an integer"),
        (lambda: shift_sweep([[1.0, 2.0]], [0.0]), "x must be 1-D"),
        (lambda: shift_sweep([1.0, 2.0], [[0.0]]), "offsets must be 1-D"),
        (lambda: shift_sweep([1.0, 2.0], []), "offsets must have at least one element"),
        (lambda: shift_sweep([1.0, 2.0], [math.inf]), "offsets must contain only finite"),
        (lambda: shift_sweep([1.0, 2.0], [0.0], gain=0.0), "gain must be None or a finite"),
        (lambda: shift_sweep([1.0, 2.0], [0.0], gain="2"), "gain must be None or a finite"),
        (lambda: shift_sweep([1.0, 2.0], [0.0], eps=math.inf), "eps must be"),
    ],
)
def test_bad_inputs_raise_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_one_draw_order_for_the_setup_and_the_change():
    before, after = transformed_setup("dataset_recenter", size=0.5, seed=11)
    plain = make_setup(seed=11)
    np.testing.assert_array_equal(before.x, plain.x)
    np.testing.assert_array_equal(before.weight, plain.weight)
    # The change draws after the setup, from the same generator.
    rng = np.random.default_rng(11)
    rng.standard_normal(plain.x.shape)  # the batch
    rng.standard_normal(plain.weight.shape)  # the weights
    np.testing.assert_array_equal(after.x, plain.x + 0.5 * rng.standard_normal(plain.x.shape[1]))


def test_negative_rescale_flips_both_outputs():
    before, after = transformed_setup("negative_rescale", size=3.0, seed=2)
    for norm in (rms_norm_ref, layer_norm_ref):
        y, y2 = norm(before.preactivations()), norm(after.preactivations())
        np.testing.assert_allclose(y2, -y, rtol=1e-12, atol=1e-14)
    row = table_row("negative_rescale", size=3.0, seed=2)
    assert row.rms_residual == pytest.approx(2.0) and row.layer_residual == pytest.approx(2.0)


def rms_norm_ref(a):
    return a / np.sqrt(np.mean(a**2, axis=-1, keepdims=True))


def layer_norm_ref(a):
    c = a - np.mean(a, axis=-1, keepdims=True)
    return c / np.sqrt(np.mean(c**2, axis=-1, keepdims=True))


@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_lab_shows_the_tables_worst_case(transform):
    lab = invariance_lab(transform=transform, size=0.5, seed=9, c_max=50.0)
    row = next(r for r in lab.rows if r.id == transform)
    assert lab.residual == {"layer": row.layer_residual, "rms": row.rms_residual}
    before, after = transformed_setup(transform, size=0.5, seed=9)
    k = lab.case.case
    np.testing.assert_array_equal(lab.case.pre[0], before.preactivations()[k])
    np.testing.assert_array_equal(lab.case.pre[1], after.preactivations()[k])
    for name, ref in (("rms", rms_norm_ref), ("layer", layer_norm_ref)):
        y, y2 = ref(before.preactivations()[k]), ref(after.preactivations()[k])
        np.testing.assert_allclose(lab.case.outputs[name][1], y2, rtol=1e-12, atol=1e-14)
        expected = np.linalg.norm(y2 - y) / math.sqrt(y.size)
        np.testing.assert_allclose(lab.case.change[name], expected, atol=1e-12)
        # The case shown is one of those that moved most.
        if max(lab.residual.values()) > TABLE_TOL:
            assert (
                lab.case.change["layer"] + lab.case.change["rms"]
                >= max(lab.residual.values()) - TABLE_TOL
            )


def test_lab_shift_view_follows_the_closed_forms():
    lab = invariance_lab(transform="shift_ones", size=2.0, seed=4, c_max=300.0)
    s = lab.shift
    x = make_setup(seed=4).preactivations()[CASE_A]
    c = s.offsets
    eps = 1e-6
    exact = np.std(x) / np.sqrt(np.var(x) + (np.mean(x) + c) ** 2 + eps)
    np.testing.assert_allclose(s.spread, exact, rtol=1e-9)
    np.testing.assert_allclose(s.dist_layer, s.at_zero["dist_layer"], rtol=1e-9)
    # Far out, the distance of two RMSNorm images falls like 1/c.
    np.testing.assert_allclose(s.dist_rms[-1] * c[-1], s.dist_rms[-2] * c[-2], rtol=0.01)
    assert s.sweep["offsets"][0] == -300.0 and s.sweep["offsets"][-1] == 300.0
