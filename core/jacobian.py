"""Closed-form Jacobians dy/dx of RMSNorm and LayerNorm for one vector.

The Jacobian says which input directions a norm passes on to the next layer and which it
flattens. Both norms flatten the direction of x itself (scaling x does not change the output);
LayerNorm also flattens the ones direction, RMSNorm does not. The eigenvalues make that visible."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS
from core.norms import rms_denominator, std_denominator, variance
from core.stats import _as_float_array

RMS_JACOBIAN_FORMULA = (
    r"\frac{\partial y}{\partial x} = \frac{\operatorname{diag}(g)}{r}"
    r"\left(I - \frac{x x^\top}{d\,r^2}\right),"
    r"\quad r = \sqrt{\tfrac{1}{d}\textstyle\sum_i x_i^2 + \epsilon}"
)
LAYER_JACOBIAN_FORMULA = (
    r"\frac{\partial y}{\partial x} = \frac{\operatorname{diag}(g)}{\sigma}"
    r"\left(I - \frac{\mathbf{1}\mathbf{1}^\top}{d} - \frac{\hat{x}\hat{x}^\top}{d}\right),"
    r"\quad \hat{x} = \frac{x - \mu}{\sigma},"
    r"\quad \sigma = \sqrt{\tfrac{1}{d}\textstyle\sum_i (x_i - \mu)^2 + \epsilon}"
)

# With eps = 0 LayerNorm of a constant vector is 0/0. Rounding its mean can leave a spread of a
# few ulps of max|x|: that counts as zero, not as a Jacobian with entries near 1e16.
_DEGENERATE_SPREAD_ULPS = 16


def _check_inputs(
    x: ArrayLike, weight: ArrayLike | None, eps: float
) -> tuple[np.ndarray, np.ndarray]:
    x = _as_float_array(x, name="x", ndim=1)
    d = x.shape[-1]
    if weight is None:
        g = np.ones(d)
    else:
        g = _as_float_array(weight, name="weight", ndim=1)
        if g.shape != (d,):
            raise ValueError(f"weight must have shape ({d},) to match x; got {g.shape}")
    if isinstance(eps, bool) or not isinstance(eps, int | float | np.floating | np.integer):
        raise ValueError(f"eps must be a finite real number >= 0; got {eps!r}")
    if not math.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite real number >= 0; got {eps!r}")
    return x, g


def rms_norm_jacobian(
    x: ArrayLike, weight: ArrayLike | None = None, *, eps: float = DEFAULT_RMS_EPS
) -> np.ndarray:
    r"""Jacobian of :math:`y = g \odot x / r` with respect to x, shape ``(d, d)``.

    .. math:: \frac{\partial y}{\partial x} = \frac{\operatorname{diag}(g)}{r}
        \left(I - \frac{x x^\top}{d\,r^2}\right),
        \quad r = \sqrt{\tfrac{1}{d}\textstyle\sum_i x_i^2 + \epsilon}

    (the string ``RMS_JACOBIAN_FORMULA``). With eps = 0 the bracket is the projection that
    removes the direction of x, so ``J @ x = 0``; every other direction, the ones direction
    included, passes through. ``eps`` defaults to 1e-6, the RMSNorm choice of T5 and the first
    LLaMA; eps = 0 with x = 0 raises ``ValueError`` because the Jacobian does not exist there."""
    x, g = _check_inputs(x, weight, eps)
    d = x.shape[-1]
    r = float(rms_denominator(x, eps)[0])  # (d,) -> (1,)
    if r == 0.0:
        raise ValueError("x must not be the zero vector when eps = 0: RMSNorm is 0/0 there")
    bracket = np.eye(d) - np.outer(x, x) / (d * r**2)
    return g[:, None] * bracket / r


def layer_norm_jacobian(
    x: ArrayLike, weight: ArrayLike | None = None, *, eps: float = DEFAULT_LAYER_EPS
) -> np.ndarray:
    r"""Jacobian of :math:`y = g \odot (x - \mu)/\sigma + b` with respect to x, shape ``(d, d)``.

    .. math:: \frac{\partial y}{\partial x} = \frac{\operatorname{diag}(g)}{\sigma}
        \left(I - \frac{\mathbf{1}\mathbf{1}^\top}{d} - \frac{\hat{x}\hat{x}^\top}{d}\right),
        \quad \hat{x} = \frac{x - \mu}{\sigma},
        \quad \sigma = \sqrt{\tfrac{1}{d}\textstyle\sum_i (x_i - \mu)^2 + \epsilon}

    (the string ``LAYER_JACOBIAN_FORMULA``). The bias b is a constant and drops out. With eps = 0
    the bracket removes both the ones direction and the centred x, so ``J @ 1 = 0`` and
    ``J @ x = 0``. ``eps`` defaults to 1e-5, PyTorch's ``nn.LayerNorm`` default; eps = 0 with a
    constant x raises ``ValueError`` because the Jacobian does not exist there."""
    x, g = _check_inputs(x, weight, eps)
    d = x.shape[-1]
    centred = x - np.mean(x)  # (d,) -> ()
    spread = float(variance(x)[0])  # (d,) -> (1,)
    noise = _DEGENERATE_SPREAD_ULPS * np.finfo(np.float64).eps * float(np.max(np.abs(x)))
    if eps == 0.0 and spread <= noise**2:
        raise ValueError("x must not be constant when eps = 0: LayerNorm is 0/0 there")
    sigma = float(std_denominator(x, eps)[0])  # (d,) -> (1,)
    x_hat = centred / sigma
    bracket = np.eye(d) - 1.0 / d - np.outer(x_hat, x_hat) / d
    return g[:, None] * bracket / sigma


def jacobian_spectrum(J: ArrayLike) -> np.ndarray:
    """Eigenvalues of a square Jacobian, real parts, sorted ascending; shape ``(d,)``.

    Without a weight both Jacobians are symmetric and positive semidefinite, so the eigenvalues
    are real and ``eigvalsh`` is used. A weight makes J non-symmetric (``diag(g)`` times a
    symmetric matrix); then the general solver runs and only the real parts are kept. The zero
    eigenvalues count the directions the norm flattens."""
    J = _as_float_array(J, name="J", ndim=2)
    if J.shape[0] != J.shape[1]:
        raise ValueError(f"J must be square; got shape {J.shape}")
    if np.array_equal(J, J.T):
        return np.linalg.eigvalsh(J)
    return np.sort(np.linalg.eigvals(J).real)
