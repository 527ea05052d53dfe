r"""A model's normalisation contract, read from its code by running it.

For every normalisation module of a model this finds, without trusting names:

- **where it sits**, from one traced forward pass (``labs.inspector.places``);
- **what it computes**, by running it on the probe input and comparing with the float64
  textbook formulas (RMSNorm or LayerNorm, gain used directly or as :math:`1 + w`);
- **which core preset reproduces it**, by running every preset of that kind on the same probe
  input with the module's own weights and eps and taking max :math:`|\Delta|` (0: bit for bit).

The probe input is 16 rows of width d in the module's dtype: row r is
:math:`s_r z_r + c_r \mathbf 1` with :math:`z_r \sim \mathcal N(0, I)` drawn by
``torch.Generator().manual_seed(0)`` in float64, :math:`s_r = 10^{-2 + 4r/15}` and
:math:`c_r = s_r(-1 + 2r/15)`: scales from 0.01 to 100, and mean offsets that tell a norm that
centres from one that does not."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from labs.inspector.places import PLACES, declared_place, norm_modules, trace_places

PROBE_ROWS = 16
PROBE_SEED = 0
_EPS_ATTRS = ("variance_epsilon", "eps", "epsilon")
# A behaviour is read as a formula when the module agrees with it to this relative error; the
# gap between RMSNorm and LayerNorm on the probe's offset rows is of order 1.
FORMULA_TOL = 0.05
# Presets whose name, found in a module's class name, says the module transcribes them.
_HINTS = ("gemma", "olmo2", "olmo", "t5", "llama")
HIST_BINS = 40


# --- What each module computes ------------------------------------------------------------------


def probe_input(d: int, dtype: Any) -> Any:
    """The probe input (PROBE_ROWS, d) in ``dtype`` (module docstring)."""
    import torch

    generator = torch.Generator().manual_seed(PROBE_SEED)
    z = torch.randn(PROBE_ROWS, d, generator=generator, dtype=torch.float64)
    r = torch.arange(PROBE_ROWS, dtype=torch.float64)[:, None]
    scale = 10.0 ** (-2.0 + 4.0 * r / (PROBE_ROWS - 1))
    offset = scale * (-1.0 + 2.0 * r / (PROBE_ROWS - 1))
    return (scale * z + offset).to(dtype)


def _eps(module: Any) -> float | None:
    for attr in _EPS_ATTRS:
        value = getattr(module, attr, None)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _param(module: Any, name: str) -> Any:
    value = getattr(module, name, None)
    import torch

    return value if isinstance(value, torch.Tensor) else None


def _formulas(x: Any, weight: Any, bias: Any, eps: float) -> dict[tuple[str, str], Any]:
    """The float64 textbook outputs, by (kind, gain convention)."""
    mean = x.mean(-1, keepdim=True)  # (n, d) -> (n, 1)
    centred = x - mean
    normalised = {
        "rms": x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt(),
        "layer": centred / (centred.pow(2).mean(-1, keepdim=True) + eps).sqrt(),
    }
    gains = {"none": 1.0} if weight is None else {"direct": weight, "offset": 1.0 + weight}
    shift = 0.0 if bias is None else bias
    return {(k, g): n * gain + shift for k, n in normalised.items() for g, gain in gains.items()}


def _behaviour(y: Any, x: Any, weight: Any, bias: Any, eps: float | None) -> tuple[str, str]:
    """(kind, gain convention) of the formula the module's output follows."""
    import torch

    x64 = x.double()
    if torch.equal(y.double(), x64):
        return "none", "none"
    w = None if weight is None else weight.double()
    b = None if bias is None else bias.double()
    floor = torch.finfo(x.dtype).eps if eps is None else eps
    errors = {}
    for key, ref in _formulas(x64, w, b, floor).items():
        scale = float(ref.abs().max()) or 1.0
        errors[key] = float((y.double() - ref).abs().max()) / scale
    (kind, gain), error = min(errors.items(), key=lambda item: item[1])
    if not error <= FORMULA_TOL:
        return "unknown", "none" if weight is None else "unknown"
    return kind, gain


def _preset_deltas(y: Any, x: Any, kind: str, weight: Any, bias: Any, eps: float | None) -> dict:
    """max |Δ| between the module's output and each compatible preset's, same input and eps."""
    from core.norms import layer_norm, rms_norm
    from core.presets import get_preset, preset_names

    if kind not in ("rms", "layer"):
        return {}
    presets = {n: get_preset(n, kind) for n in preset_names(kind)}
    has = (weight is not None, bias is not None)
    fits = [n for n, p in presets.items() if (p.has_weight, p.has_bias) == has]
    deltas = {}
    for name in fits or presets:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if kind == "rms":
                    out = rms_norm(x, weight, bias, preset=name, eps=eps)
                else:
                    out = layer_norm(x, weight, bias, preset=name, eps=eps)
            delta = float((y.double() - out.double()).abs().max())
        except (ValueError, TypeError, RuntimeError):
            delta = math.inf
        deltas[name] = delta if math.isfinite(delta) else math.inf
    return deltas


def _choose(deltas: dict[str, float], cls: str, kind: str, eps: float | None, torch_nn: bool):
    """The preset to name: smallest max |Δ|, then the one the class is named after, then the one
    whose own eps is the module's, then registry order."""
    from core.presets import get_preset

    if not deltas:
        return None
    hint = "torch" if torch_nn else next((p for p in _HINTS if p in cls.lower()), None)

    def rank(item: tuple[int, tuple[str, float]]) -> tuple:
        index, (name, delta) = item
        own_eps = get_preset(name, kind).eps
        return (delta, name != hint, own_eps != eps, index)

    return min(enumerate(deltas.items()), key=rank)[1][0]


# --- The contract of a whole model --------------------------------------------------------------


@dataclass(frozen=True)
class NormModule:
    """One normalisation module. ``kind``: rms, layer, none (the identity) or unknown; ``gain``:
    direct, offset (1 + w) or none; ``delta``: max |Δ| of ``preset`` on the probe input
    (``inf`` when no preset applies); ``deltas``: every compatible preset's."""

    name: str
    cls: str
    place: str
    layer: int | None
    kind: str
    gain: str
    eps: float | None
    bias: bool
    dtype: str
    width: int
    weight_mean: float
    weight_std: float
    gain_mean: float
    preset: str | None
    delta: float
    deltas: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class ModuleGroup:
    """Modules that share place, class, formula, eps, dtype and preset (one table row); the
    weight statistics are over all their stored weights together."""

    place: str
    cls: str
    kind: str
    gain: str
    eps: float | None
    dtype: str
    preset: str | None
    count: int
    delta: float
    weight_mean: float
    weight_std: float
    gain_mean: float


@dataclass(frozen=True)
class GainHistogram:
    """Counts of the stored weights in shared bins, per place (in PLACES order). ``low``, ``high``:
    the smallest and largest stored weight (the edges run wider when they are equal, or nearly)."""

    edges: np.ndarray
    counts: dict[str, np.ndarray]
    low: float
    high: float


@dataclass(frozen=True)
class ModelContract:
    modules: tuple[NormModule, ...]
    groups: tuple[ModuleGroup, ...]
    histogram: GainHistogram | None
    weight_mean: float
    weight_std: float
    gain_mean: float
    weights: int

    @property
    def normalising(self) -> tuple[NormModule, ...]:
        """The modules that normalise (RMSNorm or LayerNorm), not identities."""
        return tuple(m for m in self.modules if m.kind in ("rms", "layer"))


def _stats(values: np.ndarray) -> tuple[float, float]:
    if values.size == 0:
        return math.nan, math.nan
    return float(np.mean(values)), float(np.std(values))


def _effective(weight: np.ndarray, gain: str) -> np.ndarray:
    return 1.0 + weight if gain == "offset" else weight


def _width(module: Any, weight: Any, model_width: int) -> int:
    if weight is not None:
        return weight.numel()
    shape = getattr(module, "normalized_shape", None)
    return int(shape[-1]) if shape else model_width


def _read_module(name: str, module: Any, place: str, layer: int | None, model: tuple[Any, int]):
    """The contract of one module, and its stored weight as float64 (empty without one).
    ``model`` is the model's (dtype, width), for a module that has no weight to tell them."""
    import torch

    weight, bias = _param(module, "weight"), _param(module, "bias")
    dtype = weight.dtype if weight is not None else model[0]
    width = _width(module, weight, model[1])
    eps = _eps(module)
    x = probe_input(width, dtype)
    with torch.inference_mode():
        y = module(x)
        kind, gain = _behaviour(y, x, weight, bias, eps)
        deltas = _preset_deltas(y, x, kind, weight, bias, eps)
    torch_nn = type(module).__module__.startswith("torch.")
    preset = _choose(deltas, type(module).__name__, kind, eps, torch_nn)
    stored = np.zeros(0) if weight is None else weight.detach().double().cpu().numpy().ravel()
    mean, std = _stats(stored)
    return (
        NormModule(
            name=name,
            cls=type(module).__name__,
            place=place,
            layer=layer,
            kind=kind,
            gain=gain,
            eps=eps,
            bias=bias is not None,
            dtype=str(dtype).removeprefix("torch."),
            width=width,
            weight_mean=mean,
            weight_std=std,
            gain_mean=_stats(_effective(stored, gain))[0],
            preset=preset,
            delta=deltas.get(preset, math.inf) if preset else math.inf,
            deltas=tuple(deltas.items()),
        ),
        stored,
    )


def _histogram(modules: list[NormModule], stored: list[np.ndarray]) -> GainHistogram | None:
    pooled = [w for w in stored if w.size]
    if not pooled:
        return None
    everything = np.concatenate(pooled)
    low, high = lo, hi = float(everything.min()), float(everything.max())
    if hi - lo < 1e-6:  # all weights equal (an untrained model): one visible bar around them
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, HIST_BINS + 1)
    counts: dict[str, np.ndarray] = {}
    for place in PLACES:
        values = [w for m, w in zip(modules, stored, strict=True) if m.place == place and w.size]
        if values:
            counts[place] = np.histogram(np.concatenate(values), bins=edges)[0]
    return GainHistogram(edges, counts, low, high)


def _groups(modules: list[NormModule], stored: list[np.ndarray]) -> tuple[ModuleGroup, ...]:
    keyed: dict[tuple, list[int]] = {}
    for i, m in enumerate(modules):
        keyed.setdefault((m.place, m.cls, m.kind, m.gain, m.eps, m.dtype, m.preset), []).append(i)
    groups = []
    for key, members in sorted(keyed.items(), key=lambda item: PLACES.index(item[0][0])):
        values = np.concatenate([stored[i] for i in members])
        mean, std = _stats(values)
        groups.append(
            ModuleGroup(
                *key,
                count=len(members),
                delta=max(modules[i].delta for i in members),
                weight_mean=mean,
                weight_std=std,
                gain_mean=_stats(_effective(values, key[3]))[0],
            )
        )
    return tuple(groups)


def read_contract(model: Any, ids: Any, width: int) -> ModelContract:
    """The contract of every norm module of ``model`` (hidden size ``width``); ``ids`` (1, t)
    feeds the traced pass."""
    modules_by_name = dict(norm_modules(model))
    traced = trace_places(model, ids)
    called = {name for name, _, _ in traced}
    traced += [(name, "other", None) for name in modules_by_name if name not in called]
    shape = (next(model.parameters()).dtype, width)
    modules, stored = [], []
    seen: set[str] = set()
    for name, place, layer in traced:
        if name in seen:  # a module called twice is read once, at its first place
            continue
        seen.add(name)
        module = modules_by_name[name]
        module, weights = _read_module(name, module, declared_place(module, place), layer, shape)
        modules.append(module)
        stored.append(weights)
    pooled = np.concatenate(stored) if stored else np.zeros(0)
    mean, std = _stats(pooled)
    gains = [_effective(w, m.gain) for m, w in zip(modules, stored, strict=True)]
    return ModelContract(
        modules=tuple(modules),
        groups=_groups(modules, stored),
        histogram=_histogram(modules, stored),
        weight_mean=mean,
        weight_std=std,
        gain_mean=_stats(np.concatenate(gains) if gains else np.zeros(0))[0],
        weights=int(pooled.size),
    )
