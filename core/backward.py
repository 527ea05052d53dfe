r"""The backward pass of RMSNorm and LayerNorm for one vector: Jacobians, spectra, gradients.

Back-propagation sends an upstream gradient :math:`g = \partial L / \partial y` through the norm
as :math:`\partial L / \partial x = J^\top g`. Whatever direction J flattens, the input gradient
cannot contain: LayerNorm's gradient has no component along the ones direction and none along x,
RMSNorm's has none along x only. With eps > 0 the flattening is not exact; the leftover is
``eps`` over the cube of the statistic, and this module reports it rather than hiding it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.jacobian import jacobian_spectrum, layer_norm_jacobian, rms_norm_jacobian

__all__ = [
    "FLAT_TOLERANCE",
    "GRADIENTS",
    "MAX_JACOBIAN_WIDTH",
    "BackwardLesson",
    "Components",
    "backward_lesson",
    "components",
    "upstream_gradient",
]

# A d x d heatmap stays readable, and its eigen-decomposition instant, up to this width.
MAX_JACOBIAN_WIDTH = 64
# An eigenvalue below this fraction of the largest counts as a flattened direction: eps = 1e-5
# leaves about 1e-5 of the largest along x, while eps of order one leaves a direction that still
# passes a visible share of the gradient.
FLAT_TOLERANCE = 1e-3
# Upstream gradients: the all-ones direction, the direction of x itself, a seeded random one.
GRADIENTS = ("ones", "x", "random")


@dataclass(frozen=True)
class Components:
    """A vector split against the unit ones direction u and the unit direction of x.

    ``ones`` is <v, u>, ``radial`` is <v, x/|x|>, ``norm`` is |v|. The two directions are not
    orthogonal unless mean(x) = 0, so the two numbers are read separately, not as a sum.
    """

    ones: float
    radial: float
    norm: float


@dataclass(frozen=True)
class BackwardLesson:
    """Everything the backward-pass page shows for one x, eps and upstream gradient."""

    x: np.ndarray  # (d,)
    rms_stat: float  # r = sqrt(mean(x^2) + eps)
    layer_stat: float  # sigma = sqrt(mean((x - mu)^2) + eps)
    upstream: np.ndarray  # (d,), unit length
    jacobian_rms: np.ndarray  # (d, d)
    jacobian_layer: np.ndarray  # (d, d)
    eig_rms: np.ndarray  # (d,), ascending
    eig_layer: np.ndarray  # (d,), ascending
    grad_rms: np.ndarray  # (d,), J_rms^T g
    grad_layer: np.ndarray  # (d,), J_layer^T g
    flat_rms: int
    flat_layer: int
    parts: dict[str, Components]  # "upstream", "rms", "layer"


def upstream_gradient(x: np.ndarray, kind: str, *, seed: int = 0) -> np.ndarray:
    """The upstream gradient ``dL/dy`` of the lesson, scaled to unit length; shape (d,).

    ``ones``: all ones; ``x``: x itself (the radial direction); ``random``: Gaussian draws from
    ``np.random.default_rng([seed, 2])``, a stream apart from the one that drew x.
    """
    x = np.asarray(x, dtype=np.float64)
    if kind == "ones":
        g = np.ones_like(x)
    elif kind == "x":
        g = x.copy()
    elif kind == "random":
        g = np.random.default_rng([seed, 2]).standard_normal(x.shape[-1])
    else:
        raise ValueError(f"kind must be one of {', '.join(GRADIENTS)}; got {kind!r}")
    length = float(np.linalg.norm(g))
    if length == 0.0:
        raise ValueError("the upstream gradient is the zero vector (x = 0 with kind='x')")
    return g / length


def components(v: np.ndarray, x: np.ndarray) -> Components:
    """Components of ``v`` along the unit ones direction and along ``x / |x|``."""
    d = x.shape[-1]
    length = float(np.linalg.norm(x))
    radial = float(v @ x) / length if length > 0 else 0.0
    return Components(float(np.sum(v)) / np.sqrt(d), radial, float(np.linalg.norm(v)))


def _flat_count(eigenvalues: np.ndarray) -> int:
    top = float(np.max(np.abs(eigenvalues)))
    return int(np.sum(np.abs(eigenvalues) <= FLAT_TOLERANCE * top)) if top > 0 else len(eigenvalues)


def backward_lesson(
    x: np.ndarray, *, eps: float, gradient: str = "random", seed: int = 0
) -> BackwardLesson:
    r"""Both Jacobians (no weight), their spectra and :math:`J^\top g` for one upstream g.

    Without a weight both Jacobians are symmetric, so :math:`J^\top g = J g`. Raises ValueError
    for ``d > MAX_JACOBIAN_WIDTH`` and wherever ``core.jacobian`` does (x = 0 or constant x
    with eps = 0).
    """
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    if d > MAX_JACOBIAN_WIDTH:
        raise ValueError(f"d must be at most {MAX_JACOBIAN_WIDTH} for the Jacobian; got {d}")
    g = upstream_gradient(x, gradient, seed=seed)
    j_rms = rms_norm_jacobian(x, eps=eps)
    j_layer = layer_norm_jacobian(x, eps=eps)
    eig_rms, eig_layer = jacobian_spectrum(j_rms), jacobian_spectrum(j_layer)
    grad_rms, grad_layer = j_rms.T @ g, j_layer.T @ g
    return BackwardLesson(
        x=x,
        rms_stat=float(np.sqrt(np.mean(x**2) + eps)),  # (d,) -> ()
        layer_stat=float(np.sqrt(np.mean((x - np.mean(x)) ** 2) + eps)),  # (d,) -> ()
        upstream=g,
        jacobian_rms=j_rms,
        jacobian_layer=j_layer,
        eig_rms=eig_rms,
        eig_layer=eig_layer,
        grad_rms=grad_rms,
        grad_layer=grad_layer,
        flat_rms=_flat_count(eig_rms),
        flat_layer=_flat_count(eig_layer),
        parts={
            "upstream": components(g, x),
            "rms": components(grad_rms, x),
            "layer": components(grad_layer, x),
        },
    )
