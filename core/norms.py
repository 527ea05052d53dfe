r"""RMSNorm and LayerNorm with every knob that real implementations disagree on.

Both norms normalise over the last axis of ``x`` (shape ``(..., d)``). The knobs:

- ``eps_placement``: "inside" :math:`\sqrt{\overline{x^2} + \epsilon}` (default),
  "outside" :math:`\sqrt{\overline{x^2}} + \epsilon` (the RMSNorm paper's code), or "clamp"
  :math:`\max(\lVert x \rVert_2, \epsilon) / \sqrt{d}` (``F.normalize``, as x-transformers uses).
- ``reduction_dtype``: the dtype in which the squares, the mean and the variance are computed.
- ``gain_mode``: "direct" (``y = w * xhat``) or "offset" (zero-centred, ``y = (1 + w) * xhat``).
- ``cast``: "after" (multiply by the gain in the reduction dtype, cast to the input dtype once at
  the end) or "before" (cast ``xhat`` to the input dtype, then multiply by the weight, whose dtype
  then decides the result's by type promotion).

The same algorithm runs on numpy arrays or torch tensors (see :mod:`core._backend`); torch is
imported only when a tensor, a device or a half-precision reduction asks for it.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core import _backend
from core.device import resolve_device, torch_available
from core.presets import Preset, get_preset

RMS_FORMULA = r"y_i = g_i \, \frac{x_i}{\sqrt{\frac{1}{d}\sum_{j=1}^{d} x_j^{2} + \epsilon}}"
# Two lines, so that it fits beside another figure on a page.
LAYER_FORMULA = (
    r"\begin{gathered} y_i = g_i \, \frac{x_i - \mu}{\sqrt{\sigma^{2} + \epsilon}} + b_i, \\ "
    r"\mu = \frac{1}{d}\sum_{j=1}^{d} x_j, \quad "
    r"\sigma^{2} = \frac{1}{d}\sum_{j=1}^{d} (x_j - \mu)^{2} \end{gathered}"
)

# rms_norm_eps in the Llama and T5 configs (and LlamaRMSNorm's default): the usual RMSNorm eps.
DEFAULT_RMS_EPS = 1e-6
# torch.nn.LayerNorm's default eps.
DEFAULT_LAYER_EPS = 1e-5

EPS_PLACEMENTS = ("inside", "outside", "clamp")
REDUCTION_DTYPES = _backend.FLOAT_NAMES
GAIN_MODES = ("direct", "offset")
CASTS = ("after", "before")

# p * d is rounded to this many decimals before ceil, so that 0.07 * 100 = 7.000000000000001
# selects 7 coordinates, not 8.
_PARTIAL_DECIMALS = 9


class NormWarning(UserWarning):
    """Something happened that the numbers alone would hide (0/0, an overflow to inf)."""


@dataclass
class NormReport:
    """A normalisation and the statistics behind it.

    ``stat`` is the denominator actually divided by, per row; ``mean``, ``mean_square`` and
    ``variance`` are those of ``x`` (the ones the norm used are in the reduction dtype, the
    others in float64 for teaching). All statistics are float64 numpy arrays of shape (..., 1).
    """

    output: Any
    stat: np.ndarray
    mean: np.ndarray
    mean_square: np.ndarray
    variance: np.ndarray
    eps: float
    settings: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def rms_norm(
    x: Any,
    weight: Any = None,
    bias: Any = None,
    *,
    eps: float | None = None,
    preset: str | Preset | None = None,
    eps_placement: str | None = None,
    reduction_dtype: str | None = None,
    gain_mode: str | None = None,
    cast: str | None = None,
    partial: float = 1.0,
    device: str | None = None,
) -> Any:
    r"""RMSNorm over the last axis of ``x``: shape (..., d) -> (..., d).

    .. math:: y_i = g_i \, \frac{x_i}{\sqrt{\frac{1}{d}\sum_{j=1}^{d} x_j^{2} + \epsilon}}

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
        ``cast="before"`` or the t5 preset let type promotion with the weight decide.
    """
    if _is_plain(x, bias, preset, eps_placement, reduction_dtype, gain_mode, partial, device):
        fast = _plain_fast("rms", x, weight, None, eps)
        if fast is not None:
            return fast
    result = _run(
        "rms",
        x,
        weight,
        bias,
        eps,
        preset,
        eps_placement,
        reduction_dtype,
        gain_mode,
        cast,
        partial,
        device,
        report=False,
    )
    _emit(result.warnings)
    return result.output


def layer_norm(
    x: Any,
    weight: Any = None,
    bias: Any = None,
    *,
    eps: float | None = None,
    preset: str | Preset | None = None,
    eps_placement: str | None = None,
    reduction_dtype: str | None = None,
    gain_mode: str | None = None,
    cast: str | None = None,
    device: str | None = None,
) -> Any:
    r"""LayerNorm over the last axis of ``x``: shape (..., d) -> (..., d).

    .. math:: \begin{gathered} y_i = g_i \, \frac{x_i - \mu}{\sqrt{\sigma^{2} + \epsilon}} + b_i, \\ \mu = \frac{1}{d}\sum_{j=1}^{d} x_j, \quad \sigma^{2} = \frac{1}{d}\sum_{j=1}^{d} (x_j - \mu)^{2} \end{gathered}

    Arguments as in :func:`rms_norm` (no ``partial``); ``eps`` defaults to the preset's, else
    ``DEFAULT_LAYER_EPS``. With ``eps_placement`` "outside" or "clamp" the standard deviation
    takes the place of the RMS.
    """  # noqa: E501
    if _is_plain(x, None, preset, eps_placement, reduction_dtype, gain_mode, 1.0, device):
        # LayerNorm's bias is part of the fused kernel, so it does not rule the fast path out.
        fast = _plain_fast("layer", x, weight, bias, eps)
        if fast is not None:
            return fast
    result = _run(
        "layer",
        x,
        weight,
        bias,
        eps,
        preset,
        eps_placement,
        reduction_dtype,
        gain_mode,
        cast,
        1.0,
        device,
        report=False,
    )
    _emit(result.warnings)
    return result.output


def rms_norm_report(
    x: Any,
    weight: Any = None,
    bias: Any = None,
    *,
    eps: float | None = None,
    preset: str | Preset | None = None,
    eps_placement: str | None = None,
    reduction_dtype: str | None = None,
    gain_mode: str | None = None,
    cast: str | None = None,
    partial: float = 1.0,
    device: str | None = None,
) -> NormReport:
    """:func:`rms_norm` plus the statistics, resolved settings and notes behind it."""
    result = _run(
        "rms",
        x,
        weight,
        bias,
        eps,
        preset,
        eps_placement,
        reduction_dtype,
        gain_mode,
        cast,
        partial,
        device,
        report=True,
    )
    _emit(result.warnings)
    return result.report


def layer_norm_report(
    x: Any,
    weight: Any = None,
    bias: Any = None,
    *,
    eps: float | None = None,
    preset: str | Preset | None = None,
    eps_placement: str | None = None,
    reduction_dtype: str | None = None,
    gain_mode: str | None = None,
    cast: str | None = None,
    device: str | None = None,
) -> NormReport:
    """:func:`layer_norm` plus the statistics, resolved settings and notes behind it."""
    result = _run(
        "layer",
        x,
        weight,
        bias,
        eps,
        preset,
        eps_placement,
        reduction_dtype,
        gain_mode,
        cast,
        1.0,
        device,
        report=True,
    )
    _emit(result.warnings)
    return result.report


def _is_plain(
    x: Any,
    bias: Any,
    preset: Any,
    eps_placement: Any,
    reduction_dtype: Any,
    gain_mode: Any,
    partial: Any,
    device: Any,
) -> bool:
    """Whether a call asks for the textbook norm on a torch tensor, with every knob at its
    default: then the fused or two-pass kernels of ``core.fast`` give the same numbers faster."""
    return (
        _backend.is_torch(x)
        and bias is None
        and preset is None
        and eps_placement in (None, "inside")
        and reduction_dtype in (None, str(x.dtype).removeprefix("torch."))
        and gain_mode in (None, "direct")
        and partial == 1.0
        and device is None
    )


def _plain_fast(kind: str, x: Any, weight: Any, bias: Any, eps: Any) -> Any:
    """The fast kernel's output, or None to take the general path (which validates and reports).

    Weights that are not tensors of x's dtype and device, eps = 0, nan or inf all go the
    general way, so errors and notes are the same whichever path a call would have taken.
    """
    if any(p is not None and not _backend.is_torch(p) for p in (weight, bias)):
        return None
    value = (DEFAULT_RMS_EPS if kind == "rms" else DEFAULT_LAYER_EPS) if eps is None else eps
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return None
    if weight is not None and tuple(weight.shape) != (x.shape[-1],):
        return None
    if bias is not None and tuple(bias.shape) != (x.shape[-1],):
        return None
    from core import fast

    if kind == "rms":
        return fast.plain_rms_norm(x, weight, float(value))
    return fast.plain_layer_norm(x, weight, bias, float(value))


@dataclass
class _Result:
    output: Any
    warnings: list[str]
    report: NormReport | None = None


def _emit(messages: list[str]) -> None:
    for message in messages:
        # stacklevel 3: the caller of rms_norm / layer_norm, not this helper.
        warnings.warn(message, NormWarning, stacklevel=3)


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)} (got {value!r})")
    return value


def _resolve_preset(kind: str, preset: str | Preset | None) -> Preset | None:
    if preset is None or isinstance(preset, Preset):
        if isinstance(preset, Preset) and preset.kind != kind:
            raise ValueError(f"preset must be a {kind!r} preset (got {preset.kind}:{preset.name})")
        return preset
    if not isinstance(preset, str):
        raise ValueError(f"preset must be a name, a Preset or None (got {preset!r})")
    return get_preset(preset, kind)


def _check_eps(eps: Any) -> float:
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise ValueError(f"eps must be a number >= 0 or None (got {eps!r})")
    eps = float(eps)
    if math.isnan(eps) or math.isinf(eps):
        raise ValueError(f"eps must be a finite number >= 0 (got {eps})")
    if eps < 0:
        raise ValueError(f"eps must be >= 0 (got {eps})")
    return eps


def _check_partial(partial: Any) -> float:
    ok = isinstance(partial, numbers.Real) and not isinstance(partial, bool)
    if not ok or not 0.0 < float(partial) <= 1.0:
        raise ValueError(f"partial must be in (0, 1] (got {partial!r})")
    return float(partial)


def _as_numpy(x: Any, name: str, dtype: Any = None) -> np.ndarray:
    """A numeric numpy array from a list or array; integers and bools become float64."""
    try:
        arr = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric (a list, numpy array or torch tensor)") from exc
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    if arr.dtype.kind != "f":
        raise ValueError(f"{name} must hold real floating-point numbers (got dtype {arr.dtype})")
    return arr


def _run(*args: Any, report: bool) -> _Result:
    # 0 * inf and x / 0 are handled by _zero_convention and overflow is reported as a
    # NormWarning, so numpy's own RuntimeWarnings would only repeat them less clearly.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _compute(*args, report=report)


def _compute(
    kind: str,
    x: Any,
    weight: Any,
    bias: Any,
    eps: Any,
    preset: str | Preset | None,
    eps_placement: str | None,
    reduction_dtype: str | None,
    gain_mode: str | None,
    cast: str | None,
    partial: Any,
    device: str | None,
    *,
    report: bool,
) -> _Result:
    notes: list[str] = []
    warns: list[str] = []

    # --- knobs: explicit keyword > preset > module default -------------------------------------
    p = _resolve_preset(kind, preset)
    placement = (
        _choice("eps_placement", eps_placement, EPS_PLACEMENTS)
        if eps_placement is not None
        else (p.eps_placement if p else "inside")
    )
    gain = (
        _choice("gain_mode", gain_mode, GAIN_MODES)
        if gain_mode is not None
        else (p.gain_mode if p else "direct")
    )
    cast_mode = _choice("cast", cast, CASTS) if cast is not None else (p.cast if p else "after")
    if reduction_dtype is not None:
        red_rule = _choice("reduction_dtype", reduction_dtype, REDUCTION_DTYPES)
    else:
        red_rule = p.reduction_dtype if p else None
    p_frac = _check_partial(partial)
    eps_value = _check_eps(eps) if eps is not None else None
    if device is not None:
        device = resolve_device(device)

    # --- inputs: decide the backend, validate shapes -------------------------------------------
    any_torch = any(_backend.is_torch(a) for a in (x, weight, bias))
    if _backend.is_torch(x):
        if not x.is_floating_point():
            raise ValueError(f"x must be a floating-point tensor (got dtype {x.dtype})")
        x_np = None
        in_dtype = str(x.dtype).removeprefix("torch.")
    else:
        x_np = _as_numpy(x, "x")
        in_dtype = x_np.dtype.name
    shape = tuple(x.shape) if x_np is None else x_np.shape
    if len(shape) == 0:
        raise ValueError("x must have at least one dimension: shape (..., d) (got a 0-d input)")
    d = shape[-1]
    if d == 0:
        raise ValueError(f"x must have a non-empty last axis d (got shape {shape})")

    if red_rule is None:
        red = in_dtype
    elif red_rule == "opmath":
        red = "float32" if in_dtype in _backend.HALF_NAMES else in_dtype
    else:
        red = red_rule

    use_torch = device is not None or any_torch or red in _backend.HALF_NAMES
    if use_torch and not torch_available():
        raise ValueError(
            f"reduction_dtype {red!r} needs torch (numpy has no bfloat16 and no float32-"
            "accumulating float16 sum), which is not installed"
        )
    if x_np is not None and red in _backend.HALF_NAMES and device is None and not any_torch:
        notes.append(f"numpy input with a {red} reduction: computed with torch on the CPU.")

    if use_torch:
        ops = _backend.TorchOps()
        torch = ops.torch
        if x_np is not None:
            target = device or next(
                (a.device for a in (weight, bias) if _backend.is_torch(a)), "cpu"
            )
            xt = torch.from_numpy(np.ascontiguousarray(x_np)).to(target)
        else:
            xt = x.to(device) if device is not None else x
        dev = xt.device
    else:
        ops = _backend.NumpyOps()
        xt = x_np
        dev = "cpu"
    return_torch = device is not None or (x_np is None)

    w = _param(weight, "weight", d, in_dtype, ops, dev)
    b = _param(bias, "bias", d, in_dtype, ops, dev)
    if p is not None and w is not None and not p.has_weight:
        notes.append(f"preset {p.name!r} has no weight upstream; the given weight was applied.")
    if p is not None and b is not None and not p.has_bias:
        notes.append(f"preset {p.name!r} has no bias upstream; the given bias was applied.")

    # --- eps -----------------------------------------------------------------------------------
    if eps_value is not None:
        notes.append(f"eps = {eps_value:g}, given explicitly.")
    elif p is not None and p.eps is not None:
        eps_value = p.eps
        notes.append(f"eps = {eps_value:g}, from preset {p.name!r}.")
    elif p is not None:
        eps_value = ops.finfo_eps(red)
        notes.append(
            f"eps = torch.finfo({red}).eps = {eps_value:.8g}: preset {p.name!r} has eps=None."
        )
    else:
        eps_value = DEFAULT_RMS_EPS if kind == "rms" else DEFAULT_LAYER_EPS
        why = (
            "rms_norm_eps of the Llama and T5 configs"
            if kind == "rms"
            else "torch.nn.LayerNorm's default"
        )
        notes.append(f"eps = {eps_value:g}, the default ({why}).")

    k = d
    if kind == "rms" and p_frac < 1.0:
        k = min(d, max(1, math.ceil(round(p_frac * d, _PARTIAL_DECIMALS))))
        notes.append(
            f"pRMSNorm: the RMS comes from the first k = ceil(p*d) = {k} of {d} coordinates "
            f"(the paper's code takes int(p*d) = {int(p_frac * d)})."
        )
        if not ops.all_finite(xt):
            raise ValueError("x must be finite (found NaN or Inf)")

    # --- the reduction -------------------------------------------------------------------------
    xr = ops.cast(xt, red)
    if kind == "rms":
        xs = xr if k == d else xr[..., :k]
        centred = xr
        mean_sq = ops.mean_last(ops.square(xs))  # (..., k) -> (..., 1)
        second = mean_sq
        mu = None
    else:
        mu = ops.mean_last(xr)  # (..., d) -> (..., 1)
        centred = xr - mu
        second = ops.mean_last(ops.square(centred))  # (..., d) -> (..., 1)
        mean_sq = None
    if not ops.all_finite(second):
        # A finite x can still overflow in the reduction; a non-finite x is the caller's error.
        if not ops.all_finite(xt):
            raise ValueError("x must be finite (found NaN or Inf)")
        what = "mean square" if kind == "rms" else "variance"
        msg = (
            f"the {what} overflowed to inf in {red} (x is finite, its squares are not): "
            "the output is what that arithmetic gives."
        )
        warns.append(msg)
        notes.append(msg)

    # --- the denominator: eps inside the root, outside it, or as a floor on the norm -----------
    if placement == "inside":
        shifted = second + eps_value
        inv = ops.rsqrt(shifted)
        if cast_mode == "t5":
            # T5 multiplies the un-cast x by the float32 rsqrt: type promotion picks the dtype.
            wide = _backend.promote(in_dtype, red)
            xhat = ops.cast(xt, wide) * ops.cast(inv, wide)
        else:
            xhat = centred * inv
        stat = ops.sqrt(shifted) if report else None
    else:
        root = ops.sqrt(second)
        stat = (
            root + eps_value
            if placement == "outside"
            else ops.maximum(root, eps_value / math.sqrt(k))
        )
        xhat = centred / stat

    if eps_value == 0.0:
        xhat = _zero_convention(kind, ops, second, centred, xhat, warns, notes)

    # --- gain, bias and the cast back ----------------------------------------------------------
    if cast_mode == "after":
        y = _gain(xhat, w, gain, ops.dtype_name(xhat), ops)
        if b is not None:
            y = y + ops.cast(b, ops.dtype_name(y))
        y = ops.cast(y, in_dtype)
    else:
        if cast_mode == "before":
            y = ops.cast(xhat, in_dtype)
        else:
            w_half = w is not None and ops.dtype_name(w) in _backend.HALF_NAMES
            y = ops.cast(xhat, ops.dtype_name(w)) if w_half else xhat
        y = _gain(y, w, gain, None, ops)
        if b is not None:
            y = y + b

    out_dtype = ops.dtype_name(y)
    if use_torch and not return_torch:
        if out_dtype == "bfloat16":
            notes.append("numpy has no bfloat16: the output was widened to float32.")
            y = y.float()
        y = y.cpu().numpy()

    if not report:
        return _Result(y, warns)

    settings = {
        "kind": kind,
        "preset": p.name if p else None,
        "eps": eps_value,
        "eps_placement": placement,
        "reduction_dtype": red,
        "gain_mode": gain,
        "cast": cast_mode,
        "partial": p_frac,
        "partial_size": k,
        "backend": ops.name,
        "device": str(dev),
        "input_dtype": in_dtype,
        "output_dtype": out_dtype,
    }
    x64 = ops.to_float64_numpy(xt)
    mean64 = x64.mean(axis=-1, keepdims=True)  # (..., d) -> (..., 1)
    rep = NormReport(
        output=y,
        stat=ops.to_float64_numpy(stat),
        mean=ops.to_float64_numpy(mu) if mu is not None else mean64,
        mean_square=ops.to_float64_numpy(mean_sq)
        if mean_sq is not None
        else np.square(x64).mean(axis=-1, keepdims=True),  # (..., d) -> (..., 1)
        variance=ops.to_float64_numpy(second)
        if kind == "layer"
        else np.square(x64 - mean64).mean(axis=-1, keepdims=True),  # (..., d) -> (..., 1)
        eps=eps_value,
        settings=settings,
        notes=notes,
    )
    return _Result(y, warns, rep)


def _param(value: Any, name: str, d: int, in_dtype: str, ops: Any, dev: Any) -> Any:
    """weight / bias on the compute backend, shape () or (d,), keeping a stored dtype."""
    if value is None:
        return None
    if _backend.is_torch(value):
        arr = value if value.is_floating_point() else value.to(ops.dtype(in_dtype))
    else:
        arr = _as_numpy(value, name)
        if ops.name == "torch":
            arr = ops.torch.from_numpy(np.ascontiguousarray(arr))
        if not isinstance(value, np.ndarray | np.generic):
            # A list or number has no dtype of its own: it takes the input's.
            arr = ops.cast(arr, in_dtype)
    shape = tuple(arr.shape)
    if shape not in ((), (1,), (d,)):
        raise ValueError(f"{name} must have shape (d,) = ({d},) or be a scalar (got {shape})")
    if ops.name == "torch":
        arr = arr.to(dev)
    if not ops.all_finite(arr):
        raise ValueError(f"{name} must be finite (found NaN or Inf)")
    return arr


def _gain(h: Any, w: Any, gain_mode: str, dtype: str | None, ops: Any) -> Any:
    """h times the gain; dtype None lets type promotion between h and w choose."""
    if w is None:
        # No weight: gain 1 in both modes (an offset weight of 0 is a gain of 1 too).
        return h
    g = w if dtype is None else ops.cast(w, dtype)
    if gain_mode == "offset":
        g = 1.0 + g
    return h * g


def _zero_convention(
    kind: str,
    ops: Any,
    second: Any,
    centred: Any,
    xhat: Any,
    warns: list[str],
    notes: list[str],
) -> Any:
    """With eps = 0 a zero statistic gives 0/0: define it as 0 (the limit), and say so."""
    zero_stat = second == 0
    if not ops.any_true(zero_stat):
        return xhat
    zero_entry = centred == 0
    xhat = ops.where(~(zero_stat & zero_entry), xhat, 0.0)
    if ops.any_true(zero_stat & ops.all_last(zero_entry)):
        what = "zero vector" if kind == "rms" else "constant row (zero variance)"
        msg = f"{what} with eps = 0: 0/0 is taken as 0 (the limit convention), so its output is 0."
        warns.append(msg)
        notes.append(msg)
    if not ops.all_finite(xhat):
        msg = (
            "the statistic is 0 but some coordinates are not (an underflow, or a zero prefix "
            "with partial < 1): they are divided by 0 and become inf."
        )
        warns.append(msg)
        notes.append(msg)
    return xhat
