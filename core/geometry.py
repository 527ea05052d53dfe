"""Where the two norms send a vector, seen in the plane and in 3-D.

Every x in R^d splits into a part along the all-ones direction and a part orthogonal to it.
LayerNorm deletes the first part and rescales the second; RMSNorm rescales both together. The
functions here turn that into coordinates a figure can draw, always by calling ``core.norms``, so
a picture and the numbers printed beside it come from the same computation."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike

from core.norms import layer_norm, rms_norm
from core.stats import _as_float_array

# The patch of the plane and the circle on it must both be visible: a 20% border around the
# larger of the two keeps the circle off the patch's edge at every zoom level.
PATCH_MARGIN = 1.2

# x - mean(x) of a constant x is rounding of about this many ulps of |x|, not a direction.
FLAT_ROUNDING = 16 * float(np.finfo(np.float64).eps)

# Below 4 steps a sphere mesh is a tetrahedron-like blob; above 400 a surface has 160k vertices,
# more than a browser redraws smoothly while a slider moves.
MIN_RESOLUTION = 4
MAX_RESOLUTION = 400


def _check_scalar(value: object, *, name: str, nonnegative: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number; got {value!r}")
    if nonnegative and value < 0:
        raise ValueError(f"{name} must be >= 0; got {value!r}")
    return float(value)


def ones_direction(d: int) -> np.ndarray:
    r"""The unit vector along the all-ones direction, :math:`u = \mathbf{1} / \sqrt{d}`.

    This is the one direction LayerNorm removes: adding :math:`c\,\mathbf{1}` to x moves it along
    u and nowhere else. Shape ``(d,)``."""
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"d must be a positive integer; got {d!r}")
    return np.full(int(d), 1.0 / math.sqrt(d))


def decompose(x: ArrayLike) -> tuple[float | np.ndarray, np.ndarray]:
    """Split x into its coordinate along u = 1/sqrt(d) and the part orthogonal to u.

    Returns ``(along, perp)`` with ``along = <x, u>`` (signed) and ``perp = x - along * u``, x
    minus its mean: exactly the vector LayerNorm goes on to rescale. Shapes:
    ``(..., d) -> (...), (..., d)``, ``along`` a float for a single vector."""
    x = _as_float_array(x, name="x")
    u = ones_direction(x.shape[-1])
    along = x @ u  # (..., d) -> (...)
    perp = x - along[..., None] * u
    return (float(along) if x.ndim == 1 else along), perp


@dataclass(frozen=True)
class Drawn:
    """The numbers both pictures are drawn with: the constant weight ``gain`` that multiplies
    each norm's output, and each norm's eps."""

    gain: float
    eps_rms: float
    eps_layer: float


@dataclass(frozen=True)
class PlaneImages(Drawn):
    """Plane coordinates ``(a, b)`` of an input and of its two normalised images.

    ``point``, ``layer`` and ``rms`` are ``(a, b)`` for x, LayerNorm(x) and RMSNorm(x).
    ``radius`` is sqrt(d) * |gain|, the circle both images lie on when eps = 0."""

    point: tuple[float, float]
    layer: tuple[float, float]
    rms: tuple[float, float]
    radius: float
    d: int


def plane_images(
    x: ArrayLike, *, eps_rms: float, eps_layer: float, gain: float = 1.0
) -> PlaneImages:
    """Project x, LayerNorm(x) and RMSNorm(x) onto the plane of u = 1/sqrt(d) and x's perp part.

    RMSNorm moves x along the ray through the origin until it meets the circle of radius
    sqrt(d)|gain|; LayerNorm first drops x onto the b-axis (a = 0) and then scales it to the
    same circle. A positive eps pulls both points slightly inside the circle. The outputs come
    from ``core.norms`` with the constant weight ``gain`` and are projected onto x's own basis,
    so ``b`` is signed: a negative gain shows up as a reflection through the origin."""
    x = _as_float_array(x, name="x", ndim=1)
    rms, layer, drawn = _normalise_both(x, eps_rms=eps_rms, eps_layer=eps_layer, gain=gain)
    return plane_images_from(x, rms, layer, **asdict(drawn))


def _normalise_both(
    x: np.ndarray, *, eps_rms: float, eps_layer: float, gain: float
) -> tuple[np.ndarray, np.ndarray, Drawn]:
    """RMSNorm(x) and LayerNorm(x) with the constant weight ``gain``, and the checked numbers."""
    drawn = Drawn(
        eps_rms=_check_scalar(eps_rms, name="eps_rms", nonnegative=True),
        eps_layer=_check_scalar(eps_layer, name="eps_layer", nonnegative=True),
        gain=_check_scalar(gain, name="gain"),
    )
    weight = np.full(x.shape[-1], drawn.gain)
    rms = rms_norm(x, weight, eps=drawn.eps_rms)
    return rms, layer_norm(x, weight, eps=drawn.eps_layer), drawn


def plane_images_from(
    x: ArrayLike,
    rms: np.ndarray,
    layer: np.ndarray,
    *,
    gain: float,
    eps_rms: float,
    eps_layer: float,
    on_axis: bool | None = None,
) -> PlaneImages:
    """:func:`plane_images` for outputs already computed (shape ``(d,)`` each, any values).

    A non-finite output coordinate gives a non-finite point, which a figure leaves out.
    ``on_axis`` says whether x lies on the ones axis (its perp part is rounding). None decides it
    here, from the size of that part."""
    x = _as_float_array(x, name="x", ndim=1)
    d = x.shape[-1]
    u = ones_direction(d)
    along, perp = decompose(x)
    # Lengths in units of the largest entry, so that a tiny x (1e-200) keeps its direction.
    top = float(np.max(np.abs(perp)))
    unit = perp / top if top > 0 else perp
    perp_norm = top * float(np.linalg.norm(unit))
    # When x lies on the ones axis its perp part is zero (or rounding, which points anywhere)
    # and every image lies on the axis too; a zero second basis vector then gives b = 0.
    if on_axis is None:
        on_axis = perp_norm <= FLAT_ROUNDING * float(np.linalg.norm(x))
    e2 = np.zeros(d) if on_axis or top == 0 else unit / float(np.linalg.norm(unit))

    def project(y: np.ndarray) -> tuple[float, float]:
        y = np.asarray(y, dtype=np.float64)
        return float(y @ u), float(y @ e2)

    return PlaneImages(
        point=(along, perp_norm),
        layer=project(layer),
        rms=project(rms),
        radius=math.sqrt(d) * abs(gain),
        d=d,
        gain=float(gain),
        eps_rms=float(eps_rms),
        eps_layer=float(eps_layer),
    )


def _readonly(a: np.ndarray) -> np.ndarray:
    """Freeze an array so a cached ``Sphere3D`` cannot be edited in place by a caller."""
    a.flags.writeable = False
    return a


def _check_resolution(resolution: object) -> None:
    if (
        isinstance(resolution, bool)
        or not isinstance(resolution, int | np.integer)
        or not MIN_RESOLUTION <= resolution <= MAX_RESOLUTION
    ):
        raise ValueError(
            f"resolution must be an integer in [{MIN_RESOLUTION}, {MAX_RESOLUTION}]; "
            f"got {resolution!r}"
        )


@dataclass(frozen=True)
class Sphere3D(Drawn):
    """Mesh data for the d = 3 picture, every array read-only. Grids are ``(X, Y, Z)`` of shape
    ``(resolution, resolution)``. The circle's last point repeats the first so a line trace
    closes. ``radius`` is sqrt(3)|gain|."""

    plane: tuple[np.ndarray, np.ndarray, np.ndarray]  # a patch of the plane through 0, ⊥ 1
    circle: np.ndarray  # (resolution + 1, 3): LayerNorm's output circle, in that plane
    sphere: tuple[np.ndarray, np.ndarray, np.ndarray]  # RMSNorm's output sphere, same radius
    point: np.ndarray  # (3,): the input
    layer: np.ndarray  # (3,): its LayerNorm image (with eps)
    rms: np.ndarray  # (3,): its RMSNorm image (with eps)
    radius: float
    gain: float
    eps_rms: float
    eps_layer: float


def sphere_from(
    x: ArrayLike, rms: np.ndarray, layer: np.ndarray, drawn: Drawn, *, resolution: int = 40
) -> Sphere3D:
    """The d = 3 picture: RMSNorm lands on a sphere, LayerNorm on a circle inside a plane.

    With eps = 0 RMSNorm keeps only the direction of x, so its outputs fill the whole sphere of
    radius sqrt(3)|gain|. LayerNorm also removes the ones component, so its outputs are the
    great circle where that sphere meets the plane perpendicular to 1. With eps > 0 both images
    of the given x sit visibly inside those surfaces when x is small.

    ``rms`` and ``layer`` are RMSNorm(x) and LayerNorm(x), already computed; ``drawn`` holds the
    gain and eps they were computed with (a :class:`PlaneImages` of the same outputs is one)."""
    x = _as_float_array(x, name="x", ndim=1)
    if x.shape[-1] != 3:
        raise ValueError(f"x must have d = 3 for the 3-D picture; got d = {x.shape[-1]}")
    _check_resolution(resolution)
    radius = math.sqrt(3) * abs(drawn.gain)

    # An orthonormal basis of the plane perpendicular to 1, ordered so e1 x e2 = u.
    e1 = np.array([1.0, -1.0, 0.0]) / math.sqrt(2)
    e2 = np.array([1.0, 1.0, -2.0]) / math.sqrt(6)

    _, perp = decompose(x)
    half = PATCH_MARGIN * max(radius, float(np.linalg.norm(perp)))
    if half == 0.0:
        # Zero gain and x on the ones axis: nothing has extent, yet the plane gets unit size.
        half = PATCH_MARGIN
    s, t = np.meshgrid(np.linspace(-half, half, resolution), np.linspace(-half, half, resolution))
    plane = s[..., None] * e1 + t[..., None] * e2  # (res, res, 3)

    angle = np.linspace(0.0, 2.0 * math.pi, resolution + 1)
    circle = radius * (np.cos(angle)[:, None] * e1 + np.sin(angle)[:, None] * e2)

    polar, azimuth = np.meshgrid(
        np.linspace(0.0, math.pi, resolution), np.linspace(0.0, 2.0 * math.pi, resolution)
    )
    sphere = (
        radius * np.sin(polar) * np.cos(azimuth),
        radius * np.sin(polar) * np.sin(azimuth),
        radius * np.cos(polar),
    )

    return Sphere3D(
        plane=tuple(_readonly(np.ascontiguousarray(plane[..., k])) for k in range(3)),
        circle=_readonly(circle),
        sphere=tuple(_readonly(c) for c in sphere),
        point=_readonly(x.copy()),
        layer=_readonly(np.array(layer, dtype=np.float64)),
        rms=_readonly(np.array(rms, dtype=np.float64)),
        radius=radius,
        gain=float(drawn.gain),
        eps_rms=float(drawn.eps_rms),
        eps_layer=float(drawn.eps_layer),
    )
