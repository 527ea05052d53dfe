r"""The knobs real code disagrees on, and a norm's first step: settings resolved, call prepared.

:func:`resolve` settles each knob of :class:`Settings` (explicit keyword > preset > module
default) and :func:`prepare` validates the arrays and places them on numpy or torch (torch only
when a tensor, a device or a half-precision reduction asks for it). The knobs:

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
- ``partial`` (RMSNorm only): pRMSNorm's p; ``device``: where torch computes."""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any, TypeVar

import numpy as np

from core import _backend
from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS
from core.device import resolve_device, torch_available
from core.messages import Message
from core.presets import Preset, get_preset

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
    fields as keyword-only parameters (:func:`keyword_signature`)."""

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


def keyword_signature(kind: str) -> Callable[[_F], _F]:
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


@dataclass(frozen=True)
class Knobs:
    """Step 1's result: every knob resolved (explicit keyword > preset > module default)."""

    kind: str
    preset: Preset | None
    eps: float | None  # given explicitly, else None (the preset's or the default, per dtype)
    eps_placement: str
    reduction_dtype: str | None  # None (the input's dtype), "opmath" or a dtype name
    gain_mode: str
    cast: str
    partial: float
    device: str | None

    def is_presets_own(self) -> bool:
        """Whether no explicit keyword changed the preset's contract (eps aside)."""
        p = self.preset
        if p is None:
            return False
        own = (p.eps_placement, p.reduction_dtype, p.gain_mode, p.cast)
        return (self.eps_placement, self.reduction_dtype, self.gain_mode, self.cast) == own


@dataclass
class Call:
    """One call's arrays on the compute backend, and what the steps have to say about them."""

    knobs: Knobs
    in_dtype: str
    reduction_dtype: str  # the reduction dtype, resolved for the input
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


def resolve(kind: str, s: Settings) -> Knobs:
    p = _resolve_preset(kind, s.preset)

    def knob(name: str, value: Any, allowed: tuple[str, ...], default: Any) -> Any:
        if value is None:
            return getattr(p, name) if p is not None else default
        if value not in allowed:
            raise ValueError(f"{name} must be one of {list(allowed)} (got {value!r})")
        return value

    return Knobs(
        kind=kind,
        preset=p,
        eps=_check_eps(s.eps) if s.eps is not None else None,
        eps_placement=knob("eps_placement", s.eps_placement, EPS_PLACEMENTS, "inside"),
        reduction_dtype=knob("reduction_dtype", s.reduction_dtype, REDUCTION_DTYPES, None),
        gain_mode=knob("gain_mode", s.gain_mode, GAIN_MODES, "direct"),
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


def prepare(knobs: Knobs, x: Any, weight: Any, bias: Any) -> Call:
    """Validate the input, choose the backend and dtypes, place every array, resolve eps and k."""
    x_np, in_dtype, d = _read_x(x)
    call = Call(knobs, in_dtype, _reduction_dtype(knobs.reduction_dtype, in_dtype), d)
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


def _place(call: Call, x: Any, x_np: np.ndarray | None, weight: Any, bias: Any) -> None:
    """Compute on numpy, or on torch when a tensor, a device or a half reduction asks for it."""
    knobs = call.knobs
    any_torch = any(_backend.is_torch(a) for a in (x, weight, bias))
    half = call.reduction_dtype in _backend.HALF_NAMES
    if not (knobs.device is not None or any_torch or half):
        call.ops, call.x = _backend.NumpyOps(), x_np
        return
    if not torch_available():
        raise ValueError(
            f"reduction_dtype {call.reduction_dtype!r} needs torch (numpy has no bfloat16 and no "
            "float32-accumulating float16 sum), which is not installed"
        )
    call.ops = _backend.TorchOps()
    call.return_torch = x_np is None or knobs.device is not None
    if x_np is None:
        call.x = x.to(knobs.device) if knobs.device is not None else x
        return
    on = next((a.device for a in (weight, bias) if _backend.is_torch(a)), "cpu")
    call.x = call.ops.torch.from_numpy(np.ascontiguousarray(x_np)).to(knobs.device or on)
    if not any_torch and knobs.device is None:
        call.say("numpy_half_reduction", dtype=call.reduction_dtype)


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


def _param(value: Any, name: str, call: Call) -> Any:
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


def _resolve_eps(call: Call) -> float:
    """eps: explicit > the preset's > finfo for a preset with eps=None > the module default."""
    knobs, p = call.knobs, call.knobs.preset
    if knobs.eps is not None:
        call.say("eps_explicit", eps=knobs.eps)
        return knobs.eps
    if p is not None and p.eps is not None:
        call.say("eps_preset", eps=p.eps, preset=p.name)
        return p.eps
    if p is not None:
        value = call.ops.finfo_eps(call.reduction_dtype)
        call.say("eps_finfo", dtype=call.reduction_dtype, eps=value, preset=p.name)
        return value
    value = DEFAULT_RMS_EPS if knobs.kind == "rms" else DEFAULT_LAYER_EPS
    call.say(f"eps_default_{knobs.kind}", eps=value)
    return value


def _partial_size(call: Call) -> int:
    """k = ceil(p * d) for pRMSNorm (x checked finite: the RMS of a prefix cannot see the rest)."""
    p = call.knobs.partial
    if call.knobs.kind != "rms" or p == 1.0:
        return call.d
    k = min(call.d, max(1, math.ceil(round(p * call.d, _PARTIAL_DECIMALS))))
    call.say("partial", k=k, d=call.d, k_paper=int(p * call.d))
    if not call.ops.all_finite(call.x):
        raise ValueError("x must be finite (found NaN or Inf)")
    return k
