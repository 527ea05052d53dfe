"""Table 1 of the RMSNorm paper, re-derived by computing it.

Zhang & Sennrich (2019) list which changes to the data or to the preceding weights leave a norm's
output unchanged. Here each change is applied to a seeded random linear layer (:class:`Setup`; its
bias is zero but in the extra ``shift_ones`` row), the norms run over the last axis of its
pre-activations, and the outputs are compared, so every tick is a number the reader can inspect.

One draw order serves every caller: ``transformed_setup`` draws the setup and then the change
from one generator seeded with ``seed``, so the table, the residual of one transform and the case
a page shows up close are the same computation."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from numbers import Real

import numpy as np

from core.norms import layer_norm, rms_norm

NORMS: dict[str, Callable[..., np.ndarray]] = {"layer": layer_norm, "rms": rms_norm}
# A residual below this is rounding: float64 leaves about 1e-15 on an invariant pair, and a real
# change at the sizes the pages offer (0.1 to 10) leaves more than 1e-3.
TABLE_TOL = 1e-9


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


def check_real(value: object, *, name: str, allowed: str, positive: bool) -> float:
    """``value`` as a float, or a ValueError naming ``name`` and what is ``allowed``."""
    bad_type = isinstance(value, bool) or not isinstance(value, Real)
    if bad_type or not math.isfinite(value) or (value <= 0 if positive else value < 0):
        raise ValueError(f"{name} must be {allowed}; got {value!r}")
    return float(value)


def make_setup(*, n: int = 16, m: int = 8, d: int = 8, seed: int = 0) -> Setup:
    """A standard-normal batch and weight matrix from ``np.random.default_rng(seed)``, zero bias."""
    return _make_setup(n=n, m=m, d=d, rng=np.random.default_rng(seed))


def _make_setup(*, n: int, m: int, d: int, rng: np.random.Generator) -> Setup:
    n = _check_count(n, name="n", minimum=1)
    m = _check_count(m, name="m", minimum=1)
    # With d = 1 LayerNorm outputs 0 for everything, which would make it "invariant" to all.
    d = _check_count(d, name="d", minimum=2)
    return Setup(
        x=rng.standard_normal((n, m)), weight=rng.standard_normal((d, m)), bias=np.zeros(d)
    )


def _plus_gamma(a: np.ndarray, size: float, rng: np.random.Generator) -> np.ndarray:
    """``a`` with one gamma of ``size`` (a draw of ``rng``) added to every row."""
    return a + size * rng.standard_normal(a.shape[1])


def _one_row_scaled(a: np.ndarray, size: float, rng: np.random.Generator) -> np.ndarray:
    """``a`` with one row (a draw of ``rng``) multiplied by ``size``."""
    a = a.copy()
    a[rng.integers(a.shape[0])] *= size
    return a


@dataclass(frozen=True)
class Transform:
    """One change of Table 1 (or one of the extra rows the paper does not list).

    ``apply(setup, size, rng)`` returns the changed setup; ``size`` is the factor delta for a
    rescale (minus delta for ``negative_rescale``) and the magnitude of gamma or c for a shift.
    ``layer_invariant`` and ``rms_invariant`` are what the algebra says (True: the output does
    not change); for a row of the paper they are what Table 1 states."""

    id: str
    title: str
    description: str
    layer_invariant: bool
    rms_invariant: bool
    in_paper: bool
    apply: Callable[[Setup, float, np.random.Generator], Setup]

    @property
    def paper_layer(self) -> bool | None:
        """Table 1's LayerNorm entry, None where the paper has no such change."""
        return self.layer_invariant if self.in_paper else None

    @property
    def paper_rms(self) -> bool | None:
        """Table 1's RMSNorm entry, None where the paper has no such change."""
        return self.rms_invariant if self.in_paper else None


# id, name, what the change does; whether it leaves LayerNorm's and RMSNorm's outputs unchanged,
# whether Table 1 lists it; the change.
TRANSFORMS: dict[str, Transform] = {t.id: t for t in (
    Transform("weight_matrix_rescale", "Weight matrix re-scaling",
              "W' = delta W: every pre-activation of every case is multiplied by delta.",
              True, True, True, lambda s, size, rng: replace(s, weight=size * s.weight)),
    Transform("weight_matrix_recenter", "Weight matrix re-centering",
              "W' = W + 1 gamma^T: every unit's pre-activation for a case moves by the same "
              "amount gamma . x, a shift along 1.",
              True, False, True,
              lambda s, size, rng: replace(s, weight=_plus_gamma(s.weight, size, rng))),
    Transform("weight_vector_rescale", "Weight vector re-scaling",
              "w_i' = delta w_i for one unit i: one coordinate of every pre-activation is "
              "multiplied by delta, the others are not (a per-coordinate scale).",
              False, False, True,
              lambda s, size, rng: replace(s, weight=_one_row_scaled(s.weight, size, rng))),
    Transform("dataset_rescale", "Dataset re-scaling",
              "x' = delta x for every case: every pre-activation is multiplied by delta.",
              True, True, True, lambda s, size, rng: replace(s, x=size * s.x)),
    Transform("dataset_recenter", "Dataset re-centering",
              "x' = x + gamma for every case: unit j moves by (W gamma)_j, a different amount "
              "per unit, so the shift is not along 1.",
              False, False, True, lambda s, size, rng: replace(s, x=_plus_gamma(s.x, size, rng))),
    Transform("single_case_rescale", "Single training case re-scaling",
              "x' = delta x for one case only: that case's pre-activation is multiplied by delta.",
              True, True, True, lambda s, size, rng: replace(s, x=_one_row_scaled(s.x, size, rng))),
    Transform("shift_ones", "Shift along the ones direction",
              "A' = A + c 1: every pre-activation moves by c along the all-ones direction.",
              True, False, False, lambda s, size, rng: replace(s, bias=s.bias + size)),
    Transform("negative_rescale", "Negative re-scaling",
              "W' = -delta W: every pre-activation is multiplied by -delta; both outputs flip "
              "sign.",
              False, False, False, lambda s, size, rng: replace(s, weight=-size * s.weight)),
)}  # fmt: skip


@dataclass(frozen=True)
class InvarianceRow:
    """Measured and expected invariance of both norms under one transform.

    A norm counts as invariant when its residual (the largest ``output_change`` over the cases)
    is below the table's ``tol``. ``paper_layer`` and ``paper_rms`` are the ``Transform``'s."""

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


def lookup_transform(transform: str | Transform) -> Transform:
    """The ``Transform`` with id ``transform`` (a ``Transform`` is returned as it is)."""
    if isinstance(transform, Transform):
        return transform
    if transform not in TRANSFORMS:
        raise ValueError(f"transform must be one of {', '.join(TRANSFORMS)}; got {transform!r}")
    return TRANSFORMS[transform]


def transformed_setup(
    transform: str | Transform, *, size: float, seed: int, n: int = 16, m: int = 8, d: int = 8
) -> tuple[Setup, Setup]:
    """The setup before and after ``transform``: both drawn from one generator seeded with
    ``seed``, the setup first, then whatever the change draws (gamma, the unit, the case)."""
    transform = lookup_transform(transform)
    size = check_real(size, name="size", allowed="a finite number > 0", positive=True)
    rng = np.random.default_rng(seed)
    before = _make_setup(n=n, m=m, d=d, rng=rng)
    return before, transform.apply(before, size, rng)


def output_change(before: Setup, after: Setup, *, eps: float) -> dict[str, np.ndarray]:
    r"""Each norm's change per case, :math:`\lVert y'_k - y_k \rVert_2 / \sqrt{d}`, shape (n,).

    Each output row has length sqrt(d) when eps = 0, so the number is scale-free and lies in
    [0, 2]: 0 is invariant, 2 is a sign flip."""
    eps = check_real(eps, name="eps", allowed="a finite number >= 0", positive=False)
    a_before, a_after = before.preactivations(), after.preactivations()
    d = a_before.shape[-1]
    return {
        name: np.linalg.norm(norm(a_after, eps=eps) - norm(a_before, eps=eps), axis=-1)
        / math.sqrt(d)  # (n, d) -> (n,)
        for name, norm in NORMS.items()
    }


def _residuals(
    transform: Transform, *, size: float, n: int, m: int, d: int, seed: int, eps: float
) -> dict[str, float]:
    """Residual of each norm under ``transform``: the worst case's change."""
    before, after = transformed_setup(transform, size=size, n=n, m=m, d=d, seed=seed)
    return {name: float(np.max(c)) for name, c in output_change(before, after, eps=eps).items()}


def invariance_table(
    *,
    size: float = 2.0,
    seed: int = 0,
    tol: float = TABLE_TOL,
    n: int = 16,
    m: int = 8,
    d: int = 8,
    eps: float = 0.0,
) -> list[InvarianceRow]:
    """Every transform in ``TRANSFORMS`` order with both residuals and the verdicts.

    ``tol`` sits far above float64 rounding (about 1e-15) and far below the change a real
    non-invariance makes at the default size, so the verdicts do not hinge on it."""
    tol = check_real(tol, name="tol", allowed="a finite number > 0", positive=True)
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
