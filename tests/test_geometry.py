"""Tests for core.geometry: the plane and 3-D pictures of where the norms send x."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core.geometry import (
    Drawn,
    PlaneImages,
    Sphere3D,
    decompose,
    ones_direction,
    plane_images,
    sphere_from,
)
from core.norms import layer_norm, rms_norm
from tests.hypothesis_util import examples

# Reconstruction x = along * u + perp costs a few roundings per coordinate, each at most
# 2**-53 of max|x| times d; 1e-12 * (1 + max|x|) bounds that for d <= 32 with room to spare.
RECON_RTOL = 1e-12

vectors = arrays(
    np.float64,
    st.integers(min_value=1, max_value=32),
    elements=st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_subnormal=False),
)


def test_ones_direction_is_unit_along_ones():
    np.testing.assert_allclose(ones_direction(4), [0.5, 0.5, 0.5, 0.5], rtol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(ones_direction(7)), 1.0, rtol=1e-15)


@settings(max_examples=examples(80), deadline=None)
@given(vectors)
def test_decompose_reconstructs_and_is_orthogonal(x):
    along, perp = decompose(x)
    u = ones_direction(x.shape[0])
    scale = 1.0 + float(np.max(np.abs(x)))
    np.testing.assert_allclose(along * u + perp, x, rtol=0, atol=RECON_RTOL * scale)
    np.testing.assert_allclose(perp @ u, 0.0, atol=RECON_RTOL * scale)


def test_decompose_hand_computed():
    # x = [1, 2, 3, 6]: u = 1/2 * 1, along = 12/2 = 6, perp = x - mean = [-2, -1, 0, 3].
    along, perp = decompose([1.0, 2.0, 3.0, 6.0])
    assert isinstance(along, float)
    np.testing.assert_allclose(along, 6.0, rtol=1e-15)
    np.testing.assert_allclose(perp, [-2.0, -1.0, 0.0, 3.0], rtol=1e-15)
    a, b = plane_images([1.0, 2.0, 3.0, 6.0], eps_rms=0.0, eps_layer=0.0).point
    np.testing.assert_allclose([a, b], [6.0, math.sqrt(14.0)], rtol=1e-15)


def test_batched_decompose_matches_rows():
    x = np.random.default_rng(0).normal(size=(3, 5))
    along, perp = decompose(x)
    assert along.shape == (3,) and perp.shape == (3, 5)
    for i in range(3):
        row_along, row_perp = decompose(x[i])
        np.testing.assert_allclose(along[i], row_along, rtol=1e-15)
        np.testing.assert_allclose(perp[i], row_perp, rtol=1e-15)
        a, b = plane_images(x[i], eps_rms=0.0, eps_layer=0.0).point
        np.testing.assert_allclose(a, along[i], rtol=1e-15)
        np.testing.assert_allclose(b, np.linalg.norm(x[i] - x[i].mean()), rtol=1e-13)


def _plane_point(x: np.ndarray) -> tuple[float, float]:
    """x's coordinates (along the ones direction, distance from that axis), written out."""
    return math.fsum(x) / math.sqrt(x.size), float(np.linalg.norm(x - np.mean(x)))


@pytest.mark.parametrize("gain", [1.0, 2.5, -0.5])
def test_plane_images_eps_zero_land_on_the_circle(gain):
    x = np.random.default_rng(1).normal(0.8, 1.0, size=6)
    d = 6
    img = plane_images(x, eps_rms=0.0, eps_layer=0.0, gain=gain)
    assert isinstance(img, PlaneImages)
    along, b = _plane_point(x)
    np.testing.assert_allclose(img.point, (along, b), rtol=1e-13)
    np.testing.assert_allclose(img.radius, math.sqrt(d) * abs(gain), rtol=1e-15)
    # LayerNorm drops x onto the b-axis at the radius; the sign of the gain says which side.
    np.testing.assert_allclose(img.layer, (0.0, gain * math.sqrt(d)), rtol=1e-12, atol=1e-12)
    # RMSNorm moves x along its own ray to the circle: (a, b) * g * sqrt(d) / ||x||.
    factor = gain * math.sqrt(d) / np.linalg.norm(x)
    np.testing.assert_allclose(img.rms, (factor * along, factor * b), rtol=1e-12)


def test_plane_images_agree_with_the_norms_outputs():
    # The picture must not drop any part of the outputs: the plane point has the output's norm.
    x = np.random.default_rng(2).normal(-0.3, 2.0, size=9)
    weight = np.full(9, 1.7)
    img = plane_images(x, eps_rms=1e-3, eps_layer=1e-3, gain=1.7)
    np.testing.assert_allclose(
        np.hypot(*img.rms), np.linalg.norm(rms_norm(x, weight, eps=1e-3)), rtol=1e-12
    )
    np.testing.assert_allclose(
        np.hypot(*img.layer), np.linalg.norm(layer_norm(x, weight, eps=1e-3)), rtol=1e-12
    )


def test_eps_pulls_both_images_inside_the_circle():
    x = np.array([0.01, -0.02, 0.03, 0.005])
    eps = 1e-3
    img = plane_images(x, eps_rms=eps, eps_layer=eps)
    along, b = _plane_point(x)
    r = math.sqrt(np.mean(x**2) + eps)
    sigma = math.sqrt(np.mean((x - x.mean()) ** 2) + eps)
    np.testing.assert_allclose(img.rms, (along / r, b / r), rtol=1e-12)
    np.testing.assert_allclose(img.layer, (0.0, b / sigma), rtol=1e-12, atol=1e-15)
    assert np.hypot(*img.rms) < 0.6 * img.radius
    assert np.hypot(*img.layer) < 0.6 * img.radius


def test_input_on_the_ones_axis_stays_on_it():
    img = plane_images(np.full(5, -2.0), eps_rms=1e-6, eps_layer=1e-5)
    assert img.point[1] == 0.0 and img.rms[1] == 0.0 and img.layer == (0.0, 0.0)
    np.testing.assert_allclose(img.rms[0], -math.sqrt(5) * 2.0 / math.sqrt(4.0 + 1e-6), rtol=1e-12)


def _sphere(x, *, eps_rms: float, eps_layer: float, gain: float = 1.0, **kw) -> Sphere3D:
    """The 3-D picture of x, its images computed by core.norms with the constant weight gain."""
    x = np.asarray(x, dtype=np.float64)
    weight = np.full(x.size, gain)
    rms, layer = rms_norm(x, weight, eps=eps_rms), layer_norm(x, weight, eps=eps_layer)
    return sphere_from(x, rms, layer, Drawn(gain, eps_rms, eps_layer), **kw)


def test_sphere_from_geometry():
    x = np.array([1.0, 2.0, -0.5])
    res = 12
    s = _sphere(x, eps_rms=0.0, eps_layer=0.0, gain=2.0, resolution=res)
    radius = 2.0 * math.sqrt(3.0)
    np.testing.assert_allclose(s.radius, radius, rtol=1e-15)
    assert s.circle.shape == (res + 1, 3)
    np.testing.assert_allclose(s.circle[-1], s.circle[0], atol=1e-12)
    np.testing.assert_allclose(s.circle.sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(s.circle, axis=1), radius, rtol=1e-12)
    for grid in (*s.plane, *s.sphere):
        assert grid.shape == (res, res)
    np.testing.assert_allclose(sum(s.plane), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.sqrt(sum(c**2 for c in s.sphere)), radius, rtol=1e-12)
    # The patch reaches past the circle in every in-plane direction.
    assert np.max(np.sqrt(sum(c**2 for c in s.plane))) > radius
    np.testing.assert_allclose(s.point, x, rtol=0)
    np.testing.assert_allclose(s.layer, layer_norm(x, np.full(3, 2.0), eps=0.0), rtol=1e-15)
    np.testing.assert_allclose(s.rms, rms_norm(x, np.full(3, 2.0), eps=0.0), rtol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(s.rms), radius, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(s.layer), radius, rtol=1e-12)


def test_sphere_from_eps_pulls_points_inside_and_arrays_are_frozen():
    s = _sphere([0.05, -0.1, 0.02], eps_rms=0.01, eps_layer=0.01)
    assert np.linalg.norm(s.rms) < 0.9 * s.radius
    assert np.linalg.norm(s.layer) < 0.9 * s.radius
    with pytest.raises(ValueError, match="read-only"):
        s.circle[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        s.plane[0][0, 0] = 1.0


def test_sphere_from_zero_gain_still_draws_a_plane():
    s = _sphere([1.0, 1.0, 1.0], eps_rms=1e-6, eps_layer=1e-5, gain=0.0, resolution=4)
    assert s.radius == 0.0
    assert np.max(np.abs(s.plane[0])) > 0.0


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "4"])
def test_ones_direction_rejects_bad_d(bad):
    with pytest.raises(ValueError, match="d must be a positive integer"):
        ones_direction(bad)


def test_bad_inputs_raise_naming_the_parameter():
    with pytest.raises(ValueError, match="x must contain only finite"):
        decompose([1.0, float("nan")])
    with pytest.raises(ValueError, match="x must have at least one axis"):
        decompose(2.0)
    with pytest.raises(ValueError, match="x must be 1-D"):
        plane_images(np.ones((2, 3)), eps_rms=0.0, eps_layer=0.0)
    with pytest.raises(ValueError, match="eps_rms must be >= 0"):
        plane_images([1.0, 2.0], eps_rms=-1.0, eps_layer=0.0)
    with pytest.raises(ValueError, match="eps_layer must be a finite real number"):
        plane_images([1.0, 2.0], eps_rms=0.0, eps_layer=float("nan"))
    with pytest.raises(ValueError, match="gain must be a finite real number"):
        plane_images([1.0, 2.0], eps_rms=0.0, eps_layer=0.0, gain=[1.0, 2.0])
    with pytest.raises(ValueError, match="x must have d = 3"):
        _sphere([1.0, 2.0], eps_rms=0.0, eps_layer=0.0)
    for bad in (3, 401, 10.0, True):
        with pytest.raises(ValueError, match=r"resolution must be an integer in \[4, 400\]"):
            _sphere([1.0, 2.0, 3.0], eps_rms=0.0, eps_layer=0.0, resolution=bad)


def test_plane_images_from_given_outputs_match_plane_images() -> None:
    from core import layer_norm, rms_norm
    from core.geometry import plane_images_from

    x = np.random.default_rng(3).normal(size=9) + 0.7
    g = np.full(9, -1.5)
    direct = plane_images(x, eps_rms=1e-3, eps_layer=1e-3, gain=-1.5)
    given = plane_images_from(
        x, rms_norm(x, g, eps=1e-3), layer_norm(x, g, eps=1e-3), gain=-1.5, eps_rms=1e-3,
        eps_layer=1e-3,
    )  # fmt: skip
    np.testing.assert_allclose(given.rms, direct.rms, rtol=1e-14)
    np.testing.assert_allclose(given.layer, direct.layer, rtol=1e-14, atol=1e-14)
    # A negative gain reflects RMSNorm's image through the origin: b < 0.
    assert given.rms[1] < 0


def test_a_constant_x_lies_on_the_ones_axis_whatever_its_rounding() -> None:
    from core.geometry import plane_images_from

    x = np.full(3, 0.1)  # x - mean(x) is rounding, not a direction
    y = np.array([0.3, -0.2, 0.5])
    images = plane_images_from(x, y, y, gain=1.0, eps_rms=0.0, eps_layer=0.0, on_axis=True)
    assert images.rms[1] == 0.0 and images.layer[1] == 0.0
