"""Tests for core.jacobian: closed forms against torch autograd, and their eigen-structure."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from core.jacobian import (
    LAYER_JACOBIAN_FORMULA,
    RMS_JACOBIAN_FORMULA,
    jacobian_spectrum,
    layer_norm_jacobian,
    rms_norm_jacobian,
)

# Autograd and the closed form take different float64 paths to the same number; with entries of
# order 1 they agree to a few ulps, so 1e-10 catches any wrong term without flaking.
AUTOGRAD_TOL = 1e-10
# An eigenvalue that is zero in exact arithmetic comes out of eigvalsh at about 1e-16 times the
# largest; 1e-12 of the largest separates those from the nonzero ones (all equal to 1/r or
# 1/sigma here).
ZERO_EIG_RTOL = 1e-12


def _torch_jacobian(kind: str, x: np.ndarray, weight: np.ndarray | None, eps: float) -> np.ndarray:
    import torch
    import torch.nn.functional as F

    d = x.shape[-1]
    w = None if weight is None else torch.tensor(weight, dtype=torch.float64)
    if kind == "rms":

        def f(t):
            return F.rms_norm(t, (d,), w, eps)
    else:

        def f(t):
            return F.layer_norm(t, (d,), w, None, eps)

    xt = torch.tensor(x, dtype=torch.float64)
    return torch.autograd.functional.jacobian(f, xt).numpy()


CASES = [
    (d, with_weight, eps, seed)
    for d, seed in ((3, 0), (8, 1), (17, 2))
    for with_weight in (False, True)
    for eps in (0.0, 1e-6, 0.3)
]


@pytest.mark.parametrize("d, with_weight, eps, seed", CASES)
def test_matches_torch_autograd(d, with_weight, eps, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(0.7, 1.3, size=d)
    weight = rng.normal(1.0, 0.5, size=d) if with_weight else None
    np.testing.assert_allclose(
        rms_norm_jacobian(x, weight, eps=eps),
        _torch_jacobian("rms", x, weight, eps),
        rtol=AUTOGRAD_TOL,
        atol=AUTOGRAD_TOL,
    )
    np.testing.assert_allclose(
        layer_norm_jacobian(x, weight, eps=eps),
        _torch_jacobian("layer", x, weight, eps),
        rtol=AUTOGRAD_TOL,
        atol=AUTOGRAD_TOL,
    )


def test_default_eps_matches_torch_defaults_used_by_the_lessons():
    x = np.random.default_rng(3).normal(size=5)
    np.testing.assert_allclose(
        rms_norm_jacobian(x), _torch_jacobian("rms", x, None, 1e-6), rtol=AUTOGRAD_TOL
    )
    np.testing.assert_allclose(
        layer_norm_jacobian(x), _torch_jacobian("layer", x, None, 1e-5), rtol=AUTOGRAD_TOL
    )


def test_layer_norm_flattens_ones_and_x():
    x = np.random.default_rng(4).normal(2.0, 1.0, size=6)
    J = layer_norm_jacobian(x, eps=0.0)
    np.testing.assert_allclose(J, J.T, rtol=0, atol=1e-15)
    np.testing.assert_allclose(J @ np.ones(6), 0.0, atol=1e-13)
    np.testing.assert_allclose(J @ x, 0.0, atol=1e-13)
    spectrum = jacobian_spectrum(J)
    sigma = math.sqrt(np.mean((x - x.mean()) ** 2))
    np.testing.assert_allclose(spectrum[:2], 0.0, atol=ZERO_EIG_RTOL * spectrum[-1])
    # Every direction orthogonal to 1 and to x passes with gain 1/sigma.
    np.testing.assert_allclose(spectrum[2:], 1.0 / sigma, rtol=1e-12)


def test_rms_norm_flattens_x_only():
    x = np.random.default_rng(5).normal(2.0, 1.0, size=6)
    J = rms_norm_jacobian(x, eps=0.0)
    np.testing.assert_allclose(J, J.T, rtol=0, atol=1e-15)
    np.testing.assert_allclose(J @ x, 0.0, atol=1e-13)
    # The ones direction survives: a shift by c * 1 changes RMSNorm's output.
    assert np.linalg.norm(J @ np.ones(6)) > 0.1
    spectrum = jacobian_spectrum(J)
    r = math.sqrt(np.mean(x**2))
    np.testing.assert_allclose(spectrum[0], 0.0, atol=ZERO_EIG_RTOL * spectrum[-1])
    np.testing.assert_allclose(spectrum[1:], 1.0 / r, rtol=1e-12)


def test_eps_lifts_the_zero_eigenvalue():
    x = np.random.default_rng(6).normal(size=4)
    spectrum = jacobian_spectrum(rms_norm_jacobian(x, eps=0.5))
    # With eps the scale of x leaks through: the x direction now passes with gain
    # eps / r^3 > 0 instead of 0.
    r = math.sqrt(np.mean(x**2) + 0.5)
    np.testing.assert_allclose(spectrum[0], 0.5 / r**3, rtol=1e-12)


def test_spectrum_with_positive_weight_is_real_and_sorted():
    rng = np.random.default_rng(7)
    x = rng.normal(size=5)
    g = rng.uniform(0.5, 2.0, size=5)
    J = layer_norm_jacobian(x, g, eps=1e-5)
    assert not np.array_equal(J, J.T)
    # diag(g) S with S symmetric is similar to the symmetric D^1/2 S D^1/2.
    S = layer_norm_jacobian(x, eps=1e-5)
    root = np.sqrt(g)
    expected = np.linalg.eigvalsh(root[:, None] * S * root[None, :])
    spectrum = jacobian_spectrum(J)
    assert np.all(np.diff(spectrum) >= 0)
    np.testing.assert_allclose(spectrum, expected, atol=1e-12)


def test_formulas_are_the_ones_in_the_docstrings():
    def squash(text: str) -> str:
        return "".join(text.split())

    assert squash(RMS_JACOBIAN_FORMULA) in squash(rms_norm_jacobian.__doc__)
    assert squash(LAYER_JACOBIAN_FORMULA) in squash(layer_norm_jacobian.__doc__)


def test_module_does_not_import_torch():
    code = "import sys, core.jacobian; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.parametrize("fn", [rms_norm_jacobian, layer_norm_jacobian])
def test_bad_inputs_raise_naming_the_parameter(fn):
    with pytest.raises(ValueError, match="x must be 1-D"):
        fn(np.ones((2, 3)))
    with pytest.raises(ValueError, match="x must contain only finite"):
        fn([1.0, float("nan")])
    with pytest.raises(ValueError, match=r"weight must have shape \(3,\)"):
        fn([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="weight must contain only finite"):
        fn([1.0, 2.0], [1.0, float("inf")])
    for bad_eps in (-1e-6, float("nan"), float("inf"), "1e-5", True):
        with pytest.raises(ValueError, match="eps must be a finite real number >= 0"):
            fn([1.0, 2.0], eps=bad_eps)


def test_undefined_points_raise():
    with pytest.raises(ValueError, match="x must not be the zero vector when eps = 0"):
        rms_norm_jacobian(np.zeros(4), eps=0.0)
    # 0.1 * 3 / 3 rounds to a mean one ulp off 0.1: the spread is noise and must count as 0.
    with pytest.raises(ValueError, match="x must not be constant when eps = 0"):
        layer_norm_jacobian([0.1, 0.1, 0.1], eps=0.0)
    # With eps > 0 both are defined there.
    np.testing.assert_allclose(rms_norm_jacobian(np.zeros(4), eps=0.25), 2.0 * np.eye(4))


def test_spectrum_rejects_bad_matrices():
    with pytest.raises(ValueError, match="J must be square"):
        jacobian_spectrum(np.ones((2, 3)))
    with pytest.raises(ValueError, match="J must be 2-D"):
        jacobian_spectrum(np.ones(3))
    with pytest.raises(ValueError, match="J must contain only finite"):
        jacobian_spectrum([[1.0, float("nan")], [0.0, 1.0]])
