r"""RMSNorm and LayerNorm: the textbook definitions first, then every knob real code disagrees on.

Read this module top to bottom:

1. :func:`rms_norm_reference` and :func:`layer_norm_reference`: each norm in a few lines of
   float64 numpy, one formula step per line. Every other path is tested against them. The
   formulas themselves are :data:`RMS_FORMULA` and :data:`LAYER_FORMULA` (pages render these).
2. :func:`mean_square`, :func:`variance`, :func:`rms_denominator`, :func:`std_denominator`: the
   statistics, on numpy arrays or torch tensors, for the rest of the core to share.
3. :func:`rms_norm`, :func:`layer_norm` and their ``*_report`` twins: the norms with knobs. Both
   normalise over the last axis of ``x`` (shape ``(..., d)``):

   - ``eps_placement``: "inside" :math:`\sqrt{\overline{x^2} + \epsilon}` (default), "outside"
     :math:`\lVert x \rVert_2 / \sqrt{d} + \epsilon` (``rmsnorm_torch.py`` in the RMSNorm paper's
     repository), or "clamp" :math:`\max(\lVert x \rVert_2, \epsilon) / \sqrt{d}` (``F.normalize``,
     as x-transformers uses it). The last two compute the norm as their upstream code does.
   - ``reduction_dtype``: the dtype in which the squares, the mean and the variance are computed.
   - ``gain_mode``: "direct" (``y = w * xhat``) or "offset" (zero-centred, ``y = (1 + w) * xhat``).
   - ``cast``: "after" (multiply by the gain in the reduction dtype, cast to the input dtype once
     at the end) or "before" (cast ``xhat`` to the input dtype, then multiply by the weight, whose
     dtype then decides the result's by type promotion). Presets add two rules, see
     :mod:`core.presets`.

4. The steps behind them: resolve the settings, the statistic, the denominator, the gain and the
   cast, the report. Plain calls on float32/float64 CPU tensors take the fused kernel of
   :mod:`core.fast` instead; presets whose upstream is a torch kernel call that kernel.

The same steps run on numpy arrays or torch tensors (see :mod:`core._backend`); torch is imported
only when a tensor, a device or a half-precision reduction asks for it. Presets are bit for bit
with their upstream code on torch tensors; on numpy arrays the same steps run in numpy, equal to
rounding. What the core
has to say besides the numbers (eps's origin, an overflow, 0/0) is a :class:`Message` with a code:
in ``NormReport.notes``, and as a :class:`NormWarning` where the numbers alone would hide it.
"""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any, TypeVar

import numpy as np

from core import _backend
from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS
from core.device import resolve_device, torch_available
from core.messages import Message, NormWarning
from core.presets import Preset, get_preset

__all__ = [
    "DEFAULT_LAYER_EPS",
    "DEFAULT_RMS_EPS",
    "LAYER_FORMULA",
    "RMS_FORMULA",
    "NormReport",
    "NormWarning",
    "Settings",
    "layer_norm",
    "layer_norm_reference",
    "layer_norm_report",
    "mean_square",
    "rms_denominator",
    "rms_norm",
    "rms_norm_reference",
    "rms_norm_report",
    "std_denominator",
    "variance",
]

RMS_FORMULA = r"y_i = g_i \, \frac{x_i}{\sqrt{\frac{1}{d}\sum_{j=1}^{d} x_j^{2} + \epsilon}}"
# Two lines, so that it fits beside another figure on a page.
LAYER_FORMULA = (
    r"\begin{gathered} y_i = g_i \, \frac{x_i - \mu}{\sqrt{\sigma^{2} + \epsilon}} + b_i, \\ "
    r"\mu = \frac{1}{d}\sum_{j=1}^{d} x_j, \quad "
    r"\sigma^{2} = \frac{1}{d}\sum_{j=1}^{d} (x_j - \mu)^{2} \end{gathered}"
)


# ================================================================ 1. the textbook norms =========


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


# ================================================================ 2. the statistics =============


def mean_square(x: Any) -> Any:
    r"""$\overline{x^2} = \frac{1}{d}\sum_j x_j^2$ over the last axis: (..., d) -> (..., 1).

    numpy arrays (or lists) and torch tensors, computed in ``x``'s own dtype and returned in it.
    """
    ops, x = _backend.ops_for(x), _backend_array(x)
    return ops.mean_last(ops.square(x))


def variance(x: Any) -> Any:
    r"""$\sigma^2 = \frac{1}{d}\sum_j (x_j - \mu)^2$ over the last axis: (..., d) -> (..., 1).

    Two passes, the mean first, never E[x²] − μ² (which cancels catastrophically).
    """
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


# ================================================================ 3. the norms with knobs ======

EPS_PLACEMENTS = ("inside", "outside", "clamp")
REDUCTION_DTYPES = _backend.FLOAT_NAMES
GAIN_MODES = ("direct", "offset")
CASTS = ("after", "before")

# p * d is rounded to this many decimals before ceil, so that 0.07 * 100 = 7.000000000000001
# selects 7 coordinates, not 8.
_PARTIAL_DECIMALS = 9


@dataclass(frozen=True)
class Settings:
    """The keywords of the four public functions as the caller gave them: None takes the
    preset's value, else the module default (see :func:`rms_norm`). Their signatures show these
    fields as keyword-only parameters (:func:`_keywords`)."""

    eps: float | None = None
    preset: str | Preset | None = None
    eps_placement: str | None = None
    reduction_dtype: str | None = None
    gain_mode: str | None = None
    cast: str | None = None
    partial: float = 1.0
    device: str | None = None

    @classmethod
    def fields_of(cls, kind: str) -> list[Field]:
        """The keywords the functions of ``kind`` take: LayerNorm has no ``partial``."""
        return [f for f in fields(cls) if kind == "rms" or f.name != "partial"]

    @classmethod
    def of(cls, kind: str, keywords: Mapping[str, Any], *, caller: str) -> Settings:
        """The settings among ``keywords``; a keyword ``caller`` does not take is a TypeError."""
        names = {f.name for f in cls.fields_of(kind)}
        unknown = sorted(set(keywords) - names)
        if unknown:
            raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
        return cls(**{name: keywords[name] for name in names if name in keywords})


_F = TypeVar("_F", bound=Callable[..., Any])


def _keywords(kind: str) -> Callable[[_F], _F]:
    """Give ``f(x, weight=None, bias=None, **options)`` the signature that help(), notebooks
    and ``inspect.signature`` show: the fields of :class:`Settings` for ``kind`` as keyword-only
    parameters, with their defaults. ``Settings.of`` checks the keywords of each call."""

    def decorate(function: _F) -> _F:
        signature = inspect.signature(function)
        positional = [p for p in signature.parameters.values() if p.kind != p.VAR_KEYWORD]
        keywords = [
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type
            )
            for f in Settings.fields_of(kind)
        ]
        function.__signature__ = signature.replace(parameters=positional + keywords)
        return function

    return decorate


@dataclass
class NormReport:
    """A normalisation and the statistics behind it.

    ``stat`` is the denominator actually divided by, per row; ``mean``, ``mean_square`` and
    ``variance`` are those of ``x`` (the ones the norm used are in the reduction dtype, the
    others in float64 for teaching). All statistics are float64 numpy arrays of shape (..., 1).
    Where a preset's output comes from its upstream torch kernel, the statistics are the two-pass
    formula's in the same dtype (a note says so). ``notes`` are :class:`Message` s: ``str(note)``
    is English, ``note.code`` and ``note.fields`` let a page say it in another language.
    """

    output: Any
    stat: np.ndarray
    mean: np.ndarray
    mean_square: np.ndarray
    variance: np.ndarray
    eps: float
    settings: dict[str, Any]
    notes: list[Message] = field(default_factory=list)


@_keywords("rms")
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
        ``cast="before"`` or a preset lets type promotion with the weight decide.
    """
    settings = Settings.of("rms", options, caller="rms_norm")
    return _norm("rms", x, weight, bias, settings, report=False)


@_keywords("layer")
def layer_norm(x: Any, weight: Any = None, bias: Any = None, **options: Any) -> Any:
    """LayerNorm over the last axis of ``x``, :data:`LAYER_FORMULA`: shape (..., d) -> (..., d).

    Arguments as in :func:`rms_norm` (no ``partial``); ``eps`` defaults to the preset's, else
    ``DEFAULT_LAYER_EPS``. With ``eps_placement`` "outside" or "clamp" the standard deviation
    takes the place of the RMS.
    """
    settings = Settings.of("layer", options, caller="layer_norm")
    return _norm("layer", x, weight, bias, settings, report=False)


@_keywords("rms")
def rms_norm_report(x: Any, weight: Any = None, bias: Any = None, **options: Any) -> NormReport:
    """:func:`rms_norm` plus the statistics, resolved settings and notes behind it.

    Takes exactly :func:`rms_norm`'s keywords.
    """
    settings = Settings.of("rms", options, caller="rms_norm_report")
    return _norm("rms", x, weight, bias, settings, report=True)


@_keywords("layer")
def layer_norm_report(x: Any, weight: Any = None, bias: Any = None, **options: Any) -> NormReport:
    """:func:`layer_norm` plus the statistics, resolved settings and notes behind it.

    Takes exactly :func:`layer_norm`'s keywords.
    """
    settings = Settings.of("layer", options, caller="layer_norm_report")
    return _norm("layer", x, weight, bias, settings, report=True)


def _norm(kind: str, x: Any, weight: Any, bias: Any, settings: Settings, *, report: bool) -> Any:
    if not report and _is_plain(x, settings):
        fast = _plain_fast(kind, x, weight, bias, settings.eps)
        if fast is not None:
            return fast
    # 0 * inf and x / 0 are handled by _zero_convention and overflow is reported as a
    # NormWarning, so numpy's own RuntimeWarnings would only repeat them less clearly.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        call = _prepare(_resolve(kind, settings), x, weight, bias)
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
    general way, so errors and notes are the same whichever path a call would have taken.
    """
    if any(p is not None and not _backend.is_torch(p) for p in (weight, bias)):
        return None
    value = (DEFAULT_RMS_EPS if kind == "rms" else DEFAULT_LAYER_EPS) if eps is None else eps
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        return None
    if not math.isfinite(value):
        return None
    from core import fast

    return fast.plain_norm(kind, x, weight, bias, float(value))


# ================================================================ 4. the steps =================


@dataclass(frozen=True)
class _Knobs:
    """Step 1's result: every knob resolved (explicit keyword > preset > module default)."""

    kind: str
    preset: Preset | None
    eps: float | None  # given explicitly, else None (the preset's or the default, per dtype)
    placement: str
    reduction: str | None  # None (the input's dtype), "opmath" or a dtype name
    gain: str
    cast: str
    partial: float
    device: str | None

    def is_presets_own(self) -> bool:
        """Whether no explicit keyword changed the preset's contract (eps aside)."""
        p = self.preset
        if p is None:
            return False
        own = (p.eps_placement, p.reduction_dtype, p.gain_mode, p.cast)
        return (self.placement, self.reduction, self.gain, self.cast) == own


@dataclass
class _Call:
    """One call's arrays on the compute backend, and what the steps have to say about them."""

    knobs: _Knobs
    in_dtype: str
    red: str  # the reduction dtype
    d: int
    ops: Any = None  # _backend.NumpyOps or TorchOps
    x: Any = None  # on the compute backend, in the input dtype
    weight: Any = None
    bias: Any = None
    return_torch: bool = False
    k: int = 0  # coordinates the RMS reads (pRMSNorm), else d
    eps: float = 0.0
    notes: list[Message] = field(default_factory=list)
    warnings: list[Message] = field(default_factory=list)

    def say(self, code: str, warn: bool = False, **fields: Any) -> None:
        message = Message(code, fields)
        self.notes.append(message)
        if warn:
            self.warnings.append(message)


@dataclass
class _Statistic:
    """Step 2's result: what the denominator is built from, in the reduction dtype."""

    centred: Any  # x for RMSNorm, x - mu for LayerNorm
    mu: Any  # LayerNorm's mean, else None
    second: Any  # "inside": the mean square or the variance; else None
    norm: Any  # "outside" / "clamp": the 2-norm of the (first k) centred coordinates; else None


def _compute(call: _Call, *, report: bool) -> tuple[Any, NormReport | None]:
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


# ---------------------------------------------------------------- step 1: settings -------------


def _resolve(kind: str, s: Settings) -> _Knobs:
    p = _resolve_preset(kind, s.preset)

    def knob(name: str, value: Any, allowed: tuple[str, ...], default: Any) -> Any:
        if value is None:
            return getattr(p, name) if p is not None else default
        if value not in allowed:
            raise ValueError(f"{name} must be one of {list(allowed)} (got {value!r})")
        return value

    return _Knobs(
        kind=kind,
        preset=p,
        eps=_check_eps(s.eps) if s.eps is not None else None,
        placement=knob("eps_placement", s.eps_placement, EPS_PLACEMENTS, "inside"),
        reduction=knob("reduction_dtype", s.reduction_dtype, REDUCTION_DTYPES, None),
        gain=knob("gain_mode", s.gain_mode, GAIN_MODES, "direct"),
        cast=knob("cast", s.cast, CASTS, "after"),
        partial=_check_partial(s.partial),
        device=resolve_device(s.device) if s.device is not None else None,
    )


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


def _prepare(knobs: _Knobs, x: Any, weight: Any, bias: Any) -> _Call:
    """Validate the input, choose the backend and dtypes, place every array, resolve eps and k."""
    x_np, in_dtype, d = _read_x(x)
    call = _Call(knobs, in_dtype=in_dtype, red=_reduction_dtype(knobs.reduction, in_dtype), d=d)
    _place(call, x, x_np, weight, bias)
    call.weight = _param(weight, "weight", call)
    call.bias = _param(bias, "bias", call)
    p = knobs.preset
    if p is not None and call.weight is not None and not p.has_weight:
        call.say("preset_no_weight", preset=p.name)
    if p is not None and call.bias is not None and not p.has_bias:
        call.say("preset_no_bias", preset=p.name)
    call.eps = _resolve_eps(call)
    call.k = _partial_size(call)
    return call


def _read_x(x: Any) -> tuple[np.ndarray | None, str, int]:
    """(x as numpy, or None for a tensor; its dtype name; its width d), or a ValueError."""
    if _backend.is_torch(x):
        if not x.is_floating_point():
            raise ValueError(f"x must be a floating-point tensor (got dtype {x.dtype})")
        x_np, in_dtype, shape = None, str(x.dtype).removeprefix("torch."), tuple(x.shape)
    else:
        x_np = _as_numpy(x, "x")
        in_dtype, shape = x_np.dtype.name, x_np.shape
    if len(shape) == 0:
        raise ValueError("x must have at least one dimension: shape (..., d) (got a 0-d input)")
    if shape[-1] == 0:
        raise ValueError(f"x must have a non-empty last axis d (got shape {shape})")
    return x_np, in_dtype, shape[-1]


def _reduction_dtype(rule: str | None, in_dtype: str) -> str:
    if rule is None:
        return in_dtype
    return _backend.opmath(in_dtype) if rule == "opmath" else rule


def _place(call: _Call, x: Any, x_np: np.ndarray | None, weight: Any, bias: Any) -> None:
    """Compute on numpy, or on torch when a tensor, a device or a half reduction asks for it."""
    knobs = call.knobs
    any_torch = any(_backend.is_torch(a) for a in (x, weight, bias))
    half = call.red in _backend.HALF_NAMES
    if not (knobs.device is not None or any_torch or half):
        call.ops, call.x = _backend.NumpyOps(), x_np
        return
    if not torch_available():
        raise ValueError(
            f"reduction_dtype {call.red!r} needs torch (numpy has no bfloat16 and no float32-"
            "accumulating float16 sum), which is not installed"
        )
    call.ops = _backend.TorchOps()
    call.return_torch = x_np is None or knobs.device is not None
    if x_np is None:
        call.x = x.to(knobs.device) if knobs.device is not None else x
        return
    on = next((a.device for a in (weight, bias) if _backend.is_torch(a)), "cpu")
    call.x = call.ops.torch.from_numpy(np.ascontiguousarray(x_np)).to(knobs.device or on)
    if not any_torch and knobs.device is None:
        call.say("numpy_half_reduction", dtype=call.red)


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


def _param(value: Any, name: str, call: _Call) -> Any:
    """weight / bias on the compute backend, shape () or (d,), keeping a stored dtype."""
    if value is None:
        return None
    ops = call.ops
    if _backend.is_torch(value):
        arr = value if value.is_floating_point() else value.to(ops.dtype(call.in_dtype))
    else:
        arr = _as_numpy(value, name)
        if ops.name == "torch":
            arr = ops.torch.from_numpy(np.ascontiguousarray(arr))
        if not isinstance(value, np.ndarray | np.generic):
            # A list or number has no dtype of its own: it takes the input's.
            arr = ops.cast(arr, call.in_dtype)
    shape = tuple(arr.shape)
    if shape not in ((), (1,), (call.d,)):
        raise ValueError(f"{name} must have shape (d,) = ({call.d},) or be a scalar (got {shape})")
    if ops.name == "torch":
        arr = arr.to(call.x.device)
    if not ops.all_finite(arr):
        raise ValueError(f"{name} must be finite (found NaN or Inf)")
    return arr


def _resolve_eps(call: _Call) -> float:
    """eps: explicit > the preset's > finfo for a preset with eps=None > the module default."""
    knobs, p = call.knobs, call.knobs.preset
    if knobs.eps is not None:
        call.say("eps_explicit", eps=knobs.eps)
        return knobs.eps
    if p is not None and p.eps is not None:
        call.say("eps_preset", eps=p.eps, preset=p.name)
        return p.eps
    if p is not None:
        value = call.ops.finfo_eps(call.red)
        call.say("eps_finfo", dtype=call.red, eps=value, preset=p.name)
        return value
    value = DEFAULT_RMS_EPS if knobs.kind == "rms" else DEFAULT_LAYER_EPS
    call.say(f"eps_default_{knobs.kind}", eps=value)
    return value


def _partial_size(call: _Call) -> int:
    """k = ceil(p * d) for pRMSNorm (x checked finite: the RMS of a prefix cannot see the rest)."""
    p = call.knobs.partial
    if call.knobs.kind != "rms" or p == 1.0:
        return call.d
    k = min(call.d, max(1, math.ceil(round(p * call.d, _PARTIAL_DECIMALS))))
    call.say("partial", k=k, d=call.d, k_paper=int(p * call.d))
    if not call.ops.all_finite(call.x):
        raise ValueError("x must be finite (found NaN or Inf)")
    return k


# ---------------------------------------------------------------- an upstream kernel -----------


def _upstream_kernel(call: _Call) -> Any:
    """The output of the preset's own torch kernel (F.rms_norm / F.layer_norm), or None.

    Used when the call is exactly the preset's upstream computation on torch: its knobs unchanged
    (eps may differ), every coordinate in the statistic, and weight/bias dtypes torch accepts.
    A non-finite output also gives None: the general path then raises or says why.
    """
    knobs, ops = call.knobs, call.ops
    kernel = knobs.preset.kernel if knobs.preset is not None else None
    if kernel is None or not knobs.is_presets_own() or ops.name != "torch" or call.k != call.d:
        return None
    x = call.x if knobs.reduction == "opmath" else ops.cast(call.x, call.red)
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
    call.say("kernel_used", preset=knobs.preset.name, kernel=kernel, dtype=call.red)
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


def _statistic(call: _Call) -> _Statistic:
    """x in the reduction dtype, centred for LayerNorm, reduced to what the denominator needs."""
    ops, kind = call.ops, call.knobs.kind
    xr = ops.cast(call.x, call.red)
    mu = ops.mean_last(xr) if kind == "layer" else None  # (..., d) -> (..., 1)
    centred = xr if mu is None else xr - mu
    used = centred if call.k == call.d else centred[..., : call.k]
    if call.knobs.placement == "inside":
        stat = _Statistic(centred, mu, second=mean_square(used), norm=None)
    else:
        stat = _Statistic(centred, mu, second=None, norm=ops.norm_last(used))
    reduced = stat.second if stat.second is not None else stat.norm
    if not ops.all_finite(reduced):
        # A finite x can still overflow in the reduction; a non-finite x is the caller's error.
        if not ops.all_finite(call.x):
            raise ValueError("x must be finite (found NaN or Inf)")
        code = _overflow_code(call, used, mu)
        fields = {"dtype": call.red}
        if code.startswith("overflow_norm"):
            fields["accumulator"] = _backend.opmath(call.red)
        call.say(code, warn=True, **fields)
    return stat


def _overflow_code(call: _Call, used: Any, mu: Any) -> str:
    """Which step overflowed, found by redoing it in the dtype the reduction used: the mean
    (LayerNorm), a single square, their sum, or (for a norm) its rounding to a half dtype."""
    ops, kind = call.ops, call.knobs.kind
    if mu is not None and not ops.all_finite(mu):
        return "overflow_mean_layer"
    # x.norm() of a half x accumulates in float32; the mean-square path squares in red itself.
    accumulator = call.red if call.knobs.placement == "inside" else _backend.opmath(call.red)
    wide = ops.cast(used, accumulator)
    if not ops.all_finite(ops.square(wide)):
        return f"overflow_square_{kind}"
    if call.knobs.placement == "inside" or not ops.all_finite(ops.norm_last(wide)):
        return f"overflow_sum_{kind}"
    return f"overflow_norm_{kind}"


# ---------------------------------------------------------------- step 3: the denominator ------


def _denominator(call: _Call, stat: _Statistic) -> tuple[Any, Any]:
    """(xhat, the per-row denominator): eps inside the root, outside it, or as a floor on the
    norm; the outside and clamp forms in the order their upstream code computes them."""
    ops, placement, k = call.ops, call.knobs.placement, call.k
    if placement == "inside":
        shifted = stat.second + call.eps  # (..., 1)
        inv = ops.rsqrt(shifted)
        if call.knobs.cast == "t5":
            # T5 multiplies the un-cast x by the float32 rsqrt: type promotion picks the dtype.
            wide = _backend.promote(call.in_dtype, call.red)
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


def _zero_convention(call: _Call, zero: Any, centred: Any, xhat: Any) -> Any:
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
            call.say(f"{code}_eps_lost", warn=True, eps=call.eps, dtype=call.red)
    if not ops.all_finite(xhat):
        call.say("zero_stat_inf", warn=True)
    return xhat


# ---------------------------------------------------------------- step 4: gain and cast --------


def _gain_and_cast(call: _Call, xhat: Any) -> Any:
    """Multiply by the gain, add the bias, and cast back, in the order the cast rule says."""
    ops, w, b, in_dtype = call.ops, call.weight, call.bias, call.in_dtype
    rule = call.knobs.cast
    if rule == "after":
        y = _gain(xhat, w, call.knobs.gain, ops.dtype_name(xhat), ops)
        y = y if b is None else y + ops.cast(b, ops.dtype_name(y))
        return ops.cast(y, in_dtype)
    if rule == "promote":
        y = _gain(xhat, w, call.knobs.gain, None, ops)
        return ops.cast(y if b is None else y + b, in_dtype)
    if rule == "before":
        y = ops.cast(xhat, in_dtype)
    else:  # "t5": cast to the weight's dtype only when that is half
        w_half = w is not None and ops.dtype_name(w) in _backend.HALF_NAMES
        y = ops.cast(xhat, ops.dtype_name(w)) if w_half else xhat
    y = _gain(y, w, call.knobs.gain, None, ops)
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


def _to_caller(call: _Call, y: Any) -> Any:
    """numpy for a numpy caller that was computed with torch (bfloat16 widened, with a note)."""
    if call.ops.name != "torch" or call.return_torch:
        return y
    if call.ops.dtype_name(y) == "bfloat16":
        call.say("bfloat16_widened")
        y = y.float()
    return y.detach().cpu().numpy()


# ---------------------------------------------------------------- step 5: the report -----------


def _report(call: _Call, stat: _Statistic, denominator: Any, y: Any) -> NormReport:
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
        "eps_placement": knobs.placement,
        "reduction_dtype": call.red,
        "gain_mode": knobs.gain,
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
        stat=ops.to_float64_numpy(denominator),
        mean=ops.to_float64_numpy(stat.mu) if stat.mu is not None else mean64,
        mean_square=mean_sq,
        variance=var,
        eps=call.eps,
        settings=settings,
        notes=call.notes,
    )
