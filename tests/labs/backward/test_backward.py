"""labs.backward.model: gradients through both norms, checked against torch.autograd."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from core.inputs import make_input
from labs.backward.model import (
    GRADIENTS,
    MAX_JACOBIAN_WIDTH,
    backward_lesson,
    components,
    upstream_gradient,
)
from tests.hypothesis_util import examples

# float64 autograd against the closed form: only rounding separates them.
RTOL, ATOL = 1e-10, 1e-12


def _autograd_input_gradient(x, g, eps, kind):
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    d = x.shape[-1]
    y = F.rms_norm(xt, (d,), eps=eps) if kind == "rms" else F.layer_norm(xt, (d,), eps=eps)
    y.backward(torch.tensor(g, dtype=torch.float64))
    return xt.grad.numpy()


@pytest.mark.parametrize("gradient", GRADIENTS)
@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.5])
def test_input_gradients_match_autograd(gradient, eps):
    x = make_input(12, seed=3, offset=1.5)
    lesson = backward_lesson(x, eps=eps, gradient=gradient, seed=3)
    for kind, grad in (("rms", lesson.grad_rms), ("layer", lesson.grad_layer)):
        expected = _autograd_input_gradient(x, lesson.upstream, eps, kind)
        np.testing.assert_allclose(grad, expected, rtol=RTOL, atol=ATOL)


def test_jacobians_match_autograd():
    x = make_input(9, seed=5, offset=-0.7)
    lesson = backward_lesson(x, eps=1e-5)
    xt = torch.tensor(x, dtype=torch.float64)
    j_rms = torch.autograd.functional.jacobian(lambda v: F.rms_norm(v, (9,), eps=1e-5), xt)
    j_layer = torch.autograd.functional.jacobian(lambda v: F.layer_norm(v, (9,), eps=1e-5), xt)
    np.testing.assert_allclose(lesson.jacobian_rms, j_rms.numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(lesson.jacobian_layer, j_layer.numpy(), rtol=RTOL, atol=ATOL)


@settings(max_examples=examples(50), deadline=None)
@given(
    d=st.integers(3, MAX_JACOBIAN_WIDTH),
    seed=st.integers(0, 2**31 - 1),
    offset=st.floats(-5, 5),
    gradient=st.sampled_from(GRADIENTS),
)
def test_flattened_directions_with_eps_zero(d, seed, offset, gradient):
    """eps = 0: LayerNorm's gradient has no part along 1 or x; RMSNorm's none along x."""
    x = make_input(d, seed=seed, offset=offset)
    lesson = backward_lesson(x, eps=0.0, gradient=gradient, seed=seed)
    scale = max(np.max(np.abs(lesson.jacobian_rms)), np.max(np.abs(lesson.jacobian_layer)))
    tol = 1e-9 * scale
    assert abs(lesson.parts["layer"].ones) <= tol
    assert abs(lesson.parts["layer"].radial) <= tol
    assert abs(lesson.parts["rms"].radial) <= tol
    assert lesson.flat_rms == 1
    assert lesson.flat_layer == 2


def test_rms_keeps_the_ones_direction():
    """An all-ones upstream gradient passes RMSNorm, shortened by x's share of it, not LayerNorm.

    With u = 1/sqrt(d): <J u, u> = (1 - <x, u>^2 / (d r^2)) / r.
    """
    d = 16
    x = make_input(d, seed=1, offset=0.5)
    eps = 1e-5
    lesson = backward_lesson(x, eps=eps, gradient="ones")
    r = np.sqrt(np.mean(x**2) + eps)
    along = np.sum(x) / np.sqrt(d)
    expected = (1 - along**2 / (d * r**2)) / r
    np.testing.assert_allclose(lesson.parts["rms"].ones, expected, rtol=1e-12)
    np.testing.assert_allclose(lesson.grad_layer, 0.0, atol=1e-12)


def test_eps_leaves_a_small_radial_residue():
    """With eps > 0, RMSNorm's J x = x eps / r^3: small, nonzero, exactly as predicted."""
    x = make_input(8, seed=2)
    eps = 1e-2
    lesson = backward_lesson(x, eps=eps, gradient="x")
    r = np.sqrt(np.mean(x**2) + eps)
    expected = x / np.linalg.norm(x) * eps / r**3
    np.testing.assert_allclose(lesson.grad_rms, expected, rtol=1e-10, atol=1e-14)


def test_components_and_upstream():
    x = np.array([3.0, 4.0])
    parts = components(np.array([1.0, 1.0]), x)
    np.testing.assert_allclose(
        [parts.ones, parts.radial, parts.norm], [np.sqrt(2), 7 / 5, np.sqrt(2)]
    )
    for kind in GRADIENTS:
        np.testing.assert_allclose(np.linalg.norm(upstream_gradient(x, kind, seed=4)), 1.0)
    with pytest.raises(ValueError, match="kind"):
        upstream_gradient(x, "sideways")
    with pytest.raises(ValueError, match="zero vector"):
        upstream_gradient(np.zeros(3), "x")
    with pytest.raises(ValueError, match="at most"):
        backward_lesson(np.ones(MAX_JACOBIAN_WIDTH + 1), eps=1e-5)


def test_statistics_reported():
    x = make_input(10, seed=6, offset=0.3)
    lesson = backward_lesson(x, eps=1e-3)
    np.testing.assert_allclose(lesson.rms_stat, np.sqrt(np.mean(x**2) + 1e-3), rtol=1e-14)
    np.testing.assert_allclose(lesson.layer_stat, np.sqrt(np.var(x) + 1e-3), rtol=1e-14)
