"""The explorer's one pass: x through both norms with the visitor's settings, and the view
derived from it (statistics, geometry, chart and sentences)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.geometry import PlaneImages, Sphere3D, sphere_from
from core.inputs import gain_vector
from core.messages import NormWarning
from core.norms import layer_norm_report, rms_norm_report
from core.stats import second_moment_identity, vector_stats
from labkit.claims import Claim
from labs.explorer.chart import Series, chart_of
from labs.explorer.claims import Facts, Pass, claims_of
from labs.explorer.units import Units, length, units_of

# The link's bounds for the explorer's sliders: offsets, gains and biases beyond these teach
# nothing the edge values do not.
OFFSET_LIMIT = 20.0
GAIN_LIMIT = 4.0
# pRMSNorm's p: the RMSNorm paper's experiments used 6.25 % (1/16); 1 is the full RMS.
PARTIAL_LADDER = (0.01, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 3 / 4, 1.0)
PAPER_PARTIAL = 1 / 16
# The link settings of x's seeded draw, as ``core.inputs.make_input`` names them.
DRAW = ("dist", "seed", "offset", "scale")


@dataclass(frozen=True)
class ExplorerView(Facts):
    """Everything the explorer shows for one setting: the facts, the chart and the sentences."""

    dtype_asked: str  # the dtype the link asked for (x may not fit in it)
    identity: tuple[float, float, float]
    chart: dict[str, Series]
    claims: dict[str, Claim]


def explore(
    x: np.ndarray,
    *,
    eps: float,
    gain: float = 1.0,
    gain_pattern: str = "constant",
    seed: int = 0,
    bias: float = 0.0,
    rms_bias: float = 0.0,
    partial: float = 1.0,
    backend: str = "numpy",
    device: str = "cpu",
    dtype: str = "float64",
) -> ExplorerView:
    """Normalise ``x`` (shape ``(d,)``) once per norm and derive the explorer's whole view.

    A torch ``dtype`` that cannot hold x (float16 above 65504) is replaced by float64; the
    view's ``dtype_asked`` keeps what was asked for, so the page can say so."""
    d = x.shape[-1]
    g = gain_vector(d, pattern=gain_pattern, value=gain, seed=seed)
    computed = dtype if backend != "torch" or fits(x, dtype) else "float64"
    run = _normalise(x, g, bias, rms_bias, eps, partial, backend, device, computed)
    x64, y_rms, y_layer = run.x, run.y_rms, run.y_layer
    units = units_of(x64, eps, run.k, run.xhat_rms, run.xhat_layer)
    g_plane = gain if gain_pattern == "constant" else 1.0
    plane, sphere = _geometry(x64, units, g_plane, eps)
    stats = {"x": vector_stats(x64), "rms": vector_stats(y_rms, finite=False)}
    stats["layer"] = vector_stats(y_layer, finite=False)
    facts = Facts(
        **vars(run), d=d, dtype=computed, gain=g, stats=stats, norm_rms=length(y_rms),
        norm_layer=length(y_layer), units=units, plane=plane, sphere=sphere, eps=eps,
        g_plane=g_plane, bias=bias, rms_bias=rms_bias, partial=partial, backend=backend,
    )  # fmt: skip
    return ExplorerView(
        **vars(facts), dtype_asked=dtype, identity=second_moment_identity(x64),
        chart=chart_of(x64, y_rms, y_layer, stats), claims=claims_of(facts),
    )  # fmt: skip


def _geometry(
    x: np.ndarray, units: Units, g: float, eps: float
) -> tuple[PlaneImages, Sphere3D | None]:
    """The plane (every d) and the sphere (d = 3) of the normalised vectors, scaled by ``g``.

    The plane's coordinates come from the statistics: x sits at a = mu sqrt(d) along 1/sqrt(d)
    and b = sqrt(d Var(x)) away from that axis; RMSNorm scales both by g / den_k, LayerNorm
    drops a and scales b by g / den_layer. (Projecting the vectors instead divides by a length
    of x - mu that, for a nearly constant x, is mostly rounding.)"""
    d = x.shape[-1]
    a, b = units.mean * math.sqrt(d), units.std * math.sqrt(d)
    plane = PlaneImages(
        point=(a, b),
        rms=(_scaled(a, g, units.den_k), _scaled(b, g, units.den_k)),
        layer=(0.0, _scaled(b, g, units.den_layer)),
        radius=math.sqrt(d) * abs(g),
        d=d,
        gain=float(g),
        eps_rms=float(eps),
        eps_layer=float(eps),
    )
    if d != 3:
        return plane, None
    rms, layer = g * units.unit_rms, g * units.unit_layer
    return plane, sphere_from(x, rms, layer, plane)


def _scaled(value: float, g: float, den: float) -> float:
    """g * value / den, with the core's 0/0 = 0 (a nonzero over 0 is infinite, even times 0)."""
    if value == 0:
        return 0.0
    if den == 0:
        return math.copysign(math.inf, value * (g if g else 1.0))
    return g * value / den


def dtype_max(dtype: str) -> float:
    """The largest finite number of ``dtype`` (float64, float32, float16, bfloat16)."""
    if dtype == "bfloat16":
        return 3.3895313892515355e38  # (2 - 2**-7) * 2**127
    return float(np.finfo(dtype).max)


def fits(x: np.ndarray, dtype: str) -> bool:
    """Whether every |x_i| is at most ``dtype``'s largest finite number, so x stays finite in it."""
    return float(np.max(np.abs(x))) <= dtype_max(dtype)


def _normalise(
    x: np.ndarray,
    g: np.ndarray,
    bias: float,
    rms_bias: float,
    eps: float,
    partial: float,
    backend: str,
    device: str,
    dtype: str,
) -> Pass:
    """The one pass: ``rms_norm_report`` and ``layer_norm_report`` with the chosen settings."""
    d = x.shape[-1]
    args = [x, g, np.full(d, bias), np.full(d, rms_bias)]
    if backend == "torch":
        import torch

        kind = getattr(torch, dtype)
        args = [torch.tensor(a, dtype=kind, device=device) for a in args]
    xs, gs, bs, rbs = args
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NormWarning)
        rep_rms = rms_norm_report(xs, gs, rbs if rms_bias else None, eps=eps, partial=partial)
        rep_layer = layer_norm_report(xs, gs, bs, eps=eps)
    alerts = [w.message.message for w in caught if issubclass(w.category, NormWarning)]
    notes = [*rep_rms.notes, *rep_layer.notes]
    # The mean LayerNorm subtracted, as the dtype computed it (the report's is float64).
    layer_mean = float(xs.mean()) if backend == "torch" else float(np.mean(xs))
    return Pass(
        x=_to_float64(xs), y_rms=_to_float64(rep_rms.output),
        y_layer=_to_float64(rep_layer.output), xhat_rms=rep_rms.x_hat, xhat_layer=rep_layer.x_hat,
        k=int(rep_rms.settings.get("partial_size", d)), rms_stat=float(rep_rms.stat.ravel()[0]),
        layer_stat=float(rep_layer.stat.ravel()[0]), layer_mean=layer_mean,
        layer_var=float(rep_layer.variance.ravel()[0]), held_bias=float(_to_float64(bs)[0]),
        alerts=tuple(dict.fromkeys(alerts)),
        notes=tuple(dict.fromkeys(n for n in notes if n not in alerts)),
    )  # fmt: skip


def _to_float64(a: Any) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a.astype(np.float64)
    return a.detach().to("cpu").double().numpy()  # a torch tensor
