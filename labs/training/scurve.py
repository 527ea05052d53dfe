r"""The S-curve: every norm layer's input against its output, with a tanh fitted through them.

The reading of Zhu et al. ("Transformers without Normalization", CVPR 2025) taken from the
shipped checkpoints, as docs/training.md describes: the output before the gain in float64,
``fit_tanh`` fitting :math:`\hat y \approx A \tanh(\alpha x)` and :math:`\hat y \approx k x`, each
with its :math:`R^2`. The reach along the curve is :math:`u = |\alpha| \max |x|`, also per side of
0: below 1 the tanh bends little over the data, from 2 on it is within 4 % of :math:`\pm A`.

Within one token the map is a line of slope 1 / denominator; the cloud of all tokens bends into
an S only where tokens with large inputs have large denominators, so each layer also reports how
far its tokens' denominators spread. torch and scipy are imported inside the functions."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from core.norms import rms_denominator, std_denominator

# The curves drawn and compared (DyT's, the line, Derf's), named as the formulas they are.
FIT_FORMS = ("A·tanh(α·x)", "k·x", "A·erf(α·x + s)")
# R² at or above this: the curve describes the cloud; below it, the points spread about it.
GOOD_FIT = 0.95
# u = |α|·max|x| at most this (tanh(1) = 0.76·1) and R² within LINE_TIE of the line's: over the
# data the fitted tanh is nearly a straight line.
LINEAR_REACH = 1.0
LINE_TIE = 0.01
# u at least this: the curve flattens inside the data (tanh(2) = 0.964, slope 1 - tanh²(2) = 7 %
# of its slope at 0); a point with |α·x| beyond it sits on a flat arm of the S.
FLAT_REACH = 2.0
# Levenberg-Marquardt's budget of evaluations (with the exact Jacobian, a shipped layer's fit
# takes 5 to 35); a search that runs out has not converged.
MAX_EVALUATIONS = 400
# The search stops when the sum of squares or (α, A) change by less than this, relatively. The
# sum of squares is flat along a ridge of (α, A): at scipy's default 1.5e-8, α stopped up to 3e-4
# short of the least-squares point on the shipped layers; at this one, within about 1e-6.
TOLERANCE = 1e-12
# The points each layer's scatter draws: a fixed, seeded subset (the fit uses every point).
SAMPLE = 3000
SAMPLE_SEED = 0


@dataclass(frozen=True)
class TanhFit:
    r""":math:`A \tanh(\alpha x)` and :math:`k x` fitted to the points (x, y) by least squares.

    ``alpha`` >= 0 (the sign goes to ``amplitude``, A), ``r2`` and ``reach``
    (:math:`|\alpha| \max|x|`, the larger of ``reach_negative``, :math:`-|\alpha| \min x`, and
    ``reach_positive``, :math:`|\alpha| \max x`) are NaN where the search did not converge
    (``converged`` False, ``reason`` "flat": the points do not vary; "search": no convergence
    within ``evaluations``).
    ``flat_share`` is the share of points with :math:`|\alpha x| \ge` ``FLAT_REACH``; ``slope``
    and ``line_r2`` are the line's."""

    alpha: float
    amplitude: float
    r2: float
    reach: float
    reach_negative: float
    reach_positive: float
    flat_share: float
    slope: float
    line_r2: float
    converged: bool
    reason: str
    evaluations: int
    points: int
    shift: float = math.nan  # Derf's s (0 in a tanh fit, which has none)

    @property
    def shape(self) -> str:
        """The curve over the data's range: "linear", "bending", "one_arm" (flat on one side of
        0 only: half an S) or "saturated" (flat on both sides: an S); or "no_fit"."""
        if not self.converged:
            return "no_fit"
        if self.reach <= LINEAR_REACH and abs(self.r2 - self.line_r2) <= LINE_TIE:
            return "linear"
        flat = [side >= FLAT_REACH for side in (self.reach_negative, self.reach_positive)]
        return "saturated" if all(flat) else "one_arm" if any(flat) else "bending"

    @property
    def flat_side(self) -> str:
        """The side of 0 where a one-armed curve flattens ("negative" or "positive"), or ""."""
        if self.shape != "one_arm":
            return ""
        return "negative" if self.reach_negative >= FLAT_REACH else "positive"


def _r2(y: np.ndarray, fitted: np.ndarray, total: float) -> float:
    return float(1.0 - np.sum((y - fitted) ** 2) / total)


def fit_tanh(x, y, *, curve: str = "tanh", max_evaluations: int = MAX_EVALUATIONS) -> TanhFit:
    r"""Fit :math:`y \approx A\tanh(\alpha x)` (``curve="erf"``: Derf's
    :math:`A\operatorname{erf}(\alpha x + s)`) and :math:`y \approx k x` to finite points (any
    shape, flattened), every point weighted alike; see ``TanhFit``."""
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape or x.size < 2 or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("x and y must be the same number (at least 2) of finite values")
    total = float(np.sum((y - np.mean(y)) ** 2))
    xx = float(x @ x)
    slope = float(x @ y) / xx if xx > 0 else math.nan
    line_r2 = _r2(y, slope * x, total) if total > 0 and xx > 0 else math.nan

    def failed(reason: str, evaluations: int = 0) -> TanhFit:
        return TanhFit(*[math.nan] * 7, slope, line_r2, False, reason, evaluations, x.size)

    if not (total > 0 and xx > 0):
        return failed("flat")
    from scipy.optimize import OptimizeWarning, curve_fit
    from scipy.special import erf

    if curve == "tanh":  # f and f' of DyT's curve, or of Derf's (which has a shift s)
        f, slope_of = np.tanh, lambda u: 1.0 - np.tanh(u) ** 2
    else:
        f, slope_of = erf, lambda u: 2.0 / math.sqrt(math.pi) * np.exp(-(u**2))

    def model(v, alpha, amplitude, shift=0.0):
        return amplitude * f(alpha * v + shift)

    def jacobian(v, alpha, amplitude, shift=0.0):
        d = amplitude * slope_of(alpha * v + shift)
        return np.stack([d * v, f(alpha * v + shift), d][: 2 + (curve == "erf")], axis=-1)

    # Start on the line: tanh(x / max|x|) · k·max|x| has the line's slope at 0, and u = 1.
    top = float(np.max(np.abs(x)))
    start = (1.0 / top, slope * top, 0.0)[: 2 + (curve == "erf")]
    limits = {"maxfev": max_evaluations, "ftol": TOLERANCE, "xtol": TOLERANCE}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)  # the covariance is not used
            (alpha, amplitude, *shift), _, info, _, _ = curve_fit(
                model, x, y, p0=start, jac=jacobian, full_output=True, **limits
            )
    except RuntimeError:  # the search ran out of evaluations
        return failed("search", max_evaluations)
    evaluations = int(info["nfev"])
    alpha, amplitude, shift = float(alpha), float(amplitude), float(sum(shift))
    if not all(map(math.isfinite, (alpha, amplitude, shift))):
        return failed("search", evaluations)
    if alpha < 0:  # A·f(α·x + s) = (-A)·f(-α·x - s), f odd: the same curve, α quoted positive
        alpha, amplitude, shift = -alpha, -amplitude, -shift
    r2 = _r2(y, model(x, alpha, amplitude, shift), total)
    sides = (-alpha * float(np.min(x)) - shift, alpha * float(np.max(x)) + shift)
    flat = float(np.mean(np.abs(alpha * x + shift) >= FLAT_REACH))
    done = (True, "", evaluations, x.size, shift)
    return TanhFit(alpha, amplitude, r2, max(sides), *sides, flat, slope, line_r2, *done)


def normalised(x: np.ndarray, norm: str, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """A norm's output before its gain (and bias), and each token's denominator: rows x (n, d)
    float64 -> ((n, d), (n,))."""
    if norm == "layer":
        denominator = std_denominator(x, eps)  # (n, d) -> (n, 1)
        return (x - np.mean(x, axis=-1, keepdims=True)) / denominator, denominator[:, 0]
    if norm == "rms":
        denominator = rms_denominator(x, eps)  # (n, d) -> (n, 1)
        return x / denominator, denominator[:, 0]
    raise ValueError(f"norm must be 'rms' or 'layer' (got {norm!r})")


@dataclass(frozen=True)
class LayerCurve:
    """One norm layer of a model: its fit over every point, the spread of its tokens'
    denominators (``ratio``, largest over smallest), every point (``x``, ``y``: input and output
    before the gain, flattened token by token) and the drawn subset (``sample``: indices into
    them, in increasing x)."""

    name: str
    where: str
    fit: TanhFit
    ratio: float
    erf: TanhFit  # Derf's curve, fitted to the same points
    x: np.ndarray
    y: np.ndarray
    sample: np.ndarray


def _sample(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``SAMPLE`` points drawn by ``SAMPLE_SEED`` (the same positions in every layer of the same
    size), plus the extremes of x and of y, sorted by x."""
    rng = np.random.default_rng(SAMPLE_SEED)
    chosen = rng.choice(x.size, size=min(SAMPLE, x.size), replace=False)
    extremes = [np.argmin(x), np.argmax(x), np.argmin(y), np.argmax(y)]
    chosen = np.unique(np.concatenate([chosen, extremes]))
    return chosen[np.argsort(x[chosen], kind="stable")]


def _capture(model, text: str) -> dict[str, np.ndarray]:
    """Every norm layer's input on ``text`` (rows of the block size), by module name in forward
    order: (tokens, d) float64 each."""
    from labs.training.activations import _rows, capture

    taps = [(module, "input", name) for name, module in model.norms()]
    return capture(model, _rows(text, model.config.block_size), taps)


def layer_curves(model, text: str) -> tuple[LayerCurve, ...]:
    """Every norm layer of ``model`` (a ``labs.training.model.GPT`` with RMSNorm or LayerNorm)
    read on ``text`` and fitted."""
    norm, eps = model.config.norm, model.config.eps
    places = {name: getattr(module, "where", "") for name, module in model.norms()}
    curves = []
    for name, x in _capture(model, text).items():
        y, denominator = normalised(x, norm, eps)
        flat_x, flat_y = x.ravel(), y.ravel()
        ratio = float(np.max(denominator) / np.min(denominator))
        fit, sample = fit_tanh(flat_x, flat_y), _sample(flat_x, flat_y)
        erf = fit_tanh(flat_x, flat_y, curve="erf")
        curves.append(LayerCurve(name, places[name], fit, ratio, erf, flat_x, flat_y, sample))
    return tuple(curves)
