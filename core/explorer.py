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

from core.claims import Claim, at_least, at_most, close, pick
from core.geometry import PlaneImages, Sphere3D, plane_images_from, sphere_from
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

# Tolerances of the verdicts. Directions are compared in float64 on O(1) unit vectors.
COS_TOL = 1e-9
# Differences of O(1) float64 vectors below this are rounding, shown as "≈ 0".
NOISE = 1e-12
# "Negligible": eps shrinks a radius by less than 0.1 %.
RADIUS_TOL = 1e-3
# pRMSNorm's estimate "close" to the full RMS.
PARTIAL_RTOL = 0.05
# x is "constant to within rounding" when its spread is below a few float64 ulps of its RMS.
FLAT_ULPS = 4.0
U64 = float(np.finfo(np.float64).eps)
# Lengths below this are subnormal arithmetic (a gain of 1e-320), shown as "≈ 0".
TINY = 1e-290


@dataclass(frozen=True)
class Series:
    """One trace of the coordinates chart: coordinate indices and values, maybe an envelope."""

    index: np.ndarray
    values: np.ndarray
    mean: float


@dataclass(frozen=True)
class Units:
    """Float64 statistics of the computed x and its normalised vectors before gain and bias."""

    mean: float
    var: float
    ms: float  # mean(x^2) over all d coordinates
    ms_k: float  # mean(x^2) over the first k (pRMSNorm)
    k: int
    rms_p: float  # sqrt(ms_k + eps): what RMSNorm divides by
    rms_full: float  # sqrt(ms + eps)
    std: float  # sqrt(var + eps): what LayerNorm divides by
    rms: np.ndarray  # x / rms_p
    full: np.ndarray  # x / rms_full
    layer: np.ndarray  # (x - mu) / std
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
    ctx = dict(
        d=d, eps=eps, g=g, g_plane=g_plane, bias=bias, rms_bias=rms_bias, partial=partial,
        backend=backend, dtype=computed, x=x64, units=units, stats=stats, y_rms=y_rms,
        y_layer=y_layer, run=run, plane=plane, sphere=sphere,
    )  # fmt: skip
    return ExplorerView(
        d=d, dtype=computed, dtype_asked=dtype, x=x64, gain=g, y_rms=y_rms, y_layer=y_layer,
        stats=stats, units=units, rms_stat=run["rms_stat"], layer_stat=run["layer_stat"],
        identity=second_moment_identity(x64), plane=plane, sphere=sphere, chart=chart,
        alerts=run["alerts"], notes=run["notes"], claims=_claims(ctx),
    )  # fmt: skip


def _geometry(
    x: np.ndarray, units: Units, g: float, eps: float
) -> tuple[PlaneImages, Sphere3D | None]:
    """The plane (every d) and the sphere (d = 3) from the unit vectors, scaled by ``g``."""
    rms, layer = g * units.rms, g * units.layer
    plane = plane_images_from(x, rms, layer, gain=g, eps_rms=eps, eps_layer=eps, on_axis=units.flat)
    if x.shape[-1] != 3:
        return plane, None
    return plane, sphere_from(x, rms, layer, plane)


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
    return {
        "x": _to_float64(xs),
        "y_rms": _to_float64(rep_rms.output),
        "y_layer": _to_float64(rep_layer.output),
        "rms_stat": float(rep_rms.stat.ravel()[0]),
        "layer_stat": float(rep_layer.stat.ravel()[0]),
        "layer_var": float(rep_layer.variance.ravel()[0]),
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

    The unit vectors are computed from x / max|x|, with eps scaled to match: the same numbers
    in exact arithmetic, but a tiny x (1e-200, whose squares underflow to 0) or a huge one keeps
    its direction instead of collapsing to 0/0.
    """
    top = float(np.max(np.abs(x)))
    xs = x / top if top > 0 else x
    with np.errstate(over="ignore", divide="ignore"):
        # May overflow to inf (x far below sqrt(eps)): then the unit vectors are 0.
        eps_s = float(np.float64(eps) / np.float64(top) / np.float64(top)) if top > 0 else eps
    mean_s = float(np.mean(xs))
    centred = xs - mean_s
    var_s = float(np.mean(centred**2))  # (d,) -> ()
    ms_s = float(np.mean(xs**2))  # (d,) -> ()
    ms_k_s = float(np.mean(xs[:k] ** 2))  # (k,) -> ()
    mean, var, ms, ms_k = top * mean_s, top * top * var_s, top * top * ms_s, top * top * ms_k_s
    return Units(
        mean=mean,
        var=var,
        ms=ms,
        ms_k=ms_k,
        k=k,
        rms_p=math.sqrt(ms_k + eps),
        rms_full=math.sqrt(ms + eps),
        std=math.sqrt(var + eps),
        rms=_divide(xs, math.sqrt(ms_k_s + eps_s)),
        full=_divide(xs, math.sqrt(ms_s + eps_s)),
        layer=_divide(centred, math.sqrt(var_s + eps_s)),
        flat=var_s <= (FLAT_ULPS * U64) ** 2 * ms_s,
        mean_over_spread=abs(mean_s) / math.sqrt(var_s) if var_s > 0 else math.inf,
    )


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
    s, run, u = ctx["stats"], ctx["run"], ctx["units"]
    with np.errstate(invalid="ignore"):
        out_scale = float(np.nanmax(np.abs(np.concatenate([ctx["y_rms"], ctx["y_layer"]]))))
    return {
        "coords": Claim(
            "explorer.coords_caption",
            {"d": ctx["d"], "m_rms": s["rms"].mean, "m_layer": s["layer"].mean},
            NOISE * out_scale if math.isfinite(out_scale) else 0.0,
        ),
        "divisors": Claim(
            "explorer.coords_divisors",
            {"rms": run["rms_stat"], "mean": u.mean, "std": run["layer_stat"]},
            NOISE * s["x"].rms,
        ),
        **_envelope_claims(ctx["d"]),
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
    v_rms = _unit_scale(ctx["g"]) * u.rms
    finite = bool(np.all(np.isfinite(v_rms)))
    cos_rms = float(cosine(v_rms, x)) if finite else math.nan
    claims = {"why_scale": _direction_claim(v_rms, cos_rms, u.rms_p)}
    noise = _layer_noise(u)
    ratio = u.mean / math.sqrt(u.ms) if u.ms > 0 else 0.0
    cos_layer = float(cosine(x - u.mean, x))  # the direction of x - mu, whatever eps is
    if u.flat:
        claims["why_layer"] = Claim("explorer.why_layer_flat")
    else:
        kept = at_least(cos_layer, 1.0 - COS_TOL)
        # cos(x - mu, x) carries the rounding of x - mu relative to the spread itself (no eps).
        cos_noise = max(NOISE, 64 * U64 * u.mean_over_spread)
        claims["why_layer"] = pick(
            kept,
            "explorer.why_layer_kept",
            "explorer.why_layer_turned",
            noise=cos_noise,
            ratio=ratio,
            cos=cos_layer,
        )
    ones = np.ones_like(x)
    m_rms = float(np.mean(u.rms)) if finite else math.nan
    offset = {
        "m_rms": m_rms,
        "cos_rms": float(cosine(u.rms, ones)) if finite else math.nan,
        "m_layer": float(np.mean(u.layer)),
        "cos_layer": float(cosine(u.layer, ones)),
    }
    if not np.any(x):
        key = "explorer.why_offset_zero"
    elif u.flat:
        key = "explorer.why_offset_flat"
    elif at_least(abs(m_rms), noise) or not finite:
        key = "explorer.why_offset_kept"
    else:
        key = "explorer.why_offset_none"
    claims["why_offset"] = Claim(key, offset, noise)
    rms2, var, mean2 = second_moment_identity(x)
    share = mean2 / rms2 if rms2 > 0 else 0.0
    claims["why_moment"] = Claim(
        "explorer.why_moment",
        {"rms2": rms2, "var": var, "mean2": mean2, "share_pct": share},
        NOISE * rms2,
    )
    return claims


def _unit_scale(v: np.ndarray) -> np.ndarray:
    top = float(np.max(np.abs(v)))
    return v / top if top > 0 else v


def _length(v: np.ndarray) -> float:
    """‖v‖ without underflow or overflow in the squares (a gain of 1e-300 is a valid link)."""
    top = float(np.max(np.abs(v)))
    if top == 0 or not math.isfinite(top):
        return top
    return top * float(np.linalg.norm(v / top))


def _layer_noise(u: Units) -> float:
    """Rounding level of the float64 unit vectors: x - mu loses about |mu| * ulp per coordinate,
    which LayerNorm then divides by its standard deviation."""
    if u.std == 0:
        return NOISE
    return max(NOISE, 64 * U64 * abs(u.mean) / u.std)


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
    noise = _layer_noise(u) * max(1.0, float(np.max(np.abs(u.layer))))
    diff_c = float(np.max(np.abs(u.layer - centred)))
    diff_p = float(np.max(np.abs(u.layer - u.full)))
    claims = {
        "centring": pick(
            at_most(diff_c, noise),
            "explorer.centring_identity",
            "explorer.centring_identity_off",
            noise=noise,
            diff=diff_c,
        )
    }
    claims["centring_mean"] = pick(
        at_most(diff_p, noise),
        "explorer.centring_same",
        "explorer.centring_differs",
        noise=noise,
        ratio=u.mean / math.sqrt(u.ms) if u.ms > 0 else 0.0,
        diff=diff_p,
    )
    return claims


def _plane_claims(ctx: dict[str, Any]) -> dict[str, Claim]:
    u: Units = ctx["units"]
    plane: PlaneImages = ctx["plane"]
    x = ctx["x"]
    angle = math.degrees(math.acos(float(cosine(x, np.ones_like(x))))) if np.any(x) else 0.0
    claims = {
        "plane": Claim(
            "explorer.plane_position",
            {"angle": angle, "a": plane.point[0], "b": plane.point[1]},
            NOISE * math.hypot(*plane.point),
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
    claims["plane_rms"] = Claim(key, {"gain": g, "r_rms": r_rms}, TINY)
    noise = max(_layer_noise(u) * max(plane.radius, r_layer), TINY)
    lkey = "explorer.plane_layer_flat" if u.flat else "explorer.plane_layer"
    claims["plane_layer"] = Claim(lkey, {"r_layer": r_layer, "la": plane.layer[0]}, noise)
    if not u.flat:
        f_rms, f_layer = _shrink(u.ms, ctx["eps"]), _shrink(u.var, ctx["eps"])
        claims["plane_eps"] = pick(
            at_least(min(f_rms, f_layer), 1.0 - RADIUS_TOL),
            "explorer.plane_eps_negligible",
            "explorer.plane_eps_visible",
            eps=ctx["eps"],
            ms=u.ms,
            var=u.var,
            f_rms_pct=f_rms,
            f_layer_pct=f_layer,
            radius=plane.radius,
        )
    return claims


def _shrink(second: float, eps: float) -> float:
    """How far eps alone pulls a normalised vector inside the circle: sqrt(s / (s + eps))."""
    if eps == 0:
        return 1.0
    return math.sqrt(second / (second + eps))


def _extra_claims(ctx: dict[str, Any]) -> dict[str, Claim]:
    """The d = 3 sphere, pRMSNorm, the torch precision and LayerNorm's rounding noise."""
    claims: dict[str, Claim] = {}
    sphere: Sphere3D | None = ctx["sphere"]
    if sphere is not None:
        claims["sphere"] = Claim(
            "explorer.sphere_caption",
            {
                "radius": sphere.radius,
                "r_rms": _length(sphere.rms),
                "r_layer": _length(sphere.layer),
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
    u: Units = ctx["units"]
    g = ctx["g"]
    full = g * u.full
    with np.errstate(invalid="ignore"):
        diff = float(np.max(np.abs(g * u.rms - full)))
    top = float(np.max(np.abs(full)))
    fields = {
        "k": u.k,
        "d": ctx["d"],
        "p_pct": ctx["partial"],
        "rms_p": u.rms_p,
        "rms_full": u.rms_full,
        "ratio_pct": u.rms_p / u.rms_full if u.rms_full > 0 else 1.0,
        "diff": diff,
        "diff_pct": diff / top if top > 0 else 0.0,
    }
    near = close(u.rms_p, u.rms_full, rtol=PARTIAL_RTOL)
    return pick(near, "explorer.partial_close", "explorer.partial_far", noise=NOISE, **fields)


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
