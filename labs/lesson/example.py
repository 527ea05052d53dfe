"""The guided lesson's worked example: the seeded vector most steps use, the tolerances that
decide "unchanged", and what every step's computation returns.

The vector ``lesson_vector()`` has width 8: standard-normal draws plus a common offset, so that its
mean is plainly not zero."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.defaults import DEFAULT_RMS_EPS
from core.inputs import make_input
from labkit.claims import Claim

# Eight coordinates: each one stays readable in a figure and in the prose.
LESSON_WIDTH = 8
LESSON_SEED = 3
# A common offset about as large as the spread of the draws: the mean is then as visible as the
# pattern around it, which is exactly the part the two norms treat differently.
LESSON_OFFSET = 1.5
# The usual RMSNorm eps (Llama, T5, Gemma configs). Used by both norms so that they differ only
# in the centring.
LESSON_EPS = DEFAULT_RMS_EPS
# float64 rounding leaves about 1e-16 on unit-size numbers; a shown number below this reads "≈ 0".
NOISE = 1e-12

# A change below this (largest coordinate change of a unit-RMS output, or relative change of a
# statistic) counts as "unchanged". It sits far above what eps = 1e-6 moves under a rescale
# (about 1e-6 here) and far below a real change (0.1 or more at these sizes).
SAME_TOL = 1e-4


@dataclass(frozen=True)
class Measured:
    """What one step's computation found: the answer it makes true and what the page shows."""

    correct: str | None
    numbers: dict[str, float]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    rows: list[dict[str, object]] = field(default_factory=list)
    claims: dict[str, Claim] = field(default_factory=dict)


def lesson_vector() -> np.ndarray:
    """The lesson's x, shape (8,): seeded standard-normal draws plus the offset 1.5."""
    return make_input(LESSON_WIDTH, seed=LESSON_SEED, offset=LESSON_OFFSET)


def which_unchanged(rms_same: bool, layer_same: bool) -> str:
    """The shared options: which norm's output is unchanged (both, rms, layer or neither)."""
    names = {(True, True): "both", (True, False): "rms", (False, True): "layer"}
    return names.get((bool(rms_same), bool(layer_same)), "neither")


def max_change(a: np.ndarray, b: np.ndarray) -> float:
    """The largest coordinate change between ``a`` and ``b``."""
    return float(np.max(np.abs(a - b)))
