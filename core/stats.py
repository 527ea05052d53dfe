"""Summary statistics of a vector, the quantities the two norms divide by.

RMSNorm divides by the root of the *raw* second moment, LayerNorm by the root of the *central*
one. ``second_moment_identity`` ties the two together with the reader's own numbers: RMS and
standard deviation agree exactly when the mean is zero, and the RMS grows with the mean while the
standard deviation ignores it."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike

IDENTITY_FORMULA = r"\mathrm{RMS}(x)^2 = \mathrm{Var}(x) + \mu^2"


def _as_float_array(
    x: ArrayLike, *, name: str, ndim: int | None = None, finite: bool = True
) -> np.ndarray:
    """Convert ``x`` to a float64 array with a non-empty last axis, finite unless ``finite=False``.

    Shared by the sibling ``core`` modules so every public function rejects bad input with the
    same kind of message: a ``ValueError`` that names the parameter and what is allowed.
    ``ndim=None`` accepts any shape ``(..., d)`` with at least one axis."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be an array of real numbers; got {x!r:.80}") from err
    if arr.ndim == 0:
        raise ValueError(f"{name} must have at least one axis (shape (..., d)); got a scalar")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D; got shape {arr.shape}")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} must have at least one element on its last axis; got d = 0")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (no nan or inf)")
    return arr


def cosine(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    r"""Cosine of the angle between ``a`` and ``b`` along the last axis, broadcasting the rest.

    .. math:: \cos(a, b) = \frac{\langle a, b \rangle}{\lVert a \rVert \, \lVert b \rVert}

    The angle to a zero vector is undefined; this returns 0.0 there, so a collapsed output reads
    as "no shared direction" instead of producing nan in a table or a plot.
    Shapes: ``(..., d), (..., d) -> (...)``."""
    a = _as_float_array(a, name="a")
    b = _as_float_array(b, name="b")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"a and b must share their last axis; got {a.shape} and {b.shape}")
    # The cosine does not depend on the lengths: scaling each vector by its largest entry keeps
    # the squares of a tiny (1e-200) or huge vector from underflowing or overflowing.
    a, b = _by_largest(a), _by_largest(b)
    dot = np.sum(a * b, axis=-1)  # (..., d) -> (...)
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)  # (..., d) -> (...)
    safe = np.where(norms > 0.0, norms, 1.0)
    # Rounding can push |dot| a hair past the product of the norms; keep the result a cosine.
    return np.where(norms > 0.0, np.clip(dot / safe, -1.0, 1.0), 0.0)


def _by_largest(v: np.ndarray) -> np.ndarray:
    top = np.max(np.abs(v), axis=-1, keepdims=True)  # (..., d) -> (..., 1)
    return v / np.where(top > 0, top, 1.0)


@dataclass(frozen=True)
class VectorStats:
    """Statistics of one vector ``x`` of width ``d``."""

    mean: float  # $\mu = \frac{1}{d}\sum_i x_i$
    variance: float  # $\frac{1}{d}\sum_i (x_i - \mu)^2$ (population, as LayerNorm)
    second_moment: float  # $\frac{1}{d}\sum_i x_i^2$
    rms: float  # the root of ``second_moment``, without any eps
    l2: float  # $\lVert x \rVert_2 = \sqrt{d}\,\mathrm{RMS}(x)$
    cos_ones: float  # cos(x, 1) = $\mu / \mathrm{RMS}(x)$; 0.0 for the zero vector
    d: int

    def as_dict(self) -> dict[str, float | int]:
        """Field name to value, in ``STAT_NAMES`` order, ready for a table row."""
        return asdict(self)


STAT_NAMES: tuple[str, ...] = tuple(VectorStats.__dataclass_fields__)


def batch_vector_stats(x: ArrayLike, *, finite: bool = True) -> dict[str, np.ndarray]:
    """Statistics of every vector in a batch ``x`` of shape ``(..., d)``.

    Returns a dict keyed by ``STAT_NAMES``, each value an array of shape ``(...)`` (``d`` too, so
    every column of a table has the same length). Same definitions as ``VectorStats``.
    ``finite=False`` accepts inf and nan (an output that overflowed), whose statistics are then
    inf or nan as IEEE arithmetic gives them."""
    x = _as_float_array(x, name="x", finite=finite)
    d = x.shape[-1]
    mean = np.mean(x, axis=-1)  # (..., d) -> (...)
    variance = np.mean((x - mean[..., None]) ** 2, axis=-1)  # (..., d) -> (...)
    second_moment = np.mean(x**2, axis=-1)  # (..., d) -> (...)
    rms = np.sqrt(second_moment)
    ones = np.ones(d)
    return {
        "mean": mean,
        "variance": variance,
        "second_moment": second_moment,
        "rms": rms,
        "l2": np.linalg.norm(x, axis=-1),  # (..., d) -> (...)
        "cos_ones": cosine(x, ones) if np.all(np.isfinite(x)) else np.full(mean.shape, np.nan),
        "d": np.full(mean.shape, d),
    }


def vector_stats(x: ArrayLike, *, finite: bool = True) -> VectorStats:
    """Statistics of one vector ``x`` of shape ``(d,)``; see ``VectorStats`` for the fields.

    ``finite=False`` accepts inf and nan, as :func:`batch_vector_stats` does."""
    x = _as_float_array(x, name="x", ndim=1, finite=finite)
    with np.errstate(invalid="ignore", over="ignore"):
        columns = batch_vector_stats(x, finite=finite)
    return VectorStats(
        **{key: float(columns[key]) for key in STAT_NAMES if key != "d"}, d=int(x.shape[-1])
    )


def second_moment_identity(x: ArrayLike) -> tuple[float, float, float]:
    r"""The three terms of the second-moment identity for ``x`` of shape ``(d,)``.

    .. math:: \mathrm{RMS}(x)^2 = \mathrm{Var}(x) + \mu^2

    Returns ``(rms2, var, mean2)``, each computed on its own (``rms2`` as the mean of squares,
    ``var`` as the mean of squared deviations), so the identity is a check the reader can see
    hold, not a definition. The LaTeX string is ``IDENTITY_FORMULA``."""
    stats = vector_stats(x)
    return stats.second_moment, stats.variance, stats.mean**2
