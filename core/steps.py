r"""The arithmetic of a norm call, on a call :mod:`core.knobs` prepared: the statistic, the
denominator, the gain and the cast, the report.

:func:`normalise` runs them for :mod:`core.norms`. Plain calls on float32/float64 CPU tensors take
the fused kernel of :mod:`core.fast` instead; presets whose upstream is a torch kernel call that
kernel (:mod:`core.presets` says how close each comes to its upstream). What the core has to
say besides the numbers (eps's origin, an overflow, 0/0) is a :class:`Message` with a code: in
``NormReport.notes``, and as a :class:`NormWarning` where the numbers alone would hide it."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core import _backend
from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS
from core.knobs import Call, Settings, prepare, resolve
from core.messages import Message, NormWarning


@dataclass
class NormReport:
    """A normalisation and the statistics behind it.

    ``stat`` is the denominator actually divided by, per row; ``mean``, ``mean_square`` and
    ``variance`` are those of ``x`` (the ones the norm used are in the reduction dtype, the
    others in float64 for teaching). All statistics are float64 numpy arrays of shape (..., 1).
    Where a preset's output comes from its upstream torch kernel, the statistics are the two-pass
    formula's in the same dtype (a note says so). ``notes`` are :class:`Message` s: ``str(note)``
    is English, ``note.code`` and ``note.fields`` let a page say it in another language.

    ``output`` is in the compute dtype; ``x_hat`` is the normalised vector before gain and bias,
    float64 of x's shape, from x as the norm read it (its input dtype): see :func:`_x_hat`."""

    output: Any
    x_hat: np.ndarray
    stat: np.ndarray
    mean: np.ndarray
    mean_square: np.ndarray
    variance: np.ndarray
    eps: float
    settings: dict[str, Any]
    notes: list[Message] = field(default_factory=list)


def normalise(
    kind: str, x: Any, weight: Any, bias: Any, settings: Settings, *, report: bool
) -> Any:
    if not report and _is_plain(x, settings):
        fast = _plain_fast(kind, x, weight, bias, settings.eps)
        if fast is not None:
            return fast
    # 0 * inf and x / 0 are handled by _zero_convention and overflow is reported as a
    # NormWarning, so numpy's own RuntimeWarnings would only repeat them less clearly.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        call = prepare(resolve(kind, settings), x, weight, bias)
        output, rep = _compute(call, report=report)
    for message in call.warnings:
        # stacklevel 3: the caller of rms_norm / layer_norm, not this helper.
        warnings.warn(NormWarning(message), stacklevel=3)
    return rep if report else output


def _is_plain(x: Any, s: Settings) -> bool:
    """Whether a call asks for the textbook norm on a torch tensor, every knob at its default:
    then the fused kernels of ``core.fast`` give the same numbers (to rounding) faster."""
    return (
        _backend.is_torch(x)
        and s.preset is None
        and s.eps_placement in (None, "inside")
        and s.reduction_dtype in (None, str(x.dtype).removeprefix("torch."))
        and s.gain_mode in (None, "direct")
        and s.partial == 1.0
        and s.device is None
    )


def _plain_fast(kind: str, x: Any, weight: Any, bias: Any, eps: Any) -> Any:
    """The fused kernel's output, or None to take the general path (which validates and reports).

    Weights that are not tensors of x's dtype and device, eps = 0, nan or inf all go the
    general way, so errors and notes are the same whichever path a call would have taken."""
    if any(p is not None and not _backend.is_torch(p) for p in (weight, bias)):
        return None
    value = (DEFAULT_RMS_EPS if kind == "rms" else DEFAULT_LAYER_EPS) if eps is None else eps
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return None
    if not math.isfinite(value):
        return None
    from core import fast

    return fast.plain_norm(kind, x, weight, bias, float(value))


@dataclass
class _Statistic:
    """Step 2's result: what the denominator is built from, in the reduction dtype."""

    centred: Any  # x for RMSNorm, x - mu for LayerNorm
    mu: Any  # LayerNorm's mean, else None
    second: Any  # "inside": the mean square or the variance; else None
    norm: Any  # "outside" / "clamp": the 2-norm of the (first k) centred coordinates; else None


def _compute(call: Call, *, report: bool) -> tuple[Any, NormReport | None]:
    """Steps 2 to 5 on a prepared call: statistic, denominator, gain and cast, report."""
    y = _upstream_kernel(call)
    if y is not None and not report:
        return _to_caller(call, y), None
    stat = _statistic(call)
    xhat, denominator = _denominator(call, stat)
    if y is None:
        y = _gain_and_cast(call, xhat)
        if not call.warnings and not call.ops.all_finite(y):
            call.say("overflow_output", warn=True, dtype=call.ops.dtype_name(y))
    y = _to_caller(call, y)
    return y, (_report(call, stat, denominator, y) if report else None)


# ---------------------------------------------------------------- an upstream kernel -----------


def _upstream_kernel(call: Call) -> Any:
    """The output of the preset's own torch kernel (F.rms_norm / F.layer_norm), or None.

    Used when the call is exactly the preset's upstream computation on torch: its knobs unchanged
    (eps may differ), every coordinate in the statistic, and weight/bias dtypes torch accepts.
    A non-finite output also gives None: the general path then raises or says why."""
    knobs, ops = call.knobs, call.ops
    kernel = knobs.preset.kernel if knobs.preset is not None else None
    if kernel is None or not knobs.is_presets_own() or ops.name != "torch" or call.k != call.d:
        return None
    x = call.x if knobs.reduction_dtype == "opmath" else ops.cast(call.x, call.reduction_dtype)
    if not all(_kernel_takes(ops, x, p, call.d) for p in (call.weight, call.bias)):
        return None
    functional = ops.torch.nn.functional
    if kernel == "rms_norm":
        if call.bias is not None:
            return None
        y = functional.rms_norm(x, (call.d,), call.weight, call.eps)
    else:
        y = functional.layer_norm(x, (call.d,), call.weight, call.bias, call.eps)
    if not ops.all_finite(y):
        return None
    call.say("kernel_used", preset=knobs.preset.name, kernel=kernel, dtype=call.reduction_dtype)
    return ops.cast(y, call.in_dtype)


def _kernel_takes(ops: Any, x: Any, p: Any, d: int) -> bool:
    """torch's norm kernels take a weight or bias of x's dtype, or float32 for a half x."""
    if p is None:
        return True
    half_x = ops.dtype_name(x) in _backend.HALF_NAMES
    return tuple(p.shape) == (d,) and (
        p.dtype == x.dtype or (half_x and ops.dtype_name(p) == "float32")
    )


# ---------------------------------------------------------------- step 2: the statistic --------


def _statistic(call: Call) -> _Statistic:
    """x in the reduction dtype, centred for LayerNorm, reduced to what the denominator needs."""
    ops, kind = call.ops, call.knobs.kind
    xr = ops.cast(call.x, call.reduction_dtype)
    mu = ops.mean_last(xr) if kind == "layer" else None  # (..., d) -> (..., 1)
    centred = xr if mu is None else xr - mu
    used = centred if call.k == call.d else centred[..., : call.k]
    if call.knobs.eps_placement == "inside":
        stat = _Statistic(centred, mu, second=ops.mean_last(ops.square(used)), norm=None)
    else:
        stat = _Statistic(centred, mu, second=None, norm=ops.norm_last(used))
    reduced = stat.second if stat.second is not None else stat.norm
    if not ops.all_finite(reduced):
        # A finite x can still overflow in the reduction; a non-finite x is the caller's error.
        if not ops.all_finite(call.x):
            raise ValueError("x must be finite (found NaN or Inf)")
        code = _overflow_code(call, used, mu)
        fields = {"dtype": call.reduction_dtype}
        if code.startswith("overflow_norm"):
            fields["accumulator"] = _backend.opmath(call.reduction_dtype)
        call.say(code, warn=True, **fields)
    return stat


def _overflow_code(call: Call, used: Any, mu: Any) -> str:
    """Which step overflowed, found by redoing it in the dtype the reduction used: the mean
    (LayerNorm), a single square, their sum, or (for a norm) its rounding to a half dtype."""
    ops, kind, dtype = call.ops, call.knobs.kind, call.reduction_dtype
    if mu is not None and not ops.all_finite(mu):
        return "overflow_mean_layer"
    # x.norm() of a half x accumulates in float32; the mean-square path squares in dtype itself.
    accumulator = dtype if call.knobs.eps_placement == "inside" else _backend.opmath(dtype)
    wide = ops.cast(used, accumulator)
    if not ops.all_finite(ops.square(wide)):
        return f"overflow_square_{kind}"
    if call.knobs.eps_placement == "inside" or not ops.all_finite(ops.norm_last(wide)):
        return f"overflow_sum_{kind}"
    return f"overflow_norm_{kind}"


# ---------------------------------------------------------------- step 3: the denominator ------


def _denominator(call: Call, stat: _Statistic) -> tuple[Any, Any]:
    """(xhat, the per-row denominator): eps inside the root, outside it, or as a floor on the
    norm; the outside and clamp forms in the order their upstream code computes them."""
    ops, placement, k = call.ops, call.knobs.eps_placement, call.k
    if placement == "inside":
        shifted = stat.second + call.eps  # (..., 1)
        inv = ops.rsqrt(shifted)
        if call.knobs.cast == "t5":
            # T5 multiplies the un-cast x by the float32 rsqrt: type promotion picks the dtype.
            wide = _backend.promote(call.in_dtype, call.reduction_dtype)
            xhat = ops.cast(call.x, wide) * ops.cast(inv, wide)
        else:
            xhat = stat.centred * inv
        zero, denominator = shifted == 0, ops.sqrt(shifted)
    elif placement == "outside":
        denominator = stat.norm * k ** (-1.0 / 2) + call.eps  # rmsnorm_torch.py: rms + eps
        xhat = stat.centred / denominator
        zero = denominator == 0
    else:
        clamped = ops.maximum(stat.norm, call.eps)  # F.normalize: norm.clamp_min(eps)
        xhat = stat.centred / clamped * k**0.5
        zero, denominator = clamped == 0, clamped * k ** (-1.0 / 2)
    return _zero_convention(call, zero, stat.centred, xhat), denominator


def _zero_convention(call: Call, zero: Any, centred: Any, xhat: Any) -> Any:
    """A zero denominator gives 0/0 (and x_i/0): define 0/0 as 0 and say so; x_i/0 stays inf."""
    ops = call.ops
    if not ops.any_true(zero):
        return xhat
    zero_entry = centred == 0
    xhat = ops.where(~(zero & zero_entry), xhat, 0.0)
    if ops.any_true(zero & ops.all_last(zero_entry)):
        code = "zero_vector" if call.knobs.kind == "rms" else "zero_variance"
        if call.eps == 0.0:
            call.say(code, warn=True)
        else:
            call.say(f"{code}_eps_lost", warn=True, eps=call.eps, dtype=call.reduction_dtype)
    if not ops.all_finite(xhat):
        call.say("zero_stat_inf", warn=True)
    return xhat


# ---------------------------------------------------------------- step 4: gain and cast --------


def _gain_and_cast(call: Call, xhat: Any) -> Any:
    """Multiply by the gain, add the bias, and cast back, in the order the cast rule says."""
    ops, w, b, in_dtype = call.ops, call.weight, call.bias, call.in_dtype
    rule = call.knobs.cast
    if rule == "after":
        y = _gain(xhat, w, call.knobs.gain_mode, ops.dtype_name(xhat), ops)
        y = y if b is None else y + ops.cast(b, ops.dtype_name(y))
        return ops.cast(y, in_dtype)
    if rule == "promote":
        y = _gain(xhat, w, call.knobs.gain_mode, None, ops)
        return ops.cast(y if b is None else y + b, in_dtype)
    if rule == "before":
        y = ops.cast(xhat, in_dtype)
    else:  # "t5": cast to the weight's dtype only when that is half
        w_half = w is not None and ops.dtype_name(w) in _backend.HALF_NAMES
        y = ops.cast(xhat, ops.dtype_name(w)) if w_half else xhat
    y = _gain(y, w, call.knobs.gain_mode, None, ops)
    return y if b is None else y + b


def _gain(h: Any, w: Any, gain_mode: str, dtype: str | None, ops: Any) -> Any:
    """h times the gain; dtype None lets type promotion between h and w choose."""
    if w is None:
        # No weight: gain 1 in both modes (an offset weight of 0 is a gain of 1 too).
        return h
    g = w if dtype is None else ops.cast(w, dtype)
    if gain_mode == "offset":
        g = 1.0 + g
    return h * g


def _to_caller(call: Call, y: Any) -> Any:
    """numpy for a numpy caller that was computed with torch (bfloat16 widened, with a note)."""
    if call.ops.name != "torch" or call.return_torch:
        return y
    if call.ops.dtype_name(y) == "bfloat16":
        call.say("bfloat16_widened")
        y = y.float()
    return y.detach().cpu().numpy()


# ---------------------------------------------------------------- step 5: the report -----------


def _report(call: Call, stat: _Statistic, denominator: Any, y: Any) -> NormReport:
    ops, knobs = call.ops, call.knobs
    x64 = ops.to_float64_numpy(call.x)
    mean64 = x64.mean(axis=-1, keepdims=True)  # (..., d) -> (..., 1)
    used_second = stat.second is not None
    mean_sq = (
        ops.to_float64_numpy(stat.second)
        if used_second and knobs.kind == "rms"
        else np.square(x64).mean(axis=-1, keepdims=True)  # (..., d) -> (..., 1)
    )
    var = (
        ops.to_float64_numpy(stat.second)
        if used_second and knobs.kind == "layer"
        else np.square(x64 - mean64).mean(axis=-1, keepdims=True)  # (..., d) -> (..., 1)
    )
    settings = {
        "kind": knobs.kind,
        "preset": knobs.preset.name if knobs.preset else None,
        "eps": call.eps,
        "eps_placement": knobs.eps_placement,
        "reduction_dtype": call.reduction_dtype,
        "gain_mode": knobs.gain_mode,
        "cast": knobs.cast,
        "partial": knobs.partial,
        "partial_size": call.k,
        "backend": ops.name,
        "device": str(call.x.device) if ops.name == "torch" else "cpu",
        "input_dtype": call.in_dtype,
        "output_dtype": str(getattr(y, "dtype", "")).removeprefix("torch."),
    }
    return NormReport(
        output=y,
        x_hat=_x_hat(call, x64),
        stat=ops.to_float64_numpy(denominator),
        mean=ops.to_float64_numpy(stat.mu) if stat.mu is not None else mean64,
        mean_square=mean_sq,
        variance=var,
        eps=call.eps,
        settings=settings,
        notes=call.notes,
    )


def _x_hat(call: Call, x64: np.ndarray) -> np.ndarray:
    r"""$\hat{x}$ in float64: x (x - mu for LayerNorm) over the settings' denominator.

    The second moment is taken of x / max|x| (of the first k coordinates for pRMSNorm), so that
    the squares of a tiny x (1e-200) or a huge one neither underflow nor overflow. Its root is
    scaled back before eps joins it. (..., d) -> (..., d)."""
    knobs, k = call.knobs, call.k
    head = x64 if knobs.kind == "layer" else x64[..., :k]
    top = np.max(np.abs(head), axis=-1, keepdims=True)  # (..., k) -> (..., 1)
    unit = np.where(top > 0, top, 1.0)  # x = 0 stays 0 in its own units
    scaled = head / unit
    if knobs.kind == "layer":
        mean = np.mean(scaled, axis=-1, keepdims=True)  # (..., d) -> (..., 1)
        scaled, centred = scaled - mean, x64 - unit * mean
    else:
        centred = x64
    rms = unit * np.sqrt(np.mean(scaled**2, axis=-1, keepdims=True))  # no eps: (..., 1)
    if knobs.eps_placement == "inside":
        den = np.hypot(rms, math.sqrt(call.eps))  # $\sqrt{\mathrm{RMS}^2 + \epsilon}$
    elif knobs.eps_placement == "outside":
        den = rms + call.eps
    else:
        root_k = math.sqrt(k)
        den = np.maximum(rms * root_k, call.eps) / root_k
    if (den > 0).all():
        return centred / den
    # 0/0 = 0 as in the output; a nonzero over 0 stays infinite (normalise silences numpy).
    return np.where((den == 0) & (centred == 0), 0.0, centred / den)
