r"""Implementation contracts: two RMSNorm presets reading the same checkpoint, compared.

A checkpoint stores a weight, not a gain. "direct" presets use it as the gain ``g = w``; "offset"
presets (Gemma, Transformer Engine's zero-centred gamma) use ``g = 1 + w``. The same effective
gain is therefore stored as ``w = g`` for the first and ``w = g - 1`` for the second, and a
loader that pairs a checkpoint with the wrong convention multiplies by the wrong gain:

.. math:: \Delta_i = y^{B}_i - y^{A}_i, \qquad
    \frac{\lVert \Delta \rVert_2}{\lVert y^{A} \rVert_2}
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core._backend import FLOAT_NAMES, HALF_NAMES
from core.device import torch_available
from core.norms import NormWarning, rms_norm_report
from core.presets import get_preset

DELTA_FORMULA = (
    r"\Delta_i = y^{B}_i - y^{A}_i, \qquad "
    r"\frac{\lVert \Delta \rVert_2}{\lVert y^{A} \rVert_2}"
)
# Spread of the seeded effective gains around 1: trained RMSNorm gains stay of order one and
# vary by coordinate, so a wrong reading shows per coordinate rather than as one constant factor.
GAIN_SPREAD = 0.1


def effective_gain(d: int, *, seed: int = 0) -> np.ndarray:
    """The gain a trained model applies, ``1 + GAIN_SPREAD z``, shape (d,), from ``seed``."""
    # A stream separate from the input's (which uses ``seed`` alone), so gain and x are unrelated.
    rng = np.random.default_rng([seed, 2])
    return 1.0 + GAIN_SPREAD * rng.standard_normal(d)


def stored_weight(gain: np.ndarray, gain_mode: str) -> np.ndarray:
    """What a checkpoint written for ``gain_mode`` stores for ``gain``: g, or g - 1 for offset."""
    if gain_mode not in ("direct", "offset"):
        raise ValueError(f"gain_mode must be 'direct' or 'offset' (got {gain_mode!r})")
    return np.asarray(gain, dtype=np.float64) - (1.0 if gain_mode == "offset" else 0.0)


@dataclass(frozen=True)
class Side:
    """One implementation: a preset, optionally with its eps or reduction dtype overridden."""

    preset: str
    eps: float | None = None
    reduction_dtype: str | None = None


@dataclass
class Comparison:
    """Both outputs (float64 copies of what each side returned), their difference and notes."""

    y_a: np.ndarray
    y_b: np.ndarray
    delta: np.ndarray
    max_abs: float
    relative: float
    settings_a: dict[str, Any]
    settings_b: dict[str, Any]
    alerts: list[str] = field(default_factory=list)


def _as_dtype(a: np.ndarray, dtype: str) -> Any:
    if dtype in HALF_NAMES:
        import torch

        return torch.tensor(a, dtype=getattr(torch, dtype))
    return np.asarray(a, dtype=dtype)


def _to_float64(a: Any) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a.astype(np.float64)
    return a.detach().to("cpu").double().numpy()  # a torch tensor


def compare_sides(
    x: np.ndarray, weight: np.ndarray, side_a: Side, side_b: Side, *, dtype: str = "float32"
) -> Comparison:
    """Run both sides on ``x`` (shape (d,)) and the stored ``weight``, both held in ``dtype``.

    The checkpoint's weight and the activations are rounded to ``dtype`` once, as a model loaded
    in that dtype would hold them; each side then computes by its own contract. float16 and
    bfloat16 need torch.
    """
    if dtype not in FLOAT_NAMES:
        raise ValueError(f"dtype must be one of {list(FLOAT_NAMES)} (got {dtype!r})")
    if dtype in HALF_NAMES and not torch_available():
        raise ValueError(f"dtype {dtype!r} needs torch, which is not installed")
    xt, wt = _as_dtype(x, dtype), _as_dtype(weight, dtype)
    reports = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NormWarning)
        for side in (side_a, side_b):
            reports.append(
                rms_norm_report(
                    xt,
                    wt,
                    preset=get_preset(side.preset, "rms"),
                    eps=side.eps,
                    reduction_dtype=side.reduction_dtype,
                )
            )
    alerts = list(dict.fromkeys(str(w.message) for w in caught if w.category is NormWarning))
    y_a, y_b = (_to_float64(r.output) for r in reports)
    delta = y_b - y_a
    scale = float(np.linalg.norm(y_a))
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = float(np.linalg.norm(delta)) / scale if scale > 0 else float("inf")
    return Comparison(
        y_a=y_a,
        y_b=y_b,
        delta=delta,
        max_abs=float(np.max(np.abs(delta))),
        relative=relative,
        settings_a=reports[0].settings,
        settings_b=reports[1].settings,
        alerts=alerts,
    )
