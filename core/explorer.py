r"""The explorer's state: one vector through both norms, every view derived from that one pass.

Per interaction the explorer normalises x once per norm, with the settings the visitor chose
(gain, biases, pRMSNorm's ``partial``, backend and dtype), and derives everything else from
that pass and from float64 statistics of the same x:

.. math::
    \mathrm{RMSNorm}(x) = g \odot \frac{x}{\sqrt{\frac{1}{k}\sum_{j \le k} x_j^2 + \epsilon}} + b_{\mathrm{rms}},
    \qquad
    \mathrm{LayerNorm}(x) = g \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta,

with :math:`k = \lceil p\,d \rceil` (k = d for the plain RMSNorm). The explanations speak of the
normalised vectors before gain and biases, :math:`\hat{x}_{\mathrm{rms}} = x / \mathrm{RMS}` and
:math:`\hat{x}_{\mathrm{layer}} = (x - \mu)/\sigma`, computed here in float64 from the x that was
normalised (after its cast to the chosen dtype). Every sentence the page shows about these
numbers is a :class:`core.claims.Claim` chosen by a verdict computed here.
"""  # noqa: E501

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.claims import Claim, at_least, at_most, both, close, pick
from core.geometry import PlaneImages, Sphere3D, sphere_from
from core.inputs import gain_vector
from core.messages import Message, NormWarning
from core.norms import layer_norm_report, rms_norm, rms_norm_report
from core.stats import VectorStats, cosine, second_moment_identity, vector_stats

# The link's bounds for the explorer's sliders: offsets, gains and biases beyond these teach
# nothing the edge values do not.
OFFSET_LIMIT = 20.0
GAIN_LIMIT = 4.0
# pRMSNorm's p: the RMSNorm paper's experiments used 6.25 % (1/16); 1 is the full RMS.
PARTIAL_LADDER = (0.01, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 3 / 4, 1.0)
PAPER_PARTIAL = 1 / 16

# The coordinates chart is at most about 1,200 px wide: past 2 x CHART_BUCKETS coordinates it
# gets each bucket's smallest and largest value (a min/max envelope), which is all its pixels
# can show. Hover, export and statistics keep every exact value.
CHART_BUCKETS = 600
# float32 holds every number the chart can draw and hover (5 significant digits) exactly.
FLOAT32_SAFE = 1e37

# Tolerances of the verdicts, each relative to the quantities it compares (no absolute floor:
# a typed x may be 1e-15 or 1e15). Directions are compared in float64 on unit vectors.
COS_TOL = 1e-9
# "Negligible": eps shrinks a radius by less than 0.1 %.
RADIUS_TOL = 1e-3
# pRMSNorm's estimate "close" to RMS(x).
PARTIAL_RTOL = 0.05
# x is "constant to within rounding" when its spread is below a few float64 ulps of its RMS.
FLAT_ULPS = 4.0
U64 = float(np.finfo(np.float64).eps)
# A float64 sum of d terms is off by at most about d ulps of the sum of their sizes (recursive
# summation; numpy's pairwise sum does better): twice that is where a mean is rounding.
SUM_ULPS = 2.0
# A vector computed from x - mu and a division carries a few ulps of |x| + |mu| per coordinate.
VECTOR_ULPS = 64.0


@dataclass(frozen=True)
class Series:
    """One trace of the coordinates chart: coordinate indices and values, maybe an envelope."""

    index: np.ndarray
    values: np.ndarray
    mean: float


@dataclass(frozen=True)
class Units:
    """Float64 statistics of the computed x and its normalised vectors before gain and bias.

    ``rms`` is RMS(x) with no eps in it; the quantities with eps are the denominators.
    """

    mean: float
    var: float
    ms: float  # mean(x^2) over all d coordinates
    ms_k: float  # mean(x^2) over the first k (pRMSNorm)
    k: int
    rms: float  # RMS(x) = sqrt(mean(x^2)), no eps
    std: float  # sqrt(Var(x)), no eps
    rms_k: float  # the RMS of the first k coordinates, no eps
    den_k: float  # sqrt(ms_k + eps): what RMSNorm divides by
    den_full: float  # sqrt(ms + eps): what the plain RMSNorm (p = 1) divides by
    den_layer: float  # sqrt(var + eps): what LayerNorm divides by
    ratio: float  # mu / RMS(x), computed scale-free (0 for x = 0)
    mean_noise: float  # the float64 rounding level of mu
    unit_rms: np.ndarray  # x / den_k
    unit_full: np.ndarray  # x / den_full
    unit_layer: np.ndarray  # (x - mu) / den_layer
    layer_noise: float  # the rounding level of each coordinate of unit_layer
    flat: bool  # x constant to within float64 rounding (x = 0 included)
    mean_over_spread: float  # |mu| / sqrt(Var(x)), computed scale-free (inf for a constant x)


@dataclass(frozen=True)
class ExplorerView:
    """Everything the explorer shows for one setting (arrays are float64 numpy)."""

    d: int
    dtype: str  # the dtype the norms computed in
    dtype_asked: str  # the dtype the link asked for (x may not fit in it)
    x: np.ndarray  # x as normalised (cast to the dtype), in float64
    gain: np.ndarray
    y_rms: np.ndarray
    y_layer: np.ndarray
    stats: dict[str, VectorStats]  # "x", "rms", "layer"
    norms: dict[str, float]  # |y_rms| and |y_layer|, free of underflow in their squares
    units: Units
    rms_stat: float  # the denominators as the chosen dtype computed them
    layer_stat: float
    identity: tuple[float, float, float]
    plane: PlaneImages
    sphere: Sphere3D | None
    chart: dict[str, Series]
    alerts: tuple[Message, ...]
    notes: tuple[Message, ...]
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
    view's ``dtype_asked`` keeps what was asked for, so the page can say so.
    """
    d = x.shape[-1]
    g = gain_vector(d, pattern=gain_pattern, value=gain, seed=seed)
    computed = dtype if backend != "torch" or fits(x, dtype) else "float64"
    run = _normalise(x, g, bias, rms_bias, eps, partial, backend, device, computed)
    x64, y_rms, y_layer = run["x"], run["y_rms"], run["y_layer"]
    units = _units(x64, eps, run["k"])
    # The geometry draws the normalised vectors with a constant gain (g = 1 under a pattern).
    g_plane = gain if gain_pattern == "constant" else 1.0
    plane, sphere = _geometry(x64, units, g_plane, eps)
    stats = {
        "x": vector_stats(x64),
        "rms": vector_stats(y_rms, finite=False),
        "layer": vector_stats(y_layer, finite=False),
    }
    chart = _chart(x64, y_rms, y_layer, stats)
    norms = {"rms": _length(y_rms), "layer": _length(y_layer)}
    ctx = dict(
        d=d, eps=eps, g=g, g_plane=g_plane, bias=bias, rms_bias=rms_bias, partial=partial,
        backend=backend, dtype=computed, x=x64, units=units, stats=stats, y_rms=y_rms,
        y_layer=y_layer, run=run, plane=plane, sphere=sphere, norms=norms,
    )  # fmt: skip
    return ExplorerView(
        d=d, dtype=computed, dtype_asked=dtype, x=x64, gain=g, y_rms=y_rms, y_layer=y_layer,
        stats=stats, norms=norms, units=units, rms_stat=run["rms_stat"],
        layer_stat=run["layer_stat"], identity=second_moment_identity(x64), plane=plane,
        sphere=sphere, chart=chart, alerts=run["alerts"], notes=run["notes"], claims=_claims(ctx),
    )  # fmt: skip


def _geometry(
    x: np.ndarray, units: Units, g: float, eps: float
) -> tuple[PlaneImages, Sphere3D | None]:
    """The plane (every d) and the sphere (d = 3) of the normalised vectors, scaled by ``g``.

    The plane's coordinates come from the statistics: x sits at a = mu sqrt(d) along 1/sqrt(d)
    and b = sqrt(d Var(x)) away from that axis; RMSNorm scales both by g / den_k, LayerNorm
    drops a and scales b by g / den_layer. (Projecting the vectors instead divides by a length
    of x - mu that, for a nearly constant x, is mostly rounding.)
    """
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
    """Whether every coordinate of x is at most ``dtype``'s largest finite number in size (so
    it stays finite once rounded to ``dtype``)."""
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
) -> dict[str, Any]:
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
    return {
        "x": _to_float64(xs),
        "y_rms": _to_float64(rep_rms.output),
        "y_layer": _to_float64(rep_layer.output),
        "rms_stat": float(rep_rms.stat.ravel()[0]),
        "layer_stat": float(rep_layer.stat.ravel()[0]),
        "layer_var": float(rep_layer.variance.ravel()[0]),
        "layer_mean": layer_mean,
        "bias": float(_to_float64(bs)[0]),  # beta as the dtype holds it
        "k": int(rep_rms.settings.get("partial_size", d)),
        "alerts": tuple(dict.fromkeys(alerts)),
        "notes": tuple(dict.fromkeys(n for n in notes if n not in alerts)),
    }


def _to_float64(a: Any) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a.astype(np.float64)
    return a.detach().to("cpu").double().numpy()  # a torch tensor


def _divide(num: np.ndarray, den: float) -> np.ndarray:
    """num / den with the core's 0/0 = 0 convention (a nonzero over 0 stays infinite)."""
    if den > 0:
        return num / den
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num == 0, 0.0, num / den)


def _units(x: np.ndarray, eps: float, k: int) -> Units:
    """The float64 statistics and unit vectors behind every explanation.

    The second moments are taken of x / max|x| (of the first k coordinates over their own
    largest), so that the squares of a tiny x (1e-200) or a huge one neither underflow nor
    overflow; their roots are scaled back before eps joins them. The unit vectors divide x by
    those denominators: no square is taken of x itself.
    """
    top = _top(x)
    xs = x / top if top > 0 else x
    mean_s = float(np.mean(xs))
    var_s = float(np.mean((xs - mean_s) ** 2))  # (d,) -> ()
    ms_s = float(np.mean(xs**2))  # (d,) -> ()
    head = x[:k]
    top_k = _top(head)
    ms_k_h = float(np.mean((head / top_k) ** 2)) if top_k > 0 else 0.0  # (k,) -> ()
    mean, rms, std = top * mean_s, top * math.sqrt(ms_s), top * math.sqrt(var_s)
    rms_k = top_k * math.sqrt(ms_k_h)
    root_eps = math.sqrt(eps)
    den_k, den_full, den_layer = (math.hypot(r, root_eps) for r in (rms_k, rms, std))
    centred = x - mean
    return Units(
        mean=mean,
        var=std * std,
        ms=rms * rms,
        ms_k=rms_k * rms_k,
        k=k,
        rms=rms,
        std=std,
        rms_k=rms_k,
        den_k=den_k,
        den_full=den_full,
        den_layer=den_layer,
        ratio=mean_s / math.sqrt(ms_s) if ms_s > 0 else 0.0,
        mean_noise=_sum_noise(x),
        unit_rms=_divide(x, den_k),
        unit_full=_divide(x, den_full),
        unit_layer=_divide(centred, den_layer),
        layer_noise=_ratio_or_zero(VECTOR_ULPS * U64 * (top + abs(mean)), den_layer),
        flat=var_s <= (FLAT_ULPS * U64) ** 2 * ms_s,
        mean_over_spread=abs(mean_s) / math.sqrt(var_s) if var_s > 0 else math.inf,
    )


def _top(v: np.ndarray) -> float:
    return float(np.max(np.abs(v)))


def _sum_noise(values: np.ndarray) -> float:
    """The float64 rounding level of the mean of ``values``: SUM_ULPS * d ulps of mean|v|."""
    with np.errstate(invalid="ignore"):
        size = float(np.mean(np.abs(values)))
    return SUM_ULPS * values.shape[-1] * U64 * size if math.isfinite(size) else 0.0


def _ratio_or_zero(num: float, den: float) -> float:
    """num / den, 0 where the denominator is 0 (nothing was divided, nothing rounded)."""
    return num / den if den > 0 else 0.0


def envelope_width(d: int, buckets: int = CHART_BUCKETS) -> int:
    """Coordinates per group of a ``d``-wide chart's envelope (the last group may be shorter);
    0 when the chart shows every coordinate."""
    return 0 if d <= 2 * buckets else math.ceil(d / buckets)


def envelope(values: np.ndarray, buckets: int = CHART_BUCKETS) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates a chart of ``buckets`` columns can show: each bucket's min and max.

    Returns ``(index, values)`` in coordinate order; every value is an exact coordinate of
    ``values`` at its own index. Up to ``2 * buckets`` coordinates everything is kept.
    Non-finite coordinates are skipped unless a whole bucket is non-finite.
    """
    d = values.shape[-1]
    width = envelope_width(d, buckets)
    if not width:
        return np.arange(d), values
    rows = math.ceil(d / width)
    padded = np.concatenate([values, np.full(rows * width - d, values[-1])]).reshape(rows, width)
    if not np.all(np.isfinite(padded)):
        padded = np.where(np.isfinite(padded), padded, np.nan)
        padded[np.all(np.isnan(padded), axis=1), 0] = 0.0  # index 0 for an all-nan bucket
        lo, hi = np.nanargmin(padded, axis=1), np.nanargmax(padded, axis=1)
    else:
        lo, hi = np.argmin(padded, axis=1), np.argmax(padded, axis=1)
    start = np.arange(rows) * width
    pairs = np.stack([np.minimum(lo, hi), np.maximum(lo, hi)], axis=1) + start[:, None]
    keep = np.ones(pairs.shape, dtype=bool)
    keep[:, 1] = lo != hi  # a flat bucket gives one point
    index = np.minimum(pairs[keep], d - 1)
    return index, values[index]


def _chart(
    x: np.ndarray, y_rms: np.ndarray, y_layer: np.ndarray, stats: dict[str, VectorStats]
) -> dict[str, Series]:
    """The three traces, enveloped past 2 x CHART_BUCKETS coordinates, in float32 where safe."""
    chart = {}
    for name, values in (("x", x), ("rms", y_rms), ("layer", y_layer)):
        index, shown = envelope(values)
        finite = shown[np.isfinite(shown)]
        if finite.size == 0 or np.max(np.abs(finite)) < FLOAT32_SAFE:
            shown = shown.astype(np.float32)
        chart[name] = Series(index.astype(np.int32), shown, stats[name].mean)
    return chart


# --- claims ----------------------------------------------------------------------------------


def _claims(ctx: dict[str, Any]) -> dict[str, Claim]:
    """Every sentence about the numbers, each chosen by the verdict computed beside it."""
    claims = _coords_claims(ctx)
    claims |= _why_claims(ctx)
    claims |= _centring_claims(ctx)
    claims |= _plane_claims(ctx)
    claims |= _extra_claims(ctx)
    return claims


def _coords_claims(ctx: dict[str, Any]) -> dict[str, Claim]:
    s, run, d, x = ctx["stats"], ctx["run"], ctx["d"], ctx["x"]
    return {
        "coords": Claim(
            "explorer.coords_caption",
            {"d": d, "m_rms": s["rms"].mean, "m_layer": s["layer"].mean},
            {"m_rms": _sum_noise(ctx["y_rms"]), "m_layer": _sum_noise(ctx["y_layer"])},
        ),
        "divisors": Claim(
            "explorer.coords_divisors",
            {"rms": run["rms_stat"], "mean": run["layer_mean"], "std": run["layer_stat"]},
            # The mean the dtype computed, "≈ 0" only where float64 could not tell it from 0.
            {"mean": _sum_noise(x)},
        ),
        **_envelope_claims(d),
    }


def _envelope_claims(d: int) -> dict[str, Claim]:
    """What the chart says of its envelope, when it shows one: in a caption and on the chart."""
    width = envelope_width(d)
    if not width:
        return {}
    return {
        "envelope": Claim("explorer.coords_envelope", {"d": d, "width": width}),
        "envelope_label": Claim("explorer.coords_envelope_label", {"width": width}),
    }


def _why_claims(ctx: dict[str, Any]) -> dict[str, Claim]:
    u: Units = ctx["units"]
    x = ctx["x"]
    # RMSNorm(x) before its bias, up to a positive factor: the direction of g * x / RMS does not
    # depend on the size of g, and dividing g by its largest entry keeps a gain of 1e-320 (a
    # valid link) from underflowing into a different direction.
    v_rms = _unit_scale(ctx["g"]) * u.unit_rms
    finite = bool(np.all(np.isfinite(v_rms)))
    cos_rms = float(cosine(v_rms, x)) if finite else math.nan
    claims = {"why_scale": _direction_claim(v_rms, cos_rms, u.den_k)}
    ratio_noise = _ratio_or_zero(u.mean_noise, u.rms)
    if u.flat:
        claims["why_layer"] = Claim("explorer.why_layer_flat")
    else:
        cos_layer = float(cosine(x - u.mean, x))  # the direction of x - mu, whatever eps is
        # cos(x - mu, x) carries the rounding of x - mu relative to the spread itself (no eps).
        cos_noise = VECTOR_ULPS * U64 * (1.0 + u.mean_over_spread)
        claims["why_layer"] = pick(
            at_least(cos_layer, 1.0 - COS_TOL),
            "explorer.why_layer_kept",
            "explorer.why_layer_turned",
            noise={"ratio": ratio_noise, "cos": cos_noise},
            ratio=u.ratio,
            cos=cos_layer,
        )
    claims["why_offset"] = _offset_claim(u, x, finite, ratio_noise)
    claims |= _moment_claims(x, u)
    return claims


def _offset_claim(u: Units, x: np.ndarray, finite: bool, ratio_noise: float) -> Claim:
    """Whether x has a mean to remove, and what each norm leaves of it (before gain and bias)."""
    ones = np.ones_like(x)
    m_rms = float(np.mean(u.unit_rms)) if finite else math.nan
    fields = {
        "ratio": u.ratio,
        "m_rms": m_rms,
        "cos_rms": float(cosine(u.unit_rms, ones)) if finite else math.nan,
        "m_layer": float(np.mean(u.unit_layer)),
        "cos_layer": float(cosine(u.unit_layer, ones)),
    }
    # Each mean at its own rounding level: the sum of its d coordinates, and for LayerNorm's the
    # rounding each coordinate carries from x - mu.
    layer_noise = _sum_noise(u.unit_layer) + u.layer_noise
    noise = {"ratio": ratio_noise, "m_rms": _sum_noise(u.unit_rms), "m_layer": layer_noise}
    # cos(v, 1) = sqrt(d) mean(v) / |v|: the mean's rounding, relative to the length.
    root_d = math.sqrt(x.shape[-1])
    noise["cos_rms"] = _ratio_or_zero(root_d * noise["m_rms"], _length(u.unit_rms))
    noise["cos_layer"] = _ratio_or_zero(root_d * layer_noise, _length(u.unit_layer))
    if not np.any(x):
        key = "explorer.why_offset_zero"
    elif u.flat:
        key = "explorer.why_offset_flat"
    elif finite and at_most(abs(u.ratio), ratio_noise) and at_most(abs(m_rms), noise["m_rms"]):
        key = "explorer.why_offset_none"
    else:
        key = "explorer.why_offset_kept"
    return Claim(key, fields, noise)


def _moment_claims(x: np.ndarray, u: Units) -> dict[str, Claim]:
    """RMS² = Var + mu², with each term at its own rounding level, and the mean's share."""
    rms2, var, mean2 = second_moment_identity(x)
    # A mean at its rounding level squares to at most that level squared; so does a variance
    # made of the rounding of x - mu alone.
    floor2 = (u.mean_noise + FLAT_ULPS * U64 * u.rms) ** 2
    return {
        "why_moment": Claim(
            "explorer.why_moment",
            {"rms2": rms2, "var": var, "mean2": mean2},
            {"var": floor2, "mean2": floor2},
        ),
        # mu^2 / RMS^2, scale-free: the squares of a tiny x underflow, their ratio does not.
        "why_moment_share": Claim(
            "explorer.why_moment_share",
            {"share_pct": u.ratio**2},
            {"share_pct": _ratio_or_zero(u.mean_noise + FLAT_ULPS * U64 * u.rms, u.rms) ** 2},
        ),
    }


def _unit_scale(v: np.ndarray) -> np.ndarray:
    top = float(np.max(np.abs(v)))
    return v / top if top > 0 else v


def _length(v: np.ndarray) -> float:
    """‖v‖ without underflow or overflow in the squares (a gain of 1e-300 is a valid link)."""
    top = float(np.max(np.abs(v)))
    if top == 0 or not math.isfinite(top):
        return top
    return top * float(np.linalg.norm(v / top))


def _direction_claim(v: np.ndarray, cos: float, rms: float) -> Claim:
    """Where RMSNorm(x) before its bias points, relative to x."""
    fields = {"rms": rms, "cos": cos}
    if not math.isfinite(cos):
        return Claim("explorer.why_scale_infinite", fields)
    if not np.any(v):
        return Claim("explorer.why_scale_zero", fields)
    if at_least(cos, 1.0 - COS_TOL):
        return Claim("explorer.why_scale_same", fields)
    if at_most(cos, -1.0 + COS_TOL):
        return Claim("explorer.why_scale_opposite", fields)
    return Claim("explorer.why_scale_turned", fields)


def _centring_claims(ctx: dict[str, Any]) -> dict[str, Claim]:
    """LayerNorm(x) = RMSNorm(x - mu 1), computed, and equal to RMSNorm(x) when mu = 0."""
    u: Units = ctx["units"]
    x, eps = ctx["x"], ctx["eps"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        centred = rms_norm(x - u.mean, eps=eps)  # float64, full width, no gain
    # Both sides carry the rounding of x - mu and of one division: a few ulps of the operands
    # (of LayerNorm's own vector: the other side may have overflowed where its squares did not).
    tol = u.layer_noise + VECTOR_ULPS * U64 * float(np.max(np.abs(u.unit_layer)))
    diff_c = float(np.max(np.abs(u.unit_layer - centred)))
    diff_p = float(np.max(np.abs(u.unit_layer - u.unit_full)))
    claims = {
        "centring": pick(
            at_most(diff_c, tol),
            "explorer.centring_identity",
            "explorer.centring_identity_off",
            noise={"diff": tol},
            diff=diff_c,
        )
    }
    tol_p = u.layer_noise + VECTOR_ULPS * U64 * float(np.max(np.abs(u.unit_full)))
    ratio_noise = _ratio_or_zero(u.mean_noise, u.rms)
    # "The same" needs both: the outputs agree to rounding, and mu is rounding (a nearly
    # constant x can leave a rounding level larger than either output).
    same = both(at_most(diff_p, tol_p), at_most(abs(u.ratio), ratio_noise))
    claims["centring_mean"] = pick(
        same,
        "explorer.centring_same",
        "explorer.centring_differs",
        noise={"diff": tol_p if same else 0.0, "ratio": ratio_noise},
        ratio=u.ratio,
        diff=diff_p,
    )
    return claims


def _plane_claims(ctx: dict[str, Any]) -> dict[str, Claim]:
    u: Units = ctx["units"]
    plane: PlaneImages = ctx["plane"]
    x, d = ctx["x"], ctx["d"]
    a, b = plane.point
    top = float(np.max(np.abs(x)))
    # a sums d coordinates; b is the length of x - (x . u) u, whose every coordinate carries that
    # sum's rounding.
    noise_a = math.sqrt(d) * _sum_noise(x)
    noise_b = SUM_ULPS * d * math.sqrt(d) * U64 * top
    angle = math.degrees(math.atan2(b, a))
    noise_angle = math.degrees(_ratio_or_zero(noise_b, math.hypot(a, b)))
    claims = {
        "plane": Claim(
            "explorer.plane_position",
            {"angle": angle, "a": a, "b": b},
            {"angle": noise_angle, "a": noise_a, "b": noise_b},
        )
    }
    g = ctx["g_plane"]
    r_rms, r_layer = math.hypot(*plane.rms), math.hypot(*plane.layer)
    if not math.isfinite(r_rms):  # a zero RMS estimate (pRMSNorm, eps = 0), even times g = 0
        key = "explorer.plane_rms_infinite"
    elif g == 0 or not np.any(x):
        key = "explorer.plane_origin"
    else:
        key = "explorer.plane_same" if g > 0 else "explorer.plane_opposite"
    claims["plane_rms"] = Claim(key, {"gain": g, "r_rms": r_rms})
    lkey = "explorer.plane_layer_flat" if u.flat else "explorer.plane_layer"
    # What is left along 1 is the mean of LayerNorm's vector, times g sqrt(d): rounding.
    noise_la = abs(g) * math.sqrt(d) * (_sum_noise(u.unit_layer) + u.layer_noise)
    claims["plane_layer"] = Claim(
        lkey, {"r_layer": r_layer, "la": plane.layer[0]}, {"la": noise_la}
    )
    if not u.flat:
        claims["plane_eps"] = _eps_claim(u, ctx["eps"], plane.radius)
    return claims


def _eps_claim(u: Units, eps: float, radius: float) -> Claim:
    """Whether eps alone pulls the normalised vectors visibly inside the circle."""
    f_rms, f_layer = _shrink(u.rms, u.den_full), _shrink(u.std, u.den_layer)
    return pick(
        at_least(min(f_rms, f_layer), 1.0 - RADIUS_TOL),
        "explorer.plane_eps_negligible",
        "explorer.plane_eps_visible",
        eps=eps,
        ms=u.ms,
        var=u.var,
        f_rms_pct=f_rms,
        f_layer_pct=f_layer,
        radius=radius,
    )


def _shrink(root: float, den: float) -> float:
    """How far eps alone pulls a normalised vector inside the circle: sqrt(s / (s + eps)), as
    the root of the second moment s over its denominator (1 where both are 0)."""
    return root / den if den > 0 else 1.0


def _extra_claims(ctx: dict[str, Any]) -> dict[str, Claim]:
    """The d = 3 sphere, pRMSNorm, the torch precision and LayerNorm's rounding noise."""
    claims: dict[str, Claim] = {}
    sphere: Sphere3D | None = ctx["sphere"]
    if sphere is not None:
        # "Here" is the outputs as computed in the dtype, the numbers the metrics show.
        claims["sphere"] = Claim(
            "explorer.sphere_caption",
            {
                "radius": sphere.radius,
                "dtype": ctx["dtype"],
                "r_rms": ctx["norms"]["rms"],
                "r_layer": ctx["norms"]["layer"],
            },
        )
    if ctx["partial"] < 1.0:
        claims["partial"] = _partial_claim(ctx)
    if ctx["backend"] == "torch":
        claims |= _precision_claims(ctx)
    noise = _noise_claim(ctx)
    if noise is not None:
        claims["noise"] = noise
    return claims


def _partial_claim(ctx: dict[str, Any]) -> Claim:
    """RMS of the first k against RMS(x), both without eps; the denominators are quoted as such."""
    u: Units = ctx["units"]
    with np.errstate(invalid="ignore"):
        diff = float(np.max(np.abs(u.unit_rms - u.unit_full)))
    top = float(np.max(np.abs(u.unit_full)))
    fields = {
        "k": u.k,
        "d": ctx["d"],
        "p_pct": ctx["partial"],
        "rms_k": u.rms_k,
        "rms": u.rms,
        "ratio_pct": u.rms_k / u.rms if u.rms > 0 else 1.0,
        "eps": ctx["eps"],
        "den_k": u.den_k,
        "den": u.den_full,
        "diff": diff,
        "diff_pct": _ratio_or_zero(diff, top),
    }
    # Both outputs round each coordinate to a few ulps of the larger of them.
    scale = max(top, float(np.max(np.abs(u.unit_rms)))) if math.isfinite(diff) else 0.0
    noise = VECTOR_ULPS * U64 * scale
    near = close(u.rms_k, u.rms, rtol=PARTIAL_RTOL)
    return pick(
        near,
        "explorer.partial_close",
        "explorer.partial_far",
        noise={"diff": noise, "diff_pct": _ratio_or_zero(noise, top)},
        **fields,
    )


def _precision_claims(ctx: dict[str, Any]) -> dict[str, Claim]:
    """The page's torch outputs against torch.nn.functional's own norms (float32 opmath)."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    kind = getattr(torch, ctx["dtype"])
    d, eps = ctx["d"], ctx["eps"]
    xt, gt = (torch.tensor(a, dtype=kind) for a in (ctx["x"], ctx["g"]))
    bt = torch.full((d,), ctx["bias"], dtype=kind)
    claims = {}
    refs = {"layer": F.layer_norm(xt, (d,), gt, bt, eps)}
    if ctx["partial"] == 1.0:
        ref = F.rms_norm(xt, (d,), gt, eps)
        if ctx["rms_bias"]:
            ref = ref + torch.full((d,), ctx["rms_bias"], dtype=kind)
        refs["rms"] = ref
    for name, ref in refs.items():
        diff, count = _mismatch(ctx[f"y_{name}"], ref.double().numpy())
        claims[f"precision_{name}"] = pick(
            count == 0,
            f"explorer.precision_{name}_same",
            f"explorer.precision_{name}_differs",
            d=d,
            count=count,
            diff=diff,
        )
    return claims


def _mismatch(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """Largest |a - b| (inf where one side is not finite and they differ) and how many differ."""
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if np.all(same):
        return 0.0, 0
    with np.errstate(invalid="ignore"):
        gap = np.where(np.isfinite(a) & np.isfinite(b), np.abs(a - b), np.inf)
    return float(np.max(np.where(same, 0.0, gap))), int(np.count_nonzero(~same))


def _noise_claim(ctx: dict[str, Any]) -> Claim | None:
    """A constant x leaves LayerNorm only rounding to divide; say so where it shows."""
    u: Units = ctx["units"]
    if not u.flat or not np.any(ctx["x"]):
        return None
    with np.errstate(invalid="ignore"):
        out = float(np.max(np.abs(ctx["y_layer"] - ctx["run"]["bias"])))
    if not (out > 0 and ctx["run"]["layer_var"] > 0):
        return None
    return Claim(
        "explorer.noise_caption",
        {"dtype": ctx["dtype"], "var": ctx["run"]["layer_var"], "eps": ctx["eps"], "out": out},
    )
