r"""RMSNorm and LayerNorm: the textbook definitions first, then the public functions.

:func:`rms_norm_reference` and :func:`layer_norm_reference` are each norm in a few lines of float64
numpy, one formula step per line; every other path is tested against them. Then the formulas the
pages render, the statistics the core shares, and :func:`rms_norm`, :func:`layer_norm` and their
``*_report`` twins, whose knobs :mod:`core.knobs` resolves and :mod:`core.steps` applies."""

from __future__ import annotations

from typing import Any

import numpy as np

from core import _backend
from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS
from core.knobs import Settings, keyword_signature
from core.steps import NormReport, normalise


def rms_norm_reference(x: Any, weight: Any = None, eps: float = DEFAULT_RMS_EPS) -> np.ndarray:
    """RMSNorm by its definition, :data:`RMS_FORMULA`, in float64 numpy: (..., d) -> (..., d)."""
    x = _float64(x)
    mean_sq = np.mean(x**2, axis=-1, keepdims=True)  # $\overline{x^2} = \frac{1}{d}\sum_j x_j^2$
    rms = np.sqrt(mean_sq + eps)  # $\mathrm{RMS}(x) = \sqrt{\overline{x^2} + \epsilon}$
    x_hat = x / rms  # $\hat{x}_i = x_i / \mathrm{RMS}(x)$
    return x_hat * _float64(1.0 if weight is None else weight)  # $y_i = g_i \hat{x}_i$


def layer_norm_reference(
    x: Any, weight: Any = None, bias: Any = None, eps: float = DEFAULT_LAYER_EPS
) -> np.ndarray:
    """LayerNorm by its definition, :data:`LAYER_FORMULA`, float64 numpy: (..., d) -> (..., d)."""
    x = _float64(x)
    mu = np.mean(x, axis=-1, keepdims=True)  # $\mu = \frac{1}{d}\sum_j x_j$
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)  # $\sigma^2 = \overline{(x - \mu)^2}$
    x_hat = (x - mu) / np.sqrt(var + eps)  # $\hat{x}_i = (x_i - \mu) / \sqrt{\sigma^2 + \epsilon}$
    g, b = _float64(1.0 if weight is None else weight), _float64(0.0 if bias is None else bias)
    return x_hat * g + b  # $y_i = g_i \hat{x}_i + b_i$


def _float64(a: Any) -> np.ndarray:
    """A float64 numpy copy of a list, array or (any-device, any-dtype) torch tensor."""
    if _backend.is_torch(a):
        return _backend.TorchOps().to_float64_numpy(a)
    return np.asarray(a, dtype=np.float64)


RMS_FORMULA = r"y_i = g_i \, \frac{x_i}{\sqrt{\frac{1}{d}\sum_{j=1}^{d} x_j^{2} + \epsilon}}"
# Two lines, so that it fits beside another figure on a page.
LAYER_FORMULA = (
    r"\begin{gathered} y_i = g_i \, \frac{x_i - \mu}{\sqrt{\sigma^{2} + \epsilon}} + b_i, \\ "
    r"\mu = \frac{1}{d}\sum_{j=1}^{d} x_j, \quad "
    r"\sigma^{2} = \frac{1}{d}\sum_{j=1}^{d} (x_j - \mu)^{2} \end{gathered}"
)


# ---------------------------------------------------------------- the statistics ---------------


def mean_square(x: Any) -> Any:
    r"""$\overline{x^2} = \frac{1}{d}\sum_j x_j^2$ over the last axis: (..., d) -> (..., 1).

    numpy arrays (or lists) and torch tensors, computed in ``x``'s own dtype and returned in it."""
    ops, x = _backend.ops_for(x), _backend_array(x)
    return ops.mean_last(ops.square(x))


def variance(x: Any) -> Any:
    r"""$\sigma^2 = \frac{1}{d}\sum_j (x_j - \mu)^2$ over the last axis: (..., d) -> (..., 1).

    Two passes, the mean first, never E[x²] − μ² (which cancels catastrophically)."""
    ops, x = _backend.ops_for(x), _backend_array(x)
    return mean_square(x - ops.mean_last(x))


def rms_denominator(x: Any, eps: float = DEFAULT_RMS_EPS) -> Any:
    r"""RMSNorm's divisor $\sqrt{\overline{x^2} + \epsilon}$ (eps inside): (..., d) -> (..., 1)."""
    return _backend.ops_for(x).sqrt(mean_square(x) + eps)


def std_denominator(x: Any, eps: float = DEFAULT_LAYER_EPS) -> Any:
    r"""LayerNorm's divisor $\sqrt{\sigma^2 + \epsilon}$: (..., d) -> (..., 1)."""
    return _backend.ops_for(x).sqrt(variance(x) + eps)


def _backend_array(x: Any) -> Any:
    return x if _backend.is_torch(x) else np.asarray(x)


# ---------------------------------------------------------------- the norms with knobs ---------


@keyword_signature("rms")
def rms_norm(x: Any, weight: Any = None, bias: Any = None, **options: Any) -> Any:
    """RMSNorm over the last axis of ``x``, :data:`RMS_FORMULA`: shape (..., d) -> (..., d).

    Args:
        x: list, numpy array or torch tensor of shape (..., d).
        weight: the stored gain, shape (d,) or a scalar; None means no gain.
        bias: optional additive term of shape (d,).
        eps: None takes the preset's, else ``DEFAULT_RMS_EPS``.
        preset: a name from ``preset_names("rms")`` or a :class:`Preset`; explicit keywords
            override it.
        eps_placement, reduction_dtype, gain_mode, cast: see the module docstring.
        partial: p in (0, 1], pRMSNorm: the RMS is estimated from the first ceil(p * d)
            coordinates. The paper's code takes int(p * d), which differs when p * d is not an
            integer (and can be 0).
        device: None keeps tensors where they are and numpy on numpy; "cpu", "cuda", "mps" or
            "auto" computes with torch there and returns a torch tensor.

    Returns:
        The same kind as ``x`` (lists give numpy), in the input dtype, except where
        ``cast="before"`` or a preset lets type promotion with the weight decide."""
    settings = Settings.of("rms", options, caller="rms_norm")
    return normalise("rms", x, weight, bias, settings, report=False)


def gated_rms_norm(x: Any, gate: Any, weight: Any = None, **options: Any) -> Any:
    r"""Qwen3-Next's gated RMSNorm (``Qwen3NextRMSNormGated``): the norm, then the gate ``z``,
    :math:`y = \operatorname{cast}_{x}(\operatorname{rms\_norm}(x, w) \odot
    \operatorname{silu}(\operatorname{fp32}(z)))`, shape (..., d) -> (..., d). ``options`` as
    :func:`rms_norm`'s; the preset defaults to "qwen3", whose contract (Llama's order, a direct
    weight) the gated module shares. Bit for bit on torch; numpy's silu agrees to rounding."""
    options.setdefault("preset", "qwen3")
    y = rms_norm(x, weight, **options)
    if _backend.is_torch(y):
        import torch.nn.functional as F

        return (y * F.silu(gate.float())).to(x.dtype)
    z = np.asarray(gate, dtype=np.float32)
    return (y * (z / (1 + np.exp(-z)))).astype(np.asarray(x).dtype)


@keyword_signature("layer")
def layer_norm(x: Any, weight: Any = None, bias: Any = None, **options: Any) -> Any:
    """LayerNorm over the last axis of ``x``, :data:`LAYER_FORMULA`: shape (..., d) -> (..., d).

    Arguments as in :func:`rms_norm` (no ``partial``); ``eps`` defaults to the preset's, else
    ``DEFAULT_LAYER_EPS``. With ``eps_placement`` "outside" or "clamp" the standard deviation
    takes the place of the RMS."""
    settings = Settings.of("layer", options, caller="layer_norm")
    return normalise("layer", x, weight, bias, settings, report=False)


@keyword_signature("rms")
def rms_norm_report(x: Any, weight: Any = None, bias: Any = None, **options: Any) -> NormReport:
    """:func:`rms_norm` (its keywords), with the statistics, resolved settings and notes."""
    settings = Settings.of("rms", options, caller="rms_norm_report")
    return normalise("rms", x, weight, bias, settings, report=True)


@keyword_signature("layer")
def layer_norm_report(x: Any, weight: Any = None, bias: Any = None, **options: Any) -> NormReport:
    """:func:`layer_norm` (its keywords), with the statistics, resolved settings and notes."""
    settings = Settings.of("layer", options, caller="layer_norm_report")
    return normalise("layer", x, weight, bias, settings, report=True)
