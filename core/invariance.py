"""Table 1 of the RMSNorm paper, re-derived by computing it.

Zhang & Sennrich (2019), "Root Mean Square Layer Normalization", list which changes to the data
or to the preceding weights leave a norm's output unchanged. Here each change is applied to a
seeded random linear layer and the outputs are compared, so every tick in the table is a number
the reader can inspect. Setup: a batch ``x`` of n cases with m inputs, a linear map ``weight``
of shape (d, m) and an additive ``bias`` (d,), pre-activations ``A = x @ weight.T + bias`` of
shape (n, d), and outputs ``norm(A)`` over the last axis. The bias starts at zero; only the
extra ``shift_ones`` row moves it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike

from core.geometry import ones_direction
from core.norms import layer_norm, rms_norm
from core.stats import _as_float_array, cosine

__all__ = [
    "NORMS",
    "TRANSFORMS",
    "InvarianceRow",
    "Setup",
    "Transform",
    "invariance_residual",
    "invariance_table",
    "make_setup",
    "shift_sweep",
]

NORMS: dict[str, Callable[..., np.ndarray]] = {"layer": layer_norm, "rms": rms_norm}


@dataclass(frozen=True)
class Setup:
    """A linear layer and its inputs: ``x`` (n, m), ``weight`` (d, m), ``bias`` (d,)."""

    x: np.ndarray
    weight: np.ndarray
    bias: np.ndarray

    def preactivations(self) -> np.ndarray:
        """``A = x @ weight.T + bias``, shape (n, d): what the norm sees."""
        return self.x @ self.weight.T + self.bias  # (n, m) @ (m, d) -> (n, d)


def _check_count(value: object, *, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _check_real(value: object, *, name: str, allowed: str, positive: bool) -> float:
    bad_type = isinstance(value, bool) or not isinstance(value, Real)
    if bad_type or not math.isfinite(value) or (value <= 0 if positive else value < 0):
        raise ValueError(f"{name} must be {allowed}; got {value!r}")
    return float(value)


def make_setup(*, n: int = 16, m: int = 8, d: int = 8, seed: int = 0) -> Setup:
    """A standard-normal batch and weight matrix from ``np.random.default_rng(seed)``, zero bias.

    The transforms use a generator seeded the same way after these draws, so the setup a page
    shows is the one ``invariance_residual`` transforms.
    """
    return _make_setup(n=n, m=m, d=d, rng=np.random.default_rng(seed))


def _make_setup(*, n: int, m: int, d: int, rng: np.random.Generator) -> Setup:
    n = _check_count(n, name="n", minimum=1)
    m = _check_count(m, name="m", minimum=1)
    # With d = 1 LayerNorm outputs 0 for everything, which would make it "invariant" to all.
    d = _check_count(d, name="d", minimum=2)
    return Setup(
        x=rng.standard_normal((n, m)), weight=rng.standard_normal((d, m)), bias=np.zeros(d)
    )


def _weight_matrix_rescale(s: Setup, size: float, rng: np.random.Generator) -> Setup:
    return replace(s, weight=size * s.weight)


def _weight_matrix_recenter(s: Setup, size: float, rng: np.random.Generator) -> Setup:
    gamma = size * rng.standard_normal(s.weight.shape[1])
    return replace(s, weight=s.weight + gamma)  # every row w_i gets the same gamma


def _weight_vector_rescale(s: Setup, size: float, rng: np.random.Generator) -> Setup:
    weight = s.weight.copy()
    weight[rng.integers(weight.shape[0])] *= size
    return replace(s, weight=weight)


def _dataset_rescale(s: Setup, size: float, rng: np.random.Generator) -> Setup:
    return replace(s, x=size * s.x)


def _dataset_recenter(s: Setup, size: float, rng: np.random.Generator) -> Setup:
    gamma = size * rng.standard_normal(s.x.shape[1])
    return replace(s, x=s.x + gamma)  # every case gets the same gamma


def _single_case_rescale(s: Setup, size: float, rng: np.random.Generator) -> Setup:
    x = s.x.copy()
    x[rng.integers(x.shape[0])] *= size
    return replace(s, x=x)


def _shift_ones(s: Setup, size: float, rng: np.random.Generator) -> Setup:
    return replace(s, bias=s.bias + size)


@dataclass(frozen=True)
class Transform:
    """One column of the paper's Table 1 (or the extra ones-shift row).

    ``apply(setup, size, rng)`` returns the changed setup; ``size`` is the factor delta for a
    rescale and the magnitude of gamma or c for a shift. ``paper_layer`` and ``paper_rms`` are
    what Table 1 states (True: invariant); they are None for ``shift_ones``, which the paper
    does not list.
    """

    id: str
    title: str
    description: str
    paper_layer: bool | None
    paper_rms: bool | None
    apply: Callable[[Setup, float, np.random.Generator], Setup]

    @property
    def in_paper(self) -> bool:
        """Whether this transform is a row of the paper's Table 1."""
        return self.paper_layer is not None


TRANSFORMS: dict[str, Transform] = {
    t.id: t
    for t in (
        Transform(
            "weight_matrix_rescale",
            "Weight matrix re-scaling",
            "W' = delta W: every pre-activation of every case is multiplied by delta.",
            True,
            True,
            _weight_matrix_rescale,
        ),
        Transform(
            "weight_matrix_recenter",
            "Weight matrix re-centering",
            "W' = W + 1 gamma^T: every unit's pre-activation for a case moves by the same "
            "amount gamma . x, a shift along 1.",
            True,
            False,
            _weight_matrix_recenter,
        ),
        Transform(
            "weight_vector_rescale",
            "Weight vector re-scaling",
            "w_i' = delta w_i for one unit i: one coordinate of every pre-activation is "
            "multiplied by delta, the others are not.",
            False,
            False,
            _weight_vector_rescale,
        ),
        Transform(
            "dataset_rescale",
            "Dataset re-scaling",
            "x' = delta x for every case: every pre-activation is multiplied by delta.",
            True,
            True,
            _dataset_rescale,
        ),
        Transform(
            "dataset_recenter",
            "Dataset re-centering",
            "x' = x + gamma for every case: unit j moves by (W gamma)_j, a different amount "
            "per unit, so the shift is not along 1.",
            False,
            False,
            _dataset_recenter,
        ),
        Transform(
            "single_case_rescale",
            "Single training case re-scaling",
            "x' = delta x for one case only: that case's pre-activation is multiplied by delta.",
            True,
            True,
            _single_case_rescale,
        ),
        Transform(
            "shift_ones",
            "Shift along the ones direction",
            "A' = A + c 1: every pre-activation moves by c along the all-ones direction "
            "(not a row of the paper's table).",
            None,
            None,
            _shift_ones,
        ),
    )
}


@dataclass(frozen=True)
class InvarianceRow:
    """Measured and published invariance of both norms under one transform.

    A norm counts as invariant when its residual (see ``invariance_residual``) is below the
    table's ``tol``; ``paper_layer`` and ``paper_rms`` are copied from the ``Transform``.
    """

    id: str
    title: str
    layer_residual: float
    rms_residual: float
    layer_invariant: bool
    rms_invariant: bool
    paper_layer: bool | None
    paper_rms: bool | None

    @property
    def matches_paper(self) -> bool | None:
        """Whether both measured booleans equal Table 1; None where the paper has no row."""
        if self.paper_layer is None:
            return None
        return self.layer_invariant == self.paper_layer and self.rms_invariant == self.paper_rms


def _lookup(transform: str | Transform) -> Transform:
    if isinstance(transform, Transform):
        return transform
    if transform not in TRANSFORMS:
        raise ValueError(f"transform must be one of {', '.join(TRANSFORMS)}; got {transform!r}")
    return TRANSFORMS[transform]


def _residuals(
    transform: Transform, *, size: float, n: int, m: int, d: int, seed: int, eps: float
) -> dict[str, float]:
    """Residual of each norm under ``transform``, both measured on the same setup and change."""
    size = _check_real(size, name="size", allowed="a finite number > 0", positive=True)
    eps = _check_real(eps, name="eps", allowed="a finite number >= 0", positive=False)
    rng = np.random.default_rng(seed)
    before = _make_setup(n=n, m=m, d=d, rng=rng)
    after = transform.apply(before, size, rng)
    a_before, a_after = before.preactivations(), after.preactivations()
    residuals = {}
    for name, norm in NORMS.items():
        change = norm(a_after, eps=eps) - norm(a_before, eps=eps)
        # Each output row has length sqrt(d) when eps = 0, so dividing the worst row's change
        # by sqrt(d) gives a scale-free number in [0, 2]: 0 is invariant, 2 is a sign flip.
        residuals[name] = float(np.max(np.linalg.norm(change, axis=-1)) / math.sqrt(d))
    return residuals


def invariance_residual(
    norm: str,
    transform: str | Transform,
    *,
    size: float = 2.0,
    n: int = 16,
    m: int = 8,
    d: int = 8,
    seed: int = 0,
    eps: float = 0.0,
) -> float:
    r"""How much ``norm`` ("layer" or "rms") changes its output under ``transform``.

    Returns :math:`\max_k \lVert y'_k - y_k \rVert_2 / \sqrt{d}` over the n cases, where
    :math:`y = \mathrm{norm}(A)` before and :math:`y'` after the change. Rounding leaves about
    1e-15 for an invariant pair in float64; a real change of size 2 leaves far more. ``eps``
    defaults to 0 because the paper's table is about the exact maps; with eps > 0 the rescale
    invariances hold only up to eps.
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {', '.join(NORMS)}; got {norm!r}")
    found = _residuals(_lookup(transform), size=size, n=n, m=m, d=d, seed=seed, eps=eps)
    return found[norm]


def invariance_table(
    *,
    size: float = 2.0,
    seed: int = 0,
    tol: float = 1e-9,
    n: int = 16,
    m: int = 8,
    d: int = 8,
    eps: float = 0.0,
) -> list[InvarianceRow]:
    """Every transform in ``TRANSFORMS`` order with both residuals and the verdicts.

    ``tol`` sits far above float64 rounding (about 1e-15) and far below the change a real
    non-invariance makes at the default size, so the verdicts do not hinge on it.
    """
    tol = _check_real(tol, name="tol", allowed="a finite number > 0", positive=True)
    rows = []
    for t in TRANSFORMS.values():
        found = _residuals(t, size=size, n=n, m=m, d=d, seed=seed, eps=eps)
        rows.append(
            InvarianceRow(
                id=t.id,
                title=t.title,
                layer_residual=found["layer"],
                rms_residual=found["rms"],
                layer_invariant=found["layer"] < tol,
                rms_invariant=found["rms"] < tol,
                paper_layer=t.paper_layer,
                paper_rms=t.paper_rms,
            )
        )
    return rows


def shift_sweep(
    x: ArrayLike, offsets: ArrayLike, *, eps: float = 1e-6, gain: float | None = None
) -> dict[str, np.ndarray]:
    r"""What survives of x after adding c * 1, for every c in ``offsets`` at once.

    Returns arrays of shape (k,) for k offsets: ``offsets``; ``rms_cosine`` and ``layer_cosine``,
    the cosine between norm(x + c 1) and norm(x); and ``rms_energy_along_ones``, the fraction
    of RMSNorm's output energy :math:`\langle y, u \rangle^2 / \lVert y \rVert^2` along
    u = 1/sqrt(d). LayerNorm's cosine stays at 1 because centring deletes c. RMSNorm's output
    turns toward +-gain * 1 as |c| grows and its energy fraction goes to 1: the output then
    says almost nothing about x. Both norms use the same ``eps`` and the constant weight
    ``gain`` (None: no weight). A cosine with a zero output counts as 0, as in ``cosine``.
    """
    x = _as_float_array(x, name="x", ndim=1)
    offsets = _as_float_array(offsets, name="offsets", ndim=1)
    eps = _check_real(eps, name="eps", allowed="a finite number >= 0", positive=False)
    d = x.shape[-1]
    weight = None
    if gain is not None:
        if isinstance(gain, bool) or not isinstance(gain, Real) or not math.isfinite(gain):
            raise ValueError(f"gain must be None or a finite nonzero number; got {gain!r}")
        if gain == 0:
            raise ValueError("gain must be None or a finite nonzero number; got 0")
        weight = np.full(d, float(gain))
    shifted = x + offsets[:, None]  # (k, d): one row per offset, normalised in one call
    rms_shifted = rms_norm(shifted, weight, eps=eps)
    u = ones_direction(d)
    energy = np.sum(rms_shifted**2, axis=-1)  # (k, d) -> (k,)
    along = (rms_shifted @ u) ** 2  # (k, d) -> (k,)
    # A zero output has no direction; report no energy along 1 rather than 0/0.
    fraction = np.where(energy > 0.0, along / np.where(energy > 0.0, energy, 1.0), 0.0)
    layer_shifted = layer_norm(shifted, weight, eps=eps)
    return {
        "offsets": offsets,
        "rms_cosine": cosine(rms_shifted, rms_norm(x, weight, eps=eps)),
        "layer_cosine": cosine(layer_shifted, layer_norm(x, weight, eps=eps)),
        "rms_energy_along_ones": fraction,
    }
