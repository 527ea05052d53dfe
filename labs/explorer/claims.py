"""Every sentence the explorer shows about its numbers, each a Claim chosen by a verdict
computed beside it, at a tolerance relative to what it compares."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.geometry import PlaneImages, Sphere3D
from core.messages import Message
from core.stats import VectorStats, cosine, second_moment_identity
from labkit.chart_words import pair_words, point_words, rounding_of
from labkit.claims import Claim, at_least, at_most, both, close, pick
from labs.explorer.chart import envelope_width
from labs.explorer.units import (
    COS_TOL,
    FLAT_ULPS,
    PARTIAL_RTOL,
    RADIUS_TOL,
    SUM_ULPS,
    U64,
    VECTOR_ULPS,
    Units,
    length,
    ratio_or_zero,
    sum_noise,
    unit_scale,
)


@dataclass(frozen=True)
class Pass:
    """The one pass (arrays are float64 numpy): both outputs as the compute dtype holds them,
    their normalised vectors ``x_hat``, and what the dtype computed on the way."""

    x: np.ndarray  # x as normalised (cast to the dtype)
    y_rms: np.ndarray
    y_layer: np.ndarray
    xhat_rms: np.ndarray
    xhat_layer: np.ndarray
    k: int  # the coordinates RMSNorm's statistic reads: ceil(p d)
    rms_stat: float  # the denominators as the chosen dtype computed them
    layer_stat: float
    layer_mean: float  # the mean LayerNorm subtracted, as the dtype computed it
    layer_var: float
    held_bias: float  # beta as the dtype holds it
    alerts: tuple[Message, ...]
    notes: tuple[Message, ...]


@dataclass(frozen=True)
class Facts(Pass):
    """What the sentences read: the one pass, the settings, and what derives from them."""

    d: int
    dtype: str  # the dtype the norms computed in
    gain: np.ndarray
    stats: dict[str, VectorStats]  # "x", "rms", "layer"
    norm_rms: float  # |y_rms| and |y_layer|, free of underflow in their squares
    norm_layer: float
    units: Units
    plane: PlaneImages
    sphere: Sphere3D | None
    eps: float
    g_plane: float  # the plane's gain: the link's, or 1 under a gain pattern
    bias: float  # beta as the link gives it
    rms_bias: float
    partial: float
    backend: str

    @property
    def same_denominators(self) -> bool:
        """Whether rms_stat and layer_stat are the float64 picture's denominators (units.den_k,
        units.den_layer) to float64 rounding: not so in a reduced dtype, nor where float64's own
        squares of x underflow (x = 1e-200) or overflow."""
        pairs = ((self.rms_stat, self.units.den_k), (self.layer_stat, self.units.den_layer))
        return all(math.isclose(a, b, rel_tol=1e-9) for a, b in pairs)


def claims_of(facts: Facts) -> dict[str, Claim]:
    """Every sentence about the numbers, each chosen by the verdict computed beside it."""
    claims = _coords_claims(facts)
    claims |= _why_claims(facts)
    claims |= _centring_claims(facts)
    claims |= _plane_claims(facts)
    claims |= _extra_claims(facts)
    claims |= _chart_words(facts)
    return claims


def _chart_words(facts: Facts) -> dict[str, Claim]:
    """Each chart's summary, its caption and accessible name: the coordinates' extremes and
    where the two outputs differ most; where the plane (and at d = 3 the sphere) puts them."""
    words = pair_words("explorer.coords_words", range(facts.d), facts.y_rms, facts.y_layer)
    claims = {f"coords_{slot}": claim for slot, claim in words.items()}
    plane = facts.plane
    (xa, xb), radius = plane.point, plane.radius
    noise = rounding_of(plane.rms, plane.layer)  # the plane is float64
    claims["plane_words"] = point_words(
        "explorer.plane_words", plane.rms, plane.layer, noise=noise, xa=xa, xb=xb, radius=radius
    )
    sphere = facts.sphere
    if sphere is not None:
        x = {f"x_{i}": float(v) for i, v in enumerate(sphere.point)}
        noise = rounding_of(sphere.rms, sphere.layer)
        claims["sphere_words"] = point_words(
            "explorer.sphere_words", sphere.rms, sphere.layer, noise=noise, **x
        )
    return claims


def _coords_claims(facts: Facts) -> dict[str, Claim]:
    s, d, x = facts.stats, facts.d, facts.x
    means = {"d": d, "m_rms": s["rms"].mean, "m_layer": s["layer"].mean}
    noise = {"m_rms": sum_noise(facts.y_rms), "m_layer": sum_noise(facts.y_layer)}
    return {
        "coords": Claim("explorer.coords_caption", means, noise),
        "first_move": Claim("explorer.first_move_means", means, noise),
        "divisors": Claim(
            "explorer.coords_divisors",
            {"rms": facts.rms_stat, "mean": facts.layer_mean, "std": facts.layer_stat},
            # The mean the dtype computed, "≈ 0" only where float64 could not tell it from 0.
            {"mean": sum_noise(x)},
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


def _why_claims(facts: Facts) -> dict[str, Claim]:
    u, x = facts.units, facts.x
    # RMSNorm(x) before its bias, up to a positive factor: the direction of g * x / RMS does not
    # depend on the size of g, and dividing g by its largest entry keeps a gain of 1e-320 (a
    # valid link) from underflowing into a different direction.
    v_rms = unit_scale(facts.gain) * u.unit_rms
    finite = bool(np.all(np.isfinite(v_rms)))
    cos_rms = float(cosine(v_rms, x)) if finite else math.nan
    claims = {"why_scale": _direction_claim(v_rms, cos_rms, u.den_k)}
    ratio_noise = ratio_or_zero(u.mean_noise, u.rms)
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
    fields = {"ratio": u.ratio, "m_rms": m_rms}
    fields["cos_rms"] = float(cosine(u.unit_rms, ones)) if finite else math.nan
    fields["m_layer"] = float(np.mean(u.unit_layer))
    fields["cos_layer"] = float(cosine(u.unit_layer, ones))
    # Each mean at its own rounding level: the sum of its d coordinates, and for LayerNorm's the
    # rounding each coordinate carries from x - mu.
    layer_noise = sum_noise(u.unit_layer) + u.layer_noise
    noise = {"ratio": ratio_noise, "m_rms": sum_noise(u.unit_rms), "m_layer": layer_noise}
    # cos(v, 1) = sqrt(d) mean(v) / |v|: the mean's rounding, relative to the length.
    root_d = math.sqrt(x.shape[-1])
    noise["cos_rms"] = ratio_or_zero(root_d * noise["m_rms"], length(u.unit_rms))
    noise["cos_layer"] = ratio_or_zero(root_d * layer_noise, length(u.unit_layer))
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
            {"share_pct": ratio_or_zero(u.mean_noise + FLAT_ULPS * U64 * u.rms, u.rms) ** 2},
        )
        if np.any(x)
        # RMS² = 0: there is no whole for the mean to have a share of.
        else Claim("explorer.why_moment_share_zero"),
    }


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


def _centring_claims(facts: Facts) -> dict[str, Claim]:
    """LayerNorm(x) = RMSNorm(x - mu 1), computed, and equal to RMSNorm(x) when mu = 0.

    Both sides divide the same x - mu (LayerNorm's x_hat, ``units.unit_layer``, is (x - mu) over
    sqrt(Var + eps)), so they differ only by their divisors: RMSNorm's of x - mu is taken here in
    plain float64, squares of x - mu and all, as :func:`core.norms.rms_norm` would compute it,
    and applied at the largest |x_i - mu|, where the two vectors differ most."""
    u = facts.units
    diff_c = _centring_gap(facts.x - u.mean, u.unit_layer, facts.eps)
    # Both sides carry the rounding of x - mu and of one division: a few ulps of the operands
    # (of LayerNorm's own vector: the other side may have overflowed where its squares did not).
    tol = u.layer_noise + VECTOR_ULPS * U64 * float(np.max(np.abs(u.unit_layer)))
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
    ratio_noise = ratio_or_zero(u.mean_noise, u.rms)
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


def _centring_gap(centred: np.ndarray, unit_layer: np.ndarray, eps: float) -> float:
    """max_i |LayerNorm's x_hat_i - RMSNorm(x - mu 1)_i| with 0/0 = 0, from RMSNorm's divisor.

    RMSNorm(x - mu 1)_i = (x_i - mu) / sqrt(mean((x - mu)^2) + eps): the same numerators as
    ``unit_layer``, so the largest difference sits at the largest |x_i - mu|."""
    i = int(np.argmax(np.abs(centred)))
    if centred[i] == 0:
        return 0.0  # both vectors are 0 (0 / 0 = 0)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore", over="ignore"):
        shifted = np.mean(centred * centred) + eps  # (d,) -> (): plain float64, may underflow
        rms_side = centred[i] * (1.0 / np.sqrt(shifted))
        return float(np.abs(unit_layer[i] - rms_side))


def _plane_claims(facts: Facts) -> dict[str, Claim]:
    u, plane, x, d = facts.units, facts.plane, facts.x, facts.d
    a, b = plane.point
    top = float(np.max(np.abs(x)))
    # a sums d coordinates, and every coordinate of b's vector x - (x . u) u carries that rounding.
    noise_a = math.sqrt(d) * sum_noise(x)
    noise_b = SUM_ULPS * d * math.sqrt(d) * U64 * top
    angle = math.degrees(math.atan2(b, a))
    noise_angle = math.degrees(ratio_or_zero(noise_b, math.hypot(a, b)))
    claims = {
        "plane": Claim(
            "explorer.plane_position",
            {"angle": angle, "a": a, "b": b},
            {"angle": noise_angle, "a": noise_a, "b": noise_b},
        )
        if np.any(x)
        # The zero vector has no direction: no angle with 1 to quote.
        else Claim("explorer.plane_position_zero")
    }
    claims |= _plane_points(facts)
    if not u.flat:
        claims["plane_eps"] = _eps_claim(u, facts.eps, plane.radius, facts.g_plane)
    return claims


def _plane_points(facts: Facts) -> dict[str, Claim]:
    """Where the plane puts RMSNorm(x) and LayerNorm(x). The plane is float64; where the page's
    own computation is not that (a reduced dtype, or float64 whose squares of x underflow),
    each sentence says so and quotes the computed outputs' lengths, the metrics', beside it."""
    u, plane, g, d = facts.units, facts.plane, facts.g_plane, facts.d
    drawn_rms, drawn_layer = math.hypot(*plane.rms), math.hypot(*plane.layer)
    apart = facts.dtype != "float64" or not facts.same_denominators
    computed = {"dtype": facts.dtype, "r_rms": facts.norm_rms}
    if not math.isfinite(drawn_rms):  # a zero RMS estimate (pRMSNorm, eps = 0), even times g = 0
        rms = Claim("explorer.plane_rms_infinite")
    elif g == 0 or not np.any(facts.x):
        rms = Claim("explorer.plane_origin", {"r_rms": drawn_rms})
    else:
        key = "explorer.plane_same" if g > 0 else "explorer.plane_opposite"
        if apart:
            rms = Claim(f"{key}_dtype", {"gain": g, "r_exact": drawn_rms, **computed})
        else:
            rms = Claim(key, {"gain": g, "r_rms": drawn_rms})
    key = "explorer.plane_layer_flat" if u.flat else "explorer.plane_layer"
    fields = {"la": plane.layer[0], "r_layer": drawn_layer}
    if apart:
        fields |= {"r_exact": drawn_layer, "dtype": facts.dtype, "r_layer": facts.norm_layer}
        key += "_dtype"
    # What is left along 1 is the mean of LayerNorm's vector, times g sqrt(d): rounding.
    noise_la = abs(g) * math.sqrt(d) * (sum_noise(u.unit_layer) + u.layer_noise)
    return {"plane_rms": rms, "plane_layer": Claim(key, fields, {"la": noise_la})}


def _eps_claim(u: Units, eps: float, radius: float, gain: float) -> Claim:
    """Whether eps alone pulls the normalised vectors visibly inside the circle."""
    f_rms, f_layer = _shrink(u.rms, u.den_full), _shrink(u.std, u.den_layer)
    # mean(x²) = Var(x) + mean², so eps is negligible against the variance only if against both;
    # against mean(x²) alone, it pulls in LayerNorm's point only.
    rms_on = at_least(f_rms, 1.0 - RADIUS_TOL)
    return pick(
        at_least(f_layer, 1.0 - RADIUS_TOL) if rms_on else False,
        "explorer.plane_eps_negligible",
        "explorer.plane_eps_visible_layer" if rms_on else "explorer.plane_eps_visible",
        eps=eps,
        ms=u.ms,
        var=u.var,
        f_rms_pct=f_rms,
        f_layer_pct=f_layer,
        radius=radius,
        gain=gain,  # the plane's gain: the link's, or 1 under a gain pattern
    )


def _shrink(root: float, den: float) -> float:
    """How far eps alone pulls a normalised vector inside the circle: sqrt(s / (s + eps)), as
    the root of the second moment s over its denominator (1 where both are 0)."""
    return root / den if den > 0 else 1.0


def _extra_claims(facts: Facts) -> dict[str, Claim]:
    """The d = 3 sphere, pRMSNorm, the torch precision and LayerNorm's rounding noise."""
    claims: dict[str, Claim] = {}
    sphere = facts.sphere
    if sphere is not None:
        # "Here" is the outputs as computed in the dtype, the numbers the metrics show.
        fields = {"dtype": facts.dtype, "r_rms": facts.norm_rms, "r_layer": facts.norm_layer}
        claims["sphere"] = Claim("explorer.sphere_caption", {"radius": sphere.radius, **fields})
    if facts.partial < 1.0:
        claims["partial"] = _partial_claim(facts)
    if facts.backend == "torch":
        claims |= _precision_claims(facts)
    noise = _noise_claim(facts)
    if noise is not None:
        claims["noise"] = noise
    return claims


def _partial_claim(facts: Facts) -> Claim:
    """RMS of the first k against RMS(x), both without eps; the denominators are quoted as such."""
    u = facts.units
    with np.errstate(invalid="ignore"):
        diff = float(np.max(np.abs(u.unit_rms - u.unit_full)))
    top = float(np.max(np.abs(u.unit_full)))
    fields = {"k": u.k, "d": facts.d, "p_pct": facts.partial, "rms_k": u.rms_k, "rms": u.rms}
    fields |= {"ratio_pct": u.rms_k / u.rms if u.rms > 0 else 1.0, "eps": facts.eps}
    fields |= {"den_k": u.den_k, "den": u.den_full, "diff": diff}
    fields["diff_pct"] = ratio_or_zero(diff, top)
    # Both outputs round each coordinate to a few ulps of the larger of them.
    scale = max(top, float(np.max(np.abs(u.unit_rms)))) if math.isfinite(diff) else 0.0
    noise = VECTOR_ULPS * U64 * scale
    near = close(u.rms_k, u.rms, rtol=PARTIAL_RTOL)
    return pick(
        near,
        "explorer.partial_close",
        "explorer.partial_far",
        noise={"diff": noise, "diff_pct": ratio_or_zero(noise, top)},
        **fields,
    )


def _precision_claims(facts: Facts) -> dict[str, Claim]:
    """The page's torch outputs against torch.nn.functional's own norms (float32 opmath).

    F.layer_norm and F.rms_norm normalise x again, on purpose: these sentences say whether the
    page agrees with torch's own kernels, so the kernels themselves must run."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    kind = getattr(torch, facts.dtype)
    d, eps = facts.d, facts.eps
    xt, gt = (torch.tensor(a, dtype=kind) for a in (facts.x, facts.gain))
    bt = torch.full((d,), facts.bias, dtype=kind)
    claims = {}
    refs = {"layer": (facts.y_layer, F.layer_norm(xt, (d,), gt, bt, eps))}
    if facts.partial == 1.0:
        ref = F.rms_norm(xt, (d,), gt, eps)
        if facts.rms_bias:
            ref = ref + torch.full((d,), facts.rms_bias, dtype=kind)
        refs["rms"] = (facts.y_rms, ref)
    for name, (ours, ref) in refs.items():
        diff, count = _mismatch(ours, ref.double().numpy())
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


def _noise_claim(facts: Facts) -> Claim | None:
    """A constant x leaves LayerNorm only rounding to divide; say so where it shows."""
    u = facts.units
    if not u.flat or not np.any(facts.x):
        return None
    with np.errstate(invalid="ignore"):
        out = float(np.max(np.abs(facts.y_layer - facts.held_bias)))
    if not (out > 0 and facts.layer_var > 0):
        return None
    return Claim(
        "explorer.noise_caption",
        {"dtype": facts.dtype, "var": facts.layer_var, "eps": facts.eps, "out": out},
    )
